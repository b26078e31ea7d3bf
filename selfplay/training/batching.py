"""Helpers for batched recurrent state and per-game grouping (docs/design/architecture.md, "Performance").

A policy's recurrent state is ``None`` (feed-forward), a tensor, or a tuple/list of tensors, each
with the batch of games as its first dimension (the Policy contract, ``selfplay/core/policy.py``).
"""

from __future__ import annotations

from typing import Any


def index_state(state: Any, idx: Any) -> Any:
    """The rows ``idx`` of a batched state."""
    if state is None:
        return None
    if isinstance(state, (tuple, list)):
        return type(state)(index_state(s, idx) for s in state)
    return state[idx]


def assign_state(state: Any, idx: Any, rows: Any) -> Any:
    """Write ``rows`` into the rows ``idx`` of ``state`` in place (returns ``state``)."""
    if state is None or rows is None:
        return state
    if isinstance(state, (tuple, list)):
        for s, r in zip(state, rows):
            assign_state(s, idx, r)
        return state
    state[idx] = rows.to(state.dtype)
    return state


def group_by_policy(policies: list[Any]) -> list[tuple[Any, list[int]]]:
    """Group game indices by the *object* playing them, so each policy runs one forward pass."""
    groups: dict[int, tuple[Any, list[int]]] = {}
    for game, policy in enumerate(policies):
        groups.setdefault(id(policy), (policy, []))[1].append(game)
    return list(groups.values())
