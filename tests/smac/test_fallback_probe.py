"""``benchmarks/smac_fallback_probe.py``: the fall-back move on hand-made cases, and a game through
``StarCraft2Env`` that hands over to SMAC's heuristic."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def fp(load_benchmark):
    return load_benchmark("smac_fallback_probe")


def avail(*actions, n=12):
    mask = np.zeros(n, dtype=int)
    mask[list(actions)] = 1
    return mask


def test_the_move_points_away_from_the_enemy_centroid(fp):
    everything = avail(1, 2, 3, 4, 5)
    assert fp.fallback_action((9.0, 16.0), (23.0, 16.0), everything) == 5  # enemy east: west
    assert fp.fallback_action((20.0, 10.0), (18.0, 17.0), everything) == 3  # mostly north of us: south
    assert fp.fallback_action((5.0, 5.0), (2.0, 4.0), everything) == 4  # west of us: east


def test_a_blocked_move_falls_to_the_next_best_then_to_stop(fp):
    assert fp.fallback_action((9.0, 16.0), (23.0, 15.0), avail(1, 2, 3, 4)) == 2  # west blocked: the side away
    assert fp.fallback_action((9.0, 16.0), (23.0, 16.0), avail(1)) == 1
    assert fp.fallback_action((9.0, 16.0), (23.0, 16.0), avail(0)) == 0  # a dead agent: no-op


def test_zero_steps_back_is_smacs_heuristic(fp):
    """K = 0 plays StarCraft2Env(heuristic_ai=True) from the first step: the same outcomes game for game."""
    from selfplay.envs.smac import StarCraft2Env

    env = StarCraft2Env(map_name="3m", seed=3, heuristic_ai=True)
    won = 0
    for _ in range(4):
        env.reset()
        done, info = False, {}
        while not done:
            _, done, info = env.step([0] * env.n_agents)
        won += int(info["battle_won"])
    env.close()
    assert fp.play("3m", 0, 4, seed=3) == won


def test_falling_back_moves_the_team_away_before_the_heuristic(fp, monkeypatch):
    """During the first K steps the agents take the fall-back moves (west on 3m, whose enemy starts east)."""
    from selfplay.envs.smac import StarCraft2Env

    taken = []
    step = StarCraft2Env.step

    def recording(self, actions):
        if not self.heuristic_ai:
            taken.append(list(actions))
        return step(self, actions)

    monkeypatch.setattr(StarCraft2Env, "step", recording)
    fp.play("3m", 3, 1, seed=0)
    assert taken == [[5, 5, 5]] * 3
