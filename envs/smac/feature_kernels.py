"""SMAC's available actions, observations, state and rewards compiled with numba: the rules of
``features.SideView`` and ``rewards.RewardTracker`` for ``fast_engine.NumbaEngine``, in the same
float32 operations (``kernels`` module docstring), checked identical by the differential test.

Every function takes one seat's view of all games: ``px``, ``py`` (E, U) positions in the seat's
frame (mirrored when the seat is), ``ally0``/``enemy0`` the first unit of the seat's allies/enemies,
``n``/``m`` their counts.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .kernels import ONE, SIGHT, ZERO, _distance
from .units import MOVE_AMOUNT, SHOOT_RANGE

F = np.float32
SHOOT = F(SHOOT_RANGE)
MOVE_HALF = F(MOVE_AMOUNT / 2)
EPS6 = F(1e-6)
N_NO_ATTACK = 6

# FeatureConfig flags, in this order, as an int64 array
OBS_ALL_HEALTH, OBS_OWN_HEALTH, OBS_LAST_ACTION, OBS_PATHING, OBS_HEIGHT, OBS_TIMESTEP, STATE_LAST_ACTION, \
    STATE_TIMESTEP = range(8)


@njit(cache=True)
def _lookup(grid, x, y, outside):
    """features.SideView._grid_lookup: grid[int(x), int(y)] with truncation, ``outside`` out of bounds
    (the grids are map_x x map_y)."""
    xi = int(x)
    yi = int(y)
    if xi >= 0 and xi < grid.shape[0] and yi >= 0 and yi < grid.shape[1]:
        return grid[xi, yi]
    return outside


@njit(cache=True)
def _health(hp, hp_max, shield, shield_max):
    """features.SideView._health for one unit."""
    h = hp / hp_max
    s = shield / max(shield_max, EPS6) if shield_max > ZERO else ZERO
    return h, s


@njit(cache=True)
def _avail_game(e, out, px, py, hp, ally0, n, enemy0, m, is_medivac, pathing):
    k_heal = min(n, m)
    for i in range(n):
        a = ally0 + i
        row = out[e, i]
        row[:] = False
        if not hp[e, a] > ZERO:
            row[0] = True
            continue
        row[1] = True
        x = px[e, a]
        y = py[e, a]
        row[2] = _lookup(pathing, x + ZERO, y + MOVE_HALF, ZERO) > ZERO
        row[3] = _lookup(pathing, x + ZERO, y + -MOVE_HALF, ZERO) > ZERO
        row[4] = _lookup(pathing, x + MOVE_HALF, y + ZERO, ZERO) > ZERO
        row[5] = _lookup(pathing, x + -MOVE_HALF, y + ZERO, ZERO) > ZERO
        if is_medivac[i]:
            for j in range(k_heal):
                b = ally0 + j
                if hp[e, b] > ZERO and not is_medivac[j]:
                    row[N_NO_ATTACK + j] = _distance(px[e, b] - x, py[e, b] - y) <= SHOOT
        else:
            for j in range(m):
                b = enemy0 + j
                if hp[e, b] > ZERO:
                    row[N_NO_ATTACK + j] = _distance(px[e, b] - x, py[e, b] - y) <= SHOOT


@njit(cache=True)
def avail_actions(out, px, py, hp, ally0, n, enemy0, m, is_medivac, pathing):
    """features.SideView.avail_actions into ``out`` bool (E, n, 6 + m)."""
    for e in range(px.shape[0]):
        _avail_game(e, out, px, py, hp, ally0, n, enemy0, m, is_medivac, pathing)


@njit(cache=True)
def _seen_unit(row, c, first, dx, dy, h, s, health, shield, bits, type_id):
    """One other unit's features at ``row[c:]`` when within sight: [first, dist/9, dx/9, dy/9, (hp,
    (shield)), type bits], each the torch code's value times vis = 1.  Returns the number written,
    0 when out of sight (all its features are then 0: the zeroed row)."""
    dist = _distance(dx, dy)
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


@njit(cache=True)
def _obs_game(e, out, avail, last_action, timestep, px, py, hp, shield, hp_max, shield_max, ally0, n, enemy0, m,
              ally_type, enemy_type, bits, shield_ally, shield_enemy, pathing, height, config):
    """One game of ``observations``.  A pair out of sight has every feature 0 (the torch code multiplies
    them by 0), so it is left as the zeroed row."""
    A = avail.shape[2]
    U = hp.shape[1]
    all_health = config[OBS_ALL_HEALTH]
    move = 4 + 8 * config[OBS_PATHING] + 9 * config[OBS_HEIGHT]
    nf_en = 4 + bits + (1 + shield_enemy) * all_health
    nf_al = 4 + bits + (1 + shield_ally) * all_health + A * config[OBS_LAST_ACTION]
    # SMAC's surrounding points, in units of the move amount (features.SideView.observations)
    offs_x = (0, 0, 2, -2, 1, -1, 1, -1, 0)
    offs_y = (2, -2, 0, 0, 1, -1, -1, 1, 0)
    hr = np.empty(U, np.float32)
    sr = np.empty(U, np.float32)
    for u in range(U):
        hr[u], sr[u] = _health(hp[e, u], hp_max[u], shield[e, u], shield_max[u])
    for i in range(n):
        a = ally0 + i
        row = out[e, i]
        row[:] = ZERO
        alive_i = hp[e, a] > ZERO
        alive_f = ONE if alive_i else ZERO
        for k in range(4):
            row[k] = ONE if avail[e, i, 2 + k] else ZERO
        o = 4
        if config[OBS_PATHING] or config[OBS_HEIGHT]:
            tx = F(int(px[e, a]))
            ty = F(int(py[e, a]))
            if config[OBS_PATHING]:
                for k in range(8):
                    dx = F(offs_x[k] * MOVE_AMOUNT)
                    dy = F(offs_y[k] * MOVE_AMOUNT)
                    row[o + k] = _lookup(pathing, tx + dx, ty + dy, ONE) * alive_f
                o += 8
            if config[OBS_HEIGHT]:
                for k in range(9):
                    dx = F(offs_x[k] * MOVE_AMOUNT)
                    dy = F(offs_y[k] * MOVE_AMOUNT)
                    row[o + k] = _lookup(height, tx + dx, ty + dy, ONE) * alive_f
                o += 9
        o = move
        for j in range(m):
            b = enemy0 + j
            if alive_i and hp[e, b] > ZERO:
                first = ONE if avail[e, i, N_NO_ATTACK + j] else ZERO
                _seen_unit(row, o + j * nf_en, first, px[e, b] - px[e, a], py[e, b] - py[e, a], hr[b], sr[b],
                           all_health, shield_enemy, bits, enemy_type[j])
        o += m * nf_en
        jj = -1
        for j in range(n):
            if j == i:
                continue
            jj += 1
            b = ally0 + j
            if alive_i and hp[e, b] > ZERO:
                c = o + jj * nf_al
                k = _seen_unit(row, c, ONE, px[e, b] - px[e, a], py[e, b] - py[e, a], hr[b], sr[b], all_health,
                               shield_ally, bits, ally_type[j])
                if k > 0 and config[OBS_LAST_ACTION]:
                    for q in range(A):
                        row[c + k + q] = last_action[e, j, q] * ONE
        o += (n - 1) * nf_al
        if config[OBS_OWN_HEALTH]:
            row[o] = hr[a] * alive_f
            o += 1
            if shield_ally:
                row[o] = sr[a] * alive_f
                o += 1
        if bits:
            row[o + ally_type[i]] = ONE * alive_f
            o += bits
        if config[OBS_TIMESTEP]:
            row[o] = timestep[e]


@njit(cache=True)
def observations(out, avail, last_action, timestep, px, py, hp, shield, hp_max, shield_max, ally0, n, enemy0, m,
                 ally_type, enemy_type, bits, shield_ally, shield_enemy, pathing, height, config):
    """features.SideView.observations into ``out`` float32 (E, n, obs_size)."""
    for e in range(px.shape[0]):
        _obs_game(e, out, avail, last_action, timestep, px, py, hp, shield, hp_max, shield_max, ally0, n, enemy0, m,
                  ally_type, enemy_type, bits, shield_ally, shield_enemy, pathing, height, config)


@njit(cache=True)
def state(out, last_action, timestep, px, py, hp, shield, hp_max, shield_max, cooldown, energy, max_cd, is_medivac,
          ally0, n, enemy0, m, ally_type, enemy_type, bits, shield_ally, shield_enemy, cx, cy, width, height, config):
    """features.SideView.state into ``out`` float32 (E, state_size), zeroed here."""
    E = px.shape[0]
    A = last_action.shape[2]
    nf_al = 4 + shield_ally + bits
    nf_en = 3 + shield_enemy + bits
    for e in range(E):
        row = out[e]
        row[:] = ZERO
        for i in range(n):
            a = ally0 + i
            alive_f = ONE if hp[e, a] > ZERO else ZERO
            h, s = _health(hp[e, a], hp_max[a], shield[e, a], shield_max[a])
            cd = energy[e, a] / max_cd[i] if is_medivac[i] else cooldown[e, a] / max_cd[i]
            c = i * nf_al
            row[c] = h * alive_f
            row[c + 1] = cd * alive_f
            row[c + 2] = (px[e, a] - cx) / width * alive_f
            row[c + 3] = (py[e, a] - cy) / height * alive_f
            k = 4
            if shield_ally:
                row[c + k] = s * alive_f
                k += 1
            if bits:
                row[c + k + ally_type[i]] = ONE * alive_f
        o = n * nf_al
        for j in range(m):
            b = enemy0 + j
            alive_f = ONE if hp[e, b] > ZERO else ZERO
            h, s = _health(hp[e, b], hp_max[b], shield[e, b], shield_max[b])
            c = o + j * nf_en
            row[c] = h * alive_f
            row[c + 1] = (px[e, b] - cx) / width * alive_f
            row[c + 2] = (py[e, b] - cy) / height * alive_f
            k = 3
            if shield_enemy:
                row[c + k] = s * alive_f
                k += 1
            if bits:
                row[c + k + enemy_type[j]] = ONE * alive_f
        o += m * nf_en
        if config[STATE_LAST_ACTION]:
            for i in range(n):
                for q in range(A):
                    row[o + i * A + q] = last_action[e, i, q]
            o += n * A
        if config[STATE_TIMESTEP]:
            row[o] = timestep[e]


@njit(cache=True)
def mirror_positions(px, py, pos, map_x, mirror):
    """features.SideView.positions for every unit: x' = map_x - x when mirrored."""
    for e in range(pos.shape[0]):
        for u in range(pos.shape[1]):
            px[e, u] = F(map_x) - pos[e, u, 0] if mirror else pos[e, u, 0]
            py[e, u] = pos[e, u, 1]


@njit(cache=True)
def rewards(battle, lost, prev, counted_dead, hp, shield, n0, counts_for_survival, death_value, negative_scale,
            only_positive, sparse):
    """rewards.RewardTracker.step: ``battle`` float32 (2, E) battle rewards, ``lost`` bool (E, 2);
    updates ``prev`` and ``counted_dead`` in place."""
    E, U = hp.shape
    dv = F(death_value)
    ns = F(negative_scale)
    dv_ns = F(death_value * negative_scale)
    for e in range(E):
        loss_sum = np.zeros(2, np.float64)
        died = np.zeros(2, np.int64)
        standing = np.zeros(2, np.bool_)
        for u in range(U):
            s = 0 if u < n0 else 1
            now = hp[e, u] + shield[e, u]
            dead = not hp[e, u] > ZERO
            if not counted_dead[e, u]:
                loss = prev[e, u] if dead else prev[e, u] - now
                loss_sum[s] += loss
                if dead:
                    died[s] += 1
                    counted_dead[e, u] = True
            prev[e, u] = now
            if not dead and counts_for_survival[u]:
                standing[s] = True
        for side in range(2):
            other = 1 - side
            delta_enemy = F(loss_sum[other])
            delta_deaths = dv * F(died[other])
            if sparse:
                r = ZERO
            elif only_positive:
                r = abs(delta_enemy + delta_deaths)
            else:
                delta_ally = ns * F(loss_sum[side])
                delta_deaths = delta_deaths - dv_ns * F(died[side])
                r = delta_enemy + delta_deaths - delta_ally
            battle[side, e] = r
            lost[e, side] = not standing[side]


@njit(cache=True)
def finish(out, battle, won, lost, win, defeat, divisor, sparse, scale):
    """rewards.RewardTracker.finish for one side: ``out`` float32 (E,)."""
    for e in range(battle.shape[0]):
        w = ONE if won[e] else ZERO
        lo = ONE if lost[e] else ZERO
        if sparse:
            r = w - lo
        else:
            r = battle[e] + F(win) * w + F(defeat) * lo
        if scale:
            r = r / F(divisor)
        out[e] = r


@njit(cache=True)
def first_illegal(masks, actions, n_actions, check_masks):
    """The first (game, agent) whose action is out of 0..n_actions-1 (or, with ``check_masks``, not in
    its mask), as (e, i); (-1, -1) when every action is legal."""
    for e in range(actions.shape[0]):
        for i in range(actions.shape[1]):
            a = actions[e, i]
            if a < 0 or a >= n_actions or (check_masks and not masks[e, i, a]):
                return e, i
    return -1, -1


@njit(cache=True)
def one_hot(out, actions):
    """``out`` (E, n, A) = one-hot of ``actions`` (E, n)."""
    out[:] = ZERO
    for e in range(actions.shape[0]):
        for i in range(actions.shape[1]):
            out[e, i, actions[e, i]] = ONE


@njit(cache=True)
def outcome(lost, steps, limit, hp, n0, won, draw, timeout, done, winner, dead):
    """battle.SMACBattle.step's outcome of each game from ``lost`` (E, 2) and the episode steps:
    ``won`` (2, E), ``draw``, ``timeout``, ``done`` (E,), ``winner`` (E,: 0, 1 or -1) and ``dead``
    (2, E) the dead units per side."""
    E, U = hp.shape
    for e in range(E):
        ended = lost[e, 0] or lost[e, 1]
        timeout[e] = not ended and steps[e] >= limit
        done[e] = ended or timeout[e]
        won[0, e] = lost[e, 1] and not lost[e, 0]
        won[1, e] = lost[e, 0] and not lost[e, 1]
        draw[e] = (lost[e, 0] and lost[e, 1]) or timeout[e]
        winner[e] = 0 if won[0, e] else (1 if won[1, e] else -1)
        d0 = 0
        d1 = 0
        for u in range(U):
            if not hp[e, u] > ZERO:
                if u < n0:
                    d0 += 1
                else:
                    d1 += 1
        dead[0, e] = d0
        dead[1, e] = d1

