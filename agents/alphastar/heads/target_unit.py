"""Target-unit head (docs/design/alphastar.md §2, row "target-unit head"; mini-AlphaStar).

Like the selected-units head with one pick and no LSTM; a terminal head (does not update ae):

    func_embed = ReLU(Linear(multi-hot of the unit types that can take the chosen action))
    query      = Linear(ReLU(Linear(ae) + func_embed))
    logits     = mask(conv1d_k1(entity_embeddings) · query, targetable & present) / temperature
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from ..config import AlphaStarConfig
from ..distributions import mask_logits, sample


class TargetUnitHead(nn.Module):
    def __init__(self, config: AlphaStarConfig) -> None:
        super().__init__()
        key, func = config.unit_key_size, config.func_embed_size
        self.keys = nn.Conv1d(config.entity_embedding_size, key, kernel_size=1)
        self.func_embed = nn.Linear(config.num_unit_types, func)
        self.fc_ae = nn.Linear(config.autoregressive_embedding_size, func)
        self.fc_query = nn.Linear(func, key)

    def forward(
        self,
        ae: torch.Tensor,
        entity_embeddings: torch.Tensor,
        targetable: torch.Tensor,
        unit_types: torch.Tensor,
        target: torch.Tensor | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """→ (logits ``[b, N]``, target ``[b]``)."""
        keys = self.keys(entity_embeddings.transpose(1, 2)).transpose(1, 2)
        query = self.fc_query(F.relu(self.fc_ae(ae) + F.relu(self.func_embed(unit_types))))
        logits = mask_logits(torch.einsum("bnk,bk->bn", keys, query), targetable) / temperature
        if target is None:
            target = sample(logits, generator)
        return logits, target
