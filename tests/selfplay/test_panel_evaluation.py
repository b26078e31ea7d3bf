"""Win rates against the SMAC panel (selfplay/evaluation/panel.py): how the numbers are made."""

import numpy as np
import pytest
import torch
from selfplay.envs.smac import FocusFirePolicy, SMACBattle
from selfplay.envs.smac.panel import PANEL, panel_member

from selfplay.evaluation.panel import (
    PANEL_NAMES,
    evaluate_panel,
    mean_interval,
    member_battle,
    member_seats,
    play_vs_member,
)


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


def test_the_builtin_ai_is_played_in_smacs_own_game_the_scripts_in_the_mirrored_battle():
    """Against ``builtin`` the AI's marines start at 3m's own enemy spawns (the third at x 23.75,
    behind its column, map data), not the mirror image of the allies' layout (x 22.25, in front) that
    the scripted members' two-player battle gives seat 1; the agent's side starts at the allies' spawns
    in both."""
    own = member_battle("smac:3m", "builtin", 2, seed=0)
    mirrored = member_battle("smac:3m", "kiting", 2, seed=0)
    own.reset()
    mirrored.reset()
    assert own.n_seats == 1 and mirrored.n_seats == 2 and mirrored.mirror
    e = own.engine
    expected = torch.tensor([[23.0, 15.25], [23.0, 16.0], [23.75, 16.0]])
    assert torch.equal(e.pos[:, e.side_slices[1]], expected.expand(2, 3, 2))
    m = mirrored.engine
    assert torch.equal(m.pos[:, m.side_slices[1]], torch.tensor([[23.0, 15.25], [23.0, 16.0], [22.25, 16.0]]).expand(2, 3, 2))
    allies = torch.tensor([[9.0, 15.25], [9.0, 16.0], [9.75, 16.0]]).expand(2, 3, 2)
    assert torch.equal(e.pos[:, e.side_slices[0]], allies) and torch.equal(m.pos[:, m.side_slices[0]], allies)


def heuristic_wins(battle, ai_seat_to_script: bool) -> float:
    """SMAC's heuristic AI (panel member ``heuristic``) in seat 0 of ``battle`` against the built-in AI:
    its win rate over the batch's first games."""
    obs = battle.reset()
    n = battle.num_envs
    me = panel_member("heuristic", battle, 0)
    if ai_seat_to_script:
        panel_member("builtin", battle, 1)
    won, ended, start = torch.zeros(n), torch.zeros(n, dtype=torch.bool), torch.ones(n, dtype=torch.bool)
    while not bool(ended.all()):
        a = me.act(obs[0], None, None, start)[0]
        obs, _, done, info = battle.step([a] if battle.n_seats == 1 else [a, torch.zeros_like(a)])
        first = done & ~ended
        won[first] = (info["winner"][first] == 0).float()
        ended |= done
        start = done.clone()
    return float(won.mean())


def test_smacs_heuristic_wins_the_single_player_rate_against_builtin_not_the_mirrored_one():
    """SMAC's heuristic against the built-in AI on 3m, 16 games (seed 1): in the panel's battle for
    ``builtin`` (SMAC's single-player game) it wins 14 (0.875), as in a single-player ``SMACBattle``
    of the same seed game for game; in the mirrored two-player battle only 3 (0.19, measured)."""
    from selfplay.envs.smac import SMACBattle

    panel_rate = heuristic_wins(member_battle("smac:3m", "builtin", 16, seed=1), False)
    single = heuristic_wins(SMACBattle("3m", 16, two_player=False, seed=1), False)
    mirrored = heuristic_wins(member_battle("smac:3m", "heuristic", 16, seed=1), True)
    assert panel_rate == single == 14 / 16
    assert mirrored == 3 / 16


class Recorder(Idle):
    """Idle, recording the batch of every set of games it plays."""

    def __init__(self):
        self.batches = []

    def initial_state(self, batch):
        self.batches.append(batch)
        return None


def test_games_against_builtin_are_all_in_seat_0_and_the_scripts_half_per_seat():
    rec = Recorder()
    ev = evaluate_panel("smac:3m", {"r": ([rec], None)}, games=6, seeds=[0], members=["builtin", "kiting"])
    assert rec.batches == [6, 3, 3]  # builtin: one set of 6 games in seat 0; kiting: 3 per seat
    assert member_seats("builtin", 6) == [(0, 6)] and member_seats("kiting", 6) == [(0, 3), (1, 3)]
    how = ev.how()
    assert "against builtin (the map's built-in AI) all 6 with the agent as player 1 (seat 0)" in how
    assert "against kiting 3 with the agent in each seat" in how
    with pytest.raises(ValueError, match="seat must be 0 against 'builtin'"):
        play_vs_member("smac:3m", [Idle()], np.zeros(2, dtype=np.int64), "builtin", 1, 0)
    odd = Recorder()  # against 'builtin' alone every game is in seat 0, so an odd count is fine
    evaluate_panel("smac:3m", {"r": ([odd], None)}, games=3, seeds=[0], members=["builtin"])
    assert odd.batches == [3]


def test_bad_input():
    with pytest.raises(ValueError, match="games must be even with a scripted member on the panel"):
        evaluate_panel("smac:3m", {"x": ([Idle()], None)}, games=3)
    with pytest.raises(ValueError, match="games must be an integer"):
        evaluate_panel("smac:3m", {"x": ([Idle()], None)}, games=0, members=["builtin"])
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
    assert "0.70 [0.65, 0.75]" in text and "10 with the agent in each seat" in text and "timeout" in text
    assert "Against the built-in AI all 20 are played as player 1 (seat 0) of SMAC's single-player game: the map's own spawns" in text
    v2 = "\n".join(report_section(summary, aggregate, {"ppo": rpp}, games=20, env_name="smacv2:protoss_5_vs_5"))
    assert "of the scenario's single-player game (each game its own draw" in v2 and "map's own spawns" not in v2
    assert "both teams drawn per game, seat 1's start mirrored" in v2
    assert report_section(summary.drop(columns=[c for c in summary.columns if c.startswith("panel_")]),
                          aggregate, {}, 20) == []


def test_smacv2_scenarios_are_played_against_every_member():
    """On a SMACv2 scenario the built-in AI is played in the scenario's single-player game and the scripted
    members in its two-player battle: a side that never attacks wins none of its games against any of
    them (in either seat)."""
    for member in PANEL_NAMES:
        for seat in (0,) if member == "builtin" else (0, 1):
            got = play_vs_member("smacv2:protoss_5_vs_5", [Idle()], np.zeros(2, dtype=np.int64), member, seat, seed=0)
            assert got.tolist() == [0.0, 0.0], (member, seat)
    with pytest.raises(ValueError, match="the panel plays SMAC battles"):
        play_vs_member("rirrps", [Idle()], np.zeros(2, dtype=np.int64), "builtin", 0, seed=0)


def test_a_smacv2_runs_evaluation_plays_its_final_agent_against_the_panel(tmp_path):
    """``selfplay evaluate --panel`` on a SMACv2 self-play run: the panel section holds every member (the
    scripted ones on the scenario's two-player battle), for the final agent and the Nash mixture."""
    from selfplay.evaluation.compare import evaluate_run_dir
    from selfplay.training.loop import TrainConfig, train

    out = tmp_path / "v2"
    train(TrainConfig(env="smacv2:protoss_5_vs_5", agent="mappo", episodes=2, num_envs=2, checkpoints=2,
                      agent_settings={"rollout_length": 20, "chunk_length": 10, "epochs": 1}), out)
    summary = evaluate_run_dir(out, matches=1, figures=False, scripted_games=2, panel_games=2)
    panel = sorted(k for k in summary if k.startswith("panel_"))
    assert panel == sorted(f"panel_{m}_{who}" for m in PANEL_NAMES for who in ("final", "nash"))
    assert all(summary[k] in (0.0, 0.5, 1.0) for k in panel)  # 2 games each
    assert (out / "evaluation" / "panel.csv").read_text().count("builtin") >= 2


def test_the_reports_note_on_games_against_the_ai_names_smacv2s_draws():
    """The comparison report's "how the numbers were made": on a SMACv2 scenario each game draws both teams
    and their starts; on a SMAC map nothing is said of draws."""
    from types import SimpleNamespace

    import pandas as pd

    from selfplay.evaluation.report import measurement_lines

    summary = pd.DataFrame({"vs_scripted_final": [0.1]})
    v2 = "\n".join(measurement_lines(SimpleNamespace(env="smacv2:protoss_5_vs_5"), summary))
    v1 = "\n".join(measurement_lines(SimpleNamespace(env="smac:3m"), summary))
    assert "each game its own draw of both teams" in v2 and "draw of both teams" not in v1
    assert "counts ½" in v1 and "counts ½" in v2
