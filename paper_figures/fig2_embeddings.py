"""The paper's Fig. 2: t-SNE trajectory embeddings of naive SP, δ=0-Uniform and δ=0-Limit-Uniform,
for MLP-PPO (top row) and RNN-PPO (bottom row), all six runs and the reference agents embedded
together (spec-selfplay §6).

    python -m paper_figures.fig2_embeddings --from runs/paper      # from a finished make_all
    python -m paper_figures.fig2_embeddings --out runs/fig2        # trains what it needs first
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from paper_figures.common import AGENT_LABELS, AGENTS, add_scale_arguments, comparison_dir, run_dir

SCHEMES = ["naive", "delta-uniform:delta=0", "delta-limit-uniform:delta=0"]
LABELS = {"naive": "Naive SP", "delta-uniform:delta=0": "δ=0-Uniform", "delta-limit-uniform:delta=0": "δ=0-Limit-Uniform"}


def make_figure(source: Path, out: Path, seed: int = 0, basis_episodes: int = 1000):
    from selfplay.agents.reference import embedding_basis
    from selfplay.analysis.embedding import embed_runs
    from selfplay.analysis.plots import plot_embedding
    from selfplay.training.registry import make_env

    basis = embedding_basis(make_env("rirrps", 250, seed=seed), episodes=basis_episodes, seed=seed)
    basis = {name.capitalize(): v.astype(np.float32) for name, v in basis.items()}
    runs = {}
    for agent in AGENTS:
        for scheme in SCHEMES:
            path = run_dir(source, agent, scheme, seed) / "trajectories.npz"
            if path.exists():
                runs[f"{LABELS[scheme]} ({AGENT_LABELS[agent]})"] = np.load(path)["vectors"].astype(np.float32)
    if not runs:
        raise ValueError(f"no trajectories of {SCHEMES} under {source}/runs")
    basis_points, run_points = embed_runs(basis, runs, seed=seed)
    return plot_embedding(basis_points, run_points, ncols=3, title="Trajectory embeddings (t-SNE), RirRPS",
                          path=out / "figures" / "fig2_embeddings.png")


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_scale_arguments(parser)
    args = parser.parse_args(argv)
    source = comparison_dir(args, schemes=SCHEMES)
    out = Path(args.out if not args.source else args.source)
    make_figure(source, out)
    print(f"wrote {out / 'figures' / 'fig2_embeddings.png'}")
    return out / "figures" / "fig2_embeddings.png"


if __name__ == "__main__":
    main()
