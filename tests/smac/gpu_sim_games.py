"""Plays short seeded games on the CPU build and on the GPU build under numba-cuda's simulator and
prints the first difference, or ``IDENTICAL <games>``.  Run by ``test_gpu_build.py`` in a fresh
process, because ``NUMBA_ENABLE_CUDASIM=1`` must be set before numba is imported.

Usage: ``python gpu_sim_games.py '[["3m", 2, 10, true, {}], ...]'`` (``main``).
"""

from __future__ import annotations

import json
import os
import sys

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
from selfplay.envs.smac import SMACBattle  # noqa: E402
from selfplay.envs.smac.build import GpuBuild  # noqa: E402
from selfplay.envs.smac.records import STATE_FIELDS  # noqa: E402


def first_difference(a, b, what: str) -> str | None:
    if isinstance(a, list):
        for k, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{what}[{k}]")
            if found:
                return found
        return None
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{what}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
    if not np.array_equal(a, b):
        where = tuple(int(i) for i in np.argwhere(a != b)[0])
        return f"{what} differs first at {where}: cpu {a[where]!r} vs gpu {b[where]!r}"
    return None


def play(map_name: str, num_envs: int, steps: int, two_player: bool, perturb: bool = False, **flags) -> str:
    """Play both builds side by side; ``IDENTICAL games damage shield heal banelings`` (finished games,
    steps with hp lost, shield lost, Medivac energy spent; banelings gone, i.e. exploded or killed) or
    the first difference."""
    cpu = SMACBattle(map_name, num_envs, two_player=two_player, seed=3, **flags)
    gpu = SMACBattle(map_name, num_envs, two_player=two_player, seed=3, **flags)
    gpu.engine.use_build(GpuBuild())
    if perturb:  # the comparison can fail: one unit 0.1 % faster on the GPU build
        gpu.engine.static.speed[:, 0] *= np.float32(1.001)
    gen = torch.Generator().manual_seed(4)
    found = first_difference([o.numpy() for o in cpu.reset()], [o.numpy() for o in gpu.reset()], "reset obs")
    games = damage = shield = heal = banelings = 0
    is_baneling = np.array([n == "baneling" for n in cpu.engine.unit_names])
    for step in range(steps):
        if found:
            return found
        masks = cpu.fast_masks()
        found = first_difference(masks, gpu.fast_masks(), f"step {step} masks") or \
            first_difference(cpu.fast_states(), gpu.fast_states(), f"step {step} state")
        acts = [(torch.rand(m.shape, generator=gen) * torch.from_numpy(m)).argmax(-1).numpy() for m in masks]
        before = {f: cpu.engine.arrays(f).copy() for f in ("hp", "shield", "energy")}
        oc, rc, dc, ic = cpu.fast_step(acts)
        og, rg, dg, ig = gpu.fast_step(acts)
        found = found or first_difference(oc, og, f"step {step} obs") or \
            first_difference(rc, rg, f"step {step} rewards") or first_difference(dc, dg, f"step {step} done")
        for key in ic:
            found = found or first_difference(ic[key], ig[key], f"step {step} info[{key}]")
        for field in STATE_FIELDS:
            found = found or first_difference(cpu.engine.arrays(field), gpu.engine.arrays(field), f"step {step} {field}")
        playing = ~dc[:, None]  # games that reset this step are not compared with their previous state
        damage += bool(((cpu.engine.arrays("hp") < before["hp"]) & playing).any())
        shield += bool(((cpu.engine.arrays("shield") < before["shield"]) & playing).any())
        heal += bool(((cpu.engine.arrays("energy") < before["energy"]) & playing).any())
        banelings += int(((before["hp"] > 0) & (cpu.engine.arrays("hp") <= 0) & playing & is_baneling).sum())
        games += int(dc.sum())
    return found or f"IDENTICAL {games} {damage} {shield} {heal} {banelings}"


def main(cases: list[list]) -> None:
    """One line per case ``[map, num_envs, steps, two_player, {flags}]``."""
    for map_name, num_envs, steps, two_player, flags in cases:
        print(map_name, play(map_name, num_envs, steps, two_player, **flags), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
