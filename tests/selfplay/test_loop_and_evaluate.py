import csv

import numpy as np
import pytest
import torch

from selfplay import Menagerie
from selfplay.training.games import learner_scores
from selfplay.training.loop import SelfPlayTrainer, TrainConfig, train
from selfplay.training.matches import play_matches, round_robin_pairs, winrate_from_pair_scores
from selfplay.training.rundir import RunDir


class Fixed:
    """Always plays one action (Rock 0, Paper 1, Scissors 2)."""

    def __init__(self, action):
        self.action = action

    def initial_state(self, batch):
        return None

    def act(self, obs, state, mask=None, episode_start=None):
        return torch.full((obs.shape[0],), self.action, dtype=torch.long), state, {}


class UnitOrder:
    """Every living SMAC unit takes one action (1: stop, 5: move west) where it may, else stops (a dead unit
    no-ops)."""

    def __init__(self, action):
        self.action = action

    def initial_state(self, batch):
        return None

    def act(self, obs, state, mask=None, episode_start=None):
        legal = torch.where(mask[..., 1], 1, 0)
        return torch.where(mask[..., self.action], self.action, legal), state, {}


def test_play_matches_scores_fixed_agents_in_both_seats():
    rock, paper, scissors = Fixed(0), Fixed(1), Fixed(2)
    pairs = np.array([[0, 1], [1, 0], [0, 2], [1, 2], [0, 0]])
    scores = play_matches("rirrps", [rock, paper, scissors], pairs, matches_per_pair=6, seed=0)
    assert scores.shape == (5, 6)
    np.testing.assert_array_equal(scores[0], 0.0)  # rock loses to paper, whichever seat it sits in
    np.testing.assert_array_equal(scores[1], 1.0)
    np.testing.assert_array_equal(scores[2], 1.0)  # rock beats scissors
    np.testing.assert_array_equal(scores[3], 0.0)
    # a mirror match is a tie every repetition: the winner is a fair coin
    many = play_matches("rirrps", [rock], np.array([[0, 0]]), matches_per_pair=4000, seed=1)
    assert abs(many.mean() - 0.5) < 0.03


def test_winrate_from_pair_scores_fills_both_triangles():
    pairs = round_robin_pairs(3)
    scores = np.array([[1, 1, 0, 1], [0, 0, 0, 0], [0.5, 0.5, 1, 1]])
    W, counts = winrate_from_pair_scores(3, pairs, scores)
    np.testing.assert_allclose(W, [[0.5, 0.75, 0.0], [0.25, 0.5, 0.75], [1.0, 0.25, 0.5]])
    np.testing.assert_array_equal(counts, [[0, 4, 4], [4, 0, 4], [4, 4, 0]])


def test_learner_scores():
    np.testing.assert_array_equal(learner_scores(np.array([0, 1, -1, 0]), np.array([False, False, True, False]),
                                                 np.array([0, 0, 1, 1])), [1.0, 0.0, 0.5, 0.0])


def small_config(**kw):
    base = dict(scheme="delta-uniform:delta=0", episodes=320, num_envs=32, checkpoints=4, seed=3,
                agent_settings={"horizon": 320, "epochs": 2}, tensorboard=False)
    base.update(kw)
    return TrainConfig(**base)


def read_matches(run):
    with open(run / "matches.csv") as f:
        return list(csv.DictReader(f))


def test_run_writes_everything_and_is_reproducible(tmp_path):
    cfg = small_config()
    a = train(cfg, tmp_path / "a")
    b = train(cfg, tmp_path / "b")
    assert a.episodes == b.episodes == 320
    ma, mb = read_matches(tmp_path / "a"), read_matches(tmp_path / "b")
    assert ma == mb and len(ma) == 320
    assert {m["learner_seat"] for m in ma} == {"0", "1"}
    menagerie = Menagerie.load(tmp_path / "a" / "menagerie")
    assert len(menagerie) == 321  # the initial policy + one snapshot per episode (δ-Uniform's G)
    assert {int(m["opponent"]) for m in ma} <= set(menagerie.ids)
    checkpoints = Menagerie.load(tmp_path / "a" / "checkpoints")
    assert [e.tags["episode"] for e in checkpoints] == [80, 160, 240, 320]
    assert np.load(tmp_path / "a" / "trajectories.npz")["vectors"].shape == (320, 90)
    for name in ("config.yaml", "metrics.csv", "manifest.json"):
        assert (tmp_path / "a" / name).exists()
    # snapshots of unchanged weights share one file
    files = {e.file for e in menagerie}
    assert len(files) <= a.updates + 1


def test_killed_run_resumes_to_the_same_number_of_episodes(tmp_path, monkeypatch):
    cfg = small_config(episodes=480)
    trainer = SelfPlayTrainer(cfg, tmp_path / "run")
    real_update = trainer.learner.update
    calls = {"n": 0}

    def dying_update():
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # killed after two saved updates
        return real_update()

    monkeypatch.setattr(trainer.learner, "update", dying_update)
    with pytest.raises(KeyboardInterrupt):
        trainer.train()
    saved = RunDir(tmp_path / "run").load_commit()
    assert 0 < saved["players"]["learner"]["episodes"] < 480
    result = train(cfg, tmp_path / "run")
    assert result.episodes == 480
    matches = read_matches(tmp_path / "run")
    assert [int(m["episode"]) for m in matches] == list(range(480))
    menagerie = Menagerie.load(tmp_path / "run" / "menagerie", load_policy=lambda p: torch.load(p, weights_only=False))
    assert menagerie.ids == list(range(481)) and all(e.policy is not None for e in menagerie)
    with pytest.raises(ValueError, match="another configuration"):
        train(small_config(episodes=480, seed=4), tmp_path / "run")


def test_naive_and_psro_runs(tmp_path):
    naive = train(small_config(scheme="naive"), tmp_path / "naive")
    assert naive.menagerie_size == 1
    psro = train(small_config(scheme="psro:window=10,threshold=0.5,max_episodes_per_iteration=60,matches_per_pair=4"),
                 tmp_path / "psro")
    assert psro.menagerie_size >= 320 // 60
    state = RunDir(tmp_path / "psro").load_commit()["mode"]["scheme"]
    assert state["iterations"] == psro.menagerie_size - 1 and len(state["meta"]) > 0


def test_bad_config_is_rejected():
    with pytest.raises(ValueError, match="env"):
        TrainConfig(env="chess")
    with pytest.raises(ValueError, match="agent"):
        TrainConfig(agent="dqn")
    with pytest.raises(ValueError, match="episodes"):
        TrainConfig(episodes=0)
    with pytest.raises(ValueError, match="delta"):
        TrainConfig(scheme="delta-uniform:delta=-1")


def test_scripted_win_rates_of_focus_fire_and_idle_policies_on_8m():
    """8m, not 3m: against the map trigger's enemy (envs/smac/README.md) focus fire wins 3m rarely."""
    from selfplay.envs.smac import FocusFirePolicy, SMACBattle

    from selfplay.training.matches import scripted_win_rates

    focus = FocusFirePolicy.for_battle(SMACBattle("8m", 1, two_player=False))

    rates = scripted_win_rates("smac:8m", [focus, UnitOrder(1)], games=24, seed=0)  # 1: every live unit stops
    assert rates[0] > 0.7 and rates[1] < 0.1


def test_scripted_outcomes_split_wins_from_timeouts():
    """On 3m a side that runs west from the start is never reached by the AI, whose units stop at their
    attack-move point: every game times out (a draw, ½ in ``scripted_win_rates``); a side that stands still
    is attacked and loses every game (0)."""
    from selfplay.training.matches import scripted_outcomes, scripted_win_rates

    won, drawn = scripted_outcomes("smac:3m", [UnitOrder(5), UnitOrder(1)], games=8, seed=0)  # west, stop
    assert won.tolist() == [0.0, 0.0] and drawn.tolist() == [1.0, 0.0]
    assert scripted_win_rates("smac:3m", [UnitOrder(5), UnitOrder(1)], games=8, seed=0).tolist() == [0.5, 0.0]


def test_scripted_outcomes_of_a_policy_do_not_depend_on_the_others_evaluated_with_it():
    """A checkpoint's games against the AI are a function of the checkpoint, the game count and the seed:
    evaluated alone, after another policy or twice in one call it scores the same (on 2s3z the cooldown
    jitter decides some of focus fire's games; when all policies shared one batch its draws
    were spread over the batch, and a checkpoint scored differently in a longer population)."""
    from selfplay.envs.smac import FocusFirePolicy, SMACBattle

    from selfplay.training.matches import scripted_outcomes

    focus = FocusFirePolicy.for_battle(SMACBattle("2s3z", 1, two_player=False))
    alone = scripted_outcomes("smac:2s3z", [focus], games=16, seed=3)
    assert 0.0 < alone[0][0] < 1.0  # the draws matter: some games won, some not
    won, drawn = scripted_outcomes("smac:2s3z", [UnitOrder(1), focus, focus], games=16, seed=3)
    assert won[1:].tolist() == [alone[0][0]] * 2 and drawn[1:].tolist() == [alone[1][0]] * 2
    assert won[0] == 0.0


def test_self_play_on_smac_3m_runs_through_the_generic_loop(tmp_path):
    result = train(TrainConfig(env="smac:3m", agent="ppo-rnn", scheme="delta-limit-uniform:delta=0", episodes=64,
                               num_envs=16, checkpoints=2, agent_settings={"horizon": 320, "epochs": 1}, tensorboard=False),
                   tmp_path)
    assert result.episodes == 64 and result.menagerie_size == 65 and result.updates >= 1
    seats = {m["learner_seat"] for m in read_matches(tmp_path)}
    assert seats == {"0", "1"}


def test_asymmetric_smac_map_trains_a_learner_per_side_and_evaluates_across_sides(tmp_path):
    from selfplay.evaluation.compare import evaluate_run_dir

    cfg = TrainConfig(env="smac:2m_vs_1z", agent="ppo-mlp", scheme="delta-uniform:delta=0", episodes=48,
                      num_envs=16, checkpoints=2, agent_settings={"horizon": 320, "epochs": 1}, tensorboard=False)
    result = train(cfg, tmp_path)
    assert result.episodes == 48
    rows = read_matches(tmp_path)
    assert {r["player"] for r in rows} == {"side0", "side1"} and len(rows) == 96
    assert {r["learner_seat"] for r in rows if r["player"] == "side1"} == {"1"}
    with open(tmp_path / "metrics.csv") as f:  # the trainer core's curves, for both learners
        assert {r["player"] for r in csv.DictReader(f)} == {"side0", "side1"}
    side0 = Menagerie.load(tmp_path / "menagerie" / "side0")
    side1 = Menagerie.load(tmp_path / "menagerie" / "side1")
    assert len(side0) == len(side1) == 49  # the initial policy + one snapshot per episode, per side
    # side 0's opponents come from side 1's menagerie and the reverse
    assert {int(r["opponent"]) for r in rows if r["player"] == "side0"} <= set(side1.ids)
    summary = evaluate_run_dir(tmp_path, matches=2, scripted_games=4)
    data = np.load(tmp_path / "evaluation" / "winrate.npz")
    assert data["W"].shape == (2, 2) and abs(data["p"].sum() - 1) < 1e-9 and abs(data["q"].sum() - 1) < 1e-9
    W, p, q = data["W"], data["p"], data["q"]
    assert summary["side0_value"] == pytest.approx(float(p @ W @ q))  # the value of the cross-side game
    assert (p @ W >= summary["side0_value"] - 1e-9).all() and (W @ q <= summary["side0_value"] + 1e-9).all()
    assert summary["vs_scripted_final"] == pytest.approx(float(data["vs_scripted"][-1]))
    assert train(cfg, tmp_path).episodes == 48  # resumes a finished run without training again


def test_play_matches_with_a_fixed_home_seat():
    rock, paper = Fixed(0), Fixed(1)
    scores = play_matches("rirrps", [rock, paper], np.array([[0, 1]]), matches_per_pair=4, home_seat=1)
    np.testing.assert_array_equal(scores, 0.0)
    with pytest.raises(ValueError, match="home_seat"):
        play_matches("rirrps", [rock, paper], np.array([[0, 1]]), 2, home_seat=2)


def test_unknown_smac_maps_and_asymmetric_compare_are_refused():
    from selfplay.evaluation.compare import CompareConfig

    with pytest.raises(ValueError, match="unknown SMAC map"):
        TrainConfig(env="smac:4m")
    with pytest.raises(ValueError, match="asymmetric"):
        CompareConfig(env="smac:2m_vs_1z").validate()


def test_the_runs_evaluation_saves_the_nash_evolution_that_curves_and_figures_read(tmp_path, monkeypatch):
    """The maxent Nash of every prefix of checkpoints is computed once, in the run's (parallel) evaluation:
    the curves over training read it back; a matrix it was not computed from gets its own."""
    from selfplay.analysis import nash

    from selfplay.evaluation.compare import evaluate_run_dir
    from selfplay.evaluation.runs import NASH_EVOLUTION, nash_evolution
    from selfplay.evaluation.seed_stats import run_curves

    train(small_config(), tmp_path)
    evaluate_run_dir(tmp_path, matches=4, figures=False)
    W = np.load(tmp_path / "evaluation" / "winrate.npz")["W"]
    expected = nash.maxent_nash_evolution(W - 0.5)
    assert np.array_equal(np.load(tmp_path / "evaluation" / NASH_EVOLUTION)["P"], expected)

    def not_again(*args, **kwargs):
        raise AssertionError("the saved evolution was computed again")

    monkeypatch.setattr(nash, "maxent_nash_evolution", not_again)
    run = type("Run", (), {"path": tmp_path, "seed": 3, "scheme": "delta-uniform:delta=0", "agent": "ppo-mlp"})
    curves = run_curves(run, 320, 4)
    assert np.array_equal(curves["value"].to_numpy(), (expected > 1e-6).sum(axis=1).astype(float))
    monkeypatch.undo()
    other = W.copy()
    other[0, 1], other[1, 0] = 1.0, 0.0  # checkpoint 0 now beats checkpoint 1: another equilibrium path
    assert np.array_equal(nash_evolution(tmp_path / "evaluation", other), nash.maxent_nash_evolution(other - 0.5))
