"""The real game's published SMACv2 curves (``docs/results/smac_learning/published``) and the learning
study's overlay of them (``benchmarks/mappo_learning.py``)."""

import argparse

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(scope="module")
def study(load_benchmark):
    return load_benchmark("mappo_learning")


def test_published_table_holds_every_scenario_and_baseline(study):
    table = pd.read_csv(study.PUBLISHED)
    races, sizes = ("protoss", "terran", "zerg"), ("5_vs_5", "10_vs_10", "20_vs_20", "10_vs_11", "20_vs_23")
    assert set(table.scenario) == {f"{r}_{s}" for r in races for s in sizes}
    assert set(table.algorithm) == {"MAPPO", "QMIX", "open-loop MAPPO"}
    assert table.test_win_rate.between(0, 1).all() and (table.step > 0).all()
    runs = table.groupby(["scenario", "algorithm"]).run.nunique()
    assert runs.min() >= 2 and runs[("protoss_5_vs_5", "MAPPO")] == 5


def test_published_band_holds_each_runs_last_evaluation(study):
    table = pd.DataFrame({"scenario": "s", "algorithm": "MAPPO", "run": [0, 0, 1],
                          "step": [10, 20, 15], "test_win_rate": [0.1, 0.5, 0.3], "test_return": [2.0, 6.0, 9.0]})
    lo, med, hi, n = study.published_band(table, "s", "MAPPO", [5, 12, 16, 25])
    assert n == 2
    assert np.isnan(lo[0]) and np.isnan(med[0]) and np.isnan(hi[0])  # before any evaluation
    np.testing.assert_allclose(lo[1:], [0.1, 0.1, 0.3])
    np.testing.assert_allclose(med[1:], [0.1, 0.2, 0.4])
    np.testing.assert_allclose(hi[1:], [0.1, 0.3, 0.5])
    assert study.published_band(table, "s", "QMIX", [5])[3] == 0
    _, med_return, hi_return, _ = study.published_band(table, "s", "MAPPO", [16, 25], "test_return")
    np.testing.assert_allclose(med_return, [5.5, 7.5])  # run 0 holds 2.0 then 6.0, run 1 holds 9.0
    np.testing.assert_allclose(hi_return, [9.0, 9.0])


def test_summary_of_a_smacv2_run_draws_the_published_band(study, tmp_path, capsys):
    run = tmp_path / "runs" / study.run_name("smacv2:protoss_5_vs_5", 0, False)
    run.mkdir(parents=True)
    (run / "metrics.csv").write_text("step,test_win_rate,test_return,test_episodes\n"
                                     "1000000,0.25,10.0,32\n2000000,0.5,12.0,32\n")
    args = argparse.Namespace(maps=["smacv2:protoss_5_vs_5"], seeds=[0], runs=str(tmp_path / "runs"),
                              out=str(tmp_path / "out"), draws_from=None, paper_map_settings=False)
    study.summarize(args)
    printed = capsys.readouterr().out
    line = [row for row in printed.splitlines() if row.startswith("| smacv2:protoss_5_vs_5")][0]
    table = pd.read_csv(study.PUBLISHED)
    lo, med, hi, n = study.published_band(table, "protoss_5_vs_5", "MAPPO", [2_000_000])
    assert f"{med[0]:.2f} [{lo[0]:.2f}, {hi[0]:.2f}] of 5" in line and "0.50 at 2000k" in line
    assert (tmp_path / "out" / "curves.png").is_file()
    assert (tmp_path / "out" / "smacv2-protoss_5_vs_5-s0.csv").is_file()
    # the pooled windows: the 1.36–1.76M window is empty, 1.84–2.05M holds the 2M evaluation (32 games)
    assert f"| 1840–2050k | 0.50 (32) | {med[0]:.2f} | {lo[0]:.2f} |" in printed and "| 1360–1760k" not in printed
    med_return = study.published_band(table, "protoss_5_vs_5", "MAPPO", [2_000_000], "test_return")[1]
    assert f"| {lo[0]:.2f} | 12.0 | {med_return[0]:.1f} |" in printed  # the 2M evaluation's return, 12.0


def test_summary_reads_a_gone_run_from_its_kept_csv(study, tmp_path, capsys):
    """Seed 0's run directory is gone but its CSV is in OUT from an earlier summary; seed 1 runs: the
    table's mean is over both seeds at the steps both reached."""
    out = tmp_path / "out"
    out.mkdir()
    (out / study.run_name("smacv2:zerg_5_vs_5", 0, False)).with_suffix(".csv").write_text(
        "step,test_win_rate,test_return,test_episodes\n0,0.0,1.0,32\n80000,0.5,5.0,32\n160000,0.75,6.0,32\n")
    run = tmp_path / "runs" / study.run_name("smacv2:zerg_5_vs_5", 1, False)
    run.mkdir(parents=True)
    (run / "metrics.csv").write_text("step,test_win_rate,test_return,test_episodes\n0,0.0,1.0,32\n80000,0.25,4.0,32\n")
    header = "step,game,won,timeout,return,episode_steps,dead_allies,dead_enemies,start,allies,enemies\n"
    (out / "smacv2-zerg_5_vs_5-s0-games.csv").write_text(
        header + "0,0,0,0,1.0,30,5,1,reflect,zergling:5,zergling:5\n80000,0,1,0,9.0,40,2,5,reflect,zergling:5,hydralisk:5\n")
    (run / "test_games.csv").write_text(header + "80000,0,0,0,2.0,50,5,2,surrounded,hydralisk:5,zergling:5\n")
    args = argparse.Namespace(maps=["smacv2:zerg_5_vs_5"], seeds=[0, 1], runs=str(tmp_path / "runs"), out=str(out),
                              draws_from=80000, paper_map_settings=False)
    study.summarize(args)
    printed = capsys.readouterr().out.splitlines()
    line = [row for row in printed if row.startswith("| smacv2:zerg_5_vs_5")][0]
    assert "| 2 | 0.75 (160k), 0.25 (80k) | 0.38 at 80k |" in line
    assert (out / "smacv2-zerg_5_vs_5-s1.csv").is_file() and (out / "smacv2-zerg_5_vs_5-s1-games.csv").is_file()
    # the games from 80 000 steps on, both seeds pooled (seed 0's from its kept copy): one won, one lost
    draws = pd.read_csv(out / "smacv2-zerg_5_vs_5-draws.csv", dtype={"value": str})
    start = draws[draws.feature == "start"].set_index("value")
    assert start.loc["reflect", "won"] == 1 and start.loc["surrounded", "games"] == 1
    assert "| allies zergling | 5 | 1 | 1.00 [0.21, 1.00] |" in printed


def test_outcomes_by_draw_groups_games_by_start_and_unit_counts(study):
    """Three hand-made test games: win rates per start layout and per count of each unit type (0 included)."""
    games = [{"won": "1", "start": "reflect", "allies": "stalker:2 zealot:3", "enemies": "zealot:5"},
             {"won": "0", "start": "surrounded", "allies": "colossus:1 zealot:4", "enemies": "stalker:5"},
             {"won": "0", "start": "reflect", "allies": "stalker:2 zealot:3", "enemies": "colossus:1 zealot:4"}]
    rows = {(r["feature"], r["value"]): r for r in study.outcomes_by_draw(games)}
    assert (rows[("start", "reflect")]["games"], rows[("start", "reflect")]["win_rate"]) == (2, 0.5)
    assert (rows[("start", "surrounded")]["games"], rows[("start", "surrounded")]["won"]) == (1, 0)
    assert (rows[("allies colossus", "0")]["games"], rows[("allies colossus", "0")]["win_rate"]) == (2, 0.5)
    assert (rows[("allies colossus", "1")]["games"], rows[("allies colossus", "1")]["won"]) == (1, 0)
    assert rows[("enemies zealot", "5")]["win_rate"] == 1.0 and rows[("enemies zealot", "0")]["win_rate"] == 0.0
    assert rows[("enemies stalker", "0")]["games"] == 2
    low, high = rows[("start", "reflect")]["low"], rows[("start", "reflect")]["high"]
    assert 0 < low < 0.5 < high < 1  # Wilson interval of 1 win in 2 games
    assert sum(r["games"] for r in rows.values() if r["feature"] == "allies zealot") == 3

    from selfplay.training.vs_builtin import parse_team, team_text

    assert parse_team("stalker:3 zealot:2") == {"stalker": 3, "zealot": 2}
    assert team_text(["zealot", "stalker", "zealot"]) == "stalker:1 zealot:2"
    assert parse_team(team_text(["zealot", "stalker", "zealot"])) == {"stalker": 1, "zealot": 2}


def test_runs_with_the_papers_map_settings_have_their_own_names_and_summary(study, tmp_path, capsys):
    """``--paper-map-settings`` runs live in ``RUNS/MAP-paper-sSEED`` and are summarised from there into
    ``OUT/MAP-paper-sSEED.csv``, apart from the runs at the default settings of the same map and seed."""
    assert study.run_name("5m_vs_6m", 2, False, paper=True) == "5m_vs_6m-paper-s2"
    assert study.run_name("5m_vs_6m", 2, True, paper=True) == "5m_vs_6m-paper-open-s2"
    for name, rate in (("5m_vs_6m-paper-s0", 1.0), ("5m_vs_6m-s0", 0.25)):
        (tmp_path / "runs" / name).mkdir(parents=True)
        (tmp_path / "runs" / name / "metrics.csv").write_text(
            f"step,test_win_rate,test_return,test_episodes\n0,0.0,1.0,32\n80000,{rate},5.0,32\n")
    args = argparse.Namespace(maps=["5m_vs_6m"], seeds=[0], runs=str(tmp_path / "runs"), out=str(tmp_path / "out"),
                              draws_from=None, paper_map_settings=True)
    study.summarize(args)
    line = [row for row in capsys.readouterr().out.splitlines() if row.startswith("| 5m_vs_6m")][0]
    assert "1.00 (80k)" in line and (tmp_path / "out" / "5m_vs_6m-paper-s0.csv").is_file()
    assert not (tmp_path / "out" / "5m_vs_6m-s0.csv").exists()
