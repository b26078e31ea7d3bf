"""Entity embeddings scattered onto the map (docs/design/alphastar.md §1, "entity embeddings can be
scattered onto the map"; AlphaStar's spatial encoder input).

    s[c, y, x] = Σ_{present entities i at cell (x, y)} ReLU(conv1d_k1(entity_embeddings_i))[c]

The ``scatter_channels`` planes are concatenated to the spatial planes before the spatial encoder,
so the map sees what the transformer learned about each unit. One ``scatter_add_`` for the batch.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .config import AlphaStarConfig


class EntityScatter(nn.Module):
    def __init__(self, config: AlphaStarConfig) -> None:
        super().__init__()
        self.size = config.spatial_size
        self.channels = config.scatter_channels
        self.project = nn.Conv1d(config.entity_embedding_size, config.scatter_channels, kernel_size=1)

    def forward(
        self, entity_embeddings: torch.Tensor, positions: torch.Tensor, entity_mask: torch.Tensor
    ) -> torch.Tensor:
        """``[b, N, E]``, integer ``(x, y)`` cells ``[b, N, 2]``, mask ``[b, N]`` → ``[b, scatter_channels, H, W]``."""
        b, n, _ = entity_embeddings.shape
        values = F.relu(self.project(entity_embeddings.transpose(1, 2)))  # [b, C, N]
        values = values * entity_mask[:, None, :].to(values.dtype)
        cell = (positions[..., 1] * self.size + positions[..., 0]).clamp(0, self.size * self.size - 1)
        planes = values.new_zeros(b, self.channels, self.size * self.size)
        planes.scatter_add_(2, cell[:, None, :].expand(b, self.channels, n).long(), values)
        return planes.view(b, self.channels, self.size, self.size)
