"""Game-steps per second of our batched SMAC engine and JaxMARL's SMAX, side by side.

Both engines play 3m, 3s5z and 27m_vs_30m with uniformly random *valid* actions for both sides
(two-player mode: no scripted AI), at ``num_envs`` in {1, 256, 2048}; a game-step is one step
of one game (so a batch of 256 stepped once counts 256).  SMAX is the throughput anchor only:
it is a different game (spec-smac.md §9).  JaxMARL is a benchmark-only dependency
(``pip install jaxmarl``); when it cannot be imported the script says so and prints our numbers.

Each number is the best of 3 timings (for both engines), to tame the noise of a shared CPU.
The last line is ``steps_per_s=<ours> smax_steps_per_s=<smax> ratio=<ours/smax>`` for 3s5z at the
largest batch.

    python benchmarks/smac_throughput.py [--quick] [--device cpu] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import torch

from selfplay.envs.smac import SMACBattle

MAPS = ("3m", "3s5z", "27m_vs_30m")
BATCHES = (1, 256, 2048)


def random_valid(masks: list[torch.Tensor], gen: torch.Generator) -> list[torch.Tensor]:
    """A uniformly random legal action per agent: argmax of uniform noise over the legal ones."""
    return [(torch.rand(m.shape, generator=gen, device=m.device) * m).argmax(-1) for m in masks]


def best_rates(fn, work: int, repeats: int, sync=lambda: None) -> tuple[float, float]:
    """Best of ``repeats`` runs of ``fn``: (work per wall-clock second, work per CPU-second of this
    process).  Best-of tames a shared CPU's noise; the CPU-time rate is what the work costs when
    other jobs share the cores (meaningful for single-threaded runs)."""
    wall = cpu = 0.0
    for _ in range(repeats):
        sync()
        t, c = time.perf_counter(), time.process_time()
        fn()
        sync()
        wall = max(wall, work / (time.perf_counter() - t))
        cpu = max(cpu, work / max(time.process_time() - c, 1e-9))
    return wall, cpu


def ours(map_name: str, num_envs: int, steps: int, device: str, repeats: int = 3) -> tuple[float, float]:
    """(steps/s, steps per CPU-second) of our engine, best of ``repeats`` runs of ``steps`` steps."""
    b = SMACBattle(map_name, num_envs, two_player=True, device=device, seed=0)
    gen = torch.Generator(device=device).manual_seed(0)
    b.reset()
    for _ in range(2):  # warm-up
        b.step(random_valid(b.action_masks(), gen))

    def run():
        for _ in range(steps):
            b.step(random_valid(b.action_masks(), gen))

    sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)
    return best_rates(run, num_envs * steps, repeats, sync)


def smax_runner():
    """A function (map_name, num_envs, steps) -> steps/s for SMAX, or None with the reason."""
    try:
        import jax
        import jax.numpy as jnp
        from jaxmarl import make
        from jaxmarl.environments.smax import map_name_to_scenario
    except Exception as exc:  # noqa: BLE001 - any import failure means "no peer"
        return None, f"{type(exc).__name__}: {exc}"

    def run(map_name: str, num_envs: int, steps: int, repeats: int = 3) -> tuple[float, float]:
        env = make("SMAX", scenario=map_name_to_scenario(map_name))
        agents = env.agents

        def one_step(carry, _):
            key, state = carry
            key, k_act, k_step = jax.random.split(key, 3)
            avail = jax.vmap(env.get_avail_actions)(state)
            act_keys = jax.random.split(k_act, len(agents))
            actions = {a: jax.random.categorical(k, jnp.log(avail[a].astype(jnp.float32)), axis=-1)
                       for a, k in zip(agents, act_keys)}
            _, state, _, _, _ = jax.vmap(env.step)(jax.random.split(k_step, num_envs), state, actions)
            return (key, state), None

        @jax.jit
        def rollout(key, state):
            return jax.lax.scan(one_step, (key, state), None, length=steps)[0]

        key = jax.random.PRNGKey(0)
        _, state = jax.vmap(env.reset)(jax.random.split(key, num_envs))
        jax.block_until_ready(rollout(key, state))  # compile + warm-up
        return best_rates(lambda: jax.block_until_ready(rollout(key, state)), num_envs * steps, repeats)

    return run, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few steps per measurement")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (default 1: on a shared CPU more threads spin and slow down)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    smax, why = smax_runner()
    if smax is None:
        print(f"JaxMARL/SMAX unavailable ({why}); printing our numbers only. `pip install jaxmarl` to compare.")
    print(f"{'map':<12} {'num_envs':>8} {'ours steps/s':>14} {'smax steps/s':>14} {'ratio':>7}"
          f" {'ours /cpu-s':>12} {'smax /cpu-s':>12} {'cpu ratio':>9}")
    last = (0.0, float("nan"))
    nan = (float("nan"), float("nan"))
    for map_name in MAPS:
        for num_envs in BATCHES:
            steps = (4 if num_envs > 1 else 10) if args.quick else (10 if num_envs > 1 else 50)
            (ours_sps, ours_cpu) = ours(map_name, num_envs, steps, args.device)
            (smax_sps, smax_cpu) = smax(map_name, num_envs, steps) if smax else nan
            print(f"{map_name:<12} {num_envs:>8} {ours_sps:>14.0f} {smax_sps:>14.0f} {ours_sps / smax_sps:>7.2f}"
                  f" {ours_cpu:>12.0f} {smax_cpu:>12.0f} {ours_cpu / smax_cpu:>9.2f}", flush=True)
            if map_name == "3s5z":
                last = (ours_sps, smax_sps)
    print(f"steps_per_s={last[0]:.0f} smax_steps_per_s={last[1]:.0f} ratio={last[0] / last[1]:.3f}")


if __name__ == "__main__":
    main()
