"""The SMAC maps of spec-smac.md §7: units, spawn points, episode limits, races, terrain.

Every map is 32x32 (``map_x`` = ``map_y`` = 32) with the playable area (2, 2)-(30, 30), so SMAC's
state normalisers are ``playable_width = playable_height = 28`` and the centre is (16, 16).

Terrain is a walkability grid of 32x32 cells indexed ``[x, y]`` (cell (i, j) covers
[i, i+1) x [j, j+1)), exactly the resolution SMAC's ``pathing_grid`` has, plus a terrain-height grid
in [0, 1] (SMAC divides the map's heights by 255).  The real maps' shapes are approximated:

- "line": the walkable strip y in [8, 24) across the full width (§7);
- "open": every cell walkable (3s_vs_Xz, §7);
- "playable": the playable square [2, 30)^2 (2m_vs_1z, 6h_vs_8z: not specified by §7);
- "corridor": a room [3, 17)^2 behind the allies, a diagonal corridor |x - y| <= 2 between the
  rooms, and the enemies' room [24, 31)^2;
- "ravine": the playable square cut by a cliff band y in [12, 13) for x in [5, 27) that ground units
  walk around (colossi walk over cliffs); the allies' side (y >= 13) is high ground;
- "octagon": |x-16| <= 11, |y-16| <= 11, |x-16| + |y-16| <= 15.

Units of one spawn group are packed around the spawn point (closest free grid points first, no
overlap of radii, walkable cells only); the second side's packing is the first's mirrored in x, so
the symmetric maps are exactly symmetric about x = 16.

Agent order inside a side: by the map's ally unit-type order (SMAC sorts its agents by unit type),
then group order.  The real game lists enemies in raw order; we use the same rule for both sides.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .units import UNIT_STATS

MAP_SIZE = 32
PLAYABLE = (2.0, 2.0, 30.0, 30.0)  # x0, y0, x1, y1

# Unit-type orders of spec §4.  Allies: unit_type - min_ally_type; enemies: SMAC's fixed per-race order.
TYPE_ORDERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "marines": ((), ()),
    "stalkers": ((), ()),
    "zealots": ((), ()),
    "hydralisks": ((), ()),
    "colossus": ((), ()),
    "stalkers_and_zealots": (("stalker", "zealot"), ("zealot", "stalker")),
    "colossi_stalkers_zealots": (("colossus", "stalker", "zealot"), ("colossus", "stalker", "zealot")),
    "MMM": (("marauder", "marine", "medivac"), ("marauder", "marine", "medivac")),
    "bane": (("baneling", "zergling"), ("baneling", "zergling")),
}

Group = tuple[str, int, tuple[float, float]]  # (unit name, count, spawn point)


@dataclass(frozen=True)
class MapSpec:
    """One row of spec §7.  ``groups[0]`` are the allies (player 1), ``groups[1]`` the enemies."""

    name: str
    ally_groups: tuple[Group, ...]
    enemy_groups: tuple[Group, ...]
    episode_limit: int
    ally_race: str
    enemy_race: str
    map_type: str
    terrain: str

    map_x: int = MAP_SIZE
    map_y: int = MAP_SIZE

    @property
    def groups(self) -> tuple[tuple[Group, ...], tuple[Group, ...]]:
        return (self.ally_groups, self.enemy_groups)

    @property
    def unit_type_bits(self) -> int:
        """0 when the map has one unit type, else the number of types (spec §3)."""
        return len(TYPE_ORDERS[self.map_type][0])

    @property
    def races(self) -> tuple[str, str]:
        return (self.ally_race, self.enemy_race)

    @property
    def playable_origin(self) -> tuple[float, float]:
        """The playable area's lower-left corner in this spec's frame (the game's ``playable_area.p0``)."""
        return (PLAYABLE[0], PLAYABLE[1])

    @property
    def playable_width(self) -> float:
        return PLAYABLE[2] - PLAYABLE[0]

    @property
    def playable_height(self) -> float:
        return PLAYABLE[3] - PLAYABLE[1]

    def units(self, side: int) -> list[str]:
        """Unit names of ``side`` (0 allies, 1 enemies) in agent order."""
        return [name for name, _ in self._ordered(side)]

    def spawn_centres(self, side: int) -> np.ndarray:
        """Mean spawn point of ``side`` (the scripted AI's attack-move goal is the other side's)."""
        pts = np.array([g[2] for g in self.groups[side]], dtype=np.float64)
        counts = np.array([g[1] for g in self.groups[side]], dtype=np.float64)
        return (pts * counts[:, None]).sum(0) / counts.sum()

    def _ordered(self, side: int) -> list[tuple[str, int]]:
        order = TYPE_ORDERS[self.map_type][0]
        flat = [(name, gi) for gi, (name, count, _) in enumerate(self.groups[side]) for _ in range(count)]
        if order:
            flat.sort(key=lambda t: order.index(t[0]))  # stable: group order within a type
        return flat

    def type_ids(self, side: int, as_ally: bool) -> list[int]:
        """Unit-type ids of ``side``'s units, seen as allies (own side) or as enemies (§4)."""
        if self.unit_type_bits == 0:
            return [0] * len(self.units(side))
        order = TYPE_ORDERS[self.map_type][0 if as_ally else 1]
        return [order.index(u) for u in self.units(side)]

    def spawn_positions(self, side: int) -> np.ndarray:
        """(n_units, 2) start positions of ``side`` in agent order."""
        return _spawn_positions(self, side)

    def pathing_grid(self) -> np.ndarray:
        """bool (map_x, map_y), indexed [x, y]: True where ground units may stand."""
        return _terrain(self.terrain)[0].copy()

    def cliff_grid(self) -> np.ndarray:
        """bool (map_x, map_y): cliff cells that only cliff-walkers (colossi) may cross."""
        return _terrain(self.terrain)[2].copy()

    def terrain_height(self) -> np.ndarray:
        """float (map_x, map_y) in [0, 1], indexed [x, y]."""
        return _terrain(self.terrain)[1].copy()


@lru_cache(maxsize=None)
def _terrain(kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    c = np.arange(MAP_SIZE) + 0.5
    x, y = np.meshgrid(c, c, indexing="ij")  # cell centres, [x, y]
    inside_playable = (x >= PLAYABLE[0]) & (x < PLAYABLE[2]) & (y >= PLAYABLE[1]) & (y < PLAYABLE[3])
    height = np.full((MAP_SIZE, MAP_SIZE), 0.5)
    cliff = np.zeros((MAP_SIZE, MAP_SIZE), dtype=bool)
    if kind == "line":
        walk = (y >= 8) & (y < 24)
    elif kind == "open":
        walk = np.ones_like(x, dtype=bool)
    elif kind == "playable":
        walk = inside_playable
    elif kind == "corridor":
        room_allies = (x >= 3) & (x < 17) & (y >= 3) & (y < 17)
        room_enemies = (x >= 24) & (x < 31) & (y >= 24) & (y < 31)
        corridor = (np.abs(x - y) <= 2.0) & (x + y >= 28) & (x + y <= 52)
        walk = room_allies | room_enemies | corridor
    elif kind == "ravine":
        cliff = (y >= 12) & (y < 13) & (x >= 5) & (x < 27)
        walk = inside_playable & ~cliff
        height = np.where(y >= 13, 0.75, 0.5)
    elif kind == "octagon":
        dx, dy = np.abs(x - 16), np.abs(y - 16)
        walk = (dx <= 11) & (dy <= 11) & (dx + dy <= 15)
    else:
        raise ValueError(f"terrain {kind!r} is unknown")
    height = np.where(walk, height, 0.0)
    return walk.astype(bool), height.astype(np.float64), cliff


def _pack_group(centre: tuple[float, float], radii: list[float], walk: np.ndarray,
                placed: list[np.ndarray], placed_r: list[float]) -> np.ndarray:
    """Greedy packing: each unit takes the free candidate point closest to ``centre`` in the metric
    ``hypot(3 dx, dy)`` (ties by angle), i.e. a formation spread along y, facing the enemy in x,
    such that it overlaps no unit placed so far (``placed``, updated) and stands on a walkable cell."""
    step = 0.25
    g = np.arange(-24, 25) * step
    gx, gy = np.meshgrid(g, g, indexing="ij")
    cand = np.stack([gx.ravel(), gy.ravel()], 1)
    order = np.lexsort((np.arctan2(cand[:, 1], cand[:, 0]), np.round(np.hypot(3 * cand[:, 0], cand[:, 1]), 6)))
    cand = np.asarray(centre) + cand[order]
    out = []
    for r in radii:
        for p in cand:
            cx, cy = int(p[0]), int(p[1])
            if not (0 <= cx < MAP_SIZE and 0 <= cy < MAP_SIZE and walk[cx, cy]):
                continue
            if placed and np.any(np.hypot(*(np.array(placed) - p).T) < np.array(placed_r) + r - 1e-9):
                continue
            placed.append(p)
            placed_r.append(r)
            out.append(p)
            break
        else:
            raise RuntimeError("spawn packing failed")  # cannot happen for the maps of §7
    return np.array(out)


@lru_cache(maxsize=None)
def _spawn_positions_cached(spec: MapSpec, side: int) -> tuple[tuple[float, float], ...]:
    """Pack every spawn point's units in turn.  Side 1 is packed in the mirror image (x -> 32 - x)
    and mirrored back, so symmetric maps are exactly symmetric."""
    walk = _terrain(spec.terrain)[0]
    ordered = spec._ordered(side)
    centres = [spec.groups[side][g][2] for _, g in ordered]
    frame_walk = walk if side == 0 else walk[::-1]
    pos = np.zeros((len(ordered), 2))
    placed: list[np.ndarray] = []
    placed_r: list[float] = []
    for centre in dict.fromkeys(centres):  # every spawn point once, all its units packed together
        idx = [k for k, c in enumerate(centres) if c == centre]
        c = centre if side == 0 else (MAP_SIZE - centre[0], centre[1])
        pts = _pack_group(c, [UNIT_STATS[ordered[k][0]].radius for k in idx], frame_walk, placed, placed_r)
        if side == 1:
            pts[:, 0] = MAP_SIZE - pts[:, 0]
        pos[idx] = pts
    return tuple(map(tuple, pos))


def _spawn_positions(spec: MapSpec, side: int) -> np.ndarray:
    return np.array(_spawn_positions_cached(spec, side), dtype=np.float64)


_LINE_A, _LINE_E = (9.0, 16.0), (23.0, 16.0)


def _line(name, ally, enemy, limit, race, map_type) -> MapSpec:
    return MapSpec(name, tuple((u, n, _LINE_A) for u, n in ally), tuple((u, n, _LINE_E) for u, n in enemy),
                   limit, race[0], race[1], map_type, "line")


MAPS: dict[str, MapSpec] = {
    m.name: m
    for m in [
        _line("3m", [("marine", 3)], [("marine", 3)], 60, "TT", "marines"),
        _line("8m", [("marine", 8)], [("marine", 8)], 120, "TT", "marines"),
        _line("25m", [("marine", 25)], [("marine", 25)], 150, "TT", "marines"),
        _line("5m_vs_6m", [("marine", 5)], [("marine", 6)], 70, "TT", "marines"),
        _line("8m_vs_9m", [("marine", 8)], [("marine", 9)], 120, "TT", "marines"),
        _line("10m_vs_11m", [("marine", 10)], [("marine", 11)], 150, "TT", "marines"),
        _line("27m_vs_30m", [("marine", 27)], [("marine", 30)], 180, "TT", "marines"),
        _line("2s3z", [("stalker", 2), ("zealot", 3)], [("stalker", 2), ("zealot", 3)], 120, "PP",
              "stalkers_and_zealots"),
        _line("3s5z", [("stalker", 3), ("zealot", 5)], [("stalker", 3), ("zealot", 5)], 150, "PP",
              "stalkers_and_zealots"),
        _line("3s5z_vs_3s6z", [("stalker", 3), ("zealot", 5)], [("stalker", 3), ("zealot", 6)], 170, "PP",
              "stalkers_and_zealots"),
        _line("1c3s5z", [("colossus", 1), ("stalker", 3), ("zealot", 5)],
              [("colossus", 1), ("stalker", 3), ("zealot", 5)], 180, "PP", "colossi_stalkers_zealots"),
        _line("MMM", [("medivac", 1), ("marauder", 2), ("marine", 7)],
              [("medivac", 1), ("marauder", 2), ("marine", 7)], 150, "TT", "MMM"),
        _line("MMM2", [("medivac", 1), ("marauder", 2), ("marine", 7)],
              [("medivac", 1), ("marauder", 3), ("marine", 8)], 180, "TT", "MMM"),
        MapSpec("3s_vs_3z", (("stalker", 3, _LINE_A),), (("zealot", 3, _LINE_E),), 150, "P", "P", "stalkers", "open"),
        MapSpec("3s_vs_4z", (("stalker", 3, _LINE_A),), (("zealot", 4, _LINE_E),), 200, "P", "P", "stalkers", "open"),
        MapSpec("3s_vs_5z", (("stalker", 3, _LINE_A),), (("zealot", 5, _LINE_E),), 250, "P", "P", "stalkers", "open"),
        MapSpec("2m_vs_1z", (("marine", 1, (13.0, 12.0)), ("marine", 1, (19.0, 12.0))),
                (("zealot", 1, (16.0, 19.0)),), 150, "T", "P", "marines", "playable"),
        MapSpec("6h_vs_8z", (("hydralisk", 6, (14.60, 9.49)),), (("zealot", 8, (14.41, 16.76)),), 150, "Z", "P",
                "hydralisks", "playable"),
        MapSpec("corridor", (("zealot", 6, (19.04, 19.12)),), (("zergling", 24, (27.91, 28.24)),), 400, "P", "Z",
                "zealots", "corridor"),
        MapSpec("bane_vs_bane", (("zergling", 20, (16.0, 11.0)), ("baneling", 4, (16.0, 8.0))),
                (("zergling", 20, (16.0, 21.0)), ("baneling", 4, (16.0, 24.0))), 200, "Z", "Z", "bane", "octagon"),
        MapSpec("2c_vs_64zg", (("colossus", 2, (16.0, 16.0)),), (("zergling", 64, (16.0, 9.0)),), 400, "P", "Z",
                "colossus", "ravine"),
    ]
}

MAP_NAMES = tuple(MAPS)


def get_map(name: str) -> MapSpec:
    """The §7 map ``name``; raises ``ValueError`` listing the allowed names."""
    if name not in MAPS:
        raise ValueError(f"map_name {name!r} is unknown; allowed: {list(MAPS)}")
    return MAPS[name]
