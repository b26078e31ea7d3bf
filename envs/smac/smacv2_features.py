"""One seat's SMACv2 masks, observations and state on a one-game engine (docs/design/smacv2.md).

``V2Flags`` holds SMACv2's observation flags; ``V2Layout`` the sizes of each block (SMACv2's
``get_obs_*_size`` / ``get_state_size`` formulas) and the feature names in SMACv2's order
(``build_obs_feature_names`` / ``build_state_feature_names``).  ``V2Seat`` computes a seat's rows
with the compiled rules (``feature_rules.avail_actions_v2``, ``visibility_v2``,
``observations_v2``, ``state_v2``) and keeps SMACv2's per-episode bookkeeping: the agents' cone
directions and which agents observe which enemy (``obs_enemies``, ``enemy_tags``: the first agent
to see an enemy "tags" it, every other agent then observes it with probability ``prob_obs_enemy``;
a tag ends when the tagger or the enemy dies).

One difference from SMACv2's code, on purpose: SMACv2 resets the *whole* enemy block of an agent's
observation whenever it meets an enemy that agent does not observe (``enemy_feats = np.zeros``
inside the enemy loop, so the features of the enemies before it are lost too); here only that
enemy's features stay 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import build
from .smacv2_scenarios import GenMap
from .units import SHOOT_RANGE, SIGHT_RANGE, UNIT_STATS

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


class V2Seat:
    """One seat of a one-game engine playing a SMACv2 draw (module docstring).  ``mirror``: the seat
    sees x' = map_x - x (its cone directions live in that frame)."""

    def __init__(self, engine, side: int, layout: V2Layout, rng: np.random.Generator, mirror: bool = False,
                 enemy_mask: np.ndarray | None = None):
        spec, f = engine.spec, layout.flags
        self.engine, self.side, self.layout, self.rng, self.mirror = engine, side, layout, rng, mirror
        self.ns = build.cpu()
        n, m = engine.n_side[side], engine.n_side[1 - side]
        if (n, m) != (layout.n_agents, layout.n_enemies):
            raise ValueError(f"the draw has {n} vs {m} units, the layout {layout.n_agents} vs {layout.n_enemies}")
        self.n, self.m = n, m
        self.ally0 = 0 if side == 0 else engine.n_side[0]
        self.enemy0 = engine.n_side[0] if side == 0 else 0
        names = spec.units(side)
        self.names = names
        terran = layout.gen.map_type == "terran_gen"
        self.is_medivac = np.array([terran and u == "medivac" for u in names], dtype=np.bool_)
        self.ally_type = np.array(spec.type_ids(side, True), dtype=np.int64)
        self.enemy_type = np.array(spec.type_ids(1 - side, False), dtype=np.int64)
        self.max_cd = np.array([UNIT_STATS[u].max_cooldown for u in names], dtype=np.float32)
        self.shoot = np.array([self.ns.unit_range(V2_SHOOT_RANGE[u], SHOOT_RANGE, f.use_unit_ranges,
                                                  float(f.min_attack_range)) for u in names], dtype=np.float32)
        self.sight = np.array([self.ns.unit_range(V2_SIGHT_RANGE[u], SIGHT_RANGE, f.use_unit_ranges, 0.0)
                               for u in names], dtype=np.float32)
        grid = spec.pathing_grid().astype(np.float32)
        height = spec.terrain_height().astype(np.float32)
        self.pathing = np.ascontiguousarray(grid[::-1] if mirror else grid)
        self.height = np.ascontiguousarray(height[::-1] if mirror else height)
        self.half_angle = float(np.pi / layout.n_fov) if f.conic_fov else 0.0
        k = max(layout.n_fov, 1)
        self.canonical_fov = np.array([(np.cos(2 * np.pi * i / k), np.sin(2 * np.pi * i / k)) for i in range(k)])
        self.config = f.config_array()
        self.hidden = np.zeros((n, m), np.bool_) if enemy_mask is None else np.asarray(enemy_mask, dtype=np.bool_)
        if self.hidden.shape != (n, m):
            raise ValueError(f"enemy_mask must have shape {(n, m)}, got {self.hidden.shape}")
        self.hp_max = engine.hp_max.numpy()
        self.shield_max = engine.shield_max.numpy()
        self.reset_episode()

    def reset_episode(self) -> None:
        n, m = self.n, self.m
        self.fov = np.zeros((n, 2), np.float32)
        self.fov[:, 0] = 1.0
        self.obs_enemies = np.zeros((m, n), np.int64)
        self.enemy_tags = np.full(m, -1, np.int64)
        self.last_action = np.zeros((n, self.layout.n_actions), np.float32)
        self._avail = None

    # ------------------------------------------------------------ positions
    def _xy(self):
        pos = self.engine.arrays("pos")[0]
        px = np.ascontiguousarray(pos[:, 0], dtype=np.float32)
        if self.mirror:
            px = np.float32(self.engine.spec.map_x) - px
        return px, np.ascontiguousarray(pos[:, 1], dtype=np.float32)

    def _hp(self):
        return self.engine.arrays("hp")[0]

    # ---------------------------------------------------------------- masks
    def invalidate(self) -> None:
        """Forget the cached masks: call after the engine's state or a cone direction changed."""
        self._avail = None

    def avail(self) -> tuple[np.ndarray, np.ndarray]:
        """(available, true available) bool (n, n_actions), cached until ``invalidate``."""
        if self._avail is not None:
            return self._avail
        L, f = self.layout, self.layout.flags
        out = np.zeros((self.n, L.n_actions), np.bool_)
        true_out = np.zeros_like(out)
        px, py = self._xy()
        self.ns.avail_actions_v2(out, true_out, px, py, self._hp(), self.ally0, self.n, self.enemy0, self.m,
                                 self.is_medivac, self.pathing, self.shoot, self.fov, self.half_angle,
                                 bool(f.conic_fov), L.n_fov, bool(f.action_mask))
        self._avail = (out, true_out)
        return out, true_out

    # -------------------------------------------------------- observations
    def _seen(self, px, py, hp) -> np.ndarray:
        """(n, m) bool: enemy in sight and observed, after SMACv2's tagging (module docstring)."""
        f = self.layout.flags
        n, m = self.n, self.m
        vis = np.zeros((n, m), np.bool_)
        self.ns.visibility_v2(vis, px, py, self.ally0, n, self.enemy0, m, self.sight, self.fov, self.half_angle,
                              bool(f.conic_fov))
        if f.fully_observable:
            return np.ones((n, m), np.bool_)
        order = self.rng.permutation(n)  # SMACv2's get_obs visits the agents in a random order
        draws = self.rng.random((m, n))
        self.ns.observe_enemies_v2(vis, hp, self.ally0, n, order, draws, f.prob_obs_enemy, self.obs_enemies,
                                   self.enemy_tags)
        return vis

    def observations(self, timestep: float) -> np.ndarray:
        L, f = self.layout, self.layout.flags
        out = np.zeros((self.n, L.obs_size), np.float32)
        if not f.obs_starcraft:
            if f.obs_timestep_number:
                out[:, 0] = timestep
            return out
        px, py = self._xy()
        hp = self._hp()
        shield = self.engine.arrays("shield")[0]
        U = hp.shape[0]
        hp_frac, shield_frac = np.zeros(U, np.float32), np.zeros(U, np.float32)
        _, true_avail = self.avail()
        seen = self._seen(px, py, hp)
        self.seen = seen  # the observed set of this observation (the GPU build's check replays it)
        self.ns.observations_v2(out, true_avail, self.last_action, np.float32(timestep), px, py, hp, shield,
                                self.hp_max, self.shield_max, hp_frac, shield_frac, self.ally0, self.n, self.enemy0, self.m, self.ally_type, self.enemy_type,
                                L.bits, int(f.observe_types), L.shield, L.shield, self.pathing, self.height,
                                self.sight, self.fov, self.half_angle, int(f.conic_fov), L.n_fov, seen, self.hidden,
                                int(f.obs_own_pos), float(self.engine.spec.map_x), float(self.engine.spec.map_y),
                                bool(f.fully_observable), self.config)
        return out

    def state(self, timestep: float) -> np.ndarray:
        L, f = self.layout, self.layout.flags
        e, spec = self.engine, self.engine.spec
        row = np.zeros(L.state_size(), np.float32)
        px, py = self._xy()
        self.ns.state_v2(row, self.last_action, np.float32(timestep), px, py, self._hp(), e.arrays("shield")[0],
                         self.hp_max, self.shield_max, e.arrays("cooldown")[0], e.arrays("energy")[0], self.max_cd,
                         self.is_medivac, self.ally0, self.n, self.enemy0, self.m, self.ally_type, self.enemy_type,
                         L.bits, L.shield, L.shield, np.float32(spec.map_x / 2), np.float32(spec.map_y / 2),
                         np.float32(spec.playable_width), np.float32(spec.playable_height), self.fov,
                         int(f.conic_fov), self.config)
        return row

    def special_state(self) -> np.ndarray:
        """float (n, special_state_size): MAPPO's agent-specific state ("AS") of every agent.

        SMAC's construction (``features.SideView.special_state``, MAPPO's ``get_state_agent``) on this
        draw's units, with SMACv2's per-unit sight range ``r_i`` (``use_unit_ranges``) and SMACv2's
        state normalisation (centre-relative positions over the playable width/height).  For agent i:
        every other ally [d < r_i, d/r_i, dx/r_i, dy/r_i, cooldown (Medivac: energy) / max cooldown,
        hp, shield, centre-x, centre-y, type bits, last action]; every enemy [attack available,
        d/r_i, dx/r_i, dy/r_i, d < r_i, hp, shield, type bits, centre-x, centre-y] (health, shield
        and type zero where EPO's ``enemy_mask`` hides the enemy, as marlbenchmark/on-policy's SMACv2
        ``get_state_agent``); itself [1, 0, 0, 0, hp, shield, centre-x, centre-y, type bits, last
        action, cone direction (``conic_fov`` only)]; its one-hot id.  Dead units' rows are zero, and
        a dead agent's vector is zero except its id."""
        L, e, spec = self.layout, self.engine, self.engine.spec
        n, m, b = self.n, self.m, L.bits
        px, py = self._xy()
        hp = self._hp()
        shield = e.arrays("shield")[0]
        hp_frac = hp / self.hp_max
        sh_frac = np.where(self.shield_max > 0, shield / np.maximum(self.shield_max, 1e-6), 0.0)
        alive = hp > 0
        cx = (px - spec.map_x / 2) / spec.playable_width
        cy = (py - spec.map_y / 2) / spec.playable_height
        a_sl, e_sl = slice(self.ally0, self.ally0 + n), slice(self.enemy0, self.enemy0 + m)
        cd = np.where(self.is_medivac, e.arrays("energy")[0][a_sl], e.arrays("cooldown")[0][a_sl]) / self.max_cd
        ally_bits = np.eye(b, dtype=np.float32)[self.ally_type] if b else np.zeros((n, 0), np.float32)
        enemy_bits = np.eye(b, dtype=np.float32)[self.enemy_type] if b else np.zeros((m, 0), np.float32)
        avail, _ = self.avail()
        sa = [sh_frac[a_sl, None]] if L.shield else []
        se = [sh_frac[e_sl, None]] if L.shield else []
        ally_rows = np.concatenate([hp_frac[a_sl, None], *sa, cx[a_sl, None], cy[a_sl, None], ally_bits,
                                    self.last_action], 1)  # the columns after the relative ones
        alive_a, alive_e = alive[a_sl], alive[e_sl]
        r = self.sight[:, None]
        others = np.array([[j for j in range(n) if j != i] for i in range(n)], np.int64).reshape(n, n - 1)
        ax, ay = px[a_sl], py[a_sl]
        dx, dy = ax[others] - ax[:, None], ay[others] - ay[:, None]
        d = np.hypot(dx, dy)
        allies = np.concatenate([(d < r)[..., None], (d / r)[..., None], (dx / r)[..., None], (dy / r)[..., None],
                                 cd[others][..., None], ally_rows[others]], -1) * alive_a[others][..., None]
        dx, dy = px[e_sl][None, :] - ax[:, None], py[e_sl][None, :] - ay[:, None]
        d = np.hypot(dx, dy)
        show = (~self.hidden)[..., None]
        per_enemy = lambda x: np.broadcast_to(x[None], (n, *x.shape))  # noqa: E731
        enemies = np.concatenate([avail[:, L.n_actions_no_attack:L.n_actions_no_attack + m, None],
                                  (d / r)[..., None], (dx / r)[..., None], (dy / r)[..., None], (d < r)[..., None],
                                  per_enemy(hp_frac[e_sl, None]) * show, *(per_enemy(x) * show for x in se),
                                  per_enemy(enemy_bits) * show, per_enemy(cx[e_sl, None]), per_enemy(cy[e_sl, None])],
                                 -1) * alive_e[None, :, None]
        own = [np.ones((n, 1)), np.zeros((n, 3)), ally_rows] + ([self.fov] if L.flags.conic_fov else [])
        body = np.concatenate([allies.reshape(n, -1), enemies.reshape(n, -1), *own], 1) * alive_a[:, None]
        return np.concatenate([body, np.eye(n)], 1).astype(np.float32)

    # -------------------------------------------------------------- actions
    def engine_actions(self, actions: np.ndarray, true_avail: np.ndarray) -> np.ndarray:
        """SMACv2 actions (n,) -> the engine's (0 keep, 1 stop, 2-5 move, 6+t attack/heal t); a cone
        turn sets the direction and issues nothing, an attack out of range issues nothing (SMACv2's
        ``get_agent_action``); a mirrored seat's east/west are swapped to world directions."""
        L = self.layout
        self._avail = None  # the engine moves next, and a turn changes the cone
        out = np.zeros(self.n, np.int64)
        for i, a in enumerate(actions):
            a = int(a)
            if a in (4, 5) and self.mirror:
                out[i] = 9 - a
            elif a < 6:
                out[i] = a
            elif a < L.n_actions_no_attack:
                self.fov[i] = self.canonical_fov[a - 6]
            elif true_avail[i, a]:
                out[i] = 6 + a - L.n_actions_no_attack
        return out

    def record_deaths(self) -> None:
        """SMACv2's ``step`` bookkeeping: a dead tagger's tags and a dead enemy's observers are cleared."""
        hp = self._hp()
        for a in range(self.n):
            if not hp[self.ally0 + a] > 0:
                tagged = self.enemy_tags == a
                self.enemy_tags[tagged] = -1
                self.obs_enemies[tagged, :] = 0
                self.obs_enemies[:, a] = 0
        for e in range(self.m):
            if not hp[self.enemy0 + e] > 0:
                self.enemy_tags[e] = -1
                self.obs_enemies[e, :] = 0
