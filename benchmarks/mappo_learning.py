"""MAPPO against the built-in AI: test win-rate curves on several maps and seeds, and their summary.

    .venv/bin/python benchmarks/mappo_learning.py --maps 3m 8m 2s3z --seeds 0 1 2 --steps 64000 --runs runs/mappo
    .venv/bin/python benchmarks/mappo_learning.py --maps 3m 8m 2s3z --seeds 0 1 2 --runs runs/mappo --summarize \\
        --out docs/results/smac_learning

Each (map, seed) is one ``selfplay train --env smac:MAP --opponent builtin-ai`` run in ``RUNS/MAP-sSEED``
(``--open-loop``: ``RUNS/MAP-open-sSEED``; ``--paper-map-settings``: ``RUNS/MAP-paper-sSEED``), evaluated
every ``--eval-interval`` game-steps with 32 greedy test games; a run already there is resumed (to a larger
``--steps`` too). ``--paper-map-settings`` trains with the MAPPO paper's settings for each map
(``selfplay.agents.mappo.config.PAPER_MAP_SETTINGS``) instead of 3m's. ``--update-threads 1`` fits
MAPPO's actor and critic one after the other (the same numbers as 2; one core per run on a shared
machine). ``--summarize`` copies every run's ``metrics.csv`` to ``OUT/MAP-sSEED.csv`` (a run whose
directory is gone is read from that copy) and draws ``OUT/curves.png`` (one panel per map: each seed's
curve, thin; their mean, thick; open-loop runs dashed) and prints a table of the last evaluations.

A map is a SMAC map (``3m``) or a SMACv2 scenario (``smacv2:protoss_5_vs_5``, run as ``RUNS/smacv2-protoss_5_vs_5-sSEED``).
For a SMACv2 scenario the panel also draws the real game's published curves (SMACv2's repository:
``docs/results/smac_learning/published/``): MAPPO's runs as a band (lowest to highest run at each step,
each run holding its last evaluation) with their median, open-loop MAPPO's median dashed and QMIX's
median dotted, and the table gives the published MAPPO median at the steps our runs reached; the pooled
windows set our win rate and test return beside the published ones (SMACv2 publishes both).

Each run also records its test games one by one (``test_games.csv``: outcome, length, and on SMACv2 the
drawn teams and start layout); ``--summarize`` copies them to ``OUT/MAP-sSEED-games.csv`` and, with
``--draws-from STEP``, writes ``OUT/MAP-draws.csv`` and prints the win rate of the games evaluated at or
after STEP (all seeds of a map pooled) by draw: per start layout, and per number of each unit type in
the agents' team and in the enemy's (``outcomes_by_draw``) — which draws the lost games held.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np

PUBLISHED = Path(__file__).resolve().parents[1] / "docs/results/smac_learning/published/smacv2_training_results.csv.gz"
# the learning page's windows for pooling evaluations (game-steps, both ends included)
WINDOWS = ((80_000, 400_000), (480_000, 800_000), (880_000, 1_280_000), (1_360_000, 1_760_000),
           (1_840_000, 2_050_000))


def run_name(map_name: str, seed: int, open_loop: bool, paper: bool = False) -> str:
    """``MAP-sSEED``; ``MAP-open-sSEED`` under open-loop control; ``MAP-paper-sSEED`` with the paper's map settings."""
    return f"{map_name.replace(':', '-')}-{'paper-' if paper else ''}{'open-' if open_loop else ''}s{seed}"


def env_name(map_name: str) -> str:
    """``3m`` -> ``smac:3m``; ``smacv2:protoss_5_vs_5`` stays as it is."""
    return map_name if ":" in map_name else f"smac:{map_name}"


def published_band(table, scenario: str, algorithm: str, steps,
                   column: str = "test_win_rate") -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The published runs' test win rate (``column="test_return"``: test return) at each of ``steps``:
    (lowest, median, highest, number of runs).

    Each run holds its last evaluation at or before a step (NaN before its first); the band and median are
    over the runs that have one.
    """
    rows = table[(table.scenario == scenario) & (table.algorithm == algorithm)]
    steps = np.asarray(steps, dtype=np.float64)
    per_run = []
    for _, run in rows.groupby("run"):
        run = run.sort_values("step")
        idx = np.searchsorted(run.step.to_numpy(), steps, side="right") - 1
        values = run[column].to_numpy()[np.maximum(idx, 0)]
        per_run.append(np.where(idx >= 0, values, np.nan))
    if not per_run:
        nan = np.full(len(steps), np.nan)
        return nan, nan, nan, 0
    runs = np.vstack(per_run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns (before any run's first evaluation)
        return np.nanmin(runs, 0), np.nanmedian(runs, 0), np.nanmax(runs, 0), len(per_run)


def train(args) -> None:
    from selfplay.agents.mappo.config import paper_map_settings

    from selfplay.training.registry import smac_map
    from selfplay.training.vs_builtin import VsAIConfig, train_vs_builtin

    # every map's script is looked up before the first run, so that a map without one fails at once
    paper = {m: paper_map_settings(smac_map(env_name(m))) if args.paper_map_settings else {} for m in args.maps}
    for map_name in args.maps:
        for seed in args.seeds:
            settings = {"eval_interval": args.eval_interval, "update_threads": args.update_threads,
                        **({"open_loop": True} if args.open_loop else {}), **paper[map_name]}
            out = Path(args.runs) / run_name(map_name, seed, args.open_loop, args.paper_map_settings)
            train_vs_builtin(VsAIConfig(env=env_name(map_name), steps=args.steps, seed=seed, agent_settings=settings),
                             out, log=lambda s, tag=out.name: print(f"{tag}: {s}", flush=True))


def pooled(rows: list[dict], lo: int, hi: int, column: str = "test_win_rate") -> tuple[float, int]:
    """(win rate — ``column="test_return"``: mean return — over every test game of the evaluations at steps
    in [lo, hi], number of games)."""
    inside = [r for r in rows if lo <= r["step"] <= hi]
    games = sum(int(r["test_episodes"]) for r in inside)
    if not games:
        return float("nan"), 0
    return sum(r[column] * r["test_episodes"] for r in inside) / games, games


def print_windows(map_name: str, curves: list[list[dict]], published) -> None:
    """Every seed's evaluations pooled per window (``WINDOWS``) against the mean, over the same steps, of
    the real game's published MAPPO median and of its band's lower edge, and in two more columns the test
    return, ours against the published median. SMACv2's own env scales every game's reward by the first
    episode's enemy hit points and shields (docs/design/smacv2.md), so a published return's scale varies a
    little from run to run."""
    scenario = map_name.split(":", 1)[1]
    print(f"\n{map_name}: pooled windows (every evaluation of every seed in the window)")
    print("| window (game-steps) | ours (games) | real game median | real game low edge | ours: test return "
          "| real game median return |\n|---|---|---|---|---|---|")
    rows = [r for c in curves for r in c]
    for lo, hi in WINDOWS:
        rate, games = pooled(rows, lo, hi)
        if not games:
            continue
        steps = sorted({r["step"] for r in rows if lo <= r["step"] <= hi})
        low, med, _, _ = published_band(published, scenario, "MAPPO", steps)
        ret = pooled(rows, lo, hi, "test_return")[0]
        med_ret = published_band(published, scenario, "MAPPO", steps, "test_return")[1]
        print(f"| {lo // 1000}–{hi // 1000}k | {rate:.2f} ({games}) | {np.mean(med):.2f} | {np.mean(low):.2f} "
              f"| {ret:.1f} | {np.mean(med_ret):.1f} |")


def read_rows(path: Path) -> list[dict]:
    with open(path) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


DRAW_COLUMNS = ("feature", "value", "games", "won", "win_rate", "low", "high")


def outcomes_by_draw(games: list[dict]) -> list[dict]:
    """Test games grouped by what was drawn: ``start`` (the start layout) and, per unit type ``T`` seen
    in any game, ``allies T`` / ``enemies T`` (how many ``T`` the agents' / the enemy's team held, 0
    included). One row per (feature, value): games, wins, win rate and its 95 % Wilson interval."""
    from selfplay.analysis.winrate import wilson_interval

    from selfplay.training.vs_builtin import parse_team

    teams = [(parse_team(g["allies"]), parse_team(g["enemies"])) for g in games]
    types = sorted({t for pair in teams for team in pair for t in team})
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for g, (allies, enemies) in zip(games, teams):
        won = int(g["won"])
        groups[("start", g["start"])].append(won)
        for t in types:
            groups[(f"allies {t}", str(allies.get(t, 0)))].append(won)
            groups[(f"enemies {t}", str(enemies.get(t, 0)))].append(won)
    rows = []
    for (feature, value), outcomes in sorted(groups.items()):
        n, w = len(outcomes), sum(outcomes)
        low, high = wilson_interval(w, n)
        rows.append({"feature": feature, "value": value, "games": n, "won": w, "win_rate": round(w / n, 4),
                     "low": round(float(low), 4), "high": round(float(high), 4)})
    return rows


def summarize_draws(map_name: str, seeds, runs: Path, out: Path, since: int, paper: bool = False) -> list[dict]:
    """Copy each seed's ``test_games.csv`` to ``OUT/MAP-sSEED-games.csv`` (a run whose directory is gone is
    read from that copy), pool the games evaluated at or after ``since`` and write ``OUT/MAP-draws.csv``."""
    games = []
    for seed in seeds:
        name = run_name(map_name, seed, False, paper)
        src, kept = runs / name / "test_games.csv", out / f"{name}-games.csv"
        if src.is_file():
            shutil.copyfile(src, kept)
        if kept.is_file():
            with open(kept) as f:
                games += [g for g in csv.DictReader(f) if int(g["step"]) >= since]
    rows = outcomes_by_draw(games)
    if rows:
        with open(out / f"{map_name.replace(':', '-')}-draws.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, DRAW_COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
    return rows


def summarize(args) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fig = Figure(figsize=(4 * len(args.maps), 3.4), dpi=110)
    FigureCanvasAgg(fig)
    published = None
    if any(m.startswith("smacv2:") for m in args.maps):
        import pandas as pd

        published = pd.read_csv(PUBLISHED)
    print("| map | control | seeds | last test win rate per seed (at game-steps) | mean at the steps all seeds reached "
          "| real game's MAPPO there (median [range] of runs) |")
    print("|---|---|---|---|---|---|")
    for i, map_name in enumerate(args.maps):
        ax = fig.add_subplot(1, len(args.maps), i + 1)
        for open_loop, style in ((False, "-"), (True, "--")):
            curves = []
            for seed in args.seeds:
                name = run_name(map_name, seed, open_loop, args.paper_map_settings)
                src, kept = Path(args.runs) / name / "metrics.csv", out / f"{name}.csv"
                if src.is_file():
                    shutil.copyfile(src, kept)
                elif not kept.is_file():  # neither the run nor an earlier summary's copy of it
                    continue
                rows = read_rows(kept)
                curves.append(rows)
                ax.plot([r["step"] for r in rows], [r["test_win_rate"] for r in rows], style, color="0.6", lw=0.8)
            if not curves:
                continue
            n = min(len(c) for c in curves)
            steps = [curves[0][k]["step"] for k in range(n)]
            mean = [sum(c[k]["test_win_rate"] for c in curves) / len(curves) for k in range(n)]
            label = "open loop (time step + id)" if open_loop else "MAPPO"
            ax.plot(steps, mean, style, color="tab:red" if open_loop else "tab:blue", lw=2,
                    label=f"{label}, mean of {len(curves)}")
            last = [c[-1] for c in curves]
            common = [c[n - 1]["test_win_rate"] for c in curves]
            per_seed = ", ".join(f"{r['test_win_rate']:.2f} ({int(r['step']) // 1000}k)" for r in last)
            real = ""
            if published is not None and map_name.startswith("smacv2:"):
                algorithm = "open-loop MAPPO" if open_loop else "MAPPO"
                lo, med, hi, n = published_band(published, map_name.split(":", 1)[1], algorithm, [steps[-1]])
                real = f"{med[0]:.2f} [{lo[0]:.2f}, {hi[0]:.2f}] of {n}" if n else "none published"
            print(f"| {map_name} | {'open loop' if open_loop else 'closed loop'} | {len(curves)} | {per_seed} | "
                  f"{sum(common) / len(common):.2f} at {int(steps[-1]) // 1000}k | {real} |")
        if published is not None and map_name.startswith("smacv2:"):
            draw_published(ax, published, map_name.split(":", 1)[1], ax.get_xlim()[1])
        ax.set_ylim(0, 1.02)
        ax.set_title(f"{map_name.split(':')[-1]} vs the built-in AI", fontsize=9)
        ax.set_xlabel("game-steps")
        ax.set_ylabel("test win rate (32 greedy games)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    fig.savefig(out / "curves.png", bbox_inches="tight")
    for map_name in args.maps:
        kept = [out / f"{run_name(map_name, seed, False, args.paper_map_settings)}.csv" for seed in args.seeds]
        if published is not None and map_name.startswith("smacv2:") and any(p.is_file() for p in kept):
            print_windows(map_name, [read_rows(p) for p in kept if p.is_file()], published)
    if args.draws_from is not None:
        for map_name in args.maps:
            rows = summarize_draws(map_name, args.seeds, Path(args.runs), out, args.draws_from, args.paper_map_settings)
            print(f"\n{map_name}: test games from {args.draws_from} game-steps on, by draw")
            print("| feature | value | games | win rate [95 % CI] |\n|---|---|---:|---|")
            for r in rows:
                print(f"| {r['feature']} | {r['value']} | {r['games']} | {r['win_rate']:.2f} [{r['low']:.2f}, {r['high']:.2f}] |")


def draw_published(ax, table, scenario: str, max_step: float) -> None:
    """The real game's published curves on ``ax`` up to ``max_step`` (module docstring)."""
    grid = np.linspace(0, max_step, 200)
    lo, med, hi, n = published_band(table, scenario, "MAPPO", grid)
    if n:
        ax.fill_between(grid, lo, hi, color="tab:green", alpha=0.15, lw=0)
        ax.plot(grid, med, color="tab:green", lw=1.2, label=f"real game MAPPO, median of {n} (band: range)")
    for algorithm, style in (("open-loop MAPPO", "--"), ("QMIX", ":")):
        _, med, _, n = published_band(table, scenario, algorithm, grid)
        if n:
            ax.plot(grid, med, style, color="tab:green", lw=1, label=f"real game {algorithm}, median of {n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--maps", nargs="+", default=["3m", "8m", "2s3z"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=64_000)
    parser.add_argument("--eval-interval", type=int, default=16_000)
    parser.add_argument("--open-loop", action="store_true")
    parser.add_argument("--paper-map-settings", action="store_true",
                        help="each SMAC map's settings from the MAPPO paper's train_smac_MAP.sh (selfplay train's option)")
    parser.add_argument("--runs", default="runs/mappo")
    parser.add_argument("--update-threads", type=int, choices=(1, 2), default=2,
                        help="MAPPO's update on 1 or 2 threads (the same numbers; 1 on a shared machine)")
    parser.add_argument("--summarize", action="store_true", help="summarise existing runs instead of training")
    parser.add_argument("--out", default="docs/results/smac_learning")
    parser.add_argument("--draws-from", type=int, default=None, metavar="STEP",
                        help="with --summarize: the test games' win rate by draw, from game-step STEP on")
    args = parser.parse_args()
    if args.summarize:
        summarize(args)
        return
    from selfplay.utils.threads import keep_freed_memory

    keep_freed_memory()  # as the selfplay command does: the update's second thread (utils.threads)
    train(args)


if __name__ == "__main__":
    main()
