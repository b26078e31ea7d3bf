"""One thread or two for a batch of SMAC games, and what the scratch rows' layout and the cut into pieces do to two.

The CPU build steps a batch of ``build.PARALLEL_MIN_GAMES`` games or more on threads side by side, each
thread on its own slot of scratch rows, taking pieces of the batch as they come (``build.Chunks``); the
slots' rows lie apart (``records.new_scratch(..., apart=True)``).  This script times the loop of
``benchmarks/smac_throughput.py`` (``SMACBattle(map, games, two_player=True)``, both seats random
valid actions from torch, masks read every step; a SMACv2 scenario's name, e.g. ``zerg_10_vs_10``, plays
``SMACv2Battle(scenario, games, two_player=False)`` against the scripted AI instead, finished games
redrawn) with the battle's scratch replaced by:

- ``one``: one slot, one call over every game;
- ``two``: one slot per thread, rows apart, ``build.PIECES_PER_SLOT`` pieces per thread taken as they
  come (what the build makes from the threshold on);
- ``two-halves``: the same with one fixed half of the batch per thread (``PIECES_PER_SLOT`` = 1), as
  before the pieces: the step waits for the slower thread;
- ``two-adjacent``: one slot per thread, the rows of the slots side by side as they were before
  (each slot's row of a field next to the other's, so the threads write into each other's cache lines).

All four play the same games bit for bit (``tests/smac/test_parallel_step.py``).  Figures are µs of
wall time per game-step (one step of one game), the best and the mean of ``--rounds`` interleaved
rounds after ``--warmup`` random steps (on a shared host the cores' speed wanders: the halves' cost
shows in the mean); the last column is ``one`` / ``two``, of the best.  It sets the threshold: idle, two
threads pay where that ratio is above 1; when another process holds the other core they lose
(docs/results/speed.md, "SMAC batched: two threads that no longer share cache lines").

    python benchmarks/smac_threads.py [--maps 3s5z 3m zerg_10_vs_10] [--games 64 256 2048] [--rounds 3]
"""

from __future__ import annotations

import argparse
import time

LAYOUTS = ("one", "two", "two-halves", "two-adjacent")


def loop_time(map_name: str, games: int, layout: str, steps: int, warmup: int) -> float:
    """µs of wall time per game-step of ``steps`` random steps of a fresh seeded battle in ``layout``."""
    import torch
    from selfplay.envs.smac import SMACBattle, build
    from selfplay.envs.smac.records import new_scratch
    from selfplay.envs.smac.smacv2_battle import SMACv2Battle
    from selfplay.envs.smac.smacv2_scenarios import SCENARIOS

    slots = 1 if layout == "one" else 2
    pieces_per_slot = build.PIECES_PER_SLOT
    if layout == "two-halves":
        build.PIECES_PER_SLOT = 1  # read when the calls are bound (at the reset below)
    try:
        if map_name in SCENARIOS:  # SMACv2: against the scripted AI, finished games redrawn
            b = SMACv2Battle(map_name, games, two_player=False, seed=0)
            b.engine.scratch = new_scratch(slots, b.engine.num_units, apart=layout in ("two", "two-halves"))
        else:
            b = SMACBattle(map_name, games, two_player=True, mirror=False, seed=0)
            for name in ("scratch", "feature_scratch"):  # the battle binds its calls again for the new records
                setattr(b.engine, name, new_scratch(slots, b.engine.num_units, apart=layout in ("two", "two-halves")))
        b.reset()
    finally:
        build.PIECES_PER_SLOT = pieces_per_slot
    gen = torch.Generator().manual_seed(0)

    def random_valid(masks):  # argmax of uniform noise over the legal actions, as smac_throughput.py
        return [(torch.rand(m.shape, generator=gen) * m).argmax(-1) for m in masks]

    for _ in range(warmup):
        b.step(random_valid(b.action_masks()))
    start = time.perf_counter()
    for _ in range(steps):
        b.step(random_valid(b.action_masks()))
    return (time.perf_counter() - start) / (steps * games) * 1e6


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--maps", nargs="+", default=["3s5z", "3m"])
    p.add_argument("--games", nargs="+", type=int, default=[64, 256, 2048])
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds; their best and mean are printed")
    p.add_argument("--warmup", type=int, default=3)
    args = p.parse_args(argv)
    import torch

    from selfplay.utils.threads import smac_threads

    torch.set_num_threads(1)
    if smac_threads() < 2:
        raise SystemExit("SMAC batches get one thread here (NUMBA_NUM_THREADS=1 or one core): nothing to compare")
    print(f"SMAC threads {smac_threads()}; µs of wall time per game-step, best / mean of {args.rounds}")
    print(f"{'map':12s} {'games':>6s} " + " ".join(f"{name:>15s}" for name in LAYOUTS) + f" {'one / two':>10s}")
    for map_name in args.maps:
        for games in args.games:
            steps = max(20, 40960 // games)
            times = {name: [] for name in LAYOUTS}
            for _ in range(args.rounds):
                for name in LAYOUTS:
                    times[name].append(loop_time(map_name, games, name, steps, args.warmup))
            best = {name: min(t) for name, t in times.items()}
            print(f"{map_name:12s} {games:6d} "
                  + " ".join(f"{best[name]:7.2f}/{sum(t) / len(t):7.2f}" for name, t in times.items())
                  + f" {best['one'] / best['two']:10.2f}", flush=True)


if __name__ == "__main__":
    main()
