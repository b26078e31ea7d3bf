"""Masked categorical distributions used by every head (docs/design/alphastar.md §2, "sample with temperature").

Illegal entries get the finite logit ``MASKED_LOGIT`` (−1e9) rather than −∞: their probability
underflows to exactly 0 (never sampled, no mass in entropy or KL) while a row with no legal entry
stays finite (uniform) instead of producing NaN. ``legal_mask(logits)`` recovers the mask from the
logits (anything below ``MASKED_LOGIT / 2`` is illegal), which the losses use to normalise the
entropy by the number of legal choices.

Rules implemented
    logits_T = masked(logits) / T
    sample   a ~ softmax(logits_T)                      (torch.multinomial with the given generator)
    log π(a) = log_softmax(logits_T)[a]
    H        = −Σ_k p_k log p_k
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

MASKED_LOGIT = -1e9


def mask_logits(logits: torch.Tensor, legal: torch.Tensor | None) -> torch.Tensor:
    """Replace the logits of illegal entries (``legal == False``) with ``MASKED_LOGIT``."""
    if legal is None:
        return logits
    return torch.where(legal, logits, torch.full_like(logits, MASKED_LOGIT))


def legal_mask(logits: torch.Tensor) -> torch.Tensor:
    """Entries that were not masked by ``mask_logits`` (also after division by a temperature ≥ 1e-3)."""
    return logits > MASKED_LOGIT * 1e-4


def sample(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One draw per row of ``logits [..., K]`` from softmax(logits); returns int64 ``[...]``."""
    flat = logits.reshape(-1, logits.shape[-1])
    probs = torch.softmax(flat.detach().float(), dim=-1)
    draws = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
    return draws.reshape(logits.shape[:-1])


def log_prob(logits: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """log softmax(logits)[action] for ``logits [..., K]`` and int ``actions [...]`` (entries < 0 read as 0)."""
    log_p = F.log_softmax(logits, dim=-1)
    return log_p.gather(-1, actions.clamp(min=0).unsqueeze(-1)).squeeze(-1)


def entropy(logits: torch.Tensor) -> torch.Tensor:
    """−Σ p log p over the last axis (masked entries have p = 0 and contribute exactly 0)."""
    log_p = F.log_softmax(logits, dim=-1)
    return -(log_p.exp() * log_p).sum(-1)
