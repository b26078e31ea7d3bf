"""The answer a comparison's ``report.md`` opens with: per metric, the best scheme with its interval,
and whether it is significantly better than the runner-up — in words.

Per (agent, metric) the schemes are ranked by their mean over seeds in the metric's direction
(``seed_stats.METRICS``); the first is the *best*, the second the *runner-up*. The verdict reads the
probability of improvement P(best improves on runner-up) and its interval (``improvement.csv``):

- **significantly better**: the interval lies entirely above ½ (``SIGNIFICANCE``, the one criterion
  every sentence of the report uses);
- **not significantly better**: the interval contains ½;
- **no verdict**: no interval (one seed on either side), or the two means are equal (a tie).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

SIGNIFICANCE = ("significant means one thing throughout this report: the {level} stratified-bootstrap interval "
                "excludes chance (½ for a probability of improvement P(X improves on Y), 0 for a relative "
                "population performance v(X, Y))")


def significance_definition(confidence: float) -> str:
    """The report's one significance criterion, as a sentence fragment."""
    return SIGNIFICANCE.format(level=f"{confidence:.0%}")


@dataclass(frozen=True)
class Verdict:
    """The best scheme of one (agent, metric), its runner-up and the comparison of the two."""

    agent: str
    metric: str
    higher_is_better: bool
    best: str
    best_mean: float
    best_low: float
    best_high: float
    runner_up: str | None
    runner_mean: float = math.nan
    runner_low: float = math.nan
    runner_high: float = math.nan
    probability: float = math.nan  # P(best improves on runner-up)
    p_low: float = math.nan
    p_high: float = math.nan
    tied: tuple = ()  # the schemes whose mean equals the best's (the runner-up first)

    @property
    def outcome(self) -> str:
        """``"significant"``, ``"not significant"``, ``"tie"``, ``"no interval"`` or ``"alone"``."""
        if self.runner_up is None:
            return "alone"
        if self.best_mean == self.runner_mean:
            return "tie"
        if math.isnan(self.p_low) or math.isnan(self.p_high):
            return "no interval"
        return "significant" if self.p_low > 0.5 else "not significant"


def verdicts(aggregate: pd.DataFrame, improvement: pd.DataFrame, metrics: dict) -> list[Verdict]:
    """One ``Verdict`` per (agent, metric) of ``aggregate`` (``aggregate.csv``'s rows), in the order the
    metrics first appear; ``improvement``: ``improvement.csv``'s rows; ``metrics``: name → an object with
    ``higher_is_better``. Equal means keep the schemes' order in ``aggregate``."""
    out = []
    for (agent, metric), rows in aggregate.groupby(["agent", "metric"], sort=False):
        higher = metrics[metric].higher_is_better
        rows = rows.dropna(subset=["mean"])
        if rows.empty:
            continue
        ranked = rows.sort_values("mean", ascending=not higher, kind="stable")
        best = ranked.iloc[0]
        fields = dict(agent=agent, metric=metric, higher_is_better=higher, best=best["scheme"],
                      best_mean=float(best["mean"]), best_low=float(best["mean_ci_low"]),
                      best_high=float(best["mean_ci_high"]))
        if len(ranked) == 1:
            out.append(Verdict(**fields, runner_up=None))
            continue
        runner = ranked.iloc[1]
        fields["tied"] = tuple(ranked["scheme"].iloc[1:][ranked["mean"].iloc[1:] == best["mean"]])
        pair = improvement[(improvement["agent"] == agent) & (improvement["metric"] == metric)
                           & (improvement["scheme_x"] == best["scheme"]) & (improvement["scheme_y"] == runner["scheme"])]
        p = pair.iloc[0] if len(pair) else None
        out.append(Verdict(**fields, runner_up=runner["scheme"], runner_mean=float(runner["mean"]),
                           runner_low=float(runner["mean_ci_low"]), runner_high=float(runner["mean_ci_high"]),
                           probability=math.nan if p is None else float(p["probability"]),
                           p_low=math.nan if p is None else float(p["ci_low"]),
                           p_high=math.nan if p is None else float(p["ci_high"])))
    return out


def _interval(low: float, high: float) -> str:
    return "no interval" if math.isnan(low) or math.isnan(high) else f"[{low:.3f}, {high:.3f}]"


def _labelled_interval(label: str, low: float, high: float) -> str:
    """``"<label> [low, high]"``, or ``"no interval"`` where a bound is missing (one seed)."""
    return "no interval" if math.isnan(low) or math.isnan(high) else f"{label} {_interval(low, high)}"


def verdict_sentence(v: Verdict, confidence: float) -> str:
    """One bullet in words: the best scheme, its mean and interval, and the verdict against the runner-up."""
    direction = "higher" if v.higher_is_better else "lower"
    head = (f"- **`{v.metric}`** ({v.agent}, {direction} is better): **{v.best}** is best, mean {v.best_mean:.3f} "
            f"({_labelled_interval(f'{confidence:.0%} interval', v.best_low, v.best_high)})")
    if v.outcome == "alone":
        return head + "; it is the only scheme."
    runner = f"the runner-up {v.runner_up} ({v.runner_mean:.3f}, {_interval(v.runner_low, v.runner_high)})"
    if v.outcome == "tie":
        label = f"{v.best}'s {confidence:.0%} interval"
        names = [v.best, *v.tied]
        together = ", ".join(names[:-1]) + f" and {names[-1]}"
        return (f"- **`{v.metric}`** ({v.agent}, {direction} is better): no single best scheme: {together} tie at "
                f"mean {v.best_mean:.3f} ({_labelled_interval(label, v.best_low, v.best_high)}).")
    p = f"P(best improves on runner-up) = {v.probability:.2f}, {_labelled_interval('interval', v.p_low, v.p_high)}"
    if v.outcome == "no interval":
        return head + f", ahead of {runner}; {p}: one seed, so no verdict on significance."
    if v.outcome == "significant":
        return head + f"; it is **significantly better** than {runner}: {p} lies above ½."
    return head + f"; it is **not significantly better** than {runner}: {p} contains ½."


def answer_lines(stats, config) -> list[str]:
    """The report's opening section: one verdict per metric, the criterion, and the seeds' caveat."""
    from selfplay.analysis.statistics import smallest_rank_test_p
    from selfplay.evaluation.seed_stats import METRICS

    confidence = getattr(config, "confidence", 0.95)
    found = verdicts(stats.aggregate, stats.improvement, METRICS)
    if not found:
        return []
    n = len(config.seeds)
    lines = ["## The answer: the best scheme per metric", "",
             f"Ranked by the mean over {n} seed{'s' if n != 1 else ''}; the best scheme against the runner-up. "
             + significance_definition(confidence)[0].upper() + significance_definition(confidence)[1:] + ".", ""]
    lines += [verdict_sentence(v, confidence) for v in found]
    if n > 1:
        p = smallest_rank_test_p(n, n)
        if p > 1 - confidence:
            lines += ["", f"With {n} seeds per scheme this criterion is lenient: seeds that do not overlap give "
                          f"P = 1 with a zero-width interval, while an exact two-sided Mann–Whitney test on the same "
                          f"seeds cannot give p below {p:.3g}. Read \"significantly better\" as \"consistently better "
                          "on these seeds\", not as a tested claim, and add seeds before relying on it."]
    return lines + [""]


# ----------------------------------------------------------------------------- a league's answer
def wilson_interval(score: float, games: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a win rate ``score`` over ``games`` games:
    (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n), z the normal quantile of the confidence. Draws
    counted ½ make the games' variance smaller than a coin's, so the interval is conservative for them."""
    from scipy.stats import norm

    if games < 1:
        raise ValueError(f"games must be ≥ 1, got {games}")
    z = float(norm.ppf(0.5 + confidence / 2))
    n, p = games, min(max(score, 0.0), 1.0)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def difference_interval(a: float, b: float, games_a: int, games_b: int, confidence: float = 0.95) -> tuple[float, float]:
    """Newcombe's hybrid score interval of the difference a − b of two win rates (each from its own
    games; Newcombe 1998, method 10): a − b − √((a − l_a)² + (u_b − b)²), a − b + √((u_a − a)² + (b − l_b)²),
    with (l, u) each rate's Wilson interval."""
    la, ua = wilson_interval(a, games_a, confidence)
    lb, ub = wilson_interval(b, games_b, confidence)
    d = a - b
    return d - math.sqrt((a - la) ** 2 + (ub - b) ** 2), d + math.sqrt((ua - a) ** 2 + (b - lb) ** 2)


def league_answer_lines(players: list[str], measures: dict[str, tuple[list[float], int]],
                        confidence: float = 0.95) -> list[str]:
    """The league report's opening answer: per measure (``measures[name] = (each player's final win
    rate, games per rate)``, in the order of ``players``) the best player with its Wilson interval,
    and whether it is significantly better than the runner-up (Newcombe's interval of the difference
    of the two rates excludes 0)."""
    lines = ["## The answer: the best player per measure", "",
             f"Each player's final policy, its win rate with the {confidence:.0%} Wilson interval over that measure's "
             f"games. Significant means one thing throughout this report: the {confidence:.0%} interval excludes "
             "chance — here Newcombe's interval of the difference of two players' win rates excludes 0.", ""]
    for name, (rates, games) in measures.items():
        order = sorted(range(len(players)), key=lambda i: -rates[i])
        best = order[0]
        low, high = wilson_interval(rates[best], games, confidence)
        head = (f"- **{name}** (higher is better): **{players[best]}** is best, {rates[best]:.3f} over {games} games "
                f"({confidence:.0%} interval [{low:.3f}, {high:.3f}])")
        if len(order) == 1:
            lines.append(head + "; it is the only player.")
            continue
        runner = order[1]
        rl, rh = wilson_interval(rates[runner], games, confidence)
        other = f"the runner-up {players[runner]} ({rates[runner]:.3f}, [{rl:.3f}, {rh:.3f}])"
        if rates[best] == rates[runner]:
            lines.append(head + f"; tied with {other}: no player is better.")
            continue
        dl, dh = difference_interval(rates[best], rates[runner], games, games, confidence)
        verdict = "**significantly better**" if dl > 0 else "**not significantly better**"
        where = "lies above 0" if dl > 0 else "contains 0"
        lines.append(head + f"; it is {verdict} than {other}: the difference's interval [{dl:.3f}, {dh:.3f}] {where}.")
    return lines + [""]
