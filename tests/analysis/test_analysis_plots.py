"""analysis.plots: the figures carry the data they claim to show, and save as PNG."""

import matplotlib.colors as mcolors
import numpy as np
import pytest
from matplotlib.contour import ContourSet
from matplotlib.image import imread
from matplotlib.patches import FancyArrowPatch
from selfplay.analysis.nash import maxent_nash
from selfplay.analysis.plots import (
    plot_checkpoint_curves,
    plot_embedding,
    plot_nash_evolution,
    plot_rpp_table,
    plot_winrate_matrix,
)

RPS_W = np.array([[0.5, 0.0, 1.0], [1.0, 0.5, 0.0], [0.0, 1.0, 0.5]])


def test_winrate_matrix_heatmap_with_nash_strip(tmp_path):
    W = RPS_W[np.ix_([0, 0, 1, 2], [0, 0, 1, 2])]
    path = tmp_path / "wr.png"
    fig = plot_winrate_matrix(W, ids=["R1", "R2", "P", "S"], path=path)
    matrix_ax, strip_ax, colorbar_ax = fig.axes
    np.testing.assert_array_equal(matrix_ax.images[0].get_array(), W)
    bars = [patch.get_width() for patch in strip_ax.patches]
    np.testing.assert_allclose(bars, maxent_nash(W - 0.5), atol=1e-12)
    np.testing.assert_allclose(bars, [1 / 6, 1 / 6, 1 / 3, 1 / 3], atol=1e-12)
    assert [t.get_text() for t in matrix_ax.get_yticklabels()] == ["R1", "R2", "P", "S"]
    image = imread(path)
    assert image.shape[0] > 300 and image.shape[1] > 300 and image[..., :3].std() > 0.1


def test_winrate_matrix_with_missing_cells_needs_p():
    W = RPS_W.copy()
    W[0, 1] = W[1, 0] = np.nan
    fig = plot_winrate_matrix(W)
    assert len(fig.axes[1].patches) == 0  # no Nash strip without a complete matrix
    fig = plot_winrate_matrix(W, p=[0.2, 0.3, 0.5])
    np.testing.assert_allclose([b.get_width() for b in fig.axes[1].patches], [0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="p must have shape"):
        plot_winrate_matrix(RPS_W, p=[1.0])


def test_nash_evolution_image():
    A = RPS_W - 0.5
    fig = plot_nash_evolution(A)
    data = fig.axes[0].images[0].get_array()
    assert data.shape == (3, 3)
    np.testing.assert_allclose(data[0].compressed(), [1.0])  # k = 1: all mass on checkpoint 0
    np.testing.assert_allclose(data[1].compressed(), [0.0, 1.0])  # Paper beats Rock
    np.testing.assert_allclose(data[2], [1 / 3] * 3)
    assert data.mask[0, 1] and data.mask[0, 2] and not data.mask[2].any()  # not yet there


def test_embedding_figure(tmp_path):
    rng = np.random.default_rng(0)
    basis = {name: rng.normal(centre, 0.2, (15, 2))
             for name, centre in {"Rock": (0, 0), "Paper": (4, 0), "Scissors": (2, 3)}.items()}
    runs = {"naive": rng.normal(2, 1.5, (200, 2)), "uniform": np.linspace((0, 0), (4, 0), 120),
            "psro": rng.normal(0, 1, (50, 2))}
    fig = plot_embedding(basis, runs, n_windows=20, path=tmp_path / "emb.png")
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_title() in runs]
    assert [ax.get_title() for ax in panels] == ["naive", "uniform", "psro"]
    for ax, (name, pts) in zip(panels, runs.items()):
        arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
        assert len(arrows) == 19  # 20 window medians joined by 19 arrows
        colours = [mcolors.to_hex(a.get_edgecolor()) for a in arrows]
        assert colours[0] != colours[-1]  # coloured along time
        # dashed density contours
        contours = [c for c in ax.collections if isinstance(c, ContourSet)]
        assert len(contours) == 1
        offset, dashes = contours[0].get_linestyles()[0]
        assert dashes is not None  # dashed, not solid
        # the reference clusters in the paper's colours
        scatter_colours = {mcolors.to_hex(c.get_facecolor()[0]): len(c.get_offsets()) for c in ax.collections
                           if len(c.get_offsets()) == 15}
        assert {mcolors.to_hex("tab:green"), mcolors.to_hex("tab:purple"), mcolors.to_hex("tab:red")} <= set(
            scatter_colours)
    # the uniform run's path follows its straight line from left to right, starting at the black dot
    start = [c for c in panels[1].collections if len(c.get_offsets()) == 1][-1]
    assert mcolors.to_hex(start.get_facecolor()[0]) == "#000000"
    assert start.get_offsets()[0][0] < 0.2
    assert (tmp_path / "emb.png").stat().st_size > 10_000
    with pytest.raises(ValueError, match="run_points"):
        plot_embedding(basis, {})


def test_rpp_table():
    R = np.array([[0.0, 0.25, -0.5], [-0.25, 0.0, 0.1], [0.5, -0.1, 0.0]])
    fig = plot_rpp_table(R, ["naive", "uniform", "psro"])
    ax = fig.axes[0]
    np.testing.assert_array_equal(ax.images[0].get_array(), R)
    texts = [t.get_text() for t in ax.texts]
    assert texts[1] == "+0.25" and texts[2] == "-0.50" and len(texts) == 9
    with pytest.raises(ValueError, match="names"):
        plot_rpp_table(R, ["a"])


def test_checkpoint_curves_one_panel_per_measure_one_line_per_player(tmp_path):
    curves = {"vs start": {"main_0": ([0, 10, 20], [0.45, 0.8, 0.9]), "exploiter": ([15], [0.7])},
              "vs scripted AI": {"main_0": ([0, 10, 20], [0.4, 0.9, 1.0])}}
    fig = plot_checkpoint_curves(curves, path=tmp_path / "c.png")
    assert [ax.get_title() for ax in fig.axes] == ["vs start", "vs scripted AI"]
    main = fig.axes[0].lines[0]
    np.testing.assert_array_equal(main.get_xdata(), [0, 10, 20])
    np.testing.assert_array_equal(main.get_ydata(), [0.45, 0.8, 0.9])
    assert len(fig.axes[0].lines) == 3  # two players and the ½ line
    assert (tmp_path / "c.png").exists()
    with pytest.raises(ValueError, match="differ in length"):
        plot_checkpoint_curves({"m": {"p": ([0, 1], [0.5])}})
    with pytest.raises(ValueError, match="at least one"):
        plot_checkpoint_curves({})
