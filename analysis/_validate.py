"""Input checks shared by the analysis modules (numpy in, numpy out, clear ``ValueError``s)."""

from __future__ import annotations

import numpy as np


def as_matrix(M, name: str = "A", square: bool = False) -> np.ndarray:
    """``M`` as a finite, non-empty 2-D float array, or a ``ValueError`` naming ``name``."""
    try:
        M = np.asarray(M, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a 2-D array of numbers ({err})") from None
    if M.ndim != 2 or M.shape[0] == 0 or M.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array, got shape {M.shape}")
    if square and M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be square, got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{name} must contain only finite numbers (no NaN or inf)")
    return M


def as_antisymmetric(A, atol: float = 1e-8, name: str = "A") -> np.ndarray:
    """Check that ``A`` is antisymmetric (|A + Aᵀ| ≤ atol·max(1, max|A|)) and return (A − Aᵀ)/2.

    The returned matrix is exactly antisymmetric, so that rounding noise in the input cannot
    break the symmetry of the game.
    """
    A = as_matrix(A, name=name, square=True)
    if not (np.isfinite(atol) and atol >= 0):
        raise ValueError(f"atol must be a finite number >= 0, got {atol!r}")
    scale = max(1.0, float(np.max(np.abs(A))))
    asym = float(np.max(np.abs(A + A.T)))
    if asym > atol * scale:
        raise ValueError(
            f"{name} must be antisymmetric (A = -A.T within atol={atol:g}); max |A + A.T| = {asym:.3g}. "
            "Turn a win-rate matrix W into one with analysis.winrate.evaluation_matrix(W)."
        )
    return 0.5 * (A - A.T)
