"""Evidence of learning: a short run on 3m against the scripted enemy raises the mean return clearly.

The untrained policy (near-uniform over legal actions) scores about 1.6 of SMAC's scaled maximum of 20
and never wins; the longer run in ``benchmarks/smac_ppo.py`` reports the win rates.
"""

import torch
from selfplay.agents.ppo.config import ppo_config
from selfplay.agents.ppo.multiunit import MultiUnitPPOLearner
from selfplay.envs.smac import SMACBattle


def evaluate(policy, games: int, seed: int, num_envs: int = 64) -> tuple[float, float]:
    """(mean return, win rate) of ``policy`` on seat 0 of 3m over ``games`` finished games."""
    env = SMACBattle("3m", num_envs=num_envs, two_player=False, seed=seed)
    obs = env.reset()
    state, start = policy.initial_state(num_envs), torch.ones(num_envs, dtype=torch.bool)
    returns, wins = [], []
    while sum(len(r) for r in returns) < games:
        action, state, _ = policy.act(obs[0], state, env.action_masks()[0], start)
        obs, _, done, info = env.step([action])
        start = done
        returns.append(info["episode_reward"][0][done])
        wins.append(info["battle_won"][0][done].float())
    return torch.cat(returns)[:games].mean().item(), torch.cat(wins)[:games].mean().item()


def test_short_training_run_raises_the_return_against_the_scripted_enemy():
    """64k game-steps (20 updates of the default horizon; learning rate 1e-3 instead of 5e-4 to keep the test
    short). Measured: mean return 1.6 -> about 5 (seed 0); the assertion asks for more than double."""
    num_envs, updates = 128, 20
    env = SMACBattle("3m", num_envs=num_envs, two_player=False, seed=0)
    config = ppo_config("smac", learning_rate=1e-3)
    learner = MultiUnitPPOLearner(env.obs_size[0], env.n_agents[0], env.n_actions[0], config, seed=0)
    before, _ = evaluate(learner.snapshot(), 128, seed=123)
    obs = env.reset()
    state, start = learner.initial_state(num_envs), torch.ones(num_envs, dtype=torch.bool)
    while learner.weight_version < updates:
        action, state, _ = learner.act(obs[0], state, env.action_masks()[0], start)
        obs, rewards, done, _ = env.step([action])
        learner.record(rewards[0], done)
        start = done
        if learner.ready():
            learner.update()
    after, _ = evaluate(learner.snapshot(), 128, seed=123)
    print(f"mean return before {before:.2f}, after {updates} updates {after:.2f}")
    assert before < 2.5
    assert after > 2 * before and after > before + 1.5, (before, after)
