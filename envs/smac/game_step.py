"""An environment step in one call, and the start of an episode: the rules of ``rules.py`` and
``feature_rules.py`` called in the order ``SMACBattle.step`` calls them one by one, so that a step
costs one compiled call instead of about ten (compiled for both builds by ``build.py``).

Each function steps the games ``first .. last - 1`` (``step_range``): the CPU driver
(``cpu_drivers.step_games``) passes all games, a GPU thread its own game.  The records are passed
once per call, not once per game: numba passes a record field by field (a ``Seat`` is ~30 arrays of
several words each), which, once per game, cost more than the rules (measured: 2048 games of 3s5z
25 % slower than the rules called one by one).  And each phase runs over all the games before the
next, as the rules called one by one do (each loop's code stays hot).

A step of game ``e``:

1. the units' positions, hp, shields, energy and cooldowns are kept (``Episode.before_*``: SMAC's
   previous units); each controlled seat's actions become orders (``command_game``; a mirrored seat's east/west
   swapped back to the world's) and its last actions their one-hot;
2. ``advance_game``: the 8 game loops and the separation;
3. the episode step count, SMAC's battle rewards (``rewards``), the outcome (``outcome``) and each
   side's step reward (``finish``), added to the episode returns;
4. the features of the new state (``game_features``): each seat's positions in its frame,
   available actions, observations and (``with_state``) global state.

An episode starts (``start_units``, ``start_episode``) with every unit at its spawn point, full hp
and shields, a Medivac's start energy (``units.MEDIVAC_START_ENERGY``), a ready weapon, no order
(its goal its own spawn point) and the trigger's attack-move point; the reward bookkeeping on the
full hp + shields, no last actions, return 0, step 0.

Nothing here is a rule of its own; the records it reads and writes are ``records.Seat`` and
``records.Episode``.
"""

from __future__ import annotations

import numpy as np

from .feature_rules import avail_actions, finish, observations, outcome, rewards, seat_positions, state
from .rules import LEASH_NONE, STOP, ZERO, advance_game, command_game, game_rows, static_rows
from .units import MEDIVAC_START_ENERGY

START_ENERGY = np.float32(MEDIVAC_START_ENERGY)

MOVE_EAST_ACTION = 4  # SMAC's action numbers of the east and west moves (a mirrored seat swaps them)
MOVE_WEST_ACTION = 5


def mirrored_action(a):
    """A mirrored seat's action in the world's frame: east and west swapped."""
    if a == MOVE_EAST_ACTION:
        return MOVE_WEST_ACTION
    if a == MOVE_WEST_ACTION:
        return MOVE_EAST_ACTION
    return a


def order_range(first, last, side, seat, state_, static, flags):
    """Seat ``side``'s actions of games ``first .. last - 1``: their one-hot into ``last_action``, then
    the orders (a mirrored seat's east and west swapped to the world's, in its action rows)."""
    for e in range(first, last):
        actions = seat.actions[e]
        write_one_hot(seat.last_action[e], actions)
        if seat.mirror:
            for i in range(actions.shape[0]):
                actions[i] = mirrored_action(actions[i])
        command_game(side, actions, game_rows(state_, e), static_rows(static, e), flags)


def write_one_hot(one_hot, actions):
    """``one_hot`` (agents, actions) := the one-hot rows of ``actions`` (agents,): SMAC's last actions."""
    for i in range(actions.shape[0]):
        for q in range(one_hot.shape[1]):
            one_hot[i, q] = 0.0
        one_hot[i, actions[i]] = 1.0


def keep_range(first, last, state_, ep):
    """The units' positions, hp, shields, energy and cooldowns into ``ep.before_*``."""
    for e in range(first, last):
        for u in range(state_.hp.shape[1]):
            ep.before_pos[e, u, 0] = state_.pos[e, u, 0]
            ep.before_pos[e, u, 1] = state_.pos[e, u, 1]
            ep.before_hp[e, u] = state_.hp[e, u]
            ep.before_shield[e, u] = state_.shield[e, u]
            ep.before_energy[e, u] = state_.energy[e, u]
            ep.before_cooldown[e, u] = state_.cooldown[e, u]


def play_range(first, last, jitter, state_, static, maps, flags, sc, seat0, seat1, ep, two_seats):
    """Steps 1 and 2 (module docstring); ``jitter`` (loops, E, U), ``sc`` one slot's scratch rows."""
    keep_range(first, last, state_, ep)
    order_range(first, last, 0, seat0, state_, static, flags)
    if two_seats:
        order_range(first, last, 1, seat1, state_, static, flags)
    for e in range(first, last):
        advance_game(jitter[:, e], game_rows(state_, e), static_rows(static, e), maps, flags, sc)


def score_range(first, last, state_, sc, seat0, seat1, ep, two_seats, with_state):
    """Steps 3 and 4 (module docstring), after the game loops ran."""
    for e in range(first, last):
        hp = state_.hp[e]
        ep.steps[e] += 1
        rewards(ep.battle, ep.lost, e, ep.prev[e], ep.counted_dead[e], hp, state_.shield[e], ep.n0,
                ep.counts_for_survival, ep.death_value, ep.negative_scale, ep.death_penalty, ep.only_positive,
                ep.sparse)
        outcome(e, ep.lost, ep.steps[e], ep.limit, hp, ep.n0, ep.won, ep.draw, ep.timeout, ep.done, ep.winner,
                ep.dead)
        r0 = finish(ep.won[0, e], ep.won[1, e], ep.battle[0, e], ep.win, ep.defeat, ep.divisor0, ep.sparse, ep.scale)
        r1 = finish(ep.won[1, e], ep.won[0, e], ep.battle[1, e], ep.win, ep.defeat, ep.divisor1, ep.sparse, ep.scale)
        ep.reward[0, e] = r0
        ep.reward[1, e] = r1
        ep.returns0[e] += r0
        ep.returns1[e] += r1
    feature_range(first, last, state_, sc, seat0, seat1, ep, two_seats, with_state)


def seat_range(first, last, seat, state_, sc, ep, with_state):
    """One seat's positions, available actions, observations and (``with_state``) state."""
    for e in range(first, last):
        px = seat.px[e]
        py = seat.py[e]
        hp = state_.hp[e]
        shield = state_.shield[e]
        timestep = ep.timestep[e]
        seat_positions(px, py, state_.pos[e], seat.map_x, seat.mirror)
        avail_actions(seat.avail[e], px, py, hp, seat.ally0, seat.n, seat.enemy0, seat.m, seat.is_medivac,
                      seat.pathing)
        observations(seat.obs[e], seat.avail[e], seat.last_action[e], timestep, px, py, hp, shield, seat.hp_max,
                     seat.shield_max, sc.hp_frac, sc.shield_frac, seat.ally0, seat.n, seat.enemy0, seat.m,
                     seat.ally_type, seat.enemy_type, seat.bits, seat.shield_ally, seat.shield_enemy, seat.pathing,
                     seat.terrain, seat.config)
        if with_state:
            state(seat.state[e], seat.last_action[e], timestep, px, py, hp, shield, seat.hp_max, seat.shield_max,
                  state_.cooldown[e], state_.energy[e], seat.max_cd, seat.is_medivac, seat.ally0, seat.n, seat.enemy0,
                  seat.m, seat.ally_type, seat.enemy_type, seat.bits, seat.shield_ally, seat.shield_enemy, seat.cx,
                  seat.cy, seat.width, seat.height, seat.config)


def feature_range(first, last, state_, sc, seat0, seat1, ep, two_seats, with_state):
    """Step 4 (module docstring): the features of seat 0 (and seat 1 when ``two_seats``), at timestep
    ``steps / limit`` (float32)."""
    for e in range(first, last):
        ep.timestep[e] = np.float32(ep.steps[e]) / np.float32(ep.limit)
    seat_range(first, last, seat0, state_, sc, ep, with_state)
    if two_seats:
        seat_range(first, last, seat1, state_, sc, ep, with_state)


def step_range(first, last, jitter, state_, static, maps, flags, sc, seat0, seat1, ep, two_seats, with_state):
    """One environment step of games ``first .. last - 1`` (module docstring)."""
    play_range(first, last, jitter, state_, static, maps, flags, sc, seat0, seat1, ep, two_seats)
    score_range(first, last, state_, sc, seat0, seat1, ep, two_seats, with_state)


def start_units(unit, static, spawn, goals):
    """One game's units at the start of an episode (module docstring): ``static`` its constants
    (``rules.static_rows``), ``spawn`` (U, 2) their spawn points, ``goals`` (U, 2) the trigger's
    attack-move points of this game."""
    for u in range(unit.hp.shape[0]):
        unit.pos[u, 0] = spawn[u, 0]
        unit.pos[u, 1] = spawn[u, 1]
        unit.goal[u, 0] = spawn[u, 0]
        unit.goal[u, 1] = spawn[u, 1]
        unit.trigger_goal[u, 0] = goals[u, 0]
        unit.trigger_goal[u, 1] = goals[u, 1]
        unit.hp[u] = static.hp_max[u]
        unit.shield[u] = static.shield_max[u]
        unit.energy[u] = START_ENERGY if static.heals[u] else ZERO
        unit.cooldown[u] = ZERO
        unit.since_damage[u] = ZERO
        unit.cur_speed[u] = ZERO
        unit.order[u] = STOP
        unit.target[u] = 0
        unit.last_attacker[u] = -1
        unit.detonate[u] = False
        unit.vel[u, 0] = ZERO
        unit.vel[u, 1] = ZERO
        unit.shot_target[u] = 0
        unit.shot_wind[u] = ZERO
        unit.shot_in[u] = ZERO
        unit.shot_hits[u] = 0
        unit.leash[u] = LEASH_NONE
        unit.leash_origin[u, 0] = spawn[u, 0]
        unit.leash_origin[u, 1] = spawn[u, 1]


def start_episode(e, unit, seat0, seat1, ep):
    """Game ``e``'s episode bookkeeping at its start (its units already started): hp + shield as the
    rewards' previous values, the dead (none) counted, no last actions, return 0, step 0."""
    for u in range(unit.hp.shape[0]):
        ep.prev[e, u] = unit.hp[u] + unit.shield[u]
        ep.counted_dead[e, u] = not unit.hp[u] > ZERO
    clear_last_actions(seat0.last_action[e])
    clear_last_actions(seat1.last_action[e])
    ep.returns0[e] = 0.0
    ep.returns1[e] = 0.0
    ep.steps[e] = 0


def clear_last_actions(last):
    for i in range(last.shape[0]):
        for q in range(last.shape[1]):
            last[i, q] = 0.0
