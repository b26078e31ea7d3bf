"""PSRO's parts, named as OpenSpiel's PSRO names them — oracle, meta-game, meta-solver, strategy
selection — each chosen by name from its registry; ``make_scheme`` reads one registry of schemes."""

import numpy as np
import pytest

from selfplay import PSRO, LearnerInfo, Menagerie, make_scheme
from selfplay.core.schemes import (
    META_GAMES,
    META_SOLVERS,
    ORACLES,
    SCHEME_NAMES,
    SCHEMES,
    STRATEGY_SELECTORS,
    WinRateOracle,
    logit_meta_game,
    shift_meta_game,
)


def test_the_meta_games_by_hand():
    W = np.array([[0.5, 0.8], [0.2, 0.5]])
    np.testing.assert_allclose(shift_meta_game(W), [[0.0, 0.3], [-0.3, 0.0]])
    np.testing.assert_allclose(logit_meta_game(W), [[0.0, np.log(4)], [-np.log(4), 0.0]])
    np.testing.assert_allclose(logit_meta_game(np.array([[0.5, 1.0], [0.0, 0.5]]))[0, 1], np.log(999))  # clipped
    assert set(META_GAMES) == {"shift", "logit"} and set(ORACLES) == {"win-rate"}
    assert set(META_SOLVERS) == {"maxent", "lp", "uniform", "rectified", "alpha_rank"}


def test_the_win_rate_oracle_ends_beaten_or_at_its_cap():
    oracle = WinRateOracle(threshold=0.75, window=4, max_episodes=6)
    assert [oracle.record(o) for o in (1, 1, 0, 1)] == [None, None, None, True]  # mean 0.75 over the window
    oracle.reset()
    assert [oracle.record(o) for o in (0, 1, 0, 1, 0, 1)] == [None] * 5 + [False]  # the cap, not beaten
    state = oracle.state_dict()
    other = WinRateOracle(threshold=0.75, window=4, max_episodes=6)
    other.load_state_dict(state)
    assert list(other.outcomes) == [0.0, 1.0, 0.0, 1.0] and other.episodes == 6


def test_strategy_selection_probabilistic_drops_unplayed_mass_uniform_spreads_over_everyone():
    m = Menagerie()
    for i in range(3):
        m.add(i, step=i)

    def dominant_last(A):
        return np.array([0.0] * (len(A) - 1) + [1.0])

    evaluate = lambda entry, opponents, matches: np.full(len(opponents), 0.5)  # noqa: E731
    probabilistic = PSRO(solver=dominant_last, evaluate=evaluate)
    assert probabilistic.distribution(m) == {2: 1.0}
    uniform = make_scheme("psro:selector=uniform", solver=dominant_last, evaluate=evaluate)
    assert uniform.distribution(m) == pytest.approx({0: 1 / 3, 1: 1 / 3, 2: 1 / 3})
    assert set(STRATEGY_SELECTORS) == {"probabilistic", "uniform"}


def test_a_psro_iteration_runs_oracle_meta_game_and_meta_solver_in_turn():
    solved = []

    def solver(A):
        solved.append(A.copy())
        return np.full(len(A), 1 / len(A))

    scheme = make_scheme("psro:window=2,threshold=1,meta_game=logit", solver=solver,
                         evaluate=lambda entry, opponents, matches: np.full(len(opponents), 0.8))
    m = Menagerie()
    m.add("first", step=0)
    assert not scheme.curate(m, LearnerInfo(snapshot=lambda: "second"), outcome=1).added  # the oracle goes on
    added = scheme.curate(m, LearnerInfo(snapshot=lambda: "second"), outcome=1).added  # beaten: its policy joins
    assert [e.policy for e in added] == ["second"] and added[0].tags["beaten"] is True
    np.testing.assert_allclose(scheme.meta_matrix(m.ids), [[0.5, 0.2], [0.8, 0.5]])  # the meta-game's new row
    np.testing.assert_allclose(solved[-1], [[0.0, np.log(0.25)], [np.log(4), 0.0]])  # the logit meta-game solved
    assert scheme.oracle.episodes == 0 and scheme.iterations == 1  # the next iteration starts


def test_each_part_is_chosen_by_name_with_a_clear_error():
    for spec, message in [("psro:selector=top_k", "selector must be one of ('probabilistic', 'uniform'), got 'top_k'"),
                          ("psro:oracle=nash", "oracle must be one of ('win-rate',), got 'nash'"),
                          ("psro:meta_game=exp", "meta_game must be one of ('shift', 'logit'), got 'exp'"),
                          ("psro:solver=prd", "solver must be one of ('maxent', 'lp', 'uniform', 'rectified', "
                                              "'alpha_rank') or a callable, got 'prd'")]:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            make_scheme(spec, defer_evaluator=True)


def test_make_scheme_reads_one_registry_whose_parameters_are_the_constructors():
    assert SCHEME_NAMES == ("naive", "delta-uniform", "delta-limit-uniform", "psro", "league")
    assert SCHEMES["naive"].params == set()
    assert SCHEMES["delta-uniform"].params == SCHEMES["delta-limit-uniform"].params == {"delta", "add_every"}
    assert SCHEMES["psro"].params == {"solver", "threshold", "window", "matches_per_pair", "max_episodes_per_iteration",
                                      "meta_game", "evaluate", "oracle", "selector"}
    with pytest.raises(ValueError, match=r"allowed: \['add_every', 'delta'\]"):
        make_scheme("delta-uniform:delta=0,window=3")
    with pytest.raises(ValueError, match="allowed: none"):
        make_scheme("naive:delta=0")
