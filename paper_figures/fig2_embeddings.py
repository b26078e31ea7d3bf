"""The paper's Fig. 2: t-SNE trajectory embeddings of naive SP, δ=0-Uniform and δ=0-Limit-Uniform,
for MLP-PPO (top row) and RNN-PPO (bottom row), the runs and the reference agents embedded
together (docs/design/selfplay.md §6): the comparison's joint embedding of the seed (every scheme of both agents,
``embed_per_run`` trajectories of each run) when it has one, else a fit of the six runs here.

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


def saved_embedding(source: Path, seed: int = 0) -> tuple[dict, dict] | None:
    """The comparison's own joint t-SNE of ``seed`` (``runs/<agent>/embedding_s<seed>.npz``, written by
    ``selfplay compare``: every agent's runs and the basis in one fit) restricted to Fig. 2's runs, or
    ``None`` when it is missing or its agents were fitted separately (their basis points differ)."""
    basis, runs = None, {}
    for agent in AGENTS:
        path = Path(source) / "runs" / agent / f"embedding_s{seed}.npz"
        if not path.exists():
            return None
        data = np.load(path)
        mine = {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith("basis/")}
        if basis is not None and (mine.keys() != basis.keys() or any(not np.array_equal(basis[k], mine[k]) for k in mine)):
            return None
        basis = mine
        for scheme in SCHEMES:
            if f"run/{scheme}" not in data.files:
                return None
            runs[f"{LABELS[scheme]} ({AGENT_LABELS[agent]})"] = data[f"run/{scheme}"]
    return basis, runs


def make_figure(source: Path, out: Path, seed: int = 0, basis_episodes: int = 1000):
    """Fig. 2 from the comparison's joint embedding of ``seed`` when it has one (``saved_embedding``),
    else from a t-SNE of the six runs' trajectories and the basis fitted here."""
    from selfplay.agents.reference import embedding_basis
    from selfplay.analysis.embedding import embed_runs
    from selfplay.analysis.plots import plot_embedding

    from selfplay.training.registry import make_env

    saved = saved_embedding(source, seed)
    if saved is not None:
        return plot_embedding(*saved, ncols=3, title="Trajectory embeddings (t-SNE), RirRPS",
                              path=out / "figures" / "fig2_embeddings.png")
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
    make_figure(source, out, seed=args.seeds[0])
    print(f"wrote {out / 'figures' / 'fig2_embeddings.png'}")
    return out / "figures" / "fig2_embeddings.png"


if __name__ == "__main__":
    main()
