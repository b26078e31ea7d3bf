"""The one PPO config: per-environment defaults, derived sizes and their errors; the weighted loss and
the advantage standardisation that both PPO learners share."""

import pytest
import torch
from selfplay.agents.ppo import PPOLearner, ppo_loss
from selfplay.agents.ppo.config import ENV_DEFAULTS, MultiUnitPPOConfig, PPOConfig, ppo_config
from selfplay.agents.ppo.gae import standardize_advantages


def test_family_defaults_come_from_one_table():
    assert ppo_config("rps") == PPOConfig()  # Table I
    smac = ppo_config("smac")
    assert isinstance(smac, MultiUnitPPOConfig)
    assert (smac.horizon, smac.learning_rate, smac.minibatch_size, smac.value_coef, smac.max_grad_norm,
            smac.bptt_length) == (3200, 5e-4, None, 1.0, 10.0, 10)
    assert (smac.agent_id, smac.last_action, smac.centralized_value) == (True, True, False)
    assert ppo_config("smac", minibatch_size=64, body="gru").minibatch_size == 64
    assert set(ENV_DEFAULTS) == {"rps", "smac"}


def test_unknown_settings_and_families_are_refused_by_name():
    with pytest.raises(ValueError, match="num_minibatches"):
        ppo_config("smac", num_minibatches=2)
    with pytest.raises(ValueError, match="centralized_value"):
        ppo_config("rps", centralized_value=True)  # a multi-unit setting: no effect on the one-unit learner
    with pytest.raises(ValueError, match="family"):
        ppo_config("atari")
    with pytest.raises(ValueError, match="body"):
        PPOConfig(body="gru")  # the one-unit network has no GRU body
    assert MultiUnitPPOConfig(body="gru").body == "gru"
    with pytest.raises(ValueError, match="config must be a PPOConfig"):
        PPOLearner(4, 3, ppo_config("smac"))  # each learner takes its own family's config
    with pytest.raises(ValueError, match="minibatch_size"):
        PPOConfig(horizon=32, minibatch_size=64)
    with pytest.raises(ValueError, match="minibatch_size"):
        PPOConfig(minibatch_size=0)
    with pytest.raises(ValueError, match="normalize_advantages"):
        PPOConfig(normalize_advantages=1)


@pytest.mark.parametrize("config, num_envs, expected", [
    # (rollout_length, batch, sequence_length, sequences, per minibatch, minibatches)
    (PPOConfig(), 64, (32, 2048, 1, 2048, 64, 32)),
    (PPOConfig(), 48, (43, 2064, 1, 2064, 64, 33)),  # the last minibatch holds the 16 left over
    (PPOConfig(body="lstm", bptt_length=5, horizon=64, minibatch_size=16), 4, (20, 80, 5, 16, 3, 6)),
    (PPOConfig(body="lstm", horizon=64, minibatch_size=16), 4, (16, 64, 16, 4, 1, 4)),  # one sequence at least
    (ppo_config("smac"), 128, (25, 3200, 1, 3200, 3200, 1)),  # MLP: one minibatch of the whole batch
    (ppo_config("smac", body="gru", minibatch_size=64), 64, (50, 3200, 10, 320, 6, 54)),
])
def test_derived_sizes(config, num_envs, expected):
    s = config.sizes(num_envs)
    assert (s.rollout_length, s.batch_size, s.sequence_length, s.num_sequences, s.sequences_per_minibatch,
            s.num_minibatches) == expected
    assert s.batch_size == s.rollout_length * num_envs


def test_a_minibatch_larger_than_the_batch_is_refused_when_the_config_is_made():
    """The batch is at least the horizon (rollouts are rounded up), so minibatch <= horizon is the check."""
    with pytest.raises(ValueError, match=r"minibatch_size must be None or at most horizon \(32\), got 64"):
        PPOConfig(horizon=32, minibatch_size=64)
    with pytest.raises(ValueError, match="num_envs"):
        PPOConfig().sizes(0)
    learner = PPOLearner(4, 3, PPOConfig(horizon=64, minibatch_size=64), seed=0)
    learner.act(torch.zeros(64, 4), None)  # one step per game, 64 samples: exactly one minibatch
    assert learner.sizes.num_minibatches == 1 and learner.sizes.batch_size == 64


def test_weighted_loss_ignores_weight_zero_samples_for_the_policy_but_not_the_value():
    # The hand-computed case of test_ppo_learning.test_ppo_loss_hand_computed plus a fourth sample of
    # weight 0 with a huge advantage: policy loss, entropy, KL and clip fraction are those of the first three.
    new = torch.log(torch.tensor([1.5, 0.5, 1.1, 3.0]))
    old = torch.zeros(4)
    adv = torch.tensor([1.0, 1.0, -1.0, 100.0])
    values, returns = torch.tensor([1.0, 2.0, 3.0, 0.0]), torch.tensor([0.0, 2.0, 5.0, 2.0])
    entropy = torch.tensor([0.9, 0.9, 0.9, 5.0])
    weight = torch.tensor([1.0, 1.0, 1.0, 0.0])
    loss, stats = ppo_loss(new, old, adv, values, returns, entropy, 0.2, 0.5, 0.01, weight)
    assert stats["policy_loss"].item() == pytest.approx(-0.2, abs=1e-6)
    assert stats["entropy"].item() == pytest.approx(0.9, abs=1e-6)
    assert stats["clip_fraction"].item() == pytest.approx(2 / 3)
    assert stats["value_loss"].item() == pytest.approx(0.5 * (1 + 0 + 4 + 4) / 4, abs=1e-6)  # every sample
    assert loss.item() == pytest.approx(-0.2 + 0.5 * 9 / 8 - 0.01 * 0.9, abs=1e-6)
    new_param = new.clone().requires_grad_(True)
    ppo_loss(new_param, old, adv, values, returns, entropy, 0.2, 0.5, 0.0, weight)[0].backward()
    assert torch.allclose(new_param.grad, torch.tensor([0.0, -0.5 / 3, 1.1 / 3, 0.0]), atol=1e-6)
    # all weights zero: no policy term at all (no division by zero)
    loss0, stats0 = ppo_loss(new, old, adv, values, returns, entropy, 0.2, 0.5, 0.01, torch.zeros(4))
    assert stats0["policy_loss"].item() == 0.0 and loss0.item() == pytest.approx(0.5 * 9 / 8)


def test_advantages_are_standardised_over_the_weighted_samples_with_the_population_deviation():
    adv = torch.tensor([1.0, 3.0, 100.0])
    out = standardize_advantages(adv, torch.tensor([True, True, False]))
    # mean 2 and population deviation 1 of (1, 3): (−1, 1, 98)
    assert torch.allclose(out, torch.tensor([-1.0, 1.0, 98.0]), atol=1e-6)
    full = standardize_advantages(adv)
    assert full.mean().item() == pytest.approx(0.0, abs=1e-5)
    assert full.std(unbiased=False).item() == pytest.approx(1.0, abs=1e-5)
    one = standardize_advantages(torch.tensor([5.0, 7.0]), torch.tensor([False, True]))
    assert torch.isfinite(one).all() and one[1].item() == 0.0  # one sample: deviation 0, not NaN
    untouched = torch.tensor([2.0, 4.0])
    assert torch.equal(standardize_advantages(untouched, torch.tensor([False, False])), untouched)


@pytest.mark.parametrize("env", ["rirrps", "smac:3m"])
def test_the_cli_ppo_options_reach_the_one_config_on_every_environment(env, tmp_path):
    """``--minibatch-size`` (and the other PPO options) build the environment's config: on SMAC this was a
    TypeError when the multi-unit learner had its own config."""
    import yaml

    from selfplay.cli import main
    from selfplay.training.registry import agent_kit, make_env

    out = tmp_path / "run"
    assert main(["train", "--env", env, "--minibatch-size", "16", "--horizon", "32", "--epochs", "1",
                 "--episodes", "4", "--checkpoints", "1", "--num-envs", "4", "--out", str(out)]) == 0
    saved = yaml.safe_load((out / "config.yaml").read_text())
    assert saved["agent_settings"] == {"horizon": 32, "minibatch_size": 16, "epochs": 1}
    learner = agent_kit("ppo-mlp", env).make_learner(make_env(env, 4, seed=0), 0, **saved["agent_settings"])
    family = "smac" if env.startswith("smac") else "rps"
    assert learner.config == ppo_config(family, horizon=32, minibatch_size=16, epochs=1)
    assert learner.config.learning_rate == ENV_DEFAULTS[family][1].get("learning_rate", 3e-4)  # the family's default
    sizes = learner.config.sizes(4)  # 8 steps of 4 games: two minibatches of 16
    assert (sizes.batch_size, sizes.minibatch_size, sizes.num_minibatches) == (32, 16, 2)
    assert len((out / "metrics.csv").read_text().splitlines()) > 1  # the run updated with those settings
