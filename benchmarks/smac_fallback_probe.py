"""Fall back, then fight: a fixed policy that shows how learned policies beat the simulator's built-in AI.

For the first ``K`` steps of a game every living agent moves away from the enemy — the compass move
(SMAC's actions 2–5: north, south, east, west) with the largest component along the direction from
the living enemies' centroid to the agent, among its available moves (stop when none is) — and from
step ``K`` on the whole team plays SMAC's heuristic (``StarCraft2Env(heuristic_ai=True)``: every agent
attacks the closest enemy until it dies). ``K = 0`` is the heuristic of ``smac_calibration.py``.

Why: SMAC's maps order the enemy to attack-move towards the agents' start (``MapScript.galaxy``), so
a team that gives ground is met by an army that arrives on the move, and the rules of the simulator
decide how many of the arriving units get a shot in (``docs/design/smac-rules.md``: collision
avoidance, automatic targeting). Learned policies find this: MAPPO trained against the AI on 3s5z
falls back before it fights (``docs/results/smac_3s5z.md``), and on 5m_vs_6m and MMM2 it wins far
sooner than in the game (``docs/results/smac_learning.md``). Here a policy that does not learn shows it.
No real-game result of this policy is published; ``--backend sc2`` plays the same policy in StarCraft II
(SMAC's maps, a local installation), which is the comparison that would settle whether the game's AI
lets itself be beaten so.

    .venv/bin/python benchmarks/smac_fallback_probe.py [--maps 3s5z 5m_vs_6m] [--steps-back 0 8 12 15 20]
                                                       [--games 32] [--seed 0] [--backend sim] [--out probe.csv]

One game at a time through ``StarCraft2Env`` (the entry point SMAC users step); a win is SMAC's
``battle_won``, a timeout or a draw counts 0. Per map and ``K``: wins of ``--games`` and the 95 % Wilson
interval; CPU seconds at the end.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np
from selfplay.envs.smac.engine import MOVE_DIRECTIONS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from smac_calibration import wilson  # noqa: E402

FIRST_MOVE, STOP, NO_OP = 2, 1, 0  # SMAC's actions: 2..5 move north, south, east, west (MOVE_DIRECTIONS' order)
MOVES = np.arange(FIRST_MOVE, FIRST_MOVE + len(MOVE_DIRECTIONS))
DIRECTIONS = np.asarray(MOVE_DIRECTIONS, dtype=float)


def fallback_action(own: tuple[float, float], enemy_centroid: tuple[float, float], avail) -> int:
    """The available compass move most nearly away from ``enemy_centroid`` (largest dot product of its
    direction, ``engine.MOVE_DIRECTIONS``, with ``own - enemy_centroid``); stop when no move is available,
    no-op for a dead agent (only no-op available)."""
    away = DIRECTIONS @ np.subtract(own, enemy_centroid)
    available = np.asarray(avail)[MOVES] > 0
    if available.any():
        return int(MOVES[available][np.argmax(away[available])])
    return STOP if avail[STOP] else NO_OP


def play(map_name: str, steps_back: int, games: int, seed: int, backend: str = "sim") -> int:
    """Games won of ``games`` by falling back ``steps_back`` steps and then playing SMAC's heuristic."""
    from selfplay.envs.smac import StarCraft2Env

    env = StarCraft2Env(map_name=map_name, seed=seed, backend=backend)
    won = 0
    try:
        for _ in range(games):
            env.reset()
            env.heuristic_ai = False
            t, done, info = 0, False, {}
            while not done:
                if t == steps_back:
                    env.heuristic_ai = True  # SMAC's switch: from here the env picks the heuristic's actions
                actions = [0] * env.n_agents
                if t < steps_back:
                    enemies = [(u.pos.x, u.pos.y) for u in env.enemies.values() if u.health > 0]
                    centroid = tuple(np.mean(enemies, axis=0)) if enemies else (0.0, 0.0)
                    for a, unit in env.agents.items():
                        actions[a] = fallback_action((unit.pos.x, unit.pos.y), centroid, env.get_avail_agent_actions(a))
                _, done, info = env.step(actions)
                t += 1
            won += int(bool(info.get("battle_won", False)))
    finally:
        env.close()
    return won


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--maps", nargs="+", default=["3s5z", "5m_vs_6m", "10m_vs_11m", "27m_vs_30m", "MMM2",
                                                      "3s5z_vs_3s6z", "corridor", "2s3z", "1c3s5z", "3m", "8m", "MMM"])
    parser.add_argument("--steps-back", nargs="+", type=int, default=[0, 8, 12, 15, 20])
    parser.add_argument("--games", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", choices=("sim", "sc2"), default="sim")
    parser.add_argument("--out", default=None, help="CSV to write (map, steps_back, games, won, win_rate, low, high)")
    args = parser.parse_args()
    if args.games < 1:
        parser.error(f"--games must be at least 1, got {args.games}")
    if any(k < 0 for k in args.steps_back):
        parser.error(f"--steps-back must be non-negative, got {args.steps_back}")
    start = time.process_time()
    rows = []
    print(f"{'map':<14}" + "".join(f"{'K=' + str(k):>20}" for k in args.steps_back))
    for map_name in args.maps:
        cells = []
        for k in args.steps_back:
            won = play(map_name, k, args.games, args.seed, args.backend)
            low, high = wilson(won, args.games)
            rows.append({"map": map_name, "steps_back": k, "games": args.games, "won": won,
                         "win_rate": round(won / args.games, 4), "low": round(low, 4), "high": round(high, 4)})
            cells.append(f"{won / args.games:.2f} [{low:.2f}, {high:.2f}]")
        print(f"{map_name:<14}" + "".join(f"{c:>20}" for c in cells), flush=True)
    if args.out:
        with open(args.out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    print(f"CPU seconds: {time.process_time() - start:.0f}")


if __name__ == "__main__":
    main()
