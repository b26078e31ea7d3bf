"""Action-type head (docs/design/alphastar.md §2, row "action-type head"; mini-AlphaStar).

    x      = ReLU(ResBlocks(Linear(lstm_out)))                       ResBlocks with layer norm
    logits = mask(GLU(x, scalar_context), available_action_types) / temperature
    a      ~ softmax(logits)            (or the given action when teacher forcing)
    ae     = GLU(ReLU(Linear(one_hot(a))), scalar_context) + GLU(lstm_out, scalar_context)

``ae`` is the autoregressive embedding that the later heads read and extend.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from ..config import AlphaStarConfig
from ..distributions import mask_logits, sample
from ..layers import GLU, ResBlock1d


class ActionTypeHead(nn.Module):
    def __init__(self, config: AlphaStarConfig) -> None:
        super().__init__()
        hidden, ctx, ae = config.action_type_hidden, config.scalar_context_size, config.autoregressive_embedding_size
        self.num_action_types = config.num_action_types
        self.fc_in = nn.Linear(config.lstm_size, hidden)
        self.resblocks = nn.Sequential(*(ResBlock1d(hidden) for _ in range(config.action_type_resblocks)))
        self.logits_glu = GLU(hidden, ctx, config.num_action_types)
        self.embed_action = nn.Linear(config.num_action_types, hidden)
        self.action_glu = GLU(hidden, ctx, ae)
        self.lstm_glu = GLU(config.lstm_size, ctx, ae)

    def forward(
        self,
        lstm_out: torch.Tensor,
        scalar_context: torch.Tensor,
        available: torch.Tensor,
        action: torch.Tensor | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``lstm_out [b, H]`` → (logits ``[b, A]``, action ``[b]``, autoregressive embedding ``[b, AE]``)."""
        x = F.relu(self.resblocks(self.fc_in(lstm_out)))
        logits = mask_logits(self.logits_glu(x, scalar_context), available) / temperature
        if action is None:
            action = sample(logits, generator)
        one_hot = F.one_hot(action, self.num_action_types).to(lstm_out.dtype)
        ae = self.action_glu(F.relu(self.embed_action(one_hot)), scalar_context)
        ae = ae + self.lstm_glu(lstm_out, scalar_context)
        return logits, action, ae
