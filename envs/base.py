"""The two-seat batched environment contract every environment of the suite speaks (docs/design/run-directory.md).

An environment advances ``num_envs`` independent two-player games together, as tensors. Seats are
0 and 1; everything per seat is a list ``[seat0, seat1]`` and each seat sees its game from its own
point of view.

    ``reset() -> [obs0, obs1]``
        each ``(num_envs, obs_size)`` (SMAC sides: ``(num_envs, n_agents, obs_size)``).
    ``step([a0, a1]) -> (obs, rewards, done, info)``
        ``a_i``: integer ``(num_envs,)`` (SMAC: ``(num_envs, n_agents)``);
        ``rewards``: ``[r0, r1]``, each ``(num_envs,)`` float, the reward of the step just taken;
        ``done``: ``(num_envs,)`` bool, the game ended with this step;
        ``info["winner"]``: long ``(num_envs,)``, 0 or 1 for a game that just ended, -1 otherwise
        (and for draws);
        ``info["draw"]``: bool ``(num_envs,)``, the game just ended in a draw;
        ``info["episode_reward"]``: ``[R0, R1]``, each ``(num_envs,)``, the finished game's return
        (valid where ``done``).
        Finished games reset on their own: where ``done`` the returned observation is the first
        observation of the next game.
    ``action_masks() -> [mask0, mask1]``
        bool, ``(num_envs, n_actions)`` (SMAC: ``(num_envs, n_agents, n_actions)``), True = legal.

Attributes: ``num_envs``, ``obs_size``, ``n_actions``, ``episode_length`` (the maximum, where
episodes have variable length).

Optional, for a finite observation set: ``n_observation_ids`` and ``observation_ids() -> [ids0, ids1]``
(long ``(num_envs,)`` in ``[0, n_observation_ids)``, equal exactly where the observations are equal);
population evaluation then computes each distinct (policy, history) once (``training.matches``).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class TwoPlayerBatchedEnv(Protocol):
    num_envs: int
    obs_size: int
    n_actions: int
    episode_length: int

    def reset(self) -> list[Any]: ...

    def step(self, actions: list[Any]) -> tuple[list[Any], list[Any], Any, dict]: ...

    def action_masks(self) -> list[Any]: ...
