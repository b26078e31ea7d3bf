"""Unit data of the SMAC simulator: one table of SC2 unit stats (docs/design/smac.md §8) and SMAC's
per-type constants (§1, §4).

All times are in *Normal* game-seconds; the game runs ``LOOPS_PER_SECOND`` = 16 game loops per
Normal second and one environment step is ``STEP_MUL`` = 8 loops (§1). The engine works in loops:
``speed_per_loop = speed / 16``, ``cooldown_loops = cooldown_s * 16``.

Attributes are bit flags so that "bonus damage vs armored" is one ``&`` on tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

LOOPS_PER_SECOND = 16  # Normal game speed (§1)
STEP_MUL = 8  # game loops per environment step (§1)
SIGHT_RANGE = 9.0  # SMAC's feature sight range (§3, §8)
SHOOT_RANGE = 6.0  # SMAC's action-mask shoot range (§2, §8)
MOVE_AMOUNT = 2.0  # distance of one move action (§2)

# Cooldown jitter: every shot's cooldown varies by -1..+2 loops.  The game's weapons add a random
# delay in [RandomDelayMin, RandomDelayMax] = [-0.0625, 0.125] Normal s = [-1, 2] loops to each
# period (SC2 4.6.2 Core.SC2Mod WeaponData.xml, the CWeaponLegacy default; no weapon of these units
# overrides it); drawn here as a whole number of loops (the game's timers tick once per loop).
COOLDOWN_JITTER_LOW = -1
COOLDOWN_JITTER_HIGH = 2

# Shields regenerate 2/s after 10 s without damage (the maps' UnitData.xml: ``ShieldRegenRate`` 2,
# ``ShieldRegenDelay`` 10 of every Protoss ``_RL`` unit); zerg units regenerate 0.2734 hp/s (``LifeRegenRate``
# of every zerg ``_RL`` unit; Liberty.SC2Mod's stock zerg units the same).  tests/smac/test_mapdata.py.
SHIELD_REGEN_PER_S = 2.0
SHIELD_REGEN_DELAY_S = 10.0
ZERG_REGEN_PER_S = 0.2734

# Medivac: heals 9 hp/s, 1 energy per 3 hp healed, bio targets only, range 4 (SC2 4.6.2 Liberty.SC2Mod:
# AbilData.xml ``MedivacHeal`` Range 4, TargetFilters Biological; EffectData.xml ``MedivacHeal``
# RechargeVitalRate 9, DrainVitalCostFactor 0.33 energy per life, i.e. 3.03 life per energy: the 3 here is
# the rounded reading, docs/design/smac-rules.md "Sources audit"); energy max 200, starts at 50, regenerates
# 0.5625/s (the maps' ``Medivac_RL``: EnergyMax, EnergyStart, EnergyRegenRate).
MEDIVAC_HEAL_PER_S = 9.0
MEDIVAC_HP_PER_ENERGY = 3.0
MEDIVAC_MAX_ENERGY = 200.0
MEDIVAC_START_ENERGY = 50.0
MEDIVAC_ENERGY_REGEN_PER_S = 0.5625

# Colossus Thermal Lances (SC2 4.6.2 Liberty.SC2Mod EffectData.xml: ThermalLancesForward/Reverse,
# ThermalLancesE): each of the two beams searches 11 circles of radius 0.15 centred on the target at
# offsets -1.25, -1.00, ..., +1.25 across the attack direction; an enemy ground unit overlapping a
# circle (distance <= 0.15 + its radius) takes the beam's hit.
COLOSSUS_LANCE_HALF_LENGTH = 1.25
COLOSSUS_LANCE_STEP = 0.25
COLOSSUS_LANCE_RADIUS = 0.15
# The sweep's timing (same file): a beam searches its k-th circle (k = 0..10, in its own order: Forward
# from -1.25 to +1.25, Reverse from +1.25 to -1.25) (k + 1) periods of 0.0312 s after the damage point
# (``PeriodCount`` 11, ``PeriodicPeriodArray`` 0.0312); a unit found is hit 0.25 s later
# (``ThermalLancesDamageDelay``: ``ExpireDelay`` 0.25, ``FinalEffect`` ThermalLancesMU), once per beam
# (the beams' ``Marker`` and the damage's ``noMarkers`` validator); the target itself is excluded from
# the search (``ExcludeArray Target``) and hit when the beams expire (``units.WEAPON_TIMING``).
COLOSSUS_LANCE_PERIOD_S = 0.0312
COLOSSUS_LANCE_DAMAGE_DELAY_S = 0.25

# Attribute bit flags.
LIGHT, ARMORED, BIO, MECH, MASSIVE, STRUCTURE = 1, 2, 4, 8, 16, 32
ATTRIBUTE_NAMES = {"light": LIGHT, "armored": ARMORED, "bio": BIO, "mech": MECH, "massive": MASSIVE,
                   "structure": STRUCTURE}

# Auto-acquisition ("scan") range, edge distance (Liquipedia, "Automatic Targeting": the default scan
# range is max(5, weapon range); since Legacy of the Void the minimum scan range of most ground weapons
# is weapon range + 0.5, remaining 5 for short-range weapons; static defences keep their weapon range).
MIN_SCAN_RANGE = 5.0
SCAN_RANGE_MARGIN = 0.5

# The acquisition leash (game data: Core ``GameData.xml``, the ``CGame`` defaults, which neither Liberty
# nor the maps' ``_RL`` units override; the fields' hints in Core ``EditorCatalogStrings.txt``).  A unit
# that auto-acquires a target while idle may move up to ``AcquireLeashRadius`` from where it was "while
# performing acquired orders before it must return to its original location"; returning after passing
# it, it may acquire again within ``AcquireLeashResetRadius`` of that location; it does not acquire a
# target farther than ``AcquireMovementLimit`` ("maximum pathing distance ... for an acquired order").
# Units under an attack-move are not leashed (``rules.scripted_orders``; docs/design/smac-rules.md).
ACQUIRE_LEASH_RADIUS = 21.0
ACQUIRE_LEASH_RESET_RADIUS = 5.0
ACQUIRE_MOVEMENT_LIMIT = 21.0

# Collision avoidance between ground units every game loop: ORCA (optimal reciprocal collision
# avoidance, van den Berg et al. 2011, the RVO2 library), as SMAClite moves its units (Michalski et
# al. 2023, smaclite/env/rvo2/rvo2.py): time horizon 1 s (``TAU``); a unit standing still does not
# avoid; a moving unit takes half of the avoidance from a moving neighbour and all of it from one
# standing still; overlapping units separate within one loop's step; the neighbours are the units
# it could touch within the horizon (``rules.avoid_collisions``).
ORCA_TIME_HORIZON_S = 1.0


@dataclass(frozen=True)
class UnitStats:
    """One row of spec §8.  ``damage`` is per hit; ``hits`` hits per attack; ``bonus`` is added per
    hit against targets with any attribute in ``bonus_vs``.  ``cooldown_s`` is Normal seconds."""

    name: str
    race: str  # "T", "P" or "Z"
    hp: float
    shield: float
    armor: float
    attributes: int
    speed: float
    radius: float
    damage: float
    bonus: float
    bonus_vs: int
    hits: int
    weapon_range: float
    cooldown_s: float
    max_cooldown: float  # SMAC's state normaliser (§4); Medivac: max energy
    air: bool = False
    hits_air: bool = False  # can target air units
    splash: str = ""  # "", "line" (colossus), "explode" (baneling)
    splash_radius: float = 0.0
    heals: bool = False
    acceleration: float = 0.0  # distance/s^2; 0 = instant (SMAC's _RL units: 1000)
    # When an attack's hits land (``WEAPON_TIMING``): the weapon's damage point (Normal s from the
    # attack's start to its launch), a fixed delay after it, the gap between successive hits, and the
    # missile's mover (start speed, acceleration, top speed; distance/s, /s^2; top speed 0: no missile).
    damage_point_s: float = 0.0
    hit_delay_s: float = 0.0
    hit_gap_s: float = 0.0
    missile_start_speed: float = 0.0
    missile_accel: float = 0.0
    missile_max_speed: float = 0.0

    @property
    def scan_range(self) -> float:
        """Auto-acquire range (edge distance): ``max(MIN_SCAN_RANGE, weapon range + SCAN_RANGE_MARGIN)``;
        a structure (static defence: the spine crawler) ``max(MIN_SCAN_RANGE, weapon range)``."""
        margin = 0.0 if self.attributes & STRUCTURE else SCAN_RANGE_MARGIN
        return max(self.weapon_range + margin, MIN_SCAN_RANGE)

    @property
    def damage_point_loops(self) -> float:
        return self.damage_point_s * LOOPS_PER_SECOND

    @property
    def cooldown_loops(self) -> float:
        return self.cooldown_s * LOOPS_PER_SECOND

    @property
    def speed_per_loop(self) -> float:
        return self.speed / LOOPS_PER_SECOND


# Spec §8, one table; each column's source: docs/design/smac-rules.md, "Units" (life, shields, armour,
# attributes, speed, radius, acceleration: the maps' ``_RL`` UnitData.xml, tests/smac/test_mapdata.py and
# test_rule_sources.py; weapons: Liquipedia's Legacy of the Void unit pages; the page's table is checked
# against this one by test_rule_sources.py).  max_cooldown: SMAC's ``unit_max_cooldown`` (15 for any other
# type: the spine crawler).
UNIT_STATS: dict[str, UnitStats] = {
    s.name: s
    for s in [
        UnitStats("marine", "T", 45, 0, 0, LIGHT | BIO, 2.25, 0.375, 6, 0, 0, 1, 5, 0.861, 15, hits_air=True),
        UnitStats("marauder", "T", 125, 0, 1, ARMORED | BIO, 2.25, 0.5625, 10, 10, ARMORED, 1, 6, 1.5, 25),
        UnitStats("medivac", "T", 150, 0, 1, ARMORED | MECH, 2.75, 0.75, 0, 0, 0, 0, 4, 0.0,
                  MEDIVAC_MAX_ENERGY, air=True, heals=True, acceleration=2.3125),
        UnitStats("stalker", "P", 80, 80, 1, ARMORED | MECH, 2.9531, 0.625, 13, 5, ARMORED, 1, 6, 1.87, 35,
                  hits_air=True),
        UnitStats("zealot", "P", 100, 50, 1, LIGHT | BIO, 2.25, 0.5, 8, 0, 0, 2, 0.1, 1.2, 22),
        UnitStats("colossus", "P", 200, 150, 1, ARMORED | MECH | MASSIVE, 2.25, 1.0, 10, 5, LIGHT, 2, 7, 1.5, 24,
                  splash="line"),
        UnitStats("zergling", "Z", 35, 0, 0, LIGHT | BIO, 2.9531, 0.375, 5, 0, 0, 1, 0.1, 0.696, 11),
        UnitStats("hydralisk", "Z", 80, 0, 0, LIGHT | BIO, 2.25, 0.625, 12, 0, 0, 1, 5, 0.825, 10, hits_air=True),
        UnitStats("baneling", "Z", 30, 0, 0, BIO, 2.5, 0.375, 20, 15, LIGHT, 1, 0.25, 0.0, 1,
                  splash="explode", splash_radius=2.2),
        # 2s_vs_1sc's stock Spine Crawler (rooted, immobile): SC2 data, Normal speed (1.32 s at Faster).
        UnitStats("spine_crawler", "Z", 300, 0, 2, ARMORED | BIO | STRUCTURE, 0.0, 1.0, 25, 5, ARMORED, 1, 7,
                  1.85, 15),
    ]
}


# When each weapon's hits land: the game's own data, SC2 4.6.2.69232 (SMAC's game version), the stock
# weapons the SMAC maps' units link, from the Liberty.SC2Mod the maps depend on (over Core.SC2Mod);
# no later mod of that version overrides these fields.  WeaponData.xml ``DamagePoint`` (the Core
# default 0.167 where a weapon sets none); the effect it launches (EffectData.xml): a direct damage
# effect lands at the damage point, a ``CEffectLaunchMissile`` flies its ``AmmoUnit``'s mover
# (MoverData.xml ``MotionPhases``: Speed, Acceleration, MaxSpeed; ``MissileDefault`` for a missile
# unit with no mover of its own).  Values: name -> (damage point, fixed delay, gap between hits,
# missile start speed, acceleration, top speed), Normal seconds and distance.
WEAPON_TIMING: dict[str, tuple[float, float, float, float, float, float]] = {
    "marine": (0.05, 0.0, 0.0, 0.0, 0.0, 0.0),  # GuassRifle: direct damage (hitscan)
    "marauder": (0.0, 0.0, 0.0, 0.0, 3200.0, 20.0),  # PunisherGrenades -> PunisherGrenadesLM
    "stalker": (0.167, 0.0, 0.0, 0.0, 3200.0, 18.75),  # ParticleDisruptors: StalkerWeapon = MissileDefault
    "zealot": (0.0, 0.0, 0.28, 0.0, 0.0, 0.0),  # PsiBlades -> PsiBladesBurst: hits at 0 and 0.28 s
    # ThermalLances: both beams (ThermalLancesForward/Reverse) hit the target when they expire
    # (ExpireDelay 0.375 s); a unit swept by a beam is hit 0.25 s after its circle's search
    # (ThermalLancesDamageDelay), 0.28-0.59 s after the damage point (COLOSSUS_LANCE_PERIOD_S above)
    "colossus": (0.0832, 0.375, 0.0, 0.0, 0.0, 0.0),
    "zergling": (0.167, 0.0, 0.0, 0.0, 0.0, 0.0),  # Claws: direct damage, Core default damage point
    "hydralisk": (0.208, 0.0, 0.0, 40.0, 0.0, 40.0),  # NeedleSpines -> NeedleSpinesWeapon
    "baneling": (0.0, 0.0, 0.0, 0.0, 0.0, 0.0),  # VolatileBurst: the blast at the caster
    "medivac": (0.0, 0.0, 0.0, 0.0, 0.0, 0.0),  # heals, no weapon
    # ImpalerTentacle -> ImpalerTentacleLM: SpineCrawlerTentacleExtendLong (targets within range 7)
    "spine_crawler": (0.3332, 0.0, 0.0, 12.0, 140.0, 200.0),
}
UNIT_STATS = {
    name: replace(s, **dict(zip(("damage_point_s", "hit_delay_s", "hit_gap_s", "missile_start_speed",
                                 "missile_accel", "missile_max_speed"), WEAPON_TIMING[name])))
    for name, s in UNIT_STATS.items()
}


def unit_stats(name: str) -> UnitStats:
    """The §8 row of unit ``name``; raises ``ValueError`` for an unknown unit."""
    if name not in UNIT_STATS:
        raise ValueError(f"unit name {name!r} is unknown; allowed: {sorted(UNIT_STATS)}")
    return UNIT_STATS[name]
