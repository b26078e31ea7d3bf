"""A run against the built-in AI keeps the policy each test evaluation played, and those checkpoints are
what `selfplay replay` and `selfplay evaluate RUN --panel` read."""

import csv
import json

import pytest
import torch
from selfplay.agents.mappo.selfplay import MAPPOFrozenPolicy, load_policy

from selfplay.evaluation.vs_ai import vs_ai_checkpoints
from selfplay.training.vs_builtin import VsAIConfig, train_vs_builtin
from tests.mappo.test_mappo_learner import SMALL

SETTINGS = {**SMALL, "eval_interval": 80, "eval_episodes": 2}


def train(out, env="smac:3m", steps=160, **settings):
    return train_vs_builtin(VsAIConfig(env=env, steps=steps, seed=1, agent_settings={**SETTINGS, **settings}), out,
                            log=lambda s: None)


def test_each_evaluation_keeps_the_policy_it_played_and_a_resume_adds_to_them(tmp_path):
    out = tmp_path / "run"
    train(out)
    index = json.loads((out / "checkpoints" / "index.json").read_text())
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(e["step"], e["tags"]["updates"], e["tags"]["test_win_rate"]) for e in index["entries"]] == \
        [(int(r["step"]), int(r["updates"]), float(r["test_win_rate"])) for r in rows] == \
        [(0, 0, pytest.approx(float(rows[0]["test_win_rate"]))), (80, 1, pytest.approx(float(rows[1]["test_win_rate"]))),
         (160, 2, pytest.approx(float(rows[2]["test_win_rate"])))]
    first = load_policy(out / "checkpoints" / "policy_000000.pt")
    last = load_policy(out / "checkpoints" / "policy_000002.pt")
    assert isinstance(last, MAPPOFrozenPolicy) and last.weight_version == 2 and first.weight_version == 0
    state = torch.load(out / "checkpoints" / "policy_000000.pt", weights_only=True)  # data, no code
    assert "weights" in state
    assert any(not torch.equal(a, b) for a, b in zip(first.network.parameters(), last.network.parameters()))
    before = (out / "checkpoints" / "policy_000002.pt").read_bytes()
    train(out, steps=240)  # resumed: one more evaluation, the committed files untouched
    entries = json.loads((out / "checkpoints" / "index.json").read_text())["entries"]
    assert [e["step"] for e in entries] == [0, 80, 160, 240]
    assert (out / "checkpoints" / "policy_000002.pt").read_bytes() == before


def test_an_open_loop_run_keeps_none_and_says_why(tmp_path):
    from selfplay.training.rundir import RunDir, open_committed

    out = tmp_path / "open"
    train(out, steps=80, open_loop=True)
    assert not (out / "checkpoints").exists()
    run, state, kit = open_committed(RunDir(out, kind="vs-ai"))
    assert "menageries" not in state
    with pytest.raises(ValueError, match="open-loop control"):
        vs_ai_checkpoints(run, state, kit)
    state["config"]["resolved_agent_settings"]["open_loop"] = False  # as a run made before checkpoints were kept
    with pytest.raises(ValueError, match="before runs against the AI kept"):
        vs_ai_checkpoints(run, state, kit)


def test_the_panel_plays_the_last_checkpoint_and_the_command_line_routes_to_it(tmp_path, capsys):
    from selfplay.cli import main

    out = tmp_path / "run"
    train(out)
    assert main(["evaluate", str(out)]) == 2
    assert "pass --panel" in capsys.readouterr().err
    assert main(["evaluate", str(out), "--panel", "--matches", "2"]) == 2
    assert "--matches" in capsys.readouterr().err
    assert main(["evaluate", str(out), "--panel", "--panel-games", "2", "--panel-seeds", "1"]) == 0
    summary = json.loads((out / "evaluation" / "summary.json").read_text())
    members = ("builtin", "heuristic", "kiting", "focus_weakest", "regroup")
    assert set(summary) == {f"panel_{m}_final" for m in members} | {"checkpoint", "checkpoint_step"}
    assert (summary["checkpoint"], summary["checkpoint_step"]) == (2, 160)
    with open(out / "evaluation" / "panel.csv") as f:
        assert [r["member"] for r in csv.DictReader(f)] == list(members)
    assert "| final |" in capsys.readouterr().out


def test_on_a_map_with_unequal_sides_the_panel_is_the_builtin_ai_alone(tmp_path):
    from selfplay.evaluation.vs_ai import evaluate_vs_ai_run

    out = tmp_path / "run"
    train(out, env="smac:2m_vs_1z", steps=80)
    summary = evaluate_vs_ai_run(out, games=3, seeds=1)
    assert set(summary) == {"panel_builtin_final", "checkpoint", "checkpoint_step"}
    assert summary["panel_builtin_final"] in (0.0, 1 / 3, 2 / 3, 1.0)


def test_a_replay_plays_a_checkpoint_of_the_run(tmp_path):
    from selfplay.evaluation.replay import load_checkpoint, play_replay

    out = tmp_path / "run"
    train(out)
    assert load_checkpoint(f"{out}@1", "smac:3m").weight_version == 1
    with pytest.raises(ValueError, match=r"must be one of \[0, 1, 2\]"):
        load_checkpoint(f"{out}@7", "smac:3m")
    result = play_replay("smac:3m", str(out), "panel:builtin", tmp_path / "game.gif", seed=0, scale=4)
    assert result.path.is_file() and result.steps > 0


def test_on_a_smacv2_scenario_with_equal_teams_the_run_meets_the_whole_panel(tmp_path):
    """A run trained against the AI on protoss_5_vs_5 can hold either seat of the scenario's two-player
    battle, so its last checkpoint plays every member (the scripts reading each game's draw)."""
    from selfplay.evaluation.vs_ai import evaluate_vs_ai_run

    out = tmp_path / "run"
    train(out, env="smacv2:protoss_5_vs_5", steps=80)
    summary = evaluate_vs_ai_run(out, games=2, seeds=1)
    members = ("builtin", "heuristic", "kiting", "focus_weakest", "regroup")
    assert set(summary) == {f"panel_{m}_final" for m in members} | {"checkpoint", "checkpoint_step"}
    assert all(summary[f"panel_{m}_final"] in (0.0, 0.5, 1.0) for m in members)
