"""analysis.winrate: seat merging, draws, Wilson intervals, evaluation matrices, summaries."""

import numpy as np
import pandas as pd
import pytest
from selfplay.analysis.winrate import (
    WinrateMatrix,
    evaluation_matrix,
    improvement_summary,
    lower_triangle_share,
    lower_triangle_winrate,
    wilson_interval,
    winrate_matrix,
)


def records(rows):
    return pd.DataFrame(rows, columns=["home", "away", "score"])


def test_both_seats_are_merged():
    # a vs b: a wins twice at home, b wins once at home, one draw with b at home
    rec = records([("a", "b", 1), ("a", "b", 1), ("b", "a", 1), ("b", "a", 0.5)])
    wm = winrate_matrix(rec)
    assert list(wm.ids) == ["a", "b"]
    np.testing.assert_allclose(wm.W, [[0.5, 2.5 / 4], [1.5 / 4, 0.5]])
    np.testing.assert_array_equal(wm.counts, [[0, 4], [4, 0]])


def test_ids_fix_order_and_select_players():
    rec = records([(1, 2, 1.0), (2, 3, 0.0), (3, 1, 1.0)])
    wm = winrate_matrix(rec, ids=[3, 1])
    np.testing.assert_allclose(wm.W, [[0.5, 1.0], [0.0, 0.5]])
    np.testing.assert_array_equal(wm.counts, [[0, 1], [1, 0]])
    # a pair that never met is NaN with the uninformative interval
    wm = winrate_matrix(rec, ids=[1, 2, 3, 4])
    assert np.isnan(wm.W[0, 3]) and wm.counts[0, 3] == 0
    assert wm.ci_low[0, 3] == 0 and wm.ci_high[0, 3] == 1


def test_array_records_and_self_play():
    rec = np.array([[0, 1, 1.0], [0, 0, 0.5], [1, 0, 0.0]])
    wm = winrate_matrix(rec)
    np.testing.assert_allclose(wm.W, [[0.5, 1.0], [0.0, 0.5]])
    np.testing.assert_array_equal(wm.counts, [[1, 2], [2, 0]])


def test_random_draws_are_seeded_and_fair():
    rec = records([("a", "b", 0.5)] * 4000)
    w1 = winrate_matrix(rec, draws="random", seed=0)
    w2 = winrate_matrix(rec, draws="random", seed=0)
    np.testing.assert_array_equal(w1.W, w2.W)
    assert w1.W[0, 1] not in (0.0, 0.5, 1.0)  # draws became wins and losses
    assert abs(w1.W[0, 1] - 0.5) < 4 * np.sqrt(0.25 / 4000)
    assert w1.W[0, 1] + w1.W[1, 0] == pytest.approx(1.0)
    assert not np.array_equal(w1.W, winrate_matrix(rec, draws="random", seed=1).W)


def test_wilson_interval_hand_computation():
    # 8 wins out of 10 at 95 %: z = 1.959964, p = 0.8
    z = 1.959963984540054
    p = 0.8  # n = 10
    centre = (p + z * z / 20) / (1 + z * z / 10)
    half = z / (1 + z * z / 10) * np.sqrt(p * (1 - p) / 10 + z * z / 400)
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(centre - half, abs=1e-12) and high == pytest.approx(centre + half, abs=1e-12)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)  # textbook values
    wm = winrate_matrix(records([("x", "y", 1)] * 8 + [("y", "x", 1)] * 2))
    assert wm.ci_low[0, 1] == pytest.approx(low) and wm.ci_high[0, 1] == pytest.approx(high)
    # the interval of the reversed pair mirrors it
    assert wm.ci_low[1, 0] == pytest.approx(1 - high) and wm.ci_high[1, 0] == pytest.approx(1 - low)


def test_bad_records_are_refused():
    with pytest.raises(ValueError, match="draws"):
        winrate_matrix(records([("a", "b", 1)]), draws="coin")
    with pytest.raises(ValueError, match="seed"):
        winrate_matrix(records([("a", "b", 1)]), draws="random")
    with pytest.raises(ValueError, match="score"):
        winrate_matrix(records([("a", "b", 2)]))
    with pytest.raises(ValueError, match="missing"):
        winrate_matrix({"home": [1], "away": [2]})
    with pytest.raises(ValueError, match="duplicates"):
        winrate_matrix(records([("a", "b", 1)]), ids=["a", "a"])


def test_evaluation_matrix_shift_and_logit():
    W = np.array([[0.5, 0.8, 1.0], [0.2, 0.5, 0.4], [0.0, 0.6, 0.5]])
    A = evaluation_matrix(W)
    np.testing.assert_allclose(A, W - 0.5)
    np.testing.assert_array_equal(A, -A.T)
    L = evaluation_matrix(W, transform="logit", eps=0.01)
    assert L[0, 1] == pytest.approx(np.log(4.0))
    assert L[0, 2] == pytest.approx(np.log(99.0))  # clamped at 1 − eps
    np.testing.assert_array_equal(L, -L.T)
    with pytest.raises(ValueError, match="transform"):
        evaluation_matrix(W, transform="probit")
    with pytest.raises(ValueError, match="W\\[i, j\\] \\+ W\\[j, i\\] = 1"):
        evaluation_matrix(np.full((2, 2), 0.7))
    with pytest.raises(ValueError, match="NaN"):
        evaluation_matrix(winrate_matrix(records([("a", "b", 1)]), ids=["a", "b", "c"]))


def test_monotone_improvement_summaries():
    n = 5
    ideal = np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)
    ideal = ideal + np.triu(np.zeros((n, n)), 1)
    assert lower_triangle_winrate(ideal) == 1.0 and lower_triangle_share(ideal) == 1.0
    cyclic = np.array([[0.5, 0.0, 1.0], [1.0, 0.5, 0.0], [0.0, 1.0, 0.5]])
    assert lower_triangle_winrate(cyclic) == pytest.approx(2 / 3)
    assert lower_triangle_share(cyclic) == pytest.approx(2 / 3)
    s = improvement_summary(cyclic)
    assert s["beats_previous"] == 1.0 and s["beats_first"] == 0.5
    assert s["worst_history"] == 0.5  # checkpoint 2 beats 1 but loses to 0
    with pytest.raises(ValueError, match="at least 2"):
        lower_triangle_winrate(np.array([[0.5]]))


def test_winrate_matrix_type():
    wm = winrate_matrix(records([("a", "b", 1)]))
    assert isinstance(wm, WinrateMatrix)
    assert wm.to_frame().loc["a", "b"] == 1.0
