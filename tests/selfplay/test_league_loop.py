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
    report = (tmp_path / "report.md").read_text()
    assert "scripted AI" in report
    head = report.split("## Historicals per player")[0]  # the answer comes first, under the title
    assert "## The answer: the best player per measure" in head
    assert "- **vs scripted AI** (higher is better): **" in head and "over 50 games" in head
    assert "- **vs starting policy** (higher is better): **" in head and "over 4 games" in head
    assert "counts ½" in report
    # the main player's final weights and the historicals' Nash mixture against every panel member, as compare
    members = ("builtin", "heuristic", "kiting", "focus_weakest", "regroup")
    assert {f"panel_{m}_{who}" for m in members for who in ("final", "nash")} <= set(summary)
    assert all(summary[f"panel_{m}_final"] in {k / 20 for k in range(21)} for m in members)  # 20 games each
    assert "## Against the panel of fixed opponents" in report and "`final`: main_0's weights" in report
    assert (tmp_path / "evaluation" / "panel.csv").is_file()


def test_league_records_replay_the_decayed_payoff_exactly(tmp_path):
    """With the league's default decay (0.99 here), ``check_league_records`` replays matches.csv through
    a fresh decayed payoff and finds the committed table exactly; a single changed score is found."""
    from collections import Counter

    from selfplay.evaluation.league import train_league
    from selfplay.training.distributed.league import check_league_records

    cfg = LeagueTrainConfig(league="league:main=1,main_exploiters=1,league_exploiters=1,decay=0.99", steps=256,
                            min_steps=100, max_steps=200, num_envs=16, matches=1, tensorboard=False,
                            agent_settings={"horizon": 128, "epochs": 1})
    train_league(cfg, tmp_path)
    counts = check_league_records(tmp_path)
    assert counts["payoff_games"] == counts["games"] - counts["self_play_games"] > 0
    # every player's last num_envs games were drawn but still running when training ended: never finished
    from selfplay.training.distributed.league_report import drawn_and_finished

    table = drawn_and_finished(tmp_path)
    assert len(table) == 3 and (table["unfinished"] == cfg.num_envs).all()
    # hand-check the pair with the most games: replaying them by the update rule gives the decayed counts
    trainer = LeagueTrainer(cfg, tmp_path)
    assert trainer.load()
    payoff = trainer.league.payoff
    assert payoff.decay == 0.99
    rows = [r for r in csv.DictReader(open(tmp_path / "matches.csv")) if r["player"] != r["opponent"]]
    (home, away), n = Counter((r["player"], r["opponent"]) for r in rows).most_common(1)[0]
    assert n >= 2
    away_key = int(away) if away.isdigit() else away
    expected = np.zeros(4)
    for r in rows:
        if {r["player"], r["opponent"]} == {home, away}:
            expected *= 0.99
            score = float(r["score"]) if r["player"] == home else 1.0 - float(r["score"])
            expected[{1.0: 0, 0.5: 1, 0.0: 2}[score]] += 1
            expected[3] += 1
    assert np.array_equal(payoff.counts(home, away_key), expected)
    assert expected[3] < sum({r["player"], r["opponent"]} == {home, away} for r in rows)  # decayed: < the games
    # one flipped score in matches.csv: the replay no longer reproduces the payoff
    lines = (tmp_path / "matches.csv").read_text().splitlines()
    header = lines[0].split(",")
    i = next(k for k, line in enumerate(lines[1:], 1)
             if line.split(",")[header.index("player")] != line.split(",")[header.index("opponent")])
    cells = lines[i].split(",")
    cells[header.index("score")] = "0.5" if float(cells[header.index("score")]) != 0.5 else "1.0"
    lines[i] = ",".join(cells)
    (tmp_path / "matches.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"replaying matches.csv \(decay 0.99\)"):
        check_league_records(tmp_path)


def test_ray_report_names_the_lost_node_and_the_replacement(tmp_path):
    from types import SimpleNamespace

    from selfplay.training.distributed.league_report import ray_report_lines

    (tmp_path / "matchmaking.csv").write_text("player,opponent_kind,drawn,measured,expected\nmain_0,main,40,1.0,1.0\n")
    (tmp_path / "matches.csv").write_text("player,episode,step,opponent,opponent_kind,seat,score\n"
                                          + "".join(f"main_0,{i},{i},0,historical:main,0,1.0\n" for i in range(24)))
    events = [{"seconds": 12.0, "event": "worker lost", "worker": 1, "node": "a1b2c3d4e5f6a7b8", "node_lost": True,
               "replaced_by": 2, "detail": "The actor died"},
              {"seconds": 30.0, "event": "worker lost", "worker": 0, "node": "ffff0000ffff0000", "node_lost": False,
               "replaced_by": 3, "detail": "killed"},
              {"seconds": 40.0, "event": "coordinator lost: every actor restarted from the last commit", "worker": None,
               "node": None, "node_lost": None, "replaced_by": None, "detail": "killed"}]
    result = SimpleNamespace(workers={2: {"dropped_games": 8, "games_in_play_at_end": 8}, 3: {}}, restarts=2,
                             coordinator_restarts=1, events=events)
    text = "\n".join(ray_report_lines(tmp_path, result))
    assert "2 lost and replaced, 1 node(s) lost from the cluster (`a1b2c3d4e5f6`)" in text
    assert "worker 1 on node `a1b2c3d4e5f6`, which left the cluster; replaced by worker 2" in text
    assert "worker 0 on node `ffff0000ffff`, still in the cluster (the worker's process died); replaced by worker 3" in text
    assert "restarted 1 time(s)" in text and "dropped 8 games and had 8 in play" in text
    assert "| main_0 | 40 | 24 | 16 |" in text
