"""SMACv2 on the simulator (envs/smac/smacv2_*.py): every scenario plays, the draws follow SMACv2's
distributions, the sight cone and the EPO mask on hand cases, bad configurations, seeding."""

import functools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from selfplay.envs.smac import SMACV2_SCENARIOS, SMACv2Env, StarCraftCapabilityEnvWrapper, get_scenario
from selfplay.envs.smac.feature_rules import in_cone
from selfplay.envs.smac.mapdata import read_maps
from selfplay.envs.smac.maps import SMACV2_DATA_FILE
from selfplay.envs.smac.smacv2_draws import draw_start_positions, draw_teams
from selfplay.envs.smac.smacv2_scenarios import RACES, SIZES, CapabilityConfig, StartPositions

STALKERS = {"n_units": 2, "n_enemies": 2,
            "team_gen": {"dist_type": "weighted_teams", "unit_types": ["stalker"], "weights": [1.0], "observe": True}}


def play(env, rng):
    """One episode of random legal actions; checks every vector's size on the way; returns steps."""
    obs, state = env.reset()
    info = env.get_env_info()
    steps, terminated = 0, False
    while not terminated:
        assert len(obs) == info["n_agents"] and all(o.shape == (info["obs_shape"],) for o in obs)
        assert state.shape == (info["state_shape"],)
        avail = np.array(env.get_avail_actions())
        assert avail.shape == (info["n_agents"], info["n_actions"]) and (avail.sum(1) >= 1).all()
        actions = [int(rng.choice(np.flatnonzero(a))) for a in avail]
        _, terminated, _ = env.step(actions)
        obs, state = env.get_obs(), env.get_state()
        steps += 1
    assert steps <= info["episode_limit"]
    return steps


def test_scenario_names():
    assert len(SMACV2_SCENARIOS) == 30  # 3 races x 5 sizes, each also as its EPO variant
    assert {f"{r}_{s}" for r in RACES for s in SIZES} <= set(SMACV2_SCENARIOS)
    sc = get_scenario("zerg_10_vs_11")
    assert (sc.map_name, sc.capability.n_units, sc.capability.n_enemies) == ("10gen_zerg", 10, 11)
    with pytest.raises(ValueError, match="protoss_5_vs_5"):
        get_scenario("protoss_6_vs_6")


@pytest.mark.parametrize("name", [f"{r}_{s}" for r in RACES for s in SIZES] + ["terran_5_vs_5_epo"])
def test_every_scenario_plays_an_episode(name):
    env = StarCraftCapabilityEnvWrapper(seed=1, **get_scenario(name).env_args())
    assert play(env, np.random.default_rng(0)) >= 1


def test_sizes_match_smacv2_published_protoss_5_vs_5():
    """Hand count with SMACv2's formulas: obs = 4 move + 5 x (4 + health, shield + 3 bits) enemies +
    4 x (4 + 2 + 3) allies + (2 own health/shield + 2 own pos + 3 bits) = 92; state = 5 x (4 + shield +
    3) + 5 x (3 + shield + 3) + 5 x 11 last actions = 130; 11 actions."""
    env = StarCraftCapabilityEnvWrapper(seed=0, **get_scenario("protoss_5_vs_5").env_args())
    info = env.get_env_info()
    assert (info["obs_shape"], info["state_shape"], info["n_actions"]) == (92, 130, 11)
    assert info["cap_shape"] == 3 and info["agent_features"][-4:] == ["shield", "type_0", "type_1", "type_2"]
    names = env.get_obs_feature_names()  # SMACv2's build_obs_feature_names
    assert names[4:11] == ["enemy_shootable_0", "enemy_distance_0", "enemy_relative_x_0", "enemy_relative_y_0",
                           "enemy_health_0", "enemy_shield_0", "enemy_unit_type_0_bit_0"]
    assert names[49] == "ally_visible_1" and names[-7:-3] == ["own_health", "own_shield", "own_pos_x", "own_pos_y"]
    assert env.get_state_feature_names()[:9] == ["ally_health_0", "ally_cooldown_0", "ally_relative_x_0",
                                                 "ally_relative_y_0", "ally_shield_0", "ally_unit_type_0_bit_0",
                                                 "ally_unit_type_0_bit_1", "ally_unit_type_0_bit_2", "ally_health_1"]
    env = StarCraftCapabilityEnvWrapper(seed=0, **{**get_scenario("terran_5_vs_5").env_args(), "conic_fov": True})
    # terran: no shields; cone: 12 turn actions, own (fov x, y), ally state (fov x, y)
    assert env.get_total_actions() == 6 + 12 + 5
    assert env.get_obs_size() == 4 + 5 * (4 + 1 + 3) + 4 * (4 + 1 + 3) + (1 + 2 + 2 + 3)
    assert env.get_state_size() == 5 * (4 + 2 + 3) + 5 * (3 + 3) + 5 * 23


def test_team_draws_follow_the_weights():
    """4000 draws of 5 protoss agents: each type's count within 4.5 binomial standard deviations of
    n p; the enemy team is the ally team plus draws of the same distribution."""
    cap = get_scenario("protoss_10_vs_11").capability
    rng = np.random.default_rng(7)
    teams = [draw_teams(cap, rng) for _ in range(2000)]
    for ally, enemy in teams:
        assert enemy[:10] == ally and len(enemy) == 11
    units = [u for ally, enemy in teams for u in ally + enemy[10:]]
    n = len(units)
    for unit, p in zip(cap.team_gen.unit_types, cap.team_gen.weights):
        count = units.count(unit)
        assert abs(count - n * p) < 4.5 * math.sqrt(n * p * (1 - p)), (unit, count, n * p)


def test_exception_types_never_make_a_whole_team():
    cap = CapabilityConfig.from_dict({"n_units": 1, "n_enemies": 1, "team_gen": {
        "dist_type": "weighted_teams", "unit_types": ["marine", "medivac"], "weights": [0.2, 0.8],
        "exception_unit_types": ["medivac"]}})
    rng = np.random.default_rng(0)
    assert all(draw_teams(cap, rng)[0] == ["marine"] for _ in range(200))


def test_start_positions_reflect_and_surrounded_geometry():
    s = StartPositions(0.5)
    rng = np.random.default_rng(3)
    kinds = []
    for _ in range(2000):
        ally, enemy, kind = draw_start_positions(s, 5, 7, rng)
        kinds.append(kind)
        if kind == "reflect":
            assert (ally[:, 0] >= 0).all() and (ally[:, 0] < 15).all() and (ally[:, 1] < 32).all()
            np.testing.assert_allclose(enemy[:5, 0], 32 - ally[:, 0])
            np.testing.assert_allclose(enemy[:5, 1], ally[:, 1])
            assert (enemy[5:, 0] >= 16).all()
        else:
            np.testing.assert_array_equal(ally, np.full((5, 2), 16.0))
            off = enemy - 16.0
            np.testing.assert_allclose(np.abs(off[:, 0]), np.abs(off[:, 1]))  # on a diagonal
            assert (np.abs(off[:, 0]) >= 2 - 1e-9).all() and (np.abs(off[:, 0]) <= 16).all()
            quadrants = {(bool(x > 0), bool(y > 0)) for x, y in off}
            assert 1 <= len(quadrants) <= 4
    n = len(kinds)
    assert abs(kinds.count("reflect") - n * 0.5) < 4.5 * math.sqrt(n * 0.25)


def _env(**flags):
    return SMACv2Env("10gen_protoss", capability_config=STALKERS, use_unit_ranges=True, seed=0, **flags)


def _episode(ally_pts, enemy_pts, mask=None):
    cfg = {"team_gen": {"ally_team": ["stalker"] * 2, "enemy_team": ["stalker"] * 2},
           "ally_start_positions": {"item": np.array(ally_pts, float)},
           "enemy_start_positions": {"item": np.array(enemy_pts, float)}}
    if mask is not None:
        cfg["enemy_mask"] = {"item": np.array(mask)}
    return cfg


def test_cone_rule_hand_cases():
    half = math.pi / 12  # 12 turn actions: a 30 degree cone
    assert in_cone(4.0, 0.5, 1.0, 0.0, half, 10.0)  # atan(0.125) = 7.1 deg
    assert not in_cone(4.0, 3.0, 1.0, 0.0, half, 10.0)  # 36.9 deg
    assert not in_cone(11.0, 0.0, 1.0, 0.0, half, 10.0)  # beyond reach
    assert in_cone(-4.0, 0.5, 1.0, 0.0, half, 10.0)  # SMACv2's atan: the cone is mirrored behind the agent
    assert in_cone(0.5, 4.0, 0.0, 1.0, half, 10.0)  # facing north: 82.9 deg vs 90


def test_conic_fov_masks_what_is_outside_the_cone():
    """Agent 0 at (8, 16) facing east (SMACv2's start direction (1, 0)): the enemy 4 east is seen and
    attackable, the enemy 5 north is not; turned north, the reverse."""
    env = _env(conic_fov=True)
    env.reset(_episode([(8, 16), (10, 4)], [(12, 16), (8.2, 21)]))
    nfe = env.layout.enemy_feats_size
    move = env.get_obs_move_feats_size()
    obs = env.get_obs()[0]
    east, north = obs[move: move + nfe], obs[move + nfe: move + 2 * nfe]
    np.testing.assert_allclose(east[:4], [1.0, 0.4, 0.4, 0.0], atol=1e-6)
    assert not north.any()
    avail = env.get_avail_agent_actions(0)
    n_no = env.n_actions_no_attack
    assert avail[n_no] == 1 and avail[n_no + 1] == 0
    assert avail[6: 6 + 12] == [1] * 12
    env.seat.fov[0] = (0.0, 1.0)  # what turn action 6 + 3 (90 degrees) sets
    env.seat.invalidate()
    obs = env.get_obs()[0]
    east, north = obs[move: move + nfe], obs[move + nfe: move + 2 * nfe]
    assert not east.any() and north[0] == 1.0  # 5.0 away: within the stalker's shoot range 6
    np.testing.assert_allclose(north[1:4], [math.hypot(0.2, 5) / 10, 0.02, 0.5], atol=1e-6)
    own_fov = obs[env.get_obs_size() - 3 - 2: env.get_obs_size() - 3]
    np.testing.assert_allclose(own_fov, [0.0, 1.0])


def test_turn_action_sets_the_cone_direction():
    env = _env(conic_fov=True)
    env.reset(_episode([(8, 16), (10, 4)], [(24, 16), (24, 28)]))
    env.step([6 + 3, 1])
    np.testing.assert_allclose(env.seat.fov[0], [math.cos(math.pi / 2), 1.0], atol=1e-7)
    np.testing.assert_allclose(env.seat.fov[1], [1.0, 0.0])


def test_enemy_mask_hides_health_and_type_only():
    env = _env()
    env.reset(_episode([(8, 16), (8, 18)], [(12, 16), (12, 18)], mask=[[1, 0], [0, 0]]))
    nfe, move = env.layout.enemy_feats_size, env.get_obs_move_feats_size()
    obs = env.get_obs()
    masked, shown = obs[0][move: move + nfe], obs[1][move: move + nfe]
    assert masked[1] > 0 and not masked[4:].any()  # distance kept; health, shield, type bits hidden
    np.testing.assert_allclose(shown[4:], [1.0, 1.0, 1.0, 0.0, 0.0])  # full health and shield, stalker = type 0
    assert obs[0][move + nfe + 4] == 1.0  # the other enemy, not masked for agent 0


def test_prob_obs_enemy_zero_only_the_tagger_observes():
    env = _env(prob_obs_enemy=0.0)
    env.reset(_episode([(8, 16), (8, 18)], [(12, 17), (30, 30)]))
    move = env.get_obs_move_feats_size()
    seen = [o[move + 1] > 0 for o in env.get_obs()]
    assert sum(seen) == 1  # both are in sight of enemy 0; one tags it, the other does not observe it


@pytest.mark.parametrize("bad, key", [
    ({**STALKERS, "attack": {}}, "attack"),
    ({**STALKERS, "team_gen": {**STALKERS["team_gen"], "weights": [0.5]}}, "team_gen"),
    ({**STALKERS, "team_gen": {**STALKERS["team_gen"], "unit_types": ["marine"]}}, "team_gen"),
    ({**STALKERS, "start_positions": {"dist_type": "surrounded_and_reflect"}}, "start_positions"),
    ({**STALKERS, "enemy_mask": {"dist_type": "mask", "mask_probability": 2}}, "enemy_mask"),
    ({**STALKERS, "n_units": 0}, "n_units"),
])
def test_bad_config_is_a_one_line_error_naming_the_key(bad, key):
    with pytest.raises(ValueError) as e:
        SMACv2Env("10gen_protoss", capability_config=bad)
    assert key in str(e.value) and "\n" not in str(e.value)


def test_unknown_map_and_missing_team_gen():
    with pytest.raises(ValueError, match="10gen_protoss"):
        SMACv2Env("3m", capability_config=STALKERS)
    with pytest.raises(ValueError, match="team_gen"):
        SMACv2Env("10gen_zerg", capability_config={"n_units": 2, "n_enemies": 2})


def test_same_seed_same_episodes():
    def run(seed):
        env = StarCraftCapabilityEnvWrapper(seed=seed, **get_scenario("zerg_5_vs_5").env_args())
        rng = np.random.default_rng(0)
        out = []
        for _ in range(2):
            obs, _ = env.reset()
            out.append(np.stack(obs))
            for _ in range(5):
                actions = [int(rng.choice(np.flatnonzero(a))) for a in env.get_avail_actions()]
                _, done, _ = env.step(actions)
                out.append(np.stack(env.get_obs()))
                if done:
                    break
        return out

    a, b, c = run(5), run(5), run(6)
    assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not (len(a) == len(c) and all(np.array_equal(x, y) for x, y in zip(a, c)))


@pytest.mark.parametrize("name", ["smacv2:protoss_5_vs_5", "smacv2:terran_10_vs_11"])
def test_smacv2_battles_follow_the_two_seat_contract(name):
    """The registry's ``smacv2:SCENARIO``: both seats drawn, legal random play ends every game; with
    more enemies than agents, seat 1 has the larger team."""
    import torch
    from selfplay.envs.base import TwoPlayerBatchedEnv

    from selfplay.training.registry import is_two_sided, make_env

    env = make_env(name, 2, seed=0)
    assert isinstance(env, TwoPlayerBatchedEnv)
    sc = get_scenario(name.split(":")[1]).capability
    assert env.n_agents == [sc.n_units, sc.n_enemies] and is_two_sided(name) == (sc.n_units != sc.n_enemies)
    obs, masks = env.reset(), env.action_masks()
    for seat in (0, 1):
        assert obs[seat].shape == (2, env.n_agents[seat], env.obs_size[seat])
        assert masks[seat].shape == (2, env.n_agents[seat], env.n_actions[seat])
    done = torch.zeros(2, dtype=torch.bool)
    gen = torch.Generator().manual_seed(0)
    for _ in range(201):
        actions = [torch.multinomial(m.reshape(-1, m.shape[-1]).float(), 1, generator=gen).reshape(m.shape[:-1])
                   for m in masks]
        obs, rewards, just_done, info = env.step(actions)
        assert ((info["winner"] == -1) | just_done).all()
        done |= just_done
        masks = env.action_masks()
        if done.all():
            break
    assert done.all()


def test_mirrored_seat_sees_the_reflect_layout_as_seat_zero_does():
    """A reflect draw of equal teams: seat 1 (mirrored) sees its units where seat 0 sees its own, so
    both seats' state rows of their own units agree."""
    from selfplay.envs.smac.smacv2_battle import SMACv2Battle

    b = SMACv2Battle("protoss_5_vs_5", num_envs=8, seed=2)
    b.reset()
    states = b.get_state()
    reflect = [e for e in range(8) if b.kinds[e] == "reflect"]
    assert reflect
    for e in reflect:
        s0, s1 = states[0][e].numpy(), states[1][e].numpy()
        own0, own1 = s0[: 5 * 8].reshape(5, 8), s1[: 5 * 8].reshape(5, 8)
        # same units, same places (mirror image); placement may order equal types differently
        key = np.lexsort((own0[:, 3], own0[:, 2]))
        key1 = np.lexsort((own1[:, 3], own1[:, 2]))
        np.testing.assert_allclose(own0[key], own1[key1], atol=1e-5)


def test_train_runs_on_a_smacv2_scenario(tmp_path):
    from selfplay.training.loop import TrainConfig, train

    result = train(TrainConfig(env="smacv2:zerg_5_vs_5", agent="ppo-mlp", scheme="delta-limit-uniform:delta=0",
                               episodes=4, num_envs=2, checkpoints=2, agent_settings={"horizon": 64, "epochs": 1},
                               tensorboard=False), tmp_path)
    assert result.episodes == 4 and result.updates >= 1


def smacv2_sizes(race, n, m, f, observe=True):
    """SMACv2's size getters (``starcraft2.py``: ``get_obs_*_size``, ``get_state_size``,
    ``n_actions``), transcribed term by term for the 10gen maps (3 type bits, no stochastic
    capabilities)."""
    bits, shield = 3, int(race == "protoss")
    n_fov = f.get("num_fov_actions", 12) if f.get("conic_fov") else 0
    n_no_attack = 4 + n_fov + 2
    n_actions = n_no_attack + (n if race == "terran" and n > m else m)
    all_health = f.get("obs_all_health", True)
    own_health = f.get("obs_own_health", True) or all_health
    move = 4 + 8 * f.get("obs_pathing_grid", False) + 9 * f.get("obs_terrain_height", False)
    nf_en = 4 + bits + (1 + shield) * all_health
    nf_al = 4 + bits + (1 + shield) * all_health + n_actions * f.get("obs_last_action", False)
    own = bits + (1 + shield) * own_health + 2 * f.get("conic_fov", False) + 2 * f.get("obs_own_pos", False)
    obs = f.get("obs_timestep_number", False) + move + m * nf_en + (n - 1) * nf_al + own
    ally_state = 4 + shield + 2 * f.get("conic_fov", False) + bits
    state = n * ally_state + m * (3 + shield + bits) + n * n_actions * f.get("state_last_action", True) \
        + f.get("state_timestep_number", False)
    return obs, state, n_actions


FLAG_GRID = [{}, {"conic_fov": True, "obs_own_pos": True}, {"obs_last_action": True, "obs_pathing_grid": True,
             "obs_terrain_height": True, "obs_timestep_number": True, "state_timestep_number": True},
             {"obs_all_health": False, "obs_own_health": False, "state_last_action": False, "conic_fov": True,
              "num_fov_actions": 8}]


@pytest.mark.parametrize("race", RACES)
@pytest.mark.parametrize("flags", FLAG_GRID)
def test_layouts_equal_smacv2_formulas(race, flags):
    """Our vectors' lengths, size getters and feature names against SMACv2's formulas, for 10 vs 11
    (terran: the heal targets) and 5 vs 5, over flag sets, with and without observed types."""
    for n, m, observe in ((10, 11, True), (5, 5, False)):
        types = get_scenario(f"{race}_5_vs_5").capability.team_gen
        cap = {"n_units": n, "n_enemies": m, "team_gen": {"dist_type": "weighted_teams",
               "unit_types": list(types.unit_types), "weights": list(types.weights),
               "exception_unit_types": list(types.exception_unit_types), "observe": observe},
               "start_positions": {"dist_type": "surrounded_and_reflect", "p": 0.5, "map_x": 32, "map_y": 32}}
        env = StarCraftCapabilityEnvWrapper(capability_config=cap, map_name=f"10gen_{race}", seed=0, **flags)
        obs, state = env.reset()
        expected = smacv2_sizes(race, n, m, flags, observe)
        assert (env.get_obs_size(), env.get_state_size(), env.get_total_actions()) == expected
        assert obs[0].shape == (expected[0],) and state.shape == (expected[1],)
        assert len(env.get_obs_feature_names()) == expected[0] and len(env.get_state_feature_names()) == expected[1]
        assert np.array(env.get_avail_actions()).shape == (n, expected[2])


SMACV2_MAPS_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "smacv2_maps"


def test_shipped_smacv2_terrain_equals_what_the_reader_gives_on_the_map_file():
    pytest.importorskip("mpyq", reason="mpyq (dev extra) reads the .SC2Map archives")
    if not SMACV2_MAPS_DIR.is_dir():
        pytest.skip(f"the SMACv2 map files are not at {SMACV2_MAPS_DIR}")
    text = read_maps.dumps(read_maps.read_maps(SMACV2_MAPS_DIR, ["32x32_flat"]))
    assert text == SMACV2_DATA_FILE.read_text()


def test_smacv2_map_units_agree_with_the_unit_table_and_sight_ranges():
    """The 32x32_flat map's nine "_RL" units (UnitData.xml): hp, shields, armour, speed, radius as the
    unit table (units.py), and their sight equals SMACv2's sight-range table."""
    from selfplay.envs.smac.maps import game_unit_name
    from selfplay.envs.smac.smacv2_features import V2_SIGHT_RANGE
    from selfplay.envs.smac.units import UNIT_STATS

    data = json.loads(SMACV2_DATA_FILE.read_text())["32x32_flat"]
    assert all(c == "1" * 32 for c in data["pathing"])  # flat: every cell pathable
    rl = {game_unit_name(k): v for k, v in data["unit_data"].items() if k.endswith("_RL")}
    assert set(rl) == set(V2_SIGHT_RANGE)
    for name, u in rl.items():
        s = UNIT_STATS[name]
        for field, value in (("life_max", s.hp), ("shields_max", s.shield), ("life_armor", s.armor),
                             ("speed", s.speed), ("radius", s.radius)):
            if field in u:
                assert u[field] == pytest.approx(value), (name, field)
        if "sight" in u:
            assert u["sight"] == V2_SIGHT_RANGE[name], name


def test_epymarl_sc2v2_env_args_run_unchanged():
    """EPyMARL's smacv2 configs pass these env_args to the wrapper (its smacv2_configs/*.yaml), and
    its wrapper calls ``seed(seed)``, ``reset()`` (keeping the observations), ``get_env_info()``,
    ``episode_limit``, ``step``, ``get_stats``."""
    args = {"continuing_episode": False, "difficulty": "7", "game_version": None, "map_name": "10gen_zerg",
            "move_amount": 2, "obs_all_health": True, "obs_instead_of_state": False, "obs_last_action": False,
            "obs_own_health": True, "obs_pathing_grid": False, "obs_terrain_height": False,
            "obs_timestep_number": False, "reward_death_value": 10, "reward_defeat": 0, "reward_negative_scale": 0.5,
            "reward_only_positive": True, "reward_scale": True, "reward_scale_rate": 20, "reward_sparse": False,
            "reward_win": 200, "replay_dir": "", "replay_prefix": "", "conic_fov": False, "use_unit_ranges": True,
            "min_attack_range": 2, "num_fov_actions": 12, "obs_own_pos": True,
            "capability_config": {"n_units": 10, "n_enemies": 11, "team_gen": {
                "dist_type": "weighted_teams", "unit_types": ["zergling", "baneling", "hydralisk"],
                "weights": [0.45, 0.1, 0.45], "exception_unit_types": ["baneling"], "observe": True},
                "start_positions": {"dist_type": "surrounded_and_reflect", "p": 0.5, "map_x": 32, "map_y": 32},
                "enemy_mask": {"dist_type": "mask", "mask_probability": 0.5, "n_enemies": 11}},
            "state_last_action": True, "state_timestep_number": False, "step_mul": 8, "heuristic_ai": False,
            "debug": False, "prob_obs_enemy": 0.0, "action_mask": False}
    env = StarCraftCapabilityEnvWrapper(**args)
    env.seed(3)
    obs, _ = env.reset()
    assert env.episode_limit == 200 and len(obs) == 10 and env.get_env_info()["n_actions"] == 17
    assert np.array(env.get_avail_actions())[:, 6:].all()  # action_mask=False: every living enemy
    assert play(env, np.random.default_rng(1)) >= 1
    assert env.get_stats()["battles_game"] == 1


def test_epymarl_loads_the_wrapper_through_a_one_line_shim(tmp_path, monkeypatch):
    """``smacv2/env/starcraft2/wrapper.py`` holding one import line is what EPyMARL's smacv2_wrapper
    imports; its runner steps with a torch tensor of actions."""
    import sys

    import torch

    pkg = tmp_path / "smacv2" / "env" / "starcraft2"
    pkg.mkdir(parents=True)
    for d in (tmp_path / "smacv2", tmp_path / "smacv2" / "env", pkg):
        (d / "__init__.py").write_text("")
    (pkg / "wrapper.py").write_text("from selfplay.envs.smac import StarCraftCapabilityEnvWrapper  # noqa: F401\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    names = ("smacv2", "smacv2.env", "smacv2.env.starcraft2", "smacv2.env.starcraft2.wrapper")
    for name in names:
        monkeypatch.delitem(sys.modules, name, raising=False)
    try:
        from smacv2.env.starcraft2.wrapper import StarCraftCapabilityEnvWrapper as Shimmed

        assert Shimmed is StarCraftCapabilityEnvWrapper
        env = Shimmed(**get_scenario("terran_5_vs_5").env_args())
        obss, _ = env.reset()
        gen = torch.Generator().manual_seed(0)
        terminated = False
        while not terminated:
            avail = torch.tensor(env.get_avail_actions(), dtype=torch.float32)
            actions = torch.multinomial(avail, 1, generator=gen)[:, 0]
            reward, terminated, info = env.step(actions)
            assert isinstance(reward, float) and "battle_won" in info
    finally:
        for name in names:
            sys.modules.pop(name, None)


def test_single_player_battle_against_the_scripted_enemy():
    """``scripted_enemy=True`` (the suite's games against the built-in opponent): one seat; an idle
    team ("stop" every step) loses against the scripted attack-move."""
    import torch

    from selfplay.training.registry import make_env

    env = make_env("smacv2:zerg_5_vs_5", 3, seed=0, scripted_enemy=True)
    assert env.n_seats == 1
    env.reset()
    lost = torch.zeros(3, dtype=torch.bool)
    for _ in range(200):
        mask = env.action_masks()[0]
        _, rewards, done, info = env.step([torch.where(mask[..., 1], 1, 0)])
        lost |= done & (info["winner"] == 1)
        if lost.all():
            break
    assert lost.all()


@functools.cache
def _gpu_sim_smacv2() -> dict[str, str]:
    """``gpu_sim_smacv2.py --all`` in one fresh process (its four runs: a process's start-up costs
    more than each run): ``{run: its line}``."""
    import os
    import subprocess
    import sys

    script = Path(__file__).with_name("gpu_sim_smacv2.py")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, str(script), "--all"], capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.strip().splitlines())
    assert set(lines) == {"rows", "rows-perturb", "games", "games-perturb"}, out.stdout
    return lines


def test_gpu_build_of_the_smacv2_rules_gives_the_cpu_builds_rows():
    """The ``*_v2`` rules compiled as the GPU build's device functions (numba-cuda's simulator, in a
    fresh process) give the CPU build's masks, observations and state on an episode with sight
    cones; 1 % longer sight ranges on the GPU side are found."""
    pytest.importorskip("numba.cuda")
    lines = _gpu_sim_smacv2()
    assert lines["rows"].startswith("IDENTICAL") and int(lines["rows"].split()[1]) >= 12, lines["rows"]
    assert lines["rows-perturb"].startswith("DIFFERS"), lines["rows-perturb"]


def test_gpu_build_plays_the_cpu_builds_smacv2_games():
    """Batched SMACv2 games (EPO, cones, two seats, per-game unit constants) on the GPU build's
    SMACv2 kernels under numba-cuda's simulator, in a fresh process, are the CPU build's games
    step for step; a 0.1 % faster unit on the GPU side is found."""
    pytest.importorskip("numba.cuda")
    lines = _gpu_sim_smacv2()
    assert lines["games"] == "IDENTICAL 12", lines["games"]
    assert lines["games-perturb"].startswith("DIFFERS"), lines["games-perturb"]
