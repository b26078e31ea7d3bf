"""The policy and learner contracts every part of the suite speaks (docs/design/architecture.md, "Policy", "Learner").

These are structural protocols: nothing needs to inherit from them. They carry no torch import so
that schemes and the menagerie stay numpy-only; tensors below may be torch tensors or numpy arrays.

Batched policy
    ``initial_state(batch)``  -> recurrent state for ``batch`` games (``None`` for feed-forward).
    ``act(obs, state, mask=None, episode_start=None) -> (action, state, info)``
        ``obs``: ``(batch, obs_dim)`` (SMAC sides: ``(batch, n_agents, obs_dim)``);
        ``mask``: boolean legal-action mask shaped like the logits, or ``None``;
        ``episode_start``: boolean ``(batch,)``; where true, the recurrent state is zeroed *before*
        acting (the state is reset at every episode start, docs/design/selfplay.md §5);
        ``action``: integer ``(batch,)`` (SMAC: ``(batch, n_agents)``);
        ``info``: dict of per-sample extras (``log_prob``, ``value``, ...).

Frozen policy
    A batched policy whose weights never change. A snapshot of a learner whose weights have not
    changed since its previous snapshot is the *same* frozen object (no weight copy).

Learner
    A batched policy that also learns. The self-play loop calls, every environment step,
    ``act(...)`` then ``record(reward, done)`` for the same batch; when ``ready()`` it calls
    ``update() -> dict`` of scalar metrics, which bumps ``weight_version``.
    ``snapshot() -> FrozenPolicy``, ``restore(frozen)`` (exploiter resets),
    ``state_dict()`` / ``load_state_dict(d)`` (learner + optimiser + buffer position, for resuming).

Scheduled learner
    A learner whose settings follow the run's progress (MAPPO's linear step-size decay): the trainer
    calls ``set_progress(p)`` before each update, ``p`` the share of the run's budget spent, in [0, 1].
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Policy(Protocol):
    def initial_state(self, batch: int) -> Any: ...

    def act(self, obs: Any, state: Any, mask: Any = None, episode_start: Any = None) -> tuple[Any, Any, dict]: ...


@runtime_checkable
class Learner(Policy, Protocol):
    weight_version: int

    def record(self, reward: Any, done: Any) -> None: ...

    def ready(self) -> bool: ...

    def update(self) -> dict: ...

    def snapshot(self) -> Policy: ...

    def restore(self, frozen: Policy) -> None: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


@runtime_checkable
class ScheduledLearner(Protocol):
    """Only the schedule's method: a learner is scheduled when it has ``set_progress``, whatever else it lacks."""

    def set_progress(self, progress: float) -> None: ...
