"""Computes SMACv2's masks, observations and state with the GPU build of the rules (CUDA device
functions of ``build.gpu()`` launched from a kernel, under numba-cuda's simulator) next to the CPU
build's (``smacv2_features.V2Seat``) on seeded random episodes with sight cones, and prints
``IDENTICAL <states>`` or the first difference.  Run by ``test_smacv2.py`` in a fresh process:
``NUMBA_ENABLE_CUDASIM=1`` must be set before numba is imported.  ``--perturb``: the GPU side
sees 1 % longer sight ranges (prints ``DIFFERS``).

``--games``: two batched two-player SMACv2 battles of the same seed (an EPO scenario with cones:
the observation draws too), one on the CPU build and one on the GPU build's SMACv2 kernels
(``gpu_kernels.v2_*``), stepped with the same random actions through resets; prints
``IDENTICAL <steps>`` when observations, states, masks, rewards, dones and unit fields agree at every
step; with ``--perturb`` the GPU side's first unit of every game is 0.1 % faster (after the draw).

``--all``: the four runs (rows, rows perturbed, games, games perturbed) in this one process, one line
each, prefixed ``rows``, ``rows-perturb``, ``games``, ``games-perturb`` (a process's start-up — torch,
numba, the CPU build's cache — costs more than the runs).
"""

from __future__ import annotations

import os
import sys

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402
from selfplay.envs.smac import StarCraftCapabilityEnvWrapper, build, get_scenario  # noqa: E402

G = build.gpu()
avail_v2, obs_v2, state_v2 = G.avail_actions_v2, G.observations_v2, G.state_v2


@cuda.jit
def features_kernel(avail, true_avail, obs, state, last_action, t, px, py, hp, shield, hp_max, shield_max, hp_frac,
                    shield_frac, ally0, n, enemy0, m, is_medivac, pathing, height, shoot, sight, fov, half_angle, conic,
                    n_fov, action_mask, ally_type, enemy_type, bits, observe, shield_bits, seen, hidden, own_pos,
                    fully, config, cooldown, energy, max_cd, cx, cy, width, height_span):
    """One game: the three SMACv2 rules as the GPU build compiles them (one thread)."""
    if cuda.grid(1) == 0:
        avail_v2(avail, true_avail, px, py, hp, ally0, n, enemy0, m, is_medivac, pathing, shoot, fov, half_angle,
                 conic, n_fov, action_mask)
        obs_v2(obs, true_avail, last_action, t, px, py, hp, shield, hp_max, shield_max, hp_frac, shield_frac, ally0,
               n, enemy0, m, ally_type, enemy_type, bits, observe, shield_bits, shield_bits, pathing, height, sight,
               fov, half_angle, conic, n_fov, seen, hidden, own_pos, 32.0, 32.0, fully, config)
        state_v2(state, last_action, t, px, py, hp, shield, hp_max, shield_max, cooldown, energy, max_cd, is_medivac,
                 ally0, n, enemy0, m, ally_type, enemy_type, bits, shield_bits, shield_bits, cx, cy, width,
                 height_span, fov, conic, config)


def gpu_rows(env, perturb: bool = False):
    """(avail, obs, state) of the env's current state by the GPU build, from the same inputs and
    observed-enemy set as the CPU build's last call; ``perturb``: sight ranges 1 % longer (the
    comparison must then fail)."""
    seat, eng, L, f = env.seat, env.engine, env.layout, env.flags
    px, py = seat._xy()
    hp, shield = eng.arrays("hp")[0], eng.arrays("shield")[0]
    avail = np.zeros((seat.n, L.n_actions), np.bool_)
    true_avail = np.zeros_like(avail)
    obs = np.zeros((seat.n, L.obs_size), np.float32)
    state = np.zeros(L.state_size(), np.float32)
    U = hp.shape[0]
    spec = eng.spec
    features_kernel[1, 1](avail, true_avail, obs, state, seat.last_action, np.float32(env._timestep()), px, py, hp,
                          shield, seat.hp_max, seat.shield_max, np.zeros(U, np.float32), np.zeros(U, np.float32),
                          seat.ally0, seat.n, seat.enemy0, seat.m, seat.is_medivac, seat.pathing, seat.height,
                          seat.shoot, seat.sight * np.float32(1.01 if perturb else 1.0), seat.fov, seat.half_angle, int(f.conic_fov), L.n_fov,
                          bool(f.action_mask), seat.ally_type, seat.enemy_type, L.bits, int(f.observe_types), L.shield,
                          seat.seen, seat.hidden, int(f.obs_own_pos), bool(f.fully_observable), seat.config,
                          eng.arrays("cooldown")[0], eng.arrays("energy")[0], seat.max_cd, np.float32(16.0),
                          np.float32(16.0), np.float32(spec.playable_width), np.float32(spec.playable_height))
    return avail, obs, state


def games(perturb: bool, steps: int = 12) -> str:
    """The ``--games`` mode (module docstring): its line."""
    import torch
    from selfplay.envs.smac.smacv2_battle import SMACv2Battle

    cpu, gpu = (SMACv2Battle("terran_5_vs_5_epo", 2, seed=6, conic_fov=True) for _ in range(2))
    gpu.games.use_build(build.GpuBuild())
    outs = [b.reset() for b in (cpu, gpu)]
    if perturb:  # after the draws, which write the units' constants
        gpu.engine.static.speed[:, 0] *= np.float32(1.001)
    gen = torch.Generator().manual_seed(0)
    for step in range(steps):
        masks = [b.action_masks() for b in (cpu, gpu)]
        rows = [[*o, *m, *b.get_state(), b.engine.arrays("hp"), b.engine.arrays("pos")]
                for o, m, b in zip(outs, masks, (cpu, gpu))]
        for k, (x, y) in enumerate(zip(*rows)):
            if not np.array_equal(np.asarray(x), np.asarray(y)):
                return f"DIFFERS item {k} at step {step}"
        actions = [torch.multinomial(m.reshape(-1, m.shape[-1]).float(), 1, generator=gen).reshape(m.shape[:-1])
                   for m in masks[0]]
        results = [b.step(actions) for b in (cpu, gpu)]
        for x, y in zip(results[0][1] + [results[0][2]], results[1][1] + [results[1][2]]):
            if not torch.equal(x, y):
                return f"DIFFERS rewards or dones at step {step}"
        outs = [r[0] for r in results]
    return f"IDENTICAL {steps}"


def feature_rows(perturb: bool) -> str:
    """The default mode (module docstring): its line."""
    env = StarCraftCapabilityEnvWrapper(seed=4, **{**get_scenario("terran_5_vs_5").env_args(), "conic_fov": True})
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(2):
        env.reset()
        terminated = False
        while not terminated and checked < 12:
            cpu_obs, cpu_state = np.stack(env.get_obs()), env.get_state()
            cpu_avail = env.seat.avail()[0]
            avail, obs, state = gpu_rows(env, perturb)
            for name, x, y in (("avail", cpu_avail, avail), ("obs", cpu_obs, obs), ("state", cpu_state, state)):
                if not np.array_equal(x, y):
                    return f"DIFFERS {name} at state {checked}"
            checked += 1
            actions = [int(rng.choice(np.flatnonzero(r))) for r in cpu_avail]
            _, terminated, _ = env.step(actions)
    return f"IDENTICAL {checked}"


def main() -> None:
    if "--all" in sys.argv:
        for name, run in (("rows", feature_rows), ("games", games)):
            for perturb in (False, True):
                print(name + ("-perturb" if perturb else ""), run(perturb), flush=True)
        return
    print((games if "--games" in sys.argv else feature_rows)("--perturb" in sys.argv))


if __name__ == "__main__":
    main()
