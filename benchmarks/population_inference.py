"""Population inference: one stacked forward pass (``PolicyStack``) vs a loop over policies.

The workload is the winrate matrix's: ``--policies`` frozen PPO policies, every row of a batch acting
with its own policy (``--rows`` rows, e.g. 100 policies × 100 opponents × 25 matches ≈ 250 000 rows:
both seats of every game at once). The baseline is the straightforward alternative: for each policy,
select its rows, run its network, scatter the results back. Prints the time per ``act`` of both, their
ratio, and the time of 10 steps: with the default 250 000 rows (both seats of the 123 750 games of a
100-checkpoint matrix, 4950 pairs × 25 matches) that is the inference time of one whole winrate matrix.
Rows either shuffled (any policy anywhere) or laid out policy-major (no regrouping copies needed).

    .venv/bin/python benchmarks/population_inference.py [--policies 100] [--rows 250000] [--body mlp|lstm|both]
"""

from __future__ import annotations

import argparse
import time

import torch
from selfplay.agents.ppo import PPOConfig, PPOLearner, stack_policies


def per_policy_loop(policies, obs, state, index):
    """The baseline: one forward pass per policy on its own rows."""
    action = torch.empty(obs.shape[0], dtype=torch.long)
    new_state = None if state is None else (torch.empty_like(state[0]), torch.empty_like(state[1]))
    for p, policy in enumerate(policies):
        rows = (index == p).nonzero().squeeze(1)
        if rows.numel() == 0:
            continue
        sub_state = None if state is None else (state[0][rows], state[1][rows])
        a, s, _ = policy.act(obs[rows], sub_state)
        action[rows] = a
        if s is not None:
            new_state[0][rows], new_state[1][rows] = s
    return action, new_state


def best_time(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run(body, n_policies, rows, repeats, layout="shuffled"):
    policies = [PPOLearner(30, 3, PPOConfig(body=body), seed=s).snapshot() for s in range(n_policies)]
    stack = stack_policies(policies)
    gen = torch.Generator().manual_seed(0)
    obs = torch.rand(rows, 30, generator=gen)
    if layout == "shuffled":
        index = torch.randint(0, n_policies, (rows,), generator=gen)
    else:  # policy-major: rows // n_policies rows of policy 0, then of policy 1, ...
        rows = rows // n_policies * n_policies
        index = torch.arange(n_policies).repeat_interleave(rows // n_policies)
        obs = obs[:rows]
    state = None if body == "mlp" else (torch.zeros(rows, 64), torch.zeros(rows, 64))
    stacked = best_time(lambda: stack.act(obs, state, index), repeats)
    looped = best_time(lambda: per_policy_loop(policies, obs, state, index), repeats)
    print(f"{body:5s} {layout:12s} {n_policies:4d} policies {rows:7d} rows | stacked {stacked * 1e3:8.1f} ms | "
          f"per-policy loop {looped * 1e3:8.1f} ms | loop/stacked {looped / stacked:5.2f}x | "
          f"10 steps (one RirRPS episode of every row's game): {10 * stacked:.2f} s stacked")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", type=int, default=100)
    parser.add_argument("--rows", type=int, default=250_000)
    parser.add_argument("--body", choices=["mlp", "lstm", "both"], default="both")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1 suits a shared 2-core machine)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for body in (["mlp", "lstm"] if args.body == "both" else [args.body]):
        for layout in ("shuffled", "policy-major"):
            run(body, args.policies, args.rows, args.repeats, layout)
        for rows in (16384, 1024):  # one chunk of selfplay.training.matches's games; a training-time batch
            run(body, args.policies, rows, args.repeats)


if __name__ == "__main__":
    main()
