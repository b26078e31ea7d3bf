"""Gymnasium routes for a trainer with the opponent inside the environment (docs/guides/plug-in.md,
"Environment routes"). Gymnasium 1.x conventions: a step that ends a game returns that
game's *final* observation; autoreset modes are the ones of ``gymnasium.vector.AutoresetMode``.

* ``OpponentEnv`` — one game of a two-seat engine as a single-agent ``gymnasium.Env``: at every
  ``reset()`` the game's opponent is drawn from Ω, at its end the learner's score is recorded and G
  runs. Copies of it under ``gymnasium.vector.SyncVectorEnv`` share one ``SelfPlaySession`` (each game
  holds its own episode handle: any autoreset mode). Under ``AsyncVectorEnv`` the copies live in
  worker processes, so they are built *without* a session and driven by ``SessionVectorEnv``.
* ``SessionVectorEnv`` — a vector wrapper that keeps the session in the main process: it draws each
  game's opponent when that game is about to reset, sends it to the sub-environment
  (``set_attr("assignment", ...)``; a policy object crosses to a worker once) and records the
  outcomes the sub-environments report in their infos. Needs ``NEXT_STEP`` (Gymnasium's default) or
  ``DISABLED`` autoreset: under ``SAME_STEP`` a sub-environment resets inside the step that ends its
  game, before the wrapper can apply G and draw.
* ``SelfPlayVectorEnv`` — a native ``gymnasium.vector.VectorEnv`` over one batched engine of
  ``num_envs`` games (``selfplay.training.opponent_games.OpponentGames``): opponents act grouped by policy, no
  per-game Python env, the fastest route. ``SAME_STEP`` autoreset: an ended game's final observation
  is in ``infos["final_obs"]`` and its record in ``infos["final_info"]``, the returned observation is
  the next game's first.

Every ended game's info carries ``outcome`` (the learner's score: 1 win, ½ draw, 0 loss),
``opponent`` (entry id) and ``episode_token`` (the session's handle), so a trainer can check its own
records against ``session.records``.
"""

from __future__ import annotations

import os
import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

from selfplay.training.adapters import Episode, SelfPlaySession
from selfplay.training.opponent_games import EngineStepper, OpponentGames, check_symmetric_sides


def _spaces(env: Any) -> tuple[gym.Space, gym.Space]:
    multi_unit, obs_shape, n_actions = check_symmetric_sides(env)
    if multi_unit:
        return (gym.spaces.Box(-np.inf, np.inf, obs_shape, dtype=np.float32),
                gym.spaces.MultiDiscrete([n_actions[1]] * n_actions[0]))
    return gym.spaces.Box(0.0, 1.0, obs_shape, dtype=np.float32), gym.spaces.Discrete(n_actions)


class OpponentEnv(gym.Env):
    """One game of a two-seat batched engine (``num_envs == 1``) with the opponent inside.

    ``env``: e.g. ``envs.rps.RirRPS(1, seed=0)`` or a symmetric ``SMACBattle(..., num_envs=1)``;
    ``session``: the ``SelfPlaySession`` whose Ω draws the opponent at every ``reset()``, or ``None``
    when a ``SessionVectorEnv`` assigns opponents (the ``AsyncVectorEnv`` route);
    ``learner_seat``: 0, 1 or ``"random"`` (drawn per game from the env's own generator).

    ``reset(seed=...)`` seeds this environment (seat draws, the engine's tie-breaks), never the
    session's opponent sampler. A ``reset()`` in mid-game abandons that game (not recorded). Matrix
    games give ``Box(obs_size)`` and ``Discrete``; SMAC sides ``Box(units, obs_size)`` and
    ``MultiDiscrete`` with the legal actions in ``info["action_mask"]`` / ``action_masks()`` (an
    illegal action raises ``ValueError``; the engine never swaps it).
    """

    metadata = {"render_modes": []}

    def __init__(self, env: Any, session: SelfPlaySession | None = None, learner_seat: int | str = "random") -> None:
        if getattr(env, "num_envs", None) != 1:
            raise ValueError(f"env must hold exactly one game (num_envs=1), got num_envs={getattr(env, 'num_envs', None)!r}")
        if learner_seat not in (0, 1, "random"):
            raise ValueError(f"learner_seat must be 0, 1 or 'random', got {learner_seat!r}")
        if session is not None and not isinstance(session, SelfPlaySession):
            raise ValueError(f"session must be a SelfPlaySession or None (opponents assigned by SessionVectorEnv), got {session!r}")
        self.env, self.session, self.learner_seat = env, session, learner_seat
        self.multi_unit = isinstance(env.obs_size, (list, tuple))
        self.observation_space, self.action_space = _spaces(env)
        self.stepper = EngineStepper(env)
        self._assignment: tuple | None = None  # (token, entry id, policy key, policy or None): from SessionVectorEnv
        self._policies: dict[int, Any] = {}  # assigned opponents' policies by key (each sent once per worker)
        self._seat = 0
        self._obs: list | None = None
        self._episode: Episode | None = None
        self._token = -1
        self._opponent_id = -1
        self._opponent: Any = None
        self._opp_state = None
        self._steps = 0
        self._start = True

    @property
    def assignment(self) -> tuple | None:
        """The next game's opponent, ``(episode token, entry id, policy key, policy or None)``, as sent by
        ``SessionVectorEnv``; a policy object comes once (kept here under its key; entries of one weight
        version share it). Setting ``None`` changes nothing."""
        return self._assignment

    @assignment.setter
    def assignment(self, value: tuple | None) -> None:
        if value is not None:
            self._assignment = tuple(value)

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions now (bool; SMAC: one row per unit) — also in ``info["action_mask"]``,
        and under this name for maskable trainers (sb3-contrib's MaskablePPO)."""
        return self.env.action_masks()[self._seat][0].cpu().numpy()

    def _draw(self) -> None:
        if self.session is not None:
            if self.session.pid != os.getpid():
                raise ValueError("this OpponentEnv runs in another process than its session (AsyncVectorEnv and "
                                 "SubprocVecEnv copy it): build the envs with session=None and wrap the vector env "
                                 "in SessionVectorEnv(envs, session)")
            if self._episode is not None:
                self.session.abandon_episode(self._episode)
            self._episode = self.session.start_episode()
            self._token, self._opponent_id = self._episode.token, self._episode.opponent.id
            self._opponent = self._episode.opponent.policy
            return
        if self._assignment is None:
            raise ValueError("no opponent assigned: an OpponentEnv without a session is driven by SessionVectorEnv")
        token, entry_id, key, policy = self._assignment
        if policy is not None:
            self._policies[key] = policy
        self._token, self._opponent_id, self._opponent = token, entry_id, self._policies[key]
        self._assignment = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None and hasattr(self.env, "seed"):
            self.env.seed(seed)
        self._seat = int(self.np_random.integers(2)) if self.learner_seat == "random" else int(self.learner_seat)
        self._draw()
        self._opp_state = self._opponent.initial_state(1)
        self._obs = self.stepper.reset()
        self._steps = 0
        self._start = True
        return self._learner_obs(), {"opponent": self._opponent_id, "episode_token": self._token,
                                     "learner_seat": self._seat, "action_mask": self.action_masks()}

    def step(self, action):
        if self._obs is None:
            raise ValueError("call reset() before step() (and after the end of every game)")
        action = np.asarray(action, dtype=np.int64) if self.multi_unit else int(action)
        if not self.action_space.contains(action):
            raise ValueError(f"action must lie in {self.action_space}, got {action!r}")
        opp_seat = 1 - self._seat
        masks = self.env.action_masks()
        with torch.no_grad():
            opp_action, self._opp_state, _ = self._opponent.act(self._obs[opp_seat], self._opp_state, masks[opp_seat],
                                                                torch.tensor([self._start]))
        actions = [None, None]
        actions[self._seat] = torch.as_tensor(action).reshape((1,) + np.shape(action)).long()
        actions[opp_seat] = torch.as_tensor(opp_action).reshape(actions[self._seat].shape).long()
        self._obs, rewards, done, info = self.stepper.step(actions)
        self._steps += 1
        self._start = False
        reward = float(rewards[self._seat][0])
        terminated = bool(done[0])
        obs = self._learner_obs()  # the final observation when the game ended (Gymnasium 1.x)
        if not terminated:
            return obs, reward, False, False, {"action_mask": self.action_masks()}
        winner, draw = int(info["winner"][0]), bool(info["draw"][0])
        outcome = 0.5 if draw else float(winner == self._seat)
        out_info = {"outcome": outcome, "opponent": self._opponent_id, "episode_token": self._token,
                    "episode_steps": self._steps}
        if self.session is not None:
            episode, self._episode = self._episode, None
            self.session.end_episode(episode, outcome, steps=self._steps)
        self._obs = None
        return obs, reward, True, False, out_info

    def _learner_obs(self) -> np.ndarray:
        return self._obs[self._seat][0].cpu().numpy().astype(np.float32)


class SessionVectorEnv(VectorWrapper):
    """Drives a vector env of session-less ``OpponentEnv`` copies (``SyncVectorEnv`` or ``AsyncVectorEnv``)
    from one ``SelfPlaySession`` in this process.

    Before a sub-environment resets, the wrapper draws that game's opponent from Ω and sends it
    (entry id, and the frozen policy object the first time that worker meets it); when the game ends,
    the outcome reported in the step's infos is recorded in the session (payoff, records, then G),
    and only then is the next opponent drawn — the order of Algorithm 1 for every game. A game cut
    short by truncation (a ``TimeLimit`` wrapper) has no outcome: it is abandoned, not recorded.

    Over an ``AsyncVectorEnv`` every opponent policy must pickle to reach the workers: a closure or a
    lambda is refused with a one-line ``ValueError`` naming it and the fix (the menagerie's policies
    here, each later one before it is first sent). Hand the session frozen copies made by
    ``selfplay.training.snapshots.torch_snapshot(module)`` or ``sb3_snapshot(model)``.
    """

    def __init__(self, env: VectorEnv, session: SelfPlaySession) -> None:
        super().__init__(env)
        if not isinstance(session, SelfPlaySession):
            raise ValueError(f"session must be a SelfPlaySession, got {session!r}")
        mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        mode = mode if isinstance(mode, AutoresetMode) else AutoresetMode(mode)
        if mode == AutoresetMode.SAME_STEP:
            raise ValueError("SessionVectorEnv needs autoreset_mode NEXT_STEP (the default) or DISABLED: under SAME_STEP a "
                             "sub-environment resets inside the step that ends its game, before G and the next draw")
        self.session, self.mode = session, mode
        self.episodes: list[Episode | None] = [None] * self.num_envs
        self._sent: list[set[int]] = [set() for _ in range(self.num_envs)]  # policy keys each sub-env holds
        self._keys: dict[int, tuple[int, Any]] = {}  # id(policy) -> (key, policy: kept so that the id stays its own)
        self._pickles = _crosses_processes(env)  # opponents go to worker processes: each must pickle
        for entry in session.menagerie.entries:
            self._check_picklable(entry)

    def _check_picklable(self, entry: Any) -> None:
        """A one-line ``ValueError`` naming an opponent policy that cannot reach the workers, before it is sent."""
        if not self._pickles:
            return
        try:
            pickle.dumps(entry.policy)
        except Exception as error:  # pickling raises PicklingError, AttributeError or TypeError by case
            raise ValueError(f"opponent policy {_describe(entry.policy)} (menagerie entry {entry.id}) cannot be pickled "
                             f"to reach AsyncVectorEnv's worker processes ({type(error).__name__}: {error}); give the "
                             "session a frozen, picklable copy instead of a closure or lambda: "
                             "selfplay.training.snapshots.torch_snapshot(module) or sb3_snapshot(model)") from None

    def _assign(self, games: np.ndarray) -> None:
        """Draw the opponents of ``games`` (abandoning their games in progress) and send them."""
        for g in games:
            if self.episodes[g] is not None:
                self.session.abandon_episode(self.episodes[g])
        values: list[Any] = [None] * self.num_envs
        for g, episode in zip(games, self.session.start_episodes([int(g) for g in games])):
            self.episodes[g] = episode
            entry = episode.opponent
            if id(entry.policy) not in self._keys:
                self._check_picklable(entry)
            key = self._keys.setdefault(id(entry.policy), (len(self._keys), entry.policy))[0]
            first = key not in self._sent[g]
            self._sent[g].add(key)
            values[g] = (episode.token, entry.id, key, entry.policy if first else None)
        self.env.set_attr("assignment", values)  # None leaves a sub-env's assignment unchanged

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        mask = None if options is None else options.get("reset_mask")
        games = np.arange(self.num_envs) if mask is None else np.flatnonzero(mask)
        self._assign(games)
        return self.env.reset(seed=seed, options=options)

    def step(self, actions):
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        ended = np.flatnonzero(np.logical_or(terminations, truncations))
        for g in ended:
            episode = self.episodes[g]
            self.episodes[g] = None
            if not infos.get("_outcome", np.zeros(self.num_envs, bool))[g]:
                if truncations[g]:
                    self.session.abandon_episode(episode)
                    continue
                raise ValueError(f"sub-environment {g} ended a game without reporting its outcome (is it an OpponentEnv?)")
            if int(infos["episode_token"][g]) != episode.token:
                raise ValueError(f"sub-environment {g} played game {int(infos['episode_token'][g])}, "
                                 f"expected {episode.token}: assignments out of step")
            self.session.end_episode(episode, float(infos["outcome"][g]), steps=int(infos["episode_steps"][g]))
        if len(ended) and self.mode == AutoresetMode.NEXT_STEP:
            self._assign(ended)  # they reset at the next step, with these opponents
        return obs, rewards, terminations, truncations, infos


def _crosses_processes(env: Any) -> bool:
    """Whether ``env`` (through any vector wrappers) is an ``AsyncVectorEnv``, whose sub-environments
    live in worker processes."""
    while env is not None:
        if isinstance(env, gym.vector.AsyncVectorEnv):
            return True
        env = getattr(env, "env", None)
    return False


def _describe(policy: Any) -> str:
    """A policy's name for an error message: a function's qualified name, else a short repr."""
    name = getattr(policy, "__qualname__", None)
    if name is not None and callable(policy):
        return f"{name!r} (a {type(policy).__name__})"
    text = repr(policy)
    return text if len(text) <= 80 else text[:77] + "..."


class SelfPlayVectorEnv(VectorEnv):
    """A native Gymnasium vector env: ``env.num_envs`` games of one batched engine, each game against
    its own opponent drawn from ``session`` at its own start (``selfplay.training.opponent_games``).

    Autoreset ``SAME_STEP``: where a game ended, ``terminations`` is True, the returned observation is
    the next game's first, ``infos["final_obs"][i]`` the ended game's final observation and
    ``infos["final_info"]`` holds ``outcome``, ``opponent``, ``episode_token`` and ``episode_steps``
    (with Gymnasium's ``_key`` masks). Every step's infos also give each game's current ``opponent``,
    ``learner_seat`` and ``action_mask``. ``reset(seed=...)`` seeds the seats and the engine, never
    the session's sampler. Games are never truncated (the engines end every game themselves).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, env: Any, session: SelfPlaySession, learner_seat: int | str = "random") -> None:
        self.games = OpponentGames(env, session, learner_seat)
        self.session = session
        self.num_envs = self.games.n
        self.single_observation_space, self.single_action_space = _spaces(env)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.metadata = dict(self.metadata)

    def _infos(self) -> dict:
        n = self.num_envs
        return {"opponent": self.games.opponent_ids(), "_opponent": np.ones(n, bool),
                "learner_seat": self.games.seat.numpy().copy(), "_learner_seat": np.ones(n, bool),
                "action_mask": self.games.action_masks(), "_action_mask": np.ones(n, bool)}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if options is not None and options.get("reset_mask") is not None:
            raise ValueError("SelfPlayVectorEnv restarts ended games itself (SAME_STEP): reset_mask is not supported")
        if isinstance(seed, (list, tuple)):
            seed = seed[0]
        obs = self.games.reset(seed)
        return obs, self._infos()

    def step(self, actions):
        obs, reward, done, final_obs, finished = self.games.step(actions)
        infos = self._infos()
        if finished:
            n = self.num_envs
            mask = np.zeros(n, bool)
            final_info = {"outcome": np.zeros(n), "opponent": np.full(n, -1, np.int64),
                          "episode_token": np.full(n, -1, np.int64), "episode_steps": np.zeros(n, np.int64)}
            objs = np.full(n, None, dtype=object)
            for g, episode, outcome, steps in finished:
                mask[g] = True
                objs[g] = final_obs[g]
                final_info["outcome"][g] = outcome
                final_info["opponent"][g] = episode.opponent.id
                final_info["episode_token"][g] = episode.token
                final_info["episode_steps"][g] = steps
            for key in list(final_info):
                final_info["_" + key] = mask
            infos.update({"final_obs": objs, "_final_obs": mask, "final_info": final_info, "_final_info": mask})
        return obs, reward, done, np.zeros(self.num_envs, bool), infos

    def close_extras(self, **kwargs: Any) -> None:
        close = getattr(self.games.env, "close", None)
        if close is not None:
            close()
