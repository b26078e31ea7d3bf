"""A PettingZoo ``ParallelEnv`` view of one repeated matrix game (the same engine, ``num_envs = 1``).

Agents ``"player_0"`` (seat 0) and ``"player_1"`` (seat 1). Observations are float32 numpy vectors in
``Box(0, 1, (obs_size,))``, each from the agent's own view (docs/design/selfplay.md §4); actions are
``Discrete(k)``. Rewards are the per-repetition payoffs. Both agents terminate after the last
repetition; ``infos[agent]["winner"]`` then names the winning agent (ties broken at random by the
engine's seeded generator) and ``infos[agent]["episode_reward"]`` its return.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from gymnasium import spaces
from pettingzoo import ParallelEnv
from selfplay.envs.rps.game import RepeatedMatrixGame, make_game


class MatrixGameParallelEnv(ParallelEnv):
    """PettingZoo parallel API over a single repeated matrix game.

    ``game``: a registered game name (``"rirrps"``, ``"biased-rps"``, ``"rpsls"``) or a payoff matrix.
    """

    metadata = {"name": "repeated_matrix_game_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, game="rirrps", n_recall: int = 3, repetitions: int = 10, seed: int | None = None):
        if isinstance(game, str):
            self.game = make_game(game, 1, n_recall=n_recall, repetitions=repetitions, seed=seed)
        else:
            self.game = RepeatedMatrixGame(game, 1, n_recall=n_recall, repetitions=repetitions, seed=seed)
        self.possible_agents = ["player_0", "player_1"]
        self.agents: list[str] = []
        self.render_mode = None
        self._observation_space = spaces.Box(0.0, 1.0, (self.game.obs_size,), dtype=np.float32)
        self._action_space = spaces.Discrete(self.game.n_actions)

    @functools.cache
    def observation_space(self, agent):
        return self._observation_space

    @functools.cache
    def action_space(self, agent):
        return self._action_space

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._action_space.seed(seed)
        obs = self.game.reset(seed=seed)
        self.agents = list(self.possible_agents)
        return self._to_dict(obs), {agent: {} for agent in self.agents}

    def step(self, actions):
        if not self.agents:
            raise ValueError("step() called on a finished game; call reset() first")
        missing = [agent for agent in self.agents if agent not in actions]
        if missing:
            raise ValueError(f"actions must hold one action for every live agent; missing {missing}")
        joint = [torch.tensor([int(actions[agent])]) for agent in self.possible_agents]
        obs, rewards, done, info = self.game.step(joint, auto_reset=False)
        finished = bool(done[0])
        observations = self._to_dict(obs)
        reward = {agent: float(rewards[seat][0]) for seat, agent in enumerate(self.possible_agents)}
        terminations = {agent: finished for agent in self.possible_agents}
        truncations = {agent: False for agent in self.possible_agents}
        infos = {agent: {} for agent in self.possible_agents}
        if finished:
            winner = self.possible_agents[int(info["winner"][0])]
            for seat, agent in enumerate(self.possible_agents):
                infos[agent] = {"winner": winner, "episode_reward": float(info["episode_reward"][seat][0])}
            self.agents = []
        return observations, reward, terminations, truncations, infos

    def render(self):
        return None

    def close(self):
        pass

    def _to_dict(self, obs):
        return {agent: obs[seat][0].cpu().numpy() for seat, agent in enumerate(self.possible_agents)}
