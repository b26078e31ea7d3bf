"""What the PPO learners (one-unit and multi-unit) share: recording outcomes and exact resumption."""

from __future__ import annotations

import copy

import torch


class PPOLearnerBase:
    """``record`` / ``ready`` on the rollout ``buffer``, and ``state_dict`` / ``load_state_dict`` over what
    a PPO learner holds: ``config`` and ``spec`` (checked on load), ``seed``, ``weight_version``,
    ``network``, ``optimizer``, the sampling ``generator`` and the ``buffer`` with its position (rebuilt
    by ``_ensure_buffer``)."""

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
