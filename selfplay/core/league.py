"""AlphaStar's league with prioritized fictitious self-play (docs/design/selfplay.md §3).

Several learning players — main players (MP), main exploiters (ME) and league exploiters (LE) —
share one menagerie of frozen "historical" checkpoints and one decayed payoff table. Payoff keys
are entry ids (historicals) and player names (active players). Each player's opponent
distribution is available explicitly (``distribution``) and by sampling the branch procedure of the
pseudocode (``get_match``); tests check that the two agree.

Public-version bugs avoided (design §3): ``remove_monotonic_suffix`` works on arrays;
every checkpoint rule reads attributes that exist; a historical's ``parent`` tag is the *player*
name, so the exploiter check matches; ``pfsp`` of no candidates raises instead of dividing by 0.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from selfplay.core.menagerie import Entry, Menagerie
from selfplay.core.payoff import Payoff
from selfplay.core.schemes import Curation, LearnerInfo, Scheme, parse_spec

WEIGHTINGS = {
    "linear": lambda x: 1.0 - x,
    "linear_capped": lambda x: np.minimum(0.5, 1.0 - x),
    "variance": lambda x: x * (1.0 - x),
    "squared": lambda x: (1.0 - x) ** 2,
}

MAIN, MAIN_EXPLOITER, LEAGUE_EXPLOITER = "main", "main_exploiter", "league_exploiter"


def pfsp(win_rates: Any, weighting: str = "linear") -> np.ndarray:
    """p_i = f(x_i) / Σ_j f(x_j) with x the win rates against the candidates; uniform if Σ f < 1e-10."""
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {sorted(WEIGHTINGS)}, got {weighting!r}")
    x = np.asarray(win_rates, dtype=float).reshape(-1)
    if x.size == 0:
        raise ValueError("win_rates is empty: PFSP needs at least one candidate opponent")
    if np.any(~np.isfinite(x)) or np.any(x < 0) or np.any(x > 1):
        raise ValueError(f"win_rates must lie in [0, 1], got {x}")
    f = WEIGHTINGS[weighting](x)
    total = f.sum()
    if total < 1e-10:
        return np.full(x.size, 1.0 / x.size)
    return f / total


def remove_monotonic_suffix(win_rates: np.ndarray, keys: list) -> tuple[np.ndarray, list]:
    """Keep the prefix up to the last i with wr[i−1] < wr[i]; nothing if wr never increases."""
    win_rates = np.asarray(win_rates, dtype=float)
    for i in range(len(win_rates) - 1, 0, -1):
        if win_rates[i - 1] < win_rates[i]:
            return win_rates[: i + 1], list(keys[: i + 1])
    return win_rates[:0], []


@dataclass
class LeagueConfig:
    """League composition and the rules' thresholds (the paper's values as defaults)."""

    main: int = 1
    main_exploiters: int = 1
    league_exploiters: int = 2
    min_steps: int = 2_000_000_000  # no checkpoint before this many steps since the last one
    max_steps: int = 4_000_000_000  # checkpoint anyway after this many
    decay: float = 0.99  # payoff decay
    league_exploiter_reset: float = 0.25  # probability that an LE resets at a checkpoint

    def __post_init__(self) -> None:
        if not (isinstance(self.main, int) and self.main >= 1):
            raise ValueError(f"main must be an integer ≥ 1, got {self.main!r}")
        for name in ("main_exploiters", "league_exploiters"):
            v = getattr(self, name)
            if not (isinstance(v, int) and v >= 0):
                raise ValueError(f"{name} must be an integer ≥ 0, got {v!r}")
        if not (0 <= self.min_steps <= self.max_steps):
            raise ValueError(f"need 0 ≤ min_steps ≤ max_steps, got {self.min_steps!r}, {self.max_steps!r}")
        if not 0.0 <= self.league_exploiter_reset <= 1.0:
            raise ValueError(f"league_exploiter_reset must be in [0, 1], got {self.league_exploiter_reset!r}")

    @classmethod
    def from_kwargs(cls, kwargs: dict) -> LeagueConfig:
        allowed = {f.name for f in fields(cls)}
        unknown = set(kwargs) - allowed
        if unknown:
            raise ValueError(f"unknown league parameter(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
        ints = {"main", "main_exploiters", "league_exploiters", "min_steps", "max_steps"}
        for k in ints & set(kwargs):
            v = kwargs[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v:
                raise ValueError(f"league parameter {k} must be an integer, got {v!r}")
        return cls(**{k: int(v) if k in ints else v for k, v in kwargs.items()})


@dataclass
class Player:
    """An active learning player of the league."""

    name: str
    kind: str
    steps: int = 0
    checkpoint_step: int = 0


Distribution = dict[Hashable, float]


class AlphaStarLeague:
    """Players, their shared menagerie of historicals and the decayed payoff table."""

    def __init__(self, config: LeagueConfig | None = None, name: str = "league") -> None:
        self.config = config or LeagueConfig()
        self.name = name
        self.menagerie = Menagerie()
        self.payoff = Payoff(decay=self.config.decay)
        self.players: dict[str, Player] = {}
        for kind, count in ((MAIN, self.config.main), (MAIN_EXPLOITER, self.config.main_exploiters),
                            (LEAGUE_EXPLOITER, self.config.league_exploiters)):
            for i in range(count):
                self.players[f"{kind}_{i}"] = Player(name=f"{kind}_{i}", kind=kind)
        self.sl_policy: Any = None

    # -- set-up ---------------------------------------------------------------------------
    def start(self, sl_policy: Any, step: int = 0) -> list[Entry]:
        """Every player starts from ``sl_policy``; each main player enters it as its first historical."""
        self.sl_policy = sl_policy
        return [self._add_historical(p, sl_policy, step) for p in self.of_kind(MAIN)]

    def of_kind(self, kind: str) -> list[Player]:
        return [p for p in self.players.values() if p.kind == kind]

    def player(self, name: str) -> Player:
        if name not in self.players:
            raise ValueError(f"player must be one of {list(self.players)}, got {name!r}")
        return self.players[name]

    def historicals(self, parent: str | None = None, parent_kind: str | None = None) -> list[int]:
        """Ids of historical checkpoints, optionally only those of one player or player kind."""
        return [
            e.id for e in self.menagerie
            if (parent is None or e.tags.get("parent") == parent)
            and (parent_kind is None or e.tags.get("kind") == parent_kind)
        ]

    def _add_historical(self, player: Player, policy: Any, step: int) -> Entry:
        return self.menagerie.add(policy, step=int(step), parent=player.name, kind=player.kind)

    # -- matchmaking: Ω -------------------------------------------------------------------
    def _wr(self, player: Player, keys: list) -> np.ndarray:
        return self.payoff.win_rates(player.name, keys)

    def _pfsp_over(self, player: Player, keys: list, weighting: str) -> Distribution:
        return dict(zip(keys, pfsp(self._wr(player, keys), weighting).tolist()))

    def _selfplay_branch(self, player: Player, opponent: Player, weighting: str, threshold: float) -> Distribution:
        """Play ``opponent`` itself if winning more than ``threshold`` against it, else PFSP over
        its historicals (falls back to the opponent when it has none)."""
        if self.payoff.win_rate(player.name, opponent.name) > threshold:
            return {opponent.name: 1.0}
        keys = self.historicals(parent=opponent.name)
        return self._pfsp_over(player, keys, weighting) if keys else {opponent.name: 1.0}

    def _verification_branch(self, player: Player, opponent: Player) -> Distribution | None:
        """Main player's checks: exploiters' historicals it loses to, then forgetting of ``opponent``."""
        exploiter_keys = self.historicals(parent_kind=MAIN_EXPLOITER)
        if exploiter_keys:
            wr = self._wr(player, exploiter_keys)
            if wr.min() < 0.3:
                return dict(zip(exploiter_keys, pfsp(wr, "squared").tolist()))
        keys = self.historicals(parent=opponent.name)
        wr, keys = remove_monotonic_suffix(self._wr(player, keys), keys)
        if len(wr) and wr.min() < 0.7:
            return dict(zip(keys, pfsp(wr, "squared").tolist()))
        return None

    def distribution(self, name: str) -> Distribution:
        """The explicit opponent distribution of player ``name`` given the current payoff table."""
        player = self.player(name)
        mains = self.of_kind(MAIN)
        out: dict[Hashable, float] = {}

        def mix(dist: Distribution, weight: float) -> None:
            for key, p in dist.items():
                out[key] = out.get(key, 0.0) + weight * p

        if player.kind == MAIN:
            mix(self._pfsp_over(player, self.historicals(), "squared"), 0.5)
            for opponent in mains:
                selfplay = self._selfplay_branch(player, opponent, "variance", 0.3)
                verification = self._verification_branch(player, opponent)
                mix(verification if verification is not None else selfplay, 0.15 / len(mains))
                mix(selfplay, 0.35 / len(mains))
        elif player.kind == MAIN_EXPLOITER:
            for opponent in mains:
                mix(self._selfplay_branch(player, opponent, "variance", 0.1), 1.0 / len(mains))
        else:
            mix(self._pfsp_over(player, self.historicals(), "linear_capped"), 1.0)
        return {k: p for k, p in out.items() if p > 0.0}

    def get_match(self, name: str, rng: np.random.Generator) -> Hashable:
        """Sample an opponent key by the pseudocode's branch procedure (coin, then branches)."""
        player = self.player(name)
        mains = self.of_kind(MAIN)

        def draw(dist: Distribution) -> Hashable:
            keys = list(dist)
            return keys[rng.choice(len(keys), p=np.array(list(dist.values())))]

        if player.kind == MAIN:
            coin = rng.random()
            if coin < 0.5:
                return draw(self._pfsp_over(player, self.historicals(), "squared"))
            opponent = mains[rng.integers(len(mains))]
            if coin < 0.65:
                verification = self._verification_branch(player, opponent)
                if verification is not None:
                    return draw(verification)
            return draw(self._selfplay_branch(player, opponent, "variance", 0.3))
        if player.kind == MAIN_EXPLOITER:
            opponent = mains[rng.integers(len(mains))]
            return draw(self._selfplay_branch(player, opponent, "variance", 0.1))
        return draw(self._pfsp_over(player, self.historicals(), "linear_capped"))

    def record(self, name: str, opponent: Hashable, score: float) -> None:
        """Record a match of player ``name`` against ``opponent`` (a self-match is not recorded)."""
        if opponent != name:
            self.payoff.update(name, opponent, score)

    # -- checkpoints and resets: G --------------------------------------------------------
    def ready_to_checkpoint(self, name: str) -> bool:
        """Not before ``min_steps`` since the last checkpoint; then when the minimum win rate is
        > 0.7 (ME: against the main players; others: against all historicals), or after ``max_steps``."""
        player = self.player(name)
        passed = player.steps - player.checkpoint_step
        if passed < self.config.min_steps:
            return False
        if passed >= self.config.max_steps:
            return True
        keys = [p.name for p in self.of_kind(MAIN)] if player.kind == MAIN_EXPLOITER else self.historicals()
        return bool(len(keys)) and bool(self._wr(player, keys).min() > 0.7)

    def checkpoint(self, name: str, policy: Any, rng: np.random.Generator) -> Curation:
        """Add ``policy`` as a historical of ``name``; MP never resets, ME always resets to the SL
        policy, LE with probability ``league_exploiter_reset``."""
        player = self.player(name)
        entry = self._add_historical(player, policy, player.steps)
        player.checkpoint_step = player.steps
        reset = player.kind == MAIN_EXPLOITER or (
            player.kind == LEAGUE_EXPLOITER and rng.random() < self.config.league_exploiter_reset
        )
        if reset and self.sl_policy is None:
            raise ValueError("the league has no SL policy to reset to: call start(sl_policy) first")
        return Curation(added=[entry], reset_to=self.sl_policy if reset else None)

    def step(self, name: str, learner: LearnerInfo, rng: np.random.Generator) -> Curation:
        """Update the player's step count from ``learner`` and checkpoint if the rules say so."""
        player = self.player(name)
        player.steps = int(learner.step)
        if not self.ready_to_checkpoint(name):
            return Curation()
        if learner.snapshot is None:
            raise ValueError("learner.snapshot is None: the league needs the player's frozen policy")
        return self.checkpoint(name, learner.snapshot(), rng)

    def scheme_for(self, name: str) -> LeaguePlayerScheme:
        """This player's ⟨Ω, G⟩ as a ``Scheme`` usable by any single-learner trainer."""
        self.player(name)
        return LeaguePlayerScheme(self, name)

    # -- persistence ----------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"config": asdict(self.config), "players": [asdict(p) for p in self.players.values()],
                "payoff": self.payoff.to_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.players = {p["name"]: Player(**p) for p in state["players"]}
        self.payoff = Payoff.from_dict(state["payoff"])


class LeaguePlayerScheme(Scheme):
    """One league player's view as a Scheme: Ω over historicals and active players (keys that are
    player names stand for the live learners), G = the league's checkpoint rule and reset."""

    def __init__(self, league: AlphaStarLeague, player: str, seed: int | None = None) -> None:
        self.league = league
        self.player = player
        self.name = f"{league.name}/{player}"
        self._rng = np.random.default_rng(seed)

    def distribution(self, menagerie: Menagerie | None = None, payoff: Payoff | None = None) -> Distribution:
        return self.league.distribution(self.player)

    def sample_many(self, menagerie, n, payoff=None, rng=None):
        raise ValueError("a league player's opponents include live players (keys that are player names), which are "
                         "not menagerie entries: draw with sample_key() or AlphaStarLeague.get_match()")

    def sample_key(self, rng: np.random.Generator | None = None) -> Hashable:
        return self.league.get_match(self.player, rng if rng is not None else self._rng)

    def curate(self, menagerie: Menagerie | None, learner: LearnerInfo, payoff: Payoff | None = None,
               outcome: float | None = None) -> Curation:
        return self.league.step(self.player, learner, self._rng)


def league_from_spec(spec: str) -> AlphaStarLeague:
    """``league[:main=1,main_exploiters=1,league_exploiters=2,...]`` → an ``AlphaStarLeague`` named by the spec."""
    name, kwargs = parse_spec(spec)
    if name != "league":
        raise ValueError(f"league spec must start with 'league', e.g. 'league:main=1,main_exploiters=1', got {spec!r}")
    return AlphaStarLeague(LeagueConfig.from_kwargs(kwargs), name=spec.strip())
