"""``benchmarks/smac_melee_contact.py``: which enemies count as in melee reach, and the trace's rows."""


import numpy as np
import pytest
from selfplay.envs.smac import SMACBattle


@pytest.fixture(scope="module")
def contact(load_benchmark):
    return load_benchmark("smac_melee_contact")


def test_in_reach_hand_made(contact):
    """One zealot (radius 0.5) at the origin and a dead one at x = 10 are the agents 0..1; enemies
    2..6 are zerglings (radius 0.375) at edge distances 0.125 (in), 0.25 (in: the bound), 0.375 (out)
    and 0 to the dead zealot only (out), and a dead one (not counted at all).  All values are exact
    binary fractions, so the bound is tested exactly."""
    pos = np.array([[0.0, 0.0], [10.0, 0.0], [1.0, 0.0], [0.0, -1.125], [-1.25, 0.0], [10.875, 0.0],
                    [0.875, 0.0]])
    radius = np.array([0.5, 0.5, 0.375, 0.375, 0.375, 0.375, 0.375])
    alive = np.array([True, False, True, True, True, True, False])
    assert contact.in_reach(pos, radius, alive, slice(0, 2), slice(2, 7), 0.25) == (4, 2)
    assert contact.in_reach(pos, radius, alive, slice(0, 2), slice(2, 7), 0.125) == (4, 1)
    alive[1] = True  # the zealot at x = 10 lives: the zergling touching it (edge 0) counts
    assert contact.in_reach(pos, radius, alive, slice(0, 2), slice(2, 7), 0.25) == (4, 3)
    alive[:2] = False  # no living agent: nothing is in reach
    assert contact.in_reach(pos, radius, alive, slice(0, 2), slice(2, 7), 0.25) == (4, 0)
    with pytest.raises(ValueError, match="reach must be >= 0"):
        contact.in_reach(pos, radius, alive, slice(0, 2), slice(2, 7), -1.0)


def test_summary_windows_and_threshold(contact):
    rows = [(0, 24, 2), (5, 24, 4), (12, 21, 9), (15, 19, 11), (25, 20, 7)]
    out = contact.summary(rows, min_alive=20)
    assert out == [(0, 10, 2, 3.0, 4, 24.0), (10, 20, 1, 9.0, 9, 21.0), (20, 30, 1, 7.0, 7, 20.0)]


def test_trace_counts_each_first_episode_once(contact):
    """corridor, 2 games: every row is a state of an unfinished first episode (24 zerglings at most,
    never more in reach than alive), and both games finish within the episode limit."""
    battle = SMACBattle("corridor", 2, two_player=False, seed=0)
    rows, won, finished = contact.trace(battle, battle.episode_limit + 1, 0.15)
    assert finished == 2 and 0 <= won <= 2
    r = np.array(rows)
    assert r[:, 1].max() <= 24 and (r[:, 2] <= r[:, 1]).all() and r[:, 2].max() > 0
    assert np.bincount(r[:, 0]).max() <= 2  # one row per game and step
