"""PSRO with an exact best-response oracle on small OpenSpiel games (docs/guides/openspiel.md).

Our PSRO scheme (``selfplay.core.schemes.PSRO``: Ω = the meta-solver's solution of the menagerie's
meta-game; G = add the oracle's policy, fill its row/column of the meta-game through ``evaluate``,
re-solve) with the reinforcement-learning oracle replaced by OpenSpiel's exact best response
(``pyspiel.TabularBestResponse``), and the sampled matches replaced by exact expectations — so that
PSRO's textbook convergence to a Nash equilibrium can be shown and compared with the RL oracle.

* ``BestResponseOracle(game)(policies, weights)``: the tabular policy that, in each seat, plays a
  best response to the mixture Σ_k w_k policies[k] (its exact behaviour policy,
  ``analysis.exploitability.GameTree.aggregate``); deterministic.
* ``exact_evaluator(game, metric)``: PSRO's ``evaluate`` for tabular policies — entry's expected
  score against each opponent, both seats averaged, with no sampling. ``metric="payoff"`` (default)
  maps the expected payoff to a score, ½ + E[u] / (2·M) with M = the game's largest absolute utility,
  so that A = W − ½ is the game's own payoff meta-game scaled by 1/(2M) (the meta-game of OpenSpiel's
  PSRO, whose Nash it shares); ``metric="win"`` uses P(win) + ½·P(tie) (the suite's win-rate meta-game).
* ``run_exact_psro(game, iterations)``: the loop. Each iteration: Ω from the scheme, the oracle's best
  response, ``scheme.curate`` (which adds it and fills the meta-game), then the exploitability of the
  new meta-strategy's mixture. Iteration 0 is the uniform random policy.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from selfplay.core.menagerie import Menagerie
from selfplay.core.schemes import PSRO, LearnerInfo

METRICS = ("payoff", "win")


def _tree(game: Any, tree: Any | None):
    from selfplay.analysis.exploitability import GameTree

    return tree if tree is not None else GameTree(game)


class BestResponseOracle:
    """OpenSpiel's exact best response, in both seats, to a weighted mixture of tabular policies."""

    def __init__(self, game: Any, tree: Any | None = None):
        self.game = game
        self.tree = _tree(game, tree)
        self._rows_of = [[row for row, state in enumerate(self.tree.template.states) if state.current_player() == p]
                         for p in range(2)]

    def __call__(self, policies: Sequence[Any], weights: Sequence[float]) -> Any:
        import pyspiel

        mixture = self.tree.aggregate(policies, weights)
        as_dict = {key: [(a, float(p)) for a, p in enumerate(mixture.action_probability_array[row])
                         if self.tree.legal[row, a]]
                   for key, row in self.tree.lookup.items()}
        response = self.tree.template.__copy__(copy_action_probability_array=False)
        probs = np.zeros_like(self.tree.legal, dtype=np.float64)
        keys = list(self.tree.lookup)
        for player in range(2):
            actions = pyspiel.TabularBestResponse(self.game, player, as_dict).get_best_response_actions()
            for row in self._rows_of[player]:
                key = keys[row]
                if key in actions:
                    probs[row, actions[key]] = 1.0
                else:  # never reached by any play of the game: any legal action is a best response
                    probs[row, np.flatnonzero(self.tree.legal[row])[0]] = 1.0
        response.action_probability_array = probs
        return response


def exact_evaluator(game: Any, metric: str = "payoff", tree: Any | None = None):
    """PSRO's ``evaluate(entry, opponents, matches)`` computed exactly for tabular policies (``matches``
    is ignored): entry's score against each opponent, averaged over the two seats."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    tree = _tree(game, tree)
    scale = 2.0 * max(abs(game.min_utility()), abs(game.max_utility()))

    def evaluate(entry, opponents, matches=None) -> np.ndarray:
        mine = [entry.policy]
        theirs = [o.policy for o in opponents]
        if metric == "payoff":
            first = tree.expected_payoffs(mine, theirs)[0]  # entry as player 0
            second = -tree.expected_payoffs(theirs, mine)[:, 0]  # entry as player 1
            return 0.5 + 0.5 * (first + second) / scale
        first = tree.win_probabilities(mine, theirs)[0]
        second = 1.0 - tree.win_probabilities(theirs, mine)[:, 0]
        return 0.5 * (first + second)

    return evaluate


@dataclass
class ExactPSROResult:
    exploitability: list[float] = field(default_factory=list)  # of the meta-strategy's mixture, per iteration
    seconds: list[float] = field(default_factory=list)  # PSRO's own wall-clock so far (not the measuring), per iteration
    menagerie: Menagerie | None = None
    scheme: PSRO | None = None


def run_exact_psro(game: Any, iterations: int, solver: str = "maxent", metric: str = "payoff",
                   scheme: PSRO | None = None) -> ExactPSROResult:
    """PSRO with the exact oracle and evaluator for ``iterations`` iterations (see the module doc).

    ``scheme``: a ``PSRO`` to use (its ``evaluate`` is replaced by the exact one); by default one
    with ``solver`` that adds the oracle's policy at every call of G.
    """
    from selfplay.analysis.exploitability import exploitability

    if not (isinstance(iterations, int) and not isinstance(iterations, bool) and iterations >= 1):
        raise ValueError(f"iterations must be a positive integer, got {iterations!r}")
    started = time.perf_counter()
    spent = 0.0  # time in PSRO itself: oracle, meta-game evaluation, meta-solver (not the exploitability measure)
    tree = _tree(game, None)
    oracle = BestResponseOracle(game, tree)
    evaluate = exact_evaluator(game, metric, tree)
    if scheme is None:
        scheme = PSRO(solver=solver, window=1, max_episodes_per_iteration=1, evaluate=evaluate)
    scheme.evaluate = evaluate
    menagerie = Menagerie()
    menagerie.add(tree.template.__copy__(), step=0, player="oracle", episode=0, weight_version=0)  # uniform
    result = ExactPSROResult(menagerie=menagerie, scheme=scheme)

    def mixture_exploitability() -> float:
        weights = scheme.distribution(menagerie)
        return exploitability(game, tree.aggregate([menagerie[i].policy for i in weights], list(weights.values())))

    spent += time.perf_counter() - started
    result.exploitability.append(mixture_exploitability())
    result.seconds.append(spent)
    for iteration in range(1, iterations + 1):
        started = time.perf_counter()
        weights = scheme.distribution(menagerie)
        response = oracle([menagerie[i].policy for i in weights], list(weights.values()))
        learner = LearnerInfo(name="oracle", episode=iteration, step=iteration, weight_version=iteration,
                              snapshot=lambda r=response: r)
        scheme.curate(menagerie, learner, outcome=1.0)
        scheme.distribution(menagerie)  # the meta-solver's solve belongs to PSRO's time
        spent += time.perf_counter() - started
        result.exploitability.append(mixture_exploitability())
        result.seconds.append(spent)
    return result
