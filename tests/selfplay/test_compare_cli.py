import subprocess
import sys

import pandas as pd
import pytest

from selfplay.cli import _csv, main
from selfplay.evaluation.compare import CompareConfig, compare, slug


def tiny(**kw):
    cfg = CompareConfig(schemes=["naive", "delta-limit-uniform:delta=0"], episodes=160, checkpoints=3, matches=4,
                        num_envs=32, ppo={"horizon": 160, "epochs": 2}, embed_per_run=100, basis_episodes=50, jobs=1)
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


def test_compare_writes_summary_report_and_figures_and_is_reproducible(tmp_path):
    report = compare(tiny(), tmp_path / "a")
    compare(tiny(), tmp_path / "b")
    a = pd.read_csv(tmp_path / "a" / "evaluation" / "summary.csv")
    b = pd.read_csv(tmp_path / "b" / "evaluation" / "summary.csv")
    assert list(a.columns[:7]) == ["scheme", "agent", "seed", "lower_triangle_winrate", "nash_support", "episodes", "seconds"]
    assert list(a["scheme"]) == ["naive", "delta-limit-uniform:delta=0"]
    pd.testing.assert_frame_equal(a.drop(columns="seconds"), b.drop(columns="seconds"))
    assert ((a["lower_triangle_winrate"] >= 0) & (a["lower_triangle_winrate"] <= 1)).all()
    text = report.read_text()
    assert "| naive" in text and "![" in text
    figures = {p.name for p in (tmp_path / "a" / "figures").iterdir()}
    assert f"winrate_ppo-mlp_{slug('naive')}_s0.png" in figures and "rpp_ppo-mlp.png" in figures
    assert "embedding_ppo-mlp.png" in figures
    rpp = pd.read_csv(tmp_path / "a" / "evaluation" / "rpp_ppo-mlp.csv", index_col=0)
    assert rpp.values.diagonal().tolist() == [0.0, 0.0]
    assert rpp.values[0, 1] == pytest.approx(-rpp.values[1, 0])


def test_scheme_list_parsing_keeps_parameters_together():
    assert _csv("naive,psro:solver=uniform,threshold=0.6,delta-uniform:delta=0.5") == [
        "naive", "psro:solver=uniform,threshold=0.6", "delta-uniform:delta=0.5"]


def test_cli_help_and_errors(capsys):
    out = subprocess.run([sys.executable, "-m", "selfplay", "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("train", "evaluate", "compare", "omega"):
        assert command in out
    assert main(["omega", "delta-uniform:delta=1", "--size", "4"]) == 0
    assert capsys.readouterr().out.split() == ["3", "1.000000"]
    assert main(["train", "--scheme", "delta-uniform:delta=7", "--out", "/tmp/never"]) == 2
    assert "delta must be a number in [0, 1]" in capsys.readouterr().err


def test_compare_on_smac_reports_win_rates_against_the_scripted_ai(tmp_path):
    cfg = CompareConfig.preset(quick=True, env="smac:3m")
    cfg.schemes, cfg.episodes, cfg.checkpoints, cfg.matches, cfg.num_envs = ["naive", "psro"], 96, 2, 2, 32
    cfg.ppo, cfg.jobs = {"horizon": 640, "epochs": 2}, 1
    compare(cfg, tmp_path)
    summary = pd.read_csv(tmp_path / "evaluation" / "summary.csv")
    assert list(summary["scheme"]) == ["naive", "psro"]
    assert summary["vs_scripted_final"].between(0, 1).all()
    vs = pd.read_csv(tmp_path / "runs" / "ppo-mlp" / "naive-s0" / "evaluation" / "vs_scripted.csv")
    assert list(vs.columns) == ["checkpoint", "win_rate_vs_scripted"] and len(vs) == 2
    assert "vs_scripted_final" in (tmp_path / "report.md").read_text()


def test_sl_and_league_commands_validate_their_environment(capsys):
    assert main(["sl", "--env", "rirrps", "--out", "/tmp/never"]) == 2
    assert "smac:MAP" in capsys.readouterr().err
    assert main(["league", "--env", "smac:nowhere", "--out", "/tmp/never"]) == 2
    assert "unknown SMAC map" in capsys.readouterr().err
