"""`--agent alphastar` through the command line: train and compare drive the AlphaStar learner from an
SL checkpoint under any scheme; wrong combinations fail with a clear error."""

import json

import pandas as pd

from selfplay.agents.alphastar.actor import AlphaStarPolicy
from selfplay.cli import main
from selfplay.evaluation.compare import load_checkpoint_policies

from .test_league_alphastar import sl_checkpoint


def test_compare_and_train_drive_the_alphastar_agent(tmp_path):
    sl = sl_checkpoint(tmp_path / "sl.pt")
    out = tmp_path / "cmp"
    assert main(["compare", "--env", "smac:3m", "--agent", "alphastar", "--sl", sl, "--schemes",
                 "naive,delta-uniform:delta=0", "--episodes", "12", "--checkpoints", "2", "--matches", "2",
                 "--num-envs", "4", "--jobs", "1", "--no-embedding", "--out", str(out)]) == 0
    summary = pd.read_csv(out / "evaluation" / "summary.csv")
    assert list(summary["agent"]) == ["alphastar", "alphastar"]
    for scheme in ("naive-s0", "delta-uniform-delta-0-s0"):  # the runs' checkpoints are AlphaStar policies
        ids, policies = load_checkpoint_policies(out / "runs" / "alphastar" / scheme)
        assert len(policies) == 2 and all(isinstance(p, AlphaStarPolicy) for p in policies)
    assert ((summary["vs_scripted_final"] >= 0) & (summary["vs_scripted_final"] <= 1)).all()
    assert json.loads((out / "compare_config.json").read_text())["alphastar"] == {"sl_checkpoint": sl}
    assert "AlphaStar settings" in (out / "report.md").read_text()

    run = tmp_path / "train"
    assert main(["train", "--env", "smac:3m", "--agent", "alphastar", "--sl", sl, "--episodes", "8",
                 "--checkpoints", "2", "--num-envs", "4", "--out", str(run)]) == 0
    ids, policies = load_checkpoint_policies(run)
    assert len(policies) == 2 and all(isinstance(p, AlphaStarPolicy) for p in policies)
    assert (run / "state.pt").exists()


def test_alphastar_options_are_checked(capsys):
    assert main(["league", "--env", "rirrps", "--agent", "alphastar", "--sl", "x.pt", "--out", "unused"]) != 0
    assert "plays SMAC maps" in capsys.readouterr().err
    assert main(["league", "--env", "smac:3m", "--agent", "alphastar", "--sl", "x.pt", "--horizon", "64",
                 "--out", "unused"]) != 0
    assert "PPO settings" in capsys.readouterr().err
