"""One SMACv2 draw as a ``MapSpec`` the engine plays (docs/design/smacv2.md).

Every drawn unit is its own creation "group" at its drawn point, allies first then enemies (SMACv2
creates the ally team, then the enemy team); ``maps.place_units`` spreads units created on one
point (the surrounded layout creates every ally at the centre) as the game does.  The terrain is
``32x32_flat``, the map file SMACv2's ``10gen_*`` scenarios load.

Agent order is SMACv2's: allies sorted by (unit-type id, x, y), where the 10gen maps' ``_RL`` unit
ids are in alphabetical order (``GEN_UNIT_ORDER``); enemies in creation order.  Type bits (allies
and enemies alike) follow the map's ``type_order`` (``get_unit_type_id``).

The scripted enemy (single-player) attack-moves, SC2's auto-acquisition on top
(``rules.scripted_orders``); its point starts at the allies' mean start point and is re-aimed at the
closest living agent every step (``rules.hunt_goals``, called by ``smacv2_env.hunt``): SMACv2's enemy
is the game's built-in AI (docs/design/smacv2.md §4).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .maps import MapSpec, place_units
from .smacv2_scenarios import GEN_UNIT_ORDER, GenMap

SPEC_CACHE = 8192  # draws whose placement and agent order are kept (a run draws one per episode and game)


@dataclass(frozen=True)
class DrawnSpec(MapSpec):
    """A ``MapSpec`` of one draw.  ``type_order``: the map's type-bit order."""

    type_order: tuple[str, ...] = ()

    @property
    def unit_type_bits(self) -> int:
        return len(self.type_order)

    def units(self, side: int, mirrored: bool = False) -> list[str]:
        created = self._created(side)
        return [created[k][0] for k in drawn_order(self, side)]

    def spawn_positions(self, side: int, mirrored: bool = False) -> np.ndarray:
        return _drawn_positions(self)[side][drawn_order(self, side)]

    def type_ids(self, side: int, as_ally: bool) -> list[int]:
        return [self.type_order.index(u) for u in self.units(side)]


@lru_cache(maxsize=SPEC_CACHE)
def _drawn_positions(spec: DrawnSpec) -> tuple[np.ndarray, np.ndarray]:
    """(ally, enemy) positions in creation order: every creation placed in order, allies first."""
    seq = [(name, spec.groups[s][gi][2]) for s in (0, 1) for name, gi in spec._created(s)]
    pos = place_units(seq, spec.pathing_grid())
    n0 = len(spec._created(0))
    return pos[:n0], pos[n0:]


@lru_cache(maxsize=SPEC_CACHE)
def _drawn_order(spec: DrawnSpec, side: int) -> tuple[int, ...]:
    created = spec._created(side)
    if side == 1:
        return tuple(range(len(created)))
    pos = _drawn_positions(spec)[0]
    keys = [(GEN_UNIT_ORDER.index(name), float(pos[k, 0]), float(pos[k, 1]), k) for k, (name, _) in enumerate(created)]
    return tuple(k[-1] for k in sorted(keys))


def drawn_order(spec: DrawnSpec, side: int) -> list[int]:
    """Creation indices of ``side``'s units in agent order (module docstring)."""
    return list(_drawn_order(spec, side))


def drawn_spec(gen: GenMap, ally: list[str], enemy: list[str], ally_points: np.ndarray,
               enemy_points: np.ndarray) -> DrawnSpec:
    """The spec of one draw: teams (creation order) and their creation points."""
    groups = tuple(tuple((u, 1, (float(p[0]), float(p[1]))) for u, p in zip(team, pts))
                   for team, pts in ((ally, ally_points), (enemy, enemy_points)))
    centre = tuple(np.asarray(ally_points, dtype=np.float64).mean(0))
    return DrawnSpec(gen.name, groups[0], groups[1], gen.limit, gen.race, gen.race, gen.map_type, gen.map_file,
                     32, 32, ("attack_point", (centre,)), type_order=gen.type_order)
