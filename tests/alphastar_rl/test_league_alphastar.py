"""The AlphaStar agent in the league: every player starts from the SL checkpoint, exploiters
reset to it, every player type leaves historicals, the run resumes, and the report evaluates the
menagerie against the SL policy and the scripted AI."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

from selfplay.evaluation import league as league_report
from selfplay.evaluation.league import VS_SCRIPTED, VS_START, evaluate_league, evaluated_policies
from selfplay.training.league_loop import LeagueTrainConfig, LeagueTrainer


@pytest.mark.slow  # about 65 s at a load of 2 on 2 cores
def test_alphastar_league_starts_from_sl_resets_exploiters_and_reports(tmp_path, monkeypatch, sl_checkpoint):
    sl = sl_checkpoint
    cfg = LeagueTrainConfig(env="smac:3m", agent="alphastar", steps=480, min_steps=100, max_steps=200, num_envs=4,
                            matches=2, league="league:main=1,main_exploiters=1,league_exploiters=1",
                            agent_settings={"sl_checkpoint": sl, "chunk_length": 4, "batch_chunks": 4})
    trainer = LeagueTrainer(cfg, tmp_path / "run")
    sl_weights = torch.load(sl)["state_dict"]
    for p in trainer.sl_policy.net.state_dict():
        assert torch.equal(trainer.sl_policy.net.state_dict()[p], sl_weights[p])
    trainer.train()
    league = trainer.league
    kinds = {e.tags["kind"] for e in league.menagerie}
    assert kinds == {"main", "main_exploiter", "league_exploiter"}
    for name in league.players:
        assert trainer.learners[name].samples > 0 and trainer.learners[name].weight_version > 1, name
    # a main exploiter that checkpointed was reset to the SL weights (weight_version bumps, weights equal SL)
    resets = [m for m in trainer.metrics if m["player"] == "main_exploiter_0" and m["reset"] == 1]
    assert resets, "the main exploiter must reset to the SL policy after its checkpoints"
    assert all(m["reset"] == 0 for m in trainer.metrics if m["player"] == "main_0")
    measured, measure = [], league_report.checkpoint_win_rates  # the per-checkpoint win rates evaluate_league measures

    def recording(trainer_, policies):
        measured.append(measure(trainer_, policies))
        return measured[-1]

    monkeypatch.setattr(league_report, "checkpoint_win_rates", recording)
    summary = evaluate_league(trainer)
    monkeypatch.undo()
    assert summary["historicals"] == len(league.menagerie)
    assert {"vs_start_last_main", "vs_scripted_last_main", "vs_scripted_best_league_exploiter"} <= set(summary)
    (rates,) = measured
    # rates count games: vs the SL policy 2·matches = 4 games (draws ½), vs the scripted AI 50 games (draws ½)
    assert np.allclose(rates[VS_START] * 8, np.round(rates[VS_START] * 8))
    assert np.allclose(rates[VS_SCRIPTED] * 100, np.round(rates[VS_SCRIPTED] * 100))
    kinds = [r.kind for r in evaluated_policies(trainer)]
    for kind in set(kinds):  # the summary holds the last and best checkpoints of each player type
        rows = [i for i, k in enumerate(kinds) if k == kind]
        assert summary[f"vs_start_last_{kind}"] == rates[VS_START][rows[-1]]
        assert summary[f"vs_scripted_last_{kind}"] == rates[VS_SCRIPTED][rows[-1]]
        assert summary[f"vs_scripted_best_{kind}"] == rates[VS_SCRIPTED][rows].max()
    # the report's table as data: evaluation/checkpoints.csv, and the summary as evaluation/summary.json
    table = pd.read_csv(tmp_path / "run" / "evaluation" / "checkpoints.csv")
    assert list(table["kind"]) == kinds and list(table["final"]) == [r.final for r in evaluated_policies(trainer)]
    assert np.allclose(table["vs_start"], rates[VS_START], atol=5e-5)
    assert np.allclose(table["vs_scripted"], rates[VS_SCRIPTED], atol=5e-5)
    assert json.loads((tmp_path / "run" / "evaluation" / "summary.json").read_text()) == pytest.approx(summary)
    report = (tmp_path / "run" / "report.md").read_text()
    assert "against the SL policy" in report and "scripted AI" in report and "Maxent Nash" in report
    # the main player's final weights and the historicals' Nash mixture met the panel (the commander samples)
    assert {f"panel_{m}_{who}" for m in ("builtin", "regroup") for who in ("final", "nash")} <= set(summary)
    assert "## Against the panel of fixed opponents" in report and "no greedy mode" in report
    # the players' final weights are measured too, after the historicals
    finals = [r for r in evaluated_policies(trainer) if r.final]
    newer = {n for n in league.players
             if max(league.menagerie[i].step for i in league.historicals(parent=n)) < trainer.steps[n]}
    assert newer and {r.player for r in finals} == newer
    for r in finals:
        assert r.policy is trainer.learners[r.player].snapshot() and r.step == trainer.steps[r.player]
        assert f"| {r.player} (final) | {r.kind} | {r.step} |" in report
    assert (tmp_path / "run" / "figures" / "winrate_matrix.png").exists()
    assert (tmp_path / "run" / "figures" / "checkpoints.png").exists()

    resumed = LeagueTrainer(LeagueTrainConfig(**{**cfg.__dict__, "agent_settings": dict(cfg.agent_settings)}), tmp_path / "run")
    assert resumed.load()
    assert resumed.steps == trainer.steps and len(resumed.league.menagerie) == len(league.menagerie)
    for name in league.players:
        a, b = resumed.learners[name].net.state_dict(), trainer.learners[name].net.state_dict()
        assert all(torch.equal(a[k], b[k]) for k in a), name


def test_alphastar_league_is_reproducible(tmp_path, sl_checkpoint):
    sl = sl_checkpoint
    cfg = dict(env="smac:3m", agent="alphastar", steps=160, min_steps=60, max_steps=120, num_envs=4, matches=2,
               league="league:main=1,main_exploiters=1,league_exploiters=0",
               agent_settings={"sl_checkpoint": sl, "chunk_length": 4, "batch_chunks": 4})
    for run in ("a", "b"):
        LeagueTrainer(LeagueTrainConfig(**{**cfg, "agent_settings": dict(cfg["agent_settings"])}), tmp_path / run).train()
    for name in ("matches.csv", "metrics.csv", "matchmaking.csv"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text(), name


def test_the_report_says_how_the_sl_start_was_made(tmp_path):
    import json

    assert league_report.sl_start_lines(None) == [] and league_report.sl_start_lines(str(tmp_path / "sl.pt")) == []
    (tmp_path / "sl_metrics.json").write_text(json.dumps({
        "demonstrator": "nearest", "demonstrations_against": "self_play", "demonstrations": {"games": 300},
        "demonstrator_win_rate": 1.0, "win_rate_vs_scripted": 0.203125, "sl_policy_eval": {"games": 64},
        "config": {"eval_temperature": 0.5}}))
    line = league_report.sl_start_lines(str(tmp_path / "sl_checkpoint.pt"))[0]
    assert line == ("Start: the SL policy trained on 300 games of the `nearest` demonstrator against itself (two-player, "
                    "mirrored); against the built-in AI the demonstrator alone wins 1.00 and the SL policy, sampled at "
                    "temperature 0.5, 0.20 (64 games; the checkpoint table below plays it greedily).")
