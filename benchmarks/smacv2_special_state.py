"""CPU time of SMACv2's agent-specific state (``smacv2_games.special_states``, one compiled loop) beside
its vectorised definition (``tests/smac/test_smacv2_special_state.py``, numpy), per call on 8 games —
the MAPPO critic's input at every acting step of ``--opponent builtin-ai`` on SMACv2.

    .venv/bin/python benchmarks/smacv2_special_state.py --scenarios terran_5_vs_5 protoss_5_vs_5 zerg_5_vs_5

Each scenario plays ``--steps`` steps of uniformly drawn available actions against the scripted enemy;
at every step both versions run ``--repeats`` times, in alternating order, timed with
``time.process_time``. Prints microseconds per call of each and the machine's load average.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
from pathlib import Path

import numpy as np

TEST = Path(__file__).resolve().parents[1] / "tests/smac/test_smacv2_special_state.py"


def load_reference():
    spec = importlib.util.spec_from_file_location("special_state_reference", TEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(scenario: str, num_envs: int, steps: int, repeats: int, seed: int) -> dict:
    from selfplay.envs.smac.smacv2_battle import SMACv2Battle
    from selfplay.envs.smac.smacv2_games import special_states

    ref = load_reference()
    versions = {"compiled": special_states, "vectorised": ref.vectorised_special_states}
    battle = SMACv2Battle(scenario, num_envs=num_envs, seed=seed, two_player=False)
    battle.reset()
    rng = np.random.default_rng(seed)
    for f in versions.values():  # compiled (or loaded from the cache) before timing
        f(battle.games, 0)
    seconds = dict.fromkeys(versions, 0.0)
    for k in range(steps):
        battle.step(ref._random_actions(battle, rng))
        battle.games.fresh()
        for name in (list(versions) if k % 2 else list(versions)[::-1]):
            t0 = time.process_time()
            for _ in range(repeats):
                versions[name](battle.games, 0)
            seconds[name] += time.process_time() - t0
    return {name: 1e6 * s / (steps * repeats) for name, s in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", nargs="+", default=["terran_5_vs_5", "protoss_5_vs_5", "zerg_5_vs_5"])
    parser.add_argument("--num-envs", type=int, default=8, help="games (MAPPO's default: 8)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for scenario in args.scenarios:
        us = measure(scenario, args.num_envs, args.steps, args.repeats, args.seed)
        print(f"{scenario}: compiled {us['compiled']:.0f} µs, vectorised {us['vectorised']:.0f} µs per call "
              f"({args.num_envs} games; CPU time)", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
