"""What a SMACv2 scenario draws at every reset (docs/design/smacv2.md), from a seeded numpy generator.

The distributions are SMACv2's (``smacv2/env/starcraft2/distributions.py``), written here:

- teams (``WeightedTeamsDistribution``): the ``n_units`` ally types i.i.d. with the weights, the
  whole draw repeated while every member is an exception type; the enemy team is the ally team, plus
  ``n_enemies - n_units`` more drawn the same way when there are more enemies, or its first
  ``n_enemies`` when fewer;
- start positions (``SurroundedAndReflectPositionDistribution``): with probability ``p`` "reflect",
  else "surrounded".  Reflect: allies uniform in [0, map_x/2 - 1) x [0, map_y), enemy k at the
  ally's mirror image (map_x - x, y), extra enemies uniform in [map_x/2, map_x) x [0, map_y).
  Surrounded: every ally at the centre (map_x/2, map_y/2); 1..4 enemy groups (uniform), the enemies
  split among them by a multinomial with equal probabilities, each group on a distinct diagonal (of
  the four, without replacement) at t ~ U[0, 1) along the segment from the map corner (t = 0) to
  the point 2 cells diagonally off the centre (t = 1);
- the EPO mask (``MaskDistribution``): (n_units, n_enemies) entries, 0 with probability
  ``mask_probability``, else 1.

The points are where the units are created; the game (and ``maps.place_units``) then spreads units
created on one point so that they do not overlap.
"""

from __future__ import annotations

import numpy as np

from .smacv2_scenarios import CapabilityConfig, StartPositions, TeamGen

CENTRE_OFFSET = 2.0  # SMACv2's offset of the surrounded groups' inner points from the centre
REFLECT_BUFFER = 1.0  # SMACv2: allies stay 1 left of the middle ("a buffer zone of size 2")


def _team(t: TeamGen, n: int, rng: np.random.Generator) -> list[str]:
    types = np.array(t.unit_types)
    while True:
        team = list(types[rng.choice(len(types), size=n, p=np.array(t.weights))])
        if not all(u in t.exception_unit_types for u in team):
            return [str(u) for u in team]


def draw_teams(cap: CapabilityConfig, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """(ally team, enemy team) of unit names, in creation order (module docstring)."""
    ally = _team(cap.team_gen, cap.n_units, rng)
    if cap.n_enemies > cap.n_units:
        enemy = ally + _team(cap.team_gen, cap.n_enemies - cap.n_units, rng)
    else:
        enemy = ally[: cap.n_enemies]
    return ally, enemy


def reflect_positions(s: StartPositions, n: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The "reflect" layout: (ally (n, 2), enemy (m, 2)) creation points."""
    ally = rng.uniform((0.0, 0.0), (s.map_x / 2 - REFLECT_BUFFER, s.map_y), size=(n, 2))
    enemy = np.zeros((m, 2))
    k = min(n, m)
    enemy[:k, 0] = s.map_x - ally[:k, 0]
    enemy[:k, 1] = ally[:k, 1]
    if m > n:
        enemy[n:] = rng.uniform((s.map_x / 2, 0.0), (s.map_x, s.map_y), size=(m - n, 2))
    return ally, enemy


def surrounded_positions(s: StartPositions, n: int, m: int,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The "surrounded" layout: (ally (n, 2), enemy (m, 2)) creation points."""
    cx, cy, o = s.map_x / 2, s.map_y / 2, CENTRE_OFFSET
    inner = np.array([[cx - o, cy - o], [cx - o, cy + o], [cx + o, cy + o], [cx + o, cy - o]])
    corner = np.array([[0.0, 0.0], [0.0, s.map_y], [s.map_x, s.map_y], [s.map_x, 0.0]])
    ally = np.tile([cx, cy], (n, 1)).astype(np.float64)
    groups = int(rng.integers(1, 5))
    members = rng.multinomial(m, np.ones(groups) / groups)
    t = rng.uniform(size=groups)
    diagonals = rng.choice(4, size=groups, replace=False)
    enemy = np.zeros((m, 2))
    k = 0
    for g in range(groups):
        d = diagonals[g]
        enemy[k: k + members[g]] = inner[d] * t[g] + corner[d] * (1 - t[g])
        k += members[g]
    return ally, enemy


def draw_start_positions(s: StartPositions, n: int, m: int,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, str]:
    """(ally points, enemy points, "reflect" | "surrounded")."""
    if rng.random() > s.p:
        return (*surrounded_positions(s, n, m, rng), "surrounded")
    return (*reflect_positions(s, n, m, rng), "reflect")


def draw_enemy_mask(mask_probability: float, n: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """(n, m) int array: 0 with probability ``mask_probability``, else 1 (1 = hidden)."""
    return (rng.random((n, m)) >= mask_probability).astype(np.int64)
