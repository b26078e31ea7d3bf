"""Compile the SMAC engine's CPU build ahead of its first use: ``python -m selfplay.envs.smac.precompile``.

numba compiles each entry of the CPU build (``build.cpu()``: the rules, the drivers, the SMACv2 step) at
its first call and caches it on disk under ``envs/smac/__pycache__``, keyed
by the rules' sources. A fresh install would otherwise spend minutes of compilation inside its first
SMAC game (or its first test run); ``make install`` runs this once instead. It plays a few seeded
random steps of one game through ``SMACEnv``, of a two-player batch and a batch against the scripted
AI and of a SMACv2 batch (a large batch's chunks run the same compiled drivers on threads); what it
plays is thrown away.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from .battle import SMACBattle
from .env import SMACEnv
from .smacv2_battle import SMACv2Battle


def _random_steps(battle, steps: int, rng: np.random.Generator) -> None:
    battle.reset()
    for _ in range(steps):
        masks = battle.action_masks()
        battle.step([torch.from_numpy((rng.random(m.shape) * m.numpy()).argmax(-1)) for m in masks])


def precompile(steps: int = 3) -> None:
    """Compile (or load from numba's cache) every CPU entry the SMAC and SMACv2 environments call."""
    rng = np.random.default_rng(0)
    env = SMACEnv("3m", seed=0)
    env.reset()
    for _ in range(steps):
        avail = np.asarray(env.get_avail_actions(), dtype=np.float64)
        env.get_obs(), env.get_state()
        env.step(list((rng.random(avail.shape) * avail).argmax(-1)))
    env.close()
    _random_steps(SMACBattle("3m", 2, two_player=True, seed=0), steps, rng)
    _random_steps(SMACBattle("3m", 2, two_player=False, seed=0), steps, rng)
    _random_steps(SMACv2Battle("protoss_5_vs_5", 2, seed=0), steps, rng)


if __name__ == "__main__":
    start = time.perf_counter()
    precompile()
    print(f"SMAC CPU build compiled (or loaded from its cache) in {time.perf_counter() - start:.0f} s")
