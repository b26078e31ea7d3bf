"""MAPPO on SMACv2: the agent-specific state of every scenario (sizes, hand-computed entries, death
masking) and a run against the built-in AI on a 5_vs_5 scenario."""

import csv

import numpy as np
import pytest
import torch
from selfplay.envs.smac import SMACV2_SCENARIOS
from selfplay.envs.smac.smacv2_battle import SMACv2Battle

from selfplay.training.vs_builtin import VsAIConfig, train_vs_builtin


@pytest.mark.parametrize("scenario", SMACV2_SCENARIOS)
def test_every_scenario_has_the_agent_specific_state(scenario):
    """Every scenario (EPO included): every agent's row has the layout's size and ends in its one-hot id, on both seats."""
    b = SMACv2Battle(scenario, num_envs=1, seed=0)
    b.reset()
    rows = b.get_special_state()
    for seat in (0, 1):
        n = b.n_agents[seat]
        assert rows[seat].shape == (1, n, b.special_state_size[seat])
        assert torch.equal(rows[seat][0, :, -n:], torch.eye(n))


def test_agent_specific_state_entries_by_hand():
    """protoss_5_vs_5, agent 0 of seat 0 (3 type bits, shields, 11 actions): the own block, one ally row
    and one enemy row recomputed from the engine; a dead agent's row is its id only."""
    b = SMACv2Battle("protoss_5_vs_5", num_envs=1, seed=3, two_player=False)
    b.reset()
    seat, eng = b.seat(0, 0), b.engine
    spec = b.games.specs[0]
    n, m, bits, A = 5, 5, 3, b.n_actions[0]
    ally = 1 + 3 + 1 + 1 + 1 + 2 + bits + A
    enemy = 1 + 3 + 1 + 1 + 1 + bits + 2
    own = 1 + 3 + 1 + 1 + 2 + bits + A
    assert b.special_state_size[0] == (n - 1) * ally + m * enemy + own + n
    pos = eng.arrays("pos")[0]
    hp, hp_max = eng.arrays("hp")[0], seat.hp_max
    row = b.get_special_state()[0][0, 0].numpy()
    r = seat.sight[0]
    # ally row of agent 1 (the first other ally)
    dx, dy = pos[1] - pos[0]
    d = np.hypot(dx, dy)
    np.testing.assert_allclose(row[:4], [float(d < r), d / r, dx / r, dy / r], rtol=1e-5, atol=1e-6)
    assert row[5] == pytest.approx(hp[1] / hp_max[1])
    assert row[7] == pytest.approx((pos[1, 0] - spec.map_x / 2) / spec.playable_width)
    assert row[9 + seat.ally_type[1]] == 1.0 and row[9:12].sum() == 1.0
    # enemy row of enemy 0
    e0 = (n - 1) * ally
    dx, dy = pos[n] - pos[0]
    d = np.hypot(dx, dy)
    np.testing.assert_allclose(row[e0 + 1:e0 + 5], [d / r, dx / r, dy / r, float(d < r)], rtol=1e-5, atol=1e-6)
    assert row[e0] == float(seat.avail()[0][0, 6])
    assert row[e0 + 5] == pytest.approx(hp[n] / hp_max[n])
    # own block
    o0 = (n - 1) * ally + m * enemy
    np.testing.assert_allclose(row[o0:o0 + 5], [1, 0, 0, 0, hp[0] / hp_max[0]], rtol=1e-6)
    assert row[o0 + 8 + seat.ally_type[0]] == 1.0
    # agent 0 dies: its row is its id only; the others' rows of it are zero
    eng.arrays("hp")[0][0] = 0.0
    seat.invalidate()
    rows = b.get_special_state()[0][0].numpy()
    assert np.array_equal(rows[0], np.concatenate([np.zeros(b.special_state_size[0] - n), np.eye(n)[0]]))
    assert not rows[1, :ally].any()


def test_mappo_trains_against_the_builtin_ai_on_smacv2(tmp_path):
    """``--env smacv2:protoss_5_vs_5 --opponent builtin-ai --agent mappo``: two updates, evaluations
    at 0 and at the end, the same seed the same metrics."""
    settings = {"num_envs": 2, "rollout_length": 20, "chunk_length": 10, "epochs": 1, "eval_interval": 40,
                "eval_episodes": 2}

    def run(out):
        config = VsAIConfig(env="smacv2:protoss_5_vs_5", steps=80, seed=1, agent_settings=settings)
        result = train_vs_builtin(config, out, log=lambda s: None)
        with open(out / "updates.csv") as f:
            return result, list(csv.DictReader(f))

    a, rows_a = run(tmp_path / "a")
    assert (a.steps, a.updates) == (80, 2)
    with open(tmp_path / "a" / "metrics.csv") as f:
        metrics = list(csv.DictReader(f))
    assert [int(r["step"]) for r in metrics] == [0, 40, 80]
    check_test_games(tmp_path / "a", metrics, "smacv2:protoss_5_vs_5", n_units=5,
                     types={"stalker", "zealot", "colossus"})
    _, rows_b = run(tmp_path / "b")
    drop = ("seconds",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in rows_a] == \
        [{k: v for k, v in r.items() if k not in drop} for r in rows_b]


def check_test_games(out, metrics, env, n_units, types):
    """``test_games.csv`` holds every test game of every evaluation: its draw is the draw a battle seeded
    as the evaluation was starts with, its outcome agrees with the evaluation's win rate, a won game
    killed every enemy, and a timeout is no win."""
    from selfplay.training.registry import make_env
    from selfplay.training.vs_builtin import game_draws
    from selfplay.utils.seeding import Stream, derive_seed

    with open(out / "test_games.csv") as f:
        games = list(csv.DictReader(f))
    episodes = int(metrics[0]["test_episodes"])
    assert len(games) == episodes * len(metrics)
    for row in metrics:
        step = int(row["step"])
        here = [g for g in games if int(g["step"]) == step]
        assert [int(g["game"]) for g in here] == list(range(episodes))
        assert sum(int(g["won"]) for g in here) / episodes == pytest.approx(float(row["test_win_rate"]))
        battle = make_env(env, episodes, seed=derive_seed(1, Stream.SCRIPTED_GAMES, step), scripted_enemy=True)
        battle.reset()
        assert [{k: g[k] for k in ("start", "allies", "enemies")} for g in here] == game_draws(battle)
    for g in games:
        team = dict(part.split(":") for part in g["allies"].split())
        assert set(team) <= types and sum(int(c) for c in team.values()) == n_units
        if int(g["won"]):
            assert int(g["dead_enemies"]) == n_units and not int(g["timeout"])
        assert 1 <= int(g["episode_steps"])


@pytest.mark.parametrize("env", ["smacv2:protoss_5_vs_5", "smacv2:terran_10_vs_11"])
def test_mappo_self_play_on_smacv2(env, tmp_path):
    """Two-player SMACv2 under a scheme: one learner on equal teams, a learner per side on 10_vs_11."""
    from selfplay.training.loop import TrainConfig, train

    result = train(TrainConfig(env=env, agent="mappo", scheme="delta-uniform:delta=0.5", episodes=2, num_envs=2,
                               checkpoints=2, agent_settings={"rollout_length": 20, "chunk_length": 10, "epochs": 1},
                               tensorboard=False), tmp_path)
    assert result.episodes == 2 and result.updates >= 1
