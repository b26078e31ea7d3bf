"""SMAC's heuristic AI (``StarCraft2Env(heuristic_ai=True)``, SMAC's ``get_agent_action_heuristic``).

Per agent, ignoring the action it was given:

- a Medivac keeps healing its target while that ally lives and is hurt (``health != health_max``);
  otherwise it picks the closest living, hurt, non-Medivac ally (strictly closer wins, so ties go
  to the lowest id) and heals it; with none, it issues nothing (action 0);
- any other unit keeps attacking its target while it lives; otherwise it picks the closest living
  enemy (a marauder skips units whose type equals the ally Medivac id, as SMAC's code reads — in
  the game that id is never an enemy's, so marauders may pick enemy Medivacs) and attacks it; with
  none, it issues nothing (action 0);
- candidates farther than ``hypot(max_distance_x, max_distance_y)`` are never picked.

A dead agent gets action 0 and no order (SMAC also picks a target for it and writes that attack's
number into the actions, an order the game ignores for a dead unit).

The attack/heal is ordered whatever the distance (the unit walks to its target: this is not
limited to the shooting range of the action mask), and its action number is ``6 + target id``.
With ``heuristic_rest`` an attack/heal the mask does not allow becomes a move of ``move_amount``
towards the target along the larger axis of the offset (east/west when ``|dx| > |dy|``, else
north/south), action 2..5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .unit_records import UnitView

NORTH, SOUTH, EAST, WEST = 2, 3, 4, 5


@dataclass(frozen=True)
class HeuristicOrder:
    """What the heuristic orders one unit: ``kind`` "attack", "heal" or "move"; ``target`` the enemy
    (attack) or ally (heal) id; ``point`` the move's target point."""

    kind: str
    target: int | None = None
    point: tuple[float, float] | None = None


def _closest(unit: UnitView, candidates, max_dist: float) -> int:
    best, best_id = max_dist, -1
    for uid, other in candidates:
        d = math.hypot(other.pos.x - unit.pos.x, other.pos.y - unit.pos.y)
        if d < best:
            best, best_id = d, uid
    return best_id


def heuristic_order(unit: UnitView, target: int | None, agents: dict, enemies: dict, *, medivac_id: int,
                    marauder_id: int, max_dist: float, avail: list[int] | None, move_amount: float,
                    n_actions_no_attack: int = 6) -> tuple[int | None, HeuristicOrder | None, int]:
    """``(new target, order, action number)`` of one living agent (module docstring). ``avail``: the
    agent's action mask when ``heuristic_rest`` is on, else ``None``."""
    if unit.unit_type == medivac_id:
        t = agents.get(target) if target is not None else None
        if t is None or t.health == 0 or t.health == t.health_max:
            cands = [(i, a) for i, a in agents.items()
                     if a.unit_type != medivac_id and a.health != 0 and a.health != a.health_max]
            target = _closest(unit, cands, max_dist)
            if target == -1:
                return None, None, 0
        kind, target_unit = "heal", agents[target]
    else:
        t = enemies.get(target) if target is not None else None
        if t is None or t.health == 0:
            cands = [(i, e) for i, e in enemies.items()
                     if not (unit.unit_type == marauder_id and e.unit_type == medivac_id) and e.health > 0]
            target = _closest(unit, cands, max_dist)
            if target == -1:
                return None, None, 0
        kind, target_unit = "attack", enemies[target]
    action = target + n_actions_no_attack
    if avail is not None and avail[action] == 0:
        dx, dy = target_unit.pos.x - unit.pos.x, target_unit.pos.y - unit.pos.y
        x, y = unit.pos.x, unit.pos.y
        if abs(dx) > abs(dy):
            action, point = (EAST, (x + move_amount, y)) if dx > 0 else (WEST, (x - move_amount, y))
        else:
            action, point = (NORTH, (x, y + move_amount)) if dy > 0 else (SOUTH, (x, y - move_amount))
        return target, HeuristicOrder("move", point=point), action
    return target, HeuristicOrder(kind, target=target), action
