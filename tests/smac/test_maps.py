"""Maps of spec-smac.md §7: spawns, terrain, and the scripted attack-move through shaped terrain."""

import numpy as np
import pytest
import torch

from selfplay.envs.smac import MAP_NAMES, get_map
from selfplay.envs.smac.engine import BattleEngine
from selfplay.envs.smac.units import UNIT_STATS

LIMITS = {"3m": 60, "8m": 120, "25m": 150, "5m_vs_6m": 70, "8m_vs_9m": 120, "10m_vs_11m": 150, "27m_vs_30m": 180,
          "2s3z": 120, "3s5z": 150, "3s5z_vs_3s6z": 170, "1c3s5z": 180, "MMM": 150, "MMM2": 180, "3s_vs_3z": 150,
          "3s_vs_4z": 200, "3s_vs_5z": 250, "2m_vs_1z": 150, "6h_vs_8z": 150, "corridor": 400, "bane_vs_bane": 200,
          "2c_vs_64zg": 400}


@pytest.mark.parametrize("name", MAP_NAMES)
def test_spawns_are_walkable_and_do_not_overlap(name):
    spec = get_map(name)
    assert spec.episode_limit == LIMITS[name]
    walk = spec.pathing_grid()
    for side in (0, 1):
        p = spec.spawn_positions(side)
        r = np.array([UNIT_STATS[u].radius for u in spec.units(side)])
        assert walk[p[:, 0].astype(int), p[:, 1].astype(int)].all()
        d = np.hypot(*(p[:, None] - p[None]).transpose(2, 0, 1))
        np.fill_diagonal(d, np.inf)
        assert (d >= r[:, None] + r[None] - 1e-9).all()


def test_unit_counts_and_races():
    assert get_map("MMM2").units(1).count("marauder") == 3 and len(get_map("MMM2").units(1)) == 12
    assert get_map("3s5z_vs_3s6z").units(1).count("zealot") == 6
    assert get_map("2c_vs_64zg").units(1) == ["zergling"] * 64
    assert get_map("corridor").races == ("P", "Z")
    # SMAC's agent order: by the ally unit-type order (3s5z: stalkers first)
    assert get_map("3s5z").units(0) == ["stalker"] * 3 + ["zealot"] * 5
    assert get_map("3s5z").type_ids(1, as_ally=False) == [1] * 3 + [0] * 5  # enemies: zealot 0, stalker 1


def test_line_map_terrain_strip():
    walk = get_map("3m").pathing_grid()
    assert walk[:, 8:24].all() and not walk[:, :8].any() and not walk[:, 24:].any()


@pytest.mark.parametrize("name", ["corridor", "2c_vs_64zg"])
def test_scripted_attack_move_finds_its_way_through_terrain(name):
    """The scripted enemy reaches the allies' spawn around walls (flow field), never inside one."""
    spec = get_map(name)
    eng = BattleEngine(spec, 1, seed=0, scripted_sides=(1,))
    eng.hp[:, eng.side_slices[0]] = 0.0  # no allies: pure attack-move
    goal = torch.tensor(spec.spawn_centres(0), dtype=torch.float32)
    walk = torch.tensor(spec.pathing_grid())
    for _ in range(40):
        eng.advance(8)
        p = eng.pos[0, eng.side_slices[1]]
        assert bool(walk[p[:, 0].long(), p[:, 1].long()].all())
    closest = (eng.pos[0, eng.side_slices[1]] - goal).norm(dim=-1).min().item()
    assert closest < 2.0


@pytest.mark.parametrize("name", MAP_NAMES)
def test_every_map_plays_in_both_modes(name):
    from selfplay.envs.smac import SMACBattle
    gen = torch.Generator().manual_seed(0)
    for two_player in (False, True):
        b = SMACBattle(name, 2, two_player=two_player, seed=0)
        obs = b.reset()
        for _ in range(12):
            masks = b.action_masks()
            assert all(bool(m.any(-1).all()) for m in masks)  # every agent has a legal action
            acts = [(torch.rand(m.shape, generator=gen) * m).argmax(-1) for m in masks]
            obs, rewards, done, info = b.step(acts)
            assert all(bool(torch.isfinite(o).all()) for o in obs)
            assert all(bool(torch.isfinite(r).all()) and bool((r >= 0).all()) for r in rewards)
        hp = b.engine.hp
        assert bool((hp >= 0).all()) and bool((hp <= b.engine.hp_max).all())
