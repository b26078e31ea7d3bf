"""Every one of the 23 maps builds and plays through every entry point: ``StarCraft2Env`` (with and
without SMAC's heuristic), ``SMACBattle``, the PettingZoo view and the AlphaStar commander env.

Each game runs a few steps of uniformly random legal actions; the checks are the contracts every
entry point promises (sizes equal the env's own declared sizes, only legal actions offered, every
step's outputs finite, unit records carry a type id), not win rates."""

import numpy as np
import pytest
import torch
from selfplay.agents.alphastar import AlphaStarNet
from selfplay.agents.alphastar.smac import CommanderConfig
from selfplay.agents.alphastar.smac.env import CommanderEnv
from selfplay.envs.smac import SMACBattle, SMACParallelEnv, StarCraft2Env
from selfplay.envs.smac.maps import MAP_NAMES

from tests.alphastar_smac.conftest import TINY

STEPS = 4


def test_there_are_23_maps():
    assert len(MAP_NAMES) == 23 and "2s_vs_1sc" in MAP_NAMES and "so_many_baneling" in MAP_NAMES


def _random_legal(mask: np.ndarray, rng: np.random.Generator) -> int:
    legal = np.flatnonzero(mask)
    assert legal.size > 0, "every agent must have a legal action (a dead one: the no-op)"
    return int(rng.choice(legal))


@pytest.mark.parametrize("map_name", MAP_NAMES)
def test_starcraft2env_plays(map_name):
    rng = np.random.default_rng(0)
    env = StarCraft2Env(map_name=map_name, seed=0)
    info = env.get_env_info()
    env.reset()
    assert len(env.enemies) == len(env.get_visibility_matrix()[0]) - info["n_agents"]
    for unit in list(env.agents.values()) + list(env.enemies.values()):
        assert isinstance(unit.unit_type, int) and unit.unit_type > 0
    for _ in range(STEPS):
        assert np.asarray(env.get_state()).shape == (info["state_shape"],)
        obs = env.get_obs()
        assert len(obs) == info["n_agents"] and all(np.asarray(o).shape == (info["obs_shape"],) for o in obs)
        actions = [_random_legal(np.asarray(env.get_avail_agent_actions(i)), rng) for i in range(info["n_agents"])]
        reward, terminated, _ = env.step(actions)
        assert np.isfinite(reward)
        if terminated:
            env.reset()
    env.close()


@pytest.mark.parametrize("map_name", MAP_NAMES)
def test_starcraft2env_heuristic_plays(map_name):
    env = StarCraft2Env(map_name=map_name, seed=0, heuristic_ai=True)
    n = env.get_env_info()["n_agents"]
    env.reset()
    for _ in range(STEPS):
        _, terminated, _ = env.step([0] * n)
        if terminated:
            env.reset()
    env.close()


@pytest.mark.parametrize("map_name", MAP_NAMES)
@pytest.mark.parametrize("two_player", [False, True])
def test_smacbattle_plays(map_name, two_player):
    g = torch.Generator().manual_seed(0)
    b = SMACBattle(map_name, num_envs=2, two_player=two_player, mirror=two_player, seed=0)
    obs = b.reset()
    assert len(obs) == b.n_seats
    for _ in range(STEPS):
        masks = b.action_masks()
        actions = [torch.multinomial(m.reshape(-1, m.shape[-1]).float(), 1, generator=g).reshape(m.shape[:-1])
                   for m in masks]
        obs, rewards, done, info = b.step(actions)
        for s in range(b.n_seats):
            assert obs[s].shape == (2, b.n_agents[s], b.obs_size[s]) and torch.isfinite(obs[s]).all()
            assert torch.isfinite(rewards[s]).all()
    b.close()


@pytest.mark.parametrize("map_name", MAP_NAMES)
def test_pettingzoo_plays(map_name):
    rng = np.random.default_rng(0)
    env = SMACParallelEnv(map_name, seed=0)
    obs, _ = env.reset()
    assert set(obs) == set(env.possible_agents)
    for _ in range(STEPS):
        if not env.agents:
            break
        actions = {a: _random_legal(obs[a]["action_mask"], rng) for a in env.agents}
        obs, rewards, terminated, truncated, _ = env.step(actions)
        for a, o in obs.items():
            assert env.observation_space(a)["observation"].shape == o["observation"].shape
            assert np.isfinite(rewards[a])
    env.close()


@pytest.mark.parametrize("map_name", MAP_NAMES)
def test_commander_env_plays(map_name):
    battle = SMACBattle(map_name, num_envs=2, two_player=True, mirror=True, seed=0)
    env = CommanderEnv(battle, CommanderConfig(grid=8))
    torch.manual_seed(0)
    net = AlphaStarNet(env.network_config(**TINY))  # samples legal commander actions from the masks
    g = torch.Generator().manual_seed(0)
    obs = env.reset()
    assert all(o.shape == (2, env.obs_size) for o in obs)
    for _ in range(STEPS):
        with torch.no_grad():
            actions = [env.layout.pack_actions(net(env.layout.unpack(o), generator=g).actions).reshape(2, -1)
                       for o in obs]
        obs, rewards, done, info = env.step(actions)
        assert all(o.shape == (2, env.obs_size) and torch.isfinite(o).all() for o in obs)
        assert all(torch.isfinite(r).all() for r in rewards)
    battle.close()
