"""Every environment the registry makes speaks the two-seat batched contract (envs/base.py)."""

import pytest
import torch
from selfplay.envs.base import TwoPlayerBatchedEnv

from selfplay.training.registry import make_env


@pytest.mark.parametrize("name", ["rirrps", "biased-rps", "rpsls", "smac:3m", "smac:2m_vs_1z"])  # smac-commander takes packed AlphaStar actions, not one index
def test_registered_environments_follow_the_contract(name):
    env = make_env(name, 3, seed=0)
    assert isinstance(env, TwoPlayerBatchedEnv)
    obs = env.reset()
    masks = env.action_masks()
    assert len(obs) == len(masks) == 2
    for seat in (0, 1):
        assert obs[seat].shape[0] == masks[seat].shape[0] == env.num_envs == 3
        assert masks[seat].dtype == torch.bool and masks[seat].any(dim=-1).all()
    done = torch.zeros(3, dtype=torch.bool)
    for _ in range(400):  # play legal random actions until every game ended at least once
        actions = [torch.multinomial(m.reshape(-1, m.shape[-1]).float(), 1).reshape(m.shape[:-1]) for m in masks]
        obs, rewards, just_done, info = env.step(actions)
        assert len(rewards) == 2 and rewards[0].shape == (3,) and just_done.dtype == torch.bool
        winner, draw = info["winner"], info["draw"]
        assert ((winner == -1) | just_done).all()  # a winner only where a game just ended
        assert (~draw | just_done).all() and not (draw & (winner >= 0)).any()
        done |= just_done
        masks = env.action_masks()
        if done.all():
            break
    assert done.all()
