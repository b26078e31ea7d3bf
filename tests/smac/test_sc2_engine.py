"""The real-game engine (envs/smac/sc2_engine.py) through a fake game connection: slot matching,
state read-back, SMAC actions as raw commands, episode ends and restarts — and SMAC's observations
computed from the game's units equal the simulator's for the same battle state."""

import pytest
import torch

from selfplay.envs.smac import SMACBattle
from selfplay.envs.smac.maps import TYPE_ORDERS, get_map
from selfplay.envs.smac.sc2_engine import (ATTACK_ABILITY, HEAL_ABILITY, MOVE_ABILITY, STANDARD_UNIT_IDS, STOP_ABILITY,
                                  RawCommand, UnitRecord)
from selfplay.envs.smac.units import UNIT_STATS

STANDARD = {name: i for i, name in STANDARD_UNIT_IDS.items()}


class FakeGame:
    """A game that spawns the map's units at the simulator's spawn points (listed in a scrambled order,
    allies with SMAC's custom "_RL" type ids), moves units to move targets and takes 10 health per
    attack, removing units that die."""

    def __init__(self, map_name, origin=(3.0, 5.0), enemy_shift=0.0):
        self.spec, self.origin, self.enemy_shift = get_map(map_name), origin, enemy_shift
        self.restarts, self.received, self.next_tag = 0, [], 100

    def restart(self):
        self.restarts += 1
        units = []
        for side in (0, 1):
            order = TYPE_ORDERS[self.spec.map_type][0] or tuple(sorted(set(self.spec.units(side))))
            for name, (x, y) in zip(self.spec.units(side), self.spec.spawn_positions(side)):
                stats = UNIT_STATS[name]
                unit_type = 1970 + order.index(name) if side == 0 else STANDARD[name]
                self.next_tag += 1
                x = x + self.enemy_shift * side
                units.append(UnitRecord(self.next_tag, unit_type, side + 1, float(x) + self.origin[0],
                                        float(y) + self.origin[1], stats.hp, stats.shield,
                                        50.0 if stats.heals else 0.0))
        self.units = units[::-1]  # the game lists units in its own order
        return list(self.units)

    def step(self, commands, loops):
        self.received.append([list(c) for c in commands])
        by_tag = {u.tag: u for u in self.units}
        for player in commands:
            for c in player:
                if c.ability_id == MOVE_ABILITY:
                    for t in c.unit_tags:
                        u = by_tag[t]
                        by_tag[t] = UnitRecord(u.tag, u.unit_type, u.owner, *c.target_point, u.health, u.shield, u.energy)
                elif c.ability_id == ATTACK_ABILITY and c.target_tag in by_tag:
                    u = by_tag[c.target_tag]
                    by_tag[u.tag] = UnitRecord(u.tag, u.unit_type, u.owner, u.x, u.y, u.health - 10, u.shield, u.energy)
        self.units = [u for u in by_tag.values() if u.health > 0]
        return list(self.units)

    def kill(self, owner):
        self.units = [u for u in self.units if u.owner != owner]

    def close(self):
        self.closed = True


@pytest.mark.parametrize("map_name", ["3m", "3s5z", "MMM", "2s3z"])
def test_observations_from_the_game_equal_the_simulators(map_name):
    real = SMACBattle(map_name, 1, two_player=True, backend="sc2", games=[FakeGame(map_name)])
    obs_real = real.reset()
    spec, eng = get_map(map_name), real.engine
    # slots: the map's agent order by type, then x, then y (SMAC's rule), whatever order the game lists
    game = eng.games[0]
    by_tag = {u.tag: u for u in game.units}
    for side in (0, 1):
        sl = eng.side_slices[side]
        order = TYPE_ORDERS[spec.map_type][0] or tuple(sorted(set(spec.units(side))))
        units = [by_tag[t] for t in eng.tags[0, sl].tolist()]
        names = [order[u.unit_type - 1970] if side == 0 else STANDARD_UNIT_IDS[u.unit_type] for u in units]
        assert names == spec.units(side)
        assert [(u.x - 3.0, u.y - 5.0) for u in units] == [tuple(p) for p in eng.pos[0, sl].tolist()]
        pos = eng.pos[0, sl].tolist()
        for i in range(len(names) - 1):
            if names[i] == names[i + 1]:
                assert pos[i] <= pos[i + 1]
        # positions are in the simulator's frame (the game's origin subtracted) and at the spawn points
        assert sorted(map(tuple, pos)) == sorted(map(tuple, spec.spawn_positions(side).tolist()))
    # the simulator put in the same battle state computes the same observations, state and masks
    sim = SMACBattle(map_name, 1, two_player=True, seed=0)
    sim.reset()
    for name in ("pos", "hp", "shield", "energy", "cooldown"):
        setattr(sim.engine, name, getattr(eng, name).clone())
    sim.state_changed()
    obs_sim = sim.get_obs()
    for s in (0, 1):
        torch.testing.assert_close(obs_real[s], obs_sim[s])
        torch.testing.assert_close(real.get_state()[s], sim.get_state()[s])
        assert torch.equal(real.action_masks()[s], sim.action_masks()[s])


def test_smac_actions_become_raw_commands():
    game = FakeGame("3m", enemy_shift=-10.0)  # the enemies within shooting range
    battle = SMACBattle("3m", 1, two_player=True, backend="sc2", games=[game])
    battle.reset()
    eng = battle.engine
    tags = eng.tags[0].tolist()
    x, y = eng.pos[0, 1].tolist()
    battle.step([torch.tensor([[1, 4, 6 + 2]]), torch.tensor([[1, 1, 1]])])
    allies, enemies = game.received[-1]
    assert allies == [RawCommand(STOP_ABILITY, (tags[0],)),
                      RawCommand(MOVE_ABILITY, (tags[1],), target_point=(x + 2 + 3.0, y + 5.0)),
                      RawCommand(ATTACK_ABILITY, (tags[2],), target_tag=tags[3 + 2])]
    assert [c.ability_id for c in enemies] == [STOP_ABILITY] * 3
    # the game's answer is read back: the mover moved east by 2, the target lost 10 health
    assert eng.pos[0, 1].tolist() == pytest.approx([x + 2, y])
    assert float(eng.hp[0, 5]) == UNIT_STATS["marine"].hp - 10


def test_medivacs_heal_allies_by_tag():
    game = FakeGame("MMM")
    battle = SMACBattle("MMM", 1, two_player=False, backend="sc2", games=[game])
    battle.reset()
    eng = battle.engine
    medivac = eng.unit_names[: eng.n_side[0]].index("medivac")
    actions = torch.zeros(1, eng.n_side[0], dtype=torch.long)
    actions[0, :] = 1
    actions[0, medivac] = 6 + 0
    battle.engine.hp[0, 0] -= 5  # a damaged ally, so the heal is legal
    battle.state_changed()
    assert bool(battle.action_masks()[0][0, medivac, 6])
    battle.step([actions])
    (allies,) = game.received[-1]  # single-player: only the allies' player is commanded
    heal = [c for c in allies if c.ability_id == HEAL_ABILITY]
    assert heal == [RawCommand(HEAL_ABILITY, (int(eng.tags[0, medivac]),), target_tag=int(eng.tags[0, 0]))]


def test_a_side_wiped_out_ends_the_game_and_restarts_it():
    game = FakeGame("3m")
    battle = SMACBattle("3m", 1, two_player=True, backend="sc2", games=[game])
    battle.reset()
    first_tags = battle.engine.tags.clone()
    game.kill(owner=2)
    _, rewards, done, info = battle.step([torch.ones(1, 3, dtype=torch.long), torch.ones(1, 3, dtype=torch.long)])
    assert bool(done[0]) and int(info["winner"][0]) == 0 and bool(info["battle_won"][0][0])
    assert float(rewards[0][0]) > float(rewards[1][0])
    assert game.restarts == 2  # the finished game restarted with new units, matched to slots again
    assert not torch.equal(battle.engine.tags, first_tags) and bool(battle.engine.alive.all())
    battle.close()
    assert game.closed


def test_unit_mismatch_and_missing_backend_fail_clearly():
    game = FakeGame("3m")
    game.restart = lambda: [UnitRecord(1, 48, 1, 5.0, 5.0, 45.0)]
    with pytest.raises(ValueError, match="expects"):
        SMACBattle("3m", 1, backend="sc2", games=[game]).reset()
    with pytest.raises(ValueError, match="backend"):
        SMACBattle("3m", 1, backend="real")
    with pytest.raises(ValueError, match="num_envs"):
        SMACBattle("3m", 2, backend="sc2", games=[FakeGame("3m")])
    try:  # the real game needs the optional extra; without it the error says how to get it
        import pysc2  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"\.\[sc2\]"):
            SMACBattle("3m", 1, backend="sc2")


def test_registry_names_the_real_game_with_a_suffix():
    from selfplay.training.registry import check_env_name, env_for_agent, smac_backend, smac_map

    assert smac_map("smac:3s5z@sc2") == "3s5z" and smac_backend("smac:3s5z@sc2") == "sc2"
    assert smac_backend("smac:3s5z") == "sim"
    assert env_for_agent("smac:3m@sc2", "alphastar") == "smac-commander:3m@sc2"
    assert env_for_agent("smac:3m@sc2", "ppo-mlp") == "smac:3m@sc2"
    with pytest.raises(ValueError, match="unknown SMAC map"):
        check_env_name("smac:4m@sc2")


def test_smac_env_plays_the_real_game_and_closes_it():
    from selfplay.envs.smac import SMACEnv

    game = FakeGame("3m")
    env = SMACEnv("3m", backend="sc2", games=[game])
    env.reset()
    assert env.get_obs_size() == 30 and len(env.get_obs()) == 3
    reward, terminated, _ = env.step([1, 1, 1])
    assert game.received[-1][0][0].ability_id == STOP_ABILITY and not terminated
    env.close()
    assert game.closed


def test_the_alphastar_commander_plays_through_the_real_game_engine():
    from selfplay.agents.alphastar.smac import CommanderConfig
    from selfplay.agents.alphastar.smac.env import CommanderEnv

    game = FakeGame("3m", enemy_shift=-10.0)
    env = CommanderEnv(SMACBattle("3m", 1, two_player=False, backend="sc2", games=[game]), CommanderConfig(grid=16))
    sim = CommanderEnv(SMACBattle("3m", 1, two_player=False, seed=0), CommanderConfig(grid=16))
    obs = env.reset()
    sim.reset()
    for name in ("pos", "hp", "shield", "energy", "cooldown"):
        setattr(sim.battle.engine, name, getattr(env.battle.engine, name).clone())
    sim.battle.state_changed()
    torch.testing.assert_close(obs[0], sim.layout.pack(sim.commanders[0].observe()))
    # attack-unit on enemy entity 3 with every unit: three raw attack commands on that enemy's tag
    action = env.layout.idle_actions(1)
    action[0, :5] = torch.tensor([3, 0, 0, 3, -1])  # attack_unit, delay 0, not queued, target entity 3
    action[0, 5:8] = torch.tensor([0, 1, 2])
    env.step([action])
    (allies,) = game.received[-1]
    enemy_tag = int(env.battle.engine.tags[0, 3])
    assert [c.ability_id for c in allies] == [ATTACK_ABILITY] * 3 and {c.target_tag for c in allies} == {enemy_tag}
