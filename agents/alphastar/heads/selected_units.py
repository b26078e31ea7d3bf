"""Selected-units head: a pointer network with its own LSTM (docs/design/alphastar.md §2, row
"selected-units head"; mini-AlphaStar).

    func_embed = ReLU(Linear(multi-hot of the unit types that can take the chosen action))
    keys       = conv1d_k1(entity_embeddings) ; the end-of-selection token has a learned key
    repeat up to max_selected_units picks:
        x, (h, c) = ReLU(Linear(Linear(ae) + func_embed)), LSTMCell(x, (h, c)) ; query = h
        logits     = mask(keys · query) / temperature
        pick       ~ softmax(logits)    (or the given unit when teacher forcing)
        ae        += Linear(key[pick] − mean of the keys over present entities)   (real unit picks only)

Masking: a unit is legal when it is present, selectable for the chosen action type, and not
picked yet. The end token is illegal on the first pick (select at least one unit) unless no unit is
selectable; picks after the end token (or after ``max_selected_units`` picks) are inactive. The
loop stops as soon as every selection in the batch has ended (the remaining picks get zero logits).

Representation of a selection: ``[b, S]`` unit indices in pick order, then ``-1``; the end token is
implicit (a selection of k < S units means k picks and then the end token, whose probability is part
of the log-probability).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from ..config import AlphaStarConfig
from ..distributions import entropy, log_prob, mask_logits, sample


class SelectedUnitsHead(nn.Module):
    def __init__(self, config: AlphaStarConfig) -> None:
        super().__init__()
        key, func = config.unit_key_size, config.func_embed_size
        self.max_picks = config.max_selected_units
        self.keys = nn.Conv1d(config.entity_embedding_size, key, kernel_size=1)
        self.end_key = nn.Parameter(torch.randn(key) * 0.1)
        self.func_embed = nn.Linear(config.num_unit_types, func)
        self.fc_ae = nn.Linear(config.autoregressive_embedding_size, func)
        self.fc_query = nn.Linear(func, key)
        self.lstm = nn.LSTMCell(key, config.selected_units_lstm_size)
        self.query_out = (
            nn.Identity() if config.selected_units_lstm_size == key else nn.Linear(config.selected_units_lstm_size, key)
        )
        self.project = nn.Linear(key, config.autoregressive_embedding_size)

    def forward(
        self,
        ae: torch.Tensor,
        entity_embeddings: torch.Tensor,
        entity_mask: torch.Tensor,
        selectable: torch.Tensor,
        unit_types: torch.Tensor,
        used: torch.Tensor,
        selection: torch.Tensor | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> dict[str, torch.Tensor]:
        """Returns ``logits [b, S, N+1]``, ``selection [b, S]`` (−1 after the end), ``pick_mask [b, S]``
        (picks that count), ``log_prob [b]`` and ``entropy [b]`` summed over active picks, and ``ae``."""
        b, n, _ = entity_embeddings.shape
        keys = self.keys(entity_embeddings.transpose(1, 2)).transpose(1, 2)  # [b, N, K]
        present = entity_mask.unsqueeze(-1).to(keys.dtype)
        key_mean = (keys * present).sum(1) / present.sum(1).clamp(min=1.0)
        keys_with_end = torch.cat([keys, self.end_key.expand(b, 1, -1)], dim=1)  # [b, N+1, K]
        func = F.relu(self.func_embed(unit_types))
        h = ae.new_zeros(b, self.lstm.hidden_size)
        c = ae.new_zeros(b, self.lstm.hidden_size)
        legal_units = selectable & entity_mask
        done = ~used
        all_logits, picks, active_picks, log_p, ent = [], [], [], ae.new_zeros(b), ae.new_zeros(b)
        for i in range(self.max_picks):
            if bool(done.all()):  # every selection has ended: the remaining picks are inactive
                break
            x = F.relu(self.fc_query(self.fc_ae(ae) + func))
            h, c = self.lstm(x, (h, c))
            query = self.query_out(h)
            end_legal = torch.full((b, 1), i > 0, device=ae.device) | ~legal_units.any(-1, keepdim=True)
            legal = torch.cat([legal_units, end_legal], dim=-1)
            logits = mask_logits(torch.einsum("bnk,bk->bn", keys_with_end, query), legal) / temperature
            if selection is None:
                choice = sample(logits, generator)
            else:
                given = selection[:, i]
                choice = torch.where(given < 0, torch.full_like(given, n), given)
            active = ~done
            is_end = choice == n
            real = active & ~is_end
            log_p = log_p + log_prob(logits, choice) * active
            ent = ent + entropy(logits) * active
            all_logits.append(logits)
            picks.append(torch.where(real, choice, torch.full_like(choice, -1)))
            active_picks.append(active)
            picked_one_hot = F.one_hot(choice.clamp(max=n - 1), n).bool() & real.unsqueeze(-1)
            legal_units = legal_units & ~picked_one_hot
            picked_key = keys_with_end.gather(1, choice.view(b, 1, 1).expand(b, 1, keys.shape[-1])).squeeze(1)
            ae = ae + self.project(picked_key - key_mean) * real.unsqueeze(-1).to(ae.dtype)
            done = done | is_end
        for _ in range(self.max_picks - len(all_logits)):
            all_logits.append(keys_with_end.new_zeros(b, n + 1))
            picks.append(torch.full((b,), -1, dtype=torch.long, device=ae.device))
            active_picks.append(torch.zeros(b, dtype=torch.bool, device=ae.device))
        return {
            "logits": torch.stack(all_logits, 1),
            "selection": torch.stack(picks, 1),
            "pick_mask": torch.stack(active_picks, 1),
            "log_prob": log_p,
            "entropy": ent,
            "ae": ae,
        }
