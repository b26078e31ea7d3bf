"""Torch's intra-op thread count, set for a block of work and restored afterwards; the threads a large SMAC
batch steps on (``smac_threads``, ``set_smac_threads`` for a worker process); the C allocator's setting for a
process whose threads allocate large tensors (``keep_freed_memory``)."""

from __future__ import annotations

import contextlib
import os

SMAC_THREADS_ENV = "SELFPLAY_SMAC_THREADS"


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


def smac_threads() -> int:
    """The threads a SMAC batch of ``PARALLEL_MIN_GAMES`` games or more steps on (``envs/smac/build.py``):
    ``SELFPLAY_SMAC_THREADS`` when set (``set_smac_threads``), else ``NUMBA_NUM_THREADS`` when set (the
    variable the SMAC guide names), else one per core this process may run on.  Read from the environment,
    never from numba: ``numba.get_num_threads`` and ``numba.set_num_threads`` start numba's own thread pool
    (OpenMP here), which nothing of ours uses, and starting it sets torch's thread count to numba's (a
    ``torch_threads(1)`` block then ran torch on every core) and hung forked pool workers whose parent had
    used torch's threads (measured; docs/design/smac-engine.md)."""
    for name in (SMAC_THREADS_ENV, "NUMBA_NUM_THREADS"):
        value = os.environ.get(name, "").strip()
        if value:
            if not value.isdigit() or int(value) < 1:
                raise ValueError(f"{name} must be a whole number of threads >= 1, got {value!r}")
            return int(value)
    return len(os.sched_getaffinity(0))


def set_smac_threads(n: int) -> None:
    """This process (and the processes it starts) steps large SMAC batches on ``n`` threads (``smac_threads``).
    For worker processes that run side by side (a process pool's, Ray's), as torch's thread count there: two
    processes on two cores, each with two threads, stepped 256 games of 3s5z 30 % slower than with one each
    (``docs/results/speed.md``). Process-wide: only for a process that is the pool's or executor's own, never
    library code."""
    os.environ[SMAC_THREADS_ENV] = str(int(n))


def keep_freed_memory() -> bool:
    """Tune glibc's ``malloc`` for threads that allocate and free large tensors over and over: one arena for
    every thread (``M_ARENA_MAX`` 1), freed memory kept rather than returned to the system (``M_TRIM_THRESHOLD``
    1 GiB) and blocks up to 256 MiB taken from that heap rather than mapped apiece (``M_MMAP_THRESHOLD``).
    glibc's defaults give the second thread of a MAPPO update (``update_threads=2``) its own arena, whose
    heaps are unmapped and mapped again on every pass: with bfloat16 products about 10⁵ page faults per
    update, a quarter of the process's CPU time in the kernel (``docs/results/speed.md``). The process
    then keeps its peak heap. Process-wide and not undone: a program's entry point calls it (``selfplay``
    does), never library code; the same as starting Python with ``MALLOC_ARENA_MAX=1
    MALLOC_TRIM_THRESHOLD_=1073741824 MALLOC_MMAP_THRESHOLD_=268435456``. Returns whether it took effect
    (False where the C library is not glibc)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8  # glibc's malloc.h
    return all(mallopt(option, value) == 1 for option, value in
               ((M_ARENA_MAX, 1), (M_TRIM_THRESHOLD, 1 << 30), (M_MMAP_THRESHOLD, 256 << 20)))
