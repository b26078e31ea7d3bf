"""MAPPO's magnet (``MAPPOConfig.magnet_coef``): the penalty α·KL(π ‖ ρ) by hand, the magnet's probabilities are the
acting actor's at a reset and follow its own recurrent state across rollouts, the penalty holds the policy near the
magnet, and the magnet resumes with the learner."""

import math

import pytest
import torch
from selfplay.agents.mappo import MAPPOLearner, mappo_config
from selfplay.agents.mappo import learner as learner_module
from selfplay.agents.mappo.learner import actor_loss
from selfplay.agents.mappo.network import MASKED_LOGIT
from selfplay.agents.mappo.rules import kl_divergence, masked_mean

from tests.mappo.test_mappo_learner import run_updates
from tests.mappo.test_mappo_update import minibatch, network


def test_kl_divergence_by_hand_with_a_masked_action():
    p = torch.tensor([0.5, 0.5, 0.0])
    q = torch.tensor([0.25, 0.75, 0.0])
    mask = torch.tensor([True, True, False])
    log_p = torch.log_softmax(torch.where(mask, p.clamp(min=1e-30).log(), torch.tensor(MASKED_LOGIT)), -1)
    log_q = torch.log_softmax(torch.where(mask, q.clamp(min=1e-30).log(), torch.tensor(MASKED_LOGIT)), -1)
    want = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert kl_divergence(log_p, log_q).item() == pytest.approx(want, abs=1e-7)
    assert kl_divergence(log_p, log_p).item() == 0.0


def test_the_actor_loss_adds_alpha_times_the_active_mean_kl_to_the_magnet():
    net, mb = network(), minibatch()
    h0 = torch.zeros(mb["actor_in"].shape[1], net.sizes["hidden_size"])
    g = torch.Generator().manual_seed(5)
    magnet = torch.log_softmax(torch.randn(*mb["masks"].shape, generator=g).masked_fill(~mb["masks"], MASKED_LOGIT), -1)
    plain, _, _ = actor_loss(net, mb, h0, mappo_config())
    alpha = 0.3
    with_magnet, _, stats = actor_loss(net, {**mb, "magnet_log_probs": magnet}, h0, mappo_config(magnet_coef=alpha))
    feats = net.actor.unroll(mb["actor_in"], h0, mb["starts"])
    log_pi = torch.log_softmax(net.policy_logits(feats).masked_fill(~mb["masks"], MASKED_LOGIT), -1)
    kl = (log_pi.exp() * (log_pi - magnet)).sum(-1)  # written out: Σ_a π(a) log(π(a)/ρ(a)), per step
    want_kl = (kl * mb["active"]).sum() / mb["active"].sum()
    assert stats["magnet_kl"].item() == pytest.approx(want_kl.item(), rel=1e-5)
    assert (with_magnet - plain).item() == pytest.approx(alpha * want_kl.item(), rel=1e-4)
    # with the magnet equal to π the penalty and its gradient vanish
    same, _, stats = actor_loss(net, {**mb, "magnet_log_probs": log_pi.detach()}, h0, mappo_config(magnet_coef=alpha))
    assert stats["magnet_kl"].item() == pytest.approx(0.0, abs=1e-6)
    grads = torch.autograd.grad(same - plain, net.actor_parameters(), allow_unused=True)
    assert max(g.abs().max().item() for g in grads if g is not None) < 1e-6
    assert masked_mean(kl, mb["active"]).item() == pytest.approx(want_kl.item(), rel=1e-6)


def recorded_magnet(monkeypatch) -> list:
    """Patch ``MAPPOLearner._magnet_log_probs`` to record ``(magnet log-probs of the acted actions, acted log-probs,
    whether the magnet was replaced, active masks)`` at every update."""
    calls, real = [], learner_module.MAPPOLearner._magnet_log_probs

    def recording(self):
        before = self.magnet
        out = real(self)
        reset = self.magnet is not before
        calls.append((out.gather(-1, self.buffer["actions"][..., None]).squeeze(-1), self.buffer["log_probs"].clone(),
                      reset, self.buffer["active"].clone()))
        return out

    monkeypatch.setattr(learner_module.MAPPOLearner, "_magnet_log_probs", recording)
    return calls


def test_the_magnet_is_the_actor_that_acted_at_a_reset_and_carries_its_recurrent_state(monkeypatch):
    calls = recorded_magnet(monkeypatch)
    # a step size too small to move the weights: the magnet (the first actor) acts as the actor does, so its
    # probabilities over later rollouts — which start mid-game, from its carried recurrent state — are the acted ones
    run_updates(0, updates=3, magnet_coef=0.5, magnet_interval=100, learning_rate=1e-12)
    assert [reset for *_, reset, _ in calls] == [True, False, False]
    for magnet, acted, _, active in calls:
        assert torch.allclose(magnet[active], acted[active], atol=1e-5)
    # at the paper's step size the actor moves away from its magnet between resets, and back onto it at a reset
    calls.clear()
    _, metrics, _ = run_updates(0, updates=3, magnet_coef=0.5, magnet_interval=2)
    assert [reset for *_, reset, _ in calls] == [True, False, True]
    magnet, acted, _, active = calls[1]
    assert (magnet[active] - acted[active]).abs().max() > 1e-3
    magnet, acted, _, active = calls[2]
    assert torch.allclose(magnet[active], acted[active], atol=1e-5)
    assert all(m["magnet_kl"] >= 0 for m in metrics)


def test_a_strong_magnet_holds_the_policy_near_it():
    _, weak, _ = run_updates(1, updates=4, magnet_coef=1e-6, magnet_interval=100, learning_rate=3e-3)
    _, strong, _ = run_updates(1, updates=4, magnet_coef=3.0, magnet_interval=100, learning_rate=3e-3)
    assert weak[-1]["magnet_kl"] > 1e-3
    assert strong[-1]["magnet_kl"] < 0.5 * weak[-1]["magnet_kl"]


def test_the_magnet_resumes_with_the_learner_and_is_kept_only_when_used():
    learner, _, _ = run_updates(2, updates=3, magnet_coef=0.5, magnet_interval=2)
    state = learner.state_dict()
    assert "magnet" in state
    resumed = MAPPOLearner(learner.obs_size, learner.state_size, learner.n_agents, learner.n_actions,
                           learner.config, seed=9)
    resumed.load_state_dict(state)
    for (name, x), y in zip(learner.magnet.state_dict().items(), resumed.magnet.state_dict().values()):
        assert torch.equal(x, y), name
    assert any(not torch.equal(x, y) for x, y in zip(learner.magnet.state_dict().values(),
                                                     learner.network.state_dict().values()))
    plain, _, _ = run_updates(2, updates=1)
    assert plain.magnet is None and "magnet" not in plain.state_dict()


@pytest.mark.parametrize("setting, value", [("magnet_coef", -0.1), ("magnet_coef", float("nan")),
                                            ("magnet_interval", 0), ("magnet_interval", 2.5)])
def test_bad_magnet_settings_are_named(setting, value):
    with pytest.raises(ValueError, match=setting):
        mappo_config(**{setting: value})


def test_magnet_settings_at_their_defaults_resume_runs_saved_before_they_existed():
    from selfplay.agents.mappo.config import without_speed_settings

    old = {k: v for k, v in mappo_config().to_dict().items() if not k.startswith("magnet")}
    assert without_speed_settings(old) == without_speed_settings(mappo_config().to_dict())
    assert without_speed_settings(old) != without_speed_settings(mappo_config(magnet_coef=0.1).to_dict())


def test_the_magnet_options_reach_the_learner_settings_of_train_and_compare(tmp_path, monkeypatch):
    from selfplay.cli import _mappo_self_play_settings, build_parser, main
    from selfplay.evaluation import compare as compare_module

    args = build_parser().parse_args(["train", "--env", "smac:3m", "--agent", "mappo", "--magnet-coef", "0.5",
                                      "--magnet-interval", "3", "--out", "x"])
    settings = _mappo_self_play_settings(args, {}, 64)
    assert (settings["magnet_coef"], settings["magnet_interval"]) == (0.5, 3)
    assert mappo_config(**settings).magnet_coef == 0.5
    seen = []  # compare: the configuration `selfplay compare` hands over, its runs not trained
    monkeypatch.setattr(compare_module, "compare", lambda config, out, executor=None: seen.append(config) or "")
    main(["compare", "--env", "smac:3m", "--agents", "mappo", "--quick", "--magnet-coef", "0.5",
          "--magnet-interval", "3", "--out", str(tmp_path / "cmp")])
    (config,) = seen
    assert (config.mappo["magnet_coef"], config.mappo["magnet_interval"]) == (0.5, 3)
    run = config.train_configs()[0].settings()
    assert (run.magnet_coef, run.magnet_interval) == (0.5, 3)


def test_an_exploiter_reset_moves_the_magnet_to_the_new_weights():
    """``MAPPOSelfPlayLearner.restore`` (a league exploiter's reset) drops the old magnet: the next update copies
    the restored weights, rather than pulling them back towards the weights before the reset."""
    import copy

    from tests.mappo.test_mappo_selfplay import small_learner

    _, learner = small_learner(seed=0, magnet_coef=0.5)
    _, other = small_learner(seed=1, magnet_coef=0.5)
    learner.inner.magnet = copy.deepcopy(learner.inner.network)
    learner.restore(other.snapshot())
    assert learner.inner.magnet is None
