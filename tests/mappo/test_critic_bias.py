"""``benchmarks/smac_critic_bias.py``: Monte-Carlo returns across rollouts, blind units, and the
advantage-against-return rows on hand-made rollouts."""

from types import SimpleNamespace

import pytest
import torch
from selfplay.agents.mappo import rules
from selfplay.agents.mappo.config import MAPPOConfig


@pytest.fixture(scope="module")
def cb(load_benchmark):
    return load_benchmark("smac_critic_bias")


def brute_returns(rewards, dones, gamma):
    """G_t per step of the concatenated rollouts ``(T, B)``, summed to each game's end (nan if it never ends)."""
    T, B = rewards.shape
    G = torch.full((T, B), float("nan"), dtype=torch.float64)
    for b in range(B):
        for t in range(T):
            g, k = 0.0, t
            while k < T:
                g += gamma ** (k - t) * float(rewards[k, b])
                if dones[k, b]:
                    G[t, b] = g
                    break
                k += 1
    return G


def test_rollout_returns_by_hand(cb):
    rewards = torch.tensor([[1.0, 0.0], [2.0, 1.0], [3.0, 1.0]])
    dones = torch.tensor([[False, False], [True, False], [False, False]])
    P, W = cb.rollout_returns(rewards, dones, 0.5)
    # game 0 ends with step 1: P_0 = 1 + 0.5·2, P_1 = 2, nothing after; step 2 starts a new game that runs on
    assert P[:, 0].tolist() == [2.0, 2.0, 3.0] and W[:, 0].tolist() == [0.0, 0.0, 0.5]
    # game 1 runs past the rollout: P_0 = 0 + 0.5·1 + 0.25·1, W_t = 0.5^(3−t)
    assert P[:, 1].tolist() == [0.75, 1.5, 1.0] and W[:, 1].tolist() == [0.125, 0.25, 0.5]


def test_the_tracker_completes_returns_across_rollouts(cb):
    gamma, T, B, U = 0.9, 4, 3, 2
    g = torch.Generator().manual_seed(0)
    rewards = torch.rand(3 * T, B, generator=g)
    dones = torch.zeros(3 * T, B, dtype=torch.bool)
    dones[2, 0] = dones[9, 0] = True  # game slot 0: a game inside rollout 0, then one from step 3 to 9
    dones[6, 1] = dones[11, 1] = True  # slot 1: a game over rollouts 0–1, the next ends with the last step
    dones[5, 2] = True  # slot 2: the game after step 5 never ends
    select = torch.rand(T, B, U, generator=g) < 0.6
    tracker = cb.ReturnTracker()
    for r in range(3):
        P, W = cb.rollout_returns(rewards[r * T:(r + 1) * T], dones[r * T:(r + 1) * T], gamma)
        if r:
            tracker.advance(P, W)
        tracker.add(r, P, W, select)
    G = brute_returns(rewards, dones, gamma)
    for r in range(3):
        n, total, pending = tracker.result(r)
        g_r = G[r * T:(r + 1) * T][..., None].expand(T, B, U)[select]
        assert n == int(select.sum())
        assert pending == int(g_r.isnan().sum())
        if pending == 0:
            assert total == pytest.approx(float(g_r.sum()), rel=1e-12)
    assert tracker.result(0)[2] == 0  # every game running in rollout 0 ended by step 11
    assert tracker.result(2)[2] > 0  # slot 2's game after step 5 never ends: rollout 2's sum stays partial


def test_blind_units_and_classes(cb):
    enemy = slice(4, 8)
    actor_in = torch.zeros(1, 1, 3, 10)
    actor_in[0, 0, 1, 5] = 0.3  # unit 1 sees an enemy
    actor_in[0, 0, :, 0] = 1.0  # move features do not count
    actor_in[0, 0, :, 8:] = 1.0  # nor do the allies'
    active = torch.tensor([[[True, True, False]]])
    blind = cb.blind_units(actor_in, active, enemy)
    assert blind.tolist() == [[[True, False, False]]]
    classes = cb.class_masks(torch.tensor([[[5, 4, 0]]]), active, blind)
    assert classes["west"].tolist() == classes["away"].tolist() == [[[True, False, False]]]
    assert not bool(classes["east"].any())  # unit 1 moves east but is not blind


def hand_learner(lam: float):
    """A learner-shaped stub with one rollout of T = 4 steps, B = 2 games, U = 2 agents; game 0 ends with
    step 1 and its next game with step 3, game 1 with step 3: every return is complete in the rollout."""
    T, B, U = 4, 2, 2
    config = MAPPOConfig(rollout_length=T, chunk_length=2, num_envs=B, gae_lambda=lam, gamma=0.9)
    g = torch.Generator().manual_seed(1)
    actor_in = torch.zeros(T, B, U, 12)
    actor_in[2:, :, 1, 6] = 1.0  # agent 1 sees an enemy in the rollout's second half
    buffer = {"rewards": torch.rand(T, B, generator=g), "dones": torch.tensor([[False, False], [True, False],
                                                                               [False, False], [True, True]]),
              "values": torch.rand(T + 1, B, U, generator=g), "actor_in": actor_in,
              "active": torch.ones(T, B, U, dtype=torch.bool),
              "actions": torch.tensor([4, 5, 3, 4, 1, 5, 4, 2]).view(T, B, 1).expand(T, B, U).clone()}
    return SimpleNamespace(config=config, buffer=buffer, value_norm=rules.IdentityNorm(),
                           evaluate_rollout=lambda *a: None)


@pytest.mark.parametrize("lam", [1.0, 0.5])
def test_advantages_equal_monte_carlo_ones_without_bootstrap_only_at_lambda_one(cb, lam):
    learner = hand_learner(lam)
    diag = cb.CriticBias(slice(4, 8))
    diag.observe(learner, None, None, None)
    diag.finish({k: 0.0 for k in ("mean_reward", "actor_grad_norm", "explained_variance", "value_loss",
                                  "approx_kl", "clip_fraction", "entropy")})
    row = diag.table()[0]
    buf = learner.buffer
    G = brute_returns(buf["rewards"], buf["dones"], 0.9)
    V = buf["values"][:4]
    adv, _ = rules.gae(buf["rewards"], buf["values"], buf["dones"], 0.9, lam)
    std = rules.standardize(adv, buf["active"])
    east = torch.tensor([4, 5, 3, 4, 1, 5, 4, 2]).view(4, 2, 1).expand(4, 2, 2) == 4
    east = east & torch.tensor([True, True])[None, None] & ~((torch.arange(4) >= 2)[:, None, None]
                                                               & (torch.arange(2) == 1)[None, None, :])
    assert row["n_east"] == int(east.sum()) == 5
    assert row["adv_east"] == pytest.approx(float(std[east].mean()), abs=1e-6)
    assert row["ret_east"] == pytest.approx(float(G[..., None].expand(4, 2, 2)[east].mean()), abs=1e-6)
    mc = ((G[..., None] - V) - adv.mean()) / (adv.std(unbiased=False) + 1e-5)
    assert row["mc_east"] == pytest.approx(float(mc[east].mean()), abs=1e-5)
    for name in ("all", "blind", "east", "west", "away"):
        if lam == 1.0:  # GAE(λ=1) with every game ending in the rollout is G − V: no bootstrap, no bias
            assert row[f"mc_{name}"] == pytest.approx(row[f"adv_{name}"], abs=1e-5)
    if lam == 0.5:
        assert row["mc_all"] != pytest.approx(row["adv_all"], abs=1e-3)


def test_seen_units_are_classed_by_move_and_attack(cb):
    active = torch.tensor([[[True, True, True, False]]])
    blind = torch.tensor([[[False, False, True, False]]])
    classes = cb.class_masks(torch.tensor([[[7, 5, 4, 0]]]), active, blind)
    assert classes["seen"].tolist() == [[[True, True, False, False]]]
    assert classes["seen_attack"].tolist() == [[[True, False, False, False]]]
    assert classes["seen_away"].tolist() == [[[False, True, False, False]]]
    assert classes["east"].tolist() == [[[False, False, True, False]]] and not bool(classes["seen_east"].any())
