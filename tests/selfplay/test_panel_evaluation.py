"""Win rates against the SMAC panel (selfplay/evaluation/panel.py): how the numbers are made."""

import numpy as np
import pytest
from selfplay.envs.smac import FocusFirePolicy, SMACBattle
from selfplay.envs.smac.panel import PANEL

from selfplay.evaluation.panel import PANEL_NAMES, evaluate_panel, mean_interval, play_vs_member


class Idle:
    """Stops every living unit (never wins: it does not attack)."""

    def initial_state(self, batch):
        return None

    def act(self, obs, state, mask=None, episode_start=None):
        alive = ~mask[..., 0]
        return alive.long(), None, {}


def test_names_match_the_panel():
    assert PANEL_NAMES == tuple(PANEL)


def test_mean_interval_by_hand():
    m, lo, hi = mean_interval([0.2, 0.4, 0.6])  # sd 0.2, t(2) = 4.303: half-width 4.303 * 0.2 / sqrt(3)
    assert m == pytest.approx(0.4)
    assert hi == pytest.approx(min(1.0, 0.4 + 4.303 * 0.2 / 3 ** 0.5))
    assert lo == 0.0  # clipped
    assert mean_interval([0.5])[1:] == (None, None)


def test_a_policy_that_never_attacks_never_wins_and_the_mixture_of_one_is_that_policy():
    ff = FocusFirePolicy.for_battle(SMACBattle("3m", 1, two_player=True, mirror=True), 0)
    idle = Idle()
    assert play_vs_member("smac:3m", [idle], np.zeros(3, dtype=np.int64), "focus_weakest", 1, seed=0).sum() == 0
    ev = evaluate_panel("smac:3m", {"ff": ([ff], None), "mix": ([idle, ff], np.array([0.0, 1.0])),
                                     "idle": ([idle], None)}, games=4, seeds=[0, 1], members=["kiting", "builtin"])
    assert ev.rates["ff"] == ev.rates["mix"]  # all weight on ff: the same games
    assert ev.rates["idle"] == {"kiting": [0.0, 0.0], "builtin": [0.0, 0.0]}
    again = evaluate_panel("smac:3m", {"ff": ([ff], None)}, games=4, seeds=[0, 1], members=["kiting", "builtin"])
    assert again.rates["ff"] == ev.rates["ff"]  # same seeds, same games
    assert "timeout" in ev.how() and "2 evaluation seed(s)" in ev.how()


class GreedyFocus:
    """A learned agent's interface (``act`` takes ``deterministic``): focus fire when greedy, idle when sampling."""

    def __init__(self, ff):
        self.ff, self.idle = ff, Idle()

    def initial_state(self, batch):
        return None

    def act(self, obs, state, mask=None, episode_start=None, *, deterministic=False):
        return (self.ff if deterministic else self.idle).act(obs, state, mask, episode_start)


def test_agents_play_greedily_by_default_and_sample_on_request():
    ff = FocusFirePolicy.for_battle(SMACBattle("3m", 1, two_player=True, mirror=True), 0)
    both = {"ff": ([ff], None), "gf": ([GreedyFocus(ff)], None)}
    greedy = evaluate_panel("smac:3m", both, games=4, seeds=[0], members=["heuristic"])
    sampled = evaluate_panel("smac:3m", both, games=4, seeds=[0], members=["heuristic"], greedy=False)
    assert greedy.rates["gf"] == greedy.rates["ff"] == sampled.rates["ff"]  # scripted: the same either way
    assert sampled.rates["gf"] == {"heuristic": [0.0]}  # sampling, it idles: it never wins
    assert "greedily" in greedy.how() and "sampled" in sampled.how()


def test_bad_input():
    with pytest.raises(ValueError, match="games must be even"):
        evaluate_panel("smac:3m", {"x": ([Idle()], None)}, games=3)
    with pytest.raises(ValueError, match="members must be among"):
        evaluate_panel("smac:3m", {"x": ([Idle()], None)}, games=2, members=["nope"])
    with pytest.raises(ValueError, match="SMAC"):
        play_vs_member("rirrps", [Idle()], np.zeros(2, dtype=np.int64), "kiting", 0, 0)


def test_report_section_names_both_verdicts_and_the_pairs_they_order_differently():
    import pandas as pd

    from selfplay.evaluation.panel import report_section, summary_key

    # scheme a: better by RPP (+0.2 against b) but worse against the panel (0.1 vs 0.7)
    rows = []
    for scheme, rate in (("a", 0.1), ("b", 0.7)):
        for seed in (0, 1):
            row = {"agent": "ppo", "scheme": scheme, "seed": seed}
            row.update({summary_key(m, w): rate for m in PANEL_NAMES for w in ("final", "nash")})
            rows.append(row)
    summary = pd.DataFrame(rows)
    aggregate = pd.DataFrame([{"agent": "ppo", "scheme": s, "metric": summary_key(m, w), "mean": r,
                               "mean_ci_low": r - 0.05, "mean_ci_high": r + 0.05}
                              for s, r in (("a", 0.1), ("b", 0.7)) for m in PANEL_NAMES for w in ("final", "nash")])
    rpp = pd.DataFrame([[0.0, 0.2], [-0.2, 0.0]], index=["a", "b"], columns=["a", "b"])
    text = "\n".join(report_section(summary, aggregate, {"ppo": rpp}, games=20))
    assert "Panel verdict (ppo): `b`" in text and "Winrate-matrix verdict (ppo): `a`" in text
    assert "The two verdicts disagree" in text and "`a` vs `b`" in text
    assert "0.70 [0.65, 0.75]" in text and "10 in each seat" in text and "timeout" in text
    assert report_section(summary.drop(columns=[c for c in summary.columns if c.startswith("panel_")]),
                          aggregate, {}, 20) == []
