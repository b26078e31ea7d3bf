"""LSTM core (docs/design/alphastar.md §2, row "core"; mini-AlphaStar).

    x = concat(embedded_scalar, embedded_entity, embedded_spatial)   [B·T, E] → [B, T, E]
    lstm_out, state = LSTM(x, state)                                  state = (h, c), each [layers, B, H]

The state is carried across calls (a trajectory unrolled in chunks). ``episode_start [B, T]``
zeroes the state of a game *before* the step where a new episode begins, so one chunk may span an
episode end; without resets inside the chunk the whole sequence goes through one LSTM call.
"""

from __future__ import annotations

import torch
from torch import nn

from .config import AlphaStarConfig

LSTMState = tuple[torch.Tensor, torch.Tensor]


class Core(nn.Module):
    def __init__(self, config: AlphaStarConfig) -> None:
        super().__init__()
        self.config = config
        input_size = config.embedded_scalar_size + config.embedded_entity_size + config.embedded_spatial_size
        self.lstm = nn.LSTM(input_size, config.lstm_size, num_layers=config.lstm_layers, batch_first=True)

    def initial_state(self, batch: int, device: torch.device | str | None = None) -> LSTMState:
        shape = (self.config.lstm_layers, batch, self.config.lstm_size)
        return torch.zeros(shape, device=device), torch.zeros(shape, device=device)

    def forward(
        self, x: torch.Tensor, state: LSTMState, episode_start: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, LSTMState]:
        """``x [B, T, E]`` → (``lstm_out [B, T, H]``, new state)."""
        if episode_start is None:
            return self.lstm(x, state)
        keep = (~episode_start).to(x.dtype)  # [B, T]
        h, c = state
        if not bool(episode_start[:, 1:].any()):
            reset = keep[:, 0][None, :, None]
            return self.lstm(x, (h * reset, c * reset))
        outputs = []
        for t in range(x.shape[1]):
            reset = keep[:, t][None, :, None]
            out, (h, c) = self.lstm(x[:, t : t + 1], (h * reset, c * reset))
            outputs.append(out)
        return torch.cat(outputs, dim=1), (h, c)
