import csv

import numpy as np
import pytest

from selfplay.evaluation.league import evaluate_league
from selfplay.training.league_loop import LeagueTrainConfig, LeagueTrainer


def test_league_trains_checkpoints_every_player_type_and_matchmaking_follows_the_rules(tmp_path):
    cfg = LeagueTrainConfig(steps=6400, min_steps=1000, max_steps=2000, num_envs=32, matches=4,
                            agent_settings={"horizon": 640, "epochs": 2})
    trainer = LeagueTrainer(cfg, tmp_path)
    trainer.train()
    league = trainer.league
    for name in league.players:
        assert len(league.historicals(parent=name)) >= 2, name  # at least every max_steps
    # main exploiters reset to the starting policy at every checkpoint; main players never do
    resets = {(m["player"], m["checkpoint"]): m["reset"] for m in trainer.metrics}
    assert all(r == 1 for (p, c), r in resets.items() if p.startswith("main_exploiter") and c == 1)
    assert all(r == 0 for (p, c), r in resets.items() if p.startswith("main_0"))
    # the main exploiter only ever plays the main player itself or its historicals
    kinds = {row[1] for row in trainer.matchmaking_rows() if row[0] == "main_exploiter_0" and row[2] > 0}
    assert kinds <= {"main", "historical:main"}
    # measured frequencies agree with the rules' expectation at draw time
    for player, kind, drawn, measured, expected in trainer.matchmaking_rows():
        total = sum(r[2] for r in trainer.matchmaking_rows() if r[0] == player)
        assert abs(measured - expected) < 4 * np.sqrt(max(expected * (1 - expected), 1e-4) / total) + 0.01, (player, kind)
    summary = evaluate_league(trainer)
    assert summary["historicals"] == len(league.menagerie) and summary["nash_support"] >= 1
    report = (tmp_path / "report.md").read_text()
    assert "measured" in report and "winrate" in report
    with open(tmp_path / "matches.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["player"] for r in rows} == set(league.players)


def test_league_resumes_from_its_run_directory(tmp_path):
    cfg = LeagueTrainConfig(steps=1280, min_steps=500, max_steps=1000, num_envs=32, matches=2,
                            agent_settings={"horizon": 640, "epochs": 1})
    first = LeagueTrainer(cfg, tmp_path)
    first.train()
    again = LeagueTrainer(LeagueTrainConfig(**{**cfg.__dict__, "agent_settings": dict(cfg.agent_settings)}), tmp_path)
    assert again.load()
    assert again.steps == first.steps and len(again.league.menagerie) == len(first.league.menagerie)
    assert again.league.payoff.to_dict() == first.league.payoff.to_dict()
    with pytest.raises(ValueError, match="another configuration"):
        LeagueTrainer(LeagueTrainConfig(**{**cfg.__dict__, "seed": 9}), tmp_path).load()


def test_league_on_smac_reports_each_checkpoint_against_the_scripted_ai(tmp_path):
    cfg = LeagueTrainConfig(env="smac:3m", league="league:main=1,main_exploiters=1,league_exploiters=0",
                            steps=1280, min_steps=300, max_steps=600, num_envs=16, matches=2,
                            agent_settings={"horizon": 320, "epochs": 1})
    trainer = LeagueTrainer(cfg, tmp_path)
    trainer.train()
    summary = evaluate_league(trainer)
    assert {"vs_scripted_best_main", "vs_scripted_best_main_exploiter"} <= set(summary)
    assert "scripted AI" in (tmp_path / "report.md").read_text()
