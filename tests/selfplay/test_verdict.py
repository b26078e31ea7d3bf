"""The report's answer: per metric the best scheme with its interval, and the verdict against the
runner-up, on hand-made metric tables (seed_stats' tables built from them)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from selfplay.evaluation.seed_stats import METRICS, aggregate_table, improvement_table
from selfplay.evaluation.verdict import answer_lines, verdicts


def _summary(rows: dict[str, list[tuple[float, float]]]) -> pd.DataFrame:
    """scheme → per seed (lower_triangle_winrate, nash_support)."""
    return pd.DataFrame([{"agent": "ppo-mlp", "scheme": s, "seed": k, "lower_triangle_winrate": ltw, "nash_support": ns}
                         for s, values in rows.items() for k, (ltw, ns) in enumerate(values)])


def _verdicts(summary: pd.DataFrame) -> dict:
    return {v.metric: v for v in verdicts(aggregate_table(summary), improvement_table(summary), METRICS)}


def test_best_is_named_and_significantly_better_when_the_seeds_separate():
    # higher is better for lower_triangle_winrate: A's seeds all above B's, B's above C's
    # lower is better for nash_support: C's seeds {1, 1, 2} all below A's {3, 4, 3}, A's all below B's {5, 6, 5}
    summary = _summary({"A": [(0.80, 3), (0.85, 4), (0.90, 3)], "B": [(0.50, 5), (0.55, 6), (0.60, 5)],
                        "C": [(0.20, 1), (0.25, 1), (0.30, 2)]})
    found = _verdicts(summary)
    v = found["lower_triangle_winrate"]
    assert (v.best, v.runner_up) == ("A", "B")
    assert v.best_mean == pytest.approx(0.85) and v.runner_mean == pytest.approx(0.55)
    assert (v.best_low, v.best_high) == pytest.approx((0.80, 0.90))  # the exact bootstrap's extremes of 3 seeds
    assert (v.probability, v.p_low, v.p_high) == (1.0, 1.0, 1.0)  # no overlap: every resample gives P = 1
    assert v.outcome == "significant"
    s = found["nash_support"]  # lower is better: C (mean 4/3) best, A (10/3) runner-up, B (16/3) last
    assert (s.best, s.runner_up, s.outcome) == ("C", "A", "significant")
    lines = answer_lines(SimpleNamespace(aggregate=aggregate_table(summary), improvement=improvement_table(summary)),
                         SimpleNamespace(seeds=[0, 1, 2], confidence=0.95))
    text = "\n".join(lines)
    assert lines[0] == "## The answer: the best scheme per metric"
    assert ("- **`lower_triangle_winrate`** (ppo-mlp, higher is better): **A** is best, mean 0.850 (95% interval "
            "[0.800, 0.900]); it is **significantly better** than the runner-up B (0.550, [0.500, 0.600]): "
            "P(best improves on runner-up) = 1.00, interval [1.000, 1.000] lies above ½.") in lines
    assert "**C** is best, mean 1.333" in text
    assert "cannot give p below 0.1" in text  # 3 seeds: the rank test's floor is 2 / C(6, 3) = 0.1 > 0.05
    assert "significant at" not in text


def test_not_significantly_better_when_the_runner_up_overlaps():
    # A's mean 0.733 > B's 0.633, but the seeds interleave: P(A improves on B) = 6.5/9, its interval contains ½
    summary = _summary({"A": [(0.6, 2), (0.9, 2), (0.7, 3)], "B": [(0.65, 2), (0.7, 3), (0.55, 2)]})
    v = _verdicts(summary)["lower_triangle_winrate"]
    assert (v.best, v.runner_up) == ("A", "B")
    assert v.probability == pytest.approx((1 + 3 + 2.5) / 9)  # A's 0.6 beats 0.55; 0.9 beats all; 0.7 ties 0.7
    assert v.p_low <= 0.5 <= v.p_high
    assert v.outcome == "not significant"
    text = "\n".join(answer_lines(SimpleNamespace(aggregate=aggregate_table(summary),
                                                  improvement=improvement_table(summary)),
                                  SimpleNamespace(seeds=[0, 1, 2], confidence=0.95)))
    assert "**A** is best, mean 0.733" in text and "it is **not significantly better** than the runner-up B" in text


def test_ties_one_seed_and_a_single_scheme_give_no_verdict():
    tie = _verdicts(_summary({"A": [(0.7, 2), (0.6, 2)], "B": [(0.6, 2), (0.7, 2)]}))["lower_triangle_winrate"]
    assert (tie.best, tie.runner_up, tie.outcome, tie.tied) == ("A", "B", "tie", ("B",))  # equal means: no verdict
    from selfplay.evaluation.verdict import verdict_sentence

    assert verdict_sentence(tie, 0.95) == ("- **`lower_triangle_winrate`** (ppo-mlp, higher is better): no single best "
                                           "scheme: A and B tie at mean 0.650 (A's 95% interval [0.600, 0.700]).")
    one = _verdicts(_summary({"A": [(0.9, 1)], "B": [(0.2, 3)]}))["lower_triangle_winrate"]
    assert (one.best, one.outcome) == ("A", "no interval")
    assert verdict_sentence(one, 0.95) == (  # one seed: the sentence says so, with no empty interval in it
        "- **`lower_triangle_winrate`** (ppo-mlp, higher is better): **A** is best, mean 0.900 (no interval), ahead "
        "of the runner-up B (0.200, no interval); P(best improves on runner-up) = 1.00, no interval: one seed, so no "
        "verdict on significance.")
    alone = _verdicts(_summary({"A": [(0.9, 1), (0.8, 1)]}))["lower_triangle_winrate"]
    assert (alone.best, alone.runner_up, alone.outcome) == ("A", None, "alone")


def test_wilson_and_newcombe_intervals_reproduce_the_published_examples():
    from selfplay.evaluation.verdict import difference_interval, wilson_interval

    # Newcombe (1998), Stat. Med. 17: 857-872, Table II: 81/263 -> 0.2553 to 0.3662 (score method)
    assert wilson_interval(81 / 263, 263) == pytest.approx((0.2553, 0.3662), abs=1e-4)
    # Newcombe (1998), Stat. Med. 17: 873-890, example (a): 56/70 - 48/80 -> 0.0524 to 0.3339 (method 10)
    assert difference_interval(56 / 70, 48 / 80, 70, 80) == pytest.approx((0.0524, 0.3339), abs=1e-4)


def test_league_answer_names_the_best_player_and_the_verdict_both_ways():
    from selfplay.evaluation.verdict import league_answer_lines

    players = ["main_0", "main_exploiter_0", "league_exploiter_0"]
    lines = league_answer_lines(players, {"vs scripted AI": ([0.9, 0.3, 0.5], 100),
                                          "vs starting policy": ([0.55, 0.6, 0.5], 20)})
    text = "\n".join(lines)
    # 0.9 vs 0.5 over 100 games each: far apart; 0.6 vs 0.55 over 20 games: well within each other's noise
    assert "- **vs scripted AI** (higher is better): **main_0** is best, 0.900 over 100 games" in text
    assert "it is **significantly better** than the runner-up league_exploiter_0 (0.500" in text
    assert "- **vs starting policy** (higher is better): **main_exploiter_0** is best, 0.600 over 20 games" in text
    assert "it is **not significantly better** than the runner-up main_0 (0.550" in text
