"""Correctness evidence for analysis.nash: closed forms, the disc game, property tests, nashpy."""

import nashpy
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog
from selfplay.analysis.nash import (
    alpha_rank,
    duplicate_groups,
    lp_nash,
    maxent_nash,
    maxent_nash_evolution,
    nash_gap,
    rectified_nash,
    solve_zero_sum,
    uniform,
)

RPS = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])


def entropy(p):
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def transitive(n):
    """Strategy i beats every j < i (the monotone-improvement ideal)."""
    upper = np.triu(np.ones((n, n)), 1)
    return upper.T - upper


def disc_game(n, seed):
    """Points v_i in the unit disc, A_ij = v_i × v_j (Balduzzi et al. 2019)."""
    rng = np.random.default_rng(seed)
    angle = rng.uniform(0, 2 * np.pi, n)
    radius = np.sqrt(rng.uniform(0.05, 1.0, n))
    v = np.c_[radius * np.cos(angle), radius * np.sin(angle)]
    return np.outer(v[:, 0], v[:, 1]) - np.outer(v[:, 1], v[:, 0]), v


def random_nash_vertices(A, count, seed):
    """Vertices of the Nash polytope {p ∈ Δ : A p ≤ 0}, by LPs with random objectives."""
    rng = np.random.default_rng(seed)
    n = len(A)
    out = []
    for _ in range(count):
        res = linprog(rng.normal(size=n), A_ub=A, b_ub=np.zeros(n), A_eq=np.ones((1, n)), b_eq=[1.0],
                      bounds=(0, None), method="highs")
        assert res.status == 0
        out.append(np.clip(res.x, 0, None))
    return out


def assert_maxent_optimal(A, p, seed=0, vertices=12):
    """Entropy cannot increase along any direction towards another Nash q: the support of q is
    inside p's (else the entropy's slope is +inf), and −Σ (log p_i)(q_i − p_i) ≤ 0 on it."""
    for q in random_nash_vertices(A, vertices, seed):
        assert np.all(q[p == 0] <= 1e-9), "a Nash plays a strategy the maxent Nash left out"
        on = p > 0
        slope = -np.sum(np.log(p[on]) * (q[on] - p[on]))
        assert slope <= 1e-7


# ---------------------------------------------------------------------------------------------
# closed forms
# ---------------------------------------------------------------------------------------------
def test_rps_is_uniform():
    np.testing.assert_allclose(maxent_nash(RPS), np.full(3, 1 / 3), atol=1e-12)


def test_rps_with_rock_duplicated():
    A = RPS[np.ix_([0, 0, 1, 2], [0, 0, 1, 2])]
    np.testing.assert_allclose(maxent_nash(A), [1 / 6, 1 / 6, 1 / 3, 1 / 3], atol=1e-12)


def test_weighted_rps():
    A = np.array([[0.0, -1.0, 2.0], [1.0, 0.0, -1.0], [-2.0, 1.0, 0.0]])
    np.testing.assert_allclose(maxent_nash(A), [0.25, 0.5, 0.25], atol=1e-12)


@pytest.mark.parametrize("n", [2, 5, 30])
def test_transitive_game_picks_the_top_strategy(n):
    p = maxent_nash(transitive(n))
    np.testing.assert_allclose(p, np.eye(n)[-1], atol=1e-12)


def test_all_ties_is_uniform():
    np.testing.assert_allclose(maxent_nash(np.zeros((7, 7))), np.full(7, 1 / 7), atol=1e-14)


def test_single_strategy():
    np.testing.assert_array_equal(maxent_nash([[0.0]]), [1.0])


@pytest.mark.parametrize("seed", [0, 1])
def test_disc_game_face_of_equilibria(seed):
    """Nash set = {p : Σ p_i v_i = 0} (a face of dimension n − 3); its maxent point is the
    exponential family p_i ∝ exp(λ·v_i) with mean zero (KKT of the entropy program)."""
    n = 60
    A, v = disc_game(n, seed)
    p = maxent_nash(A)
    assert np.all(p > 0)
    np.testing.assert_allclose(p @ v, 0.0, atol=1e-14)
    design = np.c_[np.ones(n), v]
    coef = np.linalg.lstsq(design, np.log(p), rcond=None)[0]
    np.testing.assert_allclose(design @ coef, np.log(p), atol=1e-10)
    # an LP Nash is a vertex of the face: a Nash, but of lower entropy
    q = lp_nash(A)
    assert nash_gap(A, q) < 1e-9
    assert entropy(p) > entropy(q) + 0.1
    assert_maxent_optimal(A, p)


def test_active_inequality_at_the_maxent_point():
    """The maxent Nash need not lie in the relative interior of the Nash set.

    Strategies 0..3 all tie; strategy 4 beats 0 (+1) and loses to 1, 2, 3 (−0.1). Nash set:
    p_4 = 0 and p_0 ≤ 0.1 (p_1 + p_2 + p_3), i.e. p_0 ≤ 1/11. Uniform over 0..3 violates it, so
    the maxent point sits on that facet: (1/11, 10/33, 10/33, 10/33, 0)."""
    A = np.zeros((5, 5))
    A[4, :4] = [1.0, -0.1, -0.1, -0.1]
    A[:4, 4] = -A[4, :4]
    np.testing.assert_allclose(maxent_nash(A), [1 / 11, 10 / 33, 10 / 33, 10 / 33, 0.0], atol=1e-12)


def test_weakly_active_inequality():
    """Degenerate case: the uniform point over 0..3 satisfies strategy 4's constraint
    p_0 ≤ (p_1 + p_2 + p_3)/3 with equality and a zero multiplier; it is still the answer."""
    A = np.zeros((5, 5))
    A[4, :4] = [1.0, -1 / 3, -1 / 3, -1 / 3]
    A[:4, 4] = -A[4, :4]
    p = maxent_nash(A)
    np.testing.assert_allclose(p, [0.25, 0.25, 0.25, 0.25, 0.0], atol=1e-12)
    assert nash_gap(A, p) <= 1e-15


def test_rejects_bad_input():
    with pytest.raises(ValueError, match="antisymmetric"):
        maxent_nash([[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="square"):
        maxent_nash(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="finite"):
        maxent_nash([[0.0, np.nan], [np.nan, 0.0]])
    with pytest.raises(ValueError, match="tol"):
        maxent_nash(RPS, tol=-1.0)
    # a W matrix (0.5 on the diagonal) is refused with a pointer to evaluation_matrix
    with pytest.raises(ValueError, match="evaluation_matrix"):
        maxent_nash(np.full((3, 3), 0.5))


def test_tolerates_round_off_asymmetry():
    A = RPS.copy()
    A[0, 1] += 1e-12
    np.testing.assert_allclose(maxent_nash(A), np.full(3, 1 / 3), atol=1e-10)


# ---------------------------------------------------------------------------------------------
# property tests: random antisymmetric matrices with duplicated rows and many ties
# ---------------------------------------------------------------------------------------------
@st.composite
def games_with_duplicates(draw):
    k = draw(st.integers(1, 7))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    if draw(st.booleans()):
        base = rng.integers(-1, 2, size=(k, k)).astype(float)  # payoffs in {−1, 0, 1}: ties galore
    else:
        base = np.round(rng.normal(size=(k, k)), 2)
    base = np.triu(base, 1)
    base = base - base.T
    copies = rng.integers(0, k, size=draw(st.integers(0, 6)))
    order = rng.permutation(np.concatenate([np.arange(k), copies]))
    return base[np.ix_(order, order)], order, seed


@settings(max_examples=60, deadline=None)
@given(games_with_duplicates())
def test_property_nash_maxent_duplicates_permutation(game):
    A, order, seed = game
    p = maxent_nash(A)
    # a Nash to ~1e-9, a distribution
    assert abs(p.sum() - 1) < 1e-12 and p.min() >= 0
    assert nash_gap(A, p) <= 1e-9
    # identical strategies get equal mass
    _, group_of, _ = duplicate_groups(A)
    for g in np.unique(group_of):
        members = p[group_of == g]
        np.testing.assert_allclose(members, members[0], atol=1e-12)
    # invariance under relabelling the strategies
    perm = np.random.default_rng(seed + 1).permutation(len(A))
    np.testing.assert_allclose(maxent_nash(A[np.ix_(perm, perm)]), p[perm], atol=1e-9)
    # no feasible direction improves the entropy
    assert_maxent_optimal(A, p, seed=seed, vertices=6)


# ---------------------------------------------------------------------------------------------
# cross-checks against nashpy
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
def test_unique_nash_matches_nashpy(seed):
    """Generic antisymmetric games of odd size have a unique Nash: every solver must find it."""
    rng = np.random.default_rng(seed)
    n = 5
    M = rng.normal(size=(n, n))
    A = M - M.T
    (x, y), = list(nashpy.Game(A).vertex_enumeration())
    np.testing.assert_allclose(maxent_nash(A), x, atol=1e-9)
    np.testing.assert_allclose(lp_nash(A), x, atol=1e-8)


@pytest.mark.parametrize("shape", [(3, 5), (6, 4), (7, 7)])
def test_solve_zero_sum_value_and_optimality(shape):
    rng = np.random.default_rng(sum(shape))
    A = rng.normal(size=shape)
    p, q, value = solve_zero_sum(A)
    # p guarantees the value against every column, q concedes no more than it against every row
    assert np.min(A.T @ p) >= value - 1e-9
    assert np.max(A @ q) <= value + 1e-9
    equilibria = list(nashpy.Game(A).vertex_enumeration())
    assert any(abs(x @ A @ y - value) < 1e-9 for x, y in equilibria)


def test_solve_zero_sum_rejects_bad_input():
    with pytest.raises(ValueError, match="2-D"):
        solve_zero_sum([1.0, 2.0])


# ---------------------------------------------------------------------------------------------
# the other PSRO meta-solvers
# ---------------------------------------------------------------------------------------------
def test_uniform_and_lp_nash():
    np.testing.assert_allclose(uniform(transitive(4)), np.full(4, 0.25))
    A = RPS[np.ix_([0, 0, 1, 2], [0, 0, 1, 2])]
    q = lp_nash(A)
    assert nash_gap(A, q) <= 1e-9
    np.testing.assert_allclose(q[:2].sum(), 1 / 3, atol=1e-9)


def test_rectified_nash_keeps_the_opponents_the_agent_beats_or_ties():
    # Rock (agent 0) beats Scissors and ties itself: the Nash restricted to {R, S}
    np.testing.assert_allclose(rectified_nash(RPS, agent=0), [0.5, 0.0, 0.5], atol=1e-12)
    # default agent: the newest strategy (Scissors) beats Paper, ties itself
    np.testing.assert_allclose(rectified_nash(RPS), [0.0, 0.5, 0.5], atol=1e-12)
    with pytest.raises(ValueError, match="agent"):
        rectified_nash(RPS, agent=3)


def test_alpha_rank():
    np.testing.assert_allclose(alpha_rank(RPS), np.full(3, 1 / 3), atol=1e-12)
    p = alpha_rank(transitive(4), alpha=10.0)
    assert np.argmax(p) == 3 and p[3] > 0.99
    # Two strategies, 1 beats 0: the chain's balance π₀·ρ(0→1) = π₁·ρ(1→0) with the Moran fixation
    # probabilities gives π₁/π₀ = e^{α·m} exactly. Checked in log space on masses that do not saturate.
    for alpha, m in [(0.01, 50), (0.1, 50), (0.3, 50), (1.0, 5), (2.0, 2)]:
        q = alpha_rank(transitive(2), alpha=alpha, population_size=m)
        assert np.log(q[1]) - np.log(q[0]) == pytest.approx(alpha * m, rel=1e-9)
    # higher selection intensity concentrates the mass further (intensities where no mass rounds to 1)
    masses = [alpha_rank(transitive(4), alpha=a)[3] for a in (0.001, 0.01, 0.05)]
    assert max(masses) < 0.999
    assert masses[0] < masses[1] < masses[2]
    with pytest.raises(ValueError, match="alpha"):
        alpha_rank(RPS, alpha=0.0)


def test_maxent_nash_evolution():
    A = RPS[np.ix_([0, 1, 2, 2], [0, 1, 2, 2])]
    P = maxent_nash_evolution(A)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(P[0], [1, 0, 0, 0])
    np.testing.assert_allclose(P[1], [0, 1, 0, 0])  # Paper beats Rock
    np.testing.assert_allclose(P[2], [1 / 3, 1 / 3, 1 / 3, 0])
    np.testing.assert_allclose(P[3], [1 / 3, 1 / 3, 1 / 6, 1 / 6])


@pytest.mark.parametrize("scale", [1e-12, 1e-3, 1e6])
def test_scale_invariance(scale):
    A = RPS[np.ix_([0, 0, 1, 2], [0, 0, 1, 2])] * scale
    np.testing.assert_allclose(maxent_nash(A), [1 / 6, 1 / 6, 1 / 3, 1 / 3], atol=1e-12)
    B = np.zeros((5, 5))
    B[4, :4] = [1.0, -0.1, -0.1, -0.1]
    B[:4, 4] = -B[4, :4]
    np.testing.assert_allclose(maxent_nash(B * scale), [1 / 11, 10 / 33, 10 / 33, 10 / 33, 0.0], atol=1e-12)
