"""The CPU build's chunked drivers (``build.CpuBuild.bind``, ``build.Chunks``): a batch stepped in chunks of
games, each chunk on its own scratch slot and run on a thread of its own, plays the same games bit for bit
as one call over every game (each game independent, its jitter drawn before the call), SMAC's and
SMACv2's."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
import torch
from selfplay.envs.smac import SMACBattle, build
from selfplay.envs.smac.records import SLOT_GAP_BYTES, new_scratch
from selfplay.envs.smac.smacv2_battle import SMACv2Battle

from selfplay.utils.threads import SMAC_THREADS_ENV


def _record(b, steps: int) -> list:
    """Observations, rewards, dones, masks and positions over ``steps`` seeded random steps of battle ``b``."""
    gen = torch.Generator().manual_seed(2)
    seen = [[o.clone() for o in b.reset()]]
    for _ in range(steps):
        masks = b.action_masks()
        obs, rewards, done, _ = b.step([(torch.rand(m.shape, generator=gen) * m).argmax(-1) for m in masks])
        seen.append([*(o.clone() for o in obs), *(r.clone() for r in rewards), done.clone(), *masks,
                     torch.from_numpy(b.engine.unit_state().pos.copy())])
    return seen


def _play(map_name: str, games: int, slots: int, apart: bool = False, steps: int = 30, pieces: int | None = None) -> list:
    """``_record`` of a two-player battle whose scratch has ``slots`` slots (more than one: pieces on threads;
    ``apart``: rows widened as the CPU build widens them); ``pieces``: the step's piece count, checked."""
    b = SMACBattle(map_name, games, two_player=True, seed=5)
    b.engine.scratch = new_scratch(slots, b.engine.num_units, apart=apart)  # the calls are bound again for it
    seen = _record(b, steps)
    step = b._calls[4]  # the step that played: pieces on threads or one call
    assert isinstance(step, build.Chunks) == (slots > 1)
    assert pieces is None or len(step.bounds) - 1 == pieces
    return seen


def _play_v2(scenario: str, games: int, slots: int, steps: int = 40) -> list:
    """``_record`` of a SMACv2 battle against the scripted AI (each game its own draw; restarts draw again)."""
    b = SMACv2Battle(scenario, games, two_player=False, seed=5)
    b.engine.scratch = new_scratch(slots, b.engine.num_units, apart=slots > 1)  # its calls are bound again for it
    seen = _record(b, steps)
    assert isinstance(b.games._step, build.Chunks) == (slots > 1)
    return seen


def _assert_same(a: list, b: list) -> None:
    for step, (x, y) in enumerate(zip(a, b, strict=True)):
        for u, v in zip(x, y, strict=True):
            assert torch.equal(u, v), f"step {step}"


def test_chunks_on_threads_play_the_one_call_games(monkeypatch):
    serial = _play("MMM2", 7, slots=1)  # a Medivac's heals and accelerations, shields
    _assert_same(serial, _play("MMM2", 7, slots=3, pieces=3))  # pieces of 2, 2 and 3 games, rows side by side
    _assert_same(serial, _play("MMM2", 7, slots=3, apart=True, pieces=3))  # rows apart, as the build makes them
    monkeypatch.setattr(build, "MIN_PIECE_GAMES", 1)
    _assert_same(serial, _play("MMM2", 7, slots=3, apart=True, pieces=7))  # 7 pieces of a game, taken as they come
    assert not all(torch.equal(a[-1], b[-1]) for a, b in zip(serial[1:], serial[2:]))  # the units move


def test_smacv2_chunks_on_threads_play_the_one_call_games():
    serial = _play_v2("terran_5_vs_5", 7, slots=1)  # Medivacs in some draws
    _assert_same(serial, _play_v2("terran_5_vs_5", 7, slots=3))
    assert any(bool(step[2].any()) for step in serial[1:])  # a game ends (and restarts on a new draw)


def test_chunks_cover_the_games_once_each_on_threads_and_raise_a_chunk_error():
    seen = []

    def driver(first, last, w, tag):
        seen.append((first, last, w, tag, threading.current_thread() is threading.main_thread()))
        if tag == "fail" and first == 3:
            raise RuntimeError("piece 1 failed")

    build.Chunks(driver, 10, 3, ("ok",))()  # 10 games under MIN_PIECE_GAMES: one piece per thread
    assert sorted(s[:2] for s in seen) == [(0, 3), (3, 6), (6, 10)]
    assert all(main == (w == 0) for *_, w, _, main in seen)  # thread 0 is the caller's, its slot 0
    with pytest.raises(RuntimeError, match="piece 1 failed"):
        build.Chunks(driver, 10, 3, ("fail",))()


def test_a_thread_held_up_leaves_its_share_of_pieces_to_the_others():
    """Pieces are taken as they come: while the pool's thread is held on its first piece, the calling
    thread plays every other piece (with one fixed half per thread it would wait for the held one)."""
    games, pieces = 20 * build.MIN_PIECE_GAMES, 2 * build.PIECES_PER_SLOT
    played, rest_done = [], threading.Event()

    def driver(first, last, w):
        if w == 1:
            assert rest_done.wait(timeout=60), "the caller's thread did not take the held thread's share"
        played.append((first, last, w))
        if sum(p[2] == 0 for p in played) == pieces - 1:
            rest_done.set()

    chunks = build.Chunks(driver, games, 2, ())
    chunks()
    assert len(chunks.bounds) == pieces + 1  # 2 threads x PIECES_PER_SLOT pieces of 20 x MIN_PIECE_GAMES / 16 games
    assert sorted(p[:2] for p in played) == list(zip(chunks.bounds[:-1], chunks.bounds[1:]))  # each once
    assert sum(p[2] == 1 for p in played) <= 1


def test_batches_get_parallel_slots_from_the_threshold_on(monkeypatch):
    monkeypatch.setenv(SMAC_THREADS_ENV, "1")
    assert build.parallel_slots(build.PARALLEL_MIN_GAMES) == 1
    monkeypatch.setenv(SMAC_THREADS_ENV, "2")
    assert build.parallel_slots(build.PARALLEL_MIN_GAMES - 1) == 1
    assert build.parallel_slots(build.PARALLEL_MIN_GAMES) == 2
    monkeypatch.delenv(SMAC_THREADS_ENV)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "3")  # the variable the SMAC guide names
    assert build.parallel_slots(build.PARALLEL_MIN_GAMES) == 3
    monkeypatch.setenv("NUMBA_NUM_THREADS", "two")
    with pytest.raises(ValueError, match="NUMBA_NUM_THREADS must be a whole number"):
        build.parallel_slots(build.PARALLEL_MIN_GAMES)


LARGE_BATCH = f"""
import numba.np.ufunc.parallel as numba_pool, torch
from selfplay.envs.smac import SMACBattle, build
torch.set_num_threads(1)
b = SMACBattle("3m", {build.PARALLEL_MIN_GAMES}, two_player=True, seed=0)
b.reset()
b.step([torch.zeros(m.shape[:2], dtype=torch.long) + 1 for m in b.action_masks()])
print(isinstance(b._calls[4], build.Chunks), torch.get_num_threads(), numba_pool._is_initialized)
"""


def test_a_large_batch_on_threads_leaves_torch_and_numbas_pools_alone():
    """Stepping on threads never starts numba's own pool (OpenMP here): starting it set torch's thread count
    to numba's, and forked workers whose parent had used torch's threads then hung in torch's next
    parallel op. Fresh process, two threads asked for."""
    env = dict(os.environ, NUMBA_NUM_THREADS="2")
    env.pop(SMAC_THREADS_ENV, None)
    done = subprocess.run([sys.executable, "-c", LARGE_BATCH], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "1", "False"]


def test_parallel_slots_rows_share_no_cache_line(monkeypatch):
    """Rows of the same field in two slots lie at least ``SLOT_GAP_BYTES`` apart past a row's units, in
    whole blocks, so two threads' writes never meet in a cache line (false sharing); one slot is not widened."""
    for units in (1, 6, 16, 66, 200):
        sc = new_scratch(2, units, apart=True)
        for field in sc:
            gap = field.strides[0] - units * field.itemsize  # bytes from a row's last unit to the next row
            assert field.shape == (2, field.shape[1]) and field.shape[1] >= units
            assert gap >= SLOT_GAP_BYTES and field.strides[0] % SLOT_GAP_BYTES == 0, (units, field.dtype)
        assert all(f.shape == (1, units) for f in new_scratch(1, units))
    monkeypatch.setenv(SMAC_THREADS_ENV, "2")
    assert build.CpuBuild().scratch(build.PARALLEL_MIN_GAMES, 16).alive.shape[1] == 256
    monkeypatch.setenv(SMAC_THREADS_ENV, "1")
    assert build.CpuBuild().scratch(build.PARALLEL_MIN_GAMES, 16).alive.shape[1] == 16
