"""What the PPO learners (one-unit and multi-unit) share: recording outcomes and exact resumption."""

from __future__ import annotations

import copy
import math

import torch


def derived_seed(seed: int, weight_version: int) -> int:
    """The sampling seed of the snapshot taken at ``weight_version``."""
    return (seed * 1_000_003 + weight_version) % (2**63)


class PPOLearnerBase:
    """``record`` / ``ready`` on the rollout ``buffer``, and ``state_dict`` / ``load_state_dict`` over what
    a PPO learner holds: ``config`` and ``spec`` (checked on load), ``seed``, ``weight_version``,
    ``network``, ``optimizer``, the sampling ``generator`` and the ``buffer`` with its position (rebuilt
    by ``_ensure_buffer``); ``snapshot`` / ``restore`` through the subclass's ``frozen_class``, and the
    rollout length. Subclasses provide ``_new_optimizer()`` and ``_new_buffer(batch, rollout_length)``."""

    frozen_class: type

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
                                               derived_seed(self.seed, self.weight_version))
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
        """A rollout buffer for ``batch`` games: ⌈horizon / batch⌉ steps (recurrent bodies: rounded up to
        whole ``bptt_length`` sequences); the batch may change only between rollouts."""
        if self.buffer is not None:
            if batch == self.buffer.num_envs:
                return
            if self.buffer.filled > 0 or self.buffer.pending:
                raise ValueError(f"obs must keep the batch size of the current rollout ({self.buffer.num_envs}), "
                                 f"got {batch}")
        T = math.ceil(self.config.horizon / batch)
        if self.recurrent and self.config.bptt_length is not None:
            T = self.config.bptt_length * math.ceil(T / self.config.bptt_length)
        self.buffer = self._new_buffer(batch, T)

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
