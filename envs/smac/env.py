"""``SMACEnv``: one SMAC game with SMAC's own interface (``smac.env.StarCraft2Env``), on our engine.

Code written for SMAC runs unchanged::

    env = SMACEnv("3m", seed=0)
    env_info = env.get_env_info()          # obs_shape, state_shape, n_actions, n_agents, episode_limit
    env.reset()
    terminated = False
    while not terminated:
        obs, state = env.get_obs(), env.get_state()
        actions = [pick(env.get_avail_agent_actions(i)) for i in range(env.n_agents)]
        reward, terminated, info = env.step(actions)   # info["battle_won"]
    env.close()

The enemies are the map's scripted AI (spec-smac.md §7).  Flags and defaults are SMAC's (features
and rewards: see ``features.FeatureConfig`` and ``rewards.RewardConfig``); SMAC options that only
concern the real game (``difficulty``, ``game_version``, ``replay_dir``, window sizes, ``debug``)
are accepted and ignored; ``step_mul`` and ``move_amount`` must keep SMAC's values 8 and 2.
Outputs are numpy float32 arrays and Python numbers, as in SMAC.
"""

from __future__ import annotations

import numpy as np
import torch

from .battle import SMACBattle

_IGNORED = {"difficulty", "game_version", "replay_dir", "replay_prefix", "window_size_x", "window_size_y",
            "debug", "heuristic_rest"}


class SMACEnv:
    """SMAC's ``StarCraft2Env`` interface on the batched simulator (one game, scripted enemy)."""

    def __init__(self, map_name: str = "8m", seed: int | None = None, step_mul: int = 8, move_amount: float = 2,
                 continuing_episode: bool = False, heuristic_ai: bool = False, obs_instead_of_state: bool = False,
                 device: str = "cpu", **flags):
        if step_mul != 8:
            raise ValueError(f"step_mul must be 8 (the simulator's fixed step), got {step_mul!r}")
        if move_amount != 2:
            raise ValueError(f"move_amount must be 2 (SMAC's value), got {move_amount!r}")
        if heuristic_ai:
            raise ValueError("heuristic_ai=True is not supported; use envs.smac.scripted for scripted agents")
        for k in list(flags):
            if k in _IGNORED:
                flags.pop(k)
        self.map_name = map_name
        self._seed = seed
        self.continuing_episode = continuing_episode
        self.obs_instead_of_state = obs_instead_of_state
        self._battle = SMACBattle(map_name, 1, two_player=False, device=device, seed=seed, auto_reset=False, **flags)
        b = self._battle
        self.n_agents = b.n_agents[0]
        self.n_enemies = b.n_enemies[0]
        self.n_actions = b.n_actions[0]
        self.episode_limit = b.episode_limit
        self.map_type = b.spec.map_type
        self.unit_type_bits = b.spec.unit_type_bits
        self.battles_won = 0
        self.battles_game = 0
        self.timeouts = 0
        self.restarts = 0
        self._episode_steps = 0
        self._total_steps = 0
        self._terminated = False
        self._battle.reset()

    # ----------------------------------------------------------- episodes
    def reset(self):
        """Start a new episode; returns ``(obs, state)`` like SMAC."""
        self._battle.reset()
        self._episode_steps = 0
        self._terminated = False
        return self.get_obs(), self.get_state()

    def step(self, actions):
        """Apply one action per agent; returns ``(reward, terminated, info)``."""
        a = torch.as_tensor(np.asarray([int(x) for x in np.asarray(actions).reshape(-1)]) if not
                            torch.is_tensor(actions) else actions.reshape(-1)).reshape(1, -1)
        if a.shape[1] != self.n_agents:
            raise ValueError(f"actions must have one entry per agent ({self.n_agents}), got {a.shape[1]}")
        _, rewards, done, info = self._battle.step([a])
        self._episode_steps += 1
        self._total_steps += 1
        terminated = bool(done[0])
        won = bool(info["battle_won"][0][0])
        out = {"battle_won": won}
        if terminated:
            self.battles_game += 1
            self.battles_won += int(won)
            if bool(info["timeout"][0]):
                self.timeouts += 1
                if self.continuing_episode:
                    out["episode_limit"] = True
            out["dead_allies"] = int(info["dead_allies"][0][0])
            out["dead_enemies"] = int(info["dead_enemies"][0][0])
        self._terminated = terminated
        return float(rewards[0][0]), terminated, out

    # ------------------------------------------------------------ features
    def get_obs(self):
        obs = self._battle.get_obs()[0][0].cpu().numpy().astype(np.float32)
        return [obs[i] for i in range(self.n_agents)]

    def get_obs_agent(self, agent_id: int):
        self._check_agent(agent_id)
        return self.get_obs()[agent_id]

    def get_state(self):
        if self.obs_instead_of_state:
            return np.concatenate(self.get_obs(), axis=0).astype(np.float32)
        return self._battle.get_state()[0][0].cpu().numpy().astype(np.float32)

    def get_avail_agent_actions(self, agent_id: int):
        self._check_agent(agent_id)
        return self._battle.action_masks()[0][0, agent_id].int().tolist()

    def get_avail_actions(self):
        return self._battle.action_masks()[0][0].int().tolist()

    def get_obs_size(self) -> int:
        return self._battle.obs_size[0]

    def get_state_size(self) -> int:
        if self.obs_instead_of_state:
            return self.get_obs_size() * self.n_agents
        return self._battle.state_size[0]

    def get_total_actions(self) -> int:
        return self.n_actions

    def get_env_info(self) -> dict:
        return {
            "state_shape": self.get_state_size(),
            "obs_shape": self.get_obs_size(),
            "n_actions": self.get_total_actions(),
            "n_agents": self.n_agents,
            "episode_limit": self.episode_limit,
        }

    def get_stats(self) -> dict:
        return {
            "battles_won": self.battles_won,
            "battles_game": self.battles_game,
            "battles_draw": self.timeouts,
            "win_rate": self.battles_won / self.battles_game if self.battles_game else 0.0,
            "timeouts": self.timeouts,
            "restarts": self.restarts,
        }

    # -------------------------------------------------------------- misc
    def seed(self):
        return self._seed

    def render(self, mode: str = "human"):
        raise NotImplementedError("the simulator has no renderer")

    def save_replay(self):
        pass  # no SC2 replays without the real game

    def close(self):
        self._battle.close()  # ends the real games of backend="sc2"; nothing for the simulator

    def _check_agent(self, agent_id: int) -> None:
        if not 0 <= int(agent_id) < self.n_agents:
            raise ValueError(f"agent_id must be in 0..{self.n_agents - 1}, got {agent_id!r}")
