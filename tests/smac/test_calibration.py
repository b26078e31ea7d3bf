"""``benchmarks/smac_calibration.py``: the paper's table it compares with, its binomial interval and
its two policies' records."""

import math

import pytest
from selfplay.envs.smac import MAP_NAMES


@pytest.fixture(scope="module")
def calib(load_benchmark):
    return load_benchmark("smac_calibration")


def test_paper_table_has_the_14_maps_of_table_2(calib):
    table = calib.PAPER_HEURISTIC
    assert len(table) == 14 and set(table) <= set(MAP_NAMES)
    nonzero = {m: v for m, v in table.items() if v}
    assert nonzero == {"2s3z": 90, "3s5z": 42, "1c3s5z": 81, "10m_vs_11m": 12, "bane_vs_bane": 43}


def test_wilson_interval_hand_computed(calib):
    z = 1.959964
    lo, hi = calib.wilson(0, 100)
    assert lo == 0.0 and math.isclose(hi, z * z / (100 + z * z), rel_tol=1e-9)  # 0.0370
    lo, hi = calib.wilson(50, 100)  # centre 0.5, half-width z * sqrt(0.25/100 + z^2/40000) / (1 + z^2/100)
    half = z * math.sqrt(0.0025 + z * z / 40000) / (1 + z * z / 100)
    assert math.isclose(lo, 0.5 - half) and math.isclose(hi, 0.5 + half) and abs(lo - 0.404) < 1e-3
    with pytest.raises(ValueError, match="n must be positive"):
        calib.wilson(0, 0)


def test_records_count_finished_games(calib):
    """The heuristic's two stalkers lose every game to 2s_vs_1sc's spine crawler (the paper: 0); a
    record counts every finished game of the batch."""
    won, played = calib.heuristic_record("2s_vs_1sc", 4, seed=0)
    assert played >= 4 and won == 0
    won, played = calib.random_record("3m", 4, seed=0)
    assert played >= 4 and 0 <= won <= played
