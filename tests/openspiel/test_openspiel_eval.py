"""Our policies as tabular policies, and exploitability in training runs and the comparison."""

import numpy as np
import pandas as pd
import pytest
import torch

pyspiel = pytest.importorskip("pyspiel")

from selfplay.agents.ppo import FrozenPPOPolicy  # noqa: E402
from selfplay.agents.ppo.network import ActorCritic, NetworkSpec  # noqa: E402
from selfplay.analysis.exploitability import exploitability  # noqa: E402
from selfplay.envs.openspiel import OpenSpielGame  # noqa: E402

from selfplay.evaluation.compare import CompareConfig, compare, evaluate_run_dir  # noqa: E402
from selfplay.training.loop import TrainConfig, train  # noqa: E402
from selfplay.training.openspiel_eval import policy_table  # noqa: E402


def sharp_policy(env, body, seed):
    """A PPO policy far from uniform (the policy head scaled up), so that mistakes would show."""
    net = ActorCritic(NetworkSpec(env.obs_size, env.n_actions, body=body), torch.Generator().manual_seed(seed))
    with torch.no_grad():
        net.policy_head.weight.mul_(300.0)
    return FrozenPPOPolicy(net, seed=seed)


@pytest.mark.parametrize("game, body", [("leduc_poker", "mlp"), ("leduc_poker", "lstm"), ("kuhn_poker", "lstm"),
                                        ("goofspiel(num_cards=4)", "mlp"), ("liars_dice(dice_sides=4)", "mlp")])
def test_table_is_what_the_policy_plays_in_the_environment(game, body):
    env = OpenSpielGame(game, num_envs=64, seed=0)
    policy = sharp_policy(env, body, seed=1)
    generator_state = policy.generator.get_state()
    table = policy_table(policy, env.game)
    assert torch.equal(policy.generator.get_state(), generator_state)  # tabulating does not disturb sampling
    np.testing.assert_allclose(table.action_probability_array.sum(axis=1), 1.0)
    assert (table.action_probability_array[~table.legal_actions_mask.astype(bool)] == 0).all()
    # play both seats with the policy, as the self-play loop does, and compare every mover's distribution
    obs = env.reset()
    states = [policy.initial_state(env.num_envs) for _ in range(2)]
    start = torch.ones(env.num_envs, dtype=torch.bool)
    checked = 0
    spread = 0.0
    for _ in range(30):
        masks = env.action_masks()
        mover = env.current_player()
        actions = []
        for seat in range(2):
            a, states[seat], info = policy.act(obs[seat], states[seat], masks[seat], start)
            probs = torch.softmax(info["logits"], dim=-1)[:, : env.num_game_actions].numpy()
            keys = env.information_state_strings(seat)
            for i in np.flatnonzero(mover == seat):
                expected = table.policy_for_key(keys[i])
                np.testing.assert_allclose(probs[i], expected, atol=1e-5)
                spread = max(spread, float(np.max(expected)) - float(np.min(expected[expected > 0])))
                checked += 1
            actions.append(a)
        obs, _, done, _ = env.step(actions)
        start = done.clone()
    assert checked > 500 and spread > 0.1  # many decisions, and distributions far from uniform


def test_recurrent_table_depends_on_the_history_not_only_the_last_observation():
    env = OpenSpielGame("leduc_poker", num_envs=1, seed=0)
    policy = sharp_policy(env, "lstm", seed=2)
    table = policy_table(policy, env.game)
    # the same last observations fed without their history give other distributions
    obs = torch.as_tensor(np.array([s.information_state_tensor(s.current_player()) for s in table.states]),
                          dtype=torch.float32)
    _, _, info = policy.act(obs, policy.initial_state(len(obs)), None, torch.ones(len(obs), dtype=torch.bool))
    memoryless = torch.softmax(info["logits"][:, : env.num_game_actions], dim=-1).numpy() * table.legal_actions_mask
    memoryless /= memoryless.sum(axis=1, keepdims=True)
    deep = np.array([len(s.history()) > 3 for s in table.states])
    assert np.abs(memoryless[deep] - table.action_probability_array[deep]).max() > 1e-3


def test_uniform_policy_table_has_openspiel_uniform_exploitability():
    env = OpenSpielGame("kuhn_poker", num_envs=1)
    net = ActorCritic(NetworkSpec(env.obs_size, env.n_actions))
    with torch.no_grad():
        net.policy_head.weight.zero_()  # zero logits: uniform over the legal actions
    table = policy_table(FrozenPPOPolicy(net), env.game)
    assert exploitability(env.game, table) == pytest.approx(11 / 24)


@pytest.mark.parametrize("agent, scheme", [("ppo-rnn", "psro:window=10,max_episodes_per_iteration=40,matches_per_pair=4"),
                                           ("ppo-mlp", "delta-limit-uniform:delta=0.5")])
def test_train_and_evaluate_write_exploitability_of_every_checkpoint(tmp_path, agent, scheme):
    config = TrainConfig(env="openspiel:kuhn_poker", agent=agent, scheme=scheme, episodes=160, num_envs=16,
                         checkpoints=4, agent_settings={"horizon": 128, "epochs": 2}, tensorboard=False)
    train(config, tmp_path)
    summary = evaluate_run_dir(tmp_path, matches=4, seed=0)
    table = pd.read_csv(tmp_path / "evaluation" / "exploitability.csv")
    assert list(table.columns) == ["checkpoint", "episode", "exploitability", "nash_mixture_exploitability"]
    assert table["checkpoint"].tolist() == [0, 1, 2, 3] and table["episode"].tolist() == [40, 80, 120, 160]
    assert table["exploitability"].between(0, 2).all() and table["nash_mixture_exploitability"].between(0, 2).all()
    assert table["nash_mixture_exploitability"][0] == pytest.approx(table["exploitability"][0])
    assert summary["exploitability_final"] == pytest.approx(table["exploitability"].iloc[-1], abs=1e-7)
    assert (tmp_path / "figures" / "exploitability.png").exists()


def test_compare_on_kuhn_reports_exploitability_for_every_run(tmp_path):
    cfg = CompareConfig.preset(quick=True, env="openspiel:kuhn_poker")
    cfg.env, cfg.schemes, cfg.episodes, cfg.checkpoints, cfg.matches = "openspiel:kuhn_poker", ["naive", "psro"], 160, 3, 4
    cfg.num_envs, cfg.ppo, cfg.jobs, cfg.embedding = 16, {"horizon": 128, "epochs": 2}, 1, False
    report = compare(cfg, tmp_path)
    summary = pd.read_csv(tmp_path / "evaluation" / "summary.csv")
    for column in ("exploitability_first", "exploitability_final", "exploitability_min",
                   "nash_mixture_exploitability_final"):
        assert summary[column].between(0, 2).all()
    for run in ("naive-s0", "psro-s0"):
        table = pd.read_csv(tmp_path / "runs" / "ppo-mlp" / run / "evaluation" / "exploitability.csv")
        assert len(table) == 3
    assert (tmp_path / "figures" / "exploitability_ppo-mlp.png").exists()
    assert "nash_mixture_exploitability_final" in report.read_text()
