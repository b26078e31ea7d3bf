"""PettingZoo ``ParallelEnv`` view of a two-player SMAC battle (both sides controlled).

Agents are named per side: ``red_0 .. red_{n-1}`` for seat 0 (the map's allies) and
``blue_0 .. blue_{m-1}`` for seat 1 (the map's enemies).  Each agent observes
``{"observation": float32 (obs_size_seat,), "action_mask": int8 (n_actions_seat,)}`` (PettingZoo's
masked-action convention) and gets its seat's team reward.  An agent whose unit dies is
terminated and leaves ``agents`` (the engine gives it the no-op from then on); when the game ends
every remaining agent is terminated, or truncated on a timeout.  ``infos[agent]["winner"]`` is
set on the final step (0 red, 1 blue, -1 draw).  ``mirror`` is ``SMACBattle``'s: by default blue sees
the map mirrored (and starts at the mirror image of red's layout) on maps whose sides field the same
units, so one policy can play both colours; ``mirror=False`` shows blue the map as it is.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from gymnasium import spaces
from pettingzoo import ParallelEnv

from .battle import SMACBattle
from .render import draw_frame

SEAT_NAMES = ("red", "blue")


class SMACParallelEnv(ParallelEnv):
    """One two-player SMAC game with PettingZoo's parallel API (module docstring)."""

    metadata = {"name": "smac_v0", "render_modes": ["rgb_array"]}

    def __init__(self, map_name: str = "3m", mirror: bool | None = None, seed: int | None = None,
                 render_mode: str | None = None, **flags):
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        self.map_name = map_name
        self._flags = dict(flags)
        self._mirror = mirror
        self._battle = self._make_battle(seed)
        b = self._battle
        self.possible_agents = [f"{SEAT_NAMES[s]}_{i}" for s in (0, 1) for i in range(b.n_agents[s])]
        self._seat = {f"{SEAT_NAMES[s]}_{i}": (s, i) for s in (0, 1) for i in range(b.n_agents[s])}
        self.agents: list[str] = []
        self._obs_spaces = {
            a: spaces.Dict({
                "observation": spaces.Box(-np.inf, np.inf, (b.obs_size[s],), np.float32),
                "action_mask": spaces.Box(0, 1, (b.n_actions[s],), np.int8),
            })
            for a, (s, _) in self._seat.items()
        }
        self._act_spaces = {a: spaces.Discrete(b.n_actions[s]) for a, (s, _) in self._seat.items()}

    @functools.cache
    def observation_space(self, agent):
        return self._obs_spaces[agent]

    @functools.cache
    def action_space(self, agent):
        return self._act_spaces[agent]

    def _make_battle(self, seed: int | None):
        return SMACBattle(self.map_name, 1, two_player=True, mirror=self._mirror, seed=seed, auto_reset=False,
                          **self._flags)

    def _observe(self, agents=None):
        obs, masks = self._battle.get_obs(), self._battle.action_masks()
        out = {}
        for a in self.agents if agents is None else agents:
            s, i = self._seat[a]
            out[a] = {"observation": obs[s][0, i].numpy().astype(np.float32),
                      "action_mask": masks[s][0, i].numpy().astype(np.int8)}
        return out

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._battle.close()
            self._battle = self._make_battle(seed)
        self._battle.reset()
        self.agents = list(self.possible_agents)
        return self._observe(), {a: {} for a in self.agents}

    def step(self, actions: dict):
        b = self._battle
        per_seat = [torch.zeros(1, b.n_agents[s], dtype=torch.long) for s in (0, 1)]
        for a, (s, i) in self._seat.items():
            if a in self.agents:
                if a not in actions:
                    raise ValueError(f"actions must contain every live agent; {a!r} is missing")
                per_seat[s][0, i] = int(actions[a])
        _, rewards, done, info = b.step(per_seat)
        alive = b.engine.alive[0]
        ended = bool(done[0])
        timeout = bool(info["timeout"][0])
        live = list(self.agents)
        obs = self._observe(live)
        rew = {a: float(rewards[self._seat[a][0]][0]) for a in live}
        terminated, truncated, infos = {}, {}, {}
        for a in live:
            s, i = self._seat[a]
            unit_dead = not bool(alive[b.engine.side_slices[s]][i])
            terminated[a] = (ended and not timeout) or unit_dead
            truncated[a] = ended and timeout and not unit_dead
            infos[a] = {"winner": int(info["winner"][0])} if ended else {}
        self.agents = [a for a in live if not (terminated[a] or truncated[a])]
        return obs, rew, terminated, truncated, infos

    def render(self):
        """With ``render_mode="rgb_array"``: the game as an RGB image (``render.draw_frame``), else None."""
        if self.render_mode is None:
            return None
        return draw_frame(self._battle, 0, scale=8)

    def close(self):
        self._battle.close()


class SMACv2ParallelEnv(SMACParallelEnv):
    """One two-player SMACv2 game with PettingZoo's parallel API: both teams drawn from ``scenario``'s
    distribution at every reset (``SMACv2Battle``), red the scenario's allies, blue its enemies (more of
    them on the ``10_vs_11``-style scenarios); ``mirror`` (default) shows blue the map mirrored, so one
    policy can play both colours where the teams are the same size. Otherwise as ``SMACParallelEnv``."""

    metadata = {"name": "smacv2_v0", "render_modes": ["rgb_array"]}

    def __init__(self, scenario: str = "protoss_5_vs_5", mirror: bool = True, seed: int | None = None,
                 render_mode: str | None = None):
        super().__init__(scenario, mirror, seed, render_mode)

    def _make_battle(self, seed: int | None):
        from .smacv2_battle import SMACv2Battle

        return SMACv2Battle(self.map_name, 1, two_player=True, mirror=self._mirror, seed=seed, auto_reset=False)
