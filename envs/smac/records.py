"""The named records the compiled SMAC rules read and write (``rules.py``, ``feature_rules.py``).

Each record is a ``NamedTuple`` of arrays (numpy on the CPU, numba device arrays on a GPU); numba
passes them to ``njit`` functions and CUDA kernels alike, and a rule reads its fields by name
(``unit.hp[u]``, ``static.armor[t]``).

- ``UnitState``: the dynamic state, one row per game: ``(E, U)`` or ``(E, U, 2)``.  The rules see
  one game at a time (``game_rows``: the row views of game ``e``), so a rule reads ``unit.hp[u]``.
- ``UnitStatic``: per-unit constants, one row per game ``(E, U)`` (``(E, U, U)`` for the pair tables
  ``raw_damage`` and ``can_target``), from ``units.UNIT_STATS`` and the map (``engine.BattleEngine``):
  on a SMAC map every game holds the same rows, in SMACv2 each draw writes its game's own
  (``static_rows``: the rows of game ``e``, as a rule reads them).
- ``MapTables``: the map's walkability grids and next-hop path tables (``pathing.py``), flattened.
- ``BattleFlags``: int64 switches fixed for a battle (which sides are scripted, which rules apply).
- ``Scratch``: work rows over the units for one game.  Device code cannot allocate, so the caller
  allocates them: one set on the CPU (games run one after another), one per game on a GPU.
- ``Seat`` and ``Episode``: what one environment step in one call (``game_step.py``) reads and
  writes besides the units: a seat's constants, its actions and its feature buffers, and the
  episode's counters, reward bookkeeping and outcome buffers.  The buffers are allocated once and
  rewritten every step.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

STATE_FIELDS = ("pos", "hp", "shield", "energy", "cooldown", "since_damage", "order", "target", "goal",
                "trigger_goal", "cur_speed", "last_attacker", "detonate", "vel", "shot_target", "shot_wind", "shot_in",
                "shot_hits", "leash", "leash_origin")


class UnitState(NamedTuple):
    """Dynamic state (``engine.BattleEngine`` docstring): float32 but ``order``, ``target``,
    ``last_attacker``, ``shot_target``, ``shot_hits``, ``leash`` (int64) and ``detonate`` (bool)."""

    pos: np.ndarray  # (E, U, 2)
    hp: np.ndarray
    shield: np.ndarray
    energy: np.ndarray
    cooldown: np.ndarray  # loops until the weapon is ready
    since_damage: np.ndarray  # loops since the last damage taken
    order: np.ndarray  # rules.STOP, MOVE, ATTACK, HEAL, AMOVE
    target: np.ndarray  # unit index of an ATTACK / HEAL order
    goal: np.ndarray  # (E, U, 2) point of a MOVE / AMOVE order
    trigger_goal: np.ndarray  # (E, U, 2) the map trigger's attack-move point
    cur_speed: np.ndarray  # speed of accelerating units
    last_attacker: np.ndarray  # who last fired at the unit, -1 none
    detonate: np.ndarray  # a baneling killed last loop: its blast goes off this loop
    vel: np.ndarray  # (E, U, 2) the last loop's displacement (distance per loop): collision avoidance
    shot_target: np.ndarray  # the unit's attack under way (``rules.fire_weapons``): its target,
    shot_wind: np.ndarray  # loops until it launches (the damage point),
    shot_in: np.ndarray  # loops until its next hit lands,
    shot_hits: np.ndarray  # and its hits still to land (0: no attack under way)
    leash: np.ndarray  # a scripted unit's acquired order from idle: rules.LEASH_NONE, _CHASE, _RETURN, _PASSED
    leash_origin: np.ndarray  # (E, U, 2) where that order began: the point it returns to


class UnitStatic(NamedTuple):
    """Per-unit constants, (E, U) per game: float32, then bool, then int64 fields, then the (E, U, U)
    pair tables.  A rule sees one game's rows (``rules.static_rows``)."""

    hp_max: np.ndarray
    shield_max: np.ndarray
    armor: np.ndarray
    speed: np.ndarray  # distance per loop
    radius: np.ndarray
    weapon_range: np.ndarray
    cooldown_loops: np.ndarray
    scan_range: np.ndarray
    accel: np.ndarray  # distance per loop^2, 0 = instant
    splash_radius: np.ndarray
    zerg_regen: np.ndarray  # hp per loop
    damage_point: np.ndarray  # loops from an attack's start to its launch (units.WEAPON_TIMING)
    hit_delay: np.ndarray  # fixed loops from the launch to the first hit
    hit_gap: np.ndarray  # loops between successive hits (0: together)
    missile_v0: np.ndarray  # the missile's start speed (distance per loop), acceleration (per loop^2)
    missile_accel: np.ndarray
    missile_vmax: np.ndarray  # and top speed; 0: no missile
    is_air: np.ndarray
    hits_air: np.ndarray
    heals: np.ndarray
    is_line: np.ndarray  # colossus line splash
    explodes: np.ndarray  # baneling
    is_bio: np.ndarray
    cliff_walker: np.ndarray  # colossus
    armed: np.ndarray
    collides: np.ndarray
    group_target: np.ndarray  # a member of the trigger's attack-units group
    splashes: np.ndarray  # is_line or explodes
    side: np.ndarray
    hits: np.ndarray  # hits per attack
    trigger_kind: np.ndarray  # rules.NO_ORDER, ORDER_AMOVE, ORDER_ATTACK_GROUP
    collide_mask: np.ndarray  # collision flags: two units collide when they share one (engine.COLLIDE_*)
    raw_damage: np.ndarray  # (E, U, U) float32: damage + bonus per hit of unit i on unit j
    can_target: np.ndarray  # (E, U, U) bool: i may attack j


class MapTables(NamedTuple):
    """Walkability (``MAP_SIZE**2`` bool, cell ``x * MAP_SIZE + y``) and next-hop tables (int8,
    ``pathing._tables``; a length-1 placeholder where the grid is convex)."""

    walkable: np.ndarray
    cliff_walkable: np.ndarray  # walkable or cliff: colossi
    hop: np.ndarray
    cliff_hop: np.ndarray


class BattleFlags(NamedTuple):
    """Switches of one battle (int64 scalars)."""

    n0: int  # units of side 0
    scripted0: int
    scripted1: int
    any_accel: int
    group_order: int  # the trigger orders an attack on a group (2c_vs_64zg)
    route: int  # some grid is not convex: ground units path round terrain
    paths_convex: int
    cliff_convex: int
    cliff_own_table: int  # colossi have their own path table
    healer0: int
    healer1: int
    colliders: int  # some pair of units collides


class Scratch(NamedTuple):
    """Work rows over the U units of one game (``new_scratch``)."""

    alive: np.ndarray  # bool
    attacking: np.ndarray
    healing: np.ndarray
    in_range: np.ndarray
    fire: np.ndarray
    tvx: np.ndarray  # float32: vector, distance and edge distance to the target
    tvy: np.ndarray
    tdist: np.ndarray
    tedge: np.ndarray
    hp_loss: np.ndarray
    shield_loss: np.ndarray
    dx: np.ndarray  # this loop's step
    dy: np.ndarray
    avoid_vx: np.ndarray  # float32: the step chosen by collision avoidance (``rules.avoid_collisions``)
    avoid_vy: np.ndarray
    line_px: np.ndarray  # one unit's ORCA half-planes: a point and a unit direction per neighbour
    line_py: np.ndarray
    line_dx: np.ndarray
    line_dy: np.ndarray
    proj_px: np.ndarray  # the half-planes projected in ORCA's third linear program
    proj_py: np.ndarray
    proj_dx: np.ndarray
    proj_dy: np.ndarray
    raw_sum: np.ndarray  # float64: sums over the hits landing on a unit (exact)
    hit_count: np.ndarray
    bare_sum: np.ndarray
    healed: np.ndarray
    hp_frac: np.ndarray  # float32 feature rows: hp / hp_max, shield / shield_max
    shield_frac: np.ndarray
    land: np.ndarray  # float32: hits of the unit's attack landing this loop


class OrcaUnits(NamedTuple):
    """What ``rules.orca_lines`` reads of one game's ``UnitState``.  numba passes a record as its
    arrays one by one, so a call per moving unit with the whole ``UnitState``, ``UnitStatic`` and
    ``Scratch`` (about 80 arrays) cost more than the lines it built; these small records carry the
    14 arrays the lines need (same games; measured: docs/results/speed.md)."""

    pos: np.ndarray
    vel: np.ndarray
    hp: np.ndarray


class OrcaStatic(NamedTuple):
    """What ``rules.orca_lines`` reads of ``UnitStatic`` (``OrcaUnits``)."""

    collide_mask: np.ndarray
    radius: np.ndarray
    speed: np.ndarray
    side: np.ndarray


class OrcaScratch(NamedTuple):
    """What ``rules.orca_lines`` reads and writes of ``Scratch`` (``OrcaUnits``)."""

    alive: np.ndarray
    dx: np.ndarray
    dy: np.ndarray
    line_px: np.ndarray
    line_py: np.ndarray
    line_dx: np.ndarray
    line_dy: np.ndarray


SCRATCH_DTYPES = (np.bool_,) * 5 + (np.float32,) * 18 + (np.float64,) * 4 + (np.float32,) * 3


SLOT_GAP_BYTES = 128  # a cache line and the line the CPU's adjacent-line prefetcher fetches with it


def new_scratch(games: int, units: int, empty=np.empty, apart: bool = False) -> Scratch:
    """Scratch rows for ``games`` games or slots (each field ``(games, units)``); ``empty(shape, dtype)``
    allocates (``numpy.empty``, or ``numba.cuda.device_array``).  ``apart``: each row widened to
    whole blocks of ``SLOT_GAP_BYTES`` with at least that much unused after its ``units`` entries,
    so rows written by different threads (the CPU's parallel slots) never share a cache line.
    Without it two threads' rows of the same field sit side by side and every write of one evicts
    the other's line ("false sharing"): two threads stepped 3s5z 1.6x slower than with the rows
    apart (docs/results/speed.md).  The rules read only the first ``units`` entries of a row."""
    width = units
    if apart:
        # a whole number of SLOT_GAP_BYTES-element blocks: every dtype's element is at least a byte, so the
        # row's bytes are whole blocks too, and the SLOT_GAP_BYTES unused elements at least that many bytes
        width = -(-(units + SLOT_GAP_BYTES) // SLOT_GAP_BYTES) * SLOT_GAP_BYTES
    return Scratch(*(empty((games, width), dtype) for dtype in SCRATCH_DTYPES))


class Seat(NamedTuple):
    """One seat of a battle for ``game_step``: the constants of its view (``fast_features.FastSideView``;
    int64, float32 and per-unit arrays), then its buffers, first axis the games."""

    ally0: int  # its first unit, count, and the other side's
    n: int
    enemy0: int
    m: int
    map_x: int
    mirror: int  # seat frame mirrored in x (and east/west swapped in its actions)
    bits: int
    shield_ally: int
    shield_enemy: int
    cx: float  # float32: map centre and playable size (the state's frame)
    cy: float
    width: float
    height: float
    hp_max: np.ndarray  # (U,) float32
    shield_max: np.ndarray
    is_medivac: np.ndarray  # (n,) bool
    ally_type: np.ndarray  # (n,) int64
    enemy_type: np.ndarray  # (m,) int64
    max_cd: np.ndarray  # (n,) float32
    pathing: np.ndarray  # float32 grids in the seat's frame
    terrain: np.ndarray
    config: np.ndarray  # FeatureConfig flags, int64 (feature_rules.OBS_* / STATE_*)
    actions: np.ndarray  # (E, n) int64: this step's actions (input)
    last_action: np.ndarray  # (E, n, A) float32 one-hot
    px: np.ndarray  # (E, U) float32: positions in the seat's frame
    py: np.ndarray
    avail: np.ndarray  # (E, n, A) bool
    obs: np.ndarray  # (E, n, obs_size) float32
    state: np.ndarray  # (E, state_size) float32


class Episode(NamedTuple):
    """The episodes of a battle for ``game_step``: reward settings (scalars), then buffers over the
    games (``(2, E)``: per side)."""

    limit: int  # episode limit (steps)
    n0: int  # units of side 0
    death_value: float  # float32 reward settings (feature_rules.rewards, finish)
    negative_scale: float
    death_penalty: float
    only_positive: bool
    sparse: bool
    win: float
    defeat: float
    divisor0: float  # each side's reward scale divisor
    divisor1: float
    scale: bool
    counts_for_survival: np.ndarray  # (U,) bool
    steps: np.ndarray  # (E,) int64: steps of the episode
    timestep: np.ndarray  # (E,) float32: steps / limit
    returns0: np.ndarray  # (E,) float32: the episode's return of each side
    returns1: np.ndarray
    prev: np.ndarray  # (E, U) float32: hp + shield at the last step
    counted_dead: np.ndarray  # (E, U) bool: deaths already rewarded
    battle: np.ndarray  # (2, E) float32: battle reward per side
    lost: np.ndarray  # (E, 2) bool
    reward: np.ndarray  # (2, E) float32: step reward per side
    won: np.ndarray  # (2, E) bool
    draw: np.ndarray  # (E,) bool
    timeout: np.ndarray
    done: np.ndarray
    winner: np.ndarray  # (E,) int64: 0, 1, -1
    dead: np.ndarray  # (2, E) int64
    before_pos: np.ndarray  # (E, U, 2): the units before the last step (SMAC's previous units)
    before_hp: np.ndarray  # (E, U)
    before_shield: np.ndarray
    before_energy: np.ndarray
    before_cooldown: np.ndarray


class SeatV2(NamedTuple):
    """One seat of SMACv2 games for ``smacv2_step`` (docs/design/smacv2.md): its constants (int64,
    float), each game's draw and SMACv2's per-episode bookkeeping, then its buffers; first axis the
    games.  Layouts: ``smacv2_features.V2Layout``."""

    ally0: int  # its first unit, count, and the other side's
    n: int
    enemy0: int
    m: int
    map_x: int
    mirror: int  # seat frame mirrored in x (east/west swapped in its actions)
    bits: int
    observe_types: int
    shield_ally: int
    shield_enemy: int
    n_fov: int  # cone turn actions (0 without conic_fov)
    conic: int
    own_pos: int
    action_mask: int
    fully: int  # fully_observable
    starcraft: int  # obs_starcraft
    observe: int  # the observation bookkeeping draws (prob_obs_enemy < 1)
    half_angle: float  # float64: the cone's half angle
    prob: float  # float64: prob_obs_enemy
    map_w: float  # float64: the own-position scale (map_x, map_y)
    map_h: float
    cx: float  # float32: map centre and playable size (the state's frame)
    cy: float
    width: float
    height: float
    canonical_fov: np.ndarray  # (max(n_fov, 1), 2) float32: the turn actions' directions
    pathing: np.ndarray  # float32 grids in the seat's frame
    terrain: np.ndarray
    config: np.ndarray  # V2Flags.config_array, int64
    is_medivac: np.ndarray  # (E, n) bool: each game's draw
    ally_type: np.ndarray  # (E, n) int64
    enemy_type: np.ndarray  # (E, m) int64
    max_cd: np.ndarray  # (E, n) float32
    shoot: np.ndarray  # (E, n) float32: shoot and sight ranges
    sight: np.ndarray
    hidden: np.ndarray  # (E, n, m) bool: the EPO mask
    divisor: np.ndarray  # (E,) float32: the seat's reward scale divisor
    fov: np.ndarray  # (E, n, 2) float32: cone directions
    obs_enemies: np.ndarray  # (E, m, n) int64: who observes which enemy
    enemy_tags: np.ndarray  # (E, m) int64: the tagging agent, -1 none
    order: np.ndarray  # (E, n) int64: this observation's agent order (drawn)
    draws: np.ndarray  # (E, m, n) float64: this observation's draws against prob
    actions: np.ndarray  # (E, n) int64: this step's actions (input)
    commands: np.ndarray  # (E, n) int64: the engine's actions they become
    last_action: np.ndarray  # (E, n, A) float32 one-hot
    px: np.ndarray  # (E, U) float32: positions in the seat's frame
    py: np.ndarray
    avail: np.ndarray  # (E, n, A) bool
    true_avail: np.ndarray  # (E, n, A) bool: the range check always on
    vis: np.ndarray  # (E, n, m) bool: in sight and observed at the last observation
    obs: np.ndarray  # (E, n, obs_size) float32
    state: np.ndarray  # (E, state_size) float32
