"""Game-steps per second of our SMACv2 scenarios, one game (SMACv2's API) and batched.

A game-step is one step of one game (a batch of 256 stepped once counts 256); every number is the
best of 3 timings, to tame a shared CPU.  Random *valid* actions drawn with numpy from the masks.

- ``one game``: ``StarCraftCapabilityEnvWrapper`` with the scenario's ``env_args`` (what EPyMARL's
  ``sc2v2`` runner steps): ``reset``, then per step ``get_obs``, ``get_state``,
  ``get_avail_actions``, the actions, ``step``; reset when the episode ends (draws and resets are
  timed).  Steps per wall-second.
- ``batched``: ``SMACv2Battle(scenario, num_envs)`` against the scripted enemy, masks, observations
  and state read every step, finished games redrawn (timed).  Steps per CPU-second of this process.

    python benchmarks/smacv2_throughput.py [--scenarios protoss_5_vs_5 zerg_10_vs_10] [--batches 256 2048]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

STEPS = {1: 3000, 256: 40, 2048: 6}  # steps per timing, by the batch size at or above num_envs


def steps_for(num_envs: int) -> int:
    return STEPS[min((b for b in STEPS if b >= num_envs), default=max(STEPS))]


def one_game(scenario: str, steps: int, seed: int = 0) -> float:
    from selfplay.envs.smac import StarCraftCapabilityEnvWrapper, get_scenario

    env = StarCraftCapabilityEnvWrapper(seed=seed, **get_scenario(scenario).env_args())
    rng = np.random.default_rng(seed)
    env.reset()
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(steps):
            env.get_obs()
            env.get_state()
            avail = np.asarray(env.get_avail_actions())
            _, terminated, _ = env.step((rng.random(avail.shape) * avail).argmax(-1))
            if terminated:
                env.reset()
        best = max(best, steps / (time.perf_counter() - start))
    return best


def batched(scenario: str, num_envs: int, steps: int, seed: int = 0) -> float:
    from selfplay.envs.smac.smacv2_battle import SMACv2Battle

    b = SMACv2Battle(scenario, num_envs, two_player=False, seed=seed)
    b.reset()
    rng = np.random.default_rng(seed)
    best = 0.0
    for _ in range(3):
        start = time.process_time()
        for _ in range(steps):
            mask = b.action_masks()[0].numpy()
            b.step([(rng.random(mask.shape) * mask).argmax(-1)])
            b.get_state()
        best = max(best, num_envs * steps / (time.process_time() - start))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", nargs="+", default=["protoss_5_vs_5", "zerg_10_vs_10"])
    parser.add_argument("--batches", nargs="*", type=int, default=[256, 2048])
    args = parser.parse_args()
    print("| scenario | one game (steps/s) | " + " | ".join(f"{b} games (steps/CPU-s)" for b in args.batches) + " |")
    print("|---|---:|" + "---:|" * len(args.batches))
    for name in args.scenarios:
        one_game(name, 20)  # compiled code loaded, caches warm
        row = [f"{one_game(name, steps_for(1)):,.0f}"]
        for num_envs in args.batches:
            batched(name, num_envs, 1)
            row.append(f"{batched(name, num_envs, steps_for(num_envs)):,.0f}")
        print(f"| {name} | " + " | ".join(row).replace(",", " ") + " |", flush=True)


if __name__ == "__main__":
    main()
