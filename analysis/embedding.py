"""t-SNE embeddings of trajectory vectors, time-window medians and kernel densities (docs/design/selfplay.md §6).

Each episode's trajectory is a fixed-length vector (RirRPS: the joint-action one-hots of the
9 steps after the first). The basis trajectories (reference agents) and all runs' trajectories
are embedded *together* in 2-D so that the runs' pictures are comparable. Two cues per run:
a kernel-density heightmap of its points, and the time-window path (the median point of each
of 20 consecutive buckets of its time-sorted trajectories).

Speed. RirRPS trajectories repeat a lot (near-deterministic policies replay the same games),
so t-SNE runs on the *distinct* rows only and every copy of a row gets its row's point:
60 000 trajectories typically hold ~10 000 distinct rows. The default backend is openTSNE
(FFT-accelerated interpolation, Linderman et al. 2019), which scales linearly in the number of
points; scikit-learn's Barnes–Hut t-SNE is available as ``backend="sklearn"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["TSNEConfig", "embed", "embed_runs", "time_window_medians", "density_grid"]

BACKENDS = ("opentsne", "sklearn")


@dataclass(frozen=True)
class TSNEConfig:
    """Settings of the t-SNE embedding.

    perplexity: effective number of neighbours (lowered to (m − 1)/3 for m distinct rows when
    m is small); exaggeration_iter / n_iter: iterations with early exaggeration (12) and
    without; backend: "opentsne" or "sklearn"; n_jobs: threads (1 keeps a seed's result
    bit-for-bit reproducible); dedupe: embed the distinct rows once.

    The schedule, 125 + 250 iterations, is half openTSNE's 250 + 500: on the default comparison's
    joint fits (≈ 19 400 distinct RirRPS trajectories and the reference basis, seeds 0 and 1) it keeps
    the neighbourhood structure — scikit-learn's trustworthiness at 5 / 15 / 30 neighbours equal to
    the longer schedule's within 0.002 — in about half the time (docs/results/speed.md).
    """

    perplexity: float = 30.0
    exaggeration_iter: int = 125
    n_iter: int = 250
    backend: str = "opentsne"
    n_jobs: int = 1
    dedupe: bool = True

    def __post_init__(self):
        if not self.perplexity > 0:
            raise ValueError(f"perplexity must be > 0, got {self.perplexity!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        for name in ("exaggeration_iter", "n_iter", "n_jobs"):
            value = getattr(self, name)
            least = 1 if name == "n_jobs" else 0
            if not (isinstance(value, int) and value >= least):
                raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
        if self.backend == "sklearn" and self.exaggeration_iter + self.n_iter < 250:
            raise ValueError("with backend='sklearn', exaggeration_iter + n_iter must be >= 250 "
                             "(scikit-learn's fixed early-exaggeration phase)")


def _as_rows(X, name: str) -> np.ndarray:
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 2-D numeric array (one trajectory vector per row)") from None
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (one trajectory per row), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} must contain only finite numbers")
    return X


def embed(X, seed: int, config: TSNEConfig = TSNEConfig()) -> np.ndarray:
    """2-D t-SNE embedding of the rows of X, shape (n, 2); identical rows get identical points.

    Same seed, same config, same result. With fewer than 4 distinct rows (too few for
    t-SNE's neighbourhoods) the distinct rows are placed by PCA instead.
    """
    X = _as_rows(X, "X")
    if not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    if config.dedupe:
        distinct, inverse = np.unique(X, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
    else:
        distinct, inverse = X, np.arange(len(X))
    return _tsne(distinct, int(seed), config)[inverse]


def _tsne(X: np.ndarray, seed: int, config: TSNEConfig) -> np.ndarray:
    m = len(X)
    if m < 4:
        centred = X - X.mean(axis=0)
        _, _, vt = np.linalg.svd(centred, full_matrices=False)
        out = np.zeros((m, 2))
        proj = centred @ vt[:2].T
        out[:, : proj.shape[1]] = proj
        return out
    perplexity = min(config.perplexity, (m - 1) / 3)
    if config.backend == "opentsne":
        from openTSNE import TSNE

        model = TSNE(perplexity=perplexity, early_exaggeration_iter=config.exaggeration_iter,
                     n_iter=config.n_iter, n_jobs=config.n_jobs, random_state=seed,
                     neighbors="exact" if m < 1000 else "annoy", verbose=False)
        return np.asarray(model.fit(X), dtype=float)
    from sklearn.manifold import TSNE

    model = TSNE(perplexity=perplexity, max_iter=config.exaggeration_iter + config.n_iter, init="pca",
                 random_state=seed, n_jobs=config.n_jobs)
    return model.fit_transform(X).astype(float)


def embed_runs(basis: Mapping[str, np.ndarray], runs: Mapping[str, np.ndarray], seed: int,
               config: TSNEConfig = TSNEConfig()) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Embed the basis trajectories and every run's trajectories together (one t-SNE).

    ``basis``: reference agent name → (k, d) trajectory vectors; ``runs``: run name → (n, d)
    trajectory vectors in time order. Returns the same dictionaries with (k, 2) / (n, 2) points.
    """
    if not isinstance(basis, Mapping) or not isinstance(runs, Mapping):
        raise ValueError("basis and runs must be mappings name -> 2-D array of trajectory vectors")
    if not runs and not basis:
        raise ValueError("basis and runs are both empty: nothing to embed")
    blocks = [(("basis", k), _as_rows(v, f"basis[{k!r}]")) for k, v in basis.items()]
    blocks += [(("runs", k), _as_rows(v, f"runs[{k!r}]")) for k, v in runs.items()]
    widths = {X.shape[1] for _, X in blocks}
    if len(widths) != 1:
        raise ValueError(f"all trajectory vectors must have the same length, got lengths {sorted(widths)}")
    points = embed(np.vstack([X for _, X in blocks]), seed, config)
    out: dict[str, dict[str, np.ndarray]] = {"basis": {}, "runs": {}}
    start = 0
    for (group, name), X in blocks:
        out[group][name] = points[start:start + len(X)]
        start += len(X)
    return out["basis"], out["runs"]


def _as_points(points, name: str = "points") -> np.ndarray:
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[1] != 2 or points.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty array of shape (n, 2), got shape {points.shape}")
    if not np.all(np.isfinite(points)):
        raise ValueError(f"{name} must contain only finite numbers")
    return points


def time_window_medians(points, n_windows: int = 20) -> np.ndarray:
    """Split the time-ordered points into ``n_windows`` consecutive buckets of (almost) equal
    size (sizes differ by at most one, larger buckets first, as ``np.array_split``) and return
    each bucket's coordinate-wise median, shape (n_windows, 2)."""
    points = _as_points(points)
    if not (isinstance(n_windows, (int, np.integer)) and 1 <= n_windows <= len(points)):
        raise ValueError(f"n_windows must be an integer in [1, {len(points)}] (the number of points), "
                         f"got {n_windows!r}")
    return np.stack([np.median(bucket, axis=0) for bucket in np.array_split(points, n_windows)])


def density_grid(points, grid: int = 100, bandwidth=None, extent=None, weights=None):
    """Gaussian kernel density of 2-D points on a regular grid.

    density(x, y) = Σ_i w_i φ_hx(x − x_i) φ_hy(y − y_i) / Σ_i w_i, with φ_h the normal density of
    standard deviation h. Default bandwidth: Scott's rule per axis, h = σ · n_eff^(−1/6) with
    n_eff = (Σw)²/Σw². ``bandwidth`` may be a number (both axes) or a pair (hx, hy).
    ``extent`` = (xmin, xmax, ymin, ymax), default the points' range padded by 3 bandwidths.
    Returns (xs, ys, Z) with Z[j, i] the density at (xs[i], ys[j]) (image convention); the
    separable kernel makes it two matrix products, Z = Φyᵀ diag(w) Φx.
    """
    points = _as_points(points)
    if not (isinstance(grid, (int, np.integer)) and grid >= 2):
        raise ValueError(f"grid must be an integer >= 2, got {grid!r}")
    n = len(points)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (n,) or np.any(w < 0) or not np.all(np.isfinite(w)) or w.sum() <= 0:
        raise ValueError("weights must be n finite non-negative numbers with a positive sum")
    if bandwidth is None:
        n_eff = w.sum() ** 2 / np.sum(w**2)
        mean = np.average(points, axis=0, weights=w)
        std = np.sqrt(np.average((points - mean) ** 2, axis=0, weights=w))
        h = np.where(std > 0, std, 1.0) * n_eff ** (-1 / 6)
    else:
        h = np.broadcast_to(np.asarray(bandwidth, dtype=float), (2,)).copy()
        if not np.all(np.isfinite(h)) or np.any(h <= 0):
            raise ValueError(f"bandwidth must be a positive number or a pair of them, got {bandwidth!r}")
    if extent is None:
        lo, hi = points.min(axis=0) - 3 * h, points.max(axis=0) + 3 * h
        extent = (lo[0], hi[0], lo[1], hi[1])
    extent = np.asarray(extent, dtype=float)
    if extent.shape != (4,) or not (extent[0] < extent[1] and extent[2] < extent[3]):
        raise ValueError(f"extent must be (xmin, xmax, ymin, ymax) with min < max, got {extent!r}")
    xs = np.linspace(extent[0], extent[1], grid)
    ys = np.linspace(extent[2], extent[3], grid)

    def kernel(grid_axis, coord, width):  # (n, grid)
        z = (grid_axis[None, :] - coord[:, None]) / width
        return np.exp(-0.5 * z * z) / (width * np.sqrt(2 * np.pi))

    Z = kernel(ys, points[:, 1], h[1]).T @ (w[:, None] * kernel(xs, points[:, 0], h[0]))
    return xs, ys, Z / w.sum()
