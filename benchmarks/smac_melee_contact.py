"""How many of the scripted enemy's units are in melee reach of an agent unit while SMAC's heuristic plays.

The measure behind corridor's calibration gap (``docs/results/smac_calibration.md``, "Steering round
units standing still"): six zealots surrounded by 24 zerglings can be struck by about 8 zerglings each,
but in the simulator at most 12 are in melee reach at once while 20 or more live, because zerglings
blocked by units standing to fight crawl instead of going round them.  The real game's figure settles
which steering reading the game plays: the same command with ``--backend sc2`` (StarCraft II 4.6.2 and
the SMAC maps installed) counts the same thing in the game's own fights.

Per environment step of every game (first episode of each only): the living enemy units, and how many
of them have an edge distance (centre distance minus both radii) of at most ``--reach`` to a living
agent unit (0.15: the zealot's and zergling's melee range 0.1 plus slack for the step's movement).
Steps are grouped into windows and only steps with at least ``--min-alive`` living enemies are counted
(the surround is measured while the enemy is still numerous).

    python benchmarks/smac_melee_contact.py [--map corridor] [--games 16] [--seed 0] [--backend sim]
"""

from __future__ import annotations

import argparse

import numpy as np
from selfplay.envs.smac import MAP_NAMES, SMACBattle
from selfplay.envs.smac.heuristic_batched import HeuristicPolicy

WINDOWS = ((0, 10), (10, 20), (20, 30), (30, 60), (60, 200))


def in_reach(pos: np.ndarray, radius: np.ndarray, alive: np.ndarray, mine: slice, theirs: slice,
             reach: float) -> tuple[int, int]:
    """(living units of ``theirs``, how many of them are within edge distance ``reach`` of a living unit
    of ``mine``) for one game: ``pos`` (units, 2), ``radius`` and ``alive`` (units,)."""
    if reach < 0:
        raise ValueError(f"reach must be >= 0, got {reach}")
    a = np.flatnonzero(alive[mine]) + (mine.start or 0)
    e = np.flatnonzero(alive[theirs]) + (theirs.start or 0)
    if len(e) == 0 or len(a) == 0:
        return len(e), 0
    centre = np.linalg.norm(pos[e][:, None, :] - pos[a][None, :, :], axis=-1)
    edge = centre - radius[e][:, None] - radius[a][None, :]
    return len(e), int((edge.min(axis=1) <= reach).sum())


def trace(battle: SMACBattle, steps: int, reach: float) -> tuple[list[tuple[int, int, int]], int, int]:
    """Play SMAC's heuristic (seat 0) against the scripted enemy for at most ``steps`` steps; return
    the rows (step, living enemies, enemies in reach) of each game's first episode, the games won and
    the games finished."""
    policy = HeuristicPolicy(battle, 0)
    battle.reset()
    units = battle.units
    mine, theirs = units.side_slices
    radius = np.asarray(units.radius, dtype=np.float64)
    running = np.ones(battle.num_envs, dtype=bool)
    rows, won = [], 0
    for step in range(steps):
        _, _, done, info = battle.step([policy.act()], check_masks=False)
        done = np.asarray(done)
        victory = np.asarray(info["battle_won"][0])
        pos, alive = np.asarray(units.pos, dtype=np.float64), np.asarray(units.alive)
        for g in np.flatnonzero(running):
            if done[g]:  # the state is the next episode's start: the finished one is not counted
                running[g] = False
                won += int(victory[g])
                continue
            living, near = in_reach(pos[g], radius, alive[g], mine, theirs, reach)
            rows.append((step, living, near))
        if not running.any():
            break
    return rows, won, int((~running).sum())


def summary(rows: list[tuple[int, int, int]], min_alive: int) -> list[tuple[int, int, int, float, int, float]]:
    """Per window of steps: (first step, last step + 1, samples, mean enemies in reach, most in reach,
    mean living enemies), over the rows with at least ``min_alive`` living enemies."""
    out = []
    r = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
    for lo, hi in WINDOWS:
        m = (r[:, 0] >= lo) & (r[:, 0] < hi) & (r[:, 1] >= min_alive)
        if m.any():
            out.append((lo, hi, int(m.sum()), float(r[m, 2].mean()), int(r[m, 2].max()), float(r[m, 1].mean())))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--map", default="corridor", choices=list(MAP_NAMES))
    ap.add_argument("--games", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reach", type=float, default=0.15, help="edge distance counted as in melee reach")
    ap.add_argument("--min-alive", type=int, default=20, help="count steps with at least this many enemies")
    ap.add_argument("--backend", default="sim", choices=("sim", "sc2"))
    args = ap.parse_args()
    if args.games < 1:
        raise SystemExit(f"--games must be positive, got {args.games}")
    if args.reach < 0:
        raise SystemExit(f"--reach must be >= 0, got {args.reach}")
    battle = SMACBattle(args.map, args.games, two_player=False, seed=args.seed, backend=args.backend)
    rows, won, finished = trace(battle, battle.episode_limit + 1, args.reach)
    print(f"{args.map}, {args.backend}, seed {args.seed}: heuristic won {won} of {finished} finished games "
          f"({args.games} played)")
    print(f"enemies within edge distance {args.reach} of an agent unit, steps with >= {args.min_alive} alive:")
    print("| steps | samples | in reach (mean) | in reach (most) | enemies alive (mean) |")
    print("|---|---:|---:|---:|---:|")
    for lo, hi, n, mean, most, alive in summary(rows, args.min_alive):
        print(f"| {lo}–{hi - 1} | {n} | {mean:.1f} | {most} | {alive:.1f} |")


if __name__ == "__main__":
    main()
