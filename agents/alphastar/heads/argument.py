"""Delay head and queue head (docs/design/alphastar.md §2, rows "delay head" and "queue head"; mini-AlphaStar).

    logits = Linear(ReLU(Linear(ReLU(Linear(ae))))) / temperature      2 × linear+ReLU, then logits
    a      ~ softmax(logits)            (or the given argument when teacher forcing)
    ae     = ae + used · Linear(ReLU(Linear(ReLU(Linear(one_hot(a))))))   projected back to ae size

For the delay head ``used`` is 1; for the queue head it is whether the chosen action type can be
queued, so a non-queueable action leaves the autoregressive embedding unchanged.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from ..distributions import sample


def _mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class CategoricalArgumentHead(nn.Module):
    def __init__(self, ae_size: int, hidden: int, num_values: int) -> None:
        super().__init__()
        self.num_values = num_values
        self.decode = _mlp([ae_size, hidden, hidden, num_values])
        self.encode = _mlp([num_values, hidden, hidden, ae_size])

    def forward(
        self,
        ae: torch.Tensor,
        used: torch.Tensor,
        action: torch.Tensor | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``ae [b, AE]``, ``used [b]`` bool → (logits ``[b, K]``, argument ``[b]``, new ae)."""
        logits = self.decode(ae) / temperature
        if action is None:
            action = sample(logits, generator)
        one_hot = F.one_hot(action.clamp(min=0), self.num_values).to(ae.dtype)
        ae = ae + self.encode(one_hot) * used.unsqueeze(-1).to(ae.dtype)
        return logits, action, ae
