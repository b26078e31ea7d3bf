"""``NumbaEngine``: the ``BattleEngine`` whose steps run as compiled kernels (``kernels.py``) on the CPU.

It is a ``BattleEngine`` (same constructor, tables, ``reset`` and attributes); only ``command`` and
``advance`` are replaced by the kernels, which follow the same rules bit for bit.  Its state tensors
(``pos``, ``hp``, ...) are torch views of numpy buffers: torch code reads and edits them as before
(assigning one copies into the buffer), and the kernels work on the buffers in place.  The cooldown
jitter is drawn from the engine's torch generator exactly as the torch engine draws it, so that the
same seed gives the same games on both.

The kernels run on the calling thread, one game after another: no thread pool of their own that
would compete with torch's (a learner in the same process) or be a process-wide setting; measured
on 2 shared cores, numba's parallel loops made large batches 2.6x slower (their threads spin and
take the cores from torch), so there are none.

``SMACBattle`` picks this engine for the simulator on the CPU (``engine="auto"``); ``engine="torch"``
keeps the batched torch engine (a GPU, or a check of one implementation against the other).
"""

from __future__ import annotations

import numpy as np
import torch

from . import kernels as K
from .engine import STEP_MUL, BattleEngine
from .units import COOLDOWN_JITTER_HIGH, COOLDOWN_JITTER_LOW

STATE_FIELDS = ("pos", "hp", "shield", "energy", "cooldown", "since_damage", "order", "target", "goal",
                "trigger_goal", "cur_speed", "last_attacker")


class _StateArray:
    """A state field kept in one numpy buffer: reading it gives a torch view of the buffer, assigning
    to it copies into the buffer (a new shape allocates a new buffer)."""

    def __set_name__(self, owner, name: str) -> None:
        self.array_name, self.tensor_name = f"_np_{name}", f"_t_{name}"

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return obj.__dict__[self.tensor_name]

    def __set__(self, obj, value) -> None:
        value = torch.as_tensor(value)
        view = obj.__dict__.get(self.tensor_name)
        if view is None or view.shape != value.shape:
            array = value.detach().to("cpu").contiguous().numpy().copy()
            obj.__dict__[self.array_name] = array
            obj.__dict__[self.tensor_name] = torch.from_numpy(array)
        elif value.data_ptr() != view.data_ptr():
            view.copy_(value)


def static_tables(engine: BattleEngine) -> dict[str, np.ndarray]:
    """The engine's per-unit constants packed for the kernels (``kernels`` module docstring)."""
    def np_(t):
        return t.detach().cpu().numpy()

    U = engine.num_units
    uf = np.zeros((K.N_UF, U), np.float32)
    for row, t in ((K.HP_MAX, engine.hp_max), (K.SHIELD_MAX, engine.shield_max), (K.ARMOR, engine.armor),
                   (K.SPEED, engine.speed), (K.RADIUS, engine.radius), (K.RANGE, engine.weapon_range),
                   (K.CD_LOOPS, engine.cooldown_loops), (K.SCAN, engine.scan_range), (K.ACCEL, engine.accel),
                   (K.SPLASH_R, engine.splash_radius), (K.ZERG_REGEN, engine.zerg_regen)):
        uf[row] = np_(t)
    ub = np.zeros((K.N_UB, U), np.bool_)
    for row, t in ((K.IS_AIR, engine.is_air), (K.HITS_AIR, engine.hits_air), (K.HEALS, engine.heals),
                   (K.IS_LINE, engine.is_line), (K.EXPLODES, engine.explodes), (K.IS_BIO, engine.is_bio),
                   (K.CLIFF, engine.cliff_walker), (K.ARMED, engine.armed), (K.COLLIDES, engine.collides),
                   (K.GROUP_TARGET, engine.group_target), (K.SPLASHES, engine.splashes)):
        ub[row] = np_(t)
    ui = np.zeros((K.N_UI, U), np.int64)
    ui[K.SIDE], ui[K.HITS], ui[K.TRIGGER_KIND] = np_(engine.side), np_(engine.hits), np_(engine.trigger_kind)
    paths, cliff = engine.paths, engine.cliff_paths
    heals = np_(engine.heals)
    n0 = engine.n_side[0]
    flags = np.zeros(K.N_FLAGS, np.int64)
    flags[K.FL_N0] = n0
    flags[K.FL_SCRIPTED0] = 0 in engine.scripted_sides
    flags[K.FL_SCRIPTED1] = 1 in engine.scripted_sides
    flags[K.FL_ANY_ACCEL] = engine.any_accel
    flags[K.FL_GROUP_ORDER] = engine.any_group_order
    flags[K.FL_ROUTE] = not (paths.convex and cliff.convex)
    flags[K.FL_PATHS_CONVEX] = paths.convex
    flags[K.FL_CLIFF_CONVEX] = cliff.convex
    flags[K.FL_CLIFF_OWN_TABLE] = cliff is not paths
    flags[K.FL_HEALER0] = bool(heals[:n0].any())
    flags[K.FL_HEALER1] = bool(heals[n0:].any())
    flags[K.FL_COLLIDERS] = engine.has_colliders
    empty = np.zeros(1, np.int8)
    return {
        "uf": uf, "ub": ub, "ui": ui,
        "raw_damage": np_(engine.raw_damage).astype(np.float32), "can_target": np_(engine.can_target),
        "walkable": np_(engine.walkable), "cliff_walkable": np_(engine.cliff_walkable),
        "hop": empty if paths.convex else np_(paths.hop), "cliff_hop": empty if cliff.convex else np_(cliff.hop),
        "nbr": np.array([[dx, dy] for dx, dy in
                         ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1), (0, 0))], np.int64),
        "flags": flags,
    }


class NumbaEngine(BattleEngine):
    """``BattleEngine`` stepped by the compiled kernels (module docstring); CPU only."""

    pos = _StateArray()
    hp = _StateArray()
    shield = _StateArray()
    energy = _StateArray()
    cooldown = _StateArray()
    since_damage = _StateArray()
    order = _StateArray()
    target = _StateArray()
    goal = _StateArray()
    trigger_goal = _StateArray()
    cur_speed = _StateArray()
    last_attacker = _StateArray()

    def __init__(self, spec, num_envs: int, device: str | torch.device = "cpu", seed: int | None = None,
                 scripted_sides: tuple[int, ...] = (1,), mirror_spawns: bool = False):
        if torch.device(device).type != "cpu":
            raise ValueError(f"NumbaEngine runs on the CPU only, got device={device!r} (use the torch engine)")
        super().__init__(spec, num_envs, device, seed, scripted_sides, mirror_spawns)
        self.tables = static_tables(self)

    def __getstate__(self) -> dict:
        # the torch views are rebuilt on unpickling: pickled apart, they would no longer share the buffers
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_t_")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name in STATE_FIELDS:
            self.__dict__[f"_t_{name}"] = torch.from_numpy(self.__dict__[f"_np_{name}"])

    def arrays(self, name: str) -> np.ndarray:
        """The numpy buffer of state field ``name`` (shared with the torch view ``getattr(self, name)``)."""
        return self.__dict__[f"_np_{name}"]

    def command(self, side: int, actions) -> None:
        """``BattleEngine.command`` (same rules), compiled."""
        a = actions.detach().cpu().numpy() if isinstance(actions, torch.Tensor) else np.asarray(actions)
        a = np.ascontiguousarray(a, dtype=np.int64)
        t = self.tables
        K.command(side, a, self._np_pos, self._np_order, self._np_target, self._np_goal, t["uf"], t["ub"], t["flags"])

    def advance(self, loops: int = STEP_MUL) -> None:
        """``BattleEngine.advance`` (same rules, same jitter draws), compiled."""
        jitter = torch.randint(COOLDOWN_JITTER_LOW, COOLDOWN_JITTER_HIGH + 1, (loops, self.num_envs, self.num_units),
                               device=self.device, generator=self.generator).numpy()
        t = self.tables
        K.advance(jitter, self._np_pos, self._np_hp, self._np_shield, self._np_energy, self._np_cooldown,
            self._np_since_damage, self._np_order, self._np_target, self._np_goal, self._np_trigger_goal,
            self._np_cur_speed, self._np_last_attacker, t["uf"], t["ub"], t["ui"], t["raw_damage"], t["can_target"],
            t["walkable"], t["cliff_walkable"], t["hop"], t["cliff_hop"], t["nbr"], t["flags"])
