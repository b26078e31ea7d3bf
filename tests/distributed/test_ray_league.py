"""``selfplay league --ray``: the league as Ray actors finishes, survives a killed rollout
worker and a killed driver, and its records agree exactly afterwards — with the PPO agent (rollouts in
the learner's state) and the AlphaStar agent (chunks streamed to the learner). One local Ray instance."""

from __future__ import annotations

import time

import pandas as pd
import pytest

ray = pytest.importorskip("ray")

from selfplay.evaluation.league import train_league_on_ray  # noqa: E402
from selfplay.training.distributed.league import (  # noqa: E402
    RayLeagueSettings,
    check_league_records,
    run_league_on_ray,
)
from selfplay.training.league_loop import LeagueTrainConfig, LeagueTrainer  # noqa: E402


@pytest.fixture(scope="module")
def ray_instance():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


COMMIT_TIMEOUT = 900  # seconds a test waits for a commit that holds league games before it gives up


def small(**kw) -> LeagueTrainConfig:
    # the default payoff decay (0.99): check_league_records replays matches.csv through it
    settings = dict(league="league:main=1,main_exploiters=1,league_exploiters=1", steps=1024,
                    min_steps=300, max_steps=600, num_envs=16, matches=2, agent_settings={"horizon": 128, "epochs": 1},
                    tensorboard=False)
    return LeagueTrainConfig(**{**settings, **kw})


@pytest.mark.slow  # actor start-ups: about 100 s under a load of 10 on 2 cores
def test_league_on_ray_survives_killed_worker_learner_coordinator_and_driver_with_agreeing_records(ray_instance, tmp_path):
    """One run: a rollout worker is killed (ray.kill) and replaced, a learner is killed (Ray restarts
    it), the coordinator is killed (everything restarts from the last commit), then the driver dies;
    the re-run resumes from the last commit and finishes. After each, the records agree exactly. The
    driver dies only once a commit holds league games (however fast the machine), so the resumed
    records must hold them; the lost worker and the coordinator restart are in ray_events.csv and the
    report."""
    seen: dict = {"stage": 0, "workers": set(), "coordinators": set(), "at": 0, "committed": 0, "since": None}

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
            # wait (polling, bounded) for a commit that holds league games, then kill the driver
            seen["since"] = seen["since"] or time.monotonic()
            if progress["committed_league_games"] > 0:
                seen["committed"] = progress["committed_league_games"]
                raise DriverKilled
            if time.monotonic() - seen["since"] > COMMIT_TIMEOUT:
                raise TimeoutError(f"no commit held league games within {COMMIT_TIMEOUT} s")
            return
        else:
            return
        seen["stage"], seen["at"] = stage + 1, updates

    with pytest.raises(DriverKilled):
        run_league_on_ray(small(), tmp_path, RayLeagueSettings(workers=2, poll_seconds=0.05), on_poll=faults)
    assert seen["stage"] == 3 and {0, 1, 2} <= seen["workers"]  # worker 0 was killed and replaced by worker 2
    counts = check_league_records(tmp_path)
    # the records agree, and the commit the driver died after holds the league games it had seen
    assert counts["games"] - counts["self_play_games"] == counts["payoff_games"] >= seen["committed"] > 0
    events = pd.read_csv(tmp_path / "ray_events.csv")
    lost = events[events["event"] == "worker lost"]
    assert list(lost["worker"]) == [0] and list(lost["replaced_by"]) == [2] and not lost["node_lost"].any()
    assert events["event"].str.startswith("coordinator lost").sum() == 1
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
    report = (tmp_path / "report.md").read_text()
    assert "## The Ray run" in report and "| main_0 |" in report  # the resumed run lost nothing: 0 replaced
    assert summary["replaced_workers"] == 0 and "0 lost and replaced" in report


def test_check_league_records_finds_a_game_missing_from_the_payoff(tmp_path):
    from selfplay.evaluation.league import train_league

    train_league(small(steps=256, min_steps=100, max_steps=200, matches=1), tmp_path)
    check_league_records(tmp_path)  # the single-process league passes the same check
    rows = (tmp_path / "matches.csv").read_text().splitlines()
    (tmp_path / "matches.csv").write_text("\n".join(rows[:-1]) + "\n")
    with pytest.raises(ValueError, match="matches.csv has"):
        check_league_records(tmp_path)


def test_the_end_of_a_run_waits_for_a_lost_workers_node_only_where_it_can_be_gone(monkeypatch):
    """``LeagueDriver._nodes_lost``: a worker lost on the driver's own node (alive: the driver runs on
    it) is recorded at once; one lost on another node still listed alive is asked about again until
    the cluster lists that node dead."""
    import types

    from selfplay.training.distributed import league

    asked = []

    def nodes():
        asked.append(1)
        return [{"NodeID": k, "Alive": v} for k, v in current.items()]

    fake = types.SimpleNamespace(nodes=nodes,
                                 get_runtime_context=lambda: types.SimpleNamespace(get_node_id=lambda: "here"))
    driver = league.LeagueDriver.__new__(league.LeagueDriver)
    driver.ray = fake

    def no_sleep(_):
        raise AssertionError("waited for the driver's own node")

    current = {"here": True, "there": True}
    monkeypatch.setattr(league.time, "sleep", no_sleep)
    driver.events = [{"event": "worker lost", "node": "here", "node_lost": None}]
    driver._nodes_lost(wait_s=3600)
    assert driver.events[0]["node_lost"] is False and len(asked) == 1

    def the_cluster_notices(_):  # the next listing has the node gone
        current["there"] = False

    monkeypatch.setattr(league.time, "sleep", the_cluster_notices)
    driver.events = [{"event": "worker lost", "node": "here", "node_lost": None},
                     {"event": "worker lost", "node": "there", "node_lost": None}]
    driver._nodes_lost(wait_s=3600)
    assert [e["node_lost"] for e in driver.events] == [False, True] and len(asked) == 3


def test_ray_league_settings_refuse_bad_values():
    with pytest.raises(ValueError, match="workers must be an integer ≥ 1"):
        RayLeagueSettings(workers=0)
    with pytest.raises(ValueError, match="max_lag must be an integer ≥ 0"):
        RayLeagueSettings(max_lag=-1)


@pytest.mark.slow  # about 10 s at a low load
def test_league_on_ray_plays_smac_3m_with_the_multi_unit_ppo_agent(ray_instance, tmp_path):
    config = small(env="smac:3m", agent="ppo-rnn", league="league:main=1,main_exploiters=1,league_exploiters=0,decay=1.0",
                   steps=1280, agent_settings={"horizon": 640, "epochs": 1})
    result = run_league_on_ray(config, tmp_path, RayLeagueSettings(workers=2))
    assert result.progress["done"] and result.progress["updates"] >= 4
    counts = check_league_records(tmp_path)
    assert counts["games"] - counts["self_play_games"] == counts["payoff_games"] > 0


@pytest.mark.slow  # actor start-ups (5 at the start, 1 replacement, 1 restart, 5 at the resume): ~50 s at a load of 7
def test_alphastar_league_on_ray_streams_chunks_survives_killed_worker_learner_and_driver(ray_instance, tmp_path):
    """SMAC 3m, the AlphaStar agent (tiny network), 2 rollout workers: a worker is killed (its handed-off
    chunks may die with it: that update is dropped, its games stay counted), a learner is killed (Ray
    restarts it; its update reruns from the committed state), then the driver dies; the re-run resumes
    and finishes. The records agree exactly after each; players are leased again while an update is in
    flight (at most ``max_lag``), and the lag is measured per update."""
    from tests.alphastar_rl.conftest import make_sl_checkpoint

    sl = make_sl_checkpoint(tmp_path / "sl.pt")
    config = small(env="smac:3m", agent="alphastar", league="league:main=1,main_exploiters=1,league_exploiters=0,decay=1.0",
                   steps=256, min_steps=60, max_steps=120, num_envs=4,
                   agent_settings={"sl_checkpoint": sl, "chunk_length": 4, "batch_chunks": 4})
    out = tmp_path / "run"
    seen: dict = {"stage": 0, "workers": set(), "at": 0, "progress": None, "since": None}

    class DriverKilled(Exception):
        pass

    def faults(progress, actors):
        seen["workers"] |= set(actors["workers"])
        seen["progress"] = progress
        stage, updates = seen["stage"], progress["updates"]
        if stage == 0 and updates >= 1 and 0 in actors["workers"]:
            ray.kill(actors["workers"][0])
        elif stage == 1 and 2 in actors["workers"] and updates >= seen["at"] + 1:
            ray.kill(actors["learners"]["main_0"], no_restart=False)
        elif stage == 2 and updates >= seen["at"] + 1 and not progress["done"]:
            seen["since"] = seen["since"] or time.monotonic()  # kill the driver once a commit holds league games
            if progress["committed_league_games"] > 0:
                raise DriverKilled
            if time.monotonic() - seen["since"] > COMMIT_TIMEOUT:
                raise TimeoutError(f"no commit held league games within {COMMIT_TIMEOUT} s")
            return
        else:
            return
        seen["stage"], seen["at"] = stage + 1, updates

    settings = RayLeagueSettings(workers=2, poll_seconds=0.05, max_lag=1)
    with pytest.raises(DriverKilled):
        run_league_on_ray(config, out, settings, on_poll=faults)
    assert seen["stage"] == 2 and {0, 1, 2} <= seen["workers"]  # worker 0 was killed and replaced by worker 2
    assert seen["progress"]["max_lag_at_lease"] <= 1
    assert LeagueTrainer(config, out).load()  # as any resume: rewrites exports a kill cut after the last commit
    counts = check_league_records(out)
    # the records agree, and the commit the driver died after holds league games
    assert counts["games"] - counts["self_play_games"] == counts["payoff_games"] >= seen["progress"]["committed_league_games"] > 0
    before, updates_before = pd.read_csv(out / "matches.csv"), counts["updates"]

    result = run_league_on_ray(config, out, settings)
    progress = result.progress
    assert progress["done"] and progress["handoffs"] == progress["finished"] + progress["dropped_updates"]
    assert progress["max_lag_at_lease"] <= 1
    pd.testing.assert_frame_equal(pd.read_csv(out / "matches.csv").iloc[:len(before)], before)
    counts = check_league_records(out)
    assert counts["games"] - counts["self_play_games"] == counts["payoff_games"] > 0
    assert counts["updates"] > updates_before  # the re-run resumed and went on
    trainer = LeagueTrainer(config, out)
    assert trainer.load() and all(p.steps >= 256 for p in trainer.players)
    metrics = pd.read_csv(out / "metrics.csv")
    assert (metrics["policy_lag"] >= 0).all() and (metrics["chunks"] >= 1).all()
    assert counts["menagerie"] >= 3 and trainer.learners["main_0"].samples > 0
