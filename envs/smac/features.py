"""SMAC's observations, global state and available actions (docs/design/smac.md §2-4), batched, from
one side's point of view.

A :class:`SideView` fixes the perspective: its units are the "allies" (agent order), the other
side's are the "enemies"; with ``mirror`` every position is seen as ``x' = map_x - x`` (so relative
x is negated, east and west swap, and the pathing grid is read mirrored).  It holds the sizes, the
frame, the grids and the unit-type ids; the values themselves (available actions, observations,
state) are computed by the compiled rules (``feature_rules.py``, run by ``fast_features.FastSideView``).
The seed's per-agent "special state" is computed here, on tensors.

Sizes (SMAC's ``get_obs_size`` / ``get_state_size``; ``bits`` = unit_type_bits, ``sa``/``se`` the
shield bits of the allies/enemies = 1 for Protoss, ``A`` = n_actions = 6 + n_enemies)::

    move  = 4 (+8 obs_pathing_grid) (+9 obs_terrain_height)
    nf_en = 4 + bits (+1 + se if obs_all_health)
    nf_al = 4 + bits (+1 + sa if obs_all_health) (+A if obs_last_action)
    own   = bits (+1 + sa if obs_own_health) (+1 if obs_timestep_number)
    obs   = move + n_enemies * nf_en + (n_agents - 1) * nf_al + own
    state = n_agents * (4 + sa + bits) + n_enemies * (3 + se + bits)
            (+ n_agents * A if state_last_action) (+1 if state_timestep_number)

e.g. 3m: obs 4 + 3*5 + 2*5 + 1 = 30, state 3*4 + 3*3 + 3*9 = 48, A = 9.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .engine import BattleEngine
from .maps import MapSpec
from .units import SIGHT_RANGE

N_ACTIONS_NO_ATTACK = 6  # feature_rules.N_NO_ATTACK
N_ACTIONS_MOVE = 4
N_OBS_PATHING = 8
N_OBS_HEIGHT = 9


@dataclass(frozen=True)
class FeatureConfig:
    """SMAC's observation/state flags, with SMAC's defaults."""

    obs_all_health: bool = True
    obs_own_health: bool = True
    obs_last_action: bool = False
    obs_pathing_grid: bool = False
    obs_terrain_height: bool = False
    obs_timestep_number: bool = False
    state_last_action: bool = True
    state_timestep_number: bool = False


def distance(dx: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """``rules.distance`` on tensors: float64 square root rounded once to float32."""
    x, y = dx.double(), dy.double()
    return torch.sqrt(x * x + y * y).float()


class SideView:
    """The perspective of ``side`` on a :class:`BattleEngine` (module docstring)."""

    def __init__(self, engine: BattleEngine, side: int, mirror: bool = False,
                 config: FeatureConfig = FeatureConfig()):
        spec: MapSpec = engine.spec
        self.engine, self.side, self.mirror, self.config = engine, side, mirror, config
        dev = engine.device
        self.ally_slice, self.enemy_slice = engine.side_slices[side], engine.side_slices[1 - side]
        self.n_agents, self.n_enemies = engine.n_side[side], engine.n_side[1 - side]
        self.n_actions = N_ACTIONS_NO_ATTACK + self.n_enemies
        self.bits = spec.unit_type_bits
        races = spec.races
        self.shield_ally = int(races[side] == "P")
        self.shield_enemy = int(races[1 - side] == "P")
        self.ally_type = torch.tensor(spec.type_ids(side, as_ally=True), device=dev)
        self.enemy_type = torch.tensor(spec.type_ids(1 - side, as_ally=False), device=dev)
        self.map_x, self.map_y = spec.map_x, spec.map_y
        self.center = (spec.map_x / 2, spec.map_y / 2)
        self.width, self.height = spec.playable_width, spec.playable_height
        game_grid = getattr(engine, "game_pathing_grid", None)  # the real game's own grid (sc2_engine)
        grid = torch.tensor(spec.pathing_grid() if game_grid is None else game_grid, dtype=torch.float32, device=dev)
        height = torch.tensor(spec.terrain_height(), dtype=torch.float32, device=dev)
        self.pathing = grid.flip(0) if mirror else grid
        self.terrain_height = height.flip(0) if mirror else height
        names = spec.units(side)
        # Medivacs heal allies instead of attacking (SMAC: map_type "MMM" and unit is a Medivac).
        self.is_medivac = torch.tensor([spec.map_type == "MMM" and u == "medivac" for u in names], device=dev)
        self.ally_is_medivac = self.is_medivac
        n = self.n_agents
        self.others = torch.tensor([[j for j in range(n) if j != i] for i in range(n)], device=dev,
                                   dtype=torch.long).reshape(n, n - 1)
        self.max_cd = engine.max_cooldown[self.ally_slice]

    # ---------------------------------------------------------------- sizes
    @property
    def move_feats_size(self) -> int:
        c = self.config
        return N_ACTIONS_MOVE + N_OBS_PATHING * c.obs_pathing_grid + N_OBS_HEIGHT * c.obs_terrain_height

    @property
    def enemy_feats_size(self) -> int:
        return 4 + self.bits + (1 + self.shield_enemy) * self.config.obs_all_health

    @property
    def ally_feats_size(self) -> int:
        c = self.config
        return 4 + self.bits + (1 + self.shield_ally) * c.obs_all_health + self.n_actions * c.obs_last_action

    @property
    def own_feats_size(self) -> int:
        c = self.config
        return self.bits + (1 + self.shield_ally) * c.obs_own_health + int(c.obs_timestep_number)

    @property
    def obs_size(self) -> int:
        return (self.move_feats_size + self.n_enemies * self.enemy_feats_size
                + (self.n_agents - 1) * self.ally_feats_size + self.own_feats_size)

    @property
    def state_size(self) -> int:
        c = self.config
        return (self.n_agents * (4 + self.shield_ally + self.bits) + self.n_enemies * (3 + self.shield_enemy + self.bits)
                + self.n_agents * self.n_actions * c.state_last_action + int(c.state_timestep_number))

    @property
    def special_state_size(self) -> int:
        sa, se, b, A = self.shield_ally, self.shield_enemy, self.bits, self.n_actions
        ally = 1 + 3 + 1 + 1 + sa + 2 + b + A
        enemy = 1 + 3 + 1 + 1 + se + b + 2
        own = 1 + 3 + 1 + sa + 2 + b + A
        return (self.n_agents - 1) * ally + self.n_enemies * enemy + own + self.n_agents

    # ----------------------------------------------------------- raw pieces
    def positions(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(allies (E, n, 2), enemies (E, m, 2)) in this side's frame."""
        p = self.engine.pos
        if self.mirror:
            p = torch.stack([self.map_x - p[..., 0], p[..., 1]], -1)
        return p[:, self.ally_slice], p[:, self.enemy_slice]

    def _health(self, sl: slice):
        eng = self.engine
        hp = eng.hp[:, sl] / eng.hp_max[sl]
        smax = eng.shield_max[sl]
        sh = torch.where(smax > 0, eng.shield[:, sl] / smax.clamp(min=1e-6), 0.0)
        return hp, sh

    def _onehot(self, types: torch.Tensor, shape) -> torch.Tensor:
        """One-hot unit-type bits of ``types``, broadcast to ``shape`` + (bits,)."""
        return torch.nn.functional.one_hot(types, self.bits).float().expand(*shape, self.bits)

    # ---------------------------------------------------------------- state
    def _cooldown_feature(self) -> torch.Tensor:
        """weapon cooldown / max_cooldown, Medivac: energy / max_cooldown (spec §4)."""
        eng = self.engine
        cd = eng.cooldown[:, self.ally_slice] / self.max_cd
        en = eng.energy[:, self.ally_slice] / self.max_cd
        return torch.where(self.is_medivac[None, :], en, cd)

    def _centre_relative(self, p: torch.Tensor) -> torch.Tensor:
        return torch.stack([(p[..., 0] - self.center[0]) / self.width, (p[..., 1] - self.center[1]) / self.height], -1)

    def special_state(self, avail: torch.Tensor, last_action: torch.Tensor) -> torch.Tensor:
        """float (E, n_agents, special_state_size): the seed's per-agent global state.

        For agent i: every other ally [visible, dist/9, dx/9, dy/9, cooldown, hp, shield, centre-x,
        centre-y, type bits, last action]; every enemy [attack available, dist/9, dx/9, dy/9,
        visible, hp, shield, type bits, centre-x, centre-y]; itself [1, 0, 0, 0, hp, shield,
        centre-x, centre-y, type bits, last action]; its one-hot id.  Dead units' rows are zero,
        and a dead agent's vector is zero except its id."""
        eng = self.engine
        E, n, m = eng.num_envs, self.n_agents, self.n_enemies
        pa, pe = self.positions()
        alive_a = eng.alive[:, self.ally_slice]
        alive_e = eng.alive[:, self.enemy_slice]
        hp_a, sh_a = self._health(self.ally_slice)
        hp_e, sh_e = self._health(self.enemy_slice)
        cd = self._cooldown_feature()
        ca, ce = self._centre_relative(pa), self._centre_relative(pe)
        la = last_action.float()
        o = self.others
        rel = pa[:, o] - pa[:, :, None, :]
        d = distance(rel[..., 0], rel[..., 1])
        cols = [(d < SIGHT_RANGE).float()[..., None], (d / SIGHT_RANGE)[..., None], rel / SIGHT_RANGE,
                cd[:, o][..., None], hp_a[:, o][..., None]]
        if self.shield_ally:
            cols.append(sh_a[:, o][..., None])
        cols.append(ca[:, o])
        if self.bits:
            cols.append(self._onehot(self.ally_type[o], (E, n, n - 1)))
        cols.append(la[:, o])
        allies = torch.cat(cols, -1) * alive_a[:, o][..., None]
        rel_e = pe[:, None] - pa[:, :, None]
        de = distance(rel_e[..., 0], rel_e[..., 1])
        cols = [avail[..., N_ACTIONS_NO_ATTACK:].float()[..., None], (de / SIGHT_RANGE)[..., None], rel_e / SIGHT_RANGE,
                (de < SIGHT_RANGE).float()[..., None], hp_e[:, None, :, None].expand(E, n, m, 1)]
        if self.shield_enemy:
            cols.append(sh_e[:, None, :, None].expand(E, n, m, 1))
        if self.bits:
            cols.append(self._onehot(self.enemy_type, (E, n, m)))
        cols.append(ce[:, None].expand(E, n, m, 2))
        enemies = torch.cat(cols, -1) * alive_e[:, None, :, None]
        own = [torch.ones(E, n, 1, device=eng.device), torch.zeros(E, n, 3, device=eng.device), hp_a[..., None]]
        if self.shield_ally:
            own.append(sh_a[..., None])
        own.append(ca)
        if self.bits:
            own.append(self._onehot(self.ally_type, (E, n)))
        own.append(la)
        own = torch.cat(own, -1)
        body = torch.cat([allies.reshape(E, n, -1), enemies.reshape(E, n, -1), own], -1) * alive_a[..., None]
        ids = torch.eye(n, device=eng.device).expand(E, n, n)
        return torch.cat([body, ids], -1)
