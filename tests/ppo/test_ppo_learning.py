"""PPO (MLP and LSTM) learns to beat a fixed biased opponent in RirRPS; GAE on a hand-computed case."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from selfplay.agents.ppo import PPOConfig, PPOLearner, compute_gae, ppo_loss
from selfplay.envs.rps import RirRPS


def test_gae_hand_computed():
    # Game 0: rewards 1, 2, 3; values 0.5, 1.0, 1.5; the episode ends after step 1; V(s_3) = 2.
    # Game 1: same rewards and values, no episode end.
    gamma, lam = 0.9, 0.8
    rewards = torch.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    values = torch.tensor([[0.5, 0.5], [1.0, 1.0], [1.5, 1.5]])
    dones = torch.tensor([[False, False], [True, False], [False, False]])
    last_value = torch.tensor([2.0, 2.0])
    adv, ret = compute_gae(rewards, values, dones, last_value, gamma, lam)
    # Game 0: δ2 = 3 + .9·2 − 1.5 = 3.3, A2 = 3.3; δ1 = 2 − 1 = 1 (done: no bootstrap), A1 = 1;
    #         δ0 = 1 + .9·1 − .5 = 1.4, A0 = 1.4 + .72·1 = 2.12.
    # Game 1: δ2 = 3.3, A2 = 3.3; δ1 = 2 + .9·1.5 − 1 = 2.35, A1 = 2.35 + .72·3.3 = 4.726;
    #         δ0 = 1.4, A0 = 1.4 + .72·4.726 = 4.80272.
    expected = torch.tensor([[2.12, 4.80272], [1.0, 4.726], [3.3, 3.3]])
    assert torch.allclose(adv, expected, atol=1e-5)
    assert torch.allclose(ret, expected + values, atol=1e-5)
    with pytest.raises(ValueError, match="last_value"):
        compute_gae(rewards, values, dones, torch.zeros(3), gamma, lam)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.integers(0, 2**31 - 1))
def test_gae_equals_the_discounted_sum_of_td_errors(T, N, gamma, lam, seed):
    """A_t = Σ_k (γλ)^k δ_{t+k}, summed up to and including the step that ends the episode."""
    gen = torch.Generator().manual_seed(seed)
    rewards, values = torch.randn(T, N, generator=gen, dtype=torch.float64), torch.randn(T, N, generator=gen, dtype=torch.float64)
    dones = torch.rand(T, N, generator=gen) < 0.3
    last = torch.randn(N, generator=gen, dtype=torch.float64)
    adv, ret = compute_gae(rewards, values, dones, last, gamma, lam)
    for n in range(N):
        for t in range(T):
            total, weight = 0.0, 1.0
            for k in range(t, T):
                next_value = 0.0 if dones[k, n] else (values[k + 1, n] if k + 1 < T else last[n])
                total += weight * (rewards[k, n] + gamma * next_value - values[k, n])
                if dones[k, n]:
                    break
                weight *= gamma * lam
            assert abs(adv[t, n].item() - float(total)) < 1e-9
    assert torch.allclose(ret, adv + values)


def train_against_biased_opponent(body: str, episodes: int, seed: int = 0):
    """Train a learner in seat 1 (its own view) against an opponent playing Rock 70 % of the time."""
    num_envs = 64
    env = RirRPS(num_envs, seed=seed)
    learner = PPOLearner(env.obs_size, env.n_actions, PPOConfig(body=body), seed=seed)
    opponent_probs = torch.tensor([0.7, 0.15, 0.15]).expand(num_envs, 3)
    gen = torch.Generator().manual_seed(seed + 1)
    obs = env.reset()
    state = learner.initial_state(num_envs)
    start = torch.ones(num_envs, dtype=torch.bool)
    played = 0
    while played < episodes:
        action, state, _ = learner.act(obs[1], state, env.action_masks()[1], start)
        opponent = torch.multinomial(opponent_probs, 1, generator=gen).squeeze(1)
        obs, rewards, done, info = env.step([opponent, action])
        learner.record(rewards[1], done)
        start = done
        played += int(done.sum())
        if learner.ready():
            learner.update()
    return learner


def win_rate_against_biased_opponent(policy, games: int = 2000, seed: int = 7, seat: int = 1) -> float:
    """Win rate of ``policy`` sitting in ``seat`` against the 70 %-Rock opponent in the other seat."""
    env = RirRPS(games, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    obs = env.reset()
    state = policy.initial_state(games)
    start = torch.ones(games, dtype=torch.bool)
    for _ in range(env.episode_length):
        action, state, _ = policy.act(obs[seat], state, None, start)
        opponent = torch.multinomial(torch.tensor([0.7, 0.15, 0.15]).expand(games, 3), 1, generator=gen).squeeze(1)
        obs, _, done, info = env.step([opponent, action] if seat == 1 else [action, opponent])
        start = done
    return (info["winner"] == seat).float().mean().item()


@pytest.mark.parametrize("body, episodes", [("mlp", 1600), ("lstm", 1600)])
def test_ppo_learns_to_beat_a_rock_biased_opponent(body, episodes):
    learner = train_against_biased_opponent(body, episodes)
    before = win_rate_against_biased_opponent(PPOLearner(30, 3, PPOConfig(body=body), seed=0).snapshot())
    after = win_rate_against_biased_opponent(learner.snapshot())
    # An untrained (near-uniform) policy wins about half of its games against any opponent; always
    # playing Paper wins ~97 %. Training (6 PPO updates) must get clearly above the former.
    assert abs(before - 0.5) < 0.06
    assert after > 0.8, f"{body}: win rate {after:.3f} after training"
    # Each seat sees the game from its own view, so what was learnt in seat 1 works in seat 0 too.
    assert win_rate_against_biased_opponent(learner.snapshot(), seat=0) > 0.8


def test_ppo_loss_hand_computed():
    # ratios 1.5, 0.5, 1.1 with advantages 1, 1, −1 and ε = 0.2:
    #   max(−1.5, −1.2) = −1.2;  max(−0.5, −0.8) = −0.5;  max(1.1, 1.1) = 1.1  ->  L_clip = −0.6 / 3 = −0.2
    # values 1, 2, 3 vs returns 0, 2, 5: L_value = ½ · (1 + 0 + 4) / 3 = 5/6; entropy mean 0.9.
    new = torch.log(torch.tensor([1.5, 0.5, 1.1]))
    old = torch.zeros(3)
    adv = torch.tensor([1.0, 1.0, -1.0])
    values, returns = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.0, 2.0, 5.0])
    entropy = torch.tensor([0.9, 0.9, 0.9])
    loss, stats = ppo_loss(new, old, adv, values, returns, entropy, clip_coef=0.2, value_coef=0.5, entropy_coef=0.01)
    assert stats["policy_loss"].item() == pytest.approx(-0.2, abs=1e-6)
    assert stats["value_loss"].item() == pytest.approx(5 / 6, abs=1e-6)
    assert loss.item() == pytest.approx(-0.2 + 0.5 * 5 / 6 - 0.01 * 0.9, abs=1e-6)
    assert stats["clip_fraction"].item() == pytest.approx(2 / 3)
    kl = ((torch.tensor([1.5, 0.5, 1.1]) - 1) - new).mean().item()
    assert stats["approx_kl"].item() == pytest.approx(kl, abs=1e-6)
    # Gradient w.r.t. log π: a clipped sample (ratio 1.5 > 1.2 with A > 0) gets none; the others get
    # d/dlogπ (−A·ratio/3) = −A·ratio/3.
    new_param = new.clone().requires_grad_(True)
    ppo_loss(new_param, old, adv, values, returns, entropy, 0.2, 0.5, 0.0)[0].backward()
    assert torch.allclose(new_param.grad, torch.tensor([0.0, -0.5 / 3, 1.1 / 3]), atol=1e-6)


def test_written_out_mlp_gradient_equals_autograd():
    # mlp_step's gradient of every parameter and its statistics against autograd through ppo_loss, on a
    # minibatch whose ratios fall inside, below, above and exactly on the clip range (ε = 0.2).
    from selfplay.agents.ppo.mlp_step import mlp_ppo_step
    from selfplay.agents.ppo.network import ActorCritic, NetworkSpec

    g = torch.Generator().manual_seed(3)
    net = ActorCritic(NetworkSpec(7, 3), torch.Generator().manual_seed(4))
    for p in net.parameters():  # larger heads than the initialisation's, so that every term matters
        p.data += 0.3 * torch.randn(p.shape, generator=g)
    obs, actions = torch.randn(12, 7, generator=g), torch.randint(0, 3, (12,), generator=g)
    adv, returns = torch.randn(12, generator=g), torch.randn(12, generator=g)
    with torch.no_grad():
        now = torch.log_softmax(net.heads(net.body(obs))[0], -1).gather(-1, actions[:, None]).squeeze(-1)
    ratios = torch.tensor([1.0, 1.1, 0.9, 1.5, 0.5, 1.3, 0.7, 1.0, 1.25, 0.75, 1.05, 1.0])
    old = now - torch.log(ratios)
    old[7] = now[7] - torch.log(torch.tensor(1.2))  # on the clip bound: the gradient passes, split between the max's terms
    logits, values = net.heads(net.body(obs))
    log_probs = torch.log_softmax(logits, -1)
    loss, expected = ppo_loss(log_probs.gather(-1, actions[:, None]).squeeze(-1), old, adv, values, returns,
                              -(log_probs.exp() * log_probs).sum(-1), 0.2, 0.5, 0.01)
    reference = torch.autograd.grad(loss, list(net.parameters()))
    stats = mlp_ppo_step(net, obs, actions, old, adv, returns, 0.2, 0.5, 0.01)
    for p, want in zip(net.parameters(), reference):
        assert torch.allclose(p.grad, want, atol=1e-6, rtol=1e-5)
    for name, value in expected.items():
        assert stats[name].item() == pytest.approx(value.item(), abs=1e-6)


@pytest.mark.parametrize("body, step_name", [("mlp", "mlp_ppo_step"), ("lstm", "lstm_ppo_step")])
def test_update_takes_the_written_out_gradient_and_keeps_the_shuffles(monkeypatch, body, step_name):
    # A learner on a rollout with every action legal updates through mlp_step / lstm_step; from the same
    # state the autograd path gives the same weights (to float rounding) and draws the same permutations.
    # The LSTM's sequences (bptt 4) hold episode starts at varied steps, so that they are cut into pieces.
    from selfplay.agents.ppo import lstm_step, mlp_step
    from selfplay.agents.ppo.learner import PPOLearner as Learner

    module = mlp_step if body == "mlp" else lstm_step
    calls = []
    step = getattr(module, step_name)
    monkeypatch.setattr(module, step_name, lambda *a, **k: calls.append(1) or step(*a, **k))
    bptt = 4 if body == "lstm" else None

    def filled(seed=0):
        learner = Learner(5, 3, PPOConfig(horizon=64, minibatch_size=16, epochs=2, body=body, bptt_length=bptt),
                          seed=seed)
        g = torch.Generator().manual_seed(1)
        state, start = learner.initial_state(8), torch.ones(8, dtype=torch.bool)
        while not learner.ready():
            _, state, _ = learner.act(torch.randn(8, 5, generator=g), state, None, start)
            start = torch.rand(8, generator=g) < 0.2
            learner.record(torch.randn(8, generator=g).sign(), start)
        return learner

    fast, slow = filled(), filled()
    assert fast._written_out_gradient() is False  # decided per update, from the rollout's masks
    slow._written_out_gradient = lambda: False
    m_fast, m_slow = fast.update(), slow.update()
    assert fast._all_legal and len(calls) == 2 * fast.sizes.num_minibatches  # every minibatch of both epochs
    for a, b in zip(fast.network.parameters(), slow.network.parameters()):
        assert torch.allclose(a, b, atol=1e-6)
    assert torch.equal(fast.generator.get_state(), slow.generator.get_state())
    for name in ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction"):
        assert m_fast[name] == pytest.approx(m_slow[name], abs=1e-6)


def test_lstm_pieces_hand_computed():
    # Two sequences of 5 steps: the first cut before steps 2 and 3, the second starting an episode at
    # step 0 (a piece like any other) and never again: pieces [0-1], [2], [3-4] and [0-4].
    from selfplay.agents.ppo.lstm_step import pack_pieces

    starts = torch.tensor([[False, True], [False, False], [True, False], [True, False], [False, False]])
    piece, step, first, pieces, longest = pack_pieces(starts)
    assert piece.tolist() == [[0, 3], [0, 3], [1, 3], [2, 3], [2, 3]]
    assert step.tolist() == [[0, 0], [1, 1], [0, 2], [0, 3], [1, 4]]
    assert first.tolist() == [0, 3] and (pieces, longest) == (4, 5)


def test_written_out_lstm_gradient_equals_autograd():
    # lstm_step's gradient of every parameter and its statistics against autograd through the body's unroll
    # and ppo_loss: four sequences of 6 steps from stored states, cut by episode starts at row 0 and inside
    # (one sequence never cut), ratios inside, below and above the clip range (ε = 0.2; none on its bound:
    # the oneDNN forward autograd takes rounds differently from the written-out one, so a ratio on the
    # bound may land on either side).
    from selfplay.agents.ppo.lstm_step import lstm_ppo_step
    from selfplay.agents.ppo.network import ActorCritic, NetworkSpec

    g = torch.Generator().manual_seed(3)
    net = ActorCritic(NetworkSpec(7, 3, "lstm", 5), torch.Generator().manual_seed(4))
    for p in net.parameters():  # larger weights than the initialisation's, so that every term matters
        p.data += 0.3 * torch.randn(p.shape, generator=g)
    L, B = 6, 4
    obs, actions = torch.randn(L, B, 7, generator=g), torch.randint(0, 3, (L, B), generator=g)
    state = (torch.randn(B, 5, generator=g), torch.randn(B, 5, generator=g))
    starts = torch.zeros(L, B, dtype=torch.bool)
    starts[[0, 4], 1] = True
    starts[[2, 3], 0] = True
    starts[[1, 5], 3] = True
    adv, returns = torch.randn(L, B, generator=g), torch.randn(L, B, generator=g)
    with torch.no_grad():
        now = torch.log_softmax(net.heads(net.body.unroll(obs, state, starts)[0])[0], -1)
    now = now.gather(-1, actions[..., None]).squeeze(-1)
    ratios = torch.tensor([1.0, 1.1, 0.9, 1.5, 0.5, 1.3, 0.7, 1.0, 1.25, 0.75, 1.05, 1.0] * 2).view(L, B)
    old = now - torch.log(ratios)
    logits, values = net.heads(net.body.unroll(obs, state, starts)[0])
    log_probs = torch.log_softmax(logits, -1)
    loss, expected = ppo_loss(log_probs.gather(-1, actions[..., None]).squeeze(-1), old, adv, values, returns,
                              -(log_probs.exp() * log_probs).sum(-1), 0.2, 0.5, 0.01)
    reference = torch.autograd.grad(loss, list(net.parameters()))
    stats = lstm_ppo_step(net, obs, state, starts, actions, old, adv, returns, 0.2, 0.5, 0.01)
    for p, want in zip(net.parameters(), reference):
        assert want.abs().max() > 1e-3  # every parameter has a gradient to check
        assert torch.allclose(p.grad, want, atol=1e-6, rtol=1e-5)
    for name, value in expected.items():
        assert stats[name].item() == pytest.approx(value.item(), abs=1e-6)
