"""The command line documents itself: every option has help, and --help names what the options take."""

import argparse
import re

import pytest
import yaml

from selfplay.cli import build_parser, main


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_option_has_help_and_the_help_lists_the_names(name):
    parser = subcommands()[name]
    missing = [a.dest for a in parser._actions if not isinstance(a, argparse._HelpAction) and not a.help]
    assert not missing, f"selfplay {name}: options without help: {missing}"
    text = re.sub(r"-\s+", "-", parser.format_help())  # argparse wraps lines at hyphens
    for word in ("rirrps", "smac:MAP", "3s5z", "openspiel:GAME", "kuhn_poker", "ppo-rnn", "alphastar",
                 "delta-limit-uniform"):
        assert word in text


def test_the_budget_and_seed_options_share_names_across_commands():
    commands = subcommands()
    for name in ("train", "compare", "league"):
        opts = {o for a in commands[name]._actions for o in a.option_strings}
        assert {"--env", "--agent", "--rnn-cell", "--num-envs", "--out", "--horizon"} <= opts, name
    assert "--agents" in {o for a in commands["compare"]._actions for o in a.option_strings}
    for name in ("train", "evaluate", "compare", "league", "sl"):
        assert "--quick" in {o for a in commands[name]._actions for o in a.option_strings}, name


def test_rnn_cell_is_a_named_option_of_ppo_rnn(tmp_path, capsys):
    args = ["train", "--episodes", "16", "--num-envs", "8", "--checkpoints", "1", "--horizon", "64",
            "--minibatch-size", "32", "--epochs", "1"]
    assert main(args + ["--agent", "ppo-mlp", "--rnn-cell", "gru", "--out", str(tmp_path / "a")]) == 2
    assert "rnn_cell applies to the ppo-rnn agent" in capsys.readouterr().err
    assert main(args + ["--agent", "ppo-rnn", "--rnn-cell", "gru", "--out", str(tmp_path / "b")]) == 2
    assert "rnn_cell on 'rirrps' must be one of ['lstm']" in capsys.readouterr().err
    assert main(args + ["--agent", "ppo-rnn", "--rnn-cell", "lstm", "--out", str(tmp_path / "c")]) == 0
    config = yaml.safe_load((tmp_path / "c" / "config.yaml").read_text())
    assert config["resolved_agent_settings"]["body"] == "lstm"


def test_train_and_evaluate_quick(tmp_path):
    out = tmp_path / "run"
    assert main(["train", "--quick", "--num-envs", "32", "--out", str(out)]) == 0
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert (config["episodes"], config["checkpoints"], config["agent_settings"]) == (600, 8, {"horizon": 256})
    assert main(["evaluate", "--quick", str(out)]) == 0
