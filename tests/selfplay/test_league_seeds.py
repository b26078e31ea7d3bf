"""A league study over seeds: each run's evaluated checkpoints (``evaluation/checkpoints.csv``) read
back per player (``league_seed_rows``), then per player type and seed and over seeds
(``benchmarks/league_seeds.py``), on hand-made runs whose answers are worked out by hand."""

import math

import pandas as pd
import pytest

from selfplay.evaluation.league import league_seed_rows

ROWS = {  # seed -> (player, kind, step, final, vs_start, vs_scripted) in evaluation order
    0: [("main_0", "main", 0, False, 0.5, 0.2), ("league_exploiter_0", "league_exploiter", 100, False, 0.6, 0.9),
        ("league_exploiter_1", "league_exploiter", 100, False, 0.4, 0.5), ("main_0", "main", 100, False, 0.7, 0.8),
        ("main_0", "main", 150, True, 0.75, 0.6)],
    1: [("main_0", "main", 0, False, 0.5, 0.4), ("league_exploiter_0", "league_exploiter", 100, False, 0.3, 0.1),
        ("league_exploiter_1", "league_exploiter", 100, False, 0.5, 0.3), ("main_0", "main", 100, False, 0.9, 1.0)],
}


def make_run(root, seed):
    run = root / f"run{seed}"
    (run / "evaluation").mkdir(parents=True)
    (run / "config.yaml").write_text(f"mode: league\nenv: smac:3m\nagent: alphastar\nleague: league:main=1\nseed: {seed}\n")
    table = pd.DataFrame(ROWS[seed], columns=["player", "kind", "step", "final", "vs_start", "vs_scripted"])
    table.to_csv(run / "evaluation" / "checkpoints.csv", index=False)
    return run


def test_each_player_reads_its_last_policy_and_best_checkpoint(tmp_path):
    rows = league_seed_rows([make_run(tmp_path, 0), make_run(tmp_path, 1)]).set_index(["seed", "player"])
    main0 = rows.loc[(0, "main_0")]
    assert (main0["step"], main0["last_vs_scripted"], main0["best_vs_scripted"], main0["last_vs_start"]) == (150, 0.6, 0.8, 0.75)
    main1 = rows.loc[(1, "main_0")]
    assert (main1["last_vs_scripted"], main1["best_vs_scripted"]) == (1.0, 1.0)
    assert rows.loc[(0, "league_exploiter_1"), "best_vs_scripted"] == 0.5
    assert len(rows) == 6


def test_a_run_not_evaluated_is_named(tmp_path):
    run = tmp_path / "fresh"
    run.mkdir()
    with pytest.raises(FileNotFoundError, match="run_dirs: .*fresh has no evaluation/checkpoints.csv"):
        league_seed_rows([run])


def test_per_seed_means_over_a_type_and_intervals_over_seeds(tmp_path, load_benchmark):
    bench = load_benchmark("league_seeds")
    table = bench.per_seed(league_seed_rows([make_run(tmp_path, 0), make_run(tmp_path, 1)]))
    exploiters = table[table["kind"] == "league_exploiter"].set_index("seed")
    assert exploiters.loc[0, "last_vs_scripted"] == pytest.approx(0.7)  # (0.9 + 0.5) / 2
    assert exploiters.loc[1, "last_vs_scripted"] == pytest.approx(0.2)
    summary = bench.over_seeds(table).set_index(["kind", "measure"])
    main = summary.loc[("main", "last_vs_scripted")]
    assert main["seeds"] == 2 and main["values"] == "0.60 1.00" and main["mean"] == pytest.approx(0.8)
    assert main["ci_low"] <= 0.8 <= main["ci_high"] and 0.6 <= main["ci_low"] and main["ci_high"] <= 1.0
    one = bench.over_seeds(table[table["seed"] == 0]).set_index(["kind", "measure"]).loc[("main", "best_vs_scripted")]
    assert one["mean"] == 0.8 and math.isnan(one["ci_low"]) and "one seed" in one["note"]


def test_a_linked_table_is_refused_as_the_run_directories_are(tmp_path):
    from selfplay.training.rundir_paths import RunDirError

    run = make_run(tmp_path, 0)
    outside = tmp_path / "elsewhere.csv"
    (run / "evaluation" / "checkpoints.csv").rename(outside)
    (run / "evaluation" / "checkpoints.csv").symlink_to(outside)
    with pytest.raises(RunDirError):
        league_seed_rows([run])


def test_panel_rates_are_read_per_seed_and_summed_up_over_seeds(tmp_path, load_benchmark):
    """``league_panel_rows`` reads each run's ``panel_*`` rates from its summary (a run evaluated without a
    panel gives no row); ``panel_over_seeds`` gives the seeds' values, mean and interval per column."""
    import json

    from selfplay.evaluation.league import league_panel_rows

    runs = [make_run(tmp_path, 0), make_run(tmp_path, 1)]
    for run, rate in zip(runs, (0.25, 0.75)):
        (run / "evaluation" / "summary.json").write_text(json.dumps({"historicals": 3, "panel_builtin_final": rate,
                                                                     "panel_builtin_nash": 1 - rate}))
    bare = make_run(tmp_path / "old", 0)  # no summary.json: evaluated before the panel
    rows = league_panel_rows(runs + [bare])
    assert rows[["seed", "panel_builtin_final", "panel_builtin_nash"]].values.tolist() == [[0, 0.25, 0.75], [1, 0.75, 0.25]]
    summary = load_benchmark("league_seeds").panel_over_seeds(rows).set_index("measure")
    final = summary.loc["panel_builtin_final"]
    assert final["values"] == "0.25 0.75" and final["mean"] == pytest.approx(0.5) and final["seeds"] == 2
    assert final["ci_low"] <= 0.5 <= final["ci_high"]


def test_a_summary_that_is_not_an_object_is_named(tmp_path):
    from selfplay.evaluation.league import league_panel_rows

    run = make_run(tmp_path, 0)
    (run / "evaluation" / "summary.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="summary.json is not a JSON object"):
        league_panel_rows([run])
