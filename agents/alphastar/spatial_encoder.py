"""Spatial encoder (docs/design/alphastar.md §2, row "spatial encoder"; mini-AlphaStar).

    x = ReLU(conv1×1(concat(planes, scattered entities)))        [b, stem, H, W]
    for each downsampling conv:  x = ReLU(conv4×4 stride 2(x))    H, W halve each time
    for each ResBlock:           x = ResBlock(x); map_skip.append(x)
    embedded_spatial = ReLU(Linear(flatten(ReLU(x))))             [b, embedded_spatial_size]

``map_skip`` is the list of ResBlock outputs (first to last); the location head consumes them in
reverse order (last ResBlock's skip first), as AlphaStar does.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .config import AlphaStarConfig
from .layers import ResBlock2d


class SpatialEncoder(nn.Module):
    """Planes ``[b, C + scatter_channels, H, W]`` → (embedded_spatial ``[b, E]``, map_skip list ``[b, C', h, w]``)."""

    def __init__(self, config: AlphaStarConfig) -> None:
        super().__init__()
        in_channels = config.spatial_channels + config.scatter_channels
        self.stem = nn.Conv2d(in_channels, config.spatial_stem_channels, kernel_size=1)
        channels = [config.spatial_stem_channels, *config.spatial_downsample_channels]
        self.downsample = nn.ModuleList(
            nn.Conv2d(c_in, c_out, kernel_size=4, stride=2, padding=1)
            for c_in, c_out in zip(channels[:-1], channels[1:])
        )
        self.resblocks = nn.ModuleList(ResBlock2d(channels[-1]) for _ in range(config.spatial_resblocks))
        flat = channels[-1] * config.map_skip_size**2
        self.fc = nn.Linear(flat, config.embedded_spatial_size)

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        x = F.relu(self.stem(planes))
        for conv in self.downsample:
            x = F.relu(conv(x))
        map_skip = []
        for block in self.resblocks:
            x = block(x)
            map_skip.append(x)
        embedded_spatial = F.relu(self.fc(F.relu(x).flatten(1)))
        return embedded_spatial, map_skip
