"""The map reader (envs/smac/mapdata/read_maps.py) and the derived data the project ships."""

import json
from pathlib import Path

import pytest

from envs.smac.mapdata import read_maps

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
