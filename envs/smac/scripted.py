"""A scripted focus-fire policy for SMAC seats, acting from observations and action masks only
(so it is a batched ``Policy`` and a demonstrator for any SMAC seat, docs/design/smac.md §2-3).

Rule, per agent:
1. dead -> no-op (0);
2. some enemy is attackable (mask) -> attack the attackable enemy with the lowest
   ``hp/hp_max + shield/shield_max`` (ties: lowest index), so that agents who see the same
   enemies pick the same target (focus fire);
3. else some enemy is visible -> move along the larger axis of the offset to the closest one;
4. else move ``default_move`` (east = 4: towards the enemy in seat 0's frame, and in a mirrored
   seat 1's frame), or stop when that move is unavailable.

Requires ``obs_all_health=True`` (SMAC's default) so that the enemy features carry health.
"""

from __future__ import annotations

import torch

from .features import N_ACTIONS_NO_ATTACK

NORTH, SOUTH, EAST, WEST = 2, 3, 4, 5


class FocusFirePolicy:
    """Batched focus-fire policy (module docstring).  ``act(obs, state, mask)`` with ``obs``
    (B, n_agents, obs_size) and ``mask`` (B, n_agents, n_actions) bool -> actions (B, n_agents)."""

    def __init__(self, n_enemies: int, move_feats_size: int, enemy_feats_size: int, enemy_shield: bool,
                 default_move: int = EAST):
        if default_move not in (1, NORTH, SOUTH, EAST, WEST):
            raise ValueError(f"default_move must be 1 (stop) or a move action 2..5, got {default_move!r}")
        self.n_enemies = n_enemies
        self.move_feats_size = move_feats_size
        self.enemy_feats_size = enemy_feats_size
        self.enemy_shield = enemy_shield
        self.default_move = default_move

    @classmethod
    def for_battle(cls, battle, seat: int = 0, default_move: int = EAST) -> FocusFirePolicy:
        """The policy for ``seat`` of a ``SMACBattle`` (reads its observation layout)."""
        view = battle.views[seat]
        if not view.config.obs_all_health:
            raise ValueError("FocusFirePolicy needs obs_all_health=True")
        return cls(view.n_enemies, view.move_feats_size, view.enemy_feats_size, bool(view.shield_enemy), default_move)

    def initial_state(self, batch: int):
        return None

    def act(self, obs: torch.Tensor, state=None, mask: torch.Tensor | None = None, episode_start=None):
        if mask is None:
            raise ValueError("mask is required: FocusFirePolicy reads attackability from the action mask")
        B, n, _ = obs.shape
        m, nf = self.n_enemies, self.enemy_feats_size
        en = obs[..., self.move_feats_size:self.move_feats_size + m * nf].reshape(B, n, m, nf)
        attackable = mask[..., N_ACTIONS_NO_ATTACK:N_ACTIONS_NO_ATTACK + m]
        health = en[..., 4] + (en[..., 5] if self.enemy_shield else 0.0)
        score = torch.where(attackable, health, torch.inf)
        best_score, best = score.min(dim=-1)
        has_target = torch.isfinite(best_score)

        visible = en[..., 1] > 0
        dist = torch.where(visible, en[..., 1], torch.inf)
        near_d, near = dist.min(dim=-1)
        seen = torch.isfinite(near_d)
        off = en.gather(2, near[..., None, None].expand(B, n, 1, nf)).squeeze(2)
        dx, dy = off[..., 2], off[..., 3]
        horizontal = dx.abs() >= dy.abs()
        toward = torch.where(horizontal, torch.where(dx >= 0, EAST, WEST), torch.where(dy >= 0, NORTH, SOUTH))
        can_toward = mask.gather(2, toward[..., None]).squeeze(-1)
        default = torch.full_like(toward, self.default_move)
        can_default = mask.gather(2, default[..., None]).squeeze(-1)

        action = torch.where(can_default, default, torch.ones_like(toward))
        action = torch.where(seen & can_toward, toward, action)
        action = torch.where(has_target, best + N_ACTIONS_NO_ATTACK, action)
        alive = ~mask[..., 0]
        action = torch.where(alive, action, torch.zeros_like(action))
        return action, None, {}
