"""One seat's features and the rewards, computed by the compiled rules (``feature_rules.py`` through
the engine's build, ``build.py``) on the engine's arrays: numpy arrays in and out on the CPU, numba
device arrays on a GPU (``BattleEngine.empty`` / ``to_device`` / ``array_of``)."""

from __future__ import annotations

import numpy as np

from .features import FeatureConfig, SideView
from .rewards import RewardConfig, RewardTracker


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy()


class FastSideView:
    """A ``SideView``'s available actions, observations and state (sizes and layouts:
    ``features.py``), as arrays on the engine's device."""

    def __init__(self, view: SideView):
        eng = view.engine
        self.view, self.engine = view, eng
        self.n, self.m = view.n_agents, view.n_enemies
        self.ally0, self.enemy0 = view.ally_slice.start, view.enemy_slice.start
        self.n_actions = view.n_actions
        self.obs_size, self.state_size = view.obs_size, view.state_size
        self.map_x = int(view.map_x)
        self.mirror = bool(view.mirror)
        c: FeatureConfig = view.config
        config = np.array([c.obs_all_health, c.obs_own_health, c.obs_last_action, c.obs_pathing_grid,
                           c.obs_terrain_height, c.obs_timestep_number, c.state_last_action,
                           c.state_timestep_number], dtype=np.int64)
        tables = {
            "hp_max": _np(eng.hp_max), "shield_max": _np(eng.shield_max),
            "is_medivac": np.ascontiguousarray(_np(view.is_medivac)),
            "ally_type": _np(view.ally_type).astype(np.int64), "enemy_type": _np(view.enemy_type).astype(np.int64),
            "max_cd": _np(view.max_cd),
            "pathing": np.ascontiguousarray(_np(view.pathing), dtype=np.float32),
            "height": np.ascontiguousarray(_np(view.terrain_height), dtype=np.float32),
            "config": config,
        }
        for name, table in tables.items():
            setattr(self, name, eng.to_device(table))
        f32 = np.float32
        self.cx, self.cy = f32(view.center[0]), f32(view.center[1])
        self.width, self.playable_height = f32(view.width), f32(view.height)
        i64 = np.int64
        self.seat = (i64(self.ally0), i64(self.n), i64(self.enemy0), i64(self.m))
        self.bits = (i64(view.bits), i64(view.shield_ally), i64(view.shield_enemy))

    def positions(self):
        """(x, y), each (E, U), of every unit in this seat's frame."""
        eng = self.engine
        pos = eng.arrays("pos")
        px = eng.empty(pos.shape[:2], np.float32)
        py = eng.empty(pos.shape[:2], np.float32)
        eng.build.positions(px, py, pos, np.int64(self.map_x), self.mirror)
        return px, py

    def avail_actions(self, px, py):
        eng = self.engine
        out = eng.empty((px.shape[0], self.n, self.n_actions), np.bool_)
        eng.build.avail(out, px, py, eng.arrays("hp"), *self.seat, self.is_medivac, self.pathing)
        return out

    def observations(self, px, py, avail, last_action, timestep):
        eng = self.engine
        out = eng.empty((px.shape[0], self.n, self.obs_size), np.float32)
        eng.build.observations(out, avail, last_action, timestep, px, py, eng.arrays("hp"), eng.arrays("shield"),
                               self.hp_max, self.shield_max, eng.feature_scratch, *self.seat, self.ally_type,
                               self.enemy_type, *self.bits, self.pathing, self.height, self.config)
        return out

    def state(self, px, py, last_action, timestep):
        eng = self.engine
        out = eng.empty((px.shape[0], self.state_size), np.float32)
        eng.build.state(out, last_action, timestep, px, py, eng.arrays("hp"), eng.arrays("shield"), self.hp_max,
                        self.shield_max, eng.arrays("cooldown"), eng.arrays("energy"), self.max_cd, self.is_medivac,
                        *self.seat, self.ally_type, self.enemy_type, *self.bits, self.cx, self.cy, self.width,
                        self.playable_height, self.config)
        return out


class FastRewards:
    """SMAC's rewards and outcomes (``rewards.py``) on the tracker's own tensors (which
    ``RewardTracker.reset`` updates in place), so that both share one bookkeeping."""

    def __init__(self, tracker: RewardTracker):
        eng = tracker.engine
        self.tracker, self.engine = tracker, eng
        c: RewardConfig = tracker.config
        self.config = c
        self.prev = eng.array_of(tracker.prev)
        self.counted_dead = eng.array_of(tracker.counted_dead)
        self.counts_for_survival = eng.to_device(_np(tracker.counts_for_survival))
        f32 = np.float32
        self.divisor = [f32(tracker.max_reward(s) / c.reward_scale_rate) for s in (0, 1)]
        self.reward_args = (f32(c.reward_death_value), f32(c.reward_negative_scale),
                            f32(c.reward_death_value * c.reward_negative_scale), bool(c.reward_only_positive),
                            bool(c.reward_sparse))

    def step(self):
        """(battle rewards (2, E) float32, lost (E, 2) bool): SMAC's ``reward_battle`` per side (no win
        bonus, no scaling) and whether each side has lost."""
        eng = self.engine
        E = eng.num_envs
        battle = eng.empty((2, E), np.float32)
        lost = eng.empty((E, 2), np.bool_)
        eng.build.rewards(battle, lost, self.prev, self.counted_dead, eng.arrays("hp"), eng.arrays("shield"),
                          np.int64(eng.n_side[0]), self.counts_for_survival, *self.reward_args)
        return battle, lost

    def finish(self, side: int, battle, won, lost):
        """The step reward of ``side``: battle reward + win/defeat terms, then scaling (``rewards.py``)."""
        c, eng = self.config, self.engine
        out = eng.empty(battle.shape[0], np.float32)
        f32 = np.float32
        eng.build.finish(out, battle, won, lost, f32(c.reward_win), f32(c.reward_defeat), self.divisor[side],
                         bool(c.reward_sparse), bool(c.reward_scale))
        return out

    def outcome(self, lost, steps, limit: int):
        """(won (2, E), draw, timeout, done, winner, dead (2, E)) of every game (``feature_rules.outcome``)."""
        eng = self.engine
        E = eng.num_envs
        out = (eng.empty((2, E), np.bool_), eng.empty(E, np.bool_), eng.empty(E, np.bool_), eng.empty(E, np.bool_),
               eng.empty(E, np.int64), eng.empty((2, E), np.int64))
        eng.build.outcome(lost, steps, np.int64(limit), eng.arrays("hp"), np.int64(eng.n_side[0]), *out)
        return out
