"""Statistics over seeds: interval estimates and the probability of improvement (Agarwal et al. 2021;
docs/guides/statistics.md).

The rules follow rliable (Agarwal et al. 2021, "Deep RL at the edge of the statistical precipice"),
with one metric of one game as one "task":

- **Mean** and **IQM** of the per-seed scores. IQM is the interquartile mean, the 25 % trimmed mean
  ``scipy.stats.trim_mean(x, 0.25)``: ⌊n/4⌋ scores cut from each end (n = 3 cuts none, so the IQM
  of three seeds is their mean; n = 4 keeps the middle two).
- **Probability of improvement** of X over Y: P(X > Y) = (1 / (n_x n_y)) Σᵢ Σⱼ ([xᵢ > yⱼ] + ½ [xᵢ = yⱼ]),
  ties counting one half (rliable's ``probability_of_improvement``, the Mann–Whitney U statistic over
  n_x n_y). For a metric where lower is better it is oriented: "X improves on Y" means xᵢ < yⱼ.
  P(X > Y) + P(Y > X) = 1.
- **Confidence intervals**: the stratified bootstrap over seeds — each scheme's seeds are resampled
  with replacement within that scheme (its stratum), two schemes independently of each other
  (rliable's ``StratifiedIndependentBootstrap``) — and the percentile interval (rliable's default)
  at the chosen level. The resampling is ``scipy.stats.bootstrap`` (vectorised); rliable's own
  bootstrap (``rliable.library``, through ``arch``) does not import with pandas 3.

Degenerate cases, stated rather than hidden: one seed gives a point estimate and no interval (NaN
bounds and a ``note`` saying why); seeds that all agree give a zero-width interval (the bootstrap
distribution is a single point; the note says so). Inputs must be finite numbers: missing values
are the caller's to drop, not this module's to guess.

A difference is called significant at the chosen level when the interval of the probability of
improvement excludes ½ (of a difference of means: excludes 0). With very few seeds the percentile
bootstrap is optimistic: with 3 seeds against 3, every resample of two fully separated samples
gives P = 1, an interval [1, 1], while the exact two-sided Mann–Whitney test can reach no p-value
below 2 / C(6, 3) = 0.1 (:func:`smallest_rank_test_p`). Reports should say both.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.stats

__all__ = [
    "BootstrapConfig",
    "Interval",
    "iqm",
    "interval_estimate",
    "aggregate",
    "probability_of_improvement",
    "improvement_interval",
    "cross_seed_interval",
    "curve_intervals",
    "is_significant",
    "smallest_rank_test_p",
]

METHODS = ("percentile", "basic", "bca")
STATISTICS = ("mean", "iqm")


@dataclass(frozen=True)
class BootstrapConfig:
    """The bootstrap's settings: coverage of the interval, number of resamples, interval method
    (``percentile`` as rliable; scipy's ``basic`` and ``bca`` also accepted) and the seed of its
    random generator (the same inputs and seed give the same interval)."""

    confidence: float = 0.95
    resamples: int = 10_000
    method: str = "percentile"
    seed: int = 0

    def validate(self) -> None:
        if not (isinstance(self.confidence, (int, float)) and 0.0 < self.confidence < 1.0):
            raise ValueError(f"confidence must be a number in (0, 1), got {self.confidence!r}")
        if not (isinstance(self.resamples, (int, np.integer)) and self.resamples >= 100):
            raise ValueError(f"resamples must be an integer ≥ 100, got {self.resamples!r}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if not isinstance(self.seed, (int, np.integer)):
            raise ValueError(f"seed must be an integer, got {self.seed!r}")

    @property
    def level(self) -> float:
        """The significance level α = 1 − confidence."""
        return 1.0 - self.confidence


@dataclass(frozen=True)
class Interval:
    """A point estimate with its confidence interval [low, high]; ``n`` is the number of seeds
    (of each side, for a comparison). When there is no interval, ``low`` and ``high`` are NaN and
    ``note`` says why; a zero-width interval also carries a note."""

    estimate: float
    low: float
    high: float
    n: int | tuple[int, int]
    note: str = ""

    @property
    def has_interval(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))


ONE_SEED = "one seed: no interval (the bootstrap needs at least two seeds)"
IDENTICAL = "all seeds equal: the bootstrap distribution is one point (zero-width interval)"


def _scores(x, name: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a 1-D sequence of numbers, one per seed ({err})") from None
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of per-seed scores, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must hold finite numbers only (drop missing seeds first), got {a.tolist()}")
    return a


def _config(config: BootstrapConfig | None) -> BootstrapConfig:
    config = BootstrapConfig() if config is None else config
    if not isinstance(config, BootstrapConfig):
        raise ValueError(f"config must be a BootstrapConfig, got {type(config).__name__}")
    config.validate()
    return config


def iqm(x, axis: int = -1) -> np.ndarray | float:
    """Interquartile mean: the 25 % trimmed mean along ``axis`` (rliable's ``aggregate_iqm``)."""
    return scipy.stats.trim_mean(x, proportiontocut=0.25, axis=axis)


def _mean(x, axis: int = -1):
    return np.mean(x, axis=axis)


def _statistic(statistic: str | Callable) -> Callable:
    if callable(statistic):
        return statistic
    if statistic == "mean":
        return _mean
    if statistic == "iqm":
        return iqm
    raise ValueError(f"statistic must be one of {STATISTICS} or a callable f(x, axis), got {statistic!r}")


def _bootstrap(samples: tuple[np.ndarray, ...], statistic: Callable, config: BootstrapConfig,
               axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    result = scipy.stats.bootstrap(samples, statistic, n_resamples=config.resamples, vectorized=True,
                                   paired=False, axis=axis, confidence_level=config.confidence,
                                   method="BCa" if config.method == "bca" else config.method,
                                   rng=np.random.default_rng(config.seed))
    return np.asarray(result.confidence_interval.low), np.asarray(result.confidence_interval.high)


def interval_estimate(scores, statistic: str | Callable = "mean", config: BootstrapConfig | None = None) -> Interval:
    """``statistic`` ("mean", "iqm" or a vectorised ``f(x, axis)``) of per-seed ``scores`` with its
    bootstrap interval over seeds."""
    x = _scores(scores, "scores")
    config = _config(config)
    f = _statistic(statistic)
    point = float(f(x, axis=-1))
    if x.size == 1:
        return Interval(point, math.nan, math.nan, 1, ONE_SEED)
    if np.all(x == x[0]):
        return Interval(point, point, point, x.size, IDENTICAL)
    low, high = _bootstrap((x,), f, config)
    return Interval(point, float(low), float(high), x.size)


def aggregate(scores, config: BootstrapConfig | None = None) -> dict:
    """One row of ``aggregate.csv``: ``n_seeds``, ``mean`` and ``iqm`` with their interval bounds,
    and a ``note`` (empty, or why an interval is missing or has zero width)."""
    mean = interval_estimate(scores, "mean", config)
    centre = interval_estimate(scores, "iqm", config)
    return {"n_seeds": mean.n, "mean": mean.estimate, "mean_ci_low": mean.low, "mean_ci_high": mean.high,
            "iqm": centre.estimate, "iqm_ci_low": centre.low, "iqm_ci_high": centre.high, "note": mean.note}


def _poi(x, y, axis: int = -1):
    x = np.moveaxis(np.asarray(x), axis, -1)[..., :, None]
    y = np.moveaxis(np.asarray(y), axis, -1)[..., None, :]
    return np.mean((x > y) + 0.5 * (x == y), axis=(-2, -1))


def probability_of_improvement(x, y, lower_is_better: bool = False) -> float:
    """P(X > Y) over all pairs of X's and Y's seeds, ties counting ½; with ``lower_is_better`` the
    probability that X's score is the lower one (ties ½)."""
    x, y = _scores(x, "x"), _scores(y, "y")
    if lower_is_better:
        x, y = -x, -y
    return float(_poi(x, y))


def improvement_interval(x, y, lower_is_better: bool = False, config: BootstrapConfig | None = None) -> Interval:
    """P(X improves on Y) with its stratified-bootstrap interval (X's and Y's seeds resampled
    independently). One seed on either side: no interval."""
    x, y = _scores(x, "x"), _scores(y, "y")
    config = _config(config)
    if lower_is_better:
        x, y = -x, -y
    point = float(_poi(x, y))
    n = (int(x.size), int(y.size))
    if x.size == 1 or y.size == 1:
        side = "X" if x.size == 1 else "Y"
        return Interval(point, math.nan, math.nan, n, f"one seed of {side}: no interval (the bootstrap needs at "
                                                     "least two seeds on each side)")
    if np.all(x == x[0]) and np.all(y == y[0]):
        return Interval(point, point, point, n, "all seeds of X equal and all of Y equal: zero-width interval")
    if x.min() > y.max() or x.max() < y.min():  # every resample gives the same P: 1 or 0
        return Interval(point, point, point, n, "the samples do not overlap: every resample gives the same "
                                                "probability (zero-width interval; few seeds make it optimistic)")
    low, high = _bootstrap((x, y), _poi, config)
    return Interval(point, float(low), float(high), n)


def _finite_matrix(x, name: str, layout: str) -> np.ndarray:
    """``x`` as a non-empty 2-D float array of finite numbers, or a ``ValueError`` naming ``name``."""
    try:
        M = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a 2-D array of numbers ({err})") from None
    if M.ndim != 2 or M.size == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array ({layout}), got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{name} must hold finite numbers only ({layout})")
    return M


def cross_seed_interval(values, config: BootstrapConfig | None = None) -> Interval:
    """Mean of a cross-seed table ``values[i, j]`` (e.g. v(X's seed-i population, Y's seed-j
    population)) with a bootstrap interval that resamples X's seeds (rows) and Y's seeds (columns)
    independently: entries sharing a row or a column are not independent, so the cells are not
    resampled one by one."""
    V = _finite_matrix(values, "values", "rows: X's seeds, columns: Y's seeds")
    config = _config(config)
    point = float(V.mean())
    n = V.shape
    if min(n) == 1:
        return Interval(point, math.nan, math.nan, n, "one seed on a side: no interval")
    if np.all(V == V.flat[0]):
        return Interval(point, point, point, n, IDENTICAL)

    def mean_of_block(rows, cols, axis=-1):
        rows = np.moveaxis(rows, axis, -1).astype(int)
        cols = np.moveaxis(cols, axis, -1).astype(int)
        return V[rows[..., :, None], cols[..., None, :]].mean(axis=(-2, -1))

    low, high = _bootstrap((np.arange(n[0], dtype=float), np.arange(n[1], dtype=float)), mean_of_block, config)
    return Interval(point, float(low), float(high), n)


def curve_intervals(curves, statistic: str | Callable = "mean",
                    config: BootstrapConfig | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-point estimate and interval of curves over training: ``curves[seed, point]`` → (estimate,
    low, high), each of length ``points``. The seeds are resampled once for all points (a resample
    is a set of whole curves). One seed: NaN bounds; points where all seeds agree: zero width."""
    C = _finite_matrix(curves, "curves", "seeds × points; cut the curves to a common length first")
    config = _config(config)
    f = _statistic(statistic)
    point = np.asarray(f(C, axis=0), dtype=float)
    if len(C) == 1:
        nan = np.full(C.shape[1], np.nan)
        return point, nan, nan.copy()
    low, high = np.array(point), np.array(point)
    varies = ~np.all(C == C[0], axis=0)
    if varies.any():
        lo, hi = _bootstrap((C[:, varies],), f, config, axis=0)
        low[varies], high[varies] = lo, hi
    return point, low, high


def is_significant(interval: Interval, null: float = 0.5) -> bool | None:
    """Whether the interval excludes ``null`` (½ for a probability of improvement); None when there
    is no interval."""
    if not interval.has_interval:
        return None
    return bool(interval.low > null or interval.high < null)


def smallest_rank_test_p(n_x: int, n_y: int) -> float:
    """The smallest two-sided p-value an exact Mann–Whitney test can give with n_x and n_y seeds:
    2 / C(n_x + n_y, n_x) (complete separation). Above α, no rank test can call any difference
    significant, whatever the bootstrap interval says."""
    for name, v in (("n_x", n_x), ("n_y", n_y)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer ≥ 1, got {v!r}")
    return min(1.0, 2.0 / math.comb(n_x + n_y, n_x))
