"""SMAC's available actions, observations, state, rewards and outcomes, written once for both builds
(``build.py``), in the float32 arithmetic of ``rules.py``.

Every function fills one game's rows.  ``px``, ``py`` (U,) are the positions in the seat's frame
(mirrored when the seat is: ``seat_positions``); ``ally0``/``enemy0`` the first unit of the seat's
allies/enemies, ``n``/``m`` their counts; ``config`` the ``FeatureConfig`` flags as int64 in the
order of the ``OBS_*``/``STATE_*`` indices below.  Sizes and layouts: ``features.py``.
"""

from __future__ import annotations

import math

import numpy as np

from .rules import ONE, SIGHT, ZERO, distance
from .units import MOVE_AMOUNT, SHOOT_RANGE

F = np.float32
SHOOT = F(SHOOT_RANGE)
MOVE_HALF = F(MOVE_AMOUNT / 2)
EPS6 = F(1e-6)
N_NO_ATTACK = 6
# SMAC's surrounding points of the pathing/height features, in units of the move amount
SURROUND_X = (0, 0, 2, -2, 1, -1, 1, -1, 0)
SURROUND_Y = (2, -2, 0, 0, 1, -1, -1, 1, 0)

# FeatureConfig flags, in this order, as an int64 array
OBS_ALL_HEALTH, OBS_OWN_HEALTH, OBS_LAST_ACTION, OBS_PATHING, OBS_HEIGHT, OBS_TIMESTEP, STATE_LAST_ACTION, \
    STATE_TIMESTEP = range(8)


def grid_value(grid, x, y, outside):
    """``grid[int(x), int(y)]`` with SMAC's truncation; ``outside`` out of bounds."""
    xi = int(x)
    yi = int(y)
    if xi >= 0 and xi < grid.shape[0] and yi >= 0 and yi < grid.shape[1]:
        return grid[xi, yi]
    return outside


def health_fractions(hp, hp_max, shield, shield_max):
    """(hp / hp_max, shield / shield_max or 0 without shields) of one unit."""
    h = hp / hp_max
    s = shield / max(shield_max, EPS6) if shield_max > ZERO else ZERO
    return h, s


def seat_positions(px, py, pos, map_x, mirror):
    """One game's unit positions in a seat's frame: ``x' = map_x - x`` when the seat is mirrored."""
    for u in range(pos.shape[0]):
        px[u] = F(map_x) - pos[u, 0] if mirror else pos[u, 0]
        py[u] = pos[u, 1]


def avail_actions(out, px, py, hp, ally0, n, enemy0, m, is_medivac, pathing):
    """SMAC's ``get_avail_agent_actions`` of one game into ``out`` bool (n, 6 + m): a dead agent
    only no-op; else stop, the moves whose half-step lands on a pathable cell, and attacks on living
    enemies within the shoot range (Medivacs: heals on living non-Medivac allies)."""
    k_heal = min(n, m)
    for i in range(n):
        a = ally0 + i
        row = out[i]
        for q in range(row.shape[0]):
            row[q] = False
        if not hp[a] > ZERO:
            row[0] = True
            continue
        row[1] = True
        x = px[a]
        y = py[a]
        row[2] = grid_value(pathing, x + ZERO, y + MOVE_HALF, ZERO) > ZERO
        row[3] = grid_value(pathing, x + ZERO, y + -MOVE_HALF, ZERO) > ZERO
        row[4] = grid_value(pathing, x + MOVE_HALF, y + ZERO, ZERO) > ZERO
        row[5] = grid_value(pathing, x + -MOVE_HALF, y + ZERO, ZERO) > ZERO
        if is_medivac[i]:
            for j in range(k_heal):
                b = ally0 + j
                if hp[b] > ZERO and not is_medivac[j]:
                    row[N_NO_ATTACK + j] = distance(px[b] - x, py[b] - y) <= SHOOT
        else:
            for j in range(m):
                b = enemy0 + j
                if hp[b] > ZERO:
                    row[N_NO_ATTACK + j] = distance(px[b] - x, py[b] - y) <= SHOOT


def seen_unit(row, c, first, dx, dy, h, s, health, shield, bits, type_id):
    """One other unit's features at ``row[c:]`` when within sight: [first, dist/9, dx/9, dy/9, (hp,
    (shield)), type bits].  Returns the number written, 0 when out of sight (its features stay 0)."""
    dist = distance(dx, dy)
    if not dist < SIGHT:
        return 0
    scaled = ONE / SIGHT
    row[c] = first
    row[c + 1] = dist * scaled
    row[c + 2] = dx * scaled
    row[c + 3] = dy * scaled
    k = 4
    if health:
        row[c + k] = h * ONE
        k += 1
        if shield:
            row[c + k] = s * ONE
            k += 1
    if bits:
        row[c + k + type_id] = ONE
        k += bits
    return k


def surroundings(row, o, grid, px, py, count, alive_f):
    """``count`` values of ``grid`` at SMAC's surrounding points of the truncated position (1 off
    the grid), times ``alive_f``."""
    tx = F(int(px))
    ty = F(int(py))
    for k in range(count):
        dx = F(SURROUND_X[k] * MOVE_AMOUNT)
        dy = F(SURROUND_Y[k] * MOVE_AMOUNT)
        row[o + k] = grid_value(grid, tx + dx, ty + dy, ONE) * alive_f


def observations(out, avail, last_action, timestep, px, py, hp, shield, hp_max, shield_max, hp_frac, shield_frac,
                 ally0, n, enemy0, m, ally_type, enemy_type, bits, shield_ally, shield_enemy, pathing, height, config):
    """SMAC's ``get_obs_agent`` of every agent of one game into ``out`` (n, obs_size): move
    availability, (pathing, height), enemies, other allies, own features, (timestep).  A unit out of
    sight, or any unit for a dead agent, leaves its features 0.  ``hp_frac``/``shield_frac`` (U,) are
    filled here (scratch rows)."""
    A = avail.shape[1]
    all_health = config[OBS_ALL_HEALTH]
    move = 4 + 8 * config[OBS_PATHING] + 9 * config[OBS_HEIGHT]
    nf_en = 4 + bits + (1 + shield_enemy) * all_health
    nf_al = 4 + bits + (1 + shield_ally) * all_health + A * config[OBS_LAST_ACTION]
    for u in range(hp.shape[0]):
        hp_frac[u], shield_frac[u] = health_fractions(hp[u], hp_max[u], shield[u], shield_max[u])
    for i in range(n):
        a = ally0 + i
        row = out[i]
        for q in range(row.shape[0]):
            row[q] = ZERO
        alive_i = hp[a] > ZERO
        alive_f = ONE if alive_i else ZERO
        for k in range(4):
            row[k] = ONE if avail[i, 2 + k] else ZERO
        o = 4
        if config[OBS_PATHING]:
            surroundings(row, o, pathing, px[a], py[a], 8, alive_f)
            o += 8
        if config[OBS_HEIGHT]:
            surroundings(row, o, height, px[a], py[a], 9, alive_f)
            o += 9
        o = move
        for j in range(m):
            b = enemy0 + j
            if alive_i and hp[b] > ZERO:
                first = ONE if avail[i, N_NO_ATTACK + j] else ZERO
                seen_unit(row, o + j * nf_en, first, px[b] - px[a], py[b] - py[a], hp_frac[b], shield_frac[b],
                          all_health, shield_enemy, bits, enemy_type[j])
        o += m * nf_en
        jj = -1
        for j in range(n):
            if j == i:
                continue
            jj += 1
            b = ally0 + j
            if alive_i and hp[b] > ZERO:
                c = o + jj * nf_al
                k = seen_unit(row, c, ONE, px[b] - px[a], py[b] - py[a], hp_frac[b], shield_frac[b], all_health,
                              shield_ally, bits, ally_type[j])
                if k > 0 and config[OBS_LAST_ACTION]:
                    for q in range(A):
                        row[c + k + q] = last_action[j, q] * ONE
        o += (n - 1) * nf_al
        if config[OBS_OWN_HEALTH]:
            row[o] = hp_frac[a] * alive_f
            o += 1
            if shield_ally:
                row[o] = shield_frac[a] * alive_f
                o += 1
        if bits:
            row[o + ally_type[i]] = ONE * alive_f
            o += bits
        if config[OBS_TIMESTEP]:
            row[o] = timestep


def state_unit(row, c, alive_f, h, with_cooldown, cd, x, y, with_shield, s, bits, type_id):
    """One unit's entries of ``get_state`` from ``row[c]``: [hp, (cooldown), x, y, (shield), (type bits)],
    each times ``alive_f`` (dead units 0). Allies carry the cooldown column, enemies do not."""
    row[c] = h * alive_f
    k = 1
    if with_cooldown:
        row[c + k] = cd * alive_f
        k += 1
    row[c + k] = x * alive_f
    row[c + k + 1] = y * alive_f
    k += 2
    if with_shield:
        row[c + k] = s * alive_f
        k += 1
    if bits:
        row[c + k + type_id] = ONE * alive_f


def state_enemies_and_tail(row, o, nf_en, last_action, timestep, px, py, hp, shield, hp_max, shield_max, n, enemy0,
                           m, enemy_type, bits, shield_enemy, cx, cy, width, height, config):
    """The part of ``state`` and ``state_v2`` after the allies' rows, from column ``o``: per enemy [hp,
    x, y, (shield), type bits] (``nf_en`` columns), dead enemies 0; (last actions), (timestep)."""
    A = last_action.shape[1]
    for j in range(m):
        b = enemy0 + j
        alive_f = ONE if hp[b] > ZERO else ZERO
        h, s = health_fractions(hp[b], hp_max[b], shield[b], shield_max[b])
        state_unit(row, o + j * nf_en, alive_f, h, False, ZERO, (px[b] - cx) / width, (py[b] - cy) / height,
                   shield_enemy, s, bits, enemy_type[j])
    o += m * nf_en
    if config[STATE_LAST_ACTION]:
        for i in range(n):
            for q in range(A):
                row[o + i * A + q] = last_action[i, q]
        o += n * A
    if config[STATE_TIMESTEP]:
        row[o] = timestep


def state(row, last_action, timestep, px, py, hp, shield, hp_max, shield_max, cooldown, energy, max_cd, is_medivac,
          ally0, n, enemy0, m, ally_type, enemy_type, bits, shield_ally, shield_enemy, cx, cy, width, height, config):
    """SMAC's ``get_state`` of one game into ``row`` (state_size,): per ally [hp, cooldown (Medivac:
    energy) / max cooldown, x and y relative to the centre / playable size, (shield), type bits],
    per enemy [hp, x, y, (shield), type bits], dead units 0; (last actions), (timestep)."""
    nf_al = 4 + shield_ally + bits
    nf_en = 3 + shield_enemy + bits
    for q in range(row.shape[0]):
        row[q] = ZERO
    for i in range(n):
        a = ally0 + i
        alive_f = ONE if hp[a] > ZERO else ZERO
        h, s = health_fractions(hp[a], hp_max[a], shield[a], shield_max[a])
        cd = energy[a] / max_cd[i] if is_medivac[i] else cooldown[a] / max_cd[i]
        state_unit(row, i * nf_al, alive_f, h, True, cd, (px[a] - cx) / width, (py[a] - cy) / height,
                   shield_ally, s, bits, ally_type[i])
    state_enemies_and_tail(row, n * nf_al, nf_en, last_action, timestep, px, py, hp, shield, hp_max, shield_max,
                           n, enemy0, m, enemy_type, bits, shield_enemy, cx, cy, width, height, config)


def side_reward(loss_enemy, died_enemy, loss_own, died_own, death_value, negative_scale, death_penalty, only_positive,
                sparse):
    """SMAC's ``reward_battle`` of one side (``rewards.py``) from the float64 sums of hp + shield
    lost and the deaths of each side this step."""
    if sparse:
        return ZERO
    delta_enemy = F(loss_enemy)
    delta_deaths = death_value * F(died_enemy)
    if only_positive:
        return abs(delta_enemy + delta_deaths)
    delta_ally = negative_scale * F(loss_own)
    delta_deaths = delta_deaths - death_penalty * F(died_own)
    return delta_enemy + delta_deaths - delta_ally


def rewards(battle, lost, e, prev, counted_dead, hp, shield, n0, counts_for_survival, death_value, negative_scale,
            death_penalty, only_positive, sparse):
    """SMAC's battle rewards of game ``e`` into ``battle[side, e]`` and whether each side has lost
    (``lost[e, side]``: no unit that counts for survival standing); ``prev`` (hp + shield) and
    ``counted_dead`` (U,) are updated.  ``death_value``, ``negative_scale`` and ``death_penalty``
    (their product, rounded once from the configured floats): float32."""
    loss0 = np.float64(0.0)
    loss1 = np.float64(0.0)
    died0 = 0
    died1 = 0
    standing0 = False
    standing1 = False
    for u in range(hp.shape[0]):
        now = hp[u] + shield[u]
        dead = not hp[u] > ZERO
        if not counted_dead[u]:
            loss = prev[u] if dead else prev[u] - now
            if u < n0:
                loss0 += loss
                died0 += 1 if dead else 0
            else:
                loss1 += loss
                died1 += 1 if dead else 0
            if dead:
                counted_dead[u] = True
        prev[u] = now
        if not dead and counts_for_survival[u]:
            if u < n0:
                standing0 = True
            else:
                standing1 = True
    battle[0, e] = side_reward(loss1, died1, loss0, died0, death_value, negative_scale, death_penalty,
                               only_positive, sparse)
    battle[1, e] = side_reward(loss0, died0, loss1, died1, death_value, negative_scale, death_penalty,
                               only_positive, sparse)
    lost[e, 0] = not standing0
    lost[e, 1] = not standing1


def finish(won, lost, battle, win, defeat, divisor, sparse, scale):
    """One side's step reward of one game: battle reward + ``win``/``defeat`` terms (sparse: +1/-1),
    divided by ``divisor`` when scaled (``rewards.py``)."""
    w = ONE if won else ZERO
    lo = ONE if lost else ZERO
    if sparse:
        r = w - lo
    else:
        r = battle + win * w + defeat * lo
    if scale:
        r = r / divisor
    return r


def outcome(e, lost, steps, limit, hp, n0, won, draw, timeout, done, winner, dead):
    """The outcome of game ``e`` from ``lost`` (E, 2) and its episode steps: ``won`` (2, E),
    ``draw``, ``timeout``, ``done``, ``winner`` (0, 1 or -1) and ``dead`` (2, E) the dead units per
    side.  Both sides down: a draw; the episode limit reached: a draw (timeout)."""
    ended = lost[e, 0] or lost[e, 1]
    timeout[e] = not ended and steps >= limit
    done[e] = ended or timeout[e]
    won[0, e] = lost[e, 1] and not lost[e, 0]
    won[1, e] = lost[e, 0] and not lost[e, 1]
    draw[e] = (lost[e, 0] and lost[e, 1]) or timeout[e]
    winner[e] = 0 if won[0, e] else (1 if won[1, e] else -1)
    d0 = 0
    d1 = 0
    for u in range(hp.shape[0]):
        if not hp[u] > ZERO:
            if u < n0:
                d0 += 1
            else:
                d1 += 1
    dead[0, e] = d0
    dead[1, e] = d1


# ---------------------------------------------------------------------------- SMACv2 (docs/design/smacv2.md)
# SMACv2's (smacv2/env/starcraft2/starcraft2.py) sight cones, unit ranges, masks, observations and state.
# ``sight``/``shoot`` (n,) are the agents' ranges (``unit_range``), ``fov`` (n, 2) their cone directions
# (in the seat's frame), ``conic`` whether sight is a cone of full angle ``2 * half_angle``.
CONE_EPS = 1e-7  # SMACv2's EPS of is_position_in_cone


def unit_range(table_range, default_range, use_unit_ranges, min_range):
    """SMACv2's ``unit_shoot_range`` / ``unit_sight_range``: the unit's own range, at least
    ``min_range`` (shoot: ``min_attack_range``; sight: 0), with ``use_unit_ranges``; else the fixed
    ``default_range`` (shoot 6, sight 9)."""
    if use_unit_ranges:
        return F(max(table_range, min_range))
    return F(default_range)


def in_cone(dx, dy, fx, fy, half_angle, reach):
    """SMACv2's ``is_position_in_cone`` for the offset (dx, dy) of a unit from the agent, the agent's
    cone direction (fx, fy) and ``reach`` (sight or shoot range): within reach (``dist <= reach``)
    and ``|atan(dy / dx') - atan(fy / fx')| < half_angle``, where dx' is dx kept at least 1e-7 away
    from 0 and fx' is fx forced to dx's sign (at least 1e-7 away from 0).  Written as SMACv2 computes
    it, in float64: with ``atan`` (not ``atan2``) and fx taking dx's sign, the cone is seen mirrored
    in the agent's vertical axis too (a unit straight behind is in the cone)."""
    if np.float64(distance(dx, dy)) > np.float64(reach):
        return False
    x_diff = np.float64(dx)
    x_diff = max(x_diff, CONE_EPS) if x_diff > 0 else min(x_diff, -CONE_EPS)
    obj_angle = math.atan(np.float64(dy) / x_diff)
    x = np.float64(fx)
    x = max(x, CONE_EPS) if x_diff > 0 else min(x, -CONE_EPS)
    fov_angle = math.atan(np.float64(fy) / x)
    return abs(obj_angle - fov_angle) < half_angle


def sees_v2(dx, dy, fx, fy, half_angle, reach, conic):
    """SMACv2's visibility of a unit at offset (dx, dy): in the cone when ``conic``, else strictly
    within ``reach``."""
    if conic:
        return in_cone(dx, dy, fx, fy, half_angle, reach)
    return distance(dx, dy) < reach


def can_shoot_v2(dx, dy, fx, fy, half_angle, reach, conic):
    """SMACv2's ``get_can_shoot``: in the cone of the shoot range when ``conic``, else within it
    (``dist <= reach``)."""
    if conic:
        return in_cone(dx, dy, fx, fy, half_angle, reach)
    return distance(dx, dy) <= reach


def visibility_v2(vis, px, py, ally0, n, enemy0, m, sight, fov, half_angle, conic):
    """(n, m) bool: enemy j in agent i's sight (cone), living or not (SMACv2's ``enemy_visible``
    before its observation bookkeeping)."""
    for i in range(n):
        a = ally0 + i
        for j in range(m):
            b = enemy0 + j
            vis[i, j] = sees_v2(px[b] - px[a], py[b] - py[a], fov[i, 0], fov[i, 1], half_angle, sight[i], conic)


def avail_actions_v2(out, true_out, px, py, hp, ally0, n, enemy0, m, is_medivac, pathing, shoot, fov, half_angle,
                     conic, n_fov, action_mask):
    """SMACv2's ``get_avail_agent_actions`` (``out``) and ``get_true_avail_agent_actions``
    (``true_out``, the same with the range check always on) of one game, bool (n, 6 + n_fov +
    targets): a dead agent only no-op; else stop, the moves whose half-step lands on a pathable cell,
    the ``n_fov`` cone turns, and attacks on living enemies within the shoot range or cone (Medivacs:
    heals on living non-Medivac allies); without ``action_mask`` every living target is available."""
    n_no = N_NO_ATTACK + n_fov
    for i in range(n):
        a = ally0 + i
        row = out[i]
        true_row = true_out[i]
        for q in range(row.shape[0]):
            row[q] = False
            true_row[q] = False
        if not hp[a] > ZERO:
            row[0] = True
            true_row[0] = True
            continue
        x = px[a]
        y = py[a]
        row[1] = True
        row[2] = grid_value(pathing, x + ZERO, y + MOVE_HALF, ZERO) > ZERO
        row[3] = grid_value(pathing, x + ZERO, y + -MOVE_HALF, ZERO) > ZERO
        row[4] = grid_value(pathing, x + MOVE_HALF, y + ZERO, ZERO) > ZERO
        row[5] = grid_value(pathing, x + -MOVE_HALF, y + ZERO, ZERO) > ZERO
        for q in range(1, N_NO_ATTACK):
            true_row[q] = row[q]
        for q in range(n_fov):
            row[N_NO_ATTACK + q] = True
            true_row[N_NO_ATTACK + q] = True
        heals = is_medivac[i]
        count = n if heals else m
        for j in range(count):
            b = (ally0 + j) if heals else (enemy0 + j)
            if hp[b] > ZERO and not (heals and is_medivac[j]):
                ok = can_shoot_v2(px[b] - x, py[b] - y, fov[i, 0], fov[i, 1], half_angle, shoot[i], conic)
                true_row[n_no + j] = ok
                row[n_no + j] = ok or not action_mask


def observe_enemies_v2(vis, hp, ally0, n, order, draws, prob, obs_enemies, enemy_tags):
    """SMACv2's enemy bookkeeping of one observation (``get_obs_agent``): living agents visited in
    ``order``; an agent that sees an untagged enemy e tags it and observes it, and every other agent
    observes it when its ``draws[e, agent] < prob``.  ``obs_enemies`` (m, n), ``enemy_tags`` (m,),
    -1 untagged, are updated; ``vis`` (n, m) becomes "in sight and observed"."""
    m = vis.shape[1]
    for k in range(n):
        a = order[k]
        if not hp[ally0 + a] > ZERO:
            continue
        for e in range(m):
            if vis[a, e] and enemy_tags[e] < 0:
                obs_enemies[e, a] = 1
                enemy_tags[e] = a
                for b in range(n):
                    if b != a and draws[e, b] < prob:
                        obs_enemies[e, b] = 1
    for a in range(n):
        for e in range(m):
            vis[a, e] = vis[a, e] and obs_enemies[e, a] > 0


def observations_v2(out, true_avail, last_action, timestep, px, py, hp, shield, hp_max, shield_max, hp_frac,
                    shield_frac, ally0, n, enemy0, m,
                    ally_type, enemy_type, bits, observe_types, shield_ally, shield_enemy, pathing, height, sight, fov,
                    half_angle, conic, n_fov, seen, hidden, own_pos, map_x, map_y, fully, config):
    """SMACv2's ``get_obs_agent`` of every agent of one game into ``out`` (n, obs_size): move
    availability, (pathing, height); per enemy seen (``seen`` (n, m): in sight and observed) [can
    shoot, dist, dx, dy (/ sight), (health, (shield)), type bits], the last three left 0 where
    ``hidden`` (n, m: the EPO mask); per other ally in sight (any living ally when ``fully``) [1, dist, dx, dy, (health, (shield)),
    type bits (0 unless ``observe_types``), (last action)]; own [(health, (shield)), (x / map_x,
    y / map_y), (cone direction), type bits], (timestep).  ``hp_frac``/``shield_frac`` (U,) are
    filled here (scratch rows).  A dead agent's row is 0 but for the timestep."""
    A = last_action.shape[1]
    n_no = N_NO_ATTACK + n_fov
    all_health = config[OBS_ALL_HEALTH]
    move = 4 + 8 * config[OBS_PATHING] + 9 * config[OBS_HEIGHT]
    nf_en = 4 + bits + (1 + shield_enemy) * all_health
    nf_al = 4 + bits + (1 + shield_ally) * all_health + A * config[OBS_LAST_ACTION]
    for u in range(hp.shape[0]):
        hp_frac[u], shield_frac[u] = health_fractions(hp[u], hp_max[u], shield[u], shield_max[u])
    for i in range(n):
        a = ally0 + i
        row = out[i]
        for q in range(row.shape[0]):
            row[q] = ZERO
        o = move + m * nf_en + (n - 1) * nf_al
        if config[OBS_OWN_HEALTH]:
            o += 1 + shield_ally
        o += 2 * own_pos + 2 * conic + bits
        if config[OBS_TIMESTEP]:
            row[o] = timestep
        if not hp[a] > ZERO:
            continue
        x = px[a]
        y = py[a]
        r = sight[i]
        for k in range(4):
            row[k] = ONE if true_avail[i, 2 + k] else ZERO
        o = 4
        if config[OBS_PATHING]:
            surroundings(row, o, pathing, x, y, 8, ONE)
            o += 8
        if config[OBS_HEIGHT]:
            surroundings(row, o, height, x, y, 9, ONE)
        o = move
        for j in range(m):
            b = enemy0 + j
            if seen[i, j] and hp[b] > ZERO:
                c = o + j * nf_en
                dx = px[b] - x
                dy = py[b] - y
                row[c] = ONE if true_avail[i, n_no + j] else ZERO
                row[c + 1] = distance(dx, dy) / r
                row[c + 2] = dx / r
                row[c + 3] = dy / r
                if not hidden[i, j]:
                    k = 4
                    if all_health:
                        row[c + k] = hp_frac[b]
                        k += 1
                        if shield_enemy:
                            row[c + k] = shield_frac[b]
                            k += 1
                    if bits:
                        row[c + k + enemy_type[j]] = ONE
        o += m * nf_en
        jj = -1
        for j in range(n):
            if j == i:
                continue
            jj += 1
            b = ally0 + j
            dx = px[b] - x
            dy = py[b] - y
            if hp[b] > ZERO and (fully or sees_v2(dx, dy, fov[i, 0], fov[i, 1], half_angle, r, conic)):
                c = o + jj * nf_al
                row[c] = ONE
                row[c + 1] = distance(dx, dy) / r
                row[c + 2] = dx / r
                row[c + 3] = dy / r
                k = 4
                if all_health:
                    row[c + k] = hp_frac[b]
                    k += 1
                    if shield_ally:
                        row[c + k] = shield_frac[b]
                        k += 1
                if bits and observe_types:
                    row[c + k + ally_type[j]] = ONE
                k += bits
                if config[OBS_LAST_ACTION]:
                    for q in range(A):
                        row[c + k + q] = last_action[j, q] * ONE
        o += (n - 1) * nf_al
        if config[OBS_OWN_HEALTH]:
            row[o] = hp_frac[a]
            o += 1
            if shield_ally:
                row[o] = shield_frac[a]
                o += 1
        if own_pos:
            row[o] = x / F(map_x)
            row[o + 1] = y / F(map_y)
            o += 2
        if conic:
            row[o] = fov[i, 0]
            row[o + 1] = fov[i, 1]
            o += 2
        if bits:
            row[o + ally_type[i]] = ONE


def state_v2(row, last_action, timestep, px, py, hp, shield, hp_max, shield_max, cooldown, energy, max_cd, is_medivac,
             ally0, n, enemy0, m, ally_type, enemy_type, bits, shield_ally, shield_enemy, cx, cy, width, height, fov,
             conic, config):
    """SMACv2's ``get_state`` of one game into ``row``: per ally [hp, cooldown (Medivac: energy) / max
    cooldown, x and y relative to the centre / playable size, (shield), (cone direction), type bits],
    per enemy [hp, x, y, (shield), type bits], dead units 0; (last actions), (timestep)."""
    nf_al = 4 + shield_ally + 2 * conic + bits
    nf_en = 3 + shield_enemy + bits
    for q in range(row.shape[0]):
        row[q] = ZERO
    for i in range(n):
        a = ally0 + i
        if not hp[a] > ZERO:
            continue
        c = i * nf_al
        h, s = health_fractions(hp[a], hp_max[a], shield[a], shield_max[a])
        row[c] = h
        row[c + 1] = energy[a] / max_cd[i] if is_medivac[i] else cooldown[a] / max_cd[i]
        row[c + 2] = (px[a] - cx) / width
        row[c + 3] = (py[a] - cy) / height
        k = 4
        if shield_ally:
            row[c + k] = s
            k += 1
        if conic:
            row[c + k] = fov[i, 0]
            row[c + k + 1] = fov[i, 1]
            k += 2
        if bits:
            row[c + k + ally_type[i]] = ONE
    state_enemies_and_tail(row, n * nf_al, nf_en, last_action, timestep, px, py, hp, shield, hp_max, shield_max,
                           n, enemy0, m, enemy_type, bits, shield_enemy, cx, cy, width, height, config)


def engine_actions_v2(out, actions, true_avail, fov, canonical_fov, mirror, n_no):
    """SMACv2's ``get_agent_action`` for one game: its actions (n,) -> the engine's into ``out`` (0
    no-op, 1 stop, 2-5 moves, 6 + t attack/heal target t); a cone turn ``6 + k`` (k < n_fov) sets the
    agent's direction ``fov`` to ``canonical_fov[k]`` and issues nothing, an attack out of range
    (``true_avail`` false) issues nothing; a mirrored seat's east/west become the world's west/east."""
    for i in range(actions.shape[0]):
        a = actions[i]
        if mirror and (a == 4 or a == 5):
            out[i] = 9 - a
        elif a < N_NO_ATTACK:
            out[i] = a
        elif a < n_no:
            out[i] = 0
            fov[i, 0] = canonical_fov[a - N_NO_ATTACK, 0]
            fov[i, 1] = canonical_fov[a - N_NO_ATTACK, 1]
        elif true_avail[i, a]:
            out[i] = N_NO_ATTACK + a - n_no
        else:
            out[i] = 0


def record_deaths_v2(hp, ally0, n, enemy0, m, obs_enemies, enemy_tags):
    """SMACv2's ``step`` bookkeeping of the observed enemies (``observe_enemies_v2``): a dead agent's
    tags end (those enemies' observers cleared) and it observes nothing; a dead enemy's tag and
    observers are cleared."""
    for a in range(n):
        if not hp[ally0 + a] > ZERO:
            for e in range(m):
                if enemy_tags[e] == a:
                    enemy_tags[e] = -1
                    for b in range(n):
                        obs_enemies[e, b] = 0
            for e in range(m):
                obs_enemies[e, a] = 0
    for e in range(m):
        if not hp[enemy0 + e] > ZERO:
            enemy_tags[e] = -1
            for b in range(n):
                obs_enemies[e, b] = 0


def observed_v2(vis, px, py, hp, ally0, n, enemy0, m, sight, fov, half_angle, conic, fully, order, draws, prob,
                obs_enemies, enemy_tags):
    """(n, m) ``vis``: enemy in the agent's sight and observed (SMACv2's ``get_obs_agent``): every
    enemy with ``fully``, else the sight (cone) after the tagging of ``observe_enemies_v2``."""
    if fully:
        for i in range(n):
            for j in range(m):
                vis[i, j] = True
        return
    visibility_v2(vis, px, py, ally0, n, enemy0, m, sight, fov, half_angle, conic)
    observe_enemies_v2(vis, hp, ally0, n, order, draws, prob, obs_enemies, enemy_tags)
