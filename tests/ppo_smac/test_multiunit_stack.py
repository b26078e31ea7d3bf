"""Population inference: the stack gives each game exactly what its own frozen policy would."""

import pytest
import torch
from selfplay.agents.ppo.config import ppo_config
from selfplay.agents.ppo.multiunit import MultiUnitPPOLearner
from selfplay.agents.ppo.multiunit_stack import stack_multiunit_policies
from selfplay.envs.smac import SMACBattle


def trained_policies(env, body, k):
    """``k`` different frozen policies: one learner's weights perturbed by seeded noise per policy."""
    frozens = []
    for s in range(k):
        learner = MultiUnitPPOLearner.for_battle(env, 0, ppo_config("smac", body=body), seed=s)
        g = torch.Generator().manual_seed(100 + s)
        with torch.no_grad():
            for p in learner.network.parameters():
                p.add_(0.3 * torch.randn(p.shape, generator=g))
        frozens.append(learner.snapshot())
    return frozens


@pytest.mark.parametrize("body", ["mlp", "gru", "lstm"])
def test_stack_matches_each_policy_over_several_steps(body, greedy_actions_agree):
    env = SMACBattle("3m", num_envs=10, two_player=True, seed=3)
    frozens = trained_policies(env, body, 3)
    stack = stack_multiunit_policies(frozens)
    index = torch.tensor([2, 0, 0, 1, 2, 2, 0, 1, 1, 0])  # games interleaved across policies
    obs = env.reset()
    stack_state = stack.initial_state(10)
    own_states = [p.initial_state(10) for p in frozens]
    start = torch.ones(10, dtype=torch.bool)
    for step in range(12):
        mask = env.action_masks()[0]
        action, stack_state, info = stack.act(obs[0], stack_state, index, mask, start, deterministic=True)
        for k, policy in enumerate(frozens):
            rows = index == k
            a, own_states[k], own = policy.act(obs[0], own_states[k], mask, start, deterministic=True)
            assert torch.allclose(info["logits"][rows], own["logits"][rows], atol=1e-5)
            greedy_actions_agree(action[rows], a[rows], own["logits"][rows])
            for mine, theirs in zip(stack_state, own_states[k]):
                assert torch.allclose(mine[rows], theirs[rows], atol=1e-5)
        assert bool(mask.gather(2, action[..., None]).all())
        b = env.action_masks()[1].float()
        other = torch.multinomial(b.view(-1, b.shape[-1]), 1, generator=torch.Generator().manual_seed(step)).view(10, 3)
        obs, _, done, _ = env.step([action, other])
        start = done.clone()
        if step == 5:
            start[::3] = True  # restarts mid-game: the state reset must match too


def test_stack_rejects_mixed_specs_and_bad_indices():
    env = SMACBattle("3m", num_envs=2, two_player=False)
    mlp = trained_policies(env, "mlp", 1)
    gru = trained_policies(env, "gru", 1)
    with pytest.raises(ValueError, match="frozens"):
        stack_multiunit_policies(mlp + gru)
    with pytest.raises(ValueError, match="frozens"):
        stack_multiunit_policies([])
    stack = stack_multiunit_policies(mlp * 2)
    obs, mask = env.reset()[0], env.action_masks()[0]
    with pytest.raises(ValueError, match="policy_index"):
        stack.act(obs, None, torch.tensor([0, 2]), mask)
    with pytest.raises(ValueError, match="policy_index"):
        stack.act(obs, None, torch.tensor([0.0, 1.0]), mask)
