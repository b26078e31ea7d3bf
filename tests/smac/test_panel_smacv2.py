"""The panel's scripts on SMACv2 battles (envs/smac/panel.py), where every game draws its own units:
each script reads the unit constants of each game's own draw, and every member plays legal actions in
either seat of every race's scenario."""

import numpy as np
import pytest
import torch
from selfplay.envs.smac.panel import PANEL, panel_member
from selfplay.envs.smac.smacv2_battle import SMACv2Battle
from selfplay.envs.smac.smacv2_games import ALLY_POINT, ENEMY_POINT
from selfplay.envs.smac.unit_table import is_type, per_game

WEST = 5


def drawn(scenario, allies, enemies, positions, cooldown=None, hp=None):
    """A two-game, unmirrored SMACv2 battle whose game e plays ``allies[e]`` against ``enemies[e]`` with
    every unit at ``positions`` (side 0 first), the given cooldowns and hp in both games."""
    b = SMACv2Battle(scenario, 2, mirror=False, seed=0)
    b.reset()
    for e in range(2):
        b.games.write_draw(e, allies[e], enemies[e], np.tile(ALLY_POINT, (len(allies[e]), 1)),
                           np.tile(ENEMY_POINT, (len(enemies[e]), 1)))
    b.games.start(np.ones(2, np.bool_))
    eng = b.engine
    for e in range(2):
        eng.pos[e] = torch.tensor(positions, dtype=torch.float32)
        for i, c in (cooldown or {}).items():
            eng.cooldown[e, i] = c
        for i, h in (hp or {}).items():
            eng.hp[e, i] = h
    b.games.invalidate()
    return b


FAR = [[10, 10], [10, 12], [10, 20], [10, 22]]  # allies 0-3, out of the fight
FAR_ENEMIES = [[28, 10], [28, 12], [28, 20], [28, 22]]


def test_the_units_view_holds_each_games_draw():
    b = drawn("protoss_5_vs_5", [["stalker"] * 5, ["stalker"] * 4 + ["zealot"]], [["zealot"] * 5] * 2,
              FAR + [[10, 16], [12, 16]] + FAR_ENEMIES)
    u = b.units
    assert u.unit_names[0][4] == "stalker" and u.unit_names[1][4] == "zealot"
    assert per_game(u, "hp_max")[:, 4].tolist() == [80.0, 100.0]  # stalker 80 hp, zealot 100 (+ shields)
    assert per_game(u, "weapon_range")[0, 4] > 5 and per_game(u, "weapon_range")[1, 4] < 1
    assert is_type(u, "zealot")[:, 4].tolist() == [False, True]


def test_kiting_reads_each_games_unit_a_stalker_steps_back_a_zealot_attacks():
    # unit 4 (a stalker in game 0, a zealot in game 1) 2 away from enemy zealot 5, weapon cooling 12 loops
    b = drawn("protoss_5_vs_5", [["stalker"] * 5, ["stalker"] * 4 + ["zealot"]], [["zealot"] * 5] * 2,
              FAR + [[10, 16], [12, 16]] + FAR_ENEMIES, cooldown={4: 12.0})
    acts = panel_member("kiting", b, 0).act(None)[0]
    assert acts[0, 4] == WEST  # ranged and cooling, the enemy within its reach: back off
    assert acts[1, 4] == 6 + 0  # melee: attack the closest enemy (enemy 0, unit 5)


def test_heuristic_marauders_skip_medivacs_per_game():
    # ally 0: a marauder in game 0, a marine in game 1; the enemy Medivac (enemy 4) is its closest enemy
    b = drawn("terran_5_vs_5", [["marauder"] + ["marine"] * 4, ["marine"] * 5],
              [["marine"] * 4 + ["medivac"]] * 2,
              [[10, 16], [10, 10], [10, 12], [10, 20], [10, 22], [13, 16], [28, 10], [28, 20], [28, 22], [12, 16]])
    assert b.units.unit_names[0][0] == "marauder" and b.units.unit_names[0][9] == "medivac"
    acts = panel_member("heuristic", b, 0).act(None, None, None, torch.ones(2, dtype=torch.bool))[0]
    assert acts[0, 0] == 6 + 0  # the marauder takes the marine (enemy 0), not the closer Medivac
    assert acts[1, 0] == 6 + 4  # the marine takes the Medivac, its closest enemy


def test_medivac_heals_in_the_game_that_drew_one():
    # game 0 has a Medivac (ally 4), game 1 a marine there; ally 1 is hurt in both
    b = drawn("terran_5_vs_5", [["marine"] * 4 + ["medivac"], ["marine"] * 5], [["marine"] * 5] * 2,
              [[10, 16], [10, 17], [10, 15], [10, 18], [9, 16]] + [[28, 16], [28, 10], [28, 12], [28, 20], [28, 22]],
              hp={1: 20.0})
    assert b.units.unit_names[0][4] == "medivac" and b.units.unit_names[1][4] == "marine"
    acts = panel_member("focus_weakest", b, 0).act(None)[0]
    assert acts[0, 4] == 6 + 1  # heal the hurt marine
    assert acts[1, 4] < 6  # a marine with no enemy in range walks towards one


@pytest.mark.parametrize("scenario", ["protoss_5_vs_5", "terran_5_vs_5", "zerg_5_vs_5"])
def test_every_scripted_member_plays_legal_actions_in_both_seats(scenario):
    """Each scripted member against another, in either seat of the mirrored two-player battle: 40 steps
    of 2 games (new draws at every reset) whose actions pass the battle's mask check (an illegal action
    raises), and the scripts' units move."""
    for seat in (0, 1):
        for name in (n for n in PANEL if n != "builtin"):
            other = "focus_weakest" if name != "focus_weakest" else "heuristic"
            b = SMACv2Battle(scenario, 2, seed=1)
            b.reset()
            me, them = panel_member(name, b, seat), panel_member(other, b, 1 - seat)
            start = b.engine.pos.clone()
            for step in range(40):
                acts = [None, None]
                acts[seat], acts[1 - seat] = me.act(None)[0], them.act(None)[0]
                b.step(acts)
                if step == 10:
                    assert bool((b.engine.pos[:, b.engine.side_slices[seat]] != start[:, b.engine.side_slices[seat]]).any())


def test_the_builtin_ai_is_not_a_seat_on_smacv2():
    b = SMACv2Battle("protoss_5_vs_5", 1, seed=0)
    with pytest.raises(ValueError, match="single-player game"):
        panel_member("builtin", b, 1)


@pytest.mark.parametrize("name", ["heuristic", "kiting", "focus_weakest", "regroup"])
def test_each_script_beats_a_side_that_never_attacks(name):
    """On SMACv2's two-player battle (new draws per game) every script, in seat 1 of the mirrored battle,
    wins each of 4 games against a side that only stops: the scripts do fight there."""
    b = SMACv2Battle("protoss_5_vs_5", 4, seed=2, auto_reset=False)
    b.reset()
    me = panel_member(name, b, 1)
    ended, won = torch.zeros(4, dtype=torch.bool), torch.zeros(4, dtype=torch.bool)
    start = torch.ones(4, dtype=torch.bool)
    while not bool(ended.all()):
        masks = b.action_masks()
        stop = torch.where(masks[0][..., 1], 1, 0)  # stop where allowed, else no-op (a dead unit)
        _, _, done, info = b.step([stop, me.act(None, None, None, start)[0]])
        won |= done & ~ended & (info["winner"] == 1)
        ended |= done
        start = torch.zeros(4, dtype=torch.bool)
    assert won.all(), (name, won)
