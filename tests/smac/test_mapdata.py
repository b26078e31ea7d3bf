"""The map reader (envs/smac/mapdata/read_maps.py) and the derived data the project ships."""

import json
from pathlib import Path

import pytest
from selfplay.envs.smac.mapdata import read_maps

MAPS_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "smac_maps"


def test_shipped_data_equals_what_the_reader_gives_on_the_map_files():
    pytest.importorskip("mpyq", reason="mpyq (dev extra) reads the .SC2Map archives")
    if not MAPS_DIR.is_dir():
        pytest.skip(f"the SMAC map files are not at {MAPS_DIR}")
    assert read_maps.dumps(read_maps.read_maps(MAPS_DIR)) == read_maps.DATA_FILE.read_text()


def test_shipped_data_hand_facts():
    """Facts read by hand from the archives (Objects, MapScript.galaxy, t3CellFlags, MapInfo)."""
    d = json.loads(read_maps.DATA_FILE.read_text())
    assert len(d) == 23
    assert all(m["map_size"] == [32, 32] and m["playable"] == [0, 0, 32, 32] for m in d.values())
    c = d["corridor"]
    assert c["enemy_order"] == {"kind": "attack_point", "point": [4.47, 4.3298]}
    assert [(x["count"], x["unit"], x["player"]) for x in c["creates"]] == [(6, "Zealot_RL", 1), (24, "Zergling", 2)]
    assert c["pathing"][12][13] == "1" and c["pathing"][11][13] == "0"  # the 2-cell choke at y = 12..13
    z = d["2c_vs_64zg"]
    assert z["enemy_order"]["kind"] == "attack_units" and z["enemy_order"]["members"] == [0, 1]
    assert all(z["pathing"][x][12] == "0" for x in range(4, 28)) and z["pathing"][2][12] == "1"  # the ravine wall
    assert d["2m_vs_1z"]["enemy_order"] == {"kind": "attack_point_between", "points": [[13.0, 12.0], [19.0, 12.0]]}
    assert d["2s_vs_1sc"]["enemy_order"] is None
    assert d["3m"]["pathing"][0] == "0" * 8 + "1" * 16 + "0" * 8
    assert d["MMM"]["unit_data"]["Medivac_RL"]["acceleration"] == 2.3125
    assert d["so_many_baneling"]["registry"]["limit"] == 100


def test_reader_rejects_a_folder_without_maps(tmp_path):
    with pytest.raises(ValueError, match="no .SC2Map"):
        read_maps.read_maps(tmp_path)


def test_unit_table_agrees_with_the_maps_own_unit_data():
    """Every field the maps' "_RL" unit copies set (UnitData.xml) equals the simulator's unit table
    (units.py); acceleration 1000 is the table's "instant" (0)."""
    from selfplay.envs.smac.maps import game_unit_name
    from selfplay.envs.smac.units import (
        MEDIVAC_ENERGY_REGEN_PER_S,
        MEDIVAC_MAX_ENERGY,
        MEDIVAC_START_ENERGY,
        SHIELD_REGEN_DELAY_S,
        SHIELD_REGEN_PER_S,
        UNIT_STATS,
        ZERG_REGEN_PER_S,
    )

    d = json.loads(read_maps.DATA_FILE.read_text())
    checked = 0
    for m in d.values():
        for uid, u in m["unit_data"].items():
            if not uid.endswith("_RL"):
                continue
            s = UNIT_STATS[game_unit_name(uid)]
            expect = {"life_max": s.hp, "shields_max": s.shield, "life_armor": s.armor, "speed": s.speed,
                      "radius": s.radius, "acceleration": s.acceleration or 1000.0,
                      "shield_regen": SHIELD_REGEN_PER_S, "shield_regen_delay": SHIELD_REGEN_DELAY_S,
                      "life_regen": ZERG_REGEN_PER_S, "energy_start": MEDIVAC_START_ENERGY,
                      "energy_max": MEDIVAC_MAX_ENERGY, "energy_regen": MEDIVAC_ENERGY_REGEN_PER_S}
            for field, value in expect.items():
                if field in u:
                    assert u[field] == pytest.approx(value), (uid, field)
                    checked += 1
            planes = u.get("planes", {})  # the colossus is in both planes: ground weapons hit it
            assert (planes.get("Air", 0) == 1 and planes.get("Ground", 0) == 0) == s.air, uid
    assert checked > 150
