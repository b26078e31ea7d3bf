"""Observation, state and mask entries of a hand-placed situation (docs/design/smac.md §2-4), and the
vector sizes SMAC gives for every map."""

import math

import pytest
import torch
from selfplay.envs.smac import MAP_NAMES, SMACBattle, SMACEnv

# SMAC's published sizes (obs_shape, state_shape, n_actions) with default flags.
SMAC_SIZES = {
    "3m": (30, 48, 9), "8m": (80, 168, 14), "25m": (250, 950, 31), "5m_vs_6m": (55, 98, 12),
    "8m_vs_9m": (85, 179, 15), "10m_vs_11m": (105, 243, 17), "27m_vs_30m": (285, 1170, 36),
    "2s3z": (80, 120, 11), "3s5z": (128, 216, 14), "3s5z_vs_3s6z": (136, 230, 15), "1c3s5z": (162, 270, 15),
    "MMM": (160, 290, 16), "MMM2": (176, 322, 18), "3s_vs_3z": (36, 54, 9), "3s_vs_4z": (42, 61, 10),
    "3s_vs_5z": (48, 68, 11), "2m_vs_1z": (16, 26, 7), "6h_vs_8z": (78, 140, 14), "corridor": (156, 282, 30),
    "bane_vs_bane": (336, 984, 30), "2c_vs_64zg": (332, 342, 70),
    # the two maps added from the map files: SMAC's formulas (features.py docstring), by hand:
    # 2s_vs_1sc: obs 4 + 1*(4+1) + 1*(4+2) + 2 = 17, state 2*5 + 1*3 + 2*7 = 27;
    # so_many_baneling: obs 4 + 32*5 + 6*6 + 2 = 202, state 7*5 + 32*3 + 7*38 = 397
    "2s_vs_1sc": (17, 27, 7), "so_many_baneling": (202, 397, 38),
}


def test_every_map_has_smac_sizes():
    assert set(SMAC_SIZES) == set(MAP_NAMES)
    for name, (obs, state, n_actions) in SMAC_SIZES.items():
        b = SMACBattle(name, 1, two_player=False, seed=0)
        assert (b.obs_size[0], b.state_size[0], b.n_actions[0]) == (obs, state, n_actions), name
        o = b.reset()[0]
        assert o.shape == (1, b.n_agents[0], obs) and b.get_state()[0].shape == (1, state)


def test_flags_change_sizes_like_smac():
    env = SMACEnv("3m", obs_last_action=True, obs_pathing_grid=True, obs_terrain_height=True,
                  obs_timestep_number=True, state_last_action=False, state_timestep_number=True)
    # move 4+8+9, enemies 3*5, allies 2*(5+9), own 1 + timestep 1
    assert env.get_obs_size() == 21 + 15 + 28 + 2
    assert env.get_state_size() == 12 + 9 + 1
    obs, state = env.reset()
    assert len(obs[0]) == env.get_obs_size() and len(state) == env.get_state_size()


def test_special_state_size_matches_seed():
    b = SMACBattle("3s5z", 2, two_player=True)
    b.reset()
    assert b.special_state_size == [295, 295]  # the seed's 3s5z example
    s = b.get_special_state()[0]
    assert s.shape == (2, 8, 295)
    assert torch.equal(s[0, 3, -8:], torch.eye(8)[3])  # agent id one-hot


@pytest.fixture
def situation():
    """2s3z, two players, seat 1 mirrored.  Seat 0: stalkers 0, 1, zealots 2, 3, 4 (3, 4 dead);
    seat 1 (units 5..9): stalkers 5, 6, zealots 7, 8, 9 (8, 9 dead)."""
    b = SMACBattle("2s3z", 1, two_player=True, mirror=True, seed=0)
    b.reset()
    e = b.engine
    pos = {0: (10, 16), 1: (12, 17), 2: (19.5, 16), 3: (5, 9), 4: (5, 10),
           5: (14, 16), 6: (10, 23.5), 7: (17, 16), 8: (30, 9), 9: (30, 10)}
    for k, p in pos.items():
        e.pos[0, k] = torch.tensor(p, dtype=torch.float32)
    hp = {0: 40, 5: 60, 7: 50, 3: 0, 4: 0, 8: 0, 9: 0}
    shield = {0: 20, 5: 0, 6: 40, 7: 25}
    for k, v in hp.items():
        e.hp[0, k] = v
    for k, v in shield.items():
        e.shield[0, k] = v
    e.shield[0, [3, 4, 8, 9]] = 0
    b.state_changed()
    return b


def test_observation_entries(situation):
    b = situation
    obs = b.get_obs()[0][0, 0]
    assert obs.shape == (80,)
    move = [1, 1, 1, 1]
    # enemies: [attackable, dist/9, dx/9, dy/9, hp, shield, type(zealot, stalker)]
    e0 = [1, 4 / 9, 4 / 9, 0, 60 / 80, 0, 0, 1]
    e1 = [0, 7.5 / 9, 0, 7.5 / 9, 1, 40 / 80, 0, 1]
    e2 = [0, 7 / 9, 7 / 9, 0, 50 / 100, 25 / 50, 1, 0]
    dead = [0] * 8
    # allies: [visible, dist/9, dx/9, dy/9, hp, shield, type(stalker, zealot)]
    a1 = [1, math.sqrt(5) / 9, 2 / 9, 1 / 9, 1, 1, 1, 0]
    a2 = [0] * 8  # 9.5 away: out of sight
    own = [40 / 80, 20 / 80, 1, 0]
    expected = move + e0 + e1 + e2 + dead + dead + a1 + a2 + dead + dead + own
    assert obs.tolist() == pytest.approx(expected, abs=1e-6)


def test_mirrored_seat_sees_negated_x(situation):
    obs1 = situation.get_obs()[1][0, 0]  # seat 1, agent 0 = unit 5 at (14, 16)
    # its enemy 0 is unit 0 at (10, 16): without mirror dx = -4/9; mirrored +4/9
    assert obs1[4:12].tolist() == pytest.approx([1, 4 / 9, 4 / 9, 0, 0.5, 0.25, 0, 1], abs=1e-6)


def test_state_entries(situation):
    b = situation
    state = b.get_state()[0][0]
    assert state.shape == (120,)
    # allies: [hp, cooldown/35, (x-16)/28, (y-16)/28, shield, type bits]
    assert state[0:7].tolist() == pytest.approx([0.5, 0, -6 / 28, 0, 0.25, 1, 0], abs=1e-6)
    assert state[21:35].tolist() == [0] * 14  # dead allies 3, 4
    # enemies from index 35: [hp, (x-16)/28, (y-16)/28, shield, type(zealot, stalker)]
    assert state[35:41].tolist() == pytest.approx([0.75, -2 / 28, 0, 0, 0, 1], abs=1e-6)
    assert state[47:53].tolist() == pytest.approx([0.5, 1 / 28, 0, 0.5, 1, 0], abs=1e-6)
    assert state[65:].tolist() == [0] * 55  # no last actions yet
    # seat 1 (mirrored): its first ally (unit 5 at x=14) is at x' = 18
    s1 = b.get_state()[1][0]
    assert s1[2].item() == pytest.approx(2 / 28)


def test_masks(situation):
    m0, m1 = situation.action_masks()
    assert m0[0, 0].tolist() == [False, True, True, True, True, True, True, False, False, False, False]
    assert m0[0, 3].tolist() == [True] + [False] * 10  # dead: only no-op
    # unit 7 (seat 1 agent 2) at (17,16): unit 0 at 7 is out of shoot range 6, units 1 (~5.1) and 2 (2.5) in;
    # units 3, 4 are dead
    assert m1[0, 2, 6:].tolist() == [False, True, True, False, False]


def test_move_mask_at_terrain_edge():
    b = SMACBattle("3m", 1, two_player=True)
    b.reset()
    b.engine.pos[0, 0] = torch.tensor([16.0, 8.5])  # strip y in [8, 24): south of 8.5 - 1 = 7.5 is a cliff
    b.state_changed()
    assert b.action_masks()[0][0, 0, 2:6].tolist() == [True, False, True, True]


def test_medivac_heal_mask():
    b = SMACBattle("MMM", 1, two_player=True)
    b.reset()
    # agents: marauders 0-1, marines 2-8, medivac 9; the medivac's target columns are allies
    m = b.action_masks()[0][0, 9]
    assert m[6 + 9].item() is False  # never itself (a Medivac)
    assert bool(m[6:6 + 9].any()) and not bool(b.action_masks()[0][0, 0, 6:].any())


def test_pathing_and_height_features():
    """SMAC's surrounding points from (int x, int y): N, S, E, W at 2*move_amount = 4, then NE, SW,
    SE, NW at 2; heights add the unit's own cell.  Line map: walkable (height 0.5) for y in [8, 24)."""
    b = SMACBattle("3m", 1, two_player=True, obs_pathing_grid=True, obs_terrain_height=True)
    b.reset()
    b.engine.pos[0, 0] = torch.tensor([16.3, 9.5])
    b.state_changed()
    obs = b.get_obs()[0][0, 0]
    # x, y = 16, 9: N (16,13) S (16,5) E (20,9) W (12,9) NE (18,11) SW (14,7) SE (18,7) NW (14,11)
    assert obs[:4].tolist() == [1, 1, 1, 1]  # the move flags look 1 ahead: (16, 8.5) is walkable
    assert obs[4:12].tolist() == [1, 0, 1, 1, 1, 0, 0, 1]
    h = b.spec.terrain_height()
    assert h[16, 9] == pytest.approx(16.5 / 64, abs=2e-3) and h[16, 5] < 0.01  # on / off the strip
    pts = [(16, 13), (16, 5), (20, 9), (12, 9), (18, 11), (14, 7), (18, 7), (14, 11), (16, 9)]
    assert obs[12:21].tolist() == pytest.approx([float(h[x, y]) for x, y in pts], abs=1e-6)


# The seed's 3s5z example at reset (agent 0, a stalker): unit positions recovered from its
# centre-relative coordinates ((x - 16) / 28, (y - 16) / 28), and its printed feature rows.
SEED_Y0 = 16 - 0.04244559 * 28
SEED_ALLIES = [(9, SEED_Y0), (9, 16), (10.18848, 16), (7.5, 16.5), (8, 15.5), (8.5, 17), (9, 18), (9.5, 17)]
SEED_ENEMIES = [(23, 16), (23, SEED_Y0), (22.5, 17), (23.5, 17), (23, 18), (21.5, 16.5), (22, 15.5), (24.18848, 16)]
SEED_ENEMY_IS_STALKER = [1, 1, 0, 0, 0, 0, 0, 1]
SEED_OBS_ALLY_FEATS = [
    [1, 0.13205296, 0, 0.13205296, 1, 1, 1, 0],
    [1, 0.18675107, 0.13205296, 0.13205296, 1, 1, 1, 0],
    [1, 0.25094765, -0.16666667, 0.18760851, 1, 1, 0, 1],
    [1, 0.13489823, -0.11111111, 0.0764974, 1, 1, 0, 1],
    [1, 0.24942972, -0.05555556, 0.24316406, 1, 1, 0, 1],
    [1, 0.35427517, 0, 0.35427517, 1, 1, 0, 1],
    [1, 0.24942972, 0.05555556, 0.24316406, 1, 1, 0, 1],
]
SEED_SPECIAL_ENEMY_FEATS = [
    [0, 1.5611506, 1.5555556, 0.13205296, 0, 1, 1, 0, 1, 0.25, 0],
    [0, 1.5555556, 1.5555556, 0, 0, 1, 1, 0, 1, 0.25, -0.04244559],
    [0, 1.5195818, 1.5, 0.24316406, 0, 1, 1, 1, 0, 0.23214285, 0.03571429],
    [0, 1.629358, 1.6111112, 0.24316406, 0, 1, 1, 1, 0, 0.26785713, 0.03571429],
    [0, 1.5953883, 1.5555556, 0.35427517, 0, 1, 1, 1, 0, 0.25, 0.07142857],
    [0, 1.4015025, 1.3888888, 0.18760851, 0, 1, 1, 1, 0, 0.19642857, 0.01785714],
    [0, 1.4464687, 1.4444444, 0.0764974, 0, 1, 1, 1, 0, 0.21428572, -0.01785714],
    [0, 1.6927671, 1.6876085, 0.13205296, 0, 1, 1, 0, 1, 0.2924456, 0],
]
SEED_SPECIAL_OWN = [1, 0, 0, 0, 1, 1, -0.25, -0.04244559, 1, 0] + [0] * 14


def test_reproduces_the_seeds_3s5z_example():
    b = SMACBattle("3s5z", 1, two_player=True)
    b.reset()
    # our enemy order is stalkers first: the seed's enemies 0, 1, 7, then 2..6
    order = [0, 1, 7, 2, 3, 4, 5, 6]
    pos = SEED_ALLIES + [SEED_ENEMIES[k] for k in order]
    b.engine.pos[0] = torch.tensor(pos, dtype=torch.float32)
    b.state_changed()
    assert b.action_masks()[0][0, 0].tolist() == [False] + [True] * 5 + [False] * 8  # seed: [0,1,1,1,1,1,0..0]
    obs = b.get_obs()[0][0, 0]
    assert obs[:4].tolist() == [1, 1, 1, 1]
    assert obs[4:68].tolist() == [0] * 64  # no enemy within sight 9
    assert obs[68:124].reshape(7, 8).tolist() == [pytest.approx(r, abs=1e-5) for r in SEED_OBS_ALLY_FEATS]
    assert obs[124:].tolist() == [1, 1, 1, 0]  # own: hp, shield, stalker
    special = b.get_special_state()[0][0, 0]
    allies = special[:175].reshape(7, 25)
    for row, seed_row in zip(allies.tolist(), SEED_OBS_ALLY_FEATS):
        # [visible, dist, dx, dy, cooldown, hp, shield, centre x, centre y, type bits, last action]
        assert row[:4] == pytest.approx(seed_row[:4], abs=1e-5) and row[4:7] == [0, 1, 1]
        assert row[9:11] == seed_row[6:8] and row[11:] == [0] * 14
    enemies = special[175:263].reshape(8, 11).tolist()
    assert [enemies[order.index(k)] for k in range(8)] == [pytest.approx(r, abs=1e-5) for r in SEED_SPECIAL_ENEMY_FEATS]
    assert special[263:287].tolist() == pytest.approx(SEED_SPECIAL_OWN, abs=1e-5)
    assert special[287:].tolist() == [1, 0, 0, 0, 0, 0, 0, 0]
