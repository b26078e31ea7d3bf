"""SMACBattle.units: the documented read-only view agents use instead of the engine's internals."""

import pytest
import torch
from selfplay.envs.smac import SMACBattle
from selfplay.envs.smac.unit_table import DYNAMIC_FIELDS, STATIC_FIELDS


def test_unit_table_exposes_the_documented_fields_and_follows_the_battle():
    battle = SMACBattle("3m", 2, seed=0, two_player=False)  # the scripted enemy comes to fight
    battle.reset()
    units = battle.units
    assert units.n_side == (3, 3) and units.num_units == 6 and units.unit_names[0] == "marine"
    assert set(dir(units)) == set(STATIC_FIELDS) | set(DYNAMIC_FIELDS)
    before = units.hp.clone()
    for _ in range(120):  # fight until someone is hurt
        actions = [torch.where(mask[..., 6:].any(-1), mask[..., 6:].float().argmax(-1) + 6, 1)
                   for mask in battle.action_masks()]
        battle.step(actions)
        if not torch.equal(units.hp, before):
            break
    assert not torch.equal(units.hp, before)  # the view reads the engine's current tensors
    with pytest.raises(AttributeError, match="no field 'generator'"):
        units.generator
    with pytest.raises(AttributeError, match="read-only"):
        units.hp = before
    with pytest.raises(ValueError, match="seat"):
        battle.seat_view(2)
    assert battle.seat_view(1).pathing.shape == battle.seat_view(0).pathing.shape
