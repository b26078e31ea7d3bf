"""SMAC's heuristic AI exists twice: per unit on SMAC's unit records (``heuristic.py``, what
``StarCraft2Env(heuristic_ai=True)`` runs and what was checked against SMAC's own code) and batched
over games (``heuristic_batched.py``, the fidelity table's win rates). They must choose the same
actions at every step."""

import pytest
from selfplay.envs.smac import StarCraft2Env
from selfplay.envs.smac.heuristic_batched import HeuristicPolicy


@pytest.mark.parametrize("map_name", ["3m", "MMM", "2s3z"])
def test_per_unit_and_batched_heuristics_choose_the_same_actions(map_name):
    env = StarCraft2Env(map_name=map_name, heuristic_ai=True, seed=1)
    steps = 0
    for _ in range(2):
        env.reset()
        batched = HeuristicPolicy(env._battle, seat=0)
        terminated = False
        while not terminated:
            expected = batched.act()[0].tolist()
            actions = [0] * env.n_agents  # the heuristic replaces them and writes its choice back
            _, terminated, _ = env.step(actions)
            assert actions == expected, f"step {steps}"
            steps += 1
    assert steps >= 30
