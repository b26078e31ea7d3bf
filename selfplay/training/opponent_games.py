"""``num_envs`` games of a batched two-seat engine with the opponents inside (the engine
behind ``SelfPlayVectorEnv`` and ``SelfPlayVecEnv``).

Each game has its own learner seat (random per game, or fixed) and its own opponent, drawn from the
session's Ω when that game starts; the trainer acts for the learner in every game at once and the
opponents act grouped by policy object (one forward pass per distinct policy). When games end in a
step, each is recorded in the session (payoff, records, then G) in game order, *then* the new games'
opponents are drawn — so they come from Ω after curation — and the engine restarts those games. The
step returns the final observation of every ended game next to the first observation of its
successor (Gymnasium's same-step autoreset; Stable-Baselines3's ``terminal_observation``).

Engines: the suite's repeated matrix games (``envs.rps``) and symmetric SMAC battles
(``envs.smac.SMACBattle``): both step without resetting finished games (a ``step(..., auto_reset=False)``
argument, or an ``auto_reset`` attribute that this class sets to False) and restart a subset of
games (``_reset_games(mask)``, the engines' partial reset).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import torch

from selfplay.training.adapters import Episode, SelfPlaySession
from selfplay.training.batching import assign_state, group_by_policy, index_state
from selfplay.training.games import select_seat


class EngineStepper:
    """Steps a batched engine keeping final observations: ``step -> (final_obs, rewards, done, info)``
    with no game restarted; ``restart(mask)`` then restarts the ended games, ``observe()`` reads obs."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self._kwarg = "auto_reset" in inspect.signature(env.step).parameters
        if not self._kwarg:
            if not isinstance(getattr(env, "auto_reset", None), bool):
                raise ValueError("env must be able to step without restarting finished games (final observations): "
                                 "a step(actions, auto_reset=False) argument or an auto_reset attribute")
            env.auto_reset = False  # the adapter restarts games itself
        if not hasattr(env, "_reset_games"):
            raise ValueError("env must restart a subset of its games (_reset_games(mask)) to be vectorised here")
        self._observe = getattr(env, "observe", None) or getattr(env, "get_obs")

    def reset(self) -> list:
        return self.env.reset()

    def step(self, actions: list):
        return self.env.step(actions, auto_reset=False) if self._kwarg else self.env.step(actions)

    def restart(self, mask: torch.Tensor) -> list:
        self.env._reset_games(mask)
        return self._observe()


def check_symmetric_sides(env: Any) -> tuple[bool, tuple, int | tuple]:
    """(multi_unit, learner obs shape, n_actions or per-unit actions) of a two-seat engine whose seats
    look alike (matrix games; SMAC mirror/symmetric maps)."""
    multi_unit = isinstance(env.obs_size, (list, tuple))
    if not multi_unit:
        return False, (int(env.obs_size),), int(env.n_actions)
    if env.obs_size[0] != env.obs_size[-1] or env.n_agents[0] != env.n_agents[-1] or env.n_actions[0] != env.n_actions[-1]:
        raise ValueError("the learner's view needs both sides alike (a symmetric map); got "
                         f"obs sizes {env.obs_size}, units {env.n_agents}, actions {env.n_actions}")
    return True, (int(env.n_agents[0]), int(env.obs_size[0])), (int(env.n_agents[0]), int(env.n_actions[0]))


class OpponentGames:
    """The learner's side of ``env.num_envs`` games, each against its own opponent drawn from ``session``.

    ``learner_seat``: 0, 1 or ``"random"`` (per game, from this object's generator, seeded by
    ``reset(seed)``; the session's sampler is never reseeded here).
    """

    def __init__(self, env: Any, session: SelfPlaySession, learner_seat: int | str = "random") -> None:
        if not isinstance(session, SelfPlaySession):
            raise ValueError(f"session must be a SelfPlaySession, got {session!r}")
        if learner_seat not in (0, 1, "random"):
            raise ValueError(f"learner_seat must be 0, 1 or 'random', got {learner_seat!r}")
        self.env, self.session, self.learner_seat = env, session, learner_seat
        self.n = int(env.num_envs)
        self.multi_unit, self.obs_shape, self.n_actions = check_symmetric_sides(env)
        self.stepper = EngineStepper(env)
        self.rng = np.random.default_rng()
        self.episodes: list[Episode | None] = [None] * self.n
        self.steps = np.zeros(self.n, dtype=np.int64)
        self.obs: list | None = None

    # -- set-up -------------------------------------------------------------------------------------
    def _seats(self, k: int) -> torch.Tensor:
        if self.learner_seat == "random":
            return torch.as_tensor(self.rng.integers(0, 2, k), dtype=torch.long)
        return torch.full((k,), int(self.learner_seat), dtype=torch.long)

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Restart every game (games in progress are abandoned, not recorded); new seats and opponents."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
            if hasattr(self.env, "seed"):
                self.env.seed(seed)
        for episode in self.episodes:
            if episode is not None:
                self.session.abandon_episode(episode)
        self.obs = self.stepper.reset()
        self.seat = self._seats(self.n)
        self.episodes = list(self.session.start_episodes(list(range(self.n))))
        self._regroup()
        self.opp_state = self.episodes[0].opponent.policy.initial_state(self.n)
        self.start = torch.ones(self.n, dtype=torch.bool)
        self.steps[:] = 0
        return self.learner_obs()

    def _regroup(self) -> None:
        self.groups = group_by_policy([e.opponent.policy for e in self.episodes])

    # -- views --------------------------------------------------------------------------------------
    def learner_obs(self, obs: list | None = None) -> np.ndarray:
        obs = self.obs if obs is None else obs
        return select_seat(self.seat, obs).cpu().numpy().astype(np.float32, copy=False)

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions per game (bool; SMAC one row per unit)."""
        return select_seat(self.seat, self.env.action_masks()).cpu().numpy()

    def opponent_ids(self) -> np.ndarray:
        return np.array([e.opponent.id for e in self.episodes], dtype=np.int64)

    # -- stepping -----------------------------------------------------------------------------------
    def step(self, actions: Any):
        """One step of every game with the learner's ``actions``.

        Returns ``(obs, reward, done, final_obs, finished)``: ``obs`` the learner's next observations
        (the first observation of the next game where one ended), ``reward`` and ``done`` per game,
        ``final_obs`` the learner's observations *before* restarts (the final observation where
        ``done``), and ``finished``: ``(game, episode, outcome, steps)`` per ended game, already recorded.
        """
        if self.obs is None:
            raise ValueError("call reset() before step()")
        action = torch.as_tensor(np.asarray(actions), dtype=torch.long)
        expected = (self.n,) + ((self.obs_shape[0],) if self.multi_unit else ())
        if tuple(action.shape) != expected:
            raise ValueError(f"actions must have shape {expected} (one per game{', per unit' if self.multi_unit else ''}), "
                             f"got {tuple(action.shape)}")
        masks = self.env.action_masks()
        opp_seat = 1 - self.seat
        opp_obs, opp_mask = select_seat(opp_seat, self.obs), select_seat(opp_seat, masks)
        opp_action = torch.empty_like(action)
        with torch.no_grad():
            for policy, games in self.groups:
                idx = torch.as_tensor(games)
                a, s, _ = policy.act(opp_obs[idx], index_state(self.opp_state, idx), opp_mask[idx], self.start[idx])
                opp_action[idx] = torch.as_tensor(a).reshape((len(games),) + tuple(action.shape[1:])).long()
                assign_state(self.opp_state, idx, s)
        zero = (self.seat == 0).view((-1,) + (1,) * (action.dim() - 1))
        final, rewards, done, info = self.stepper.step([torch.where(zero, action, opp_action),
                                                        torch.where(zero, opp_action, action)])
        reward = select_seat(self.seat, rewards).cpu().numpy().astype(np.float32)
        final_obs = self.learner_obs(final)
        self.steps += 1
        done_np = done.cpu().numpy().astype(bool)
        finished = []
        if done_np.any():
            ended = np.flatnonzero(done_np)
            winner, draw = info["winner"].cpu().numpy(), info["draw"].cpu().numpy()
            seats = self.seat.numpy()
            for g in ended:  # record in game order, G after each
                outcome = 0.5 if draw[g] else float(winner[g] == seats[g])
                episode = self.episodes[g]
                self.session.end_episode(episode, outcome, steps=int(self.steps[g]))
                finished.append((int(g), episode, outcome, int(self.steps[g])))
            for g, episode in zip(ended, self.session.start_episodes([int(g) for g in ended])):  # Ω after G
                self.episodes[g] = episode
            self.seat[torch.as_tensor(ended)] = self._seats(len(ended))
            self.steps[ended] = 0
            self._regroup()
            self.obs = self.stepper.restart(done)
        else:
            self.obs = final
        self.start = done.clone()
        return self.learner_obs(), reward, done_np, final_obs, finished
