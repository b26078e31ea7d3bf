"""The MAPPO learner on the SMAC simulator: seeded runs repeat exactly, learner state resumes, bad input is named,
and a run against the built-in AI writes its metrics and resumes."""

import csv

import pytest
import torch
from selfplay.agents.mappo import MAPPOLearner, mappo_config
from selfplay.envs.smac import SMACBattle

from selfplay.training.vs_builtin import VsAIConfig, side_inputs, train_vs_builtin

SMALL = dict(num_envs=4, rollout_length=20, chunk_length=10, epochs=2)


def run_updates(seed: int, updates: int = 2, hold=None, **settings):
    """``updates`` updates on 3m against the AI; with ``hold`` (a ``threading.Event``) driven as ``selfplay train
    --opponent builtin-ai`` drives it — ``start_update``, the next rollout acted, then ``finish_update`` — with the
    critic's pass held until that rollout is acted (``hold`` is set just before ``finish_update``)."""
    config = mappo_config(**{**SMALL, **settings})
    battle = SMACBattle("3m", num_envs=config.num_envs, two_player=False, seed=7)
    learner = MAPPOLearner.for_battle(battle, config, seed=seed)
    obs = battle.reset()
    start = torch.ones(config.num_envs, dtype=torch.bool)
    metrics, actions = [], []
    while learner.weight_version < updates:
        o, s, mask = side_inputs(battle, config, obs)
        action = learner.act(o, s, mask, start)
        assert bool(mask.gather(-1, action[..., None]).all())  # only available actions
        actions.append(action)
        obs, rewards, done, _ = battle.step([action])
        learner.record(rewards[0], done)
        start = done
        if learner.ready():
            _, s, mask = side_inputs(battle, config, obs)
            if hold is None:
                metrics.append(learner.update(s, mask, start))
                continue
            if learner.weight_version:  # an update was started
                hold.set()
                metrics.append(learner.finish_update())
            hold.clear()
            learner.start_update(s, mask, start)
            with pytest.raises(RuntimeError, match="finish_update"):
                learner.start_update(s, mask, start)
    if hold is not None:
        hold.set()
        metrics.append(learner.finish_update())
    return learner, metrics, torch.stack(actions)


@pytest.mark.parametrize("critic_input", ["AS", "EP"])
def test_a_seeded_run_is_reproducible(critic_input):
    a, metrics_a, actions_a = run_updates(3, critic_input=critic_input)
    b, metrics_b, actions_b = run_updates(3, critic_input=critic_input)
    assert metrics_a == metrics_b
    assert torch.equal(actions_a, actions_b)
    for (name, x), y in zip(a.network.state_dict().items(), b.network.state_dict().values()):
        assert torch.equal(x, y), name
    c, _, actions_c = run_updates(4, critic_input=critic_input)
    assert not torch.equal(actions_a, actions_c)


def test_update_changes_the_weights_and_reports_finite_losses():
    learner, metrics, _ = run_updates(0, updates=1)
    fresh = MAPPOLearner.for_battle(SMACBattle("3m", 1, two_player=False), learner.config, seed=0)
    changed = [n for (n, x), y in zip(learner.network.state_dict().items(), fresh.network.state_dict().values())
               if not torch.equal(x, y)]
    assert any(n.startswith("actor") for n in changed) and any(n.startswith("critic") for n in changed)
    assert all(torch.isfinite(torch.tensor(v)) for v in metrics[0].values())
    assert 0 < metrics[0]["active_fraction"] <= 1


def test_learner_state_round_trip_continues_identically():
    learner, _, _ = run_updates(5, updates=1)
    twin = MAPPOLearner.for_battle(SMACBattle("3m", 1, two_player=False), learner.config, seed=5)
    twin.load_state_dict(learner.state_dict())
    obs = torch.randn(4, 3, learner.obs_size)
    state = torch.randn(4, 3, learner.state_size)
    mask = torch.ones(4, 3, learner.n_actions, dtype=torch.bool)
    start = torch.ones(4, dtype=torch.bool)
    assert torch.equal(learner.act(obs, state, mask, start), twin.act(obs, state, mask, start))


def test_open_loop_learner_sees_one_input_column():
    learner, metrics, _ = run_updates(0, updates=1, open_loop=True)
    assert learner.obs_size == 1 and learner.network.sizes["actor_input_size"] == 1 + 3
    assert metrics[0]["weight_version"] == 1


def test_bad_input_is_named():
    learner = MAPPOLearner.for_battle(SMACBattle("3m", 1, two_player=False), mappo_config(**SMALL), seed=0)
    mask = torch.ones(2, 3, learner.n_actions, dtype=torch.bool)
    with pytest.raises(ValueError, match="obs must have shape"):
        learner.act(torch.zeros(2, 3, 5), torch.zeros(2, 3, learner.state_size), mask, torch.ones(2, dtype=torch.bool))
    with pytest.raises(ValueError, match="state must have shape"):
        learner.act(torch.zeros(2, 3, learner.obs_size), torch.zeros(2, 9), mask, torch.ones(2, dtype=torch.bool))
    with pytest.raises(ValueError, match="seed"):
        MAPPOLearner(4, 4, 2, 3, seed=-1)
    with pytest.raises(ValueError, match="agent must be one of"):
        VsAIConfig(agent="ppo-mlp")
    with pytest.raises(ValueError, match="env must be a SMAC battle"):
        VsAIConfig(env="rirrps")
    with pytest.raises(ValueError, match="steps"):
        VsAIConfig(steps=0)


def test_training_against_the_builtin_ai_writes_metrics_and_resumes(tmp_path):
    settings = {**SMALL, "eval_interval": 80, "eval_episodes": 4}
    out = tmp_path / "run"
    first = train_vs_builtin(VsAIConfig(env="smac:3m", steps=160, seed=1, agent_settings=settings), out, log=lambda s: None)
    assert (first.steps, first.updates) == (160, 2)
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["step"]) for r in rows] == [0, 80, 160]
    assert all(0.0 <= float(r["test_win_rate"]) <= 1.0 and r["test_return"] for r in rows)
    assert (out / "figures" / "learning_curve.png").is_file()
    with open(out / "test_games.csv") as f:
        games = list(csv.DictReader(f))
    assert len(games) == 4 * 3 and {(g["start"], g["allies"], g["enemies"]) for g in games} == \
        {("map", "marine:3", "marine:3")}
    resumed = train_vs_builtin(VsAIConfig(env="smac:3m", steps=240, seed=1, agent_settings=settings), out,
                               log=lambda s: None)
    assert (resumed.steps, resumed.updates) == (240, 3)
    with open(out / "metrics.csv") as f:
        again = list(csv.DictReader(f))
    assert again[:3] == rows and [int(r["step"]) for r in again] == [0, 80, 160, 240]
    with open(out / "test_games.csv") as f:
        assert list(csv.DictReader(f))[:12] == games  # the resumed run keeps the committed games' rows
    with pytest.raises(ValueError, match="other settings"):
        train_vs_builtin(VsAIConfig(env="smac:3m", steps=240, seed=2, agent_settings=settings), out, log=lambda s: None)


def test_the_command_line_trains_against_the_builtin_ai(tmp_path, capsys):
    from selfplay.cli import main

    out = tmp_path / "cli"
    args = ["train", "--env", "smac:3m", "--opponent", "builtin-ai", "--steps", "80", "--num-envs", "4",
            "--rollout-length", "20", "--epochs", "1", "--eval-interval", "80", "--eval-episodes", "2",
            "--critic-input", "EP", "--open-loop", "--update-threads", "1", "--critic-learning-rate", "0.001",
            "--critic-epochs", "2", "--clip-coef", "0.1", "--entropy-coef", "0", "--update-precision", "bfloat16",
            "--out", str(out)]
    assert main(args) == 0
    with open(out / "metrics.csv") as f:
        assert [int(r["step"]) for r in csv.DictReader(f)] == [0, 80]
    import yaml

    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["resolved_agent_settings"]["open_loop"] is True and config["opponent"] == "builtin-ai"
    assert config["resolved_agent_settings"]["update_threads"] == 1
    assert config["resolved_agent_settings"]["update_precision"] == "bfloat16"
    assert (config["resolved_agent_settings"]["critic_learning_rate"], config["resolved_agent_settings"]["critic_epochs"]) == (1e-3, 2)
    assert config["resolved_agent_settings"]["clip_coef"] == 0.1
    assert config["resolved_agent_settings"]["entropy_coef"] == 0.0  # a value equal to False is still given
    assert main(["train", "--env", "smac:3m", "--agent", "mappo", "--open-loop", "--out", str(tmp_path / "x")]) == 2
    assert "--open-loop apply to --opponent builtin-ai only" in capsys.readouterr().err
    assert main(["train", "--env", "smac:3m", "--agent", "ppo-mlp", "--update-threads", "1", "--out",
                 str(tmp_path / "z")]) == 2
    assert "(--update-threads also to self-play with --agent mappo)" in capsys.readouterr().err
    assert main(["train", "--env", "smac:3m", "--agent", "ppo-mlp", "--critic-epochs", "2", "--out",
                 str(tmp_path / "c")]) == 2
    assert "(--critic-epochs also to self-play with --agent mappo)" in capsys.readouterr().err
    assert main(["train", "--opponent", "builtin-ai", "--env", "smac:3m", "--horizon", "64",
                 "--out", str(tmp_path / "y")]) == 2
    assert "--horizon do not apply" in capsys.readouterr().err


def test_a_vs_ai_directory_and_a_self_play_directory_refuse_each_other(tmp_path, capsys):
    from selfplay.cli import main

    settings = {**SMALL, "eval_interval": 80, "eval_episodes": 2}
    train_vs_builtin(VsAIConfig(env="smac:3m", steps=80, agent_settings=settings), tmp_path / "vs", log=lambda s: None)
    assert main(["train", "--episodes", "8", "--num-envs", "4", "--checkpoints", "1", "--horizon", "32",
                 "--minibatch-size", "16", "--epochs", "1", "--out", str(tmp_path / "vs")]) == 2
    assert "holds a run against the built-in AI" in capsys.readouterr().err
    assert main(["train", "--episodes", "8", "--num-envs", "4", "--checkpoints", "1", "--horizon", "32",
                 "--minibatch-size", "16", "--epochs", "1", "--out", str(tmp_path / "sp")]) == 0
    with pytest.raises(ValueError, match="holds a training run"):
        train_vs_builtin(VsAIConfig(env="smac:3m", steps=80, agent_settings=settings), tmp_path / "sp",
                         log=lambda s: None)


@pytest.mark.parametrize("critic_input", ["AS", "EP"])
def test_batched_acting_matches_each_game_acted_alone(critic_input):
    """One forward over every game and agent gives each game what its own recurrent forward gives: the
    stored log-probabilities of the sampled actions, and the values the critic gives the rollout at once
    (``evaluate_rollout``) are a step-by-step critic's, the bootstrap step's included; the critic's state
    after the rollout carries over to the next one."""
    import copy

    from selfplay.agents.mappo.learner import active_agents
    from selfplay.agents.mappo.network import critic_inputs

    config = mappo_config(**{**SMALL, "rollout_length": 80, "critic_input": critic_input})
    battle = SMACBattle("3m", num_envs=config.num_envs, two_player=False, seed=7)
    learner = MAPPOLearner.for_battle(battle, config, seed=1)
    obs, start = battle.reset(), torch.ones(config.num_envs, dtype=torch.bool)

    def rollout():
        nonlocal obs, start
        for _ in range(config.rollout_length):
            o, s, mask = side_inputs(battle, config, obs)
            action = learner.act(o, s, mask, start)
            obs, rewards, done, _ = battle.step([action])
            learner.record(rewards[0], done)
            start = done
        return side_inputs(battle, config, obs)[1:] + (start,)

    state, mask, last_start = rollout()
    learner.evaluate_rollout(state, mask, last_start)
    learner.evaluate_rollout(state, mask, last_start)  # again: the same
    buf, net, U = learner.buffer, copy.deepcopy(learner.network), learner.n_agents
    last_in = critic_inputs(state, active_agents(mask), critic_input, config.death_masking)
    assert bool(buf["starts"][1:].any())  # some game restarted within the rollout: its state must reset
    carried = []
    with torch.no_grad():
        for b in range(config.num_envs):
            h_a = h_c = torch.zeros(U, config.hidden_size)
            for t in range(config.rollout_length):
                starts = buf["starts"][t, b].repeat(U)
                f, h_a = net.actor.step(buf["actor_in"][t, b], h_a, starts)
                logits = net.policy_head(f).masked_fill(~buf["masks"][t, b], -1e10)
                log_prob = torch.log_softmax(logits, -1).gather(-1, buf["actions"][t, b][:, None]).squeeze(-1)
                g, h_c = net.critic.step(buf["critic_in"][t, b], h_c, starts)
                torch.testing.assert_close(log_prob, buf["log_probs"][t, b], rtol=1e-5, atol=1e-5)
                torch.testing.assert_close(net.value_head(g).squeeze(-1), buf["values"][t, b], rtol=1e-5, atol=1e-5)
            carried.append(h_c)
            g, _ = net.critic.step(last_in[b], h_c, last_start[b].repeat(U))
            torch.testing.assert_close(net.value_head(g).squeeze(-1), buf["values"][-1, b], rtol=1e-5, atol=1e-5)
    learner.update(state, mask, last_start)
    rollout()
    torch.testing.assert_close(learner.buffer["h_critic"][0], torch.stack(carried), rtol=1e-5, atol=1e-5)


class _Stop:
    """Every living agent stops (SMAC action 1), a dead one takes no-op: units that never fire."""

    def initial_state(self, n):
        return None

    def act(self, obs, state, mask, start):
        return torch.where(mask[..., 1], 1, 0), state


def test_each_test_game_is_recorded_with_its_outcome():
    """A side that never fires against 3m's AI: every test game lost with all three allies dead, no enemy
    killed, no damage dealt (return 0), no timeout; one row per game, in order, with 3m's teams."""
    from selfplay.training.vs_builtin import evaluate

    win, ret, games = evaluate(_Stop(), "smac:3m", mappo_config(), episodes=3, seed=0)
    assert (win, ret) == (0.0, 0.0)
    assert [g["game"] for g in games] == [0, 1, 2]
    for g in games:
        assert (g["won"], g["timeout"], g["return"], g["dead_allies"], g["dead_enemies"]) == (0, 0, 0.0, 3, 0)
        assert 1 < g["episode_steps"] < 120  # 3m's limit: the AI kills them before it
        assert (g["start"], g["allies"], g["enemies"]) == ("map", "marine:3", "marine:3")


def test_the_paper_map_settings_start_from_the_map_script_and_options_still_win(tmp_path, capsys):
    """``--paper-map-settings``: the MAPPO paper's ``train_smac_MAP.sh`` flags for the map (5m_vs_6m: 10 epochs,
    clip 0.05; MMM2: 5 epochs, 2 minibatches, logits gain 1), an option given beside it wins; maps whose script
    runs an MLP policy, maps without a script and SMACv2 scenarios are refused."""
    import yaml
    from selfplay.agents.mappo.config import paper_map_settings

    from selfplay.cli import main

    assert paper_map_settings("5m_vs_6m") == {"epochs": 10, "clip_coef": 0.05}
    assert paper_map_settings("MMM2") == {"epochs": 5, "num_minibatches": 2, "policy_gain": 1.0}
    assert paper_map_settings("3m") == {"epochs": mappo_config().epochs}  # the defaults are 3m's script
    assert paper_map_settings("corridor") == {"epochs": 5, "recurrent": False}  # their `mappo`: no GRU
    assert paper_map_settings("8m_vs_9m") == {"epochs": 15, "clip_coef": 0.05}
    import argparse

    from selfplay.cli import _paper_map_settings  # without --env, train --opponent builtin-ai plays VsAIConfig's map
    assert _paper_map_settings(argparse.Namespace(paper_map_settings=True)) == paper_map_settings("3m")
    from selfplay.cli import _mappo_self_play_settings  # under a scheme: the map's script, then options given
    given = argparse.Namespace(env="smac:5m_vs_6m", paper_map_settings=True, clip_coef=0.1)
    assert _mappo_self_play_settings(given, {"learning_rate": 1e-3}, 8) == {
        "epochs": 10, "clip_coef": 0.1, "learning_rate": 1e-3, "rollout_length": 400}
    with pytest.raises(ValueError, match="4 stacked frames"):
        paper_map_settings("3s_vs_5z")
    with pytest.raises(ValueError, match="no script for map '2s3z'"):
        paper_map_settings("2s3z")
    out = tmp_path / "vs-ai"
    assert main(["train", "--env", "smac:5m_vs_6m", "--opponent", "builtin-ai", "--paper-map-settings", "--steps", "40",
                 "--num-envs", "2", "--rollout-length", "20", "--epochs", "1", "--eval-interval", "40",
                 "--eval-episodes", "1", "--out", str(out)]) == 0
    settings = yaml.safe_load((out / "config.yaml").read_text())["resolved_agent_settings"]
    assert (settings["epochs"], settings["clip_coef"], settings["num_minibatches"]) == (1, 0.05, 1)
    assert main(["train", "--env", "smacv2:protoss_5_vs_5", "--opponent", "builtin-ai", "--paper-map-settings",
                 "--out", str(tmp_path / "v2")]) == 2
    assert "--paper-map-settings applies to SMAC maps" in capsys.readouterr().err
    assert main(["train", "--env", "smac:3s_vs_4z", "--agent", "mappo", "--paper-map-settings",
                 "--out", str(tmp_path / "c")]) == 2
    assert "4 stacked frames" in capsys.readouterr().err


def test_the_logits_gain_sets_the_policy_heads_initial_scale():
    """``policy_gain`` is the orthogonal gain of the actor's logits layer: its rows are orthogonal with norm
    ``gain`` (the layer is 64 wide and has fewer rows than columns)."""
    for gain in (0.01, 1.0):
        learner = MAPPOLearner(5, 6, 2, 3, mappo_config(policy_gain=gain), seed=0)
        w = learner.network.policy_head.weight.detach()
        torch.testing.assert_close(w @ w.T, gain ** 2 * torch.eye(w.shape[0]), rtol=1e-4, atol=1e-6)


def test_without_the_gru_the_policy_reads_only_the_current_observation():
    """``recurrent=False`` (their ``mappo``): no GRU in either network, the hidden state stays zero through a
    rollout and its update, and the actor's logits at a step are the MLP's on that step's input alone."""
    learner, metrics, _ = run_updates(2, recurrent=False)
    net = learner.network
    assert not hasattr(net.actor, "gru") and not hasattr(net.critic, "gru") and len(metrics) == 2
    assert not learner.h_actor.any() and not learner.buffer["h_critic"].any()
    x, h = torch.randn(4, net.sizes["actor_input_size"]), torch.randn(4, net.sizes["hidden_size"])
    features, h_after = net.actor.step(x, h, torch.zeros(4, dtype=torch.bool))
    torch.testing.assert_close(features, net.actor.mlp(net.actor.feature_norm(x)))
    assert torch.equal(h_after, h)
    seq = torch.randn(3, 4, net.sizes["actor_input_size"])
    torch.testing.assert_close(net.actor.unroll(seq, torch.zeros(4, net.sizes["hidden_size"]),
                                                torch.zeros(3, 4, dtype=torch.bool)),
                               net.actor.mlp(net.actor.feature_norm(seq)))
