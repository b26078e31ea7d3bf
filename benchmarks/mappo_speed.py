"""MAPPO's training throughput on the SMAC simulator: game-steps per second *including learning*.

    .venv/bin/python benchmarks/mappo_speed.py                       # 3m, the settings below, 3 updates each
    .venv/bin/python benchmarks/mappo_speed.py --map 8m --updates 5

One game-step is one step of one game (SMAC's ``total_num_steps``). Each setting trains the MAPPO learner
of ``selfplay train --opponent builtin-ai`` against the built-in AI for ``--updates`` updates after one
warm-up update, on one torch thread, and reports wall and CPU seconds split into acting (inputs and
network), the environment and the update, with the machine's load average (the figures depend on it):

    paper:     MAPPOConfig() — 8 games × 400 steps, 15 epochs, agent-specific state (Yu et al. 2022)
    paper-EP:  the same with the environment's global state for the critic
    wide:      64 games × 50 steps (the same 3200 game-steps per update), EP
    wide-5ep:  wide with 5 epochs (MAPPO's setting on the harder maps)

``--threads 2`` gives torch two threads (the issue's "2 cores"); the environment is one process either way.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
from selfplay.agents.mappo import MAPPOLearner, mappo_config
from selfplay.envs.smac import SMACBattle

from selfplay.training.vs_builtin import side_inputs

SETTINGS = {
    "paper": {},
    "paper-EP": {"critic_input": "EP"},
    "wide": {"num_envs": 64, "rollout_length": 50, "critic_input": "EP"},
    "wide-5ep": {"num_envs": 64, "rollout_length": 50, "critic_input": "EP", "epochs": 5},
}


def measure(map_name: str, settings: dict, updates: int, seed: int = 0) -> dict:
    """Seconds (wall and CPU) of ``updates`` updates after one warm-up update, split by phase."""
    config = mappo_config(**settings)
    battle = SMACBattle(map_name, num_envs=config.num_envs, two_player=False, seed=seed)
    learner = MAPPOLearner.for_battle(battle, config, seed=seed)
    obs = battle.reset()
    start = torch.ones(config.num_envs, dtype=torch.bool)
    split = {"act": 0.0, "env": 0.0, "update": 0.0}
    for u in range(updates + 1):
        if u == 1:
            split = dict.fromkeys(split, 0.0)
            wall0, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(config.rollout_length):
            a = time.perf_counter()
            o, s, mask = side_inputs(battle, config, obs)
            action = learner.act(o, s, mask, start)
            b = time.perf_counter()
            obs, rewards, done, _ = battle.step([action])
            learner.record(rewards[0], done)
            start = done
            split["act"] += b - a
            split["env"] += time.perf_counter() - b
        a = time.perf_counter()
        _, s, mask = side_inputs(battle, config, obs)
        learner.update(s, mask, start)
        split["update"] += time.perf_counter() - a
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    steps = updates * config.batch_steps
    return {"steps": steps, "wall": wall, "cpu": cpu, **split}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--map", default="3m")
    parser.add_argument("--updates", type=int, default=3, help="timed updates per setting (after one warm-up)")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"map {args.map}, {args.updates} updates per setting, {args.threads} torch thread(s); "
          f"load average before {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for name in args.settings:
        r = measure(args.map, SETTINGS[name], args.updates)
        print(f"{name:9s} {r['steps']:7d} game-steps  {r['steps'] / r['wall']:7.0f} /s wall  "
              f"{r['steps'] / r['cpu']:7.0f} /CPU-s   (act {r['act']:.1f} s, env {r['env']:.1f} s, "
              f"update {r['update']:.1f} s; load {os.getloadavg()[0]:.2f})", flush=True)


if __name__ == "__main__":
    main()
