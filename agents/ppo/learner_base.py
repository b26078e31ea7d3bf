"""What the PPO learners (one-unit and multi-unit) share: the PPO update, recording outcomes and exact
resumption (docs/design/selfplay.md §5).

The update (``PPOLearnerBase.update``), once the rollout is full:

    A, R = the subclass's GAE(γ, λ) (``gae.compute_gae``), with a 0/1 policy-gradient weight w (or none)
    A standardised over the samples with w = 1 (``gae.standardize_advantages``)
    for each of ``epochs`` epochs, for each shuffled minibatch (``config.sizes``):
        loss = ``loss.ppo_loss`` (clipped surrogate + c_v · value loss − c_e · entropy)
        clip the gradient norm of each separately optimised network to ``max_grad_norm``; one Adam step

A learner may take the loss's gradient written out instead of autograd's (``_written_out_gradient``:
the one-unit learner on a rollout with every action legal, ``mlp_step.mlp_ppo_step`` for the MLP body,
``lstm_step.lstm_ppo_step`` for the LSTM): the same loss and minibatches, equal to float rounding,
without the autograd graph (and, for the LSTM, the per-piece oneDNN calls) that is most of a small
network's update.

One Adam variant for both: PyTorch's fused kernel (``torch.optim.Adam(fused=True)``, CPU and CUDA), the
same update rule as the plain for-each loop in one kernel per step. It is the variant the one-unit
learner's Table I results and learning tests were made with; ``benchmarks/ppo_adam.py`` times both
(docs/results/speed.md), and the choice keeps those results rather than buying speed.
"""

from __future__ import annotations

import copy
import numbers

import torch

from selfplay.utils.seeding import Stream, derive_seed

from .config import ENV_DEFAULTS, BatchSizes, ppo_config
from .gae import standardize_advantages
from .loss import ppo_loss


class PPOLearnerBase:
    """``record`` / ``ready`` on the rollout ``buffer``, and ``state_dict`` / ``load_state_dict`` over what
    a PPO learner holds: ``config`` and ``spec`` (checked on load), ``seed``, ``weight_version``,
    ``network``, ``optimizer``, the sampling ``generator`` and the ``buffer`` with its position (rebuilt
    by ``_ensure_buffer``); ``snapshot`` / ``restore`` through the subclass's ``frozen_class``, and the
    rollout length; the PPO ``update``. Subclasses provide ``_new_buffer(batch, rollout_length)``,
    ``_advantages()``, ``_evaluate(idx, starts)``, ``_clip_groups()`` and ``_refresh_carried_value()``."""

    frozen_class: type
    family: str  # the ``config.ENV_DEFAULTS`` family whose config class this learner takes

    def _setup(self, config, seed, device, spec, network_class) -> None:
        """The common construction: check ``config`` (default ``ppo_config(family)``) and ``seed``, then the
        network (initialised from ``derive_seed(seed, INITIAL_WEIGHTS)``), the sampling generator (``seed``), the optimiser and an empty rollout."""
        config_class = ENV_DEFAULTS[self.family][0]
        self.config = ppo_config(self.family) if config is None else config
        if type(self.config) is not config_class:
            raise ValueError(f"config must be a {config_class.__name__} (e.g. ppo_config({self.family!r})), "
                             f"got {type(config).__name__}")
        if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        self.spec = spec(self.config)
        self.device = torch.device(device)
        self.generator = torch.Generator(device=self.device).manual_seed(self.seed)
        init = torch.Generator().manual_seed(derive_seed(self.seed, Stream.INITIAL_WEIGHTS))  # not the sampler's stream
        self.network = network_class(self.spec, init).to(self.device)
        self.optimizer = self._new_optimizer()
        self.weight_version = 0
        self.buffer = None
        self._snapshot = None

    @property
    def num_envs(self) -> int | None:
        """Games per step of the current rollout (fixed by the first ``act``), ``None`` before it."""
        return None if self.buffer is None else self.buffer.num_envs

    @property
    def rollout_length(self) -> int | None:
        """Steps per game of a rollout, ``None`` before the first ``act``."""
        return None if self.buffer is None else self.buffer.rollout_length

    def snapshot(self):
        """A frozen copy of the current weights; the same object while ``weight_version`` is unchanged."""
        if self._snapshot is None or self._snapshot.weight_version != self.weight_version:
            self._snapshot = self.frozen_class(copy.deepcopy(self.network), self.weight_version,
                                               derive_seed(self.seed, Stream.SNAPSHOT, self.weight_version))
        return self._snapshot

    def restore(self, frozen) -> None:
        """Take ``frozen``'s weights (exploiter resets): fresh optimiser, empty rollout, new weight version."""
        if getattr(frozen, "spec", None) != self.spec:
            raise ValueError(f"frozen must be a policy with the learner's network spec {self.spec}, "
                             f"got {getattr(frozen, 'spec', frozen)}")
        self.network.load_state_dict(frozen.network.state_dict())
        self.optimizer = self._new_optimizer()
        if self.buffer is not None:
            self.buffer.filled, self.buffer.pending = 0, False
        self.weight_version += 1
        self._snapshot = None

    def _ensure_buffer(self, batch: int) -> None:
        """A rollout buffer for ``batch`` games of ``config.sizes(batch).rollout_length`` steps (which also
        checks the minibatch against the batch); the batch may change only between rollouts."""
        if self.buffer is not None:
            if batch == self.buffer.num_envs:
                return
            if self.buffer.filled > 0 or self.buffer.pending:
                raise ValueError(f"obs must keep the batch size of the current rollout ({self.buffer.num_envs}), "
                                 f"got {batch}")
        self.sizes: BatchSizes = self.config.sizes(batch)
        self.buffer = self._new_buffer(batch, self.sizes.rollout_length)

    def record(self, reward, done) -> None:
        """The (team) reward of the step just acted and whether it ended each game, ``(num_envs,)`` each."""
        if self.buffer is None or not self.buffer.pending:
            raise RuntimeError("record() must follow an act() of the learner")
        n = self.buffer.num_envs
        reward = torch.as_tensor(reward, dtype=torch.float32, device=self.device)
        done = torch.as_tensor(done, device=self.device)
        if tuple(reward.shape) != (n,) or tuple(done.shape) != (n,):
            raise ValueError(f"reward and done must have shape ({n},), got {tuple(reward.shape)} and {tuple(done.shape)}")
        self.buffer.store_outcome(reward, done.bool())

    def ready(self) -> bool:
        """The rollout is full (one step past the horizon, whose value bootstraps the update)."""
        return self.buffer is not None and self.buffer.full

    def state_dict(self) -> dict:
        """Everything needed to resume exactly: weights, optimiser, rollout buffer and position, RNG."""
        return copy.deepcopy({
            "config": self.config.to_dict(),
            "spec": self.spec.to_dict(),
            "seed": self.seed,
            "weight_version": self.weight_version,
            "network": self.network.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "generator": self.generator.get_state(),
            "buffer": None if self.buffer is None else self.buffer.state_dict(),
        })

    def load_state_dict(self, state: dict) -> None:
        for key, mine in (("config", self.config.to_dict()), ("spec", self.spec.to_dict())):
            if state.get(key) != mine:
                raise ValueError(f"state[{key!r}] must match this learner's {key} {mine}, got {state.get(key)}")
        self.network.load_state_dict(state["network"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"])
        self.seed = int(state["seed"])
        self.weight_version = int(state["weight_version"])
        self._snapshot = None
        self.buffer = None
        if state["buffer"] is not None:
            self._ensure_buffer(int(state["buffer"]["num_envs"]))
            self.buffer.load_state_dict(state["buffer"])

    # ------------------------------------------------------------------ the PPO update

    def update(self) -> dict:
        """One PPO update on the full rollout (module docstring); returns scalar metrics and bumps
        ``weight_version``."""
        if not self.ready():
            raise RuntimeError("update() needs a full rollout: call it when ready() is true")
        cfg, buf = self.config, self.buffer
        T = buf.rollout_length
        advantages, returns, weight = self._advantages()
        self._prepare_update()
        if cfg.normalize_advantages:
            advantages = standardize_advantages(advantages, weight)
        actions, old_log_probs = buf.actions[:T], buf.log_probs[:T]
        stats = []
        if self._written_out_gradient():
            stats = self._update_written_out(actions, old_log_probs, advantages, returns)
        for _ in range(0 if stats else cfg.epochs):
            for idx, logits, values in self._minibatches():
                log_probs = torch.log_softmax(logits, dim=-1)
                new_log_prob = log_probs.gather(-1, actions[idx][..., None]).squeeze(-1)
                entropy = -(log_probs.exp() * log_probs).sum(-1)
                loss, minibatch_stats = ppo_loss(new_log_prob, old_log_probs[idx], advantages[idx], values,
                                                 returns[idx], entropy, cfg.clip_coef, cfg.value_coef,
                                                 cfg.entropy_coef, None if weight is None else weight[idx].float())
                self.optimizer.zero_grad()
                loss.backward()
                self._clip_and_step()
                stats.append(minibatch_stats)

        metrics = {name: torch.stack([s[name] for s in stats]).mean().item() for name in stats[0]}
        y, v = returns.flatten(), buf.values[:T].flatten()
        metrics.update(explained_variance=(1.0 - ((y - v).var() / y.var()).item()) if y.var() > 0 else float("nan"),
                       mean_reward=buf.rewards[:T].mean().item(), transitions=T * buf.num_envs)
        if weight is not None:
            metrics["active_fraction"] = weight.float().mean().item()
        self.weight_version += 1
        metrics["weight_version"] = self.weight_version
        buf.carry_over()
        self._refresh_carried_value()
        return metrics

    def _prepare_update(self) -> None:
        """What a subclass reads once per update (before the minibatches); nothing here."""

    def _written_out_gradient(self) -> bool:
        """Whether this update takes the written-out gradient (``mlp_step`` / ``lstm_step``; a subclass's
        choice); no here."""
        return False

    def _update_written_out(self, actions, old_log_probs, advantages, returns) -> list[dict]:
        """The epochs of ``update`` with ``mlp_step.mlp_ppo_step`` (feed-forward) or ``lstm_step.lstm_ppo_step``
        (LSTM) in place of the autograd loss and backward: the same shuffles (``_minibatches``'s draws), the
        same clipping and Adam step. The samples (feed-forward) or sequences (recurrent: those of
        ``_minibatch_indices``) are laid out once per update and shuffled once per epoch, so that a minibatch
        is a slice of each tensor."""
        from .lstm_step import lstm_ppo_step
        from .mlp_step import mlp_ppo_step

        cfg, s, buf, net = self.config, self.sizes, self.buffer, self.network
        coefs = (cfg.clip_coef, cfg.value_coef, cfg.entropy_coef)
        if self.recurrent:
            T, L = s.rollout_length, s.sequence_length

            def by_sequence(t):  # (T, N, ...) -> (sequences, L, ...); sequence k·N + n: steps kL … kL + L − 1 of game n
                return t[:T].unflatten(0, (T // L, L)).transpose(1, 2).flatten(0, 1)

            laid_out = [by_sequence(t) for t in (buf.obs, buf.starts, actions, old_log_probs, advantages, returns)]
            laid_out += [h[:T:L].flatten(0, 1) for h in buf.rnn]  # the state stored at each sequence's first step

            def step(obs, starts, act, old, adv, ret, h, c):
                obs, starts, act, old, adv, ret = (t.transpose(0, 1) for t in (obs, starts, act, old, adv, ret))
                return lstm_ppo_step(net, obs, (h, c), starts, act, old, adv, ret, *coefs)  # time-major: (L, B, ...)
        else:
            laid_out = [t.reshape(-1, *t.shape[2:]) for t in (buf.obs[:s.rollout_length], actions, old_log_probs,
                                                              advantages, returns)]

            def step(obs, act, old, adv, ret):
                return mlp_ppo_step(net, obs, act, old, adv, ret, *coefs)

        stats = []
        for _ in range(cfg.epochs):
            order = torch.randperm(s.num_sequences, generator=self.generator, device=self.device)
            shuffled = [t[order] for t in laid_out]
            for start in range(0, s.num_sequences, s.sequences_per_minibatch):
                stats.append(step(*(t[start:start + s.sequences_per_minibatch] for t in shuffled)))
                self._clip_and_step()
        return stats

    def _clip_and_step(self) -> None:
        for group in self._clip_groups():
            torch.nn.utils.clip_grad_norm_(group, self.config.max_grad_norm)
        self.optimizer.step()

    def _minibatches(self):
        """Yield ``(idx, logits, values)`` per shuffled minibatch of ``_minibatch_indices``."""
        for idx, starts in self._minibatch_indices():
            yield (idx, *self._evaluate(idx, starts))

    def _minibatch_indices(self):
        """Yield ``(idx, starts)`` per shuffled minibatch; ``idx`` indexes ``(T, num_envs, ...)`` rollout
        tensors.

        Feed-forward bodies: ``idx`` is a pair of flat (time, game) index tensors of samples, ``starts``
        ``None``. Recurrent bodies: whole sequences; ``idx`` is a pair of ``(L, n_seq)`` index tensors and
        ``starts`` the ``(t0, game)`` of each sequence's first step, from whose stored recurrent state the
        subclass replays it.
        """
        s = self.sizes
        N, L = s.num_envs, s.sequence_length
        order = torch.randperm(s.num_sequences, generator=self.generator, device=self.device)
        steps = torch.arange(L, device=self.device)[:, None]
        for start in range(0, s.num_sequences, s.sequences_per_minibatch):
            seq = order[start:start + s.sequences_per_minibatch]
            if not self.recurrent:
                yield (seq // N, seq % N), None
                continue
            t0, game = (seq // N) * L, seq % N
            yield (t0[None, :] + steps, game[None, :].expand(L, -1)), (t0, game)

    def _new_optimizer(self) -> torch.optim.Adam:
        return torch.optim.Adam(self.network.parameters(), lr=self.config.learning_rate, eps=self.config.adam_eps,
                                fused=True)
