"""Time of the trajectory embedding (analysis.embedding) on RirRPS-like data, by backend.

Synthetic trajectories: 10 steps of one-hot joint actions (90 dims) drawn from six
near-deterministic policies (sharpness controls how often games repeat, as trained RirRPS
policies do). Prints the number of distinct rows, and the time of the deduplicated openTSNE
embedding (the default), of scikit-learn's Barnes–Hut on the same distinct rows, and of
openTSNE without deduplication (only with --no-dedupe-too, it is slow).

    python benchmarks/embedding.py            # 60 000 trajectories
    python benchmarks/embedding.py --quick    # 6 000 trajectories
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from selfplay.analysis.embedding import TSNEConfig, embed
from threadpoolctl import threadpool_limits


def trajectories(n: int, seed: int, sharpness: float, steps: int = 10, actions: int = 9) -> np.ndarray:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(actions, 0.3), size=(6, steps)) ** sharpness
    probs /= probs.sum(-1, keepdims=True)
    policy = rng.integers(0, 6, n)
    u = rng.random((n, steps, 1))
    a = np.minimum((u > probs[policy].cumsum(-1)).sum(-1), actions - 1)
    X = np.zeros((n, steps, actions), dtype=np.float32)
    np.put_along_axis(X, a[..., None], 1.0, -1)
    return X.reshape(n, -1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="6 000 trajectories instead of 60 000")
    parser.add_argument("--sharpness", type=float, default=3.0, help="higher: more repeated games")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sklearn", action="store_true", help="also time scikit-learn's t-SNE")
    parser.add_argument("--no-dedupe-too", action="store_true", help="also time openTSNE on all rows")
    args = parser.parse_args()
    n = 6_000 if args.quick else 60_000
    X = trajectories(n, seed=0, sharpness=args.sharpness)
    print(f"{n} trajectories, {X.shape[1]} dims, {len(np.unique(X, axis=0))} distinct")
    runs = [("openTSNE, deduplicated", TSNEConfig(n_jobs=args.threads))]
    if args.sklearn:
        runs.append(("scikit-learn, deduplicated", TSNEConfig(backend="sklearn", n_jobs=args.threads)))
    if args.no_dedupe_too:
        runs.append(("openTSNE, all rows", TSNEConfig(n_jobs=args.threads, dedupe=False)))
    with threadpool_limits(limits=args.threads):
        for label, config in runs:
            start = time.perf_counter()
            Y = embed(X, seed=0, config=config)
            print(f"{label:<28}{time.perf_counter() - start:8.1f} s   (output {Y.shape})", flush=True)


if __name__ == "__main__":
    main()
