"""PPO learner for a batch of games (the Learner contract of ``selfplay/core/policy.py``; docs/design/selfplay.md §5).

Each environment step the loop calls ``act(obs, state, mask, episode_start)`` for the learner's seat
of every game (each observation is from the learner's own view, whichever seat it holds in that
game) and then ``record(reward, done)``. A rollout is ``rollout_length = ceil(horizon / num_envs)``
steps of every game (``horizon`` transitions in all). ``ready()`` turns true one step later — the
step after the rollout supplies the bootstrap value V(s_T) and then becomes the first step of the
next rollout — and ``update()`` runs the one PPO update of ``learner_base.PPOLearnerBase`` on it:
A = GAE(γ, λ) over every sample (``gae.compute_gae``), the clipped loss of ``loss.ppo_loss``, the
gradient norm of the whole (shared-body) network clipped to ``max_grad_norm``.

MLP minibatches are ``minibatch_size`` transitions drawn from the whole rollout. LSTM minibatches are
whole sequences (truncated BPTT): each game's rollout segment is cut into sequences of
``bptt_length`` (default: the whole segment), each replayed from the recurrent state recorded at its
first step, with the state zeroed at every episode start inside it.
"""

from __future__ import annotations

import torch
from selfplay.agents.ppo.buffer import RolloutBuffer
from selfplay.agents.ppo.config import PPOConfig
from selfplay.agents.ppo.frozen import ActorCriticHolder, FrozenPPOPolicy
from selfplay.agents.ppo.gae import compute_gae
from selfplay.agents.ppo.learner_base import PPOLearnerBase
from selfplay.agents.ppo.network import ActorCritic, NetworkSpec, check_mask, check_obs, sample_actions


class PPOLearner(ActorCriticHolder, PPOLearnerBase):
    """A PPO learner acting for ``num_envs`` games at once (``num_envs`` is fixed by the first ``act``)."""

    frozen_class = FrozenPPOPolicy
    family = "rps"

    def __init__(self, obs_size: int, n_actions: int, config: PPOConfig | None = None, seed: int = 0, device="cpu"):
        self._setup(config, seed, device, lambda c: NetworkSpec(obs_size, n_actions, c.body, c.hidden_size),
                    ActorCritic)
        self._parameters = [list(self.network.parameters())]  # the one clip group (the parameters never change)
        self._all_legal = False  # set per update by _prepare_update: every action of the rollout was legal

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
        self.buffer.store_action(state if self.recurrent else (), obs=obs, masks=mask, starts=episode_start,
                                 actions=action, log_probs=log_prob, values=value)
        return action, new_state, {"log_prob": log_prob, "value": value, "logits": logits}

    # ------------------------------------------------------------------ learning (``PPOLearnerBase.update``)

    def _advantages(self):
        """GAE over the ``(T, N)`` rollout; every sample carries a policy gradient (no weight)."""
        cfg, buf, T = self.config, self.buffer, self.buffer.rollout_length
        advantages, returns = compute_gae(buf.rewards[:T], buf.values[:T], buf.dones[:T], buf.values[T],
                                          cfg.gamma, cfg.gae_lambda)
        return advantages, returns, None

    def _evaluate(self, idx, starts):
        """``(logits, values)`` of the rollout samples ``idx``; recurrent: sequences replayed from the
        state stored at ``starts = (t0, game)``, zeroed at every episode start inside them. A rollout
        in which every action was legal (``_all_legal``) skips the mask: the same logits, one step less."""
        buf, net = self.buffer, self.network
        masks = None if self._all_legal else buf.masks[idx]
        if starts is None:
            return net.heads(net.body(buf.obs[idx]), masks)
        t0, game = starts
        features, _ = net.body.unroll(buf.obs[idx], tuple(h[t0, game] for h in buf.rnn), buf.starts[idx])
        return net.heads(features, masks)

    def _prepare_update(self) -> None:
        self._all_legal = bool(self.buffer.masks[:self.buffer.rollout_length].all())

    def _written_out_gradient(self) -> bool:
        """A rollout with every action legal takes the written-out gradient (``mlp_step``, ``lstm_step``:
        the same loss; autograd's graph and the LSTM's per-piece calls are most of a small network's update)."""
        return self._all_legal

    def _clip_groups(self):
        return self._parameters

    @torch.no_grad()
    def _refresh_carried_value(self) -> None:
        """Re-evaluate the carried-over step's value with the updated critic (its action stays as taken)."""
        buf = self.buffer
        state = tuple(h[0] for h in buf.rnn) if self.recurrent else None
        features, _ = self.network.features(buf.obs[0], state, buf.starts[0])
        buf.values[0] = self.network.heads(features, buf.masks[0])[1]

    # ------------------------------------------------------------------ internals

    def _new_buffer(self, batch: int, rollout_length: int) -> RolloutBuffer:
        """Per game: the observation, mask and scalars; recurrent bodies: the LSTM's ``(h, c)`` before the
        episode-start reset."""
        shapes = {"obs": (self.spec.obs_size,), "masks": (self.spec.n_actions,), "starts": (), "actions": (),
                  "log_probs": (), "values": (), "rewards": (), "dones": ()}
        rnn = ((self.spec.hidden_size,),) * 2 if self.recurrent else ()
        return RolloutBuffer(batch, rollout_length, shapes, rnn, self.device)
