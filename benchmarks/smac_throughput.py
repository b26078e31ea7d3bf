"""Game-steps per second of our SMAC simulator and JaxMARL's SMAX, side by side.

Both engines play 3m, 3s5z and 27m_vs_30m with uniformly random *valid* actions; a game-step is one
step of one game (a batch of 256 stepped once counts 256).  SMAX is the throughput anchor only: it is
a different game (docs/design/smac.md §9).  Every number is the best of 3 timings, to tame a shared CPU.

**Batched mode** (default): per map and ``num_envs`` in {1, 16, 256, 2048}, both sides random
(two-player; no scripted AI).  Ours: ``SMACBattle(map, num_envs, two_player=True)`` stepped one call
per step, masks read each step.  SMAX, two figures: ``step`` = the vmapped ``env.step`` plus
``get_avail_actions`` jitted once as *one* call, called from Python once per step with observations,
world state, rewards, dones and masks fetched to the host each step (the way a Python runner steps
it; for 1 game unvmapped); ``scan`` = the whole rollout compiled as one ``lax.scan`` (actions drawn
in-graph).  SMAX's ``step`` resets finished games itself, in both figures.  ``ratio`` is ours / SMAX-step, ``scan ratio`` ours / SMAX-scan; the CPU-second columns
count this process's CPU time (SMAX's scan uses every core it may; ours too from
``build.PARALLEL_MIN_GAMES`` = 256 games on: chunks of games on threads, one per core unless
``NUMBA_NUM_THREADS`` says fewer; below that one thread).  The last line is
``steps_per_s=<ours> smax_steps_per_s=<smax scan> ratio=<ours/smax>`` for 3s5z at 2048 games.
torch runs one thread here (``--threads``).

**Single-game mode** (``--single``): one game per process, as SMAC users run it (PyMARL/EPyMARL's
runner, SMAC scripts).  The process is pinned to one CPU with ``os.sched_setaffinity`` and XLA is
told to use one thread (``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1``), both *before* torch and jax are imported, so both engines run
on the same core in one run (``--no-pin`` skips both and runs as a plain script would).  No torch
thread setting is made: the engine's own defaults apply.  Per map:
  - ``SMACEnv``: ``SMACEnv(map)`` against its scripted opponent; reset, then per step
    ``get_obs``, ``get_state``, ``get_avail_actions``, random valid actions (numpy), ``step``;
    reset when the episode ends (resets are timed);
  - ``bare``: the same without ``get_obs`` and ``get_state`` (``get_avail_actions`` stays: the random
    policy needs the masks) — the step alone;
  - ``EPyMARL``: the same loop through a ``smac`` package whose ``smac/env/__init__.py`` is the
    one-line shim (docs/guides/smac.md), ``StarCraft2Env(**env_args)`` with EPyMARL's ``sc2.yaml`` arguments,
    actions as a torch tensor from ``torch.multinomial`` over the masks, as EPyMARL's runner passes;
  - ``battle``: ``SMACBattle(map, 1, two_player=True)`` stepped one call per step;
  - SMAX ``step`` and ``scan`` as above, one unvmapped game.
``ratio`` is SMACEnv / SMAX-step (the target: ≥ 4), ``bare ratio`` bare / SMAX-step, ``scan ratio``
SMACEnv / SMAX-scan.  The last line is ``steps_per_s=<SMACEnv> smax_steps_per_s=<SMAX step>
ratio=<ours/smax>`` for one 3m game.

JaxMARL is a benchmark-only dependency, in the ``bench`` extra; when it cannot be imported the
script says so and prints our numbers.  Install (checked 2026-11-30: jaxmarl 0.2.0, jax 0.10.2;
torch 2.13.0+cpu is kept; gymnax caps gymnasium below 1.4, so pip takes gymnasium 1.3.0):

    .venv/bin/pip install -e ".[dev,bench]"
    python benchmarks/smac_throughput.py [--quick] [--device cpu] [--threads 1] [--maps 3m ...] [--batches 1 16 ...]
    python benchmarks/smac_throughput.py --single [--quick] [--no-pin] [--maps 3m ...]

``--quick`` times 2-10 steps; the run is then dominated by SMAX's compilations (two per map and
batch size), several minutes on 2 shared cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

MAPS = ("3m", "3s5z", "27m_vs_30m")
BATCHES = (1, 16, 256, 2048)
STEPS = {1: 200, 16: 100, 256: 20, 2048: 6}  # steps per timing, by the batch size at or above num_envs
QUICK_STEPS = {1: 10, 16: 10, 256: 4, 2048: 2}
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
NAN = float("nan")

# EPyMARL's src/config/envs/sc2.yaml env_args, verbatim (map_name and seed are set per run).
EPYMARL_SC2_ARGS = dict(
    continuing_episode=False, difficulty="7", game_version=None, move_amount=2, obs_all_health=True,
    obs_instead_of_state=False, obs_last_action=False, obs_own_health=True, obs_pathing_grid=False,
    obs_terrain_height=False, obs_timestep_number=False, reward_death_value=10, reward_defeat=0,
    reward_negative_scale=0.5, reward_only_positive=True, reward_scale=True, reward_scale_rate=20,
    reward_sparse=False, reward_win=200, replay_dir="", replay_prefix="", state_last_action=False,
    state_timestep_number=False, step_mul=8, heuristic_ai=False, heuristic_rest=False, debug=False)
SHIM = "from selfplay.envs.smac import StarCraft2Env, MultiAgentEnv\n"  # the one-line shim of docs/guides/smac.md, whole


def steps_for(num_envs: int, quick: bool) -> int:
    """Steps per timing: the entry of the first batch size in the table at or above ``num_envs``."""
    table = QUICK_STEPS if quick else STEPS
    return table[min((b for b in table if b >= num_envs), default=max(table))]


def pin_to_one_cpu() -> int:
    """Pin this process to one CPU it may run on, and ask XLA for one thread; returns the CPU.
    Must run before torch and jax are imported (their thread pools are sized at import)."""
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + XLA_ONE_THREAD).strip()
    return cpu


def best_rates(fn, work: int, repeats: int, sync=lambda: None) -> tuple[float, float]:
    """Best of ``repeats`` runs of ``fn``: (work per wall-clock second, work per CPU-second of this
    process)."""
    wall = cpu = 0.0
    for _ in range(repeats):
        sync()
        t, c = time.perf_counter(), time.process_time()
        fn()
        sync()
        wall = max(wall, work / (time.perf_counter() - t))
        cpu = max(cpu, work / max(time.process_time() - c, 1e-9))
    return wall, cpu


# --------------------------------------------------------------------------------------------- ours
def ours_battle(map_name: str, num_envs: int, steps: int, device: str = "cpu", repeats: int = 3):
    """(steps/s, steps per CPU-second) of ``SMACBattle`` stepped one call per step, both seats random."""
    import torch
    from selfplay.envs.smac import SMACBattle

    b = SMACBattle(map_name, num_envs, two_player=True, mirror=False, device=device, seed=0)  # as measured before
    gen = torch.Generator(device=device).manual_seed(0)

    def random_valid(masks):  # argmax of uniform noise over the legal actions
        return [(torch.rand(m.shape, generator=gen, device=m.device) * m).argmax(-1) for m in masks]

    b.reset()
    for _ in range(2):  # warm-up
        b.step(random_valid(b.action_masks()))

    def run():
        for _ in range(steps):
            b.step(random_valid(b.action_masks()))

    sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)
    return best_rates(run, num_envs * steps, repeats, sync)


def _runner_loop(env, choose, features: bool = True):
    """SMAC's runner loop as ``run(steps)``: per step ``get_obs`` and ``get_state`` (when ``features``),
    ``get_avail_actions``, ``choose(avail)``, ``step``; a reset before the first step and after each
    episode end (timed)."""
    done = [True]

    def run(steps: int) -> int:
        for _ in range(steps):
            if done[0]:
                env.reset()
            if features:
                env.get_obs()
                env.get_state()
            avail = env.get_avail_actions()
            _, done[0], _ = env.step(choose(avail))
        return steps

    return run


def ours_smacenv(map_name: str, steps: int, repeats: int = 3, features: bool = True):
    """(steps/s, per CPU-second) of one ``SMACEnv`` in SMAC's runner loop, random valid actions
    (``features=False``: without ``get_obs`` and ``get_state``)."""
    import numpy as np
    from selfplay.envs.smac import SMACEnv

    env = SMACEnv(map_name, seed=0)
    rng = np.random.default_rng(0)

    def choose(avail):  # argmax of uniform noise over the legal actions
        avail = np.asarray(avail)
        return (rng.random(avail.shape) * avail).argmax(-1)

    run = _runner_loop(env, choose, features)
    run(2)  # warm-up
    out = best_rates(lambda: run(steps), steps, repeats)
    env.close()
    return out


def ours_epymarl(map_name: str, steps: int, repeats: int = 3):
    """(steps/s, per CPU-second) of EPyMARL's episode-runner loop on our simulator: ``smac.env``
    through the one-line shim (docs/guides/smac.md), ``StarCraft2Env(**sc2.yaml env_args)``, torch actions."""
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "smac", "env"))
        open(os.path.join(tmp, "smac", "__init__.py"), "w").close()
        with open(os.path.join(tmp, "smac", "env", "__init__.py"), "w") as f:
            f.write(SHIM)
        sys.path.insert(0, tmp)
        try:
            from smac.env import StarCraft2Env  # the shim
        finally:
            sys.path.remove(tmp)
            for name in ("smac.env", "smac"):
                sys.modules.pop(name, None)
    env = StarCraft2Env(map_name=map_name, seed=0, **EPYMARL_SC2_ARGS)
    gen = torch.Generator().manual_seed(0)

    def choose(avail):  # EPyMARL's controller hands the runner a torch tensor of actions
        return torch.multinomial(torch.tensor(avail, dtype=torch.float32), 1, generator=gen).reshape(-1)

    run = _runner_loop(env, choose)
    run(2)  # warm-up
    out = best_rates(lambda: run(steps), steps, repeats)
    env.close()
    return out


# --------------------------------------------------------------------------------------------- SMAX
def smax_runners():
    """(per_step, scan) functions ``(map_name, num_envs, steps) -> (steps/s, per CPU-second)`` for
    SMAX, or (None, reason)."""
    try:
        import jax
        import jax.numpy as jnp
        import numpy as np
        from jaxmarl import make
        from jaxmarl.environments.smax import map_name_to_scenario
    except Exception as exc:  # noqa: BLE001 - any import failure means "no peer"
        return None, f"{type(exc).__name__}: {exc}"

    def build(map_name: str, num_envs: int):
        """The env, its agents and batched-or-not ``reset``/``step``/``avail`` (1 game: unvmapped)."""
        env = make("SMAX", scenario=map_name_to_scenario(map_name))
        agents = env.agents
        if num_envs == 1:
            reset, step, avail = env.reset, env.step, env.get_avail_actions
            keys = lambda key: key
        else:
            reset, step, avail = jax.vmap(env.reset), jax.vmap(env.step), jax.vmap(env.get_avail_actions)
            keys = lambda key: jax.random.split(key, num_envs)
        width = max(env.num_ally_actions, env.num_enemy_actions)  # asymmetric maps: pad with illegal ids

        def masks(state):  # (..., agents, width)
            av = avail(state)
            pad = lambda m: jnp.pad(m, [(0, 0)] * (m.ndim - 1) + [(0, width - m.shape[-1])])
            return jnp.stack([pad(av[a]) for a in agents], axis=-2)

        return env, agents, reset, step, masks, keys

    def per_step(map_name: str, num_envs: int, steps: int, repeats: int = 3):
        """One jitted call per step from Python (step + masks), results fetched to the host."""
        env, agents, reset, step, masks, keys = build(map_name, num_envs)

        @jax.jit
        def one(key, state, actions):
            key, k = jax.random.split(key)
            obs, state, rew, done, _ = step(keys(k), state, {a: actions[..., i] for i, a in enumerate(agents)})
            return key, obs, state, rew, done, masks(state)

        key = jax.random.PRNGKey(0)
        _, state = jax.jit(reset)(keys(key))
        avail = np.asarray(jax.jit(masks)(state))
        rng = np.random.default_rng(0)
        box = [key, state, avail]

        def run(n):
            key, state, avail = box
            for _ in range(n):
                actions = (rng.random(avail.shape) * avail).argmax(-1).astype(np.int32)
                key, obs, state, rew, done, av = one(key, state, actions)
                _, avail, _, _ = jax.device_get((obs, av, rew, done))  # what a runner reads each step
            box[:] = key, state, avail

        run(2)  # compile + warm-up
        return best_rates(lambda: run(steps), num_envs * steps, repeats)

    def scan(map_name: str, num_envs: int, steps: int, repeats: int = 3):
        """The whole rollout compiled as one ``lax.scan``, actions drawn in-graph."""
        env, agents, reset, step, masks, keys = build(map_name, num_envs)

        def one_step(carry, _):
            key, state = carry
            key, k_act, k_step = jax.random.split(key, 3)
            actions = jax.random.categorical(k_act, jnp.log(masks(state).astype(jnp.float32)), axis=-1)
            _, state, _, _, _ = step(keys(k_step), state, {a: actions[..., i] for i, a in enumerate(agents)})
            return (key, state), None

        @jax.jit
        def rollout(key, state):
            return jax.lax.scan(one_step, (key, state), None, length=steps)[0]

        key = jax.random.PRNGKey(0)
        _, state = jax.jit(reset)(keys(key))
        jax.block_until_ready(rollout(key, state))  # compile + warm-up
        return best_rates(lambda: jax.block_until_ready(rollout(key, state)), num_envs * steps, repeats)

    return (per_step, scan), ""


# --------------------------------------------------------------------------------------------- modes
def batched(args) -> None:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    smax, why = smax_runners()
    if smax is None:
        print(f"JaxMARL/SMAX unavailable ({why}); printing our numbers only. `pip install -e .[bench]` to compare.")
    from selfplay.envs.smac import build

    from selfplay.utils.threads import smac_threads

    print(f"batched, both sides random; torch threads {torch.get_num_threads()}; SMAC threads "
          f"{smac_threads()} from {build.PARALLEL_MIN_GAMES} games; steps/s (best of 3)")
    print(f"{'map':<12} {'num_envs':>8} {'ours':>10} {'smax step':>10} {'smax scan':>10} {'ratio':>7}"
          f" {'scan ratio':>10} {'ours/cpu-s':>11} {'scan/cpu-s':>11} {'cpu ratio':>9}")
    last = (NAN, NAN)
    for map_name in args.maps:
        for num_envs in args.batches:
            steps = steps_for(num_envs, args.quick)
            ours_sps, ours_cpu = ours_battle(map_name, num_envs, steps, args.device)
            step_sps = smax[0](map_name, num_envs, steps)[0] if smax else NAN
            scan_sps, scan_cpu = smax[1](map_name, num_envs, steps) if smax else (NAN, NAN)
            print(f"{map_name:<12} {num_envs:>8} {ours_sps:>10.0f} {step_sps:>10.0f} {scan_sps:>10.0f}"
                  f" {ours_sps / step_sps:>7.2f} {ours_sps / scan_sps:>10.2f} {ours_cpu:>11.0f} {scan_cpu:>11.0f}"
                  f" {ours_cpu / scan_cpu:>9.2f}", flush=True)
            if map_name == "3s5z":
                last = (ours_sps, scan_sps)
    print(f"steps_per_s={last[0]:.0f} smax_steps_per_s={last[1]:.0f} ratio={last[0] / last[1]:.3f}")


def single(args, cpu: int | None) -> None:
    smax, why = smax_runners()
    if smax is None:
        print(f"JaxMARL/SMAX unavailable ({why}); printing our numbers only. `pip install -e .[bench]` to compare.")
    import torch

    where = f"pinned to CPU {cpu}, XLA_FLAGS={os.environ.get('XLA_FLAGS')!r}" if cpu is not None else "not pinned"
    print(f"one game per process, {where}; torch threads {torch.get_num_threads()}; steps/s (best of 3)")
    print(f"{'map':<12} {'SMACEnv':>9} {'bare':>9} {'EPyMARL':>9} {'battle':>9} {'smax step':>10} {'smax scan':>10}"
          f" {'ratio':>7} {'bare ratio':>10} {'scan ratio':>10}")
    n_ours, n_step, n_scan = (20, 50, 100) if args.quick else (2000, 1000, 2000)
    rows = {}
    for map_name in args.maps:
        env_sps = ours_smacenv(map_name, n_ours)[0]
        bare_sps = ours_smacenv(map_name, n_ours, features=False)[0]
        epy_sps = ours_epymarl(map_name, n_ours)[0]
        bat_sps = ours_battle(map_name, 1, n_ours)[0]
        step_sps = smax[0](map_name, 1, n_step)[0] if smax else NAN
        scan_sps = smax[1](map_name, 1, n_scan)[0] if smax else NAN
        rows[map_name] = (env_sps, step_sps)
        print(f"{map_name:<12} {env_sps:>9.0f} {bare_sps:>9.0f} {epy_sps:>9.0f} {bat_sps:>9.0f} {step_sps:>10.0f}"
              f" {scan_sps:>10.0f} {env_sps / step_sps:>7.2f} {bare_sps / step_sps:>10.2f} {env_sps / scan_sps:>10.2f}",
              flush=True)
    ours, theirs = rows.get("3m", (NAN, NAN))
    print(f"steps_per_s={ours:.0f} smax_steps_per_s={theirs:.0f} ratio={ours / theirs:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few steps per measurement")
    parser.add_argument("--single", action="store_true", help="one game per process, pinned to one CPU")
    parser.add_argument("--no-pin", action="store_true", help="--single without CPU pinning or XLA thread flags")
    parser.add_argument("--device", default="cpu", help="batched mode: torch device of our engine")
    parser.add_argument("--threads", type=int, default=1,
                        help="batched mode: torch CPU threads (default 1: on a shared CPU more threads spin)")
    parser.add_argument("--maps", nargs="+", default=list(MAPS), help=f"maps to measure (default: {' '.join(MAPS)})")
    parser.add_argument("--batches", nargs="+", type=int, default=list(BATCHES),
                        help="batched mode: num_envs values (default: 1 16 256 2048)")
    args = parser.parse_args()
    if any(n < 1 for n in args.batches):
        raise ValueError(f"--batches must be positive integers, got {args.batches}")
    if args.single:
        cpu = None if args.no_pin else pin_to_one_cpu()  # before torch and jax are imported
        single(args, cpu)
    else:
        batched(args)


if __name__ == "__main__":
    main()
