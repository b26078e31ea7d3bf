"""Self-play schemes as ⟨Ω, G⟩ (docs/design/selfplay.md §1–2).

A scheme is two plain functions of what a trainer can show it, never of the RL algorithm:

* Ω — ``distribution(menagerie, payoff) -> {entry_id: probability}``, the policy sampling
  distribution, explicit so that it can be tested and plotted; ``sample`` draws from it.
* G — ``curate(menagerie, learner, payoff, outcome) -> Curation``, the curator: whether the
  learner's frozen snapshot enters the menagerie and which entries leave.

``learner`` is a ``LearnerInfo`` (name, episode, step, weight version and a ``snapshot`` callable
returning the frozen policy); ``outcome`` is the learner's score in the episode that just ended
(1 win, ½ draw, 0 loss).

δ-window (design §2): with M entries at positions 0..M−1 in order of entry, the window is the
positions ⌈δ·(M−1)⌉ … M−1 (δ = 0: the whole history; δ = 1: only the latest).
"""

from __future__ import annotations

import inspect
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from selfplay.core.menagerie import Entry, Menagerie
from selfplay.core.payoff import Payoff


@dataclass
class LearnerInfo:
    """What a scheme may know of the learner (never its algorithm)."""

    name: str = "learner"
    episode: int = 0
    step: int = 0
    weight_version: int = 0
    snapshot: Callable[[], Any] | None = None


@dataclass
class Curation:
    """What G did: the entries it added and those it discarded."""

    added: list[Entry] = field(default_factory=list)
    discarded: list[Entry] = field(default_factory=list)
    reset_to: Any = None  # a policy the learner must ``restore`` (league exploiters), else None


class Scheme:
    """Base class: subclasses define ``distribution`` (Ω) and ``curate`` (G)."""

    name: str = "scheme"

    def distribution(self, menagerie: Menagerie, payoff: Payoff | None = None) -> dict[int, float]:
        raise NotImplementedError

    def curate(
        self, menagerie: Menagerie, learner: LearnerInfo, payoff: Payoff | None = None, outcome: float | None = None
    ) -> Curation:
        raise NotImplementedError

    def sample(self, menagerie: Menagerie, payoff: Payoff | None = None, rng: np.random.Generator | None = None) -> Entry:
        """Draw one opponent from Ω."""
        return self.sample_many(menagerie, 1, payoff, rng)[0]

    def sample_many(
        self, menagerie: Menagerie, n: int, payoff: Payoff | None = None, rng: np.random.Generator | None = None
    ) -> list[Entry]:
        """Draw ``n`` independent opponents from Ω.

        Ω is turned into an alias table (Walker/Vose: O(M) to build, O(1) per draw) that is kept
        while ``omega_key`` stays the same, so draws are O(1) amortised; a scheme whose key is
        ``None`` (the default) rebuilds it at every call. The δ-schemes and naive SP override this
        with exact O(1) samplers that need no table at all.
        """
        rng = _check_draw(menagerie, n, rng)
        ids = self._alias_table(menagerie, payoff).draw(rng, n)
        return [menagerie[int(i)] for i in ids]

    def omega_key(self, menagerie: Menagerie, payoff: Payoff | None = None) -> Any:
        """A value that changes whenever Ω may change, or ``None`` when Ω must be recomputed at every
        draw (the default: right for a scheme whose Ω reads the payoff table)."""
        return None

    def _alias_table(self, menagerie: Menagerie, payoff: Payoff | None) -> AliasTable:
        key = self.omega_key(menagerie, payoff)
        cached = self.__dict__.get("_omega_cache")
        if key is not None and cached is not None and cached[0] is menagerie and cached[1] == key:
            return cached[2]
        dist = self.distribution(menagerie, payoff)
        table = AliasTable(list(dist), np.fromiter(dist.values(), dtype=float, count=len(dist)))
        key = self.omega_key(menagerie, payoff)  # again: computing Ω may have changed it (PSRO re-solves)
        self.__dict__["_omega_cache"] = (menagerie, key, table) if key is not None else None
        return table

    def __getstate__(self) -> dict:  # draw caches (alias table, ordered ids) hold the menagerie: not pickled
        return {k: v for k, v in self.__dict__.items() if k not in ("_omega_cache", "_ordered_ids")}

    # Schemes with internal state (PSRO) override these so that a run can be resumed.
    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


# -- drawing: alias tables and the ordered ids of a menagerie ---------------------------------


def _check_draw(menagerie: Menagerie, n: int, rng: np.random.Generator | None) -> np.random.Generator:
    if len(menagerie) == 0:
        raise ValueError("menagerie is empty: add the initial policy before sampling opponents")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be a non-negative integer (number of draws), got {n!r}")
    return np.random.default_rng() if rng is None else rng


class AliasTable:
    """Walker's alias method (Vose's construction): after an O(M) build, each draw of a key from the
    discrete distribution ``probs`` (normalised here) costs one uniform column and one coin."""

    def __init__(self, keys: Sequence[Any], probs: np.ndarray) -> None:
        probs = np.asarray(probs, dtype=float)
        if len(keys) == 0 or probs.shape != (len(keys),):
            raise ValueError(f"keys and probs must be non-empty and of equal length, got {len(keys)} and {probs.shape}")
        if not np.all(np.isfinite(probs)) or probs.min() < 0 or probs.sum() <= 0:
            raise ValueError("probs must be finite, non-negative and not all zero")
        m = len(keys)
        scaled = probs * (m / probs.sum())
        self.keys = np.asarray(keys)
        self.accept = np.ones(m)
        self.alias = np.arange(m)
        small = [i for i in range(m) if scaled[i] < 1.0]
        large = [i for i in range(m) if scaled[i] >= 1.0]
        while small and large:
            s, g = small.pop(), large.pop()
            self.accept[s], self.alias[s] = scaled[s], g
            scaled[g] -= 1.0 - scaled[s]
            (small if scaled[g] < 1.0 else large).append(g)
        # what is left has scaled weight 1 up to round-off: always accepted

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        column = rng.integers(len(self.keys), size=n)
        keep = rng.random(n) < self.accept[column]
        return self.keys[np.where(keep, column, self.alias[column])]


class OrderedIds:
    """The menagerie's ids in order of entry, updated in O(1) amortised per added entry.

    A menagerie grows only by appending (ids increase, never reused) and shrinks only by discards,
    so ``(next_id, len)`` identifies its state over time: when both grew by the same amount nothing
    was discarded and the new ids are exactly ``old next_id … new next_id − 1``; otherwise the list is
    rebuilt (O(M), once per discard).
    """

    def __init__(self) -> None:
        self._menagerie: Menagerie | None = None
        self._key = (0, 0)
        self._buf = np.empty(16, dtype=np.int64)
        self._n = 0

    def __call__(self, menagerie: Menagerie) -> np.ndarray:
        key = (menagerie.next_id, len(menagerie))
        if menagerie is not self._menagerie or key != self._key:
            grown = key[0] - self._key[0]
            if menagerie is self._menagerie and grown == key[1] - self._key[1] and grown > 0:
                self._append(np.arange(self._key[0], key[0], dtype=np.int64))
            else:
                self._n = 0
                self._append(np.asarray(menagerie.ids, dtype=np.int64))
            self._menagerie, self._key = menagerie, key
        return self._buf[: self._n]

    def _append(self, ids: np.ndarray) -> None:
        need = self._n + len(ids)
        if need > len(self._buf):
            grown = np.empty(max(need, 2 * len(self._buf)), dtype=np.int64)
            grown[: self._n] = self._buf[: self._n]
            self._buf = grown
        self._buf[self._n : need] = ids
        self._n = need


def _ordered_ids(scheme: Any, menagerie: Menagerie) -> np.ndarray:
    cache = scheme.__dict__.get("_ordered_ids")
    if cache is None:
        cache = scheme.__dict__["_ordered_ids"] = OrderedIds()
    return cache(menagerie)


# -- helpers shared by the history-based schemes --------------------------------------------


def check_delta(delta: Any) -> float:
    if not isinstance(delta, (int, float)) or isinstance(delta, bool) or math.isnan(delta) or not 0.0 <= delta <= 1.0:
        raise ValueError(f"delta must be a number in [0, 1], got {delta!r}")
    return float(delta)


def delta_window_start(delta: float, size: int) -> int:
    """First position of the δ-window, ⌈δ·(M−1)⌉ (robust to float round-off such as 0.1·30)."""
    if size <= 0:
        raise ValueError("menagerie is empty: the δ-window needs at least one entry")
    return min(size - 1, math.ceil(delta * (size - 1) - 1e-9))


class _SnapshotEveryEpisode:
    """G of the δ-schemes: add the learner's snapshot every ``add_every`` episodes, or after each
    policy update (``add_every="update"``); never discard."""

    def _init_adding(self, add_every: int | str) -> None:
        if add_every != "update" and not (isinstance(add_every, int) and add_every >= 1):
            raise ValueError(f"add_every must be a positive integer (episodes) or 'update', got {add_every!r}")
        self.add_every = add_every
        self._episodes_since_add = 0

    def _wants_snapshot(self, menagerie: Menagerie, learner: LearnerInfo) -> bool:
        if self.add_every == "update":
            latest = menagerie.latest.tags.get("weight_version") if len(menagerie) else None
            return latest != learner.weight_version
        self._episodes_since_add += 1
        if self._episodes_since_add >= self.add_every:
            self._episodes_since_add = 0
            return True
        return False

    def curate(
        self, menagerie: Menagerie, learner: LearnerInfo, payoff: Payoff | None = None, outcome: float | None = None
    ) -> Curation:
        if not self._wants_snapshot(menagerie, learner):
            return Curation()
        return Curation(added=[add_snapshot(menagerie, learner)])

    def state_dict(self) -> dict:
        return {"episodes_since_add": self._episodes_since_add}

    def load_state_dict(self, state: dict) -> None:
        self._episodes_since_add = int(state.get("episodes_since_add", 0))


def add_snapshot(menagerie: Menagerie, learner: LearnerInfo, **tags: Any) -> Entry:
    """Add the learner's frozen snapshot with the standard tags."""
    if learner.snapshot is None:
        raise ValueError("learner.snapshot is None: the scheme needs a callable returning a frozen policy")
    return menagerie.add(
        learner.snapshot(),
        step=int(learner.step),
        player=learner.name,
        episode=int(learner.episode),
        weight_version=int(learner.weight_version),
        **tags,
    )


# -- the schemes ----------------------------------------------------------------------------


class NaiveSelfPlay(Scheme):
    """Naive SP: Ω puts all mass on the latest entry; G replaces the menagerie by the latest
    snapshot whenever the learner's weights changed (design §2)."""

    def __init__(self, name: str = "naive") -> None:
        self.name = name

    def distribution(self, menagerie: Menagerie, payoff: Payoff | None = None) -> dict[int, float]:
        return {menagerie.latest.id: 1.0}

    def sample_many(self, menagerie: Menagerie, n: int, payoff: Payoff | None = None,
                    rng: np.random.Generator | None = None) -> list[Entry]:
        if type(self).distribution is not NaiveSelfPlay.distribution:  # a subclass changed Ω: draw from it
            return super().sample_many(menagerie, n, payoff, rng)
        _check_draw(menagerie, n, rng)
        return [menagerie.latest] * n

    def curate(
        self, menagerie: Menagerie, learner: LearnerInfo, payoff: Payoff | None = None, outcome: float | None = None
    ) -> Curation:
        if len(menagerie) and menagerie.latest.tags.get("weight_version") == learner.weight_version:
            return Curation()
        added = add_snapshot(menagerie, learner)
        discarded = [menagerie.discard(e.id) for e in menagerie if e.id != added.id]
        return Curation(added=[added], discarded=discarded)


class DeltaUniform(_SnapshotEveryEpisode, Scheme):
    """δ-Uniform: Ω uniform over the δ-window; G adds a snapshot every episode (design §2)."""

    def __init__(self, delta: float = 0.0, add_every: int | str = 1, name: str | None = None) -> None:
        self.delta = check_delta(delta)
        self._init_adding(add_every)
        self.name = name or f"delta-uniform:delta={_fmt(self.delta)}"

    def distribution(self, menagerie: Menagerie, payoff: Payoff | None = None) -> dict[int, float]:
        ids = menagerie.ids
        window = ids[delta_window_start(self.delta, len(ids)):]
        return {i: 1.0 / len(window) for i in window}

    def sample_many(self, menagerie: Menagerie, n: int, payoff: Payoff | None = None,
                    rng: np.random.Generator | None = None) -> list[Entry]:
        """Exact O(1) amortised draws: a uniform position of the δ-window, no table."""
        if type(self).distribution is not DeltaUniform.distribution:  # a subclass changed Ω: draw from it
            return super().sample_many(menagerie, n, payoff, rng)
        rng = _check_draw(menagerie, n, rng)
        ids = _ordered_ids(self, menagerie)
        start = delta_window_start(self.delta, len(ids))
        return [menagerie[int(i)] for i in ids[rng.integers(start, len(ids), size=n)]]


class DeltaLimitUniform(_SnapshotEveryEpisode, Scheme):
    """δ-Limit-Uniform: over the δ-window, weight of position e ∝ 1/(M − e)² (the latest 1, the one
    before ¼, ...), normalised; G as δ-Uniform (design §2)."""

    def __init__(self, delta: float = 0.0, add_every: int | str = 1, name: str | None = None) -> None:
        self.delta = check_delta(delta)
        self._init_adding(add_every)
        self.name = name or f"delta-limit-uniform:delta={_fmt(self.delta)}"

    def distribution(self, menagerie: Menagerie, payoff: Payoff | None = None) -> dict[int, float]:
        ids = menagerie.ids
        size = len(ids)
        start = delta_window_start(self.delta, size)
        weights = 1.0 / (size - np.arange(start, size, dtype=float)) ** 2
        weights /= weights.sum()
        return dict(zip(ids[start:], weights.tolist()))

    def sample_many(self, menagerie: Menagerie, n: int, payoff: Payoff | None = None,
                    rng: np.random.Generator | None = None) -> list[Entry]:
        """Exact O(1) expected-time draws by rejection, no table.

        The distance from the end d = M − e lies in 1…D (D = M − window start) with P(d) ∝ 1/d².
        Proposal: q(d) ∝ 1/(d(d+1)) = 1/d − 1/(d+1) on 1…D, whose CDF telescopes, so
        d = ⌊1/(1 − u·D/(D+1))⌋ for u ~ U[0, 1). Since 1/d² ≤ 2/(d(d+1)), accept with probability
        (1/d²) / (2/(d(d+1))) = (d+1)/(2d) ≥ ½: at most two proposals per draw on average.
        """
        if type(self).distribution is not DeltaLimitUniform.distribution:  # a subclass changed Ω: draw from it
            return super().sample_many(menagerie, n, payoff, rng)
        rng = _check_draw(menagerie, n, rng)
        ids = _ordered_ids(self, menagerie)
        size = len(ids)
        span = size - delta_window_start(self.delta, size)
        d = np.empty(n, dtype=np.int64)
        todo = np.arange(n)
        while len(todo):
            u = rng.random(len(todo))
            prop = np.clip(np.floor(1.0 / (1.0 - u * (span / (span + 1.0)))), 1, span).astype(np.int64)
            ok = rng.random(len(todo)) * (2.0 * prop) < prop + 1.0
            d[todo[ok]] = prop[ok]
            todo = todo[~ok]
        return [menagerie[int(i)] for i in ids[size - d]]


# -- PSRO's parts, named as OpenSpiel's PSRO (psro_v2) names them --------------------------------
#
# An iteration (OpenSpiel: ``AbstractMetaTrainer.iteration``) runs the oracle (``update_agents``), adds
# the new policy's row and column to the empirical meta-game (``update_empirical_gamestate``) and solves
# it with the meta-solver (``update_meta_strategies``: the ``meta_strategy_method``); strategy selection
# (``training_strategy_selector``) turns the solution into Ω, the opponents the next oracle trains
# against. Each swappable part has one registry of named choices below.


class WinRateOracle:
    """The oracle's stopping rule. PSRO's oracle is the learner itself, trained by RL against Ω
    (OpenSpiel's ``rl_oracle``); an iteration ends when the mean score of the learner's last ``window``
    episodes reaches ``threshold`` (it beats the meta-strategy), or after ``max_episodes`` episodes
    (the oracle always ends)."""

    def __init__(self, threshold: float, window: int, max_episodes: int) -> None:
        self.threshold, self.window, self.max_episodes = threshold, window, max_episodes
        self.outcomes: deque[float] = deque(maxlen=window)
        self.episodes = 0

    def record(self, outcome: float) -> bool | None:
        """Count one episode's score: ``None`` while the iteration goes on, else whether it ended beaten."""
        self.outcomes.append(float(outcome))
        self.episodes += 1
        beaten = len(self.outcomes) == self.window and np.mean(self.outcomes) >= self.threshold
        if beaten or self.episodes >= self.max_episodes:
            return bool(beaten)
        return None

    def reset(self) -> None:
        """A new iteration starts."""
        self.outcomes.clear()
        self.episodes = 0

    def state_dict(self) -> dict:
        return {"outcomes": list(self.outcomes), "episodes_in_iteration": self.episodes}

    def load_state_dict(self, state: dict) -> None:
        self.outcomes = deque(state["outcomes"], maxlen=self.window)
        self.episodes = int(state["episodes_in_iteration"])


# oracle: name → its stopping rule, built from (threshold, window, max_episodes)
ORACLES: dict[str, Callable[..., WinRateOracle]] = {"win-rate": WinRateOracle}


def shift_meta_game(W: np.ndarray) -> np.ndarray:
    """A = W − ½: the zero-sum game of the win rates (antisymmetric when W[j, i] = 1 − W[i, j])."""
    return W - 0.5


def logit_meta_game(W: np.ndarray) -> np.ndarray:
    """A = log(W / (1 − W)), W clipped to [10⁻³, 1 − 10⁻³]: the win rates as log-odds."""
    Wc = np.clip(W, 1e-3, 1 - 1e-3)
    return np.log(Wc / (1 - Wc))


# meta-game: name → the matrix game A the meta-solver solves, from the empirical win rates W
META_GAMES: dict[str, Callable[[np.ndarray], np.ndarray]] = {"shift": shift_meta_game, "logit": logit_meta_game}

# meta-solver (OpenSpiel's meta_strategy_method): name → the function of ``analysis.nash`` mapping A to the
# meta-strategy p (imported at first use: the core needs numpy only)
META_SOLVERS: dict[str, str] = {"maxent": "maxent_nash", "lp": "lp_nash", "uniform": "uniform",
                                "rectified": "rectified_nash", "alpha_rank": "alpha_rank"}


def probabilistic_selection(meta_strategy: dict[int, float]) -> dict[int, float]:
    """Opponents drawn by the meta-strategy's probabilities (OpenSpiel's ``probabilistic``); entries it
    gives no mass are never drawn."""
    return {i: p for i, p in meta_strategy.items() if p > 0.0}


def uniform_selection(meta_strategy: dict[int, float]) -> dict[int, float]:
    """Opponents drawn uniformly over the whole population (OpenSpiel's ``uniform``), whatever the
    meta-strategy."""
    return {i: 1.0 / len(meta_strategy) for i in meta_strategy}


# strategy selection (OpenSpiel's training_strategy_selector): name → Ω from the meta-strategy
STRATEGY_SELECTORS: dict[str, Callable[[dict[int, float]], dict[int, float]]] = {
    "probabilistic": probabilistic_selection, "uniform": uniform_selection}

# An evaluator plays ``entry`` against each of ``opponents`` for ``matches`` matches and returns
# entry's win rates (draws counted ½), shape (len(opponents),).
Evaluator = Callable[[Entry, Sequence[Entry], int], np.ndarray]


def resolve_meta_solver(solver: str | Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """Name → meta-solver function of ``analysis.nash`` (each maps an antisymmetric A to p)."""
    if callable(solver):
        return solver
    if solver not in META_SOLVERS:
        raise ValueError(f"solver must be one of {tuple(META_SOLVERS)} or a callable, got {solver!r}")
    from selfplay.analysis import nash  # numpy/scipy only

    function = getattr(nash, META_SOLVERS[solver], None)
    if function is None:
        raise ValueError(f"solver {solver!r} is not available in analysis.nash")
    return function


def _check_choice(label: str, value: Any, registry: dict) -> None:
    if not isinstance(value, str) or value not in registry:
        raise ValueError(f"{label} must be one of {tuple(registry)}, got {value!r}")


class PSRO(Scheme):
    """PSRO as the paper's authors framed it (design §2), its steps named as OpenSpiel's PSRO names them.

    Ω (strategy selection, ``selector``): from the meta-strategy, the meta-solver's solution of the
    menagerie's empirical meta-game (maxent Nash of A = W − ½ by default); ``probabilistic`` draws
    by its probabilities. The live learner is never its own opponent.
    G (the oracle's end, ``oracle``): when the learner's win rate over its last ``window`` episodes
    reaches ``threshold`` — or the iteration has lasted ``max_episodes_per_iteration`` episodes (the
    oracle always ends) — add a frozen copy, fill its row/column of the meta-game with
    ``matches_per_pair`` matches against every entry (through ``evaluate``), re-solve (``solver`` on
    the ``meta_game`` made of W), and start the next iteration.

    ``evaluate(entry, opponents, matches) -> win_rates``: the new entry's win rates (draws ½) against
    each of ``opponents``, shape ``(len(opponents),)``, *from the new entry's side*; the meta-game
    stores ``W[entry, o] = w`` and ``W[o, entry] = 1 − w``. It is required when the scheme is built
    (``selfplay.training.adapters.MatchEvaluator`` plays the matches with the suite's batched match code);
    ``defer_evaluator=True`` lets a trainer that sets ``scheme.evaluate`` itself before the first
    curation (the suite's ``SelfPlayTrainer``) build the scheme first.
    """

    def __init__(
        self,
        solver: str | Callable[[np.ndarray], np.ndarray] = "maxent",
        threshold: float = 0.72,
        window: int = 50,
        matches_per_pair: int = 25,
        max_episodes_per_iteration: int = 1000,
        meta_game: str = "shift",
        evaluate: Evaluator | None = None,
        name: str | None = None,
        defer_evaluator: bool = False,
        oracle: str = "win-rate",
        selector: str = "probabilistic",
    ) -> None:
        if not (isinstance(threshold, (int, float)) and 0.0 < threshold <= 1.0):
            raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
        for label, value in (("window", window), ("matches_per_pair", matches_per_pair),
                             ("max_episodes_per_iteration", max_episodes_per_iteration)):
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
                raise ValueError(f"{label} must be a positive integer, got {value!r}")
        _check_choice("meta_game", meta_game, META_GAMES)
        if not callable(solver) and solver not in META_SOLVERS:
            raise ValueError(f"solver must be one of {tuple(META_SOLVERS)} or a callable, got {solver!r}")
        _check_choice("oracle", oracle, ORACLES)
        _check_choice("selector", selector, STRATEGY_SELECTORS)
        if evaluate is None and not defer_evaluator:
            raise ValueError(
                "evaluate is required by PSRO: a callable evaluate(entry, opponents, matches) returning the new "
                "entry's win rates against each opponent (draws count 1/2), used to fill the meta-game; e.g. "
                "make_scheme('psro', evaluate=selfplay.training.adapters.MatchEvaluator('rirrps')), or defer_evaluator=True "
                "if your trainer sets scheme.evaluate before the first curation")
        if evaluate is not None and not callable(evaluate):
            raise ValueError(f"evaluate must be callable (entry, opponents, matches) -> win rates, got {evaluate!r}")
        self.solver = solver  # a name is resolved to analysis.nash's function at first use
        self.threshold = float(threshold)
        self.window = window
        self.matches_per_pair = matches_per_pair
        self.max_episodes_per_iteration = max_episodes_per_iteration
        self.meta_game = meta_game
        self.selector = selector
        self.evaluate = evaluate
        self.name = name or "psro"
        self.oracle = ORACLES[oracle](self.threshold, window, max_episodes_per_iteration)
        self._meta: dict[tuple[int, int], float] = {}  # win rate of i against j, both orders stored
        self._solution: dict[int, float] = {}  # the meta-strategy
        self._solves = 0  # bumped whenever the solution changes (part of Ω's cache key)
        self.iterations = 0

    # meta-game and meta-solver ------------------------------------------------------------
    def meta_matrix(self, ids: Sequence[int]) -> np.ndarray:
        """The empirical meta-game W over ``ids`` (0.5 on the diagonal and for unplayed pairs)."""
        return np.array([[0.5 if i == j else self._meta.get((i, j), 0.5) for j in ids] for i in ids])

    def extend_meta_game(self, entry: Entry, opponents: Sequence[Entry]) -> None:
        """The new entry's row and column of W: ``matches_per_pair`` matches against every opponent."""
        rates = np.asarray(self.evaluate(entry, opponents, self.matches_per_pair), dtype=float)
        if rates.shape != (len(opponents),):
            raise ValueError(f"evaluate returned shape {rates.shape}, expected ({len(opponents)},)")
        for opp, w in zip(opponents, rates):
            self._meta[(entry.id, opp.id)] = float(w)
            self._meta[(opp.id, entry.id)] = 1.0 - float(w)

    def solve(self, ids: Sequence[int]) -> dict[int, float]:
        """The meta-strategy over ``ids``: the meta-solver's solution of the meta-game made of W."""
        A = META_GAMES[self.meta_game](self.meta_matrix(ids))
        p = np.asarray(resolve_meta_solver(self.solver)(A), dtype=float)
        p = np.clip(p, 0.0, None)
        p /= p.sum()
        self._solves += 1
        return dict(zip(ids, p.tolist()))

    # Ω: strategy selection ----------------------------------------------------------------
    def omega_key(self, menagerie: Menagerie, payoff: Payoff | None = None) -> Any:
        """Ω changes only with the menagerie or a new meta-game solution (never with the payoff)."""
        return (menagerie.next_id, len(menagerie), self._solves)

    def distribution(self, menagerie: Menagerie, payoff: Payoff | None = None) -> dict[int, float]:
        ids = menagerie.ids
        if len(ids) == 0:
            raise ValueError("menagerie is empty: PSRO needs the initial policy as its first entry")
        if set(self._solution) != set(ids):
            self._solution = self.solve(ids)
        return STRATEGY_SELECTORS[self.selector](self._solution)

    # G: the oracle's iteration ------------------------------------------------------------
    def curate(
        self, menagerie: Menagerie, learner: LearnerInfo, payoff: Payoff | None = None, outcome: float | None = None
    ) -> Curation:
        """One episode of the oracle; when its iteration ends, its policy joins the menagerie, the
        meta-game gets the policy's row and column, and the meta-solver solves it again."""
        if outcome is None:
            raise ValueError("outcome is required by PSRO.curate: the learner's score (1, 0.5, 0) in the episode")
        beaten = self.oracle.record(outcome)
        if beaten is None:
            return Curation()
        if self.evaluate is None:
            raise ValueError("PSRO.evaluate is not set: the trainer must supply an evaluator to fill the meta-game")
        opponents = menagerie.entries
        entry = add_snapshot(menagerie, learner, psro_iteration=self.iterations + 1, beaten=beaten)
        self.extend_meta_game(entry, opponents)
        self._solution = self.solve(menagerie.ids)
        self.oracle.reset()
        self.iterations += 1
        return Curation(added=[entry])

    def state_dict(self) -> dict:
        return {
            **self.oracle.state_dict(),
            "meta": [[i, j, w] for (i, j), w in self._meta.items()],
            "iterations": self.iterations,
        }

    def load_state_dict(self, state: dict) -> None:
        self.oracle.load_state_dict(state)
        self._meta = {(int(i), int(j)): float(w) for i, j, w in state["meta"]}
        self.iterations = int(state["iterations"])
        self._solution = {}
        self._solves += 1


def _fmt(x: float) -> str:
    return f"{x:g}"


# -- spec strings -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemeKind:
    """A scheme a spec string can name: its class, and the parameters a spec must give."""

    cls: type
    required: tuple[str, ...] = ()

    @property
    def params(self) -> set[str]:
        """The constructor's parameters a spec may set (``name`` is the spec itself; ``defer_evaluator``
        is ``make_scheme``'s)."""
        return set(inspect.signature(self.cls).parameters) - {"name", "defer_evaluator"}


# The one registry of schemes by spec name (AlphaStar's league, ``league``, is not one learner's scheme).
SCHEMES: dict[str, SchemeKind] = {
    "naive": SchemeKind(NaiveSelfPlay),
    "delta-uniform": SchemeKind(DeltaUniform, required=("delta",)),
    "delta-limit-uniform": SchemeKind(DeltaLimitUniform, required=("delta",)),
    "psro": SchemeKind(PSRO),
}
SCHEME_NAMES = (*SCHEMES, "league")


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name:key=value,key=value"`` → (name, {key: value}) with numbers converted."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"scheme spec must be a non-empty string like 'delta-uniform:delta=0.5', got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    kwargs: dict[str, Any] = {}
    if rest:
        for part in rest.split(","):
            key, eq, value = part.partition("=")
            if not eq or not key.strip() or not value.strip():
                raise ValueError(f"malformed scheme spec {spec!r}: expected key=value pairs after ':', got {part!r}")
            if key.strip() in kwargs:
                raise ValueError(f"malformed scheme spec {spec!r}: parameter {key.strip()!r} is given twice")
            kwargs[key.strip()] = _parse_value(value.strip())
    return name.strip(), kwargs


def _parse_value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def make_scheme(spec: str, *, defer_evaluator: bool = False, **overrides: Any) -> Scheme:
    """Build a scheme from a spec string; the string becomes the scheme's display name.

    ``naive`` · ``delta-uniform:delta=D`` · ``delta-limit-uniform:delta=D`` (both also take
    ``add_every=K|update``) · ``psro[:solver=maxent|lp|uniform|rectified|alpha_rank,threshold=,window=,
    matches_per_pair=,max_episodes_per_iteration=,meta_game=shift|logit,oracle=win-rate,
    selector=probabilistic|uniform]`` (``SCHEMES``; PSRO's parts: ``META_SOLVERS``, ``META_GAMES``,
    ``ORACLES``, ``STRATEGY_SELECTORS``) ·
    (``league[:...]`` names AlphaStar's league, which is not one learner's scheme: refused here,
    see ``selfplay.core.league.AlphaStarLeague`` and ``selfplay league``).
    ``overrides`` (e.g. ``evaluate=`` for PSRO) are passed to the constructor. PSRO needs
    ``evaluate`` unless ``defer_evaluator=True`` (ignored by the other schemes): a trainer that sets
    ``scheme.evaluate`` itself, or a caller that only validates a spec or prints Ω.
    """
    name, kwargs = parse_spec(spec)
    kwargs.update(overrides)
    if name == "league":
        raise ValueError(f"spec {spec!r} is AlphaStar's league, which trains several learners and is not one "
                         "learner's scheme: build selfplay.AlphaStarLeague(LeagueConfig(...)) or run `selfplay league`")
    if name not in SCHEMES:
        raise ValueError(f"unknown scheme {name!r} in spec {spec!r}; known schemes: {', '.join(SCHEME_NAMES)}")
    kind = SCHEMES[name]
    unknown = set(kwargs) - kind.params
    if unknown:
        raise ValueError(f"unknown parameter(s) {sorted(unknown)} for scheme {name!r}; allowed: {sorted(kind.params) or 'none'}")
    for required in kind.required:
        if required not in kwargs:
            raise ValueError(f"scheme {name!r} needs {required}, e.g. '{name}:{required}=0.5'")
    if "defer_evaluator" in inspect.signature(kind.cls).parameters:
        kwargs["defer_evaluator"] = defer_evaluator
    return kind.cls(name=spec.strip(), **kwargs)
