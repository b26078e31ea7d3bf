"""SMAC's ``StarCraft2Env`` interface on hand cases (envs/smac/env.py, SMAC's ``starcraft2.py``
semantics): size getters, unit records, state dict, visibility, movement helpers, per-step dead
counts, the end of an episode, action checks, the heuristic AI, difficulty, render/replay."""

import math
import warnings

import numpy as np
import pytest
import torch
from selfplay.envs.smac import MultiAgentEnv, SMACEnv, StarCraft2Env
from selfplay.envs.smac.env import Direction


def place(env, pos=None, hp=None, shield=None, cooldown=None):
    """Put units (index over allies then enemies) at hand-chosen states, then refresh the records."""
    eng = env._battle.engine
    for table, values in (("pos", pos), ("hp", hp), ("shield", shield), ("cooldown", cooldown)):
        for u, v in (values or {}).items():
            getattr(eng, table)[0, u] = torch.tensor(v, dtype=torch.float32)
    env._battle.state_changed()
    env.init_units()


def test_smac_names_and_base_class():
    assert StarCraft2Env is SMACEnv and issubclass(SMACEnv, MultiAgentEnv)
    with pytest.raises(NotImplementedError):
        MultiAgentEnv().step([0])

    class Tiny(MultiAgentEnv):  # SMAC's base class builds env_info from the size getters
        n_agents, episode_limit = 2, 5

        def get_state_size(self):
            return 7

        def get_obs_size(self):
            return 3

        def get_total_actions(self):
            return 4

    assert Tiny().get_env_info() == {"state_shape": 7, "obs_shape": 3, "n_actions": 4, "n_agents": 2,
                                     "episode_limit": 5}


def test_feature_sizes_follow_smacs_formulas():
    env = StarCraft2Env("3s5z", seed=0)
    # move 4; enemy 4 + 2 type bits + health + shield; ally the same; own health + shield + 2 bits
    assert env.get_obs_move_feats_size() == 4
    assert env.get_obs_enemy_feats_size() == (8, 8)
    assert env.get_obs_ally_feats_size() == (7, 8)
    assert env.get_obs_own_feats_size() == 4
    assert env.get_obs_size() == 4 + 8 * 8 + 7 * 8 + 4 == 128
    assert env.get_ally_num_attributes() == 4 + 1 + 2 and env.get_enemy_num_attributes() == 3 + 1 + 2
    info = env.get_env_info()
    assert info["agent_features"] == ["health", "energy/cooldown", "rel_x", "rel_y", "shield", "type_0", "type_1"]
    assert info["enemy_features"] == ["health", "rel_x", "rel_y", "shield", "type_0", "type_1"]
    assert env.n_actions_no_attack == 6 and env.n_actions == 6 + 8
    env = StarCraft2Env("3m", obs_last_action=True, obs_pathing_grid=True, obs_terrain_height=True,
                        obs_timestep_number=True)
    assert env.get_obs_move_feats_size() == 4 + 8 + 9
    assert env.get_obs_ally_feats_size() == (2, 5 + 9)
    assert env.get_obs_own_feats_size() == 1 + 1
    # SMAC: all health includes own health, whatever obs_own_health says
    assert StarCraft2Env("3m", obs_own_health=False).get_obs_own_feats_size() == 1
    assert StarCraft2Env("3m", obs_all_health=False, obs_own_health=False).get_obs_own_feats_size() == 0
    # SMAC's max_reward: kills + win + the enemies' health and shields (3 marines of 45)
    assert env.max_reward == 3 * 10 + 200 + 3 * 45


def test_unit_records_state_dict_and_type_ids():
    env = StarCraft2Env("2s3z", seed=0)
    assert env.stalker_id == env._min_unit_type and env.zealot_id == env._min_unit_type + 1
    j = next(k for k, e in env.enemies.items() if e.unit_type == 74)  # an enemy stalker
    place(env, pos={0: (20.0, 12.0), 5 + j: (21.0, 13.5)}, hp={0: 40.0, 5 + j: 20.0},
          shield={0: 20.0, 5 + j: 60.0}, cooldown={0: 7.0})
    a, e = env.get_unit_by_id(0), env.enemies[j]
    assert (a.pos.x, a.pos.y, a.health, a.health_max, a.shield, a.shield_max) == (20.0, 12.0, 40.0, 80.0, 20.0, 80.0)
    assert a.unit_type == env.stalker_id and a.owner == 1 and a.weapon_cooldown == 7.0
    assert (e.pos.x, e.pos.y, e.health, e.shield, e.owner, e.weapon_cooldown) == (21.0, 13.5, 20.0, 60.0, 2, 0.0)
    assert len({u.tag for u in list(env.agents.values()) + list(env.enemies.values())}) == 10
    units = list(env.agents.values()) + list(env.enemies.values())
    assert env.get_unit_types() == [u.unit_type for u in units]
    cx, cy, w, h = env.map_x / 2, env.map_y / 2, env.max_distance_x, env.max_distance_y
    d = env.get_state_dict()
    np.testing.assert_allclose(d["allies"][0], [0.5, 7 / 35, (20 - cx) / w, (12 - cy) / h, 0.25, 1, 0], atol=1e-6)
    # an enemy stalker is type 74 - 73 = 1 in SMAC's enemy bits (a zealot 0: the ally order is reversed)
    np.testing.assert_allclose(d["enemies"][j], [0.25, (21 - cx) / w, (13.5 - cy) / h, 0.75, 0, 1], atol=1e-6)
    assert env.get_unit_type_id(e, False) == 1 and env.get_unit_type_id(a, True) == 0
    np.testing.assert_allclose(np.concatenate([d["allies"].ravel(), d["enemies"].ravel(), d["last_action"].ravel()]),
                               env.get_state(), atol=1e-6)
    # the own type bits of each agent's observation are one-hot at SMAC's get_unit_type_id
    for i, obs in enumerate(env.get_obs()):
        assert obs[-2:].tolist() == np.eye(2)[env.get_unit_type_id(env.agents[i], True)].tolist()
    assert env.unit_max_shield(a) == 80 and env.unit_max_cooldown(a) == 35
    assert env.unit_max_shield(env.agents[4]) == 50 and env.unit_max_cooldown(env.agents[4]) == 22


def test_visibility_matrix_hand_case():
    env = StarCraft2Env("3m", seed=0)
    place(env, pos={0: (10.0, 16.0), 1: (18.9, 16.0), 2: (10.0, 25.5), 3: (19.0, 16.0), 4: (12.0, 24.0),
                    5: (10.0, 16.5)}, hp={5: 0.0})
    expected = [[0, 1, 0, 0, 1, 0],  # a1 at 8.9; e0 at exactly 9 is not visible (strict <); e2 is dead
                [1, 0, 0, 1, 0, 0],
                [0, 0, 0, 0, 1, 0]]
    assert env.get_visibility_matrix().astype(int).tolist() == expected
    assert env.get_visibility_matrix().dtype == bool
    place(env, hp={1: 0.0})  # a dead agent sees nothing and is seen by nobody
    assert env.get_visibility_matrix().astype(int).tolist() == [[0, 0, 0, 0, 1, 0], [0] * 6, [0, 0, 0, 0, 1, 0]]


def test_movement_helpers_agree_with_the_mask_and_observation():
    env = StarCraft2Env("3m", seed=0, obs_pathing_grid=True, obs_terrain_height=True)
    assert env.pathing_grid.shape == (env.map_x, env.map_y) and env.pathing_grid.dtype == bool
    assert env.terrain_height.shape == (env.map_x, env.map_y)
    rng = np.random.default_rng(0)
    for _ in range(10):
        pts = rng.uniform(0.5, env.map_x - 0.5, size=(3, 2))
        place(env, pos={i: tuple(p) for i, p in enumerate(pts)})
        for i in range(3):
            u = env.get_unit_by_id(i)
            moves = [int(env.can_move(u, d)) for d in Direction]
            assert env.get_avail_agent_actions(i)[2:6] == moves
            obs = env.get_obs_agent(i)
            np.testing.assert_allclose(obs[4:12], env.get_surrounding_pathing(u))
            np.testing.assert_allclose(obs[12:21], env.get_surrounding_height(u), atol=1e-6)
    assert env.check_bounds(0, env.map_y - 1) and not env.check_bounds(env.map_x, 0) and not env.check_bounds(-1, 3)
    assert env.distance(1, 2, 4, 6) == 5.0 and env.unit_shoot_range(0) == 6 and env.unit_sight_range(0) == 9


def test_dead_counts_are_in_info_at_every_step():
    env = StarCraft2Env("3m", seed=0)
    place(env, hp={1: 0.0, 3: 0.0})
    for _ in range(2):
        _, terminated, info = env.step([1, 0, 1])
        assert not terminated and info["dead_allies"] == 1 and info["dead_enemies"] == 1
    assert env.death_tracker_ally.tolist() == [0, 1, 0] and env.death_tracker_enemy.tolist() == [1, 0, 0]


def test_step_after_the_end_is_refused_and_no_battle_is_counted_twice():
    env = StarCraft2Env("3m", seed=0)
    place(env, hp={3: 0.0, 4: 0.0, 5: 0.0})
    assert env.update_units() == 1
    reward, terminated, info = env.step([1, 1, 1])
    assert terminated and info["battle_won"] and env.win_counted
    with pytest.raises(RuntimeError, match="reset"):
        env.step([1, 1, 1])
    assert env.get_stats()["battles_game"] == 1 and env.get_stats()["battles_won"] == 1
    env.reset()
    place(env, hp={0: 0.0, 1: 0.0, 2: 0.0})
    assert env.update_units() == -1
    _, terminated, info = env.step([0, 0, 0])
    assert terminated and not info["battle_won"] and env.defeat_counted
    assert env.get_stats() == {"battles_won": 1, "battles_game": 2, "battles_draw": 0, "win_rate": 0.5,
                               "timeouts": 0, "restarts": 0}


def test_actions_must_be_integers():
    env = StarCraft2Env("3m", seed=0)
    with pytest.raises(ValueError, match="not an integer"):
        env.step([1.7, 1, 1])
    with pytest.raises(ValueError, match="integer action"):
        env.step([True, 1, 1])
    with pytest.raises(ValueError, match="one entry per agent"):
        env.step([1, 1])
    with pytest.raises(ValueError, match="out of range"):
        env.step([1, 1, 9])
    env.step([1.0, np.int64(1), 1])  # integral values of any numeric type are fine
    env.step(torch.tensor([1, 1, 1]))  # as PyMARL's runners pass them
    assert env._episode_steps == 2


def test_heuristic_attacks_the_closest_enemy_and_keeps_its_target():
    env = StarCraft2Env("3m", seed=0, heuristic_ai=True)
    place(env, pos={0: (10.0, 14.0), 1: (10.0, 16.0), 2: (10.0, 18.0),
                    3: (20.0, 13.0), 4: (20.0, 16.5), 5: (20.0, 19.0)})
    actions = [1, 1, 1]
    x0 = env.agents[0].pos.x
    env.step(actions)
    assert actions == [6, 7, 8]  # SMAC writes the heuristic's actions into the given list
    assert env.heuristic_targets == [0, 1, 2]
    assert env.last_action.argmax(1).tolist() == [1, 1, 1]  # SMAC's last_action: the given actions
    assert env.agents[0].pos.x > x0  # an attack beyond the shooting range walks to the target
    # the target is kept while it lives, even when another enemy is closer
    e0, e2 = env.enemies[0].pos, env.enemies[2].pos
    place(env, pos={0: (e2.x - 1.0, e2.y)}, hp={4: 0.0})
    assert env.distance(e2.x - 1.0, e2.y, e2.x, e2.y) < env.distance(e2.x - 1.0, e2.y, e0.x, e0.y)
    actions = [1, 1, 1]
    env.step(actions)
    assert actions[0] == 6 and env.heuristic_targets[0] == 0
    assert actions[1] in (6, 8) and env.heuristic_targets[1] != 1  # its target died: a new one


def test_heuristic_rest_moves_towards_targets_out_of_range():
    env = StarCraft2Env("3m", seed=0, heuristic_ai=True, heuristic_rest=True)
    place(env, pos={0: (10.0, 14.0), 1: (10.0, 16.0), 2: (16.0, 9.0),
                    3: (20.0, 13.0), 4: (20.0, 16.5), 5: (17.0, 12.0)})
    order, action = env.get_agent_action_heuristic(0, 0)
    assert action == 4 and order.kind == "move" and order.point == (12.0, 14.0)  # |dx| 10 > |dy| 1: east
    assert env.get_agent_action_heuristic(2, 0)[1] == 6 + 2  # enemy 2 within 6: attack it
    place(env, pos={2: (16.0, 4.0)})
    env.heuristic_targets[2] = None
    assert env.get_agent_action_heuristic(2, 0)[1] == 2  # closest is enemy 2, 8.06 away, |dy| 8 > |dx| 1: north


def test_heuristic_medivac_heals_the_closest_hurt_ally():
    env = StarCraft2Env("MMM", seed=0, heuristic_ai=True)
    medivac = next(i for i, u in env.agents.items() if u.unit_type == env.medivac_id)
    assert env.get_agent_action_heuristic(medivac, 0) == (None, 0)  # nobody hurt: no order
    place(env, pos={medivac: (12.0, 16.0), 1: (20.0, 16.0), 3: (13.0, 16.0)}, hp={1: 50.0, 3: 20.0})
    order, action = env.get_agent_action_heuristic(medivac, 0)
    assert action == 6 + 3 and order.kind == "heal" and order.target == 3
    place(env, hp={3: 45.0})  # healed to full: the next closest hurt ally
    assert env.get_agent_action_heuristic(medivac, 0)[1] == 6 + 1


def test_heuristic_ai_plays_whole_episodes():
    env = StarCraft2Env("3m", seed=0, heuristic_ai=True)
    for _ in range(2):
        env.reset()
        terminated, steps = False, 0
        while not terminated:
            _, terminated, info = env.step([0, 0, 0])
            steps += 1
        assert steps <= env.episode_limit
    assert env.get_stats()["battles_game"] == 2


def test_difficulty_warns_when_it_has_no_effect_and_unknown_levels_fail():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        StarCraft2Env("3m", difficulty="7")
    with pytest.warns(UserWarning, match="no effect"):
        StarCraft2Env("3m", difficulty="3")
    with pytest.raises(ValueError, match="difficulty"):
        StarCraft2Env("3m", difficulty="Z")


def test_render_replay_and_game_only_methods():
    env = StarCraft2Env("3m", seed=0)
    place(env, pos={0: (10.0, 16.0)})
    img = env.render(mode="rgb_array")
    assert img.shape == (env.map_y * 8, env.map_x * 8, 3) and img.dtype == np.uint8
    row, col = int((env.map_y - 16.0) * 8), int(10.25 * 8)
    assert img[row, col].tolist() == [220, 40, 40]  # ally 0's disc (off its type dot), north up
    with pytest.raises(RuntimeError, match="window"):
        env.render()
    with pytest.raises(RuntimeError, match="replay_dir"):
        env.save_replay()
    with pytest.raises(NotImplementedError):
        env.get_agent_action(0, 1)
    assert env.seed() == 0 and StarCraft2Env("3m").seed() is None
    env.full_restart()
    assert env.get_stats()["restarts"] == 1


def test_previous_units_are_the_records_before_the_step():
    env = StarCraft2Env("3m", seed=0)
    assert env.previous_ally_units is None
    before = {i: (u.pos.x, u.pos.y) for i, u in env.agents.items()}
    env.step([4, 4, 4] if all(env.get_avail_agent_actions(i)[4] for i in range(3)) else [1, 1, 1])
    assert {i: (u.pos.x, u.pos.y) for i, u in env.previous_ally_units.items()} == before
    assert math.isclose(env.previous_enemy_units[0].health, 45.0)
