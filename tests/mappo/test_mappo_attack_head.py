"""MAPPO's entity attack head (``MAPPOConfig.attack_head="entity"``, ``network.EntityAttackScorer``): an attack's
logit gets ``⟨W_q f, g(e_j)⟩`` from the attacked enemy's own observed block, one ``g`` for every enemy."""

import pytest
import torch
from selfplay.agents.mappo import mappo_config
from selfplay.agents.mappo.learner import MAPPOLearner, enemy_obs_layout
from selfplay.agents.mappo.network import MAPPONetwork
from selfplay.agents.mappo.selfplay import MAPPOSelfPlayLearner, load_policy, save_policy, stack_policies
from selfplay.envs.smac import SMACBattle, StarCraft2Env
from selfplay.envs.smac.smacv2_battle import SMACv2Battle

# an actor input of 2 move features, 3 enemies of 4 features, 2 more; SMAC's 6 actions and one attack per enemy
LAYOUT, D, A, H = (2, 3, 4), 2 + 3 * 4 + 2, 9, 8


def entity_network(seed: int = 0) -> MAPPONetwork:
    net = MAPPONetwork(D, 5, A, hidden_size=H, generator=torch.Generator().manual_seed(seed), enemy_obs=LAYOUT)
    with torch.no_grad():  # scores of order 1 (the initial gain leaves them near 0)
        net.attack_scorer.query.weight.mul_(100.0)
    return net


def test_an_attack_logit_adds_the_enemys_score_by_its_formula():
    net = entity_network()
    gen = torch.Generator().manual_seed(3)
    f, x = torch.randn(5, H, generator=gen), torch.randn(5, D, generator=gen)
    logits = net.policy_logits(f, net.enemy_features(x))
    s = net.attack_scorer
    q = f @ s.query.weight.T + s.query.bias
    linear = f @ net.policy_head.weight.T + net.policy_head.bias
    for j in range(3):
        e = x[:, 2 + 4 * j: 2 + 4 * (j + 1)]  # enemy j's block
        g = torch.relu(e @ s.embed[0].weight.T + s.embed[0].bias) @ s.embed[2].weight.T + s.embed[2].bias
        torch.testing.assert_close(logits[:, 6 + j], linear[:, 6 + j] + (q * g).sum(-1))
    torch.testing.assert_close(logits[:, :6], linear[:, :6])  # no-op, stop and moves: the linear head alone
    assert (logits[:, 6:] - linear[:, 6:]).abs().max() > 0.1  # the scores are not negligible here


def test_an_enemys_score_follows_the_enemy_not_its_slot():
    net = entity_network()
    gen = torch.Generator().manual_seed(4)
    f, x = torch.randn(4, H, generator=gen), torch.randn(4, D, generator=gen)
    order = [2, 0, 1]
    blocks = x[:, 2:14].view(4, 3, 4)
    swapped = torch.cat([x[:, :2], blocks[:, order].reshape(4, 12), x[:, 14:]], -1)
    scores = net.attack_scorer(f, net.enemy_features(x))
    torch.testing.assert_close(net.attack_scorer(f, net.enemy_features(swapped)), scores[:, order])


def test_the_layout_is_smacs_observation_layout():
    battle = SMACBattle("2s3z", num_envs=1, seed=0)
    env = StarCraft2Env(map_name="2s3z", seed=0)
    n_enemies, feats = env.get_obs_enemy_feats_size()
    assert enemy_obs_layout(battle, 0) == (env.get_obs_move_feats_size(), n_enemies, feats)
    assert enemy_obs_layout(battle, 1) == enemy_obs_layout(battle, 0)  # a mirror battle
    # enemy j's block starts with SMAC's "available to attack" bit, which is action 6 + j's availability: walk
    # east into the fight (attacking what can be attacked) and compare them at every step, for every agent
    env.reset()
    offset, m, nf = enemy_obs_layout(battle, 0)
    seen_attackable = False
    for _ in range(40):
        avail = torch.as_tensor(env.get_avail_actions())
        blocks = torch.as_tensor(env.get_obs()).view(env.n_agents, -1)[:, offset:offset + m * nf].view(-1, m, nf)
        assert torch.equal(blocks[..., 0] > 0, avail[:, 6:6 + m] > 0)
        seen_attackable |= bool(avail[:, 6:].any())
        actions = torch.where(avail[:, 6:].any(-1), 6 + avail[:, 6:].float().argmax(-1),
                              torch.where(avail[:, 4] > 0, 4, avail.float().argmax(-1)))
        _, terminated, _ = env.step(actions.tolist())
        if terminated:
            break
    assert seen_attackable  # the comparison covered steps with enemies in range
    # SMACv2: the blocks are those its feature names (SMACv2's build_obs_feature_names) call enemy_*
    v2 = SMACv2Battle("protoss_5_vs_5", num_envs=1, seed=0)
    offset, m, nf = enemy_obs_layout(v2, 0)
    names = v2.layouts[0].obs_feature_names()
    assert m == 5 and [n.startswith("enemy_") for n in names] == [offset <= i < offset + m * nf
                                                                    for i in range(len(names))]
    assert [names[offset + j * nf] for j in range(m)] == [f"enemy_shootable_{j}" for j in range(m)]


def small_entity_learner(seed=0, **settings):
    battle = SMACBattle("3m", num_envs=2, seed=1)
    config = mappo_config(**{"rollout_length": 20, "chunk_length": 10, "epochs": 1, "attack_head": "entity",
                             **settings})
    return battle, MAPPOSelfPlayLearner.for_battle(battle, 0, config, seed)


def rollout_and_update(query_scale: float):
    """A 20-step rollout of 4 games of 3m against the AI and one update (1 epoch) by an entity-head learner whose
    scorer's query weights are scaled by ``query_scale``; ``(actions, update metrics)``."""
    battle = SMACBattle("3m", num_envs=4, seed=2, two_player=False)
    learner = MAPPOLearner.for_battle(battle, mappo_config(rollout_length=20, chunk_length=10, epochs=1,
                                                           attack_head="entity"), seed=0)
    with torch.no_grad():
        learner.network.attack_scorer.query.weight.mul_(query_scale)
    obs = battle.reset()[0]
    start = torch.ones(4, dtype=torch.bool)
    actions = []
    while not learner.ready():
        actions.append(learner.act(obs, battle.get_special_state()[0], battle.action_masks()[0], start))
        observations, reward, done, _ = battle.step([actions[-1]])
        obs, start = observations[0], done
        learner.record(reward[0], done)
    return torch.stack(actions), learner.update(battle.get_special_state()[0], battle.action_masks()[0], start)


def test_the_update_replays_the_probabilities_acted_with():
    """The update reads the enemy blocks raw (not the actor's normalised inputs): its first epoch's policy ratio
    is 1 for every sample, so the KL estimate is 0 — with scores large enough that another input would show
    (the same rollout without the scores acts otherwise)."""
    actions, metrics = rollout_and_update(300.0)
    assert metrics["approx_kl"] < 1e-6 and metrics["clip_fraction"] == 0.0
    without_scores, _ = rollout_and_update(0.0)
    assert not torch.equal(actions, without_scores)


def test_an_entity_head_policy_round_trips_and_stacks(tmp_path):
    battle, learner = small_entity_learner()
    assert learner.spec.enemy_obs == enemy_obs_layout(battle, 0)
    policies = []
    for seed in range(2):
        frozen = MAPPOSelfPlayLearner.for_battle(battle, 0, learner.config, seed).snapshot()
        with torch.no_grad():
            frozen.network.attack_scorer.query.weight.mul_(100.0)
        policies.append(load_policy(save_policy(frozen, tmp_path / f"p{seed}.pt")))
        assert policies[-1].spec == frozen.spec
        for a, b in zip(frozen.network.state_dict().values(), policies[-1].network.state_dict().values()):
            assert torch.equal(a, b)
    stack = stack_policies(policies)
    obs, mask = battle.reset()[1], battle.action_masks()[1]
    offset, m, nf = learner.spec.enemy_obs  # enemies in sight (at the start none is, and a zero block scores 0)
    obs[..., offset:offset + m * nf] = torch.rand(obs.shape[:2] + (m * nf,), generator=torch.Generator().manual_seed(0))
    start = torch.ones(2, dtype=torch.bool)
    _, _, info = stack.act(obs, None, torch.tensor([1, 0]), mask, start, deterministic=True)
    for g, i in enumerate((1, 0)):
        _, _, own = policies[i].act(obs[g:g + 1], None, mask[g:g + 1], start[g:g + 1], deterministic=True)
        torch.testing.assert_close(info["logits"][g:g + 1], own["logits"], rtol=1e-4, atol=1e-4)
    # the frozen policy's attack logits carry the scorer's scores (zeroing its query changes them, and only them)
    scored = policies[0].act(obs[1:], None, None, start[1:])[2]["logits"]  # unmasked: every attack's logit
    policies[0].network.attack_scorer.query.weight.zero_()
    linear = policies[0].act(obs[1:], None, None, start[1:])[2]["logits"]
    torch.testing.assert_close(scored[..., :6], linear[..., :6])
    assert (scored[..., 6:] - linear[..., 6:]).abs().min() > 0.01


def test_the_entity_head_is_refused_where_it_has_no_enemies_to_read():
    with pytest.raises(ValueError, match="attack_head must be one of"):
        mappo_config(attack_head="pointer")
    with pytest.raises(ValueError, match="open_loop replaces"):
        mappo_config(attack_head="entity", open_loop=True)
    with pytest.raises(ValueError, match="needs enemy_obs"):
        MAPPOLearner(14, 5, 2, 9, mappo_config(attack_head="entity"))
    with pytest.raises(ValueError, match="must lie inside"):
        MAPPONetwork(D, 5, A, enemy_obs=(5, 3, 4))
    with pytest.raises(ValueError, match="need 9 actions"):
        MAPPONetwork(D, 5, 8, enemy_obs=LAYOUT)
