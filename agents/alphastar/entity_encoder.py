"""Entity encoder (docs/design/alphastar.md §2, row "entity encoder"; mini-AlphaStar, Fig. 1–2).

    x  = Linear(entities)                                         [b, N, d]
    for each of ``entity_layers`` layers (post-norm transformer layer):
        a, A = MultiHeadAttention(x, x, x, key mask)              A: attention map [b, heads, N, N]
        x    = LayerNorm(x + Dropout(a))                          attention sublayer with residual
        x    = LayerNorm(x + Dropout(W2 ReLU(W1 x)))              position-wise feed-forward with residual
    entity_embeddings = ReLU(conv1d_k1(ReLU(x)))                  [b, N, entity_embedding_size], 0 on padding
    embedded_entity   = ReLU(Linear(masked mean over entities of x))   [b, embedded_entity_size]

Padding rows (``entity_mask == False``) are never attended to and do not enter the mean.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from .config import AlphaStarConfig
from .distributions import MASKED_LOGIT


class MultiHeadSelfAttention(nn.Module):
    """Scaled dot-product attention over entities with a key-padding mask; returns the maps too.

    A = softmax(Q Kᵀ / √d_head + mask) per head, out = W_o concat_heads(A V).
    """

    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.head_size = d_model // heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.head_size).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_size)  # [b, heads, N, N]
        scores = scores.masked_fill(~key_mask[:, None, None, :], MASKED_LOGIT)
        attention = torch.softmax(scores, dim=-1)
        mixed = (attention @ v).transpose(1, 2).reshape(b, n, d)
        return self.out(mixed), attention


class TransformerLayer(nn.Module):
    """Attention sublayer and feed-forward sublayer, each with residual, dropout and layer norm."""

    def __init__(self, d_model: int, heads: int, ff_size: int, dropout: float) -> None:
        super().__init__()
        self.attention = MultiHeadSelfAttention(d_model, heads)
        self.norm1 = nn.LayerNorm(d_model)
        self.ff1 = nn.Linear(d_model, ff_size)
        self.ff2 = nn.Linear(ff_size, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        attended, attention = self.attention(x, key_mask)
        x = self.norm1(x + self.dropout(attended))
        x = self.norm2(x + self.dropout(self.ff2(F.relu(self.ff1(x)))))
        return x, attention


class EntityEncoder(nn.Module):
    """Entities ``[b, N, F]`` + mask ``[b, N]`` → (entity_embeddings, embedded_entity, attention maps)."""

    def __init__(self, config: AlphaStarConfig) -> None:
        super().__init__()
        d = config.entity_d_model
        self.embed = nn.Linear(config.entity_feature_size, d)
        self.layers = nn.ModuleList(
            TransformerLayer(d, config.entity_heads, config.entity_ff_size, config.entity_dropout)
            for _ in range(config.entity_layers)
        )
        self.conv = nn.Conv1d(d, config.entity_embedding_size, kernel_size=1)
        self.pooled = nn.Linear(d, config.embedded_entity_size)

    def forward(
        self, entities: torch.Tensor, entity_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
        x = self.embed(entities)
        attention_maps = []
        for layer in self.layers:
            x, attention = layer(x, entity_mask)
            attention_maps.append(attention)
        valid = entity_mask.unsqueeze(-1).to(x.dtype)
        entity_embeddings = F.relu(self.conv(F.relu(x).transpose(1, 2))).transpose(1, 2) * valid
        mean = (x * valid).sum(1) / valid.sum(1).clamp(min=1.0)
        embedded_entity = F.relu(self.pooled(mean))
        return entity_embeddings, embedded_entity, attention_maps
