"""MAPPO's training throughput on the SMAC simulator: game-steps per second *including learning*.

    .venv/bin/python benchmarks/mappo_speed.py                       # 3m, the settings below, 3 updates each
    .venv/bin/python benchmarks/mappo_speed.py --maps 8m --updates 5
    .venv/bin/python benchmarks/mappo_speed.py --maps 3m 5m_vs_6m smacv2:protoss_5_vs_5 --settings wide-AS \
        --threads 2 --compare runs/jaxmarl.json                      # beside JaxMARL (benchmarks/jaxmarl_mappo.py)

One game-step is one step of one game (SMAC's ``total_num_steps``). Each setting trains the MAPPO learner
of ``selfplay train --opponent builtin-ai`` against the built-in AI for ``--updates`` updates after one
warm-up update, on one torch thread, and reports wall and CPU seconds split into acting (inputs and
network), the environment and the update, with the machine's load average (the figures depend on it):

    paper:     MAPPOConfig() — 8 games × 400 steps, 15 epochs, agent-specific state (Yu et al. 2022)
    paper-EP:  the same with the environment's global state for the critic
    wide-AS:   64 games × 50 steps (the same 3200 game-steps per update), agent-specific state
    wide:      the same with the environment's global state (EP)
    wide-5ep:  wide with 5 epochs (MAPPO's setting on the harder maps)
    jaxmarl:   JaxMARL's own MAPPO settings on SMAX (mappo_homogenous_rnn_smax.yaml): 128 games × 128 steps,
               4 epochs × 4 minibatches, 128 wide, the whole rollout one recurrent sequence, global state

``--epochs`` overrides every setting's epochs (the paper's per-map scripts: 10 on 5m_vs_6m). A map is a
SMAC map name or any SMAC battle name of the registry (``smacv2:protoss_5_vs_5``). ``--compare FILE``
reads ``benchmarks/jaxmarl_mappo.py``'s JSON lines and prints ours / theirs on the same scenario size
(SMAX ``3m``, ``5m_vs_6m``; ``smacv2_5_units`` for the SMACv2 5_vs_5 scenarios), wall and per CPU-second,
and every setting's minutes to 2M game-steps at the measured rate.

``--update-threads`` is MAPPOConfig's ``update_threads`` (default 2: the update fits the actor and the
critic at once on two threads, the trainer's default, and the critic goes on fitting while the next
rollout plays, as in the trainer: ``start_update``/``finish_update``; 1: one after the other — the same
numbers);
``--update-precision`` measures each MAPPOConfig ``update_precision`` given (``float32``, ``bfloat16``: the
update's products with bf16 operands) one after the other.
``--threads`` is torch's intra-op thread count (1, the trainer's). The environment is one process
either way. The phases are also given in CPU seconds of the process (acting, environment, update: all
threads), which a loaded machine disturbs less than wall-clock.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
from selfplay.agents.mappo import MAPPOLearner, mappo_config
from selfplay.agents.mappo.config import UPDATE_PRECISIONS

from selfplay.training.registry import make_env
from selfplay.training.vs_builtin import side_inputs
from selfplay.utils.threads import keep_freed_memory

SETTINGS = {
    "paper": {},
    "paper-EP": {"critic_input": "EP"},
    "wide-AS": {"num_envs": 64, "rollout_length": 50},
    "wide": {"num_envs": 64, "rollout_length": 50, "critic_input": "EP"},
    "wide-5ep": {"num_envs": 64, "rollout_length": 50, "critic_input": "EP", "epochs": 5},
    # JaxMARL's mappo_homogenous_rnn_smax.yaml: 128 games x 128 steps, 4 epochs x 4 minibatches, 128 wide,
    # the whole rollout one BPTT sequence, the critic on the global state
    "jaxmarl": {"num_envs": 128, "rollout_length": 128, "chunk_length": 128, "epochs": 4, "num_minibatches": 4,
                "hidden_size": 128, "critic_input": "EP"},
}


def env_name(map_name: str) -> str:
    return map_name if ":" in map_name else f"smac:{map_name}"


def smax_name(map_name: str) -> str:
    """The SMAX scenario of the same size: the SMAC map's own name; ``smacv2_5_units`` for SMACv2's 5_vs_5."""
    name = env_name(map_name).split(":", 1)[1]
    return "smacv2_5_units" if name.endswith("5_vs_5") else name


def measure(map_name: str, settings: dict, updates: int, seed: int = 0) -> dict:
    """Seconds (wall and CPU) of ``updates`` updates after one warm-up update, split by phase (wall:
    ``act``, ``env``, ``update``; CPU: ``act_cpu``, ``env_cpu``, ``update_cpu``)."""
    config = mappo_config(**settings)
    battle = make_env(env_name(map_name), config.num_envs, seed=seed, scripted_enemy=True)
    learner = MAPPOLearner.for_battle(battle, config, seed=seed)
    obs = battle.reset()
    start = torch.ones(config.num_envs, dtype=torch.bool)
    split = {k: 0.0 for k in ("act", "env", "update", "act_cpu", "env_cpu", "update_cpu", "actor_pass", "critic_pass")}
    clock, cpu_clock = time.perf_counter, time.process_time
    for u in range(updates + 1):
        if u == 1:
            split = dict.fromkeys(split, 0.0)
            wall0, cpu0 = clock(), cpu_clock()
        for _ in range(config.rollout_length):
            a, a_cpu = clock(), cpu_clock()
            o, s, mask = side_inputs(battle, config, obs)
            action = learner.act(o, s, mask, start)
            b, b_cpu = clock(), cpu_clock()
            obs, rewards, done, _ = battle.step([action])
            learner.record(rewards[0], done)
            start = done
            split["act"] += b - a
            split["act_cpu"] += b_cpu - a_cpu
            split["env"] += clock() - b
            split["env_cpu"] += cpu_clock() - b_cpu
        a, a_cpu = clock(), cpu_clock()
        _, s, mask = side_inputs(battle, config, obs)
        if u > 0:  # as the trainer does: the last update's critic has fitted while this rollout played
            learner.finish_update()
            if u > 1:  # not the warm-up update's critic
                split["critic_pass"] += learner.pass_seconds["critic"]
        learner.start_update(s, mask, start)
        split["update"] += clock() - a
        split["update_cpu"] += cpu_clock() - a_cpu
        split["actor_pass"] += learner.pass_seconds["actor"]
    a, a_cpu = clock(), cpu_clock()
    learner.finish_update()
    split["update"] += clock() - a
    split["update_cpu"] += cpu_clock() - a_cpu
    split["critic_pass"] += learner.pass_seconds["critic"]
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    steps = updates * config.batch_steps
    # two free cores at this per-CPU-second speed (update_threads=2): the main thread plays the rollout and
    # fits the actor while the critic's pass runs on the other core, assuming the two overlap fully
    serial = split["act_cpu"] + split["env_cpu"] + split["update_cpu"] - split["actor_pass"] - split["critic_pass"]
    two_cores = max(serial + split["actor_pass"], split["critic_pass"])
    return {"steps": steps, "wall": wall, "cpu": cpu, "two_core_seconds": two_cores, **split}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--maps", "--map", nargs="+", default=["3m"], help="SMAC maps or SMAC battle names")
    parser.add_argument("--updates", type=int, default=3, help="timed updates per setting (after one warm-up)")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--epochs", type=int, default=None, help="override every setting's epochs")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--update-threads", type=int, default=None, choices=(1, 2),
                        help="MAPPOConfig.update_threads (default: the config's, 2)")
    parser.add_argument("--update-precision", nargs="+", default=["float32"], choices=UPDATE_PRECISIONS,
                        help="MAPPOConfig.update_precision: each one given is measured (default: float32)")
    parser.add_argument("--compare", default=None, help="JSON lines of benchmarks/jaxmarl_mappo.py")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    keep_freed_memory()  # as the selfplay command does (utils.threads)
    theirs = []
    if args.compare:
        with open(args.compare) as f:
            theirs = [json.loads(line) for line in f if line.strip()]
    threads = {"update_threads": args.update_threads} if args.update_threads else {}
    print(f"{args.updates} updates per setting, {args.threads} torch thread(s), update_threads "
          f"{mappo_config(**threads).update_threads}; "
          f"load average before {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for map_name in args.maps:
        for name, precision in ((n, p) for n in args.settings for p in args.update_precision):
            settings = {**SETTINGS[name], **({"epochs": args.epochs} if args.epochs else {}), **threads,
                        "update_precision": precision}
            r = measure(map_name, settings, args.updates)
            rate, per_cpu = r["steps"] / r["wall"], r["steps"] / r["cpu"]
            print(f"{map_name:12s} {name:9s} {precision:8s} {r['steps']:7d} game-steps  {rate:7.0f} /s wall  {per_cpu:7.0f} /CPU-s  "
                  f"2M in {2e6 / rate / 60:5.1f} min  (wall: act {r['act']:.1f} s, env {r['env']:.1f} s, "
                  f"update {r['update']:.1f} s; CPU: act {r['act_cpu']:.1f} s, env {r['env_cpu']:.1f} s, update "
                  f"{r['update_cpu']:.1f} s, of which actor pass {r['actor_pass']:.1f} s, critic pass "
                  f"{r['critic_pass']:.1f} s; load {os.getloadavg()[0]:.2f})", flush=True)
            if settings.get("update_threads", 2) == 2:
                est = r["steps"] / r["two_core_seconds"]
                print(f"    from CPU seconds, two free cores at this speed: {est:7.0f} /s, 2M in "
                      f"{2e6 / est / 60:5.1f} min", flush=True)
            for t in (t for t in theirs if t["map"] == smax_name(map_name)):
                t.setdefault("steps_per_cpu_s", float("nan"))
                print(f"    vs JaxMARL {t['algo']} on SMAX {t['map']} ({t['steps_per_s']:.0f} /s wall, "
                      f"{t['steps_per_cpu_s']:.0f} /CPU-s at load {t['load']:.1f}): ours / theirs "
                      f"{rate / t['steps_per_s']:.2f} wall, {per_cpu / t['steps_per_cpu_s']:.2f} per CPU-s", flush=True)


if __name__ == "__main__":
    main()
