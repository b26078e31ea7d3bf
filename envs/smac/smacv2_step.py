"""A SMACv2 environment step in one call, and the start of a SMACv2 episode: the rules of ``rules.py``
and ``feature_rules.py`` (its ``*_v2`` functions) in the order SMACv2's ``step`` and ``get_obs`` apply
them, over a range of games (compiled for both builds by ``build.py``, like ``game_step.py``).

Every game holds its own draw: its units' constants (``rules.static_rows``), its seats' unit types,
ranges and EPO mask (``records.SeatV2``), written by ``smacv2_games.SMACv2Games`` at each new draw.

A step of game ``e``:

1. each controlled seat's actions: their one-hot into ``last_action``, then SMACv2's
   ``get_agent_action`` (``engine_actions_v2``: turns set the cone, attacks out of range issue
   nothing) and the engine's orders (``command_game``);
2. ``advance_game``: the 8 game loops; the scripted side re-aims at the closest agent
   (``hunt_goals``);
3. the episode step count, SMAC's battle rewards, the outcome and each side's step reward (scaled
   by the seat's ``divisor``), added to the returns; SMACv2's tag bookkeeping of the dead
   (``record_deaths_v2``);
4. the features of the new state: each seat's positions in its frame, masks, observed enemies
   (``observed_v2``, with this observation's drawn agent order and draws), observations and (when
   asked) state.

Nothing here is a rule of its own.
"""

from __future__ import annotations

import numpy as np

from .feature_rules import (
    N_NO_ATTACK,
    OBS_TIMESTEP,
    avail_actions_v2,
    engine_actions_v2,
    finish,
    observations_v2,
    observed_v2,
    outcome,
    record_deaths_v2,
    rewards,
    seat_positions,
    state_v2,
)
from .game_step import start_episode, start_units, write_one_hot
from .rules import ONE, ZERO, advance_game, command_game, game_rows, hunt_goals, static_rows


def v2_order_range(first, last, side, seat, state_, static, flags):
    """Step 1 (module docstring) for seat ``side`` of games ``first .. last - 1``."""
    n_no = N_NO_ATTACK + seat.n_fov
    for e in range(first, last):
        actions = seat.actions[e]
        write_one_hot(seat.last_action[e], actions)
        engine_actions_v2(seat.commands[e], actions, seat.true_avail[e], seat.fov[e], seat.canonical_fov, seat.mirror,
                          n_no)
        command_game(side, seat.commands[e], game_rows(state_, e), static_rows(static, e), flags)


def hunt_game(e, state_, flags):
    """The scripted sides of game ``e`` attack-move at the closest living opponent (``hunt_goals``)."""
    n0 = flags.n0
    U = state_.hp.shape[1]
    if flags.scripted0:
        hunt_goals(state_.pos[e], state_.hp[e], state_.trigger_goal[e], 0, n0, n0, U)
    if flags.scripted1:
        hunt_goals(state_.pos[e], state_.hp[e], state_.trigger_goal[e], n0, U, 0, n0)


def v2_seat_range(first, last, seat, state_, static, sc, ep, with_obs, with_state):
    """Step 4 (module docstring) for one seat: positions, masks, (observed enemies and observations),
    (state)."""
    for e in range(first, last):
        px = seat.px[e]
        py = seat.py[e]
        hp = state_.hp[e]
        shield = state_.shield[e]
        units = static_rows(static, e)
        timestep = ep.timestep[e]
        seat_positions(px, py, state_.pos[e], seat.map_x, seat.mirror)
        avail_actions_v2(seat.avail[e], seat.true_avail[e], px, py, hp, seat.ally0, seat.n, seat.enemy0, seat.m,
                         seat.is_medivac[e], seat.pathing, seat.shoot[e], seat.fov[e], seat.half_angle, seat.conic,
                         seat.n_fov, seat.action_mask)
        if with_obs and seat.starcraft:
            observed_v2(seat.vis[e], px, py, hp, seat.ally0, seat.n, seat.enemy0, seat.m, seat.sight[e], seat.fov[e],
                        seat.half_angle, seat.conic, seat.fully, seat.order[e], seat.draws[e], seat.prob,
                        seat.obs_enemies[e], seat.enemy_tags[e])
            observations_v2(seat.obs[e], seat.true_avail[e], seat.last_action[e], timestep, px, py, hp, shield,
                            units.hp_max, units.shield_max, sc.hp_frac, sc.shield_frac, seat.ally0, seat.n,
                            seat.enemy0, seat.m, seat.ally_type[e], seat.enemy_type[e], seat.bits, seat.observe_types,
                            seat.shield_ally, seat.shield_enemy, seat.pathing, seat.terrain, seat.sight[e],
                            seat.fov[e], seat.half_angle, seat.conic, seat.n_fov, seat.vis[e], seat.hidden[e],
                            seat.own_pos, seat.map_w, seat.map_h, seat.fully != 0, seat.config)
        elif with_obs:  # obs_starcraft=False: the timestep alone
            rows = seat.obs[e]
            for i in range(rows.shape[0]):
                for q in range(rows.shape[1]):
                    rows[i, q] = ZERO
                if seat.config[OBS_TIMESTEP]:
                    rows[i, 0] = timestep * ONE
        if with_state:
            state_v2(seat.state[e], seat.last_action[e], timestep, px, py, hp, shield, units.hp_max, units.shield_max,
                     state_.cooldown[e], state_.energy[e], seat.max_cd[e], seat.is_medivac[e], seat.ally0, seat.n,
                     seat.enemy0, seat.m, seat.ally_type[e], seat.enemy_type[e], seat.bits, seat.shield_ally,
                     seat.shield_enemy, seat.cx, seat.cy, seat.width, seat.height, seat.fov[e], seat.conic,
                     seat.config)


def v2_feature_range(first, last, state_, static, sc, seat0, seat1, ep, two_seats, with_obs, with_state):
    """Step 4 (module docstring) of seat 0 (and seat 1 when ``two_seats``), at timestep ``steps / limit``."""
    for e in range(first, last):
        ep.timestep[e] = np.float32(ep.steps[e]) / np.float32(ep.limit)
    v2_seat_range(first, last, seat0, state_, static, sc, ep, with_obs, with_state)
    if two_seats:
        v2_seat_range(first, last, seat1, state_, static, sc, ep, with_obs, with_state)


def v2_score_range(first, last, state_, seat0, seat1, ep, two_seats):
    """Step 3 (module docstring)."""
    for e in range(first, last):
        hp = state_.hp[e]
        ep.steps[e] += 1
        rewards(ep.battle, ep.lost, e, ep.prev[e], ep.counted_dead[e], hp, state_.shield[e], ep.n0,
                ep.counts_for_survival[e], ep.death_value, ep.negative_scale, ep.death_penalty, ep.only_positive,
                ep.sparse)
        outcome(e, ep.lost, ep.steps[e], ep.limit, hp, ep.n0, ep.won, ep.draw, ep.timeout, ep.done, ep.winner,
                ep.dead)
        r0 = finish(ep.won[0, e], ep.won[1, e], ep.battle[0, e], ep.win, ep.defeat, seat0.divisor[e], ep.sparse,
                    ep.scale)
        r1 = finish(ep.won[1, e], ep.won[0, e], ep.battle[1, e], ep.win, ep.defeat, seat1.divisor[e], ep.sparse,
                    ep.scale)
        ep.reward[0, e] = r0
        ep.reward[1, e] = r1
        ep.returns0[e] += r0
        ep.returns1[e] += r1
        record_deaths_v2(hp, seat0.ally0, seat0.n, seat0.enemy0, seat0.m, seat0.obs_enemies[e], seat0.enemy_tags[e])
        if two_seats:
            record_deaths_v2(hp, seat1.ally0, seat1.n, seat1.enemy0, seat1.m, seat1.obs_enemies[e],
                             seat1.enemy_tags[e])


def v2_step_range(first, last, jitter, state_, static, maps, flags, sc, seat0, seat1, ep, two_seats, with_state):
    """One SMACv2 environment step of games ``first .. last - 1`` (module docstring)."""
    v2_order_range(first, last, 0, seat0, state_, static, flags)
    if two_seats:
        v2_order_range(first, last, 1, seat1, state_, static, flags)
    for e in range(first, last):
        advance_game(jitter[:, e], game_rows(state_, e), static_rows(static, e), maps, flags, sc)
        hunt_game(e, state_, flags)
    v2_score_range(first, last, state_, seat0, seat1, ep, two_seats)
    v2_feature_range(first, last, state_, static, sc, seat0, seat1, ep, two_seats, True, with_state)


def clear_seat_v2(e, seat):
    """SMACv2's per-episode bookkeeping of one seat at an episode's start: every cone facing (1, 0),
    no enemy observed or tagged."""
    for i in range(seat.n):
        seat.fov[e, i, 0] = ONE
        seat.fov[e, i, 1] = ZERO
    for j in range(seat.m):
        seat.enemy_tags[e, j] = -1
        for i in range(seat.n):
            seat.obs_enemies[e, j, i] = 0


def v2_start_game(e, state_, static, spawn, goals, flags, seat0, seat1, ep):
    """Game ``e``'s episode start on its draw (``game_step.start_units``, ``start_episode``), SMACv2's
    bookkeeping cleared and the scripted side aimed (``hunt_game``); the features are the caller's."""
    rows = game_rows(state_, e)
    start_units(rows, static_rows(static, e), spawn[e], goals[e])
    start_episode(e, rows, seat0, seat1, ep)
    clear_seat_v2(e, seat0)
    clear_seat_v2(e, seat1)
    hunt_game(e, state_, flags)
