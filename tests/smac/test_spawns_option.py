"""``smac:MAP(spawns=map)``: the two-player battle with the second side at the map's own enemy spawns
(SMAC's layout) instead of the mirror image of the first side's (docs/design/smac.md, "Two-player
mode"); the name's options are checked and carried by the name to every consumer."""

import pytest
import torch
from selfplay.envs.smac import SMACBattle
from selfplay.envs.smac.panel import panel_member

from selfplay.evaluation.panel import member_battle
from selfplay.training.loop import TrainConfig
from selfplay.training.registry import check_env_name, make_env, smac_backend, smac_map, smac_options

# 3m's spawns (map data, tests/smac/test_maps.py): the enemy's third marine stands behind its column
# (x 23.75) in SMAC's layout, in front (x 22.25) as the mirror image of the allies' (x 9.75).
ALLIES = [[9.0, 15.25], [9.0, 16.0], [9.75, 16.0]]
ENEMY_MAP = [[23.0, 15.25], [23.0, 16.0], [23.75, 16.0]]
ENEMY_MIRRORED = [[23.0, 15.25], [23.0, 16.0], [22.25, 16.0]]


def test_names_parse_into_map_backend_and_options():
    name = "smac:2s3z(spawns=map)"
    assert check_env_name(name) == name
    assert (smac_map(name), smac_backend(name), smac_options(name)) == ("2s3z", "sim", {"spawns": "map"})
    assert smac_options("smac:2s3z") == {} and smac_options("smac:2s3z(spawns=mirrored)") == {"spawns": "mirrored"}
    assert smac_map("smac-commander:3m(spawns=map)") == "3m"
    assert smac_options("smac:2s3z(spawns=map, reward_only_positive=false)") == {"spawns": "map",
                                                                              "reward_only_positive": False}
    assert smac_options("smac:2s3z(reward_only_positive=true)") == {"reward_only_positive": True}
    # the real game plays SMAC's layout and takes SMAC's reward flag
    sc2 = "smac:2s3z@sc2(spawns=map, reward_only_positive=false)"
    assert check_env_name(sc2) == sc2 and smac_backend(sc2) == "sc2"


@pytest.mark.parametrize("name, words", [
    ("smac:2s3z(spawn=map)", "unknown option 'spawn=map'; options: spawns=mirrored|map"),
    ("smac:2s3z(spawns=east)", "spawns must be one of ('mirrored', 'map'), got 'east'"),
    ("smac:2s3z(spawns=map", "closing ')'"),
    ("smac:2s3z(reward_only_positive=no)", "reward_only_positive must be one of ('true', 'false'), got 'no'"),
    ("smac:2s3z@sc2(spawns=mirrored)", "always starts both sides at the map's spawns"),
    ("smac-commander:2s3z(reward_only_positive=false)", "AlphaStar commander does not train on"),
    ("smacv2:protoss_5_vs_5(spawns=map)", "SMACv2 scenarios take no"),
])
def test_bad_options_are_refused_in_words(name, words):
    with pytest.raises(ValueError, match="env .*" + words.replace("(", r"\(").replace(")", r"\)").replace("|", r"\|")):
        check_env_name(name)
    with pytest.raises(ValueError):
        TrainConfig(env=name, agent="mappo")


def positions(battle, side):
    e = battle.engine
    return e.pos[:, e.side_slices[side]]


def test_the_second_side_starts_at_the_maps_spawns_and_still_sees_the_map_mirrored():
    own, mirrored = make_env("smac:3m(spawns=map)", 2, seed=0), make_env("smac:3m", 2, seed=0)
    obs_own, obs_mirrored = own.reset(), mirrored.reset()
    assert own.spawns == "map" and own.mirror and mirrored.spawns == "mirrored" and mirrored.mirror
    assert torch.equal(positions(own, 1), torch.tensor(ENEMY_MAP).expand(2, 3, 2))
    assert torch.equal(positions(mirrored, 1), torch.tensor(ENEMY_MIRRORED).expand(2, 3, 2))
    for b in (own, mirrored):
        assert torch.equal(positions(b, 0), torch.tensor(ALLIES).expand(2, 3, 2))
    # seat 1 sees its world mirrored (x' = 32 - x): in its frame the map layout's third marine stands
    # behind its column (x' 8.25), the mirrored layout's in front (x' 9.75, where seat 0's stands)
    mine, enemies = own.views[1].positions()
    assert torch.equal(mine[0, :, 0], torch.tensor([9.0, 9.0, 8.25]))
    assert torch.equal(enemies[0], torch.tensor([[23.0, 15.25], [23.0, 16.0], [22.25, 16.0]]))
    assert torch.equal(mirrored.views[1].positions()[0][0, :, 0], torch.tensor([9.0, 9.0, 9.75]))
    # no enemy is in sight at the start (sight 9): the two layouts differ in seat 1's own-unit features
    assert torch.equal(obs_own[0], obs_mirrored[0]) and not torch.equal(obs_own[1], obs_mirrored[1])


def test_the_map_layout_with_the_ai_in_seat_1_plays_smacs_own_game():
    """Seat 1 of ``smac:3m(spawns=map)`` handed to the built-in AI plays the games of SMAC's
    single-player battle of the same seed: SMAC's heuristic in seat 0 wins the same 14 of 16 games
    (tests/selfplay/test_panel_evaluation.py measures 3 of 16 in the mirrored layout)."""
    def winners(battle, script_seat_1):
        obs = battle.reset()
        me = panel_member("heuristic", battle, 0)
        if script_seat_1:
            panel_member("builtin", battle, 1)
        n = battle.num_envs
        result = torch.full((n,), -2)
        start = torch.ones(n, dtype=torch.bool)
        while bool((result == -2).any()):
            a = me.act(obs[0], None, None, start)[0]
            obs, _, done, info = battle.step([a] if battle.n_seats == 1 else [a, torch.zeros_like(a)])
            first = done & (result == -2)
            result[first] = info["winner"][first]
            start = done.clone()
        return result

    two_player = winners(make_env("smac:3m(spawns=map)", 16, seed=1), True)
    single = winners(SMACBattle("3m", 16, two_player=False, seed=1), False)
    assert torch.equal(two_player, single) and int((single == 0).sum()) == 14


def test_panel_scripts_play_in_the_layout_the_name_says():
    b = member_battle("smac:3m(spawns=map)", "kiting", 2, seed=0)
    b.reset()
    assert b.n_seats == 2 and torch.equal(positions(b, 1), torch.tensor(ENEMY_MAP).expand(2, 3, 2))


def test_the_battle_refuses_an_unknown_layout():
    with pytest.raises(ValueError, match=r"spawns must be one of \('mirrored', 'map'\), got 'reflected'"):
        SMACBattle("3m", 1, mirror=True, spawns="reflected")


def test_reward_only_positive_false_charges_each_side_half_the_damage_and_deaths_it_takes():
    """``smac:3m(reward_only_positive=false)``: the battle gets SMAC's flag, so when seat 0's marine kills a
    6-hp enemy, seat 1's reward is −(0.5·6 + 0.5·10) / (365 / 20) (SMAC's reward_negative_scale 0.5, death
    value 10, 3m's max reward 365) where the default gives it 0; seat 0's is (6 + 10) / (365 / 20) either way."""
    for name, seat1 in (("smac:3m(reward_only_positive=false)", -(0.5 * 6 + 0.5 * 10) / (365 / 20)), ("smac:3m", 0.0)):
        b = make_env(name, 1, seed=0)
        b.reset()
        e = b.engine
        e.pos[0, e.side_slices[0]] = torch.tensor([[10.0, 16.0], [10.0, 10.0], [10.0, 22.0]])
        e.pos[0, e.side_slices[1]] = torch.tensor([[14.0, 16.0], [28.0, 10.0], [28.0, 22.0]])
        e.hp[0, e.side_slices[1].start] = 6.0
        b.state_changed()
        _, rewards, done, _ = b.step([torch.tensor([[6, 1, 1]]), torch.tensor([[1, 1, 1]])])
        assert not bool(done[0])
        assert rewards[0].item() == pytest.approx((6 + 10) / (365 / 20))
        assert rewards[1].item() == pytest.approx(seat1)
