"""PSRO with OpenSpiel's exact best response as its oracle (selfplay/training/exact_psro.py)."""

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from selfplay.analysis.exploitability import GameTree, exploitability  # noqa: E402

from selfplay.core.menagerie import Menagerie  # noqa: E402
from selfplay.training.exact_psro import BestResponseOracle, exact_evaluator, run_exact_psro  # noqa: E402


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_oracle_best_response_gains_exactly_the_exploitability(name):
    game = pyspiel.load_game(name)
    tree = GameTree(game)
    uniform = tree.template
    response = BestResponseOracle(game, tree)([uniform], [1.0])
    assert set(np.unique(response.action_probability_array)) == {0.0, 1.0}  # deterministic
    U = tree.expected_payoffs([response, uniform], [response, uniform])
    # the best response's mean gain over both seats is NashConv / 2 = the exploitability of uniform play
    gain = 0.5 * (U[0, 1] - U[1, 0])
    assert gain == pytest.approx(exploitability(game, uniform), abs=1e-10)


def test_exact_evaluator_scores_are_complementary_and_follow_the_payoff():
    game = pyspiel.load_game("kuhn_poker")
    tree = GameTree(game)
    response = BestResponseOracle(game, tree)([tree.template], [1.0])
    menagerie = Menagerie()
    a = menagerie.add(tree.template)
    b = menagerie.add(response)
    for metric in ("payoff", "win"):
        evaluate = exact_evaluator(game, metric, tree)
        ab, ba = evaluate(b, [a])[0], evaluate(a, [b])[0]
        assert ab + ba == pytest.approx(1.0)
        assert ab > 0.5
    # payoff metric: ½ + exploitability / (2·max|u|); Kuhn's utilities lie in [−2, 2]
    assert exact_evaluator(game, "payoff", tree)(b, [a])[0] == pytest.approx(0.5 + (11 / 24) / 4)
    with pytest.raises(ValueError, match="metric"):
        exact_evaluator(game, "elo", tree)


def test_psro_with_the_exact_oracle_drives_kuhn_exploitability_to_zero():
    game = pyspiel.load_game("kuhn_poker")
    result = run_exact_psro(game, iterations=12)
    curve = np.array(result.exploitability)
    assert curve[0] == pytest.approx(11 / 24)  # iteration 0: the uniform random policy
    assert len(result.menagerie) == 13 and result.scheme.iterations == 12
    assert curve[-1] < 1e-9  # PSRO with exact best responses reaches a Nash equilibrium of Kuhn poker
    assert curve[6:].max() < curve[:3].min()
    with pytest.raises(ValueError, match="iterations"):
        run_exact_psro(game, iterations=0)
