"""``SMACv2Battle``: batched SMACv2 games for the self-play suite (``--env smacv2:SCENARIO``), the
two-seat contract of ``SMACBattle`` (docs/design/smacv2.md).

Every game draws its own episode from the scenario's distribution at each (auto-)reset: seat 0 plays
SMACv2's "ally" team, seat 1 its "enemy" team (the ally team's types plus the extra draws when the
scenario has more enemies), at the drawn start layout; with ``mirror=True`` seat 1 sees the map
mirrored in x (``x' = map_x - x``, east/west swapped), as on SMAC's symmetric maps.  With
``two_player=False`` seat 1 is the scripted enemy (SMACv2's single-player setting).  Both seats see
SMACv2's observations, state and masks (``smacv2_features``) with the scenario's flags, and SMAC's
rewards with SMAC's default reward flags (``max_reward`` from each game's own draw).

Randomness per battle ``seed``: the draws, the observation bookkeeping and each game's engine (its
cooldown jitter) come from ``np.random.SeedSequence(seed)`` streams: the same seed, the same games.

Each game is its own one-game engine (a draw fixes the unit types, which the compiled engine holds
per unit, not per game), so a step costs about ``num_envs`` times a single game's.
"""

from __future__ import annotations

import numpy as np
import torch

from . import build
from .engine import BattleEngine
from .rewards import RewardConfig
from .smacv2_draws import draw_enemy_mask, draw_start_positions, draw_teams
from .smacv2_env import hunt
from .smacv2_features import V2Flags, V2Layout, V2Seat
from .smacv2_scenarios import Scenario, get_gen_map, get_scenario
from .smacv2_spec import drawn_spec

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


class SMACv2Battle:
    """Batched SMACv2 games of one scenario with one or two controlled seats (module docstring)."""

    def __init__(self, scenario: str, num_envs: int = 1, two_player: bool = True, mirror: bool = True,
                 device: str | torch.device = "cpu", seed: int | None = None, auto_reset: bool = True, **flags):
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if torch.device(device).type != "cpu":
            raise ValueError(f"device must be 'cpu' for SMACv2 battles (one-game CPU engines), got {device!r}")
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
        self._draw_rng, self._obs_rng = np.random.default_rng(draw_ss), np.random.default_rng(obs_ss)
        self._engine_seeds = np.random.default_rng(eng_ss)
        self._ns = build.cpu()
        self.games: list[dict] = [{} for _ in range(num_envs)]
        self.episode_steps = np.zeros(num_envs, np.int64)
        self.episode_return = np.zeros((2, num_envs), np.float32)
        self.kinds = [""] * num_envs  # each game's start layout ("reflect" / "surrounded")

    # ---------------------------------------------------------------- games
    def _new_game(self, e: int) -> None:
        cap, rng = self.capability, self._draw_rng
        ally, enemy = draw_teams(cap, rng)
        if cap.start_positions is not None:
            pa, pe, kind = draw_start_positions(cap.start_positions, cap.n_units, cap.n_enemies, rng)
        else:
            pa, pe, kind = np.tile((8.0, 16.0), (cap.n_units, 1)), np.tile((24.0, 16.0), (cap.n_enemies, 1)), "fixed"
        masks = [None, None]
        if cap.enemy_mask is not None:
            p = cap.enemy_mask.mask_probability
            masks = [draw_enemy_mask(p, cap.n_units, cap.n_enemies, rng), draw_enemy_mask(p, cap.n_enemies,
                                                                                         cap.n_units, rng)]
        spec = drawn_spec(self.gen, ally, enemy, pa, pe)
        scripted = () if self.two_player else (1,)
        engine = BattleEngine(spec, 1, seed=int(self._engine_seeds.integers(2**62)), scripted_sides=scripted)
        seats = [V2Seat(engine, s, self.layouts[s], self._obs_rng, mirror=(s == 1 and self.mirror),
                        enemy_mask=masks[s]) for s in range(self.n_seats)]
        terran = self.gen.map_type == "terran_gen"
        self.games[e] = {
            "engine": engine, "seats": seats, "prev": (engine.hp + engine.shield).numpy()[0].copy(),
            "counted": np.zeros(engine.num_units, np.bool_),
            "counts": np.array([not (terran and u == "medivac") for u in engine.unit_names], np.bool_),
            "max_reward": [self._max_reward(engine, 1), self._max_reward(engine, 0)]}
        hunt(engine)
        self.kinds[e] = kind
        self.episode_steps[e] = 0
        self.episode_return[:, e] = 0.0

    @staticmethod
    def _max_reward(engine: BattleEngine, enemy_side: int) -> float:
        """SMAC's ``max_reward`` of the seat facing ``enemy_side`` in this game's draw: the enemies'
        hp + shields, plus ``reward_death_value`` per enemy and ``reward_win``."""
        s = engine.side_slices[enemy_side]
        n = engine.n_side[enemy_side]
        return float((engine.hp_max[s] + engine.shield_max[s]).sum()) + n * REWARD.reward_death_value + REWARD.reward_win

    # ------------------------------------------------------------ contract
    def reset(self) -> list[torch.Tensor]:
        for e in range(self.num_envs):
            self._new_game(e)
        return self.get_obs()

    def _reset_games(self, mask) -> None:
        """New draws for the games where ``mask`` (num_envs,) is true (the engines' partial reset)."""
        for e in np.flatnonzero(np.asarray(mask.cpu() if isinstance(mask, torch.Tensor) else mask)):
            self._new_game(int(e))

    def _timestep(self, e: int) -> float:
        return float(self.episode_steps[e]) / self.episode_limit

    def get_obs(self) -> list[torch.Tensor]:
        return [torch.from_numpy(np.stack([g["seats"][s].observations(self._timestep(e))
                                           for e, g in enumerate(self.games)])) for s in range(self.n_seats)]

    def get_state(self) -> list[torch.Tensor]:
        return [torch.from_numpy(np.stack([g["seats"][s].state(self._timestep(e))
                                           for e, g in enumerate(self.games)])) for s in range(self.n_seats)]

    def get_special_state(self) -> list[torch.Tensor]:
        """MAPPO's agent-specific state per seat, float (num_envs, n_agents, special_state_size)
        (``V2Seat.special_state``)."""
        return [torch.from_numpy(np.stack([g["seats"][s].special_state() for g in self.games]))
                for s in range(self.n_seats)]

    def action_masks(self) -> list[torch.Tensor]:
        return [torch.from_numpy(np.stack([g["seats"][s].avail()[0] for g in self.games]))
                for s in range(self.n_seats)]

    def close(self) -> None:
        self.games = [{} for _ in range(self.num_envs)]

    def step(self, actions: list, check_masks: bool = True):
        """One step of every game: ``(obs, rewards, done, info)`` as ``SMACBattle.step``."""
        if len(actions) != self.n_seats:
            raise ValueError(f"actions must hold one (num_envs, n_agents) array per seat ({self.n_seats}), "
                             f"got {len(actions)}")
        acts = [np.asarray(a.cpu() if isinstance(a, torch.Tensor) else a, dtype=np.int64) for a in actions]
        for s, a in enumerate(acts):
            if a.shape != (self.num_envs, self.n_agents[s]):
                raise ValueError(f"actions[{s}] must have shape {(self.num_envs, self.n_agents[s])}, got {a.shape}")
        E = self.num_envs
        won = np.zeros((2, E), np.bool_)
        draw, timeout, done = np.zeros(E, np.bool_), np.zeros(E, np.bool_), np.zeros(E, np.bool_)
        winner = np.full(E, -1, np.int64)
        dead = np.zeros((2, E), np.int64)
        rewards = np.zeros((2, E), np.float32)
        for e, g in enumerate(self.games):
            engine = g["engine"]
            for s in range(self.n_seats):
                seat = g["seats"][s]
                avail, true_avail = seat.avail()
                a = acts[s][e]
                if check_masks and not avail[np.arange(seat.n), a.clip(0, avail.shape[1] - 1)].all() \
                        or (a < 0).any() or (a >= avail.shape[1]).any():
                    raise ValueError(f"actions[{s}] of game {e} are not available: {a.tolist()}")
                seat.last_action[:] = np.eye(avail.shape[1], dtype=np.float32)[a]
                engine.command(s, seat.engine_actions(a, true_avail)[None, :])
            engine.advance()
            hunt(engine)
            self.episode_steps[e] += 1
            battle = np.zeros((2, 1), np.float32)
            lost = np.zeros((1, 2), np.bool_)
            r = REWARD
            self._ns.rewards(battle, lost, 0, g["prev"], g["counted"], engine.arrays("hp")[0],
                             engine.arrays("shield")[0], engine.n_side[0], g["counts"], np.float32(r.reward_death_value),
                             np.float32(r.reward_negative_scale),
                             np.float32(r.reward_death_value * r.reward_negative_scale), r.reward_only_positive,
                             r.reward_sparse)
            w, d, t, dn, win, de = (np.zeros((2, 1), np.bool_), np.zeros(1, np.bool_), np.zeros(1, np.bool_),
                                    np.zeros(1, np.bool_), np.zeros(1, np.int64), np.zeros((2, 1), np.int64))
            self._ns.outcome(0, lost, self.episode_steps[e], self.episode_limit, engine.arrays("hp")[0],
                             engine.n_side[0], w, d, t, dn, win, de)
            won[:, e], draw[e], timeout[e], done[e], winner[e], dead[:, e] = w[:, 0], d[0], t[0], dn[0], win[0], de[:, 0]
            for s in (0, 1):
                divisor = np.float32(g["max_reward"][s] / r.reward_scale_rate)
                rewards[s, e] = self._ns.finish(bool(w[s, 0]), bool(w[1 - s, 0]), battle[s, 0],
                                                np.float32(r.reward_win), np.float32(r.reward_defeat), divisor,
                                                r.reward_sparse, r.reward_scale)
            for seat in g["seats"]:
                seat.record_deaths()
        self.episode_return += rewards
        info = {"winner": torch.from_numpy(winner), "draw": torch.from_numpy(draw),
                "timeout": torch.from_numpy(timeout),
                "battle_won": [torch.from_numpy(won[s].copy()) for s in range(self.n_seats)],
                "episode_reward": [torch.from_numpy(self.episode_return[s].copy()) for s in range(self.n_seats)],
                "episode_steps": torch.from_numpy(self.episode_steps.copy()),
                "dead_allies": [torch.from_numpy(dead[s].copy()) for s in range(self.n_seats)],
                "dead_enemies": [torch.from_numpy(dead[1 - s].copy()) for s in range(self.n_seats)]}
        if self.auto_reset:
            for e in np.flatnonzero(done):
                self._new_game(int(e))
        return self.get_obs(), [torch.from_numpy(rewards[s].copy()) for s in range(self.n_seats)], \
            torch.from_numpy(done), info
