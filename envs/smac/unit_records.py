"""SMAC's unit records: ``env.agents[i]`` / ``env.enemies[j]`` as SMAC clients read them.

In SMAC these are the game's raw ``Unit`` protobufs of the last observation; clients read
``tag``, ``unit_type``, ``owner``, ``pos.x``, ``pos.y``, ``health``, ``health_max``, ``shield``,
``shield_max``, ``energy``, ``weapon_cooldown`` (game loops until the weapon is ready) and
``radius``. A :class:`UnitView` holds the same fields, copied from one game of an engine; a dead unit
keeps its last position with ``health == 0`` (as SMAC's ``update_units`` leaves it).

Unit-type ids follow the game's convention (SMAC's ``get_unit_type_id`` relies on it): enemies carry
the standard SC2 ids (marine 48, zealot 73, stalker 74, …); allies carry the maps' custom "_RL"
ids, consecutive in the map type's ally order (SMAC's ``_init_ally_unit_types``: e.g. MMM
marauder = min, marine = min + 1, medivac = min + 2). The game assigns the custom ids at load time
(the number depends on the game version); the simulator uses ``RL_UNIT_TYPE_BASE`` = 1970 as the
smallest, and SMAC code only uses differences from it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .maps import TYPE_ORDERS, MapSpec

RL_UNIT_TYPE_BASE = 1970
# pysc2.lib.units ids of the standard units of the SMAC maps (2s_vs_1sc's enemy: Zerg.SpineCrawler = 98).
STANDARD_TYPE_IDS = {"marine": 48, "marauder": 51, "medivac": 54, "zealot": 73, "stalker": 74, "colossus": 4,
                     "zergling": 105, "hydralisk": 107, "baneling": 9, "spine_crawler": 98}


@dataclass
class Point:
    x: float
    y: float


@dataclass
class UnitView:
    """One unit as SMAC's raw ``Unit`` (module docstring). ``owner`` 1 = allies, 2 = enemies."""

    tag: int
    unit_type: int
    owner: int
    pos: Point
    health: float
    health_max: float
    shield: float
    shield_max: float
    energy: float
    weapon_cooldown: float
    radius: float


def unit_type_ids(spec: MapSpec) -> tuple[list[int], list[int]]:
    """(ally ids in agent order, enemy ids in slot order) by the module docstring's convention."""
    order = TYPE_ORDERS[spec.map_type][0]
    allies = [RL_UNIT_TYPE_BASE + (order.index(n) if order else 0) for n in spec.units(0)]
    enemies = [STANDARD_TYPE_IDS[n] for n in spec.units(1)]
    return allies, enemies


@dataclass(frozen=True)
class EngineSnapshot:
    """One game's unit state (pos, hp, shield, energy, cooldown rows: lists, or numpy arrays) copied
    from an engine."""

    pos: list
    hp: list
    shield: list
    energy: list
    cooldown: list

    FIELDS = ("pos", "hp", "shield", "energy", "cooldown")

    @classmethod
    def of(cls, engine, game: int) -> EngineSnapshot:
        arrays = getattr(engine, "arrays", None)  # a CPU engine: copies of its numpy buffers (cheaper)
        if arrays is not None and engine.device.type == "cpu":
            return cls(*(arrays(name)[game].copy() for name in cls.FIELDS))
        return cls(engine.pos[game].tolist(), engine.hp[game].tolist(), engine.shield[game].tolist(),
                   engine.energy[game].tolist(), engine.cooldown[game].tolist())


def unit_views(engine, snapshot: EngineSnapshot, side: int, unit_types: list[int], tags: list[int],
               report_cooldown: bool = True) -> dict[int, UnitView]:
    """``{slot in side: UnitView}`` for ``side`` of ``engine`` (0 allies, owner 1), from ``snapshot``.
    ``unit_types``/``tags``: one per unit of both sides (allies first). The game does not report
    enemy weapon cooldowns (0), hence ``report_cooldown``."""
    sl = engine.side_slices[side]
    hp_max, shield_max, radius = (t.tolist() for t in (engine.hp_max, engine.shield_max, engine.radius))
    out = {}
    for i, u in enumerate(range(sl.start, sl.stop)):
        alive = snapshot.hp[u] > 0
        out[i] = UnitView(tag=int(tags[u]), unit_type=int(unit_types[u]), owner=side + 1,
                          pos=Point(float(snapshot.pos[u][0]), float(snapshot.pos[u][1])),
                          health=float(snapshot.hp[u]) if alive else 0.0, health_max=float(hp_max[u]),
                          shield=float(snapshot.shield[u]) if alive else 0.0, shield_max=float(shield_max[u]),
                          energy=float(snapshot.energy[u]),
                          weapon_cooldown=float(snapshot.cooldown[u]) if report_cooldown else 0.0,
                          radius=float(radius[u]))
    return out


def engine_tags(engine, game: int, episode: int) -> list[int]:
    """The units' tags: the game's for a real-game engine (``tags``), else ``1 + slot + U * episode``
    (new tags every episode, as the game gives respawned units new tags)."""
    tags = getattr(engine, "tags", None)
    if isinstance(tags, torch.Tensor):
        return [int(t) for t in tags[game].tolist()]
    U = engine.num_units
    return [1 + u + U * episode for u in range(U)]
