"""Value baseline (docs/design/alphastar.md §2, row "baselines (value)"; mini-AlphaStar).

    x = concat(lstm_out, embedded_scalar(own), embedded_scalar(opponent))   opponent's: value only
    b = Linear_1(ReLU(ResBlocks(ReLU(Linear_hidden(x)))))                   ResBlocks with layer norm
    V = (2/π) · atan((π/2) · b)                 squashed into (−1, 1) (win/loss); V = b if squash=False

The opponent's scalars are visible to the baseline only (never to the policy); without them the
opponent part is zeros.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from ..config import AlphaStarConfig
from ..layers import ResBlock1d


class ValueBaseline(nn.Module):
    def __init__(self, config: AlphaStarConfig, squash: bool = True) -> None:
        super().__init__()
        self.squash = squash
        self.fc_in = nn.Linear(config.lstm_size + 2 * config.embedded_scalar_size, config.value_hidden)
        self.resblocks = nn.Sequential(*(ResBlock1d(config.value_hidden) for _ in range(config.value_resblocks)))
        self.fc_out = nn.Linear(config.value_hidden, 1)

    def forward(self, lstm_out: torch.Tensor, own_scalar: torch.Tensor, opponent_scalar: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.fc_in(torch.cat([lstm_out, own_scalar, opponent_scalar], dim=-1)))
        b = self.fc_out(F.relu(self.resblocks(x))).squeeze(-1)
        return (2.0 / math.pi) * torch.atan((math.pi / 2.0) * b) if self.squash else b
