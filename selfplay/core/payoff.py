"""The payoff table: decayed match statistics between menagerie entries and players (docs/design/selfplay.md §3).

Keys are entry ids (int) or active player names (str). For every ordered pair (home, away) the
table keeps wins, draws, losses and games of ``home`` against ``away``.

Update after a match with score s ∈ {1, ½, 0} for home (design §3):
    counts(h, a) *= decay;  counts(a, h) *= decay
    games(h, a) += 1;  games(a, h) += 1
    s = 1: wins(h, a) += 1, losses(a, h) += 1;  s = ½: draws both ways += 1;  s = 0: mirror of s = 1.
Win rate: (wins + ½·draws) / games, and 0.5 for a pair that has never played.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Hashable, Sequence

import numpy as np

from selfplay.utils.io import atomic_write_json, read_json

WINS, DRAWS, LOSSES, GAMES = range(4)
_SCORES = {1.0: WINS, 0.5: DRAWS, 0.0: LOSSES}


class Payoff:
    """Decayed win/draw/loss counts for every ordered pair of keys."""

    def __init__(self, decay: float = 1.0) -> None:
        if not (isinstance(decay, (int, float)) and 0.0 < decay <= 1.0):
            raise ValueError(f"decay must be in (0, 1], got {decay!r}")
        self.decay = float(decay)
        self._counts: dict[tuple[Hashable, Hashable], np.ndarray] = defaultdict(lambda: np.zeros(4))
        self._rows: dict[tuple[Hashable, Hashable], list] = {}  # to_dict's row of each pair unchanged since

    def update(self, home: Hashable, away: Hashable, score: float) -> None:
        """Record one match; ``score`` is home's: 1 win, 0.5 draw, 0 loss."""
        if score not in _SCORES:
            raise ValueError(f"score must be 1 (win), 0.5 (draw) or 0 (loss) for home, got {score!r}")
        if home == away:
            raise ValueError(f"home and away must differ, got {home!r} twice")
        ha, ah = self._counts[(home, away)], self._counts[(away, home)]
        self._rows.pop((home, away), None)
        self._rows.pop((away, home), None)
        ha *= self.decay
        ah *= self.decay
        ha[GAMES] += 1.0
        ah[GAMES] += 1.0
        ha[_SCORES[float(score)]] += 1.0
        ah[_SCORES[1.0 - float(score)]] += 1.0

    def counts(self, home: Hashable, away: Hashable) -> np.ndarray:
        """``[wins, draws, losses, games]`` of home against away (a copy)."""
        return self._counts[(home, away)].copy() if (home, away) in self._counts else np.zeros(4)

    def games(self, home: Hashable, away: Hashable) -> float:
        return float(self.counts(home, away)[GAMES])

    def win_rate(self, home: Hashable, away: Hashable) -> float:
        c = self._counts.get((home, away))
        if c is None or c[GAMES] == 0:
            return 0.5
        return float((c[WINS] + 0.5 * c[DRAWS]) / c[GAMES])

    def win_rates(self, home: Hashable, aways: Sequence[Hashable]) -> np.ndarray:
        """Win rates of ``home`` against each of ``aways``."""
        return np.array([self.win_rate(home, a) for a in aways], dtype=float)

    def matrix(self, rows: Sequence[Hashable], cols: Sequence[Hashable] | None = None) -> np.ndarray:
        """W[i, j] = win rate of rows[i] against cols[j]; 0.5 on a key against itself."""
        cols = rows if cols is None else cols
        return np.array([[0.5 if r == c else self.win_rate(r, c) for c in cols] for r in rows], dtype=float)

    def games_matrix(self, rows: Sequence[Hashable], cols: Sequence[Hashable] | None = None) -> np.ndarray:
        cols = rows if cols is None else cols
        return np.array([[self.games(r, c) for c in cols] for r in rows], dtype=float)

    def keys(self) -> list[Hashable]:
        seen: dict[Hashable, None] = {}
        for h, a in self._counts:
            seen.setdefault(h)
            seen.setdefault(a)
        return list(seen)

    # -- persistence ----------------------------------------------------------------------
    def to_dict(self) -> dict:
        """``{"decay", "pairs": [[home, away, wins, draws, losses, games], ...]}``; a pair's row is the same
        list object from one call to the next while the pair has not played (a commit encodes it once)."""
        rows = self._rows
        for pair, c in self._counts.items():
            if pair not in rows:
                rows[pair] = [_key_out(pair[0]), _key_out(pair[1]), *c.tolist()]  # floats
        return {"decay": self.decay, "pairs": [rows[pair] for pair in self._counts]}

    @classmethod
    def from_dict(cls, data: dict) -> Payoff:
        payoff = cls(decay=data["decay"])
        for h, a, *c in data["pairs"]:
            payoff._counts[(_key_in(h), _key_in(a))] = np.array(c, dtype=float)
        return payoff

    def save(self, path: str | os.PathLike) -> None:
        atomic_write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> Payoff:
        return cls.from_dict(read_json(path))


def _key_out(key: Hashable) -> list:
    kind = type(key)  # the common exact types first: every commit writes every pair
    if kind is int:
        return ["id", key]
    if kind is str:
        return ["name", key]
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return ["id", int(key)]
    if isinstance(key, str):
        return ["name", key]
    raise ValueError(f"payoff keys must be entry ids (int) or player names (str) to be saved, got {key!r}")


def _key_in(key: list) -> Hashable:
    kind, value = key
    return int(value) if kind == "id" else str(value)


