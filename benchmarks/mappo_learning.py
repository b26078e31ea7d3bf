"""MAPPO against the built-in AI: test win-rate curves on several maps and seeds, and their summary.

    .venv/bin/python benchmarks/mappo_learning.py --maps 3m 8m 2s3z --seeds 0 1 2 --steps 64000 --runs runs/mappo
    .venv/bin/python benchmarks/mappo_learning.py --maps 3m 8m 2s3z --seeds 0 1 2 --runs runs/mappo --summarize \\
        --out docs/results/smac_learning

Each (map, seed) is one ``selfplay train --env smac:MAP --opponent builtin-ai`` run in ``RUNS/MAP-sSEED``
(``--open-loop``: ``RUNS/MAP-open-sSEED``), evaluated every ``--eval-interval`` game-steps with 32 greedy
test games; a run already there is resumed (to a larger ``--steps`` too). ``--summarize`` copies every
run's ``metrics.csv`` to ``OUT/MAP-sSEED.csv`` and draws ``OUT/curves.png`` (one panel per map: each
seed's curve, thin; their mean, thick; open-loop runs dashed) and prints a table of the last evaluations.
"""

from __future__ import annotations

import argparse
import csv
import shutil
from pathlib import Path


def run_name(map_name: str, seed: int, open_loop: bool) -> str:
    return f"{map_name}-{'open-' if open_loop else ''}s{seed}"


def train(args) -> None:
    from selfplay.training.vs_builtin import VsAIConfig, train_vs_builtin

    for map_name in args.maps:
        for seed in args.seeds:
            settings = {"eval_interval": args.eval_interval, **({"open_loop": True} if args.open_loop else {})}
            out = Path(args.runs) / run_name(map_name, seed, args.open_loop)
            train_vs_builtin(VsAIConfig(env=f"smac:{map_name}", steps=args.steps, seed=seed, agent_settings=settings),
                             out, log=lambda s, tag=out.name: print(f"{tag}: {s}", flush=True))


def read_rows(path: Path) -> list[dict]:
    with open(path) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def summarize(args) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fig = Figure(figsize=(4 * len(args.maps), 3.4), dpi=110)
    FigureCanvasAgg(fig)
    print("| map | control | seeds | last test win rate per seed (at game-steps) | mean at the steps all seeds reached |")
    print("|---|---|---|---|---|")
    for i, map_name in enumerate(args.maps):
        ax = fig.add_subplot(1, len(args.maps), i + 1)
        for open_loop, style in ((False, "-"), (True, "--")):
            curves = []
            for seed in args.seeds:
                src = Path(args.runs) / run_name(map_name, seed, open_loop) / "metrics.csv"
                if not src.is_file():
                    continue
                name = run_name(map_name, seed, open_loop)
                shutil.copyfile(src, out / f"{name}.csv")
                rows = read_rows(src)
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
            print(f"| {map_name} | {'open loop' if open_loop else 'closed loop'} | {len(curves)} | {per_seed} | "
                  f"{sum(common) / len(common):.2f} at {int(steps[-1]) // 1000}k |")
        ax.set_ylim(0, 1.02)
        ax.set_title(f"{map_name} vs the built-in AI", fontsize=9)
        ax.set_xlabel("game-steps")
        ax.set_ylabel("test win rate (32 greedy games)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.savefig(out / "curves.png", bbox_inches="tight")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--maps", nargs="+", default=["3m", "8m", "2s3z"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=64_000)
    parser.add_argument("--eval-interval", type=int, default=16_000)
    parser.add_argument("--open-loop", action="store_true")
    parser.add_argument("--runs", default="runs/mappo")
    parser.add_argument("--summarize", action="store_true", help="summarise existing runs instead of training")
    parser.add_argument("--out", default="docs/results/smac_learning")
    args = parser.parse_args()
    summarize(args) if args.summarize else train(args)


if __name__ == "__main__":
    main()
