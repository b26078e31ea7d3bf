"""SMACv2's observation flags and layouts (docs/design/smacv2.md).

``V2Flags`` holds SMACv2's observation flags; ``V2Layout`` the sizes of each block (SMACv2's
``get_obs_*_size`` / ``get_state_size`` formulas) and the feature names in SMACv2's order
(``build_obs_feature_names`` / ``build_state_feature_names``); ``V2_SHOOT_RANGE`` /
``V2_SIGHT_RANGE`` its unit ranges.  The rows themselves come from the compiled rules
(``feature_rules.avail_actions_v2``, ``observed_v2``, ``observations_v2``, ``state_v2``, stepped by
``smacv2_step.py``), which keep SMACv2's per-episode bookkeeping: the agents' cone directions and
which agents observe which enemy (``obs_enemies``, ``enemy_tags``: the first agent to see an enemy
"tags" it, every other agent then observes it with probability ``prob_obs_enemy``; a tag ends when
the tagger or the enemy dies).

One difference from SMACv2's code, on purpose: SMACv2 resets the *whole* enemy block of an agent's
observation whenever it meets an enemy that agent does not observe (``enemy_feats = np.zeros``
inside the enemy loop, so the features of the enemies before it are lost too); here only that
enemy's features stay 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .smacv2_scenarios import GenMap

# SMACv2's unit_shoot_range / unit_sight_range tables (use_unit_ranges=True)
V2_SHOOT_RANGE = {"stalker": 6.0, "zealot": 0.1, "colossus": 7.0, "zergling": 0.1, "baneling": 0.25,
                  "hydralisk": 5.0, "marine": 5.0, "marauder": 6.0, "medivac": 4.0}
V2_SIGHT_RANGE = {"stalker": 10.0, "zealot": 9.0, "colossus": 10.0, "zergling": 8.0, "baneling": 8.0,
                  "hydralisk": 9.0, "marine": 9.0, "marauder": 10.0, "medivac": 11.0}


@dataclass(frozen=True)
class V2Flags:
    """SMACv2's observation/state flags (its ``StarCraft2Env`` arguments and defaults)."""

    obs_all_health: bool = True
    obs_own_health: bool = True
    obs_last_action: bool = False
    obs_pathing_grid: bool = False
    obs_terrain_height: bool = False
    obs_timestep_number: bool = False
    obs_own_pos: bool = False
    obs_starcraft: bool = True
    conic_fov: bool = False
    num_fov_actions: int = 12
    state_last_action: bool = True
    state_timestep_number: bool = False
    use_unit_ranges: bool = False
    min_attack_range: float = 2.0
    fully_observable: bool = False
    prob_obs_enemy: float = 1.0
    action_mask: bool = True
    observe_types: bool = True

    def config_array(self) -> np.ndarray:
        """The flags ``feature_rules`` reads (its ``OBS_*``/``STATE_*`` order)."""
        own_health = self.obs_own_health or self.obs_all_health
        return np.array([self.obs_all_health, own_health, self.obs_last_action, self.obs_pathing_grid,
                         self.obs_terrain_height, self.obs_timestep_number, self.state_last_action,
                         self.state_timestep_number], dtype=np.int64)


@dataclass(frozen=True)
class V2Layout:
    """Sizes and feature names of SMACv2's vectors for a map, team sizes and flags."""

    gen: GenMap
    n_agents: int
    n_enemies: int
    flags: V2Flags

    @property
    def bits(self) -> int:
        return self.gen.unit_type_bits

    @property
    def shield(self) -> int:
        return int(self.gen.race == "P")

    @property
    def n_fov(self) -> int:
        return self.flags.num_fov_actions if self.flags.conic_fov else 0

    @property
    def n_actions_no_attack(self) -> int:
        return 4 + self.n_fov + 2

    @property
    def n_actions(self) -> int:
        heal = self.gen.map_type == "terran_gen" and self.n_agents > self.n_enemies
        return self.n_actions_no_attack + (self.n_agents if heal else self.n_enemies)

    @property
    def move_feats_size(self) -> int:
        f = self.flags
        return 4 + 8 * f.obs_pathing_grid + 9 * f.obs_terrain_height

    @property
    def enemy_feats_size(self) -> int:
        return 4 + self.bits + (1 + self.shield) * self.flags.obs_all_health

    @property
    def ally_feats_size(self) -> int:
        f = self.flags
        return 4 + (1 + self.shield) * f.obs_all_health + self.n_actions * f.obs_last_action + self.bits

    @property
    def own_feats_size(self) -> int:
        f = self.flags
        own_health = f.obs_own_health or f.obs_all_health
        return self.bits + (1 + self.shield) * own_health + 2 * f.conic_fov + 2 * f.obs_own_pos

    @property
    def obs_size(self) -> int:
        f = self.flags
        if not f.obs_starcraft:
            return int(f.obs_timestep_number)
        return (int(f.obs_timestep_number) + self.move_feats_size + self.n_enemies * self.enemy_feats_size
                + (self.n_agents - 1) * self.ally_feats_size + self.own_feats_size)

    @property
    def ally_state_size(self) -> int:
        return 4 + self.shield + 2 * self.flags.conic_fov + self.bits

    @property
    def enemy_state_size(self) -> int:
        return 3 + self.shield + self.bits

    def state_size(self, obs_instead_of_state: bool = False) -> int:
        if obs_instead_of_state:
            return self.obs_size * self.n_agents
        f = self.flags
        return (self.n_agents * self.ally_state_size + self.n_enemies * self.enemy_state_size
                + self.n_agents * self.n_actions * f.state_last_action + int(f.state_timestep_number))

    @property
    def special_state_size(self) -> int:
        """Size of the agent-specific state (``V2Seat.special_state``)."""
        sa, se, b, A = self.shield, self.shield, self.bits, self.n_actions
        fov = 2 * self.flags.conic_fov
        ally = 1 + 3 + 1 + 1 + sa + 2 + b + A
        enemy = 1 + 3 + 1 + 1 + se + b + 2
        own = 1 + 3 + 1 + sa + 2 + b + A + fov
        return (self.n_agents - 1) * ally + self.n_enemies * enemy + own + self.n_agents

    def obs_feature_names(self) -> list[str]:
        """SMACv2's ``build_obs_feature_names`` (allies numbered from agent 0's view: 1 .. n-1)."""
        f = self.flags
        names: list[str] = []
        if f.obs_starcraft:
            names += ["move_action_north", "move_action_south", "move_action_east", "move_action_west"]
            names += [f"pathing_grid_{k}" for k in range(8)] if f.obs_pathing_grid else []
            names += [f"terrain_height_{k}" for k in range(9)] if f.obs_terrain_height else []
            for e in range(self.n_enemies):
                names += [f"enemy_shootable_{e}", f"enemy_distance_{e}", f"enemy_relative_x_{e}",
                          f"enemy_relative_y_{e}"]
                names += [f"enemy_health_{e}"] if f.obs_all_health else []
                names += [f"enemy_shield_{e}"] if f.obs_all_health and self.shield else []
                names += [f"enemy_unit_type_{e}_bit_{b}" for b in range(self.bits)]
            for a in range(1, self.n_agents):
                names += [f"ally_visible_{a}", f"ally_distance_{a}", f"ally_relative_x_{a}", f"ally_relative_y_{a}"]
                names += [f"ally_health_{a}"] if f.obs_all_health else []
                names += [f"ally_shield_{a}"] if f.obs_all_health and self.shield else []
                names += [f"ally_unit_type_{a}_bit_{b}" for b in range(self.bits)]
                names += [f"ally_last_action_{a}_action_{k}" for k in range(self.n_actions)] if f.obs_last_action else []
            if f.obs_own_health or f.obs_all_health:
                names += ["own_health"] + (["own_shield"] if self.shield else [])
            names += ["own_pos_x", "own_pos_y"] if f.obs_own_pos else []
            names += ["own_fov_x", "own_fov_y"] if f.conic_fov else []
            names += [f"own_unit_type_bit_{b}" for b in range(self.bits)]
        if f.obs_timestep_number:
            names += ["timestep"]
        return names

    def state_feature_names(self) -> list[str]:
        """SMACv2's ``build_state_feature_names``."""
        f = self.flags
        names: list[str] = []
        for a in range(self.n_agents):
            names += [f"ally_health_{a}", f"ally_cooldown_{a}", f"ally_relative_x_{a}", f"ally_relative_y_{a}"]
            names += [f"ally_shield_{a}"] if self.shield else []
            names += [f"ally_fov_x_{a}", f"ally_fov_y_{a}"] if f.conic_fov else []
            names += [f"ally_unit_type_{a}_bit_{b}" for b in range(self.bits)]
        for e in range(self.n_enemies):
            names += [f"enemy_health_{e}", f"enemy_relative_x_{e}", f"enemy_relative_y_{e}"]
            names += [f"enemy_shield_{e}"] if self.shield else []
            names += [f"enemy_unit_type_{e}_bit_{b}" for b in range(self.bits)]
        if f.state_last_action:
            names += [f"ally_last_action_{a}_action_{k}" for a in range(self.n_agents) for k in range(self.n_actions)]
        if f.state_timestep_number:
            names += ["timestep"]
        return names
