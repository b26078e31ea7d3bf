"""SMAC's available actions, observations, state, rewards and outcomes, written once for both builds
(``build.py``), in the float32 arithmetic of ``rules.py``.

Every function fills one game's rows.  ``px``, ``py`` (U,) are the positions in the seat's frame
(mirrored when the seat is: ``seat_positions``); ``ally0``/``enemy0`` the first unit of the seat's
allies/enemies, ``n``/``m`` their counts; ``config`` the ``FeatureConfig`` flags as int64 in the
order of the ``OBS_*``/``STATE_*`` indices below.  Sizes and layouts: ``features.py``.
"""

from __future__ import annotations

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


def state(row, last_action, timestep, px, py, hp, shield, hp_max, shield_max, cooldown, energy, max_cd, is_medivac,
          ally0, n, enemy0, m, ally_type, enemy_type, bits, shield_ally, shield_enemy, cx, cy, width, height, config):
    """SMAC's ``get_state`` of one game into ``row`` (state_size,): per ally [hp, cooldown (Medivac:
    energy) / max cooldown, x and y relative to the centre / playable size, (shield), type bits],
    per enemy [hp, x, y, (shield), type bits], dead units 0; (last actions), (timestep)."""
    A = last_action.shape[1]
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
    o = n * nf_al
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
