"""What a SMAC self-play checkpoint's units do when no enemy is in sight, against the built-in AI.

    .venv/bin/python benchmarks/smac_movement_probe.py RUN [--games 32] [--checkpoints 3,5] [--smac-game] [--sampled] [--out probe.csv]

For each checkpoint of a self-play run, ``games`` greedy games (``--sampled``: its actions drawn, as in
training) in seat 0 against the map's built-in AI
(the agent's frame is side 0's: the enemy starts east): by default on the mirrored two-player battle of
training (the panel's ``builtin`` member drives seat 1); with ``--smac-game`` in SMAC's own game, the
agent as player 1 of the single-player battle with both sides at the map's spawns
(``selfplay.evaluation.panel.builtin_battle``, the battle the panel's ``builtin`` member and SMAC's
``test_won_rate`` play). Per checkpoint: the outcomes (win, loss,
timeout, mutual), the share of unit-steps in which a living unit has no living enemy within its sight
range (``SIGHT_RANGE``, SMAC's ``unit_sight_range`` 9), and over those unit-steps the mean probability
the policy gives stop, north, south, east and west (SMAC's actions 1–5) and the share of greedy moves
east; the mean x position of the living own units at step 10 (they start near x = 9, the enemy near 23); the mean time of
the first contact (some own unit with an enemy in sight). A policy that walks to the fight puts its
out-of-sight probability on east; one that times out against the AI does not.

How the units pick their targets (SMAC's actions 6 + j attack enemy j): ``attack_share``, the share of
living units' decisions that are attacks once some enemy is in sight; over the attacks, ``nearest_share``
attack the unit's nearest living enemy (what SMAC's heuristic and SC2's automatic acquisition choose)
and ``focus_share`` the target most of the game's attacking units chose at that step (1.0 when every
attacker of a game shares one target: focus fire; steps with one attacker are left out).
"""

from __future__ import annotations

import argparse
import csv
import sys

SIGHT_RANGE = 9.0  # SMAC's unit_sight_range (starcraft2.py), the range of the observation's enemy features
MOVE_NAMES = ("stop", "north", "south", "east", "west")  # SMAC's actions 1..5


def targeting_counts(action, dist, fighting) -> tuple[int, int, int, int, int]:
    """One step's target choices, summed over games: ``(deciding, attacks, on_nearest, on_focus, focused)``.
    ``action`` (games, units) SMAC action ids, ``dist`` (games, units, enemies) distances with dead enemies
    at +inf, ``fighting`` (games, units) the living units whose decisions count (some enemy in sight).
    ``deciding`` counts the fighting units, ``attacks`` those choosing an attack (6 + j on enemy j),
    ``on_nearest`` the attacks on the unit's nearest living enemy; in games where two or more units
    attack, ``focused`` counts those attacks and ``on_focus`` the attacks on that game's most chosen target."""
    import torch

    attacks = fighting & (action >= 6)
    target = (action - 6).clamp(min=0, max=dist.shape[-1] - 1)
    per_target = torch.zeros(dist.shape[0], dist.shape[-1], dtype=torch.long).scatter_add_(1, target, attacks.long())
    several = per_target.sum(-1) >= 2
    return (int(fighting.sum()), int(attacks.sum()), int((attacks & (target == dist.argmin(-1))).sum()),
            int(per_target.max(-1).values[several].sum()), int(per_target.sum(-1)[several].sum()))


def probe(env_name: str, policy, games: int, seed: int, smac_game: bool = False, sampled: bool = False) -> dict:
    """Outcomes and out-of-sight movement of ``policy`` (greedy, seat 0; with ``sampled`` its actions drawn from
    its distribution, as in training, from a generator seeded by ``seed``) against the built-in AI, on the
    mirrored two-player battle or, with ``smac_game``, in SMAC's single-player game (module docstring)."""
    import numpy as np
    import torch
    from selfplay.envs.smac.panel import panel_member

    from selfplay.evaluation.panel import builtin_battle
    from selfplay.training.registry import make_env
    from selfplay.utils.seeding import Stream, derive_seed

    env = builtin_battle(env_name, games, seed) if smac_game else make_env(env_name, games, seed=seed)
    obs = env.reset()
    ai = None if smac_game else panel_member("builtin", env, 1)
    units = env.units
    own, other = units.side_slices
    state = policy.initial_state(games)
    ai_state = None if ai is None else ai.initial_state(games)
    start = torch.ones(games, dtype=torch.bool)
    ended = torch.zeros(games, dtype=torch.bool)
    counts = {"win": 0, "loss": 0, "timeout": 0, "mutual": 0}
    blind_probs, blind_east, blind_n, alive_n = torch.zeros(5), 0, 0, 0
    x10, contact = [], torch.full((games,), -1)
    targeting = np.zeros(5, dtype=np.int64)  # targeting_counts summed over the steps
    sampling = {"generator": torch.Generator().manual_seed(derive_seed(seed, Stream.MATCH_POLICY))} if sampled else {}
    t = 0
    with torch.no_grad():
        while not bool(ended.all()):
            masks = env.action_masks()
            action, state, info = policy.act(obs[0], state, masks[0], start, deterministic=not sampled, **sampling)
            probs = torch.softmax(info["logits"], -1)
            pos, alive = units.pos, units.alive
            d = torch.cdist(pos[:, own], pos[:, other])
            d = d.masked_fill(~alive[:, other][:, None, :], float("inf"))
            blind = (d.min(-1).values > SIGHT_RANGE) & alive[:, own] & ~ended[:, None]
            seen = ((d.min(-1).values <= SIGHT_RANGE) & alive[:, own]).any(-1) & ~ended
            contact = torch.where((contact < 0) & seen, torch.full_like(contact, t), contact)
            blind_probs += probs[..., 1:6][blind].sum(0)
            blind_east += int((action[blind] == 4).sum())
            blind_n += int(blind.sum())
            targeting += targeting_counts(action, d, seen[:, None] & alive[:, own] & ~ended[:, None])
            alive_n += int((alive[:, own] & ~ended[:, None]).sum())
            if t == 10:
                x10.extend(pos[:, own][alive[:, own] & ~ended[:, None]][:, 0].tolist())
            if ai is None:
                obs, _, done, info = env.step([action])
            else:
                b, ai_state, _ = ai.act(obs[1], ai_state, masks[1], start)
                obs, _, done, info = env.step([action, b])
            for g in torch.nonzero(done & ~ended).flatten().tolist():
                w = int(info["winner"][g])
                key = "win" if w == 0 else "loss" if w == 1 else "timeout" if bool(info["timeout"][g]) else "mutual"
                counts[key] += 1
            ended |= done
            start = done.clone()
            t += 1
    p = (blind_probs / max(blind_n, 1)).tolist()
    deciding, attacks, on_nearest, on_focus, focused = (int(n) for n in targeting)
    return {**counts, "blind_share": blind_n / max(alive_n, 1), **{f"p_{n}": v for n, v in zip(MOVE_NAMES, p)},
            "greedy_east": blind_east / max(blind_n, 1), "x_step10": float(np.mean(x10)) if x10 else float("nan"),
            "first_contact": float(contact[contact >= 0].float().mean()) if bool((contact >= 0).any()) else float("nan"),
            "never_met": int((contact < 0).sum()), "attack_share": attacks / max(deciding, 1),
            "nearest_share": on_nearest / max(attacks, 1), "focus_share": on_focus / max(focused, 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", nargs="?", default=None)
    p.add_argument("--games", type=int, default=32)
    p.add_argument("--checkpoints", default=None, help="comma-separated checkpoint ids (default: all)")
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument("--out", default=None)
    p.add_argument("--smac-game", action="store_true",
                   help="play SMAC's own game (the agent as player 1, the map's spawns) instead of the mirrored battle")
    p.add_argument("--sampled", action="store_true",
                   help="the agent samples its actions (as in training) instead of playing greedily (as SMAC's tests)")
    p.add_argument("--env", default=None, help="with policy files instead of a finished run: smac:MAP")
    p.add_argument("--files", default=None, help="comma-separated MAPPO policy files (a run still training)")
    args = p.parse_args(argv)
    if args.games < 1:
        raise ValueError(f"games must be a positive integer, got {args.games}")
    if args.files:
        from selfplay.agents.mappo.selfplay import load_policy

        if not args.env:
            raise ValueError("--files needs --env smac:MAP")
        env_name, policies = args.env, [(f, load_policy(f)) for f in args.files.split(",")]
    else:
        from selfplay.training.rundir import open_committed

        run, state, kit = open_committed(args.run_dir)
        checkpoints = run.committed_menagerie(state, "checkpoints", kit.load_policy)
        ids = checkpoints.ids if args.checkpoints is None else [int(i) for i in args.checkpoints.split(",")]
        env_name, policies = state["config"]["env"], [(i, checkpoints[i].policy) for i in ids]
    out = open(args.out, "w", newline="") if args.out else sys.stdout
    writer = None
    for i, policy in policies:
        r = probe(env_name, policy, args.games, args.seed, args.smac_game, args.sampled)
        row = {"checkpoint": i, "weight_version": policy.weight_version, **r}
        if writer is None:
            writer = csv.DictWriter(out, fieldnames=list(row))
            writer.writeheader()
        writer.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in row.items()})
        out.flush()
    if args.out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
