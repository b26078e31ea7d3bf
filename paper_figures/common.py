"""What the paper-figure scripts share: the paper's experimental scale and reading a comparison.

The paper (docs/design/selfplay.md §5): every scheme × {MLP-PPO, RNN-PPO}, 1e4 episodes each, PPO Table I
(horizon 2048, minibatch 64), 100 evaluation checkpoints, 25 matches per pair.
A script given ``--from DIR`` reads a finished ``selfplay compare`` / ``make_all`` directory; otherwise
it runs the comparison it needs into ``--out`` (resumable: finished runs are not trained again).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from selfplay.evaluation.compare import DEFAULT_SCHEMES, CompareConfig, compare, slug

AGENTS = ["ppo-mlp", "ppo-rnn"]
AGENT_LABELS = {"ppo-mlp": "MLP-PPO", "ppo-rnn": "RNN-PPO"}


DEFAULT_SEEDS = (0, 1, 2)
# Trajectories of each run in the t-SNE (evenly spaced in time): 12 runs × 2 500 + 3 000 basis points per seed,
# one joint fit per seed. The time-window path has 20 windows of 125 points each; the RNN runs' trajectories are
# nearly all distinct (55 872 of 60 000), so t-SNE's cost grows with every point kept.
EMBED_PER_RUN = 2500


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` → [0, 1, 2] (distinct integers), or a clear error for argparse."""
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds must be comma-separated integers, got {text!r}") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"seeds must be one or more distinct integers, got {text!r}")
    return seeds


def paper_config(episodes: int = 10_000, checkpoints: int = 100, matches: int = 25, agents=None, schemes=None,
                 seeds=DEFAULT_SEEDS, jobs: int | None = None) -> CompareConfig:
    return CompareConfig(agents=list(agents or AGENTS), schemes=list(schemes or DEFAULT_SCHEMES), seeds=list(seeds),
                         episodes=episodes, checkpoints=checkpoints, matches=matches, num_envs=64,
                         ppo={"horizon": 2048, "minibatch_size": 64}, embedding=True,
                         embed_per_run=min(episodes, EMBED_PER_RUN), basis_episodes=1000, jobs=jobs)


def add_scale_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="source", help="read a finished comparison directory instead of training")
    parser.add_argument("--out", default="runs/paper", help="where to train (if no --from) and write figures")
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--checkpoints", type=int, default=100)
    parser.add_argument("--matches", type=int, default=25)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--seeds", type=parse_seeds, default=list(DEFAULT_SEEDS),
                        help="comma-separated seeds (default 0,1,2); figures of one seed use the first")


def comparison_dir(args: argparse.Namespace, agents=None, schemes=None) -> Path:
    """The directory holding the comparison: ``--from`` as is, or one trained now into ``--out``."""
    if args.source:
        return Path(args.source)
    config = paper_config(args.episodes, args.checkpoints, args.matches, agents, schemes, seeds=args.seeds,
                          jobs=args.jobs)
    compare(config, args.out)
    return Path(args.out)


def run_dir(source: Path, agent: str, scheme: str, seed: int = 0) -> Path:
    return source / "runs" / agent / f"{slug(scheme)}-s{seed}"


def winrate(source: Path, agent: str, scheme: str, seed: int = 0) -> dict:
    data = np.load(run_dir(source, agent, scheme, seed) / "evaluation" / "winrate.npz")
    return {k: data[k] for k in data.files}


def summary(source: Path) -> pd.DataFrame:
    return pd.read_csv(source / "evaluation" / "summary.csv")
