"""The simulator's constants tied to their sources (docs/design/smac-rules.md, "Sources audit"): the map
files' own unit data (SMAC's and SMACv2's ``_RL`` units, as shipped in ``mapdata/*.json``), SMAC's code,
and the rules page's unit table, so that the code, the page and the data cannot drift apart."""

import json
import re
from pathlib import Path

import pytest
from selfplay.envs.smac.engine import COLLIDE_COLOSSUS, COLLIDE_FLYING, COLLIDE_GROUND, BattleEngine
from selfplay.envs.smac.mapdata import read_maps
from selfplay.envs.smac.maps import SMACV2_DATA_FILE, game_unit_name, get_map
from selfplay.envs.smac.units import (
    ARMORED,
    BIO,
    LIGHT,
    MASSIVE,
    MECH,
    MEDIVAC_MAX_ENERGY,
    STRUCTURE,
    UNIT_STATS,
    unit_stats,
)

RULES_PAGE = Path(__file__).resolve().parents[2] / "docs" / "design" / "smac-rules.md"
# UnitData.xml ``Attributes`` index -> our bit (units.py)
MAP_ATTRIBUTES = {"Light": LIGHT, "Armored": ARMORED, "Biological": BIO, "Mechanical": MECH, "Massive": MASSIVE,
                  "Structure": STRUCTURE}
# UnitData.xml ``Collide`` index -> the engine's collision flag; the others (ForceField, Structure) meet no
# mobile unit of these maps
MAP_COLLIDE = {"Ground": COLLIDE_GROUND, "Colossus": COLLIDE_COLOSSUS, "Flying": COLLIDE_FLYING}


def rl_units() -> list[tuple[str, str, dict]]:
    """(data file's map, unit id, fields) of every ``_RL`` unit of the SMAC maps and SMACv2's 32x32_flat."""
    out = []
    for path in (read_maps.DATA_FILE, SMACV2_DATA_FILE):
        for name, m in json.loads(path.read_text()).items():
            out += [(name, uid, u) for uid, u in m["unit_data"].items() if uid.endswith("_RL")]
    return out


def test_attributes_passivity_and_target_priority_are_the_maps():
    """Attributes (bonus damage, heal targets) equal each ``_RL`` unit's ``Attributes``; every ``_RL`` unit
    is ``DefaultAcquireLevel`` Passive with ``Response`` Nothing (the agents' units never acquire nor
    respond: ``rules.fire_weapons``); every ``AttackTargetPriority`` is 20, so the acquisition needs no
    priority step (``rules.scripted_orders``)."""
    units = rl_units()
    assert {game_unit_name(uid) for _, uid, _ in units} == set(UNIT_STATS) - {"spine_crawler"}
    for name, uid, u in units:
        bits = sum(MAP_ATTRIBUTES[a] for a, on in u["attributes"].items() if on)
        assert bits == unit_stats(game_unit_name(uid)).attributes, (name, uid)
        assert (u["acquire_level"], u["response"], u["target_priority"]) == ("Passive", "Nothing", 20.0), (name, uid)
    # the spine crawler (stock unit, no map data): a structure, so its scan range is its weapon range
    sc = unit_stats("spine_crawler")
    assert sc.attributes & STRUCTURE and sc.scan_range == sc.weapon_range == 7.0


@pytest.mark.parametrize("map_name", ["MMM", "1c3s5z", "bane_vs_bane", "6h_vs_8z"])
def test_collision_flags_are_the_maps(map_name):
    """Two units take part in each other's collision avoidance iff their map ``Collide`` flags share
    Ground, Colossus or Flying (the engine's ``collide_mask``); the four maps hold all nine unit types
    (the enemy's stock units read with their ``_RL`` copies' flags: the same on every map)."""
    flags: dict[str, int] = {}
    for _, uid, u in rl_units():
        f = sum(MAP_COLLIDE.get(k, 0) for k, on in u["collide"].items() if on)
        assert flags.setdefault(game_unit_name(uid), f) == f, uid
    engine = BattleEngine(get_map(map_name), 1)
    for i, a in enumerate(engine.unit_names):
        assert int(engine.collide_mask[i]) == flags[a], (map_name, a)
        for j, b in enumerate(engine.unit_names):
            collide = bool(int(engine.collide_mask[i]) & int(engine.collide_mask[j]))
            assert collide == bool(flags[a] & flags[b]), (map_name, a, b)


def _number(cell: str) -> float:
    """A table cell's number; "—" (none, with or without a note) and "immobile" read 0."""
    cell = cell.strip()
    return 0.0 if cell.startswith("—") or cell == "immobile" else float(cell)


def test_the_rules_page_unit_table_is_the_code():
    """Every row of the rules page's unit table (life, shield, armour, attributes, speed, radius, damage
    x hits (+bonus), range, cooldown) equals ``units.UNIT_STATS``: the page is where each value's source
    is named, so a value changed in one place and not the other fails here."""
    text = RULES_PAGE.read_text()
    section = text.split("## Units (one row per type", 1)[1]
    table = section[section.index("\n| unit |"):].split("\n\n", 1)[0]
    rows = [r for r in table.splitlines() if r.startswith("| ") and not r.startswith("| unit")]
    seen = set()
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        name = cells[0].split(" (")[0].replace(" ", "_")
        s = unit_stats(name)
        seen.add(name)
        life, shield, armour = map(_number, cells[1:4])
        attrs = sum({"light": LIGHT, "armored": ARMORED, "bio": BIO, "mech": MECH, "massive": MASSIVE,
                     "structure": STRUCTURE}[a.strip()] for a in cells[4].split(","))
        assert (life, shield, armour, attrs) == (s.hp, s.shield, s.armor, s.attributes), name
        assert (_number(cells[5]), _number(cells[6])) == (s.speed, s.radius), name
        weapon = re.match(r"(\d+) × (\d+)(?: \(\+(\d+) (\w+)\))?", cells[7])
        if s.heals:
            assert weapon is None and "heals" in cells[7], name
        else:
            dmg, hits, bonus, vs = weapon.groups()
            assert (float(dmg), int(hits), float(bonus or 0)) == (s.damage, s.hits, s.bonus), name
            assert ({"light": LIGHT, "armored": ARMORED}[vs] if vs else 0) == s.bonus_vs, name
        assert (_number(cells[8]), _number(cells[9])) == (s.weapon_range, s.cooldown_s), name
    assert seen == set(UNIT_STATS)


def test_max_cooldown_is_smacs_unit_max_cooldown():
    """SMAC's ``unit_max_cooldown`` (``starcraft2.py``): marine 15, marauder 25, medivac 200 (max energy),
    stalker 35, zealot 22, colossus 24, hydralisk 10, zergling 11, baneling 1, any other type 15 (the
    ``switcher.get`` default: the spine crawler)."""
    smac = {"marine": 15, "marauder": 25, "medivac": 200, "stalker": 35, "zealot": 22, "colossus": 24,
            "hydralisk": 10, "zergling": 11, "baneling": 1, "spine_crawler": 15}
    assert {n: s.max_cooldown for n, s in UNIT_STATS.items()} == smac
    assert unit_stats("medivac").max_cooldown == MEDIVAC_MAX_ENERGY


def test_smacv2_unit_ranges_are_the_unit_data():
    """SMACv2's per-unit ranges (``use_unit_ranges``; its ``unit_shoot_range`` / ``unit_sight_range``
    tables, ``smacv2_features``): the shoot ranges are the unit table's weapon ranges (the Medivac's heal
    range 4), the sight ranges the maps' ``Sight`` of the ``_RL`` units."""
    from selfplay.envs.smac.smacv2_features import V2_SHOOT_RANGE, V2_SIGHT_RANGE

    assert V2_SHOOT_RANGE == {n: unit_stats(n).weapon_range for n in V2_SHOOT_RANGE}
    sight = {}
    for _, uid, u in rl_units():
        assert sight.setdefault(game_unit_name(uid), u["sight"]) == u["sight"], uid
    assert V2_SIGHT_RANGE == sight
