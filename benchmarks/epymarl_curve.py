"""The published learner on our simulator: an EPyMARL run's test curve, beside ours and the real game's.

    .venv/bin/python benchmarks/epymarl_curve.py /work/ext/epymarl/results/sacred/mappo/protoss_5_vs_5/1 \\
        --scenario protoss_5_vs_5 --out docs/results/smac_learning/epymarl

EPyMARL (its ``src/main.py``, run unchanged through the shims of ``docs/results/smac_learning.md``) saves each
run as a sacred ``FileStorageObserver`` directory: ``metrics.json`` holds every logged statistic as
``{"steps": [...], "timestamps": [...], "values": [...]}`` (steps are EPyMARL's ``t_env``, the training
game-steps; the test games are not counted in them), ``run.json`` the start time and ``config.json`` the
run's settings. This script reads only those files (EPyMARL need not be installed) and writes

- ``OUT/epymarl-ALG-SCENARIO-sSEED.csv``: one row per test evaluation: ``step``, ``test_win_rate``
  (EPyMARL's ``test_battle_won_mean``), ``test_return``, ``test_episodes``, ``train_win_rate`` (the last
  ``battle_won_mean`` logged at or before the step: sampled actions), ``seconds`` (wall time since the
  run's start, when the evaluation was logged);
- ``OUT/curves.png``: that curve over the real game's published MAPPO band (``mappo_learning.draw_published``)
  and our MAPPO's SMACv2 runs (``docs/results/smac_learning/smacv2/``, each seed thin, their mean thick);

and prints the training speed (game-steps per wall second between the first and the last evaluation,
the test games' time included) and the pooled-window table of the learning page: every evaluation in
a window against the mean over the same steps of the published median and of the band's lower edge.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from datetime import datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mappo_learning import PUBLISHED, WINDOWS, draw_published, pooled, published_band, read_rows  # noqa: E402

OURS = Path(__file__).resolve().parents[1] / "docs/results/smac_learning/smacv2"
FIELDS = ("step", "test_win_rate", "test_return", "test_episodes", "train_win_rate", "seconds")


def _value(v) -> float:
    """A logged value: a plain number, or jsonpickle's record of a numpy scalar (``{"py/object": ..., "value": x}``)."""
    if isinstance(v, dict):
        if "value" not in v:
            raise ValueError(f"metrics.json: a logged value {v!r} is neither a number nor a numpy scalar record")
        v = v["value"]
    return float(v)


def _metric(metrics: dict, name: str, run_dir: Path) -> dict:
    if name not in metrics:
        raise ValueError(f"run_dir {run_dir}: metrics.json has no {name!r} (not an EPyMARL run, or no test yet)")
    m = metrics[name]
    return {"steps": [int(s) for s in m["steps"]], "timestamps": m["timestamps"],
            "values": [_value(v) for v in m["values"]]}


def read_run(run_dir) -> list[dict]:
    """One row per test evaluation of the EPyMARL sacred run in ``run_dir`` (module docstring)."""
    run_dir = Path(run_dir)
    for name in ("metrics.json", "run.json", "config.json"):
        if not (run_dir / name).is_file():
            raise ValueError(f"run_dir {run_dir}: no {name} (expected an EPyMARL sacred run directory)")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    start = datetime.fromisoformat(json.loads((run_dir / "run.json").read_text())["start_time"])
    config = json.loads((run_dir / "config.json").read_text())
    # EPyMARL's run.py: max(1, test_nepisode // batch_size_run) test runs of batch_size_run games each
    batch = int(config.get("batch_size_run", 1))
    episodes = max(1, int(config["test_nepisode"]) // batch) * batch
    won = _metric(metrics, "test_battle_won_mean", run_dir)
    ret = _metric(metrics, "test_return_mean", run_dir)
    train = _metric(metrics, "battle_won_mean", run_dir) if "battle_won_mean" in metrics else None
    rows = []
    for i, step in enumerate(won["steps"]):
        if ret["steps"][i] != step:
            raise ValueError(f"run_dir {run_dir}: test_return_mean and test_battle_won_mean differ in their steps")
        train_rate = float("nan")
        if train is not None:
            k = int(np.searchsorted(train["steps"], step, side="right")) - 1
            train_rate = train["values"][k] if k >= 0 else float("nan")
        seconds = (datetime.fromisoformat(won["timestamps"][i]) - start).total_seconds()
        rows.append({"step": step, "test_win_rate": won["values"][i], "test_return": ret["values"][i],
                     "test_episodes": episodes, "train_win_rate": train_rate, "seconds": round(seconds, 1)})
    return rows


def steps_per_second(rows: list[dict]) -> float:
    """Training game-steps per wall second between the first and the last evaluation (test games' time included)."""
    if len(rows) < 2:
        raise ValueError("rows: need at least two evaluations to measure a speed")
    return (rows[-1]["step"] - rows[0]["step"]) / (rows[-1]["seconds"] - rows[0]["seconds"])


def write_csv(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r[k] for k in FIELDS})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", help="EPyMARL's sacred run directory (results/sacred/ALG/MAP/N)")
    parser.add_argument("--scenario", default="protoss_5_vs_5", help="the SMACv2 scenario the run played")
    parser.add_argument("--out", default="docs/results/smac_learning/epymarl")
    parser.add_argument("--ours", default=str(OURS), help="folder of our runs' CSVs (smacv2-SCENARIO-sSEED.csv)")
    args = parser.parse_args()

    run_dir = Path(args.run_dir)
    config = json.loads((run_dir / "config.json").read_text()) if (run_dir / "config.json").is_file() else {}
    rows = read_run(run_dir)
    name = f"epymarl-{config.get('name', 'run')}-{args.scenario}-s{config.get('seed', 0)}"
    out = Path(args.out)
    write_csv(rows, out / f"{name}.csv")
    print(f"{name}: {len(rows)} evaluations to {rows[-1]['step']} game-steps in {rows[-1]['seconds']:.0f} s")
    if len(rows) >= 2:
        print(f"speed: {steps_per_second(rows):.0f} training game-steps per wall second (test games' time included)")

    import pandas as pd
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    published = pd.read_csv(PUBLISHED)
    ours = [read_rows(p) for p in sorted(Path(args.ours).glob(f"smacv2-{args.scenario}-s*.csv"))]
    print("| window (game-steps) | EPyMARL MAPPO (games) | our MAPPO (games) | real game median | real game low edge |")
    print("|---|---|---|---|---|")
    for lo, hi in WINDOWS:
        rate, games = pooled(rows, lo, hi)
        if not games:
            continue
        ours_rate, ours_games = pooled([r for c in ours for r in c], lo, hi)
        steps = [r["step"] for r in rows if lo <= r["step"] <= hi]
        low, med, _, _ = published_band(published, args.scenario, "MAPPO", steps)
        ours_cell = f"{ours_rate:.2f} ({ours_games})" if ours_games else "—"
        print(f"| {lo // 1000}–{hi // 1000}k | {rate:.2f} ({games}) | {ours_cell} | {np.mean(med):.2f} | "
              f"{np.mean(low):.2f} |")

    fig = Figure(figsize=(6, 3.8), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for curve in ours:
        ax.plot([r["step"] for r in curve], [r["test_win_rate"] for r in curve], color="tab:blue", lw=0.6, alpha=0.5)
    if ours:
        n = min(len(c) for c in ours)
        ax.plot([ours[0][k]["step"] for k in range(n)], [np.mean([c[k]["test_win_rate"] for c in ours]) for k in range(n)],
                color="tab:blue", lw=1.8, label=f"our MAPPO, our simulator (mean of {len(ours)} seeds, 32 games)")
    ax.plot([r["step"] for r in rows], [r["test_win_rate"] for r in rows], "o-", color="tab:red", ms=3, lw=1.6,
            label=f"EPyMARL MAPPO, our simulator (1 seed, {rows[0]['test_episodes']} games)")
    draw_published(ax, published, args.scenario, max(ax.get_xlim()[1], rows[-1]["step"]))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("game-steps")
    ax.set_ylabel("greedy test win rate")
    ax.set_title(f"SMACv2 {args.scenario}: the published learner on our simulator", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6.5, loc="upper left")
    fig.savefig(out / "curves.png", bbox_inches="tight")


if __name__ == "__main__":
    main()
