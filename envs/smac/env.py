"""``SMACEnv`` (exported as ``StarCraft2Env``): SMAC's ``smac.env.StarCraft2Env``, method by method,
on our engine.

Code written for SMAC runs unchanged::

    env = SMACEnv("3m", seed=0)
    env_info = env.get_env_info()          # obs_shape, state_shape, n_actions, n_agents, episode_limit,
    env.reset()                            # agent_features, enemy_features
    terminated = False
    while not terminated:
        obs, state = env.get_obs(), env.get_state()
        actions = [pick(env.get_avail_agent_actions(i)) for i in range(env.n_agents)]
        reward, terminated, info = env.step(actions)   # battle_won, dead_allies, dead_enemies
    env.close()

The constructor takes SMAC's arguments, in SMAC's order and with SMAC's defaults, plus ``device``,
``backend`` ("sim" or "sc2", the real game: ``sc2_engine``), ``games`` (ready real-game
connections), ``engine`` (the build of the simulator's rules, ``battle.SMACBattle``: "auto" = the
build of ``device``) and ``torch_threads`` (torch threads while torch code runs: a reset, the GPU lane). What each SMAC method and attribute is here:

- the same as SMAC (same values on the same unit state): ``step``, ``reset``, ``get_obs``,
  ``get_obs_agent``, ``get_state``, ``get_state_dict``, ``get_avail_actions``,
  ``get_avail_agent_actions``, ``get_obs_size``, ``get_state_size``, ``get_obs_move_feats_size``,
  ``get_obs_enemy_feats_size``, ``get_obs_ally_feats_size``, ``get_obs_own_feats_size``,
  ``get_ally_num_attributes``, ``get_enemy_num_attributes``, ``get_visibility_matrix``,
  ``get_unit_types``, ``get_unit_type_id``, ``get_unit_by_id``, ``get_total_actions``,
  ``get_env_info``, ``get_stats``, ``unit_shoot_range`` (6), ``unit_sight_range`` (9),
  ``unit_max_cooldown``, ``unit_max_shield``, ``can_move``, ``check_bounds``,
  ``get_surrounding_points``, ``get_surrounding_pathing``, ``get_surrounding_height``,
  ``only_medivac_left``, ``update_units`` (the game-end code of the current state), ``init_units``,
  ``full_restart``, ``distance``, ``seed``, ``close``, ``get_agent_action_heuristic`` (its
  order as a ``heuristic.HeuristicOrder`` instead of a protobuf); attributes ``agents``,
  ``enemies`` (``unit_records.UnitView``), ``pathing_grid``, ``terrain_height``, ``map_x``,
  ``map_y``, ``max_distance_x``/``max_distance_y`` (the playable width/height), ``last_action``,
  ``max_reward``, ``reward``, ``n_actions_no_attack``, ``n_actions_move``, ``n_obs_pathing``,
  ``n_obs_height``, ``death_tracker_ally``/``death_tracker_enemy``, ``previous_ally_units``/
  ``previous_enemy_units``, ``battles_won``, ``battles_game``, ``timeouts``, ``force_restarts``,
  ``heuristic_targets``, the unit-type ids (``marine_id``, …, ``_min_unit_type``) and every flag;
- ``heuristic_ai=True``: SMAC's heuristic (``heuristic.py``); like SMAC it ignores the given actions
  (they still make ``last_action``) and writes the actions it took into the given list/array;
- ``difficulty``: the built-in AI's level of the real game (``backend="sc2"``). The simulator's enemy
  is the maps' scripted attack (SMAC's results are at "7"), so another value warns that it has no
  effect; a value SMAC does not know raises;
- ``step`` after the episode ended raises ``RuntimeError`` (SMAC would count the finished battle
  again in ``get_stats``); an action that is not an integer (1.7) raises ``ValueError`` (SMAC
  truncates it with ``int``); an unavailable action raises ``ValueError`` (SMAC: ``AssertionError``);
- ``render(mode="rgb_array")`` draws the map and units as an image; ``render("human")`` raises (no
  window); ``save_replay`` saves the real game's replay (``backend="sc2"``); on the simulator it
  writes the episode as an animated GIF (frames kept when ``replay_dir`` is given); ``get_agent_action`` and ``reward_battle`` raise (SMAC
  builds protobuf commands and computes the reward inside ``step``; here ``step`` does both);
- ``get_stats()["win_rate"]`` is 0.0 before any battle (SMAC divides by zero);
- ``game_version``, ``replay_dir``/``replay_prefix`` (used by ``save_replay``), ``window_size_x``/
  ``window_size_y`` and ``debug`` (logs actions and rewards at DEBUG level) are kept as attributes;
  ``step_mul`` and ``move_amount`` must keep SMAC's values 8 and 2.

Observations and unit records are computed once per step; code that edits the engine's tensors
directly (scenario set-up) calls ``init_units()`` afterwards (with ``_battle.state_changed()``).

Unlike SMAC, the engine is ready (and the first episode started) when the constructor returns, so
``map_x``, ``pathing_grid``, ``get_unit_types()`` and ``max_reward`` (with the enemies' health and
shields) have their values before the first ``reset``.
"""

from __future__ import annotations

import enum
import functools
import logging
import math
import warnings
from pathlib import Path

import numpy as np
import torch

from selfplay.utils.threads import torch_threads

from .battle import SMACBattle
from .heuristic import HeuristicOrder, heuristic_order
from .multiagentenv import MultiAgentEnv
from .unit_records import EngineSnapshot, engine_tags, unit_type_ids, unit_views

log = logging.getLogger(__name__)

RENDER_SCALE = 8  # pixels per map unit of render() and the simulator's replay GIFs
DIFFICULTIES = {"1": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9, "A": 10}  # sc2api Difficulty


class Direction(enum.IntEnum):
    NORTH = 0
    SOUTH = 1
    EAST = 2
    WEST = 3


class _Battle(SMACBattle):
    """``SMACBattle`` whose seat-0 actions may skip the availability check while ``unchecked``: SMAC's
    heuristic orders attacks beyond the shooting range (the unit walks to the target)."""

    unchecked = False

    def _check_actions(self, actions, check_masks: bool = True):
        return super()._check_actions(actions, check_masks and not self.unchecked)


def _checked_difficulty(step_mul, move_amount, difficulty, backend: str) -> str:
    """SMAC's ``difficulty`` as a string, after the arguments the simulator fixes are checked."""
    if step_mul != 8:
        raise ValueError(f"step_mul must be 8 (the simulator's fixed step), got {step_mul!r}")
    if move_amount != 2:
        raise ValueError(f"move_amount must be 2 (SMAC's value), got {move_amount!r}")
    if str(difficulty) not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {list(DIFFICULTIES)} (SMAC's levels), got {difficulty!r}")
    difficulty = str(difficulty)
    if backend == "sim" and difficulty != "7":
        warnings.warn(f"difficulty={difficulty!r} has no effect on the simulator: its enemy is the maps' "
                      "scripted attack, as SMAC's at its default '7'", stacklevel=3)
    return difficulty


def _one_torch_thread(method):
    """Run ``method`` with one torch thread and restore the caller's count afterwards: one game's tensors
    are tiny, and torch's default thread pool makes them several times slower (measured 3.7× on 3m with
    2 cores). Costs ~1.5 µs per call; nothing process-wide is left changed."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if self._battle.fast and method.__name__ != "reset":  # the compiled lane runs no torch operation
            return method(self, *args, **kwargs)
        with torch_threads(self.torch_threads):
            return method(self, *args, **kwargs)

    return wrapper


class SMACEnv(MultiAgentEnv):
    """SMAC's ``StarCraft2Env`` on the simulator or the real game (module docstring)."""

    def __init__(self, map_name: str = "8m", step_mul: int = 8, move_amount: float = 2, difficulty: str = "7",
                 game_version: str | None = None, seed: int | None = None, continuing_episode: bool = False,
                 obs_all_health: bool = True, obs_own_health: bool = True, obs_last_action: bool = False,
                 obs_pathing_grid: bool = False, obs_terrain_height: bool = False, obs_instead_of_state: bool = False,
                 obs_timestep_number: bool = False, state_last_action: bool = True, state_timestep_number: bool = False,
                 reward_sparse: bool = False, reward_only_positive: bool = True, reward_death_value: float = 10,
                 reward_win: float = 200, reward_defeat: float = 0, reward_negative_scale: float = 0.5,
                 reward_scale: bool = True, reward_scale_rate: float = 20, replay_dir: str = "",
                 replay_prefix: str = "",
                 window_size_x: int = 1920, window_size_y: int = 1200, heuristic_ai: bool = False,
                 heuristic_rest: bool = False, debug: bool = False, device: str = "cpu", backend: str = "sim",
                 games: list | None = None, torch_threads: int | None = 1, engine: str = "auto"):
        self.torch_threads = torch_threads  # torch threads while the env computes (None: the caller's)
        difficulty = _checked_difficulty(step_mul, move_amount, difficulty, backend)
        self.map_name = map_name
        self._move_amount = move_amount
        self._step_mul = step_mul
        self.difficulty = difficulty
        self.game_version = game_version
        self._seed = seed
        self.continuing_episode = continuing_episode
        if obs_all_health:
            obs_own_health = True  # SMAC: own health is part of "all health"
        self.obs_all_health, self.obs_own_health = obs_all_health, obs_own_health
        self.obs_last_action, self.obs_pathing_grid = obs_last_action, obs_pathing_grid
        self.obs_terrain_height, self.obs_instead_of_state = obs_terrain_height, obs_instead_of_state
        self.obs_timestep_number = obs_timestep_number
        self.state_last_action, self.state_timestep_number = state_last_action, state_timestep_number
        self.reward_sparse, self.reward_only_positive = reward_sparse, reward_only_positive
        self.reward_death_value, self.reward_win, self.reward_defeat = reward_death_value, reward_win, reward_defeat
        self.reward_negative_scale, self.reward_scale = reward_negative_scale, reward_scale
        self.reward_scale_rate = reward_scale_rate
        self.replay_dir, self.replay_prefix = replay_dir, replay_prefix
        self.window_size = (window_size_x, window_size_y)
        self.heuristic_ai, self.heuristic_rest, self.debug = bool(heuristic_ai), bool(heuristic_rest), bool(debug)
        self._battle = self._start_battle(device, backend, games, engine)
        self._read_map_info()
        self._reset_counters()
        self._battle.reset()
        self._init_unit_type_ids()

    def _flags(self) -> dict:
        """The observation and reward flags, as ``SMACBattle`` takes them."""
        names = ("obs_all_health", "obs_own_health", "obs_last_action", "obs_pathing_grid", "obs_terrain_height",
                 "obs_timestep_number", "state_last_action", "state_timestep_number", "reward_sparse",
                 "reward_only_positive", "reward_scale")
        flags = {name: getattr(self, name) for name in names}
        for name in ("reward_death_value", "reward_win", "reward_defeat", "reward_negative_scale", "reward_scale_rate"):
            flags[name] = float(getattr(self, name))
        return flags

    def _start_battle(self, device, backend: str, games, engine: str) -> _Battle:
        """The one-game battle against the scripted enemy (the real game's built-in AI for ``backend="sc2"``)."""
        if backend == "sc2" and games is None:
            from .maps import get_map
            from .sc2_engine import SC2Game

            games = [SC2Game(get_map(self.map_name), False, self._seed, difficulty=DIFFICULTIES[self.difficulty],
                             game_version=self.game_version)]
        extra = {"games": games} if games is not None else {}
        return _Battle(self.map_name, 1, two_player=False, device=device, seed=self._seed, auto_reset=False,
                       backend=backend, engine=engine, **extra, **self._flags())

    def _read_map_info(self) -> None:
        """SMAC's per-map attributes: sizes, races, bits, attribute names, grids."""
        b = self._battle
        spec = b.spec
        view = b.views[0]
        self._view = view
        self.n_agents = b.n_agents[0]
        self.n_enemies = b.n_enemies[0]
        self.episode_limit = b.episode_limit
        self.n_actions_no_attack = 6
        self.n_actions_move = 4
        self.n_obs_pathing = 8
        self.n_obs_height = 9
        self.n_actions = self.n_actions_no_attack + self.n_enemies
        self._agent_race, self._bot_race = spec.ally_race, spec.enemy_race
        self.shield_bits_ally = 1 if self._agent_race == "P" else 0
        self.shield_bits_enemy = 1 if self._bot_race == "P" else 0
        self.unit_type_bits = spec.unit_type_bits
        self.map_type = spec.map_type
        self.max_reward = b.tracker.max_reward(0)  # SMAC adds the enemies' health_max + shield_max at launch
        self.ally_state_attr_names = ["health", "energy/cooldown", "rel_x", "rel_y"]
        self.enemy_state_attr_names = ["health", "rel_x", "rel_y"]
        if self.shield_bits_ally:
            self.ally_state_attr_names.append("shield")
        if self.shield_bits_enemy:
            self.enemy_state_attr_names.append("shield")
        bits = [f"type_{k}" for k in range(self.unit_type_bits)]
        self.ally_state_attr_names += bits
        self.enemy_state_attr_names += bits
        self.map_x, self.map_y = spec.map_x, spec.map_y
        self.max_distance_x, self.max_distance_y = spec.playable_width, spec.playable_height
        self.pathing_grid = view.pathing.cpu().numpy().astype(bool)
        self.terrain_height = view.terrain_height.cpu().numpy().astype(np.float64)
        self._ally_types, self._enemy_types = unit_type_ids(spec)

    def _reset_counters(self) -> None:
        """SMAC's statistics and the episode bookkeeping, at launch."""
        self.renderer = None
        self._recorder = None
        self.last_stats = None
        self.battles_won = self.battles_game = self.timeouts = self.force_restarts = 0
        self._episode_count = self._episode_steps = self._total_steps = 0
        self._episode_index = 0  # episodes started (new unit tags each one)
        self.reward = 0
        self.win_counted = self.defeat_counted = False
        self.heuristic_targets = [None] * self.n_agents
        self._terminated = False
        self._views_cache = None
        self._obs_cache = None  # the current step's observations (get_obs_agent reads one of them)
        self._previous: EngineSnapshot | None = None

    # ------------------------------------------------------------- unit types
    def _init_unit_type_ids(self) -> None:
        """SMAC's ``_init_ally_unit_types``: the ids of the ally types, from the smallest one (the real
        game's ids with ``backend="sc2"``)."""
        self.marine_id = self.marauder_id = self.medivac_id = 0
        self.hydralisk_id = self.zergling_id = self.baneling_id = 0
        self.stalker_id = self.colossus_id = self.zealot_id = 0
        m = self._min_unit_type = min(self._unit_types_now()[: self.n_agents])
        names = {"marines": ("marine",), "stalkers_and_zealots": ("stalker", "zealot"),
                 "colossi_stalkers_zealots": ("colossus", "stalker", "zealot"),
                 "MMM": ("marauder", "marine", "medivac"), "zealots": ("zealot",), "hydralisks": ("hydralisk",),
                 "stalkers": ("stalker",), "colossus": ("colossus",), "bane": ("baneling", "zergling")}
        for k, name in enumerate(names[self.map_type]):
            setattr(self, f"{name}_id", m + k)

    def _unit_types_now(self) -> list[int]:
        types = getattr(self._battle.engine, "unit_types", None)  # the real game's, when it reports them
        if isinstance(types, torch.Tensor):
            return [int(t) for t in types[0].tolist()]
        return self._ally_types + self._enemy_types

    def get_unit_types(self) -> list[int]:
        """The SC2 unit-type id of every ally (agent order) then every enemy (slot order)."""
        return self._unit_types_now()

    # ------------------------------------------------------------ unit records
    def _views(self):
        if self._views_cache is None:
            eng = self._battle.engine
            snap = EngineSnapshot.of(eng, 0)
            types, tags = self._unit_types_now(), engine_tags(eng, 0, self._episode_index)
            self._views_cache = (unit_views(eng, snap, 0, types, tags),
                                 unit_views(eng, snap, 1, types, tags, report_cooldown=False))
        return self._views_cache

    @property
    def agents(self) -> dict:
        """``{agent id: UnitView}`` of the current state (SMAC's ``agents``)."""
        return self._views()[0]

    @property
    def enemies(self) -> dict:
        """``{enemy id: UnitView}`` of the current state (SMAC's ``enemies``)."""
        return self._views()[1]

    @property
    def previous_ally_units(self):
        """The allies' records before the last step (``None`` right after ``reset``), as SMAC keeps them."""
        return self._previous_views(0)

    @property
    def previous_enemy_units(self):
        return self._previous_views(1)

    def _previous_views(self, side: int):
        if self._previous is None:
            return None
        eng = self._battle.engine
        types, tags = self._unit_types_now(), engine_tags(eng, 0, self._episode_index)
        return unit_views(eng, self._previous, side, types, tags, report_cooldown=side == 0)

    @property
    def death_tracker_ally(self) -> np.ndarray:
        """1.0 for each dead ally (SMAC's death tracker)."""
        return (~self._battle.engine.alive[0, self._view.ally_slice]).cpu().numpy().astype(np.float64)

    @property
    def death_tracker_enemy(self) -> np.ndarray:
        return (~self._battle.engine.alive[0, self._view.enemy_slice]).cpu().numpy().astype(np.float64)

    @property
    def last_action(self) -> np.ndarray:
        """(n_agents, n_actions) one-hot of the actions given at the last step (zeros after reset)."""
        return self._battle.last_action[0][0].cpu().numpy().astype(np.float64)

    def _snapshot(self, ep) -> EngineSnapshot:
        """The units before the last step, from the step records (``Episode.before_*``; views that the
        next step rewrites, made into ``UnitView`` copies when read)."""
        kept = self.__dict__.get("_before")
        if kept is None or kept[0] is not ep:
            kept = self._before = (ep, EngineSnapshot(*(getattr(ep, f"before_{name}")[0]
                                                        for name in EngineSnapshot.FIELDS)))
        return kept[1]

    def get_unit_by_id(self, a_id: int):
        """The record of agent ``a_id``."""
        self._check_agent(a_id)
        return self.agents[int(a_id)]

    # ----------------------------------------------------------- episodes
    @_one_torch_thread
    def reset(self):
        """Start a new episode; returns ``(obs, state)`` like SMAC."""
        self._battle.reset()
        if self.replay_dir and self._battle.backend == "sim":  # the episode's frames for save_replay
            from .render import ReplayRecorder

            if self._recorder is None:
                self._recorder = ReplayRecorder(self._battle, 0, scale=RENDER_SCALE)
            self._recorder.clear()
            self._recorder.capture()
        self._episode_index += 1
        self._episode_steps = 0
        self._terminated = False
        self.win_counted = self.defeat_counted = False
        self.heuristic_targets = [None] * self.n_agents
        self._views_cache = self._obs_cache = None
        self._previous = None
        if self.debug:
            log.debug("Started Episode %d", self._episode_count)
        return self.get_obs(), self.get_state()

    def full_restart(self):
        """SMAC restarts the game process after a connection error; here: restart the battle."""
        self._battle.reset()
        self._views_cache = self._obs_cache = None
        self.force_restarts += 1

    def _as_actions(self, actions) -> list[int]:
        values = None  # the common case first: integer actions, each in range
        if isinstance(actions, torch.Tensor):
            if not (actions.dtype.is_floating_point or actions.dtype.is_complex or actions.dtype == torch.bool):
                values = actions.detach().cpu().reshape(-1).tolist()
        elif isinstance(actions, np.ndarray) and actions.dtype.kind in "iu":
            values = actions.reshape(-1).tolist()
        if values is not None and len(values) == self.n_agents and all(0 <= v < self.n_actions for v in values):
            return values
        if torch.is_tensor(actions):
            values = actions.detach().cpu().reshape(-1).tolist()
        else:
            values = np.asarray(actions, dtype=object).reshape(-1).tolist()
        if len(values) != self.n_agents:
            raise ValueError(f"actions must have one entry per agent ({self.n_agents}), got {len(values)}")
        out = []
        for i, v in enumerate(values):
            if torch.is_tensor(v) and v.numel() == 1:
                v = v.item()
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise ValueError(f"actions[{i}] must be an integer action id, got {v!r}")
            if isinstance(v, (float, np.floating)) and not float(v).is_integer():
                raise ValueError(f"actions[{i}] = {v!r} is not an integer action id (SMAC would truncate it)")
            a = int(v)
            if not 0 <= a < self.n_actions:
                raise ValueError(f"actions[{i}] = {a} is out of range; allowed: 0..{self.n_actions - 1}")
            out.append(a)
        return out

    @_one_torch_thread
    def step(self, actions):
        """Apply one action per agent; returns ``(reward, terminated, info)`` with ``info`` holding
        ``battle_won``, ``dead_allies`` and ``dead_enemies`` at every step (and ``episode_limit`` on a
        timeout with ``continuing_episode``)."""
        if self._terminated:
            raise RuntimeError("the episode has ended (step returned terminated=True); call reset() before step()")
        given = self._as_actions(actions)
        taken = given
        if self.heuristic_ai:
            taken = self._heuristic_actions()
            try:  # SMAC writes the actions the heuristic took into the caller's actions
                for i, a in enumerate(taken):
                    actions[i] = a
            except TypeError:
                pass
        if self.debug:
            log.debug("Actions %s", taken)
        b = self._battle
        self._views_cache = self._obs_cache = None
        if b.fast:  # the compiled lane: one call, its results read from the battle's step records
            b._seats[0].actions[0] = taken  # checked by _as_actions, or the heuristic's
            b._fast_advance(None, check_masks=not self.heuristic_ai)
            ep = b._episode
            self._previous = self._snapshot(ep)
            reward, terminated, won = float(ep.reward[0, 0]), bool(ep.done[0]), bool(ep.won[0, 0])
            dead_allies, dead_enemies = int(ep.dead[0, 0]), int(ep.dead[1, 0])
            winner, timeout = int(ep.winner[0]), bool(ep.timeout[0])
        else:
            self._previous = EngineSnapshot.of(b.engine, 0)
            b.unchecked = self.heuristic_ai
            try:
                obs, rewards, done, info = b.step([torch.tensor([taken], dtype=torch.long)])
            finally:
                b.unchecked = False
            self._obs_cache = obs[0][0].cpu().numpy()
            reward, terminated, won = float(rewards[0][0]), bool(done[0]), bool(info["battle_won"][0][0])
            dead_allies, dead_enemies = int(info["dead_allies"][0][0]), int(info["dead_enemies"][0][0])
            winner, timeout = int(info["winner"][0]), bool(info["timeout"][0])
        if self.heuristic_ai:  # SMAC's last_action is the given actions (observations follow it)
            b.last_action[0][0] = torch.nn.functional.one_hot(torch.tensor(given), self.n_actions).float().to(b.device)
            b._invalidate()
            self._obs_cache = None
        if self._recorder is not None:
            self._recorder.capture()
        self._episode_steps += 1
        self._total_steps += 1
        out = {"battle_won": won, "dead_allies": dead_allies, "dead_enemies": dead_enemies}
        if terminated:
            self.battles_game += 1
            self._episode_count += 1
            if won:
                self.battles_won += 1
                self.win_counted = True
            elif winner == 1:
                self.defeat_counted = True
            if timeout:
                self.timeouts += 1
                if self.continuing_episode:
                    out["episode_limit"] = True
        self._terminated = terminated
        self.reward = reward
        if self.debug:
            log.debug("Reward = %s", self.reward)
        return self.reward, terminated, out

    # ------------------------------------------------------------ heuristic
    def _heuristic_actions(self) -> list[int]:
        agents, out = self.agents, []
        for a_id in range(self.n_agents):
            if agents[a_id].health == 0:
                out.append(0)  # SMAC asserts a dead unit's no-op; its command is nothing
                continue
            out.append(self.get_agent_action_heuristic(a_id, 0)[1])
        return out

    def get_agent_action_heuristic(self, a_id: int, action: int) -> tuple[HeuristicOrder | None, int]:
        """SMAC's heuristic for agent ``a_id`` (``heuristic.py``): ``(order, action number)``; it
        updates ``heuristic_targets`` as SMAC does. ``action`` is ignored, as in SMAC."""
        self._check_agent(a_id)
        avail = self.get_avail_agent_actions(a_id) if self.heuristic_rest else None
        target, order, number = heuristic_order(
            self.agents[a_id], self.heuristic_targets[a_id], self.agents, self.enemies, medivac_id=self.medivac_id,
            marauder_id=self.marauder_id, max_dist=math.hypot(self.max_distance_x, self.max_distance_y),
            avail=avail, move_amount=self._move_amount, n_actions_no_attack=self.n_actions_no_attack)
        self.heuristic_targets[a_id] = target
        return order, number

    def get_agent_action(self, a_id, action):
        raise NotImplementedError("SMAC's get_agent_action builds the game's protobuf command; here step() "
                                  "hands actions to the engine (backend='sc2' sends them as raw commands: "
                                  "envs.smac.sc2_engine)")

    def reward_battle(self):
        raise NotImplementedError("SMAC computes the battle reward inside step() (calling it again would count "
                                  "deaths twice); here too: step() returns it")

    # ------------------------------------------------------------ features
    def _observations(self) -> np.ndarray:
        """(n_agents, obs_size) float32: the current observations (the battle's buffer on the compiled
        lane: callers copy)."""
        b = self._battle
        if b.fast:
            return b._fast_seats()[0].obs[0]
        if self._obs_cache is None:
            self._obs_cache = b.get_obs()[0][0].cpu().numpy()
        return self._obs_cache

    @_one_torch_thread
    def get_obs(self):
        return list(self._observations().copy())  # SMAC's list of fresh per-agent arrays

    @_one_torch_thread
    def get_obs_agent(self, agent_id: int):
        self._check_agent(agent_id)
        return self._observations()[int(agent_id)].copy()

    @_one_torch_thread
    def get_state(self):
        if self.obs_instead_of_state:
            return np.concatenate(self.get_obs(), axis=0).astype(np.float32)
        b = self._battle
        return b._fast_seats(with_state=True)[0].state[0].copy() if b.fast else b.get_state()[0][0].cpu().numpy()

    def get_state_dict(self) -> dict:
        """SMAC's state as a dict: ``allies`` (n_agents, ally attributes), ``enemies`` (n_enemies, enemy
        attributes), ``last_action`` if ``state_last_action``, ``timestep`` if ``state_timestep_number``."""
        state = self._battle.get_state()[0][0].cpu().numpy().astype(np.float64)
        n, m = self.n_agents, self.n_enemies
        nf_al, nf_en = self.get_ally_num_attributes(), self.get_enemy_num_attributes()
        out = {"allies": state[: n * nf_al].reshape(n, nf_al),
               "enemies": state[n * nf_al: n * nf_al + m * nf_en].reshape(m, nf_en)}
        if self.state_last_action:
            out["last_action"] = self.last_action
        if self.state_timestep_number:
            out["timestep"] = self._episode_steps / self.episode_limit
        return out

    def get_ally_num_attributes(self) -> int:
        return len(self.ally_state_attr_names)

    def get_enemy_num_attributes(self) -> int:
        return len(self.enemy_state_attr_names)

    @_one_torch_thread
    def get_avail_agent_actions(self, agent_id: int):
        self._check_agent(agent_id)
        return self._masks()[agent_id].tolist()

    @_one_torch_thread
    def get_avail_actions(self):
        return self._masks().tolist()

    def _masks(self) -> np.ndarray:
        """int (n_agents, n_actions): the current action masks."""
        b = self._battle
        return (b._fast_masks()[0][0] if b.fast else b.action_masks()[0][0].cpu().numpy()).astype(np.int64)

    def get_obs_move_feats_size(self) -> int:
        return self._view.move_feats_size

    def get_obs_enemy_feats_size(self) -> tuple[int, int]:
        """(n_enemies, features per enemy)."""
        return self.n_enemies, self._view.enemy_feats_size

    def get_obs_ally_feats_size(self) -> tuple[int, int]:
        """(n_agents - 1, features per ally)."""
        return self.n_agents - 1, self._view.ally_feats_size

    def get_obs_own_feats_size(self) -> int:
        return self._view.own_feats_size

    def get_obs_size(self) -> int:
        return self._battle.obs_size[0]

    def get_state_size(self) -> int:
        if self.obs_instead_of_state:
            return self.get_obs_size() * self.n_agents
        return self._battle.state_size[0]

    def get_total_actions(self) -> int:
        return self.n_actions

    def get_env_info(self) -> dict:
        info = super().get_env_info()
        info["agent_features"] = self.ally_state_attr_names
        info["enemy_features"] = self.enemy_state_attr_names
        return info

    def get_visibility_matrix(self) -> np.ndarray:
        """bool (n_agents, n_agents + n_enemies): which living units each living agent sees (centre
        distance < sight range 9); allies first, symmetric among allies, no agent sees itself."""
        eng, v = self._battle.engine, self._view
        pa, pe = (p[0].cpu().numpy().astype(np.float64) for p in v.positions())
        alive_a = eng.alive[0, v.ally_slice].cpu().numpy()
        alive_e = eng.alive[0, v.enemy_slice].cpu().numpy()
        sight = self.unit_sight_range(0)
        d_aa = np.hypot(*(pa[None, :, :] - pa[:, None, :]).transpose(2, 0, 1))
        d_ae = np.hypot(*(pe[None, :, :] - pa[:, None, :]).transpose(2, 0, 1))
        allies = alive_a[:, None] & alive_a[None, :] & (d_aa < sight)
        np.fill_diagonal(allies, False)
        enemies = alive_a[:, None] & alive_e[None, :] & (d_ae < sight)
        return np.concatenate([allies, enemies], axis=1)

    # --------------------------------------------------- SMAC's unit helpers
    @staticmethod
    def distance(x1, y1, x2, y2):
        return math.hypot(x2 - x1, y2 - y1)

    def unit_shoot_range(self, agent_id):
        return 6

    def unit_sight_range(self, agent_id):
        return 9

    def unit_max_cooldown(self, unit):
        switcher = {self.marine_id: 15, self.marauder_id: 25, self.medivac_id: 200, self.stalker_id: 35,
                    self.zealot_id: 22, self.colossus_id: 24, self.hydralisk_id: 10, self.zergling_id: 11,
                    self.baneling_id: 1}
        return switcher.get(unit.unit_type, 15)

    def unit_max_shield(self, unit):
        if unit.unit_type in (74, self.stalker_id):
            return 80
        if unit.unit_type in (73, self.zealot_id):
            return 50
        if unit.unit_type in (4, self.colossus_id):
            return 150
        return None

    def check_bounds(self, x, y) -> bool:
        return 0 <= x < self.map_x and 0 <= y < self.map_y

    def can_move(self, unit, direction) -> bool:
        """Is the cell half a move away in ``direction`` (``Direction``) inside the map and walkable?"""
        m = self._move_amount / 2
        x, y = unit.pos.x, unit.pos.y
        dx, dy = {Direction.NORTH: (0, m), Direction.SOUTH: (0, -m), Direction.EAST: (m, 0),
                  Direction.WEST: (-m, 0)}[Direction(direction)]
        cx, cy = int(x + dx), int(y + dy)
        return bool(self.check_bounds(cx, cy) and self.pathing_grid[cx, cy])

    def get_surrounding_points(self, unit, include_self: bool = False):
        x, y, ma = int(unit.pos.x), int(unit.pos.y), self._move_amount
        points = [(x, y + 2 * ma), (x, y - 2 * ma), (x + 2 * ma, y), (x - 2 * ma, y),
                  (x + ma, y + ma), (x - ma, y - ma), (x + ma, y - ma), (x - ma, y + ma)]
        if include_self:
            points.append((x, y))
        return points

    def get_surrounding_pathing(self, unit):
        return [self.pathing_grid[int(x), int(y)] if self.check_bounds(x, y) else 1
                for x, y in self.get_surrounding_points(unit)]

    def get_surrounding_height(self, unit):
        return [self.terrain_height[int(x), int(y)] if self.check_bounds(x, y) else 1
                for x, y in self.get_surrounding_points(unit, include_self=True)]

    def get_unit_type_id(self, unit, ally: bool) -> int:
        """The unit's type index in the map's one-hot type bits (SMAC's rule, per map type)."""
        if ally:
            return unit.unit_type - self._min_unit_type
        t = unit.unit_type
        if self.map_type == "stalkers_and_zealots":
            return t - 73
        if self.map_type == "colossi_stalkers_zealots":
            return 0 if t == 4 else 1 if t == 74 else 2
        if self.map_type == "bane":
            return 0 if t == 9 else 1
        if self.map_type == "MMM":
            return 0 if t == 51 else 1 if t == 48 else 2
        raise ValueError(f"map type {self.map_type!r} has one unit type: enemies have no type id (SMAC fails here)")

    def only_medivac_left(self, ally: bool) -> bool:
        """SMAC's rule, as written: allies when every living ally is a Medivac; enemies when exactly one
        non-(ally-)Medivac enemy lives and it is a Medivac (type 54)."""
        if self.map_type != "MMM":
            return False
        units = self.agents if ally else self.enemies
        alive = [u for u in units.values() if u.health > 0 and u.unit_type != self.medivac_id]
        if ally:
            return len(alive) == 0
        return len(alive) == 1 and alive[0].unit_type == 54

    def init_units(self):
        """Rebuild ``agents``/``enemies`` from the engine (SMAC: from the game's observation)."""
        self._views_cache = self._obs_cache = None
        self._battle._invalidate()  # and the features
        self._views()

    def update_units(self):
        """SMAC's game-end code of the current units: 1 won, -1 lost, 0 both dead, None ongoing."""
        self._views_cache = self._obs_cache = None
        n_al = sum(u.health > 0 for u in self.agents.values())
        n_en = sum(u.health > 0 for u in self.enemies.values())
        if (n_al == 0 and n_en > 0) or self.only_medivac_left(ally=True):
            return -1
        if (n_al > 0 and n_en == 0) or self.only_medivac_left(ally=False):
            return 1
        if n_al == 0 and n_en == 0:
            return 0
        return None

    # -------------------------------------------------------------- stats
    def get_stats(self) -> dict:
        return {
            "battles_won": self.battles_won,
            "battles_game": self.battles_game,
            "battles_draw": self.timeouts,
            "win_rate": self.battles_won / self.battles_game if self.battles_game else 0.0,
            "timeouts": self.timeouts,
            "restarts": self.force_restarts,
        }

    # -------------------------------------------------------------- misc
    def seed(self):
        """The seed given to the constructor (SMAC's ``seed()``)."""
        return self._seed

    def render(self, mode: str = "human"):
        """``mode="rgb_array"``: a (map_y * 8, map_x * 8, 3) uint8 image, north up (``render.draw_frame``:
        terrain from the pathing grid and height, allies red and enemies blue discs of their radius with
        a dot of their type's colour, health and shield bars, attack lines).
        ``mode="human"`` needs a window, which this environment does not open."""
        if mode != "rgb_array":
            raise RuntimeError(f"render(mode={mode!r}) needs a window (SMAC draws with pygame); this environment "
                               "only renders mode='rgb_array'")
        from .render import draw_frame

        return draw_frame(self._battle, 0, RENDER_SCALE)

    def save_replay(self):
        """The real game (``backend="sc2"``): save its replay under ``replay_dir`` with ``replay_prefix``
        (default: the map name). The simulator: write the current (or last) episode as an animated GIF
        ``replay_dir/<prefix>_<episode>.gif``, one frame per step from the reset (frames are kept only
        when ``replay_dir`` is given). Returns the path."""
        games = getattr(self._battle.engine, "games", None)
        if games and hasattr(games[0], "save_replay"):
            return games[0].save_replay(self.replay_dir or "", self.replay_prefix or self.map_name)
        if self._recorder is None:
            raise RuntimeError("save_replay on the simulator writes a GIF of the episode: create the environment "
                               "with replay_dir=DIR (and reset it) so that its frames are kept")
        out = Path(self.replay_dir)
        out.mkdir(parents=True, exist_ok=True)
        return str(self._recorder.save_gif(out / f"{self.replay_prefix or self.map_name}_{self._episode_index}.gif"))

    def close(self):
        self._battle.close()  # ends the real games of backend="sc2"; nothing for the simulator

    def _check_agent(self, agent_id: int) -> None:
        if not 0 <= int(agent_id) < self.n_agents:
            raise ValueError(f"agent_id must be in 0..{self.n_agents - 1}, got {agent_id!r}")
