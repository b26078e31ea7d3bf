"""The CPU build's drivers (``build.cpu()``): each runs one rule of ``rules.py`` /
``feature_rules.py`` on every game, one game after another on the calling thread.  The step, score
and feature drivers (SMAC's and SMACv2's) take a range of games and a slot of scratch rows
(``first``, ``last``, ``w``): a large batch runs its chunks of games side by side on threads, each
chunk through the same compiled driver (``build.CpuBuild.bind``; the drivers release the GIL).  The
GPU build runs the same rules one game per thread (``gpu_kernels.py``)."""

from __future__ import annotations

from .feature_rules import avail_actions, finish, observations, outcome, rewards, seat_positions, state
from .game_step import feature_range, score_range, start_episode, start_units, step_range
from .records import Scratch
from .rules import advance_game, command_game, game_rows, scratch_rows, static_rows
from .smacv2_step import v2_feature_range, v2_start_game, v2_step_range


def command_games(side, actions, state_, static, flags):
    """``command_game`` for every game: ``actions`` (E, n_side)."""
    for e in range(actions.shape[0]):
        command_game(side, actions[e], game_rows(state_, e), static_rows(static, e), flags)


def advance_games(jitter, state_, static, maps, flags, sc):
    """``advance_game`` for every game: ``jitter`` (loops, E, U); ``sc`` one slot of scratch rows,
    reused by every game."""
    rows = scratch_rows(sc, 0)
    for e in range(state_.hp.shape[0]):
        advance_game(jitter[:, e], game_rows(state_, e), static_rows(static, e), maps, flags, rows)


def positions_games(px, py, pos, map_x, mirror):
    for e in range(pos.shape[0]):
        seat_positions(px[e], py[e], pos[e], map_x, mirror)


def avail_games(out, px, py, hp, ally0, n, enemy0, m, is_medivac, pathing):
    for e in range(px.shape[0]):
        avail_actions(out[e], px[e], py[e], hp[e], ally0, n, enemy0, m, is_medivac, pathing)


def observation_games(out, avail, last_action, timestep, px, py, hp, shield, hp_max, shield_max, sc: Scratch, ally0,
                      n, enemy0, m, ally_type, enemy_type, bits, shield_ally, shield_enemy, pathing, height, config):
    for e in range(px.shape[0]):
        observations(out[e], avail[e], last_action[e], timestep[e], px[e], py[e], hp[e], shield[e], hp_max, shield_max,
                     sc.hp_frac[0], sc.shield_frac[0], ally0, n, enemy0, m, ally_type, enemy_type, bits, shield_ally,
                     shield_enemy, pathing, height, config)


def state_games(out, last_action, timestep, px, py, hp, shield, hp_max, shield_max, cooldown, energy, max_cd,
                is_medivac, ally0, n, enemy0, m, ally_type, enemy_type, bits, shield_ally, shield_enemy, cx, cy, width,
                height, config):
    for e in range(px.shape[0]):
        state(out[e], last_action[e], timestep[e], px[e], py[e], hp[e], shield[e], hp_max, shield_max, cooldown[e],
              energy[e], max_cd, is_medivac, ally0, n, enemy0, m, ally_type, enemy_type, bits, shield_ally,
              shield_enemy, cx, cy, width, height, config)


def reward_games(battle, lost, prev, counted_dead, hp, shield, n0, counts_for_survival, death_value, negative_scale,
                 death_penalty, only_positive, sparse):
    for e in range(hp.shape[0]):
        rewards(battle, lost, e, prev[e], counted_dead[e], hp[e], shield[e], n0, counts_for_survival, death_value,
                negative_scale, death_penalty, only_positive, sparse)


def finish_games(out, battle, won, lost, win, defeat, divisor, sparse, scale):
    for e in range(battle.shape[0]):
        out[e] = finish(won[e], lost[e], battle[e], win, defeat, divisor, sparse, scale)


def outcome_games(lost, steps, limit, hp, n0, won, draw, timeout, done, winner, dead):
    for e in range(hp.shape[0]):
        outcome(e, lost, steps[e], limit, hp[e], n0, won, draw, timeout, done, winner, dead)


def check_actions(seat0, seat1, switches):
    """``(seat, game, agent)`` of the first action of a controlled seat out of range (or, when
    ``switches[1]``, not in its mask), ``(-1, -1, -1)`` when every action is legal.  ``switches``
    int64: [two seats, check the masks, compute the state]."""
    for s in range(2 if switches[0] != 0 else 1):
        seat = seat0 if s == 0 else seat1
        e, i = first_illegal(seat.avail, seat.actions, seat.avail.shape[2], switches[1] != 0)
        if e >= 0:
            return s, e, i
    return -1, -1, -1


def step_games(first, last, w, jitter, state_, static, maps, flags, sc, seat0, seat1, ep, switches):
    """One environment step of games ``first .. last - 1`` (``game_step.step_range``) on scratch slot ``w``,
    their actions checked before (``check_actions``); ``switches`` as there."""
    step_range(first, last, jitter, state_, static, maps, flags, scratch_rows(sc, w), seat0, seat1, ep,
               switches[0] != 0, switches[2] != 0)


def score_games(first, last, w, state_, sc, seat0, seat1, ep, switches):
    """``score_range`` of games ``first .. last - 1`` on scratch slot ``w``: the rest of a step whose orders
    and game loops an engine of its own ran (the real game, ``sc2_engine``)."""
    score_range(first, last, state_, scratch_rows(sc, w), seat0, seat1, ep, switches[0] != 0, switches[2] != 0)


def feature_games(first, last, w, state_, sc, seat0, seat1, ep, switches):
    """``feature_range`` of games ``first .. last - 1`` on scratch slot ``w`` (``switches`` as in
    ``check_actions``)."""
    feature_range(first, last, state_, scratch_rows(sc, w), seat0, seat1, ep, switches[0] != 0, switches[2] != 0)


def reset_games(mask, state_, static, spawn, goals):
    """``start_units`` of the games where ``mask`` (E,) is true; ``spawn`` and ``goals`` (E, U, 2)."""
    for e in range(mask.shape[0]):
        if mask[e]:
            start_units(game_rows(state_, e), static_rows(static, e), spawn[e], goals[e])


def start_games(mask, state_, static, spawn, goals, sc, seat0, seat1, ep, switches):
    """``reset_games``, ``start_episode`` and the features (``feature_range``; ``switches`` as in
    ``check_actions``) of the games where ``mask`` is true, in one call: a batch where a few games
    restart recomputes only their features, the others' stay those the step computed."""
    rows_sc = scratch_rows(sc, 0)
    for e in range(mask.shape[0]):
        if mask[e]:
            rows = game_rows(state_, e)
            start_units(rows, static_rows(static, e), spawn[e], goals[e])
            start_episode(e, rows, seat0, seat1, ep)
            feature_range(e, e + 1, state_, rows_sc, seat0, seat1, ep, switches[0] != 0, switches[2] != 0)


def first_illegal(masks, actions, n_actions, check_masks):
    """The first (game, agent) whose action is out of 0..n_actions-1 (or, with ``check_masks``, not in
    its mask), as (e, i); (-1, -1) when every action is legal."""
    for e in range(actions.shape[0]):
        for i in range(actions.shape[1]):
            a = actions[e, i]
            if a < 0 or a >= n_actions or (check_masks and not masks[e, i, a]):
                return e, i
    return -1, -1


def one_hot(out, actions):
    """``out`` (E, n, A) = one-hot of ``actions`` (E, n)."""
    for e in range(actions.shape[0]):
        for i in range(actions.shape[1]):
            for q in range(out.shape[2]):
                out[e, i, q] = 0.0
            out[e, i, actions[e, i]] = 1.0


def v2_step_games(first, last, w, jitter, state_, static, maps, flags, sc, seat0, seat1, ep, switches):
    """One SMACv2 step of games ``first .. last - 1`` (``smacv2_step.v2_step_range``) on scratch slot ``w``;
    ``switches`` as in ``check_actions``."""
    v2_step_range(first, last, jitter, state_, static, maps, flags, scratch_rows(sc, w), seat0, seat1, ep,
                  switches[0] != 0, switches[2] != 0)


def v2_feature_games(first, last, w, state_, static, sc, seat0, seat1, ep, switches):
    """``v2_feature_range`` of games ``first .. last - 1`` on scratch slot ``w``: ``switches`` [two seats,
    observations, state]."""
    v2_feature_range(first, last, state_, static, scratch_rows(sc, w), seat0, seat1, ep, switches[0] != 0,
                     switches[1] != 0, switches[2] != 0)


def v2_start_games(mask, state_, static, spawn, goals, flags, sc, seat0, seat1, ep, switches):
    """``v2_start_game`` and the features (observations, and the state when ``switches[2]``) of the
    games where ``mask`` is true."""
    rows = scratch_rows(sc, 0)
    for e in range(mask.shape[0]):
        if mask[e]:
            v2_start_game(e, state_, static, spawn, goals, flags, seat0, seat1, ep)
            v2_feature_range(e, e + 1, state_, static, rows, seat0, seat1, ep, switches[0] != 0, True,
                             switches[2] != 0)
