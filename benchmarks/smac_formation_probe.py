"""How a side's units stand in SMAC's own game against the built-in AI: spread and reach, step by step.

    .venv/bin/python benchmarks/smac_formation_probe.py RUN_OR_POLICY_FILE --map 5m_vs_6m --games 32
    .venv/bin/python benchmarks/smac_formation_probe.py heuristic --map 5m_vs_6m --games 32

Plays ``--games`` games (seed ``--seed``) of the map's single-player battle (the agents in seat 0, the
built-in AI in seat 1, both at the map's spawns: ``selfplay.evaluation.panel.builtin_battle``) with a MAPPO
checkpoint acting greedily (a run directory: its last vs-AI checkpoint) or SMAC's heuristic, and prints,
every ``--every`` steps over the games' first episodes, the mean over games of:

- ``spread``: each side's mean distance of its living units from their centroid (how wide it stands);
- ``AI in range``: the share of the AI's living units with an agent unit within ``--reach`` (centre
  distance; default 5.75, a marine's range 5 plus two marine radii 0.375);
- ``agents in range``: the same for the agents' units.

It reads positions only; which unit fires at which is not traced.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch


def last_checkpoint(path: str) -> Path:
    p = Path(path)
    return sorted((p / "checkpoints").glob("policy_*.pt"))[-1] if p.is_dir() else p


def probe(player: str, map_name: str, games: int, seed: int, reach: float, steps: int = 120) -> tuple[np.ndarray, int]:
    """Rows ``(step, spread agents, spread AI, AI in range, agents in range)`` per game and step of the first
    episodes, and the games the agents won."""
    from selfplay.agents.mappo.selfplay import load_policy
    from selfplay.envs.smac.panel import panel_member

    from selfplay.evaluation.panel import builtin_battle

    battle = builtin_battle(f"smac:{map_name}", games, seed=seed)
    obs = battle.reset()
    units = battle.units
    mine, theirs = units.side_slices
    policy = None if player == "heuristic" else load_policy(last_checkpoint(player))
    script = panel_member("heuristic", battle, 0) if policy is None else None
    state = policy.initial_state(games) if policy is not None else None
    start = torch.ones(games, dtype=torch.bool)
    running, rows, won = np.ones(games, dtype=bool), [], 0
    for step in range(steps):
        pos, alive = np.asarray(units.pos, dtype=np.float64), np.asarray(units.alive)
        for g in np.flatnonzero(running):
            agents, ai = pos[g, mine][alive[g, mine]], pos[g, theirs][alive[g, theirs]]
            spread = [np.linalg.norm(p - p.mean(0), axis=1).mean() if len(p) else np.nan for p in (agents, ai)]
            if len(agents) and len(ai):
                d = np.linalg.norm(ai[:, None] - agents[None], axis=-1)
                rows.append((step, *spread, (d.min(1) <= reach).mean(), (d.min(0) <= reach).mean()))
        mask = battle.action_masks()[0]
        if policy is not None:
            action, state, _ = policy.act(obs[0], state, mask, start, deterministic=True)
        else:
            action = script.act()[0]
        obs, _, done, info = battle.step([action])
        done = np.asarray(done)
        start = torch.as_tensor(done)
        won += int(np.asarray(info["battle_won"][0])[running & done].sum())
        running &= ~done
        if not running.any():
            break
    return np.array(rows), won


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("player", help="a vs-AI run directory, a MAPPO policy file, or 'heuristic'")
    parser.add_argument("--map", default="5m_vs_6m")
    parser.add_argument("--games", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reach", type=float, default=5.75)
    parser.add_argument("--every", type=int, default=3)
    args = parser.parse_args()
    rows, won = probe(args.player, args.map, args.games, args.seed, args.reach)
    print(f"{args.player} on {args.map}: won {won} of {args.games}")
    print("| step | spread, agents | spread, AI | AI in range | agents in range | games |")
    print("|---:|---:|---:|---:|---:|---:|")
    for step in range(0, int(rows[:, 0].max()) + 1, args.every):
        m = rows[rows[:, 0] == step]
        if len(m):
            print(f"| {step} | " + " | ".join(f"{v:.2f}" for v in np.nanmean(m[:, 1:], 0)) + f" | {len(m)} |")


if __name__ == "__main__":
    main()
