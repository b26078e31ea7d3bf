"""The maps built from the map files (envs/smac/maps.py): terrain equal to the archives', spawns placed
around the trigger points, and the scripted enemy following the trigger's order and SC2's
acquisition rules (envs/smac/engine.py)."""

import math
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from selfplay.envs.smac import MAP_NAMES, SMACBattle, get_map
from selfplay.envs.smac.engine import AMOVE, ATTACK, MOVE, STOP, BattleEngine
from selfplay.envs.smac.maps import PLACEMENT_OVERLAP, MapSpec, _collision_class
from selfplay.envs.smac.units import UNIT_STATS

MAPS_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "smac_maps"

LIMITS = {"3m": 60, "8m": 120, "25m": 150, "5m_vs_6m": 70, "8m_vs_9m": 120, "10m_vs_11m": 150, "27m_vs_30m": 180,
          "2s3z": 120, "3s5z": 150, "3s5z_vs_3s6z": 170, "1c3s5z": 180, "MMM": 150, "MMM2": 180, "3s_vs_3z": 150,
          "3s_vs_4z": 200, "3s_vs_5z": 250, "2m_vs_1z": 150, "6h_vs_8z": 150, "corridor": 400, "bane_vs_bane": 200,
          "2c_vs_64zg": 400, "2s_vs_1sc": 300, "so_many_baneling": 100}


def test_all_23_maps_with_smac_limits():
    assert set(MAP_NAMES) == set(LIMITS)
    assert all(get_map(n).episode_limit == LIMITS[n] for n in MAP_NAMES)


@pytest.mark.parametrize("name", MAP_NAMES)
def test_pathing_grid_equals_the_map_file(name):
    """Decoded here from the archive's t3CellFlags (bit 0 = not pathable, rows = y), independently of
    the shipped data."""
    mpyq = pytest.importorskip("mpyq", reason="mpyq (dev extra) reads the .SC2Map archives")
    path = MAPS_DIR / f"{name}.SC2Map"
    if not path.exists():
        pytest.skip(f"the SMAC map files are not at {MAPS_DIR}")
    b = mpyq.MPQArchive(str(path)).read_file("t3CellFlags")
    w, h = struct.unpack_from("<II", b, 24)
    flags = np.frombuffer(b[32:32 + w * h], dtype=np.uint8).reshape(h, w)  # [y, x]
    assert np.array_equal(get_map(name).pathing_grid(), (flags & 1 == 0).T)


@pytest.mark.parametrize("name", MAP_NAMES)
def test_spawns_walkable_near_their_trigger_point_and_apart(name):
    spec = get_map(name)
    walk = spec.pathing_grid()
    for side in (0, 1):
        for mirrored in ((False, True) if side == 1 else (False,)):
            p = spec.spawn_positions(side, mirrored)
            names = spec.units(side, mirrored)
            ground = np.array([not UNIT_STATS[u].air for u in names])
            assert walk[p[ground, 0].astype(int), p[ground, 1].astype(int)].all()
            # every unit stands within a clump around a trigger point of its type
            for u, q in zip(names, p):
                pts = [g[2] for g in spec.groups[side] if g[0] == u]
                n = sum(g[1] for g in spec.groups[side])
                r_max = max(UNIT_STATS[g[0]].radius for g in spec.groups[side])
                assert min(math.dist(q, c) for c in pts) <= 2 * r_max * math.sqrt(n) + 0.5
            r = np.array([UNIT_STATS[u].radius for u in names])
            cls = np.array([_collision_class(u) for u in names])
            d = np.hypot(*(p[:, None] - p[None]).transpose(2, 0, 1))
            np.fill_diagonal(d, np.inf)
            same = cls[:, None] == cls[None]
            assert (d[same] >= (r[:, None] + r[None])[same] - PLACEMENT_OVERLAP - 1e-9).all()


# The real game's 3s5z reset (the seed's feature rows, tests/smac/test_features.py): offsets from the
# trigger points (9, 16) / (23, 16).  Stalkers: (0, 0), (0, -1.18848), (1.18848, 0); zealots on a 0.5 grid.
REAL_3S5Z_STALKERS = [(0, 0), (0, -1.18848), (1.18848, 0)]
REAL_3S5Z_ZEALOTS = [(-1.5, 0.5), (-1, -0.5), (-0.5, 1), (0, 2), (0.5, 1)]


def test_placement_reproduces_the_real_3s5z_layout():
    spec = get_map("3s5z")
    for side, centre in ((0, (9, 16)), (1, (23, 16))):
        p = spec.spawn_positions(side) - np.array(centre)
        names = spec.units(side)
        got = {u: sorted(map(tuple, p[[k for k, n in enumerate(names) if n == u]])) for u in ("stalker", "zealot")}
        for u, real in (("stalker", REAL_3S5Z_STALKERS), ("zealot", REAL_3S5Z_ZEALOTS)):
            err = np.hypot(*(np.array(got[u]) - np.array(sorted(real))).T)
            assert err.max() <= 0.07, (u, got[u])


def test_agent_order_is_smac_sort_by_type_then_x_then_y():
    spec = get_map("3s5z")
    p, names = spec.spawn_positions(0), spec.units(0)
    assert names == ["stalker"] * 3 + ["zealot"] * 5
    keys = [(names[k], round(p[k, 0], 6), round(p[k, 1], 6)) for k in range(8)]
    assert keys == sorted(keys)


@pytest.mark.parametrize("name", ["3s5z", "MMM", "1c3s5z"])
def test_mirrored_side_is_the_mirror_image(name):
    spec = get_map(name)
    p0, p1 = spec.spawn_positions(0), spec.spawn_positions(1, mirrored=True)
    c0, c1 = spec.spawn_centres(0), spec.spawn_centres(1)
    assert np.allclose(p0 - c0, (spec.map_x - p1[:, 0] - (spec.map_x - c1[0]))[:, None] * [1, 0]
                       + (p1[:, 1] - c1[1])[:, None] * [0, 1])


def test_units_orders_and_races_from_the_triggers():
    assert get_map("MMM2").units(1).count("marauder") == 3 and len(get_map("MMM2").units(1)) == 12
    assert get_map("3s5z_vs_3s6z").units(1).count("zealot") == 6
    assert get_map("2c_vs_64zg").units(1) == ["zergling"] * 64
    assert get_map("corridor").races == ("P", "Z")
    assert get_map("3s5z").type_ids(1, as_ally=False) == [1] * 3 + [0] * 5  # enemies: zealot 0, stalker 1
    assert get_map("2s_vs_1sc").units(1) == ["spine_crawler"] and get_map("2s_vs_1sc").enemy_order is None
    assert get_map("so_many_baneling").units(1) == ["baneling"] * 32
    assert get_map("corridor").enemy_order == ("attack_point", ((4.47, 4.3298),))
    assert get_map("bane_vs_bane").enemy_order == ("attack_point", ((16.0, 8.0),))
    assert get_map("2c_vs_64zg").enemy_order == ("attack_units", (0, 1))


def enemies_only(name, seed=0, n=1, **kw):
    """An engine on map ``name`` with the scripted enemy; the allies stay where they are."""
    return BattleEngine(get_map(name), n, seed=seed, scripted_sides=(1,), **kw)


@pytest.mark.parametrize("name", ["corridor", "so_many_baneling"])
def test_enemy_attack_moves_to_the_far_room_through_the_choke(name):
    """Player 2 attack-moves to the map's "Attack Point" (4.47, 4.33), behind the allies' room; with no
    ally in the way it walks there along the corridor, on walkable cells only."""
    eng = enemies_only(name)
    eng.hp[:, eng.side_slices[0]] = 0.0  # no allies: pure attack-move
    walk = torch.tensor(get_map(name).pathing_grid())
    goal = torch.tensor([4.47, 4.3298])
    for _ in range(60):
        eng.advance(8)
        p = eng.pos[0, eng.side_slices[1]]
        assert bool(walk[p[:, 0].long(), p[:, 1].long()].all())
        assert bool((eng.order[0, eng.side_slices[1]] == AMOVE).all())
    d = (eng.pos[0, eng.side_slices[1]] - goal).norm(dim=-1)
    assert d.min().item() < 1.5 and d.median().item() < 4.0


def test_zerglings_attack_the_colossi_around_the_ravine():
    """2c_vs_64zg: every zergling is ordered to attack a colossus (the closest) and walks around the
    wall at y in [12, 14) (zerglings cannot cross it) to reach it."""
    eng = enemies_only("2c_vs_64zg")
    zs = eng.side_slices[1]
    walk = torch.tensor(get_map("2c_vs_64zg").pathing_grid())
    eng.advance(8)
    assert bool((eng.order[0, zs] == ATTACK).all()) and bool((eng.target[0, zs] < 2).all())
    reached = False
    for _ in range(40):
        eng.advance(8)
        p = eng.pos[0, zs]
        assert bool(walk[p[:, 0].long(), p[:, 1].long()].all())
        if bool((eng.hp[0, :2] < eng.hp_max[:2]).any() | (eng.shield[0, :2] < eng.shield_max[:2]).any()):
            reached = True
            break
    assert reached  # zerglings got round and hit a colossus


def test_attack_point_between_is_drawn_per_game_on_the_segment():
    eng = enemies_only("2m_vs_1z", n=64)
    g = eng.trigger_goal[:, 2]
    assert torch.allclose(g[:, 1], torch.full((64,), 12.0)) and bool(((g[:, 0] >= 13) & (g[:, 0] <= 19)).all())
    assert g[:, 0].std().item() > 1.0  # uniform on [13, 19]: std 1.73


def duel(ally, enemy, terrain="open"):
    spec = MapSpec("test", tuple((u, 1, (10.0, 16.0)) for u in ally), tuple((u, 1, (20.0, 16.0)) for u in enemy),
                   100, "T", "T", "marines", terrain)
    return BattleEngine(spec, 1, seed=0, scripted_sides=(1,))


def test_acquisition_range_is_the_scan_range():
    """A scripted marine (scan range max(5, range 5 + 0.5) = 5.5, edge distance) attack-moving south
    does not acquire an ally passing at edge distance 5.6 but does at 5.4; then it fires at it
    (walking into its range 5)."""
    assert UNIT_STATS["marine"].scan_range == 5.5 and UNIT_STATS["zealot"].scan_range == 5.0
    assert UNIT_STATS["stalker"].scan_range == 6.5 and UNIT_STATS["spine_crawler"].scan_range == 7.0
    for gap, acquired in ((5.6, False), (5.4, True)):
        eng = duel(["marine"], ["marine"])
        r = 2 * UNIT_STATS["marine"].radius
        eng.pos[0] = torch.tensor([[16.0, 16.0 + gap + r], [16.0, 16.0]])
        eng.trigger_goal[0, 1] = torch.tensor([16.0, 2.0])  # walking south, away from the ally
        eng.advance(1)
        assert (eng.order[0, 1].item() == ATTACK) == acquired
        assert (eng.order[0, 1].item() == AMOVE) == (not acquired)
    eng.advance(8)  # 0.4 beyond its range: one loop's walk (2.25 / 16) at a time
    assert eng.hp[0, 0].item() < 45.0 or eng.cooldown[0, 1].item() > 0  # it shot


def chase_duel(idle):
    """A scripted marine at (2, 16), idle at its attack-move point (``idle``) or attack-moving to
    (2, 2), acquires a stalker 5.2 away (edge; scan range 5.5, weapon range 5) that runs east to (31, 16): faster than
    the marine (2.95 against 2.25), so the marine chases it without reaching its range 5 until the
    stalker stands at x = 31 (the marine is in range from x = 31 - 5 - 1 = 25)."""
    eng = duel(["stalker"], ["marine"])
    reach = UNIT_STATS["stalker"].radius + UNIT_STATS["marine"].radius
    eng.pos[0] = torch.tensor([[2.0 + 5.2 + reach, 16.0], [2.0, 16.0]])
    eng.trigger_goal[0, 1] = torch.tensor([2.0, 16.0] if idle else [2.0, 2.0])
    eng.order[0, 0], eng.goal[0, 0] = MOVE, torch.tensor([31.0, 16.0])
    eng.advance(1)
    assert eng.order[0, 1].item() == ATTACK and eng.target[0, 1].item() == 0
    return eng


def test_idle_unit_leashes_at_the_acquire_leash_radius():
    """The game data's leash (``AcquireLeashRadius`` 21, ``AcquireLeashResetRadius`` 5): the idle
    marine chases its auto-acquired target (visible: fog off) beyond SMAC's sight 9, drops it once
    more than 21 from where it acquired it (x > 23), before reaching it, and walks back to (2, 16);
    on the way it ignores the stalker within its scan range until within 5 of that point."""
    eng = chase_duel(idle=True)
    xs = []
    for _ in range(16 * 14):
        eng.advance(1)
        xs.append(eng.pos[0, 1, 0].item())
        if eng.order[0, 1].item() != ATTACK:
            break
    far = max(xs)
    assert 23.0 < far <= 23.0 + 2.25 / 16 + 1e-4  # dropped on the first loop beyond 21, turning back
    assert xs[-1] < far and eng.pos[0, 0, 0].item() - far - 1.0 > 5.0  # never within its range 5
    assert eng.order[0, 1].item() == AMOVE and eng.goal[0, 1].tolist() == [2.0, 16.0]
    assert eng.shield[0, 0].item() == 80.0
    eng.order[0, 0] = STOP
    for _ in range(16 * 12):  # back to 5 from (2, 16), the stalker kept 3 (edge) behind it: not acquired
        x = eng.pos[0, 1, 0].item()
        eng.pos[0, 0] = torch.tensor([x + 3.0 + 1.0, 16.0])
        eng.advance(1)
        if eng.pos[0, 1, 0].item() - 2.0 <= 5.0:
            break
        assert eng.order[0, 1].item() == AMOVE
    eng.advance(1)
    assert eng.order[0, 1].item() == ATTACK and eng.target[0, 1].item() == 0  # within 5: acquires again


def test_idle_unit_returns_when_its_target_dies():
    """The idle marine whose chased target dies walks back to where it acquired it and is idle there."""
    eng = chase_duel(idle=True)
    eng.advance(32)
    x = eng.pos[0, 1, 0].item()
    assert x > 4.0 and eng.order[0, 1].item() == ATTACK
    eng.hp[0, 0] = 0.0
    eng.advance(1)
    assert eng.order[0, 1].item() == AMOVE and eng.goal[0, 1].tolist() == [2.0, 16.0]
    eng.advance(16 * 4)
    assert eng.pos[0, 1].tolist() == pytest.approx([2.0, 16.0], abs=0.5)
    assert eng.goal[0, 1].tolist() == [2.0, 16.0] and eng.order[0, 1].item() == AMOVE


def test_attack_moving_unit_is_not_leashed():
    """Under the trigger's attack-move the marine chases its acquired target past 21 from where it
    acquired it and shoots it once in range (x >= 25)."""
    eng = chase_duel(idle=False)
    for _ in range(16 * 14):
        eng.advance(1)
        assert eng.order[0, 1].item() == ATTACK and eng.target[0, 1].item() == 0
        if eng.shield[0, 0].item() < 80.0:
            break
    assert eng.pos[0, 1, 0].item() >= 25.0 - 1e-3 and eng.shield[0, 0].item() < 80.0


def test_acquisition_prefers_a_unit_that_can_shoot_back():
    """A scripted marine with a Medivac (cannot attack) closer than a marine takes the marine."""
    eng = duel(["medivac", "marine"], ["marine"])
    eng.pos[0] = torch.tensor([[16.0, 18.0], [16.0, 20.0], [16.0, 16.0]])
    eng.advance(1)
    assert eng.order[0, 2].item() == ATTACK and eng.target[0, 2].item() == 1


def test_spine_crawler_stands_and_shoots_within_its_range():
    """2s_vs_1sc: no trigger order; the spine crawler (range 7, radius 1) never moves and shoots a
    stalker within 7 edge distance only."""
    b = SMACBattle("2s_vs_1sc", 1, two_player=False, seed=0)
    b.reset()
    eng = b.engine
    start = eng.pos[0, 2].clone()
    sc = eng.pos[0, 2]
    reach = 1.0 + UNIT_STATS["stalker"].radius
    eng.pos[0, 0] = sc + torch.tensor([0.0, -(7.2 + reach)])
    eng.pos[0, 1] = sc + torch.tensor([8.0, -(7.5 + reach)])
    eng.advance(8)
    assert eng.order[0, 2].item() == STOP and eng.hp[0, :2].tolist() == [80.0, 80.0]
    eng.pos[0, 0] = sc + torch.tensor([0.0, -(6.9 + reach)])
    eng.advance(16)  # damage point 5.3 loops and the tentacle's 4.4-loop flight: the hit lands in loop 10
    assert eng.order[0, 2].item() == ATTACK and eng.target[0, 2].item() == 0
    assert eng.shield[0, 0].item() < 80.0
    assert torch.equal(eng.pos[0, 2], start)


def test_medivac_accelerates_from_rest():
    """Acceleration 2.3125/s^2 (the map's Medivac data): after k loops from rest the speed is
    min(2.75, 2.3125 k / 16) / 16 per loop, so 8 loops cover 2.3125 / 256 * 36."""
    eng = duel(["medivac"], ["marine"])
    eng.scripted_sides = ()
    eng.pos[0] = torch.tensor([[10.0, 16.0], [30.0, 30.0]])
    eng.order[0, 0], eng.goal[0, 0] = MOVE, torch.tensor([20.0, 16.0])
    eng.advance(8)
    assert eng.pos[0, 0, 0].item() - 10.0 == pytest.approx(2.3125 / 256 * 36, rel=1e-4)


def test_marauder_ordered_onto_a_medivac_keeps_its_order():
    """SC2 rejects an attack the unit cannot make; the previous order stays (spec §2's mask allows it)."""
    eng = duel(["marauder"], ["medivac", "marine"])
    eng.scripted_sides = ()
    eng.command(0, torch.tensor([[7]]))  # attack enemy 1, the marine
    assert eng.order[0, 0].item() == ATTACK and eng.target[0, 0].item() == 2
    eng.command(0, torch.tensor([[6]]))  # attack enemy 0, the Medivac: rejected
    assert eng.order[0, 0].item() == ATTACK and eng.target[0, 0].item() == 2


@pytest.mark.parametrize("name", MAP_NAMES)
def test_every_map_plays_in_both_modes(name):
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


def test_smac_heuristic_targets_the_closest_enemy_and_keeps_it():
    """SMAC's heuristic AI (envs/smac/heuristic_batched.py): the closest living enemy, kept until it dies, and
    attacked wherever it is (beyond the shoot-range mask: step(..., check_masks=False))."""
    from selfplay.envs.smac.heuristic_batched import HeuristicPolicy

    b = SMACBattle("3m", 1, two_player=False, seed=0)
    b.reset()
    e = b.engine
    e.pos[0] = torch.tensor([[10.0, 16.0], [10.0, 12.0], [10.0, 20.0], [20.0, 16.0], [18.0, 12.5], [25.0, 20.0]])
    pol = HeuristicPolicy(b, 0)
    # closest: unit 0 enemy 1 (8.73 vs 10), unit 1 enemy 1 (8.01), unit 2 enemy 0 (10.77 vs 10.97)
    assert pol.act().tolist() == [[7, 7, 6]]
    e.pos[0, 4] = torch.tensor([11.0, 16.0])  # enemy 1 now closest to everyone: targets are kept
    assert pol.act().tolist() == [[7, 7, 6]]
    e.hp[0, 3] = 0.0  # enemy 0 died: its attackers retarget the closest living enemy
    assert pol.act().tolist() == [[7, 7, 7]]
    b.step([pol.act()], check_masks=False)  # out of the shoot range: allowed here, the units walk in
    assert e.order[0, :3].tolist() == [ATTACK] * 3


def test_smac_heuristic_medivac_heals_the_closest_damaged_ally():
    from selfplay.envs.smac.heuristic_batched import HeuristicPolicy

    b = SMACBattle("MMM", 1, two_player=False, seed=0)
    b.reset()
    e = b.engine
    pol = HeuristicPolicy(b, 0)
    assert pol.act()[0, 9].item() == 0  # nobody damaged: no order
    e.hp[0, 0] = 50.0
    e.hp[0, 5] = 20.0
    d = (e.pos[0, :9] - e.pos[0, 9]).norm(dim=-1)
    closest = 0 if d[0] < d[5] else 5
    assert pol.act()[0, 9].item() == 6 + closest


def test_scripted_unit_responds_to_an_attack_from_beyond_its_scan_range():
    """A zealot (scan range 5) shot by a stalker 5.8 away (edge; stalker range 6) turns on it."""
    eng = duel(["stalker"], ["zealot"])
    reach = UNIT_STATS["stalker"].radius + UNIT_STATS["zealot"].radius
    eng.pos[0] = torch.tensor([[16.0, 16.0 + 5.8 + reach], [16.0, 16.0]])
    eng.trigger_goal[0, 1] = torch.tensor([16.0, 2.0])  # walking away
    eng.advance(1)
    assert eng.order[0, 1].item() == AMOVE  # not seen within 5
    eng.order[0, 0], eng.target[0, 0] = ATTACK, 1
    eng.advance(2)  # it responds to the attack as it starts
    assert eng.order[0, 1].item() == ATTACK and eng.target[0, 1].item() == 0
    eng.advance(10)  # the shot lands after the damage point (2.7 loops) and the missile's ~6-loop flight
    assert eng.shield[0, 1].item() < 50.0
