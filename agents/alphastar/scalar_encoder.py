"""Scalar encoder (docs/design/alphastar.md §2, row "scalar encoder"; mini-AlphaStar).

    for each feature f:  e_f = ReLU(Linear_f(scalars[f]))  → scalar list or context list
    embedded_scalar = ReLU(Linear(concat(scalar list)))     [b, embedded_scalar_size]
    scalar_context  = ReLU(Linear(concat(context list)))    [b, scalar_context_size]

Scalars come either as a dict ``{name: [..., size]}`` or packed ``[..., scalar_input_size]``
(the features concatenated in ``config.scalar_feature_list`` order); ``split_scalars`` turns the
packed form into the dict.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .config import AlphaStarConfig


def split_scalars(config: AlphaStarConfig, scalars: torch.Tensor | dict) -> dict[str, torch.Tensor]:
    """Dict of per-feature tensors from a dict (checked) or a packed tensor (split in spec order)."""
    features = config.scalar_feature_list
    if isinstance(scalars, dict):
        missing = [f.name for f in features if f.name not in scalars]
        if missing:
            raise ValueError(f"scalars is missing features {missing}; expected {[f.name for f in features]}")
        for f in features:
            if scalars[f.name].shape[-1] != f.size:
                raise ValueError(
                    f"scalars[{f.name!r}] must have last dimension {f.size}, got {tuple(scalars[f.name].shape)}"
                )
        return {f.name: scalars[f.name] for f in features}
    if scalars.shape[-1] != config.scalar_input_size:
        raise ValueError(
            f"packed scalars must have last dimension scalar_input_size={config.scalar_input_size},"
            f" got {tuple(scalars.shape)}"
        )
    parts = torch.split(scalars, [f.size for f in features], dim=-1)
    return {f.name: part for f, part in zip(features, parts)}


class ScalarEncoder(nn.Module):
    """Per-feature embeddings gathered into ``embedded_scalar`` and ``scalar_context``."""

    def __init__(self, config: AlphaStarConfig) -> None:
        super().__init__()
        self.config = config
        features = config.scalar_feature_list
        self.embeddings = nn.ModuleDict({f.name: nn.Linear(f.size, f.embedding_size) for f in features})
        self.context_names = [f.name for f in features if f.context]
        self.scalar_names = [f.name for f in features if not f.context]
        sizes = {f.name: f.embedding_size for f in features}
        self.scalar_fc = nn.Linear(sum(sizes[n] for n in self.scalar_names), config.embedded_scalar_size)
        self.context_fc = nn.Linear(sum(sizes[n] for n in self.context_names), config.scalar_context_size)

    def forward(self, scalars: torch.Tensor | dict) -> tuple[torch.Tensor, torch.Tensor]:
        parts = split_scalars(self.config, scalars)
        embedded = {name: F.relu(self.embeddings[name](x.float())) for name, x in parts.items()}
        embedded_scalar = F.relu(self.scalar_fc(torch.cat([embedded[n] for n in self.scalar_names], -1)))
        scalar_context = F.relu(self.context_fc(torch.cat([embedded[n] for n in self.context_names], -1)))
        return embedded_scalar, scalar_context
