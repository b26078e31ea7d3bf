"""MAPPO as a self-play learner (``agents/mappo/selfplay.py``): policy files round-trip, frozen snapshots act
as opponents, a tiny self-play run on 3m trains, saves and reloads its policies, reopens, and repeats with
its seed."""

import csv

import pytest
import torch
from selfplay.agents.mappo import mappo_config
from selfplay.agents.mappo.config import self_play_rollout_length
from selfplay.agents.mappo.selfplay import MAPPOFrozenPolicy, MAPPOSelfPlayLearner, load_policy, save_policy
from selfplay.envs.smac import SMACBattle

from selfplay.training.loop import TrainConfig, train
from selfplay.training.registry import agent_kit
from selfplay.training.rundir import RunDir

SMALL = {"rollout_length": 20, "chunk_length": 10, "epochs": 1}


def small_learner(seed=0, **settings):
    battle = SMACBattle("3m", num_envs=2, seed=1)
    return battle, MAPPOSelfPlayLearner.for_battle(battle, 0, mappo_config(**{**SMALL, **settings}), seed)


def test_policy_file_round_trip_acts_identically(tmp_path):
    battle, learner = small_learner()
    frozen = learner.snapshot()
    assert learner.snapshot() is frozen  # the same object while the weights are unchanged
    loaded = load_policy(save_policy(frozen, tmp_path / "p.pt"))
    assert isinstance(loaded, MAPPOFrozenPolicy) and loaded.spec == frozen.spec
    assert (loaded.weight_version, loaded.seed) == (frozen.weight_version, frozen.seed)
    obs, mask = battle.reset()[1], battle.action_masks()[1]
    start = torch.ones(2, dtype=torch.bool)
    a, sa, _ = frozen.act(obs, frozen.initial_state(2), mask, start, generator=torch.Generator().manual_seed(5))
    b, sb, _ = loaded.act(obs, loaded.initial_state(2), mask, start, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a, b) and all(torch.equal(x, y) for x, y in zip(sa, sb))
    assert bool(mask.gather(-1, a[..., None]).all())
    with pytest.raises(ValueError, match="frozen must be a MAPPOFrozenPolicy"):
        save_policy(object(), tmp_path / "q.pt")
    (tmp_path / "bad.pt").write_bytes(b"not a policy")
    with pytest.raises(ValueError):
        load_policy(tmp_path / "bad.pt")


def test_frozen_policy_zeroes_its_state_at_a_game_start():
    battle, learner = small_learner()
    frozen = learner.snapshot()
    obs, mask = battle.reset()[0], battle.action_masks()[0]
    h = frozen.initial_state(2)
    _, state, _ = frozen.act(obs, h, mask, torch.ones(2, dtype=torch.bool), deterministic=True)
    assert state[0].abs().sum() > 0
    fresh = frozen.act(obs, h, mask, torch.ones(2, dtype=torch.bool), deterministic=True)
    again = frozen.act(obs, state, mask, torch.tensor([True, False]), deterministic=True)
    assert torch.equal(again[1][0][0], fresh[1][0][0])  # game 0 restarted: as from zeros
    assert not torch.equal(again[1][0][1], fresh[1][0][1])  # game 1 continued


def test_greedy_opponents_play_the_most_probable_action_unless_told_to_sample():
    """``greedy_opponents``: a snapshot's default play is each unit's arg-max legal action; asked to, it samples."""
    from selfplay.training.matches import evaluation_act

    battle, learner = small_learner(greedy_opponents=True)
    frozen = learner.snapshot()
    obs, mask = battle.reset()[0], battle.action_masks()[0]
    start = torch.ones(2, dtype=torch.bool)
    action, _, info = frozen.act(obs, None, mask, start)
    assert torch.equal(action, info["logits"].argmax(-1))
    assert bool(mask.gather(-1, action[..., None]).all())
    seen = {tuple(evaluation_act(frozen, obs, None, mask, start, False)[0].flatten().tolist()) for _ in range(20)}
    assert len(seen) > 1  # sampled on request (the evaluation's --sampled)
    _, plain = small_learner()
    seen = {tuple(plain.snapshot().act(obs, None, mask, start)[0].flatten().tolist()) for _ in range(20)}
    assert len(seen) > 1  # by default snapshots sample


def test_restore_takes_the_weights_and_bumps_the_version():
    _, learner = small_learner(seed=0)
    _, other = small_learner(seed=1)
    learner.restore(other.snapshot())
    assert learner.weight_version == 1
    for x, y in zip(learner.inner.network.state_dict().values(), other.inner.network.state_dict().values()):
        assert torch.equal(x, y)
    with pytest.raises(ValueError, match="open_loop"):
        small_learner(open_loop=True)


def test_policies_of_runs_that_differ_only_in_training_settings_share_a_spec(tmp_path):
    """A policy's spec holds what acting needs, not how it was trained: snapshots of learners with other
    epochs, entropy bonus, step size and magnet restore into each other and stack together, and a policy
    file written with every setting (before the spec kept acting ones alone) reads back to the same spec;
    another width is refused."""
    from selfplay.agents.mappo.selfplay import MAPPOSpec, stack_policies

    battle, plain = small_learner(seed=0)
    _, trained_otherwise = small_learner(seed=1, epochs=3, entropy_coef=0.05, learning_rate=1e-3, magnet_coef=0.3)
    assert trained_otherwise.config.magnet_coef == 0.3 and trained_otherwise.config.epochs == 3  # the learner keeps them
    theirs = trained_otherwise.snapshot()
    assert theirs.spec == plain.spec and "magnet_coef" not in dict(theirs.spec.config)
    plain.restore(theirs)
    for x, y in zip(plain.inner.network.state_dict().values(), theirs.network.state_dict().values()):
        assert torch.equal(x, y)
    stack = stack_policies([plain.snapshot(), theirs])
    action, _, _ = stack.act(battle.reset()[0], None, torch.tensor([0, 1]), battle.action_masks()[0],
                             deterministic=True)
    assert action.shape == (2, 3)
    whole = {**theirs.spec.to_dict(), "config": trained_otherwise.config.to_dict()}  # an older file's spec
    assert MAPPOSpec.make(**whole) == theirs.spec
    loaded = load_policy(save_policy(theirs, tmp_path / "p.pt"))
    assert loaded.spec == plain.spec
    _, wider = small_learner(hidden_size=32)
    with pytest.raises(ValueError, match="learner's spec"):
        wider.restore(theirs)
    with pytest.raises(ValueError, match="acting settings"):
        MAPPOSelfPlayLearner(plain.spec, 0, mappo_config(**{**SMALL, "hidden_size": 32}))


def test_self_play_rollout_length_keeps_mappos_update_size():
    assert self_play_rollout_length(8) == 400  # the paper's 8 games x 400 steps
    assert self_play_rollout_length(64) == 50
    assert self_play_rollout_length(128) == 20  # 25 rounded to a multiple of the 10-step chunks
    assert self_play_rollout_length(1000) == 10


def run(out, seed=0, episodes=12):
    config = TrainConfig(env="smac:3m", agent="mappo", scheme="delta-uniform:delta=0.5", episodes=episodes,
                         num_envs=4, checkpoints=2, seed=seed, agent_settings=SMALL, tensorboard=False)
    return train(config, out)


def rows(path, drop=("seconds",)):
    with open(path) as f:
        return [{k: v for k, v in r.items() if k not in drop} for r in csv.DictReader(f)]


def test_a_self_play_run_trains_saves_reloads_and_repeats(tmp_path):
    a = run(tmp_path / "a")
    assert a.episodes == 12 and a.updates >= 2
    kit = agent_kit("mappo", "smac:3m")
    run_dir = RunDir(tmp_path / "a")
    state = run_dir.load_commit()
    checkpoints = run_dir.committed_menagerie(state, "checkpoints", kit.load_policy)
    menagerie = run_dir.committed_menagerie(state, "menagerie", kit.load_policy)
    assert len(checkpoints) == 2 and len(menagerie) >= 2
    versions = [e.policy.weight_version for e in checkpoints.entries]
    assert versions == sorted(versions) and versions[-1] == a.updates
    final = checkpoints.entries[-1].policy
    saved = state["players"]["learner"]["learner"]["network"]
    for name, x in final.network.state_dict().items():
        assert torch.equal(x, saved[name]), name
    b = run(tmp_path / "b")
    assert (b.episodes, b.updates) == (a.episodes, a.updates)
    for name in ("matches.csv", "metrics.csv"):
        assert rows(tmp_path / "a" / name) == rows(tmp_path / "b" / name), name
    run(tmp_path / "c", seed=1)
    assert rows(tmp_path / "a" / "matches.csv") != rows(tmp_path / "c" / "matches.csv")
    resumed = run(tmp_path / "a")  # a finished run reopens (the learner's state loads) and adds nothing
    assert (resumed.episodes, resumed.updates) == (a.episodes, a.updates)
    assert rows(tmp_path / "a" / "matches.csv") == rows(tmp_path / "b" / "matches.csv")


def test_the_command_line_trains_mappo_under_a_scheme(tmp_path, capsys):
    import yaml

    from selfplay.cli import main

    out = tmp_path / "cli"
    assert main(["train", "--env", "smac:3m(spawns=map)", "--agent", "mappo", "--scheme", "delta-uniform:delta=0.5",
                 "--episodes", "4", "--num-envs", "4", "--checkpoints", "2", "--epochs", "1", "--critic-input", "EP",
                 "--entropy-coef", "0.03", "--gae-lambda", "1", "--critic-learning-rate", "0.002", "--critic-epochs", "3",
                 "--update-precision", "bfloat16", "--out", str(out)]) == 0
    recorded = yaml.safe_load((out / "config.yaml").read_text())
    settings = recorded["resolved_agent_settings"]
    assert (settings["critic_learning_rate"], settings["critic_epochs"]) == (0.002, 3)
    assert (settings["rollout_length"], settings["epochs"], settings["critic_input"]) == (800, 1, "EP")
    assert (settings["entropy_coef"], settings["gae_lambda"]) == (0.03, 1.0)
    assert settings["update_precision"] == "bfloat16"
    assert recorded["env"] == "smac:3m(spawns=map)"
    assert main(["train", "--env", "smac:3m", "--agent", "mappo", "--gae-lambda", "1.5", "--out", str(tmp_path / "g")]) == 2
    assert "gae_lambda must lie in [0, 1], got 1.5" in capsys.readouterr().err
    assert main(["train", "--env", "smac:3m", "--agent", "mappo", "--horizon", "64", "--out", str(tmp_path / "h")]) == 2
    assert "apply to the ppo agents" in capsys.readouterr().err
    assert main(["train", "--env", "rirrps", "--agent", "mappo", "--out", str(tmp_path / "r")]) == 2
    assert "the mappo agent plays SMAC battles" in capsys.readouterr().err


def test_a_self_play_run_takes_update_threads_and_resumes_under_the_other(tmp_path, capsys):
    """``--update-threads`` changes how fast a run goes, not its numbers: a self-play run takes it, resumes
    under the other count (config.yaml then records the new one) and still refuses a setting that matters."""
    import yaml

    from selfplay.cli import main

    out = tmp_path / "run"
    common = ["train", "--env", "smac:3m", "--agent", "mappo", "--num-envs", "2", "--rollout-length", "20",
              "--seed", "0", "--out", str(out)]
    assert main(common + ["--epochs", "1", "--episodes", "2", "--checkpoints", "2", "--update-threads", "1"]) == 0
    assert yaml.safe_load((out / "config.yaml").read_text())["resolved_agent_settings"]["update_threads"] == 1
    assert main(common + ["--epochs", "1", "--episodes", "4"]) == 0  # two more episodes on two threads (the default)
    recorded = yaml.safe_load((out / "config.yaml").read_text())
    assert (recorded["episodes"], recorded["resolved_agent_settings"]["update_threads"]) == (4, 2)
    capsys.readouterr()
    assert main(common + ["--epochs", "2", "--episodes", "4"]) == 2
    assert "another configuration" in capsys.readouterr().err


def test_the_command_line_trains_a_league_of_mappo_players(tmp_path, capsys):
    """``selfplay league --agent mappo``: MAPPO's rollout and loss options reach every player's settings, the
    players train and checkpoint into one menagerie; the MAPPO-only options are refused for another agent."""
    import yaml

    from selfplay.cli import main

    out = tmp_path / "league"
    assert main(["league", "--env", "smac:3m", "--agent", "mappo", "--main", "1", "--main-exploiters", "1",
                 "--league-exploiters", "0", "--steps", "240", "--min-steps", "60", "--max-steps", "120",
                 "--num-envs", "2", "--rollout-length", "20", "--epochs", "1", "--entropy-coef", "0.03",
                 "--gae-lambda", "0.9", "--update-precision", "bfloat16", "--linear-lr-decay", "--matches", "1",
                 "--out", str(out)]) == 0
    recorded = yaml.safe_load((out / "config.yaml").read_text())
    settings = recorded["resolved_agent_settings"]
    assert recorded["agent"] == "mappo"
    assert (settings["rollout_length"], settings["epochs"], settings["entropy_coef"], settings["gae_lambda"],
            settings["update_precision"], settings["linear_lr_decay"]) == (20, 1, 0.03, 0.9, "bfloat16", True)
    with open(out / "metrics.csv") as f:  # the league's progress: a player's learner steps of the step budget
        rows = list(csv.DictReader(f))
    assert len(rows) >= 4 and {r["step"] for r in rows} >= {"40", "80"}
    for row in rows:
        assert float(row["learning_rate"]) == pytest.approx(5e-4 * (1 - int(row["step"]) / 240))
    with open(out / "matches.csv") as f:
        players = {row["player"] for row in csv.DictReader(f)}
    assert players == {"main_0", "main_exploiter_0"}  # both players played their own games
    entries = yaml.safe_load((out / "menagerie" / "index.json").read_text())["entries"]  # JSON is YAML
    # the starting policy, then each player's checkpoint at its max_steps (120 learner steps: 3 updates of 2 x 20)
    assert [(e["step"], e["tags"]["parent"]) for e in entries] == [(0, "main_0"), (120, "main_0"),
                                                                   (120, "main_exploiter_0")]
    capsys.readouterr()
    assert main(["league", "--env", "rirrps", "--agent", "ppo-mlp", "--entropy-coef", "0.1",
                 "--out", str(tmp_path / "ppo")]) == 2
    assert "apply to the mappo agent (--agent mappo), not agent 'ppo-mlp'" in capsys.readouterr().err
    assert main(["league", "--env", "rirrps", "--agent", "ppo-mlp", "--update-precision", "bfloat16",
                 "--out", str(tmp_path / "ppo2")]) == 2
    assert "--attack-head, --magnet-coef, --magnet-interval and --linear-lr-decay apply to the mappo agent (--agent mappo)" in capsys.readouterr().err
    assert main(["compare", "--env", "rirrps", "--agents", "ppo-mlp", "--update-precision", "bfloat16",
                 "--out", str(tmp_path / "cmp")]) == 2
    assert "--attack-head, --magnet-coef, --magnet-interval and --linear-lr-decay apply to the mappo agent (--agents mappo)" in capsys.readouterr().err


def test_compare_gives_mappo_its_own_settings():
    """``selfplay compare --agents mappo``: every run's MAPPO settings, rollout length from the games at once."""
    from selfplay.evaluation.compare import CompareConfig

    config = CompareConfig.preset(quick=True, env="smac:3m")
    config.agents, config.mappo = ["mappo"], {"epochs": 5, "gae_lambda": 0.9, "update_precision": "bfloat16"}
    config.validate()
    (first, *_) = config.train_configs()
    assert first.agent_settings == {"rollout_length": 50, "epochs": 5, "gae_lambda": 0.9,  # 64 games x 50 steps
                                    "update_precision": "bfloat16"}
    assert (first.settings().epochs, first.settings().gae_lambda, first.settings().update_precision) == (
        5, 0.9, "bfloat16")
    config.env = "rirrps"
    with pytest.raises(ValueError, match="the mappo agent plays SMAC battles"):
        config.validate()


@pytest.mark.parametrize("recurrent", [True, False])
def test_stacked_policies_act_as_each_policy_alone(recurrent):
    """A stack of 3 policies on 6 games (policy per game 2, 0, 2, 1, 0, 2) gives each game its own
    policy's logits and greedy actions, step after step of a 3m battle (states carried; without the GRU
    the state stays zero)."""
    from selfplay.agents.mappo.selfplay import stack_policies

    battle = SMACBattle("3m", num_envs=6, seed=1, two_player=False)
    config = mappo_config(recurrent=recurrent)
    policies = [MAPPOSelfPlayLearner.for_battle(battle, 0, config, seed=i).snapshot() for i in range(3)]
    stack = stack_policies(policies)
    index = torch.tensor([2, 0, 2, 1, 0, 2])
    obs = battle.reset()
    start = torch.ones(6, dtype=torch.bool)
    state = stack.initial_state(6)
    alone = [policies[int(i)].initial_state(1) for i in index]
    for _ in range(8):
        mask = battle.action_masks()[0]
        action, state, info = stack.act(obs[0], state, index, mask, start, deterministic=True)
        for g, i in enumerate(index.tolist()):
            a, alone[g], own = policies[i].act(obs[0][g:g + 1], alone[g], mask[g:g + 1], start[g:g + 1],
                                               deterministic=True)
            torch.testing.assert_close(info["logits"][g:g + 1], own["logits"], rtol=1e-4, atol=1e-4)
            assert torch.equal(action[g:g + 1], a)
            torch.testing.assert_close(state[0][g:g + 1], alone[g][0], rtol=1e-4, atol=1e-5)
        obs, _, start, _ = battle.step([action])
    assert bool(state[0].any()) == recurrent
    with pytest.raises(ValueError, match="policy_index must lie in"):
        stack.act(obs[0], None, torch.full((6,), 3), battle.action_masks()[0])


def test_the_self_play_game_loop_gives_mappo_what_the_vs_ai_loop_gives_it():
    """The trainer's loop (``GameRunner`` + ``MAPPOSelfPlayLearner``, the built-in AI bound to seat 1) and
    ``vs_builtin``'s loop (``side_inputs`` + ``MAPPOLearner``) on the same two-player battle, from the same
    weights: every stored input of two rollouts, the bootstrap step and the updated weights are equal
    (docs/results/smac_8m.md, "The self-play path, step by step")."""
    import numpy as np
    from selfplay.agents.mappo import MAPPOLearner
    from selfplay.envs.smac.panel import panel_member

    from selfplay.training.games import GameRunner
    from selfplay.training.vs_builtin import side_inputs

    config = mappo_config(**SMALL)
    battle_p, battle_q = SMACBattle("3m", num_envs=3, seed=5), SMACBattle("3m", num_envs=3, seed=5)
    ai = panel_member("builtin", battle_p, 1)
    panel_member("builtin", battle_q, 1)
    p = MAPPOSelfPlayLearner.for_battle(battle_p, 0, config, seed=3)
    q = MAPPOLearner(p.spec.obs_size, p.spec.state_size, p.spec.n_agents, p.spec.n_actions, config, seed=3)
    runner = GameRunner(battle_p, p, lambda k: [(0, ai)] * k, np.random.default_rng(0), seat=0)
    runner.start()
    obs, start = battle_q.reset(), torch.ones(3, dtype=torch.bool)
    dones = 0
    for _ in range(2):
        while not p.ready():
            runner.step()
        while not q.ready():
            o, s, m = side_inputs(battle_q, config, obs)
            a = q.act(o, s, m, start)
            obs, rewards, start, _ = battle_q.step([a, torch.zeros_like(a)])
            q.record(rewards[0], start)
        _, s, m = side_inputs(battle_q, config, obs)
        assert all(torch.equal(x, y) for x, y in zip(p._bootstrap, (s, m, start)))
        for name, value in q.buffer.items():
            assert torch.equal(p.inner.buffer[name], value), name
        dones += int(q.buffer["dones"].sum())
        p.update(), q.update(s, m, start)
        assert all(torch.equal(x, y) for x, y in zip(p.inner.network.parameters(), q.network.parameters()))
    assert dones > 0  # the rollouts crossed game ends (resets, bootstrap cut)
