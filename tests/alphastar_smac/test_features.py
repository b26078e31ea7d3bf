"""SMAC commander features and masks (docs/design/alphastar.md §1, §5): shapes for maps of 3 to 30 units
and both seats, masks following the battle state, and the network accepting the observation."""

import pytest
import torch
from selfplay.agents.alphastar import AlphaStarNet
from selfplay.agents.alphastar.smac import CommanderConfig, SMACCommander
from selfplay.agents.alphastar.smac.features import (
    ATTACK_MOVE,
    ATTACK_UNIT,
    COLUMN,
    ENTITY_FEATURE_SIZE,
    HEAL_UNIT,
    MOVE,
    NO_OP,
    SPATIAL_PLANES,
)
from selfplay.envs.smac import SMACBattle

from .conftest import TINY  # the tiny network sizes shared by the SMAC-agent tests


@pytest.mark.parametrize("map_name,seat", [("2m_vs_1z", 0), ("2m_vs_1z", 1), ("3m", 1), ("3s5z", 0),
                                           ("MMM", 1), ("10m_vs_11m", 0), ("bane_vs_bane", 1)])
def test_shapes_masks_and_network_forward(map_name, seat):
    battle = SMACBattle(map_name, num_envs=3, seed=0)
    battle.reset()
    cmd = SMACCommander(battle, seat, CommanderConfig(grid=8))
    obs = cmd.observe()
    n, m = battle.engine.n_side[seat], battle.engine.n_side[1 - seat]
    N, A, R = n + m, 6, 8
    assert 3 <= N <= 48
    assert obs.entities.shape == (3, 1, N, ENTITY_FEATURE_SIZE)
    assert obs.spatial.shape == (3, 1, len(SPATIAL_PLANES), R, R)
    assert obs.selectable_units.shape == (3, 1, A, N) and obs.targetable_units.shape == (3, 1, A, N)
    assert obs.location_mask.shape == (3, 1, R, R)
    # own units first, then enemies; at the start everyone is alive
    assert obs.entity_mask.all()
    assert torch.equal(obs.entities[0, 0, :, COLUMN["own"]], (torch.arange(N) < n).float())
    assert torch.equal(obs.selectable_units[0, 0, MOVE], torch.arange(N) < n)
    assert torch.equal(obs.targetable_units[0, 0, ATTACK_UNIT], torch.arange(N) >= n)
    # nothing is damaged yet: no heal target, so heal_unit is unavailable
    assert not obs.available_action_types[..., HEAL_UNIT].any()
    assert obs.available_action_types[..., [NO_OP, MOVE, ATTACK_UNIT, ATTACK_MOVE]].all()
    # one own unit and one enemy per present cell: the planes count the units
    assert obs.spatial[0, 0, 0].sum() == n and obs.spatial[0, 0, 1].sum() == m
    net = AlphaStarNet(cmd.network_config(**TINY))
    out = net(obs, generator=torch.Generator().manual_seed(0))
    cmd.apply(out.actions, cmd.due())  # sampled actions pass the commander's checks
    assert cmd.unit_actions().shape == (3, n)


def test_masks_follow_deaths_damage_and_mirror():
    battle = SMACBattle("MMM", num_envs=2, mirror=True, seed=0)
    battle.reset()
    eng = battle.engine
    n = eng.n_side[0]
    # game 0: seat 0's marine 3 is dead, marauder 0 is damaged; game 1 untouched
    eng.hp[0, 3] = 0.0
    eng.hp[0, 0] = 50.0
    battle.state_changed()
    cmd = SMACCommander(battle, 0)
    obs = cmd.observe()
    assert not obs.entity_mask[0, 0, 3] and obs.entity_mask[1, 0, 3]
    assert not obs.selectable_units[0, 0, MOVE, 3]
    assert torch.all(obs.entities[0, 0, 3] == 0)
    # the Medivac (slot 9) is the only unit that may heal, and marauder 0 the only patient
    heal_sel = obs.selectable_units[0, 0, HEAL_UNIT]
    assert heal_sel.nonzero().flatten().tolist() == [9]
    assert obs.targetable_units[0, 0, HEAL_UNIT].nonzero().flatten().tolist() == [0]
    assert obs.available_action_types[0, 0, HEAL_UNIT] and not obs.available_action_types[1, 0, HEAL_UNIT]
    # the Medivac cannot attack: never selectable for attack_unit
    assert not obs.selectable_units[..., ATTACK_UNIT, 9].any()
    # mirrored seat 1 sees its own units (engine side 1, at x ≈ 23) at 32 - x
    seat1 = SMACCommander(battle, 1).observe()
    x_engine = eng.pos[1, n:, 0]
    assert torch.allclose(seat1.entities[1, 0, :n, COLUMN["x"]] * 32, 32 - x_engine, atol=1e-4)


def test_location_mask_is_the_walkable_grid():
    battle = SMACBattle("3m", num_envs=1, seed=0)
    cmd = SMACCommander(battle, 0)  # 32×32: one cell per map unit
    mask = cmd.observe().location_mask[0, 0]
    # the line maps' walkable strip is y in [8, 24) across the full width (docs/design/smac.md §7)
    assert mask[8:24].all() and not mask[:8].any() and not mask[24:].any()


def test_bad_seat_raises():
    battle = SMACBattle("3m", num_envs=1, two_player=False)
    with pytest.raises(ValueError, match="seat"):
        SMACCommander(battle, 1)
    with pytest.raises(ValueError, match="grid"):
        SMACCommander(SMACBattle("3m", num_envs=1), 0, CommanderConfig(grid=12))
