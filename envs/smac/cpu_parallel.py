"""The CPU build's parallel drivers (``build.cpu()``, compiled with numba's ``parallel=True``): the
games are split into as many contiguous chunks as the scratch ``sc`` has slots, the chunks run on
numba's threads (``prange``), each chunk's games one after another on its own slot of scratch rows
(``scratch_rows(sc, w)``).  Each game is independent: its cooldown jitter is drawn before the call
and its scratch rows are written before they are read, so the results are the same bit for bit
whatever the chunk or thread count.  ``build.CpuBuild`` gives a batch several slots, and binds these
drivers, only from ``build.PARALLEL_MIN_GAMES`` games on; a smaller batch keeps the one-thread
drivers of ``cpu_drivers.py`` (no parallel region to start)."""

from __future__ import annotations

from numba import prange

from .game_step import feature_range, score_range, step_range
from .rules import scratch_rows


def step_chunks(jitter, state_, static, maps, flags, sc, seat0, seat1, ep, switches):
    """``cpu_drivers.step_games``, chunk by chunk on numba's threads."""
    games = state_.hp.shape[0]
    chunks = sc.alive.shape[0]
    for w in prange(chunks):
        step_range(games * w // chunks, games * (w + 1) // chunks, jitter, state_, static, maps, flags,
                   scratch_rows(sc, w), seat0, seat1, ep, switches[0] != 0, switches[2] != 0)


def score_chunks(state_, sc, seat0, seat1, ep, switches):
    """``cpu_drivers.score_games``, chunk by chunk on numba's threads."""
    games = state_.hp.shape[0]
    chunks = sc.alive.shape[0]
    for w in prange(chunks):
        score_range(games * w // chunks, games * (w + 1) // chunks, state_, scratch_rows(sc, w), seat0, seat1, ep,
                    switches[0] != 0, switches[2] != 0)


def feature_chunks(state_, sc, seat0, seat1, ep, switches):
    """``cpu_drivers.feature_games``, chunk by chunk on numba's threads."""
    games = state_.hp.shape[0]
    chunks = sc.alive.shape[0]
    for w in prange(chunks):
        feature_range(games * w // chunks, games * (w + 1) // chunks, state_, scratch_rows(sc, w), seat0, seat1, ep,
                      switches[0] != 0, switches[2] != 0)
