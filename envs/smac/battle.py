"""``SMACBattle``: the batched two-seat SMAC environment used by the self-play loop (envs/base.py).

``num_envs`` games advance together.  Seats are the map's two sides: seat 0 the allies (player 1),
seat 1 the enemies (player 2).  With ``two_player=False`` seat 1 is the map's scripted AI
(SMAC's usual setting) and every per-seat list has only seat 0.

    reset() -> [obs_seat0, obs_seat1]            each (num_envs, n_agents_seat, obs_size_seat)
    step([actions0, actions1]) -> (obs, rewards, done, info)
        actions_s: long (num_envs, n_agents_seat), legal under action_masks()
        rewards:   [r0, r1], each (num_envs,), SMAC's reward from that seat's point of view (§5)
        done:      bool (num_envs,)
        info["winner"]  long (num_envs,): 0/1 for a game that just ended with a winner, -1 otherwise
        info["draw"]    bool (num_envs,): ended this step in a draw (timeout or mutual destruction)
        info["battle_won"]  [bool (num_envs,)] per seat;  info["timeout"] bool (num_envs,)
        info["episode_reward"] [R0, R1] the finished games' returns;  info["episode_steps"] (num_envs,)
        info["dead_allies"], info["dead_enemies"]: per seat, counts at the end of the step
        Finished games reset on their own (``auto_reset=True``): their returned observation is the
        first observation of the next game.
    action_masks() -> [mask0, mask1]            bool (num_envs, n_agents_seat, n_actions_seat)
    get_state() -> [state0, state1]             float (num_envs, state_size_seat)
    get_special_state() -> [s0, s1]             float (num_envs, n_agents_seat, special_state_size_seat)

The simulator runs the rules written once in ``rules.py`` / ``feature_rules.py``, compiled for the
CPU (``engine="cpu"``, alias ``"numba"``: one game after another) or a GPU (``engine="cuda"``: one
game per thread, on ``device="cuda"``); both give the same games bit for bit.  ``"auto"`` (the
default) takes the build of ``device``.  On the CPU the battle's own bookkeeping runs on numpy
arrays (the ``fast_*`` methods); on a GPU on torch tensors of the device arrays.

``backend="sc2"`` plays the real StarCraft II game instead of the simulator (``sc2_engine``; one game
per env; ``games`` may pass ready ``GameConnection`` objects). ``close()`` ends such games.

``script_seat(seat)`` hands a seat of a two-player battle to the map's scripted AI (the built-in AI
as an opponent, ``envs/smac/panel.py``): its actions are then ignored (recorded as no-ops).

With ``mirror=True`` seat 1 sees the map mirrored in x (relative x negated, east/west swapped),
so one policy can play both seats of a symmetric map (spec §6). The default (``mirror=None``) mirrors
two-player battles on maps whose sides field the same units (3m, 2s3z, ...), as the suite's training
does, and no others; ``mirror=False`` gives seat 1 the map as it is, its army the map's translated
east.  ``spawns`` says where a mirrored seat's units start: ``"mirrored"`` (the default) at the mirror image of seat 0's layout, so both
seats see the same start; ``"map"`` at the map's own enemy spawns, the layout SMAC's game (and the
built-in AI's side in it) uses — on SMAC's maps the enemy army is seat 0's translated east, not
reflected, so on 2s3z, for example, its zealots start behind its stalkers rather than in front.  Illegal actions (wrong shape,
dtype, out of range or masked out) raise ``ValueError``; they are never replaced by another action.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import torch

from . import build
from .engine import STEP_MUL, BattleEngine
from .fast_features import FastRewards, FastSideView
from .features import FeatureConfig, SideView
from .maps import get_map
from .records import Episode, Seat
from .rewards import RewardConfig, RewardTracker
from .unit_records import EngineSnapshot
from .unit_table import UnitTable

MOVE_EAST, MOVE_WEST = 4, 5
BACKENDS = ("sim", "sc2")
ENGINES = ("auto", "cpu", "cuda", "numba")  # "numba": the CPU build
SPAWNS = ("mirrored", "map")  # a mirrored seat's start: the mirror image of seat 0's, or the map's own


def split_flags(flags: dict) -> tuple[FeatureConfig, RewardConfig]:
    """SMAC keyword flags -> (FeatureConfig, RewardConfig); unknown names raise ``ValueError``."""
    feat_names = {f.name for f in fields(FeatureConfig)}
    rew_names = {f.name for f in fields(RewardConfig)}
    unknown = set(flags) - feat_names - rew_names
    if unknown:
        raise ValueError(f"unknown SMAC flag(s) {sorted(unknown)}; allowed: {sorted(feat_names | rew_names)}")
    feat = FeatureConfig(**{k: v for k, v in flags.items() if k in feat_names})
    rew = RewardConfig(**{k: v for k, v in flags.items() if k in rew_names})
    return feat, rew


class SMACBattle:
    """Batched SMAC battles with one or two controlled seats (module docstring)."""

    def __init__(self, map_name: str, num_envs: int = 1, two_player: bool = True, mirror: bool | None = None,
                 device: str | torch.device = "cpu", seed: int | None = None, auto_reset: bool = True,
                 backend: str = "sim", games: list | None = None, engine: str = "auto", spawns: str = "mirrored",
                 **flags):
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES} ('numba' is the CPU build), got {engine!r}")
        device_type = torch.device(device).type
        wanted = device_type if engine == "auto" else ("cpu" if engine == "numba" else engine)
        if wanted != device_type:
            raise ValueError(f"engine={engine!r} runs on device type {wanted!r}, got device={device!r}")
        if spawns not in SPAWNS:
            raise ValueError(f"spawns must be one of {SPAWNS}, got {spawns!r}")
        if games is not None and backend != "sc2":
            raise ValueError("games (GameConnection objects) are only for backend='sc2'")
        spec = get_map(map_name)
        feat, rew = split_flags(flags)
        self.map_name = map_name
        self.spec = spec
        self.two_player = bool(two_player)
        if mirror is not None and not isinstance(mirror, (bool, np.bool_)):
            raise ValueError(f"mirror must be True, False or None (mirrored on maps whose sides field the same "
                             f"units), got {mirror!r}")
        self.mirror = self.two_player and spec.same_teams if mirror is None else bool(mirror)
        self.spawns = spawns
        self.auto_reset = bool(auto_reset)
        scripted = () if two_player else (1,)
        if backend == "sc2":
            from .sc2_engine import SC2Engine, SC2Game

            if games is None:
                games = [SC2Game(spec, two_player, None if seed is None else seed + i) for i in range(num_envs)]
            if len(games) != num_envs:
                raise ValueError(f"games must hold num_envs={num_envs} connections, got {len(games)}")
            self.engine = SC2Engine(spec, games, scripted_sides=scripted, device=device)
        else:
            # A mirrored seat gets the mirror image of seat 0's spawn layout (maps.py) unless spawns="map".
            self.engine = BattleEngine(spec, num_envs, device=device, seed=seed, scripted_sides=scripted,
                                       mirror_spawns=self.two_player and self.mirror and spawns == "mirrored")
        self.backend = backend
        self.device = self.engine.device
        self.num_envs = num_envs
        self.views = [SideView(self.engine, 0, False, feat), SideView(self.engine, 1, self.mirror, feat)]
        self.tracker = RewardTracker(self.engine, rew)
        self.feature_config, self.reward_config = feat, rew
        self.n_seats = 2 if self.two_player else 1
        seats = self.views[: self.n_seats]
        self.n_agents = [v.n_agents for v in seats]
        self.n_enemies = [v.n_enemies for v in seats]
        self.n_actions = [v.n_actions for v in seats]
        self.obs_size = [v.obs_size for v in seats]
        self.state_size = [v.state_size for v in seats]
        self.special_state_size = [v.special_state_size for v in seats]
        self.episode_limit = spec.episode_limit
        self.episode_length = spec.episode_limit
        E = num_envs
        self.last_action = [torch.zeros(E, v.n_agents, v.n_actions, device=self.device) for v in self.views]
        self.episode_steps = torch.zeros(E, dtype=torch.long, device=self.device)
        self.episode_return = [torch.zeros(E, device=self.device) for _ in range(2)]
        self._avail: list[torch.Tensor] | None = None
        self._np_avail: list[np.ndarray] | None = None
        self._xy = None
        self.fast = self.engine.device.type == "cpu"  # the numpy lane
        self._build_fast_lane()

    _FAST_LANE = ("fast_views", "fast_rewards", "_np_last_action", "_np_episode_steps", "_np_episode_return",
                  "_seats", "_episode", "_switches", "_jitter", "_start_mask", "_goals", "_calls", "_fresh",
                  "_state_fresh", "_one_call")

    def _build_fast_lane(self) -> None:
        """The compiled features and rewards on the engine's arrays; on the CPU, numpy views of the
        battle's own tensors and the records of the one-call step (``_step_records``)."""
        self.fast_views = [FastSideView(v) for v in self.views]
        self.fast_rewards = FastRewards(self.tracker)
        self._fresh = self._state_fresh = False  # the step records' feature buffers hold the current state's
        # the whole step in one call, unless the engine plays the games itself (the real game: sc2_engine)
        self._one_call = self.fast and all(getattr(type(self.engine), name) is getattr(BattleEngine, name)
                                           for name in ("command", "advance", "reset"))
        if not self.fast:
            return
        self._no_masks = np.zeros((1, 1, 1), np.bool_)
        self._np_last_action = [t.numpy() for t in self.last_action]
        self._np_episode_steps = self.episode_steps.numpy()
        self._np_episode_return = [t.numpy() for t in self.episode_return]
        self._seats, self._episode = self._step_records()
        # [two seats, check the masks, compute the state] (cpu_drivers.check_actions)
        self._switches = np.array([self.n_seats == 2, 1, 0], np.int64)
        self._jitter = np.zeros((STEP_MUL, self.num_envs, self.engine.num_units), np.int64)
        self._start_mask = np.zeros(self.num_envs, np.bool_)  # the games an episode starts in
        self._goals = np.zeros((self.num_envs, self.engine.num_units, 2), np.float32)  # their trigger goals
        self._calls = None

    def _step_records(self) -> tuple[list[Seat], Episode]:
        """Each seat's ``records.Seat`` and the ``records.Episode`` of the one-call step: constants from
        the fast views and rewards, buffers allocated once (the battle's own tensors where it has them)."""
        E, U, f32, i64 = self.num_envs, self.engine.num_units, np.float32, np.int64
        seats = []
        for s, fv in enumerate(self.fast_views):
            seats.append(Seat(
                i64(fv.ally0), i64(fv.n), i64(fv.enemy0), i64(fv.m), i64(fv.map_x), i64(fv.mirror), *fv.bits, fv.cx,
                fv.cy, fv.width, fv.playable_height, fv.hp_max, fv.shield_max, fv.is_medivac, fv.ally_type,
                fv.enemy_type, np.ascontiguousarray(fv.max_cd), fv.pathing, fv.height, fv.config,
                actions=np.zeros((E, fv.n), i64), last_action=self._np_last_action[s], px=np.zeros((E, U), f32),
                py=np.zeros((E, U), f32), avail=np.zeros((E, fv.n, fv.n_actions), np.bool_),
                obs=np.zeros((E, fv.n, fv.obs_size), f32), state=np.zeros((E, fv.state_size), f32)))
        rw, c = self.fast_rewards, self.reward_config
        episode = Episode(
            i64(self.episode_limit), i64(self.engine.n_side[0]), *rw.reward_args, f32(c.reward_win),
            f32(c.reward_defeat), rw.divisor[0], rw.divisor[1], bool(c.reward_scale), rw.counts_for_survival,
            steps=self._np_episode_steps, timestep=np.zeros(E, f32), returns0=self._np_episode_return[0],
            returns1=self._np_episode_return[1], prev=rw.prev, counted_dead=rw.counted_dead,
            battle=np.zeros((2, E), f32), lost=np.zeros((E, 2), np.bool_), reward=np.zeros((2, E), f32),
            won=np.zeros((2, E), np.bool_), draw=np.zeros(E, np.bool_), timeout=np.zeros(E, np.bool_),
            done=np.zeros(E, np.bool_), winner=np.zeros(E, i64), dead=np.zeros((2, E), i64),
            before_pos=np.zeros((E, U, 2), f32), before_hp=np.zeros((E, U), f32), before_shield=np.zeros((E, U), f32),
            before_energy=np.zeros((E, U), f32), before_cooldown=np.zeros((E, U), f32))
        return seats, episode

    def _bound_calls(self):
        """(check, step, features, start, score): the compiled calls on the step records, bound once
        (``build.CpuBuild.bind``) and again when the engine's state buffers, build or flags (a seat
        handed to the scripted AI) change."""
        eng = self.engine
        state = eng.unit_state()
        calls = self._calls
        if calls is None or calls[0] is not state or calls[1] is not eng.scratch or calls[2] is not eng.flags:
            records = (self._seats[0], self._seats[1], self._episode, self._switches)
            check = build.CpuBuild().bind("check_actions", self._seats[0], self._seats[1], self._switches)
            step = eng.build.bind("step", self._jitter, state, eng.static, eng.maps, eng.flags, eng.scratch,
                                  *records)
            features = eng.build.bind("features", state, eng.scratch, *records)
            start = eng.build.bind("start", self._start_mask, state, eng.static, eng.spawn_points(), self._goals,
                                   eng.scratch, *records)
            score = eng.build.bind("score", state, eng.scratch, *records)
            self._calls = calls = (state, eng.scratch, eng.flags, check, step, features, start, score)
        return calls[3:]

    def __getstate__(self) -> dict:
        # numpy views are rebuilt on unpickling: pickled apart, they would no longer share the tensors
        state = {k: v for k, v in self.__dict__.items() if k not in self._FAST_LANE}
        state["_avail"] = state["_np_avail"] = state["_xy"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._build_fast_lane()

    # ------------------------------------------------------------------ api
    def reset(self) -> list[torch.Tensor]:
        """Reset every game; the first observations per seat."""
        everything = torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
        self._reset_games(everything)
        return self._observations()

    def action_masks(self) -> list[torch.Tensor]:
        if self._avail is None:
            self._avail = [self.engine.tensor_of(m) for m in self._fast_masks()]
        return [m.clone() for m in self._avail[: self.n_seats]]

    def state_changed(self) -> None:
        """Call after editing ``engine`` tensors directly (scenario set-up, tests): drops cached
        masks and re-bases the reward bookkeeping on the current hp and deaths."""
        self._invalidate()
        self.tracker.reset(torch.ones(self.num_envs, dtype=torch.bool, device=self.device))

    def close(self) -> None:
        """End the real games of ``backend="sc2"`` (nothing to do for the simulator)."""
        close = getattr(self.engine, "close", None)
        if close is not None:
            close()

    def get_obs(self) -> list[torch.Tensor]:
        return self._observations()

    def get_state(self) -> list[torch.Tensor]:
        if self.fast:
            return [torch.from_numpy(x) for x in self.fast_states()]
        eng, t = self.engine, self._lane_timestep()
        return [eng.tensor_of(fv.state(*xy, eng.array_of(self.last_action[s]), t))
                for s, (fv, xy) in enumerate(zip(self.fast_views[: self.n_seats], self._fast_xy()))]

    def get_special_state(self) -> list[torch.Tensor]:
        """The seed's per-agent "special global state" per seat (features.SideView.special_state)."""
        self.action_masks()
        return [v.special_state(self._avail[s], self.last_action[s]) for s, v in enumerate(self.views[: self.n_seats])]

    @property
    def units(self) -> UnitTable:
        """The units' documented, read-only state (``unit_table.UnitTable``) for agents that build their
        own features; the engine itself is internal."""
        return UnitTable(self.engine)

    def seat_view(self, seat: int) -> SideView:
        """Seat ``seat``'s view of the map: ``positions()`` (its frame, mirrored for a mirrored seat),
        ``pathing`` and ``terrain_height`` grids. Read-only."""
        if seat not in (0, 1):
            raise ValueError(f"seat must be 0 or 1, got {seat!r}")
        return self.views[seat]

    def render(self, mode: str = "rgb_array", game: int = 0, scale: int = 16):
        """``mode="rgb_array"``: game ``game`` drawn as an RGB image (``render.draw_frame``: terrain,
        units by type and side, health and shield bars, attack lines), north up, ``scale`` pixels per
        map unit. There is no window (``mode="human"`` raises)."""
        if mode != "rgb_array":
            raise ValueError(f"mode must be 'rgb_array' (there is no window), got {mode!r}")
        from .render import draw_frame

        return draw_frame(self, game, scale)

    def script_seat(self, seat: int) -> None:
        """Let the map's scripted AI drive seat ``seat`` (a two-player battle on the simulator): the
        trigger's order and SC2's auto-acquisition every game loop, as for player 2 in single-player
        mode. From then on that seat's actions are not checked and not issued (recorded as no-ops)."""
        if seat not in (0, 1):
            raise ValueError(f"seat must be 0 or 1, got {seat!r}")
        if not self.two_player or self.backend != "sim":
            raise ValueError("script_seat needs a two-player battle on the simulator (backend='sim')")
        self.engine.set_scripted_sides(tuple(self.engine.scripted_sides) + (seat,))

    def _scripted_as_noop(self, actions):
        """The actions with every scripted seat's replaced by no-ops (0)."""
        scripted = self.engine.scripted_sides
        if not self.two_player or not scripted or not isinstance(actions, (list, tuple)):
            return actions
        return [torch.zeros(self.num_envs, self.n_agents[s], dtype=torch.long) if s in scripted else a
                for s, a in enumerate(actions)]

    def step(self, actions: list, check_masks: bool = True) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor, dict]:
        """One step of every game.  ``check_masks=False``: actions need not be in the masks (SMAC's
        heuristic AI attacks targets beyond the shoot range, ``heuristic.py``); 0 then means no order."""
        if self.fast:
            obs, rewards, done, info = self.fast_step(actions, check_masks)
            wrap = torch.from_numpy
            info = {k: [wrap(x) for x in v] if isinstance(v, list) else wrap(v) for k, v in info.items()}
            return [wrap(o) for o in obs], [wrap(r) for r in rewards], wrap(done), info
        acts = self._check_actions(self._scripted_as_noop(actions), check_masks)
        for side, a in enumerate(acts):
            world = a
            if side == 1 and self.mirror:
                world = torch.where(a == MOVE_EAST, MOVE_WEST, torch.where(a == MOVE_WEST, MOVE_EAST, a))
            self.engine.command(side, world)
            self.last_action[side].copy_(torch.nn.functional.one_hot(a, self.views[side].n_actions).float())
        eng = self.engine
        eng.advance(STEP_MUL)
        self._invalidate()
        self.episode_steps += 1
        battle, lost = self.fast_rewards.step()
        outcome = self.fast_rewards.outcome(lost, eng.array_of(self.episode_steps), self.episode_limit)
        won, draw, timeout, done, winner, dead = (eng.tensor_of(x) for x in outcome)
        rewards = [eng.tensor_of(self.fast_rewards.finish(s, battle[s], eng.array_of(won[s]), eng.array_of(won[1 - s])))
                   for s in (0, 1)]
        for s in (0, 1):
            self.episode_return[s] += rewards[s]
        info = {
            "winner": winner,
            "draw": draw,
            "timeout": timeout,
            "battle_won": [won[s] for s in range(self.n_seats)],
            "episode_reward": [r.clone() for r in self.episode_return[: self.n_seats]],
            "episode_steps": self.episode_steps.clone(),
            "dead_allies": [dead[s] for s in range(self.n_seats)],
            "dead_enemies": [dead[1 - s] for s in range(self.n_seats)],
        }
        if self.auto_reset and bool(done.any()):
            self._reset_games(done)
        return self._observations(), rewards[: self.n_seats], done, info

    # -------------------------------------------------------------- helpers
    def _lane_timestep(self):
        """episode_steps / limit (float32) as an array for the compiled rules (the tensor lane)."""
        return self.engine.array_of(self.episode_steps.float() / self.episode_limit)

    def _observations(self) -> list[torch.Tensor]:
        if self.fast:
            return [torch.from_numpy(o) for o in self.fast_observations()]
        eng, masks, t = self.engine, self._fast_masks(), self._lane_timestep()
        return [eng.tensor_of(fv.observations(*xy, masks[s], eng.array_of(self.last_action[s]), t))
                for s, (fv, xy) in enumerate(zip(self.fast_views[: self.n_seats], self._fast_xy()))]

    def _reset_games(self, mask: torch.Tensor | np.ndarray) -> None:
        if self.fast and self._one_call:  # one compiled call: units, bookkeeping and the started games' features
            self._start_mask[...] = mask.numpy() if isinstance(mask, torch.Tensor) else mask
            self.engine.draw_trigger_goals(self._goals)
            fresh, state_fresh = self._fresh, self._state_fresh  # the other games' features, as the step left them
            self._bound_calls()[3]()
            self._invalidate()
            if fresh or self._start_mask.all():  # every game's features now those of its current state
                self._fresh = True
                self._state_fresh = bool(self._switches[2]) and (state_fresh or bool(self._start_mask.all()))
            return
        self.engine.reset(mask)
        self.tracker.reset(mask)
        for s in (0, 1):  # in place: the fast path keeps numpy views of these tensors
            self.last_action[s].masked_fill_(mask[:, None, None], 0.0)
            self.episode_return[s].masked_fill_(mask, 0.0)
        self.episode_steps.masked_fill_(mask, 0)
        self._invalidate()

    # ------------------------------------------------------ the numpy lane
    # ``fast_*``: ``step`` and the features on numpy arrays (CPU engines, ``self.fast``): a step is one
    # compiled call (``game_step.py``) that writes the seats' and episodes' buffers (``_step_records``),
    # which the methods hand out as copies; ``SMACEnv`` reads the buffers directly.  ``_fast_masks`` and
    # ``_fast_xy`` also serve the tensor lane.
    def _fast_seats(self, with_state: bool = False) -> list[Seat]:
        """The step records of the seats, their features (and, ``with_state``, their states) those of the
        current state: computed here (one compiled call) unless the last step or call did."""
        if with_state:
            self._switches[2] = 1  # a caller reads the state: from now on every step computes it
        if not self._fresh or (with_state and not self._state_fresh):
            self._bound_calls()[2]()
            self._fresh, self._state_fresh = True, bool(self._switches[2])
        return self._seats

    def _fast_masks(self) -> list[np.ndarray]:
        if self.fast:
            return [seat.avail for seat in self._fast_seats()[: self.n_seats]]
        if self._np_avail is None:
            self._np_avail = [fv.avail_actions(*xy) for fv, xy in zip(self.fast_views[: self.n_seats], self._fast_xy())]
        return self._np_avail

    def _fast_xy(self):
        """Each seat's (x, y) unit positions, computed once per state (the tensor lane)."""
        if self._xy is None:
            xy0 = self.fast_views[0].positions()
            xy1 = self.fast_views[1].positions() if self.mirror else xy0
            self._xy = [xy0, xy1]
        return self._xy

    def fast_observations(self) -> list[np.ndarray]:
        """``get_obs`` as numpy arrays (the compiled lane)."""
        return [seat.obs.copy() for seat in self._fast_seats()[: self.n_seats]]

    def fast_states(self) -> list[np.ndarray]:
        """``get_state`` as numpy arrays (the compiled lane)."""
        return [seat.state.copy() for seat in self._fast_seats(with_state=True)[: self.n_seats]]

    def fast_masks(self) -> list[np.ndarray]:
        """``action_masks`` as numpy arrays (the compiled lane)."""
        return [m.copy() for m in self._fast_masks()]

    def fast_step(self, actions, check_masks: bool = True):
        """``step`` on numpy arrays: ``(obs, rewards, done, info)`` with every tensor a numpy array."""
        self._fast_advance(actions, check_masks)
        ep, n = self._episode, self.n_seats
        info = {
            "winner": ep.winner.copy(),
            "draw": ep.draw.copy(),
            "timeout": ep.timeout.copy(),
            "battle_won": [ep.won[s].copy() for s in range(n)],
            "episode_reward": [r.copy() for r in self._np_episode_return[:n]],
            "episode_steps": self._np_episode_steps.copy(),
            "dead_allies": [ep.dead[s].copy() for s in range(n)],
            "dead_enemies": [ep.dead[1 - s].copy() for s in range(n)],
        }
        rewards, done = [ep.reward[s].copy() for s in range(n)], ep.done.copy()
        if self.auto_reset and done.any():
            self._reset_games(torch.from_numpy(done))
        return self.fast_observations(), rewards, done, info

    def _fast_advance(self, actions, check_masks: bool = True) -> None:
        """The step of ``fast_step`` without its outputs or resets: the actions checked (an illegal one
        raises with ``_check_actions``'s message, before anything changed), then one compiled call that
        leaves the rewards, outcomes and new features in the step records.  ``actions=None``: the
        caller wrote them into the seats' ``actions`` buffers."""
        scripted = self.two_player and bool(self.engine.scripted_sides)
        if actions is not None:
            actions = self._scripted_as_noop(actions)
            if not isinstance(actions, (list, tuple)) or len(actions) != self.n_seats:
                self._check_actions(actions, check_masks)  # raises with its message
            for seat, a in zip(self._seats, actions):
                a = a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
                if a.shape != seat.actions.shape or a.dtype.kind not in "iu":
                    self._check_actions(actions, check_masks)  # raises with its message
                seat.actions[...] = a
        self._fast_seats()  # the masks the actions are checked against
        check, step, _, _, score = self._bound_calls()
        if scripted and check_masks:  # a scripted seat's no-ops are not checked against its mask
            self._fast_check_actions([seat.actions for seat in self._seats[: self.n_seats]], check_masks)
        self._switches[1] = check_masks and not scripted
        if check()[0] >= 0:
            if actions is None:
                actions = [seat.actions.copy() for seat in self._seats[: self.n_seats]]
            self._check_actions(actions, check_masks)  # raises with its message
            raise AssertionError("an action failed the compiled check but passed _check_actions")
        if self._one_call:
            self.engine.draw_jitter(STEP_MUL, out=self._jitter)
            step()
        else:  # the engine's own orders and game loops (the real game), then the compiled rest of the step
            eng, ep = self.engine, self._episode
            for name in EngineSnapshot.FIELDS:
                getattr(ep, f"before_{name}")[...] = eng.arrays(name)
            for side, seat in enumerate(self._seats[: self.n_seats]):
                a = seat.actions
                build.cpu().one_hot(seat.last_action, a)
                if side == 1 and self.mirror:
                    a = np.where(a == MOVE_EAST, MOVE_WEST, np.where(a == MOVE_WEST, MOVE_EAST, a))
                eng.command(side, a)
            eng.advance(STEP_MUL)
            score()
        self._avail = self._np_avail = self._xy = None  # the buffers now hold the new state's features
        self._fresh, self._state_fresh = True, bool(self._switches[2])

    def _invalidate(self) -> None:
        """Forget what was computed from the previous state (masks, positions, features)."""
        self._avail = self._np_avail = self._xy = None
        self._fresh = self._state_fresh = False

    def _fast_check_actions(self, actions, check_masks: bool = True) -> list[np.ndarray]:
        """``_check_actions`` on numpy arrays (the same checks; an illegal action gets its message)."""
        if isinstance(actions, (list, tuple)) and len(actions) == self.n_seats:
            masks = self._fast_masks() if check_masks else None
            out = []
            for s, a in enumerate(actions):
                a = a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
                if a.shape != (self.num_envs, self.n_agents[s]) or a.dtype.kind not in "iu":
                    break
                a = a.astype(np.int64, copy=False)
                check = check_masks and s not in self.engine.scripted_sides
                if build.cpu().first_illegal(masks[s] if check else self._no_masks, a, self.n_actions[s],
                                    check)[0] >= 0:
                    break
                out.append(a)
            else:
                return out
        return [x.numpy() for x in self._check_actions(actions, check_masks)]  # raises with its message

    def _check_actions(self, actions, check_masks: bool = True) -> list[torch.Tensor]:
        if not isinstance(actions, (list, tuple)) or len(actions) != self.n_seats:
            raise ValueError(f"actions must be a list of {self.n_seats} per-seat tensors "
                             f"({'two_player' if self.two_player else 'single-player: seat 0 only'}), "
                             f"got {type(actions).__name__} of length {len(actions) if hasattr(actions, '__len__') else '?'}")
        self.action_masks()
        masks = self._avail
        out = []
        for s, a in enumerate(actions):
            a = torch.as_tensor(a, device=self.device)
            shape = (self.num_envs, self.n_agents[s])
            if tuple(a.shape) != shape:
                raise ValueError(f"actions[{s}] must have shape {shape} (num_envs, n_agents), got {tuple(a.shape)}")
            if a.dtype.is_floating_point or a.dtype == torch.bool or a.is_complex():
                raise ValueError(f"actions[{s}] must be an integer tensor, got dtype {a.dtype}")
            a = a.long()
            bad_range = (a < 0) | (a >= self.n_actions[s])
            if bool(bad_range.any()):
                e, i = torch.nonzero(bad_range)[0].tolist()
                raise ValueError(f"actions[{s}][{e}, {i}] = {int(a[e, i])} is out of range; "
                                 f"allowed: 0..{self.n_actions[s] - 1}")
            legal = masks[s].gather(2, a[..., None]).squeeze(-1)
            if check_masks and s not in self.engine.scripted_sides and not bool(legal.all()):
                e, i = torch.nonzero(~legal)[0].tolist()
                allowed = torch.nonzero(masks[s][e, i]).flatten().tolist()
                raise ValueError(f"actions[{s}][{e}, {i}] = {int(a[e, i])} is not available to agent {i} of seat {s} "
                                 f"in game {e}; available actions: {allowed}")
            out.append(a)
        return out
