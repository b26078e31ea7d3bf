"""PPO learner for a batch of games (the Learner contract of ``selfplay/policy.py``; spec-selfplay §5).

Each environment step the loop calls ``act(obs, state, mask, episode_start)`` for the learner's seat
of every game (each observation is from the learner's own view, whichever seat it holds in that
game) and then ``record(reward, done)``. A rollout is ``rollout_length = ceil(horizon / num_envs)``
steps of every game (``horizon`` transitions in all). ``ready()`` turns true one step later — the
step after the rollout supplies the bootstrap value V(s_T) and then becomes the first step of the
next rollout — and ``update()`` runs PPO on the rollout:

    A = GAE(γ, λ) (``gae.compute_gae``), standardised over the rollout; returns R = A + V_old
    for each of ``epochs`` epochs, for each minibatch (shuffled):
        ratio   = exp(log π(a|s) − log π_old(a|s))                      (``loss.ppo_loss``)
        L_clip  = mean(max(−A·ratio, −A·clip(ratio, 1 − ε, 1 + ε)))
        L_value = ½ · mean((V(s) − R)²)
        loss    = L_clip + c_v · L_value − c_e · mean(entropy)
        Adam step after clipping the global gradient norm to ``max_grad_norm``

MLP minibatches are ``minibatch_size`` transitions drawn from the whole rollout. LSTM minibatches are
whole sequences (truncated BPTT): each game's rollout segment is cut into sequences of
``bptt_length`` (default: the whole segment), each replayed from the recurrent state recorded at its
first step, with the state zeroed at every episode start inside it.
"""

from __future__ import annotations

import numbers

import torch

from selfplay.agents.ppo.buffer import RolloutBuffer
from selfplay.agents.ppo.config import PPOConfig
from selfplay.agents.ppo.frozen import ActorCriticHolder, FrozenPPOPolicy
from selfplay.agents.ppo.gae import compute_gae
from selfplay.agents.ppo.learner_base import PPOLearnerBase
from selfplay.agents.ppo.loss import ppo_loss
from selfplay.agents.ppo.network import ActorCritic, NetworkSpec, check_mask, check_obs, sample_actions


class PPOLearner(ActorCriticHolder, PPOLearnerBase):
    """A PPO learner acting for ``num_envs`` games at once (``num_envs`` is fixed by the first ``act``)."""

    frozen_class = FrozenPPOPolicy

    def __init__(self, obs_size: int, n_actions: int, config: PPOConfig | None = None, seed: int = 0, device="cpu"):
        self.config = config if config is not None else PPOConfig()
        if not isinstance(self.config, PPOConfig):
            raise ValueError(f"config must be a PPOConfig, got {type(config).__name__}")
        if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        seed = int(seed)
        self.spec = NetworkSpec(obs_size, n_actions, self.config.body, self.config.hidden_size)
        self.seed = seed
        self.device = torch.device(device)
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        init_generator = torch.Generator().manual_seed(seed)
        self.network = ActorCritic(self.spec, init_generator).to(self.device)
        self.optimizer = self._new_optimizer()
        self.weight_version = 0
        self.buffer: RolloutBuffer | None = None
        self._snapshot: FrozenPPOPolicy | None = None

    # ------------------------------------------------------------------ acting and recording

    @torch.no_grad()
    def act(self, obs, state=None, mask=None, episode_start=None):
        """Sample actions for every game and store the step; ``(action, state, info)``."""
        obs = check_obs(obs, self.spec.obs_size, self.device)
        batch = obs.shape[0]
        mask = check_mask(mask, batch, self.spec.n_actions, self.device)
        self._ensure_buffer(batch)
        if self.buffer.pending:
            raise RuntimeError("record(reward, done) must follow every act() of a learner")
        if self.buffer.full:
            raise RuntimeError("the rollout is full: call update() before acting again")
        if episode_start is None:
            episode_start = torch.zeros(batch, dtype=torch.bool, device=self.device)
        episode_start = torch.as_tensor(episode_start, dtype=torch.bool, device=self.device)
        if self.recurrent and state is None:
            state = self.initial_state(batch)
        features, new_state = self.network.features(obs, state, episode_start)
        logits, value = self.network.heads(features, mask)
        action, log_prob = sample_actions(logits, self.generator)
        self.buffer.store_action(obs, mask, episode_start, state, action, log_prob, value)
        return action, new_state, {"log_prob": log_prob, "value": value, "logits": logits}

    # ------------------------------------------------------------------ learning

    def update(self) -> dict:
        """One PPO update on the full rollout; returns scalar metrics and bumps ``weight_version``."""
        if not self.ready():
            raise RuntimeError("update() needs a full rollout: call it when ready() is true")
        cfg, buf, net = self.config, self.buffer, self.network
        T, N = buf.rollout_length, buf.num_envs

        # Advantages and returns, from the values and log-probabilities recorded while acting.
        advantages, returns = compute_gae(buf.rewards[:T], buf.values[:T], buf.dones[:T], buf.values[T],
                                          cfg.gamma, cfg.gae_lambda)
        if cfg.normalize_advantages:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)

        stats = []
        for _ in range(cfg.epochs):
            for logits, values, idx in self._minibatches(T, N):
                log_probs = torch.log_softmax(logits, dim=-1)
                new_log_prob = log_probs.gather(-1, buf.actions[:T][idx].unsqueeze(-1)).squeeze(-1)
                entropy = -(log_probs.exp() * log_probs).sum(-1)
                loss, minibatch_stats = ppo_loss(new_log_prob, buf.log_probs[:T][idx], advantages[idx], values,
                                                 returns[idx], entropy, cfg.clip_coef, cfg.value_coef, cfg.entropy_coef)
                self.optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
                self.optimizer.step()
                stats.append(minibatch_stats)

        metrics = {name: torch.stack([s[name] for s in stats]).mean().item() for name in stats[0]}
        y, v = returns.flatten(), buf.values[:T].flatten()
        metrics.update(explained_variance=(1.0 - ((y - v).var() / y.var()).item()) if y.var() > 0 else float("nan"),
                       mean_reward=buf.rewards[:T].mean().item(), transitions=T * N)
        self.weight_version += 1
        metrics["weight_version"] = self.weight_version
        buf.carry_over()
        self._refresh_carried_value()
        return metrics

    def _minibatches(self, T: int, N: int):
        """Yield ``(logits, values, idx)`` per shuffled minibatch; ``idx`` indexes ``(T, N)`` rollout tensors.

        MLP: ``idx`` is a pair of flat (time, game) index tensors of ``minibatch_size`` transitions.
        LSTM: whole sequences; ``idx`` is a pair of ``(L, n_seq)`` index tensors.
        """
        cfg, buf, net = self.config, self.buffer, self.network
        if not self.recurrent:
            order = torch.randperm(T * N, generator=self.generator, device=self.device)
            for start in range(0, T * N, cfg.minibatch_size):
                flat = order[start:start + cfg.minibatch_size]
                idx = (flat // N, flat % N)
                logits, values = net.heads(net.body(buf.obs[:T][idx]), buf.masks[:T][idx])
                yield logits, values, idx
            return
        L = self._sequence_length(T)
        n_chunks = T // L
        seq_per_batch = max(1, cfg.minibatch_size // L)
        order = torch.randperm(n_chunks * N, generator=self.generator, device=self.device)
        steps = torch.arange(L, device=self.device)[:, None]
        for start in range(0, n_chunks * N, seq_per_batch):
            seq = order[start:start + seq_per_batch]
            t0, game = (seq // N) * L, seq % N
            idx = (t0[None, :] + steps, game[None, :].expand(L, -1))
            state = (buf.hidden[0][t0, game], buf.hidden[1][t0, game])
            features, _ = net.body.unroll(buf.obs[idx], state, buf.starts[idx])
            logits, values = net.heads(features, buf.masks[idx])
            yield logits, values, idx

    def _sequence_length(self, T: int) -> int:
        return T if self.config.bptt_length is None else self.config.bptt_length

    @torch.no_grad()
    def _refresh_carried_value(self) -> None:
        """Re-evaluate the carried-over step's value with the updated critic (its action stays as taken)."""
        buf = self.buffer
        state = None if buf.hidden is None else (buf.hidden[0][0], buf.hidden[1][0])
        features, _ = self.network.features(buf.obs[0], state, buf.starts[0])
        buf.values[0] = self.network.heads(features, buf.masks[0])[1]

    # ------------------------------------------------------------------ snapshots and persistence

    # ------------------------------------------------------------------ internals

    def _new_optimizer(self) -> torch.optim.Adam:
        # The fused kernel (CPU and CUDA) does the same Adam step with fewer small-tensor operations.
        return torch.optim.Adam(self.network.parameters(), lr=self.config.learning_rate, eps=self.config.adam_eps,
                                fused=True)

    def _new_buffer(self, batch: int, rollout_length: int) -> RolloutBuffer:
        hidden = self.spec.hidden_size if self.recurrent else None
        return RolloutBuffer(batch, rollout_length, self.spec.obs_size, self.spec.n_actions, hidden, self.device)
