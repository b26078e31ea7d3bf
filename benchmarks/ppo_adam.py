"""Time of one PPO update with PyTorch's plain (for-each) Adam and with its fused Adam, side by side.

Both PPO learners use one Adam variant (``learner_base.PPOLearnerBase._new_optimizer``); this measures
the choice. The same rollout is replayed with both optimisers (same seed, same minibatch order), on
the one-unit learner (Table I: 2048 samples, 32 minibatches of 64, 10 epochs) and the multi-unit
SMAC learner (3m, 3200 game-steps, MLP with one minibatch and GRU with minibatches of 64 game-steps).
Prints the median seconds per update of each and the ratio plain / fused (> 1: fused is faster).

    python benchmarks/ppo_adam.py [--repeats 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch
from selfplay.agents.ppo import PPOLearner, ppo_config
from selfplay.agents.ppo.multiunit import MultiUnitPPOLearner
from selfplay.envs.smac import SMACBattle


def filled_one_unit() -> PPOLearner:
    learner = PPOLearner(30, 3, ppo_config("rps"), seed=0)
    g = torch.Generator().manual_seed(0)
    while not learner.ready():
        learner.act(torch.rand(64, 30, generator=g), None)
        learner.record(torch.randn(64, generator=g), torch.rand(64, generator=g) < 0.1)
    return learner


def filled_multi_unit(**overrides) -> MultiUnitPPOLearner:
    env = SMACBattle("3m", num_envs=64, two_player=False, seed=0)
    learner = MultiUnitPPOLearner.for_battle(env, 0, ppo_config("smac", **overrides), seed=0)
    obs, state = env.reset(), learner.initial_state(64)
    start = torch.ones(64, dtype=torch.bool)
    while not learner.ready():
        action, state, _ = learner.act(obs[0], state, env.action_masks()[0], start)
        obs, rewards, done, _ = env.step([action])
        learner.record(rewards[0], done)
        start = done
    return learner


def seconds_per_update(learner, fused: bool, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        twin = copy.deepcopy(learner)
        twin.optimizer = torch.optim.Adam(twin.network.parameters(), lr=twin.config.learning_rate,
                                          eps=twin.config.adam_eps, fused=fused, foreach=None if fused else True)
        start = time.perf_counter()
        twin.update()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cases = {"one-unit MLP (Table I)": filled_one_unit(),
             "multi-unit MLP (SMAC 3m)": filled_multi_unit(),
             "multi-unit GRU, minibatch 64": filled_multi_unit(body="gru", minibatch_size=64)}
    print(f"{'case':32s} {'plain s':>9s} {'fused s':>9s} {'plain/fused':>12s}")
    for name, learner in cases.items():
        plain = seconds_per_update(learner, False, args.repeats)
        fused = seconds_per_update(learner, True, args.repeats)
        print(f"{name:32s} {plain:9.3f} {fused:9.3f} {plain / fused:12.2f}")


if __name__ == "__main__":
    main()
