"""The command line's options come from the config dataclasses: help from the fields' docs, defaults
shown as the commands use them, options not given left to the dataclasses and presets."""

import argparse
import json
import re

import pytest

from selfplay.cli import TRAIN_QUICK, build_parser
from selfplay.cli_options import add_field_options, describe, field_docs, given
from selfplay.evaluation.compare import CompareConfig
from selfplay.training.loop import TrainConfig
from selfplay.utils.io import json_text


def subcommand(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def help_text(name: str) -> str:
    return re.sub(r"\s+", " ", subcommand(name).format_help())


def test_field_docs_read_docstrings_comments_annotations_and_bases():
    docs = field_docs("selfplay.agents.ppo.config", "MultiUnitPPOConfig")
    assert docs["epochs"].doc == "Passes over the batch per update."  # the docstring under the field
    assert docs["minibatch_size"].annotation == "int | None"
    assert "agent_id" in docs and "horizon" in docs  # its own fields and PPOConfig's
    train = field_docs("selfplay.training.loop", "TrainConfig")
    assert train["checkpoints"].doc == (  # the line's comment
        "evaluation checkpoints, evenly spaced over the run (a resume to more episodes keeps the spacing)")
    with pytest.raises(ValueError, match="has no field 'nope'"):
        add_field_options(argparse.ArgumentParser(), "selfplay.training.loop", "TrainConfig", ["nope"], str)
    with pytest.raises(ValueError, match="TrainConfig.device has no documentation"):
        add_field_options(argparse.ArgumentParser(), "selfplay.training.loop", "TrainConfig", ["device"], str)


def test_describe_lists_a_value_where_it_changes():
    assert describe([("", 3000), ("--quick", 600), ("on SMAC", 6000), ("--quick on SMAC", 800)]) == \
        "3000; --quick: 600; on SMAC: 6000; --quick on SMAC: 800"
    assert describe([("", 10), ("--quick", 10), ("on SMAC", 10)]) == "10"
    assert describe([("", [0, 1]), ("--quick", [0])]) == "0,1; --quick: 0"


@pytest.mark.parametrize("name", ["train", "evaluate", "compare", "league", "sl", "omega"])
def test_help_never_prints_a_placeholder_default(name):
    text = help_text(name)
    assert "(default: None)" not in text and "SUPPRESS" not in text


def test_help_states_the_defaults_the_commands_use():
    compare = help_text("compare")
    full, quick = CompareConfig.preset(), CompareConfig.preset(quick=True)
    # compare trains with the preset's PPO horizon (512), not PPOConfig's 2048
    assert f"(default: {full.ppo['horizon']}; --quick: {quick.ppo['horizon']}; on SMAC: 3200)" in compare
    assert f"(default: {full.episodes}; --quick: {quick.episodes}; on SMAC: 6000; --quick on SMAC: 800)" in compare
    train = help_text("train")
    assert f"(default: {TrainConfig.episodes}; --quick: {TRAIN_QUICK['episodes']})" in train
    assert "(default: 2048; --quick on matrix games: 256; on SMAC: 3200)" in train
    assert "(default: 25; --quick: 5)" in help_text("evaluate")


def test_options_not_given_are_left_to_the_config():
    parser = build_parser()
    args = parser.parse_args(["train", "--out", "x"])
    assert given(args, ["episodes", "env", "seed", "progress"]) == {}
    args = parser.parse_args(["train", "--out", "x", "--episodes", "0", "--progress", "--seed", "3"])
    assert given(args, ["episodes", "env", "seed", "progress"]) == {"episodes": 0, "seed": 3, "progress": True}
    args = parser.parse_args(["compare", "--out", "x", "--seeds", "0,1,2", "--agent", "ppo-rnn",
                              "--schemes", "naive,psro:window=10,threshold=0.5"])
    assert given(args, ["seeds", "agents", "schemes"]) == {"seeds": [0, 1, 2], "agents": ["ppo-rnn"],
                                                           "schemes": ["naive", "psro:window=10,threshold=0.5"]}


def test_json_views_hold_one_entry_per_line_and_the_same_data():
    data = {"next_id": 3, "entries": [{"id": i, "tags": {"episode": i}, "file": None} for i in range(3)],
            "empty": [], "keys": {1: "a"}}
    text = json_text(data)
    assert json.loads(text) == json.loads(json.dumps(data))
    lines = text.splitlines()
    assert lines[3] == "  " + json.dumps(data["entries"][0]) + ","  # one line per entry, indented a space a level
    assert ' "keys": {"1": "a"}' in lines  # dicts with keys other than strings: one line


@pytest.mark.parametrize("extra, steps", [(["--quick"], 30_000), ([], 200_000), (["--quick", "--steps", "64"], 64)])
def test_league_runs_the_steps_its_help_states(tmp_path, monkeypatch, extra, steps):
    """`league` without --steps takes the per-mode default --help states (it once took the config's 100 000)."""
    from selfplay import cli
    from selfplay.evaluation import league

    seen = {}
    monkeypatch.setattr(league, "train_league", lambda config, out: seen.setdefault("config", config) and {})
    assert cli.main(["league", *extra, "--out", str(tmp_path / "run")]) == 0
    config = seen["config"]
    assert (config.steps, config.min_steps, config.max_steps) == (steps, steps // 8, steps // 4)
    assert f"(default: 200000; --quick: 30000; alphastar: 400000; alphastar --quick: {cli.LEAGUE_STEPS[(True, True)]})" \
        in " ".join(help_text("league").split())
