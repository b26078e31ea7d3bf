import numpy as np
import pytest
from scipy import stats

from selfplay import AlphaStarLeague, LeagueConfig, LearnerInfo, make_scheme, pfsp
from selfplay.core.league import remove_monotonic_suffix


def test_pfsp_weightings_by_hand():
    x = [0.2, 0.5, 0.9]
    np.testing.assert_allclose(pfsp(x, "linear"), np.array([0.8, 0.5, 0.1]) / 1.4)
    np.testing.assert_allclose(pfsp(x, "linear_capped"), np.array([0.5, 0.5, 0.1]) / 1.1)
    np.testing.assert_allclose(pfsp(x, "variance"), np.array([0.16, 0.25, 0.09]) / 0.5)
    np.testing.assert_allclose(pfsp(x, "squared"), np.array([0.64, 0.25, 0.01]) / 0.9)
    np.testing.assert_allclose(pfsp([1.0, 1.0], "linear"), [0.5, 0.5])  # Σf < 1e-10 → uniform
    with pytest.raises(ValueError, match="empty"):
        pfsp([], "linear")
    with pytest.raises(ValueError, match="weighting"):
        pfsp([0.5], "cubic")


def test_remove_monotonic_suffix_on_arrays():
    wr, keys = remove_monotonic_suffix(np.array([0.5, 0.6, 0.4, 0.3]), ["a", "b", "c", "d"])
    np.testing.assert_allclose(wr, [0.5, 0.6])
    assert keys == ["a", "b"]
    wr, keys = remove_monotonic_suffix(np.array([0.9, 0.8, 0.7]), [1, 2, 3])
    assert len(wr) == 0 and keys == []
    wr, keys = remove_monotonic_suffix(np.array([]), [])
    assert len(wr) == 0


def play(league, home, away, wins, losses):
    for _ in range(wins):
        league.record(home, away, 1)
    for _ in range(losses):
        league.record(home, away, 0)


def make_league(**kw):
    cfg = dict(main=1, main_exploiters=1, league_exploiters=1, decay=1.0, min_steps=100, max_steps=300)
    cfg.update(kw)
    league = AlphaStarLeague(LeagueConfig(**cfg))
    league.start("sl")
    return league


def assert_sampling_matches(league, name, n=20000, seed=0):
    dist = league.distribution(name)
    rng = np.random.default_rng(seed)
    draws = [league.get_match(name, rng) for _ in range(n)]
    keys = list(dist)
    counts = np.array([sum(d == k for d in draws) for k in keys])
    assert counts.sum() == n, "sampled an opponent outside the explicit distribution"
    if len(keys) > 1:
        assert stats.chisquare(counts, np.array(list(dist.values())) * n).pvalue > 1e-3
    return dist


def test_main_player_exploiter_check_branch():
    league = make_league()
    h0 = 0  # main_0's initial historical
    h1 = league.checkpoint("main_0", "mp-1", np.random.default_rng(0)).added[0].id
    h2 = league.checkpoint("main_exploiter_0", "me-1", np.random.default_rng(0)).added[0].id
    assert league.menagerie[h2].tags["parent"] == "main_exploiter_0"  # the player, not the agent
    play(league, "main_0", h0, 4, 1)  # 0.8
    play(league, "main_0", h2, 1, 4)  # 0.2 < 0.3: the exploiter check fires
    dist = assert_sampling_matches(league, "main_0")
    f = np.array([0.2, 0.5, 0.8]) ** 2  # squared weighting of x = 0.8, 0.5, 0.2
    expected = {h0: 0.5 * f[0] / f.sum(), h1: 0.5 * f[1] / f.sum(), h2: 0.5 * f[2] / f.sum() + 0.15, "main_0": 0.35}
    assert dist.keys() == expected.keys()
    for k in expected:
        assert dist[k] == pytest.approx(expected[k])


def test_main_player_forgetting_check_branch():
    league = make_league()
    h1 = league.checkpoint("main_0", "mp-1", np.random.default_rng(0)).added[0].id
    play(league, "main_0", 0, 3, 2)  # 0.6
    play(league, "main_0", h1, 9, 1)  # 0.9: increasing, so nothing removed; min 0.6 < 0.7
    dist = assert_sampling_matches(league, "main_0")
    all_f = (1 - np.array([0.6, 0.9])) ** 2
    assert dist[0] == pytest.approx(0.5 * all_f[0] / all_f.sum() + 0.15 * all_f[0] / all_f.sum())
    assert dist[h1] == pytest.approx(0.65 * all_f[1] / all_f.sum())
    assert dist["main_0"] == pytest.approx(0.35)
    # once it beats both by > 0.7, the check passes and the 0.15 goes to self-play
    play(league, "main_0", 0, 20, 0)
    dist = league.distribution("main_0")
    assert dist["main_0"] == pytest.approx(0.5)


def test_main_player_selfplay_branch_against_a_losing_match_up():
    league = make_league(main=2, main_exploiters=0, league_exploiters=0)
    # main_1 holds historical 1; main_0 loses to main_1 (0.2 ≤ 0.3) → PFSP over main_1's historicals
    play(league, "main_0", "main_1", 1, 4)
    play(league, "main_0", 0, 9, 1)
    play(league, "main_0", 1, 8, 2)
    dist = assert_sampling_matches(league, "main_0")
    # coin < .5: squared PFSP over h0 (0.9), h1 (0.8); O = main_0 (½): self-play (wr 0.5 > .3) but
    # forgetting check over own [h0] → min 0.9 ≥ .7 → None; O = main_1 (½): forgetting over [h1]: 0.8 → None;
    # self-play branch vs main_1: PFSP variance over [h1] → h1.
    sq = np.array([0.01, 0.04]) / 0.05
    assert dist[0] == pytest.approx(0.5 * sq[0])
    assert dist[1] == pytest.approx(0.5 * sq[1] + 0.25)
    assert dist["main_0"] == pytest.approx(0.25)
    assert "main_1" not in dist


def test_main_exploiter_and_league_exploiter_rules():
    league = make_league(league_exploiters=2)
    dist = assert_sampling_matches(league, "main_exploiter_0", n=2000)
    assert dist == {"main_0": 1.0}  # 0.5 (no games) > 0.1
    play(league, "main_exploiter_0", "main_0", 0, 20)  # 0 ≤ 0.1 → PFSP variance over main_0's historicals
    h1 = league.checkpoint("main_0", "mp-1", np.random.default_rng(0)).added[0].id
    play(league, "main_exploiter_0", 0, 1, 1)  # 0.5
    play(league, "main_exploiter_0", h1, 1, 3)  # 0.25
    dist = assert_sampling_matches(league, "main_exploiter_0")
    v = np.array([0.25, 0.1875])
    assert dist[0] == pytest.approx(v[0] / v.sum()) and dist[h1] == pytest.approx(v[1] / v.sum())
    play(league, "league_exploiter_1", 0, 4, 0)  # 1.0 → capped weight 0
    play(league, "league_exploiter_1", h1, 1, 3)  # 0.25 → min(0.5, 0.75) = 0.5
    dist = assert_sampling_matches(league, "league_exploiter_1")
    assert dist == {h1: pytest.approx(1.0)}


def test_checkpoint_rules_and_resets():
    league = make_league(league_exploiters=1)
    rng = np.random.default_rng(0)
    snap = LearnerInfo(step=50, snapshot=lambda: "w")
    assert not league.step("main_0", snap, rng).added  # before min_steps
    play(league, "main_0", 0, 1, 1)  # 0.5 ≤ 0.7
    assert not league.step("main_0", LearnerInfo(step=150, snapshot=lambda: "w"), rng).added
    play(league, "main_0", 0, 10, 0)  # now > 0.7
    cur = league.step("main_0", LearnerInfo(step=160, snapshot=lambda: "w"), rng)
    assert cur.added and cur.reset_to is None and league.player("main_0").checkpoint_step == 160
    assert not league.step("main_0", LearnerInfo(step=200, snapshot=lambda: "w"), rng).added
    assert league.step("main_0", LearnerInfo(step=460, snapshot=lambda: "w"), rng).added  # max_steps passed
    # main exploiter: against the main players, always reset to SL
    play(league, "main_exploiter_0", "main_0", 8, 2)
    cur = league.step("main_exploiter_0", LearnerInfo(step=120, snapshot=lambda: "me"), rng)
    assert cur.added and cur.reset_to == "sl"
    # league exploiter resets with probability 0.25
    resets = [league.checkpoint("league_exploiter_0", "le", rng).reset_to == "sl" for _ in range(4000)]
    assert abs(np.mean(resets) - 0.25) < 0.025


def test_league_from_spec_string_and_bad_input():
    league = make_scheme("league:main=1,main_exploiters=1,league_exploiters=2")
    assert sorted(league.players) == ["league_exploiter_0", "league_exploiter_1", "main_0", "main_exploiter_0"]
    assert league.name == "league:main=1,main_exploiters=1,league_exploiters=2"
    with pytest.raises(ValueError, match="unknown league parameter"):
        make_scheme("league:mains=2")
    with pytest.raises(ValueError, match="main"):
        LeagueConfig(main=0)
    with pytest.raises(ValueError, match="player"):
        league.distribution("nobody")


def test_league_player_view_refuses_menagerie_sampling_and_trainer_refuses_league_spec():
    league = make_league()
    view = league.scheme_for("main_0")
    assert view.distribution() == league.distribution("main_0")
    assert view.sample_key(np.random.default_rng(0)) in league.distribution("main_0")
    with pytest.raises(ValueError, match="live players"):
        view.sample_many(league.menagerie, 3)
    from selfplay.training.loop import TrainConfig

    with pytest.raises(ValueError, match="selfplay league"):
        TrainConfig(scheme="league")
