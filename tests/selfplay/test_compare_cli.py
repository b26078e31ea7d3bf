import json
import subprocess
import sys
from pathlib import Path

import numpy as np
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
    for row in a.itertuples():  # the summary's numbers are those of each run's winrate matrix
        W = np.load(tmp_path / "a" / "runs" / "ppo-mlp" / f"{slug(row.scheme)}-s0" / "evaluation" / "winrate.npz")["W"]
        below = W[np.tril_indices(len(W), -1)]
        assert len(W) == 3 and row.lower_triangle_winrate == pytest.approx(below.mean(), abs=1e-6)
        assert row.final_vs_first == pytest.approx(W[-1, 0], abs=1e-6)
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


def test_cli_help_and_errors(capsys, tmp_path):
    out = subprocess.run([sys.executable, "-m", "selfplay", "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("train", "evaluate", "compare", "omega"):
        assert command in out
    assert main(["omega", "delta-uniform:delta=1", "--size", "4"]) == 0
    assert capsys.readouterr().out.split() == ["3", "1.000000"]
    assert main(["train", "--scheme", "delta-uniform:delta=7", "--out", str(tmp_path / "never")]) == 2
    assert "delta must be a number in [0, 1]" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()  # refused before anything was written


def test_compare_on_smac_reports_win_rates_against_the_scripted_ai(tmp_path, figures_not_rendered):
    cfg = CompareConfig.preset(quick=True, env="smac:3m")
    cfg.schemes, cfg.episodes, cfg.checkpoints, cfg.matches, cfg.num_envs = ["naive", "psro"], 96, 2, 2, 32
    cfg.ppo, cfg.jobs = {"horizon": 640, "epochs": 2}, 1
    compare(cfg, tmp_path)
    summary = pd.read_csv(tmp_path / "evaluation" / "summary.csv")
    assert list(summary["scheme"]) == ["naive", "psro"]
    vs = pd.read_csv(tmp_path / "runs" / "ppo-mlp" / "naive-s0" / "evaluation" / "vs_scripted.csv")
    assert list(vs.columns) == ["checkpoint", "win_rate_vs_scripted", "won", "timed_out"] and len(vs) == 2
    np.testing.assert_allclose(vs["win_rate_vs_scripted"], vs["won"] + 0.5 * vs["timed_out"], atol=1e-4)
    naive = summary[summary["scheme"] == "naive"].iloc[0]  # the summary's numbers are the run's own
    assert naive["vs_scripted_final"] == pytest.approx(vs["win_rate_vs_scripted"].iloc[-1], abs=1e-4)
    assert naive["vs_scripted_first"] == pytest.approx(vs["win_rate_vs_scripted"].iloc[0], abs=1e-4)
    report = (tmp_path / "report.md").read_text()
    assert "vs_scripted_final" in report
    head = report.split("## Summary")[0]  # the answer and how the vs-AI numbers were made come first
    assert "## The answer: the best scheme per metric" in head and "- **`vs_scripted_final`** (ppo-mlp" in head
    assert "plays 100 games against the map's built-in (scripted) AI" in head and "counts ½" in head
    assert summary["vs_scripted_best"].between(summary["vs_scripted_final"], 1).all()
    agg = pd.read_csv(tmp_path / "evaluation" / "aggregate.csv")
    assert {"vs_scripted_first", "vs_scripted_final", "vs_scripted_best"} <= set(agg["metric"])
    curves = pd.read_csv(tmp_path / "evaluation" / "curves.csv")
    naive = curves[(curves["scheme"] == "naive") & (curves["curve"] == "win_rate_vs_scripted")]
    assert naive["mean"].tolist() == pytest.approx(vs["win_rate_vs_scripted"].tolist())  # one seed: the run's curve
    panel = pd.read_csv(tmp_path / "runs" / "ppo-mlp" / "naive-s0" / "evaluation" / "panel.csv")
    assert len(panel) == 10 and set(panel["policy"]) == {"final", "nash"}  # 5 members x (final, mixture)
    row = summary[summary["scheme"] == "naive"].iloc[0]
    builtin = panel[(panel["policy"] == "final") & (panel["member"] == "builtin")].iloc[0]
    assert row["panel_builtin_final"] == pytest.approx(builtin["mean"])
    report = (tmp_path / "report.md").read_text()
    assert "## Against the panel of fixed opponents" in report and "Winrate-matrix verdict" in report
    run_dir = tmp_path / "runs" / "ppo-mlp" / "psro-s0"
    assert main(["evaluate", str(run_dir), "--matches", "1", "--panel", "--panel-games", "2",
                 "--panel-seeds", "2"]) == 0
    panel = pd.read_csv(run_dir / "evaluation" / "panel.csv")
    assert set(panel["seeds"]) == {2} and set(panel["games_per_seed"]) == {2}
    assert main(["evaluate", str(run_dir), "--panel", "--panel-games", "3"]) == 2


def test_sl_and_league_commands_validate_their_environment(capsys, tmp_path):
    assert main(["sl", "--env", "rirrps", "--out", str(tmp_path / "never")]) == 2
    assert "smac:MAP" in capsys.readouterr().err
    assert main(["league", "--env", "smac:nowhere", "--out", str(tmp_path / "never")]) == 2
    assert "unknown SMAC map" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()


def test_compare_cli_over_seeds_with_confidence_and_without_cross_seed_rpp(tmp_path, capsys, figures_not_rendered):
    out = tmp_path / "cmp"
    assert main(["compare", "--schemes", "naive,psro", "--seeds", "0,1", "--episodes", "64", "--checkpoints", "2",
                 "--matches", "2", "--num-envs", "32", "--horizon", "64", "--epochs", "1", "--jobs", "1",
                 "--no-embedding", "--confidence", "0.9", "--no-cross-seed-rpp", "--out", str(out)]) == 0
    agg = pd.read_csv(out / "evaluation" / "aggregate.csv")
    assert (agg["n_seeds"] == 2).all()
    rpp = pd.read_csv(out / "evaluation" / "rpp_intervals.csv")
    assert set(rpp["pairing"]) == {"same-seed"}
    assert len(pd.read_csv(out / "evaluation" / "rpp_values_ppo-mlp.csv")) == 2 * 2  # 2 seeds, both orientations
    report = (out / "report.md").read_text()
    assert "(2 seeds, 90% CIs)" in report
    answer = report.split("## The answer: the best scheme per metric")[1].split("## Summary")[0]
    for metric in ("lower_triangle_winrate", "nash_support", "final_vs_first"):
        (bullet,) = [line for line in answer.splitlines() if line.startswith(f"- **`{metric}`** (ppo-mlp")]
        assert "is best, mean" in bullet or "no single best scheme" in bullet  # a best scheme, or a tie named
    assert "significant at" not in report and "90% stratified-bootstrap interval excludes chance" in answer
    assert main(["compare", "--seeds", "0,0", "--out", str(tmp_path / "never")]) == 2
    assert "seeds must not repeat" in capsys.readouterr().err


def test_tsne_fits_started_beside_the_evaluation_give_the_same_embedding(tmp_path):
    """With two jobs the t-SNE fits run in background processes from the end of training on; each
    seed's embedding is the fit of its inputs, exactly as fitted in this process."""
    from selfplay.analysis.embedding import embed_runs

    from selfplay.evaluation.report import embedding_inputs

    cfg = tiny(seeds=[0, 1], jobs=2, schemes=["naive"])
    compare(cfg, tmp_path)
    timings = json.loads((tmp_path / "evaluation" / "timings.json").read_text())
    assert "embedding_wait" in timings and "embedding" not in timings
    for seed in (0, 1):
        basis, runs = embedding_inputs(cfg, cfg.run_specs(tmp_path), "ppo-mlp", seed)
        basis_points, run_points = embed_runs(basis, {"0": runs["naive"]}, seed=seed)
        saved = np.load(tmp_path / "runs" / "ppo-mlp" / f"embedding_s{seed}.npz")
        assert np.array_equal(saved["run/naive"], run_points["0"])
        assert all(np.array_equal(saved[f"basis/{k}"], v) for k, v in basis_points.items())


def test_recurrent_agents_runs_start_first_and_keep_their_order():
    from selfplay.evaluation.compare import slowest_first

    agents = ["ppo-mlp", "ppo-mlp", "ppo-rnn", "ppo-mlp", "ppo-rnn", "mappo"]
    assert slowest_first(agents) == [2, 4, 5, 0, 1, 3]
    assert slowest_first(["ppo-mlp"] * 3) == [0, 1, 2]


def test_runs_started_in_another_order_give_their_results_in_the_runs_order():
    from selfplay.evaluation.compare import map_in_order

    started = []

    def recording_map(function, tasks, jobs):
        started.extend(tasks)
        return [function(t) for t in tasks]

    results = map_in_order(recording_map, lambda t: t * 10, [0, 1, 2, 3], [2, 3, 0, 1], jobs=2)
    assert started == [2, 3, 0, 1] and results == [0, 10, 20, 30]


def test_a_comparison_grows_by_a_scheme_and_a_seed_and_reports_what_a_fresh_one_does(tmp_path, monkeypatch,
                                                                                     figures_not_rendered):
    """Adding a scheme and a seed to a finished comparison trains only the new runs, evaluates only them and
    plays only the new population pairs, and its tables are those of a fresh comparison of everything;
    leaving a scheme out, or changing another setting, is refused before anything is written."""
    import selfplay.evaluation.compare as compare_module
    import selfplay.evaluation.runs as runs_module

    grown, fresh = tmp_path / "grown", tmp_path / "fresh"
    compare(tiny(embedding=False), grown)
    old = {p.name: (p / "manifest.json").read_bytes() for p in (grown / "runs" / "ppo-mlp").iterdir()}
    assert sorted(old) == ["delta-limit-uniform-delta-0-s0", "naive-s0"]

    evaluated, played = [], []
    evaluate, pairs = compare_module._evaluate_locked, runs_module.rpp_pairs
    monkeypatch.setattr(compare_module, "_evaluate_locked", lambda run, *a: evaluated.append(run.root.name) or evaluate(run, *a))
    monkeypatch.setattr(runs_module, "rpp_pairs", lambda tasks: played.extend(tasks) or pairs(tasks))
    bigger = dict(embedding=False, schemes=["naive", "delta-limit-uniform:delta=0", "psro"], seeds=[0, 1])
    compare(tiny(**bigger), grown)
    for name, manifest in old.items():  # the first runs were not trained again
        assert (grown / "runs" / "ppo-mlp" / name / "manifest.json").read_bytes() == manifest
    assert sorted(evaluated) == ["delta-limit-uniform-delta-0-s1", "naive-s1", "psro-s0", "psro-s1"]
    pair_paths = {(Path(t[2]).name, Path(t[3]).name) for t in played}
    assert ("naive-s0", "delta-limit-uniform-delta-0-s0") not in pair_paths  # played by the first pass
    assert len(played) == 3 * 4 - 1  # 3 scheme pairs × 4 seed pairs (cross-seed), less the one already played
    monkeypatch.undo()

    compare(tiny(**bigger), fresh)
    for name in ("summary.csv", "aggregate.csv", "improvement.csv", "rpp_values_ppo-mlp.csv", "rpp_intervals.csv"):
        a, b = pd.read_csv(grown / "evaluation" / name), pd.read_csv(fresh / "evaluation" / name)
        if name == "summary.csv":
            a, b = a.drop(columns="seconds"), b.drop(columns="seconds")
        pd.testing.assert_frame_equal(a, b)

    config_before = (grown / "compare_config.json").read_bytes()
    with pytest.raises(ValueError, match="also covers schemes psro.*may add agents, schemes and seeds but not leave"):
        compare(tiny(embedding=False, schemes=["naive", "delta-limit-uniform:delta=0"], seeds=[0, 1]), grown)
    with pytest.raises(ValueError, match="matches: 4 in the directory, 5 now"):
        compare(tiny(**bigger, matches=5), grown)
    assert (grown / "compare_config.json").read_bytes() == config_before
