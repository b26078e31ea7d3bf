"""The SMAC simulator's fights against the real game's published results.

For every map of the SMAC paper's Table 2 (Samvelyan et al. 2019, "The StarCraft Multi-Agent
Challenge", AAMAS 2019 / arXiv:1902.04043, Table 2, column "Heuristic": the median test win rate, in
percent, of SMAC's heuristic AI against the game's scripted enemy on SC2.4.6.2.69232): the win rate
of the same heuristic in the simulator (``StarCraft2Env(heuristic_ai=True)`` semantics, run batched by
``envs/smac/heuristic_batched.py``, which ``tests/smac/test_heuristic_agreement.py`` ties to the env
action for action), with a 95 % Wilson interval, next to the paper's value; and the win rate of a
uniformly random policy (every living agent picks uniformly among its available actions each step).
The other 9 maps (not in Table 2) are listed with the simulator's figures only.

A map is "within" when |simulator - paper| <= 0.15 (the calibration target); a paper value of 0
must stay 0 (no won game).

    python benchmarks/smac_calibration.py [--games 256] [--seed 0] [--maps 2s3z 3s5z] [--engine cpu]
"""

from __future__ import annotations

import argparse
import math
import time

import torch
from selfplay.envs.smac import MAP_NAMES, SMACBattle
from selfplay.envs.smac.heuristic_batched import HeuristicPolicy

# SMAC paper, Table 2, "Heuristic" column (percent won), the 14 maps of the table.
PAPER_HEURISTIC = {
    "2s_vs_1sc": 0, "2s3z": 90, "3s5z": 42, "1c3s5z": 81, "10m_vs_11m": 12,
    "2c_vs_64zg": 0, "bane_vs_bane": 43, "5m_vs_6m": 0, "3s_vs_5z": 0,
    "3s5z_vs_3s6z": 0, "6h_vs_8z": 0, "27m_vs_30m": 0, "MMM2": 0, "corridor": 0,
}
TOLERANCE = 0.15


def wilson(wins: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95 % Wilson score interval of a binomial proportion ``wins / n``."""
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _play(battle: SMACBattle, policy, games: int) -> tuple[int, int]:
    """(won, played) over the first ``games`` finished games; ``policy()`` gives seat 0's actions."""
    won = played = 0
    battle.reset()
    while played < games:
        _, _, done, info = battle.step([policy()], check_masks=False)
        finished = int(done.sum())
        won += int((info["battle_won"][0] & done).sum())
        played += finished
        if hasattr(policy, "reset"):
            policy.reset(done)
    return won, played


def heuristic_record(map_name: str, games: int, seed: int, engine: str = "auto") -> tuple[int, int]:
    """(won, played) of SMAC's heuristic AI against the scripted enemy."""
    b = SMACBattle(map_name, games, two_player=False, seed=seed, engine=engine)
    pol = HeuristicPolicy(b, 0)

    class _Act:
        def __call__(self):
            return pol.act()

        def reset(self, done):
            pol.reset(done)

    return _play(b, _Act(), games)


def random_record(map_name: str, games: int, seed: int, engine: str = "auto") -> tuple[int, int]:
    """(won, played) of a uniformly random policy over each agent's available actions."""
    b = SMACBattle(map_name, games, two_player=False, seed=seed, engine=engine)
    g = torch.Generator().manual_seed(seed)

    def act():
        m = b.action_masks()[0]
        flat = m.reshape(-1, m.shape[-1]).float()
        return torch.multinomial(flat, 1, generator=g).reshape(m.shape[:-1])

    return _play(b, act, games)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=256, help="games per map and policy (>= 100 for the table)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--maps", nargs="+", default=None, help="default: Table 2's maps, then the others")
    ap.add_argument("--engine", default="auto", choices=("auto", "cpu", "cuda"))
    args = ap.parse_args()
    if args.games < 1:
        raise SystemExit(f"--games must be positive, got {args.games}")
    unknown = set(args.maps or []) - set(MAP_NAMES)
    if unknown:
        raise SystemExit(f"--maps has unknown maps {sorted(unknown)}; allowed: {list(MAP_NAMES)}")
    torch.set_num_threads(1)
    maps = args.maps or (list(PAPER_HEURISTIC) + [m for m in MAP_NAMES if m not in PAPER_HEURISTIC])
    print(f"games per map and policy: {args.games}, seed {args.seed}, engine {args.engine}\n")
    print("| map | paper heuristic | simulator heuristic [95 % CI] | within 0.15 | random policy [95 % CI] |")
    print("|---|---:|---:|:---:|---:|")
    inside = total = 0
    for name in maps:
        t = time.time()
        hw, hn = heuristic_record(name, args.games, args.seed, args.engine)
        rw, rn = random_record(name, args.games, args.seed, args.engine)
        h, r = hw / hn, rw / rn
        hl, hh = wilson(hw, hn)
        rl, rh = wilson(rw, rn)
        paper = PAPER_HEURISTIC.get(name)
        if paper is None:
            verdict, ptxt = "", "—"
        else:
            ok = hw == 0 if paper == 0 else abs(h - paper / 100) <= TOLERANCE
            inside, total = inside + ok, total + 1
            verdict, ptxt = ("yes" if ok else "**no**"), f"{paper / 100:.2f}"
        print(f"| {name} | {ptxt} | {h:.2f} [{hl:.2f}, {hh:.2f}] | {verdict} | {r:.2f} [{rl:.2f}, {rh:.2f}] |"
              f" <!-- {time.time() - t:.0f}s -->", flush=True)
    if total:
        print(f"\nwithin 0.15 of the paper (0 stays 0): {inside} of {total} maps")


if __name__ == "__main__":
    main()
