"""Evaluation: head-to-head matches between frozen policies, batched across pairs (spec-selfplay §6).

``play_matches`` plays every pair of a list in both seats (half the matches each) — all the games of
many pairs in one batched environment, each seat's actions computed for all games in one population
forward pass (``stack_policies``) or, without one, one pass per distinct policy.

**Blocks.** The games are played in blocks of at most ``max_games`` (16 384 by default). Block *k*
plays in an environment seeded with ``seed + k``; block 0 samples actions with the stack's (or the
policies') generators as they are, blocks *k* ≥ 1 with fresh ones: the stack's generator seeded with
``derive_seed(seed, k)``, or, without a stack, copies of the policies whose generators are seeded with
``derive_seed(seed, k, i)`` (policy *i*). So a block's games depend only on its own games and seeds,
not on the blocks before it, and ``blocks`` (issue 19: a ``RayExecutor``) can run blocks 1, 2, … as
separate tasks while the caller plays block 0, with the results of the local loop exactly.
``evaluate_run`` turns a run's evaluation checkpoints into a winrate matrix and its summaries;
``cross_population`` does the same between two runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import copy

import numpy as np
import torch

from selfplay.training.batching import assign_state, group_by_policy, index_state
from selfplay.training.registry import make_env
from selfplay.utils.seeding import derive_seed

MAX_GAMES = 16384  # games per block (module docstring): the default keeps every existing run's results


def play_matches(
    env_name: str,
    policies: Sequence[Any],
    pairs: np.ndarray,
    matches_per_pair: int,
    seed: int = 0,
    stack_policies: Callable[[list], Any] | None = None,
    max_games: int = MAX_GAMES,
    device: str = "cpu",
    home_seat: int | None = None,
    blocks: Any = None,
) -> np.ndarray:
    """Scores of ``policies[home]`` against ``policies[away]`` for every row ``(home, away)`` of
    ``pairs``: an array ``(len(pairs), matches_per_pair)`` of 1 / ½ / 0. The first ⌈M/2⌉ matches of a
    pair seat home in seat 0, the rest in seat 1 — or all in ``home_seat`` when given (asymmetric games).
    ``max_games``: games per block; ``blocks``: an object with ``submit(function, common, tasks)``
    returning a callable that gathers the results in order (``RayExecutor``), which then plays blocks
    1, 2, … while this process plays block 0 (module docstring); ``None``: every block here, in turn."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if matches_per_pair < 1:
        raise ValueError(f"matches_per_pair must be ≥ 1, got {matches_per_pair!r}")
    if not (isinstance(max_games, (int, np.integer)) and max_games >= 1):
        raise ValueError(f"max_games must be an integer ≥ 1, got {max_games!r}")
    if len(pairs) and (pairs.min() < 0 or pairs.max() >= len(policies)):
        raise ValueError(f"pairs must index into the {len(policies)} policies")
    home = np.repeat(pairs[:, 0], matches_per_pair)
    away = np.repeat(pairs[:, 1], matches_per_pair)
    if home_seat not in (None, 0, 1):
        raise ValueError(f"home_seat must be None (both seats), 0 or 1, got {home_seat!r}")
    if home_seat is None:
        home_seat = np.tile((np.arange(matches_per_pair) >= (matches_per_pair + 1) // 2).astype(np.int64), len(pairs))
    else:
        home_seat = np.full(len(pairs) * matches_per_pair, home_seat, dtype=np.int64)
    seat0 = np.where(home_seat == 0, home, away)
    seat1 = np.where(home_seat == 0, away, home)
    starts = list(range(0, len(home), max_games))
    tasks = [(k, seat0[s:s + max_games], seat1[s:s + max_games], seed) for k, s in enumerate(starts)]
    common = (env_name, list(policies), stack_policies, device)
    gather = None
    if blocks is not None and len(tasks) > 1:
        gather = blocks.submit(play_block, common, tasks[1:])  # blocks 1, 2, … elsewhere, block 0 here
    results = [_play_games(env_name, policies, _stack(stack_policies, policies), seat0[:max_games],
                           seat1[:max_games], seed, device)] if tasks else []
    results += gather() if gather is not None else [play_block(common, task) for task in tasks[1:]]
    winners = np.concatenate([w for w, _ in results]) if results else np.empty(0, dtype=np.int64)
    draws = np.concatenate([d for _, d in results]) if results else np.empty(0, dtype=bool)
    scores = np.where(draws, 0.5, (winners == home_seat).astype(float))
    return scores.reshape(len(pairs), matches_per_pair)


def _stack(stack_policies: Callable[[list], Any] | None, policies: Sequence[Any]) -> Any:
    """The population policy of ``policies``, or ``None`` (one pass per distinct policy)."""
    if stack_policies is None or len(policies) < 2:
        return None
    try:
        return stack_policies(list(policies))
    except ValueError:  # policies of different kinds (e.g. MLP and LSTM): one pass per policy instead
        return None


def play_block(common: tuple, task: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Block ``k`` ≥ 1 of ``play_matches`` (module docstring, "Blocks"): its own environment seed and
    freshly seeded generators, so it plays the same games in any process. Returns (winners, draws)."""
    env_name, policies, stack_policies, device = common
    k, seat0, seat1, seed = task
    stack = _stack(stack_policies, policies)
    if stack is not None and hasattr(stack, "generator"):
        stack.generator.manual_seed(derive_seed(seed, k))
    elif stack is None:
        policies = copy.deepcopy(list(policies))  # the caller's policies keep their generators' state
        for i, policy in enumerate(policies):
            if isinstance(getattr(policy, "generator", None), torch.Generator):
                policy.generator.manual_seed(derive_seed(seed, k, i))
    return _play_games(env_name, policies, stack, seat0, seat1, seed + k, device)


def _scatter_rows(out: torch.Tensor | None, n: int, idx: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Write a group's actions into the batch of ``n`` games (allocated from the first group's shape)."""
    if out is None:
        out = torch.empty((n,) + tuple(rows.shape[1:]), dtype=rows.dtype)
    out[idx] = rows
    return out


def _play_games(env_name, policies, stack, seat0, seat1, seed, device):
    """Play one game per row (policy indices per seat) until every game has ended once."""
    n = len(seat0)
    env = make_env(env_name, n, seed=seed, device=device)
    obs = env.reset()
    players = [torch.as_tensor(seat0), torch.as_tensor(seat1)]
    groups = [group_by_policy([policies[i] for i in p.tolist()]) for p in players] if stack is None else None
    states = [stack.initial_state(n) if stack is not None else policies[int(p[0])].initial_state(n) for p in players]
    start = torch.ones(n, dtype=torch.bool)
    winner = torch.full((n,), -1, dtype=torch.long)
    draw = torch.zeros(n, dtype=torch.bool)
    ended = torch.zeros(n, dtype=torch.bool)
    with torch.no_grad():
        while not bool(ended.all()):
            masks = env.action_masks()
            actions = []
            for s in range(2):
                if stack is not None:
                    a, states[s], _ = stack.act(obs[s], states[s], players[s], masks[s], start)
                else:
                    a = None
                    for policy, games in groups[s]:
                        idx = torch.as_tensor(games)
                        a_g, st, _ = policy.act(obs[s][idx], index_state(states[s], idx), masks[s][idx], start[idx])
                        a = _scatter_rows(a, n, idx, a_g)
                        assign_state(states[s], idx, st)
                actions.append(a)
            obs, _, done, info = env.step(actions)
            first = done & ~ended
            winner[first] = info["winner"][first]
            draw[first] = info["draw"][first]
            ended |= done
            start = done.clone()
    return winner.numpy(), draw.numpy()


def scripted_win_rates(env_name: str, policies: Sequence[Any], games: int, seed: int = 0,
                       stack_policies: Callable[[list], Any] | None = None, device: str = "cpu") -> np.ndarray:
    """Each policy's win rate over ``games`` games against the environment's scripted opponent
    (SMAC's built-in AI in single-player mode): all policies' games in one batch; draws (timeouts)
    count ½."""
    n = len(policies) * games
    env = make_env(env_name, n, seed=seed, device=device, scripted_enemy=True)
    who = torch.as_tensor(np.repeat(np.arange(len(policies)), games))
    stack = None
    if stack_policies is not None and len(policies) > 1:
        try:
            stack = stack_policies(list(policies))
        except ValueError:
            stack = None
    groups = group_by_policy([policies[i] for i in who.tolist()]) if stack is None else None
    state = stack.initial_state(n) if stack is not None else policies[0].initial_state(n)
    obs = env.reset()
    start = torch.ones(n, dtype=torch.bool)
    score = torch.zeros(n)
    ended = torch.zeros(n, dtype=torch.bool)
    with torch.no_grad():
        while not bool(ended.all()):
            mask = env.action_masks()[0]
            if stack is not None:
                action, state, _ = stack.act(obs[0], state, who, mask, start)
            else:
                action = None
                for policy, idx in groups:
                    idx = torch.as_tensor(idx)
                    a, st, _ = policy.act(obs[0][idx], index_state(state, idx), mask[idx], start[idx])
                    action = _scatter_rows(action, n, idx, a)
                    assign_state(state, idx, st)
            obs, _, done, info = env.step([action])
            first = done & ~ended
            score[first] = torch.where(info["draw"][first], 0.5, (info["winner"][first] == 0).float())
            ended |= done
            start = done.clone()
    return score.view(len(policies), games).mean(dim=1).numpy()


def round_robin_pairs(n: int) -> np.ndarray:
    """All unordered pairs i < j of ``n`` policies."""
    i, j = np.triu_indices(n, k=1)
    return np.stack([i, j], axis=1)


@dataclass
class PopulationEvaluation:
    ids: list[int]
    W: np.ndarray  # W[i, j]: win rate of checkpoint i against j (W + Wᵀ = 1, diagonal ½)
    counts: np.ndarray  # matches per cell
    nash: np.ndarray  # maxent Nash of A = W − ½
    lower_triangle_winrate: float


def winrate_from_pair_scores(n: int, pairs: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fill W (diagonal ½) and per-cell match counts from per-pair scores of ``pairs[:, 0]``."""
    W = np.full((n, n), 0.5)
    counts = np.zeros((n, n), dtype=np.int64)
    mean = scores.mean(axis=1)
    W[pairs[:, 0], pairs[:, 1]] = mean
    W[pairs[:, 1], pairs[:, 0]] = 1.0 - mean
    counts[pairs[:, 0], pairs[:, 1]] = counts[pairs[:, 1], pairs[:, 0]] = scores.shape[1]
    return W, counts


def evaluate_population(env_name: str, policies: Sequence[Any], matches_per_pair: int, seed: int = 0,
                        stack_policies=None, device: str = "cpu", ids: Sequence[int] | None = None,
                        max_games: int = MAX_GAMES, blocks: Any = None) -> PopulationEvaluation:
    """Winrate matrix of every pair (both seats), its maxent Nash and lower-triangle win rate
    (``max_games``, ``blocks``: as ``play_matches``)."""
    from selfplay.analysis.nash import maxent_nash
    from selfplay.analysis.winrate import lower_triangle_winrate

    n = len(policies)
    pairs = round_robin_pairs(n)
    scores = play_matches(env_name, policies, pairs, matches_per_pair, seed, stack_policies, device=device,
                          max_games=max_games, blocks=blocks)
    W, counts = winrate_from_pair_scores(n, pairs, scores)
    return PopulationEvaluation(list(ids) if ids is not None else list(range(n)), W, counts,
                                maxent_nash(W - 0.5), float(lower_triangle_winrate(W)))


def cross_population(env_name: str, P: Sequence[Any], Q: Sequence[Any], matches_per_pair: int, seed: int = 0,
                     stack_policies=None, device: str = "cpu", max_games: int = MAX_GAMES,
                     blocks: Any = None) -> np.ndarray:
    """W_PQ[i, j]: win rate of P[i] against Q[j] (``max_games``, ``blocks``: as ``play_matches``)."""
    policies = list(P) + list(Q)
    ii, jj = np.meshgrid(np.arange(len(P)), np.arange(len(Q)), indexing="ij")
    pairs = np.stack([ii.ravel(), jj.ravel() + len(P)], axis=1)
    scores = play_matches(env_name, policies, pairs, matches_per_pair, seed, stack_policies, device=device,
                          max_games=max_games, blocks=blocks)
    return scores.mean(axis=1).reshape(len(P), len(Q))
