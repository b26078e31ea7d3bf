"""How close the SMAC simulator's maps are to the real map files, and how SMAC's heuristic AI fares.

For every map: the agreement of the simulator's pathing grid with the archive's ``t3CellFlags``
(decoded here when ``mpyq`` and ``../shared/data/smac_maps`` are available, else from the shipped
data), the mean distance of the spawned units from their trigger point, and the win rate of SMAC's
heuristic AI (``envs/smac/heuristic_batched.py``) against the scripted enemy over ``--games`` games per
seed.  For 3s5z also the mean distance of the placement from the real game's layout (the published
real-game reset positions that ``tests/smac/test_maps.py`` holds).  Prints a markdown table.

``--ablations`` also measures how much two modelling choices move the heuristic's win rate: the
scripted enemy's acquisition range (LotV's max(5, range + 0.5) against the older max(5, range) and
sight 9) on a few maps, and 3s5z with the real game's spawn positions instead of the placement rule.

    python benchmarks/smac_fidelity.py [--games 256] [--seeds 0 1] [--maps 3m 2s3z] [--ablations]
"""

from __future__ import annotations

import argparse
import math
import struct
import time
from pathlib import Path

import numpy as np
import torch
from selfplay.envs.smac import MAP_NAMES, get_map
from selfplay.envs.smac.heuristic_batched import heuristic_win_rate

MAPS_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "smac_maps"
REAL_3S5Z = {"stalker": [(0, 0), (0, -1.18848), (1.18848, 0)],
             "zealot": [(-1.5, 0.5), (-1, -0.5), (-0.5, 1), (0, 2), (0.5, 1)]}


def file_grid(name: str) -> tuple[np.ndarray, str]:
    """The archive's pathing grid [x, y] and where it came from."""
    try:
        import mpyq

        b = mpyq.MPQArchive(str(MAPS_DIR / f"{name}.SC2Map")).read_file("t3CellFlags")
        w, h = struct.unpack_from("<II", b, 24)
        flags = np.frombuffer(b[32:32 + w * h], dtype=np.uint8).reshape(h, w)
        return (flags & 1 == 0).T, "archive"
    except (ImportError, OSError):
        from selfplay.envs.smac.maps import map_data

        col = map_data()[name]["pathing"]
        return np.array([[c == "1" for c in x] for x in col]), "shipped data"


def spawn_distance(name: str) -> float:
    """Mean distance of every unit (both sides) from the closest trigger point of its type."""
    spec = get_map(name)
    out = []
    for side in (0, 1):
        for u, q in zip(spec.units(side), spec.spawn_positions(side)):
            out.append(min(math.dist(q, g[2]) for g in spec.groups[side] if g[0] == u))
    return float(np.mean(out))


def real_3s5z_error() -> float:
    spec = get_map("3s5z")
    errs = []
    for side, c in ((0, (9, 16)), (1, (23, 16))):
        p, names = spec.spawn_positions(side) - np.array(c), spec.units(side)
        for u, real in REAL_3S5Z.items():
            got = sorted(map(tuple, p[[k for k, n in enumerate(names) if n == u]]))
            errs += list(np.hypot(*(np.array(got) - np.array(sorted(real))).T))
    return float(np.mean(errs))


def tweaked_win_rate(name: str, games: int, tweak, seed: int = 0) -> float:
    """The heuristic's win rate with ``tweak(engine)`` applied before the first reset."""
    return heuristic_win_rate(name, games, num_envs=games, seed=seed, tweak=tweak)


def _scan_range(engine, values) -> None:
    """Set the scripted units' acquisition range and rebuild the rules' per-unit records from it."""
    engine.scan_range = values
    engine.static, engine.maps, engine.flags = engine._records()


def scan_range_sight(engine) -> None:
    _scan_range(engine, torch.full_like(engine.scan_range, 9.0))


def scan_range_pre_lotv(engine) -> None:
    """max(5, weapon range): the scan range before Legacy of the Void's weapon range + 0.5."""
    _scan_range(engine, torch.clamp(engine.weapon_range, min=5.0))


def real_3s5z_spawns(engine) -> None:
    offsets = np.array(REAL_3S5Z["stalker"] + REAL_3S5Z["zealot"])
    engine.spawn = torch.tensor(np.concatenate([offsets + (9, 16), offsets + (23, 16)]), dtype=torch.float32)


def ablations(games: int) -> None:
    print("\n| map | heuristic win rate | scan range max(5, range) (before LotV) | scan range 9 |\n|---|---:|---:|---:|")
    for name in ("3m", "2s3z", "3s5z", "8m", "25m", "bane_vs_bane", "MMM"):
        base = tweaked_win_rate(name, games, lambda e: None)
        pre = tweaked_win_rate(name, games, scan_range_pre_lotv)
        print(f"| {name} | {base:.2f} | {pre:.2f} | {tweaked_win_rate(name, games, scan_range_sight):.2f} |", flush=True)
    print(f"\n3s5z with the real game's spawn positions: {tweaked_win_rate('3s5z', games, real_3s5z_spawns):.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=256)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--maps", nargs="+", default=list(MAP_NAMES))
    ap.add_argument("--ablations", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print("| map | pathing agreement | mean spawn distance to trigger point | heuristic win rate |")
    print("|---|---:|---:|---:|")
    for name in args.maps:
        grid, src = file_grid(name)
        agree = float((get_map(name).pathing_grid() == grid).mean())
        t = time.time()
        wins = [heuristic_win_rate(name, args.games, min(args.games, 256), seed=s) for s in args.seeds]
        print(f"| {name} | {agree:.3f} ({src}) | {spawn_distance(name):.2f} | "
              f"{' / '.join(f'{w:.2f}' for w in wins)} | <!-- {time.time() - t:.0f}s -->", flush=True)
    print(f"\n3s5z placement vs the real game's layout: mean error {real_3s5z_error():.3f}")
    if args.ablations:
        ablations(args.games)


if __name__ == "__main__":
    main()
