"""Shortest paths on a map's pathing grid, for units walking to a point or chasing a target.

SC2 units path-find around terrain.  On the grid (cells of 1 x 1, 8-neighbour moves costing 1 or
sqrt 2, no corner cutting between two blocked cells) we precompute, once per grid:

- ``dist[a, b]``: the shortest-path length from cell a to cell b (inf if unreachable), by Dijkstra
  (``scipy.sparse.csgraph.shortest_path``);
- ``detour[a, b]``: the shortest path is longer than the octile distance (the length without
  obstacles), i.e. terrain stands between a and b.

A ground unit at p heading for q (cells a, b) walks straight at q unless ``detour[a, b]``; then
towards the centre of the walkable neighbour n of a minimising ``step(a, n) + dist[n, b]``
(``PathTable.directions``, batched over games and units).  A grid without any detour between its
walkable cells (the line maps' strip, an open square) needs no table (``convex``).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import shortest_path

NEIGHBOURS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))


@lru_cache(maxsize=None)
def _tables(walk_bytes: bytes, n: int) -> tuple[np.ndarray, np.ndarray]:
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
    return dist, detour


class PathTable:
    """``dist``/``detour`` of one pathing grid on ``device`` (module docstring)."""

    def __init__(self, walk: np.ndarray, device: torch.device):
        n = walk.shape[0]
        dist, detour = _tables(np.ascontiguousarray(walk, dtype=bool).tobytes(), n)
        self.n = n
        self.convex = not bool(detour.any())
        if self.convex:
            return
        self.dist = torch.tensor(dist, device=device).reshape(-1)
        self.detour = torch.tensor(detour, device=device).reshape(-1)
        self.walk = torch.tensor(walk.ravel(), device=device)
        self.nbr = torch.tensor(NEIGHBOURS, dtype=torch.long, device=device)  # (8, 2)
        self.step = self.nbr.float().norm(dim=-1)

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
        nb_xy = a_xy[..., None, :] + self.nbr  # (..., 8, 2)
        inside = ((nb_xy >= 0) & (nb_xy < n)).all(-1)
        nb = nb_xy[..., 0].clamp(0, n - 1) * n + nb_xy[..., 1].clamp(0, n - 1)
        cost = self.step + self.dist[nb * (n * n) + b[..., None]]
        cost = torch.where(inside & self.walk[nb], cost, torch.inf)
        best_cost, best = cost.min(-1)
        use_path = self.detour[a * (n * n) + b] & torch.isfinite(best_cost) & self.walk[a]
        hop = nb_xy.gather(-2, best[..., None, None].expand(*best.shape, 1, 2)).squeeze(-2).float() + 0.5
        return torch.where(use_path[..., None], hop - pos, straight)
