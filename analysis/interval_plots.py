"""Figures of comparisons over seeds (docs/guides/statistics.md): interval estimates per scheme, the matrix of
probabilities of improvement, and curves over training with confidence bands.

Headless like :mod:`analysis.plots`: each function returns a ``matplotlib.figure.Figure`` drawn
with the Agg canvas and, given ``path``, saves a PNG. Intervals without bounds (one seed: NaN)
are drawn as the point alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from .plots import _finish, _new_figure

__all__ = ["plot_interval_estimates", "plot_improvement_matrix", "plot_curves_with_bands"]


def _triple(value, where: str) -> tuple[float, float, float]:
    try:
        est, low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{where} must be (estimate, low, high), got {value!r}") from None
    return est, low, high


def plot_interval_estimates(panels: Mapping[str, Mapping[str, Mapping[str, tuple]]], confidence: float = 0.95,
                            title: str | None = None, path: str | os.PathLike | None = None,
                            limits: Mapping[str, tuple] | None = None) -> Figure:
    """One panel per metric, one row per scheme: each statistic's estimate with its interval.

    ``panels[metric][scheme][statistic] = (estimate, low, high)``, e.g. statistic "mean" and "IQM"
    (drawn as a dot and a diamond, slightly offset). The panel title carries the metric's
    orientation if the caller puts it in the metric's name. ``limits[metric] = (low, high)``: the
    panel's axis spans the metric's whole range (win rates 0–1), so that small differences look small;
    ``None`` for a bound: matplotlib's choice.
    """
    if not panels:
        raise ValueError("panels must hold at least one metric")
    schemes = list(dict.fromkeys(s for rows in panels.values() for s in rows))
    stats = list(dict.fromkeys(k for rows in panels.values() for r in rows.values() for k in r))
    markers = ["o", "D", "s", "^"]
    colours = colormaps["tab10"]
    ncols = min(3, len(panels))
    nrows = int(np.ceil(len(panels) / ncols))
    fig = _new_figure((4.4 * ncols, 0.42 * len(schemes) * nrows + 1.4 * nrows + 0.3))
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    offsets = np.linspace(-0.15, 0.15, len(stats)) if len(stats) > 1 else [0.0]
    for ax, (metric, rows) in zip(axes, panels.items()):
        for s_idx, stat in enumerate(stats):
            for row, scheme in enumerate(schemes):
                if scheme not in rows or stat not in rows[scheme]:
                    continue
                est, low, high = _triple(rows[scheme][stat], f"panels[{metric!r}][{scheme!r}][{stat!r}]")
                y = row + offsets[s_idx]
                colour = colours(row % 10)
                if np.isfinite(low) and np.isfinite(high):
                    ax.plot([low, high], [y, y], color=colour, lw=2.2, alpha=0.8, solid_capstyle="butt")
                ax.plot([est], [y], marker=markers[s_idx % len(markers)], color=colour, ms=6,
                        mfc="white" if s_idx else colour, label=stat if row == 0 else None)
        first_column = list(axes).index(ax) % ncols == 0
        ax.set_yticks(np.arange(len(schemes)), schemes if first_column else [""] * len(schemes))
        ax.set_ylim(len(schemes) - 0.5, -0.5)
        ax.grid(axis="x", color="0.9")
        ax.set_title(metric, fontsize=10)
        _fixed_range(ax.set_xlim, ax.get_xlim, (limits or {}).get(metric))
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    handles = [axes[0].plot([], [], marker=markers[i % len(markers)], color="0.3", ls="",
                            mfc="white" if i else "0.3")[0] for i in range(len(stats))]
    fig.legend(handles, [f"{s} ({confidence:.0%} CI)" for s in stats], loc="lower center", ncol=len(stats),
               frameon=False, bbox_to_anchor=(0.5, -0.02))
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return _finish(fig, path)


def plot_improvement_matrix(P, names: Sequence[str], low=None, high=None, title: str | None = None,
                            path: str | os.PathLike | None = None) -> Figure:
    """P[i, j] = probability that scheme i improves on scheme j, as an annotated heatmap (blue: the
    row improves on the column); with ``low``/``high`` each cell also shows its interval, and a
    cell whose interval excludes ½ is framed (significant). The diagonal is blank."""
    P = np.asarray(P, dtype=float)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] == 0:
        raise ValueError(f"P must be a non-empty square matrix, got shape {P.shape}")
    n = len(P)
    if len(names) != n:
        raise ValueError(f"names must have length {n}, got {len(names)}")
    low = None if low is None else np.asarray(low, dtype=float)
    high = None if high is None else np.asarray(high, dtype=float)
    for name, M in (("low", low), ("high", high)):
        if M is not None and M.shape != P.shape:
            raise ValueError(f"{name} must have the shape of P {P.shape}, got {M.shape}")
    shown = np.where(np.eye(n, dtype=bool), np.nan, P)
    fig = _new_figure((1.25 * n + 2.8, 1.0 * n + 1.6))
    ax = fig.add_subplot(1, 1, 1)
    cmap = colormaps["RdBu"].with_extremes(bad="0.92")
    image = ax.imshow(np.ma.masked_invalid(shown), cmap=cmap, vmin=0, vmax=1, interpolation="nearest")
    ax.set_xticks(np.arange(n), names, rotation=30, ha="right")
    ax.set_yticks(np.arange(n), names)
    for i in range(n):
        for j in range(n):
            if i == j or np.isnan(P[i, j]):
                continue
            text = f"{P[i, j]:.2f}"
            significant = False
            if low is not None and high is not None:
                if np.isfinite(low[i, j]) and np.isfinite(high[i, j]):
                    text += f"\n[{low[i, j]:.2f}, {high[i, j]:.2f}]"
                    significant = low[i, j] > 0.5 or high[i, j] < 0.5
                else:
                    text += "\n(no CI)"
            ax.text(j, i, text, ha="center", va="center", fontsize=7.5,
                    color="white" if abs(P[i, j] - 0.5) > 0.35 else "black",
                    fontweight="bold" if significant else "normal")
            if significant:
                ax.add_patch(_frame(i, j))
    ax.set_xlabel("scheme Y")
    ax.set_ylabel("scheme X")
    ax.set_title(title or "probability that X improves on Y")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="P(X improves on Y)")
    return _finish(fig, path)


def _fixed_range(set_lim, get_lim, bounds: tuple | None) -> None:
    """Set an axis to ``bounds`` (a ``None`` bound keeps matplotlib's), padded by 3 % of the span so that
    points on a bound stay visible."""
    if bounds is None:
        return
    low, high = (b if b is not None else a for a, b in zip(get_lim(), bounds))
    pad = 0.03 * (high - low) if high > low else 0.5
    set_lim(low - pad, high + pad)


def _frame(i: int, j: int):
    from matplotlib.patches import Rectangle

    return Rectangle((j - 0.48, i - 0.48), 0.96, 0.96, fill=False, edgecolor="black", linewidth=1.6)


def plot_curves_with_bands(panels: Mapping[str, Mapping[str, tuple]], xlabel: str = "episodes",
                           title: str | None = None, path: str | os.PathLike | None = None,
                           limits: Mapping[str, tuple] | None = None) -> Figure:
    """One panel per measure, one line per scheme with its confidence band:
    ``panels[measure][scheme] = (x, estimate, low, high)`` (NaN bounds: no band); ``limits[measure] =
    (low, high)``: the y-axis spans the measure's whole range (as ``plot_interval_estimates``)."""
    if not panels:
        raise ValueError("panels must hold at least one measure")
    fig = _new_figure((6.4 * len(panels), 4.4))
    colours = colormaps["tab10"]
    for k, (measure, lines) in enumerate(panels.items()):
        ax = fig.add_subplot(1, len(panels), k + 1)
        for c, (scheme, values) in enumerate(lines.items()):
            try:
                x, est, low, high = (np.asarray(v, dtype=float) for v in values)
            except (TypeError, ValueError):
                raise ValueError(f"panels[{measure!r}][{scheme!r}] must be (x, estimate, low, high)") from None
            if not (len(x) == len(est) == len(low) == len(high)):
                raise ValueError(f"panels[{measure!r}][{scheme!r}]: x, estimate, low, high differ in length")
            colour = colours(c % 10)
            ax.plot(x, est, color=colour, lw=1.8, label=scheme)
            band = np.isfinite(low) & np.isfinite(high)
            if band.any():
                ax.fill_between(x, np.where(band, low, est), np.where(band, high, est), color=colour, alpha=0.18,
                                linewidth=0)
        ax.set_xlabel(xlabel)
        ax.set_title(measure, fontsize=10)
        ax.grid(color="0.92")
        _fixed_range(ax.set_ylim, ax.get_ylim, (limits or {}).get(measure))
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 3), frameon=False, fontsize="small",
               bbox_to_anchor=(0.5, -0.01))
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.06 * ((len(labels) + 2) // 3), 1, 1))
    return _finish(fig, path)
