"""Checks of the settings every config shares: seeds, counts and output directories, each a one-line
``ValueError`` naming the setting and what is allowed."""

from __future__ import annotations

import numbers
import os
from typing import Any

MAX_SEED = 2**32 - 1  # seeds are 32-bit: every generator a run seeds (numpy, torch, the environments) takes them
MAX_NUM_ENVS = 2**16  # games held in memory at once; the paper's runs use 64 (beyond 2**16 no machine's memory holds them)


def check_int(value: Any, name: str, low: int, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``; a bool, a float (``1e11``) or a number outside is refused."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer{_range(low, high)}, got {value!r}")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name} must be an integer{_range(low, high)}, got {value!r}")
    return int(value)


def check_seed(value: Any, name: str = "seed") -> int:
    return check_int(value, name, 0, MAX_SEED)


def _range(low: int, high: int | None) -> str:
    return f" ≥ {low}" if high is None else f" in [{low}, {high}]"


def check_out(out: Any, name: str = "out") -> None:
    """``out`` must name a directory: a non-empty path."""
    if not isinstance(out, (str, os.PathLike)) or not str(os.fspath(out)).strip():
        raise ValueError(f"{name} must name a directory, got {out!r}")
