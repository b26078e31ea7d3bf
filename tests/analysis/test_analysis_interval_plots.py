"""analysis.interval_plots: the figures carry the intervals they claim to show, and save as PNG."""

import numpy as np
import pytest
from matplotlib.image import imread
from selfplay.analysis.interval_plots import plot_curves_with_bands, plot_improvement_matrix, plot_interval_estimates


def test_interval_estimates_draw_each_interval_and_only_the_point_without_one(tmp_path):
    panels = {"win rate (↑ better)": {"naive": {"mean": (0.5, 0.4, 0.6), "IQM": (0.55, 0.45, 0.65)},
                                      "psro": {"mean": (0.7, np.nan, np.nan), "IQM": (0.7, np.nan, np.nan)}}}
    path = tmp_path / "iv.png"
    fig = plot_interval_estimates(panels, path=path)
    ax = fig.axes[0]
    segments = sorted(tuple(line.get_xdata()) for line in ax.lines if len(line.get_xdata()) == 2)
    assert segments == [(0.4, 0.6), (0.45, 0.65)]  # psro has no interval: no segment
    points = sorted(float(line.get_xdata()[0]) for line in ax.lines if len(line.get_xdata()) == 1)
    assert points == pytest.approx([0.5, 0.55, 0.7, 0.7])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["naive", "psro"]
    assert imread(path).shape[0] > 100
    with pytest.raises(ValueError, match="must be \\(estimate, low, high\\)"):
        plot_interval_estimates({"m": {"a": {"mean": (1.0, 2.0)}}})
    with pytest.raises(ValueError, match="at least one metric"):
        plot_interval_estimates({})


def test_improvement_matrix_shows_probabilities_intervals_and_frames_significant_cells():
    P = np.array([[np.nan, 0.9], [0.1, np.nan]])
    low = np.array([[np.nan, 0.6], [0.0, np.nan]])
    high = np.array([[np.nan, 1.0], [0.4, np.nan]])
    fig = plot_improvement_matrix(P, ["a", "b"], low, high)
    ax = fig.axes[0]
    texts = sorted(t.get_text() for t in ax.texts)
    assert texts == ["0.10\n[0.00, 0.40]", "0.90\n[0.60, 1.00]"]
    assert len(ax.patches) == 2  # both intervals exclude ½: both cells framed
    fig = plot_improvement_matrix(np.array([[0.5, 0.5], [0.5, 0.5]]), ["a", "b"], np.full((2, 2), np.nan),
                                  np.full((2, 2), np.nan))
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["0.50\n(no CI)"] * 2 and not fig.axes[0].patches
    with pytest.raises(ValueError, match="names must have length 2"):
        plot_improvement_matrix(P, ["a"])
    with pytest.raises(ValueError, match="low must have the shape"):
        plot_improvement_matrix(P, ["a", "b"], low=np.zeros(3))


def test_curves_with_bands():
    x = np.array([1.0, 2.0, 3.0])
    fig = plot_curves_with_bands({"support": {"naive": (x, [1, 2, 3], [0.5, 1.5, 2.5], [1.5, 2.5, 3.5]),
                                              "psro": (x, [1, 1, 1], [np.nan] * 3, [np.nan] * 3)}})
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.lines] == ["naive", "psro"]
    assert len(ax.collections) == 1  # one band: psro has no interval
    band = ax.collections[0].get_paths()[0].vertices
    assert band[:, 1].min() == pytest.approx(0.5) and band[:, 1].max() == pytest.approx(3.5)
    with pytest.raises(ValueError, match="differ in length"):
        plot_curves_with_bands({"s": {"a": (x, [1, 2], [1, 2], [1, 2])}})


def test_axes_span_each_metrics_whole_range_when_given():
    """Win rates 0.50 and 0.52 on a 0–1 axis look close; without limits the axis zooms onto them."""
    panels = {"win rate": {"A": {"mean": (0.50, 0.49, 0.51)}, "B": {"mean": (0.52, 0.51, 0.53)}},
              "support": {"A": {"mean": (3.0, 2.0, 4.0)}, "B": {"mean": (5.0, 4.0, 6.0)}}}
    fig = plot_interval_estimates(panels, limits={"win rate": (0.0, 1.0), "support": (1, None)})
    rate, support = fig.axes[:2]
    assert rate.get_xlim() == pytest.approx((-0.03, 1.03))
    assert 0.8 < support.get_xlim()[0] < 1 < 6 < support.get_xlim()[1]  # from 1, the top left to matplotlib
    zoomed = plot_interval_estimates(panels).axes[0]
    assert zoomed.get_xlim()[1] - zoomed.get_xlim()[0] < 0.1
    curves = {"win rate": {"A": ([1, 2], [0.5, 0.52], [0.45, 0.5], [0.55, 0.6])}}
    ax = plot_curves_with_bands(curves, limits={"win rate": (0.0, 1.0)}).axes[0]
    assert ax.get_ylim() == pytest.approx((-0.03, 1.03))
