"""Statistics over seeds in `selfplay compare` (selfplay.evaluation.seed_stats), on fixed per-seed tables with
hand-computed values, and end to end on a tiny 3-seed comparison."""

import math

import numpy as np
import pandas as pd
import pytest

from selfplay.evaluation.compare import CompareConfig, compare
from selfplay.evaluation.seed_stats import (
    AGGREGATE_COLUMNS,
    IMPROVEMENT_COLUMNS,
    aggregate_table,
    curve_table,
    improvement_table,
    metric_columns,
    rpp_interval_rows,
    rpp_seed_table,
    significance_lines,
)

# A fixed table of per-seed results: A varies, B ties A once, C has one seed, D's seeds are identical.
SUMMARY = pd.DataFrame([
    ("A", 0, 0.6, 3, 7.0), ("A", 1, 0.7, 1, 7.0), ("A", 2, 0.8, 2, 7.0),
    ("B", 0, 0.5, 2, 7.0), ("B", 1, 0.5, 2, 7.0), ("B", 2, 0.9, 2, 7.0),
    ("C", 0, 0.7, 1, 7.0),
    ("D", 0, 0.4, 5, 7.0), ("D", 1, 0.4, 5, 7.0), ("D", 2, 0.4, 5, 7.0),
], columns=["scheme", "seed", "lower_triangle_winrate", "nash_support", "seconds"]).assign(agent="ppo-mlp")


def _row(table, **where):
    mask = np.ones(len(table), dtype=bool)
    for k, v in where.items():
        mask &= table[k] == v
    assert mask.sum() == 1, where
    return table[mask].iloc[0]


def test_aggregate_table_hand_computed_including_degenerate_cases():
    notes = []
    agg = aggregate_table(SUMMARY, notes=notes)
    assert list(agg.columns) == AGGREGATE_COLUMNS
    assert len(agg) == 4 * 2  # 4 schemes × {lower_triangle_winrate, nash_support}; seconds is bookkeeping
    a = _row(agg, scheme="A", metric="lower_triangle_winrate")
    assert (a.n_seeds, a["mean"], a.iqm) == (3, pytest.approx(0.7), pytest.approx(0.7))
    # exact bootstrap of 3 seeds: the minimum (all three resampled equal to it) has probability 1/27 > 2.5 %
    assert (a.mean_ci_low, a.mean_ci_high) == pytest.approx((0.6, 0.8))
    b = _row(agg, scheme="B", metric="nash_support")
    assert (b["mean"], b.mean_ci_low, b.mean_ci_high) == (2.0, 2.0, 2.0)  # identical seeds: zero width
    c = _row(agg, scheme="C", metric="lower_triangle_winrate")
    assert c.n_seeds == 1 and c["mean"] == 0.7 and math.isnan(c.mean_ci_low) and math.isnan(c.iqm_ci_high)
    assert ("ppo-mlp", "C", "lower_triangle_winrate",
            "one seed: no interval (the bootstrap needs at least two seeds)") in notes
    assert any(n[1] == "D" and "all seeds equal" in n[3] for n in notes)


def test_improvement_table_hand_computed_oriented_and_complementary():
    imp = improvement_table(SUMMARY)
    assert list(imp.columns) == IMPROVEMENT_COLUMNS
    assert len(imp) == 2 * 4 * 3  # 2 metrics × ordered pairs of 4 schemes
    ab = _row(imp, metric="lower_triangle_winrate", scheme_x="A", scheme_y="B")
    assert ab.probability == pytest.approx(6 / 9)  # each of A's seeds beats both 0.5s, loses to 0.9
    ac = _row(imp, metric="lower_triangle_winrate", scheme_x="A", scheme_y="C")
    assert ac.probability == pytest.approx((0 + 0.5 + 1) / 3) and math.isnan(ac.ci_low)  # tie with 0.7 counts ½
    # nash_support: lower is better. A = {3, 1, 2} vs B = {2, 2, 2}: 1 < 2 wins, 2 = 2 ties, 3 > 2 loses
    support = _row(imp, metric="nash_support", scheme_x="A", scheme_y="B")
    assert support.probability == pytest.approx(0.5)
    ad = _row(imp, metric="nash_support", scheme_x="A", scheme_y="D")
    assert (ad.probability, ad.ci_low, ad.ci_high) == (1.0, 1.0, 1.0)  # every A below D's 5
    for r in imp.itertuples():
        back = _row(imp, metric=r.metric, scheme_x=r.scheme_y, scheme_y=r.scheme_x)
        assert r.probability + back.probability == pytest.approx(1.0)
    words = "\n".join(significance_lines(imp, 0.95))
    assert "`nash_support` (ppo-mlp, lower is better): significant: A over D" in words
    assert "`lower_triangle_winrate` (ppo-mlp, higher is better): significant: A over D" in words


def test_metrics_must_declare_their_orientation():
    with pytest.raises(ValueError, match="'novelty' has no declared orientation"):
        metric_columns(SUMMARY.assign(novelty=1.0))
    assert metric_columns(SUMMARY.assign(exploitability_final=0.1)) == ["lower_triangle_winrate", "nash_support",
                                                                        "exploitability_final"]
    with pytest.raises(ValueError, match="one row per"):
        aggregate_table(pd.concat([SUMMARY, SUMMARY.iloc[:1]]))


def test_rpp_over_seeds_same_seed_and_cross_seed():
    # v(X seed i, Y seed j): rows i, columns j; the same-seed values are the diagonal
    V = np.array([[0.1, 0.3], [0.1, 0.3]])
    rows = []
    for i in range(2):
        for j in range(2):
            rows += [("X", i, "Y", j, V[i, j]), ("Y", j, "X", i, -V[i, j])]
    values = pd.DataFrame(rows, columns=["scheme_x", "seed_x", "scheme_y", "seed_y", "value"])
    out = pd.DataFrame(rpp_interval_rows("ppo-mlp", values, ["X", "Y"], [0, 1]))
    same = _row(out, scheme_x="X", scheme_y="Y", pairing="same-seed")
    assert same.n == 2 and same["mean"] == pytest.approx(0.2)  # (0.1 + 0.3) / 2
    assert (same.ci_low, same.ci_high) == pytest.approx((0.1, 0.3))  # each resampled alone w.p. 1/4
    cross = _row(out, scheme_x="X", scheme_y="Y", pairing="cross-seed")
    assert cross.n == 4 and cross["mean"] == pytest.approx(0.2)
    assert (cross.ci_low, cross.ci_high) == pytest.approx((0.1, 0.3))  # only Y's seeds (columns) matter
    assert _row(out, scheme_x="Y", scheme_y="X", pairing="same-seed")["mean"] == pytest.approx(-0.2)
    table = rpp_seed_table(values, ["X", "Y"], seed=1)
    assert table.loc["X", "Y"] == 0.3 and table.loc["Y", "X"] == -0.3 and table.loc["X", "X"] == 0.0


def test_curve_table_cuts_to_the_shortest_run_and_bands_each_point():
    per_run = pd.DataFrame([
        ("a", "s", sd, "c", k, 10.0 * (k + 1), v)
        for sd, vals in enumerate([[1, 2, 9], [1, 4], [1, 3]]) for k, v in enumerate(vals)
    ], columns=["agent", "scheme", "seed", "curve", "checkpoint", "episode", "value"])
    table = curve_table(per_run)
    assert table["checkpoint"].tolist() == [0, 1] and table["n_seeds"].tolist() == [3, 3]
    assert table["mean"].tolist() == pytest.approx([1.0, 3.0])
    assert (table.ci_low.iloc[0], table.ci_high.iloc[0]) == (1.0, 1.0)
    assert (table.ci_low.iloc[1], table.ci_high.iloc[1]) == pytest.approx((2.0, 4.0))


def test_compare_over_three_seeds_writes_aggregate_and_improvement_consistent_with_summary(tmp_path):
    cfg = CompareConfig(schemes=["naive", "delta-limit-uniform:delta=0"], seeds=[0, 1, 2], episodes=96,
                        checkpoints=3, matches=4, num_envs=32, ppo={"horizon": 96, "epochs": 1}, embedding=False,
                        jobs=1, bootstrap_resamples=1000)
    report = compare(cfg, tmp_path)
    evaluation = tmp_path / "evaluation"
    summary = pd.read_csv(evaluation / "summary.csv")
    agg = pd.read_csv(evaluation / "aggregate.csv")
    imp = pd.read_csv(evaluation / "improvement.csv")
    assert list(agg.columns) == AGGREGATE_COLUMNS and list(imp.columns) == IMPROVEMENT_COLUMNS
    assert set(agg["metric"]) == {"lower_triangle_winrate", "nash_support", "final_vs_first"}
    assert (agg["n_seeds"] == 3).all() and len(imp) == 3 * 2
    for r in agg.itertuples():
        seeds = summary.loc[summary["scheme"] == r.scheme, r.metric].to_numpy()
        assert r.mean == pytest.approx(seeds.mean()) and r.iqm == pytest.approx(seeds.mean())  # 3 seeds: IQM = mean
        assert seeds.min() - 1e-9 <= r.mean_ci_low <= r.mean <= r.mean_ci_high <= seeds.max() + 1e-9
    for r in imp.itertuples():
        x = summary.loc[summary["scheme"] == r.scheme_x, r.metric].to_numpy()
        y = summary.loc[summary["scheme"] == r.scheme_y, r.metric].to_numpy()
        if r.metric == "nash_support":
            x, y = -x, -y
        wins = (x[:, None] > y[None, :]).sum() + 0.5 * (x[:, None] == y[None, :]).sum()
        assert r.probability == pytest.approx(wins / 9)
        assert r.ci_low <= r.probability <= r.ci_high
    rpp = pd.read_csv(evaluation / "rpp_intervals.csv")
    assert set(rpp["pairing"]) == {"same-seed", "cross-seed"}
    values = pd.read_csv(evaluation / "rpp_values_ppo-mlp.csv")
    assert len(values) == 2 * 9  # every seed pair, both orientations
    same = values[(values.scheme_x == "naive") & (values.seed_x == values.seed_y)]["value"].mean()
    assert _row(rpp, scheme_x="naive", pairing="same-seed")["mean"] == pytest.approx(same)
    curves = pd.read_csv(evaluation / "curves.csv")
    assert set(curves["curve"]) == {"maxent_nash_support"} and (curves["n_seeds"] == 3).all()
    text = report.read_text()
    assert "## Over seeds: interval estimates (3 seeds, 95% CIs)" in text and "## Probability of improvement" in text
    assert "is better)" in text and "Mann–Whitney" in text
    figures = {p.name for p in (tmp_path / "figures").iterdir()}
    assert {"intervals_ppo-mlp.png", "improvement_ppo-mlp_nash_support.png", "curves_ppo-mlp.png",
            "winrate_mean_ppo-mlp_naive.png", "rpp_ppo-mlp_s2.png"} <= figures
    for name in ("intervals_ppo-mlp.png", "curves_ppo-mlp.png"):
        assert f"figures/{name}" in text


def test_compare_with_one_seed_reports_no_intervals(tmp_path, figures_not_rendered):
    cfg = CompareConfig(schemes=["naive", "psro"], seeds=[4], episodes=64, checkpoints=2, matches=2, num_envs=32,
                        ppo={"horizon": 64, "epochs": 1}, embedding=False, jobs=1, bootstrap_resamples=1000)
    report = compare(cfg, tmp_path)
    agg = pd.read_csv(tmp_path / "evaluation" / "aggregate.csv")
    assert (agg["n_seeds"] == 1).all() and agg["mean_ci_low"].isna().all() and agg["iqm_ci_high"].isna().all()
    imp = pd.read_csv(tmp_path / "evaluation" / "improvement.csv")
    assert imp["ci_low"].isna().all()
    text = report.read_text()
    assert "**One seed: no intervals.**" in text and "no intervals (one seed)" in text
    assert "one seed: no interval" in text


def test_rpp_groups_hold_every_pair_once_within_one_seed_pair():
    from selfplay.evaluation.seed_stats import rpp_groups

    tasks = [(x, sx, y, sy, None) for x in range(4) for y in range(x + 1, 4) for sx in range(3) for sy in range(3)]
    groups = rpp_groups(tasks, jobs=2)  # 9 seed pairs of 6 scheme pairs: one group each
    assert sorted(k for g in groups for k in g) == list(range(len(tasks)))
    assert len(groups) == 9 and all(len({(tasks[k][1], tasks[k][3]) for k in g}) == 1 for g in groups)
    same_seed = [t for t in tasks if t[1] == t[3]]
    assert [len(g) for g in rpp_groups(same_seed, jobs=2)] == [2] * 9  # 3 seed pairs cut in 3: about 4 groups a process


def test_every_agents_rpp_groups_go_in_one_map_recurrent_agents_first(tmp_path):
    """One map over both agents' groups (no wait between the agents), the recurrent agent's groups first;
    each pair's value lands in its own row of its own agent."""
    from selfplay.evaluation.seed_stats import rpp_tasks, rpp_values_of_agents

    config = CompareConfig(agents=["ppo-mlp", "ppo-rnn"], schemes=["naive", "psro", "delta-uniform:delta=0"],
                           seeds=[0, 1], episodes=10, checkpoints=2, matches=2)
    runs = config.run_specs(tmp_path)
    maps = []

    def run_map(function, groups, jobs):  # a pair's value from its own seed and agent, as a stand-in for its games
        maps.append([group[0][1] for group in groups])
        return [[(seed % 997) / 997 + (agent == "ppo-rnn") for _, agent, _, _, _, seed in group] for group in groups]

    every = rpp_values_of_agents(config, runs, config.agents, jobs=2, cross_seed=True, run_map=run_map)
    assert len(maps) == 1
    started = maps[0]
    assert set(started) == {"ppo-mlp", "ppo-rnn"} and started == sorted(started, key=lambda a: a != "ppo-rnn")
    for agent in config.agents:
        values = every[agent].set_index(["scheme_x", "seed_x", "scheme_y", "seed_y"])["value"]
        tasks = rpp_tasks(config, runs, agent, cross_seed=True)
        assert len(values) == 2 * len(tasks) == 2 * 3 * 4  # 3 scheme pairs × 4 seed pairs, both orientations
        for x, sx, y, sy, (_, _, _, _, _, seed) in tasks:
            expected = (seed % 997) / 997 + (agent == "ppo-rnn")
            assert values[(x, sx, y, sy)] == expected and values[(y, sy, x, sx)] == -expected
