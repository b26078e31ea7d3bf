"""Paper-style figures: win-rate matrices with their Nash, the maxent Nash's evolution, the
trajectory-embedding figure and the relative-population-performance table (docs/design/selfplay.md §6–7).

Headless: figures are ``matplotlib.figure.Figure`` objects drawn with the Agg canvas (no pyplot
state, nothing to close). Every function returns the figure and, given ``path``, saves a PNG.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch
from matplotlib.ticker import FuncFormatter, MaxNLocator
from selfplay.analysis.embedding import _as_points, density_grid, time_window_medians
from selfplay.analysis.nash import maxent_nash, maxent_nash_evolution
from selfplay.analysis.winrate import WinrateMatrix, _as_winrates, evaluation_matrix

__all__ = [
    "REFERENCE_COLOURS",
    "plot_winrate_matrix",
    "plot_nash_evolution",
    "plot_embedding",
    "plot_rpp_table",
    "plot_checkpoint_curves",
    "plot_exploitability_curves",
]

# The paper's colours for the reference clusters.
REFERENCE_COLOURS = {"Rock": "tab:green", "Paper": "tab:purple", "Scissors": "tab:red"}


def _new_figure(figsize) -> Figure:
    fig = Figure(figsize=figsize, dpi=110)
    FigureCanvasAgg(fig)
    return fig


def _finish(fig: Figure, path: str | os.PathLike | None) -> Figure:
    if path is not None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        fig.savefig(path, dpi=fig.dpi, bbox_inches="tight")
    return fig


def _tick_labels(ax, labels, axis: str, max_ticks: int = 20) -> None:
    n = len(labels)
    step = max(1, int(np.ceil(n / max_ticks)))
    ticks = np.arange(0, n, step)
    setter = ax.set_xticks if axis == "x" else ax.set_yticks
    text = [str(labels[i]) for i in ticks]
    # long x labels (checkpoint names) stand upright so they do not overlap
    rotation = 90 if axis == "x" and max((len(t) for t in text), default=0) * len(text) > 60 else 0
    setter(ticks, text, rotation=rotation)


def plot_winrate_matrix(W, p=None, ids: Sequence | None = None, title: str | None = None,
                        path: str | os.PathLike | None = None) -> Figure:
    """Heatmap of W (row player's win rate against the column player; blue wins, red losses)
    with the maxent Nash p of A = W − ½ as a bar strip alongside (one bar per row).

    ``p`` defaults to ``maxent_nash(evaluation_matrix(W))``; ``ids`` label the checkpoints.
    Cells without matches (NaN) are drawn grey (then p must be given, or no strip is drawn).
    """
    if isinstance(W, WinrateMatrix):
        ids = W.ids if ids is None else ids
        W = W.W
    W = np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] == 0:
        raise ValueError(f"W must be a non-empty square matrix, got shape {W.shape}")
    n = len(W)
    ids = np.arange(n) if ids is None else np.asarray(ids)
    if len(ids) != n:
        raise ValueError(f"ids must have length {n}, got {len(ids)}")
    if p is None and not np.isnan(W).any():
        p = maxent_nash(evaluation_matrix(_as_winrates(W)))
    fig = _new_figure((7.2, 5.6))
    grid = fig.add_gridspec(1, 3, width_ratios=[1.0, 0.22, 0.04], wspace=0.06)
    ax = fig.add_subplot(grid[0, 0])
    cmap = colormaps["RdBu"].with_extremes(bad="0.85")  # grey: pair never played
    image = ax.imshow(np.ma.masked_invalid(W), cmap=cmap, vmin=0, vmax=1, interpolation="nearest", aspect="auto")
    _tick_labels(ax, ids, "x")
    _tick_labels(ax, ids, "y")
    ax.set_xlabel("opponent (checkpoint)")
    ax.set_ylabel("player (checkpoint)")
    ax.set_title(title or "win rate of row against column")
    strip = fig.add_subplot(grid[0, 1], sharey=ax)
    if p is not None:
        p = np.asarray(p, dtype=float)
        if p.shape != (n,):
            raise ValueError(f"p must have shape ({n},), got {p.shape}")
        strip.barh(np.arange(n), p, height=0.8, color="0.25")
        strip.set_xlim(0, max(1e-12, p.max()) * 1.1)
    strip.set_xlabel("maxent\nNash p")
    strip.tick_params(axis="y", left=False, labelleft=False)
    strip.spines[["top", "right"]].set_visible(False)
    colorbar_ax = fig.add_subplot(grid[0, 2])
    fig.colorbar(image, cax=colorbar_ax, label="win rate")
    return _finish(fig, path)


def plot_nash_evolution(A, ids: Sequence | None = None, title: str | None = None,
                        path: str | os.PathLike | None = None, evolution: np.ndarray | None = None) -> Figure:
    """The maxent Nash of the first k checkpoints, for k = 1..n, as an image: row k, column j is
    checkpoint j's mass in the equilibrium of the first k (blank where j ≥ k: not yet there).

    ``A`` is the antisymmetric evaluation matrix of the checkpoints in training order; ``evolution``:
    ``maxent_nash_evolution(A)`` when already computed (else computed here).
    """
    P = maxent_nash_evolution(A) if evolution is None else np.asarray(evolution)
    if P.shape != np.shape(A):
        raise ValueError(f"evolution must have the shape of A {np.shape(A)}, got {P.shape}")
    n = len(P)
    ids = np.arange(n) if ids is None else np.asarray(ids)
    if len(ids) != n:
        raise ValueError(f"ids must have length {n}, got {len(ids)}")
    shown = np.where(np.tri(n, dtype=bool), P, np.nan)
    fig = _new_figure((6.4, 5.4))
    ax = fig.add_subplot(1, 1, 1)
    cmap = colormaps["magma_r"].with_extremes(bad="0.9")  # grey: checkpoint not yet in the population
    image = ax.imshow(np.ma.masked_invalid(shown), cmap=cmap, vmin=0, vmax=1, interpolation="nearest",
                      aspect="auto", extent=(-0.5, n - 0.5, n + 0.5, 0.5))
    _tick_labels(ax, ids, "x")
    ax.set_xlabel("checkpoint")
    ax.set_ylabel("population size k (first k checkpoints)")
    ax.set_title(title or "maxent Nash of the first k checkpoints")
    fig.colorbar(image, ax=ax, label="Nash mass", fraction=0.05, pad=0.03)
    return _finish(fig, path)


def plot_embedding(basis_points: Mapping[str, np.ndarray], run_points: Mapping[str, np.ndarray],
                   n_windows: int = 20, ncols: int | None = None, grid: int = 120,
                   title: str | None = None, path: str | os.PathLike | None = None) -> Figure:
    """The paper's trajectory-embedding figure: one panel per run, all on the same axes limits.

    Each panel: the run's kernel-density heightmap as dashed contours, its points, the
    reference clusters (Rock green, Paper purple, Scissors red; other basis agents in grey
    shades), and the time-window path — medians of ``n_windows`` time buckets joined by arrows
    coloured along time (viridis, dark = early) from a black start dot.
    """
    if not run_points:
        raise ValueError("run_points must hold at least one run")
    basis = {name: _as_points(v, f"basis_points[{name!r}]") for name, v in basis_points.items()}
    runs = {name: _as_points(v, f"run_points[{name!r}]") for name, v in run_points.items()}
    everything = np.vstack(list(basis.values()) + list(runs.values()))
    lo, hi = everything.min(axis=0), everything.max(axis=0)
    pad = 0.06 * np.maximum(hi - lo, 1e-9)
    extent = (lo[0] - pad[0], hi[0] + pad[0], lo[1] - pad[1], hi[1] + pad[1])
    k = len(runs)
    ncols = ncols or min(k, 3)
    nrows = int(np.ceil(k / ncols))
    fig = _new_figure((4.2 * ncols, 4.0 * nrows + 0.4))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    time_cmap = colormaps["viridis"]
    other_shades = iter(colormaps["Greys"](np.linspace(0.45, 0.85, max(1, len(basis)))))
    colours = {name: REFERENCE_COLOURS.get(name) or next(other_shades) for name in basis}
    for ax, (name, points) in zip(axes.flat, runs.items()):
        xs, ys, Z = density_grid(points, grid=grid, extent=extent)
        if Z.max() > 0:
            levels = np.linspace(Z.max() / 8, Z.max(), 7)
            ax.contour(xs, ys, Z, levels=levels, colors="0.35", linestyles="dashed", linewidths=0.8)
        ax.scatter(points[:, 0], points[:, 1], s=5, color="0.45", alpha=0.4, linewidths=0, label="trajectories")
        for ref, pts in basis.items():
            ax.scatter(pts[:, 0], pts[:, 1], s=14, color=colours[ref], alpha=0.9, linewidths=0, label=ref)
        windows = min(n_windows, len(points))
        medians = time_window_medians(points, windows)
        for t in range(len(medians) - 1):
            colour = time_cmap(t / max(1, len(medians) - 2))
            ax.add_patch(FancyArrowPatch(medians[t], medians[t + 1], arrowstyle="-|>", mutation_scale=11,
                                         color=colour, linewidth=1.6, shrinkA=0, shrinkB=0, zorder=5))
        ax.scatter(*medians[0], s=42, color="black", zorder=6, label="start")
        ax.set_xlim(extent[0], extent[1])
        ax.set_ylim(extent[2], extent[3])
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(name)
    for ax in list(axes.flat)[k:]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower left", ncol=len(labels), frameon=False, markerscale=2,
               bbox_to_anchor=(0.0, 0.0))
    if title:
        fig.suptitle(title, y=1.03)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    time_bar = fig.add_axes((0.72, 0.03, 0.25, 0.015))
    fig.colorbar(ScalarMappable(cmap=time_cmap), cax=time_bar, orientation="horizontal",
                 ticks=[0, 1]).set_ticklabels(["early", "late"])
    time_bar.set_title("time window", fontsize=9)
    return _finish(fig, path)


def plot_rpp_table(R, names: Sequence[str], title: str | None = None,
                   path: str | os.PathLike | None = None) -> Figure:
    """Relative population performance table as an annotated heatmap: R[i, j] = v(P_i, P_j),
    the value of the game between the final populations of runs i (row) and j (column);
    blue: the row population wins, red: it loses. R must be antisymmetric."""
    R = np.asarray(R, dtype=float)
    if R.ndim != 2 or R.shape[0] != R.shape[1] or R.shape[0] == 0:
        raise ValueError(f"R must be a non-empty square matrix, got shape {R.shape}")
    if len(names) != len(R):
        raise ValueError(f"names must have length {len(R)}, got {len(names)}")
    n = len(R)
    bound = max(1e-12, float(np.nanmax(np.abs(R))))
    fig = _new_figure((1.1 * n + 2.6, 0.9 * n + 1.6))
    ax = fig.add_subplot(1, 1, 1)
    image = ax.imshow(R, cmap="RdBu", vmin=-bound, vmax=bound, interpolation="nearest")
    ax.set_xticks(np.arange(n), names, rotation=30, ha="right")
    ax.set_yticks(np.arange(n), names)
    for i in range(n):
        for j in range(n):
            ax.text(j, i, f"{R[i, j]:+.2f}", ha="center", va="center", fontsize=9,
                    color="white" if abs(R[i, j]) > 0.6 * bound else "black")
    ax.set_xlabel("population Q")
    ax.set_ylabel("population P")
    ax.set_title(title or "relative population performance v(P, Q)")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return _finish(fig, path)


def plot_checkpoint_curves(curves: Mapping[str, Mapping[str, tuple[Sequence, Sequence]]], ylabel: str = "win rate",
                           title: str | None = None, path: str | os.PathLike | None = None) -> Figure:
    """One panel per measure, one line per player: ``curves[measure][player] = (steps, values)`` —
    e.g. each league player's checkpoints against the starting policy and against a scripted AI,
    over training steps; ½ is dotted (an even match)."""
    if not curves:
        raise ValueError("curves must hold at least one measure")
    fig = _new_figure((5.2 * len(curves), 3.8))
    for k, (measure, lines) in enumerate(curves.items()):
        ax = fig.add_subplot(1, len(curves), k + 1)
        for player, (x, y) in lines.items():
            if len(x) != len(y):
                raise ValueError(f"curves[{measure!r}][{player!r}]: steps and values differ in length")
            ax.plot(np.asarray(x), np.asarray(y), marker="o", label=player)
        ax.axhline(0.5, color="0.6", linestyle=":", linewidth=1)
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k" if abs(v) >= 1000 else f"{v:g}"))
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("learner steps")
        ax.set_ylabel(ylabel)
        ax.set_title(measure)
        ax.legend(fontsize="small")
    if title:
        fig.suptitle(title, y=1.03)
    return _finish(fig, path)


def plot_exploitability_curves(curves: Mapping[str, tuple[Sequence, Sequence, Sequence]], title: str | None = None,
                               path: str | os.PathLike | None = None) -> Figure:
    """Two panels over training episodes, one line per run: the exploitability (NashConv/2) of each
    evaluation checkpoint, and of the maxent-Nash mixture of the checkpoints up to it.
    ``curves[label] = (episodes, exploitability, nash_mixture_exploitability)``; 0 is a Nash equilibrium."""
    if not curves:
        raise ValueError("curves must hold at least one run")
    fig = _new_figure((10.4, 3.8))
    axes = [fig.add_subplot(1, 2, k + 1) for k in range(2)]
    for label, (x, own, mixed) in curves.items():
        if not len(x) == len(own) == len(mixed):
            raise ValueError(f"curves[{label!r}]: episodes and exploitabilities differ in length")
        axes[0].plot(np.asarray(x), np.asarray(own), marker="o", markersize=3, label=label)
        axes[1].plot(np.asarray(x), np.asarray(mixed), marker="o", markersize=3, label=label)
    for ax, measure in zip(axes, ("checkpoint policy", "maxent-Nash mixture of checkpoints so far")):
        ax.axhline(0.0, color="0.6", linestyle=":", linewidth=1)
        ax.set_ylim(bottom=0.0)
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.set_xlabel("episodes")
        ax.set_ylabel("exploitability (NashConv / 2)")
        ax.set_title(measure)
    axes[1].legend(fontsize="small")
    if title:
        fig.suptitle(title, y=1.03)
    return _finish(fig, path)
