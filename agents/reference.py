"""Fixed reference agents and the trajectory-embedding basis (docs/design/selfplay.md §4, §6).

``FixedActionPolicy`` always plays one action (the Rock, Paper and Scissors agents);
``UniformRandomPolicy`` plays uniformly among the legal actions. Both follow the batched Policy
contract of ``selfplay/core/policy.py`` (no recurrent state).

``embedding_basis(env)`` plays every fixed agent against the uniform random agent (1000 episodes
each, all games of a batch at once) and returns each agent's trajectory vectors, seen from the fixed
agent's seat, so that a learner that behaves like the Rock agent lands in the Rock cluster. (The
paper's authors' code took the random agent's view for the basis; a learner's trajectory is taken
from its own view, so we take the fixed agent's.) This module does not import ``envs``: the
environment is passed in (docs/design/architecture.md, "Layers").
"""

from __future__ import annotations

import numpy as np
import torch

from selfplay.utils.seeding import Stream, derive_seed


class FixedActionPolicy:
    """Plays ``action`` in every game, every step."""

    def __init__(self, action: int, n_actions: int, name: str | None = None, device="cpu"):
        if not isinstance(n_actions, int) or n_actions < 1:
            raise ValueError(f"n_actions must be an integer >= 1, got {n_actions!r}")
        if not isinstance(action, int) or not 0 <= action < n_actions:
            raise ValueError(f"action must be an integer in [0, {n_actions - 1}], got {action!r}")
        self.action = action
        self.n_actions = n_actions
        self.name = name if name is not None else f"action_{action}"
        self.device = torch.device(device)

    def initial_state(self, batch: int):
        return None

    def act(self, obs, state=None, mask=None, episode_start=None):
        batch = len(obs)
        if mask is not None and not bool(torch.as_tensor(mask)[:, self.action].all()):
            raise ValueError(f"mask must allow the fixed action {self.action} in every row")
        return torch.full((batch,), self.action, dtype=torch.long, device=self.device), None, {}

    def __repr__(self) -> str:
        return f"FixedActionPolicy({self.name!r})"


class UniformRandomPolicy:
    """Plays uniformly at random among the legal actions; seeded (same seed, same actions)."""

    def __init__(self, n_actions: int, seed: int = 0, device="cpu", name: str = "random"):
        if not isinstance(n_actions, int) or n_actions < 1:
            raise ValueError(f"n_actions must be an integer >= 1, got {n_actions!r}")
        self.n_actions = n_actions
        self.name = name
        self.device = torch.device(device)
        self.generator = torch.Generator(device=self.device).manual_seed(seed)

    def initial_state(self, batch: int):
        return None

    def act(self, obs, state=None, mask=None, episode_start=None):
        batch = len(obs)
        weights = torch.ones(batch, self.n_actions, device=self.device)
        if mask is not None:
            mask = torch.as_tensor(mask, device=self.device)
            if mask.shape != weights.shape or mask.dtype != torch.bool or not bool(mask.any(1).all()):
                raise ValueError(f"mask must be bool ({batch}, {self.n_actions}) with a legal action in every row")
            weights = weights * mask
        return torch.multinomial(weights, 1, generator=self.generator).squeeze(1), None, {}


def reference_agents(n_actions: int, action_names=None, device="cpu") -> list[FixedActionPolicy]:
    """One fixed agent per action (RirRPS: Rock, Paper, Scissors)."""
    names = action_names if action_names is not None else [f"action_{a}" for a in range(n_actions)]
    return [FixedActionPolicy(a, n_actions, names[a], device) for a in range(n_actions)]


def embedding_basis(env, episodes: int = 1000, seed: int = 0) -> dict[str, np.ndarray]:
    """``{agent name: (episodes, trajectory_size) array}``: each fixed agent vs uniform random.

    ``env`` is a batched two-player environment whose ``step`` returns ``info["trajectory"]`` per seat
    for finished games (``envs.rps.RepeatedMatrixGame``); its games are all used at once and reset.
    The fixed agent sits in seat 0 and the trajectories are from its view; the random agent of agent
    ``a`` is seeded with ``derive_seed(seed, REFERENCE, a)``.
    """
    if not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be an integer >= 1, got {episodes!r}")
    device = getattr(env, "device", "cpu")
    basis = {}
    for a, fixed in enumerate(reference_agents(env.n_actions, getattr(env, "action_names", None), device)):
        random_agent = UniformRandomPolicy(env.n_actions, derive_seed(seed, Stream.REFERENCE, a), device)
        obs = env.reset()
        rows, collected = [], 0
        while collected < episodes:
            masks = env.action_masks()
            action0, _, _ = fixed.act(obs[0], None, masks[0])
            action1, _, _ = random_agent.act(obs[1], None, masks[1])
            obs, _, done, info = env.step([action0, action1])
            if bool(done.any()):
                rows.append(info["trajectory"][0][done])
                collected += int(done.sum())
        basis[fixed.name] = torch.cat(rows)[:episodes].cpu().numpy()
    return basis
