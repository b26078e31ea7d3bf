"""One seat's features and the rewards for ``NumbaEngine``: the compiled twins of
``features.SideView`` and ``rewards.RewardTracker`` (``feature_kernels.py``), numpy in, numpy out."""

from __future__ import annotations

import numpy as np

from . import feature_kernels as FK
from .features import FeatureConfig, SideView
from .rewards import RewardConfig, RewardTracker


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy()


class FastSideView:
    """``SideView``'s ``avail_actions``, ``observations`` and ``state`` on a ``NumbaEngine``, as numpy
    arrays (the same values: module docstring)."""

    def __init__(self, view: SideView):
        eng = view.engine
        self.view, self.engine = view, eng
        self.n, self.m = view.n_agents, view.n_enemies
        self.ally0, self.enemy0 = view.ally_slice.start, view.enemy_slice.start
        self.n_actions = view.n_actions
        self.obs_size, self.state_size = view.obs_size, view.state_size
        self.map_x = int(view.map_x)
        self.mirror = bool(view.mirror)
        self.hp_max, self.shield_max = _np(eng.hp_max), _np(eng.shield_max)
        self.is_medivac = np.ascontiguousarray(_np(view.is_medivac))
        self.ally_type = _np(view.ally_type).astype(np.int64)
        self.enemy_type = _np(view.enemy_type).astype(np.int64)
        self.max_cd = _np(view.max_cd)
        self.pathing = np.ascontiguousarray(_np(view.pathing), dtype=np.float32)
        self.height = np.ascontiguousarray(_np(view.terrain_height), dtype=np.float32)
        c: FeatureConfig = view.config
        self.config = np.array([c.obs_all_health, c.obs_own_health, c.obs_last_action, c.obs_pathing_grid,
                                c.obs_terrain_height, c.obs_timestep_number, c.state_last_action,
                                c.state_timestep_number], dtype=np.int64)
        f32 = np.float32
        self.cx, self.cy = f32(view.center[0]), f32(view.center[1])
        self.width, self.playable_height = f32(view.width), f32(view.height)

    def positions(self) -> tuple[np.ndarray, np.ndarray]:
        """(x, y), each (E, U), of every unit in this seat's frame."""
        pos = self.engine.arrays("pos")
        px = np.empty(pos.shape[:2], np.float32)
        py = np.empty(pos.shape[:2], np.float32)
        FK.mirror_positions(px, py, pos, self.map_x, self.mirror)
        return px, py

    def avail_actions(self, px, py) -> np.ndarray:
        out = np.empty((px.shape[0], self.n, self.n_actions), np.bool_)
        FK.avail_actions(out, px, py, self.engine.arrays("hp"), self.ally0, self.n, self.enemy0, self.m,
                         self.is_medivac, self.pathing)
        return out

    def observations(self, px, py, avail, last_action, timestep) -> np.ndarray:
        eng = self.engine
        out = np.empty((px.shape[0], self.n, self.obs_size), np.float32)
        FK.observations(out, avail, last_action, timestep, px, py, eng.arrays("hp"), eng.arrays("shield"),
                        self.hp_max, self.shield_max, self.ally0, self.n, self.enemy0, self.m, self.ally_type,
                        self.enemy_type, self.view.bits, self.view.shield_ally, self.view.shield_enemy, self.pathing,
                        self.height, self.config)
        return out

    def state(self, px, py, last_action, timestep) -> np.ndarray:
        eng = self.engine
        out = np.empty((px.shape[0], self.state_size), np.float32)
        FK.state(out, last_action, timestep, px, py, eng.arrays("hp"), eng.arrays("shield"), self.hp_max,
                 self.shield_max, eng.arrays("cooldown"), eng.arrays("energy"), self.max_cd, self.is_medivac,
                 self.ally0, self.n, self.enemy0, self.m, self.ally_type, self.enemy_type, self.view.bits,
                 self.view.shield_ally, self.view.shield_enemy, self.cx, self.cy, self.width, self.playable_height, self.config)
        return out


class FastRewards:
    """``RewardTracker.step`` and ``finish`` on numpy views of the tracker's own tensors (which
    ``RewardTracker.reset`` updates in place), so that both share one bookkeeping."""

    def __init__(self, tracker: RewardTracker):
        eng = tracker.engine
        self.tracker, self.engine = tracker, eng
        c: RewardConfig = tracker.config
        self.config = c
        self.prev = tracker.prev.numpy()
        self.counted_dead = tracker.counted_dead.numpy()
        self.counts_for_survival = _np(tracker.counts_for_survival)
        self.divisor = [tracker.max_reward(s) / c.reward_scale_rate for s in (0, 1)]

    def step(self) -> tuple[np.ndarray, np.ndarray]:
        """(battle rewards (2, E) float32, lost (E, 2) bool): ``RewardTracker.step``."""
        eng, c = self.engine, self.config
        E = eng.num_envs
        battle = np.empty((2, E), np.float32)
        lost = np.empty((E, 2), np.bool_)
        FK.rewards(battle, lost, self.prev, self.counted_dead, eng.arrays("hp"), eng.arrays("shield"), eng.n_side[0],
                   self.counts_for_survival, float(c.reward_death_value), float(c.reward_negative_scale),
                   bool(c.reward_only_positive), bool(c.reward_sparse))
        return battle, lost

    def finish(self, side: int, battle: np.ndarray, won: np.ndarray, lost: np.ndarray) -> np.ndarray:
        c = self.config
        out = np.empty(battle.shape[0], np.float32)
        FK.finish(out, battle, won, lost, float(c.reward_win), float(c.reward_defeat), float(self.divisor[side]),
                  bool(c.reward_sparse), bool(c.reward_scale))
        return out
