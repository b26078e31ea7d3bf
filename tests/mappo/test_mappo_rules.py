"""MAPPO's formulas on hand-computed cases: GAE with a dead agent, ValueNorm, the clipped value loss,
the active masks, and the input layouts of actor and critic."""

import math

import pytest
import torch
from selfplay.agents.mappo import MAPPOConfig, mappo_config
from selfplay.agents.mappo.network import actor_inputs, critic_inputs, open_loop_inputs
from selfplay.agents.mappo.rules import ValueNorm, gae, huber, policy_loss, standardize, value_loss


def test_gae_by_hand_with_a_dead_agent_and_an_episode_end():
    """One game, two agents, 3 steps; the game ends with step 1 and a new one starts at step 2. Agent 1 died
    after step 0: its value still bootstraps the team reward until the game ends. γ = 0.5, λ = 0.5."""
    rewards = torch.tensor([[1.0], [2.0], [4.0]])
    dones = torch.tensor([[False], [True], [False]])
    values = torch.tensor([[[1.0, 2.0]], [[0.5, 0.0]], [[1.0, 1.0]], [[2.0, 2.0]]])  # (T+1, B, U)
    adv, ret = gae(rewards, values, dones, gamma=0.5, lam=0.5)
    # step 2: δ = 4 + 0.5·2 − 1 = 4;                  A = 4
    # step 1 (game ends): δ = 2 − V_1;                 A = δ   -> agent 0: 1.5, agent 1: 2.0
    # step 0: δ = 1 + 0.5·V_1 − V_0;  A = δ + 0.25·A_1 -> agent 0: 0.25 + 0.375 = 0.625; agent 1: −1 + 0.5 = −0.5
    expected = torch.tensor([[[0.625, -0.5]], [[1.5, 2.0]], [[4.0, 4.0]]])
    assert torch.allclose(adv, expected)
    assert torch.allclose(ret, expected + values[:3])


def test_advantages_are_standardised_over_active_agents_only():
    adv = torch.tensor([1.0, 3.0, 100.0])
    active = torch.tensor([True, True, False])
    out = standardize(adv, active)
    # mean 2, population std 1 over the active two; the dead sample is shifted and scaled alike
    assert torch.allclose(out, torch.tensor([-1.0, 1.0, 98.0]) / (1 + 1e-5))


def test_value_norm_statistics_by_hand_and_round_trip():
    norm = ValueNorm(beta=0.9)
    mu, var = norm.stats()
    assert mu.item() == 0.0 and math.isclose(var.item(), 1e-2, rel_tol=1e-6)  # before any update
    norm.update(torch.tensor([1.0, 3.0]))
    # m = 0.1·2, q = 0.1·5, d = 0.1  ->  μ = 2, σ² = 5 − 4 = 1
    mu, var = norm.stats()
    assert math.isclose(mu.item(), 2.0, rel_tol=1e-5) and math.isclose(var.item(), 1.0, rel_tol=1e-5)
    assert math.isclose(norm.normalize(torch.tensor(3.0)).item(), 1.0, rel_tol=1e-5)
    x = torch.tensor([-7.0, 0.0, 2.5, 40.0])
    norm.update(torch.tensor([10.0, -4.0, 0.5]))
    assert torch.allclose(norm.denormalize(norm.normalize(x)), x, atol=1e-5)
    restored = ValueNorm()
    restored.load_state_dict(norm.state_dict())
    assert torch.equal(restored.normalize(x), norm.normalize(x))


def test_huber_loss_by_hand():
    assert torch.allclose(huber(torch.tensor([0.5, -2.0, 3.0]), 1.0), torch.tensor([0.125, 1.5, 2.5]))


def test_clipped_value_loss_by_hand():
    """V_old = 1, ε = 0.2. V = 1.5, R = 3: unclipped ½·1.5² = 1.125, clipped (V_clip = 1.2) ½·1.8² = 1.62 ->
    the larger, 1.62. V = 3.5, R = 3: unclipped ½·0.25 = 0.125, clipped 1.62 -> 1.62 (the clip is pessimistic).
    δ = 1 on the first: huber(1.5) = 1.0, huber(1.8) = 1.3."""
    old, target = torch.tensor([1.0]), torch.tensor([3.0])
    assert math.isclose(value_loss(torch.tensor([1.5]), old, target, 0.2, 10.0, True).item(), 1.62, rel_tol=1e-6)
    assert math.isclose(value_loss(torch.tensor([3.5]), old, target, 0.2, 10.0, True).item(), 1.62, rel_tol=1e-6)
    assert math.isclose(value_loss(torch.tensor([3.5]), old, target, 0.2, 10.0, False).item(), 0.125, rel_tol=1e-6)
    assert math.isclose(value_loss(torch.tensor([1.5]), old, target, 0.2, 1.0, True).item(), 1.3, rel_tol=1e-6)
    # the active-mask weight: the second sample (weight 0) is left out of the mean
    v = value_loss(torch.tensor([1.5, 50.0]), torch.tensor([1.0, 1.0]), torch.tensor([3.0, 3.0]), 0.2, 10.0, True,
                   torch.tensor([True, False]))
    assert math.isclose(v.item(), 1.62, rel_tol=1e-6)


def test_dead_agents_carry_no_policy_gradient():
    log_prob = torch.tensor([-1.0, -1.0], requires_grad=True)
    loss, _ = policy_loss(log_prob, torch.tensor([-1.0, -1.0]), torch.tensor([2.0, 5.0]), 0.2,
                          torch.tensor([True, False]))
    loss.backward()
    assert log_prob.grad[1].item() == 0.0 and log_prob.grad[0].item() == pytest.approx(-2.0)


def test_policy_loss_clips_the_ratio():
    # ratio e^0.5 ≈ 1.65 with A = 1: min(1.65, 1.2) -> loss −1.2
    loss, ratio = policy_loss(torch.tensor([0.0]), torch.tensor([-0.5]), torch.tensor([1.0]), 0.2)
    assert loss.item() == pytest.approx(-1.2) and ratio.item() == pytest.approx(math.exp(0.5))


def test_actor_input_is_observation_then_agent_id_then_last_action():
    obs = torch.arange(2 * 3 * 4, dtype=torch.float32).view(2, 3, 4)
    last = torch.nn.functional.one_hot(torch.tensor([[1, 0, 2], [0, 0, 0]]), 5).float()
    x = actor_inputs(obs, last, agent_id=True, use_last_action=True)
    assert x.shape == (2, 3, 4 + 3 + 5)
    assert torch.equal(x[..., :4], obs)
    assert torch.equal(x[1, :, 4:7], torch.eye(3))
    assert torch.equal(x[..., 7:], last)
    assert torch.equal(actor_inputs(obs, last, agent_id=False, use_last_action=False), obs)


def test_critic_inputs_with_death_masking():
    alive = torch.tensor([[True, False]])
    # EP: [s · alive, onehot(i)]
    s = torch.tensor([[1.0, 2.0, 3.0]])
    c = critic_inputs(s, alive, "EP", death_masking=True)
    assert torch.equal(c, torch.tensor([[[1.0, 2.0, 3.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0, 1.0]]]))
    assert torch.equal(critic_inputs(s, alive, "EP", death_masking=False)[0, 1, :3], s[0])
    # AS: the agent-specific state ends with the agent's id, which survives death masking
    s_as = torch.tensor([[[5.0, 6.0, 1.0, 0.0], [7.0, 8.0, 0.0, 1.0]]])
    c = critic_inputs(s_as, alive, "AS", death_masking=True)
    assert torch.equal(c, torch.tensor([[[5.0, 6.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]]))


def test_open_loop_input_is_the_time_step_fraction():
    x = open_loop_inputs(torch.tensor([0, 30, 60]), 60, 2)
    assert x.shape == (3, 2, 1)
    assert torch.equal(x[:, 0, 0], torch.tensor([0.0, 0.5, 1.0])) and torch.equal(x[:, 1], x[:, 0])


def test_config_defaults_are_the_papers_smac_settings_and_bad_values_are_named():
    c = MAPPOConfig()
    assert (c.num_envs, c.rollout_length, c.epochs, c.num_minibatches, c.chunk_length) == (8, 400, 15, 1, 10)
    assert (c.learning_rate, c.critic_learning_rate, c.clip_coef, c.value_coef, c.max_grad_norm) == (5e-4, 5e-4, 0.2, 1.0, 10.0)
    assert c.value_norm and c.clipped_value_loss and c.critic_input == "AS" and c.eval_episodes == 32
    with pytest.raises(ValueError, match="critic_input"):
        MAPPOConfig(critic_input="state")
    with pytest.raises(ValueError, match="chunk_length"):
        MAPPOConfig(rollout_length=25)
    with pytest.raises(ValueError, match="learning_rte"):
        mappo_config(learning_rte=1e-3)
