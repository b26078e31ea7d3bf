"""A frozen PPO policy: batched inference with weights that never change (docs/design/architecture.md, "Policy")."""

from __future__ import annotations

import torch
from selfplay.agents.ppo.network import ActorCritic, check_mask, check_obs, sample_actions


class ActorCriticHolder:
    """What a holder of one-unit ``ActorCritic`` ``network`` with its ``spec`` (frozen policy, learner)
    tells about it: sizes, recurrence and the zero recurrent state."""

    @property
    def obs_size(self) -> int:
        return self.spec.obs_size

    @property
    def n_actions(self) -> int:
        return self.spec.n_actions

    @property
    def recurrent(self) -> bool:
        return self.network.recurrent

    def initial_state(self, batch: int):
        return self.network.initial_state(batch)


class FrozenPPOPolicy(ActorCriticHolder):
    """Acts for a batch of games with a fixed copy of a learner's network.

    ``network`` must not be modified afterwards (the learner hands over a private copy; parameters have
    ``requires_grad`` off). ``weight_version`` is the learner's version the weights come from.
    Sampling uses the policy's own generator, seeded with ``seed`` (same seed and same calls, same
    actions); ``act(..., generator=g)`` uses ``g`` instead.
    """

    def __init__(self, network: ActorCritic, weight_version: int = 0, seed: int = 0):
        self.network = network.eval().requires_grad_(False)
        self.spec = network.spec
        self.weight_version = int(weight_version)
        self.seed = int(seed)
        self.device = network.policy_head.weight.device
        self.generator = torch.Generator(device=self.device).manual_seed(self.seed)

    @torch.no_grad()
    def act(self, obs, state=None, mask=None, episode_start=None, *, deterministic=False, generator=None):
        """``(action, state, info)`` for a batch; ``info`` has ``log_prob``, ``value`` and ``logits``."""
        obs = check_obs(obs, self.spec.obs_size, self.device)
        mask = check_mask(mask, obs.shape[0], self.spec.n_actions, self.device)
        if episode_start is not None:
            episode_start = torch.as_tensor(episode_start, dtype=torch.bool, device=self.device)
        features, state = self.network.features(obs, state, episode_start)
        logits, value = self.network.heads(features, mask)
        action, log_prob = sample_actions(logits, generator or self.generator, deterministic)
        return action, state, {"log_prob": log_prob, "value": value, "logits": logits}

    def __repr__(self) -> str:
        return f"FrozenPPOPolicy(body={self.spec.body!r}, weight_version={self.weight_version}, seed={self.seed})"
