"""`--agent alphastar` through the command line: train and compare drive the AlphaStar learner from an
SL checkpoint under any scheme; wrong combinations fail with a clear error."""

import json

import pandas as pd
import pytest
import torch
from selfplay.agents.alphastar.actor import AlphaStarPolicy

from selfplay.cli import main
from selfplay.evaluation.compare import load_checkpoint_policies, slug


@pytest.mark.slow  # about 35 s at a load of 2 on 2 cores
def test_compare_and_train_drive_the_alphastar_agent(tmp_path, sl_checkpoint):
    sl = sl_checkpoint
    out = tmp_path / "cmp"
    assert main(["compare", "--env", "smac:3m", "--agent", "alphastar", "--sl", sl, "--schemes",
                 "naive,delta-uniform:delta=0", "--episodes", "12", "--checkpoints", "2", "--matches", "2",
                 "--num-envs", "4", "--jobs", "1", "--no-embedding", "--out", str(out)]) == 0
    summary = pd.read_csv(out / "evaluation" / "summary.csv")
    assert list(summary["agent"]) == ["alphastar", "alphastar"]
    sl_weights = torch.load(sl)["state_dict"]
    for row in summary.itertuples():  # the runs' checkpoints are AlphaStar policies that start from --sl
        run_dir = out / "runs" / "alphastar" / f"{slug(row.scheme)}-s0"
        ids, policies = load_checkpoint_policies(run_dir)
        assert len(policies) == 2 and all(isinstance(p, AlphaStarPolicy) for p in policies)
        first = policies[0].net.state_dict()  # taken after 6 episodes, before the first update (256 decisions)
        assert all(torch.equal(first[k], v) for k, v in sl_weights.items())
        vs = pd.read_csv(run_dir / "evaluation" / "vs_scripted.csv")  # the summary reports the run's numbers
        assert row.vs_scripted_final == pytest.approx(vs["win_rate_vs_scripted"].iloc[-1], abs=1e-4)
    assert json.loads((out / "compare_config.json").read_text())["alphastar"] == {"sl_checkpoint": sl}
    report = (out / "report.md").read_text()
    assert "AlphaStar settings" in report
    # each run's final checkpoint and Nash mixture met the panel, through the commander (which samples)
    assert summary[["panel_builtin_final", "panel_kiting_nash"]].notna().all().all()
    assert "Against the panel of fixed opponents" in report and "the AlphaStar commander samples" in report

    run = tmp_path / "train"
    assert main(["train", "--env", "smac:3m", "--agent", "alphastar", "--sl", sl, "--episodes", "8",
                 "--checkpoints", "2", "--num-envs", "4", "--out", str(run)]) == 0
    ids, policies = load_checkpoint_policies(run)
    assert len(policies) == 2 and all(isinstance(p, AlphaStarPolicy) for p in policies)
    assert (run / "manifest.json").exists()


def test_alphastar_options_are_checked(capsys, tmp_path):
    sl, out = str(tmp_path / "x.pt"), str(tmp_path / "unused")
    assert main(["league", "--env", "rirrps", "--agent", "alphastar", "--sl", sl, "--out", out]) != 0
    assert "plays SMAC maps" in capsys.readouterr().err
    assert main(["league", "--env", "smac:3m", "--agent", "alphastar", "--sl", sl, "--horizon", "64",
                 "--out", out]) != 0
    assert "PPO settings" in capsys.readouterr().err
    assert not (tmp_path / "unused").exists()
