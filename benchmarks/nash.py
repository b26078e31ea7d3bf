"""Speed and agreement of analysis.nash.maxent_nash against one HiGHS LP and OpenSpiel.

On the same random antisymmetric matrices (n = 50 … 1000), three families:
  gaussian     A = M − Mᵀ, M standard normal (generic: unique Nash, about half the support);
  duplicates   a gaussian game of n/2 strategies, each duplicated once on average (n rows);
  checkpoints  a population in training order (skill drift + cycles), win rates rounded to
               25 matches, A = W − ½, with ~30 % repeated checkpoints: ties and faces of Nash.
prints the time of maxent_nash, of one HiGHS LP finding *a* Nash (analysis.nash.lp_nash),
of OpenSpiel's maxent Nash (open_spiel.python.algorithms.nash_averaging, a cvxpy program) when
importable, their ratios, the Nash gap max(A p) of each, and max |p_ours − p_openspiel|; for the
gaussian family (unique Nash) also max |p_ours − p_LP|, and with --tight max |p_ours − p| for
the same convex program solved by Clarabel at tolerance 1e-10.

    python benchmarks/nash.py            # n = 50, 100, 200, 500, 1000
    python benchmarks/nash.py --quick    # n = 50, 100, 200
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from selfplay.analysis.nash import lp_nash, maxent_nash, nash_gap
from threadpoolctl import threadpool_limits


def gaussian(n: int, rng: np.random.Generator) -> np.ndarray:
    M = rng.normal(size=(n, n))
    return M - M.T


def duplicates(n: int, rng: np.random.Generator) -> np.ndarray:
    base = gaussian(n // 2, rng)
    order = rng.permutation(np.concatenate([np.arange(n // 2), rng.integers(0, n // 2, n - n // 2)]))
    return base[np.ix_(order, order)]


def checkpoints(n: int, rng: np.random.Generator) -> np.ndarray:
    distinct = int(0.7 * n)
    skill = np.cumsum(rng.normal(0.05, 0.3, distinct))
    phase = rng.uniform(0, 2 * np.pi, distinct)
    logits = skill[:, None] - skill[None, :] + 1.5 * np.sin(phase[:, None] - phase[None, :])
    W = np.round(25 / (1 + np.exp(-logits))) / 25
    W = np.triu(W, 1) + np.tril(1 - np.triu(W, 1).T, -1) + 0.5 * np.eye(distinct)
    order = np.sort(np.concatenate([np.arange(distinct), rng.integers(0, distinct, n - distinct)]))
    A = (W - 0.5)[np.ix_(order, order)]
    return 0.5 * (A - A.T)  # exactly antisymmetric (OpenSpiel insists)


def tight_reference(A: np.ndarray) -> np.ndarray:
    """OpenSpiel's convex program (max Σ entr(p) s.t. A p ≤ 0, p ∈ Δ) solved by Clarabel at
    tolerance 1e-10: a slow but accurate third-party reference for the agreement column."""
    import cvxpy as cp

    x = cp.Variable(len(A))
    problem = cp.Problem(cp.Maximize(cp.sum(cp.entr(x))), [A @ x <= 0, x >= 0, cp.sum(x) == 1])
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return np.clip(np.asarray(x.value).ravel(), 0, None) / np.clip(x.value, 0, None).sum()


FAMILIES = {"gaussian": gaussian, "duplicates": duplicates, "checkpoints": checkpoints}


def openspiel_solver():
    try:
        from open_spiel.python.algorithms.nash_averaging import _max_entropy_symmetric_nash
    except Exception as err:  # ImportError, or cvxpy missing inside it
        print(f"OpenSpiel's maxent Nash is not importable ({type(err).__name__}: {err}); skipping it.")
        return None

    def solve(A):
        # OpenSpiel asserts exact antisymmetry and bounds p below by eps (1e-9 by default)
        return np.asarray(_max_entropy_symmetric_nash(A, eps=0.0)).ravel()

    return solve


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="n = 50, 100, 200 only")
    parser.add_argument("--sizes", type=int, nargs="*", help="matrix sizes (overrides the default)")
    parser.add_argument("--openspiel-max-n", type=int, default=500, help="largest n given to OpenSpiel")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (1: no oversubscription)")
    parser.add_argument("--families", nargs="*", choices=list(FAMILIES), default=list(FAMILIES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tight", action="store_true",
                        help="also compare with the same cvxpy program solved at tolerance 1e-10")
    args = parser.parse_args()
    sizes = args.sizes or ([50, 100, 200] if args.quick else [50, 100, 200, 500, 1000])
    openspiel = openspiel_solver()
    header = (f"{'family':<12}{'n':>6}{'maxent s':>10}{'LP s':>9}{'maxent/LP':>10}{'OpenSpiel s':>12}"
              f"{'OS/maxent':>10}{'gap ours':>10}{'gap OS':>10}{'max|dp|':>10}"
              + f"{'|dp| LP':>10}" + (f"{'|dp| tight':>11}" if args.tight else ""))
    print(header)
    print("-" * len(header))
    with threadpool_limits(limits=args.threads):
        maxent_nash(gaussian(5, np.random.default_rng(0)))  # warm-up (imports, HiGHS load)
        for family in args.families:
            make = FAMILIES[family]
            for n in sizes:
                A = make(n, np.random.default_rng(args.seed + n))
                p, t_maxent = timed(maxent_nash, A)
                q, t_lp = timed(lp_nash, A)
                row = (f"{family:<12}{n:>6}{t_maxent:>10.3f}{t_lp:>9.3f}{t_maxent / t_lp:>10.2f}")
                if openspiel is not None and n <= args.openspiel_max_n:
                    try:
                        r, t_os = timed(openspiel, A)
                        r_clean = np.clip(r, 0, None) / np.clip(r, 0, None).sum()
                        row += (f"{t_os:>12.2f}{t_os / t_maxent:>10.1f}{nash_gap(A, p):>10.1e}"
                                f"{nash_gap(A, r_clean):>10.1e}{np.max(np.abs(p - r_clean)):>10.1e}")
                    except Exception as err:  # a solver failure is a result too
                        row += f"{'failed: ' + type(err).__name__:>22}{nash_gap(A, p):>10.1e}"
                else:
                    row += f"{'-':>12}{'-':>10}{nash_gap(A, p):>10.1e}{'-':>10}{'-':>10}"
                # gaussian games have a unique Nash: the LP's must then equal ours
                row += f"{np.max(np.abs(p - q)):>10.1e}" if family == "gaussian" else f"{'-':>10}"
                if args.tight and n <= args.openspiel_max_n:
                    row += f"{np.max(np.abs(p - tight_reference(A))):>11.1e}"
                print(row, flush=True)


if __name__ == "__main__":
    main()
