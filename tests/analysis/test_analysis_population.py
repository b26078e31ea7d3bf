"""analysis.population: relative population performance, Nash averaging, effective diversity."""

import numpy as np
import pytest
from selfplay.analysis.population import effective_diversity, nash_averaging, relative_population_performance

RPS = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])
R, P, S = 0, 1, 2


def cross(rows, cols, A=RPS):
    return A[np.ix_(rows, cols)]


def test_rpp_closed_forms():
    assert relative_population_performance(cross([R, P], [S])) == pytest.approx(1.0)
    assert relative_population_performance(cross([R], [P])) == pytest.approx(-1.0)
    assert relative_population_performance(cross([R, P, S], [R, P, S])) == pytest.approx(0.0, abs=1e-12)
    # {R, P} vs {P, S} by hand: rows R: (−1, +1), P: (0, −1); x on R guarantees
    # min(−x, 2x − 1), maximised at x = 1/3: value −1/3.
    assert relative_population_performance(cross([R, P], [P, S])) == pytest.approx(-1 / 3)


@pytest.mark.parametrize("seed", range(4))
def test_rpp_is_antisymmetric(seed):
    rng = np.random.default_rng(seed)
    A_PQ = rng.uniform(-0.5, 0.5, size=(4, 6))
    assert relative_population_performance(-A_PQ.T) == pytest.approx(-relative_population_performance(A_PQ),
                                                                          abs=1e-9)


def test_rpp_rejects_bad_input():
    with pytest.raises(ValueError, match="A_PQ"):
        relative_population_performance(np.array([1.0, np.inf]))


def test_nash_averaging_values():
    A = RPS[np.ix_([R, R, P, S], [R, R, P, S])]
    p, values = nash_averaging(A)
    np.testing.assert_allclose(p, [1 / 6, 1 / 6, 1 / 3, 1 / 3], atol=1e-12)
    np.testing.assert_allclose(values, 0.0, atol=1e-12)
    # an agent outside the support has a negative value: add a strategy beaten by everyone
    B = np.zeros((4, 4))
    B[:3, :3] = RPS
    B[3, :3], B[:3, 3] = -0.5, 0.5
    p, values = nash_averaging(B)
    np.testing.assert_allclose(p, [1 / 3, 1 / 3, 1 / 3, 0], atol=1e-12)
    np.testing.assert_allclose(values, [0, 0, 0, -0.5], atol=1e-12)


def test_effective_diversity():
    # RPS: p uniform, max(A, 0) has three +1 entries → 3 · (1/3)² = 1/3
    assert effective_diversity(RPS) == pytest.approx(1 / 3)
    # a transitive population has a single Nash agent: no diversity
    T = np.triu(np.ones((4, 4)), 1)
    assert effective_diversity(T.T - T) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="antisymmetric"):
        effective_diversity(np.ones((2, 2)))
