"""PPOLearner's contract: masks, rollout bookkeeping, snapshots, restore, exact resume, bad input."""

import io

import pytest
import torch
from selfplay.agents.ppo import FrozenPPOPolicy, PPOConfig, PPOLearner

from selfplay.core.policy import Learner, Policy

OBS, ACTIONS = 30, 3


def drive(learner, steps, num_envs, seed, state=None, masks=None, update=True):
    """Feed ``steps`` random transitions (episodes of 10 steps); returns actions, final state, metrics."""
    gen = torch.Generator().manual_seed(seed)
    actions, metrics = [], []
    for t in range(steps):
        obs = torch.rand(num_envs, OBS, generator=gen)
        start = torch.full((num_envs,), t % 10 == 0)
        mask = None if masks is None else masks[t % len(masks)]
        action, state, _ = learner.act(obs, state, mask, start)
        actions.append(action)
        learner.record(torch.randn(num_envs, generator=gen), torch.full((num_envs,), t % 10 == 9))
        if update and learner.ready():
            metrics.append(learner.update())
    return torch.stack(actions), state, metrics


def small_config(body="mlp", **kwargs):
    return PPOConfig(body=body, horizon=64, minibatch_size=16, epochs=2, **kwargs)


def test_satisfies_the_protocols_and_table_one_defaults():
    learner = PPOLearner(OBS, ACTIONS, seed=0)
    assert isinstance(learner, Learner) and isinstance(learner.snapshot(), Policy)
    cfg = learner.config
    assert (cfg.horizon, cfg.learning_rate, cfg.adam_eps, cfg.epochs, cfg.minibatch_size) == (2048, 3e-4, 1e-5, 10, 64)
    assert (cfg.gamma, cfg.gae_lambda, cfg.entropy_coef, cfg.clip_coef, cfg.max_grad_norm) == (0.99, 0.95, 0.01, 0.2, 5.0)
    assert cfg.normalize_advantages and cfg.body == "mlp" and cfg.hidden_size == 64


@pytest.mark.parametrize("num_envs, bptt, expected", [(64, None, 32), (48, None, 43), (4, 5, 20), (64, 5, 35)])
def test_rollout_length_and_ready(num_envs, bptt, expected):
    body = "mlp" if bptt is None else "lstm"
    learner = PPOLearner(OBS, ACTIONS, PPOConfig(body=body, horizon=2048 if bptt is None or num_envs == 64 else 64,
                                                  bptt_length=bptt), seed=0)
    obs = torch.zeros(num_envs, OBS)
    state = learner.initial_state(num_envs)
    for step in range(expected + 1):
        assert not learner.ready()
        _, state, _ = learner.act(obs, state)
        learner.record(torch.zeros(num_envs), torch.zeros(num_envs, dtype=torch.bool))
    # Ready one step after the rollout: that step's value bootstraps, then it opens the next rollout.
    assert learner.rollout_length == expected and learner.ready()
    metrics = learner.update()
    assert metrics["transitions"] == expected * num_envs and learner.weight_version == 1
    assert not learner.ready() and learner.buffer.filled == 1


def test_action_masks_are_respected():
    gen = torch.Generator().manual_seed(0)
    masks = [torch.rand(16, ACTIONS, generator=gen) < 0.5 for _ in range(5)]
    for m in masks:
        m[torch.arange(16), torch.randint(0, ACTIONS, (16,), generator=gen)] = True  # at least one legal
    for body in ("mlp", "lstm"):
        learner = PPOLearner(OBS, ACTIONS, small_config(body), seed=1)
        actions, _, metrics = drive(learner, 25, 16, seed=2, masks=masks)
        assert len(metrics) == 6 and all(torch.isfinite(torch.tensor(m["policy_loss"])) for m in metrics)
        for t, a in enumerate(actions):
            assert masks[t % 5][torch.arange(16), a].all()
        frozen = learner.snapshot()
        single = torch.zeros(16, ACTIONS, dtype=torch.bool)
        single[:, 2] = True
        a, _, info = frozen.act(torch.rand(16, OBS), None, single)
        assert torch.all(a == 2) and torch.allclose(info["log_prob"], torch.zeros(16))


def test_snapshot_is_shared_until_the_weights_change():
    learner = PPOLearner(OBS, ACTIONS, small_config(), seed=0)
    first = learner.snapshot()
    assert isinstance(first, FrozenPPOPolicy) and learner.snapshot() is first
    drive(learner, 3, 16, seed=1)  # acting alone does not change weights
    assert learner.snapshot() is first
    frozen_weights = {k: v.clone() for k, v in first.network.state_dict().items()}
    drive(learner, 2, 16, seed=1)  # 5 steps in all = a rollout of 4 + the bootstrap step: one update
    assert learner.weight_version == 1
    second = learner.snapshot()
    assert second is not first and second.weight_version == 1 and learner.snapshot() is second
    # The earlier frozen policy kept its weights; the new one differs from it.
    assert all(torch.equal(v, first.network.state_dict()[k]) for k, v in frozen_weights.items())
    assert any(not torch.equal(v, second.network.state_dict()[k]) for k, v in frozen_weights.items())
    assert not any(p.requires_grad for p in second.network.parameters())


def test_restore_takes_the_frozen_weights():
    learner = PPOLearner(OBS, ACTIONS, small_config(), seed=0)
    old = learner.snapshot()
    drive(learner, 13, 16, seed=1)
    version = learner.weight_version
    learner.restore(old)
    assert learner.weight_version == version + 1 and learner.buffer.filled == 0
    obs = torch.rand(8, OBS)
    assert torch.allclose(learner.snapshot().act(obs, None)[2]["logits"], old.act(obs, None)[2]["logits"])
    assert learner.snapshot() is not old
    with pytest.raises(ValueError, match="frozen"):
        learner.restore(PPOLearner(OBS, 4, small_config(), seed=0).snapshot())


@pytest.mark.parametrize("body", ["mlp", "lstm"])
def test_state_dict_round_trip_resumes_exactly(body):
    config = small_config(body, bptt_length=3 if body == "lstm" else None)
    original = PPOLearner(OBS, ACTIONS, config, seed=3)
    _, state, _ = drive(original, 13, 8, seed=4)  # one update done, mid-way through the next rollout
    saved = io.BytesIO()
    torch.save(original.state_dict(), saved)
    saved.seek(0)
    resumed = PPOLearner(OBS, ACTIONS, config, seed=99)
    resumed.load_state_dict(torch.load(saved, weights_only=False))
    assert resumed.weight_version == original.weight_version == 1
    state_copy = None if state is None else tuple(s.clone() for s in state)
    actions_a, _, metrics_a = drive(original, 30, 8, seed=5, state=state)
    actions_b, _, metrics_b = drive(resumed, 30, 8, seed=5, state=state_copy)
    assert torch.equal(actions_a, actions_b) and metrics_a == metrics_b and len(metrics_a) >= 2
    for k, v in original.network.state_dict().items():
        assert torch.equal(v, resumed.network.state_dict()[k])
    with pytest.raises(ValueError, match="config"):
        PPOLearner(OBS, ACTIONS, small_config(body, hidden_size=32), seed=0).load_state_dict(original.state_dict())


def test_lstm_sequence_replay_reproduces_the_acting_policy():
    """Before any gradient step, truncated-BPTT replay from the stored states gives the acting log-probs."""
    learner = PPOLearner(OBS, ACTIONS, small_config("lstm", bptt_length=4), seed=0)
    drive(learner, 17, 4, seed=1, update=False)  # rollout 16 steps of 4 games; episodes of 10 steps start inside sequences
    assert learner.ready()
    buf = learner.buffer
    with torch.no_grad():
        for idx, logits, values in learner._minibatches():
            log_prob = torch.log_softmax(logits, -1).gather(-1, buf.actions[idx].unsqueeze(-1)).squeeze(-1)
            assert torch.allclose(log_prob, buf.log_probs[idx], atol=1e-5)
            assert torch.allclose(values, buf.values[idx], atol=1e-5)


def test_lstm_state_resets_at_episode_start():
    learner = PPOLearner(OBS, ACTIONS, small_config("lstm"), seed=0)
    frozen = learner.snapshot()
    obs = torch.rand(6, OBS)
    _, state, _ = frozen.act(obs, None)
    _, state, _ = frozen.act(obs, state)
    start = torch.tensor([True, False, True, False, True, False])
    _, after, info = frozen.act(obs, state, None, start)
    _, fresh, fresh_info = frozen.act(obs, frozen.initial_state(6))
    assert torch.allclose(info["logits"][start], fresh_info["logits"][start])
    assert not torch.allclose(info["logits"][~start], fresh_info["logits"][~start])
    assert torch.allclose(after[0][start], fresh[0][start])


def test_bad_input_raises():
    with pytest.raises(ValueError, match="body"):
        PPOConfig(body="gru")
    with pytest.raises(ValueError, match="horizon"):
        PPOConfig(horizon=0)
    with pytest.raises(ValueError, match="gamma"):
        PPOConfig(gamma=1.5)
    with pytest.raises(ValueError, match="obs_size"):
        PPOLearner(0, 3)
    learner = PPOLearner(OBS, ACTIONS, small_config(), seed=0)
    with pytest.raises(ValueError, match="obs"):
        learner.act(torch.zeros(4, OBS + 1), None)
    with pytest.raises(ValueError, match="mask"):
        learner.act(torch.zeros(4, OBS), None, torch.zeros(4, ACTIONS, dtype=torch.bool))
    with pytest.raises(RuntimeError, match="update"):
        learner.update()
    with pytest.raises(RuntimeError, match="act"):
        learner.record(torch.zeros(4), torch.zeros(4, dtype=torch.bool))
    learner.act(torch.zeros(4, OBS), None)
    with pytest.raises(ValueError, match="reward"):
        learner.record(torch.zeros(5), torch.zeros(5, dtype=torch.bool))
    with pytest.raises(RuntimeError, match="record"):
        learner.act(torch.zeros(4, OBS), None)
    learner.record(torch.zeros(4), torch.zeros(4, dtype=torch.bool))
    with pytest.raises(ValueError, match="batch size"):
        learner.act(torch.zeros(5, OBS), None)
