"""Reproduce the paper from scratch: every default scheme × {MLP-PPO, RNN-PPO}, 1e4 episodes,
100 evaluation checkpoints, 25 matches per pair; then Fig. 1, Fig. 2, Fig. 3 and the RPP tables.

    python -m paper_figures.make_all --out runs/paper [--episodes 10000 --checkpoints 100 --matches 25 --seeds 0,1,2]

Three seeds by default: the report carries every metric's mean and IQM with 95 % bootstrap intervals, the
probability of improvement between schemes, and RPP over seeds (selfplay.evaluation.seed_stats); Fig. 2 and Fig. 3
show the first seed. RPP pairs the populations of the same seed; ``--cross-seed-rpp`` adds every seed pair
(scheme X's seed-i population against Y's seed-j: 3× the games with 3 seeds, ≈ 34 M RNN games at the paper's scale).

Writes ``DIR/evaluation/summary.csv``, ``DIR/report.md`` and ``DIR/figures/*.png`` (including
``fig1_sample_rates.png``, ``fig2_embeddings.png``, ``fig3_winrate_matrices.png``,
``table_rpp_<agent>.png``). Resumable: run it again after an interruption.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from paper_figures import fig1_sample_rates, fig2_embeddings, fig3_winrate_matrices, table_rpp
from paper_figures.common import DEFAULT_SEEDS, paper_config, parse_seeds
from selfplay.evaluation.compare import compare


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/paper")
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--checkpoints", type=int, default=100)
    parser.add_argument("--matches", type=int, default=25)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--seeds", type=parse_seeds, default=list(DEFAULT_SEEDS), help="comma-separated (default 0,1,2)")
    parser.add_argument("--cross-seed-rpp", action="store_true",
                        help="also RPP between every pair of seeds (n_seeds× the games: the RNN tables' games would "
                             "take longer than the rest of the reproduction; default: same-seed populations only)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    start = time.perf_counter()
    config = paper_config(args.episodes, args.checkpoints, args.matches, seeds=args.seeds, jobs=args.jobs)
    config.rpp_cross_seed = args.cross_seed_rpp
    compare(config, out)
    print(f"comparison done in {time.perf_counter() - start:.0f}s")
    fig1_sample_rates.main(["--out", str(out / "figures" / "fig1_sample_rates.png")])
    fig2_embeddings.make_figure(out, out, seed=args.seeds[0])
    fig3_winrate_matrices.make_figure(out, out, seed=args.seeds[0])
    table_rpp.make_tables(out, out)
    print(f"everything done in {time.perf_counter() - start:.0f}s -> {out}")
    return out


if __name__ == "__main__":
    main()
