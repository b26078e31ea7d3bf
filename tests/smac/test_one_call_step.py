"""A step in one compiled call (``envs/smac/game_step.py``, the CPU lane of ``SMACBattle``) plays the
same games as the rules called one by one (the tensor lane, ``SMACBattle.fast = False``), through
``StarCraft2Env`` as EPyMARL steps it: every observation, state, mask, reward and info entry equal,
over seeded episodes of maps with Medivac heals (MMM2), shields (2s3z) and terrain (corridor).
And what the env hands out is the caller's: last step's observations do not change under it."""

from __future__ import annotations

import numpy as np
import pytest
from selfplay.envs.smac import StarCraft2Env


def _play(env: StarCraft2Env, episodes: int, seed: int) -> list:
    """Everything a runner reads over ``episodes`` episodes of a seeded random valid policy."""
    rng = np.random.default_rng(seed)
    seen = []
    for _ in range(episodes):
        env.reset()
        done = False
        while not done:
            obs, state, avail = env.get_obs(), env.get_state(), np.asarray(env.get_avail_actions())
            actions = (rng.random(avail.shape) * avail).argmax(-1)
            reward, done, info = env.step(actions)
            seen.append((np.stack(obs), state, avail, reward, done, sorted(info.items())))
    return seen


@pytest.mark.parametrize("map_name", ["3m", "2s3z", "MMM2", "corridor"])
def test_one_call_step_plays_the_per_rule_games(map_name):
    one_call = StarCraft2Env(map_name=map_name, seed=3, state_last_action=True, obs_last_action=True)
    per_rule = StarCraft2Env(map_name=map_name, seed=3, state_last_action=True, obs_last_action=True)
    per_rule._battle.fast = False  # each rule its own call, on tensors
    a, b = _play(one_call, 3, seed=4), _play(per_rule, 3, seed=4)
    assert len(a) == len(b) and len(a) > 20
    for step, (x, y) in enumerate(zip(a, b)):
        for k, what in enumerate(("obs", "state", "avail")):
            assert x[k].dtype == y[k].dtype and np.array_equal(x[k], y[k]), f"step {step}: {what}"
        assert x[3:] == y[3:], f"step {step}: reward, done, info"
    assert one_call.get_stats() == per_rule.get_stats()


def test_handed_out_arrays_do_not_change_under_the_caller():
    env = StarCraft2Env(map_name="3m", seed=0)
    env.reset()
    obs, state, avail = env.get_obs(), env.get_state(), env.get_avail_actions()
    kept = [o.copy() for o in obs], state.copy(), [list(m) for m in avail]
    moved = False
    for _ in range(5):  # move north while possible: the positions, hence the features, change
        env.step([2 if m[2] else 1 for m in env.get_avail_actions()])
        moved = moved or not np.array_equal(env.get_state(), kept[1])
    assert moved
    assert all(np.array_equal(o, k) for o, k in zip(obs, kept[0]))
    assert np.array_equal(state, kept[1]) and avail == kept[2]


def test_pooled_jitter_draws_are_the_per_step_draws():
    """Small batches draw their cooldown jitter in blocks (``BattleEngine.draw_jitter``); the values, and
    the trigger points drawn at a reset in between, are those of one draw per step."""
    import torch
    from selfplay.envs.smac.engine import BattleEngine
    from selfplay.envs.smac.maps import get_map
    from selfplay.envs.smac.units import COOLDOWN_JITTER_HIGH, COOLDOWN_JITTER_LOW

    eng = BattleEngine(get_map("2m_vs_1z"), 2, seed=9)  # its trigger draws a point per game at each reset
    ref = torch.Generator().manual_seed(9)
    shape = (8, 2, eng.num_units)

    def ref_jitter():
        return torch.randint(COOLDOWN_JITTER_LOW, COOLDOWN_JITTER_HIGH + 1, shape, generator=ref).numpy()

    goals = [torch.rand(2, 1, generator=ref)]  # the constructor's reset
    for _ in range(5):
        assert np.array_equal(eng.draw_jitter(8), ref_jitter())
    eng.reset()
    goals.append(torch.rand(2, 1, generator=ref))
    p = eng.order_points
    expected = (p[0] + goals[-1] * (p[1] - p[0])).numpy()
    assert np.array_equal(eng.trigger_goal[:, eng.side_slices[1]].numpy(), expected[:, None])
    for _ in range(3):
        assert np.array_equal(eng.draw_jitter(8), ref_jitter())
