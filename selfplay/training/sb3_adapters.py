"""The Stable-Baselines3 route (docs/guides/plug-in.md): ``SelfPlayVecEnv``, a ``VecEnv`` over one batched engine
of ``num_envs`` games, each against its own opponent drawn from a ``SelfPlaySession`` at its own
start (``selfplay.training.opponent_games.OpponentGames``).

SB3's conventions: ``step_wait`` restarts ended games in the same step; the returned observation is
the next game's first and ``infos[i]["terminal_observation"]`` the ended game's final one;
``infos[i]`` of an ended game also holds ``outcome`` (the learner's score: 1 win, ½ draw, 0 loss),
``opponent`` (entry id), ``episode_token`` and ``episode_steps``. ``seed(s)`` seeds the seats and the
engine at the next ``reset()``, never the session's sampler. ``action_masks()`` gives the learner's
legal actions per game (sb3-contrib's MaskablePPO reads it through ``env_method``/``get_attr``).
SB3's ``DummyVecEnv`` over ``OpponentEnv`` copies sharing one session works too (slower);
``SubprocVecEnv`` does not (its workers would copy the session: ``OpponentEnv`` refuses).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from selfplay.training.adapters import SelfPlaySession
from selfplay.training.gym_adapters import _spaces
from selfplay.training.opponent_games import OpponentGames


class SelfPlayVecEnv(VecEnv):
    """``env``: a batched two-seat engine (``RirRPS(4)``, a symmetric ``SMACBattle``); ``session``: the
    ``SelfPlaySession`` whose Ω draws every game's opponent and which records every outcome."""

    def __init__(self, env: Any, session: SelfPlaySession, learner_seat: int | str = "random") -> None:
        self.games = OpponentGames(env, session, learner_seat)
        self.session = session
        observation_space, action_space = _spaces(env)
        super().__init__(self.games.n, observation_space, action_space)
        self._actions: np.ndarray | None = None
        self._seed: int | None = None

    def reset(self):
        seed = self._seed if self._seed is not None else (self._seeds[0] if self._seeds[0] is not None else None)
        self._seed = None
        self._reset_seeds()
        self._reset_options()
        obs = self.games.reset(seed)
        self.reset_infos = [{"opponent": int(i), "learner_seat": int(s)}
                            for i, s in zip(self.games.opponent_ids(), self.games.seat.numpy())]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self):
        if self._actions is None:
            raise ValueError("step_async(actions) must come before step_wait()")
        obs, reward, done, final_obs, finished = self.games.step(self._actions)
        self._actions = None
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        for g, episode, outcome, steps in finished:
            infos[g] = {"terminal_observation": final_obs[g], "TimeLimit.truncated": False, "outcome": outcome,
                        "opponent": episode.opponent.id, "episode_token": episode.token, "episode_steps": steps}
        return obs, reward, done, infos

    def seed(self, seed: int | None = None) -> Sequence[None]:
        self._seed = seed
        return [None] * self.num_envs

    def action_masks(self) -> np.ndarray:
        return self.games.action_masks()

    def close(self) -> None:
        close = getattr(self.games.env, "close", None)
        if close is not None:
            close()

    # the VecEnv attribute interface, over the one engine (there are no sub-environments)
    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        if attr_name == "render_mode":
            return [None for _ in self._get_indices(indices)]
        value = getattr(self.games.env, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise ValueError("SelfPlayVecEnv's games share one engine: set attributes on the engine itself")

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in self._get_indices(indices)]
        raise ValueError(f"SelfPlayVecEnv has no per-game method {method_name!r} (one engine runs every game)")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def _get_indices(self, indices: Any) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices)
