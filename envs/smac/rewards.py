"""SMAC's rewards and episode outcome (docs/design/smac.md §5), batched and per side.

Dense reward of side s for one step (SMAC's ``reward_battle``), over units not yet counted dead:

    delta_enemy  = sum over enemies of (hp + shield lost this step; a dying unit: its previous hp + shield)
    delta_deaths = reward_death_value * (enemies that died this step)
                   [- reward_death_value * reward_negative_scale * (allies that died), unless only positive]
    delta_ally   = reward_negative_scale * (same sum as delta_enemy, over allies)
    reward       = |delta_enemy + delta_deaths|                    if reward_only_positive
                   delta_enemy + delta_deaths - delta_ally          otherwise

then ``+ reward_win`` on a win (``+ reward_defeat`` on a loss); with ``reward_sparse`` the reward is
only +1 / -1 on a win / loss.  With ``reward_scale`` everything is divided by
``max_reward / reward_scale_rate``, ``max_reward = n_enemies * reward_death_value + reward_win +
sum over enemies of (hp_max + shield_max)``.

Outcome: a side has lost when none of its units is alive (MMM maps: when only Medivacs are left).
One side lost: the other won.  Both lost: a draw ("both dead: ends, no bonus").  Reaching the
episode limit: a draw (timeout).

The rewards and outcomes are computed by the compiled rules (``feature_rules.rewards``, ``finish``,
``outcome``, run by ``fast_features.FastRewards``); ``RewardTracker`` holds the bookkeeping they update.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .engine import BattleEngine


@dataclass(frozen=True)
class RewardConfig:
    """SMAC's reward flags, with SMAC's defaults."""

    reward_sparse: bool = False
    reward_only_positive: bool = True
    reward_death_value: float = 10.0
    reward_win: float = 200.0
    reward_defeat: float = 0.0
    reward_negative_scale: float = 0.5
    reward_scale: bool = True
    reward_scale_rate: float = 20.0


class RewardTracker:
    """Remembers each unit's previous hp + shield and which deaths were already rewarded (two tensors,
    updated in place: ``fast_features.FastRewards`` works on array views of them)."""

    def __init__(self, engine: BattleEngine, config: RewardConfig = RewardConfig()):
        self.engine, self.config = engine, config
        self.prev = engine.hp + engine.shield
        self.counted_dead = ~engine.alive
        medivac = torch.tensor([u == "medivac" for u in engine.unit_names], device=engine.device)
        self.counts_for_survival = ~medivac if engine.spec.map_type == "MMM" else torch.ones_like(medivac)

    def reset(self, mask: torch.Tensor) -> None:
        """Forget the games where ``mask`` is true (call after the engine reset them)."""
        m = mask[:, None]
        self.prev.copy_(torch.where(m, self.engine.hp + self.engine.shield, self.prev))
        self.counted_dead.copy_(torch.where(m, ~self.engine.alive, self.counted_dead))

    def max_reward(self, side: int) -> float:
        eng, c = self.engine, self.config
        sl = eng.side_slices[1 - side]
        n_enemies = eng.n_side[1 - side]
        return float(n_enemies * c.reward_death_value + c.reward_win + (eng.hp_max[sl] + eng.shield_max[sl]).sum())
