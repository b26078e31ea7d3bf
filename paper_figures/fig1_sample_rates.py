"""The paper's Fig. 1: cumulative sample rate per policy, δ=0-Uniform vs δ=0-Limit-Uniform.

A run in which ``n_policies`` (500) policies enter the menagerie one by one, and after each entry the
trainer draws ``samples_per_addition`` (2) opponents from Ω — exactly what a trainer does, with the
real scheme objects. The cumulative sample rate of policy i is (times i was drawn) / (all draws).
Under δ=0-Uniform the first policy's rate is ≈ 2·H_500/1000 ≈ 7× the uniform rate 1/500; under
δ=0-Limit-Uniform every rate stays near uniform.

    python -m paper_figures.fig1_sample_rates --out figures/fig1_sample_rates.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from selfplay.core.menagerie import Menagerie
from selfplay.core.schemes import LearnerInfo, Scheme, make_scheme

SCHEMES = ("delta-uniform:delta=0", "delta-limit-uniform:delta=0")


def cumulative_sample_rates(scheme: Scheme, n_policies: int = 500, samples_per_addition: int = 2,
                            seed: int = 0) -> np.ndarray:
    """Sample rate of each of the ``n_policies`` entries over a whole simulated run."""
    rng = np.random.default_rng(seed)
    menagerie = Menagerie()
    counts = np.zeros(n_policies)
    for t in range(n_policies):
        scheme.curate(menagerie, LearnerInfo(episode=t, step=t, weight_version=t, snapshot=lambda t=t: f"policy-{t}"))
        for entry in scheme.sample_many(menagerie, samples_per_addition, rng=rng):
            counts[entry.id] += 1
    return counts / counts.sum()


def expected_sample_rates(scheme: Scheme, n_policies: int = 500) -> np.ndarray:
    """The same quantity in expectation: the average of Ω over the run (no sampling noise)."""
    menagerie = Menagerie()
    total = np.zeros(n_policies)
    for t in range(n_policies):
        scheme.curate(menagerie, LearnerInfo(episode=t, step=t, weight_version=t, snapshot=lambda t=t: f"policy-{t}"))
        for entry_id, p in scheme.distribution(menagerie).items():
            total[entry_id] += p
    return total / total.sum()


def plot(rates: dict[str, np.ndarray], expected: dict[str, np.ndarray], path: str | Path | None = None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(next(iter(rates.values())))
    fig, axes = plt.subplots(1, len(rates), figsize=(5.5 * len(rates), 3.8), sharey=True)
    for ax, (name, r) in zip(np.atleast_1d(axes), rates.items()):
        ax.plot(np.arange(n), r, ".", ms=3, color="tab:blue", alpha=0.5, label="sampled (one run)")
        ax.plot(np.arange(n), expected[name], color="tab:orange", lw=2, label="expected (mean of Ω)")
        ax.axhline(1.0 / n, color="k", ls="--", lw=1, label=f"Uniform(0, {n})")
        ax.set_title(name.replace("delta", "δ"))
        ax.set_xlabel("policy index (order of entry)")
        ax.legend(frameon=False, fontsize=8)
    np.atleast_1d(axes)[0].set_ylabel("cumulative sample rate")
    fig.suptitle(f"Cumulative sample rate per policy ({n} policies, 2 samples per addition)")
    fig.tight_layout()
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120)
    return fig


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="figures/fig1_sample_rates.png")
    parser.add_argument("--policies", type=int, default=500)
    parser.add_argument("--samples-per-addition", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rates = {s: cumulative_sample_rates(make_scheme(s), args.policies, args.samples_per_addition, args.seed) for s in SCHEMES}
    expected = {s: expected_sample_rates(make_scheme(s), args.policies) for s in SCHEMES}
    plot(rates, expected, args.out)
    uniform = 1.0 / args.policies
    summary = {}
    for s in SCHEMES:
        summary[s] = expected[s][0] / uniform
        print(f"{s:32s} first policy: {rates[s][0] / uniform:5.2f}× uniform sampled, "
              f"{expected[s][0] / uniform:5.2f}× expected; max/min expected rate "
              f"{expected[s].max() / expected[s].min():6.2f}")
    print(f"wrote {args.out}")
    return summary


if __name__ == "__main__":
    main()
