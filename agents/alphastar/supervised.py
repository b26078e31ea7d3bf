"""Supervised-learning loss and per-head accuracy from a teacher-forced output (docs/design/alphastar.md §3).

    loss = Σ_heads mean over valid steps of used_h · CE_h,   CE_h = −log π(label_h)

(CE of the selected units = Σ over its picks, the end-of-selection token included; each head is
masked by whether the labelled action type uses it.) The network computes log π(label) in teacher
forcing, so this is −Σ of ``output.log_probs`` with the step mask.

Accuracy of a head = share of the valid steps using it where argmax(logits) == label (selected units:
every pick, the end token included, is the argmax of its pick).
"""

from __future__ import annotations

import torch

from .config import HEADS


def _masked_mean(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is None:
        return x.mean()
    m = mask.to(x.dtype)
    return (x * m).sum() / m.sum().clamp(min=1.0)


def supervised_loss(output, mask: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Per-head masked cross-entropy (keys ``ce_<head>``) and their sum ``total``.

    ``output``: ``AlphaStarOutput`` of a teacher-forced pass with the labels as actions (any layout);
    ``mask``: valid steps, shaped like ``output.value``.
    """
    if mask is not None and mask.shape != output.value.shape:
        raise ValueError(f"mask must have shape {tuple(output.value.shape)}, got {tuple(mask.shape)}")
    terms = {f"ce_{h}": _masked_mean(-output.log_probs[h], mask) for h in HEADS}
    terms["total"] = sum(terms.values())
    return terms


@torch.no_grad()
def per_head_accuracy(output, mask: torch.Tensor | None = None) -> dict[str, float]:
    """Share of valid steps using each head where the argmax equals the label (NaN if none uses it)."""
    valid = torch.ones_like(output.value, dtype=torch.bool) if mask is None else mask.bool()
    result = {}
    for head in HEADS:
        used = output.argument_used[head] & valid
        logits = output.logits[head]
        if head == "selected_units":
            n = logits.shape[-1] - 1
            labels = output.actions.selected_units
            labels = torch.where(labels >= 0, labels, torch.full_like(labels, n))  # −1 → end token
            pick_ok = (logits.argmax(-1) == labels) | ~output.selected_units_pick_mask
            correct = pick_ok.all(-1)
        else:
            correct = logits.argmax(-1) == getattr(output.actions, head)
        count = int(used.sum())
        result[head] = float((correct & used).sum()) / count if count else float("nan")
    return result
