"""Rules of the engine on hand-computed fights (docs/design/smac.md §1, §8), on the CPU build of the rules
(``rules.py``; the GPU build plays the same games: ``test_gpu_build.py``)."""

import math

import pytest
import torch
from selfplay.envs.smac.engine import ATTACK, HEAL, MOVE, STOP, BattleEngine
from selfplay.envs.smac.maps import MapSpec, get_map
from selfplay.envs.smac.units import COLOSSUS_LANCE_DAMAGE_DELAY_S, COLOSSUS_LANCE_PERIOD_S, UNIT_STATS


@pytest.fixture
def engine():
    return BattleEngine


def duel(engine, ally, enemy, n_envs=1, terrain="open", seed=0):
    """An ``engine`` (class) with the given unit lists (side 0, side 1) and no scripted side."""
    spec = MapSpec("test", tuple((u, 1, (10.0, 16.0)) for u in ally), tuple((u, 1, (20.0, 16.0)) for u in enemy),
                   100, "T", "T", "marines", terrain)
    return engine(spec, n_envs, seed=seed, scripted_sides=())


def place(eng, positions):
    eng.pos[:] = torch.tensor(positions, dtype=torch.float32)


def order(eng, unit, kind, target=0, goal=None):
    eng.order[:, unit] = kind
    eng.target[:, unit] = target
    if goal is not None:
        eng.goal[:, unit] = torch.tensor(goal)


def test_unit_table_matches_spec():
    m = UNIT_STATS["marine"]
    assert (m.hp, m.shield, m.armor, m.damage, m.weapon_range, m.cooldown_s, m.radius) == (45, 0, 0, 6, 5, 0.861, 0.375)
    z = UNIT_STATS["zealot"]
    assert (z.hp, z.shield, z.hits, z.damage) == (100, 50, 2, 8)
    s = UNIT_STATS["stalker"]
    assert (s.hp, s.shield, s.armor, s.damage, s.bonus) == (80, 80, 1, 13, 5)
    assert UNIT_STATS["colossus"].splash == "line" and UNIT_STATS["baneling"].splash_radius == 2.2
    assert [UNIT_STATS[u].max_cooldown for u in ("marine", "marauder", "stalker", "zealot", "colossus",
                                                  "hydralisk", "zergling", "baneling")] == [15, 25, 35, 22, 24, 10, 11, 1]


def test_marine_vs_marine_shots_and_loops_to_kill(engine):
    """45 hp / 6 per shot -> 8 shots; 7 cooldowns of 0.861*16 = 13.776 loops + jitter in {-1..2}."""
    E = 512
    eng = duel(engine, ["marine"], ["marine"], E)
    place(eng, [[10.0, 16.0], [15.0, 16.0]])  # edge distance 4.25 <= range 5
    order(eng, 0, ATTACK, 1)
    hp_trace, death_loop, first_loop = [], torch.full((E,), -1), torch.full((E,), -1)
    for loop in range(1, 140):
        eng.advance(1)
        hp = eng.hp[:, 1]
        first_loop = torch.where((first_loop < 0) & (hp < 45), loop, first_loop)
        death_loop = torch.where((death_loop < 0) & (hp <= 0), loop, death_loop)
        if E and loop <= 2:
            hp_trace.append(hp[0].item())
    # the first shot starts in the first loop (cooldown starts at 0) and lands after the rifle's damage
    # point 0.05 s = 0.8 loop: in the second
    assert hp_trace == [45.0, 39.0]
    assert bool((death_loop > 0).all())
    gap = (death_loop - first_loop).float()
    lo, hi = 7 * (13.776 - 1), 7 * (13.776 + 2)
    assert bool((gap >= math.floor(lo)).all()) and bool((gap <= math.ceil(hi)).all())
    assert abs(gap.mean().item() - 7 * (13.776 + 0.5)) < 1.0  # mean jitter +0.5 loop
    assert gap.std().item() > 0.5  # the jitter is really random
    assert bool((eng.hp[:, 0] == 45).all())  # the target was idle: it never shot back


def test_stalker_vs_zealot_shields_first_armor_per_hit(engine):
    eng = duel(engine, ["stalker"], ["zealot"])
    place(eng, [[10.0, 16.0], [15.0, 16.0]])
    order(eng, 0, ATTACK, 1)
    seen = []
    for _ in range(200):
        before = (eng.shield[0, 1].item(), eng.hp[0, 1].item())
        eng.advance(1)
        after = (eng.shield[0, 1].item(), eng.hp[0, 1].item())
        if after != before and len(seen) < 6:
            seen.append(after)
    # 13 per shot (zealot is light: no +5 vs armored); shields 50 first; the 4th shot: 11 on the shield,
    # the remaining 2 minus armor 1 on hp; then 13 - 1 = 12 per shot.
    assert seen[:6] == [(37, 100), (24, 100), (11, 100), (0, 99), (0, 87), (0, 75)]


def test_zealot_double_hit_walks_into_melee_range(engine):
    eng = duel(engine, ["zealot"], ["stalker"])
    place(eng, [[10.0, 16.0], [14.0, 16.0]])
    order(eng, 0, ATTACK, 1)
    seen = []
    for _ in range(400):
        before = (eng.shield[0, 1].item(), eng.hp[0, 1].item())
        gap = (eng.pos[0, 1] - eng.pos[0, 0]).norm().item()  # a loop fires before its units move
        eng.advance(1)
        after = (eng.shield[0, 1].item(), eng.hp[0, 1].item())
        if after != before:
            seen.append((after, gap))
    # 2 hits x 8 per attack: 80 shield -> 10 hits; then 8 - 1 armor = 7 hp per hit
    states = [s for s, _ in seen[:12]]
    assert states == [(80 - 8 * k, 80) for k in range(1, 11)] + [(0, 73), (0, 66)]
    gap = seen[0][1]
    assert gap <= 0.5 + 0.625 + 0.1 + 1e-4  # it closed in to melee range 0.1 (edge) before hitting


def test_marauder_bonus_vs_armored(engine):
    eng = duel(engine, ["marauder", "marauder", "marauder"], ["stalker", "marine", "zealot"])
    place(eng, [[10, 10], [10, 16], [10, 22], [14, 10], [14, 16], [14, 22]])
    for i in range(3):
        order(eng, i, ATTACK, 3 + i)
    # the grenade flies 4 (PunisherGrenadesWeapon: top speed 20/16 per loop reached after 0.1 loop):
    # 0.1 + (4 - 0.0625) / 1.25 = 3.25 loops after the shot of the first loop, in the fifth
    eng.advance(4)
    assert eng.shield[0, 3].item() == 80 and eng.hp[0, 4].item() == 45
    eng.advance(1)
    # stalker (armored): 10 + 10 = 20 on the shield; marine: 10 - 0; zealot (light): 10 on the shield
    assert eng.shield[0, 3].item() == 60 and eng.hp[0, 3].item() == 80
    assert eng.hp[0, 4].item() == 35
    assert eng.shield[0, 5].item() == 40 and eng.hp[0, 5].item() == 100


def test_medivac_heal_rate_and_energy(engine):
    eng = duel(engine, ["medivac", "marine"], ["marine"])
    place(eng, [[10.0, 16.0], [11.0, 16.0], [28.0, 16.0]])
    eng.hp[:, 1] = 20.0
    order(eng, 0, HEAL, 1)
    eng.advance(16)  # one second
    # 9 hp/s; 1 energy per 3 hp; energy +0.5625/s from 50
    assert eng.hp[0, 1].item() == pytest.approx(29.0, abs=1e-4)
    assert eng.energy[0, 0].item() == pytest.approx(50 - 3 + 0.5625, abs=1e-4)
    # energy-limited: 1 energy heals 3 hp, plus what the regeneration allows
    eng.hp[:, 1] = 20.0
    eng.energy[:, 0] = 1.0
    eng.advance(16)
    assert 23.0 <= eng.hp[0, 1].item() <= 23.0 + 3 * 0.5625 + 1e-4
    assert eng.energy[0, 0].item() < 0.6


def test_baneling_splash(engine):
    eng = duel(engine, ["baneling", "zergling"], ["zergling", "zergling", "zergling", "marine"])
    place(eng, [[10.0, 16.0], [10.5, 16.0], [10.6, 16.0], [11.5, 17.0], [12.2, 16.5], [10.6, 19.5]])
    order(eng, 0, ATTACK, 2)
    eng.advance(3)
    assert eng.hp[0, 0].item() == 0  # the baneling died in its explosion
    # within 2.2 (+ radius): 20 + 15 vs light = 35 -> dead zerglings (35 hp)
    assert eng.hp[0, 2].item() == 0 and eng.hp[0, 3].item() == 0 and eng.hp[0, 4].item() == 0
    assert eng.hp[0, 5].item() == 45  # the marine 3.5 away is outside the blast
    assert eng.hp[0, 1].item() > 34  # no friendly fire on the allied zergling


def test_baneling_killed_by_damage_explodes_a_loop_later(engine):
    """A baneling (side 1, 1 hp) shot dead by a marine explodes where it died in the next loop: the
    light marine next to it (0.6 away, within 2.2 + 0.375) takes 20 + 15 = 35 (armour 0): 45 -> 10;
    the shooter 4.0 away is outside the blast; the dead baneling's target gets no extra hit.
    A baneling that dies by exploding on its own target does not explode a second time."""
    eng = duel(engine, ["marine", "marine"], ["baneling"])
    place(eng, [[10.0, 16.0], [14.6, 16.0], [14.0, 16.0]])
    eng.hp[:, 2] = 1.0
    order(eng, 0, ATTACK, 2)  # edge distance 4.0 - 0.75 = 3.25 <= range 5: fires in the first loop
    eng.advance(2)  # and hits in the second (damage point 0.8 loop)
    assert eng.hp[0, 2].item() == 0 and bool(eng.detonate[0, 2])  # killed by the shot: marked
    assert eng.hp[0, 1].item() == 45.0  # nothing yet
    eng.advance(1)
    assert eng.hp[0, 1].item() == 10.0 and eng.hp[0, 0].item() == 45.0
    assert not bool(eng.detonate[0, 2])  # one blast
    eng.advance(2)
    assert eng.hp[0, 1].item() == 10.0
    # a baneling exploding on its target: the blast of the attack only (35 once), never a second one
    eng = duel(engine, ["marine"], ["baneling"])
    place(eng, [[10.0, 16.0], [10.8, 16.0]])
    order(eng, 1, ATTACK, 0)
    eng.advance(4)
    assert eng.hp[0, 1].item() == 0 and eng.hp[0, 0].item() == 10.0 and not bool(eng.detonate[0, 1])


def _hit_loops(eng, units, loops):
    """For each of ``units``: the loops (1-based) in which its hp fell, over ``loops`` single loops."""
    seen = {j: [] for j in units}
    for loop in range(1, loops + 1):
        before = eng.hp[0].clone()
        eng.advance(1)
        for j in units:
            if eng.hp[0, j] < before[j] - 1.0:
                seen[j].append(loop)
    return seen


def test_colossus_line_splash(engine):
    """The lances' circles and their timing (Liberty EffectData.xml ThermalLances*): launch at the damage
    point 0.0832 s = 1.3312 loops; beam k-th search (k + 1) x 0.0312 s = 0.4992 loops after it, each
    unit hit 4 loops (0.25 s) after the first search that finds it, once per beam; the target (excluded
    from the searches) hit by both beams at their expiry, 6 loops (0.375 s) after the launch."""
    eng = duel(engine, ["colossus"], ["zergling"] * 6)
    # target at (15,16); attack direction +x, so "across" is y - 16.  Circles at -1.25 ... +1.25,
    # radius 0.15 + zergling 0.375 = 0.525.  Unit 2 (across 1.5): circles 9-10; unit 3 (across -1.25):
    # circles 0-2; unit 4 (1.5 along the attack axis): none; unit 5 (0.5 along, 0.75 across): circle 8
    # only; unit 6 (0.6 along): none.
    place(eng, [[10.0, 16.0], [15.0, 16.0], [15.0, 17.5], [15.0, 14.75], [16.5, 16.0], [15.5, 16.75],
                [15.6, 15.25]])
    order(eng, 0, ATTACK, 1)
    # a hit at t loops after the launch lands in loop ceil(1.3312 + t) + 1 (the attack starts in loop 1):
    # target t = 6 -> loop 9; Forward circle k / Reverse circle 10 - k at t = (k + 1) * 0.4992 + 4
    # (k = 0: loop 7, k = 2: loop 8, k = 8: loop 11, k = 9: loop 12)
    seen = _hit_loops(eng, [1, 2, 3, 4, 5, 6], 14)
    assert seen == {1: [9], 2: [7, 12], 3: [7, 11], 4: [], 5: [8, 11], 6: []}
    # 2 hits x (10 + 5 vs light) = 30 on each unit on the line, zerg regeneration between the hits
    regen = 0.2734 / 16
    assert eng.hp[0, 1].item() == pytest.approx(5.0 + 6 * regen, abs=1e-4)
    assert eng.hp[0, 2].item() == pytest.approx(5.0 + 8 * regen, abs=1e-4)  # hit in loops 7 and 12 of 14
    assert eng.hp[0, 4].item() == 35.0 and eng.hp[0, 6].item() == 35.0


def test_colossus_lances_sweep_on_after_the_target_died(engine):
    """A colossus's target killed after the launch takes nothing more, but the beams still sweep the line
    round where it died: a zergling 1.0 across it (circles 6-10) takes 2 x 15."""
    eng = duel(engine, ["colossus"], ["zergling", "zergling"])
    place(eng, [[10.0, 16.0], [15.0, 16.0], [15.0, 17.0]])
    order(eng, 0, ATTACK, 1)
    eng.advance(3)  # launched 1.3312 loops after the attack's start: in loop 3
    eng.hp[:, 1] = 0.0
    eng.advance(11)
    assert eng.hp[0, 1].item() == 0.0
    assert eng.hp[0, 2].item() == pytest.approx(5.0 + 8 * 0.2734 / 16, abs=1e-4)  # loops 7 and 10 of 14


def test_new_order_during_the_wind_up_cancels_the_attack(engine):
    """A stalker's damage point is 0.167 s = 2.672 loops: an order given before it (a move, or an attack
    on another unit) cancels the attack (no hit, weapon ready again); one given after it does not (the
    missile is flying)."""
    def stalker_fight():
        eng = duel(engine, ["stalker"], ["zergling", "zergling"])
        place(eng, [[10.0, 16.0], [14.0, 16.0], [14.0, 17.0]])  # both within range 6
        order(eng, 0, ATTACK, 1)
        eng.advance(1)  # the attack starts in loop 1
        return eng

    # an event t loops after the attack's start happens in loop ceil(t) + 1: the launch in loop 4,
    # after the orders given at the start of loops 2-4
    eng = stalker_fight()
    eng.advance(2)
    order(eng, 0, MOVE, goal=(4.0, 16.0))  # before loop 4
    eng.advance(40)
    assert eng.hp[0, 1].item() == 35.0
    eng = stalker_fight()
    eng.advance(3)
    order(eng, 0, MOVE, goal=(4.0, 16.0))  # before loop 5: launched
    eng.advance(40)
    assert eng.hp[0, 1].item() < 35.0
    # a switch of target during the wind-up: the first target is never hit and the weapon, ready
    # again, starts the attack on the second at once: it lands as the first attack would have
    ref = stalker_fight()
    ref_hit = _hit_loops(ref, [1], 20)[1]
    eng = stalker_fight()
    eng.advance(1)
    order(eng, 0, ATTACK, 2)
    hits = _hit_loops(eng, [1, 2], 20)
    assert hits[1] == [] and len(hits[2]) == 1 and hits[2][0] + 2 == ref_hit[0] + 1 + 2
    # the target dying during the wind-up ends the order and cancels the attack: the weapon is ready
    eng = stalker_fight()
    assert eng.cooldown[0, 0].item() > 20
    eng.hp[:, 1] = 0.0
    eng.advance(1)
    assert eng.order[0, 0].item() == STOP and eng.cooldown[0, 0].item() == 0.0 and eng.shot_hits[0, 0].item() == 0


def test_attack_beyond_range_walks_into_range_first(engine):
    eng = duel(engine, ["marine"], ["marine"])
    place(eng, [[6.0, 16.0], [16.0, 16.0]])
    order(eng, 0, ATTACK, 1)
    first = None
    for loop in range(1, 80):
        eng.advance(1)
        if first is None and eng.hp[0, 1] < 45:
            first = loop
            gap = (eng.pos[0, 1, 0] - eng.pos[0, 0, 0]).item()
            break
    # it has to cover 10 - 5.75 = 4.25 at 2.25/16 per loop: ~30.2 loops, then fire (0.8 loop wind-up)
    assert first is not None and 31 <= first <= 34
    assert 5.6 <= gap <= 5.75 + 1e-3


def test_movement_blocked_by_terrain(engine):
    eng = duel(engine, ["marine"], ["marine"], terrain="line")  # walkable strip y in [8, 24)
    place(eng, [[16.0, 9.0], [28.0, 16.0]])
    order(eng, 0, MOVE, goal=(16.0, 2.0))
    eng.advance(80)
    assert 8.0 <= eng.pos[0, 0, 1].item() < 8.2  # stopped at the cliff edge
    # sliding: moving diagonally into the edge keeps the x component
    order(eng, 0, MOVE, goal=(20.0, 4.0))
    eng.advance(16)
    assert eng.pos[0, 0, 0].item() > 16.5 and eng.pos[0, 0, 1].item() >= 8.0


def _min_gap(eng, loops, a=0, b=1):
    """Smallest centre distance minus both radii between units a and b over ``loops`` loops."""
    r = eng.radius[a].item() + eng.radius[b].item()
    gap = math.inf
    for _ in range(loops):
        eng.advance(1)
        gap = min(gap, (eng.pos[0, a] - eng.pos[0, b]).norm().item() - r)
    return gap


def test_units_walking_head_on_steer_round_each_other(engine):
    """ORCA collision avoidance every loop: two marines walking at each other, 0.2 off one line
    (exactly on it, ORCA's symmetric solution is that both stop), pass each other without
    overlapping and both arrive; without avoidance they would walk through each other."""
    eng = duel(engine, ["marine"], ["marine"])
    place(eng, [[10.0, 16.0], [14.0, 16.2]])
    order(eng, 0, MOVE, goal=(14.0, 16.0))
    order(eng, 1, MOVE, goal=(10.0, 16.2))
    sidestep = 0.0
    r = 0.75
    gap = math.inf
    for _ in range(80):
        eng.advance(1)
        gap = min(gap, (eng.pos[0, 0] - eng.pos[0, 1]).norm().item() - r)
        sidestep = max(sidestep, abs(eng.pos[0, 0, 1].item() - 16.0))
    assert gap > -0.01
    assert sidestep > 0.2  # it left the line to pass
    assert (eng.pos[0, 0] - torch.tensor([14.0, 16.0])).norm() < 0.2
    assert (eng.pos[0, 1] - torch.tensor([10.0, 16.2])).norm() < 0.2


def test_moving_unit_walks_round_an_idle_one(engine):
    """A zergling walking through an idle one's place steers round it (SMAClite: the mover takes all
    the avoidance, the idle unit stays put) and arrives."""
    eng = duel(engine, ["zergling", "zergling"], ["zergling"])
    place(eng, [[10.0, 16.05], [12.0, 16.0], [25.0, 16.0]])
    order(eng, 0, MOVE, goal=(15.0, 16.0))
    order(eng, 1, STOP)
    assert _min_gap(eng, 60) > -0.01
    assert (eng.pos[0, 0] - torch.tensor([15.0, 16.0])).norm() < 0.2
    assert eng.pos[0, 1].tolist() == [12.0, 16.0]


def test_overlapping_moving_units_separate(engine):
    """Two banelings 0.2 apart (radii 0.375 each), both walking north, are apart within a step."""
    eng = duel(engine, ["baneling"], ["baneling"])
    place(eng, [[10.0, 16.0], [10.2, 16.0]])
    order(eng, 0, MOVE, goal=(10.0, 26.0))
    order(eng, 1, MOVE, goal=(10.2, 26.0))
    eng.advance(8)
    gap = (eng.pos[0, 0] - eng.pos[0, 1]).norm().item() - 0.75
    assert gap > -0.01


def test_collision_layers_from_the_map_flags(engine):
    """Colossi avoid colossi (both ``Collide`` Colossus) but a zergling walks straight under a
    standing colossus (Ground shares no flag with Colossus/Flying)."""
    eng = duel(engine, ["colossus", "zergling"], ["colossus"])
    place(eng, [[10.0, 16.0], [12.0, 16.0], [14.0, 16.3]])
    order(eng, 0, MOVE, goal=(14.0, 16.0))
    order(eng, 2, MOVE, goal=(10.0, 16.3))
    assert _min_gap(eng, 40, 0, 2) > -0.01
    eng = duel(engine, ["colossus"], ["zergling"])
    place(eng, [[12.0, 16.0], [10.0, 16.0]])
    order(eng, 1, MOVE, goal=(14.0, 16.0))
    for _ in range(12):
        eng.advance(1)
        assert eng.pos[0, 1, 1].item() == 16.0  # not deflected
    assert eng.pos[0, 1, 0].item() > 11.5


def test_shield_regeneration_after_ten_seconds(engine):
    eng = duel(engine, ["stalker"], ["stalker"])
    place(eng, [[10.0, 16.0], [28.0, 16.0]])
    eng.shield[:, 0] = 10.0
    eng.advance(159)
    assert eng.shield[0, 0].item() == 10.0
    eng.advance(17)
    assert eng.shield[0, 0].item() == pytest.approx(12.0, abs=0.2)


def test_zerg_regeneration(engine):
    eng = duel(engine, ["zergling"], ["zergling"])
    place(eng, [[10.0, 16.0], [28.0, 16.0]])
    eng.hp[:, 0] = 10.0
    eng.advance(160)
    assert eng.hp[0, 0].item() == pytest.approx(10 + 10 * 0.2734, abs=1e-3)


def test_stop_order_means_idle_and_dead_target_ends_attack(engine):
    eng = duel(engine, ["marine", "marine"], ["marine"])
    place(eng, [[10.0, 16.0], [10.0, 17.0], [14.0, 16.0]])
    order(eng, 0, ATTACK, 2)
    order(eng, 1, STOP)
    eng.hp[:, 2] = 6.0
    eng.advance(3)  # the shot lands in the second loop; the order ends in the third
    assert eng.hp[0, 2].item() == 0 and eng.order[0, 0].item() == STOP


def test_scripted_ai_attacks_towards_allies(engine):
    eng = engine(get_map("3m"), 2, seed=0, scripted_sides=(1,))
    start = eng.pos[:, 3:, 0].clone()
    eng.advance(8 * 6)
    assert bool((eng.pos[:, 3:, 0] < start - 3).all())  # walked west towards the allies
    eng.advance(8 * 40)
    assert bool((eng.hp[:, :3] == 0).all())  # idle allies get killed


def test_stalker_missile_lands_after_damage_point_and_flight(engine):
    """ParticleDisruptors: damage point 0.167 s = 2.672 loops, then the missile (MissileDefault: 3200/s^2
    to 18.75/s, i.e. 12.5 per loop^2 to 1.171875 per loop) flies the centre distance 5:
    0.09375 + (5 - 0.0549) / 1.171875 = 4.3136 loops; 6.9856 loops after the start of the first loop:
    the hit lands in loop 8.  A stalker dead before its launch (2.672 loops) deals nothing; one dead
    after it still hits (the missile flies on)."""
    def run(kill_after):
        eng = duel(engine, ["stalker"], ["marine"])
        place(eng, [[10.0, 16.0], [15.0, 16.0]])
        order(eng, 0, ATTACK, 1)
        trace = []
        for loop in range(1, 10):
            eng.advance(1)
            if loop == kill_after:
                eng.hp[:, 0] = 0.0
            trace.append(eng.hp[0, 1].item())
        return trace
    assert run(None) == [45.0] * 7 + [32.0] * 2
    assert run(1) == [45.0] * 9
    assert run(3) == [45.0] * 7 + [32.0] * 2


def test_zealot_second_hit_follows_and_dies_with_the_zealot(engine):
    """PsiBladesBurst: the hits land 0.28 s = 4.48 loops apart (the second in the fifth loop after the
    first); a zealot killed in between deals only the first."""
    def run(kill_after):
        eng = duel(engine, ["zealot"], ["marine"])
        place(eng, [[10.0, 16.0], [10.9, 16.0]])
        order(eng, 0, ATTACK, 1)
        trace = []
        for loop in range(1, 8):
            eng.advance(1)
            if loop == kill_after:
                eng.hp[:, 0] = 0.0
            trace.append(eng.hp[0, 1].item())
        return trace
    assert run(None) == [37.0] * 5 + [29.0] * 2
    assert run(2) == [37.0] * 7


def test_every_attack_lands_within_its_cooldown():
    """The rules keep one attack per unit under way (``rules.fire_weapons``); that never delays a shot
    when every attack's last hit lands before the shortest next cooldown (period - 1 loop of jitter),
    here at the longest missile flight (weapon range plus the attacker's and the largest radius, 1)."""
    for name, s in UNIT_STATS.items():
        if s.damage <= 0 or s.splash == "explode":
            continue
        d = s.weapon_range + s.radius + 1.0
        v0, a, vmax = s.missile_start_speed, s.missile_accel, s.missile_max_speed
        flight = 0.0
        if vmax > 0:
            t1 = (vmax - v0) / a if a > 0 else 0.0
            d1 = v0 * t1 + 0.5 * a * t1 * t1
            flight = t1 + (d - d1) / vmax if d >= d1 else (math.sqrt(v0 * v0 + 2 * a * d) - v0) / a
        last_hit = s.damage_point_s + s.hit_delay_s + s.hit_gap_s * (s.hits - 1) + flight
        if s.splash == "line":  # the beams' last sweep hit (COLOSSUS_LANCE_*)
            last_hit = s.damage_point_s + 11 * COLOSSUS_LANCE_PERIOD_S + COLOSSUS_LANCE_DAMAGE_DELAY_S
        assert last_hit < s.cooldown_s - 1 / 16, name
