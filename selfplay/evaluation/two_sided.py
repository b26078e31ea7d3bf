"""Evaluating a run with a learner per side (an asymmetric SMAC map).

Side 0's evaluation checkpoints (rows, in seat 0) play side 1's (columns, in seat 1): W[i, j] is the
row's win rate (draws ½). The cross-side game A = W − ½ is zero-sum; its equilibrium (p, q) and value
are solved for both sides, and side 0's checkpoints also play the map's scripted AI. Outputs:
``evaluation/winrate.npz`` (W, p, q, vs_scripted), ``evaluation/summary.json``,
``figures/winrate_matrix.png``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from selfplay.training.registry import env_for_agent
from selfplay.training.rundir import RunDir, open_committed
from selfplay.training.two_sided import SIDES


def evaluate_two_sided(run_dir: str | Path | RunDir, matches: int = 25, seed: int = 0, scripted_games: int = 100,
                       committed: tuple | None = None) -> dict:
    """W[i, j]: side-0 checkpoint i (in seat 0) against side-1 checkpoint j (in seat 1); the zero-sum
    game A = W − ½ solved for both sides; side 0's checkpoints against the map's scripted AI."""
    from selfplay.analysis.nash import solve_zero_sum
    from selfplay.training.matches import play_matches, scripted_win_rates
    from selfplay.utils.io import atomic_write_json

    if committed is None:
        run, state, kit = open_committed(run_dir)
    else:
        run, (state, kit) = run_dir, committed
    cfg = state["config"]
    sides = [run.committed_menagerie(state, f"checkpoints/side{s}", kit.load_policy) for s in SIDES]
    P, Q = [e.policy for e in sides[0]], [e.policy for e in sides[1]]
    ii, jj = np.meshgrid(np.arange(len(P)), np.arange(len(Q)), indexing="ij")
    pairs = np.stack([ii.ravel(), jj.ravel() + len(P)], axis=1)
    env = env_for_agent(cfg["env"], cfg["agent"])
    scores = play_matches(env, P + Q, pairs, matches, seed, kit.stack_policies, home_seat=0)
    W = scores.mean(axis=1).reshape(len(P), len(Q))
    p, q, value = solve_zero_sum(W - 0.5)
    vs_ai = scripted_win_rates(env, P, scripted_games, seed=seed)
    run.evaluation.mkdir(parents=True, exist_ok=True)
    np.savez(run.evaluation / "winrate.npz", W=W, p=p, q=q, vs_scripted=vs_ai)
    _plot_cross_matrix(W, p, q, f"{cfg['scheme']} on {cfg['env']}", run.figures / "winrate_matrix.png")
    summary = {"side0_value": float(value + 0.5), "side0_nash_support": int((p > 1e-6).sum()),
               "side1_nash_support": int((q > 1e-6).sum()), "final_vs_final": float(W[-1, -1]),
               "vs_scripted_first": float(vs_ai[0]), "vs_scripted_final": float(vs_ai[-1])}
    atomic_write_json(run.evaluation / "summary.json", summary)
    return summary


def _plot_cross_matrix(W: np.ndarray, p: np.ndarray, q: np.ndarray, title: str, path: Path) -> None:
    """Heatmap of side 0's checkpoints (rows) against side 1's (columns) with each side's Nash mass."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 5.5), layout="constrained")
    grid = fig.add_gridspec(2, 2, width_ratios=(6, 1), height_ratios=(1, 6))
    ax = fig.add_subplot(grid[1, 0])
    image = ax.imshow(W, cmap="RdBu", vmin=0, vmax=1, interpolation="nearest", aspect="auto")
    ax.set_xlabel("side 1 checkpoint")
    ax.set_ylabel("side 0 checkpoint")
    fig.add_subplot(grid[0, 0], sharex=ax).bar(np.arange(len(q)), q, color="0.3")
    fig.add_subplot(grid[1, 1], sharey=ax).barh(np.arange(len(p)), p, color="0.3")
    fig.colorbar(image, ax=ax, label="side 0 win rate")
    fig.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
