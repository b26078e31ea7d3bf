"""Frozen snapshots of a trainer's model, to hand a ``SelfPlaySession`` as menagerie entries.

An entry must stay the policy it was when G added it, whatever the trainer does to its model later,
and on the ``AsyncVectorEnv`` route (``SessionVectorEnv``) it must cross to the worker processes:
it must be picklable. A closure or lambda over the live model is neither (``SessionVectorEnv``
refuses one, naming it). These helpers make a copy that is both:

* ``torch_snapshot(module)`` — a plain ``torch.nn.Module`` from observations ``(batch, obs_size)``
  to action logits ``(batch, n_actions)``: a deep copy with gradients off, in eval mode, sampling
  ``softmax(logits)`` over the legal actions with its own seeded generator (or the arg-max);
* ``sb3_snapshot(model)`` — a Stable-Baselines3 model: a new policy of the same class from the
  policy's constructor parameters with the current weights loaded, wrapped in ``PolicyWrapper``
  (``copy.deepcopy(model.policy)`` fails once the model has updated: the update leaves non-leaf
  tensors behind that ``deepcopy`` refuses).

Give the session a *function* that makes one, so a copy is made only when G adds the weight
version: ``session.on_policy_update(freeze=lambda: torch_snapshot(agent.actor))`` — that lambda runs
in the main process; the snapshot it returns is what crosses to the workers.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from selfplay.training.adapters import PolicyWrapper


class TorchSnapshot:
    """A frozen copy of a logits module speaking the suite's policy protocol (feed-forward):
    ``act(obs, state, mask, episode_start) -> (actions, None, {})``. Actions are drawn from
    ``softmax(logits)`` with illegal actions (``mask`` False) at probability 0, by the snapshot's own
    generator (seeded ``seed``), or are the arg-max of the legal logits when ``deterministic``."""

    def __init__(self, module: torch.nn.Module, deterministic: bool = False, seed: int = 0) -> None:
        if not isinstance(module, torch.nn.Module):
            raise ValueError(f"module must be a torch.nn.Module mapping observations to action logits, got {module!r}")
        self.module = copy.deepcopy(module).eval().requires_grad_(False)
        self.deterministic = bool(deterministic)
        self.generator = torch.Generator().manual_seed(int(seed))

    def initial_state(self, batch: int) -> None:
        return None

    @torch.no_grad()
    def act(self, obs: Any, state: Any = None, mask: Any = None, episode_start: Any = None):
        device = next(self.module.parameters(), torch.empty(0)).device
        logits = self.module(torch.as_tensor(np.asarray(obs), dtype=torch.float32, device=device)).float().cpu()
        if mask is not None:
            logits = logits.masked_fill(~torch.as_tensor(mask, dtype=torch.bool).cpu(), float("-inf"))
        if self.deterministic:
            actions = logits.argmax(dim=-1)
        else:
            actions = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=self.generator).squeeze(-1)
        return actions, None, {}


def torch_snapshot(module: torch.nn.Module, deterministic: bool = False, seed: int = 0) -> TorchSnapshot:
    """A frozen, picklable copy of ``module`` (observations → action logits) as a suite policy; later
    updates of ``module`` do not reach it."""
    return TorchSnapshot(module, deterministic, seed)


def sb3_snapshot(model: Any, deterministic: bool = False) -> PolicyWrapper:
    """A frozen, picklable copy of a Stable-Baselines3 model's current policy as a suite policy
    (``predict`` sampled unless ``deterministic``); later updates of ``model`` do not reach it."""
    policy = getattr(model, "policy", None)
    if policy is None or not hasattr(policy, "_get_constructor_parameters"):
        raise ValueError(f"model must be a Stable-Baselines3 model (with .policy), got {model!r}")
    frozen = type(policy)(**policy._get_constructor_parameters())
    frozen.load_state_dict(policy.state_dict())
    frozen.to(policy.device)
    frozen.set_training_mode(False)
    return PolicyWrapper(frozen, deterministic=deterministic)
