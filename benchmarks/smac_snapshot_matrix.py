"""Snapshots of a SMAC self-play run against each other: does the learner improve on its own objective?

    .venv/bin/python benchmarks/smac_snapshot_matrix.py --env smac:8m --files A.pt,B.pt,C.pt --names v5,v13,v16 \
        --games 32 [--out matrix.csv]

For every ordered pair (row, column) of MAPPO policy files, ``games`` games with the row in seat 0 and
the column in seat 1, both **sampling** their actions (as the learner and its opponents play in
training): the row's mean undiscounted return (SMAC's reward as the learner is trained on it) and its
wins, losses and draws. If a later snapshot's row is below an earlier one's against every column,
the updates between them lowered the learner's return against those opponents: the later behaviour
is not a best response to its opponents but a failure to improve (docs/results/smac_8m.md).
"""

from __future__ import annotations

import argparse
import csv
import sys


def play(env_name: str, a, b, games: int, seed: int) -> dict:
    """Mean return of ``a`` (seat 0) and the outcome counts of the first game of each of ``games``
    batched games against ``b`` (seat 1), both sampling."""
    import torch

    from selfplay.training.registry import make_env

    env = make_env(env_name, games, seed=seed)
    obs = env.reset()
    sa, sb = a.initial_state(games), b.initial_state(games)
    start = torch.ones(games, dtype=torch.bool)
    ended = torch.zeros(games, dtype=torch.bool)
    ret = torch.zeros(games)
    out = {"win": 0, "loss": 0, "draw": 0}
    with torch.no_grad():
        while not bool(ended.all()):
            m = env.action_masks()
            x, sa, _ = a.act(obs[0], sa, m[0], start, deterministic=False)
            y, sb, _ = b.act(obs[1], sb, m[1], start, deterministic=False)
            obs, r, done, info = env.step([x, y])
            ret += r[0] * (~ended).float()
            for g in torch.nonzero(done & ~ended).flatten().tolist():
                w = int(info["winner"][g])
                out["win" if w == 0 else "loss" if w == 1 else "draw"] += 1
            ended |= done
            start = done.clone()
    return {"return": float(ret.mean()), **out}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", required=True, help="smac:MAP")
    p.add_argument("--files", required=True, help="comma-separated MAPPO policy files")
    p.add_argument("--names", default=None, help="comma-separated names, one per file (default: the file names)")
    p.add_argument("--games", type=int, default=32)
    p.add_argument("--seed", type=int, default=100)
    p.add_argument("--out", default=None, help="CSV to write (default: stdout)")
    args = p.parse_args(argv)
    from selfplay.agents.mappo.selfplay import load_policy

    files = args.files.split(",")
    names = args.names.split(",") if args.names else files
    if len(names) != len(files):
        raise ValueError(f"names must name every file: {len(files)} files, {len(names)} names")
    if args.games < 1:
        raise ValueError(f"games must be a positive integer, got {args.games}")
    policies = [load_policy(f) for f in files]
    out = open(args.out, "w", newline="") if args.out else sys.stdout
    writer = csv.writer(out)
    writer.writerow(["row", "column", "row_return", "row_wins", "row_losses", "draws"])
    for i, a in enumerate(policies):
        for j, b in enumerate(policies):
            r = play(args.env, a, b, args.games, args.seed + 10 * i + j)
            writer.writerow([names[i], names[j], f"{r['return']:.2f}", r["win"], r["loss"], r["draw"]])
            out.flush()
    if args.out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
