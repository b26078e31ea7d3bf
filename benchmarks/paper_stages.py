"""Where the time of the paper reproduction goes: every stage of ``paper_figures.make_all``, timed.

Runs the reproduction at a chosen scale (default: a reduced one; the paper's is ``--episodes 10000
--checkpoints 100 --matches 25``) into a temporary directory and prints each stage's seconds and its
share of the whole: training, the runs' winrate matrices (with their maxent Nash), the relative
population performance games (same-seed and, with ``--cross-seed-rpp``, every seed pair), the
curves over training (maxent Nash of every prefix of checkpoints), the statistics over seeds
(bootstrap) and their figures, the other figures, the t-SNE embeddings of every seed, and the
paper-figure scripts (Fig. 1, Fig. 2's joint t-SNE of both agents, Fig. 3, the RPP tables).
It also prints the work behind each evaluation stage (games played), so that a stage's time at the
paper's scale can be estimated from its time here: evaluation time grows with the games, training
with the episodes.

    python benchmarks/paper_stages.py                                  # reduced scale, 3 seeds
    python benchmarks/paper_stages.py --episodes 2000 --checkpoints 40 --agents ppo-mlp
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # paper_figures/ is a folder of the repository, not installed

from paper_figures import fig1_sample_rates, fig2_embeddings, fig3_winrate_matrices, table_rpp  # noqa: E402
from paper_figures.common import AGENTS, paper_config, parse_seeds  # noqa: E402
from selfplay.evaluation.compare import DEFAULT_SCHEMES, compare  # noqa: E402


def games(config) -> dict[str, int]:
    """Games played by each evaluation stage (one game: one match of one pair)."""
    n, m, s = config.checkpoints, config.matches, len(config.seeds)
    k, a = len(config.schemes), len(config.agents)
    runs = a * k * s
    seed_pairs = s * s if (config.rpp_cross_seed and s > 1) else s
    return {"winrate_matrices": runs * n * (n - 1) // 2 * m,
            "rpp": a * k * (k - 1) // 2 * seed_pairs * n * n * m}


def main(argv=None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--checkpoints", type=int, default=20)
    parser.add_argument("--matches", type=int, default=25)
    parser.add_argument("--seeds", type=parse_seeds, default=[0, 1, 2])
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--schemes", default=None, help="comma-separated (default: the paper's six)")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--cross-seed-rpp", action="store_true", help="as make_all's (default: same-seed RPP only)")
    parser.add_argument("--out", default=None, help="keep the comparison here (default: a temporary directory)")
    args = parser.parse_args(argv)
    schemes = args.schemes.split(",") if args.schemes else DEFAULT_SCHEMES
    config = paper_config(args.episodes, args.checkpoints, args.matches, agents=args.agents.split(","),
                          schemes=schemes, seeds=args.seeds, jobs=args.jobs)
    config.rpp_cross_seed = args.cross_seed_rpp
    load = os.getloadavg()
    print(f"scale: {len(config.agents)} agents × {len(schemes)} schemes × {len(config.seeds)} seeds, "
          f"{config.episodes} episodes, {config.checkpoints} checkpoints, {config.matches} matches per pair; "
          f"{os.cpu_count()} CPUs, load average {load[0]:.1f} at start", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        started = time.perf_counter()
        compare(config, out)
        stages = json.loads((out / "evaluation" / "timings.json").read_text())
        stages.pop("total", None)
        seed = config.seeds[0]
        for name, step in [
            ("fig1 (sample rates)", lambda: fig1_sample_rates.main(["--out", str(out / "figures" / "fig1.png")])),
            ("fig2 (joint t-SNE)", lambda: fig2_embeddings.make_figure(out, out, seed=seed)),
            ("fig3 (winrate matrices)", lambda: fig3_winrate_matrices.make_figure(out, out, seed=seed)),
            ("RPP table figures", lambda: table_rpp.make_tables(out, out)),
        ]:
            t0 = time.perf_counter()
            step()
            stages[name] = time.perf_counter() - t0
        total = time.perf_counter() - started
    work = games(config)
    print(f"\n{'stage':<28}{'seconds':>10}{'share':>8}   work")
    for name, seconds in sorted(stages.items(), key=lambda kv: -kv[1]):
        extra = f"{work[name]:,} games" if name in work else ""
        print(f"{name:<28}{seconds:>10.1f}{seconds / total:>8.1%}   {extra}")
    print(f"{'total':<28}{total:>10.1f}{1:>8.0%}   (load average {os.getloadavg()[0]:.1f} at the end)")
    paper = paper_config(seeds=args.seeds)
    paper.rpp_cross_seed = config.rpp_cross_seed
    paper_work = games(paper)
    for name in work:
        if name in stages and work[name]:
            factor = paper_work[name] / work[name]
            print(f"at the paper's scale {name} plays {factor:.0f}× the games: ≈ {stages[name] * factor / 60:.0f} min "
                  "if the time per game stays the same")
    return stages


if __name__ == "__main__":
    main()
