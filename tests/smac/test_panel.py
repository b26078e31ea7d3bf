"""The panel of fixed SMAC opponents (envs/smac/panel.py): each script's choice on a hand-made case,
the built-in AI as a two-player seat, and every member on the common maps' unit mixes in both seats."""

import pytest
import torch
from selfplay.envs.smac.battle import SMACBattle
from selfplay.envs.smac.panel import PANEL, panel_member

EAST, WEST, NORTH, SOUTH, STOP = 4, 5, 2, 3, 1


def placed(positions, hp=None, map_name="3m", mirror=False, cooldown=None):
    """A one-game two-player battle with units at ``positions`` (side 0 first) and the given hp/cooldowns."""
    b = SMACBattle(map_name, 1, two_player=True, mirror=mirror, seed=0)
    b.reset()
    e = b.engine
    e.pos[0] = torch.tensor(positions, dtype=torch.float32)
    for i, h in (hp or {}).items():
        e.hp[0, i] = h
    for i, c in (cooldown or {}).items():
        e.cooldown[0, i] = c
    b.state_changed()
    return b


def act(name, b, seat):
    return panel_member(name, b, seat).act(None, None, None, torch.ones(1, dtype=torch.bool))[0][0].tolist()


def test_focus_weakest_attacks_least_health_in_range_else_approaches():
    # enemies 3, 4 in shooting range (6) of every marine; 4 has 10 hp left, 3 has 30; enemy 5 (5 hp) is too far
    b = placed([[10, 16], [10, 17], [10, 15], [14, 16], [14, 17], [25, 16]], hp={3: 30.0, 4: 10.0, 5: 5.0})
    assert act("focus_weakest", b, 0) == [6 + 1] * 3
    # seat 1: marine 3 and 4 see allies 0..2 (45 hp) and 2 has 20 -> all in range attack ally 2; 5 moves west
    b = placed([[10, 16], [10, 17], [10, 15], [14, 16], [14, 17], [25, 16]], hp={2: 20.0})
    assert act("focus_weakest", b, 1) == [6 + 2, 6 + 2, WEST]


def test_moves_are_in_the_mirrored_seats_frame():
    # seat 1 mirrored: its world west move is its own "east" action
    b = placed([[10, 16], [10, 17], [10, 15], [14, 16], [14, 17], [25, 16]], mirror=True)
    assert act("focus_weakest", b, 1)[2] == EAST


def test_kiting_fires_when_ready_and_steps_back_while_cooling():
    pos = [[10, 16], [10, 20], [10, 12], [14, 16], [20, 20], [20, 12]]
    # marine 0: enemy 3 at 4 (closest, within 5 + 0.75 + 1); weapon cooling 12 loops (> one step of 8) -> west
    b = placed(pos, cooldown={0: 12.0, 1: 0.0})
    acts = act("kiting", b, 0)
    assert acts[0] == WEST
    assert acts[1] == 6 + 0  # ready weapon: attacks its closest attackable enemy (3 at 5.66; 4 is 10 away)
    # ready weapon (cooldown 8: fires within this step's 8 loops) -> attack the closest enemy
    b = placed(pos, cooldown={0: 8.0})
    assert act("kiting", b, 0)[0] == 6 + 0


def test_heuristic_keeps_its_target_and_walks_towards_an_out_of_range_target():
    b = placed([[10, 16], [10, 20], [10, 8], [14, 16], [24, 20], [17, 12]])
    pol = panel_member("heuristic", b, 0)
    first = pol.act(None, None, None, torch.ones(1, dtype=torch.bool))[0][0].tolist()
    # closest enemies: 0 -> 3 (4.0), 1 -> 3 (5.66), 2 -> 5 (8.06 < 8.94: beyond the shoot range 6 -> move east)
    assert first == [6 + 0, 6 + 0, EAST]
    b.engine.pos[0, 3] = torch.tensor([10.0, 30.0])  # the target walks off north (14 away; enemy 5 is 8.06)
    b.state_changed()
    again = pol.act(None, None, None, torch.zeros(1, dtype=torch.bool))[0][0].tolist()
    assert again[0] == NORTH  # keeps its target 3, does not switch to the closer 5 (east)
    fresh = pol.act(None, None, None, torch.ones(1, dtype=torch.bool))[0][0].tolist()
    assert fresh[0] == EAST  # a new episode forgets the target: the closest is 5 now


def test_regroup_gathers_then_advances_and_hurt_units_fall_back():
    far = [[25, 16], [26, 17], [26, 15]]
    # spread out (marine 0 is 4 from the centroid (10, 16)), no enemy in range -> move to the centroid
    b = placed([[6, 16], [12, 17], [12, 15]] + far)
    assert act("regroup", b, 0) == [EAST, WEST, WEST]
    # gathered -> advance together towards the enemy closest to the centroid (east)
    b = placed([[9, 16], [10, 17], [10, 15]] + far)
    assert act("regroup", b, 0) == [EAST, EAST, EAST]
    # in contact: marine 0 hurt (10/45 < 0.4) falls back west, behind the healthy ones; the healthy ones
    # focus the enemy closest to their centroid (enemy 3 at (15, 16))
    b = placed([[12, 16], [10, 17], [10, 15], [15, 16], [16, 17], [16, 15]], hp={0: 10.0})
    acts = act("regroup", b, 0)
    assert acts[0] == WEST
    assert acts[1:] == [6 + 0, 6 + 0]
    # every unit hurt: nobody to fall back behind, so all fight (the focus, enemy 3)
    b = placed([[12, 16], [10, 17], [10, 15], [15, 16], [16, 17], [16, 15]], hp={0: 10.0, 1: 10.0, 2: 10.0})
    assert act("regroup", b, 0) == [6 + 0] * 3


def test_medivac_heals_the_most_hurt_bio_ally_in_reach():
    b = SMACBattle("MMM", 1, two_player=True, seed=0)
    b.reset()
    names = b.engine.unit_names[:10]
    medivac = names.index("medivac")
    marines = [i for i, n in enumerate(names) if n == "marine"]
    e = b.engine
    e.hp[0, marines[0]] = 30.0  # 30/45
    e.hp[0, marines[1]] = 20.0  # 20/45: the most hurt
    b.state_changed()
    for name in ("kiting", "focus_weakest", "regroup"):
        assert act(name, b, 0)[medivac] == 6 + marines[1]


def test_builtin_seat_plays_as_the_single_player_scripted_enemy():
    """Seat 1 handed to the built-in AI in a two-player battle plays the same games as player 2 of
    single-player SMAC: same seed, same seat-0 script -> same positions and hp after every step; the
    actions given for the scripted seat are ignored."""
    two = SMACBattle("3m", 4, two_player=True, mirror=False, seed=3)  # the map's layout, not mirrored
    one = SMACBattle("3m", 4, two_player=False, seed=3)
    two.reset()
    one.reset()
    builtin = panel_member("builtin", two, 1)
    a_two, a_one = panel_member("focus_weakest", two, 0), panel_member("focus_weakest", one, 0)
    for _ in range(30):
        x = a_two.act(None)[0]
        assert torch.equal(x, a_one.act(None)[0])
        junk = torch.full((4, 3), 3, dtype=torch.long)  # "move south", never issued
        two.step([x, junk])
        one.step([x])
        assert torch.equal(two.engine.pos, one.engine.pos) and torch.equal(two.engine.hp, one.engine.hp)
    assert builtin.act(None)[0].abs().sum() == 0


def test_bad_input_is_named():
    b = SMACBattle("3m", 2, two_player=False)
    with pytest.raises(ValueError, match="panel member"):
        panel_member("nope", b, 0)
    with pytest.raises(ValueError, match="seat"):
        panel_member("kiting", b, 1)
    with pytest.raises(ValueError, match="script_seat"):
        panel_member("builtin", b, 0)
    with pytest.raises(ValueError, match="all 2 games"):
        panel_member("kiting", b, 0).act(torch.zeros(1, 3, 30))


@pytest.mark.parametrize("map_name", ["3m", "2s3z", "3s5z", "MMM"])
def test_every_member_plays_legal_actions_in_both_seats(map_name):
    """Every member, in either seat, against every member: 25 steps of 2 games whose actions pass the
    battle's mask check (an illegal action raises)."""
    for seat in (0, 1):
        for name in PANEL:
            other = "kiting" if name == "builtin" else "builtin"
            b = SMACBattle(map_name, 2, two_player=True, mirror=seat == 1, seed=1)
            b.reset()
            me, them = panel_member(name, b, seat), panel_member(other, b, 1 - seat)
            moved = torch.zeros(b.engine.num_units, dtype=torch.bool)
            start = b.engine.pos.clone()
            for _ in range(25):
                acts = [None, None]
                acts[seat], acts[1 - seat] = me.act(None)[0], them.act(None)[0]
                b.step(acts)
            moved |= (b.engine.pos != start).any(-1).any(0)
            assert bool(moved[b.engine.side_slices[seat]].any()), (map_name, name, seat)
