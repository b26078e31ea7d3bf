"""Seed derivation: one rule for every random stream a run splits off its seed."""

from __future__ import annotations

_PRIME = 1_000_003
_MOD = 2**63


def derive_seed(seed: int, *stream: int) -> int:
    """A seed for a sub-stream of ``seed`` named by integers (a player index, a weight version, ...).

    ``derive_seed(s, a, b) = ((s·P + a)·P + b) mod 2⁶³`` with ``P = 1 000 003``: distinct streams of one
    seed get distinct seeds, and the same names give the same seed on every machine.
    """
    value = int(seed)
    for key in stream:
        value = (value * _PRIME + int(key)) % _MOD
    return value
