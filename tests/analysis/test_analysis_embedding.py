"""analysis.embedding: seeded t-SNE with deduplication, time-window medians, kernel densities."""

import numpy as np
import pytest
from selfplay.analysis.embedding import TSNEConfig, density_grid, embed, embed_runs, time_window_medians

FAST = TSNEConfig(perplexity=10, exaggeration_iter=100, n_iter=150)


def one_hot_trajectories(n, seed, steps=10, actions=9, sharpness=3.0):
    """Random RirRPS-like trajectory vectors: one one-hot joint action per step."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(actions, 0.3), size=(3, steps)) ** sharpness
    probs /= probs.sum(-1, keepdims=True)
    policy = rng.integers(0, 3, n)
    u = rng.random((n, steps, 1))
    a = np.minimum((u > probs[policy].cumsum(-1)).sum(-1), actions - 1)
    X = np.zeros((n, steps, actions))
    np.put_along_axis(X, a[..., None], 1.0, -1)
    return X.reshape(n, -1), policy


def test_embedding_is_seeded_and_maps_duplicates_to_one_point():
    X, _ = one_hot_trajectories(300, seed=0, sharpness=8.0)
    assert len(np.unique(X, axis=0)) < 200  # the data repeat
    Y1 = embed(X, seed=1, config=FAST)
    Y2 = embed(X, seed=1, config=FAST)
    assert Y1.shape == (300, 2)
    np.testing.assert_array_equal(Y1, Y2)
    assert not np.allclose(Y1, embed(X, seed=2, config=FAST))
    # identical rows, identical points
    _, inverse = np.unique(X, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    for g in np.unique(inverse)[:20]:
        rows = Y1[inverse == g]
        np.testing.assert_array_equal(rows, rows[:1].repeat(len(rows), 0))


def test_embedding_keeps_clusters_apart():
    """Trajectories of three different policies land in three separated groups."""
    X, policy = one_hot_trajectories(400, seed=3, sharpness=6.0)
    Y = embed(X, seed=0, config=FAST)
    centres = np.stack([Y[policy == k].mean(0) for k in range(3)])
    within = np.mean([np.linalg.norm(Y[policy == k] - centres[k], axis=1).mean() for k in range(3)])
    between = min(np.linalg.norm(centres[i] - centres[j]) for i in range(3) for j in range(i + 1, 3))
    assert between > 2 * within


def test_sklearn_backend_and_tiny_inputs():
    X, _ = one_hot_trajectories(60, seed=4)
    Y = embed(X, seed=0, config=TSNEConfig(backend="sklearn", perplexity=5, exaggeration_iter=250, n_iter=50))
    assert Y.shape == (60, 2) and np.all(np.isfinite(Y))
    # fewer than 4 distinct rows: PCA placement, duplicates still together
    Z = embed(np.array([[0, 1.0], [1, 0], [0, 1]]), seed=0)
    np.testing.assert_array_equal(Z[0], Z[2])
    assert not np.array_equal(Z[0], Z[1])


def test_embed_runs_embeds_everything_together():
    X, policy = one_hot_trajectories(240, seed=5)
    basis = {"Rock": X[policy == 0][:20], "Paper": X[policy == 1][:20]}
    # the naive run's last trajectory is the first Rock basis trajectory (and no other row equals it)
    runs = {"naive": np.vstack([X[:99], basis["Rock"][:1]]), "uniform": X[100:]}
    b, r = embed_runs(basis, runs, seed=0, config=FAST)
    assert {k: v.shape for k, v in b.items()} == {"Rock": (20, 2), "Paper": (20, 2)}
    assert r["naive"].shape == (100, 2) and r["uniform"].shape == (140, 2)
    # a basis row that also occurs in a run gets the same point (one common embedding)
    np.testing.assert_array_equal(r["naive"][99], b["Rock"][0])
    others = ~(runs["naive"][:99] == basis["Rock"][0]).all(1)
    assert others.any() and not np.any((r["naive"][:99][others] == b["Rock"][0]).all(1))
    with pytest.raises(ValueError, match="same length"):
        embed_runs({"Rock": np.zeros((3, 4))}, {"a": np.zeros((5, 6))}, seed=0)
    with pytest.raises(ValueError, match="seed"):
        embed(X, seed=0.5)


def test_time_window_medians():
    t = np.arange(100.0)
    points = np.c_[t, -2 * t]
    med = time_window_medians(points, n_windows=20)
    assert med.shape == (20, 2)
    np.testing.assert_allclose(med[:, 0], np.arange(20) * 5 + 2.0)  # median of 5k..5k+4
    np.testing.assert_allclose(med[:, 1], -2 * med[:, 0])
    # uneven split: 7 points in 3 windows → sizes 3, 2, 2
    med = time_window_medians(np.c_[np.arange(7.0), np.zeros(7)], n_windows=3)
    np.testing.assert_allclose(med[:, 0], [1.0, 3.5, 5.5])
    with pytest.raises(ValueError, match="n_windows"):
        time_window_medians(points[:5], n_windows=20)
    with pytest.raises(ValueError, match="shape"):
        time_window_medians(np.zeros((10, 3)))


def test_density_grid_is_a_density_peaking_at_the_data():
    rng = np.random.default_rng(0)
    points = np.r_[rng.normal([0, 0], 0.3, (500, 2)), rng.normal([4, 1], 0.3, (200, 2))]
    xs, ys, Z = density_grid(points, grid=120)
    assert Z.shape == (120, 120)
    integral = Z.sum() * (xs[1] - xs[0]) * (ys[1] - ys[0])
    assert integral == pytest.approx(1.0, abs=1e-2)
    j, i = np.unravel_index(np.argmax(Z), Z.shape)
    assert abs(xs[i]) < 0.3 and abs(ys[j]) < 0.3  # the larger cluster is the highest peak
    # one point, given bandwidth: the closed-form Gaussian
    xs, ys, Z = density_grid(np.array([[0.0, 0.0]]), grid=5, bandwidth=1.0, extent=(-2, 2, -2, 2))
    np.testing.assert_allclose(Z[2, 2], 1 / (2 * np.pi))
    np.testing.assert_allclose(Z[2, 4], np.exp(-2) / (2 * np.pi))
    # weights: a zero-weight point contributes nothing
    xs, ys, Z1 = density_grid(np.array([[0.0, 0.0], [1.0, 1.0]]), grid=5, bandwidth=1.0, extent=(-2, 2, -2, 2),
                              weights=[1.0, 0.0])
    np.testing.assert_allclose(Z1, Z)
    with pytest.raises(ValueError, match="bandwidth"):
        density_grid(points, bandwidth=-1.0)
    with pytest.raises(ValueError, match="extent"):
        density_grid(points, extent=(1, 0, 0, 1))


def test_the_default_schedule_keeps_the_neighbourhoods_of_twice_as_many_iterations():
    """The default 125 + 250 iterations against openTSNE's 250 + 500 on RirRPS-like trajectories:
    scikit-learn's trustworthiness (how many of each point's embedded neighbours are true ones) is as
    good, and the three policies' trajectories stay apart."""
    from sklearn.manifold import trustworthiness

    X, policy = one_hot_trajectories(800, seed=3, sharpness=2.0)
    default = embed(X, seed=0)
    longer = embed(X, seed=0, config=TSNEConfig(exaggeration_iter=250, n_iter=500))
    for k in (5, 15):
        assert trustworthiness(X, default, n_neighbors=k) >= trustworthiness(X, longer, n_neighbors=k) - 0.01
    centres = np.stack([default[policy == p].mean(0) for p in range(3)])
    spread = max(np.linalg.norm(default[policy == p] - centres[p], axis=1).mean() for p in range(3))
    assert min(np.linalg.norm(centres[i] - centres[j]) for i in range(3) for j in range(i + 1, 3)) > spread
