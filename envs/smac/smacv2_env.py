"""SMACv2's API on the simulator: ``SMACv2Env`` (its ``StarCraft2Env``) and
``StarCraftCapabilityEnvWrapper`` (docs/design/smacv2.md).

EPyMARL's ``sc2v2`` configs run unchanged through a one-line shim
(``smacv2/env/starcraft2/wrapper.py``: ``from selfplay.envs.smac import
StarCraftCapabilityEnvWrapper``)::

    env = StarCraftCapabilityEnvWrapper(capability_config=cfg, map_name="10gen_protoss",
                                        use_unit_ranges=True, obs_own_pos=True, seed=0)
    obs, state = env.reset()                  # SMACv2's reset draws the episode, returns (obs, state)
    reward, terminated, info = env.step(actions)

``SMACv2Env(map_name, capability_config=..., **flags)`` takes SMACv2's arguments with its defaults;
its ``reset(episode_config)`` plays the given draw (``team_gen`` {ally_team, enemy_team},
``ally_start_positions``, ``enemy_start_positions``, ``enemy_mask``), as SMACv2's does.  The enemy
is the simulator's scripted attack (``smacv2_spec``); ``difficulty`` other than "7" warns.  Not
modelled (a one-line error names the argument): the ``attack``/``health`` capabilities,
``heuristic_ai``, ``step_mul`` other than 8 and ``move_amount`` other than 2.

The game runs on the compiled engine of ``smacv2_games.SMACv2Games`` (one game): a reset writes
the draw into it, and a step is one compiled call.

Randomness: the wrapper's draws and the observation bookkeeping (``prob_obs_enemy``) come from
numpy generators, and the battles' cooldown jitter from the engine's, all derived from ``seed``:
the same seed gives the same episodes.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from .engine import BattleEngine
from .multiagentenv import MultiAgentEnv
from .rewards import RewardConfig
from .smacv2_draws import draw_enemy_mask, draw_start_positions, draw_teams
from .smacv2_features import V2Flags, V2Layout
from .smacv2_games import ALLY_POINT, ENEMY_POINT, SMACv2Games, V2Seat
from .smacv2_scenarios import CapabilityConfig, get_gen_map

FIXED_POINT = {"ally": ALLY_POINT, "enemy": ENEMY_POINT}  # SMACv2's creation points without start_positions
# the engine's per-unit tensors that describe the game's current draw (``SMACv2Env.engine``)
DRAW_TENSORS = ("hp_max", "shield_max", "armor", "speed", "radius", "weapon_range", "cooldown_loops", "scan_range",
                "is_air", "heals", "side")


def _streams(seed: int | None) -> tuple[np.random.Generator, np.random.Generator, int]:
    """(draw generator, observation generator, engine seed) from one seed."""
    ss = np.random.SeedSequence(seed)
    draws, obs, eng = ss.spawn(3)
    return np.random.default_rng(draws), np.random.default_rng(obs), int(eng.generate_state(1, np.uint64)[0] >> 1)


class SMACv2Env(MultiAgentEnv):
    """SMACv2's ``StarCraft2Env`` on the simulator, one game against the scripted enemy (module docstring)."""

    def __init__(self, map_name="8m", step_mul=8, move_amount=2, difficulty="7", game_version=None, seed=None,
                 continuing_episode=False, obs_all_health=True, obs_own_health=True, obs_last_action=False,
                 obs_pathing_grid=False, obs_terrain_height=False, obs_instead_of_state=False,
                 obs_timestep_number=False, obs_own_pos=False, obs_starcraft=True, conic_fov=False,
                 num_fov_actions=12, state_last_action=True, state_timestep_number=False, reward_sparse=False,
                 reward_only_positive=True, reward_death_value=10, reward_win=200, reward_defeat=0,
                 reward_negative_scale=0.5, reward_scale=True, reward_scale_rate=20, use_unit_ranges=False,
                 min_attack_range=2, kill_unit_step_mul=2, fully_observable=False, capability_config=None,
                 replay_dir="", replay_prefix="", window_size_x=1920, window_size_y=1200, heuristic_ai=False,
                 heuristic_rest=False, debug=False, prob_obs_enemy=1.0, action_mask=True):
        if step_mul != 8:
            raise ValueError(f"step_mul must be 8 (the simulator's fixed step), got {step_mul!r}")
        if move_amount != 2:
            raise ValueError(f"move_amount must be 2 (SMAC's value), got {move_amount!r}")
        if heuristic_ai:
            raise ValueError("heuristic_ai=True is not available for SMACv2 scenarios (use False)")
        if str(difficulty) != "7":
            warnings.warn(f"difficulty={difficulty!r} has no effect on the simulator: its enemy is a scripted "
                          "attack-move", stacklevel=2)
        if not isinstance(num_fov_actions, int) or num_fov_actions < 1:
            raise ValueError(f"num_fov_actions must be a positive int, got {num_fov_actions!r}")
        if not 0.0 <= float(prob_obs_enemy) <= 1.0:
            raise ValueError(f"prob_obs_enemy must be in [0, 1], got {prob_obs_enemy!r}")
        self.map_name = map_name
        self.gen = get_gen_map(map_name)
        cap = {} if capability_config is None else capability_config
        self.capability_config = cap
        if "team_gen" not in cap:
            raise ValueError("capability_config['team_gen'] is missing: the SMACv2 maps draw their teams "
                             "(the 10gen maps have no fixed units)")
        self.capability = CapabilityConfig.from_dict(cap, self.gen.type_order)
        self.n_agents, self.n_enemies = self.capability.n_units, self.capability.n_enemies
        self.episode_limit = self.gen.limit
        self.flags = V2Flags(obs_all_health, obs_own_health or obs_all_health, obs_last_action, obs_pathing_grid,
                             obs_terrain_height, obs_timestep_number, obs_own_pos, obs_starcraft, conic_fov,
                             num_fov_actions, state_last_action, state_timestep_number, use_unit_ranges,
                             float(min_attack_range), fully_observable, float(prob_obs_enemy), action_mask,
                             self.capability.team_gen.observe)
        self.layout = V2Layout(self.gen, self.n_agents, self.n_enemies, self.flags)
        self.n_actions = self.layout.n_actions
        self.n_actions_no_attack = self.layout.n_actions_no_attack
        self.n_fov_actions = self.layout.n_fov
        self.obs_instead_of_state = obs_instead_of_state
        self.continuing_episode = continuing_episode
        self.reward_sparse, self.reward_only_positive = reward_sparse, reward_only_positive
        self.reward_death_value, self.reward_win, self.reward_defeat = reward_death_value, reward_win, reward_defeat
        self.reward_negative_scale, self.reward_scale = reward_negative_scale, reward_scale
        self.reward_scale_rate = reward_scale_rate
        self.kill_unit_step_mul = kill_unit_step_mul
        self.difficulty, self.game_version, self.debug = difficulty, game_version, debug
        self.replay_dir, self.replay_prefix = replay_dir, replay_prefix
        self.window_size = (window_size_x, window_size_y)
        self.heuristic_ai, self.heuristic_rest = False, heuristic_rest
        self._seed = seed
        self._obs_rng, self._engine_seed = _streams(seed)[1:]
        self.max_reward = self.n_enemies * reward_death_value + reward_win
        self.map_x = self.map_y = 32
        self._episode_count = self._episode_steps = self._total_steps = 0
        self.battles_won = self.battles_game = self.timeouts = self.force_restarts = 0
        self.reward_config = RewardConfig(
            reward_sparse=bool(reward_sparse), reward_only_positive=bool(reward_only_positive),
            reward_death_value=float(reward_death_value), reward_win=float(reward_win),
            reward_defeat=float(reward_defeat), reward_negative_scale=float(reward_negative_scale),
            reward_scale=bool(reward_scale), reward_scale_rate=float(reward_scale_rate))
        self.games: SMACv2Games | None = None
        self.engine: BattleEngine | None = None
        self.seat: V2Seat | None = None
        self.episode_config: dict = {}

    # ---------------------------------------------------------------- episode
    def reset(self, episode_config=None):
        """Start an episode of the draw ``episode_config`` (SMACv2's keys); returns ``(obs, state)``."""
        cfg = {} if episode_config is None else episode_config
        self.episode_config = cfg
        team = cfg.get("team_gen", {})
        ally, enemy = team.get("ally_team"), team.get("enemy_team")
        if ally is None or enemy is None:
            raise ValueError("episode_config['team_gen'] must hold 'ally_team' and 'enemy_team' (the wrapper draws them)")
        ally, enemy = [str(u) for u in ally], [str(u) for u in enemy]
        if (len(ally), len(enemy)) != (self.n_agents, self.n_enemies):
            raise ValueError(f"episode_config['team_gen']: teams of {len(ally)} and {len(enemy)}, expected "
                             f"{self.n_agents} and {self.n_enemies}")
        for u in ally + enemy:
            if u not in self.gen.type_order:
                raise ValueError(f"episode_config['team_gen']: unit {u!r} is not one of {list(self.gen.type_order)}")
        pa = cfg.get("ally_start_positions", {}).get("item")
        pe = cfg.get("enemy_start_positions", {}).get("item")
        pa = np.tile(FIXED_POINT["ally"], (self.n_agents, 1)) if pa is None else np.asarray(pa, dtype=np.float64)
        pe = np.tile(FIXED_POINT["enemy"], (self.n_enemies, 1)) if pe is None else np.asarray(pe, dtype=np.float64)
        mask = cfg.get("enemy_mask", {}).get("item")
        if self.games is None:
            self.games = SMACv2Games(self.gen, self.n_agents, self.n_enemies, self.flags, 1, 1, False,
                                     self._engine_seed, self._obs_rng, self.reward_config)
            self.engine = self.games.engine
            self.seat = V2Seat(self.games, 0, 0)
        games = self.games
        spec = games.write_draw(0, ally, enemy, pa, pe, (mask, None))
        self._describe_draw(spec)
        self.enemy_mask = mask
        self.mask_enemies = mask is not None
        if self._episode_count == 0:  # SMACv2 adds the first episode's enemies' hp + shields, once
            s = self.engine.side_slices[1]
            self.max_reward += float((self.engine.hp_max[s] + self.engine.shield_max[s]).sum())
        games.seats[0].divisor[0] = np.float32(self.max_reward / self.reward_scale_rate)
        games.start(np.ones(1, np.bool_))
        self._episode_steps = 0
        self._ended = False
        self.win_counted = self.defeat_counted = False
        self.last_action = self.seat.last_action
        return self.get_obs(), self.get_state()

    def _describe_draw(self, spec) -> None:
        """The engine's per-battle attributes (``spec``, ``unit_names``, ``DRAW_TENSORS``) describe the
        game's draw, for readers of ``engine`` (views of the game's constants)."""
        eng, static = self.engine, self.games.engine.static
        eng.spec = spec
        eng.unit_names = spec.units(0) + spec.units(1)
        for name in DRAW_TENSORS:
            setattr(eng, name, torch.from_numpy(getattr(static, name)[0]))

    def _require_episode(self) -> V2Seat:
        if self.seat is None:
            raise RuntimeError("call reset() first: SMACv2 draws the units at reset")
        return self.seat

    def step(self, actions):
        """SMACv2's ``step``: returns ``(reward, terminated, info)``."""
        seat = self._require_episode()
        if self._ended:
            raise RuntimeError("the episode has ended: call reset()")
        acts = np.asarray(actions)
        if acts.shape != (self.n_agents,):
            raise ValueError(f"actions must hold {self.n_agents} actions, got shape {acts.shape}")
        if not np.issubdtype(acts.dtype, np.integer) and not np.all(np.mod(acts, 1) == 0):
            raise ValueError(f"actions must be integers, got {actions!r}")
        acts = acts.astype(np.int64)
        avail = seat.avail()[0]
        for i, a in enumerate(acts):
            if not 0 <= a < self.n_actions or not avail[i, a]:
                raise ValueError(f"agent {i} cannot take action {a} (available: {np.flatnonzero(avail[i]).tolist()})")
        self.games.step([acts[None, :]], check_masks=False)
        self._total_steps += 1
        self._episode_steps += 1
        return self._outcome()

    def _outcome(self):
        """SMACv2's reward (the compiled step's: SMAC's battle reward, win/defeat terms, scaled by the
        first episode's ``max_reward``), termination and info, and its counters."""
        ep = self.games.episode
        reward = float(ep.reward[0, 0])
        won = bool(ep.won[0, 0])
        info = {"battle_won": won, "dead_allies": int(ep.dead[0, 0]), "dead_enemies": int(ep.dead[1, 0])}
        terminated = bool(ep.done[0])
        if terminated:
            self.battles_game += 1
            self.battles_won += won
            if ep.timeout[0]:
                self.timeouts += 1
                if self.continuing_episode:
                    info["episode_limit"] = True
            self._episode_count += 1
            self._ended = True
        self.reward = reward
        return reward, terminated, info

    # ---------------------------------------------------------- observations
    def _timestep(self) -> float:
        return self._episode_steps / self.episode_limit

    def get_obs(self):
        return list(self._require_episode().observations().copy())

    def get_obs_agent(self, agent_id, fully_observable=False):
        return self.get_obs()[agent_id]

    def get_state(self):
        if self.obs_instead_of_state:
            return np.concatenate(self.get_obs(), axis=0).astype(np.float32)
        return self._require_episode().state().copy()

    def get_avail_actions(self):
        return self._require_episode().avail()[0].astype(np.int64).tolist()

    def get_avail_agent_actions(self, agent_id):
        return self.get_avail_actions()[agent_id]

    def get_capabilities(self):
        """SMACv2's ``get_capabilities``: per agent its type bits, concatenated."""
        seat = self._require_episode()
        cap = np.zeros((self.n_agents, self.layout.bits), np.float32)
        cap[np.arange(self.n_agents), seat.ally_type] = 1.0
        return cap.reshape(-1)

    def get_cap_size(self):
        return self.layout.bits

    # ------------------------------------------------------------------ sizes
    def get_obs_size(self):
        return self.layout.obs_size

    def get_state_size(self):
        return self.layout.state_size(self.obs_instead_of_state)

    def get_total_actions(self):
        return self.n_actions

    def get_obs_move_feats_size(self):
        return self.layout.move_feats_size

    def get_obs_enemy_feats_size(self):
        return self.n_enemies, self.layout.enemy_feats_size

    def get_obs_ally_feats_size(self):
        return self.n_agents - 1, self.layout.ally_feats_size

    def get_obs_own_feats_size(self):
        return self.layout.own_feats_size

    def get_ally_num_attributes(self):
        return self.layout.ally_state_size

    def get_enemy_num_attributes(self):
        return self.layout.enemy_state_size

    def get_obs_feature_names(self):
        return self.layout.obs_feature_names()

    def get_state_feature_names(self):
        return self.layout.state_feature_names()

    def get_env_info(self):
        """SMACv2's: its MultiAgentEnv's keys (``cap_shape`` included) plus ``agent_features`` /
        ``enemy_features`` (the state's attribute names)."""
        info = {"state_shape": self.get_state_size(), "obs_shape": self.get_obs_size(),
                "cap_shape": self.get_cap_size(), "n_actions": self.get_total_actions(), "n_agents": self.n_agents,
                "episode_limit": self.episode_limit}
        L = self.layout
        ally = ["health", "energy/cooldown", "rel_x", "rel_y"] + (["shield"] if L.shield else [])
        ally += ["fov_x", "fov_y"] if self.flags.conic_fov else []
        enemy = ["health", "rel_x", "rel_y"] + (["shield"] if L.shield else [])
        bits = [f"type_{b}" for b in range(L.bits)]
        info["agent_features"] = ally + bits
        info["enemy_features"] = enemy + bits
        return info

    def get_stats(self):
        return {"battles_won": self.battles_won, "battles_game": self.battles_game,
                "battles_draw": self.timeouts, "win_rate": self.battles_won / self.battles_game if self.battles_game
                else 0.0, "timeouts": self.timeouts, "restarts": self.force_restarts}

    def get_unit_types(self):
        return None if self.engine is None else list(self.engine.unit_names)

    def render(self, mode="human"):
        raise NotImplementedError("render: the simulator has no window (SMACv2's render needs the game)")

    def save_replay(self):
        raise NotImplementedError("save_replay: the simulator has no game to replay")

    def full_restart(self):
        self.force_restarts += 1

    def close(self):
        self.games = self.engine = self.seat = None

    def seed(self, seed=None):
        """The seed; with an argument, restart every random stream from ``seed`` (EPyMARL calls
        ``seed(seed)``; SMACv2's takes none)."""
        if seed is not None:
            self._seed = seed
            self._obs_rng, self._engine_seed = _streams(seed)[1:]
            self.games = self.engine = self.seat = None  # the next reset starts the engine from the seed
        return self._seed


class StarCraftCapabilityEnvWrapper(MultiAgentEnv):
    """SMACv2's wrapper: draws each episode from ``capability_config`` (``smacv2_draws``) and plays it
    on ``SMACv2Env`` (every other keyword is ``SMACv2Env``'s)."""

    def __init__(self, **kwargs):
        if "capability_config" not in kwargs:
            raise ValueError("capability_config is required (SMACv2's wrapper draws from it)")
        self.env = SMACv2Env(**kwargs)
        self.capability = self.env.capability
        self.distribution_config = kwargs["capability_config"]
        self._rng = _streams(kwargs.get("seed"))[0]

    def draw_episode_config(self) -> dict:
        """One episode's draw, in SMACv2's ``reset_config`` form."""
        cap, rng = self.capability, self._rng
        ally, enemy = draw_teams(cap, rng)
        cfg: dict = {"team_gen": {"ally_team": ally, "enemy_team": enemy, "id": 0}}
        if cap.start_positions is not None:
            pa, pe, _ = draw_start_positions(cap.start_positions, cap.n_units, cap.n_enemies, rng)
            cfg["ally_start_positions"] = {"item": pa, "id": 0}
            cfg["enemy_start_positions"] = {"item": pe, "id": 0}
        if cap.enemy_mask is not None:
            cfg["enemy_mask"] = {"item": draw_enemy_mask(cap.enemy_mask.mask_probability, cap.n_units,
                                                         cap.n_enemies, rng), "id": 0}
        return cfg

    def reset(self):
        return self.env.reset(self.draw_episode_config())

    def seed(self, seed=None):
        """As ``SMACv2Env.seed``; the draws restart from ``seed`` too."""
        if seed is not None:
            self._rng = _streams(seed)[0]
        return self.env.seed(seed)

    def __getattr__(self, name):
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def get_obs(self):
        return self.env.get_obs()

    def get_state(self):
        return self.env.get_state()

    def get_avail_actions(self):
        return self.env.get_avail_actions()

    def get_env_info(self):
        return self.env.get_env_info()

    def get_obs_size(self):
        return self.env.get_obs_size()

    def get_state_size(self):
        return self.env.get_state_size()

    def get_total_actions(self):
        return self.env.get_total_actions()

    def get_obs_agent(self, agent_id):
        return self.env.get_obs_agent(agent_id)

    def get_avail_agent_actions(self, agent_id):
        return self.env.get_avail_agent_actions(agent_id)

    def step(self, actions):
        return self.env.step(actions)

    def get_stats(self):
        return self.env.get_stats()

    def close(self):
        return self.env.close()
