"""Opponent draws per second at 10³, 10⁴, 10⁵ menagerie entries, for every one-learner scheme.

Two patterns, each against the peer: the draw as the suite did it before (Ω recomputed as a dict
and handed to ``rng.choice`` at every draw — what any scheme without a cache does):

* ``fixed``  — repeated single draws from an unchanged menagerie (PSRO between iterations, any
  scheme once the menagerie stops growing);
* ``growing`` — one entry added, then one draw, and so on (δ-schemes with ``add_every=1``: Ω changes
  before every draw, so a cache of Ω alone would not help; the δ-samplers need no table).

PSRO's meta-game solution is set directly to a random distribution over the entries (its solve, once
per PSRO iteration, is not a draw; a 10⁵-entry meta-game could not be solved anyway). The AlphaStar
league is not here: its PFSP weights are functions of the payoff table, which changes after every
game, so it recomputes its distribution per draw by design.

    python benchmarks/opponent_draws.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from selfplay.core.menagerie import Menagerie
from selfplay.core.schemes import PSRO, make_scheme

SCHEMES = ("naive", "delta-uniform:delta=0", "delta-uniform:delta=0.5", "delta-limit-uniform:delta=0",
           "delta-limit-uniform:delta=0.5", "psro")


def build(spec: str, size: int, rng: np.random.Generator):
    m = Menagerie()
    for i in range(size):
        m.add(i, step=i, weight_version=i)
    if spec == "psro":
        scheme = PSRO(evaluate=lambda e, o, k: np.full(len(o), 0.5))
        p = rng.dirichlet(np.ones(size))
        scheme._solution = dict(zip(m.ids, p.tolist()))
        scheme._solves += 1
    else:
        scheme = make_scheme(spec)
    return m, scheme


def peer_draw(scheme, m, rng):
    """The draw without any cache: Ω as a dict, then rng.choice over it."""
    dist = scheme.distribution(m)
    ids = list(dist)
    probs = np.fromiter(dist.values(), dtype=float, count=len(ids))
    return m[ids[rng.choice(len(ids), p=probs / probs.sum())]]


def rate(fn, budget_s: float, max_calls: int) -> float:
    fn()  # warm up (builds caches)
    calls, start = 0, time.perf_counter()
    while calls < max_calls and (calls < 3 or time.perf_counter() - start < budget_s):
        fn()
        calls += 1
    return calls / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    budget = 0.3 if args.quick else 1.0
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"{'scheme':32s} {'entries':>8s} {'pattern':>8s} {'ours/s':>11s} {'peer/s':>11s} {'ratio':>9s}")
    for spec in SCHEMES:
        for size in (1_000, 10_000, 100_000):
            for pattern in ("fixed", "growing"):
                if spec == "psro" and pattern == "growing":
                    continue  # PSRO's Ω changes only at iterations
                results = []
                for ours in (True, False):
                    rng = np.random.default_rng(0)
                    m, scheme = build(spec, size, rng)
                    counter = [size]

                    def draw():
                        if pattern == "growing":
                            m.add(counter[0], step=counter[0], weight_version=counter[0])
                            counter[0] += 1
                        return scheme.sample(m, None, rng) if ours else peer_draw(scheme, m, rng)

                    results.append(rate(draw, budget, 200_000))
                print(f"{spec:32s} {size:8d} {pattern:>8s} {results[0]:11.0f} {results[1]:11.1f} {results[0] / results[1]:8.0f}x")


if __name__ == "__main__":
    main()
