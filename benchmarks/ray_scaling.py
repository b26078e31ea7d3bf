"""The league on Ray against the single-process league loop, at the same work (docs/scaling.md).

Runs the same league (``--steps`` learner steps for each of 4 players on RirRPS with ``ppo-mlp``, or
with ``--agent alphastar`` on SMAC 3m, the quick network from scratch) three ways — the
single-process loop (``LeagueTrainer.train``), and ``run_league_on_ray`` with 1 and with 2 rollout
workers on a local Ray instance — and prints, as ratios to the single-process loop:

  * game-steps/s: all players' environment steps over the time from the first lease to the last
    commit (actor start-up is printed apart: it is paid once per run);
  * learner samples/s: transitions learned per second of update time, summed over learners.

Then the per-message costs the scaling document extrapolates from (docs/scaling.md): a no-op actor
call, a match request with its outcome report (worker's round trip, and the coordinator's own time
per report), a lease, a weight fetch from the object store, a commit; and the bytes they carry.
The machine's load is printed before and after: figures on a shared machine are only comparable
within one run.

    .venv/bin/python benchmarks/ray_scaling.py [--steps 20000 --num-envs 64 --horizon 1024 --json out.json]
    .venv/bin/python benchmarks/ray_scaling.py --agent alphastar --steps 2000 --num-envs 8 [--max-lag 1]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import tempfile
import time
from pathlib import Path


def load() -> str:
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg()) + f" on {os.cpu_count()} CPUs"


def single_process(config, out: Path) -> dict:
    from selfplay.training.league_loop import LeagueTrainer

    trainer = LeagueTrainer(config, out)
    update_s = [0.0]
    samples = [0]
    for p in trainer.players:  # time the learners' updates (this script's own wrapper)
        def timed(update=p.learner.update, learner=p.learner):
            if hasattr(learner, "buffer"):  # PPO: the rollout; AlphaStar: the decisions the update consumed
                samples[0] += learner.buffer.num_envs * learner.buffer.rollout_length
            before = getattr(learner, "samples", 0)
            began = time.perf_counter()
            try:
                return update()
            finally:
                update_s[0] += time.perf_counter() - began
                samples[0] += getattr(learner, "samples", 0) - before
        p.learner.update = timed
    began = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - began
    steps = sum(p.steps for p in trainer.players)
    return {"steps": steps, "seconds": seconds, "startup_s": 0.0, "steps_per_s": steps / seconds,
            "samples_per_update_s": samples[0] / update_s[0] if update_s[0] else float("nan"), "updates": sum(p.updates for p in trainer.players)}


def on_ray(config, out: Path, workers: int, max_lag: int = 1) -> dict:
    from selfplay.training.distributed.league import RayLeagueSettings, run_league_on_ray

    result = run_league_on_ray(config, out, RayLeagueSettings(workers=workers, max_lag=max_lag))
    pr, ws, ls = result.progress, list(result.workers.values()), list(result.learners.values())
    total = lambda key: sum(w[key] for w in ws)
    return {
        "steps": pr["steps"], "seconds": pr["play_seconds"], "startup_s": result.seconds - pr["play_seconds"],
        "steps_per_s": pr["steps"] / pr["play_seconds"], "updates": pr["updates"],
        "samples_per_update_s": sum(x["samples"] for x in ls) / max(1e-9, sum(x["update_s"] for x in ls)),
        "report_roundtrip_ms": 1e3 * total("report_s") / max(1, total("reports")),
        "report_service_ms": 1e3 * pr["report_s"] / max(1, pr["reports"]),
        "lease_roundtrip_ms": 1e3 * total("lease_s") / max(1, total("leases")),
        "lease_service_ms": 1e3 * pr["lease_s"] / max(1, pr["leases"]),
        "fetch_ms": 1e3 * total("fetch_s") / max(1, total("fetches")), "fetches": total("fetches"),
        "commit_ms": 1e3 * pr["commit_s"] / max(1, pr["finished"]),
        "handoff_ms": 1e3 * pr["handoff_to_finish_s"] / max(1, pr["finished"]),
        "finish_service_ms": 1e3 * pr["finish_s"] / max(1, pr["finished"]),
        "reports": pr["reports"], "leases": pr["leases"], "finished": pr["finished"],
        "max_lag_at_lease": pr["max_lag_at_lease"], "dropped_updates": pr["dropped_updates"],
    }


def raw_costs(config) -> dict:
    """A no-op actor call and object-store put/get of a learner state and of a frozen policy."""
    import ray

    from selfplay.training.registry import agent_kit, env_for_agent, make_env

    @ray.remote(num_cpus=0)
    class Echo:
        def ping(self, x=None):
            return x

    echo = Echo.remote()
    ray.get(echo.ping.remote())
    n = 300
    began = time.perf_counter()
    for _ in range(n):
        ray.get(echo.ping.remote())
    noop_ms = 1e3 * (time.perf_counter() - began) / n
    kit = agent_kit(config.agent, config.env)
    learner = kit.make_learner(make_env(env_for_agent(config.env, config.agent), config.num_envs, seed=0), 1,
                               **config.agent_settings)
    state, snapshot = learner.state_dict(), learner.snapshot()

    def roundtrip(obj) -> float:
        times = []
        for _ in range(20):
            began = time.perf_counter()
            ray.get(echo.ping.remote(ray.put(obj)))
            times.append(time.perf_counter() - began)
        return 1e3 * statistics.median(times)

    outcomes = [("main_0", 1, 1.0, None)] * config.num_envs
    costs = {"noop_call_ms": noop_ms, "state_bytes": len(pickle.dumps(state)), "snapshot_bytes": len(pickle.dumps(snapshot)),
             "state_put_call_ms": roundtrip(state), "snapshot_put_call_ms": roundtrip(snapshot),
             "report_bytes_per_game": len(pickle.dumps(outcomes)) / len(outcomes)}
    ray.kill(echo)
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="learner steps per player")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--horizon", type=int, default=1024, help="ppo-mlp's rollout length")
    parser.add_argument("--agent", choices=("ppo-mlp", "alphastar"), default="ppo-mlp",
                        help="ppo-mlp on RirRPS, or the AlphaStar agent on SMAC 3m (quick network, no SL checkpoint)")
    parser.add_argument("--max-lag", type=int, default=1, help="alphastar on Ray: unfinished updates a lease may start with")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()

    import ray
    import torch

    from selfplay.training.league_loop import LeagueTrainConfig

    torch.set_num_threads(1)
    game = ({"env": "smac:3m", "agent": "alphastar", "agent_settings": {}} if args.agent == "alphastar"
            else {"agent_settings": {"horizon": args.horizon}})
    config = LeagueTrainConfig(steps=args.steps, min_steps=args.steps // 8, max_steps=args.steps // 4,
                               num_envs=args.num_envs, tensorboard=False, **game)
    print(f"league {config.league} on {config.env} with {config.agent}: {args.steps} steps per player, "
          f"{args.num_envs} games" + (f", horizon {args.horizon}" if args.agent != "alphastar" else
                                      f", max lag {args.max_lag}") + f"; {load()}")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        rows["single process"] = single_process(config, Path(tmp) / "local")
        print(f"  single process done; {load()}", flush=True)
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
        for workers in (1, 2):
            rows[f"ray, {workers} worker{'s' * (workers > 1)}"] = on_ray(config, Path(tmp) / f"ray{workers}", workers,
                                                                         args.max_lag)
            print(f"  {workers} worker(s) done; {load()}", flush=True)
        costs = raw_costs(config)
        ray.shutdown()
    base = rows["single process"]
    print(f"\n{'':18} {'steps':>7} {'steps/s':>9} {'ratio':>6} {'samples/update-s':>17} {'ratio':>6} {'start-up s':>10}")
    for name, r in rows.items():
        print(f"{name:18} {r['steps']:7d} {r['steps_per_s']:9.0f} {r['steps_per_s'] / base['steps_per_s']:6.2f} "
              f"{r['samples_per_update_s']:17.0f} {r['samples_per_update_s'] / base['samples_per_update_s']:6.2f} "
              f"{r['startup_s']:10.1f}")
    print("\nper-message costs (ms; round trip at the worker / the coordinator's own time):")
    for name, r in rows.items():
        if "report_roundtrip_ms" in r:
            print(f"  {name}: match request + outcome report {r['report_roundtrip_ms']:.2f} / {r['report_service_ms']:.2f} "
                  f"({r['reports']}), lease {r['lease_roundtrip_ms']:.2f} / {r['lease_service_ms']:.2f} ({r['leases']}), "
                  f"weight fetch {r['fetch_ms']:.2f} ({r['fetches']}), finish {r['finish_service_ms']:.1f} "
                  f"of which commit {r['commit_ms']:.1f} ({r['finished']}); rollout handed to the learner -> "
                  f"its finish starts at the coordinator {r['handoff_ms']:.0f}"
                  + (f"; most unfinished updates at a lease {r['max_lag_at_lease']}, dropped updates "
                     f"{r['dropped_updates']}" if args.agent == "alphastar" else ""))
    print(f"  no-op actor call {costs['noop_call_ms']:.2f}; put + call with a learner state "
          f"({costs['state_bytes'] / 1e3:.0f} kB) {costs['state_put_call_ms']:.2f}, with a frozen policy "
          f"({costs['snapshot_bytes'] / 1e3:.0f} kB) {costs['snapshot_put_call_ms']:.2f}; "
          f"an outcome report carries {costs['report_bytes_per_game']:.0f} B per game")
    print(f"\n{load()}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "costs": costs, "load": load(),
                                               "args": vars(args)}, indent=1))


if __name__ == "__main__":
    main()
