"""Nash equilibria of zero-sum games, and the PSRO meta-solvers (docs/design/selfplay.md §6).

Conventions. A two-player zero-sum game is an m×n payoff matrix ``A`` for the row player, who
maximises ``pᵀ A q``; the column player minimises it. A *symmetric* zero-sum game (two
checkpoints of the same population playing each other) has an antisymmetric matrix, A = −Aᵀ;
its value is 0 and its set of (symmetric) Nash equilibria is the polytope

    Nash(A) = {p ∈ Δ : Aᵀp ≥ 0} = {p ∈ Δ : A p ≤ 0}.

It is a whole face as soon as the population has ties or duplicated checkpoints, so "a Nash"
is not a well-defined summary; the maximum-entropy point of Nash(A) is (it is unique, since the
entropy is strictly concave). :func:`maxent_nash` computes it exactly — a Nash to ~1e-12 and
optimal by the KKT conditions of the entropy program to machine precision — as follows:

1. **Duplicates.** Identical rows of A (identical checkpoints as far as the game can tell) are
   collapsed into one strategy of multiplicity c_g; the maximal-entropy split of a group's mass
   is uniform, so the collapsed problem maximises the weighted entropy Σ_g q_g (log c_g − log q_g)
   and the mass is split equally afterwards. This is also what makes big populations fast.
2. **Support and implicit equalities (one or two LPs).** By Goldman–Tucker strict complementarity the
   strategies split into S = {i : p_i > 0 for some p ∈ Nash(A)} and T = the others, with
   (A p)_i = 0 for every Nash p when i ∈ S, and (A p)_j < 0 for some Nash p when j ∈ T. One LP
   finds a strictly complementary Nash x (x_i > 0 exactly on S, slack −(A x)_j > 0 exactly on
   T): maximise t subject to x ∈ Δ, A x ≤ 0, x − A x ≥ t·1; then S = {i : x_i > −(A x)_i}.
   When the game is non-degenerate the plain Nash LP's vertex is already strictly
   complementary, and that LP is the only one solved.
3. **Entropy over the slice.** Nash(A) = {q ≥ 0 on S : 1ᵀq = 1, A_SS q = 0, A_TS q ≤ 0}. The
   maximiser is q ∝ c · exp(−Gᵀλ − Cᵀμ), with G an orthonormal basis of the row space of A_SS,
   C the (normalised) rows of A_TS and μ ≥ 0: the minimiser of the smooth convex dual
   f(λ, μ) = log Σ_i c_i exp(−(Gᵀλ + Cᵀμ)_i) over μ ≥ 0, found by Newton's method (a log-barrier
   path for μ ≥ 0, then a final Newton solve on the identified active set, run to machine
   precision). The inequalities A_TS q ≤ 0 can be active at the maximiser (the maxent point
   need not lie in the relative interior of Nash(A)), which is why they are kept as
   multipliers rather than merely checked. When the slice is a single point (the generic case),
   q is the null vector of A_SS and no iteration is needed.
4. **Certificate.** The result is checked: p ≥ 0, Σp = 1, max(A p) ≤ tol·max|A|.

A is first divided by max|A| (the Nash set does not change), so every tolerance is relative.

The meta-solvers for PSRO share the signature ``solver(A) -> p`` over an antisymmetric A:
:func:`maxent_nash`, :func:`lp_nash`, :func:`uniform`, :func:`rectified_nash`, :func:`alpha_rank`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.special import logsumexp
from selfplay.analysis._validate import as_antisymmetric, as_matrix

__all__ = [
    "maxent_nash",
    "lp_nash",
    "uniform",
    "rectified_nash",
    "alpha_rank",
    "solve_zero_sum",
    "maxent_nash_evolution",
    "duplicate_groups",
    "nash_gap",
]


# --------------------------------------------------------------------------------------------
# General zero-sum games
# --------------------------------------------------------------------------------------------
def solve_zero_sum(A) -> tuple[np.ndarray, np.ndarray, float]:
    """Optimal mixed strategies and value of the zero-sum game with m×n payoff matrix ``A``.

    The row player maximises pᵀAq, the column player minimises it. One HiGHS LP per player:
    row:  max v  s.t. Aᵀp ≥ v·1, 1ᵀp = 1, p ≥ 0;   column:  min w  s.t. A q ≤ w·1, 1ᵀq = 1, q ≥ 0.
    Returns ``(p, q, value)`` with value = pᵀAq (= v = w at the optimum).
    """
    A = as_matrix(A, name="A")
    m, n = A.shape
    p = _lp_maximin(A)
    q = _lp_maximin(-A.T)
    return p, q, float(p @ A @ q)


def _lp_maximin(A: np.ndarray) -> np.ndarray:
    """Maximin strategy of the row player of ``A``: argmax_p min_j (Aᵀp)_j (one HiGHS LP)."""
    m, n = A.shape
    c = np.zeros(m + 1)
    c[-1] = -1.0  # maximise v
    A_ub = np.hstack([-A.T, np.ones((n, 1))])  # v − (Aᵀp)_j ≤ 0
    A_eq = np.concatenate([np.ones(m), [0.0]])[None, :]
    bounds = [(0, None)] * m + [(None, None)]
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(n), A_eq=A_eq, b_eq=[1.0], bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on the maximin LP: {res.message}")
    return _as_probabilities(res.x[:m])


def _as_probabilities(x: np.ndarray) -> np.ndarray:
    """Clip the LP's round-off negatives to 0 and renormalise."""
    x = np.clip(x, 0.0, None)
    return x / x.sum()


# --------------------------------------------------------------------------------------------
# Symmetric zero-sum games (antisymmetric A): meta-solvers, signature solver(A) -> p
# --------------------------------------------------------------------------------------------
def nash_gap(A, p) -> float:
    """Best-response gain against p in the symmetric game A: max_i (A p)_i (≥ 0; 0 iff p is a Nash)."""
    A = np.asarray(A, dtype=float)
    return float(np.max(A @ np.asarray(p, dtype=float)))


def uniform(A) -> np.ndarray:
    """The uniform distribution over the strategies of ``A`` (PSRO with it is fictitious play)."""
    A = as_antisymmetric(A)
    return np.full(len(A), 1.0 / len(A))


def lp_nash(A, atol: float = 1e-8) -> np.ndarray:
    """*A* Nash equilibrium of the symmetric game ``A`` (one HiGHS LP: p ∈ Δ, A p ≤ 0).

    Which Nash is returned (typically a vertex of the Nash polytope) is up to the LP solver;
    use :func:`maxent_nash` for the canonical one.
    """
    return _as_probabilities(_nash_lp(as_antisymmetric(A, atol=atol)))


def _nash_lp(A: np.ndarray) -> np.ndarray:
    """A vertex of {p ∈ Δ : A p ≤ 0} found by HiGHS (the raw LP solution)."""
    n = len(A)
    res = linprog(np.zeros(n), A_ub=A, b_ub=np.zeros(n), A_eq=np.ones((1, n)), b_eq=[1.0],
                  bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on the Nash LP: {res.message}")
    return res.x


def duplicate_groups(A) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Groups of identical rows of ``A``, in order of first appearance.

    Returns ``(representatives, group_of, counts)``: the index of the first row of each group,
    the group of each row (so ``A[representatives][group_of] == A``) and each group's size.
    """
    A = np.asarray(A, dtype=float) + 0.0  # + 0.0 turns −0.0 into 0.0
    _, first, inverse, counts = np.unique(A, axis=0, return_index=True, return_inverse=True,
                                          return_counts=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[inverse.reshape(-1)], counts[order]


def maxent_nash(A, tol: float = 1e-9, atol: float = 1e-8) -> np.ndarray:
    """The maximum-entropy Nash equilibrium of the symmetric zero-sum game ``A`` (module docstring).

    Parameters
    ----------
    A : (n, n) antisymmetric payoff matrix (``ValueError`` if |A + Aᵀ| > atol·max(1, max|A|)).
    tol : the Nash certificate required of the result, max_i (A p)_i ≤ tol·max|A|.
    atol : tolerance of the antisymmetry check.

    Returns p of shape (n,): a Nash equilibrium of maximal entropy over the whole Nash set;
    identical strategies get equal mass.
    """
    A = as_antisymmetric(A, atol=atol)
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a finite number > 0, got {tol!r}")
    scale = float(np.max(np.abs(A)))
    if scale == 0.0:  # every strategy ties with every other: all of Δ is Nash, uniform is maxent
        return np.full(len(A), 1.0 / len(A))
    A = A / scale  # the Nash set is invariant under positive scaling; tolerances become relative
    reps, group_of, counts = duplicate_groups(A)
    q = _maxent_weighted(A[np.ix_(reps, reps)], counts.astype(float))
    p = q[group_of] / counts[group_of]
    gap = nash_gap(A, p)
    if gap > tol or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-12:
        raise RuntimeError(f"maxent_nash could not certify its result: max(A p) / max|A| = {gap:.3g}")
    return p


def _maxent_weighted(A: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """argmax over Nash(A) of Σ q_i (log w_i − log q_i), for antisymmetric A without duplicates."""
    n = len(A)
    if n == 1:
        return np.ones(1)
    in_S = _support(A)
    q = np.zeros(n)
    A_SS = A[np.ix_(in_S, in_S)]
    C = A[np.ix_(~in_S, in_S)]
    s = int(in_S.sum())
    G, N = _row_space_and_null_space(A_SS)
    if N.shape[1] == 1:  # the slice {A_SS q = 0, 1ᵀq = 1} is one point: the Nash is unique
        v = N[:, 0] / N[:, 0].sum()
        q[in_S] = np.clip(v, 0.0, None) / np.clip(v, 0.0, None).sum()
        return q
    norms = np.linalg.norm(C, axis=1, keepdims=True)
    C = C / np.where(norms > 0, norms, 1.0)
    q[in_S] = _maxent_dual_newton(G, C, np.log(weights[in_S])) if s > 1 else 1.0
    return q


def _support(A: np.ndarray) -> np.ndarray:
    """S = strategies that some Nash of the antisymmetric A plays (module step 2).

    First one plain Nash LP: if its vertex x is already strictly complementary — every index
    has x_i > 0 or slack −(A x)_i > 0 (with a margin) — then S = {x_i > 0} exactly, because any
    Nash q has q_i = 0 where (A x)_i < 0 (qᵀA x = 0 and every term is ≤ 0). That is the generic
    case (a unique, non-degenerate Nash). Otherwise (ties, faces of equilibria) the LP of
    :func:`_strictly_complementary_support` decides.
    """
    x = _as_probabilities(_nash_lp(A))
    slack = -(A @ x)
    gap = max(0.0, float(np.max(-slack)))  # how far the LP's point is from a Nash (~1e-13)
    margin = 1e-9 * max(1.0, float(np.max(np.abs(A))))
    # Any Nash q has Σ_j q_j slack_j ≤ gap, so q_j ≤ gap / slack_j: a slack far above the gap
    # (and above round-off) excludes j; a tie (x_j = slack_j = 0) sends us to the second LP.
    played, beaten = x > margin, slack > max(margin, 1e3 * gap)
    if np.all(played ^ beaten):
        return played
    return _strictly_complementary_support(A)


def _strictly_complementary_support(A: np.ndarray) -> np.ndarray:
    """S = strategies that some Nash of the antisymmetric A plays (one HiGHS LP, module step 2).

    Variables x, s ≥ 0 and t ∈ [0, 1] with A x + s = 0 (s is the slack −A x), 1ᵀx = 1 and
    x + s ≥ t·1; maximise t. Every feasible x is a Nash and x_i s_i = 0 at any Nash, so at the
    optimum (t* > 0 by Goldman–Tucker) each index has exactly one of x_i, s_i ≥ t*, and
    S = {i : x_i > s_i}. HiGHS's simplex returns a vertex, where the other one is exactly 0.
    """
    n = len(A)
    eye = sp.identity(n, format="csr")
    zero_col = sp.csr_matrix((n, 1))
    A_eq = sp.vstack([
        sp.hstack([sp.csr_matrix(A), eye, zero_col]),  # A x + s = 0
        sp.hstack([sp.csr_matrix(np.ones((1, n))), sp.csr_matrix((1, n + 1))]),  # 1ᵀx = 1
    ], format="csr")
    A_ub = sp.hstack([-eye, -eye, sp.csr_matrix(np.ones((n, 1)))], format="csr")  # t − x − s ≤ 0
    b_eq = np.zeros(n + 1)
    b_eq[-1] = 1.0
    c = np.zeros(2 * n + 1)
    c[-1] = -1.0
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(n), A_eq=A_eq, b_eq=b_eq,
                  bounds=[(0, None)] * (2 * n) + [(0, 1)], method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on the support LP: {res.message}")
    x, slack = res.x[:n], res.x[n:2 * n]
    return x > slack


def _row_space_and_null_space(M: np.ndarray, rtol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal bases (G rows, N columns) of the row space and null space of M (pivoted QR of Mᵀ)."""
    s = M.shape[1]
    if not np.any(M):
        return np.zeros((0, s)), np.eye(s)
    Q, R, _ = scipy.linalg.qr(M.T, pivoting=True)
    diag = np.abs(np.diag(R))
    rank = int(np.sum(diag > rtol * diag[0]))
    return Q[:, :rank].T, Q[:, rank:]


def _maxent_dual_newton(G: np.ndarray, C: np.ndarray, log_w: np.ndarray) -> np.ndarray:
    """Minimise the dual f(θ) = logsumexp(log w − Mᵀθ), M = [G; C], θ = (λ, μ), over μ ≥ 0.

    q = softmax(log w − Mᵀθ) is the primal point; ∇f = −M q, ∇²f = M (diag q − q qᵀ) Mᵀ.
    Without inequalities (C empty) this is one unconstrained Newton solve. With them:
    (1) a log-barrier path, minimising f − τ Σ log μ_j by damped Newton for τ = 10⁻¹ … 10⁻¹³
        (every iterate is primal feasible: G q = 0 and C q = −τ/μ < 0 at each barrier minimum);
    (2) the active set {j : μ_j > −(C q)_j} read off the last barrier point (complementarity
        makes the two differ by orders of magnitude), and a final Newton solve with exactly
        those inequalities as equalities, polishing q to machine precision;
    (3) the KKT conditions are checked (μ ≥ 0 on the active set, C q ≤ 0 off it); where they fail
        (a degenerate constraint, active with zero multiplier, guessed wrong) the active set is
        corrected and (2) repeated; if that never settles, the last barrier point (entropy
        within ~1e-12 of the maximum) is returned.
    """
    k, m = G.shape[0], C.shape[0]
    M = np.vstack([G, C])
    if M.shape[0] == 0:
        return np.exp(log_w - logsumexp(log_w))
    if m == 0:
        return _polish(M, log_w, np.zeros(k))[1]
    theta = np.concatenate([np.zeros(k), np.ones(m)])
    for tau in 10.0 ** -np.arange(1, 14):
        theta = _barrier_newton(M, log_w, theta, k, tau)
    _, q_barrier = _primal(M, log_w, theta)
    active = theta[k:] > -(C @ q_barrier)
    # A constraint that is active with a zero multiplier (degenerate) can land on either side;
    # fix the guess like a primal-dual active-set method: drop constraints whose multiplier
    # comes out negative, add the ones the polished point violates, until the KKT conditions hold.
    for _ in range(m + 1):
        rows = np.concatenate([np.ones(k, dtype=bool), active])
        start = np.where(rows, theta, 0.0)[rows]
        theta_polished, q = _polish(M[rows], log_w, start)
        mu = np.zeros(m)
        mu[active] = theta_polished[k:]
        negative = active & (mu < -1e-12 * max(1.0, float(np.max(np.abs(mu)))))
        violated = ~active & (C @ q > 1e-13)
        if not negative.any() and not violated.any():
            return q
        active = (active & ~negative) | violated
    return q_barrier


def _primal(M: np.ndarray, log_w: np.ndarray, theta: np.ndarray) -> tuple[float, np.ndarray]:
    """f(θ) = logsumexp(log w − Mᵀθ) and q = softmax(log w − Mᵀθ)."""
    z = log_w - M.T @ theta
    f = logsumexp(z)
    return float(f), np.exp(z - f)


def _gradient_hessian(M: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    Mq = M @ q
    return -Mq, (M * q) @ M.T - np.outer(Mq, Mq)


def _barrier_newton(M, log_w, theta, k, tau, max_iter=100):
    """Damped Newton on φ(θ) = f(θ) − τ Σ_j log μ_j, keeping μ > 0 (fraction to the boundary)."""
    def phi(th):
        return _primal(M, log_w, th)[0] - tau * np.sum(np.log(th[k:]))

    value = phi(theta)
    for _ in range(max_iter):
        _, q = _primal(M, log_w, theta)
        g, H = _gradient_hessian(M, q)
        mu = theta[k:]
        g[k:] -= tau / mu
        H[k:, k:] += np.diag(tau / mu**2)
        d = _solve_psd(H, -g)
        decrement = -(g @ d)
        if decrement < 1e-13:
            break
        shrinking = d[k:] < 0
        alpha = min(1.0, 0.99 * float(np.min(-mu[shrinking] / d[k:][shrinking]))) if shrinking.any() else 1.0
        while True:
            trial = theta + alpha * d
            trial_value = phi(trial)
            if trial_value <= value - 1e-4 * alpha * decrement or alpha < 1e-14:
                break
            alpha *= 0.5
        theta, value = trial, trial_value
    return theta


def _polish(M, log_w, theta, max_iter=100):
    """Unconstrained Newton on f(θ) = logsumexp(log w − Mᵀθ) to machine precision.

    Armijo backtracking while far away; once the gradient is below 1e-8 full steps are taken
    (quadratic convergence, f's decrease is then under its round-off) until the gradient stops
    shrinking. Redundant rows of M make ∇²f singular; the minimum-norm step is used then.
    """
    f, q = _primal(M, log_w, theta)
    if M.shape[0] == 0:
        return theta, q
    best = np.inf
    for _ in range(max_iter):
        g, H = _gradient_hessian(M, q)
        g_norm = float(np.max(np.abs(g)))
        if g_norm < 1e-15 or g_norm > 0.5 * best and best < 1e-8:
            break
        best = min(best, g_norm)
        d = _solve_psd(H, -g)
        alpha = 1.0
        while True:
            trial = theta + alpha * d
            f_trial, q_trial = _primal(M, log_w, trial)
            if g_norm < 1e-8 or f_trial <= f + 1e-4 * alpha * (g @ d) or alpha < 1e-14:
                break
            alpha *= 0.5
        theta, f, q = trial, f_trial, q_trial
    return theta, q


def _solve_psd(H: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve H x = b for a symmetric positive semidefinite H: Cholesky when H is well
    conditioned, else the minimum-norm least-squares solution (dependent active constraints)."""
    try:
        factor, lower = scipy.linalg.cho_factor(H, check_finite=False)
        d = np.abs(np.diag(factor))
        if d.min() > 1e-7 * d.max():  # condition number of H below ~1e14
            return scipy.linalg.cho_solve((factor, lower), b, check_finite=False)
    except scipy.linalg.LinAlgError:
        pass
    return scipy.linalg.lstsq(H, b, cond=1e-13)[0]


def rectified_nash(A, agent: int = -1, atol: float = 1e-8) -> np.ndarray:
    """PSRO-rN's opponent distribution (Balduzzi et al. 2019) for strategy ``agent`` of ``A``.

    PSRO-rN trains an agent against the maxent Nash p restricted to the opponents it beats or
    ties: r_j ∝ p_j · [A[agent, j] ≥ 0]. The default agent is the newest strategy (the last
    row). If the agent beats or ties nobody in the Nash support, the Nash itself is returned.
    """
    A = as_antisymmetric(A, atol=atol)
    n = len(A)
    if not isinstance(agent, (int, np.integer)) or not -n <= agent < n:
        raise ValueError(f"agent must be an integer index in [-{n}, {n}), got {agent!r}")
    p = maxent_nash(A, atol=atol)
    r = p * (A[agent] >= 0)
    return r / r.sum() if r.sum() > 0 else p


def alpha_rank(A, alpha: float = 10.0, population_size: int = 50, atol: float = 1e-8) -> np.ndarray:
    """Single-population α-Rank (Omidshafiei et al. 2019) of the symmetric game ``A``.

    A Markov chain over pure strategies: from resident s a mutant r (chosen uniformly among the
    n − 1 others) takes over a population of m = ``population_size`` with the fixation
    probability of the Moran process at selection intensity α. For antisymmetric A (zero
    diagonal) the mutant's fitness advantage is constant, Δ = m/(m−1)·A[r, s], so
    ρ = (1 − e^{−αΔ}) / (1 − e^{−mαΔ}) (1/m when Δ = 0). Returns the chain's stationary
    distribution (the α-Rank masses). This is OpenSpiel's
    ``alpharank.compute([A], m, alpha, use_local_selection_model=False)`` (agreement 1e-15 on
    random games); OpenSpiel's default local selection model uses Δ = A[r, s] − A[s, r] instead.
    """
    A = as_antisymmetric(A, atol=atol)
    if not (np.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}")
    if not (isinstance(population_size, (int, np.integer)) and population_size >= 2):
        raise ValueError(f"population_size must be an integer >= 2, got {population_size!r}")
    n = len(A)
    if n == 1:
        return np.ones(1)
    m = int(population_size)
    x = alpha * m / (m - 1) * A.T  # x[s, r]: selection advantage of mutant r over resident s
    rho = np.full_like(x, 1.0 / m)
    pos, neg = x > 0, x < 0
    rho[pos] = np.expm1(-x[pos]) / np.expm1(-m * x[pos])
    y = -x[neg]
    rho[neg] = np.exp((1 - m) * y) * np.expm1(-y) / np.expm1(-m * y)
    T = rho / (n - 1)
    np.fill_diagonal(T, 0.0)
    np.fill_diagonal(T, 1.0 - T.sum(axis=1))
    # stationary π: πᵀ T = πᵀ, 1ᵀπ = 1 (least squares on the stacked system)
    system = np.vstack([T.T - np.eye(n), np.ones((1, n))])
    rhs = np.concatenate([np.zeros(n), [1.0]])
    pi = np.linalg.lstsq(system, rhs, rcond=None)[0]
    return _as_probabilities(pi)


def maxent_nash_evolution(A, atol: float = 1e-8) -> np.ndarray:
    """Row k−1 holds the maxent Nash of the first k strategies (zero beyond k), k = 1..n.

    For checkpoints in training order this shows how the population's equilibrium moves as
    the population grows (the "evolution of the maxent Nash" figure).
    """
    A = as_antisymmetric(A, atol=atol)
    n = len(A)
    P = np.zeros((n, n))
    for k in range(1, n + 1):
        P[k - 1, :k] = maxent_nash(A[:k, :k], atol=atol)
    return P
