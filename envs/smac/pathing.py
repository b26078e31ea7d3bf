"""Shortest paths on a map's pathing grid, for units walking to a point or chasing a target.

SC2 units path-find around terrain.  On the grid (cells of 1 x 1, 8-neighbour moves costing 1 or
sqrt 2, no corner cutting between two blocked cells) we precompute, once per grid:

- ``dist[a, b]``: the shortest-path length from cell a to cell b (inf if unreachable), by Dijkstra
  (``scipy.sparse.csgraph.shortest_path``);
- ``detour[a, b]``: the shortest path is longer than the octile distance (the length without
  obstacles), i.e. terrain stands between a and b;
- ``hop[a, b]``: where ``detour``, the walkable neighbour n of a minimising ``step(a, n) + dist[n, b]``.

A ground unit at p heading for q (cells a, b; an unwalkable b, e.g. under a colossus on a cliff, is
replaced by its nearest walkable cell) walks straight at q unless ``detour[a, b]``; then towards the
centre of ``hop[a, b]`` (``PathTable.directions``, one gather per unit, batched over games and
units).  A grid without any detour between its walkable cells (the line maps' strip, an open square)
needs no table (``convex``).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import torch
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import shortest_path

NEIGHBOURS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))


@cache
def _tables(walk_bytes: bytes, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(next hop (n*n, n*n) int8: neighbour index or -1 to walk straight, detour (n*n, n*n) bool)."""
    walk = np.frombuffer(walk_bytes, dtype=bool).reshape(n, n)
    idx = np.arange(n * n).reshape(n, n)
    rows, cols, w = [], [], []
    for dx, dy in NEIGHBOURS:
        xs = np.arange(max(0, -dx), n - max(0, dx))
        ys = np.arange(max(0, -dy), n - max(0, dy))
        X, Y = np.meshgrid(xs, ys, indexing="ij")
        ok = walk[X, Y] & walk[X + dx, Y + dy]
        if dx and dy:
            ok &= walk[X + dx, Y] & walk[X, Y + dy]
        rows.append(idx[X, Y][ok])
        cols.append(idx[X + dx, Y + dy][ok])
        w.append(np.full(int(ok.sum()), np.hypot(dx, dy)))
    g = coo_matrix((np.concatenate(w), (np.concatenate(rows), np.concatenate(cols))), shape=(n * n, n * n)).tocsr()
    dist = shortest_path(g, method="D", directed=True).astype(np.float32)
    c = np.stack([idx // n, idx % n], -1).reshape(-1, 2)
    dx = np.abs(c[:, None, 0] - c[None, :, 0])
    dy = np.abs(c[:, None, 1] - c[None, :, 1])
    octile = (np.maximum(dx, dy) + (np.sqrt(2) - 1) * np.minimum(dx, dy)).astype(np.float32)
    detour = np.isfinite(dist) & (dist > octile + 1e-3)
    # next hop: the neighbour k of a minimising step_k + dist[n_k(a), b]; -1 = walk straight
    flat = walk.ravel()
    best_cost = np.full((n * n, n * n), np.inf, dtype=np.float32)
    hop = np.full((n * n, n * n), -1, dtype=np.int8)
    ax, ay = c[:, 0], c[:, 1]
    for k, (dx, dy) in enumerate(NEIGHBOURS):
        nx, ny = ax + dx, ay + dy
        ok = (nx >= 0) & (nx < n) & (ny >= 0) & (ny < n)
        nb = np.where(ok, nx.clip(0, n - 1) * n + ny.clip(0, n - 1), 0)
        ok &= flat[nb]
        if dx and dy:  # no corner cutting
            ok &= flat[(ax + dx).clip(0, n - 1) * n + ay] & flat[ax * n + (ay + dy).clip(0, n - 1)]
        cost = np.where(ok[:, None], np.float32(np.hypot(dx, dy)) + dist[nb], np.inf)
        better = cost < best_cost
        best_cost = np.where(better, cost, best_cost)
        hop[better] = k
    use = detour & flat[:, None] & np.isfinite(best_cost)
    hop = np.where(use, hop, -1).astype(np.int8)
    # a destination on an unwalkable cell (a colossus on a cliff): head for the nearest walkable cell
    walk_idx = np.nonzero(flat)[0]
    if len(walk_idx):
        d2 = ((c[:, None, :] - c[None, walk_idx, :]) ** 2).sum(-1)
        snap = walk_idx[d2.argmin(1)]
        blocked = ~flat
        hop[:, blocked] = hop[:, snap[blocked]]
        detour[:, blocked] = detour[:, snap[blocked]]
    return hop, detour


class PathTable:
    """The next-hop table of one pathing grid on ``device`` (module docstring)."""

    def __init__(self, walk: np.ndarray, device: torch.device):
        n = walk.shape[0]
        hop, detour = _tables(np.ascontiguousarray(walk, dtype=bool).tobytes(), n)
        self.n = n
        self.convex = not bool(detour.any())
        if self.convex:
            return
        self.hop = torch.tensor(hop, device=device).reshape(-1)  # int8
        self.nbr = torch.tensor(NEIGHBOURS + ((0, 0),), dtype=torch.long, device=device)  # row 8: unused

    def directions(self, pos: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        """(..., 2) vectors to walk along from ``pos`` towards ``goal`` (both (..., 2)): the straight
        vector, or (terrain in between) the vector to the next cell's centre on a shortest path.
        The result points the right way; its length is not normalised."""
        straight = goal - pos
        if self.convex:
            return straight
        n = self.n
        a_xy = pos.clamp(0, n - 1e-4).floor().long()
        b_xy = goal.clamp(0, n - 1e-4).floor().long()
        a = a_xy[..., 0] * n + a_xy[..., 1]
        b = b_xy[..., 0] * n + b_xy[..., 1]
        k = self.hop[a * (n * n) + b].long()
        hop = (a_xy + self.nbr[k.clamp(min=0)]).float() + 0.5
        return torch.where((k >= 0)[..., None], hop - pos, straight)
