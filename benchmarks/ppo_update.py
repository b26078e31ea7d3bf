"""One paper-scale PPO update of the one-unit learner, autograd against the written-out gradient.

A learner (MLP or LSTM body, the paper's Table I: horizon 2048, minibatch 64, 10 epochs) fills one
rollout of 64 RirRPS games against a uniformly random opponent; the same saved state is then updated
``--rounds`` times by each path, alternating, on one torch thread. Printed: CPU seconds of each update
(``time.process_time``, which a loaded machine disturbs less than wall-clock) and the load average.
Both paths give the same statistics to float rounding (printed too).

    python benchmarks/ppo_update.py                  # both bodies
    python benchmarks/ppo_update.py --bodies lstm --rounds 5
"""

from __future__ import annotations

import argparse
import os
import time

import torch
from selfplay.agents.ppo import PPOConfig, PPOLearner
from selfplay.envs.rps import RirRPS


def filled_state(body: str, seed: int = 0) -> dict:
    """A learner's state with one full rollout of 64 games (ready to update)."""
    learner = PPOLearner(30, 3, PPOConfig(body=body), seed=seed)
    env = RirRPS(64, seed=seed + 1)
    opponent = torch.Generator().manual_seed(seed + 2)
    obs, state, start = env.reset(), learner.initial_state(64), torch.ones(64, dtype=torch.bool)
    while not learner.ready():
        action, state, _ = learner.act(obs[1], state, env.action_masks()[1], start)
        obs, rewards, done, _ = env.step([torch.randint(0, 3, (64,), generator=opponent), action])
        learner.record(rewards[1], done)
        start = done
    return learner.state_dict()


def time_update(body: str, state: dict, written_out: bool) -> tuple[float, dict]:
    learner = PPOLearner(30, 3, PPOConfig(body=body), seed=0)
    learner.load_state_dict(state)
    if not written_out:
        learner._written_out_gradient = lambda: False
    started = time.process_time()
    metrics = learner.update()
    return time.process_time() - started, metrics


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", default="mlp,lstm")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    results = {}
    for body in args.bodies.split(","):
        state = filled_state(body)
        seconds = {"autograd": [], "written-out": []}
        for _ in range(args.rounds):
            for path in seconds:
                cpu, metrics = time_update(body, state, path == "written-out")
                seconds[path].append(cpu)
                print(f"{body:5} {path:12} {cpu:6.3f} CPU-s  policy loss {metrics['policy_loss']:+.6f}  "
                      f"approx KL {metrics['approx_kl']:.3e}", flush=True)
        best = {path: min(values) for path, values in seconds.items()}
        print(f"{body}: best autograd {best['autograd']:.3f} CPU-s, written-out {best['written-out']:.3f} CPU-s "
              f"({best['autograd'] / best['written-out']:.2f}×), load average {os.getloadavg()[0]:.1f}", flush=True)
        results[body] = best
    return results


if __name__ == "__main__":
    main()
