"""How strong the SMAC panel's scripted members are against the map's built-in AI, in the two battles
(docs/guides/smac-panel.md, "How strong the members are"):

    .venv/bin/python benchmarks/smac_panel_strength.py --maps 3m,2s3z,3s5z,MMM --games 32 --out strength.csv
    .venv/bin/python benchmarks/smac_panel_strength.py --maps smacv2:protoss_5_vs_5 --games 64

Per map and scripted member (heuristic, kiting, focus_weakest, regroup), with battle seeds 0 and 1,
``--games`` games per seed:

- ``smac``: the member as player 1 (seat 0) of SMAC's single-player battle (the map's own spawns, the
  AI driven by the engine: ``selfplay.evaluation.panel.builtin_battle``), the setting of the panel's
  games against ``builtin``;
- ``mirrored``: the member in seat 0 and, in as many games, in seat 1 of the two-player battle of
  training with ``builtin`` bound to the other seat (seat 1 mirrored: the AI's side, when in seat 1,
  spawns as the mirror image of seat 0's layout).

A SMACv2 scenario (``smacv2:SCENARIO`` in ``--maps``) has the ``smac`` battle only: its single-player game
(each game its own draw of teams and start positions); the built-in AI is not a seat of its two-player battle.

A win counts 1, a loss, timeout or mutual destruction 0 (the panel's rule). One CSV row per map,
member and battle: ``map, member, battle, games, win_rate``; CPU seconds at the end.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time

MEMBERS = ("heuristic", "kiting", "focus_weakest", "regroup")


def win_rate(battle, member: str, seat: int) -> tuple[int, int]:
    """(wins, games) of ``member`` in ``seat`` of ``battle`` (the built-in AI in the other seat or, in a
    single-player battle, player 2), the first game of every env."""
    import torch
    from selfplay.envs.smac.panel import panel_member

    n = battle.num_envs
    battle.reset()
    me = panel_member(member, battle, seat)
    if battle.n_seats == 2:
        panel_member("builtin", battle, 1 - seat)
    won, ended, start = torch.zeros(n), torch.zeros(n, dtype=torch.bool), torch.ones(n, dtype=torch.bool)
    while not bool(ended.all()):
        a = me.act(None, None, None, start)[0]
        if battle.n_seats == 1:
            actions = [a]
        else:
            idle = torch.zeros(n, battle.n_agents[1 - seat], dtype=torch.long)
            actions = [a, idle] if seat == 0 else [idle, a]
        _, _, done, info = battle.step(actions)
        first = done & ~ended
        won[first] = (info["winner"][first] == seat).float()
        ended |= done
        start = done.clone()
    return int(won.sum()), n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--maps", default="3m,2s3z,3s5z,MMM")
    p.add_argument("--games", type=int, default=32, help="games per battle seed (seeds 0 and 1)")
    p.add_argument("--out", default="-", help="CSV file ('-': stdout)")
    args = p.parse_args(argv)
    if args.games < 1:
        raise ValueError(f"games must be a positive integer, got {args.games}")
    import torch

    from selfplay.evaluation.panel import builtin_battle
    from selfplay.training.registry import make_env

    torch.set_num_threads(1)
    t0 = time.process_time()
    rows = []
    for map_name in args.maps.split(","):
        env = map_name if ":" in map_name else f"smac:{map_name}"
        for member in MEMBERS:
            wins = games = 0
            for seed in (0, 1):
                w, n = win_rate(builtin_battle(env, args.games, seed), member, 0)
                wins, games = wins + w, games + n
            rows.append([map_name, member, "smac", games, wins / games])
            print(*rows[-1], sep=",", file=sys.stderr)
            if env.startswith("smacv2:"):
                continue
            wins = games = 0
            for seed in (0, 1):
                for seat in (0, 1):
                    w, n = win_rate(make_env(env, args.games // 2, seed=seed), member, seat)
                    wins, games = wins + w, games + n
            rows.append([map_name, member, "mirrored", games, wins / games])
            print(*rows[-1], sep=",", file=sys.stderr)
    out = sys.stdout if args.out == "-" else open(args.out, "w", newline="")
    writer = csv.writer(out)
    writer.writerow(["map", "member", "battle", "games", "win_rate"])
    writer.writerows([r[:4] + [f"{r[4]:.3f}"] for r in rows])
    if out is not sys.stdout:
        out.close()
    print(f"cpu seconds: {time.process_time() - t0:.1f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
