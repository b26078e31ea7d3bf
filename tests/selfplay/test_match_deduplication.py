"""Population matches on RirRPS compute each distinct (policy, history) once (training.matches._play_deduplicated):
the games must be the games one forward pass per row would play."""

import numpy as np
import pytest
import torch
from selfplay.agents.ppo import PPOConfig, PPOLearner, stack_policies

from selfplay.training import matches
from selfplay.training.matches import play_matches, round_robin_pairs


def population(body, size, head_scale):
    policies = [PPOLearner(30, 3, PPOConfig(body=body), seed=s).snapshot() for s in range(size)]
    with torch.no_grad():
        for policy in policies:
            policy.network.policy_head.weight.mul_(head_scale)
    return policies


def test_recurrent_classes_play_the_games_of_one_forward_pass_per_row(monkeypatch):
    """Computing each distinct (policy, history) once — recurrent states shared between rows — must give
    the actions that computing every row gives: the same draws from the same generator, so every game
    ends alike (a state taken from another history changes the logits, hence actions and outcomes)."""
    policies = population("lstm", 4, head_scale=300.0)
    pairs = round_robin_pairs(4)
    classes = []
    original = matches._play_deduplicated
    monkeypatch.setattr(matches, "_play_deduplicated", lambda *a: classes.append(1) or original(*a))
    monkeypatch.setattr(matches, "DEDUPLICATE_BELOW", 2.0)  # always share
    shared = play_matches("rirrps", policies, pairs, 100, seed=3, stack_policies=stack_policies)
    assert classes, "the deduplicated path was not taken"
    monkeypatch.setattr(matches, "DEDUPLICATE_BELOW", 0.0)  # never share: one forward pass per row
    every_row = play_matches("rirrps", policies, pairs, 100, seed=3, stack_policies=stack_policies)
    assert np.array_equal(shared, every_row)
    assert len(np.unique(shared.mean(axis=1))) > 1  # the pairs differ: not a vacuous comparison


def test_recurrent_rows_grouped_by_policy_play_the_games_of_the_padded_forward(monkeypatch):
    """The rows are kept grouped by policy and every row's step is ``forward_grouped``: the same games as
    ``forward``'s padded blocks, and as the same games with the policies listed in another order (another
    grouping of the games' rows: a draw or an action taken from the wrong row would show)."""
    from selfplay.agents.ppo.stack import PolicyStack

    policies = population("lstm", 4, head_scale=300.0)
    pairs = round_robin_pairs(4)
    monkeypatch.setattr(matches, "DEDUPLICATE_BELOW", 0.0)  # every step computes every row
    calls = []
    grouped_forward = PolicyStack.forward_grouped
    monkeypatch.setattr(PolicyStack, "forward_grouped", lambda self, *a: calls.append(1) or grouped_forward(self, *a))
    grouped = play_matches("rirrps", policies, pairs, 100, seed=4, stack_policies=stack_policies)
    assert calls, "the grouped forward was not taken"

    def padded(self, obs, state, who, starts):
        logits, _, new_state = self.forward(obs, state, who, starts)
        return logits, new_state

    monkeypatch.setattr(PolicyStack, "forward_grouped", padded)
    assert np.array_equal(play_matches("rirrps", policies, pairs, 100, seed=4, stack_policies=stack_policies), grouped)
    monkeypatch.setattr(PolicyStack, "forward_grouped", grouped_forward)
    listing = [2, 0, 3, 1]  # policies[listing[k]] is listed k-th
    place = np.argsort(listing)
    relisted = play_matches("rirrps", [policies[k] for k in listing], place[pairs], 100, seed=4,
                            stack_policies=stack_policies)
    assert np.array_equal(relisted, grouped)
    assert len(np.unique(grouped.mean(axis=1))) > 1  # the pairs differ: not a vacuous comparison


@pytest.mark.parametrize("body", ["mlp", "lstm"])
def test_stochastic_policies_win_as_often_as_with_one_pass_per_policy(body):
    """Sampling each row's own action from its class's distribution: the win rates of both computations
    agree within sampling error (4 standard errors of the difference)."""
    policies = population(body, 2, head_scale=30.0)
    with torch.no_grad():  # policy 0 leans to paper, policy 1 to rock: a clear edge, still stochastic
        policies[0].network.policy_head.bias[1] = 1.5
        policies[1].network.policy_head.bias[0] = 1.0
    pairs = np.array([[0, 1]])
    m = 3000
    fast = play_matches("rirrps", policies, pairs, m, seed=5, stack_policies=stack_policies)
    slow = play_matches("rirrps", policies, pairs, m, seed=6, stack_policies=None)
    se = np.sqrt(fast.var() / m + slow.var() / m)
    assert abs(fast.mean() - slow.mean()) < 4 * se, (fast.mean(), slow.mean(), se)
    assert abs(fast.mean() - 0.5) > 4 * se, fast.mean()  # the policies differ: a wrong distribution would show
