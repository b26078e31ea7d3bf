"""``SMACv2Games``: SMACv2 games on one compiled engine, every game playing its own draw
(docs/design/smacv2.md §5); ``SMACv2Battle`` (batched) and ``SMACv2Env`` (one game, SMACv2's API)
run on it.

A draw (``write_draw``) writes its game's rows: the units' constants into the engine's per-game
``UnitStatic`` rows (gathered from ``UnitTypeTable``, the engine's own tables of every unit type of
the map), its spawn points, and each seat's unit types, ranges and EPO mask into its
``records.SeatV2``.  ``start`` begins the episodes of the games drawn, ``step`` plays one
environment step of every game, both one compiled call (``smacv2_step.py``); the features of the
new state are left in the seats' buffers (``SeatV2.obs``, ``avail``, ``state``).

Randomness: the cooldown jitter from the engine's generator (``engine_seed``); the observation
bookkeeping's agent order and draws (``prob_obs_enemy`` < 1 only) from ``obs_rng``, drawn for every
game before each compiled call that observes.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from . import build
from .engine import BattleEngine
from .records import Episode, SeatV2, UnitStatic
from .rewards import RewardConfig
from .smacv2_features import V2_SHOOT_RANGE, V2_SIGHT_RANGE, V2Flags, V2Layout
from .smacv2_scenarios import GenMap
from .smacv2_spec import DrawnSpec, drawn_spec
from .units import SHOOT_RANGE, SIGHT_RANGE, STEP_MUL, UNIT_STATS

ALLY_POINT, ENEMY_POINT = (8.0, 16.0), (24.0, 16.0)  # SMACv2's creation points without start_positions
# the engine's switches that depend on which unit types may play: set for every type of the map
UNIT_FLAGS = ("any_accel", "healer0", "healer1", "colliders", "route", "paths_convex", "cliff_convex",
              "cliff_own_table")


class UnitTypeTable:
    """The engine's per-unit constants of every unit type of a SMACv2 map on either side: the rows of
    a one-game ``BattleEngine`` holding each type once per side, so that a draw's rows are gathered
    from the engine's own unit tables (``write``), pair tables included."""

    def __init__(self, gen: GenMap):
        types = list(gen.type_order)
        T = len(types)
        spec = drawn_spec(gen, types, types, np.tile(ALLY_POINT, (T, 1)), np.tile(ENEMY_POINT, (T, 1)))
        eng = BattleEngine(spec, 1, seed=0, scripted_sides=())
        self.index = {(0 if k < T else 1, name): k for k, name in enumerate(eng.unit_names)}
        self.static = UnitStatic(*(a[0] for a in eng.static))
        self.flags, self.maps = eng.flags, eng.maps

    def rows(self, names0: list[str], names1: list[str]) -> np.ndarray:
        """The table rows of side 0's units ``names0`` then side 1's ``names1``."""
        return np.array([self.index[(0, u)] for u in names0] + [self.index[(1, u)] for u in names1], np.int64)

    def write(self, static: UnitStatic, e: int, rows: np.ndarray) -> None:
        """Game ``e``'s constants in ``static`` (the engine's records): the table's ``rows``."""
        pair = np.ix_(rows, rows)
        for table, dest in zip(self.static, static):
            dest[e] = table[pair] if table.ndim == 2 else table[rows]


class SMACv2Games:
    """``num_envs`` SMACv2 games of one map and team sizes (module docstring).  ``controlled``: 1 (side
    1 is the scripted enemy, which hunts the agents) or 2 seats; ``mirror``: seat 1 sees the map
    mirrored in x."""

    def __init__(self, gen: GenMap, n_units: int, n_enemies: int, flags: V2Flags, num_envs: int, controlled: int,
                 mirror: bool, engine_seed: int, obs_rng: np.random.Generator, reward: RewardConfig):
        self.gen, self.flags, self.num_envs, self.reward = gen, flags, num_envs, reward
        self.n_side = (n_units, n_enemies)
        self.controlled, self.obs_rng = controlled, obs_rng
        self.table = UnitTypeTable(gen)
        first = gen.type_order[0]  # a placeholder draw: every game is drawn before it starts
        spec = drawn_spec(gen, [first] * n_units, [first] * n_enemies, np.tile(ALLY_POINT, (n_units, 1)),
                          np.tile(ENEMY_POINT, (n_enemies, 1)))
        self.spec = spec
        eng = self.engine = BattleEngine(spec, num_envs, seed=engine_seed,
                                         scripted_sides=() if controlled == 2 else (1,))
        t = self.table.flags
        eng.flags = eng.flags._replace(**{name: getattr(t, name) for name in UNIT_FLAGS})
        eng.maps = self.table.maps
        self.layouts = [V2Layout(gen, n_units, n_enemies, flags), V2Layout(gen, n_enemies, n_units, flags)]
        self.terran = gen.map_type == "terran_gen"
        types = gen.type_order
        self.shoot = np.array([build.cpu().unit_range(V2_SHOOT_RANGE[u], SHOOT_RANGE, flags.use_unit_ranges,
                                                      float(flags.min_attack_range)) for u in types], np.float32)
        self.sight = np.array([build.cpu().unit_range(V2_SIGHT_RANGE[u], SIGHT_RANGE, flags.use_unit_ranges, 0.0)
                               for u in types], np.float32)
        self.seats = [self._seat(s, mirror and s == 1) for s in (0, 1)]
        self.episode = self._episode()
        self.specs: list[DrawnSpec | None] = [None] * num_envs
        self.max_reward = np.zeros((2, num_envs))  # per seat: SMAC's max_reward of each game's draw
        self.observe = not flags.fully_observable and flags.obs_starcraft and flags.prob_obs_enemy < 1.0
        # [two seats, check the masks / observe, compute the state]
        self._switches = np.array([controlled == 2, 1, 0], np.int64)
        self._feature_switches = np.array([controlled == 2, 1, 0], np.int64)
        self._jitter = np.zeros((STEP_MUL, num_envs, eng.num_units), np.int64)
        self._start_mask = np.zeros(num_envs, np.bool_)
        self._goals = np.zeros((num_envs, eng.num_units, 2), np.float32)
        self._spawn = eng.spawn_points()
        self._check = build.CpuBuild().bind("check_actions", self.seats[0], self.seats[1], self._switches)
        self._bind()
        self.want_state = False  # the state is computed at every step once a caller has read one
        self._fresh = self._state_fresh = False

    def _engine_objects(self) -> tuple:
        """The engine's objects the compiled calls are bound to."""
        eng = self.engine
        return eng.unit_state(), eng.static, eng.maps, eng.flags, eng.scratch

    def _bind(self) -> None:
        """The compiled step, features and start on the records, bound (``build.CpuBuild.bind``) once and
        again whenever the engine's state buffers, tables, flags or scratch were replaced (``_bound``)."""
        eng = self.engine
        state, static, maps, flags, scratch = self._bound_on = self._engine_objects()
        records = (self.seats[0], self.seats[1], self.episode)
        self._step = eng.build.bind("v2_step", self._jitter, state, static, maps, flags, scratch,
                                    *records, self._switches)
        self._features = eng.build.bind("v2_features", state, static, scratch, *records,
                                        self._feature_switches)
        self._start = eng.build.bind("v2_start", self._start_mask, state, static, self._spawn, self._goals,
                                     flags, scratch, *records, self._switches)

    def _bound(self) -> None:
        """Bind again if any of the engine's objects is not the one bound (a replaced scratch, as
        ``SMACBattle`` notices it)."""
        if any(a is not b for a, b in zip(self._engine_objects(), self._bound_on)):
            self._bind()

    def __getstate__(self) -> dict:
        # the bound compiled calls are rebuilt on unpickling (the records travel with the games)
        return {k: v for k, v in self.__dict__.items()
                if k not in ("_check", "_step", "_features", "_start", "_bound_on")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._check = build.CpuBuild().bind("check_actions", self.seats[0], self.seats[1], self._switches)
        self._bind()

    def use_build(self, rules) -> None:
        """Play with ``rules`` (``build.CpuBuild``, or ``build.GpuBuild`` on these host arrays under
        numba-cuda's simulator, as ``tests/smac/gpu_sim_smacv2.py`` runs it)."""
        self.engine.use_build(rules)
        self._bind()

    # ------------------------------------------------------------ records
    def _seat(self, side: int, mirror: bool) -> SeatV2:
        E, U = self.num_envs, self.engine.num_units
        L, f, spec = self.layouts[side], self.flags, self.spec
        n, m = L.n_agents, L.n_enemies
        i64, f32 = np.int64, np.float32
        k = max(L.n_fov, 1)
        angles = 2 * np.pi * np.arange(k) / k
        grid = spec.pathing_grid().astype(np.float32)
        height = spec.terrain_height().astype(np.float32)
        return SeatV2(
            i64(0 if side == 0 else self.n_side[0]), i64(n), i64(self.n_side[0] if side == 0 else 0), i64(m),
            i64(spec.map_x), i64(mirror), i64(L.bits), i64(f.observe_types), i64(L.shield), i64(L.shield),
            i64(L.n_fov), i64(f.conic_fov), i64(f.obs_own_pos), i64(f.action_mask), i64(f.fully_observable),
            i64(f.obs_starcraft), i64(not f.fully_observable and f.prob_obs_enemy < 1.0),
            float(np.pi / L.n_fov) if f.conic_fov else 0.0, float(f.prob_obs_enemy), float(spec.map_x),
            float(spec.map_y), f32(spec.map_x / 2), f32(spec.map_y / 2), f32(spec.playable_width),
            f32(spec.playable_height),
            canonical_fov=np.stack([np.cos(angles), np.sin(angles)], 1).astype(f32),
            pathing=np.ascontiguousarray(grid[::-1] if mirror else grid),
            terrain=np.ascontiguousarray(height[::-1] if mirror else height), config=f.config_array(),
            is_medivac=np.zeros((E, n), np.bool_), ally_type=np.zeros((E, n), i64), enemy_type=np.zeros((E, m), i64),
            max_cd=np.ones((E, n), f32), shoot=np.zeros((E, n), f32), sight=np.ones((E, n), f32),
            hidden=np.zeros((E, n, m), np.bool_), divisor=np.ones(E, f32), fov=np.zeros((E, n, 2), f32),
            obs_enemies=np.zeros((E, m, n), i64), enemy_tags=np.full((E, m), -1, i64),
            order=np.tile(np.arange(n, dtype=i64), (E, 1)),
            draws=np.zeros((E, m, n), np.float64), actions=np.zeros((E, n), i64), commands=np.zeros((E, n), i64),
            last_action=np.zeros((E, n, L.n_actions), f32), px=np.zeros((E, U), f32), py=np.zeros((E, U), f32),
            avail=np.zeros((E, n, L.n_actions), np.bool_), true_avail=np.zeros((E, n, L.n_actions), np.bool_),
            vis=np.zeros((E, n, m), np.bool_), obs=np.zeros((E, n, L.obs_size), f32),
            state=np.zeros((E, L.state_size()), f32))

    def _episode(self) -> Episode:
        E, U = self.num_envs, self.engine.num_units
        c, f32, i64 = self.reward, np.float32, np.int64
        return Episode(
            i64(self.gen.limit), i64(self.n_side[0]), f32(c.reward_death_value), f32(c.reward_negative_scale),
            f32(c.reward_death_value * c.reward_negative_scale), bool(c.reward_only_positive), bool(c.reward_sparse),
            f32(c.reward_win), f32(c.reward_defeat), f32(1.0), f32(1.0), bool(c.reward_scale),
            counts_for_survival=np.ones((E, U), np.bool_), steps=np.zeros(E, i64), timestep=np.zeros(E, f32),
            returns0=np.zeros(E, f32), returns1=np.zeros(E, f32), prev=np.zeros((E, U), f32),
            counted_dead=np.zeros((E, U), np.bool_), battle=np.zeros((2, E), f32), lost=np.zeros((E, 2), np.bool_),
            reward=np.zeros((2, E), f32), won=np.zeros((2, E), np.bool_), draw=np.zeros(E, np.bool_),
            timeout=np.zeros(E, np.bool_), done=np.zeros(E, np.bool_), winner=np.zeros(E, i64),
            dead=np.zeros((2, E), i64), before_pos=np.zeros((1, U, 2), f32), before_hp=np.zeros((1, U), f32),
            before_shield=np.zeros((1, U), f32), before_energy=np.zeros((1, U), f32),
            before_cooldown=np.zeros((1, U), f32))

    # -------------------------------------------------------------- draws
    def write_draw(self, e: int, ally: list[str], enemy: list[str], ally_points, enemy_points,
                   masks=(None, None)) -> DrawnSpec:
        """Game ``e`` plays this draw from its next start: teams in creation order, their creation
        points, and each seat's EPO mask (None: nothing hidden)."""
        spec = drawn_spec(self.gen, ally, enemy, ally_points, enemy_points)
        names = (spec.units(0), spec.units(1))
        n0 = self.n_side[0]
        self.table.write(self.engine.static, e, self.table.rows(*names))
        self._spawn[e, :n0] = spec.spawn_positions(0)
        self._spawn[e, n0:] = spec.spawn_positions(1)
        self._goals[e, :n0] = spec.spawn_centres(1)
        self._goals[e, n0:] = spec.enemy_order[1][0]
        ids = [np.array(spec.type_ids(s, True), np.int64) for s in (0, 1)]
        medivac = [np.array([self.terran and u == "medivac" for u in names[s]], np.bool_) for s in (0, 1)]
        static = self.engine.static
        c = self.reward
        for s, seat in enumerate(self.seats):
            theirs = slice(n0, None) if s == 0 else slice(0, n0)
            seat.ally_type[e] = ids[s]
            seat.enemy_type[e] = ids[1 - s]
            seat.is_medivac[e] = medivac[s]
            seat.max_cd[e] = [UNIT_STATS[u].max_cooldown for u in names[s]]
            seat.shoot[e] = self.shoot[ids[s]]
            seat.sight[e] = self.sight[ids[s]]
            mask = masks[s]
            if mask is not None and np.shape(mask) != seat.hidden.shape[1:]:
                raise ValueError(f"enemy_mask must have shape {seat.hidden.shape[1:]}, got {np.shape(mask)}")
            seat.hidden[e] = False if mask is None else np.asarray(mask, dtype=np.bool_)
            hp = float(np.float32((static.hp_max[e, theirs] + static.shield_max[e, theirs]).sum()))
            self.max_reward[s, e] = hp + self.n_side[1 - s] * c.reward_death_value + c.reward_win
            seat.divisor[e] = np.float32(self.max_reward[s, e] / c.reward_scale_rate)
        self.episode.counts_for_survival[e] = ~np.concatenate(medivac)
        self.specs[e] = spec
        return spec

    # ------------------------------------------------------------ episodes
    def _draw_observation(self) -> None:
        """This observation's agent order and draws for every game (SMACv2's ``get_obs``: the agents in
        a random order, one draw per (enemy, agent) against ``prob_obs_enemy``)."""
        rng = self.obs_rng
        for seat in self.seats[: self.controlled]:
            seat.order[...] = rng.random(seat.order.shape).argsort(1)
            seat.draws[...] = rng.random(seat.draws.shape)

    def start(self, mask: np.ndarray) -> None:
        """Start an episode on its draw in every game where ``mask`` (E,) is true, with its features."""
        self._start_mask[...] = mask
        self._switches[2] = self.want_state
        if self.observe:
            self._draw_observation()
        self._bound()
        self._start()
        self._fresh, self._state_fresh = True, self.want_state

    def step(self, actions: list[np.ndarray], check_masks: bool = True) -> tuple[int, int, int]:
        """One step of every game: ``actions`` (E, n_agents) int per controlled seat, written into the
        seats' buffers.  Returns (-1, -1, -1), or without stepping the first illegal action's
        (seat, game, agent): out of range, or (``check_masks``) not in its mask."""
        for seat, a in zip(self.seats, actions):
            seat.actions[...] = a
        self.fresh()
        self._switches[1] = check_masks
        found = self._check()
        if found[0] >= 0:
            return found
        self.engine.draw_jitter(STEP_MUL, out=self._jitter)
        self._switches[2] = self.want_state
        if self.observe:
            self._draw_observation()
        self._bound()
        self._step()
        self._fresh, self._state_fresh = True, self.want_state
        return found

    # ------------------------------------------------------------ features
    def invalidate(self) -> None:
        """Recompute the features at the next read (after a caller changed the state or a cone)."""
        self._fresh = self._state_fresh = False

    def fresh(self) -> None:
        """The seats' masks and observations hold the current state's."""
        if not self._fresh:
            self._features_call(True, self.want_state)

    def fresh_state(self) -> None:
        """The seats' states hold the current state's (from now on, every step computes them)."""
        self.want_state = True
        self.fresh()
        if not self._state_fresh:
            self._features_call(False, True)

    def _features_call(self, obs: bool, state: bool) -> None:
        self._feature_switches[1], self._feature_switches[2] = obs, state
        if obs and self.observe:
            self._draw_observation()
        self._bound()
        self._features()
        self._fresh = self._fresh or obs
        self._state_fresh = self._state_fresh or state


class V2Seat:
    """Seat ``side`` of game ``e`` of ``SMACv2Games``: views of its rows in the compiled records (cone
    directions, last actions, the draw's types and ranges, the EPO mask, the observed set) and its
    features, current when read."""

    def __init__(self, games: SMACv2Games, side: int, e: int = 0):
        rec = games.seats[side]
        self.games, self.side, self.e, self.rec = games, side, e, rec
        self.layout = games.layouts[side]
        self.n, self.m, self.ally0, self.enemy0 = int(rec.n), int(rec.m), int(rec.ally0), int(rec.enemy0)
        self.mirror = bool(rec.mirror)
        self.half_angle = float(rec.half_angle)
        self.pathing, self.height, self.config = rec.pathing, rec.terrain, rec.config
        for name in ("fov", "last_action", "ally_type", "enemy_type", "is_medivac", "max_cd", "shoot", "sight",
                     "hidden", "obs_enemies", "enemy_tags"):
            setattr(self, name, getattr(rec, name)[e])
        static = games.engine.static
        self.hp_max, self.shield_max = static.hp_max[e], static.shield_max[e]

    @property
    def seen(self) -> np.ndarray:
        """(n, m) bool: in sight and observed at the last observation."""
        self.games.fresh()
        return self.rec.vis[self.e]

    def invalidate(self) -> None:
        """Recompute the features at the next read (after changing a cone direction)."""
        self.games.invalidate()

    def avail(self) -> tuple[np.ndarray, np.ndarray]:
        """(available, true available) bool (n, n_actions) of the current state."""
        self.games.fresh()
        return self.rec.avail[self.e], self.rec.true_avail[self.e]

    def _xy(self) -> tuple[np.ndarray, np.ndarray]:
        self.games.fresh()
        return self.rec.px[self.e], self.rec.py[self.e]

    def observations(self) -> np.ndarray:
        self.games.fresh()
        return self.rec.obs[self.e]

    def state(self) -> np.ndarray:
        self.games.fresh_state()
        return self.rec.state[self.e]

    def special_state(self) -> np.ndarray:
        """float (n, special_state_size): MAPPO's agent-specific state of every agent of this seat's
        game (``special_states``)."""
        return special_states(self.games, self.side)[self.e]


def special_states(games: SMACv2Games, side: int) -> np.ndarray:
    """float (E, n, special_state_size): MAPPO's agent-specific state ("AS") of every agent of seat
    ``side`` in every game, from the current state.

    SMAC's construction (``features.SideView.special_state``, MAPPO's ``get_state_agent``) on each
    draw's units, with SMACv2's per-unit sight range ``r_i`` (``use_unit_ranges``) and SMACv2's state
    normalisation (centre-relative positions over the playable width/height).  For agent i: every
    other ally [d < r_i, d/r_i, dx/r_i, dy/r_i, cooldown (Medivac: energy) / max cooldown, hp,
    shield, centre-x, centre-y, type bits, last action]; every enemy [attack available, d/r_i,
    dx/r_i, dy/r_i, d < r_i, hp, shield, type bits, centre-x, centre-y] (health, shield and type
    zero where EPO's ``enemy_mask`` hides the enemy, as marlbenchmark/on-policy's SMACv2
    ``get_state_agent``); itself [1, 0, 0, 0, hp, shield, centre-x, centre-y, type bits, last
    action, cone direction (``conic_fov`` only)]; its one-hot id.  Dead units' rows are zero, and a
    dead agent's vector is zero except its id.

    Every feature is a float32 operation on the engine's float32 arrays (distances by ``hypot``),
    one compiled loop over games and agents (``_special_state_rows``)."""
    games.fresh()
    rec, L, eng, spec = games.seats[side], games.layouts[side], games.engine, games.spec
    E, n = games.num_envs, int(rec.n)
    out = np.empty((E, n, L.special_state_size), np.float32)
    centre = np.array([spec.map_x / 2, spec.map_y / 2, spec.playable_width, spec.playable_height], np.float32)
    sizes = np.array([int(rec.ally0), n, int(rec.enemy0), int(rec.m), L.bits, L.shield, L.n_actions_no_attack,
                      int(L.flags.conic_fov)], np.int64)
    _special_state_rows(out, sizes, centre, rec.px, rec.py, eng.arrays("hp"), eng.arrays("shield"),
                        eng.arrays("energy"), eng.arrays("cooldown"), eng.static.hp_max, eng.static.shield_max,
                        rec.is_medivac, rec.max_cd, rec.ally_type, rec.enemy_type, rec.last_action, rec.sight,
                        rec.hidden, rec.avail, rec.fov)
    return out


@numba.njit(cache=True)
def _special_state_rows(out, sizes, centre, px, py, hp, shield, energy, cooldown, hp_max, shield_max, is_medivac,
                        max_cd, ally_type, enemy_type, last_action, sight, hidden, avail, fov):
    """Fill ``out`` (E, n, special_state_size) with ``special_states``' vectors.  ``sizes``: [first
    ally, n, first enemy, m, type bits, shield columns (0/1), actions before the attacks, conic fov
    (0/1)]; ``centre``: float32 [map_x / 2, map_y / 2, playable width, playable height].  A masked
    feature is the feature times 0 (as the vectorised definition multiplies by the alive masks)."""
    ally0, n, enemy0, m, b, sh, no, conic = sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], sizes[5], sizes[6], sizes[7]
    A = last_action.shape[2]
    zero, one = np.float32(0.0), np.float32(1.0)
    for e in range(out.shape[0]):
        for i in range(n):
            row = out[e, i]
            ui = ally0 + i
            alive_i = one if hp[e, ui] > 0 else zero
            r = sight[e, i]
            k = 0
            for j in range(n):  # the other allies, in order
                if j == i:
                    continue
                uj = ally0 + j
                live = (one if hp[e, uj] > 0 else zero) * alive_i
                dx, dy = px[e, uj] - px[e, ui], py[e, uj] - py[e, ui]
                d = np.float32(math.hypot(dx, dy))
                cd = (energy[e, uj] if is_medivac[e, j] else cooldown[e, uj]) / max_cd[e, j]
                k = _put(row, k, (one if d < r else zero) * live)
                k = _put(row, k, d / r * live)
                k = _put(row, k, dx / r * live)
                k = _put(row, k, dy / r * live)
                k = _put(row, k, cd * live)
                k = _unit_columns(row, k, e, uj, j, live, sh, b, hp, shield, hp_max, shield_max, px, py, centre,
                                  ally_type, one, zero)
                for a in range(A):
                    k = _put(row, k, last_action[e, j, a] * live)
            for t in range(m):  # the enemies
                ut = enemy0 + t
                live = (one if hp[e, ut] > 0 else zero) * alive_i
                show = zero if hidden[e, i, t] else one
                dx, dy = px[e, ut] - px[e, ui], py[e, ut] - py[e, ui]
                d = np.float32(math.hypot(dx, dy))
                k = _put(row, k, (one if avail[e, i, no + t] else zero) * live)
                k = _put(row, k, d / r * live)
                k = _put(row, k, dx / r * live)
                k = _put(row, k, dy / r * live)
                k = _put(row, k, (one if d < r else zero) * live)
                k = _put(row, k, hp[e, ut] / hp_max[e, ut] * show * live)
                if sh:
                    k = _put(row, k, _shield_frac(shield, shield_max, e, ut) * show * live)
                for c in range(b):
                    k = _put(row, k, (one if enemy_type[e, t] == c else zero) * show * live)
                k = _put(row, k, (px[e, ut] - centre[0]) / centre[2] * live)
                k = _put(row, k, (py[e, ut] - centre[1]) / centre[3] * live)
            k = _put(row, k, alive_i)  # itself
            for _ in range(3):
                k = _put(row, k, zero)
            k = _unit_columns(row, k, e, ui, i, alive_i, sh, b, hp, shield, hp_max, shield_max, px, py, centre,
                              ally_type, one, zero)
            for a in range(A):
                k = _put(row, k, last_action[e, i, a] * alive_i)
            if conic:
                k = _put(row, k, fov[e, i, 0] * alive_i)
                k = _put(row, k, fov[e, i, 1] * alive_i)
            for j in range(n):  # its id
                k = _put(row, k, one if j == i else zero)


@numba.njit(cache=True, inline="always")
def _put(row, k, value):
    row[k] = value
    return k + 1


@numba.njit(cache=True, inline="always")
def _shield_frac(shield, shield_max, e, u):
    """shield / max shield, 0 without shields (the max clamped at 1e-6 as the vectorised form does)."""
    smax = shield_max[e, u]
    return shield[e, u] / max(smax, np.float32(1e-6)) if smax > 0 else np.float32(0.0)


@numba.njit(cache=True, inline="always")
def _unit_columns(row, k, e, u, j, live, sh, b, hp, shield, hp_max, shield_max, px, py, centre, types, one, zero):
    """An ally's [hp, (shield), centre-x, centre-y, type bits] times ``live``."""
    k = _put(row, k, hp[e, u] / hp_max[e, u] * live)
    if sh:
        k = _put(row, k, _shield_frac(shield, shield_max, e, u) * live)
    k = _put(row, k, (px[e, u] - centre[0]) / centre[2] * live)
    k = _put(row, k, (py[e, u] - centre[1]) / centre[3] * live)
    for c in range(b):
        k = _put(row, k, (one if types[e, j] == c else zero) * live)
    return k
