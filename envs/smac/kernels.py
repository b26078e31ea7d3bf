"""The SMAC battle rules compiled with numba: the same rules as ``engine.BattleEngine``, one game
at a time, for the CPU.

Why a second implementation: one game of a few units is a few hundred tiny tensor operations per
step, and torch's per-operation cost (several microseconds) makes a single game ~100x slower than
the arithmetic it does.  These kernels loop over games and units in compiled code instead; the
torch engine stays for large batches on a GPU.  ``fast_engine.NumbaEngine`` runs them on the same
state tensors (numpy views of them).

The two implementations must agree bit for bit: every rule here is the torch engine's rule, in the
same order of float32 operations, with the engine's two arithmetic rules (``engine`` docstring,
"Arithmetic"): distances are float64 square roots rounded once (``_distance``) and sums over units
are accumulated in float64.  ``tests/envs/test_smac_kernels.py`` plays thousands of random games step
by step on both and requires identical states, observations, masks, rewards and outcomes.

Layout of the static tables (built by ``fast_engine.static_tables``): ``uf`` float32 rows, ``ub`` bool
rows and ``ui`` int64 rows, indexed by the row constants below, each row over the U units.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .units import (
    COLOSSUS_LINE_HALF_LENGTH,
    COLOSSUS_LINE_HALF_WIDTH,
    LOOPS_PER_SECOND,
    MEDIVAC_ENERGY_REGEN_PER_S,
    MEDIVAC_HEAL_PER_S,
    MEDIVAC_HP_PER_ENERGY,
    MEDIVAC_MAX_ENERGY,
    MOVE_AMOUNT,
    SHIELD_REGEN_DELAY_S,
    SHIELD_REGEN_PER_S,
    SIGHT_RANGE,
)

F = np.float32
INF = F(np.inf)
ZERO, HALF, ONE = F(0.0), F(0.5), F(1.0)
EPS6, EPS3 = F(1e-6), F(1e-3)
SIGHT = F(SIGHT_RANGE)
MOVE = F(MOVE_AMOUNT)
LINE_HALF_WIDTH, LINE_HALF_LENGTH = F(COLOSSUS_LINE_HALF_WIDTH), F(COLOSSUS_LINE_HALF_LENGTH)
HEAL_PER_LOOP = F(MEDIVAC_HEAL_PER_S / LOOPS_PER_SECOND)
HP_PER_ENERGY = F(MEDIVAC_HP_PER_ENERGY)
ENERGY_PER_LOOP = F(MEDIVAC_ENERGY_REGEN_PER_S / LOOPS_PER_SECOND)
MAX_ENERGY = F(MEDIVAC_MAX_ENERGY)
SHIELD_DELAY_LOOPS = F(SHIELD_REGEN_DELAY_S * LOOPS_PER_SECOND)
SHIELD_PER_LOOP = F(SHIELD_REGEN_PER_S / LOOPS_PER_SECOND)
THREAT_BONUS = F(1e3)
GRID = 32  # maps.MAP_SIZE
GRID_HI = F(GRID - 1)
PATH_HI = F(GRID - 1e-4)

# orders (engine.STOP, ...) and trigger kinds (engine.NO_ORDER, ...)
O_STOP, O_MOVE, O_ATTACK, O_HEAL, O_AMOVE = 0, 1, 2, 3, 4
T_NONE, T_AMOVE, T_GROUP = 0, 1, 2

# rows of uf (float32)
HP_MAX, SHIELD_MAX, ARMOR, SPEED, RADIUS, RANGE, CD_LOOPS, SCAN, ACCEL, SPLASH_R, ZERG_REGEN = range(11)
N_UF = 11
# rows of ub (bool)
IS_AIR, HITS_AIR, HEALS, IS_LINE, EXPLODES, IS_BIO, CLIFF, ARMED, COLLIDES, GROUP_TARGET, SPLASHES = range(11)
N_UB = 11
# rows of ui (int64)
SIDE, HITS, TRIGGER_KIND = range(3)
N_UI = 3
# flags (int64)
FL_N0, FL_SCRIPTED0, FL_SCRIPTED1, FL_ANY_ACCEL, FL_GROUP_ORDER, FL_ROUTE, FL_PATHS_CONVEX, FL_CLIFF_CONVEX, \
    FL_CLIFF_OWN_TABLE, FL_HEALER0, FL_HEALER1, FL_COLLIDERS = range(12)
N_FLAGS = 12


@njit(cache=True)
def _distance(dx, dy):
    """float32 sqrt(dx^2 + dy^2) computed in float64 (engine.distance)."""
    x = np.float64(dx)
    y = np.float64(dy)
    return np.float32(math.sqrt(x * x + y * y))


@njit(cache=True)
def _walkable(x, y, air, cliff, walkable, cliff_walkable):
    """engine._walkable for one unit."""
    inside = x >= ZERO and x < F(GRID) and y >= ZERO and y < F(GRID)
    cell = int(min(max(x, ZERO), GRID_HI)) * GRID + int(min(max(y, ZERO), GRID_HI))
    ground = cliff_walkable[cell] if cliff else walkable[cell]
    return inside and (air or ground)


@njit(cache=True)
def _direction(px, py, gx, gy, convex, hop, nbr):
    """pathing.PathTable.directions for one unit: the vector to walk along from p towards g."""
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
    hx = F(ax + nbr[k, 0]) + HALF
    hy = F(ay + nbr[k, 1]) + HALF
    return hx - px, hy - py


# ----------------------------------------------------------------------------------- commands
@njit(cache=True)
def command(side, actions, pos, order, target, goal, uf, ub, flags):
    """engine.BattleEngine.command for every game: ``actions`` (E, n_side) of ``side``."""
    E = actions.shape[0]
    n0 = flags[FL_N0]
    U = pos.shape[1]
    start = 0 if side == 0 else n0
    other = n0 if side == 0 else 0
    for e in range(E):
        for i in range(actions.shape[1]):
            u = start + i
            a = actions[e, i]
            if a >= 2 and a <= 5:
                k = a - 2
                dx = ZERO
                dy = ZERO
                if k == 0:
                    dy = ONE * MOVE
                elif k == 1:
                    dy = -ONE * MOVE
                elif k == 2:
                    dx = ONE * MOVE
                else:
                    dx = -ONE * MOVE
                goal[e, u, 0] = pos[e, u, 0] + dx
                goal[e, u, 1] = pos[e, u, 1] + dy
                order[e, u] = O_MOVE
            elif a == 1:
                order[e, u] = O_STOP
            elif a >= 6:
                t = a - 6
                heals = ub[HEALS, u]
                tu = start + t if heals else other + t
                tgt_air = ub[IS_AIR, min(tu, U - 1)]
                if heals or (not tgt_air) or ub[HITS_AIR, u]:
                    order[e, u] = O_HEAL if heals else O_ATTACK
                    target[e, u] = tu


# ----------------------------------------------------------------------------- scripted AI
@njit(cache=True)
def _scripted_orders(e, side, alive, tgt_edge, pos, hp, order, target, goal, trigger_goal, last_attacker,
                     uf, ub, ui, can_target, flags):
    """engine.BattleEngine._scripted_orders for one side of game ``e``."""
    U = pos.shape[1]
    n0 = flags[FL_N0]
    o0, o1 = (0, n0) if side == 0 else (n0, U)
    t0, t1 = (n0, U) if side == 0 else (0, n0)
    n_other = t1 - t0
    healer_side = flags[FL_HEALER0] if side == 0 else flags[FL_HEALER1]
    cx = cy = ZERO
    if healer_side:
        sx = sy = 0.0
        army = ZERO
        for j in range(o0, o1):
            if alive[j] and not ub[HEALS, j]:
                sx += np.float64(pos[e, j, 0] * ONE)
                sy += np.float64(pos[e, j, 1] * ONE)
                army += ONE
        # the torch engine sums p * army over every own unit (zeros included): the same exact sum
        cx = F(sx) / max(army, ONE)
        cy = F(sy) / max(army, ONE)
    for i in range(o0, o1):
        if not alive[i]:
            continue
        best = 0
        best_s = INF
        la = last_attacker[e, i]
        la_rel = min(max(la - t0, 0), n_other - 1)
        la_hittable = False
        la_edge = INF
        g_best = 0
        g_d = INF
        for jj in range(n_other):
            j = t0 + jj
            edge = _distance(pos[e, j, 0] - pos[e, i, 0], pos[e, j, 1] - pos[e, i, 1]) - (uf[RADIUS, i] + uf[RADIUS, j])
            hittable = can_target[i, j] and alive[j] and ub[ARMED, i]
            if jj == la_rel:
                la_hittable = hittable
                la_edge = edge
            if hittable and edge <= uf[SCAN, i]:
                threat = can_target[j, i] and ub[ARMED, j]
                score = edge - THREAT_BONUS * (ONE if threat else ZERO)
                if score < best_s:
                    best_s = score
                    best = jj
            if flags[FL_GROUP_ORDER] and ub[GROUP_TARGET, j] and alive[j] and edge < g_d:
                g_d = edge
                g_best = jj
        found = best_s < INF
        la_ok = la >= t0 and la < t1 and la_hittable and la_edge <= SIGHT
        if not found and la_ok:
            best = la_rel
            found = True
        tgt = target[e, i]
        attacking = order[e, i] == O_ATTACK and alive[tgt]
        in_range = attacking and tgt_edge[i] <= uf[RANGE, i]
        chasing = attacking and tgt_edge[i] <= SIGHT
        kind = ui[TRIGGER_KIND, i]
        new_target = tgt if (in_range or not found) else best + t0
        if in_range or found or chasing:
            new_order = O_ATTACK
        elif kind == T_AMOVE:
            new_order = O_AMOVE
        else:
            new_order = O_STOP
        if flags[FL_GROUP_ORDER] and kind == T_GROUP and g_d < INF:
            new_order = O_ATTACK
            new_target = tgt if (attacking and ub[GROUP_TARGET, tgt]) else g_best + t0
        gx = trigger_goal[e, i, 0]
        gy = trigger_goal[e, i, 1]
        if healer_side and ub[HEALS, i]:
            h_best = 0
            h_f = INF
            for jj in range(o1 - o0):
                j = o0 + jj
                hurt = alive[j] and ub[IS_BIO, j] and hp[e, j] < uf[HP_MAX, j]
                if j != i and hurt:
                    d = _distance(pos[e, j, 0] - pos[e, i, 0], pos[e, j, 1] - pos[e, i, 1])
                    if d <= SIGHT:
                        frac = hp[e, j] / uf[HP_MAX, j]
                        if frac < h_f:
                            h_f = frac
                            h_best = jj
            new_order = O_HEAL if h_f < INF else O_MOVE
            new_target = h_best + o0
            gx, gy = cx, cy
        order[e, i] = new_order
        target[e, i] = new_target
        goal[e, i, 0] = gx
        goal[e, i, 1] = gy


# ---------------------------------------------------------------------------------- one loop
@njit(cache=True)
def _loop(e, jitter, pos, hp, shield, energy, cooldown, since_damage, order, target, goal, trigger_goal, cur_speed,
          last_attacker, uf, ub, ui, raw_damage, can_target, walkable, cliff_walkable, hop, cliff_hop, nbr, flags,
          sf, sb, sd):
    """engine.BattleEngine._loop for game ``e`` (its steps 1-8, in the same order); ``sf``, ``sb``, ``sd``
    are scratch rows (float32, bool, float64) over the units, allocated once per call of ``advance``."""
    U = pos.shape[1]
    alive, attacking, healing, in_range, fire = sb[0], sb[1], sb[2], sb[3], sb[4]
    tvx, tvy, tdist, tedge, hp_loss, shield_loss, dxs, dys = sf[0], sf[1], sf[2], sf[3], sf[4], sf[5], sf[6], sf[7]
    R64, N64, B64, healed64 = sd[0], sd[1], sd[2], sd[3]
    sd[:] = 0.0
    for u in range(U):
        alive[u] = hp[e, u] > ZERO
    scripted = flags[FL_SCRIPTED0] or flags[FL_SCRIPTED1]
    if scripted:
        for u in range(U):
            t = target[e, u]
            vx = pos[e, t, 0] - pos[e, u, 0]
            vy = pos[e, t, 1] - pos[e, u, 1]
            tedge[u] = _distance(vx, vy) - (uf[RADIUS, u] + uf[RADIUS, t])
        for side in range(2):
            if flags[FL_SCRIPTED0 + side]:
                _scripted_orders(e, side, alive, tedge, pos, hp, order, target, goal, trigger_goal, last_attacker,
                                 uf, ub, ui, can_target, flags)
    for u in range(U):
        t = target[e, u]
        tvx[u] = pos[e, t, 0] - pos[e, u, 0]
        tvy[u] = pos[e, t, 1] - pos[e, u, 1]
        tdist[u] = _distance(tvx[u], tvy[u])
        tedge[u] = tdist[u] - (uf[RADIUS, u] + uf[RADIUS, t])

    # 2. orders on dead targets end; 3. cooldowns and firing
    for u in range(U):
        o = order[e, u]
        if (o == O_ATTACK or o == O_HEAL) and not alive[target[e, u]]:
            order[e, u] = O_STOP
        attacking[u] = order[e, u] == O_ATTACK and alive[u]
        healing[u] = order[e, u] == O_HEAL and alive[u]
        in_range[u] = tedge[u] <= uf[RANGE, u]
        cd = cooldown[e, u] - ONE
        fire[u] = attacking[u] and in_range[u] and cd <= ZERO and ub[ARMED, u]
        cooldown[e, u] = cd + uf[CD_LOOPS, u] + F(jitter[u]) if fire[u] else max(cd, ZERO)

    # 4. damage (engine._damage): sums over the hits landing on each unit, in float64
    for u in range(U):
        if fire[u] and not ub[SPLASHES, u]:
            t = target[e, u]
            h = F(ui[HITS, u])
            raw = raw_damage[u, t]
            R64[t] += raw * h
            N64[t] += h
            B64[t] += max(raw - uf[ARMOR, t], HALF) * h
    for s in range(U):
        if not (fire[s] and ub[SPLASHES, s]):
            continue
        t = target[e, s]
        d = max(tdist[s], EPS6)
        ux = tvx[s] / d
        uy = tvy[s] / d
        n = F(ui[HITS, s])
        for j in range(U):
            hit = j == t
            if not hit and ui[SIDE, j] != ui[SIDE, s] and alive[j] and not ub[IS_AIR, j]:
                rx = pos[e, j, 0] - pos[e, s, 0]
                ry = pos[e, j, 1] - pos[e, s, 1]
                r = uf[RADIUS, j]
                if ub[IS_LINE, s]:
                    dtx = rx - tvx[s]
                    dty = ry - tvy[s]
                    along = dtx * ux + dty * uy
                    across = dtx * -uy + dty * ux
                    hit = abs(along) <= LINE_HALF_WIDTH + r and abs(across) <= LINE_HALF_LENGTH + r
                else:
                    hit = _distance(rx, ry) <= uf[SPLASH_R, s] + r
            if hit:
                h = raw_damage[s, j]
                R64[j] += n * h
                N64[j] += n
                B64[j] += n * max(h - uf[ARMOR, j], HALF)
    for j in range(U):
        R = F(R64[j])
        N = F(N64[j])
        bare = F(B64[j])
        absorbed = min(shield[e, j], R)
        through = R - absorbed
        mean_hit = R / max(N, ONE)
        n_through = F(math.ceil(through / max(mean_hit, EPS6) - EPS6))
        partial = max(through - uf[ARMOR, j] * n_through, ZERO)
        hp_loss[j] = partial if absorbed > ZERO else bare
        shield_loss[j] = absorbed
    if scripted:  # who last fired at whom: the highest-indexed shooter
        for u in range(U):
            if fire[u]:
                last_attacker[e, target[e, u]] = u

    # 5. healing (reads hp before this loop's damage)
    for u in range(U):
        if healing[u]:
            t = target[e, u]
            tgt_hp = hp[e, t]
            amount = ZERO
            if in_range[u] and tgt_hp < uf[HP_MAX, t] and ub[IS_BIO, t]:
                missing = max(uf[HP_MAX, t] - tgt_hp, ZERO)
                amount = min(min(missing, energy[e, u] * HP_PER_ENERGY), HEAL_PER_LOOP)
            healed64[t] += amount
            energy[e, u] = energy[e, u] - amount / HP_PER_ENERGY

    # 6. movement
    for u in range(U):
        chase = (attacking[u] or healing[u]) and not in_range[u]
        chase_len = max(tedge[u] - uf[RANGE, u] + EPS3, ZERO)
        gx = goal[e, u, 0] - pos[e, u, 0]
        gy = goal[e, u, 1] - pos[e, u, 1]
        goal_d = _distance(gx, gy)
        moving = order[e, u] == O_MOVE and alive[u]
        amoving = order[e, u] == O_AMOVE and alive[u] and goal_d > HALF
        speed = uf[SPEED, u]
        if flags[FL_ANY_ACCEL]:
            if chase or moving or amoving:
                cur_speed[e, u] = min(cur_speed[e, u] + uf[ACCEL, u], speed)
            else:
                cur_speed[e, u] = ZERO if uf[ACCEL, u] > ZERO else speed
            if uf[ACCEL, u] > ZERO:
                speed = cur_speed[e, u]
        if chase:
            vx, vy = tvx[u], tvy[u]
            length = min(speed, chase_len)
        else:
            vx, vy = gx, gy
            if moving:
                length = min(speed, goal_d)
            elif amoving:
                length = speed
            else:
                length = ZERO
        if flags[FL_ROUTE] and (chase or amoving) and not ub[IS_AIR, u]:
            destx = pos[e, u, 0] + vx
            desty = pos[e, u, 1] + vy
            if ub[CLIFF, u] and flags[FL_CLIFF_OWN_TABLE]:
                vx, vy = _direction(pos[e, u, 0], pos[e, u, 1], destx, desty, flags[FL_CLIFF_CONVEX], cliff_hop, nbr)
            else:
                vx, vy = _direction(pos[e, u, 0], pos[e, u, 1], destx, desty, flags[FL_PATHS_CONVEX], hop, nbr)
        norm = max(_distance(vx, vy), EPS6)
        dxs[u] = vx / norm * length
        dys[u] = vy / norm * length
        if moving and goal_d <= speed:
            order[e, u] = O_STOP
    for u in range(U):  # engine._move
        x = pos[e, u, 0]
        y = pos[e, u, 1]
        nx = x + dxs[u]
        ny = y + dys[u]
        air, cliff = ub[IS_AIR, u], ub[CLIFF, u]
        full = _walkable(nx, ny, air, cliff, walkable, cliff_walkable) or not alive[u]
        slide_x = not full and _walkable(nx, y, air, cliff, walkable, cliff_walkable)
        slide_y = not full and not slide_x and _walkable(x, ny, air, cliff, walkable, cliff_walkable)
        pos[e, u, 0] = nx if alive[u] and (full or slide_x) else x
        pos[e, u, 1] = ny if alive[u] and (full or slide_y) else y

    # 7. regeneration; 8. deaths
    for u in range(U):
        if hp_loss[u] + shield_loss[u] > ZERO:
            since_damage[e, u] = ZERO
        else:
            since_damage[e, u] = since_damage[e, u] + ONE
        h = hp[e, u] - hp_loss[u] + F(healed64[u])
        if ub[EXPLODES, u] and fire[u]:
            h = ZERO
        if h > ZERO:
            h = h + uf[ZERG_REGEN, u]
        regen = SHIELD_PER_LOOP if since_damage[e, u] >= SHIELD_DELAY_LOOPS else ZERO
        if h > ZERO:
            shield[e, u] = min(max(shield[e, u] - shield_loss[u] + regen, ZERO), uf[SHIELD_MAX, u])
        else:
            shield[e, u] = ZERO
        if ub[HEALS, u]:
            energy[e, u] = min(energy[e, u] + ENERGY_PER_LOOP, MAX_ENERGY)
        if alive[u] and h > ZERO:
            hp[e, u] = min(h, uf[HP_MAX, u])
        else:
            hp[e, u] = ZERO
            order[e, u] = O_STOP


@njit(cache=True)
def _separate(e, pos, hp, uf, ub, walkable):
    """engine.BattleEngine._separate for game ``e``."""
    U = pos.shape[1]
    m = 0
    for u in range(U):
        if ub[COLLIDES, u]:
            m += 1
    c = np.empty(m, np.int64)
    k = 0
    for u in range(U):
        if ub[COLLIDES, u]:
            c[k] = u
            k += 1
    px = np.empty(m, np.float32)
    py = np.empty(m, np.float32)
    sx = np.zeros(m, np.float64)
    sy = np.zeros(m, np.float64)
    any_overlap = False
    for a in range(m):
        i = c[a]
        px[a] = pos[e, i, 0]
        py[a] = pos[e, i, 1]
    for a in range(m):
        i = c[a]
        if not hp[e, i] > ZERO:
            continue
        for b in range(m):
            j = c[b]
            if a == b or not hp[e, j] > ZERO:
                continue
            dx = px[a] - px[b]
            dy = py[a] - py[b]
            d = _distance(dx, dy)
            overlap = max(uf[RADIUS, i] + uf[RADIUS, j] - d, ZERO)
            if overlap > ZERO:
                any_overlap = True
                w = overlap / max(d, EPS6) * HALF
                sx[a] += w * dx
                sy[a] += w * dy
    if not any_overlap:
        return
    for a in range(m):
        i = c[a]
        qx = px[a] + F(sx[a])
        qy = py[a] + F(sy[a])
        if hp[e, i] > ZERO and _walkable(qx, qy, False, False, walkable, walkable):
            pos[e, i, 0] = qx
            pos[e, i, 1] = qy


@njit(cache=True)
def _advance_game(e, jitter, pos, hp, shield, energy, cooldown, since_damage, order, target, goal, trigger_goal,
                  cur_speed, last_attacker, uf, ub, ui, raw_damage, can_target, walkable, cliff_walkable, hop,
                  cliff_hop, nbr, flags):
    U = pos.shape[1]
    sf = np.empty((8, U), np.float32)
    sb = np.empty((5, U), np.bool_)
    sd = np.empty((4, U), np.float64)
    for k in range(jitter.shape[0]):
        _loop(e, jitter[k, e], pos, hp, shield, energy, cooldown, since_damage, order, target, goal, trigger_goal,
              cur_speed, last_attacker, uf, ub, ui, raw_damage, can_target, walkable, cliff_walkable, hop, cliff_hop,
              nbr, flags, sf, sb, sd)
    if flags[FL_COLLIDERS]:
        _separate(e, pos, hp, uf, ub, walkable)


@njit(cache=True)
def advance(jitter, pos, hp, shield, energy, cooldown, since_damage, order, target, goal, trigger_goal, cur_speed,
            last_attacker, uf, ub, ui, raw_damage, can_target, walkable, cliff_walkable, hop, cliff_hop, nbr, flags):
    """``jitter.shape[0]`` game loops of every game, then the separation of overlapping units
    (engine.BattleEngine.advance); ``jitter`` (loops, E, U) int64 cooldown jitters."""
    for e in range(pos.shape[0]):
        _advance_game(e, jitter, pos, hp, shield, energy, cooldown, since_damage, order, target, goal, trigger_goal,
                      cur_speed, last_attacker, uf, ub, ui, raw_damage, can_target, walkable, cliff_walkable, hop,
                      cliff_hop, nbr, flags)
