"""Population metrics: relative population performance, Nash averaging, effective diversity (docs/design/selfplay.md §6).

Balduzzi et al. 2019, "Open-ended learning in symmetric zero-sum games".
"""

from __future__ import annotations

import numpy as np
from selfplay.analysis._validate import as_antisymmetric, as_matrix
from selfplay.analysis.nash import maxent_nash, solve_zero_sum

__all__ = ["relative_population_performance", "nash_averaging", "effective_diversity"]


def relative_population_performance(A_PQ) -> float:
    """v(P, Q) = pᵀ A_PQ q: the value of the zero-sum game between populations P (rows) and Q
    (columns) on their cross-evaluation matrix A_PQ[i, j] = φ(P_i, Q_j) (e.g. W − ½ or ±1).

    Every Nash (p, q) gives the same value, and v(Q, P) = −v(P, Q) (pass −A_PQᵀ for Q vs P).
    v > 0: P beats Q as a population.
    """
    A_PQ = as_matrix(A_PQ, name="A_PQ")
    return solve_zero_sum(A_PQ)[2]


def nash_averaging(A, atol: float = 1e-8) -> tuple[np.ndarray, np.ndarray]:
    """Nash averaging (Balduzzi et al. 2018): the maxent Nash p* of the antisymmetric A and
    each agent's value against it, A p* (≤ 0 for every agent, = 0 on the Nash support)."""
    A = as_antisymmetric(A, atol=atol)
    p = maxent_nash(A, atol=atol)
    return p, A @ p


def effective_diversity(A, atol: float = 1e-8) -> float:
    """Effective diversity of a population: pᵀ ⌊A⌋₊ p with p its maxent Nash and ⌊A⌋₊ = max(A, 0):
    how much the agents the Nash plays beat each other. 0 for a single dominant agent."""
    A = as_antisymmetric(A, atol=atol)
    p = maxent_nash(A, atol=atol)
    return float(p @ np.maximum(A, 0.0) @ p)
