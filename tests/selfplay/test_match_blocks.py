"""A winrate matrix's games in blocks: each block depends only on its own games and seeds,
so blocks played elsewhere — here, on unpickled copies, before the first block — give exactly the
scores of the local loop; and a matrix of one block is played as before."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from selfplay.agents.ppo import PPOLearner, ppo_config, stack_policies

from selfplay.training.matches import cross_population, evaluate_population, play_matches, round_robin_pairs
from selfplay.training.registry import make_env


class PickledBlocks:
    """Runs the submitted blocks at once, each on an unpickled copy of the shared argument (as a
    separate process would get it), before the caller plays block 0."""

    def __init__(self) -> None:
        self.submitted: list = []

    def submit(self, function, common, tasks):
        self.submitted.append(len(tasks))
        results = [function(pickle.loads(pickle.dumps(common)), task) for task in tasks]
        return lambda: results


def policies(n: int = 4) -> list:
    env = make_env("rirrps", 1, seed=0)
    return [PPOLearner(env.obs_size, env.n_actions, ppo_config("rps", body="mlp"), seed=s).snapshot() for s in range(n)]


@pytest.mark.parametrize("stack", [stack_policies, None], ids=["stacked", "per-policy"])
def test_blocks_played_apart_give_exactly_the_local_scores(stack):
    pairs = round_robin_pairs(4)  # 6 pairs × 10 matches = 60 games: blocks of 16 → 4 blocks (the last of 12)
    local = play_matches("rirrps", policies(), pairs, 10, seed=3, stack_policies=stack, max_games=16)
    blocks = PickledBlocks()
    apart = play_matches("rirrps", policies(), pairs, 10, seed=3, stack_policies=stack, max_games=16, blocks=blocks)
    assert blocks.submitted == [3]
    np.testing.assert_array_equal(apart, local)
    assert set(np.unique(local)) <= {0.0, 0.5, 1.0} and 0 < local.mean() < 1
    # the block size is part of what defines the games: another split plays other games
    assert not np.array_equal(play_matches("rirrps", policies(), pairs, 10, seed=3, stack_policies=stack, max_games=20),
                              local)


def test_a_matrix_of_one_block_is_played_here_without_asking_for_blocks():
    blocks = PickledBlocks()
    pairs = round_robin_pairs(4)
    one = play_matches("rirrps", policies(), pairs, 10, seed=3, stack_policies=stack_policies, blocks=blocks)
    assert blocks.submitted == []
    np.testing.assert_array_equal(one, play_matches("rirrps", policies(), pairs, 10, seed=3, stack_policies=stack_policies))


def test_evaluate_population_and_cross_population_pass_the_blocks_on():
    ps = policies(4)
    ev_local = evaluate_population("rirrps", ps, 10, seed=1, stack_policies=stack_policies, max_games=16)
    ev_apart = evaluate_population("rirrps", policies(4), 10, seed=1, stack_policies=stack_policies, max_games=16,
                                   blocks=PickledBlocks())
    np.testing.assert_array_equal(ev_apart.W, ev_local.W)
    np.testing.assert_array_equal(ev_apart.nash, ev_local.nash)
    w_local = cross_population("rirrps", ps[:2], ps[2:], 10, seed=1, max_games=8)
    w_apart = cross_population("rirrps", policies(4)[:2], policies(4)[2:], 10, seed=1, max_games=8, blocks=PickledBlocks())
    np.testing.assert_array_equal(w_apart, w_local)


def test_bad_block_size_is_refused():
    with pytest.raises(ValueError, match="max_games must be an integer ≥ 1"):
        play_matches("rirrps", policies(2), round_robin_pairs(2), 2, max_games=0)
