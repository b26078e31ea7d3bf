"""``AlphaStarPolicy``: the AlphaStar network as a batched policy of the suite (selfplay/core/policy.py)
over a ``CommanderEnv`` (agents/alphastar/smac/env.py), and its policy file.

    policy = AlphaStarPolicy(net, temperature=1.0, seed=0)
    state = policy.initial_state(E)                    # (h, c), each [E, layers, lstm_size] (batch first)
    action, state, info = policy.act(obs, state, mask=due, episode_start=start)

``obs`` is the environment's packed observation ``(B, layout.size)``; ``mask`` its ``due`` flags
``(B,)``: the network runs only on due games, in one batched pass, and only their LSTM state moves
on (the LSTM steps once per decision, as AlphaStar's core does per observation). Games that are not
due get ``layout.idle_actions`` (ignored by the environment). ``info`` holds ``due``, the per-head
``log_probs`` ``{head: (B,)}`` of the sampled arguments, their sum ``log_prob`` and the ``value``
(zero where not due). Any subset of games may be passed (rows of ``obs``, ``state`` and ``mask``).

A policy whose network never trains again is a frozen policy (league checkpoints, opponents).
"""

from __future__ import annotations

import os
from dataclasses import asdict

import torch

from selfplay.utils.io import atomic_write

from .config import HEADS, AlphaStarConfig
from .network import AlphaStarNet, seeded_network
from .smac.env import ObsLayout


def batch_first(state) -> tuple[torch.Tensor, torch.Tensor]:
    """LSTM state ``[layers, B, H]`` → ``[B, layers, H]`` (the suite's batch-first contract)."""
    return tuple(s.transpose(0, 1).contiguous() for s in state)


def layers_first(state) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch-first LSTM state ``[B, layers, H]`` → the core's ``[layers, B, H]``."""
    return tuple(s.transpose(0, 1).contiguous() for s in state)


class AlphaStarPolicy:
    """The network acting on packed commander observations (module docstring)."""

    recurrent = True

    def __init__(self, net: AlphaStarNet, temperature: float = 1.0, seed: int = 0):
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature!r}")
        self.net, self.temperature = net, float(temperature)
        self.layout = ObsLayout(net.config)
        self.generator = torch.Generator().manual_seed(int(seed))

    @property
    def config(self) -> AlphaStarConfig:
        return self.net.config

    def initial_state(self, batch: int):
        return batch_first(self.net.initial_state(batch))

    @torch.no_grad()
    def act(self, obs, state=None, mask=None, episode_start=None):
        step = self.decide(obs, state, mask, episode_start)
        return step["action"], step["state"], step["info"]

    @torch.no_grad()
    def decide(self, obs, state=None, mask=None, episode_start=None) -> dict:
        """``act`` with what a learner records: the ``rows`` that decided, their ``input_state`` (after
        episode resets) and ``start`` flags besides ``action``, ``state`` and ``info``."""
        obs = torch.as_tensor(obs, dtype=torch.float32)
        B = obs.shape[0]
        if obs.dim() != 2 or obs.shape[1] != self.layout.size:
            raise ValueError(f"obs must be packed commander observations (B, {self.layout.size}), got "
                             f"{tuple(obs.shape)}; play through CommanderEnv with a network of matching sizes")
        h, c = state if state is not None else self.initial_state(B)
        start = torch.zeros(B, dtype=torch.bool) if episode_start is None else torch.as_tensor(episode_start).bool().reshape(B)
        keep = (~start).to(h.dtype)[:, None, None]
        h, c = h * keep, c * keep
        due = torch.ones(B, dtype=torch.bool) if mask is None else torch.as_tensor(mask).bool().reshape(B)
        rows = torch.nonzero(due).flatten()
        action = self.layout.idle_actions(B)
        info = {"due": due, "log_probs": {k: torch.zeros(B) for k in HEADS}, "log_prob": torch.zeros(B),
                "value": torch.zeros(B)}
        step = {"rows": rows, "input_state": (h[rows], c[rows]), "start": start[rows]}
        if rows.numel():
            self.net.eval()
            out = self.net(self.layout.unpack(obs[rows]), layers_first((h[rows], c[rows])),
                           temperature=self.temperature, generator=self.generator)
            h, c = h.clone(), c.clone()
            h[rows], c[rows] = batch_first(out.state)
            action[rows] = self.layout.pack_actions(out.actions)[:, 0]
            for k in HEADS:
                info["log_probs"][k][rows] = out.log_probs[k][:, 0]
            info["log_prob"][rows] = sum(out.log_probs[k][:, 0] for k in HEADS)
            info["value"][rows] = out.value[:, 0]
        step.update(action=action, state=(h, c), info=info)
        return step


def save_policy(policy: AlphaStarPolicy, path: str | os.PathLike) -> None:
    """Write the network's weights, sizes and the policy's temperature (atomically)."""
    payload = {"format": "alphastar-policy/1", "state_dict": policy.net.state_dict(),
               "network_config": asdict(policy.net.config), "temperature": policy.temperature}
    atomic_write(path, lambda tmp: torch.save(payload, tmp))


def network_from_dict(config: dict, state_dict: dict | None = None) -> AlphaStarNet:
    """An ``AlphaStarNet`` from a saved ``asdict(config)`` (and weights; without them, the initial
    weights of seed 0)."""
    net = seeded_network(config_from_dict(config), 0)
    if state_dict is not None:
        net.load_state_dict(state_dict)
    return net


def config_from_dict(config: dict) -> AlphaStarConfig:
    from .config import ActionTypeSpec, BaselineSpec, ScalarFeature

    d = dict(config)
    if d.get("action_types") is not None:
        d["action_types"] = tuple(
            ActionTypeSpec(**{**a, "unit_types": None if a.get("unit_types") is None else tuple(a["unit_types"])})
            if isinstance(a, dict) else a for a in d["action_types"])
    if d.get("baselines") is not None:
        d["baselines"] = tuple(BaselineSpec(**b) if isinstance(b, dict) else b for b in d["baselines"])
    if d.get("scalar_features") is not None:
        d["scalar_features"] = tuple(ScalarFeature(**s) if isinstance(s, dict) else s for s in d["scalar_features"])
    for k, v in d.items():
        if isinstance(v, list):
            d[k] = tuple(v)
    return AlphaStarConfig(**d)


def load_policy(path: str | os.PathLike, seed: int = 0) -> AlphaStarPolicy:
    """A frozen ``AlphaStarPolicy`` from ``save_policy``'s file or from ``run_sl``'s ``sl_checkpoint.pt``."""
    from selfplay.utils.io import load_torch_data

    data = load_torch_data(path, "AlphaStar policy file")
    if not isinstance(data, dict) or "network_config" not in data or "state_dict" not in data:
        raise ValueError(f"{path} is not an AlphaStar policy file (save_policy) or SL checkpoint (run_sl)")
    net = network_from_dict(data["network_config"], data["state_dict"])
    for p in net.parameters():
        p.requires_grad_(False)
    return AlphaStarPolicy(net.eval(), data.get("temperature", 1.0), seed)
