"""Shared helpers of the AlphaStar actor-learner tests: tiny commander environments, networks and
learners, parameter comparison, and an SL checkpoint fixture."""

import copy
from dataclasses import asdict

import pytest
import torch
from selfplay.agents.alphastar import AlphaStarNet
from selfplay.agents.alphastar.learner import AlphaStarLearner, AlphaStarRLConfig
from selfplay.agents.alphastar.smac import CommanderConfig
from selfplay.agents.alphastar.smac.env import CommanderEnv
from selfplay.envs.smac import SMACBattle

from selfplay.training.registry import make_env
from tests.alphastar_smac.conftest import TINY


def commander_env(num_envs=2, map_name="3m", grid=8, two_player=True, seed=0) -> CommanderEnv:
    battle = SMACBattle(map_name, num_envs=num_envs, two_player=two_player, mirror=two_player, seed=seed)
    return CommanderEnv(battle, CommanderConfig(grid=grid))


def tiny_net(env, seed=0) -> AlphaStarNet:
    torch.manual_seed(seed)
    return AlphaStarNet(env.network_config(**TINY))


def params(net) -> list[torch.Tensor]:
    return [p.detach().clone() for p in net.parameters()]


def same(a, b) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


def make_learner(env, seed=0, **overrides):
    sl_net = tiny_net(env, seed=seed)
    config = AlphaStarRLConfig.from_overrides(**{"chunk_length": 4, "batch_chunks": 2, **overrides})
    return AlphaStarLearner(copy.deepcopy(sl_net), sl_net, config, seed=seed)


def make_sl_checkpoint(path) -> str:
    """An SL checkpoint file (tiny network, seed 3) for the commander of 3m, as ``run_sl`` writes it."""
    env = make_env("smac-commander:3m", 1, seed=0)
    torch.manual_seed(3)
    net = AlphaStarNet(env.network_config(**TINY))
    torch.save({"state_dict": net.state_dict(), "network_config": asdict(net.config)}, path)
    return str(path)


@pytest.fixture
def sl_checkpoint(tmp_path) -> str:
    """The path of a fresh SL checkpoint (``make_sl_checkpoint``) under ``tmp_path``."""
    return make_sl_checkpoint(tmp_path / "sl.pt")
