"""JaxMARL's own MAPPO and IPPO baselines on SMAX: game-steps per second *including learning*, on this CPU.

    PY=.venv/bin/python            # with pip install -e ".[bench]": jaxmarl, jax, distrax, hydra-core, omegaconf
    $PY benchmarks/jaxmarl_mappo.py --jaxmarl /path/to/JaxMARL --json runs/jaxmarl.json
    .venv/bin/python benchmarks/mappo_speed.py --maps 3m 5m_vs_6m --compare runs/jaxmarl.json   # ratios

The side-by-side half of ``benchmarks/mappo_speed.py``. Nothing of JaxMARL is copied here: the script
loads the baseline files of a JaxMARL checkout (``--jaxmarl``: ``baselines/MAPPO/mappo_rnn_smax.py``,
``baselines/IPPO/ippo_rnn_smax.py``) and their own YAML configs (``mappo_homogenous_rnn_smax.yaml``,
``ippo_rnn_smax.yaml``), changing only ``MAP_NAME`` and ``TOTAL_TIMESTEPS`` (``--updates`` + 1 updates of
their ``NUM_ENVS · NUM_STEPS`` = 128 · 128 game-steps), and ``--num-envs``/``--num-steps`` where asked.
Their ``wandb`` is replaced by a stand-in module whose ``log`` (their per-update ``io_callback``)
records the wall and CPU time: the steady rate is measured between the first and the last update's
callback, so neither XLA's compile (``lower().compile()``, reported apart) nor the first update counts.

One game-step is one step of one game, JaxMARL's ``TOTAL_TIMESTEPS`` unit and SMAC's
``total_num_steps``: the same unit as ``mappo_speed.py``. XLA on the CPU uses every core it sees
(pin both runs to the same cores, e.g. ``taskset -c 0,1``, to compare on two cores).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import types
from pathlib import Path

BASELINES = {
    "mappo": ("baselines/MAPPO/mappo_rnn_smax.py", "baselines/MAPPO/config/mappo_homogenous_rnn_smax.yaml"),
    "ippo": ("baselines/IPPO/ippo_rnn_smax.py", "baselines/IPPO/config/ippo_rnn_smax.yaml"),
}
MAPS = ("3m", "5m_vs_6m", "smacv2_5_units")


class _Clock:
    """The stand-in ``wandb``: ``log`` keeps the wall and process-CPU time of each call (one per update),
    ``init`` does nothing."""

    def __init__(self):
        self.times: list[float] = []
        self.cpu: list[float] = []
        self.module = types.ModuleType("wandb")
        self.module.log = lambda *a, **k: (self.times.append(time.perf_counter()), self.cpu.append(time.process_time()))
        self.module.init = self.module.finish = lambda *a, **k: None


def load_baseline(checkout: Path, algo: str, clock: _Clock):
    """Their baseline module (``make_train``) and config dict, with ``wandb`` replaced by ``clock``."""
    script, config_file = (checkout / p for p in BASELINES[algo])
    for path, name in ((script, "--jaxmarl"), (config_file, "--jaxmarl")):
        if not path.is_file():
            raise SystemExit(f"{name} must be a JaxMARL checkout with {path.relative_to(checkout)}; not found in {checkout}")
    sys.modules["wandb"] = clock.module
    spec = importlib.util.spec_from_file_location(f"jaxmarl_{algo}_smax", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from omegaconf import OmegaConf

    config = OmegaConf.to_container(OmegaConf.load(config_file), resolve=False)
    return module, config


def measure(checkout: Path, algo: str, map_name: str, updates: int, num_envs: int | None, num_steps: int | None,
            seed: int = 0) -> dict:
    import jax

    clock = _Clock()
    module, config = load_baseline(checkout, algo, clock)
    if num_envs:
        config["NUM_ENVS"] = num_envs
    if num_steps:
        config["NUM_STEPS"] = num_steps
    per_update = config["NUM_ENVS"] * config["NUM_STEPS"]
    config.update(MAP_NAME=map_name, TOTAL_TIMESTEPS=(updates + 1) * per_update, SEED=seed)
    rng = jax.random.PRNGKey(seed)
    t0 = time.perf_counter()
    compiled = jax.jit(module.make_train(config)).lower(rng).compile()
    compile_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    jax.block_until_ready(compiled(rng))
    run_s = time.perf_counter() - t1
    if len(clock.times) != updates + 1:
        raise RuntimeError(f"expected {updates + 1} per-update callbacks from {algo}, got {len(clock.times)}")
    steady = clock.times[-1] - clock.times[0]
    steady_cpu = clock.cpu[-1] - clock.cpu[0]
    return {"algo": algo, "map": map_name, "num_envs": config["NUM_ENVS"], "num_steps": config["NUM_STEPS"],
            "epochs": config["UPDATE_EPOCHS"], "minibatches": config["NUM_MINIBATCHES"],
            "hidden": config["GRU_HIDDEN_DIM"], "compile_s": compile_s, "first_update_s": clock.times[0] - t1,
            "run_s": run_s, "steps": updates * per_update, "steady_s": steady,
            "steps_per_s": updates * per_update / steady, "steady_cpu_s": steady_cpu,
            "steps_per_cpu_s": updates * per_update / steady_cpu, "load": os.getloadavg()[0],
            "cpus": len(os.sched_getaffinity(0))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jaxmarl", type=Path, required=True, help="path to a JaxMARL checkout (its baselines/)")
    parser.add_argument("--algos", nargs="+", default=list(BASELINES), choices=list(BASELINES))
    parser.add_argument("--maps", nargs="+", default=list(MAPS), help="SMAX scenario names (map_name_to_scenario)")
    parser.add_argument("--updates", type=int, default=2, help="timed updates (after the first, untimed one)")
    parser.add_argument("--num-envs", type=int, default=None, help="override their NUM_ENVS (128)")
    parser.add_argument("--num-steps", type=int, default=None, help="override their NUM_STEPS (128)")
    parser.add_argument("--json", type=Path, default=None, help="append each result as a JSON line to this file")
    args = parser.parse_args()
    if args.updates < 1:
        raise SystemExit(f"--updates must be >= 1, got {args.updates}")
    print(f"load average before {os.getloadavg()[0]:.2f}; {len(os.sched_getaffinity(0))} CPUs usable", flush=True)
    for algo in args.algos:
        for map_name in args.maps:
            r = measure(args.jaxmarl, algo, map_name, args.updates, args.num_envs, args.num_steps)
            print(f"JaxMARL {algo:5s} {map_name:15s} {r['num_envs']}x{r['num_steps']} {r['epochs']} epochs x "
                  f"{r['minibatches']} minibatches: {r['steps_per_s']:7.0f} game-steps/s incl. learning, "
                  f"{r['steps_per_cpu_s']:7.0f} /CPU-s ({r['steps']} steps in {r['steady_s']:.1f} s; compile {r['compile_s']:.1f} s, first update "
                  f"{r['first_update_s']:.1f} s; load {r['load']:.2f})", flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
