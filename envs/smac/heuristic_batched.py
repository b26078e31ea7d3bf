"""SMAC's heuristic AI (``StarCraft2Env(heuristic_ai=True)``, ``get_agent_action_heuristic``), batched
over games, and a runner that measures its win rate against the scripted enemy.

The rule (SMAC's code, ``heuristic_rest=False``): every agent keeps a target; when it has none or
the target is dead, it takes the closest living enemy (a marauder skips Medivacs) and is ordered to
attack it, wherever it is (the unit walks into range: the order is not limited to SMAC's shoot-range
mask).  A Medivac heals: when it has no target, or its target is dead or at full health, it takes
the closest damaged living non-Medivac ally; with none it gets no order.  Distances are
centre-to-centre.
"""

from __future__ import annotations

import torch

from .battle import SMACBattle
from .unit_table import is_type, per_game


class HeuristicPolicy:
    """SMAC's heuristic AI for seat ``seat`` of ``battle`` (module docstring): a ``SMACBattle`` or a
    ``SMACv2Battle`` (whose games each draw their own unit types, read at every step)."""

    def __init__(self, battle: SMACBattle, seat: int = 0):
        if seat not in (0, 1):
            raise ValueError(f"seat must be 0 or 1, got {seat!r}")
        eng = battle.engine
        self.battle, self.seat, self.engine = battle, seat, eng
        self.units = battle.units  # read at access: on SMACv2 each game's draw, rewritten in place
        self.own, self.other = eng.side_slices[seat], eng.side_slices[1 - seat]
        self.target = torch.full((eng.num_envs, eng.n_side[seat]), -1, dtype=torch.long, device=eng.device)

    def reset(self, mask: torch.Tensor | None = None) -> None:
        """Forget the targets of the games in ``mask`` (all when None)."""
        if mask is None:
            self.target.fill_(-1)
        else:
            self.target[mask.to(self.target.device)] = -1

    def act(self) -> torch.Tensor:
        """(E, n_agents) SMAC action ids: 6 + target (attack / heal), or 0 (no order)."""
        eng, units = self.engine, self.units
        alive = eng.alive
        pos = eng.pos
        # per game (E, n): the same every game on SMAC, each game's draw on SMACv2; the Medivac is the one
        # unit that heals (unit_table.per_game), the marauder is read by name (unit_table.is_type)
        is_medivac = per_game(units, "heals")
        own_medivac, enemy_medivac = is_medivac[:, self.own], is_medivac[:, self.other]
        is_marauder = is_type(units, "marauder")[:, self.own]
        own_pos, other_pos = pos[:, self.own], pos[:, self.other]
        a_other, a_own = alive[:, self.other], alive[:, self.own]
        # attackers: keep a living target, else the closest living enemy (marauders skip Medivacs)
        d = torch.cdist(own_pos, other_pos)
        ok = a_other[:, None, :] & ~(is_marauder[:, :, None] & enemy_medivac[:, None, :])
        best_d, best = torch.where(ok, d, torch.inf).min(2)
        cur = self.target
        cur_alive = (cur >= 0) & a_other.gather(1, cur.clamp(0, a_other.shape[1] - 1))
        attack_t = torch.where(cur_alive, cur, torch.where(torch.isfinite(best_d), best, -1))
        # Medivacs: keep a living, damaged target, else the closest damaged living non-Medivac ally
        hp, hp_max = eng.hp[:, self.own], per_game(units, "hp_max")[:, self.own]
        hurt = a_own & (hp < hp_max) & ~own_medivac
        dh = torch.cdist(own_pos, own_pos)
        h_best_d, h_best = torch.where(hurt[:, None, :], dh, torch.inf).min(2)
        cur_hurt = (cur >= 0) & hurt.gather(1, cur.clamp(0, hurt.shape[1] - 1))
        heal_t = torch.where(cur_hurt, cur, torch.where(torch.isfinite(h_best_d), h_best, -1))
        self.target = torch.where(own_medivac, heal_t, attack_t)
        return torch.where(a_own & (self.target >= 0), self.target + 6, 0)


def heuristic_win_rate(map_name: str, games: int = 256, num_envs: int = 256, seed: int = 0,
                       device: str = "cpu", tweak=None) -> float:
    """Fraction of ``games`` won by SMAC's heuristic AI against the scripted enemy (single-player);
    ``tweak(engine)``, if given, changes the engine before the first reset (the fidelity ablations)."""
    if games < 1 or num_envs < 1:
        raise ValueError(f"games and num_envs must be positive, got games={games}, num_envs={num_envs}")
    b = SMACBattle(map_name, num_envs, two_player=False, seed=seed, device=device)
    if tweak is not None:
        tweak(b.engine)
    b.reset()
    pol = HeuristicPolicy(b, 0)
    won = played = 0
    while played < games:
        _, _, done, info = b.step([pol.act()], check_masks=False)
        won += int((info["battle_won"][0] & done).sum())
        played += int(done.sum())
        pol.reset(done)
    return won / played
