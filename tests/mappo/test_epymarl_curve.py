"""Reading an EPyMARL run (``benchmarks/epymarl_curve.py``): the sacred files EPyMARL writes, made by hand
here, so that the suite does not need EPyMARL."""

import json
import math
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def curve(load_benchmark):
    return load_benchmark("epymarl_curve")


def np_scalar(x):
    """How sacred's jsonpickle writes a numpy.float64 into metrics.json."""
    return {"dtype": "float64", "py/object": "numpy.float64", "value": x}


def make_run(path: Path, test_nepisode=32, batch_size_run=10):
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"start_time": "2026-12-03T05:32:00.000000"}))
    (path / "config.json").write_text(json.dumps({"name": "mappo", "seed": 0, "runner": "parallel",
                                                  "batch_size_run": batch_size_run, "test_nepisode": test_nepisode}))
    stamps = ["2026-12-03T05:32:10.000000", "2026-12-03T05:33:50.000000", "2026-12-03T05:35:30.500000"]
    (path / "metrics.json").write_text(json.dumps({
        "test_battle_won_mean": {"steps": [640, 50_910, 100_922], "timestamps": stamps, "values": [0.0, 0.2, 0.5]},
        "test_return_mean": {"steps": [640, 50_910, 100_922], "timestamps": stamps,
                             "values": [np_scalar(5.0), np_scalar(9.5), np_scalar(12.0)]},
        "battle_won_mean": {"steps": [10_000, 50_000, 60_000], "timestamps": stamps, "values": [0.1, 0.15, 0.3]},
    }))
    return path


def test_rows_follow_epymarls_logging(curve, tmp_path):
    rows = curve.read_run(make_run(tmp_path / "1"))
    assert [r["step"] for r in rows] == [640, 50_910, 100_922]
    assert [r["test_win_rate"] for r in rows] == [0.0, 0.2, 0.5]
    assert [r["test_return"] for r in rows] == [5.0, 9.5, 12.0]  # numpy scalars unpacked
    # 32 // 10 = 3 test runs of 10 games each
    assert all(r["test_episodes"] == 30 for r in rows)
    # last training rate logged at or before each evaluation; none before step 10 000
    assert math.isnan(rows[0]["train_win_rate"]) and rows[1]["train_win_rate"] == 0.15
    assert rows[2]["train_win_rate"] == 0.3
    assert [r["seconds"] for r in rows] == [10.0, 110.0, 210.5]
    # (100 922 - 640) game-steps over (210.5 - 10) s
    assert curve.steps_per_second(rows) == pytest.approx(100_282 / 200.5)


def test_fewer_test_games_than_envs_is_one_run_of_all_envs(curve, tmp_path):
    rows = curve.read_run(make_run(tmp_path / "1", test_nepisode=4, batch_size_run=10))
    assert rows[0]["test_episodes"] == 10


def test_pooled_window_weights_games(curve):
    rows = [{"step": 50_000, "test_win_rate": 1.0, "test_return": 20.0, "test_episodes": 100},
            {"step": 100_000, "test_win_rate": 0.1, "test_return": 4.0, "test_episodes": 100},
            {"step": 150_000, "test_win_rate": 0.4, "test_return": 10.0, "test_episodes": 50}]
    rate, games = curve.pooled(rows, 80_000, 400_000)
    assert games == 150 and rate == pytest.approx((10 + 20) / 150)
    # the return pools the same way, weighted by games: (100 * 4 + 50 * 10) / 150, not the plain mean 7
    assert curve.pooled(rows, 80_000, 400_000, "test_return") == (pytest.approx(6.0), 150)
    assert curve.pooled(rows, 500_000, 600_000)[1] == 0


def test_csv_round_trip(curve, tmp_path):
    rows = curve.read_run(make_run(tmp_path / "1"))
    curve.write_csv(rows, tmp_path / "out" / "run.csv")
    lines = (tmp_path / "out" / "run.csv").read_text().splitlines()
    assert lines[0] == "step,test_win_rate,test_return,test_episodes,train_win_rate,seconds"
    assert lines[2] == "50910,0.2,9.5,30,0.15,110.0"


def test_not_a_run_directory_is_named(curve, tmp_path):
    with pytest.raises(ValueError, match="run_dir .*no metrics.json"):
        curve.read_run(tmp_path)
    run = make_run(tmp_path / "2")
    (run / "metrics.json").write_text(json.dumps({"battle_won_mean": {"steps": [], "timestamps": [], "values": []}}))
    with pytest.raises(ValueError, match="'test_battle_won_mean'"):
        curve.read_run(run)
    with pytest.raises(ValueError, match="rows"):
        curve.steps_per_second([{"step": 0, "seconds": 0.0}])
