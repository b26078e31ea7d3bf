"""MAPPO's linear step-size decay (``MAPPOConfig.linear_lr_decay``, MAPPO's ``use_linear_lr_decay``): an update's step
sizes are ``lr · (1 − progress)``, the share of the run's budget spent, which each trainer reports — the episode
budget under a scheme, the step budget against the built-in AI."""

import csv

import pytest
import torch
from selfplay.agents.mappo import MAPPOLearner, mappo_config
from selfplay.envs.smac import SMACBattle

from selfplay.training.vs_builtin import side_inputs
from tests.mappo.test_mappo_learner import SMALL


def one_update(progress: float, **settings) -> tuple[MAPPOLearner, dict, dict]:
    """A 3m learner against the AI after one update at ``progress``: (learner, weights before, metrics)."""
    config = mappo_config(**{**SMALL, "learning_rate": 1e-3, "critic_learning_rate": 2e-3, **settings})
    battle = SMACBattle("3m", num_envs=config.num_envs, two_player=False, seed=7)
    learner = MAPPOLearner.for_battle(battle, config, seed=0)
    obs, start = battle.reset(), torch.ones(config.num_envs, dtype=torch.bool)
    while not learner.ready():
        o, s, mask = side_inputs(battle, config, obs)
        action = learner.act(o, s, mask, start)
        obs, rewards, start, _ = battle.step([action])
        learner.record(rewards[0], start)
    before = {k: v.clone() for k, v in learner.network.state_dict().items()}
    learner.set_progress(progress)
    _, s, mask = side_inputs(battle, config, obs)
    return learner, before, learner.update(s, mask, start)


def test_an_update_steps_with_the_step_sizes_times_one_less_the_progress():
    learner, _, metrics = one_update(0.25, linear_lr_decay=True)
    assert [g["lr"] for g in learner.actor_optimizer.param_groups] == [pytest.approx(0.75e-3)]
    assert [g["lr"] for g in learner.critic_optimizer.param_groups] == [pytest.approx(1.5e-3)]
    assert metrics["learning_rate"] == pytest.approx(0.75e-3)
    plain, _, metrics = one_update(0.25)
    assert [g["lr"] for g in plain.actor_optimizer.param_groups] == [1e-3] and "learning_rate" not in metrics


def test_at_the_end_of_the_budget_the_update_leaves_the_weights_where_they_were():
    learner, before, _ = one_update(1.0, linear_lr_decay=True)
    for name, value in learner.network.state_dict().items():
        assert torch.equal(value, before[name]), name
    moved, before, _ = one_update(1.0)  # without the decay the same update moves them
    assert any(not torch.equal(v, before[k]) for k, v in moved.network.state_dict().items())


@pytest.mark.parametrize("progress", [-0.1, 1.5, float("nan"), True, "half"])
def test_bad_progress_is_named(progress):
    learner = MAPPOLearner.for_battle(SMACBattle("3m", num_envs=2, two_player=False, seed=0), mappo_config(**SMALL))
    with pytest.raises(ValueError, match="progress must be a number in"):
        learner.set_progress(progress)


def test_self_play_decays_by_the_episodes_played_of_the_budget(tmp_path):
    """``selfplay train --linear-lr-decay`` under a scheme: each update's step size is lr · (1 − episodes / budget)
    at the episode count it was made at, in the run's ``metrics.csv``; the setting is in the run's config."""
    from selfplay.cli import main

    main(["train", "--env", "smac:3m", "--agent", "mappo", "--scheme", "naive", "--episodes", "40", "--checkpoints",
          "4", "--num-envs", "8", "--rollout-length", "10", "--epochs", "1", "--linear-lr-decay", "--seed", "0",
          "--out", str(tmp_path / "run")])
    rows = list(csv.DictReader(open(tmp_path / "run" / "metrics.csv")))
    assert len(rows) > 5 and len({r["episode"] for r in rows}) > 2
    for row in rows:
        assert float(row["learning_rate"]) == pytest.approx(5e-4 * (1 - int(row["episode"]) / 40))
    assert "linear_lr_decay: true" in (tmp_path / "run" / "config.yaml").read_text()


def test_against_the_ai_the_decay_follows_the_steps_before_each_rollout(monkeypatch, tmp_path):
    """``train --opponent builtin-ai``: update k (from 0) of a run of N game-steps is told progress k · batch / N."""
    from selfplay.training.vs_builtin import VsAIConfig, train_vs_builtin

    seen = []
    real = MAPPOLearner.set_progress
    monkeypatch.setattr(MAPPOLearner, "set_progress", lambda self, p: seen.append(p) or real(self, p))
    config = VsAIConfig(env="smac:3m", steps=240, seed=0,
                        agent_settings={**SMALL, "linear_lr_decay": True, "eval_episodes": 1})
    train_vs_builtin(config, tmp_path / "run", log=lambda *_: None)
    batch = SMALL["num_envs"] * SMALL["rollout_length"]
    assert seen == [pytest.approx(k * batch / 240) for k in range(3)]
