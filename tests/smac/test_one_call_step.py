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


def _attack_first(rng, masks):
    """A random available attack of each agent where it has one, else a random available action (so
    that games of a batch end at different steps)."""
    noise = rng.random(masks.shape) * masks
    noise[..., 6:] += 2.0 * masks[..., 6:]  # SMAC's attack actions are 6 on
    return noise.argmax(-1)


def test_restarted_games_get_their_features_in_the_start_call():
    """With ``auto_reset``, a step where some games of a batch finish computes the restarted games'
    features in the start call (``cpu_drivers.start_games``) and keeps the others' from the step;
    every game's observations, state and masks still equal the tensor lane's, which recomputes
    them all from the state, and no features call runs after such a step."""
    import torch
    from selfplay.envs.smac import SMACBattle

    one_call = SMACBattle("3m", 8, two_player=False, seed=5)  # against the scripted AI: games end apart
    per_rule = SMACBattle("3m", 8, two_player=False, seed=5)
    per_rule.fast = False
    for b in (one_call, per_rule):
        b.reset()
        b.get_state()  # from now on the step (and the start call) compute the state too
    rng = np.random.default_rng(6)
    partial = 0
    for step in range(150):
        masks = [m.numpy() for m in one_call.action_masks()]
        for s, m in enumerate(per_rule.action_masks()):
            assert np.array_equal(masks[s], m.numpy()), f"step {step}: masks of seat {s}"
        for what in ("get_obs", "get_state"):
            for s, (x, y) in enumerate(zip(getattr(one_call, what)(), getattr(per_rule, what)())):
                assert np.array_equal(x.numpy(), y.numpy()), f"step {step}: {what} of seat {s}"
        actions = [torch.from_numpy(_attack_first(rng, m)) for m in masks]
        _, _, done, _ = one_call.step(actions)
        _, _, done_ref, _ = per_rule.step(actions)
        assert torch.equal(done, done_ref)
        if bool(done.any()) and not bool(done.all()):
            partial += 1
            assert one_call._fresh and one_call._state_fresh  # the features are already current
    assert partial > 0

