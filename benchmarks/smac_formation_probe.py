"""How a side's units stand in SMAC's own game against the built-in AI: spread and reach, step by step.

    .venv/bin/python benchmarks/smac_formation_probe.py RUN --map 5m_vs_6m --games 32
    .venv/bin/python benchmarks/smac_formation_probe.py heuristic --map 5m_vs_6m --games 32

Plays ``--games`` games (seed ``--seed``) of the map's single-player battle (the agents in seat 0, the
built-in AI in seat 1, both at the map's spawns: ``selfplay.evaluation.panel.builtin_battle``) with a MAPPO
checkpoint acting greedily (``RUN``: its last vs-AI checkpoint, or ``RUN@ID``) or SMAC's heuristic, and prints,
every ``--every`` steps over the games' first episodes, the mean over games of:

- ``spread``: each side's mean distance of its living units from their centroid (how wide it stands);
- ``AI in range``: the share of the AI's living units with an agent unit within ``--reach`` (centre
  distance; default 5.75, a marine's range 5 plus two marine radii 0.375);
- ``agents in range``: the same for the agents' units.

It reads positions only; which unit fires at which is not traced.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch


def side_rows(pos: np.ndarray, alive: np.ndarray, mine: slice, theirs: slice, reach: float) -> np.ndarray:
    """Per game, ``(spread agents, spread AI, AI in range, agents in range)`` (module docstring) from unit
    positions ``pos`` ``(G, U, 2)`` and ``alive`` ``(G, U)``; NaN where a side has no living unit."""
    def spread(p, a):
        n = a.sum(1)
        centre = (p * a[..., None]).sum(1) / np.maximum(n, 1)[:, None]
        dist = np.linalg.norm(p - centre[:, None], axis=-1)
        return np.where(n > 0, (dist * a).sum(1) / np.maximum(n, 1), np.nan)

    agents, ai = (pos[:, mine], alive[:, mine]), (pos[:, theirs], alive[:, theirs])
    d = np.linalg.norm(ai[0][:, :, None] - agents[0][:, None], axis=-1)  # (G, AI unit, agent unit)
    d = np.where(ai[1][:, :, None] & agents[1][:, None], d, np.inf)

    def share(near, a):
        return np.where(a.any(1), (near & a).sum(1) / np.maximum(a.sum(1), 1), np.nan)

    return np.stack([spread(*agents), spread(*ai), share(d.min(2) <= reach, ai[1]),
                     share(d.min(1) <= reach, agents[1])], 1)


def probe(player: str, map_name: str, games: int, seed: int, reach: float, steps: int = 120) -> tuple[np.ndarray, int]:
    """Rows ``(step, spread agents, spread AI, AI in range, agents in range)`` per game and step of the first
    episodes while both sides have living units, and the games the agents won."""
    from selfplay.envs.smac.panel import panel_member

    from selfplay.evaluation.panel import builtin_battle
    from selfplay.evaluation.replay import load_checkpoint
    from selfplay.training.matches import evaluation_act

    env = f"smac:{map_name}"
    battle = builtin_battle(env, games, seed=seed)
    obs = battle.reset()
    units = battle.units
    mine, theirs = units.side_slices
    agent = panel_member("heuristic", battle, 0) if player == "heuristic" else load_checkpoint(player, env)
    state = agent.initial_state(games) if hasattr(agent, "initial_state") else None
    start = torch.ones(games, dtype=torch.bool)
    running, rows, won = np.ones(games, dtype=bool), [], 0
    for step in range(steps):
        alive = np.asarray(units.alive)
        both = running & alive[:, mine].any(1) & alive[:, theirs].any(1)
        values = side_rows(np.asarray(units.pos, dtype=np.float64), alive, mine, theirs, reach)[both]
        rows += [(step, *v) for v in values]
        action, state, _ = evaluation_act(agent, obs[0], state, battle.action_masks()[0], start, True)
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
    parser.add_argument("player", help="a vs-AI run directory RUN (its last checkpoint), RUN@ID, or 'heuristic'")
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
