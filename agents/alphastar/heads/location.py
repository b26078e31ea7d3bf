"""Location head (docs/design/alphastar.md §2, row "location head"; mini-AlphaStar).

x = concat(ae reshaped to [AE / s², s, s], map_skip[-1])           s = map_skip side
x = ReLU(conv1×1(ReLU(x)))
for i, FiLM ResBlock:  x = FiLMResBlock(x, gate=ae) + map_skip[-1-i]   (last ResBlock's skip first)
x = upsample by stride-2 transposed convs (ReLU between) to location_resolution, conv1×1 → 1 channel
logits = mask(flatten(x), location_mask) / temperature               [b, R·R], index = y·R + x
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from ..config import AlphaStarConfig
from ..distributions import mask_logits, sample
from ..layers import FiLMResBlock2d


class LocationHead(nn.Module):
    def __init__(self, config: AlphaStarConfig) -> None:
        super().__init__()
        self.skip_size = config.map_skip_size
        self.ae_channels = config.autoregressive_embedding_size // config.map_skip_size**2
        channels = config.map_skip_channels
        self.conv_in = nn.Conv2d(self.ae_channels + channels, channels, kernel_size=1)
        self.film_blocks = nn.ModuleList(
            FiLMResBlock2d(channels, config.autoregressive_embedding_size) for _ in range(config.spatial_resblocks)
        )
        ups = []
        c = channels
        for _ in range(config.location_upsamples):
            c_out = max(c // 2, 4)
            ups.append(nn.ConvTranspose2d(c, c_out, kernel_size=4, stride=2, padding=1))
            c = c_out
        self.upsample = nn.ModuleList(ups)
        self.conv_out = nn.Conv2d(c, 1, kernel_size=1)

    def forward(
        self,
        ae: torch.Tensor,
        map_skip: list[torch.Tensor],
        location_mask: torch.Tensor,
        location: torch.Tensor | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """→ (logits ``[b, R·R]``, flat location index ``[b]``)."""
        b = ae.shape[0]
        ae_map = ae.view(b, self.ae_channels, self.skip_size, self.skip_size)
        x = F.relu(self.conv_in(F.relu(torch.cat([ae_map, map_skip[-1]], dim=1))))
        for i, block in enumerate(self.film_blocks):
            x = block(x, ae) + map_skip[-1 - i]
        for up in self.upsample:
            x = F.relu(up(x))
        logits = mask_logits(self.conv_out(x).flatten(1), location_mask.flatten(1)) / temperature
        if location is None:
            location = sample(logits, generator)
        return logits, location
