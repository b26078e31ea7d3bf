"""A run records how it was trained (``mode`` in config.yaml and the committed state); evaluation reads
that marker, not the folders, and runs written before the marker existed follow a stated rule."""

from __future__ import annotations

import pytest
import yaml

from selfplay.evaluation.runs import run_mode
from selfplay.training.loop import SelfPlayTrainer, TrainConfig, train
from selfplay.training.rundir import RunDir, RunDirError
from selfplay.utils.io import read_json


def tiny(**kw) -> TrainConfig:
    base = dict(episodes=32, num_envs=16, checkpoints=2, seed=3, agent_settings={"horizon": 64, "epochs": 1},
                tensorboard=False)
    return TrainConfig(**{**base, **kw})


def test_a_run_records_its_mode_and_evaluation_follows_the_marker_not_the_folders(tmp_path):
    from selfplay.evaluation.compare import evaluate_run_dir

    train(tiny(), tmp_path)
    assert yaml.safe_load((tmp_path / "config.yaml").read_text())["mode"] == "self-play"
    (tmp_path / "checkpoints" / "side0").mkdir()  # a stray folder once taken for a learner per side
    summary = evaluate_run_dir(tmp_path, matches=1, figures=False)
    assert summary["checkpoints"] == 2 and "side0_value" not in summary


def test_league_and_two_sided_trainers_record_their_mode(tmp_path):
    from selfplay.training.league_loop import LeagueTrainConfig, LeagueTrainer
    from selfplay.training.two_sided import TwoSidedTrainer

    league = LeagueTrainer(LeagueTrainConfig(num_envs=2, tensorboard=False), tmp_path / "league")
    assert league.run_config["mode"] == "league"
    sides = TwoSidedTrainer(tiny(env="smac:2m_vs_1z", num_envs=2), tmp_path / "sides")
    assert sides.run_config["mode"] == "two-sided"


def test_the_rule_for_runs_written_before_the_marker_and_a_bad_marker():
    assert run_mode({"mode": "two-sided", "env": "rirrps"}) == "two-sided"  # the marker decides
    assert run_mode({"env": "rirrps", "scheme": "naive"}) == "self-play"
    assert run_mode({"env": "smac:3m", "scheme": "naive"}) == "self-play"  # a symmetric map
    assert run_mode({"env": "smac:2m_vs_1z", "scheme": "naive"}) == "two-sided"  # an asymmetric map
    assert run_mode({"env": "rirrps", "league": "league:main=1"}) == "league"
    with pytest.raises(RunDirError, match="mode must be one of self-play, two-sided, league, got 'sides'"):
        run_mode({"mode": "sides", "env": "rirrps"})


def test_a_run_committed_without_a_mode_resumes(tmp_path):
    config = tiny()
    train(config, tmp_path)
    run = RunDir(tmp_path)
    state = run.load_commit()
    state["config"] = {k: v for k, v in state["config"].items() if k != "mode"}  # as committed before the marker
    manifest = read_json(run.manifest)
    files = [tmp_path / name for name in manifest["files"] if name != manifest["state"]]  # the policy files
    run.commit(state, files)
    trainer = SelfPlayTrainer(config, tmp_path)
    assert trainer.load() and trainer.episodes == 32
    with pytest.raises(RunDirError, match="seed: 3 in the directory, 4 now"):  # other settings are still compared
        SelfPlayTrainer(tiny(seed=4), tmp_path).load()
