"""AlphaStar RL losses (docs/design/alphastar.md §4): hand-computed cases, a reference V-trace, signs, gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from selfplay.agents.alphastar import AlphaStarConfig, AlphaStarNet
from selfplay.agents.alphastar.distributions import MASKED_LOGIT
from selfplay.agents.alphastar.losses import (
    HEADS,
    RLLossConfig,
    alphastar_rl_loss,
    categorical_kl,
    discounts_from_dones,
    entropy_loss,
    normalized_entropy,
    policy_kl_loss,
    split_upgo_loss,
    split_vtrace_pg_loss,
    td_lambda_returns,
    td_lambda_value_loss,
    upgo_returns,
    vtrace,
)
from selfplay.agents.alphastar.synthetic import random_obs

# ---------------------------------------------------------------------------------------------
# return estimators on hand-computed cases


def test_td_lambda_hand_computed_with_episode_end_inside_chunk():
    # T = 3, one game; the episode ends at t = 1 (d_1 = 0), a new one starts at t = 2.
    r = np.array([[0.0], [1.0], [0.5]])
    v = np.array([[0.2], [0.4], [0.1]])
    boot = np.array([0.3])
    d = discounts_from_dones(np.array([[0.0], [1.0], [0.0]]))
    lam = 0.8
    g2 = 0.5 + 1.0 * (0.2 * 0.3 + 0.8 * 0.3)  # bootstrap: G_3 = V_3 = 0.3 → 0.8
    g1 = 1.0  # terminal: nothing flows back across the episode end
    g0 = 0.0 + 1.0 * (0.2 * 0.4 + 0.8 * g1)  # 0.88
    out = td_lambda_returns(r, v, boot, d, lam=lam)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out[:, 0], [g0, g1, g2])
    # λ = 0 is one-step TD, λ = 1 the Monte-Carlo return (with bootstrap).
    np.testing.assert_allclose(td_lambda_returns(r, v, boot, d, lam=0.0)[:, 0], [0.4, 1.0, 0.8])
    np.testing.assert_allclose(td_lambda_returns(r, v, boot, d, lam=1.0)[:, 0], [1.0, 1.0, 0.8])


def test_upgo_hand_computed():
    # T = 4, γ = 1, no episode end; bootstrap V_4 = 0.
    r = np.array([0.0, 0.0, 0.0, 1.0])[:, None]
    v = np.array([0.5, 0.6, 0.9, 0.2])[:, None]
    d = np.ones_like(r)
    boot = np.array([0.0])
    # better_t = r_t + V_{t+1} ≥ V_t: t0: 0.6 ≥ 0.5 ✓; t1: 0.9 ≥ 0.6 ✓; t2: 0.2 ≥ 0.9 ✗; t3: 1 ≥ 0.2 ✓
    # λ_t = better_{t+1}, λ_3 = 1: λ = [1, 0, 1, 1]
    g3 = 1.0 + 0.0  # last step bootstraps from V_4 = 0
    g2 = 0.0 + (0 * 0.2 + 1 * g3)  # follows: 1.0
    g1 = 0.0 + (1 * 0.9 + 0 * g2)  # bootstraps from V_2 because the action at t2 was worse: 0.9
    g0 = 0.0 + g1  # follows: 0.9
    np.testing.assert_allclose(upgo_returns(r, v, boot, d)[:, 0], [g0, g1, g2, g3])


def test_upgo_stops_at_episode_end():
    r = np.array([[0.0], [-1.0], [0.0]])
    v = np.array([[0.1], [0.2], [0.3]])
    d = np.array([[1.0], [0.0], [1.0]])
    boot = np.array([0.5])
    out = upgo_returns(r, v, boot, d)
    # t1 terminal → G_1 = −1 exactly; t2 bootstraps → 0.5; at t0 better_1 = (−1 + 0 ≥ 0.2) is false → V_1
    np.testing.assert_allclose(out[:, 0], [0.2, -1.0, 0.5])


def _reference_vtrace(log_rhos, discounts, rewards, values, bootstrap, rho_bar, pg_rho_bar):
    """Straight from the definition: vs_t = V_t + Σ_{s≥t} (Π_{i=t}^{s−1} d_i c_i) δ_s."""
    T, B = rewards.shape
    rhos = np.exp(log_rhos)
    v_ext = np.concatenate([values, bootstrap[None]], 0)
    vs = np.zeros((T + 1, B))
    vs[T] = bootstrap
    adv = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            total, coef = 0.0, 1.0
            for s in range(t, T):
                delta = min(rho_bar, rhos[s, b]) * (rewards[s, b] + discounts[s, b] * v_ext[s + 1, b] - v_ext[s, b])
                total += coef * delta
                coef *= discounts[s, b] * min(1.0, rhos[s, b])
            vs[t, b] = values[t, b] + total
        for t in range(T):
            adv[t, b] = min(pg_rho_bar, rhos[t, b]) * (rewards[t, b] + discounts[t, b] * vs[t + 1, b] - values[t, b])
    return vs[:T], adv


@pytest.mark.parametrize("thresholds", [(1.0, 1.0), (2.0, 0.5)])
def test_vtrace_matches_reference(thresholds):
    rng = np.random.default_rng(0)
    T, B = 7, 4
    log_rhos = rng.normal(0, 0.8, (T, B))
    rewards = rng.normal(0, 1, (T, B))
    values = rng.normal(0, 1, (T, B))
    bootstrap = rng.normal(0, 1, B)
    discounts = 0.97 * (rng.random((T, B)) > 0.2)  # episode ends inside the chunk
    ref_vs, ref_adv = _reference_vtrace(log_rhos, discounts, rewards, values, bootstrap, *thresholds)
    vs, adv = vtrace(log_rhos, discounts, rewards, values, bootstrap, *thresholds)
    np.testing.assert_allclose(vs, ref_vs, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-10, atol=1e-10)
    # torch in → torch out, same numbers
    t = lambda x: torch.tensor(x)  # noqa: E731
    vs_t, adv_t = vtrace(t(log_rhos), t(discounts), t(rewards), t(values), t(bootstrap), *thresholds)
    assert isinstance(vs_t, torch.Tensor)
    np.testing.assert_allclose(vs_t.numpy(), ref_vs, rtol=1e-10, atol=1e-10)


@settings(max_examples=25, deadline=None)
@given(
    T=st.integers(1, 6),
    B=st.integers(1, 3),
    rho_bar=st.sampled_from([0.5, 1.0, 3.0, None]),
    pg_rho_bar=st.sampled_from([0.5, 1.0, None]),
    seed=st.integers(0, 10_000),
)
def test_vtrace_matches_reference_property(T, B, rho_bar, pg_rho_bar, seed):
    rng = np.random.default_rng(seed)
    log_rhos = rng.normal(0, 1.0, (T, B))
    rewards, values = rng.normal(size=(T, B)), rng.normal(size=(T, B))
    bootstrap = rng.normal(size=B)
    discounts = rng.choice([0.0, 0.9, 1.0], size=(T, B))
    ref = _reference_vtrace(log_rhos, discounts, rewards, values, bootstrap, rho_bar or np.inf, pg_rho_bar or np.inf)
    out = vtrace(log_rhos, discounts, rewards, values, bootstrap, rho_bar, pg_rho_bar)
    np.testing.assert_allclose(out[0], ref[0], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out[1], ref[1], rtol=1e-9, atol=1e-9)


def test_vtrace_on_policy_is_the_n_step_return():
    """With π = μ (log ρ = 0), vs is the TD(1) return: Σ of rewards until the end or the bootstrap."""
    rng = np.random.default_rng(1)
    T, B = 5, 3
    rewards, values = rng.normal(size=(T, B)), rng.normal(size=(T, B))
    bootstrap = rng.normal(size=B)
    discounts = np.ones((T, B))
    discounts[2, 1] = 0.0
    vs, _ = vtrace(np.zeros((T, B)), discounts, rewards, values, bootstrap)
    np.testing.assert_allclose(vs, td_lambda_returns(rewards, values, bootstrap, discounts, lam=1.0), atol=1e-12)


def test_return_estimators_reject_bad_shapes_and_settings():
    r = np.zeros((3, 2))
    with pytest.raises(ValueError, match="bootstrap_value"):
        td_lambda_returns(r, r, np.zeros(3), r)
    with pytest.raises(ValueError, match="values"):
        vtrace(r, r, r, np.zeros((2, 2)), np.zeros(2))
    with pytest.raises(ValueError, match="lam"):
        td_lambda_returns(r, r, np.zeros(2), r, lam=1.5)
    with pytest.raises(ValueError, match="clip_rho_threshold"):
        vtrace(r, r, r, r, np.zeros(2), clip_rho_threshold=0.0)
    with pytest.raises(ValueError, match="gamma"):
        discounts_from_dones(r, gamma=2.0)
    with pytest.raises(ValueError, match="direction"):
        policy_kl_loss({}, {}, {}, direction="backwards")
    with pytest.raises(ValueError, match="entropy_cost"):
        RLLossConfig(entropy_cost=-1.0)


# ---------------------------------------------------------------------------------------------
# losses: values, signs (one SGD step moves the right way), gradients


def _heads_log_probs(logits: dict[str, torch.Tensor], actions: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {h: torch.log_softmax(logits[h], -1).gather(-1, actions[h][..., None]).squeeze(-1) for h in HEADS}


def _toy_policy(T=1, B=1, K=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    logits = {h: torch.randn(T, B, K, generator=g).requires_grad_(True) for h in HEADS}
    actions = {h: torch.zeros(T, B, dtype=torch.long) for h in HEADS}
    return logits, actions


def test_value_loss_hand_computed_and_step_moves_value_towards_return():
    values = torch.tensor([[0.2], [0.4]], requires_grad=True)
    rewards = np.array([[0.0], [1.0]])
    d = np.array([[1.0], [0.0]])
    boot = np.array([0.0])
    # G_1 = 1, G_0 = 0 + 0.2·0.4 + 0.8·1 = 0.88 → loss = ½·mean(0.68², 0.6²)
    loss = td_lambda_value_loss(values, rewards, boot, d, lam=0.8)
    torch.testing.assert_close(loss, torch.tensor(0.5 * (0.68**2 + 0.6**2) / 2))
    loss.backward()
    new = values.detach() - 0.1 * values.grad
    assert bool((new > values.detach()).all())  # both values were below their returns
    # the step mask drops step 1 entirely
    masked = td_lambda_value_loss(values, rewards, boot, d, lam=0.8, mask=torch.tensor([[True], [False]]))
    torch.testing.assert_close(masked, torch.tensor(0.5 * 0.68**2))


def test_split_pg_loss_hand_computed_and_sign():
    logits, actions = _toy_policy()
    target_lp = _heads_log_probs(logits, actions)
    behaviour_lp = {h: lp.detach() for h, lp in target_lp.items()}  # on-policy: ρ = 1
    values = torch.tensor([[0.25]])
    rewards, d, boot = np.array([[1.0]]), np.array([[0.0]]), np.array([0.0])
    loss = split_vtrace_pg_loss(target_lp, behaviour_lp, rewards, values, boot, d)
    adv = 1.0 - 0.25
    groups = [
        target_lp["action_type"],
        target_lp["delay"],
        target_lp["queued"] + target_lp["selected_units"] + target_lp["target_unit"] + target_lp["location"],
    ]
    expected = sum(-adv * g[0, 0] for g in groups)
    torch.testing.assert_close(loss, expected)
    assert float(loss.detach()) > 0  # −adv·log π with adv > 0 and log π < 0
    loss.backward()
    for h in HEADS:  # one step raises the probability of the advantageous action
        before = torch.log_softmax(logits[h].detach(), -1)[0, 0, 0]
        after = torch.log_softmax(logits[h].detach() - 0.5 * logits[h].grad, -1)[0, 0, 0]
        assert float(after) > float(before)


def test_split_pg_loss_negative_advantage_lowers_probability():
    logits, actions = _toy_policy(seed=1)
    target_lp = _heads_log_probs(logits, actions)
    behaviour_lp = {h: lp.detach() for h, lp in target_lp.items()}
    loss = split_vtrace_pg_loss(
        target_lp, behaviour_lp, np.array([[-1.0]]), torch.tensor([[0.0]]), np.array([0.0]), np.array([[0.0]])
    )
    loss.backward()
    before = torch.log_softmax(logits["location"].detach(), -1)[0, 0, 0]
    after = torch.log_softmax(logits["location"].detach() - 0.5 * logits["location"].grad, -1)[0, 0, 0]
    assert float(after) < float(before)


def test_split_pg_groups_use_their_own_importance_ratio():
    """Off-policy in the delay group only: only that group's advantage is clipped/weighted by its ρ."""
    logits, actions = _toy_policy(seed=2)
    target_lp = _heads_log_probs(logits, actions)
    behaviour_lp = {h: lp.detach().clone() for h, lp in target_lp.items()}
    behaviour_lp["delay"] = behaviour_lp["delay"] + np.log(4.0)  # μ(delay) = 4 π(delay) → ρ = 1/4
    values, rewards, d, boot = torch.tensor([[0.0]]), np.array([[1.0]]), np.array([[0.0]]), np.array([0.0])
    loss = split_vtrace_pg_loss(target_lp, behaviour_lp, rewards, values, boot, d)
    args = target_lp["queued"] + target_lp["selected_units"] + target_lp["target_unit"] + target_lp["location"]
    expected = -1.0 * target_lp["action_type"] - 0.25 * target_lp["delay"] - 1.0 * args
    torch.testing.assert_close(loss, expected[0, 0])


def test_upgo_loss_hand_computed_and_sign():
    T = 2
    logits, actions = _toy_policy(T=T, seed=3)
    target_lp = _heads_log_probs(logits, actions)
    behaviour_lp = {h: lp.detach() + 0.5 for h, lp in target_lp.items()}  # ρ = e^{-0.5} per group... per head
    values = torch.tensor([[0.1], [0.2]])
    rewards, d, boot = np.array([[0.0], [1.0]]), np.array([[1.0], [0.0]]), np.array([0.0])
    # better = [0 + 0.2 ≥ 0.1 ✓, 1 ≥ 0.2 ✓] → λ = [1, 1] → G = [1, 1]; advantages (G − V)·ρ_g
    loss = split_upgo_loss(target_lp, behaviour_lp, rewards, values, boot, d)
    groups = {
        "a": (target_lp["action_type"], np.exp(-0.5)),
        "d": (target_lp["delay"], np.exp(-0.5)),
        "o": (
            target_lp["queued"] + target_lp["selected_units"] + target_lp["target_unit"] + target_lp["location"],
            np.exp(-2.0),
        ),
    }
    g_minus_v = torch.tensor([[0.9], [0.8]])
    expected = sum((-(g_minus_v * rho) * lp).mean() for lp, rho in groups.values())
    torch.testing.assert_close(loss, expected.float())
    loss.backward()
    before = torch.log_softmax(logits["action_type"].detach(), -1)[..., 0]
    after = torch.log_softmax(logits["action_type"].detach() - 0.5 * logits["action_type"].grad, -1)[..., 0]
    assert bool((after > before).all())


def test_kl_hand_computed_gradient_through_target_only_and_step_reduces_it():
    target = {h: torch.tensor([[[1.0, 0.0, MASKED_LOGIT]]], requires_grad=True) for h in HEADS}
    sl = {h: torch.tensor([[[0.0, 1.0, MASKED_LOGIT]]], requires_grad=True) for h in HEADS}
    used = {h: torch.tensor([[True]]) for h in HEADS}
    used["location"] = torch.tensor([[False]])  # unused argument: no KL, no gradient
    pick_mask = torch.ones(1, 1, 3, dtype=torch.bool)
    target["selected_units"] = torch.tensor([[[[1.0, 0.0, MASKED_LOGIT]] * 3]], requires_grad=True)
    sl["selected_units"] = torch.tensor([[[[0.0, 1.0, MASKED_LOGIT]] * 3]], requires_grad=True)
    pick_mask[..., 2] = False  # only two picks count
    p = torch.softmax(torch.tensor([1.0, 0.0]), 0)
    one = float((p * (p.log() - p.flip(0).log())).sum())  # KL between the two 2-way distributions
    loss = policy_kl_loss(target, sl, used, pick_mask)
    # action_type, delay, queued, target_unit: one each; selected units: two picks; location: unused
    torch.testing.assert_close(loss, torch.tensor(one * 6))
    loss.backward()
    for h in HEADS:
        assert sl[h].grad is None  # the SL policy is an anchor, not trained
    assert float(target["action_type"].grad.abs().sum()) > 0
    assert float(target["location"].grad.abs().sum()) == 0.0
    assert float(target["selected_units"].grad[..., 2, :].abs().sum()) == 0.0  # inactive pick
    stepped = {h: (t.detach() - 0.5 * t.grad) for h, t in target.items()}
    assert float(policy_kl_loss(stepped, sl, used, pick_mask).detach()) < float(loss.detach())
    # step mask is applied, not inverted: a masked step contributes nothing
    masked = policy_kl_loss(target, sl, used, pick_mask, mask=torch.tensor([[False]]))
    assert float(masked.detach()) == 0.0


def test_kl_directions():
    t = torch.tensor([[[2.0, 0.0, -1.0]]])
    s = torch.tensor([[[0.0, 0.5, 0.0]]])
    used = {"action_type": torch.tensor([[True]])}
    fwd = policy_kl_loss({"action_type": t}, {"action_type": s}, used, heads=("action_type",))
    rev = policy_kl_loss({"action_type": t}, {"action_type": s}, used, heads=("action_type",), direction="sl_target")
    torch.testing.assert_close(fwd, categorical_kl(t, s)[0, 0])
    torch.testing.assert_close(rev, categorical_kl(s, t)[0, 0])
    assert abs(float(fwd) - float(rev)) > 1e-3


def test_entropy_normalised_by_legal_choices_and_step_raises_it():
    # uniform over 3 legal of 4 entries → normalised entropy exactly 1
    uniform3 = torch.tensor([0.0, 0.0, 0.0, MASKED_LOGIT])
    torch.testing.assert_close(normalized_entropy(uniform3), torch.tensor(1.0))
    torch.testing.assert_close(normalized_entropy(torch.tensor([5.0, MASKED_LOGIT])), torch.tensor(0.0))
    logits = {h: torch.tensor([[[2.0, 0.0, -1.0, MASKED_LOGIT]]], requires_grad=True) for h in HEADS}
    logits["selected_units"] = torch.tensor([[[[2.0, 0.0, -1.0, MASKED_LOGIT]] * 2]], requires_grad=True)
    used = {h: torch.tensor([[h != "target_unit"]]) for h in HEADS}
    pick_mask = torch.tensor([[[True, True]]])
    loss = entropy_loss(logits, used, pick_mask)
    h1 = float(normalized_entropy(torch.tensor([2.0, 0.0, -1.0])))
    torch.testing.assert_close(loss, torch.tensor(-h1 * 6))  # 4 single heads + 2 picks; target unused
    assert float(loss) < 0  # a bonus
    loss.backward()
    assert float(logits["target_unit"].grad.abs().sum()) == 0.0
    stepped = {h: (t.detach() - 0.5 * t.grad) for h, t in logits.items()}
    for h in ("action_type", "location"):
        assert float(normalized_entropy(stepped[h])[0, 0]) > h1  # the entropy went up


# ---------------------------------------------------------------------------------------------
# combined loss on real network outputs

SMALL = AlphaStarConfig.tiny()


def test_combined_loss_on_network_outputs():
    torch.manual_seed(0)
    learner, sl_net = AlphaStarNet(SMALL), AlphaStarNet(SMALL)
    B, T = 3, 4
    obs = random_obs(SMALL, B, T, 6, seed=1)
    with torch.no_grad():
        actor = learner(obs, generator=torch.Generator().manual_seed(2))
        sl = sl_net(obs, actions=actor.actions).time_major()
    target = learner(obs, actions=actor.actions).time_major()
    behaviour = {h: v.transpose(0, 1) for h, v in actor.log_probs.items()}
    rewards = np.zeros((T, B))
    rewards[-1] = [1.0, -1.0, 0.0]
    dones = np.zeros((T, B))
    dones[1, 2] = 1.0  # game 2 ends inside the chunk
    discounts = discounts_from_dones(dones)
    early = torch.zeros(T, B, dtype=torch.bool)
    early[:2] = True
    cfg = RLLossConfig()
    terms = alphastar_rl_loss(
        target, behaviour, sl.logits, rewards, discounts, np.zeros(B), early_game=early, config=cfg
    )
    expected = (
        10.0 * terms["value_loss"]
        + terms["pg_loss"]
        + terms["upgo_loss"]
        + 2e-3 * terms["kl_loss"]
        + 0.1 * terms["action_type_kl_loss"]
        + 1e-4 * terms["entropy_loss"]
    )
    torch.testing.assert_close(terms["total"], expected)
    assert float(terms["kl_loss"]) > 0 and float(terms["action_type_kl_loss"]) > 0
    assert float(terms["entropy_loss"]) < 0
    # on-policy with the learner as its own SL anchor: KL is zero
    self_kl = alphastar_rl_loss(
        target, behaviour, {h: v.detach() for h, v in target.logits.items()}, rewards, discounts, np.zeros(B)
    )
    assert abs(float(self_kl["kl_loss"])) < 1e-5
    terms["total"].backward()
    grads = [p.grad for p in learner.parameters() if p.grad is not None]
    assert grads and all(bool(torch.isfinite(g).all()) for g in grads)
    assert all(p.grad is None for p in sl_net.parameters())


def test_combined_loss_sums_over_rewards_with_their_own_baselines():
    """Σ_rewards [baseline_cost·TD(λ) + pg_cost·V-trace + upgo_cost·UPGO] (design §4), one baseline per reward."""
    from dataclasses import replace

    from selfplay.agents.alphastar import BaselineSpec, RewardCosts

    config = replace(SMALL, baselines=(BaselineSpec("win_loss"), BaselineSpec("damage", squash=False)))
    torch.manual_seed(3)
    net = AlphaStarNet(config)
    B, T = 2, 3
    obs = random_obs(config, B, T, 5, seed=4)
    with torch.no_grad():
        actor = net(obs, generator=torch.Generator().manual_seed(5))
    target = net(obs, actions=actor.actions).time_major()
    assert set(target.values) == {"win_loss", "damage"}
    torch.testing.assert_close(target.value, target.values["win_loss"])
    behaviour = {h: v.transpose(0, 1) for h, v in actor.log_probs.items()}
    rng = np.random.default_rng(6)
    rewards = {"win_loss": np.zeros((T, B)), "damage": rng.random((T, B))}
    rewards["win_loss"][-1] = [1.0, -1.0]
    boot = {"win_loss": np.zeros(B), "damage": np.zeros(B)}
    discounts = np.ones((T, B))
    costs = {"win_loss": RewardCosts(10.0, 1.0, 1.0), "damage": RewardCosts(baseline_cost=2.0, pg_cost=0.5)}
    loss_config = RLLossConfig(reward_costs=costs)
    terms = alphastar_rl_loss(target, behaviour, None, rewards, discounts, boot, config=loss_config)
    expected = (
        10.0 * terms["value_loss/win_loss"]
        + terms["pg_loss/win_loss"]
        + terms["upgo_loss/win_loss"]
        + 2.0 * terms["value_loss/damage"]
        + 0.5 * terms["pg_loss/damage"]
        + 1e-4 * terms["entropy_loss"]
    )
    torch.testing.assert_close(terms["total"], expected)
    assert float(terms["upgo_loss/damage"]) == 0.0  # UPGO on win/loss only
    # the damage value loss is computed against the damage baseline
    alone = td_lambda_value_loss(target.values["damage"], rewards["damage"], boot["damage"], discounts, 0.8)
    torch.testing.assert_close(terms["value_loss/damage"], alone)
    with pytest.raises(ValueError, match="reward_costs"):
        alphastar_rl_loss(target, behaviour, None, rewards, discounts, boot)  # no costs for "damage"
    with pytest.raises(ValueError, match="baseline"):
        alphastar_rl_loss(target, behaviour, None, {"gold": rewards["damage"]}, discounts, {"gold": boot["damage"]})
