"""What `compare` tells while it works: a progress bar per stage on stderr, and a warning when two
evaluation checkpoints are one and the same policy. And the mask-free fast path gives the same numbers."""

import pytest
import torch
from selfplay.agents.ppo import PPOLearner, ppo_config

from selfplay.evaluation.compare import evaluate_run_dir, same_policy_checkpoints
from selfplay.evaluation.runs import pool_map
from selfplay.training.loop import TrainConfig, train


def _square(x):
    return x * x


def test_pool_map_shows_a_labelled_bar_on_stderr_only_when_asked(capsys):
    assert pool_map(_square, [1, 2, 3], 1, progress="training runs") == [1, 4, 9]
    err = capsys.readouterr().err
    assert "training runs" in err and "3/3" in err
    assert pool_map(_square, [1, 2, 3], 1) == [1, 4, 9]
    assert capsys.readouterr().err == ""


def _smac_slots(_):
    from selfplay.envs.smac import build

    return build.parallel_slots(build.PARALLEL_MIN_GAMES)


def test_pool_workers_step_smac_batches_on_one_thread(monkeypatch):
    """Parallel workers (``jobs`` > 1) each step a SMAC batch above the threshold on one thread instead of
    starting a thread per core in every worker."""
    monkeypatch.setenv("NUMBA_NUM_THREADS", "2")
    assert _smac_slots(0) == 2
    assert pool_map(_smac_slots, [0, 1], 2) == [1, 1]


def test_checkpoints_without_an_update_between_them_are_reported_as_one_policy(tmp_path):
    a, b = object(), object()
    assert same_policy_checkpoints([0, 5, 9, 12], [a, a, b, a]) == [[0, 5, 12]]
    assert same_policy_checkpoints([0, 5], [a, b]) == []
    # 24 episodes of 8 games with a horizon of 512 samples: the learner never updates, so its four
    # checkpoints are all the initial policy
    run = tmp_path / "run"
    train(TrainConfig(episodes=24, num_envs=8, checkpoints=4, agent_settings={"horizon": 512}, tensorboard=False), run)
    with pytest.warns(UserWarning, match=r"checkpoints 0, \d+, \d+, \d+ are the same policy"):
        evaluate_run_dir(run, matches=1, figures=False)


def _learner_after_one_update(skip_mask: bool) -> list[torch.Tensor]:
    learner = PPOLearner(obs_size=6, n_actions=3, config=ppo_config("rps", horizon=64, minibatch_size=16, epochs=2),
                         seed=4)
    if not skip_mask:  # the masked path: every logit goes through masked_fill
        learner._prepare_update = lambda: setattr(learner, "_all_legal", False)
    g = torch.Generator().manual_seed(0)
    while not learner.ready():
        learner.act(torch.rand(8, 6, generator=g), mask=torch.ones(8, 3, dtype=torch.bool))
        learner.record(torch.randn(8, generator=g), torch.rand(8, generator=g) < 0.2)
    learner.update()
    return [p.detach().clone() for p in learner.network.parameters()]


def test_an_update_without_the_all_legal_mask_equals_the_masked_one():
    # the all-legal update takes the written-out gradient (agents/ppo/mlp_step.py): equal to float rounding
    fast, masked = _learner_after_one_update(True), _learner_after_one_update(False)
    assert all(torch.allclose(a, b, atol=1e-6, rtol=0) for a, b in zip(fast, masked))
    initial = PPOLearner(obs_size=6, n_actions=3, config=ppo_config("rps", horizon=64, minibatch_size=16, epochs=2),
                         seed=4).network.parameters()
    assert not all(torch.equal(a, b) for a, b in zip(fast, initial))  # the update moved the weights
