"""The real-game engine (envs/smac/sc2_engine.py) through a fake game connection: slot matching,
state read-back, SMAC actions as raw commands, episode ends and restarts — and SMAC's observations
computed from the game's units equal the simulator's for the same battle state."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from selfplay.envs.smac import SMACBattle
from selfplay.envs.smac.maps import TYPE_ORDERS, get_map
from selfplay.envs.smac.sc2_engine import (
    ATTACK_ABILITY,
    HEAL_ABILITY,
    MOVE_ABILITY,
    STANDARD_UNIT_IDS,
    STOP_ABILITY,
    RawCommand,
    UnitRecord,
)
from selfplay.envs.smac.units import UNIT_STATS

STANDARD = {name: i for i, name in STANDARD_UNIT_IDS.items()}


class FakeGame:
    """A game that behaves like the real one on what ``SC2Engine`` relies on:

    - its world is the spec's frame shifted by ``shift``; it reports its playable area and its own
      pathing grid (the spec's, shifted, with the spec-frame cells ``blocked`` made unwalkable);
    - it lists units in its own order (allies with SMAC's custom "_RL" type ids);
    - at every (re)spawn the map's trigger gives player 2's stock units an attack-move towards the
      allies (2 east/west per step until stopped or given another order); an idle player-2 unit shoots
      an enemy within 6 (10 health) by itself, player 1's "_RL" units never act on their own;
    - a move puts the unit at the target point, an attack takes 10 health, dead units disappear."""

    def __init__(self, map_name, shift=(3.0, 5.0), enemy_shift=0.0, blocked=()):
        self.spec, self.shift, self.enemy_shift = get_map(map_name), shift, enemy_shift
        self.restarts, self.received, self.next_tag = 0, [], 100
        (x0, y0), w, h = self.spec.playable_origin, self.spec.playable_width, self.spec.playable_height
        self.playable_area = ((x0 + shift[0], y0 + shift[1]), (x0 + shift[0] + w, y0 + shift[1] + h))
        dx, dy = int(shift[0]), int(shift[1])
        own = self.spec.pathing_grid()
        for cx, cy in blocked:
            own[cx, cy] = False
        self.pathing_grid = np.zeros((own.shape[0] + dx, own.shape[1] + dy), dtype=bool)
        self.pathing_grid[dx:, dy:] = own
        self.orders = {}

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
                units.append(UnitRecord(self.next_tag, unit_type, side + 1, float(x) + self.shift[0],
                                        float(y) + self.shift[1], stats.hp, stats.shield,
                                        50.0 if stats.heals else 0.0))
        self.units = units[::-1]  # the game lists units in its own order
        ally_x = float(np.mean([u.x for u in units if u.owner == 1]))
        self.orders = {u.tag: ("amove", ally_x) for u in units if u.owner == 2}  # the map's trigger
        return list(self.units)

    def step(self, commands, loops):
        self.received.append([list(c) for c in commands])
        by_tag = {u.tag: u for u in self.units}
        for player in commands:
            for c in player:
                for t in c.unit_tags:
                    self.orders[t] = None  # any command replaces the unit's order; it ends idle
                if c.ability_id == MOVE_ABILITY:
                    for t in c.unit_tags:
                        by_tag[t] = replace(by_tag[t], x=c.target_point[0], y=c.target_point[1])
                elif c.ability_id == ATTACK_ABILITY and c.target_tag in by_tag:
                    u = by_tag[c.target_tag]
                    by_tag[u.tag] = replace(u, health=u.health - 10)
        for tag, order in list(self.orders.items()):
            u = by_tag.get(tag)
            if u is None:
                continue
            if order is not None:  # the trigger's attack-move
                by_tag[tag] = replace(u, x=u.x + float(np.sign(order[1] - u.x)) * 2.0)
            elif u.owner == 2:  # an idle stock unit acquires an enemy in range
                near = [v for v in by_tag.values() if v.owner == 1 and np.hypot(v.x - u.x, v.y - u.y) <= 6]
                if near:
                    by_tag[near[0].tag] = replace(near[0], health=near[0].health - 10)
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
        listed = [u.tag for u in game.units if u.owner == side + 1]  # the game's raw order
        for i in range(len(names) - 1):
            if names[i] == names[i + 1]:
                if side == 0:  # allies: SMAC sorts by type, x, y
                    assert pos[i] <= pos[i + 1]
                else:  # enemies: SMAC keeps the game's order (here within each type)
                    assert listed.index(units[i].tag) < listed.index(units[i + 1].tag)
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
    # two players: the first step also stops player 2's units (the map's attack order at the respawn)
    assert enemies[0] == RawCommand(STOP_ABILITY, tuple(tags[3:]))
    assert [c.ability_id for c in enemies[1:]] == [STOP_ABILITY] * 3
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


@pytest.mark.parametrize("shift", [(0.0, 0.0), (7.0, 1.0)])
def test_positions_use_the_playable_area_the_game_reports(shift):
    game = FakeGame("3m", shift=shift)
    battle = SMACBattle("3m", 1, two_player=False, backend="sc2", games=[game])
    battle.reset()
    eng, spec = battle.engine, get_map("3m")
    assert sorted(map(tuple, eng.pos[0, :3].tolist())) == sorted(map(tuple, spec.spawn_positions(0).tolist()))
    x, y = eng.pos[0, 0].tolist()
    battle.step([torch.tensor([[4, 1, 1]])])
    move = game.received[-1][0][0]
    assert move.ability_id == MOVE_ABILITY and move.target_point == pytest.approx((x + 2 + shift[0], y + shift[1]))
    assert eng.pos[0, 0].tolist() == pytest.approx([x + 2, y])


def test_masks_use_the_games_pathing_grid():
    spec = get_map("3m")
    cells = {(int(x + 1), int(y)) for x, y in spec.spawn_positions(0)}  # a move east is checked half a move away
    assert all(spec.pathing_grid()[c] for c in cells)  # walkable in the spec: only the game's grid forbids them
    game = FakeGame("3m", blocked=cells)
    battle = SMACBattle("3m", 1, two_player=False, backend="sc2", games=[game])
    battle.reset()
    grid = battle.engine.game_pathing_grid
    assert not any(grid[c] for c in cells) and grid.sum() == spec.pathing_grid().sum() - len(cells)
    assert not bool(battle.action_masks()[0][0, :, 4].any())
    sim = SMACBattle("3m", 1, two_player=False, seed=0)
    sim.reset()
    assert bool(sim.action_masks()[0][0, :, 4].all())


def test_enemy_slots_keep_the_games_raw_order_and_unit_types_are_kept():
    game = FakeGame("3m")
    battle = SMACBattle("3m", 1, two_player=True, backend="sc2", games=[game])
    battle.reset()
    eng = battle.engine
    raw = [u for u in game.units if u.owner == 2]
    assert eng.tags[0, 3:].tolist() == [u.tag for u in raw]
    assert [u.tag for u in sorted(raw, key=lambda u: (u.x, u.y))] != [u.tag for u in raw]  # a sort would differ
    assert eng.unit_types[0].tolist() == [1970] * 3 + [STANDARD["marine"]] * 3
    from selfplay.envs.smac import SMACEnv

    env = SMACEnv("3m", backend="sc2", games=[FakeGame("3m")])
    assert env.get_unit_types() == [1970] * 3 + [48] * 3
    assert [u.tag for u in env.enemies.values()] == env._battle.engine.tags[0, 3:].tolist()


def test_seats_start_alike_in_two_player_mode():
    """The map's trigger orders player 2 to attack at each respawn: against the built-in enemy it stays
    (SMAC), with two policies the engine cancels it so that both seats start idle."""
    stop = torch.ones(1, 3, dtype=torch.long)
    solo_game = FakeGame("3m")
    solo = SMACBattle("3m", 1, two_player=False, backend="sc2", games=[solo_game])
    solo.reset()
    before = solo.engine.pos[0, 3:].clone()
    towards_allies = torch.sign(solo.engine.pos[0, :3, 0].mean() - before[:, 0])
    solo.step([stop])
    assert torch.allclose(solo.engine.pos[0, 3:, 0], before[:, 0] + 2 * towards_allies)  # the trigger's attack-move
    duo_game = FakeGame("3m")
    duo = SMACBattle("3m", 1, two_player=True, backend="sc2", games=[duo_game])
    duo.reset()
    before = duo.engine.pos.clone()
    duo.step([stop, stop])
    assert torch.equal(duo.engine.pos, before)  # nobody moves: both seats obey only their policies
    assert duo_game.received[-1][1][0] == RawCommand(STOP_ABILITY, tuple(duo.engine.tags[0, 3:].tolist()))


def test_idle_stock_units_still_fire_in_range_documented_asymmetry():
    """What the engine cannot change (module docstring): idle player-2 stock units shoot enemies in
    range, idle player-1 "_RL" units do not."""
    game = FakeGame("3m", enemy_shift=-10.0)  # the sides 4 apart
    battle = SMACBattle("3m", 1, two_player=True, backend="sc2", games=[game])
    battle.reset()
    stop = torch.ones(1, 3, dtype=torch.long)
    battle.step([stop, stop])
    hp = battle.engine.hp[0]
    assert bool((hp[3:] == 45).all()) and bool((hp[:3] < 45).any())


def test_smac_env_takes_the_ally_type_ids_from_the_game():
    from selfplay.envs.smac import SMACEnv

    class OtherVersion(FakeGame):  # another game version numbers the custom "_RL" types differently
        def restart(self):
            return [replace(u, unit_type=u.unit_type + 30) if u.owner == 1 else u for u in super().restart()]

    env = SMACEnv("2s3z", backend="sc2", games=[OtherVersion("2s3z")])
    assert (env._min_unit_type, env.stalker_id, env.zealot_id) == (2000, 2000, 2001)
    assert [env.get_unit_type_id(u, True) for u in env.agents.values()] == [0, 0, 1, 1, 1]
    assert env.unit_max_shield(env.agents[0]) == 80 and env.unit_max_cooldown(env.agents[4]) == 22
