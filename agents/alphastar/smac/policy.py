"""``AlphaStarSMACPolicy``: the AlphaStar network playing one seat of a ``SMACBattle`` under the
suite's batched ``Policy`` contract (selfplay/core/policy.py).

What it takes: the policy is bound to one battle and seat at construction and reads the game
through its ``SMACCommander`` (features, masks, order executor). The ``obs`` and ``mask`` arguments
of ``act`` (the seat's per-agent SMAC observations and action masks) are accepted and ignored.

    policy = AlphaStarSMACPolicy(net, battle, seat=0, temperature=1.0, seed=0)
    state = policy.initial_state(battle.num_envs)
    obs = battle.reset()
    start = torch.ones(E, dtype=torch.bool)
    loop:
        actions, state, info = policy.act(obs[seat], state, None, episode_start=start)
        obs, rewards, done, info = battle.step([...actions of every seat...])
        start = done                          # finished games were auto-reset by the battle

``act`` returns the per-unit SMAC actions ``(E, n_agents)`` of the seat for this step. The state is
the LSTM state ``(h, c)``, each ``[layers, E, lstm_size]``; orders, delays and the last action live
in the commander (they belong to the battle's games). ``episode_start`` (E,) resets both for those
games before acting. The network runs only on the games whose delay has run out (``info["due"]``),
in one batched pass; ``info`` also holds the commander ``actions`` ([E]-shaped, meaningful where
due), their per-head ``log_probs`` summed (``log_prob``) and the ``value`` (0 where not due).
"""

from __future__ import annotations

from dataclasses import fields

import torch

from ..network import UNUSED, AlphaStarActions, AlphaStarNet, AlphaStarObs
from .commander import CommanderConfig, SMACCommander


def select_games(obs: AlphaStarObs, rows: torch.Tensor) -> AlphaStarObs:
    """The observation of the games ``rows`` (index tensor) only."""
    out = {}
    for f in fields(obs):
        v = getattr(obs, f.name)
        if v is None:
            out[f.name] = None
        elif isinstance(v, dict):
            out[f.name] = {k: x[rows] for k, x in v.items()}
        else:
            out[f.name] = v[rows]
    return AlphaStarObs(**out)


class AlphaStarSMACPolicy:
    """The AlphaStar commander as a batched ``Policy`` of one ``SMACBattle`` seat (module docstring)."""

    def __init__(self, net: AlphaStarNet, battle, seat: int = 0, temperature: float = 1.0, seed: int = 0,
                 commander_config: CommanderConfig | None = None):
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature!r}")
        cfg = commander_config or CommanderConfig(num_delays=net.config.num_delays,
                                                   max_selected_units=net.config.max_selected_units,
                                                   grid=net.config.spatial_size)
        self.commander = SMACCommander(battle, seat, cfg)
        nc = net.config
        if (cfg.num_delays, self.commander.max_selected_units, cfg.grid, cfg.grid) != (
                nc.num_delays, nc.max_selected_units, nc.spatial_size, nc.location_resolution):
            raise ValueError("commander_config must match the network's num_delays, max_selected_units and "
                             "grid (= spatial_size = location_resolution)")
        if self.commander.n_entities > net.config.max_entities:
            raise ValueError(f"the map has {self.commander.n_entities} units; the network's max_entities is "
                             f"{net.config.max_entities}")
        self.net, self.battle, self.seat, self.temperature = net, battle, seat, float(temperature)
        self.generator = torch.Generator(device=self.commander.device).manual_seed(int(seed))

    def initial_state(self, batch: int):
        if batch != self.commander.num_envs:
            raise ValueError(f"batch must equal the battle's num_envs ({self.commander.num_envs}), got {batch}")
        return self.net.initial_state(batch, self.commander.device)

    @torch.no_grad()
    def act(self, obs=None, state=None, mask=None, episode_start=None):
        cmd = self.commander
        E = cmd.num_envs
        h, c = state if state is not None else self.initial_state(E)
        if episode_start is not None:
            start = torch.as_tensor(episode_start, device=cmd.device).bool().reshape(E)
            cmd.reset_games(start)
            keep = (~start).to(h.dtype)[None, :, None]
            h, c = h * keep, c * keep
        due = cmd.due()
        info = {"due": due, "log_prob": torch.zeros(E, device=cmd.device), "value": torch.zeros(E, device=cmd.device)}
        if bool(due.any()):
            full = cmd.observe()
            rows = torch.nonzero(due).flatten()
            out = self.net(select_games(full, rows), (h[:, rows], c[:, rows]), temperature=self.temperature,
                           generator=self.generator)
            h, c = h.clone(), c.clone()
            h[:, rows], c[:, rows] = out.state
            actions = {}
            for f in fields(out.actions):
                v = getattr(out.actions, f.name)[:, 0]
                filled = torch.full((E, *v.shape[1:]), UNUSED, dtype=v.dtype, device=v.device)
                filled[rows] = v
                actions[f.name] = filled
            actions["action_type"] = torch.where(due, actions["action_type"], 0)
            actions["delay"] = torch.where(due, actions["delay"], 0)
            commander_actions = AlphaStarActions(**actions)
            cmd.apply(commander_actions, due)
            info["actions"] = commander_actions
            info["log_prob"][rows] = sum(lp[:, 0] for lp in out.log_probs.values())
            info["value"][rows] = out.value[:, 0]
        return cmd.unit_actions(), (h, c), info
