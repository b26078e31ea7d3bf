"""The SMAC battle rules, written once: plain Python functions that ``build.py`` compiles for the CPU
(numba ``njit``) and for a GPU (numba-cuda device functions, one game per thread).

One environment step is ``STEP_MUL`` = 8 game loops; each loop of one game (``game_loop``) runs
these rules in order (the game mechanics and their sources: ``docs/design/smac-rules.md``; how this
code is built: ``docs/design/smac-engine.md``):

1. ``scripted_orders``: the scripted side's trigger order and SC2's auto-acquisition;
2. ``aim``: the vector, centre and edge distance to each unit's target;
3. ``fire_weapons``: orders on dead targets end, cooldowns tick, units in range with a ready weapon
   start an attack, whose hits land after the weapon's damage point, fixed delay and missile flight
   (``units.WEAPON_TIMING``), and attacks under way land their hits due in this loop;
4. ``deal_damage``: the hits landing (single, colossus lances, baneling blast, the blast of a baneling
   killed in the previous loop) on shields, then hp with armour;
5. ``heal``: Medivacs heal a bio ally in range;
6. ``plan_moves`` / ``avoid_collisions`` / ``apply_moves``: chase a target into range, walk to a point
   or attack-move (paths round terrain); moving units steer round the units they collide with (ORCA
   collision avoidance); steps slide along blocked cells;
7. ``regenerate_and_die``: shields, zerg hp and energy regenerate; units at hp <= 0 die; a baneling
   killed by damage is marked to explode in the next loop.

Every rule sees one game: ``unit`` is ``records.UnitState`` of that game's rows (``game_rows``),
``static`` that game's ``UnitStatic`` per-unit constants (``static_rows``), ``maps`` the ``MapTables``, ``flags`` the
``BattleFlags``, ``sc`` the game's ``Scratch`` rows.  Nothing here allocates (device code cannot).

Arithmetic, so that both builds give the same float32 on any machine: every value is float32 (the
constants below are float32 scalars: a Python float would promote a float32 expression to float64);
a distance is ``sqrt(dx^2 + dy^2)`` in float64 rounded once (``distance``); a sum over units is
accumulated in float64 (exact for these terms, so independent of the order) and rounded once; the
GPU build turns off the compiler's fused multiply-add contraction (``build.py``).  A position that
moves lands on a grid symmetric about the map's centre (``snap``), and ORCA breaks its ties
mirror-symmetrically, so that a battle and its mirror image play the same game (seat symmetry).
"""

from __future__ import annotations

import math

import numpy as np

from .maps import MAP_SIZE
from .pathing import NEIGHBOURS
from .records import OrcaScratch, OrcaStatic, OrcaUnits, Scratch, UnitState, UnitStatic
from .units import (
    ACQUIRE_LEASH_RADIUS,
    ACQUIRE_LEASH_RESET_RADIUS,
    ACQUIRE_MOVEMENT_LIMIT,
    COLOSSUS_LANCE_DAMAGE_DELAY_S,
    COLOSSUS_LANCE_HALF_LENGTH,
    COLOSSUS_LANCE_PERIOD_S,
    COLOSSUS_LANCE_RADIUS,
    COLOSSUS_LANCE_STEP,
    LOOPS_PER_SECOND,
    MEDIVAC_ENERGY_REGEN_PER_S,
    MEDIVAC_HEAL_PER_S,
    MEDIVAC_HP_PER_ENERGY,
    MEDIVAC_MAX_ENERGY,
    MOVE_AMOUNT,
    ORCA_TIME_HORIZON_S,
    SHIELD_REGEN_DELAY_S,
    SHIELD_REGEN_PER_S,
    SIGHT_RANGE,
)

F = np.float32
INF = F(np.inf)
ZERO, HALF, ONE = F(0.0), F(0.5), F(1.0)
EPS6, EPS3 = F(1e-6), F(1e-3)
SIGHT = F(SIGHT_RANGE)
LEASH_RADIUS = F(ACQUIRE_LEASH_RADIUS)
LEASH_RESET_RADIUS = F(ACQUIRE_LEASH_RESET_RADIUS)
MOVEMENT_LIMIT = F(ACQUIRE_MOVEMENT_LIMIT)
MOVE_STEP = F(MOVE_AMOUNT)
LANCE_FIRST, LANCE_STEP, LANCE_RADIUS = F(-COLOSSUS_LANCE_HALF_LENGTH), F(COLOSSUS_LANCE_STEP), F(COLOSSUS_LANCE_RADIUS)
LANCE_POINTS = round(2 * COLOSSUS_LANCE_HALF_LENGTH / COLOSSUS_LANCE_STEP) + 1
LANCE_PERIOD = F(COLOSSUS_LANCE_PERIOD_S * LOOPS_PER_SECOND)  # loops between a beam's searches
LANCE_DAMAGE_DELAY = F(COLOSSUS_LANCE_DAMAGE_DELAY_S * LOOPS_PER_SECOND)  # loops from a search to its hit
LANCE_LAST = F(LANCE_POINTS) * LANCE_PERIOD + LANCE_DAMAGE_DELAY  # loops from the launch to the last hit
HEAL_PER_LOOP = F(MEDIVAC_HEAL_PER_S / LOOPS_PER_SECOND)
HP_PER_ENERGY = F(MEDIVAC_HP_PER_ENERGY)
ENERGY_PER_LOOP = F(MEDIVAC_ENERGY_REGEN_PER_S / LOOPS_PER_SECOND)
MAX_ENERGY = F(MEDIVAC_MAX_ENERGY)
SHIELD_DELAY_LOOPS = F(SHIELD_REGEN_DELAY_S * LOOPS_PER_SECOND)
SHIELD_PER_LOOP = F(SHIELD_REGEN_PER_S / LOOPS_PER_SECOND)
INV_HORIZON = F(1.0 / (ORCA_TIME_HORIZON_S * LOOPS_PER_SECOND))  # collision avoidance, per loop
RVO_EPSILON = F(1e-5)  # RVO2's test for parallel lines
POS_QUANTUM_INV = np.float64(2.0 ** 16)  # positions: multiples of 2^-16 map units (``snap``)
THREAT_BONUS = F(1e3)  # acquisition: a unit that can shoot back scores as if 1000 closer
GRID = MAP_SIZE
GRID_F = F(MAP_SIZE)
GRID_HI = F(MAP_SIZE - 1)
PATH_HI = F(MAP_SIZE - 1e-4)
NEIGHBOUR_X = tuple(dx for dx, _ in NEIGHBOURS)
NEIGHBOUR_Y = tuple(dy for _, dy in NEIGHBOURS)

# orders
STOP, MOVE, ATTACK, HEAL, AMOVE = 0, 1, 2, 3, 4
# the scripted side's trigger order (UnitStatic.trigger_kind)
NO_ORDER, ORDER_AMOVE, ORDER_ATTACK_GROUP = 0, 1, 2
# a scripted unit's acquired order from idle (UnitState.leash): none; chasing its acquired target; returning
# to where the order began after the target ended; returning after passing the leash
LEASH_NONE, LEASH_CHASE, LEASH_RETURN, LEASH_PASSED = 0, 1, 2, 3


# ------------------------------------------------------------------------------- records
def game_rows(state, e):
    """``UnitState`` of game ``e``'s rows (views, no copy)."""
    return UnitState(state.pos[e], state.hp[e], state.shield[e], state.energy[e], state.cooldown[e],
                     state.since_damage[e], state.order[e], state.target[e], state.goal[e], state.trigger_goal[e],
                     state.cur_speed[e], state.last_attacker[e], state.detonate[e], state.vel[e], state.shot_target[e],
                     state.shot_wind[e], state.shot_in[e], state.shot_hits[e], state.leash[e], state.leash_origin[e])


def static_rows(static, e):
    """``UnitStatic`` of game ``e``'s constants (views, no copy): each game holds its own units."""
    return UnitStatic(static.hp_max[e], static.shield_max[e], static.armor[e], static.speed[e], static.radius[e],
                      static.weapon_range[e], static.cooldown_loops[e], static.scan_range[e], static.accel[e],
                      static.splash_radius[e], static.zerg_regen[e], static.damage_point[e], static.hit_delay[e],
                      static.hit_gap[e], static.missile_v0[e], static.missile_accel[e], static.missile_vmax[e],
                      static.is_air[e], static.hits_air[e], static.heals[e], static.is_line[e], static.explodes[e],
                      static.is_bio[e], static.cliff_walker[e], static.armed[e], static.collides[e],
                      static.group_target[e], static.splashes[e], static.side[e], static.hits[e],
                      static.trigger_kind[e], static.collide_mask[e], static.raw_damage[e], static.can_target[e])


def scratch_rows(sc, w):
    """``Scratch`` of slot ``w``'s rows (views)."""
    return Scratch(sc.alive[w], sc.attacking[w], sc.healing[w], sc.in_range[w], sc.fire[w], sc.tvx[w], sc.tvy[w],
                   sc.tdist[w], sc.tedge[w], sc.hp_loss[w], sc.shield_loss[w], sc.dx[w], sc.dy[w], sc.avoid_vx[w],
                   sc.avoid_vy[w], sc.line_px[w], sc.line_py[w], sc.line_dx[w], sc.line_dy[w], sc.proj_px[w],
                   sc.proj_py[w], sc.proj_dx[w], sc.proj_dy[w], sc.raw_sum[w], sc.hit_count[w], sc.bare_sum[w],
                   sc.healed[w], sc.hp_frac[w], sc.shield_frac[w], sc.land[w])


# ---------------------------------------------------------------------------- geometry
def distance(dx, dy):
    """float32 ``sqrt(dx^2 + dy^2)`` computed in float64 and rounded once (the squares of float32
    values are exact in float64, so this is the correctly rounded distance)."""
    x = np.float64(dx)
    y = np.float64(dy)
    return np.float32(math.sqrt(x * x + y * y))


def edge_distance(unit, static, i, j):
    """Distance between the edges of units ``i`` and ``j``: centres minus both radii."""
    d = distance(unit.pos[j, 0] - unit.pos[i, 0], unit.pos[j, 1] - unit.pos[i, 1])
    return d - (static.radius[i] + static.radius[j])


def snap(v):
    """``v`` (a float64 sum of float32 values) rounded to the nearest multiple of ``POS_QUANTUM``,
    ties to even, as float32.  The grid is symmetric about the map's centre line (``GRID_F`` is a
    multiple of it) and every point of it within the map is an exact float32, so a position and
    its mirror image ``GRID_F - x`` round alike: float32 rounding alone (a finer step near 9 than
    near 23) would make mirrored armies drift apart."""
    s = np.float64(v) * POS_QUANTUM_INV
    r = np.float64(math.floor(s + 0.5))
    if r - s == 0.5 and r - 2.0 * math.floor(r * 0.5) != 0.0:
        r = r - 1.0
    return np.float32(r / POS_QUANTUM_INV)


def walkable_at(x, y, air, cliff, maps):
    """May a unit stand at (x, y)?  Inside the map, and: air anywhere, colossi on walkable or cliff
    cells, others on walkable cells (cell ``int(x) * GRID + int(y)``)."""
    inside = x >= ZERO and x < GRID_F and y >= ZERO and y < GRID_F
    cell = int(min(max(x, ZERO), GRID_HI)) * GRID + int(min(max(y, ZERO), GRID_HI))
    ground = maps.cliff_walkable[cell] if cliff else maps.walkable[cell]
    return inside and (air or ground)


def path_direction(px, py, gx, gy, convex, hop):
    """The vector to walk along from p towards g (``pathing.py``): straight, or, where terrain
    stands between their cells, to the centre of the next cell of a shortest path."""
    sx, sy = gx - px, gy - py
    if convex:
        return sx, sy
    ax = int(math.floor(min(max(px, ZERO), PATH_HI)))
    ay = int(math.floor(min(max(py, ZERO), PATH_HI)))
    bx = int(math.floor(min(max(gx, ZERO), PATH_HI)))
    by = int(math.floor(min(max(gy, ZERO), PATH_HI)))
    k = hop[(ax * GRID + ay) * (GRID * GRID) + bx * GRID + by]
    if k < 0:
        return sx, sy
    hx = F(ax + NEIGHBOUR_X[k]) + HALF
    hy = F(ay + NEIGHBOUR_Y[k]) + HALF
    return hx - px, hy - py


# ------------------------------------------------------------------------------ commands
def command_game(side, actions, unit, static, flags):
    """SMAC actions ``actions`` (n_side,) of ``side`` for one game, replacing every order
    (``queue_command=False``): 0 no-op, 1 stop, 2-5 move N/S/E/W by ``MOVE_AMOUNT``, 6+t attack
    enemy t (Medivac: heal ally t).  SC2 rejects an attack its weapon cannot make (a marauder on a
    Medivac): the old order stays."""
    U = unit.hp.shape[0]
    n0 = flags.n0
    start = 0 if side == 0 else n0
    other = n0 if side == 0 else 0
    for i in range(actions.shape[0]):
        u = start + i
        a = actions[i]
        if a >= 2 and a <= 5:
            k = a - 2
            dx = ZERO
            dy = ZERO
            if k == 0:
                dy = ONE * MOVE_STEP
            elif k == 1:
                dy = -ONE * MOVE_STEP
            elif k == 2:
                dx = ONE * MOVE_STEP
            else:
                dx = -ONE * MOVE_STEP
            unit.goal[u, 0] = unit.pos[u, 0] + dx
            unit.goal[u, 1] = unit.pos[u, 1] + dy
            unit.order[u] = MOVE
        elif a == 1:
            unit.order[u] = STOP
        elif a >= 6:
            t = a - 6
            heals = static.heals[u]
            tu = start + t if heals else other + t
            tgt_air = static.is_air[min(tu, U - 1)]
            if heals or (not tgt_air) or static.hits_air[u]:
                unit.order[u] = HEAL if heals else ATTACK
                unit.target[u] = tu


# ---------------------------------------------------------------------------- scripted AI
def army_centre(unit, static, alive, o0, o1):
    """Centroid of the living non-healers of units o0..o1-1 (a sum over units: float64, exact)."""
    sx = np.float64(0.0)
    sy = np.float64(0.0)
    army = ZERO
    for j in range(o0, o1):
        if alive[j] and not static.heals[j]:
            sx += np.float64(unit.pos[j, 0] * ONE)
            sy += np.float64(unit.pos[j, 1] * ONE)
            army += ONE
    return F(sx) / max(army, ONE), F(sy) / max(army, ONE)


def most_hurt_ally(unit, static, alive, i, o0, o1):
    """The living, hurt bio ally of healer ``i`` within sight with the lowest hp fraction
    (``(index - o0, fraction)``, fraction ``INF`` when none)."""
    h_best = 0
    h_f = INF
    for jj in range(o1 - o0):
        j = o0 + jj
        hurt = alive[j] and static.is_bio[j] and unit.hp[j] < static.hp_max[j]
        if j != i and hurt:
            d = distance(unit.pos[j, 0] - unit.pos[i, 0], unit.pos[j, 1] - unit.pos[i, 1])
            if d <= SIGHT:
                frac = unit.hp[j] / static.hp_max[j]
                if frac < h_f:
                    h_f = frac
                    h_best = jj
    return h_best, h_f


def scripted_orders(side, unit, static, flags, sc):
    """Orders of ``side``'s units when it is scripted: the map trigger's order and SC2's
    auto-acquisition.  A unit keeps a target within weapon range; else it acquires, among the enemies
    it can hit within its scan range (edge distance), the closest that can shoot back, else the
    closest; else the unit that last fired at it (within ``ACQUIRE_MOVEMENT_LIMIT``); else it chases
    its living target (the maps turn the fog off: every target stays visible); else it returns to the
    trigger's order (attack-move, or idle).  On an attack-units trigger (2c_vs_64zg) it attacks the
    current group member while it lives, else the closest member.  A scripted Medivac heals the most
    hurt bio ally within sight, else follows its army's centroid.  ``sc.tedge`` holds each unit's edge
    distance to its current target.

    The leash (``units.ACQUIRE_LEASH_RADIUS``): a unit that acquires a target while idle (no trigger
    order, or standing at its attack-move point, and attacking nothing) remembers where (``leash_origin``); it drops the
    chase once farther than the leash radius from there and walks back, acquiring nothing until
    within the reset radius of it; when its target ends otherwise it walks back too, acquiring on the
    way.  Back there it is idle again.  A unit under an attack-move is not leashed: it chases an
    acquired target until the target dies, then resumes the attack-move."""
    U = unit.hp.shape[0]
    alive = sc.alive
    n0 = flags.n0
    o0, o1 = (0, n0) if side == 0 else (n0, U)
    t0, t1 = (n0, U) if side == 0 else (0, n0)
    n_other = t1 - t0
    healer_side = flags.healer0 if side == 0 else flags.healer1
    cx = cy = ZERO
    if healer_side:
        cx, cy = army_centre(unit, static, alive, o0, o1)
    for i in range(o0, o1):
        if not alive[i]:
            continue
        best = 0
        best_s = INF
        la = unit.last_attacker[i]
        la_rel = min(max(la - t0, 0), n_other - 1)
        la_hittable = False
        la_edge = INF
        g_best = 0
        g_d = INF
        for jj in range(n_other):
            j = t0 + jj
            edge = edge_distance(unit, static, i, j)
            hittable = static.can_target[i, j] and alive[j] and static.armed[i]
            if jj == la_rel:
                la_hittable = hittable
                la_edge = edge
            if hittable and edge <= static.scan_range[i]:
                threat = static.can_target[j, i] and static.armed[j]
                score = edge - THREAT_BONUS * (ONE if threat else ZERO)
                if score < best_s:
                    best_s = score
                    best = jj
            if flags.group_order and static.group_target[j] and alive[j] and edge < g_d:
                g_d = edge
                g_best = jj
        kind = static.trigger_kind[i]
        gx = unit.trigger_goal[i, 0]
        gy = unit.trigger_goal[i, 1]
        mode = unit.leash[i]
        ox = unit.leash_origin[i, 0]
        oy = unit.leash_origin[i, 1]
        d_origin = distance(ox - unit.pos[i, 0], oy - unit.pos[i, 1])
        at_point = distance(gx - unit.pos[i, 0], gy - unit.pos[i, 1]) <= HALF
        tgt = unit.target[i]
        busy = unit.order[i] == ATTACK and alive[tgt]
        idle = mode == LEASH_NONE and not busy and (kind == NO_ORDER or (kind == ORDER_AMOVE and at_point))
        if mode == LEASH_CHASE and d_origin > LEASH_RADIUS:
            mode = LEASH_PASSED
        if mode == LEASH_PASSED and d_origin <= LEASH_RESET_RADIUS:
            mode = LEASH_RETURN
        may_acquire = mode != LEASH_PASSED
        found = best_s < INF and may_acquire
        la_ok = la >= t0 and la < t1 and la_hittable and la_edge <= MOVEMENT_LIMIT and may_acquire
        if not found and la_ok:
            best = la_rel
            found = True
        attacking = busy and may_acquire
        in_range = attacking and sc.tedge[i] <= static.weapon_range[i]
        new_target = tgt if (in_range or not found) else best + t0
        if in_range or found or attacking:
            new_order = ATTACK
            if idle:
                ox = unit.pos[i, 0]
                oy = unit.pos[i, 1]
            if idle or mode == LEASH_RETURN:
                mode = LEASH_CHASE
        elif mode != LEASH_NONE and d_origin > HALF:
            new_order = AMOVE  # the walk back: a walk to the point (``plan_moves``), acquiring as above
            gx, gy = ox, oy
            if mode == LEASH_CHASE:
                mode = LEASH_RETURN
        else:
            mode = LEASH_NONE
            new_order = AMOVE if kind == ORDER_AMOVE else STOP
        if flags.group_order and kind == ORDER_ATTACK_GROUP and g_d < INF:
            new_order = ATTACK
            new_target = tgt if (attacking and static.group_target[tgt]) else g_best + t0
        if healer_side and static.heals[i]:
            h_best, h_f = most_hurt_ally(unit, static, alive, i, o0, o1)
            new_order = HEAL if h_f < INF else MOVE
            new_target = h_best + o0
            gx, gy = cx, cy
            mode = LEASH_NONE
        unit.order[i] = new_order
        unit.target[i] = new_target
        unit.goal[i, 0] = gx
        unit.goal[i, 1] = gy
        unit.leash[i] = mode
        unit.leash_origin[i, 0] = ox
        unit.leash_origin[i, 1] = oy


# ------------------------------------------------------------------------- one game loop
def aim(unit, static, sc):
    """Each unit's vector (``tvx``, ``tvy``), centre distance and edge distance to its target."""
    for u in range(unit.hp.shape[0]):
        t = unit.target[u]
        sc.tvx[u] = unit.pos[t, 0] - unit.pos[u, 0]
        sc.tvy[u] = unit.pos[t, 1] - unit.pos[u, 1]
        sc.tdist[u] = distance(sc.tvx[u], sc.tvy[u])
        sc.tedge[u] = sc.tdist[u] - (static.radius[u] + static.radius[t])


def missile_loops(static, u, d):
    """Loops unit ``u``'s missile takes to fly ``d``: from its start speed it accelerates to its top
    speed, then flies at it (0 when the weapon has no missile)."""
    vmax = static.missile_vmax[u]
    if vmax <= ZERO:
        return ZERO
    v0 = static.missile_v0[u]
    a = static.missile_accel[u]
    t1 = (vmax - v0) / a if a > ZERO else ZERO
    d1 = v0 * t1 + HALF * a * t1 * t1
    if d >= d1 or a <= ZERO:
        return t1 + (d - d1) / vmax
    root = np.float32(math.sqrt(np.float64(v0 * v0 + F(2.0) * a * d)))
    return (root - v0) / a


def fire_weapons(jitter, unit, static, sc):
    """Orders on dead targets end (the unit idles: SMAC's ``_RL`` units never auto-acquire); every
    cooldown ticks down one loop; a unit attacking a target within weapon range (edge distance) with
    its cooldown <= 0 and no attack of its own under way starts an attack, and its cooldown becomes
    ``cooldown + jitter`` loops.  An attack's first hit lands ``damage_point + hit_delay`` loops after
    its start plus the missile's flight over the centre distance at the start (``missile_loops``; the
    missile homes, so it lands wherever the target went); hits follow every ``hit_gap`` loops (all
    together when 0).  An attack ends when its target is dead (a colossus's lances still sweep the
    line round where it died), and when its attacker is dead unless a missile is already flying (the
    game's damage point and channelled effects end with their caster).  An attack still in its wind-up
    (before its damage point) is cancelled by a new order: a different order or target than the
    attack's (a dead target ends the order); it deals nothing and the weapon is ready again.  A
    colossus's attack lasts until its beams' last sweep hit (``LANCE_LAST`` loops after the launch,
    ``collect_hits``); its target hits land ``hit_delay`` after the launch.  ``sc.land``: the hits
    on its target of each unit's attack landing in this loop."""
    for u in range(unit.hp.shape[0]):
        o = unit.order[u]
        if (o == ATTACK or o == HEAL) and not sc.alive[unit.target[u]]:
            unit.order[u] = STOP
        sc.attacking[u] = unit.order[u] == ATTACK and sc.alive[u]
        sc.healing[u] = unit.order[u] == HEAL and sc.alive[u]
        sc.in_range[u] = sc.tedge[u] <= static.weapon_range[u]
        winding = unit.shot_hits[u] > 0 and unit.shot_wind[u] > ZERO
        if winding and (unit.order[u] != ATTACK or unit.target[u] != unit.shot_target[u]):
            unit.shot_hits[u] = 0
            unit.cooldown[u] = ZERO
        if unit.shot_hits[u] > 0 and static.is_line[u] and -unit.shot_wind[u] >= LANCE_LAST:
            unit.shot_hits[u] = 0
        if unit.shot_hits[u] > 0:
            unit.shot_wind[u] = unit.shot_wind[u] - ONE
            unit.shot_in[u] = unit.shot_in[u] - ONE
            flying = static.missile_vmax[u] > ZERO and unit.shot_wind[u] <= ZERO
            if not (sc.alive[u] or flying):
                unit.shot_hits[u] = 0
        cd = unit.cooldown[u] - ONE
        sc.fire[u] = (sc.attacking[u] and sc.in_range[u] and cd <= ZERO and static.armed[u]
                      and unit.shot_hits[u] == 0)
        unit.cooldown[u] = cd + static.cooldown_loops[u] + F(jitter[u]) if sc.fire[u] else max(cd, ZERO)
        if sc.fire[u]:
            unit.shot_target[u] = unit.target[u]
            unit.shot_hits[u] = static.hits[u]
            unit.shot_wind[u] = static.damage_point[u]
            unit.shot_in[u] = static.damage_point[u] + static.hit_delay[u] + missile_loops(static, u, sc.tdist[u])
        sc.land[u] = ZERO
        if static.is_line[u]:
            if unit.shot_hits[u] > 0 and loop_due(-unit.shot_wind[u], static.hit_delay[u]):
                sc.land[u] = F(static.hits[u])
        elif unit.shot_hits[u] > 0 and unit.shot_in[u] <= ZERO:
            n = unit.shot_hits[u] if static.hit_gap[u] <= ZERO else 1
            if sc.alive[unit.shot_target[u]]:
                sc.land[u] = F(n)
                unit.shot_hits[u] = unit.shot_hits[u] - n
                unit.shot_in[u] = unit.shot_in[u] + static.hit_gap[u]
            else:
                unit.shot_hits[u] = 0


def loop_due(t, tau):
    """Does an event ``tau`` loops after a launch fall in this loop, ``t`` loops after the launch
    (``t - 1 < tau <= t``)?"""
    return tau <= t and t - ONE < tau


def lance_span(unit, static, s, j):
    """The circles of colossus ``s``'s lances that unit ``j`` overlaps: ``LANCE_POINTS`` circles of
    radius ``LANCE_RADIUS`` centred on the attack's target at offsets ``LANCE_FIRST + k * LANCE_STEP``
    across the attack direction (``units.COLOSSUS_LANCE_*``); ``j`` overlaps circle k when its centre
    is within ``LANCE_RADIUS`` plus its radius of the circle's.  Returns ``(first, last)`` overlapped
    index, ``(-1, -1)`` when none (at once when j is beyond every circle's reach along or across)."""
    r = static.radius[j]
    t = unit.shot_target[s]
    vx = unit.pos[t, 0] - unit.pos[s, 0]
    vy = unit.pos[t, 1] - unit.pos[s, 1]
    d = max(distance(vx, vy), EPS6)
    ux = vx / d
    uy = vy / d
    dtx = unit.pos[j, 0] - unit.pos[t, 0]
    dty = unit.pos[j, 1] - unit.pos[t, 1]
    along = dtx * ux + dty * uy
    across = dtx * -uy + dty * ux
    first = -1
    last = -1
    reach = LANCE_RADIUS + r
    if abs(along) > reach or abs(across) > reach - LANCE_FIRST + EPS3:
        return first, last
    for k in range(LANCE_POINTS):
        offset = LANCE_FIRST + F(k) * LANCE_STEP
        if distance(along, across - offset) <= LANCE_RADIUS + r:
            if first < 0:
                first = k
            last = k
    return first, last


def lance_sweep_hits(unit, static, s, j):
    """Hits of colossus ``s``'s two beams on unit ``j`` (not the attack's target) landing in this loop,
    0-2.  A beam searches its k-th circle (Forward: circle k, Reverse: circle ``LANCE_POINTS - 1 - k``)
    ``(k + 1) * LANCE_PERIOD`` loops after the launch and hits what it finds ``LANCE_DAMAGE_DELAY``
    later, each unit once: at the first circle it overlaps in the beam's order (game data,
    ``units.COLOSSUS_LANCE_PERIOD_S``).  The circles are placed, and the overlap tested, at the hit's
    loop rather than the search's, 0.25 s earlier (approx.: no per-unit record of the searches)."""
    first, last = lance_span(unit, static, s, j)
    if first < 0:
        return 0
    t = -unit.shot_wind[s]
    n = 0
    if loop_due(t, F(first + 1) * LANCE_PERIOD + LANCE_DAMAGE_DELAY):
        n += 1
    if loop_due(t, F(LANCE_POINTS - last) * LANCE_PERIOD + LANCE_DAMAGE_DELAY):
        n += 1
    return n


def in_blast(unit, static, s, j):
    """Is unit ``j`` within baneling ``s``'s ``splash_radius`` plus j's radius?"""
    rx = unit.pos[j, 0] - unit.pos[s, 0]
    ry = unit.pos[j, 1] - unit.pos[s, 1]
    return distance(rx, ry) <= static.splash_radius[s] + static.radius[j]


def collect_hits(unit, static, sc):
    """Sums over this loop's hits on each unit, in float64: raw damage ``raw_sum``, number of hits
    ``hit_count`` and damage after armour per hit (at least 0.5) ``bare_sum``.  The hits landing are
    ``sc.land`` of each unit's attack on its ``shot_target`` (``fire_weapons``).  A baneling marked
    ``detonate`` (killed in the previous loop) blasts from where it died: the enemy ground units in
    its splash radius, with no target of its own (Liberty.SC2Mod BehaviorData.xml ``BanelingExplode``:
    a death response with the ``VolatileBurst`` effect)."""
    U = unit.hp.shape[0]
    for u in range(U):
        sc.raw_sum[u] = 0.0
        sc.hit_count[u] = 0.0
        sc.bare_sum[u] = 0.0
    for u in range(U):
        if sc.land[u] > ZERO and not static.splashes[u]:
            t = unit.shot_target[u]
            h = sc.land[u]
            raw = static.raw_damage[u, t]
            sc.raw_sum[t] += raw * h
            sc.hit_count[t] += h
            sc.bare_sum[t] += max(raw - static.armor[t], HALF) * h
    for s in range(U):
        landed = sc.land[s] > ZERO
        sweeping = (static.is_line[s] and unit.shot_hits[s] > 0
                    and -unit.shot_wind[s] >= LANCE_PERIOD + LANCE_DAMAGE_DELAY)
        if not ((landed or unit.detonate[s] or sweeping) and static.splashes[s]):
            continue
        t = unit.shot_target[s]
        for j in range(U):
            on_target = j == t and not unit.detonate[s]
            n = ZERO
            if on_target:
                if landed and sc.alive[j]:
                    n = sc.land[s]
            elif static.side[j] != static.side[s] and sc.alive[j] and not static.is_air[j]:
                if static.is_line[s]:
                    n = F(lance_sweep_hits(unit, static, s, j))
                elif in_blast(unit, static, s, j):
                    n = sc.land[s] if landed else F(static.hits[s])
            if n > ZERO:
                h = static.raw_damage[s, j]
                sc.raw_sum[j] += n * h
                sc.hit_count[j] += n
                sc.bare_sum[j] += n * max(h - static.armor[j], HALF)


def deal_damage(unit, static, sc):
    """``hp_loss`` and ``shield_loss`` of this loop's hits.  Per unit, with R the raw damage and N the
    hits: the shield absorbs ``min(shield, R)``; if nothing was absorbed, hp loses the sum of
    ``max(hit - armour, 0.5)``; otherwise the ``R - absorbed`` that got through loses ``armour``
    per hit that reached hp, ``ceil((R - absorbed) / mean hit)`` hits."""
    collect_hits(unit, static, sc)
    for j in range(unit.hp.shape[0]):
        R = F(sc.raw_sum[j])
        N = F(sc.hit_count[j])
        bare = F(sc.bare_sum[j])
        absorbed = min(unit.shield[j], R)
        through = R - absorbed
        mean_hit = R / max(N, ONE)
        n_through = F(math.ceil(through / max(mean_hit, EPS6) - EPS6))
        partial = max(through - static.armor[j] * n_through, ZERO)
        sc.hp_loss[j] = partial if absorbed > ZERO else bare
        sc.shield_loss[j] = absorbed


def remember_attackers(unit, sc):
    """Who last fired at whom (the scripted units respond to attacks): the highest-indexed shooter."""
    for u in range(unit.hp.shape[0]):
        if sc.fire[u]:
            unit.last_attacker[unit.target[u]] = u


def heal(unit, static, sc):
    """Medivac healing (reads hp before this loop's damage): ``min(missing hp, energy * 3,
    HEAL_PER_LOOP)`` on a hurt bio target in range; 1 energy per 3 hp."""
    U = unit.hp.shape[0]
    for u in range(U):
        sc.healed[u] = 0.0
    for u in range(U):
        if sc.healing[u]:
            t = unit.target[u]
            tgt_hp = unit.hp[t]
            amount = ZERO
            if sc.in_range[u] and tgt_hp < static.hp_max[t] and static.is_bio[t]:
                missing = max(static.hp_max[t] - tgt_hp, ZERO)
                amount = min(min(missing, unit.energy[u] * HP_PER_ENERGY), HEAL_PER_LOOP)
            sc.healed[t] += amount
            unit.energy[u] = unit.energy[u] - amount / HP_PER_ENERGY


def plan_moves(unit, static, maps, flags, sc):
    """This loop's step (``sc.dx``, ``sc.dy``) of each unit: towards its target until in range
    (chase), to its move point (and stop there), or towards its attack-move point; ground units
    chasing or attack-moving follow shortest paths round terrain.  Accelerating units (Medivac)
    speed up from rest by ``accel`` per loop; stopping is instant."""
    for u in range(unit.hp.shape[0]):
        chase = (sc.attacking[u] or sc.healing[u]) and not sc.in_range[u]
        chase_len = max(sc.tedge[u] - static.weapon_range[u] + EPS3, ZERO)
        gx = unit.goal[u, 0] - unit.pos[u, 0]
        gy = unit.goal[u, 1] - unit.pos[u, 1]
        goal_d = distance(gx, gy)
        moving = unit.order[u] == MOVE and sc.alive[u]
        amoving = unit.order[u] == AMOVE and sc.alive[u] and goal_d > HALF
        speed = static.speed[u]
        if flags.any_accel:
            if chase or moving or amoving:
                unit.cur_speed[u] = min(unit.cur_speed[u] + static.accel[u], speed)
            else:
                unit.cur_speed[u] = ZERO if static.accel[u] > ZERO else speed
            if static.accel[u] > ZERO:
                speed = unit.cur_speed[u]
        if chase:
            vx, vy = sc.tvx[u], sc.tvy[u]
            length = min(speed, chase_len)
        else:
            vx, vy = gx, gy
            if moving:
                length = min(speed, goal_d)
            elif amoving:
                length = speed
            else:
                length = ZERO
        if flags.route and (chase or amoving) and not static.is_air[u]:
            destx = unit.pos[u, 0] + vx
            desty = unit.pos[u, 1] + vy
            if static.cliff_walker[u] and flags.cliff_own_table:
                vx, vy = path_direction(unit.pos[u, 0], unit.pos[u, 1], destx, desty, flags.cliff_convex,
                                        maps.cliff_hop)
            else:
                vx, vy = path_direction(unit.pos[u, 0], unit.pos[u, 1], destx, desty, flags.paths_convex, maps.hop)
        norm = max(distance(vx, vy), EPS6)
        sc.dx[u] = vx / norm * length
        sc.dy[u] = vy / norm * length
        if moving and goal_d <= speed:
            unit.order[u] = STOP


# ------------------------------------------------------------------ collision avoidance
def sqrt32(x):
    """float32 square root, computed in float64 and rounded once (correctly rounded on both builds)."""
    return np.float32(math.sqrt(np.float64(x)))


def det2(ax, ay, bx, by):
    """The 2-D cross product ``a x b``."""
    return ax * by - ay * bx


def orca_lines(i, unit, static, sc, reach):
    """ORCA's half-planes of permitted velocities of unit ``i`` (RVO2's ``computeNewVelocity``, as
    SMAClite ports it), one per living neighbour sharing a collision flag that it could touch within the horizon
    (centres closer than both radii plus the horizon times i's speed and j's current speed; the
    caller's ``reach`` bounds this for the whole battle, a cheap first test): a point
    (``line_px``, ``line_py``) and a unit direction (``line_dx``, ``line_dy``); the permitted side is
    the left of the direction.  Velocities are distances per loop; the velocity obstacle's horizon
    is ``1 / INV_HORIZON`` loops, and overlapping units get the velocity that separates them within
    one loop.  The unit takes half of the change from a neighbour with a planned step (``dx``,
    ``dy``) and all of it from one standing still (SMAClite).  A neighbour met exactly head-on
    (relative velocity along the relative position) is passed on the side's own right: RVO2's right
    leg for side 0, the left for side 1, whose seat sees the map mirrored, so that mirror-image
    armies steer as mirror images (seat symmetry).  ``unit``, ``static``, ``sc``: the few arrays of
    the game's records the lines need (``records.OrcaUnits``, ``OrcaStatic``, ``OrcaScratch``: a
    call per moving unit with the whole records cost more than its lines).  Returns the line count."""
    n = 0
    pix = unit.pos[i, 0]
    piy = unit.pos[i, 1]
    vix = unit.vel[i, 0]
    viy = unit.vel[i, 1]
    mask_i = static.collide_mask[i]  # i's constants held in locals: the line stores may alias the arrays
    radius_i = static.radius[i]
    speed_i = static.speed[i]
    reach_sq = reach * reach
    for j in range(unit.hp.shape[0]):
        if j == i or not sc.alive[j] or (mask_i & static.collide_mask[j]) == 0:
            continue
        rpx = unit.pos[j, 0] - pix
        rpy = unit.pos[j, 1] - piy
        dist_sq = rpx * rpx + rpy * rpy
        if dist_sq > reach_sq:
            continue
        comb = radius_i + static.radius[j]
        vjx = unit.vel[j, 0]
        vjy = unit.vel[j, 1]
        if sqrt32(dist_sq) - comb > (speed_i + sqrt32(vjx * vjx + vjy * vjy)) / INV_HORIZON:
            continue
        rvx = vix - vjx
        rvy = viy - vjy
        comb_sq = comb * comb
        if dist_sq > comb_sq:
            wx = rvx - INV_HORIZON * rpx
            wy = rvy - INV_HORIZON * rpy
            w_sq = wx * wx + wy * wy
            dot1 = wx * rpx + wy * rpy
            if dot1 < ZERO and dot1 * dot1 > comb_sq * w_sq:
                w_len = sqrt32(w_sq)
                uwx = wx / w_len
                uwy = wy / w_len
                dx = uwy
                dy = -uwx
                s = comb * INV_HORIZON - w_len
                ux = s * uwx
                uy = s * uwy
            else:
                leg = sqrt32(dist_sq - comb_sq)
                side_det = det2(rpx, rpy, wx, wy)
                if side_det > ZERO or (side_det == ZERO and static.side[i] == 1):
                    dx = (rpx * leg - rpy * comb) / dist_sq
                    dy = (rpx * comb + rpy * leg) / dist_sq
                else:
                    dx = -(rpx * leg + rpy * comb) / dist_sq
                    dy = -(rpy * leg - rpx * comb) / dist_sq
                dot2 = rvx * dx + rvy * dy
                ux = dot2 * dx - rvx
                uy = dot2 * dy - rvy
        else:
            wx = rvx - rpx
            wy = rvy - rpy
            w_len = max(sqrt32(wx * wx + wy * wy), EPS6)
            uwx = wx / w_len
            uwy = wy / w_len
            dx = uwy
            dy = -uwx
            s = comb - w_len
            ux = s * uwx
            uy = s * uwy
        share = HALF if (sc.dx[j] != ZERO or sc.dy[j] != ZERO) else ONE
        sc.line_px[n] = vix + share * ux
        sc.line_py[n] = viy + share * uy
        sc.line_dx[n] = dx
        sc.line_dy[n] = dy
        n += 1
    return n


def orca_lp1(lpx, lpy, ldx, ldy, k, vmax, ox, oy, opt_dir):
    """RVO2's ``linearProgram1``: the velocity on line ``k`` permitted by lines ``0..k-1`` and within
    ``vmax``, closest to (ox, oy) (or furthest along it when ``opt_dir``): ``(ok, x, y)``.  When the
    direction is perpendicular to the line every permitted point is optimal; RVO2 takes one end, here
    the middle, so that a mirror-image problem gets the mirror-image answer (seat symmetry)."""
    dot = lpx[k] * ldx[k] + lpy[k] * ldy[k]
    disc = dot * dot + vmax * vmax - (lpx[k] * lpx[k] + lpy[k] * lpy[k])
    if disc < ZERO:
        return False, ZERO, ZERO
    sd = sqrt32(disc)
    t_left = -dot - sd
    t_right = -dot + sd
    for m in range(k):
        den = det2(ldx[k], ldy[k], ldx[m], ldy[m])
        num = det2(ldx[m], ldy[m], lpx[k] - lpx[m], lpy[k] - lpy[m])
        if abs(den) <= RVO_EPSILON:
            if num < ZERO:
                return False, ZERO, ZERO
            continue
        t = num / den
        if den >= ZERO:
            t_right = min(t_right, t)
        else:
            t_left = max(t_left, t)
        if t_left > t_right:
            return False, ZERO, ZERO
    if opt_dir:
        along = ox * ldx[k] + oy * ldy[k]
        t = t_right if along > ZERO else (t_left if along < ZERO else HALF * (t_left + t_right))
    else:
        t = min(max(ldx[k] * (ox - lpx[k]) + ldy[k] * (oy - lpy[k]), t_left), t_right)
    return True, lpx[k] + t * ldx[k], lpy[k] + t * ldy[k]


def orca_lp2(lpx, lpy, ldx, ldy, n, vmax, ox, oy, opt_dir):
    """RVO2's ``linearProgram2``: the velocity within ``vmax`` permitted by lines ``0..n-1`` closest
    to (ox, oy) (or furthest along the unit vector (ox, oy) when ``opt_dir``): ``(lines satisfied,
    x, y)``; fewer than ``n`` when infeasible (the result then satisfies the lines before it)."""
    if opt_dir:
        rx = ox * vmax
        ry = oy * vmax
    elif ox * ox + oy * oy > vmax * vmax:
        norm = sqrt32(ox * ox + oy * oy)
        rx = ox / norm * vmax
        ry = oy / norm * vmax
    else:
        rx = ox
        ry = oy
    for k in range(n):
        if det2(ldx[k], ldy[k], lpx[k] - rx, lpy[k] - ry) > ZERO:
            ok, x, y = orca_lp1(lpx, lpy, ldx, ldy, k, vmax, ox, oy, opt_dir)
            if not ok:
                return k, rx, ry
            rx = x
            ry = y
    return n, rx, ry


def orca_lp3(sc, n, begin, vmax, rx, ry):
    """RVO2's ``linearProgram3``: when the lines admit no velocity, the velocity that violates them
    least (minimises the largest distance into a forbidden side), starting from line ``begin``."""
    worst = ZERO
    for i in range(begin, n):
        if det2(sc.line_dx[i], sc.line_dy[i], sc.line_px[i] - rx, sc.line_py[i] - ry) > worst:
            m = 0
            for j in range(i):
                d = det2(sc.line_dx[i], sc.line_dy[i], sc.line_dx[j], sc.line_dy[j])
                if abs(d) <= RVO_EPSILON:
                    if sc.line_dx[i] * sc.line_dx[j] + sc.line_dy[i] * sc.line_dy[j] > ZERO:
                        continue
                    px = HALF * (sc.line_px[i] + sc.line_px[j])
                    py = HALF * (sc.line_py[i] + sc.line_py[j])
                else:
                    t = det2(sc.line_dx[j], sc.line_dy[j], sc.line_px[i] - sc.line_px[j],
                             sc.line_py[i] - sc.line_py[j]) / d
                    px = sc.line_px[i] + t * sc.line_dx[i]
                    py = sc.line_py[i] + t * sc.line_dy[i]
                ddx = sc.line_dx[j] - sc.line_dx[i]
                ddy = sc.line_dy[j] - sc.line_dy[i]
                norm = max(sqrt32(ddx * ddx + ddy * ddy), EPS6)
                sc.proj_px[m] = px
                sc.proj_py[m] = py
                sc.proj_dx[m] = ddx / norm
                sc.proj_dy[m] = ddy / norm
                m += 1
            k, x, y = orca_lp2(sc.proj_px, sc.proj_py, sc.proj_dx, sc.proj_dy, m, vmax, -sc.line_dy[i],
                               sc.line_dx[i], True)
            if k == m:
                rx = x
                ry = y
            worst = det2(sc.line_dx[i], sc.line_dy[i], sc.line_px[i] - rx, sc.line_py[i] - ry)
    return rx, ry


def avoid_collisions(unit, static, sc):
    """The step of every living colliding unit (ground units with ground units, colossi with colossi,
    air units with air units: ``static.collide_mask``) with a planned step (``dx``, ``dy``) becomes
    ORCA's velocity (``orca_lines``): the one closest to the planned step among those within its
    speed that collide with no neighbour within the horizon, so moving units steer round the
    others; a unit with no planned step stays put (SMAClite's ``compute_new_velocity``).  Neighbours
    are the units it could touch within the horizon (``orca_lines``; RVO2's ``neighborDist`` must
    cover them.  SMAClite's radius-only query lets units walk into each other by up to a step
    before they react)."""
    U = unit.hp.shape[0]
    r_max = ZERO
    v_max = ZERO
    for u in range(U):
        if static.collides[u]:
            r_max = max(r_max, static.radius[u])
            v_max = max(v_max, static.speed[u])
    lines_unit = OrcaUnits(unit.pos, unit.vel, unit.hp)  # small records: numba passes a record array by array
    lines_static = OrcaStatic(static.collide_mask, static.radius, static.speed, static.side)
    lines_sc = OrcaScratch(sc.alive, sc.dx, sc.dy, sc.line_px, sc.line_py, sc.line_dx, sc.line_dy)
    for i in range(U):
        sc.avoid_vx[i] = sc.dx[i]
        sc.avoid_vy[i] = sc.dy[i]
        if not (static.collides[i] and sc.alive[i]) or (sc.dx[i] == ZERO and sc.dy[i] == ZERO):
            continue
        reach = static.radius[i] + r_max + (static.speed[i] + v_max) / INV_HORIZON
        n = orca_lines(i, lines_unit, lines_static, lines_sc, reach)
        if n == 0:
            continue
        vmax = static.speed[i]
        k, rx, ry = orca_lp2(sc.line_px, sc.line_py, sc.line_dx, sc.line_dy, n, vmax, sc.dx[i], sc.dy[i], False)
        if k < n:
            rx, ry = orca_lp3(sc, n, k, vmax, rx, ry)
        sc.avoid_vx[i] = rx
        sc.avoid_vy[i] = ry
    for i in range(U):
        sc.dx[i] = sc.avoid_vx[i]
        sc.dy[i] = sc.avoid_vy[i]


def apply_moves(unit, static, maps, sc):
    """Living units take their step if it ends on ground they may stand on; a blocked step slides
    along x, else along y, else the unit stays.  A coordinate that moves lands on the ``snap`` grid
    (approx.: 2^-16 map units, far below any distance that matters; it keeps mirror images exact).
    ``vel`` keeps the displacement taken."""
    for u in range(unit.hp.shape[0]):
        x = unit.pos[u, 0]
        y = unit.pos[u, 1]
        nx = snap(np.float64(x) + np.float64(sc.dx[u])) if sc.dx[u] != ZERO else x
        ny = snap(np.float64(y) + np.float64(sc.dy[u])) if sc.dy[u] != ZERO else y
        air, cliff = static.is_air[u], static.cliff_walker[u]
        full = walkable_at(nx, ny, air, cliff, maps) or not sc.alive[u]
        slide_x = not full and walkable_at(nx, y, air, cliff, maps)
        slide_y = not full and not slide_x and walkable_at(x, ny, air, cliff, maps)
        unit.pos[u, 0] = nx if sc.alive[u] and (full or slide_x) else x
        unit.pos[u, 1] = ny if sc.alive[u] and (full or slide_y) else y
        unit.vel[u, 0] = unit.pos[u, 0] - x
        unit.vel[u, 1] = unit.pos[u, 1] - y


def regenerate_and_die(unit, static, sc):
    """Shields regenerate ``SHIELD_PER_LOOP`` after ``SHIELD_DELAY_LOOPS`` loops without damage, zerg
    units ``zerg_regen`` hp per loop, Medivac energy ``ENERGY_PER_LOOP``; a baneling that fired dies;
    a unit at hp <= 0 dies (hp 0, shield 0, idle); a baneling that dies without having fired is
    marked ``detonate``: its blast goes off in the next loop (``collect_hits``; the one-loop delay is
    ours: the game explodes it as it dies)."""
    for u in range(unit.hp.shape[0]):
        unit.detonate[u] = False
        if sc.hp_loss[u] + sc.shield_loss[u] > ZERO:
            unit.since_damage[u] = ZERO
        else:
            unit.since_damage[u] = unit.since_damage[u] + ONE
        h = unit.hp[u] - sc.hp_loss[u] + F(sc.healed[u])
        if static.explodes[u] and sc.fire[u]:
            h = ZERO
        if h > ZERO:
            h = h + static.zerg_regen[u]
        regen = SHIELD_PER_LOOP if unit.since_damage[u] >= SHIELD_DELAY_LOOPS else ZERO
        if h > ZERO:
            unit.shield[u] = min(max(unit.shield[u] - sc.shield_loss[u] + regen, ZERO), static.shield_max[u])
        else:
            unit.shield[u] = ZERO
        if static.heals[u]:
            unit.energy[u] = min(unit.energy[u] + ENERGY_PER_LOOP, MAX_ENERGY)
        if sc.alive[u] and h > ZERO:
            unit.hp[u] = min(h, static.hp_max[u])
        else:
            unit.detonate[u] = sc.alive[u] and static.explodes[u] and not sc.fire[u]
            unit.hp[u] = ZERO
            unit.order[u] = STOP


def game_loop(jitter, unit, static, maps, flags, sc):
    """One game loop of one game (module docstring, rules 1-7); ``jitter`` (U,) the cooldown jitter
    of a shot fired in it."""
    for u in range(unit.hp.shape[0]):
        sc.alive[u] = unit.hp[u] > ZERO
    scripted = flags.scripted0 or flags.scripted1
    if scripted:
        aim(unit, static, sc)
        if flags.scripted0:
            scripted_orders(0, unit, static, flags, sc)
        if flags.scripted1:
            scripted_orders(1, unit, static, flags, sc)
    aim(unit, static, sc)
    fire_weapons(jitter, unit, static, sc)
    deal_damage(unit, static, sc)
    if scripted:
        remember_attackers(unit, sc)
    heal(unit, static, sc)
    plan_moves(unit, static, maps, flags, sc)
    if flags.colliders:
        avoid_collisions(unit, static, sc)
    apply_moves(unit, static, maps, sc)
    regenerate_and_die(unit, static, sc)


def advance_game(jitter, unit, static, maps, flags, sc):
    """``jitter.shape[0]`` game loops of one game; ``jitter`` (loops, U)."""
    for k in range(jitter.shape[0]):
        game_loop(jitter[k], unit, static, maps, flags, sc)


def hunt_goals(pos, hp, goal, o0, o1, t0, t1):
    """The attack-move point of a scripted side without a map trigger (SMACv2's maps: the game's
    built-in AI commands player 2): every living unit of ``o0..o1`` attack-moves to the closest living
    unit of ``t0..t1`` (centre distance), re-aimed at every environment step; approximation, no
    source describes the built-in AI (docs/design/smacv2.md §4)."""
    for i in range(o0, o1):
        if not hp[i] > ZERO:
            continue
        best = INF
        for j in range(t0, t1):
            if hp[j] > ZERO:
                d = distance(pos[j, 0] - pos[i, 0], pos[j, 1] - pos[i, 1])
                if d < best:
                    best = d
                    goal[i, 0] = pos[j, 0]
                    goal[i, 1] = pos[j, 1]
