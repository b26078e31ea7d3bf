"""Why a SMAC self-play run's agents are weak or strong against the built-in AI: per checkpoint.

    .venv/bin/python benchmarks/smac_selfplay_diagnosis.py RUN --games 32 --out diagnosis.csv
    .venv/bin/python benchmarks/smac_selfplay_diagnosis.py RUN --matches RUN/matches.csv --bin 500

For each checkpoint of a self-play run (``selfplay train --env smac:MAP ...``): ``games`` games in each
seat against the map's built-in AI (panel member ``builtin``, the two-player battle of training), once
with the checkpoint playing greedily (each unit's most probable action, as SMAC's test games) and once
sampling its actions (as in training); the outcomes are counted as wins, losses, timeouts (the map's
episode limit) and mutual destructions, with the mean game length. Then ``games`` games of the
checkpoint against itself (sampled, as self-play plays): the share of timeouts tells whether
self-play settled into passive play. ``--matches`` summarises a run's training games instead
(``matches.csv``): per ``--bin`` episodes the share of draws, the learner's win rate and seat 0's win
rate (seat asymmetry).
"""

from __future__ import annotations

import argparse
import csv
import sys

OUTCOMES = ("win", "loss", "timeout", "mutual")


def play(env_name: str, policy, opponent, seat: int, games: int, seed: int, greedy: bool) -> dict:
    """Outcome counts and mean length of the first game in each of ``games`` batched games: ``policy``
    in ``seat``, ``opponent`` (a panel member's name or a policy, sampling) in the other seat."""
    import numpy as np
    import torch
    from selfplay.envs.smac.panel import panel_member

    from selfplay.training.matches import evaluation_act
    from selfplay.training.registry import make_env

    env = make_env(env_name, games, seed=seed)
    obs = env.reset()
    other = panel_member(opponent, env, 1 - seat) if isinstance(opponent, str) else opponent
    state, other_state = policy.initial_state(games), other.initial_state(games)
    start = torch.ones(games, dtype=torch.bool)
    ended = torch.zeros(games, dtype=torch.bool)
    counts = dict.fromkeys(OUTCOMES, 0)
    lengths = []
    with torch.no_grad():
        while not bool(ended.all()):
            masks = env.action_masks()
            a, state, _ = evaluation_act(policy, obs[seat], state, masks[seat], start, greedy)
            b, other_state, _ = other.act(obs[1 - seat], other_state, masks[1 - seat], start)
            obs, _, done, info = env.step([a, b] if seat == 0 else [b, a])
            for g in torch.nonzero(done & ~ended).flatten().tolist():
                winner = int(info["winner"][g])
                key = ("win" if winner == seat else "loss" if winner == 1 - seat
                       else "timeout" if bool(info["timeout"][g]) else "mutual")
                counts[key] += 1
                lengths.append(int(info["episode_steps"][g]))
            ended |= done
            start = done.clone()
    return {**counts, "length": float(np.mean(lengths))}


def diagnose(run_dir: str, games: int, out) -> None:
    from selfplay.training.rundir import open_committed

    run, state, kit = open_committed(run_dir)
    env_name = state["config"]["env"]
    checkpoints = run.committed_menagerie(state, "checkpoints", kit.load_policy)
    writer = csv.writer(out)
    writer.writerow(["checkpoint", "weight_version", "play", "opponent", "seat", *OUTCOMES, "length"])
    for i in checkpoints.ids:
        policy = checkpoints[i].policy
        for greedy in (True, False):
            for seat in (0, 1):
                r = play(env_name, policy, "builtin", seat, games, 1000 + seat, greedy)
                writer.writerow([i, policy.weight_version, "greedy" if greedy else "sampled", "builtin", seat,
                                 *(r[k] for k in OUTCOMES), f"{r['length']:.1f}"])
        r = play(env_name, policy, policy, 0, games, 7, False)
        writer.writerow([i, policy.weight_version, "sampled", "itself", 0, *(r[k] for k in OUTCOMES),
                         f"{r['length']:.1f}"])
        out.flush()


def training_games(matches_csv: str, bin_size: int, out) -> None:
    import pandas as pd

    m = pd.read_csv(matches_csv)
    m["bin"] = m["episode"] // bin_size
    seat0_won = ((m["score"] == 1) & (m["learner_seat"] == 0)) | ((m["score"] == 0) & (m["learner_seat"] == 1))
    table = pd.DataFrame({"episodes_from": m.groupby("bin")["episode"].min(),
                          "game_steps_to": m.groupby("bin")["step"].max(),
                          "draw": (m["score"] == 0.5).groupby(m["bin"]).mean(),
                          "learner_win": (m["score"] == 1).groupby(m["bin"]).mean(),
                          "seat0_win": seat0_won.groupby(m["bin"]).mean()})
    table.to_csv(out, index=False, float_format="%.3f")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir")
    p.add_argument("--games", type=int, default=32, help="games per seat and setting")
    p.add_argument("--matches", default=None, help="summarise this matches.csv instead")
    p.add_argument("--bin", type=int, default=500, help="--matches: episodes per row")
    p.add_argument("--out", default=None, help="CSV to write (default: stdout)")
    args = p.parse_args(argv)
    if args.games < 1:
        raise ValueError(f"games must be a positive integer, got {args.games}")
    out = open(args.out, "w", newline="") if args.out else sys.stdout
    try:
        if args.matches:
            training_games(args.matches, args.bin, out)
        else:
            diagnose(args.run_dir, args.games, out)
    finally:
        if args.out:
            out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
