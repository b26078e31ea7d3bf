"""Plug a scheme into any trainer (docs/design/architecture.md "Scheme", "Policy";
docs/guides/plug-in.md).

Routes, from least to most integrated — each one the same ⟨Ω, G⟩ bookkeeping:

* the scheme objects alone (``selfplay.core.schemes``: ``sample`` is Ω, ``curate`` is G);
* ``SelfPlaySession`` (this module, numpy only) — menagerie + payoff + scheme behind callbacks for a
  trainer that owns its loop: ``start_episode(env_index) -> Episode`` (Ω) and
  ``end_episode(episode, outcome)`` (payoff, then G), for any number of games at once; the
  one-episode forms ``on_episode_start()`` / ``on_episode_end(outcome)`` stay for simple loops;
  ``on_policy_update(...)`` after every weight change (one frozen snapshot per weight version);
* Gymnasium environments with the opponent inside (``selfplay.training.gym_adapters``, imported on first use):
  ``OpponentEnv`` (one game; under ``gymnasium.vector.SyncVectorEnv`` its copies share the session, under
  ``AsyncVectorEnv`` they are driven by ``SessionVectorEnv``) and ``SelfPlayVectorEnv`` (a native
  vector env over one batched engine: the fast route);
* Stable-Baselines3: ``SelfPlayVecEnv`` (``selfplay.training.sb3_adapters``), a ``VecEnv`` over one batched engine.

``PolicyWrapper`` makes a third-party model a suite policy; ``torch_snapshot`` and ``sb3_snapshot``
(``selfplay.training.snapshots``) make frozen, picklable copies of a torch module or an SB3 model for
the menagerie (an opponent must be picklable to reach ``AsyncVectorEnv``'s workers: not a closure
or lambda); ``MatchEvaluator`` is PSRO's ready
``evaluate`` (the suite's batched ``play_matches``). Neither torch nor gymnasium is imported by this
module: the session route needs numpy only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from selfplay.core.menagerie import Entry, Menagerie
from selfplay.core.payoff import Payoff
from selfplay.core.schemes import Curation, LearnerInfo, Scheme, make_scheme
from selfplay.utils.seeding import Stream, derive_seed

LEARNER_KEY = "learner"

_LAZY = {
    "OpponentEnv": "selfplay.training.gym_adapters",
    "SelfPlayVectorEnv": "selfplay.training.gym_adapters",
    "SessionVectorEnv": "selfplay.training.gym_adapters",
    "SelfPlayVecEnv": "selfplay.training.sb3_adapters",
    "OpponentGames": "selfplay.training.opponent_games",
    "TorchSnapshot": "selfplay.training.snapshots",
    "torch_snapshot": "selfplay.training.snapshots",
    "sb3_snapshot": "selfplay.training.snapshots",
}


def __getattr__(name: str) -> Any:  # the gymnasium / SB3 / torch routes load on first use only
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class PolicyWrapper:
    """A batched, feed-forward suite policy around a third-party model.

    The suite's policy protocol (``selfplay/core/policy.py``) is
    ``initial_state(batch) -> state`` and
    ``act(obs, state, mask=None, episode_start=None) -> (actions, state, info)``, batched over games:
    ``obs`` ``(batch, obs_size)`` (SMAC sides ``(batch, units, obs_size)``), ``mask`` boolean legal
    actions shaped like the logits or ``None``, ``episode_start`` boolean ``(batch,)`` (a recurrent
    policy zeroes its state there before acting), ``actions`` a torch long tensor ``(batch,)``
    (SMAC ``(batch, units)``), ``info`` a dict of per-sample extras. Any object with these two
    methods can be a menagerie entry, an opponent and an input to ``play_matches``.

    This wrapper adapts ``model``, one of: an object with ``predict(obs, deterministic=...)``
    returning ``(actions, state)`` (Stable-Baselines3) or actions; an object with ``act(obs)``
    returning actions; a callable ``obs -> actions``. The model receives ``obs`` as a float32 numpy
    array ``(batch, obs_size)`` and returns integer actions ``(batch,)``. It is feed-forward
    (``state`` is always ``None``) and sees no mask: an illegal choice raises ``ValueError``. The
    wrapper pickles when ``model`` does (the ``AsyncVectorEnv`` route sends opponents to workers);
    ``selfplay.training.snapshots.sb3_snapshot`` wraps a frozen copy of an SB3 model's policy.
    """

    def __init__(self, model: Any, deterministic: bool = False) -> None:
        if hasattr(model, "predict"):
            self._call = "predict"
        elif hasattr(model, "act"):
            self._call = "act"
        elif callable(model):
            self._call = "call"
        else:
            raise ValueError("model must have predict(obs), act(obs) or be callable obs -> actions")
        self.model, self.deterministic = model, deterministic

    def __repr__(self) -> str:
        return f"PolicyWrapper({getattr(self.model, '__qualname__', type(self.model).__name__)})"

    def _fn(self, obs: np.ndarray) -> Any:
        if self._call == "predict":
            return self.model.predict(obs, deterministic=self.deterministic)
        return self.model.act(obs) if self._call == "act" else self.model(obs)

    def initial_state(self, batch: int) -> None:
        return None

    def act(self, obs: Any, state: Any = None, mask: Any = None, episode_start: Any = None):
        import torch

        obs_np = torch.as_tensor(obs).cpu().numpy().astype(np.float32)
        out = self._fn(obs_np)
        actions = out[0] if isinstance(out, tuple) else out
        actions = torch.as_tensor(np.asarray(actions).reshape(obs_np.shape[0]), dtype=torch.long)
        if mask is not None and not bool(torch.as_tensor(mask)[torch.arange(len(actions)), actions].all()):
            raise ValueError("the wrapped model chose an illegal action (mask is False there)")
        return actions, None, {}


@dataclass(slots=True)
class Episode:
    """Handle of one game in progress: ``token`` (serial number of the draw, unique in its session),
    the ``env_index`` it was started for (or ``None``) and the ``opponent`` entry drawn for it."""

    token: int
    env_index: int | None
    opponent: Entry

    @property
    def opponent_id(self) -> int:
        return self.opponent.id


@dataclass(frozen=True, slots=True)
class GameRecord:
    """One finished game as the session recorded it (``SelfPlaySession.records``)."""

    token: int  # the Episode's token
    env_index: int | None
    opponent: int  # entry id of the opponent drawn for this game
    outcome: float  # the learner's score: 1 win, ½ draw, 0 loss
    steps: int
    episode: int  # the session's count of finished games, this one included
    weight_version: int  # the learner's weight version when the game ended


class SelfPlaySession:
    """Menagerie + payoff + scheme behind callbacks, for a trainer that owns its loop (docs/design/selfplay.md §1).

    ``scheme``: a ``Scheme`` or a spec string (``make_scheme``). ``initial_policy``: menagerie_0 = {π};
    it may instead be given later with ``add_initial_policy`` (e.g. once the env exists and the
    network's sizes are known) — but before the first game starts. ``seed`` seeds the opponent
    sampler once; nothing reseeds it behind the caller's back (``seed()`` does, explicitly).

    Games: ``episode = start_episode(env_index)`` draws the game's opponent from Ω (``episode.opponent``,
    a menagerie ``Entry``; its frozen policy is ``.policy``); ``end_episode(episode, outcome, steps)``
    records the learner's score (1 win, ½ draw, 0 loss) in the payoff table and ``records``, then
    applies G. Any number of games may be open at once (vector environments); each is recorded
    exactly once, against the opponent drawn for it (``keep_records=False`` keeps only the payoff
    table, for very long runs). ``on_episode_start(env_index=0)`` /
    ``on_episode_end(outcome, steps, env_index=0)`` are the same by env index (one open game per index).

    Snapshots: call ``on_policy_update(snapshot)`` (a frozen copy) or ``on_policy_update(freeze=fn)``
    (a zero-argument function returning one) whenever the trainer changed its weights. G takes the
    snapshot of the *current weight version*: a given snapshot is shared by every entry G adds until
    the next update, and ``freeze`` is called at most once per weight version, and only if G adds.
    """

    def __init__(self, scheme: Scheme | str, initial_policy: Any = None, seed: int | None = None,
                 name: str = LEARNER_KEY, keep_records: bool = True) -> None:
        self.scheme = make_scheme(scheme) if isinstance(scheme, str) else scheme
        if not isinstance(self.scheme, Scheme):
            raise ValueError(f"scheme must be a one-learner Scheme or its spec, got {self.scheme!r} "
                             "(a league drives several learners: use selfplay.training.league_loop)")
        self.menagerie = Menagerie()
        self.payoff = Payoff()
        self.rng = np.random.default_rng(seed)
        self.name = name
        self.episode = 0  # finished games
        self.step = 0
        self.weight_version = 0
        self.keep_records = keep_records
        self.records: list[GameRecord] = []
        self.open: dict[int, Episode] = {}  # token -> game in progress
        self._by_index: dict[int, Episode] = {}
        self._next_token = 0
        self._frozen: Any = None
        self._frozen_version: int | None = None
        self._freeze: Callable[[], Any] | None = None
        self.reset_to: Any = None  # a policy G asked the learner to restore (league exploiters), else None
        self.pid = os.getpid()  # environments check that they run in this process (AsyncVectorEnv copies)
        if initial_policy is not None:
            self.add_initial_policy(initial_policy)

    # -- set-up ---------------------------------------------------------------------------------
    def add_initial_policy(self, policy: Any) -> Entry:
        """menagerie_0 = {π}: the first entry (a frozen policy), at the current weight version."""
        if policy is None:
            raise ValueError("policy must be a frozen policy, got None")
        if len(self.menagerie) or self.menagerie.next_id:
            raise ValueError("the menagerie already has its initial policy")
        self._frozen, self._frozen_version = policy, self.weight_version
        return self.menagerie.add(policy, step=0, player=self.name, episode=0, weight_version=self.weight_version)

    def seed(self, seed: int | None) -> None:
        """Reseed the opponent sampler (only ever done here or in the constructor)."""
        self.rng = np.random.default_rng(seed)

    # -- games ------------------------------------------------------------------------------------
    def start_episode(self, env_index: int | None = None) -> Episode:
        """Draw one game's opponent from Ω."""
        return self.start_episodes([env_index])[0]

    def start_episodes(self, env_indices: Sequence[int | None]) -> list[Episode]:
        """Draw the opponents of several games at once (one pass over Ω for all of them)."""
        if len(self.menagerie) == 0:
            raise ValueError("the menagerie is empty: call add_initial_policy(policy) (menagerie_0 = {π}) "
                             "before the first game starts")
        for i in env_indices:
            if i is not None and i in self._by_index:
                raise ValueError(
                    f"env_index {i} already has a game in progress (opponent {self._by_index[i].opponent.id}): end it "
                    "first; several games at once need one env_index each (or the handles of start_episode)")
        if len(set(i for i in env_indices if i is not None)) < sum(i is not None for i in env_indices):
            raise ValueError(f"env_indices must be distinct, got {list(env_indices)}")
        drawn = self.scheme.sample_many(self.menagerie, len(env_indices), self.payoff, self.rng)
        episodes = []
        for i, entry in zip(env_indices, drawn):
            episode = Episode(self._next_token, i, entry)
            self._next_token += 1
            self.open[episode.token] = episode
            if i is not None:
                self._by_index[i] = episode
            episodes.append(episode)
        return episodes

    def end_episode(self, episode: Episode, outcome: float, steps: int = 0) -> Curation:
        """Record the learner's score in ``episode`` (payoff table, ``records``), then apply G."""
        if not isinstance(episode, Episode) or self.open.get(episode.token) is not episode:
            raise ValueError(f"episode {episode!r} is not a game in progress of this session "
                             "(already ended, abandoned, or from another session)")
        if outcome not in (0, 0.5, 1):
            raise ValueError(f"outcome must be 1 (win), 0.5 (draw) or 0 (loss), got {outcome!r}")
        self._close(episode)
        self.payoff.update(self.name, episode.opponent.id, float(outcome))
        self.episode += 1
        self.step += int(steps)
        if self.keep_records:
            self.records.append(GameRecord(episode.token, episode.env_index, episode.opponent.id, float(outcome),
                                           int(steps), self.episode, self.weight_version))
        curation = self.scheme.curate(self.menagerie, self.learner_info(), self.payoff, float(outcome))
        if curation.reset_to is not None:
            self.reset_to = curation.reset_to
            self.on_policy_update(curation.reset_to)
        return curation

    def abandon_episode(self, episode: Episode) -> None:
        """Drop a game in progress without recording it (an env reset in mid-game)."""
        if self.open.get(episode.token) is episode:
            self._close(episode)

    def on_episode_start(self, env_index: int = 0) -> Entry:
        """Draw the opponent of the game at ``env_index`` from Ω; returns its menagerie entry."""
        return self.start_episode(env_index).opponent

    def on_episode_end(self, outcome: float, steps: int = 0, env_index: int = 0) -> Curation:
        """Record the learner's score in the game at ``env_index`` and apply G."""
        episode = self._by_index.get(env_index)
        if episode is None:
            raise ValueError(f"on_episode_end called before on_episode_start for env_index {env_index}")
        return self.end_episode(episode, outcome, steps)

    @property
    def opponent(self) -> Entry | None:
        """The opponent of the game in progress at env_index 0 (the one-episode API), else None."""
        episode = self._by_index.get(0)
        return None if episode is None else episode.opponent

    def _close(self, episode: Episode) -> None:
        del self.open[episode.token]
        if episode.env_index is not None and self._by_index.get(episode.env_index) is episode:
            del self._by_index[episode.env_index]

    # -- the learner ------------------------------------------------------------------------------
    def on_policy_update(self, snapshot: Any = None, *, freeze: Callable[[], Any] | None = None) -> None:
        """The trainer changed its weights: give a frozen ``snapshot`` of the new policy, or ``freeze``,
        a function returning one, called only if and when G adds this weight version (at most once)."""
        if (snapshot is None) == (freeze is None):
            raise ValueError("give exactly one of snapshot (a frozen policy) or freeze (a function returning one)")
        self.weight_version += 1
        if snapshot is not None:
            self._frozen, self._frozen_version, self._freeze = snapshot, self.weight_version, None
        else:
            if not callable(freeze):
                raise ValueError(f"freeze must be callable () -> frozen policy, got {freeze!r}")
            self._freeze = freeze

    def snapshot(self) -> Any:
        """The frozen policy of the current weight version (made at most once per version)."""
        if self._frozen_version != self.weight_version:
            if self._freeze is None:
                raise ValueError("no snapshot of the current weights: call on_policy_update(snapshot) or "
                                 "on_policy_update(freeze=...) after changing them")
            self._frozen, self._frozen_version = self._freeze(), self.weight_version
            self._freeze = None
        return self._frozen

    def learner_info(self) -> LearnerInfo:
        return LearnerInfo(name=self.name, episode=self.episode, step=self.step,
                           weight_version=self.weight_version, snapshot=self.snapshot)


class MatchEvaluator:
    """PSRO's ready ``evaluate``: plays a new entry against opponents with the suite's batched match code.

    ``evaluator(entry, opponents, matches)`` returns an array ``(len(opponents),)``: the win rate of
    ``entry`` — *the new entry's side* — against each opponent over ``matches`` games (draws count
    ½), each pair played in both seats (half the games each) by ``selfplay.training.matches.play_matches``,
    all pairs in one batched environment ``env_name`` (a registry name: ``"rirrps"``, ``"smac:3m"``,
    ...). PSRO stores ``W[entry, o] = w`` and ``W[o, entry] = 1 − w``. ``stack_policies`` (e.g. the
    PPO kit's) evaluates all policies in one forward pass; call *c*'s games are seeded
    ``derive_seed(seed, MATCH_CALL, c)``, so a run is reproducible.
    """

    def __init__(self, env_name: str, seed: int = 0, stack_policies: Callable[[list], Any] | None = None,
                 device: str = "cpu", max_games: int = 16384) -> None:
        if not isinstance(env_name, str) or not env_name:
            raise ValueError(f"env_name must be a registry environment name such as 'rirrps', got {env_name!r}")
        self.env_name, self.seed, self.stack_policies = env_name, int(seed), stack_policies
        self.device, self.max_games = device, max_games
        self.calls = 0

    def __call__(self, entry: Entry, opponents: Sequence[Entry], matches: int) -> np.ndarray:
        from selfplay.training.matches import play_matches

        if len(opponents) == 0:
            return np.zeros(0)
        policies = [entry.policy] + [o.policy for o in opponents]
        pairs = np.stack([np.zeros(len(opponents), dtype=np.int64), np.arange(1, len(opponents) + 1)], axis=1)
        scores = play_matches(self.env_name, policies, pairs, matches, seed=derive_seed(self.seed, Stream.MATCH_CALL, self.calls),
                              stack_policies=self.stack_policies, max_games=self.max_games, device=self.device)
        self.calls += 1
        return scores.mean(axis=1)
