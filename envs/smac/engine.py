"""The SMAC battle engine: the state of ``num_envs`` games on one map, stepped by the compiled rules.

Units of both sides live in one axis of size ``U = n_side0 + n_side1`` (side 0 first, in agent
order).  One environment step is ``STEP_MUL`` = 8 game loops, then the separation of overlapping
units.  The rules themselves (orders, the scripted AI, firing, damage, healing, movement,
regeneration, deaths) are written once in ``rules.py`` and compiled by ``build.py`` for the CPU
(``device="cpu"``: numba, one game after another) or a GPU (``device="cuda"``: numba-cuda, one game
per thread); both give the same games bit for bit (``docs/design/smac-engine.md``).

The state lives in one buffer per field (numpy on the CPU, a numba device array on a GPU); the
engine's attributes ``pos``, ``hp``, ... are torch views of those buffers on the engine's device,
so readers (``UnitTable``, features, the AlphaStar commander, tests) read and edit them as tensors:
assigning to a field copies into its buffer, and the rules work on the buffers in place.

The scripted side (single-player mode: player 2) follows the map's trigger (``MapSpec.enemy_order``,
re-issued at every reset): attack-move to a point (a random point on a segment for 2m_vs_1z, drawn
per game at each reset), attack the ally group (2c_vs_64zg), or no order (2s_vs_1sc's spine
crawler); SC2's auto-acquisition on top (``rules.scripted_orders``).

Randomness: the cooldown jitter (``units.COOLDOWN_JITTER_LOW`` .. ``HIGH`` loops per shot) and the
trigger points come from the engine's own CPU torch generator (seeded by ``seed``), on either
device, so a seed gives the same games on the CPU and on a GPU.
"""

from __future__ import annotations

import numpy as np
import torch

from . import build
from .maps import MapSpec, agent_order
from .pathing import PathTable
from .records import STATE_FIELDS, BattleFlags, MapTables, UnitState, UnitStatic
from .rules import AMOVE, ATTACK, HEAL, MOVE, NO_ORDER, ORDER_AMOVE, ORDER_ATTACK_GROUP, STOP
from .units import (
    BIO,
    COOLDOWN_JITTER_HIGH,
    COOLDOWN_JITTER_LOW,
    LOOPS_PER_SECOND,
    MOVE_AMOUNT,
    STEP_MUL,
    UNIT_STATS,
    ZERG_REGEN_PER_S,
)

__all__ = ["BattleEngine", "STOP", "MOVE", "ATTACK", "HEAL", "AMOVE", "NO_ORDER", "ORDER_AMOVE",
           "ORDER_ATTACK_GROUP", "MOVE_AMOUNT", "MOVE_DIRECTIONS", "STEP_MUL", "DEVICES"]

# Collision flags (``Collide`` in the map files' UnitData.xml).
COLLIDE_GROUND, COLLIDE_COLOSSUS, COLLIDE_FLYING = 1, 2, 4

JITTER_POOL = 4096  # cooldown jitters drawn at once for small batches (draw_jitter)
# Move actions 2..5: north (+y), south, east (+x), west (spec §2).
MOVE_DIRECTIONS = ((0.0, 1.0), (0.0, -1.0), (1.0, 0.0), (-1.0, 0.0))
DEVICES = ("cpu", "cuda")


class _StateArray:
    """A state field kept in one buffer (numpy or a numba device array): reading it gives the torch
    view of the buffer, assigning to it copies into the buffer (a new shape allocates a new one)."""

    def __set_name__(self, owner, name: str) -> None:
        self.array_name, self.tensor_name = f"_buf_{name}", f"_t_{name}"

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return obj.__dict__[self.tensor_name]

    def __set__(self, obj, value) -> None:
        value = torch.as_tensor(value)
        view = obj.__dict__.get(self.tensor_name)
        if view is None or view.shape != value.shape:
            buffer, view = obj._new_buffer(tuple(value.shape), value.dtype)
            obj.__dict__[self.array_name], obj.__dict__[self.tensor_name] = buffer, view
            obj.__dict__.pop("_unit_state", None)  # the record held the old buffer
            view.copy_(value)
        elif value.data_ptr() != view.data_ptr():
            view.copy_(value)


class BattleEngine:
    """State of ``num_envs`` SMAC battles on one map (module docstring).

    Tensors (E = num_envs, U = units of both sides): ``pos`` (E, U, 2), ``hp``, ``shield``,
    ``energy``, ``cooldown`` (loops until the weapon is ready), ``order``, ``target``, ``goal``
    (E, U, 2), ``since_damage`` (loops since the last damage taken), ``trigger_goal`` (E, U, 2: the
    trigger's attack-move point), ``last_attacker`` (E, U: who last fired at the unit, -1 none),
    ``detonate`` (E, U: a baneling killed in the last loop, whose blast goes off in the next),
    ``cur_speed`` (E, U: the speed of accelerating units), ``vel`` (E, U, 2: the last loop's
    displacement, which collision avoidance reads), the attack under way (``shot_target``,
    ``shot_wind``, ``shot_in``, ``shot_hits``: ``records.UnitState``), a scripted unit's acquisition leash
    (``leash``, ``leash_origin``: ``rules.scripted_orders``).  ``mirror_spawns``: side 1 starts at the
    mirror image of side 0's placement rule (``MapSpec.spawn_positions(1, mirrored=True)``), for a
    mirrored seat in two-player mode.  ``device``: "cpu" or "cuda" (a torch device of either type)."""

    def __init__(self, spec: MapSpec, num_envs: int, device: str | torch.device = "cpu", seed: int | None = None,
                 scripted_sides: tuple[int, ...] = (1,), mirror_spawns: bool = False):
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        for s in scripted_sides:
            if s not in (0, 1):
                raise ValueError(f"scripted_sides must contain only 0 or 1, got {scripted_sides!r}")
        self.device = torch.device(device)
        if self.device.type not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES} (a torch device of that type), got {device!r}")
        self.spec = spec
        self.num_envs = num_envs
        self.scripted_sides = tuple(scripted_sides)
        self.generator = torch.Generator()  # on the CPU for every device: the same games everywhere
        self.generator.manual_seed(int(seed) if seed is not None else int(np.random.SeedSequence().entropy % (2**63)))
        self.mirror_spawns = bool(mirror_spawns)
        names = spec.units(0) + spec.units(1, self.mirror_spawns)
        self.n_side = (len(spec.units(0)), len(spec.units(1)))
        self.num_units = len(names)
        self.side_slices = (slice(0, self.n_side[0]), slice(self.n_side[0], self.num_units))
        self.unit_names = names
        self._unit_tables([UNIT_STATS[n] for n in names])
        self._terrain()
        self._trigger_order()
        self.static, self.maps, self.flags = self._records()
        self.build = build.GpuBuild() if self.device.type == "cuda" else build.CpuBuild()
        self.use_build(self.build)
        self._allocate_state()
        self.reset()

    # ------------------------------------------------------------ construction
    def _tensor(self, values, dtype=torch.float32) -> torch.Tensor:
        return torch.tensor(values, dtype=dtype, device=self.device)

    def _unit_tables(self, stats) -> None:
        """Per-unit constants (U,) from the unit table, and the pair tables (U, U)."""
        f = self._tensor

        def b(values):
            return self._tensor(values, torch.bool)

        n0, n1 = self.n_side
        self.side = self._tensor([0] * n0 + [1] * n1, torch.long)
        self.hp_max = f([s.hp for s in stats])
        self.shield_max = f([s.shield for s in stats])
        self.armor = f([s.armor for s in stats])
        self.attributes = self._tensor([s.attributes for s in stats], torch.long)
        self.speed = f([s.speed_per_loop for s in stats])
        self.radius = f([s.radius for s in stats])
        self.weapon_range = f([s.weapon_range for s in stats])
        self.cooldown_loops = f([s.cooldown_loops for s in stats])
        self.scan_range = f([s.scan_range for s in stats])
        self.accel = f([s.acceleration / LOOPS_PER_SECOND**2 for s in stats])  # distance per loop^2
        self.any_accel = bool((self.accel > 0).any())
        self.max_cooldown = f([s.max_cooldown for s in stats])
        self.hits = self._tensor([s.hits for s in stats], torch.long)
        self.is_air = b([s.air for s in stats])
        self.hits_air = b([s.hits_air for s in stats])
        self.heals = b([s.heals for s in stats])
        self.is_line = b([s.splash == "line" for s in stats])
        self.explodes = b([s.splash == "explode" for s in stats])
        self.splashes = self.is_line | self.explodes
        self.splash_radius = f([s.splash_radius for s in stats])
        self.damage_point = f([s.damage_point_s * LOOPS_PER_SECOND for s in stats])
        self.hit_delay = f([s.hit_delay_s * LOOPS_PER_SECOND for s in stats])
        self.hit_gap = f([s.hit_gap_s * LOOPS_PER_SECOND for s in stats])
        self.missile_v0 = f([s.missile_start_speed / LOOPS_PER_SECOND for s in stats])
        self.missile_accel = f([s.missile_accel / LOOPS_PER_SECOND**2 for s in stats])
        self.missile_vmax = f([s.missile_max_speed / LOOPS_PER_SECOND for s in stats])
        self.is_zerg = b([s.race == "Z" for s in stats])
        self.zerg_regen = torch.where(self.is_zerg, ZERG_REGEN_PER_S / LOOPS_PER_SECOND, 0.0)
        self.is_bio = (self.attributes & BIO) != 0
        self.cliff_walker = b([n == "colossus" for n in self.unit_names])
        # Collision layers, the map files' ``Collide`` flags of the ``_RL`` units: small ground units
        # Ground, Medivac Flying, colossus Colossus and Flying (and Structure); two units collide when
        # their flags share one.  The immobile spine crawler (a structure) takes no part.
        layer = torch.where(self.is_air, COLLIDE_FLYING,
                            torch.where(self.cliff_walker, COLLIDE_COLOSSUS | COLLIDE_FLYING, COLLIDE_GROUND))
        self.collide_mask = torch.where(self.speed > 0, layer, 0).to(torch.long)
        self.collides = self.collide_mask != 0
        pairs = (self.collide_mask[:, None] & self.collide_mask[None, :]) != 0
        self.has_colliders = bool((pairs & ~torch.eye(len(stats), dtype=torch.bool, device=pairs.device)).any())
        # Raw damage per hit of unit i on unit j, bonus included (U, U).
        dmg = f([s.damage for s in stats])
        bonus = f([s.bonus for s in stats])
        bonus_vs = self._tensor([s.bonus_vs for s in stats], torch.long)
        has_bonus = (self.attributes[None, :] & bonus_vs[:, None]) != 0
        self.raw_damage = dmg[:, None] + bonus[:, None] * has_bonus
        self.armed = dmg > 0
        # Who may target whom with an attack: opposite side, and air only for anti-air weapons.
        opponent = self.side[:, None] != self.side[None, :]
        self.can_target = opponent & (~self.is_air[None, :] | self.hits_air[:, None])

    def _terrain(self) -> None:
        """Walkability (flat, cell ``x * MAP_SIZE + y``), the path tables and the spawn points."""
        spec, dev = self.spec, self.device
        walk = spec.pathing_grid()
        self.walkable = torch.tensor(walk.reshape(-1), device=dev)
        self.cliff_walkable = torch.tensor((walk | spec.cliff_grid()).reshape(-1), device=dev)
        self.paths = PathTable(walk, dev)
        self.cliff_paths = PathTable(walk | spec.cliff_grid(), dev) if bool(self.cliff_walker.any()) else self.paths
        spawn = np.concatenate([spec.spawn_positions(0), spec.spawn_positions(1, self.mirror_spawns)])
        self.spawn = torch.tensor(spawn, dtype=torch.float32, device=dev)

    def _trigger_order(self) -> None:
        """The scripted side's trigger order (module docstring); side 0, when scripted, attack-moves to
        the other side's spawn centre (the maps give player 1 no order)."""
        spec, dev = self.spec, self.device
        kind, self.order_points = NO_ORDER, None
        order = spec.enemy_order
        if order is None and spec.terrain in ("open", "line"):  # hand-made specs
            order = ("attack_point", (tuple(spec.spawn_centres(0)),))
        if order is not None and order[0] in ("attack_point", "attack_point_between"):
            kind, self.order_points = ORDER_AMOVE, torch.tensor(order[1], dtype=torch.float32)
        self.group_target = torch.zeros(self.num_units, dtype=torch.bool, device=dev)
        if order is not None and order[0] == "attack_units":
            kind = ORDER_ATTACK_GROUP
            created = spec._created(0)
            members = [created[k][1] in order[1] for k in agent_order(spec, 0)]
            self.group_target[: self.n_side[0]] = torch.tensor(members, device=dev)
        self.any_group_order = kind == ORDER_ATTACK_GROUP
        self.trigger_kind = torch.tensor([kind if s == 1 else ORDER_AMOVE for s in self.side.tolist()], device=dev)
        self.side0_goal = torch.tensor(spec.spawn_centres(1), dtype=torch.float32)  # scripted side 0

    def _records(self) -> tuple[UnitStatic, MapTables, BattleFlags]:
        """The per-unit constants (every game the same rows), map tables and switches as the rules'
        records (on the device)."""
        def np_(t):
            return t.detach().cpu().numpy()

        def per_game(a: np.ndarray) -> np.ndarray:
            return np.repeat(a[None], self.num_envs, axis=0)

        f32 = ("hp_max", "shield_max", "armor", "speed", "radius", "weapon_range", "cooldown_loops", "scan_range",
               "accel", "splash_radius", "zerg_regen", "damage_point", "hit_delay", "hit_gap", "missile_v0",
               "missile_accel", "missile_vmax")
        flags_ = ("is_air", "hits_air", "heals", "is_line", "explodes", "is_bio", "cliff_walker", "armed", "collides",
                  "group_target", "splashes")
        static = UnitStatic(
            **{name: np_(getattr(self, name)).astype(np.float32) for name in f32},
            **{name: np_(getattr(self, name)).astype(np.bool_) for name in flags_},
            **{name: np_(getattr(self, name)).astype(np.int64)
               for name in ("side", "hits", "trigger_kind", "collide_mask")},
            raw_damage=np_(self.raw_damage).astype(np.float32), can_target=np_(self.can_target).astype(np.bool_))
        static = UnitStatic(*(per_game(a) for a in static))
        paths, cliff = self.paths, self.cliff_paths
        empty = np.zeros(1, np.int8)
        maps = MapTables(np_(self.walkable), np_(self.cliff_walkable), empty if paths.convex else np_(paths.hop),
                         empty if cliff.convex else np_(cliff.hop))
        heals = np_(self.heals)
        n0 = self.n_side[0]
        flags = BattleFlags(
            n0=n0, scripted0=0 in self.scripted_sides, scripted1=1 in self.scripted_sides, any_accel=self.any_accel,
            group_order=self.any_group_order, route=not (paths.convex and cliff.convex), paths_convex=paths.convex,
            cliff_convex=cliff.convex, cliff_own_table=cliff is not paths, healer0=heals[:n0].any(),
            healer1=heals[n0:].any(), colliders=self.has_colliders)
        flags = BattleFlags(*(np.int64(x) for x in flags))
        if self.device.type == "cuda":
            from numba import cuda

            static = UnitStatic(*(cuda.to_device(a) for a in static))
            maps = MapTables(*(cuda.to_device(a) for a in maps))
        return static, maps, flags

    def _allocate_state(self) -> None:
        E, U, dev = self.num_envs, self.num_units, self.device
        for name in ("hp", "shield", "energy", "cooldown", "since_damage", "cur_speed", "shot_wind", "shot_in"):
            setattr(self, name, torch.zeros(E, U, device=dev))
        self.shot_target = torch.zeros(E, U, dtype=torch.long, device=dev)
        self.shot_hits = torch.zeros(E, U, dtype=torch.long, device=dev)
        self.leash = torch.zeros(E, U, dtype=torch.long, device=dev)
        for name in ("pos", "goal", "trigger_goal", "vel", "leash_origin"):
            setattr(self, name, torch.zeros(E, U, 2, device=dev))
        self.order = torch.zeros(E, U, dtype=torch.long, device=dev)
        self.target = torch.zeros(E, U, dtype=torch.long, device=dev)
        self.last_attacker = torch.full((E, U), -1, dtype=torch.long, device=dev)
        self.detonate = torch.zeros(E, U, dtype=torch.bool, device=dev)

    def _new_buffer(self, shape: tuple, dtype: torch.dtype):
        """(buffer, torch view) of a new state buffer on the engine's device."""
        np_dtype = torch.empty(0, dtype=dtype).numpy().dtype
        if self.device.type == "cuda":
            from numba import cuda

            buffer = cuda.device_array(shape, np_dtype)
            return buffer, torch.as_tensor(buffer, device=self.device)
        buffer = np.zeros(shape, np_dtype)
        return buffer, torch.from_numpy(buffer)

    # arrays for the compiled rules on the engine's device: numpy on the CPU, numba device arrays on a GPU
    def empty(self, shape, dtype):
        if self.device.type == "cuda":
            from numba import cuda

            return cuda.device_array(shape, dtype)
        return np.empty(shape, dtype)

    def to_device(self, array: np.ndarray):
        if self.device.type == "cuda":
            from numba import cuda

            return cuda.to_device(array)
        return array

    def array_of(self, tensor: torch.Tensor):
        """The array view of a contiguous tensor on the engine's device (no copy)."""
        if self.device.type == "cuda":
            from numba import cuda

            return cuda.as_cuda_array(tensor.detach())
        return tensor.detach().numpy()

    def tensor_of(self, array) -> torch.Tensor:
        """The torch view of an array from ``empty`` / ``arrays`` (no copy)."""
        if self.device.type == "cuda":
            return torch.as_tensor(array, device=self.device)
        return torch.from_numpy(array)

    def use_build(self, rules) -> None:
        """Step this engine's state with ``rules`` (``build.CpuBuild`` or ``build.GpuBuild``; the
        latter works on host arrays under numba-cuda's simulator, as ``test_gpu_build.py`` runs it)."""
        self.build = rules
        self.scratch = rules.scratch(self.num_envs, self.num_units)
        self.feature_scratch = rules.scratch(self.num_envs, self.num_units)

    def __getstate__(self) -> dict:
        if self.device.type != "cpu":
            raise TypeError("only a CPU engine can be pickled")
        # the torch views are rebuilt on unpickling: pickled apart, they would no longer share the buffers
        return {k: v for k, v in self.__dict__.items()
                if not k.startswith("_t_") and k not in ("build", "_unit_state")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.build = build.CpuBuild()
        for name in STATE_FIELDS:
            self.__dict__[f"_t_{name}"] = torch.from_numpy(self.__dict__[f"_buf_{name}"])

    # ------------------------------------------------------------------ state
    @property
    def alive(self) -> torch.Tensor:
        return self.hp > 0

    def arrays(self, name: str):
        """The buffer of state field ``name`` (numpy, or a numba device array), shared with the torch
        view ``getattr(self, name)``."""
        return self.__dict__[f"_buf_{name}"]

    def unit_state(self) -> UnitState:
        """The state buffers as the rules' record (built once per set of buffers: it is read every call)."""
        record = self.__dict__.get("_unit_state")
        if record is None:
            record = self.__dict__["_unit_state"] = UnitState(*(self.__dict__[f"_buf_{name}"] for name in STATE_FIELDS))
        return record

    def reset(self, mask: torch.Tensor | None = None) -> None:
        """Put the games where ``mask`` (E,) is true (all when None) back at their start
        (``game_step.start_units``, compiled)."""
        E = self.num_envs
        m = np.ones(E, np.bool_) if mask is None else np.ascontiguousarray(torch.as_tensor(mask).cpu().numpy(), np.bool_)
        goals = self.draw_trigger_goals(np.empty((E, self.num_units, 2), np.float32))
        self.build.reset(self.to_device(m), self.unit_state(), self.static, self.spawn_points(), self.to_device(goals))

    def spawn_points(self):
        """(E, U, 2) float32 spawn points of every game as an array on the engine's device (on a SMAC
        map every game's are ``spawn``; a SMACv2 draw writes its game's own)."""
        points = self.__dict__.get("_spawn_points")
        if points is None:
            spawn = self.spawn.cpu().numpy()
            points = self._spawn_points = self.to_device(np.repeat(spawn[None].astype(np.float32), self.num_envs, 0))
        return points

    def draw_trigger_goals(self, out: np.ndarray) -> np.ndarray:
        """The triggers' attack-move points of every game into ``out`` (E, U, 2) float32 (numpy): side 1
        the map's point (a uniform point of the segment, per game, drawn from the engine's generator,
        for ``attack_point_between``), side 0 the other side's spawn centre."""
        E, U = self.num_envs, self.num_units
        fixed = self.__dict__.get("_fixed_goals")
        if fixed is None:
            goal = self.side0_goal.expand(E, U, 2).clone()
            if self.order_points is not None:
                goal[:, self.side_slices[1]] = self.order_points[0]
            fixed = self._fixed_goals = goal.numpy()
        out[...] = fixed
        p = self.order_points
        if p is not None and p.shape[0] == 2:
            self._sync_generator()
            t = torch.rand(E, 1, generator=self.generator)
            g = p[0] + t * (p[1] - p[0])
            out[:, self.side_slices[1]] = g[:, None, :].numpy()
        return out

    def set_scripted_sides(self, sides: tuple[int, ...]) -> None:
        """Which sides the scripted AI drives from now on (``rules.scripted_orders``: the trigger's
        order and SC2's auto-acquisition, every game loop): the built-in AI as a two-player seat."""
        if any(s not in (0, 1) for s in sides):
            raise ValueError(f"sides must contain only 0 or 1, got {sides!r}")
        self.scripted_sides = tuple(sorted(set(sides)))
        self.flags = self.flags._replace(scripted0=np.int64(0 in sides), scripted1=np.int64(1 in sides))

    # ------------------------------------------------------------------ rules
    def command(self, side: int, actions) -> None:
        """Issue SMAC actions (E, n_side) of ``side`` in world coordinates (``rules.command_game``),
        replacing every current order.  Actions are assumed legal (the callers check the masks)."""
        if self.device.type == "cuda" and isinstance(actions, torch.Tensor):
            a = actions.to(self.device, torch.long).contiguous()
        else:
            a = actions.detach().cpu().numpy() if isinstance(actions, torch.Tensor) else np.asarray(actions)
            a = np.ascontiguousarray(a, dtype=np.int64)
        self.build.command(np.int64(side), a, self.unit_state(), self.static, self.flags)

    def advance(self, loops: int = STEP_MUL) -> None:
        """Run ``loops`` game loops of every game (``rules``); the cooldown jitters are drawn from
        the engine's generator, (loops, E, U)."""
        jitter = self.draw_jitter(loops)
        if self.device.type == "cuda":
            from numba import cuda

            jitter = cuda.to_device(jitter)
        self.build.advance(jitter, self.unit_state(), self.static, self.maps, self.flags, self.scratch)

    def draw_jitter(self, loops: int = STEP_MUL, out: np.ndarray | None = None) -> np.ndarray:
        """The cooldown jitters of ``loops`` game loops of every game, (loops, E, U) int64, drawn from the
        engine's generator (CPU) into ``out`` (numpy, that shape) or else into the engine's own buffer,
        which the next draw overwrites.

        Small batches draw ``JITTER_POOL`` values at once and hand them out a step at a time: the
        values are those of one draw per step (the generator's stream is the same), and a draw of
        anything else first puts the generator where per-step draws would have left it
        (``_sync_generator``), so every seed plays the same games as with one draw per step."""
        shape = (loops, self.num_envs, self.num_units)
        if out is None:
            out = self.__dict__.get("_jitter")
            if out is None or out.shape != shape:
                out = self.__dict__["_jitter"] = np.empty(shape, np.int64)
        elif out.shape != shape or out.dtype != np.int64:
            raise ValueError(f"out must be an int64 array of shape {shape} (loops, num_envs, num_units), "
                             f"got {out.dtype} {out.shape}")
        pool = self.__dict__.get("_pool")
        if pool is None or pool.shape[1:] != shape or self._pool_used == pool.shape[0]:
            self._sync_generator()
            steps = max(1, JITTER_POOL // (loops * self.num_envs * self.num_units))
            self._pool_state = self.generator.get_state() if steps > 1 else None
            pool = self._pool = torch.randint(COOLDOWN_JITTER_LOW, COOLDOWN_JITTER_HIGH + 1, (steps, *shape),
                                              generator=self.generator).numpy()
            self._pool_used = 0
        np.copyto(out, pool[self._pool_used])
        self._pool_used += 1
        return out

    def _sync_generator(self) -> None:
        """Drop the jitter pool; if part of it was not handed out, put the generator where drawing only
        the handed-out steps would have left it (``draw_jitter``)."""
        pool = self.__dict__.get("_pool")
        if pool is not None and self._pool_used < pool.shape[0]:
            self.generator.set_state(self._pool_state)
            if self._pool_used:
                torch.randint(COOLDOWN_JITTER_LOW, COOLDOWN_JITTER_HIGH + 1, (self._pool_used, *pool.shape[1:]),
                              generator=self.generator)
        self._pool = None


# one descriptor per field of ``records.UnitState``: the field list is written once, there
for _name in STATE_FIELDS:
    _field = _StateArray()
    _field.__set_name__(BattleEngine, _name)
    setattr(BattleEngine, _name, _field)
del _name, _field
