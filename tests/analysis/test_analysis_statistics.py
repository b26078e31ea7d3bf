"""Statistics over seeds (analysis.statistics) on fixed per-seed tables with hand-computed values.

Bootstrap intervals are checked where the exact bootstrap distribution is small enough to write
down: with n seeds there are n^n equally likely resamples, so e.g. the mean of [0.6, 0.7, 0.8]
is 0.6 in 1/27 ≈ 3.7 % of resamples (> 2.5 %): the 95 % percentile interval is [0.6, 0.8].
"""

import math

import numpy as np
import pytest
from selfplay.analysis.statistics import (
    BootstrapConfig,
    aggregate,
    cross_seed_interval,
    curve_intervals,
    improvement_interval,
    interval_estimate,
    iqm,
    is_significant,
    probability_of_improvement,
    smallest_rank_test_p,
)


def test_mean_and_iqm_with_their_intervals_on_hand_computed_tables():
    row = aggregate([0.6, 0.7, 0.8])
    assert row["n_seeds"] == 3 and row["note"] == ""
    assert row["mean"] == pytest.approx(0.7) and row["iqm"] == pytest.approx(0.7)  # 3 seeds: IQM cuts nothing
    assert (row["mean_ci_low"], row["mean_ci_high"]) == pytest.approx((0.6, 0.8))
    # [0, 0, 0, 1]: the resampled mean is Binomial(4, 1/4)/4; P(1) = 1/256 < 2.5 % <= P(≥ 0.75) = 13/256
    ci = interval_estimate([0.0, 0.0, 0.0, 1.0], "mean")
    assert ci.estimate == 0.25 and (ci.low, ci.high) == pytest.approx((0.0, 0.75))
    # 4 seeds: the IQM drops the lowest and the highest
    assert iqm(np.array([0.1, 0.5, 0.6, 0.9])) == pytest.approx(0.55)
    assert aggregate([0.9, 0.1, 0.6, 0.5])["iqm"] == pytest.approx(0.55)
    assert aggregate([0.9, 0.1, 0.6, 0.5])["mean"] == pytest.approx(0.525)


def test_one_seed_gives_no_interval_and_says_why_and_identical_seeds_give_zero_width():
    row = aggregate([0.42])
    assert row["n_seeds"] == 1 and row["mean"] == 0.42 and row["iqm"] == 0.42
    assert all(math.isnan(row[k]) for k in ("mean_ci_low", "mean_ci_high", "iqm_ci_low", "iqm_ci_high"))
    assert "one seed" in row["note"]
    assert is_significant(interval_estimate([0.42]), null=0.0) is None
    same = aggregate([0.3, 0.3, 0.3])
    assert (same["mean_ci_low"], same["mean_ci_high"], same["iqm_ci_low"]) == (0.3, 0.3, 0.3)
    assert "all seeds equal" in same["note"]


def test_probability_of_improvement_counts_ties_one_half_and_is_oriented():
    x, y = [0.6, 0.7, 0.8], [0.5, 0.5, 0.9]
    assert probability_of_improvement(x, y) == pytest.approx(6 / 9)  # each x beats both 0.5s, loses to 0.9
    assert probability_of_improvement(y, x) == pytest.approx(3 / 9)
    # ties: 1 vs 2: 0, 1 vs 3: 0, 2 vs 2: ½, 2 vs 3: 0
    assert probability_of_improvement([1, 2], [2, 3]) == pytest.approx(0.125)
    # lower is better (e.g. Nash support): X improves when its score is the smaller: 1 + 1 + ½ + 1
    assert probability_of_improvement([1, 2], [2, 3], lower_is_better=True) == pytest.approx(0.875)
    assert probability_of_improvement([4, 4], [4, 4]) == 0.5


def test_probability_of_improvement_agrees_with_rliable():
    metrics = pytest.importorskip("rliable.metrics")
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = rng.integers(0, 4, size=(rng.integers(1, 6), 1)).astype(float)  # small integers: many ties
        y = rng.integers(0, 4, size=(rng.integers(1, 6), 1)).astype(float)
        assert probability_of_improvement(x[:, 0], y[:, 0]) == pytest.approx(metrics.probability_of_improvement(x, y))
        assert iqm(x[:, 0]) == pytest.approx(metrics.aggregate_iqm(x))


def test_improvement_interval_hand_computed_and_degenerate():
    # x = [1, 2], y = [1.5, 3]: P = (k/2)(m/2) with k ~ #2s in x's resample, m ~ #1.5s in y's (each Bin(2, ½));
    # P = 0 with prob 7/16, 1 with prob 1/16 > 2.5 %: the interval is [0, 1]
    ci = improvement_interval([1, 2], [1.5, 3])
    assert ci.estimate == 0.25 and (ci.low, ci.high) == (0.0, 1.0) and ci.n == (2, 2)
    assert is_significant(ci) is False
    one = improvement_interval([1.0], [0.0, 2.0])
    assert one.estimate == 0.5 and math.isnan(one.low) and "one seed of X" in one.note
    apart = improvement_interval([3, 4, 5], [0, 1, 2])
    assert (apart.estimate, apart.low, apart.high) == (1.0, 1.0, 1.0) and is_significant(apart)
    assert "do not overlap" in apart.note
    assert smallest_rank_test_p(3, 3) == pytest.approx(0.1)  # …yet no rank test reaches 5 % with 3 vs 3
    flat = improvement_interval([2, 2], [2, 2, 2])
    assert (flat.estimate, flat.low, flat.high) == (0.5, 0.5, 0.5)
    lower = improvement_interval([3, 4, 5], [0, 1, 2], lower_is_better=True)
    assert (lower.estimate, lower.low, lower.high) == (0.0, 0.0, 0.0)


def test_interval_is_reproducible_and_respects_the_confidence_level():
    x = np.random.default_rng(0).normal(size=12)
    a = interval_estimate(x, config=BootstrapConfig(seed=5))
    b = interval_estimate(x, config=BootstrapConfig(seed=5))
    assert (a.low, a.high) == (b.low, b.high)
    narrow = interval_estimate(x, config=BootstrapConfig(confidence=0.5, seed=5))
    assert a.low < narrow.low <= a.estimate <= narrow.high < a.high
    # the percentile interval is close to the normal-theory one for 12 normal draws (se = sd/√n)
    se = x.std() / np.sqrt(len(x))
    assert a.high - a.low == pytest.approx(2 * 1.96 * se, rel=0.2)


def test_cross_seed_interval_resamples_rows_and_columns_not_cells():
    # rows identical: only the column resample matters; mean of [0.2, 0.4] resampled: 0.2 w.p. ¼
    ci = cross_seed_interval([[0.2, 0.4], [0.2, 0.4]])
    assert ci.estimate == pytest.approx(0.3) and (ci.low, ci.high) == pytest.approx((0.2, 0.4))
    assert math.isnan(cross_seed_interval([[0.1, 0.2]]).low)


def test_curve_intervals_per_point():
    est, low, high = curve_intervals([[0.0, 1.0], [0.0, 0.0], [0.0, 0.5]])
    assert est.tolist() == [0.0, 0.5]
    assert low.tolist() == [0.0, 0.0] and high.tolist() == [0.0, 1.0]
    est, low, high = curve_intervals([[0.1, 0.2]])
    assert est.tolist() == [0.1, 0.2] and np.isnan(low).all() and np.isnan(high).all()


@pytest.mark.parametrize("call, message", [
    (lambda: aggregate([]), "scores must be a non-empty"),
    (lambda: aggregate([[1, 2]]), "scores must be a non-empty 1-D"),
    (lambda: aggregate([0.1, float("nan")]), "finite"),
    (lambda: aggregate(["a"]), "scores must be a 1-D sequence of numbers"),
    (lambda: interval_estimate([1, 2], "median"), "statistic must be one of"),
    (lambda: aggregate([1, 2], BootstrapConfig(confidence=1.5)), "confidence must be"),
    (lambda: aggregate([1, 2], BootstrapConfig(resamples=5)), "resamples must be"),
    (lambda: aggregate([1, 2], BootstrapConfig(method="magic")), "method must be one of"),
    (lambda: improvement_interval([1, 2], []), "y must be a non-empty"),
    (lambda: cross_seed_interval([1, 2]), "values must be a non-empty 2-D"),
    (lambda: curve_intervals([[1.0, np.inf]]), "finite"),
    (lambda: smallest_rank_test_p(0, 3), "n_x must be"),
])
def test_bad_input_names_the_parameter(call, message):
    with pytest.raises(ValueError, match=message):
        call()
