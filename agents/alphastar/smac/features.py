"""What the AlphaStar commander sees of one seat of a ``SMACBattle`` (docs/design/alphastar.md §1, §5),
and its action table.

The battle is read through its public views (``battle.units``, a read-only ``UnitTable``, and ``battle.seat_view(seat)``), so this
module does not import ``envs``. Everything is in the seat's frame (``SideView.positions``: seat 1
of a mirrored battle sees x mirrored) and batched over the ``E`` games.

Entities: one slot per unit of the map, the seat's own units first (agent order), then the
enemies; dead units are absent (``entity_mask``). ``ENTITY_FEATURES`` lists the columns.
Spatial planes ``[C, y, x]`` on a ``grid``×``grid`` grid of the 32×32 map (default 32: a cell is
one map unit; 16 or 8 for a cheaper network): ``SPATIAL_PLANES``; the location argument uses the
same grid (flat index y·grid + x, the order's point is the cell centre).
Scalars: the network's default scalar features (``AlphaStarConfig.default_scalar_features``).
Masks (docs/design/alphastar.md §5): available action types; selectable units per action type (own alive units; armed
ones for attack_unit, Medivacs for heal_unit); targetable units per action type (alive enemies that
some own unit can hit for attack_unit; damaged living bio allies that SMAC lets a Medivac heal for
heal_unit); locations = walkable cells. An action type whose argument has no legal choice is
unavailable, so the heads never face an empty choice.
"""

from __future__ import annotations

import torch
from selfplay.envs.smac import get_map

from ..config import ActionTypeSpec, AlphaStarConfig
from .executor import ATTACK, HEAL, IDLE
from .executor import ATTACK_MOVE as ORDER_ATTACK_MOVE
from .executor import MOVE as ORDER_MOVE
from .executor import STOP as ORDER_STOP

# Every unit type of the SMAC maps (docs/design/smac.md §8; 2s_vs_1sc's spine crawler last), the commander's unit-type ids.
UNIT_TYPES = ("marine", "marauder", "medivac", "stalker", "zealot", "colossus", "zergling", "hydralisk", "baneling",
              "spine_crawler")
HEALER_TYPES = (UNIT_TYPES.index("medivac"),)
ARMED_TYPES = tuple(i for i in range(len(UNIT_TYPES)) if i not in HEALER_TYPES)

# The commander's action types (docs/design/alphastar.md §5), with the unit types able to carry each out.
NO_OP, STOP, MOVE, ATTACK_UNIT, ATTACK_MOVE, HEAL_UNIT = range(6)
COMMANDER_ACTION_TYPES: tuple[ActionTypeSpec, ...] = (
    ActionTypeSpec("no_op"),
    ActionTypeSpec("stop", queued=True, selected_units=True),
    ActionTypeSpec("move", queued=True, selected_units=True, location=True),
    ActionTypeSpec("attack_unit", queued=True, selected_units=True, target_unit=True, unit_types=ARMED_TYPES),
    ActionTypeSpec("attack_move", queued=True, selected_units=True, location=True, unit_types=ARMED_TYPES),
    ActionTypeSpec("heal_unit", queued=True, selected_units=True, target_unit=True, unit_types=HEALER_TYPES),
)

# Entity columns: (name, width). Own-only columns are 0 for enemies (SC2 hides enemy cooldowns/orders).
ENTITY_FEATURES = (
    ("unit_type", len(UNIT_TYPES)),
    ("own", 1),
    ("enemy", 1),
    ("slot", 1),  # index of the unit in its side (agent order) / units in the larger side
    ("health_ratio", 1),
    ("shield_ratio", 1),
    ("energy_ratio", 1),  # energy / 200
    ("x", 1),  # / 32
    ("y", 1),
    ("weapon_cooldown", 1),  # own: loops left / weapon cycle
    ("order", 6),  # own: executor order one-hot (idle, stop, move, attack, attack_move, heal)
    ("order_target", 2),  # own: (dx, dy) to the current order's target unit or point / 9, in [-1, 1]
    ("queued_orders", 1),  # own: waiting orders / queue depth
    ("selected_last", 1),  # own: picked by the last commander action
    ("targeted_last", 1),  # the last commander action's target
    ("targeted_by_own", 1),  # own units whose current order targets this unit / own units
    ("nearest_opponent", 1),  # distance to the closest living opposing unit / 9 (≤ 1)
    ("threatened", 1),  # within an opposing armed unit's weapon range + 1
    ("in_shoot_range", 1),  # own: some enemy within shoot range 6; enemy: within 6 of some own unit
    ("weapon_range", 1),  # / 10
    ("speed", 1),  # map units per second / 4
)
ENTITY_FEATURE_SIZE = sum(w for _, w in ENTITY_FEATURES)
SPATIAL_PLANES = ("own_units", "enemy_units", "own_health", "enemy_health", "walkable", "terrain_height",
                  "own_order_goals", "last_location")
MAP_SIZE = 32  # every SMAC map is 32×32 map units (docs/design/smac.md §7)
GRID = 32  # default grid side: one cell per map unit (16 or 8: cells of 2×2 or 4×4 map units)
SIGHT_RANGE = 9.0
SHOOT_RANGE = 6.0
MAX_ENERGY = 200.0


def _offsets() -> dict[str, int]:
    out, o = {}, 0
    for name, width in ENTITY_FEATURES:
        out[name] = o
        o += width
    return out


COLUMN = _offsets()


def commander_config(battle, grid: int = GRID, **overrides) -> AlphaStarConfig:
    """An ``AlphaStarConfig`` whose input and action sizes fit ``battle``'s map (both seats) on a
    ``grid``×``grid`` spatial/location grid; ``overrides`` set any other size (e.g. a smaller network)."""
    n0, n1 = battle.units.n_side
    sizes = dict(
        entity_feature_size=ENTITY_FEATURE_SIZE,
        max_entities=n0 + n1,
        num_unit_types=len(UNIT_TYPES),
        spatial_channels=len(SPATIAL_PLANES),
        spatial_size=grid,
        location_resolution=grid,
        max_selected_units=max(n0, n1),
        action_types=COMMANDER_ACTION_TYPES,
    )
    sizes.update(overrides)
    return AlphaStarConfig(**sizes)


class SideFeatures:
    """Static facts of one seat (unit types, who can hit whom, terrain) and the feature builder."""

    def __init__(self, battle, seat: int, grid: int = GRID):
        n_seats = getattr(battle, "n_seats", 2)
        if seat not in range(n_seats):
            raise ValueError(f"seat must be in range({n_seats}) for this battle (two_player="
                             f"{getattr(battle, 'two_player', True)}), got {seat!r}")
        eng = battle.units
        spec = get_map(battle.map_name)
        if (spec.map_x, spec.map_y) != (MAP_SIZE, MAP_SIZE):
            raise ValueError(f"the commander needs a {MAP_SIZE}x{MAP_SIZE} map, got {spec.map_x}x{spec.map_y}")
        if grid not in (8, 16, 32):
            raise ValueError(f"grid must be 8, 16 or 32 (cells of 4, 2 or 1 map units), got {grid!r}")
        self.grid = grid
        self.cell_size = MAP_SIZE / grid
        unknown = sorted(set(eng.unit_names) - set(UNIT_TYPES))
        if unknown:
            raise ValueError(f"unit types {unknown} are not in UNIT_TYPES {UNIT_TYPES}")
        self.battle, self.table, self.seat = battle, eng, seat
        self.view = battle.seat_view(seat)
        self.own, self.enemy = eng.side_slices[seat], eng.side_slices[1 - seat]
        self.n, self.m = eng.n_side[seat], eng.n_side[1 - seat]
        self.N = self.n + self.m
        dev = self.device = eng.device
        order = list(range(eng.num_units))
        self.units = torch.tensor(order[self.own] + order[self.enemy], device=dev)  # entity slot → engine unit
        self.unit_type = torch.tensor([UNIT_TYPES.index(eng.unit_names[u]) for u in self.units.tolist()], device=dev)
        self.is_own = torch.arange(self.N, device=dev) < self.n
        index = torch.arange(self.N, device=dev)
        self.slot = torch.where(self.is_own, index, index - self.n).float() / max(self.n, self.m)
        own = self.own
        self.heals = eng.heals[own]
        self.armed = eng.armed[own] & ~self.heals
        self.is_bio = eng.is_bio[own]
        hits_air = eng.hits_air[self.units]
        air = eng.is_air[self.units]
        armed_all = eng.armed[self.units] & ~eng.heals[self.units]
        # can_hit_all[i, j]: entity i can attack entity j (opposite sides, armed, air only if anti-air)
        opposite = self.is_own[:, None] != self.is_own[None, :]
        self.can_hit_all = opposite & armed_all[:, None] & (~air[None, :] | hits_air[:, None])
        self.can_hit = self.can_hit_all[: self.n, self.n:]  # (n, m) own → enemy
        self.cycle = eng.cooldown_loops[own].clamp(min=1.0)
        self.weapon_range = eng.weapon_range[self.units]
        self.radius = eng.radius[self.units]
        self.speed = eng.speed[self.units] * 16.0
        # grid cells sample the map at their centres; [y, x] (flat index y·grid + x)
        centre = ((torch.arange(grid, device=dev) + 0.5) * self.cell_size).long()
        walk = self.view.pathing > 0  # [x, y], mirrored for a mirrored seat
        self.walkable = walk[centre][:, centre].T.contiguous()
        self.height = self.view.terrain_height[centre][:, centre].T.contiguous()
        self.heal_column_ok = torch.arange(self.n, device=dev) < self.m  # SMAC heals ally a via column 6+a

    # ------------------------------------------------------------------ state
    def positions(self) -> torch.Tensor:
        """(E, N, 2) entity positions in the seat's frame."""
        pa, pe = self.view.positions()
        return torch.cat([pa, pe], 1)

    def alive(self) -> torch.Tensor:
        return self.table.alive[:, self.units]

    def health(self) -> tuple[torch.Tensor, torch.Tensor]:
        eng, u = self.table, self.units
        hp = eng.hp[:, u] / eng.hp_max[u]
        smax = eng.shield_max[u]
        return hp, torch.where(smax > 0, eng.shield[:, u] / smax.clamp(min=1e-6), 0.0)

    def threatened(self, pos: torch.Tensor | None = None, alive: torch.Tensor | None = None) -> torch.Tensor:
        """(E, N) bool: within weapon range + radii + 1 of a living opposing unit that can hit it."""
        pos = self.positions() if pos is None else pos
        alive = self.alive() if alive is None else alive
        dist = torch.cdist(pos, pos)
        reach = self.weapon_range[None, :] + self.radius[None, :] + self.radius[:, None] + 1.0  # [victim, attacker]
        return (self.can_hit_all.T[None] & alive[:, None, :] & (dist <= reach[None])).any(-1)

    def cooldown(self) -> torch.Tensor:
        """(E, n) own weapon cooldown as the share of the weapon cycle left, in [0, 1]."""
        return (self.table.cooldown[:, self.own] / self.cycle).clamp(0, 1) * self.armed

    # ------------------------------------------------------------------ masks
    def masks(self) -> dict[str, torch.Tensor]:
        """available [E, A], selectable [E, A, N], targetable [E, A, N], location [E, R, R] (module doc)."""
        eng = self.table
        E, n, N = eng.num_envs, self.n, self.N
        alive = self.alive()
        own_alive = alive & self.is_own
        enemy_alive = alive & ~self.is_own
        A = len(COMMANDER_ACTION_TYPES)
        selectable = own_alive[:, None, :].expand(E, A, N).clone()
        armed = torch.cat([self.armed, torch.zeros(self.m, dtype=torch.bool, device=self.device)])
        healer = torch.cat([self.heals, torch.zeros(self.m, dtype=torch.bool, device=self.device)])
        selectable[:, ATTACK_UNIT] = own_alive & armed
        selectable[:, ATTACK_MOVE] = own_alive & armed
        selectable[:, HEAL_UNIT] = own_alive & healer
        targetable = alive[:, None, :].expand(E, A, N).clone()
        shooters = own_alive & armed  # (E, N)
        targetable[:, ATTACK_UNIT] = enemy_alive & (shooters.float() @ self.can_hit_all.float() > 0)
        hp, _ = self.health()
        damaged = torch.cat([alive[:, :n] & self.is_bio & ~self.heals & self.heal_column_ok & (hp[:, :n] < 1.0),
                             torch.zeros(E, self.m, dtype=torch.bool, device=self.device)], 1)
        targetable[:, HEAL_UNIT] = damaged
        available = torch.zeros(E, A, dtype=torch.bool, device=self.device)
        available[:, NO_OP] = True
        any_own = own_alive.any(-1)
        available[:, STOP] = any_own
        available[:, MOVE] = any_own
        available[:, ATTACK_MOVE] = selectable[:, ATTACK_MOVE].any(-1)
        available[:, ATTACK_UNIT] = selectable[:, ATTACK_UNIT].any(-1) & targetable[:, ATTACK_UNIT].any(-1)
        available[:, HEAL_UNIT] = selectable[:, HEAL_UNIT].any(-1) & targetable[:, HEAL_UNIT].any(-1)
        location = self.walkable[None].expand(E, self.grid, self.grid)
        return {"available": available, "selectable": selectable, "targetable": targetable, "location": location}

    # --------------------------------------------------------------- features
    def entities(self, executor, last: dict, smac_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(entities [E, N, F], entity_mask [E, N]); ``last`` holds the last commander action."""
        eng = self.table
        E, n, N = eng.num_envs, self.n, self.N
        dev = self.device
        pos = self.positions()
        alive = self.alive()
        hp, shield = self.health()
        f = torch.zeros(E, N, ENTITY_FEATURE_SIZE, device=dev)
        c = COLUMN
        f[..., c["unit_type"]:c["unit_type"] + len(UNIT_TYPES)] = torch.nn.functional.one_hot(
            self.unit_type, len(UNIT_TYPES)).float()
        f[..., c["own"]] = self.is_own.float()
        f[..., c["enemy"]] = (~self.is_own).float()
        f[..., c["slot"]] = self.slot
        f[..., c["health_ratio"]] = hp
        f[..., c["shield_ratio"]] = shield
        f[..., c["energy_ratio"]] = eng.energy[:, self.units] / MAX_ENERGY
        f[..., c["x"]] = pos[..., 0] / MAP_SIZE
        f[..., c["y"]] = pos[..., 1] / MAP_SIZE
        f[..., :n, c["weapon_cooldown"]] = self.cooldown()
        f[..., :n, c["order"]:c["order"] + 6] = torch.nn.functional.one_hot(executor.current, 6).float()
        kind, tgt = executor.current, executor.target[..., 0]
        target_slot = torch.where(kind == ATTACK, tgt + n, tgt).clamp(max=N - 1)
        target_pos = pos.gather(1, target_slot[..., None].expand(E, n, 2))
        point = torch.where(((kind == ATTACK) | (kind == HEAL))[..., None], target_pos, executor.goal[..., 0, :])
        has_point = (kind != IDLE) & (kind != ORDER_STOP)
        rel = ((point - pos[:, :n]) / SIGHT_RANGE).clamp(-1, 1) * has_point[..., None]
        f[..., :n, c["order_target"]:c["order_target"] + 2] = rel
        f[..., :n, c["queued_orders"]] = executor.queued_count.float() / max(executor.slots - 1, 1)
        f[..., c["selected_last"]] = last["selected"].float()
        has_target = last["target"] >= 0
        f[..., c["targeted_last"]] = (torch.nn.functional.one_hot(last["target"].clamp(min=0), N).float()
                                      * has_target[:, None])
        # own units' current attack / heal targets, as entity slots
        on_unit = ((kind == ATTACK) | (kind == HEAL)) & alive[:, :n]
        counts = torch.zeros(E, N, device=dev).scatter_add_(1, target_slot, on_unit.float())
        f[..., c["targeted_by_own"]] = counts / n
        dist = torch.cdist(pos, pos)
        opposite = (self.is_own[:, None] != self.is_own[None, :])[None] & alive[:, None, :]
        near = torch.where(opposite, dist, torch.inf).min(-1).values
        f[..., c["nearest_opponent"]] = (near / SIGHT_RANGE).clamp(max=1.0)
        f[..., c["threatened"]] = self.threatened(pos, alive).float()
        shoot = opposite & (dist <= SHOOT_RANGE)
        f[..., c["in_shoot_range"]] = shoot.any(-1).float()
        f[..., c["weapon_range"]] = self.weapon_range / 10.0
        f[..., c["speed"]] = self.speed / 4.0
        present = alive | ~alive.any(-1, keepdim=True)  # a finished game keeps its slots (no empty set)
        return f * alive[..., None], present

    def cells(self) -> torch.Tensor:
        """(E, N, 2) integer grid cells (x, y) of the entities."""
        return self.to_cells(self.positions())

    def to_cells(self, points: torch.Tensor) -> torch.Tensor:
        """Grid cells (x, y) of map points (..., 2)."""
        return (points / self.cell_size).floor().long().clamp(0, self.grid - 1)

    def cell_centres(self, flat: torch.Tensor) -> torch.Tensor:
        """Map points (..., 2) of the centres of flat cell indices y·grid + x."""
        g = self.grid
        return torch.stack([(flat % g).float() + 0.5, (flat // g).float() + 0.5], -1) * self.cell_size

    def spatial(self, executor, last: dict) -> torch.Tensor:
        """(E, C, R, R) planes, ``[y, x]`` (flat index y·R + x, as the location head)."""
        E = self.table.num_envs
        alive = self.alive().float()
        hp, shield = self.health()
        health = (hp + shield) * alive
        cells = self.cells()
        g = self.grid
        flat = cells[..., 1] * g + cells[..., 0]  # (E, N)
        planes = torch.zeros(E, len(SPATIAL_PLANES), g * g, device=self.device)
        own = self.is_own.float()[None]
        planes[:, 0].scatter_add_(1, flat, alive * own)
        planes[:, 1].scatter_add_(1, flat, alive * (1 - own))
        planes[:, 2].scatter_add_(1, flat, health * own)
        planes[:, 3].scatter_add_(1, flat, health * (1 - own))
        planes[:, 4] = self.walkable.flatten().float()
        planes[:, 5] = self.height.flatten()
        goal = self.to_cells(executor.goal[..., 0, :])
        has_goal = ((executor.current == ORDER_MOVE) | (executor.current == ORDER_ATTACK_MOVE)).float() * alive[:, : self.n]
        planes[:, 6].scatter_add_(1, goal[..., 1] * g + goal[..., 0], has_goal)
        loc = last["location"]
        planes[:, 7].scatter_add_(1, loc.clamp(min=0)[:, None], (loc >= 0).float()[:, None])
        return planes.view(E, len(SPATIAL_PLANES), g, g)

    def scalars(self, last: dict, available: torch.Tensor, num_delays: int) -> tuple[dict, dict]:
        """(scalars, opponent_scalars), dicts of [E, size] for the default scalar features."""
        E = self.table.num_envs
        T = len(UNIT_TYPES)
        A = len(COMMANDER_ACTION_TYPES)
        alive = self.alive().float()
        onehot = torch.nn.functional.one_hot(self.unit_type, T).float()  # (N, T)
        own_counts = (alive * self.is_own)[..., None].mul(onehot).sum(1) / self.n
        enemy_counts = (alive * ~self.is_own)[..., None].mul(onehot).sum(1) / self.m
        time = (self.battle.episode_steps.float() / self.battle.episode_limit)[:, None].to(self.device)

        def hot(values: torch.Tensor, size: int) -> torch.Tensor:
            return torch.nn.functional.one_hot(values.clamp(min=0), size).float() * (values >= 0)[:, None]

        zeros = lambda k: torch.zeros(E, k, device=self.device)  # noqa: E731
        mine = {
            "game_time": time,
            "own_unit_counts": own_counts,
            "enemy_unit_counts": enemy_counts,
            "last_action_type": hot(last["action_type"], A),
            "last_delay": hot(last["delay"], num_delays),
            "last_queued": hot(last["queued"], 2),
            "available_action_types": available.float(),
            "own_unit_types_present": (own_counts > 0).float(),
        }
        theirs = {
            "game_time": time,
            "own_unit_counts": enemy_counts,
            "enemy_unit_counts": own_counts,
            "last_action_type": zeros(A),
            "last_delay": zeros(num_delays),
            "last_queued": zeros(2),
            "available_action_types": zeros(A),
            "own_unit_types_present": (enemy_counts > 0).float(),
        }
        return mine, theirs
