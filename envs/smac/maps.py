"""The SMAC maps (docs/design/smac.md §7), built from the map files' derived data (``mapdata/smac_maps.json``,
written by ``mapdata/read_maps.py`` from the 23 ``.SC2Map`` archives).

Per map, from the files: the units each trigger creates for each player and where (``groups``), the
order player 2's units get at every (re)spawn (``enemy_order``), the pathing grid (``t3CellFlags``),
cliff levels and heights, the map size, and SMAC's registry row (episode limit, races, map type).

Grids are indexed ``[x, y]`` (cell (i, j) covers [i, i+1) x [j, j+1)), SMAC's ``pathing_grid`` layout.

**Playable area.**  SMAC normalises centre-relative state positions by the playable width/height the
game reports.  The map files' camera bounds are (0, 0)-(32, 32) on every map (kept as
``map_bounds``), but the game's reported area is (2, 2)-(30, 30) (``playable``, width 28): the seed's
3s5z feature rows (``tests/smac/test_features.py``, measured on the real game) give for one unit both
``dy / 9 = 0.13205296`` (sight-range feature, absolute) and ``dy / W = 0.04244559`` (state feature),
so ``W = 1.18848 / 0.04244559 = 28.0``; with 32 the same rows would put the first stalker at x = 8,
not on its trigger point (9, 16).

**Spawn placement** (``place_units``), our rule for how SC2 places units created around a point,
fitted on the one real layout we have (the seed's 3s5z reset: stalkers at p, p + (0, -1.19),
p + (1.19, 0); zealots at p + (-1.5, 0.5), (-1, -0.5), (-0.5, 1), (0, 2), (0.5, 1), the same for
both players, a translation): units are placed one at a time in creation order; each takes the
first candidate point ``p + r * (i, j)`` (``r`` its radius, integers i, j) in order of distance to
``p``, ties counter-clockwise starting from south, that lies on a pathable cell and overlaps no
unit already placed in its collision class (ground / colossus / air) by more than 1/16
(``|d| >= r_a + r_b - 1/16``).  It reproduces the seed's layout within 0.07 per unit
(``tests/smac/test_maps.py``).  In two-player mode with a mirrored seat the second side's units are
placed by the same rule in the mirrored frame (``mirror_axis``: reflected in x, or in y where the sides
face north and south, as on bane_vs_bane), so symmetric maps are exactly symmetric.

**Agent order.**  SMAC sorts its agents by (unit type, x, y); we order both sides that way (types in
``TYPE_ORDERS``).  The real game lists enemies in its raw order, which is neither sorted nor the
creation order (seed); the simulator uses the sorted order for them too.

**Colossi** walk over cliffs: unpathable cells in a band at most 2 cells thick with pathable cells
on both sides (along x or y) are ``cliff_grid`` cells (2c_vs_64zg's ravine).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

import numpy as np

from .units import UNIT_STATS

MAP_SIZE = 32
PLAYABLE = (2.0, 2.0, 30.0, 30.0)  # the playable area the game reports (module docstring)
DATA_FILE = Path(__file__).with_name("mapdata") / "smac_maps.json"
SMACV2_DATA_FILE = Path(__file__).with_name("mapdata") / "smacv2_maps.json"  # the terrain SMACv2's scenarios play on
PLACEMENT_OVERLAP = 1.0 / 16.0  # allowed overlap of radii when the game places a created unit
PLACEMENT_CHUNK = 64  # candidate points tested at once (the first free one in order is taken either way)

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

# The maps' unit ids (stock and "_RL" copies, including 1c3s5z's "Colosus_RL") -> our unit names.
GAME_UNIT_NAMES = {"Marine": "marine", "Marauder": "marauder", "Medivac": "medivac", "Stalker": "stalker",
                   "Zealot": "zealot", "Colossus": "colossus", "Colosus": "colossus", "Zergling": "zergling",
                   "Baneling": "baneling", "Hydralisk": "hydralisk", "SpineCrawler": "spine_crawler"}

Group = tuple[str, int, tuple[float, float]]  # (unit name, count, trigger point)


def game_unit_name(unit_id: str) -> str:
    """Our unit name of a map's unit id (``Marine_RL`` -> ``marine``)."""
    base = unit_id[:-3] if unit_id.endswith("_RL") else unit_id
    if base not in GAME_UNIT_NAMES:
        raise ValueError(f"unit id {unit_id!r} is unknown; allowed: {sorted(GAME_UNIT_NAMES)} (optionally + '_RL')")
    return GAME_UNIT_NAMES[base]


@dataclass(frozen=True)
class MapSpec:
    """One SMAC map.  ``ally_groups`` are player 1's creations, ``enemy_groups`` player 2's, each in
    the trigger's order.  ``enemy_order``: ``("attack_point", (p,))``, ``("attack_point_between",
    (p, q))`` (a random point on the segment at every respawn), ``("attack_units", group indices of
    ally_groups)`` or ``None`` (no order: hand-made specs attack-move to the allies' spawn centre, the
    map 2s_vs_1sc's spine crawler just stands).  ``terrain``: a map name of the data, or "open" /
    "line" (hand-made specs: every cell walkable / the strip y in [8, 24))."""

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
    enemy_order: tuple | None = None
    playable: tuple[float, float, float, float] = PLAYABLE
    map_bounds: tuple[float, float, float, float] = (0.0, 0.0, float(MAP_SIZE), float(MAP_SIZE))
    unit_data: tuple = field(default=(), compare=False)  # (unit id, {field: value}) of the map's own units

    @property
    def groups(self) -> tuple[tuple[Group, ...], tuple[Group, ...]]:
        return (self.ally_groups, self.enemy_groups)

    @property
    def same_teams(self) -> bool:
        """Both sides field the same units (3m, 8m, 2s3z, 3s5z, MMM, ...): a two-player battle can mirror them."""
        return sorted((u, n) for u, n, _ in self.ally_groups) == sorted((u, n) for u, n, _ in self.enemy_groups)

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
        return self.playable[2] - self.playable[0]

    @property
    def playable_height(self) -> float:
        return self.playable[3] - self.playable[1]

    def units(self, side: int, mirrored: bool = False) -> list[str]:
        """Unit names of ``side`` (0 allies, 1 enemies) in agent order."""
        return [self._created(side)[k][0] for k in agent_order(self, side, mirrored)]

    def spawn_centres(self, side: int) -> np.ndarray:
        """Mean trigger point of ``side``'s units."""
        pts = np.array([g[2] for g in self.groups[side]], dtype=np.float64)
        counts = np.array([g[1] for g in self.groups[side]], dtype=np.float64)
        return (pts * counts[:, None]).sum(0) / counts.sum()

    def _created(self, side: int) -> list[tuple[str, int]]:
        """(unit name, group index) of every unit of ``side`` in creation order."""
        return [(name, gi) for gi, (name, count, _) in enumerate(self.groups[side]) for _ in range(count)]

    def type_ids(self, side: int, as_ally: bool) -> list[int]:
        """Unit-type ids of ``side``'s units, seen as allies (own side) or as enemies (§4)."""
        if self.unit_type_bits == 0:
            return [0] * len(self.units(side))
        order = TYPE_ORDERS[self.map_type][0 if as_ally else 1]
        return [order.index(u) for u in self.units(side)]

    def spawn_positions(self, side: int, mirrored: bool = False) -> np.ndarray:
        """(n_units, 2) start positions of ``side`` in agent order; ``mirrored`` (side 1 only): placed
        by the same rule in the frame x' = map_x - x (module docstring)."""
        pos = _placement(self, side, mirrored)
        return pos[agent_order(self, side, mirrored)]

    def pathing_grid(self) -> np.ndarray:
        """bool (map_x, map_y), indexed [x, y]: True where ground units may stand."""
        return _terrain(self.terrain)[0].copy()

    def cliff_grid(self) -> np.ndarray:
        """bool (map_x, map_y): cliff cells that only cliff-walkers (colossi) may cross."""
        return _terrain(self.terrain)[2].copy()

    def terrain_height(self) -> np.ndarray:
        """float (map_x, map_y) in [0, 1], indexed [x, y] (``_terrain``)."""
        return _terrain(self.terrain)[1].copy()


@lru_cache(maxsize=1)
def smacv2_map_data() -> dict:
    """The shipped derived data of SMACv2's ``32x32_flat`` map (terrain only: no triggers, no registry)."""
    return json.loads(SMACV2_DATA_FILE.read_text())


@lru_cache(maxsize=1)
def map_data() -> dict:
    """The shipped derived data of the 23 maps (``mapdata/read_maps.py``)."""
    return json.loads(DATA_FILE.read_text())


def _cliff_cells(walk: np.ndarray) -> np.ndarray:
    """Unpathable cells of a band at most 2 cells thick with pathable ground on both sides."""
    out = np.zeros_like(walk)
    n = walk.shape[0]
    for axis in (0, 1):
        w = walk if axis == 0 else walk.T
        o = np.zeros_like(w)
        for a in range(n):
            for b in range(n):
                if w[a, b]:
                    continue
                lo = any(w[a - k, b] for k in (1, 2) if a - k >= 0)
                hi = any(w[a + k, b] for k in (1, 2) if a + k < n)
                o[a, b] = lo and hi and (a == 0 or w[a - 1, b] or a + 1 >= n or w[a + 1, b])
        out |= o if axis == 0 else o.T
    return out


@cache
def _terrain(kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(walkable, height in [0, 1], cliff) grids.  Maps of the data: the real pathing grid; height =
    the cell's sync height (1/4096 units) / 4096 / 64, clipped to [0, 1] (monotone in the real
    height; the byte scale of the game's ``terrain_height`` is not known here).  "open"/"line": the
    hand-made terrains of test specs (height 0.5 where walkable)."""
    data = map_data()
    if kind in data or kind in smacv2_map_data():
        d = data[kind] if kind in data else smacv2_map_data()[kind]
        walk = np.array([[c == "1" for c in col] for col in d["pathing"]], dtype=bool)
        height = np.clip(np.array(d["height"], dtype=np.float64) / 4096.0 / 64.0, 0.0, 1.0)
        return walk, height, _cliff_cells(walk)
    c = np.arange(MAP_SIZE) + 0.5
    x, y = np.meshgrid(c, c, indexing="ij")
    if kind == "open":
        walk = np.ones_like(x, dtype=bool)
    elif kind == "line":
        walk = (y >= 8) & (y < 24)
    else:
        raise ValueError(f"terrain {kind!r} is unknown; allowed: a map name of the data, 'open', 'line'")
    return walk, np.where(walk, 0.5, 0.0), np.zeros_like(walk)


def _collision_class(name: str) -> int:
    """0 ground, 1 colossus (colossi only collide with colossi), 2 air."""
    return 2 if UNIT_STATS[name].air else 1 if name == "colossus" else 0


@cache
def _candidate_offsets(radius: float, reach: float = 10.0) -> np.ndarray:
    """Offsets ``radius * (i, j)`` within ``reach``, by distance, ties counter-clockwise from south."""
    k = int(math.ceil(reach / radius))
    i = np.arange(-k, k + 1)
    gx, gy = np.meshgrid(i, i, indexing="ij")
    off = np.stack([gx.ravel(), gy.ravel()], 1) * radius
    d = np.round(np.hypot(off[:, 0], off[:, 1]), 6)
    ang = np.round((np.arctan2(off[:, 1], off[:, 0]) + math.pi / 2) % (2 * math.pi), 6)
    order = np.lexsort((ang, d))
    off = off[order]
    return off[np.hypot(off[:, 0], off[:, 1]) <= reach]


def place_units(units: list[tuple[str, tuple[float, float]]], walk: np.ndarray) -> np.ndarray:
    """Positions of ``units`` ((name, point) in creation order) by the placement rule of the module
    docstring, on the pathing grid ``walk`` [x, y]; air units may stand anywhere inside the map."""
    n = walk.shape[0]
    placed = np.zeros((0, 2))
    placed_r: list[float] = []
    placed_c: list[int] = []
    for name, point in units:
        r, cls = UNIT_STATS[name].radius, _collision_class(name)
        offsets = _candidate_offsets(r)
        same = np.array([c == cls for c in placed_c], dtype=bool)
        others, r_o = placed[same], np.array(placed_r)[same]
        chosen = None
        for k in range(0, len(offsets), PLACEMENT_CHUNK):  # candidates in order, a chunk at a time
            cand = np.asarray(point) + offsets[k: k + PLACEMENT_CHUNK]
            ok = (cand >= 0).all(1) & (cand < n).all(1)
            if cls != 2:
                cx, cy = cand[:, 0].clip(0, n - 1).astype(int), cand[:, 1].clip(0, n - 1).astype(int)
                ok &= walk[cx, cy]
            if len(others):
                d = np.hypot(cand[:, None, 0] - others[None, :, 0], cand[:, None, 1] - others[None, :, 1])
                ok &= (d >= r + r_o[None, :] - PLACEMENT_OVERLAP - 1e-9).all(1)
            if ok.any():
                chosen = cand[np.argmax(ok)]
                break
        if chosen is None:
            raise RuntimeError(f"no free place for a {name} around {point}")
        placed = np.concatenate([placed, chosen[None]])
        placed_r.append(r)
        placed_c.append(cls)
    return placed


@cache
def _placement_cached(spec: MapSpec, side: int, mirrored: bool) -> tuple[tuple[float, float], ...]:
    """Positions of ``side``'s units in creation order.  Not mirrored: every creation of both sides in
    order (allies first, as the triggers create them).  Mirrored: ``side``'s creations alone, first,
    in the frame x' = map_x - x, mapped back."""
    walk = _terrain(spec.terrain)[0]
    if not mirrored:
        seq = [(name, spec.groups[s][gi][2]) for s in (0, 1) for name, gi in spec._created(s)]
        pos = place_units(seq, walk)
        n0 = len(spec._created(0))
        pos = pos[:n0] if side == 0 else pos[n0:]
    else:
        a = mirror_axis(spec)
        size = (spec.map_x, spec.map_y)[a]
        seq = []
        for name, gi in spec._created(side):
            pt = list(spec.groups[side][gi][2])
            pt[a] = size - pt[a]
            seq.append((name, tuple(pt)))
        pos = place_units(seq, walk[::-1] if a == 0 else walk[:, ::-1])
        pos[:, a] = size - pos[:, a]
    return tuple(map(tuple, pos))


def mirror_axis(spec: MapSpec) -> int:
    """The axis (0: x, 1: y) a mirrored seat's spawn layout is reflected in: on a map whose sides field
    the same units, the one along which their spawn centres lie apart (x on most maps; y on
    bane_vs_bane, whose armies face north and south), so that the mirrored side's layout is the
    mirror image of side 0's; x on the other maps."""
    same = sorted(g[:2] for g in spec.groups[0]) == sorted(g[:2] for g in spec.groups[1])
    d = np.abs(spec.spawn_centres(1) - spec.spawn_centres(0))
    return 1 if same and d[1] > d[0] else 0


def _placement(spec: MapSpec, side: int, mirrored: bool = False) -> np.ndarray:
    if mirrored and side != 1:
        raise ValueError(f"only side 1 may be mirrored, got side={side}")
    return np.array(_placement_cached(spec, side, bool(mirrored)), dtype=np.float64)


@cache
def _agent_order_cached(spec: MapSpec, side: int, mirrored: bool) -> tuple[int, ...]:
    created = spec._created(side)
    order = TYPE_ORDERS[spec.map_type][0]
    pos = _placement(spec, side, mirrored)
    x, y = pos[:, 0], pos[:, 1]
    if mirrored:  # in the mirrored frame, so that unit k of both sides are mirror images
        x, y = (spec.map_x - x, y) if mirror_axis(spec) == 0 else (x, spec.map_y - y)
    first_seen = list(dict.fromkeys(name for name, _ in created))  # types outside the map's order: creation order
    keys = [(order.index(name) if name in order else len(order) + first_seen.index(name),
             round(float(x[k]), 6), round(float(y[k]), 6), k) for k, (name, _) in enumerate(created)]
    return tuple(k[-1] for k in sorted(keys))


def agent_order(spec: MapSpec, side: int, mirrored: bool = False) -> list[int]:
    """Creation indices of ``side``'s units in agent order: by (type order, x, y) in the side's frame."""
    return list(_agent_order_cached(spec, side, bool(mirrored)))


def _spec_from_data(name: str, d: dict) -> MapSpec:
    reg = d["registry"]
    groups: tuple[list, list] = ([], [])
    create_group: dict[int, int] = {}
    for k, c in enumerate(d["creates"]):
        side = c["player"] - 1
        create_group[k] = len(groups[side])
        groups[side].append((game_unit_name(c["unit"]), int(c["count"]), tuple(c["point"])))
    o = d["enemy_order"]
    if o is None:
        order = None
    elif o["kind"] == "attack_point":
        order = ("attack_point", (tuple(o["point"]),))
    elif o["kind"] == "attack_point_between":
        order = ("attack_point_between", tuple(tuple(p) for p in o["points"]))
    elif o["kind"] == "attack_units":
        order = ("attack_units", tuple(create_group[k] for k in o["members"]))
    else:
        raise ValueError(f"map {name!r}: unknown enemy order {o!r}")
    w, h = d["map_size"]
    return MapSpec(name, tuple(groups[0]), tuple(groups[1]), int(reg["limit"]), reg["a_race"], reg["b_race"],
                   reg["map_type"], name, int(w), int(h), order, PLAYABLE, tuple(map(float, d["playable"])),
                   tuple(sorted((k, tuple(sorted(v.items(), key=str))) for k, v in d["unit_data"].items())))


@lru_cache(maxsize=1)
def _maps() -> dict[str, MapSpec]:
    return {name: _spec_from_data(name, d) for name, d in map_data().items()}


MAP_NAMES = tuple(sorted(map_data()))
MAPS: dict[str, MapSpec] = _maps()


def get_map(name: str) -> MapSpec:
    """The map ``name``; raises ``ValueError`` listing the allowed names."""
    if name not in MAPS:
        raise ValueError(f"map_name {name!r} is unknown; allowed: {list(MAPS)}")
    return MAPS[name]
