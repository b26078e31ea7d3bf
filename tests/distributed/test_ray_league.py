"""``selfplay league --ray`` (issue 19): the league as Ray actors finishes, survives a killed rollout
worker and a killed driver, and its records agree exactly afterwards. One local Ray instance."""

from __future__ import annotations

import pandas as pd
import pytest

ray = pytest.importorskip("ray")

from selfplay.training.distributed.league import (  # noqa: E402
    RayLeagueSettings,
    check_league_records,
    run_league_on_ray,
    train_league_on_ray,
)
from selfplay.training.league_loop import LeagueTrainConfig, LeagueTrainer  # noqa: E402


@pytest.fixture(scope="module")
def ray_instance():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def small(**kw) -> LeagueTrainConfig:
    # decay=1: the payoff's game counts are plain counts, comparable with matches.csv
    return LeagueTrainConfig(league="league:main=1,main_exploiters=1,league_exploiters=1,decay=1.0", steps=1024,
                             min_steps=300, max_steps=600, num_envs=16, matches=2, ppo={"horizon": 128, "epochs": 1},
                             tensorboard=False, **kw)


def test_league_on_ray_survives_a_killed_worker_and_its_records_agree(ray_instance, tmp_path):
    killed = []

    def kill_worker_zero(progress, workers):
        if not killed and progress["updates"] >= 2 and 0 in workers:
            killed.append(progress["updates"])
            ray.kill(workers[0])

    result = run_league_on_ray(small(), tmp_path, RayLeagueSettings(workers=2, poll_seconds=0.05), on_poll=kill_worker_zero)
    assert killed and result.restarts == 1
    counts = check_league_records(tmp_path)
    assert counts["games"] - counts["self_play_games"] == counts["payoff_games"] > 0
    trainer = LeagueTrainer(small(), tmp_path)
    assert trainer.load()
    assert all(p.steps >= 1024 for p in trainer.players)  # every player reached its budget on the survivors
    assert counts["menagerie"] >= 2  # checkpoints were taken by the rules


def test_league_on_ray_resumes_after_the_driver_dies_and_reports(ray_instance, tmp_path):
    class DriverKilled(Exception):
        pass

    def die(progress, workers):
        if progress["updates"] >= 3:
            raise DriverKilled

    with pytest.raises(DriverKilled):
        run_league_on_ray(small(), tmp_path, RayLeagueSettings(workers=2, poll_seconds=0.05), on_poll=die)
    check_league_records(tmp_path)
    before = pd.read_csv(tmp_path / "matches.csv")
    assert len(before) > 0
    summary = train_league_on_ray(small(), tmp_path, RayLeagueSettings(workers=2))
    after = pd.read_csv(tmp_path / "matches.csv")
    pd.testing.assert_frame_equal(after.iloc[:len(before)], before)  # the committed games stay as they were
    check_league_records(tmp_path)
    assert (tmp_path / "report.md").is_file() and summary["historicals"] >= 2
