"""The multi-unit PPO learner's contract: masks, seats, inputs, replay, snapshots, persistence, errors."""

import pytest
import torch
from selfplay.agents.ppo.config import MultiUnitPPOConfig, ppo_config
from selfplay.agents.ppo.multiunit import MultiUnitFrozenPolicy, MultiUnitPPOLearner, load_policy, save_policy
from selfplay.envs.smac import SMACBattle


def make_learner(env, seat=0, seed=0, **overrides):
    config = ppo_config("smac", **{"horizon": 64, "epochs": 2, **overrides})
    return MultiUnitPPOLearner.for_battle(env, seat, config, seed=seed)


def run_learner_side(env, learner, steps, updates=True):
    """Play ``steps`` steps of a single-player battle (seat 1 scripted) with ``learner`` on seat 0.

    Asserts at every step that every action is legal and that dead units play the no-op;
    returns the number of dead-unit actions seen (so callers can check the case was exercised).
    """
    n = env.num_envs
    obs = env.reset()
    state = learner.initial_state(n)
    start = torch.ones(n, dtype=torch.bool)
    dead_seen = 0
    for _ in range(steps):
        masks = env.action_masks()
        gs = env.get_state()[0] if learner.uses_global_state else None
        action, state, info = learner.act(obs[0], state, masks[0], start, global_state=gs)
        legal = masks[0].gather(2, action[..., None]).squeeze(-1)
        assert bool(legal.all()), "an unavailable action was chosen"
        dead = masks[0][..., 0]
        assert bool((action[dead] == 0).all()), "a dead unit did something other than the no-op"
        assert torch.isfinite(info["log_prob"]).all()
        dead_seen += int(dead.sum())
        obs, rewards, done, _ = env.step([action])
        learner.record(rewards[0], done)
        start = done
        if updates and learner.ready():
            learner.update()
    return dead_seen


@pytest.mark.parametrize("body", ["mlp", "gru", "lstm"])
def test_masks_respected_and_dead_units_noop_vs_scripted(body):
    env = SMACBattle("3m", num_envs=16, two_player=False, seed=1)
    learner = make_learner(env, body=body, bptt_length=4)
    dead_seen = run_learner_side(env, learner, 90)
    assert dead_seen > 0  # units died, so the dead-unit rule was exercised
    assert learner.weight_version >= 2


def test_single_legal_action_is_always_taken():
    env = SMACBattle("3m", num_envs=1, two_player=False)
    learner = make_learner(env)
    B, U, A = 32, 3, env.n_actions[0]
    gen = torch.Generator().manual_seed(3)
    only = torch.randint(0, A, (B, U), generator=gen)
    mask = torch.nn.functional.one_hot(only, A).bool()
    obs = torch.randn(B, U, env.obs_size[0], generator=gen)
    action, _, info = learner.act(obs, None, mask, torch.ones(B, dtype=torch.bool))
    assert torch.equal(action, only)
    assert torch.allclose(info["log_prob"], torch.zeros(B, U), atol=1e-6)


@pytest.mark.parametrize("mirror", [False, True])
@pytest.mark.parametrize("seat", [0, 1])
def test_acts_for_either_seat_of_a_two_player_battle(seat, mirror):
    """An asymmetric map (2 marines vs 1 zealot): the learner's sizes follow its seat."""
    env = SMACBattle("2m_vs_1z", num_envs=8, two_player=True, mirror=mirror, seed=seat)
    learner = make_learner(env, seat=seat)
    other = make_learner(env, seat=1 - seat, seed=5).snapshot()
    assert learner.spec.n_agents == env.n_agents[seat] and learner.spec.n_actions == env.n_actions[seat]
    obs = env.reset()
    state, opp_state = learner.initial_state(8), other.initial_state(8)
    start = torch.ones(8, dtype=torch.bool)
    for _ in range(60):
        masks = env.action_masks()
        a, state, _ = learner.act(obs[seat], state, masks[seat], start)
        b, opp_state, _ = other.act(obs[1 - seat], opp_state, masks[1 - seat], start)
        assert a.shape == (8, env.n_agents[seat]) and b.shape == (8, env.n_agents[1 - seat])
        assert bool(masks[seat].gather(2, a[..., None]).all()) and bool(masks[1 - seat].gather(2, b[..., None]).all())
        obs, rewards, done, _ = env.step([a, b] if seat == 0 else [b, a])
        learner.record(rewards[seat], done)
        start = done
        if learner.ready():
            learner.update()
    assert learner.weight_version >= 1


def test_inputs_carry_agent_id_and_own_last_action():
    env = SMACBattle("3m", num_envs=4, two_player=False, seed=2)
    learner = make_learner(env, horizon=400)
    D, U, A = env.obs_size[0], env.n_agents[0], env.n_actions[0]
    assert learner.spec.actor_input_size == D + U + A
    obs = env.reset()
    state = learner.initial_state(4)
    start = torch.ones(4, dtype=torch.bool)
    taken = []
    for _ in range(30):
        action, state, _ = learner.act(obs[0], state, env.action_masks()[0], start)
        obs, rewards, done, _ = env.step([action])
        learner.record(rewards[0], done)
        taken.append((action, start))
        start = done
    buf = learner.buffer
    assert torch.equal(buf.actor_in[:30, :, :, D:D + U], torch.eye(U).expand(30, 4, U, U))
    for t in range(30):
        expected = torch.zeros(4, U, A) if t == 0 else torch.nn.functional.one_hot(taken[t - 1][0], A).float()
        expected = torch.where(taken[t][1][:, None, None], 0.0, expected)  # zeroed at episode starts
        assert torch.equal(buf.actor_in[t, :, :, D + U:], expected)
    assert bool(buf.starts[1:30].any())  # an episode restarted inside the window, so the reset was checked

    plain = make_learner(env, agent_id=False, last_action=False)
    assert plain.spec.actor_input_size == D


def test_agent_id_lets_units_with_identical_observations_act_differently():
    env = SMACBattle("3m", num_envs=1, two_player=False)
    learner = make_learner(env)
    obs = torch.randn(1, 1, env.obs_size[0]).expand(1, 3, -1)
    _, _, info = learner.act(obs, None, None, None)
    logits = info["logits"][0]
    assert not torch.allclose(logits[0], logits[1]) and not torch.allclose(logits[1], logits[2])
    no_id = make_learner(env, agent_id=False)
    _, _, info = no_id.act(obs, None, None, None)
    assert torch.allclose(info["logits"][0, 0], info["logits"][0, 1])


@pytest.mark.parametrize("body,centralized", [("mlp", False), ("mlp", True), ("gru", False), ("lstm", True)])
def test_replay_in_update_reproduces_the_acting_distribution(body, centralized):
    """Before any gradient step, the update's forward passes (minibatched, recurrent sequences cut at
    episode starts) give exactly the log-probabilities and values recorded while acting."""
    env = SMACBattle("3m", num_envs=6, two_player=False, seed=4)
    learner = make_learner(env, body=body, centralized_value=centralized, horizon=6 * 40, bptt_length=8,
                           minibatch_size=80)
    run_learner_side(env, learner, 41, updates=False)
    assert learner.ready()
    buf, T = learner.buffer, learner.buffer.rollout_length
    assert bool(buf.starts[1:T].any())
    seen = torch.zeros(T, 6, dtype=torch.long)
    assert learner.sizes.num_minibatches == 3  # 30 sequences of 8 steps, 10 (80 game-steps) per minibatch
    for idx, logits, values in learner._minibatches():
        log_prob = torch.log_softmax(logits, -1).gather(-1, buf.actions[:T][idx][..., None]).squeeze(-1)
        assert torch.allclose(log_prob, buf.log_probs[:T][idx], atol=1e-5)
        assert torch.allclose(values, buf.values[:T][idx], atol=1e-5)
        seen[idx] += 1
    assert bool((seen == 1).all())  # every game-step in exactly one minibatch


def test_dead_units_carry_no_policy_gradient():
    """A rollout in which every unit is dead (only the no-op legal): the actor does not move, the critic does."""
    env = SMACBattle("3m", num_envs=1, two_player=False)
    learner = make_learner(env, horizon=8)
    U, A = 3, env.n_actions[0]
    dead_mask = torch.zeros(2, U, A, dtype=torch.bool)
    dead_mask[..., 0] = True
    actor_before = [p.clone() for p in learner.network.actor_parameters()]
    critic_before = [p.clone() for p in learner.network.critic_parameters()]
    state = learner.initial_state(2)
    while not learner.ready():
        action, state, _ = learner.act(torch.randn(2, U, env.obs_size[0]), state, dead_mask, None)
        assert bool((action == 0).all())
        learner.record(torch.ones(2), torch.zeros(2, dtype=torch.bool))
    learner.update()
    assert all(torch.equal(a, b) for a, b in zip(actor_before, learner.network.actor_parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(critic_before, learner.network.critic_parameters()))


def test_episode_start_resets_recurrent_state_and_last_action():
    env = SMACBattle("3m", num_envs=3, two_player=False, seed=0)
    policy = make_learner(env, body="gru").snapshot()
    obs = env.reset()[0]
    mask = env.action_masks()[0]
    g = torch.Generator().manual_seed(0)
    dirty = tuple(torch.randn(s.shape, generator=g) for s in policy.initial_state(3))
    a1, s1, i1 = policy.act(obs, dirty, mask, torch.ones(3, dtype=torch.bool), deterministic=True)
    a2, s2, i2 = policy.act(obs, None, mask, None, deterministic=True)
    assert torch.allclose(i1["logits"], i2["logits"]) and all(torch.allclose(x, y) for x, y in zip(s1, s2))
    _, _, i3 = policy.act(obs, dirty, mask, torch.zeros(3, dtype=torch.bool), deterministic=True)
    assert not torch.allclose(i1["logits"], i3["logits"])


def test_snapshot_is_shared_until_the_weights_change_and_acts_like_the_learner():
    env = SMACBattle("3m", num_envs=8, two_player=False, seed=0)
    learner = make_learner(env, body="lstm", bptt_length=4)
    first = learner.snapshot()
    assert isinstance(first, MultiUnitFrozenPolicy) and learner.snapshot() is first
    frozen_weights = {k: v.clone() for k, v in first.network.state_dict().items()}
    obs, mask = env.reset()[0], env.action_masks()[0]
    _, _, learner_info = learner.act(obs, None, mask, None)
    _, _, frozen_info = first.act(obs, None, mask, None)
    assert torch.allclose(learner_info["logits"], frozen_info["logits"])
    learner.buffer.filled, learner.buffer.pending = 0, False
    run_learner_side(env, learner, 20)
    assert learner.weight_version >= 1
    second = learner.snapshot()
    assert second is not first and second.weight_version == learner.weight_version
    assert all(torch.equal(v, first.network.state_dict()[k]) for k, v in frozen_weights.items())
    assert any(not torch.equal(v, second.network.state_dict()[k]) for k, v in frozen_weights.items())
    learner.restore(first)
    assert learner.snapshot() is not first
    assert all(torch.equal(v, learner.network.state_dict()[k]) for k, v in frozen_weights.items())


@pytest.mark.parametrize("body", ["mlp", "gru"])
def test_state_dict_round_trip_resumes_exactly(body):
    env_a = SMACBattle("3m", num_envs=4, two_player=False, seed=7)
    a = make_learner(env_a, body=body, centralized_value=True, seed=3, bptt_length=4)
    run_learner_side(env_a, a, 25)  # mid-rollout, after at least one update
    saved = a.state_dict()
    b = make_learner(env_a, body=body, centralized_value=True, seed=99, bptt_length=4)
    b.load_state_dict(saved)
    assert b.weight_version == a.weight_version and b.buffer.filled == a.buffer.filled
    obs, mask, gs = env_a.get_obs()[0], env_a.action_masks()[0], env_a.get_state()[0]
    state = a.initial_state(4)
    for _ in range(a.buffer.rollout_length + 1 - a.buffer.filled):
        xa, _, _ = a.act(obs, state, mask, None, global_state=gs)
        xb, state, _ = b.act(obs, state, mask, None, global_state=gs)
        assert torch.equal(xa, xb)
        for learner in (a, b):
            learner.record(torch.ones(4), torch.zeros(4, dtype=torch.bool))
    ma, mb = a.update(), b.update()
    assert ma == mb
    assert all(torch.equal(x, y) for x, y in zip(a.network.state_dict().values(), b.network.state_dict().values()))
    other = make_learner(env_a, body=body, seed=3, bptt_length=4)  # no centralised value: another spec
    with pytest.raises(ValueError, match="must match this learner"):
        other.load_state_dict(saved)


def test_same_seed_same_actions_and_weights():
    results = []
    for _ in range(2):
        env = SMACBattle("3m", num_envs=4, two_player=False, seed=11)
        learner = make_learner(env, body="gru", seed=5, bptt_length=4)
        run_learner_side(env, learner, 40)
        results.append((learner.buffer.actions.clone(), [p.clone() for p in learner.network.parameters()]))
    assert torch.equal(results[0][0], results[1][0])
    assert all(torch.equal(x, y) for x, y in zip(results[0][1], results[1][1]))


def test_save_and_load_policy(tmp_path):
    env = SMACBattle("2s3z", num_envs=5, two_player=True, seed=0)
    frozen = make_learner(env, seat=1, body="lstm", centralized_value=True).snapshot()
    path = save_policy(frozen, tmp_path / "p" / "policy.pt")
    loaded = load_policy(path)
    assert loaded.spec == frozen.spec and loaded.weight_version == frozen.weight_version and loaded.seed == frozen.seed
    obs, mask = env.reset()[1], env.action_masks()[1]
    a, s, i = frozen.act(obs, None, mask, None, deterministic=True)
    b, t, j = loaded.act(obs, None, mask, None, deterministic=True)
    assert torch.equal(a, b) and torch.allclose(i["logits"], j["logits"])
    torch.save({"format": "something else"}, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match="path"):
        load_policy(tmp_path / "bad.pt")
    with pytest.raises(ValueError, match="frozen"):
        save_policy(object(), tmp_path / "x.pt")


def test_bad_input_raises_value_error_naming_the_parameter():
    env = SMACBattle("3m", num_envs=2, two_player=False)
    learner = make_learner(env)
    obs, mask = env.reset()[0], env.action_masks()[0]
    with pytest.raises(ValueError, match="obs"):
        learner.act(obs[:, :2], None, mask, None)
    with pytest.raises(ValueError, match="mask"):
        learner.act(obs, None, mask.float(), None)
    with pytest.raises(ValueError, match="mask"):
        learner.act(obs, None, torch.zeros_like(mask), None)
    with pytest.raises(ValueError, match="episode_start"):
        learner.act(obs, None, mask, torch.ones(3, dtype=torch.bool))
    with pytest.raises(ValueError, match="state"):
        learner.act(obs, (torch.zeros(2, 3, 4),), mask, None)
    central = make_learner(env, centralized_value=True)
    assert central.uses_global_state and not learner.uses_global_state
    with pytest.raises(ValueError, match="global_state"):
        central.act(obs, None, mask, None)
    with pytest.raises(ValueError, match="global_state"):
        central.act(obs, None, mask, None, global_state=torch.zeros(2, 5))
    with pytest.raises(ValueError, match="seat"):
        MultiUnitPPOLearner.for_battle(env, seat=1)  # single-player: seat 1 is the scripted AI
    with pytest.raises(ValueError, match="state_size"):
        MultiUnitPPOLearner(30, 3, 9, MultiUnitPPOConfig(centralized_value=True))
    learner.act(obs, None, mask, None)
    with pytest.raises(ValueError, match="reward"):
        learner.record(torch.ones(3), torch.zeros(3, dtype=torch.bool))
    for bad in ({"body": "transformer"}, {"horizon": 0}, {"learning_rate": 0.0}, {"gamma": 1.5},
                {"minibatch_size": 0}, {"bptt_length": 0}, {"entropy_coef": -1.0}, {"agent_id": 1}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            MultiUnitPPOConfig(**bad)
