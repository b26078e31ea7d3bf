"""Building blocks shared by the AlphaStar modules (docs/design/alphastar.md §2).

* ``ResBlock1d`` — x + W2·ReLU(LN(W1·ReLU(LN(x)))) on vectors (action-type head, value baseline:
  "ResBlocks with layer norm").
* ``ResBlock2d`` — x + conv3×3(ReLU(conv3×3(ReLU(x)))) on maps (spatial encoder).
* ``FiLMResBlock2d`` — the location head's ResBlock gated by the autoregressive embedding:
  h = conv(ReLU(x)); h = γ(ae)·h + β(ae); out = x + conv(ReLU(h)).
* ``GLU`` — gated linear unit gated by a context: out = W·(σ(V·context) ⊙ x) (AlphaStar's
  "GLU gated by scalar context").
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class ResBlock1d(nn.Module):
    """Pre-activation residual block on vectors with layer norm: x + W2 ReLU(LN(W1 ReLU(LN x)))."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(size)
        self.fc1 = nn.Linear(size, size)
        self.norm2 = nn.LayerNorm(size)
        self.fc2 = nn.Linear(size, size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(F.relu(self.norm1(x)))
        h = self.fc2(F.relu(self.norm2(h)))
        return x + h


class ResBlock2d(nn.Module):
    """Pre-activation convolutional residual block: x + conv3×3(ReLU(conv3×3(ReLU x)))."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv2(F.relu(self.conv1(F.relu(x))))


class FiLMResBlock2d(nn.Module):
    """Residual block whose hidden map is modulated by a vector (FiLM): h ← γ(g)·h + β(g).

    out = x + conv3×3(ReLU(γ(g) ⊙ conv3×3(ReLU x) + β(g))), with γ, β linear in the gate ``g``
    (broadcast over the map).
    """

    def __init__(self, channels: int, gate_size: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.film = nn.Linear(gate_size, 2 * channels)

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        gamma, beta = self.film(gate).chunk(2, dim=-1)
        h = self.conv1(F.relu(x))
        h = gamma[..., None, None] * h + beta[..., None, None]
        return x + self.conv2(F.relu(h))


class GLU(nn.Module):
    """Gated linear unit gated by a context: out = W·(σ(V·context) ⊙ x)."""

    def __init__(self, input_size: int, context_size: int, output_size: int) -> None:
        super().__init__()
        self.gate = nn.Linear(context_size, input_size)
        self.out = nn.Linear(input_size, output_size)

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        return self.out(torch.sigmoid(self.gate(context)) * x)
