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
    settings = dict(league="league:main=1,main_exploiters=1,league_exploiters=1,decay=1.0", steps=1024,
                    min_steps=300, max_steps=600, num_envs=16, matches=2, agent_settings={"horizon": 128, "epochs": 1},
                    tensorboard=False)
    return LeagueTrainConfig(**{**settings, **kw})


@pytest.mark.slow  # actor start-ups: about 100 s under a load of 10 on 2 cores
def test_league_on_ray_survives_killed_worker_learner_coordinator_and_driver_with_agreeing_records(ray_instance, tmp_path):
    """One run: a rollout worker is killed (ray.kill) and replaced, a learner is killed (Ray restarts
    it), the coordinator is killed (everything restarts from the last commit), then the driver dies;
    the re-run resumes from the last commit and finishes. After each, the records agree exactly."""
    seen: dict = {"stage": 0, "workers": set(), "coordinators": set(), "at": 0}

    class DriverKilled(Exception):
        pass

    def faults(progress, actors):
        seen["workers"] |= set(actors["workers"])
        seen["coordinators"].add(actors["coordinator"])
        stage, updates = seen["stage"], progress["updates"]
        if stage == 0 and updates >= 2 and 0 in actors["workers"]:
            ray.kill(actors["workers"][0])
        elif stage == 1 and 2 in actors["workers"] and updates >= seen["at"] + 2:
            ray.kill(actors["learners"]["main_0"], no_restart=False)
        elif stage == 2 and updates >= seen["at"] + 2:
            ray.kill(actors["coordinator"])
        elif stage == 3 and len(seen["coordinators"]) == 2 and updates >= seen["at"] + 2:
            raise DriverKilled
        else:
            return
        seen["stage"], seen["at"] = stage + 1, updates

    with pytest.raises(DriverKilled):
        run_league_on_ray(small(), tmp_path, RayLeagueSettings(workers=2, poll_seconds=0.05), on_poll=faults)
    assert seen["stage"] == 3 and {0, 1, 2} <= seen["workers"]  # worker 0 was killed and replaced by worker 2
    counts = check_league_records(tmp_path)
    assert counts["games"] - counts["self_play_games"] == counts["payoff_games"] > 0
    before = pd.read_csv(tmp_path / "matches.csv")

    summary = train_league_on_ray(small(), tmp_path, RayLeagueSettings(workers=2))
    after = pd.read_csv(tmp_path / "matches.csv")
    pd.testing.assert_frame_equal(after.iloc[:len(before)], before)  # the committed games stay as they were
    counts = check_league_records(tmp_path)
    assert counts["games"] - counts["self_play_games"] == counts["payoff_games"] > len(before) - counts["self_play_games"]
    trainer = LeagueTrainer(small(), tmp_path)
    assert trainer.load()
    assert all(p.steps >= 1024 for p in trainer.players)  # every player reached its budget
    assert counts["menagerie"] >= 2 and summary["historicals"] == counts["menagerie"]  # the rules took checkpoints
    assert (tmp_path / "report.md").is_file()


def test_check_league_records_finds_a_game_missing_from_the_payoff(tmp_path):
    from selfplay.training.league_loop import train_league

    train_league(small(steps=256, min_steps=100, max_steps=200, matches=1), tmp_path)
    check_league_records(tmp_path)  # the single-process league passes the same check
    rows = (tmp_path / "matches.csv").read_text().splitlines()
    (tmp_path / "matches.csv").write_text("\n".join(rows[:-1]) + "\n")
    with pytest.raises(ValueError, match="matches.csv has"):
        check_league_records(tmp_path)


def test_league_on_ray_refuses_what_it_cannot_run(tmp_path):
    with pytest.raises(ValueError, match="agent must be one of"):
        run_league_on_ray(LeagueTrainConfig(env="smac:3m", agent="alphastar"), tmp_path)
    with pytest.raises(ValueError, match="workers must be an integer ≥ 1"):
        RayLeagueSettings(workers=0)
    assert not any(tmp_path.iterdir())


@pytest.mark.slow  # about 10 s at a low load
def test_league_on_ray_plays_smac_3m_with_the_multi_unit_ppo_agent(ray_instance, tmp_path):
    config = small(env="smac:3m", agent="ppo-rnn", league="league:main=1,main_exploiters=1,league_exploiters=0,decay=1.0",
                   steps=1280, agent_settings={"horizon": 640, "epochs": 1})
    result = run_league_on_ray(config, tmp_path, RayLeagueSettings(workers=2))
    assert result.progress["done"] and result.progress["updates"] >= 4
    counts = check_league_records(tmp_path)
    assert counts["games"] - counts["self_play_games"] == counts["payoff_games"] > 0
