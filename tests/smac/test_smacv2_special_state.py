"""SMACv2's agent-specific state (``smacv2_games.special_states``, one compiled loop) against its
vectorised definition (numpy, the construction the docstring states), bit for bit, over played games."""

import numpy as np
import pytest
import torch
from selfplay.envs.smac.smacv2_battle import SMACv2Battle
from selfplay.envs.smac.smacv2_games import special_states


def vectorised_special_states(games, side: int) -> np.ndarray:
    """``special_states``' definition in array operations (float32 throughout, masks multiplied)."""
    games.fresh()
    rec, L, eng, spec = games.seats[side], games.layouts[side], games.engine, games.spec
    E, n, m, b = games.num_envs, int(rec.n), int(rec.m), L.bits
    ally0, enemy0 = int(rec.ally0), int(rec.enemy0)
    px, py = rec.px, rec.py
    hp, shield = eng.arrays("hp"), eng.arrays("shield")
    hp_max, shield_max = eng.static.hp_max, eng.static.shield_max
    hp_frac = hp / hp_max
    sh_frac = np.where(shield_max > 0, shield / np.maximum(shield_max, 1e-6), 0.0)
    alive = hp > 0
    cx = (px - spec.map_x / 2) / spec.playable_width
    cy = (py - spec.map_y / 2) / spec.playable_height
    a_sl, e_sl = slice(ally0, ally0 + n), slice(enemy0, enemy0 + m)
    cd = np.where(rec.is_medivac, eng.arrays("energy")[:, a_sl], eng.arrays("cooldown")[:, a_sl]) / rec.max_cd
    ally_bits = np.eye(b, dtype=np.float32)[rec.ally_type] if b else np.zeros((E, n, 0), np.float32)
    enemy_bits = np.eye(b, dtype=np.float32)[rec.enemy_type] if b else np.zeros((E, m, 0), np.float32)
    sa = [sh_frac[:, a_sl, None]] if L.shield else []
    se = [sh_frac[:, e_sl, None]] if L.shield else []
    ally_rows = np.concatenate([hp_frac[:, a_sl, None], *sa, cx[:, a_sl, None], cy[:, a_sl, None], ally_bits,
                                rec.last_action], -1)
    alive_a, alive_e = alive[:, a_sl], alive[:, e_sl]
    r = rec.sight[:, :, None]
    others = np.array([[j for j in range(n) if j != i] for i in range(n)], np.int64).reshape(n, n - 1)
    ax, ay = px[:, a_sl], py[:, a_sl]
    dx, dy = ax[:, others] - ax[:, :, None], ay[:, others] - ay[:, :, None]
    d = np.hypot(dx, dy)
    allies = np.concatenate([(d < r)[..., None], (d / r)[..., None], (dx / r)[..., None], (dy / r)[..., None],
                             cd[:, others][..., None], ally_rows[:, others]], -1) * alive_a[:, others][..., None]
    dx, dy = px[:, None, e_sl] - ax[:, :, None], py[:, None, e_sl] - ay[:, :, None]
    d = np.hypot(dx, dy)
    show = (~rec.hidden)[..., None]

    def per_enemy(x):
        return np.broadcast_to(x[:, None], (E, n, *x.shape[1:]))

    no = L.n_actions_no_attack
    enemies = np.concatenate([rec.avail[:, :, no:no + m, None], (d / r)[..., None], (dx / r)[..., None],
                              (dy / r)[..., None], (d < r)[..., None], per_enemy(hp_frac[:, e_sl, None]) * show,
                              *(per_enemy(x) * show for x in se), per_enemy(enemy_bits) * show,
                              per_enemy(cx[:, e_sl, None]), per_enemy(cy[:, e_sl, None])], -1) * alive_e[:, None, :, None]
    own = [np.ones((E, n, 1)), np.zeros((E, n, 3)), ally_rows] + ([rec.fov] if L.flags.conic_fov else [])
    body = np.concatenate([allies.reshape(E, n, -1), enemies.reshape(E, n, -1), *own], -1) * alive_a[..., None]
    return np.concatenate([body, np.broadcast_to(np.eye(n), (E, n, n))], -1).astype(np.float32)


def _random_actions(battle, rng):
    """A uniformly drawn available action per agent of every controlled seat."""
    out = []
    for mask in battle.action_masks():
        m = mask.numpy()
        out.append(torch.from_numpy(np.array([[rng.choice(np.flatnonzero(a)) for a in env] for env in m])))
    return out


@pytest.mark.parametrize("scenario, flags, two_player", [
    ("protoss_5_vs_5", {}, False),  # shields
    ("terran_5_vs_5", {"conic_fov": True}, False),  # Medivacs (energy), cone directions
    ("zerg_5_vs_5", {}, True),  # both seats, seat 1 mirrored
    ("terran_10_vs_11", {}, True),  # unequal teams: the extra enemy, heal actions on seat 0
])
def test_special_states_equal_their_vectorised_definition(scenario, flags, two_player):
    """Every seat's vectors equal the vectorised definition bit for bit at every step of played
    games (deaths and EPO-hidden enemies included)."""
    battle = SMACv2Battle(scenario, num_envs=3, seed=5, two_player=two_player, **flags)
    battle.reset()
    rng = np.random.default_rng(0)
    for step in range(70):
        if step == 20:  # deaths for sure: an ally of game 0 and an enemy of game 1
            hp = battle.engine.arrays("hp")
            hp[0, 1] = hp[1, battle.games.seats[0].enemy0] = 0.0
            battle.games.invalidate()
        for side in range(battle.n_seats):
            seat = battle.games.seats[side]  # an EPO mask over every draw (the 5_vs_5 scenarios draw none)
            seat.hidden[:] = rng.random(seat.hidden.shape) < 0.3
            got, want = special_states(battle.games, side), vectorised_special_states(battle.games, side)
            assert got.dtype == want.dtype == np.float32 and got.shape == want.shape
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
        battle.step(_random_actions(battle, rng))
