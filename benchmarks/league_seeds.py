"""AlphaStar's league over seeds: each player type's last policy and best checkpoint against the
map's scripted AI, per seed and as a mean with its 95 % bootstrap interval over seeds; on SMAC, also
the main player's final weights and the historicals' maxent-Nash mixture against every panel member
(``evaluation/summary.json``'s ``panel_*``, ``selfplay.evaluation.league.panel_section``).

    .venv/bin/python benchmarks/league_seeds.py RUN [RUN ...] [--csv OUT.csv]

Each RUN is one ``selfplay league`` run directory (one seed) on the same environment, evaluated by
``selfplay league`` (its ``evaluation/checkpoints.csv``: every checkpoint's rates, draws ½). Per player
type, a seed's value is the mean over that type's players (one main player; the league exploiters
are averaged). Written for the AlphaStar page (docs/results/alphastar.md): the league re-run on the
real maps with several seeds.
"""

from __future__ import annotations

import argparse

MEASURES = ("last_vs_scripted", "best_vs_scripted", "last_vs_start")


def per_seed(rows):
    """Rows of ``league_seed_rows`` → one row per (kind, seed): the mean of each measure over that
    type's players in the seed's run."""
    measures = [m for m in MEASURES if m in rows.columns]
    return rows.groupby(["kind", "seed"], sort=False)[measures].mean().reset_index()


def over_seeds(table):
    """One row per (kind, measure): the seeds' values, their mean and its bootstrap interval."""
    import pandas as pd
    from selfplay.analysis.statistics import interval_estimate

    rows = []
    for kind, group in table.groupby("kind", sort=False):
        for measure in (m for m in MEASURES if m in group.columns):
            values = group[measure].to_numpy(dtype=float)
            estimate = interval_estimate(values)
            rows.append({"kind": kind, "measure": measure, "seeds": len(values),
                         "values": " ".join(f"{v:.2f}" for v in values), "mean": estimate.estimate,
                         "ci_low": estimate.low, "ci_high": estimate.high, "note": estimate.note})
    return pd.DataFrame(rows)


def main(argv=None):
    from selfplay.evaluation.league import league_panel_rows, league_seed_rows

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="league run directories, one per seed")
    parser.add_argument("--csv", default=None, help="also write the per-seed table here")
    args = parser.parse_args(argv)
    table = per_seed(league_seed_rows(args.runs))
    if args.csv:
        table.to_csv(args.csv, index=False, float_format="%.4f")
    summary = over_seeds(table)
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    panel = panel_over_seeds(league_panel_rows(args.runs))
    if len(panel):
        print()
        print(panel.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return summary


def panel_over_seeds(rows):
    """One row per panel column (``panel_<member>_<final|nash>``): the seeds' values, their mean and its
    bootstrap interval (empty without panel rows)."""
    import pandas as pd
    from selfplay.analysis.statistics import interval_estimate

    out = []
    for column in (c for c in rows.columns if c.startswith("panel_")):
        values = rows[column].dropna().to_numpy(dtype=float)
        estimate = interval_estimate(values)
        out.append({"measure": column, "seeds": len(values), "values": " ".join(f"{v:.2f}" for v in values),
                    "mean": estimate.estimate, "ci_low": estimate.low, "ci_high": estimate.high, "note": estimate.note})
    return pd.DataFrame(out)


if __name__ == "__main__":
    main()
