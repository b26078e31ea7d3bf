"""The GPU build's kernels (``build.gpu()``): the rules of ``rules.py`` / ``feature_rules.py``, one game
per thread (thread ``e`` plays game ``e``; the CPU build runs the same rules one game after another,
``cpu_drivers.py``).  Each kernel's scratch rows are its game's slot of ``Scratch`` (device code
cannot allocate).  Launched by ``build.GpuBuild``."""

from __future__ import annotations

from numba import cuda

from .feature_rules import avail_actions, finish, observations, outcome, rewards, seat_positions, state
from .game_step import feature_range, score_range, start_episode, start_units, step_range
from .rules import advance_game, command_game, game_rows, scratch_rows, static_rows
from .smacv2_step import v2_feature_range, v2_start_game, v2_step_range


def step_kernel(jitter, state_, static, maps, flags, sc, seat0, seat1, ep, switches):
    """One environment step of game ``e`` (``cpu_drivers.step_games``; the caller checks the actions
    before, ``cpu_drivers.check_actions``)."""
    e = cuda.grid(1)
    if e < state_.hp.shape[0]:
        step_range(e, e + 1, jitter, state_, static, maps, flags, scratch_rows(sc, e), seat0, seat1, ep,
                   switches[0] != 0, switches[2] != 0)


def feature_kernel(state_, sc, seat0, seat1, ep, switches):
    e = cuda.grid(1)
    if e < state_.hp.shape[0]:
        feature_range(e, e + 1, state_, scratch_rows(sc, e), seat0, seat1, ep, switches[0] != 0, switches[2] != 0)


def command_kernel(side, actions, state_, static, flags):
    e = cuda.grid(1)
    if e < actions.shape[0]:
        command_game(side, actions[e], game_rows(state_, e), static_rows(static, e), flags)


def advance_kernel(jitter, state_, static, maps, flags, sc):
    e = cuda.grid(1)
    if e < state_.hp.shape[0]:
        advance_game(jitter[:, e], game_rows(state_, e), static_rows(static, e), maps, flags, scratch_rows(sc, e))


def positions_kernel(px, py, pos, map_x, mirror):
    e = cuda.grid(1)
    if e < pos.shape[0]:
        seat_positions(px[e], py[e], pos[e], map_x, mirror)


def avail_kernel(out, px, py, hp, ally0, n, enemy0, m, is_medivac, pathing):
    e = cuda.grid(1)
    if e < px.shape[0]:
        avail_actions(out[e], px[e], py[e], hp[e], ally0, n, enemy0, m, is_medivac, pathing)


def observation_kernel(out, avail, last_action, timestep, px, py, hp, shield, hp_max, shield_max, sc, ally0, n, enemy0,
                       m, ally_type, enemy_type, bits, shield_ally, shield_enemy, pathing, height, config):
    e = cuda.grid(1)
    if e < px.shape[0]:
        observations(out[e], avail[e], last_action[e], timestep[e], px[e], py[e], hp[e], shield[e], hp_max, shield_max,
                     sc.hp_frac[e], sc.shield_frac[e], ally0, n, enemy0, m, ally_type, enemy_type, bits, shield_ally,
                     shield_enemy, pathing, height, config)


def state_kernel(out, last_action, timestep, px, py, hp, shield, hp_max, shield_max, cooldown, energy, max_cd,
                 is_medivac, ally0, n, enemy0, m, ally_type, enemy_type, bits, shield_ally, shield_enemy, cx, cy, width,
                 height, config):
    e = cuda.grid(1)
    if e < px.shape[0]:
        state(out[e], last_action[e], timestep[e], px[e], py[e], hp[e], shield[e], hp_max, shield_max, cooldown[e],
              energy[e], max_cd, is_medivac, ally0, n, enemy0, m, ally_type, enemy_type, bits, shield_ally,
              shield_enemy, cx, cy, width, height, config)


def reward_kernel(battle, lost, prev, counted_dead, hp, shield, n0, counts_for_survival, death_value, negative_scale,
                  death_penalty, only_positive, sparse):
    e = cuda.grid(1)
    if e < hp.shape[0]:
        rewards(battle, lost, e, prev[e], counted_dead[e], hp[e], shield[e], n0, counts_for_survival, death_value,
                negative_scale, death_penalty, only_positive, sparse)


def finish_kernel(out, battle, won, lost, win, defeat, divisor, sparse, scale):
    e = cuda.grid(1)
    if e < battle.shape[0]:
        out[e] = finish(won[e], lost[e], battle[e], win, defeat, divisor, sparse, scale)


def outcome_kernel(lost, steps, limit, hp, n0, won, draw, timeout, done, winner, dead):
    e = cuda.grid(1)
    if e < hp.shape[0]:
        outcome(e, lost, steps[e], limit, hp[e], n0, won, draw, timeout, done, winner, dead)


def reset_kernel(mask, state_, static, spawn, goals):
    e = cuda.grid(1)
    if e < mask.shape[0] and mask[e]:
        start_units(game_rows(state_, e), static_rows(static, e), spawn[e], goals[e])


def start_kernel(mask, state_, static, spawn, goals, sc, seat0, seat1, ep, switches):
    """``cpu_drivers.start_games`` for game ``e``: its units, its episode and its features."""
    e = cuda.grid(1)
    if e < mask.shape[0] and mask[e]:
        rows = game_rows(state_, e)
        start_units(rows, static_rows(static, e), spawn[e], goals[e])
        start_episode(e, rows, seat0, seat1, ep)
        feature_range(e, e + 1, state_, scratch_rows(sc, e), seat0, seat1, ep, switches[0] != 0, switches[2] != 0)


def score_kernel(state_, sc, seat0, seat1, ep, switches):
    e = cuda.grid(1)
    if e < state_.hp.shape[0]:
        score_range(e, e + 1, state_, scratch_rows(sc, e), seat0, seat1, ep, switches[0] != 0, switches[2] != 0)


def v2_step_kernel(jitter, state_, static, maps, flags, sc, seat0, seat1, ep, switches):
    """One SMACv2 step of game ``e`` (``cpu_drivers.v2_step_games``)."""
    e = cuda.grid(1)
    if e < state_.hp.shape[0]:
        v2_step_range(e, e + 1, jitter, state_, static, maps, flags, scratch_rows(sc, e), seat0, seat1, ep,
                      switches[0] != 0, switches[2] != 0)


def v2_feature_kernel(state_, static, sc, seat0, seat1, ep, switches):
    e = cuda.grid(1)
    if e < state_.hp.shape[0]:
        v2_feature_range(e, e + 1, state_, static, scratch_rows(sc, e), seat0, seat1, ep, switches[0] != 0,
                         switches[1] != 0, switches[2] != 0)


def v2_start_kernel(mask, state_, static, spawn, goals, flags, sc, seat0, seat1, ep, switches):
    e = cuda.grid(1)
    if e < mask.shape[0] and mask[e]:
        v2_start_game(e, state_, static, spawn, goals, flags, seat0, seat1, ep)
        v2_feature_range(e, e + 1, state_, static, scratch_rows(sc, e), seat0, seat1, ep, switches[0] != 0, True,
                         switches[2] != 0)
