"""Win-rate matrices from match records, evaluation matrices, and monotone-improvement summaries.

docs/design/selfplay.md §6: W[i, j] is the share of matches i wins against j, both seats merged (a record
``(home, away, score)`` counts for the pair in both orders: ``score`` for home against away,
``1 − score`` for away against home), draws counted ½ or broken at random (a setting), with
per-cell match counts; W[j, i] = 1 − W[i, j] and the diagonal is ½. The evaluation matrix is
the antisymmetric A = W − ½ ("shift") or logit(W) ("logit", Balduzzi et al. 2018's log-odds,
with W clamped away from 0 and 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm
from selfplay.analysis._validate import as_matrix

__all__ = [
    "WinrateMatrix",
    "winrate_matrix",
    "wilson_interval",
    "evaluation_matrix",
    "lower_triangle_winrate",
    "lower_triangle_share",
    "improvement_summary",
]

DRAW_RULES = ("half", "random")
TRANSFORMS = ("shift", "logit")


@dataclass(frozen=True)
class WinrateMatrix:
    """A win-rate matrix over the players ``ids`` (in that order).

    W[i, j]: share of matches ids[i] won against ids[j] (NaN where the pair never met; ½ on the
    diagonal); counts[i, j]: matches played between them (both seats, symmetric; the diagonal
    counts self-play records, which do not enter W); ci_low/ci_high: Wilson score interval of
    W[i, j] at the requested confidence ((0, 1) where no match was played).
    """

    W: np.ndarray
    counts: np.ndarray
    ids: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray

    def to_frame(self):
        """W as a pandas DataFrame indexed by ids (rows: player, columns: opponent)."""
        import pandas as pd

        return pd.DataFrame(self.W, index=self.ids, columns=self.ids)


def _records_columns(records) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(home, away, score) columns of a DataFrame, a mapping of columns, or a (k, 3) array."""
    if isinstance(records, Mapping) or hasattr(records, "columns"):  # a mapping or a DataFrame
        missing = [c for c in ("home", "away", "score") if c not in records]
        if missing:
            raise ValueError(f"records must have columns 'home', 'away', 'score'; missing {missing}")
        home, away, score = (np.asarray(records[c]) for c in ("home", "away", "score"))
    else:
        arr = np.asarray(records)
        if arr.ndim != 2 or arr.shape[1] != 3:
            raise ValueError("records must be a DataFrame/mapping with columns 'home', 'away', 'score' "
                             f"or an array of shape (k, 3); got shape {arr.shape}")
        home, away, score = arr[:, 0], arr[:, 1], arr[:, 2]
    if not (home.ndim == away.ndim == score.ndim == 1 and len(home) == len(away) == len(score)):
        raise ValueError("records' columns 'home', 'away', 'score' must be 1-D and of equal length")
    try:
        score = score.astype(float)
    except (TypeError, ValueError):
        raise ValueError("records' 'score' column must be numeric (1 win, 0.5 draw, 0 loss)") from None
    if not np.all((score >= 0) & (score <= 1)):
        raise ValueError("records' 'score' must lie in [0, 1] (1 win, 0.5 draw, 0 loss for home)")
    return home, away, score


def _positions(home: np.ndarray, away: np.ndarray, ids: Sequence | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(index, positions of home in index, positions of away in index); -1 where not in ``ids``.

    The index is ``ids`` as given, or every player met, sorted.
    """
    if ids is None:
        index = np.unique(np.concatenate([home, away]))
    else:
        index = np.asarray(list(ids))
        if len(set(index.tolist())) != len(index):
            raise ValueError("ids must not contain duplicates")
    if len(index) == 0:
        raise ValueError("records hold no match and no ids were given")
    lookup = {v: i for i, v in enumerate(index.tolist())}
    h = np.fromiter((lookup.get(x, -1) for x in home.tolist()), dtype=np.int64, count=len(home))
    a = np.fromiter((lookup.get(x, -1) for x in away.tolist()), dtype=np.int64, count=len(away))
    return index, h, a


def wilson_interval(wins, n, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a proportion with ``wins`` successes out of ``n`` (elementwise).

    With p̂ = wins/n and z the two-sided normal quantile of ``confidence``:
    centre = (p̂ + z²/2n) / (1 + z²/n), half-width = z/(1 + z²/n) · sqrt(p̂(1 − p̂)/n + z²/4n²).
    Cells with n = 0 get (0, 1). Fractional wins (draws counted ½) are allowed.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    wins = np.asarray(wins, dtype=float)
    n = np.asarray(n, dtype=float)
    z = norm.ppf(0.5 + confidence / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = wins / n
        denom = 1 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denom
        half = z / denom * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    played = n > 0
    low = np.where(played, np.clip(centre - half, 0, 1), 0.0)
    high = np.where(played, np.clip(centre + half, 0, 1), 1.0)
    return low, high


def winrate_matrix(records, ids: Sequence | None = None, draws: str = "half", seed: int | None = None,
                   confidence: float = 0.95) -> WinrateMatrix:
    """Win-rate matrix from match records (both seats merged, design §6).

    Parameters
    ----------
    records : DataFrame or mapping with columns ``home``, ``away``, ``score`` (score for home:
        1 win, 0.5 draw, 0 loss), or an array of shape (k, 3) in that column order.
    ids : the players and their order in the matrix; default: all players met, sorted. Records
        involving players not in ``ids`` are left out (select a sub-population this way).
    draws : "half" counts a draw ½ for each side; "random" gives it to either side with
        probability ½ (then ``seed`` is required and scores must be 0, 0.5 or 1).
    confidence : level of the Wilson intervals.
    """
    if draws not in DRAW_RULES:
        raise ValueError(f"draws must be one of {DRAW_RULES}, got {draws!r}")
    home, away, score = _records_columns(records)
    if draws == "random":
        if seed is None:
            raise ValueError("seed is required when draws='random' (same seed, same matrix)")
        if not np.all(np.isin(score, (0.0, 0.5, 1.0))):
            raise ValueError("with draws='random', scores must be 0, 0.5 or 1")
        is_draw = score == 0.5
        coin = np.random.default_rng(seed).random(len(score)) < 0.5
        score = np.where(is_draw, coin.astype(float), score)
    index, h, a = _positions(home, away, ids)
    n = len(index)
    keep = (h >= 0) & (a >= 0)
    h, a, s = h[keep], a[keep], score[keep]
    cross = h != a
    flat = np.concatenate([h[cross] * n + a[cross], a[cross] * n + h[cross]])
    wins = np.bincount(flat, weights=np.concatenate([s[cross], 1 - s[cross]]), minlength=n * n).reshape(n, n)
    counts = np.bincount(flat, minlength=n * n).reshape(n, n)
    counts[np.diag_indices(n)] = np.bincount(h[~cross], minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        W = np.where(counts > 0, wins / np.maximum(counts, 1), np.nan)
    np.fill_diagonal(W, 0.5)
    low, high = wilson_interval(wins, np.where(np.eye(n, dtype=bool), 0, counts), confidence)
    np.fill_diagonal(low, 0.5)
    np.fill_diagonal(high, 0.5)
    return WinrateMatrix(W=W, counts=counts, ids=index, ci_low=low, ci_high=high)


def _as_winrates(W, name: str = "W") -> np.ndarray:
    """A complete win-rate matrix: square, entries in [0, 1], W + Wᵀ = 1, diagonal ½."""
    if isinstance(W, WinrateMatrix):
        W = W.W
    W = np.asarray(W, dtype=float)
    if W.ndim == 2 and np.isnan(W).any():
        raise ValueError(f"{name} has cells without matches (NaN); play those pairs or pick a sub-population")
    W = as_matrix(W, name=name, square=True)
    if np.any((W < 0) | (W > 1)):
        raise ValueError(f"{name} must hold win rates in [0, 1]")
    if np.max(np.abs(W + W.T - 1)) > 1e-9:
        raise ValueError(f"{name} must satisfy W[i, j] + W[j, i] = 1 (a merged-seat win-rate matrix)")
    return W


def evaluation_matrix(W, transform: str = "shift", eps: float = 1e-2) -> np.ndarray:
    """The antisymmetric evaluation matrix of a win-rate matrix (design §6).

    "shift": A = W − ½ (in [−½, ½]). "logit": A = log(W / (1 − W)) with W clamped to
    [eps, 1 − eps] first (so a pair won 25/25 gives a finite log-odds, |A| ≤ logit(1 − eps)).
    """
    if transform not in TRANSFORMS:
        raise ValueError(f"transform must be one of {TRANSFORMS}, got {transform!r}")
    if not 0 < eps < 0.5:
        raise ValueError(f"eps must be in (0, 0.5), got {eps!r}")
    W = _as_winrates(W)
    if transform == "shift":
        A = W - 0.5
    else:
        Wc = np.clip(W, eps, 1 - eps)
        A = np.log(Wc) - np.log1p(-Wc)
    return 0.5 * (A - A.T)  # exact antisymmetry


def _lower_cells(W) -> np.ndarray:
    W = W.W if isinstance(W, WinrateMatrix) else np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] < 2:
        raise ValueError(f"W must be a square matrix of at least 2 players, got shape {W.shape}")
    return W[np.tril_indices(len(W), -1)]


def lower_triangle_winrate(W) -> float:
    """Mean of W strictly below the diagonal: how often later checkpoints (rows, in training
    order) beat earlier ones. 1 for the ideal monotone improvement, ½ for no progress.
    Cells without matches (NaN) are left out."""
    return float(np.nanmean(_lower_cells(W)))


def lower_triangle_share(W, threshold: float = 0.5) -> float:
    """Share of the (played) cells strictly below the diagonal with W > threshold: the fraction
    of (later, earlier) pairs that the later checkpoint wins. 1 for the ideal matrix."""
    cells = _lower_cells(W)
    cells = cells[~np.isnan(cells)]
    return float(np.mean(cells > threshold)) if cells.size else float("nan")


def improvement_summary(W) -> dict[str, float]:
    """Monotone-improvement summaries of a win-rate matrix in training order.

    lower_mean: :func:`lower_triangle_winrate`; lower_share: :func:`lower_triangle_share`;
    beats_previous: mean of W[i, i−1] (each checkpoint against its predecessor);
    beats_first: mean of W[i, 0] over i ≥ 1 (progress over the start);
    worst_history: min over i ≥ 1 of the mean of W[i, :i] (the checkpoint that does worst
    against its own history — catastrophic forgetting shows here).
    """
    M = W.W if isinstance(W, WinrateMatrix) else np.asarray(W, dtype=float)
    cells = _lower_cells(M)
    n = len(M)
    below = np.where(np.tri(n, k=-1, dtype=bool), M, np.nan)
    with np.errstate(all="ignore"):
        history = np.nanmean(below[1:], axis=1)
    return {
        "lower_mean": float(np.nanmean(cells)),
        "lower_share": lower_triangle_share(M),
        "beats_previous": float(np.nanmean(np.diagonal(M, -1))),
        "beats_first": float(np.nanmean(M[1:, 0])),
        "worst_history": float(np.nanmin(history)),
    }
