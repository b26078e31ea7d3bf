"""The CPU build's parallel drivers (``envs/smac/cpu_parallel.py``): a batch stepped in chunks of games,
each chunk on its own scratch slot and run on numba's threads, plays the same games bit for bit as
the one-thread driver, whatever the chunk and thread count (each game independent, its jitter drawn
before the call)."""

from __future__ import annotations

import numba
import torch
from selfplay.envs.smac import SMACBattle, build
from selfplay.envs.smac.records import SLOT_GAP_BYTES, new_scratch


def _play(map_name: str, games: int, slots: int, threads: int, steps: int = 30, apart: bool = False) -> list:
    """Observations, rewards, dones, masks and positions over ``steps`` seeded random steps, the scratch
    given ``slots`` slots (more than one: the parallel drivers; ``apart``: rows widened as the CPU
    build widens them) and numba ``threads`` threads."""
    numba.set_num_threads(threads)
    b = SMACBattle(map_name, games, two_player=True, seed=5)
    b.engine.scratch = new_scratch(slots, b.engine.num_units, apart=apart)  # the calls are bound again for it
    gen = torch.Generator().manual_seed(2)
    seen = [[o.clone() for o in b.reset()]]
    for _ in range(steps):
        masks = b.action_masks()
        obs, rewards, done, _ = b.step([(torch.rand(m.shape, generator=gen) * m).argmax(-1) for m in masks])
        seen.append([*(o.clone() for o in obs), *(r.clone() for r in rewards), done.clone(), *masks,
                     torch.from_numpy(b.engine.unit_state().pos.copy())])
    return seen


def test_parallel_driver_plays_the_one_thread_games():
    threads = min(2, numba.config.NUMBA_NUM_THREADS)
    before = numba.get_num_threads()
    try:
        serial = _play("MMM2", 7, slots=1, threads=1)  # a Medivac's heals and accelerations, shields
        chunked = _play("MMM2", 7, slots=3, threads=1)  # chunks of 2, 2 and 3 games
        threaded = _play("MMM2", 7, slots=3, threads=threads, apart=True)  # rows apart, as the build makes them
    finally:
        numba.set_num_threads(before)
    assert not all(torch.equal(a[-1], b[-1]) for a, b in zip(serial[1:], serial[2:]))  # the units move
    for step, (a, b, c) in enumerate(zip(serial, chunked, threaded)):
        for x, y, z in zip(a, b, c):
            assert torch.equal(x, y) and torch.equal(x, z), f"step {step}"


def test_batches_get_parallel_slots_from_the_threshold_on():
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        assert build.parallel_slots(build.PARALLEL_MIN_GAMES) == 1
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        assert build.parallel_slots(build.PARALLEL_MIN_GAMES - 1) == 1
        assert build.parallel_slots(build.PARALLEL_MIN_GAMES) == numba.get_num_threads()
    finally:
        numba.set_num_threads(before)


def test_parallel_slots_rows_share_no_cache_line():
    """Rows of the same field in two slots lie at least ``SLOT_GAP_BYTES`` apart past a row's units, in
    whole blocks, so two threads' writes never meet in a cache line (false sharing); one slot is not widened."""
    for units in (1, 6, 16, 66, 200):
        sc = new_scratch(2, units, apart=True)
        for field in sc:
            gap = field.strides[0] - units * field.itemsize  # bytes from a row's last unit to the next row
            assert field.shape == (2, field.shape[1]) and field.shape[1] >= units
            assert gap >= SLOT_GAP_BYTES and field.strides[0] % SLOT_GAP_BYTES == 0, (units, field.dtype)
        assert all(f.shape == (1, units) for f in new_scratch(1, units))
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        sc = build.CpuBuild().scratch(build.PARALLEL_MIN_GAMES, 16)
        assert sc.alive.shape[1] == (16 if numba.get_num_threads() == 1 else 256)
    finally:
        numba.set_num_threads(before)
