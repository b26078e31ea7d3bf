"""Seat symmetry of the two-player SMAC battle: the same policy on both seats must win half the games.

Self-play compares policies by seat-swapped games on a mirrored two-player battle (seat 1 sees the
map mirrored in x, ``SMACBattle(mirror=True)``); a seat bias corrupts every win-rate matrix. For each
map this plays ``--games`` games (one per environment, each environment's first game) of one policy
against itself: SMAC's heuristic (``panel.Heuristic``) and a seeded uniformly random policy (every
living agent picks uniformly among its legal actions each step), and prints seat 0's wins, seat 1's
wins, draws, and seat 0's share of the decisive games with a 95 % Wilson interval. A fair battle
gives 0.5 within the interval.

    python benchmarks/smac_seat_symmetry.py [--games 128] [--seed 0] [--maps 3m 8m]
"""

from __future__ import annotations

import argparse
import time

import torch
from selfplay.envs.smac import SMACBattle
from selfplay.envs.smac.panel import Heuristic
from smac_calibration import wilson

MAPS = ("3m", "8m", "2s3z", "3s5z", "MMM", "1c3s5z", "bane_vs_bane")


class RandomPolicy:
    """Uniform over each living agent's legal actions, from its own seeded generator."""

    def __init__(self, battle: SMACBattle, seat: int, seed: int):
        self.battle, self.seat = battle, seat
        self.gen = torch.Generator().manual_seed(seed)

    def act(self, obs=None, state=None, mask=None, episode_start=None):
        m = self.battle.action_masks()[self.seat].float()
        E, n, A = m.shape
        return torch.multinomial(m.reshape(E * n, A), 1, generator=self.gen).reshape(E, n), None, {}


def seat_games(map_name: str, policy: str, games: int, seed: int) -> tuple[int, int, int]:
    """(seat-0 wins, seat-1 wins, draws) of ``games`` games of ``policy`` against itself."""
    battle = SMACBattle(map_name, games, two_player=True, mirror=True, seed=seed)
    obs = battle.reset()
    if policy == "heuristic":
        players = [Heuristic(battle, 0), Heuristic(battle, 1)]
    else:
        players = [RandomPolicy(battle, 0, seed + 1), RandomPolicy(battle, 1, seed + 2)]
    result = torch.full((games,), -2, dtype=torch.long)  # -2 running, -1 draw, 0/1 winner
    start = torch.ones(games, dtype=torch.bool)
    while bool((result == -2).any()):
        acts = [p.act(obs[s], episode_start=start)[0] for s, p in enumerate(players)]
        obs, _, done, info = battle.step(acts, check_masks=policy != "heuristic")
        first = done & (result == -2)
        result[first] = info["winner"][first]
        start = done
    return int((result == 0).sum()), int((result == 1).sum()), int((result == -1).sum())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--maps", nargs="+", default=list(MAPS))
    p.add_argument("--policies", nargs="+", default=["heuristic", "random"], choices=["heuristic", "random"])
    a = p.parse_args()
    if a.games < 1:
        raise SystemExit(f"--games must be positive, got {a.games}")
    print("| map | policy | seat-0 wins | seat-1 wins | draws | seat-0 share of decisive [95 % Wilson] |")
    print("|---|---|---:|---:|---:|---|")
    for m in a.maps:
        for pol in a.policies:
            t = time.time()
            w0, w1, d = seat_games(m, pol, a.games, a.seed)
            n = w0 + w1
            share = f"{w0 / n:.2f} [{wilson(w0, n)[0]:.2f}, {wilson(w0, n)[1]:.2f}]" if n else "—"
            print(f"| {m} | {pol} | {w0} | {w1} | {d} | {share} |  <!-- {time.time() - t:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
