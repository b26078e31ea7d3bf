"""Torch's intra-op thread count, set for a block of work and restored afterwards."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def torch_threads(n: int | None):
    """Run the block with ``n`` torch threads (``None``/0: leave them) and restore the caller's setting
    afterwards: library code changes no process-wide state behind the caller's back. Small networks run
    fastest single-threaded, and single-threaded runs can go in parallel processes."""
    if not n:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
