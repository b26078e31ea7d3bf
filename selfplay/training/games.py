"""``num_envs`` games of one learner against per-game opponents (docs/design/trainer.md).

Each game has its own opponent (drawn when the game starts) and its own random learner seat.
Every step the learner acts for all games in one batch and the opponents act grouped by policy
object (one forward pass per distinct policy). ``step`` returns the games that just ended with the
learner's score; the caller records them (payoff, G, ...) and then calls ``restart`` for those games,
so that new opponents are drawn from Ω as it is *after* curation.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from selfplay.training.batching import assign_state, group_by_policy, index_state

# draw(k) -> k (opponent key, frozen policy) pairs
Draw = Callable[[int], list[tuple[Hashable, Any]]]


@dataclass
class FinishedGame:
    game: int  # index of the game slot in the batch
    opponent: Hashable  # the key it was drawn under (entry id, player name, ...)
    seat: int  # the learner's seat
    score: float  # the learner's score: 1 win, ½ draw, 0 loss
    trajectory: np.ndarray | None  # the learner's trajectory vector, if the env gives one


def learner_scores(winner: np.ndarray, draw: np.ndarray, seat: np.ndarray) -> np.ndarray:
    """The learner's score per finished game: 1 if it won, ½ for a draw, 0 if it lost."""
    return np.where(draw, 0.5, (winner == seat).astype(float))


def select_seat(seat: torch.Tensor, per_seat: list) -> torch.Tensor:
    """Per game, the entry of ``per_seat = [seat0, seat1]`` belonging to ``seat`` (0 or 1)."""
    first, second = per_seat
    return torch.where(seat.view((-1,) + (1,) * (first.dim() - 1)) == 0, first, second)


class GameRunner:
    def __init__(self, env: Any, learner: Any, draw: Draw, rng: np.random.Generator, seat: int | None = None) -> None:
        """``seat``: the learner's fixed seat (asymmetric games), or ``None`` for a random seat per game."""
        if seat not in (None, 0, 1):
            raise ValueError(f"seat must be None (random per game), 0 or 1, got {seat!r}")
        self.env, self.learner, self.draw, self.rng, self.fixed_seat = env, learner, draw, rng, seat
        self.n = env.num_envs

    def _seats(self, k: int) -> torch.Tensor:
        if self.fixed_seat is not None:
            return torch.full((k,), self.fixed_seat, dtype=torch.long)
        return torch.as_tensor(self.rng.integers(0, 2, k))

    def start(self) -> None:
        n = self.n
        self.obs = self.env.reset()
        self.seat = self._seats(n)
        drawn = self.draw(n)
        self.keys = [k for k, _ in drawn]
        self.policies = [p for _, p in drawn]
        self.groups = group_by_policy(self.policies)
        self.learner_state = self.learner.initial_state(n)
        self.opp_state = self.policies[0].initial_state(n)
        self.episode_start = torch.ones(n, dtype=torch.bool)

    def _pick(self, per_seat: list, learner_side: bool) -> torch.Tensor:
        """The learner's (or the opponent's) entry of a per-seat pair, game by game."""
        if self.fixed_seat is not None:  # seats may differ in shape (asymmetric games)
            return per_seat[self.fixed_seat if learner_side else 1 - self.fixed_seat]
        return select_seat(self.seat if learner_side else 1 - self.seat, per_seat)

    def _critic_state(self) -> torch.Tensor:
        """The learner's seat's critic input: the agent-specific state (``critic_state == "special"``,
        MAPPO's "AS") or the environment's global state."""
        special = getattr(self.learner, "critic_state", "state") == "special"
        return self._pick(self.env.get_special_state() if special else self.env.get_state(), True)

    def step(self) -> list[FinishedGame]:
        """One environment step of every game; the learner records its reward."""
        masks = self.env.action_masks()
        if all(bool(m.all()) for m in masks):  # every action legal (RirRPS): no mask, the same logits, less work
            masks = None
        seat = self.seat
        extra = {}
        if getattr(self.learner, "uses_global_state", False):  # a centralised value (MAPPO) needs the state
            extra["global_state"] = self._critic_state()
        action, self.learner_state, _ = self.learner.act(self._pick(self.obs, True), self.learner_state,
                                                         None if masks is None else self._pick(masks, True), self.episode_start, **extra)
        opp_obs, opp_mask = self._pick(self.obs, False), None if masks is None else self._pick(masks, False)
        opp_action = None
        for policy, games in self.groups:
            idx = torch.as_tensor(games)
            a, s, _ = policy.act(opp_obs[idx], index_state(self.opp_state, idx),
                                 None if opp_mask is None else opp_mask[idx], self.episode_start[idx])
            if opp_action is None:
                opp_action = torch.empty((self.n,) + tuple(a.shape[1:]), dtype=a.dtype)
            opp_action[idx] = a
            assign_state(self.opp_state, idx, s)
        if self.fixed_seat is not None:
            actions = [action, opp_action] if self.fixed_seat == 0 else [opp_action, action]
        else:
            zero = (seat == 0).view((-1,) + (1,) * (action.dim() - 1))
            actions = [torch.where(zero, action, opp_action), torch.where(zero, opp_action, action)]
        self.obs, rewards, done, info = self.env.step(actions)
        self.learner.record(self._pick(rewards, True), done)
        if getattr(self.learner, "needs_bootstrap", lambda: False)():  # MAPPO: the value after the rollout
            self.learner.bootstrap(self._critic_state(), self._pick(self.env.action_masks(), True), done)
        self.episode_start = done.clone()
        if not bool(done.any()):
            return []
        finished = torch.nonzero(done).flatten().numpy()
        seats = seat.numpy()[finished]
        scores = learner_scores(info["winner"].numpy()[finished], info["draw"].numpy()[finished], seats)
        traj = info.get("trajectory")
        return [FinishedGame(int(g), self.keys[g], int(s), float(sc),
                             None if traj is None else traj[int(s)][g].numpy().astype(np.uint8))
                for g, s, sc in zip(finished, seats, scores)]

    def restart(self, games: list[int]) -> None:
        """New seats and new opponents for the given game slots (their games already restarted)."""
        if not games:
            return
        idx = torch.as_tensor(games)
        self.seat[idx] = self._seats(len(games))
        for g, (key, policy) in zip(games, self.draw(len(games))):
            self.keys[g], self.policies[g] = key, policy
        self.groups = group_by_policy(self.policies)
