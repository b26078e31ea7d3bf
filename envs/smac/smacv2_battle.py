"""``SMACv2Battle``: batched SMACv2 games for the self-play suite (``--env smacv2:SCENARIO``), the
two-seat contract of ``SMACBattle`` (docs/design/smacv2.md).

Every game draws its own episode from the scenario's distribution at each (auto-)reset: seat 0 plays
SMACv2's "ally" team, seat 1 its "enemy" team (the ally team's types plus the extra draws when the
scenario has more enemies), at the drawn start layout; with ``mirror=True`` seat 1 sees the map
mirrored in x (``x' = map_x - x``, east/west swapped), as on SMAC's symmetric maps.  With
``two_player=False`` seat 1 is the scripted enemy (SMACv2's single-player setting).  Both seats see
SMACv2's observations, state and masks (``smacv2_features``) with the scenario's flags, and SMAC's
rewards with SMAC's default reward flags (``max_reward`` from each game's own draw).

Randomness per battle ``seed``: the draws, the observation bookkeeping and the engine (its cooldown
jitter) come from ``np.random.SeedSequence(seed)`` streams: the same seed, the same games.

All games run on one compiled engine (``smacv2_games.SMACv2Games``): a draw writes its game's unit
constants, positions and masks, and a step of every game is one compiled call.
"""

from __future__ import annotations

import numpy as np
import torch

from .records import UnitStatic
from .rewards import RewardConfig
from .smacv2_draws import draw_enemy_mask, draw_start_positions, draw_teams
from .smacv2_features import V2Flags, V2Layout
from .smacv2_games import ALLY_POINT, ENEMY_POINT, SMACv2Games, V2Seat, special_states
from .smacv2_scenarios import Scenario, get_gen_map, get_scenario
from .unit_table import STATIC_FIELDS, UnitTable

REWARD = RewardConfig()  # SMAC's (and SMACv2's yaml's) reward flags


def scenario_flags(sc: Scenario, **overrides) -> V2Flags:
    """The scenario's observation flags (its yaml's values), with ``overrides`` (``V2Flags`` names)."""
    args = sc.env_args()
    names = set(V2Flags.__dataclass_fields__)
    unknown = set(overrides) - names
    if unknown:
        raise ValueError(f"unknown SMACv2 flag(s) {sorted(unknown)}; allowed: {sorted(names)}")
    base = {k: v for k, v in args.items() if k in names}
    base["observe_types"] = sc.capability.team_gen.observe
    return V2Flags(**{**base, **overrides})


# UnitTable's static fields that are the engine's per-game constants (records.UnitStatic)
DRAWN_FIELDS = tuple(n for n in STATIC_FIELDS if n in UnitStatic._fields)


class DrawnUnits:
    """What ``UnitTable`` reads on a SMACv2 battle: the engine's dynamic state as on SMAC, and each
    game's own draw of the static fields, ``(num_envs, num_units)`` torch views of the engine's
    per-game records (``records.UnitStatic``), which a new draw rewrites in place
    (``UnitTypeTable.write``); ``unit_names`` one list per game (side 0 first, agent order)."""

    def __init__(self, games: SMACv2Games):
        eng = games.engine
        self._engine, self._games = eng, games
        self.num_envs, self.num_units, self.device = eng.num_envs, eng.num_units, eng.device
        self.n_side, self.side_slices = eng.n_side, eng.side_slices
        for name in DRAWN_FIELDS:
            setattr(self, name, torch.from_numpy(getattr(eng.static, name)))

    @property
    def unit_names(self) -> list[list[str]]:
        return [list(spec.units(0)) + list(spec.units(1)) if spec is not None else [""] * self.num_units
                for spec in self._games.specs]

    def __getattr__(self, name: str):
        return getattr(self._engine, name)  # the dynamic fields (UnitTable.DYNAMIC_FIELDS)


class SMACv2Battle:
    """Batched SMACv2 games of one scenario with one or two controlled seats (module docstring)."""

    def __init__(self, scenario: str, num_envs: int = 1, two_player: bool = True, mirror: bool = True,
                 device: str | torch.device = "cpu", seed: int | None = None, auto_reset: bool = True, **flags):
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if torch.device(device).type != "cpu":
            raise ValueError(f"device must be 'cpu' for SMACv2 battles (the CPU build), got {device!r}")
        self.scenario = get_scenario(scenario)
        self.map_name = scenario
        self.gen = get_gen_map(self.scenario.map_name)
        self.flags = scenario_flags(self.scenario, **flags)
        cap = self.scenario.capability
        self.capability = cap
        self.two_player, self.mirror, self.auto_reset = bool(two_player), bool(mirror), bool(auto_reset)
        self.device = torch.device("cpu")
        self.num_envs = num_envs
        self.n_seats = 2 if self.two_player else 1
        self.layouts = [V2Layout(self.gen, cap.n_units, cap.n_enemies, self.flags),
                        V2Layout(self.gen, cap.n_enemies, cap.n_units, self.flags)]
        seats = self.layouts[: self.n_seats]
        self.n_agents = [lay.n_agents for lay in seats]
        self.n_enemies = [lay.n_enemies for lay in seats]
        self.n_actions = [lay.n_actions for lay in seats]
        self.obs_size = [lay.obs_size for lay in seats]
        self.state_size = [lay.state_size() for lay in seats]
        self.special_state_size = [lay.special_state_size for lay in seats]
        self.episode_limit = self.episode_length = self.gen.limit
        ss = np.random.SeedSequence(seed)
        draw_ss, obs_ss, eng_ss = ss.spawn(3)
        self._draw_rng = np.random.default_rng(draw_ss)
        engine_seed = int(np.random.default_rng(eng_ss).integers(2**62))
        self.games = SMACv2Games(self.gen, cap.n_units, cap.n_enemies, self.flags, num_envs, self.n_seats,
                                 self.mirror, engine_seed, np.random.default_rng(obs_ss), REWARD)
        self.engine = self.games.engine
        ep = self.games.episode
        self.episode_steps = ep.steps
        self.episode_return = np.stack([ep.returns0, ep.returns1])
        self.kinds = [""] * num_envs  # each game's start layout ("reflect" / "surrounded")

    # ---------------------------------------------------------------- games
    def _new_draw(self, e: int) -> None:
        cap, rng = self.capability, self._draw_rng
        ally, enemy = draw_teams(cap, rng)
        if cap.start_positions is not None:
            pa, pe, kind = draw_start_positions(cap.start_positions, cap.n_units, cap.n_enemies, rng)
        else:
            pa, pe, kind = np.tile(ALLY_POINT, (cap.n_units, 1)), np.tile(ENEMY_POINT, (cap.n_enemies, 1)), "fixed"
        masks = (None, None)
        if cap.enemy_mask is not None:
            p = cap.enemy_mask.mask_probability
            masks = (draw_enemy_mask(p, cap.n_units, cap.n_enemies, rng),
                     draw_enemy_mask(p, cap.n_enemies, cap.n_units, rng))
        self.games.write_draw(e, ally, enemy, pa, pe, masks)
        self.kinds[e] = kind

    @property
    def units(self) -> UnitTable:
        """The units' documented, read-only state (``unit_table.UnitTable``), with each game's own draw:
        static fields ``(num_envs, num_units)`` (``DrawnUnits``)."""
        return UnitTable(DrawnUnits(self.games))

    def seat(self, side: int, e: int) -> V2Seat:
        """Seat ``side`` of game ``e`` (views of its rows: ``smacv2_games.V2Seat``)."""
        return V2Seat(self.games, side, e)

    # ------------------------------------------------------------ contract
    def reset(self) -> list[torch.Tensor]:
        self._reset_games(np.ones(self.num_envs, np.bool_))
        return self.get_obs()

    def _reset_games(self, mask) -> None:
        """New draws and episodes for the games where ``mask`` (num_envs,) is true (partial reset)."""
        mask = np.asarray(mask.cpu() if isinstance(mask, torch.Tensor) else mask, dtype=np.bool_)
        for e in np.flatnonzero(mask):
            self._new_draw(int(e))
        self.games.start(mask)

    def get_obs(self) -> list[torch.Tensor]:
        self.games.fresh()
        return [torch.from_numpy(self.games.seats[s].obs.copy()) for s in range(self.n_seats)]

    def get_state(self) -> list[torch.Tensor]:
        self.games.fresh_state()
        return [torch.from_numpy(self.games.seats[s].state.copy()) for s in range(self.n_seats)]

    def get_special_state(self) -> list[torch.Tensor]:
        """MAPPO's agent-specific state per seat, float (num_envs, n_agents, special_state_size)
        (``smacv2_games.special_states``)."""
        return [torch.from_numpy(special_states(self.games, s)) for s in range(self.n_seats)]

    def action_masks(self) -> list[torch.Tensor]:
        self.games.fresh()
        return [torch.from_numpy(self.games.seats[s].avail.copy()) for s in range(self.n_seats)]

    def close(self) -> None:
        pass

    def step(self, actions: list, check_masks: bool = True):
        """One step of every game: ``(obs, rewards, done, info)`` as ``SMACBattle.step``."""
        if len(actions) != self.n_seats:
            raise ValueError(f"actions must hold one (num_envs, n_agents) array per seat ({self.n_seats}), "
                             f"got {len(actions)}")
        acts = [np.asarray(a.cpu() if isinstance(a, torch.Tensor) else a) for a in actions]
        for s, a in enumerate(acts):
            if a.shape != (self.num_envs, self.n_agents[s]):
                raise ValueError(f"actions[{s}] must have shape {(self.num_envs, self.n_agents[s])}, got {a.shape}")
            if a.dtype.kind not in "iu" and not np.all(np.mod(a, 1) == 0):
                raise ValueError(f"actions[{s}] must be integers, got dtype {a.dtype}")
        s, e, _ = self.games.step(acts, check_masks)
        if s >= 0:
            raise ValueError(f"actions[{s}] of game {e} are not available: {acts[s][e].tolist()}")
        ep = self.games.episode
        self.episode_return = np.stack([ep.returns0, ep.returns1])
        done = ep.done.copy()
        info = {"winner": torch.from_numpy(ep.winner.copy()), "draw": torch.from_numpy(ep.draw.copy()),
                "timeout": torch.from_numpy(ep.timeout.copy()),
                "battle_won": [torch.from_numpy(ep.won[s].copy()) for s in range(self.n_seats)],
                "episode_reward": [torch.from_numpy(self.episode_return[s].copy()) for s in range(self.n_seats)],
                "episode_steps": torch.from_numpy(ep.steps.copy()),
                "dead_allies": [torch.from_numpy(ep.dead[s].copy()) for s in range(self.n_seats)],
                "dead_enemies": [torch.from_numpy(ep.dead[1 - s].copy()) for s in range(self.n_seats)]}
        rewards = [torch.from_numpy(ep.reward[s].copy()) for s in range(self.n_seats)]
        if self.auto_reset and done.any():
            self._reset_games(done)
        return self.get_obs(), rewards, torch.from_numpy(done), info
