"""Throughput of the self-play loop on RirRPS, measured against the raw environment.

Prints: raw environment steps/s (random actions for both seats, ``num_envs`` games at once), the
self-play loop's steps/s with PPO learning (δ=0-Uniform), their ratio (the share of time that is not
learning/inference overhead), and the time of one 100×100 winrate matrix with 25 matches per pair.

    python benchmarks/selfplay_loop.py [--quick]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch
from selfplay.agents.ppo import PPOConfig, PPOLearner, stack_policies
from selfplay.envs.rps import RirRPS

from selfplay.training.loop import TrainConfig, train
from selfplay.training.matches import play_matches, round_robin_pairs, winrate_from_pair_scores


def raw_env_steps_per_s(num_envs: int, steps: int) -> float:
    env = RirRPS(num_envs, seed=0)
    env.reset()
    g = torch.Generator().manual_seed(0)
    actions = [torch.randint(0, 3, (steps, num_envs), generator=g) for _ in range(2)]
    start = time.perf_counter()
    for t in range(steps):
        env.step([actions[0][t], actions[1][t]])
    return steps * num_envs / (time.perf_counter() - start)


def loop_steps_per_s(num_envs: int, episodes: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as out:
        cfg = TrainConfig(scheme="delta-uniform:delta=0", episodes=episodes, num_envs=num_envs, checkpoints=10,
                          tensorboard=False)
        result = train(cfg, out)
    steps = episodes * 10
    return steps / result.seconds, result.seconds


def winrate_matrix_seconds(n: int, matches: int) -> float:
    learners = [PPOLearner(30, 3, PPOConfig(), seed=i) for i in range(n)]
    policies = [l.snapshot() for l in learners]
    start = time.perf_counter()
    pairs = round_robin_pairs(n)
    scores = play_matches("rirrps", policies, pairs, matches, seed=0, stack_policies=stack_policies)
    winrate_from_pair_scores(n, pairs, scores)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    num_envs = 64
    episodes = 640 if args.quick else 3200
    raw = raw_env_steps_per_s(num_envs, 200 if args.quick else 2000)
    loop, seconds = loop_steps_per_s(num_envs, episodes)
    n = 30 if args.quick else 100
    matrix = winrate_matrix_seconds(n, 25)
    print(f"raw env        : {raw:12,.0f} steps/s  (RirRPS, {num_envs} games, random actions)")
    print(f"self-play loop : {loop:12,.0f} steps/s  ({episodes} episodes with PPO learning in {seconds:.1f}s)")
    print(f"ratio loop/raw : {loop / raw:12.4f}")
    print(f"winrate matrix : {matrix:12.2f} s     ({n}x{n} checkpoints, 25 matches per pair, both seats)")


if __name__ == "__main__":
    main()
