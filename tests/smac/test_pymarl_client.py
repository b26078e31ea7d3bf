"""Our SMAC as PyMARL/EPyMARL load it: through a ``smac/env/__init__.py`` shim whose whole content is
one import line, then their episode runner's loop (reset; per step get_obs, get_state,
get_avail_actions, step with a tensor of actions; get_stats; info summed over episodes)."""

import sys

import numpy as np
import pytest
import torch

SHIM = "from selfplay.envs.smac import StarCraft2Env, MultiAgentEnv\n"


@pytest.fixture
def smac_shim(tmp_path, monkeypatch):
    """A ``smac`` package on ``sys.path`` holding only the one-line shim; removed afterwards."""
    (tmp_path / "smac" / "env").mkdir(parents=True)
    (tmp_path / "smac" / "__init__.py").write_text("")
    (tmp_path / "smac" / "env" / "__init__.py").write_text(SHIM)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("smac", "smac.env"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import smac.env

    yield smac.env
    for name in ("smac", "smac.env"):
        sys.modules.pop(name, None)


def test_pymarl_runner_loop_through_the_shim(smac_shim):
    from selfplay.envs.smac import SMACEnv

    StarCraft2Env, MultiAgentEnv = smac_shim.StarCraft2Env, smac_shim.MultiAgentEnv
    assert StarCraft2Env is SMACEnv and issubclass(StarCraft2Env, MultiAgentEnv)
    # EPyMARL's sc2.yaml arguments, verbatim
    env_args = dict(continuing_episode=False, difficulty="7", game_version=None, map_name="3m", move_amount=2,
                    obs_all_health=True, obs_instead_of_state=False, obs_last_action=False, obs_own_health=True,
                    obs_pathing_grid=False, obs_terrain_height=False, obs_timestep_number=False,
                    reward_death_value=10, reward_defeat=0, reward_negative_scale=0.5, reward_only_positive=True,
                    reward_scale=True, reward_scale_rate=20, reward_sparse=False, reward_win=200, replay_dir="",
                    replay_prefix="", state_last_action=False, state_timestep_number=False, step_mul=8, seed=3,
                    heuristic_ai=False, heuristic_rest=False, debug=False)
    env = StarCraft2Env(**env_args)
    info = env.get_env_info()
    n, limit = info["n_agents"], info["episode_limit"]
    gen = torch.Generator().manual_seed(0)
    stats, steps_total = {}, 0
    for _ in range(3):
        env.reset()
        terminated, t = False, 0
        while not terminated:
            state, avail, obs = env.get_state(), env.get_avail_actions(), env.get_obs()
            assert state.shape == (info["state_shape"],) and state.dtype == np.float32
            assert len(obs) == n and all(o.shape == (info["obs_shape"],) for o in obs)
            assert np.asarray(avail).shape == (n, info["n_actions"])
            actions = torch.multinomial(torch.tensor(avail, dtype=torch.float32), 1, generator=gen).reshape(-1)
            reward, terminated, env_info = env.step(actions)
            assert isinstance(reward, float)
            assert set(env_info) >= {"battle_won", "dead_allies", "dead_enemies"}
            assert all(isinstance(v, (bool, int)) for v in env_info.values())  # the runner sums them
            t += 1
        assert t <= limit
        steps_total += t
        stats = {k: stats.get(k, 0) + env_info.get(k, 0) for k in set(stats) | set(env_info)}
        assert env_info["battle_won"] == (env_info["dead_enemies"] == 3 and env_info["dead_allies"] < 3)
    s = env.get_stats()
    assert s["battles_game"] == 3 and s["battles_won"] == stats["battle_won"]
    assert s["win_rate"] == s["battles_won"] / 3 and env._total_steps == steps_total
    env.close()
