"""The MAPPO update's shortcuts keep its numbers: sequences without an active step are left out of the
masked losses without changing them, the inputs normalised once per update give the losses and gradients
of LayerNorm and Linear, and fitting the actor and the critic on two threads — the critic also while the next
rollout plays — gives what fitting them one after the other gives."""

import threading

import pytest
import torch
from selfplay.agents.mappo import MAPPOLearner, mappo_config
from selfplay.agents.mappo import learner as learner_module
from selfplay.agents.mappo.learner import actor_loss, critic_loss
from selfplay.agents.mappo.network import MAPPONetwork, NormalizedLinear
from selfplay.agents.mappo.rules import ValueNorm

from selfplay.utils.threads import torch_threads
from tests.mappo.test_mappo_learner import run_updates

L, S, D, A, H = 5, 6, 7, 4, 8  # steps per sequence, sequences, input size, actions, hidden size
DEAD = [1, 4]  # sequences whose every step is inactive


def minibatch(seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    masks = torch.rand(L, S, A, generator=g) < 0.6
    masks[..., 0] = True
    active = torch.rand(L, S, generator=g) < 0.7
    active[:, DEAD] = False
    active[0, [0, 2, 3, 5]] = True
    actions = torch.multinomial(masks.float().view(-1, A), 1, generator=g).view(L, S)
    return {"actor_in": torch.randn(L, S, D, generator=g), "critic_in": torch.randn(L, S, D, generator=g),
            "starts": torch.rand(L, S, generator=g) < 0.2, "masks": masks, "actions": actions,
            "log_probs": -torch.rand(L, S, generator=g) * 2, "advantages": torch.randn(L, S, generator=g),
            "old_values": torch.randn(L, S, generator=g), "returns": torch.randn(L, S, generator=g) * 3,
            "active": active}


def network() -> MAPPONetwork:
    return MAPPONetwork(D, D, A, hidden_size=H, layers=1, generator=torch.Generator().manual_seed(1))


def subset(mb: dict, h0: torch.Tensor, keep: list) -> tuple:
    return {k: v[:, keep] for k, v in mb.items()}, h0[keep]


def gradients(loss, params) -> list:
    return torch.autograd.grad(loss, params)


KEEP = [s for s in range(S) if s not in DEAD]


def test_sequences_without_an_active_step_leave_the_actor_loss_and_gradients_unchanged():
    net, mb = network(), minibatch()
    h0 = torch.randn(S, H, generator=torch.Generator().manual_seed(2))
    c = mappo_config()
    full_pi, full_ent, full_stats = actor_loss(net, mb, h0, c)
    part_pi, part_ent, part_stats = actor_loss(net, *subset(mb, h0, KEEP), c)
    torch.testing.assert_close(part_pi, full_pi)
    torch.testing.assert_close(part_ent, full_ent)
    for k in full_stats:
        torch.testing.assert_close(part_stats[k], full_stats[k])
    params = net.actor_parameters()
    for a, b in zip(gradients(full_pi - 0.01 * full_ent, params), gradients(part_pi - 0.01 * part_ent, params)):
        torch.testing.assert_close(b, a)
    # without the active masks the dead sequences count, and leaving them out changes the loss
    unmasked = mappo_config(policy_active_masks=False)
    assert not torch.allclose(actor_loss(net, mb, h0, unmasked)[0], actor_loss(net, *subset(mb, h0, KEEP), unmasked)[0])


def test_sequences_without_an_active_step_leave_the_masked_value_loss_and_gradients_unchanged():
    net, mb = network(), minibatch(3)
    h0 = torch.randn(S, H, generator=torch.Generator().manual_seed(4))
    norm = ValueNorm()
    norm.update(mb["returns"])
    c = mappo_config(value_active_masks=True)
    full, part = critic_loss(net, mb, h0, c, norm), critic_loss(net, *subset(mb, h0, KEEP), c, norm)
    torch.testing.assert_close(part, full)
    for a, b in zip(gradients(full, net.critic_parameters()), gradients(part, net.critic_parameters())):
        torch.testing.assert_close(b, a)
    unmasked = mappo_config(value_active_masks=False)  # the SMAC scripts' setting: dead agents' values count
    assert not torch.allclose(critic_loss(net, mb, h0, unmasked, norm),
                              critic_loss(net, *subset(mb, h0, KEEP), unmasked, norm))


def test_normalized_linear_gradients_are_those_of_its_formula():
    g = torch.Generator().manual_seed(5)
    x_hat = torch.nn.functional.layer_norm(torch.randn(9, 5, generator=g, dtype=torch.float64) * 3 + 1, (5,))
    params = [torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True) for shape in ((5,), (5,), (4, 5), (4,))]
    assert torch.autograd.gradcheck(lambda *p: NormalizedLinear.apply(x_hat, *p), params)
    gamma, beta, weight, bias = params
    torch.testing.assert_close(NormalizedLinear.apply(x_hat, *params), (x_hat * gamma + beta) @ weight.T + bias)


def test_inputs_normalised_once_give_the_losses_and_gradients_of_the_modules():
    """The update normalises its inputs once (``RecurrentBase.normalize``) and replays them through
    ``NormalizedLinear``; against LayerNorm then Linear on the raw inputs, with an affine part that is not
    the identity, the losses and every parameter's gradient agree to float32 rounding."""
    net, mb = network(), minibatch(6)
    with torch.no_grad():
        for base in (net.actor, net.critic):
            base.feature_norm.weight.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(7))
            base.feature_norm.bias.uniform_(-0.5, 0.5, generator=torch.Generator().manual_seed(8))
    h0 = torch.randn(S, H, generator=torch.Generator().manual_seed(9))
    c, norm = mappo_config(), ValueNorm()
    norm.update(mb["returns"])
    scaled = {**mb, "actor_in": mb["actor_in"] * 4 + 2, "critic_in": mb["critic_in"] * 3 - 1}
    normalised = {**scaled, "actor_in": net.actor.normalize(scaled["actor_in"]),
                  "critic_in": net.critic.normalize(scaled["critic_in"])}
    pi, ent, _ = actor_loss(net, scaled, h0, c)
    pi_n, ent_n, _ = actor_loss(net, normalised, h0, c, normalized=True)
    torch.testing.assert_close(pi_n, pi)
    params = net.actor_parameters()
    for a, b in zip(gradients(pi - 0.01 * ent, params), gradients(pi_n - 0.01 * ent_n, params)):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    v, v_n = critic_loss(net, scaled, h0, c, norm), critic_loss(net, normalised, h0, c, norm, normalized=True)
    torch.testing.assert_close(v_n, v)
    for a, b in zip(gradients(v, net.critic_parameters()), gradients(v_n, net.critic_parameters())):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    gamma_grad = torch.autograd.grad(actor_loss(net, normalised, h0, c, normalized=True)[0], net.actor.feature_norm.weight)
    assert gamma_grad[0].abs().sum() > 0  # the affine part is trained: its gradient is not zero


def assert_same_run(one, two):
    """Two ``run_updates`` results are bit for bit the same: metrics, actions, weights, value normaliser."""
    (a, metrics_a, actions_a), (b, metrics_b, actions_b) = one, two
    assert metrics_a == metrics_b and torch.equal(actions_a, actions_b)
    for (name, x), y in zip(a.network.state_dict().items(), b.network.state_dict().values()):
        assert torch.equal(x, y), name
    assert a.value_norm.state_dict() == b.value_norm.state_dict()


@pytest.mark.parametrize("settings", [{}, {"num_minibatches": 2, "value_active_masks": True}])
def test_fitting_actor_and_critic_on_two_threads_gives_the_same_numbers(settings):
    with torch_threads(1):
        one = run_updates(2, **settings, update_threads=1)
        two = run_updates(2, **settings, update_threads=2)
    assert_same_run(one, two)


@pytest.mark.parametrize("settings", [{}, {"num_minibatches": 2, "value_active_masks": True},
                                      {"rollout_length": 10}])
def test_the_critic_fitting_while_the_next_rollout_plays_gives_the_numbers_of_update(settings, monkeypatch):
    """With ``update_threads=2`` the critic fits on after ``start_update`` returns; held until the next rollout is
    acted (the worst case: every buffer row rewritten meanwhile), it gives the weights, metrics and actions of
    plain ``update`` calls one pass after the other. ``rollout_length`` 10 = one chunk: the critic's inputs
    would be views of the buffer."""
    hold = threading.Event()
    plain_critic_loss = learner_module.critic_loss

    def held_critic_loss(*args, **kwargs):
        assert hold.wait(timeout=120)
        return plain_critic_loss(*args, **kwargs)

    with torch_threads(1):
        one = run_updates(2, updates=3, **settings, update_threads=1)
        monkeypatch.setattr(learner_module, "critic_loss", held_critic_loss)
        two = run_updates(2, 3, hold, **settings, update_threads=2)
    assert_same_run(one, two)


def test_finish_update_follows_start_update():
    with pytest.raises(RuntimeError, match="finish_update\\(\\) follows start_update"):
        MAPPOLearner(5, 6, 2, 3, mappo_config(), seed=0).finish_update()


def test_update_threads_is_one_or_two():
    with pytest.raises(ValueError, match="update_threads must be 1 or 2"):
        mappo_config(update_threads=3)


def test_a_learner_resumes_under_another_update_thread_count_but_not_other_settings():
    from selfplay.agents.mappo import MAPPOLearner

    saved = MAPPOLearner(5, 6, 2, 3, mappo_config(update_threads=1), seed=0).state_dict()
    MAPPOLearner(5, 6, 2, 3, mappo_config(update_threads=2), seed=0).load_state_dict(saved)
    with pytest.raises(ValueError, match="state\\['config'\\] must match"):
        MAPPOLearner(5, 6, 2, 3, mappo_config(epochs=3), seed=0).load_state_dict(saved)


def test_a_run_against_the_builtin_ai_resumes_across_update_threads(tmp_path):
    """A run directory written with one thread count (or before the setting existed) resumes with another."""
    from selfplay.training.vs_builtin import VsAIConfig, train_vs_builtin

    settings = {"num_envs": 2, "rollout_length": 10, "epochs": 1, "eval_interval": 20, "eval_episodes": 2}
    out = tmp_path / "run"
    train_vs_builtin(VsAIConfig(env="smac:3m", steps=20, agent_settings={**settings, "update_threads": 1}), out,
                     log=lambda s: None)
    resumed = train_vs_builtin(VsAIConfig(env="smac:3m", steps=40, agent_settings=settings), out, log=lambda s: None)
    assert (resumed.steps, resumed.updates) == (40, 2)
    with pytest.raises(ValueError, match="other settings"):
        train_vs_builtin(VsAIConfig(env="smac:3m", steps=60, agent_settings={**settings, "epochs": 2}), out,
                         log=lambda s: None)


def test_the_update_passes_exactly_the_sequences_with_an_active_step(monkeypatch):
    """Each epoch of the actor's pass sees every (chunk, game, agent) sequence with an active step once and
    no other: a 3m rollout against the scripted AI, long enough for marines to die."""
    from selfplay.agents.mappo import learner as learner_module

    live_counts, seen = [], []
    evaluate = learner_module.MAPPOLearner.evaluate_rollout

    def evaluate_and_count(self, *args):
        c, active = self.config, self.buffer["active"]
        chunks = active.view(c.rollout_length // c.chunk_length, c.chunk_length, *active.shape[1:])
        live_counts.append(int(chunks.any(1).sum()))
        seen.append([])
        return evaluate(self, *args)

    def counting_actor_loss(net, mb, h0, c, normalized=False):
        assert bool(mb["active"].any(0).all())  # no sequence without an active step
        seen[-1].append(mb["active"].shape[1])
        return actor_loss(net, mb, h0, c, normalized)

    monkeypatch.setattr(learner_module.MAPPOLearner, "evaluate_rollout", evaluate_and_count)
    monkeypatch.setattr(learner_module, "actor_loss", counting_actor_loss)
    learner, _, _ = run_updates(0, updates=3, rollout_length=40, num_minibatches=2, epochs=2)
    c, total = learner.config, learner.config.rollout_length // learner.config.chunk_length * learner.num_envs * 3
    assert any(n < total for n in live_counts)  # some sequences were all dead
    for live, sizes in zip(live_counts, seen):
        assert len(sizes) == c.epochs * c.num_minibatches and sum(sizes) == c.epochs * live


def test_the_critic_takes_its_own_epochs_and_learning_rate():
    """``critic_epochs`` sets the critic's Adam steps per update apart from the actor's (SMACv2's pymarl-style
    PPO: ``mini_epochs_actor``/``mini_epochs_critic``); ``None`` is ``epochs``, bit for bit; the critic's
    step size is ``critic_learning_rate``."""
    with torch_threads(1):
        same, metrics_same, actions_same = run_updates(2, epochs=2)
        explicit, metrics_explicit, actions_explicit = run_updates(2, epochs=2, critic_epochs=2)
        apart, _, _ = run_updates(2, updates=1, epochs=1, critic_epochs=3, critic_learning_rate=1e-3)
    assert metrics_same == metrics_explicit and torch.equal(actions_same, actions_explicit)
    for (name, x), y in zip(same.network.state_dict().items(), explicit.network.state_dict().values()):
        assert torch.equal(x, y), name
    steps = lambda optimizer: {int(s["step"]) for s in optimizer.state_dict()["state"].values()}  # noqa: E731
    assert steps(apart.actor_optimizer) == {1} and steps(apart.critic_optimizer) == {3}  # one update, one minibatch
    assert [g["lr"] for g in apart.critic_optimizer.param_groups] == [1e-3]
    assert [g["lr"] for g in apart.actor_optimizer.param_groups] == [5e-4]


def test_critic_epochs_is_checked_and_resumes_runs_saved_before_it_existed():
    with pytest.raises(ValueError, match="critic_epochs must be an integer >= 1"):
        mappo_config(critic_epochs=0)
    assert (mappo_config(epochs=4).value_epochs, mappo_config(epochs=4, critic_epochs=9).value_epochs) == (4, 9)
    from selfplay.agents.mappo import MAPPOLearner
    from selfplay.agents.mappo.config import ADDED_LATER

    from selfplay.training.trainer import run_identity

    saved = MAPPOLearner(5, 6, 2, 3, mappo_config(), seed=0).state_dict()
    for name in ADDED_LATER:  # critic_epochs, policy_gain, recurrent: a learner saved before they existed ran
        del saved["config"][name]  # at their defaults
    MAPPOLearner(5, 6, 2, 3, mappo_config(), seed=0).load_state_dict(saved)
    with pytest.raises(ValueError, match="state\\['config'\\] must match"):
        MAPPOLearner(5, 6, 2, 3, mappo_config(critic_epochs=20), seed=0).load_state_dict(saved)
    with pytest.raises(ValueError, match="state\\['config'\\] must match"):
        MAPPOLearner(5, 6, 2, 3, mappo_config(recurrent=False), seed=0).load_state_dict(saved)
    # a run directory's config.yaml written before them is the same run (run_identity decides resumes)
    old_run = {"env": "smac:3m", "resolved_agent_settings": dict(saved["config"])}
    now = {"env": "smac:3m", "resolved_agent_settings": mappo_config().to_dict()}
    assert run_identity(old_run) == run_identity(now)
    assert run_identity(old_run) != run_identity({**now, "resolved_agent_settings": mappo_config(policy_gain=1.0).to_dict()})
