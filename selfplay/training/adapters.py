"""Plug a scheme into any trainer (architecture.md, "Scheme"; issue: adapters).

Three pieces, from least to most integrated:

* ``PolicyWrapper`` — makes a third-party model (anything with ``predict(obs)`` like
  Stable-Baselines3, an ``act(obs)`` method, or a plain callable ``obs -> actions``) a batched
  policy that can be a menagerie entry and an opponent.
* ``SelfPlaySession`` — the callback API for trainers that own their loop:
  ``on_episode_start() -> opponent entry``, ``on_episode_end(outcome)``, ``on_policy_update(snapshot)``.
  It holds the menagerie, the payoff table and the scheme, and applies Ω and G at the right times.
* ``OpponentEnv`` — a Gymnasium single-agent environment over one game of any two-player
  environment of the suite: the opponent's seat is played by a frozen policy drawn from Ω at every
  ``reset()``, outcomes go to the payoff table and G runs at episode ends (through a session).
"""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import numpy as np
import torch

from selfplay.core.menagerie import Entry, Menagerie
from selfplay.core.payoff import Payoff
from selfplay.core.schemes import LearnerInfo, Scheme, make_scheme

LEARNER_KEY = "learner"


class PolicyWrapper:
    """A batched, feed-forward policy around a third-party model.

    ``model``: an object with ``predict(obs, deterministic=...)`` returning ``(actions, state)``
    (Stable-Baselines3) or returning actions, or with ``act(obs)``, or a callable ``obs -> actions``;
    ``obs`` is a float32 numpy array ``(batch, obs_size)`` and the actions integers ``(batch,)``.
    Legal-action masks are not passed to the model; an illegal choice raises ``ValueError``.
    """

    def __init__(self, model: Any, deterministic: bool = False) -> None:
        if hasattr(model, "predict"):
            self._fn: Callable = lambda obs: model.predict(obs, deterministic=deterministic)
        elif hasattr(model, "act"):
            self._fn = model.act
        elif callable(model):
            self._fn = model
        else:
            raise ValueError("model must have predict(obs), act(obs) or be callable obs -> actions")
        self.model = model

    def initial_state(self, batch: int) -> None:
        return None

    def act(self, obs, state=None, mask=None, episode_start=None):
        obs_np = torch.as_tensor(obs).cpu().numpy().astype(np.float32)
        out = self._fn(obs_np)
        actions = out[0] if isinstance(out, tuple) else out
        actions = torch.as_tensor(np.asarray(actions).reshape(obs_np.shape[0]), dtype=torch.long)
        if mask is not None and not bool(torch.as_tensor(mask)[torch.arange(len(actions)), actions].all()):
            raise ValueError("the wrapped model chose an illegal action (mask is False there)")
        return actions, None, {}


class SelfPlaySession:
    """Menagerie + payoff + scheme behind three callbacks for a trainer that owns its loop.

    ``initial_policy`` enters the menagerie first (menagerie_0 = {π}). Each episode:
    ``opponent = on_episode_start()`` (Ω), play it, ``on_episode_end(score)`` with the learner's
    score (1 win, ½ draw, 0 loss: recorded in the payoff table, then G). Whenever the trainer
    changes its weights it calls ``on_policy_update(frozen_snapshot)``; G snapshots the *latest*
    such policy (so unchanged weights are never copied twice).
    """

    def __init__(self, scheme: Scheme | str, initial_policy: Any, seed: int | None = None, name: str = LEARNER_KEY) -> None:
        self.scheme = make_scheme(scheme) if isinstance(scheme, str) else scheme
        self.menagerie = Menagerie()
        self.payoff = Payoff()
        self.rng = np.random.default_rng(seed)
        self.name = name
        self.episode = 0
        self.step = 0
        self.weight_version = 0
        self._latest = initial_policy
        self.menagerie.add(initial_policy, step=0, player=name, episode=0, weight_version=0)
        self.opponent: Entry | None = None

    def learner_info(self) -> LearnerInfo:
        return LearnerInfo(name=self.name, episode=self.episode, step=self.step,
                           weight_version=self.weight_version, snapshot=lambda: self._latest)

    def on_episode_start(self) -> Entry:
        """Draw the next opponent from Ω; its frozen policy is ``entry.policy``."""
        self.opponent = self.scheme.sample(self.menagerie, self.payoff, self.rng)
        return self.opponent

    def on_episode_end(self, outcome: float, steps: int = 0) -> None:
        """Record the learner's score against the current opponent and apply G."""
        if self.opponent is None:
            raise ValueError("on_episode_end called before on_episode_start")
        if outcome not in (0, 0.5, 1):
            raise ValueError(f"outcome must be 1 (win), 0.5 (draw) or 0 (loss), got {outcome!r}")
        self.payoff.update(self.name, self.opponent.id, float(outcome))
        self.episode += 1
        self.step += int(steps)
        curation = self.scheme.curate(self.menagerie, self.learner_info(), self.payoff, float(outcome))
        if curation.reset_to is not None:
            self._latest = curation.reset_to
        self.opponent = None

    def on_policy_update(self, snapshot: Any) -> None:
        """The trainer changed its weights; ``snapshot`` is a frozen copy of the new policy."""
        self._latest = snapshot
        self.weight_version += 1


class OpponentEnv(gym.Env):
    """Gymnasium view of one game of a two-seat batched environment with the opponent inside.

    ``env``: a two-seat environment with ``num_envs == 1`` (e.g. ``envs.rps.RirRPS(1, seed=0)``);
    ``session``: the ``SelfPlaySession`` whose Ω picks the opponent at every ``reset()``;
    ``learner_seat``: 0, 1 or ``"random"`` (drawn per episode).
    Matrix games give a ``Box(obs_size)`` observation and a ``Discrete`` action; SMAC sides give
    ``Box(units, obs_size)`` and ``MultiDiscrete`` (one action per unit), with the legal actions in
    ``info["action_mask"]`` / ``action_masks()`` — an illegal action raises ``ValueError`` (the engine
    never swaps it for another), so Gymnasium's ``check_env``, which steps random actions, applies to
    the matrix-game view only.
    """

    metadata = {"render_modes": []}

    def __init__(self, env: Any, session: SelfPlaySession, learner_seat: int | str = "random") -> None:
        if getattr(env, "num_envs", None) != 1:
            raise ValueError(f"env must hold exactly one game (num_envs=1), got num_envs={getattr(env, 'num_envs', None)!r}")
        if learner_seat not in (0, 1, "random"):
            raise ValueError(f"learner_seat must be 0, 1 or 'random', got {learner_seat!r}")
        self.env = env
        self.session = session
        self.learner_seat = learner_seat
        # matrix games: one obs vector, one action; SMAC sides: (units, obs) and one action per unit
        self.multi_unit = isinstance(env.obs_size, (list, tuple))
        if self.multi_unit:
            if env.obs_size[0] != env.obs_size[-1] or env.n_agents[0] != env.n_agents[-1]:
                raise ValueError("the Gymnasium view needs both sides alike (a symmetric map); got "
                                 f"obs sizes {env.obs_size} and units {env.n_agents}")
            units, size, actions = env.n_agents[0], env.obs_size[0], env.n_actions[0]
            self.observation_space = gym.spaces.Box(-np.inf, np.inf, (units, size), dtype=np.float32)
            self.action_space = gym.spaces.MultiDiscrete([actions] * units)
        else:
            self.observation_space = gym.spaces.Box(0.0, 1.0, (env.obs_size,), dtype=np.float32)
            self.action_space = gym.spaces.Discrete(env.n_actions)
        self._seat = 0
        self._obs: list | None = None
        self._opp_state = None
        self._steps = 0
        self._start = True

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions now (bool; SMAC: one row per unit) — also in ``info["action_mask"]``,
        and under this name for maskable trainers (sb3-contrib's MaskablePPO). An illegal action raises."""
        return self.env.action_masks()[self._seat][0].cpu().numpy()

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self.session.rng = np.random.default_rng(seed)
            if hasattr(self.env, "seed"):
                self.env.seed(seed)
        self._seat = int(self.np_random.integers(2)) if self.learner_seat == "random" else int(self.learner_seat)
        opponent = self.session.on_episode_start()
        self._opp_state = opponent.policy.initial_state(1)
        self._obs = self.env.reset()
        self._steps = 0
        self._start = True
        return self._learner_obs(), {"opponent": opponent.id, "learner_seat": self._seat,
                                     "action_mask": self.action_masks()}

    def step(self, action):
        if self._obs is None:
            raise ValueError("call reset() before step()")
        action = np.asarray(action, dtype=np.int64) if self.multi_unit else int(action)
        if not self.action_space.contains(action):
            raise ValueError(f"action must lie in {self.action_space}, got {action!r}")
        opp_seat = 1 - self._seat
        masks = self.env.action_masks()
        start = torch.tensor([self._start])
        opp_action, self._opp_state, _ = self.session.opponent.policy.act(
            self._obs[opp_seat], self._opp_state, masks[opp_seat], start)
        actions = [None, None]
        actions[self._seat] = torch.as_tensor(action).reshape((1,) + np.shape(action)).long()
        actions[opp_seat] = torch.as_tensor(opp_action).reshape(actions[self._seat].shape).long()
        self._obs, rewards, done, info = self.env.step(actions)
        self._steps += 1
        self._start = False
        reward = float(rewards[self._seat][0])
        terminated = bool(done[0])
        out_info: dict = {}
        if not terminated:
            out_info["action_mask"] = self.action_masks()
        if terminated:
            winner, draw = int(info["winner"][0]), bool(info["draw"][0])
            outcome = 0.5 if draw else float(winner == self._seat)
            out_info = {"outcome": outcome, "opponent": self.session.opponent.id}
            self.session.on_episode_end(outcome, steps=self._steps)
            self._obs = None
        return self._learner_obs(), reward, terminated, False, out_info

    def _learner_obs(self) -> np.ndarray:
        if self._obs is None:  # the engine already restarted the game: the terminal observation is all zeros
            return np.zeros(self.observation_space.shape, dtype=np.float32)
        return self._obs[self._seat][0].cpu().numpy().astype(np.float32)
