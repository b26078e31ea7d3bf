"""Evaluation: head-to-head matches between frozen policies, batched across pairs (docs/design/selfplay.md §6).

``play_matches`` plays every pair of a list in both seats (half the matches each) — all the games of
many pairs in one batched environment, each seat's actions computed for all games in one population
forward pass (``stack_policies``) or, without one, one pass per distinct policy.

**Blocks.** The games are played in blocks of at most ``max_games`` (16 384 by default). Block *k*
plays in an environment seeded with ``derive_seed(seed, MATCH_ENV, k)``; block 0 samples actions with
the stack's (or the policies') generators as they are, blocks *k* ≥ 1 with fresh ones: the stack's
generator seeded with ``derive_seed(seed, MATCH_POLICY, k)``, or, without a stack, copies of the
policies whose generators are seeded with ``derive_seed(seed, MATCH_POLICY, k, i)`` (policy *i*);
deduplicated play samples with ``derive_seed(seed, MATCH_POLICY, k)``. So a block's games depend only on its own games and seeds,
not on the blocks before it, and ``blocks`` (on Ray, a ``RayExecutor``) can run blocks 1, 2, … as
separate tasks while the caller plays block 0, with the results of the local loop exactly.
``evaluate_population`` turns a population of policies into a winrate matrix, its maxent Nash and its
lower-triangle win rate; ``cross_population`` gives the win rates between two populations. In an environment with a finite observation set
(``n_observation_ids`` / ``observation_ids()``, e.g. RirRPS) a stacked population computes each
distinct (policy, history) once (``_play_deduplicated``).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from selfplay.training.batching import assign_state, group_by_policy, index_state
from selfplay.training.registry import make_env
from selfplay.utils.seeding import Stream, derive_seed

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
    cache: dict = {}  # what this process's blocks share (the feed-forward logits table of _play_deduplicated)
    results = [_play_games(env_name, policies, _stack(stack_policies, policies), seat0[:max_games],
                           seat1[:max_games], seed, 0, device, cache)] if tasks else []
    results += gather() if gather is not None else [play_block(common, task, cache) for task in tasks[1:]]
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


def play_block(common: tuple, task: tuple, cache: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Block ``k`` ≥ 1 of ``play_matches`` (module docstring, "Blocks"): its own environment seed and
    freshly seeded generators, so it plays the same games in any process. Returns (winners, draws).
    ``cache``: a logits table shared with the caller's other blocks (it only saves work)."""
    env_name, policies, stack_policies, device = common
    k, seat0, seat1, seed = task
    stack = _stack(stack_policies, policies)
    if stack is not None and hasattr(stack, "generator"):
        stack.generator.manual_seed(derive_seed(seed, Stream.MATCH_POLICY, k))
    elif stack is None:
        policies = copy.deepcopy(list(policies))  # the caller's policies keep their generators' state
        for i, policy in enumerate(policies):
            if isinstance(getattr(policy, "generator", None), torch.Generator):
                policy.generator.manual_seed(derive_seed(seed, Stream.MATCH_POLICY, k, i))
    return _play_games(env_name, policies, stack, seat0, seat1, seed, k, device, cache)


def _scatter_rows(out: torch.Tensor | None, n: int, idx: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Write a group's actions into the batch of ``n`` games (allocated from the first group's shape)."""
    if out is None:
        out = torch.empty((n,) + tuple(rows.shape[1:]), dtype=rows.dtype)
    out[idx] = rows
    return out


def _play_games(env_name, policies, stack, seat0, seat1, seed, k, device, cache=None):
    """Play block ``k``'s games, one per row (policy indices per seat), until every game has ended once."""
    n = len(seat0)
    env = make_env(env_name, n, seed=derive_seed(seed, Stream.MATCH_ENV, k), device=device)
    if stack is not None and _can_deduplicate(env, stack, 2 * n + len(policies)):
        return _play_deduplicated(env, stack, torch.as_tensor(seat0), torch.as_tensor(seat1),
                                  derive_seed(seed, Stream.MATCH_POLICY, k), {} if cache is None else cache)
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


DEDUPLICATE_BELOW = 0.75  # recurrent policies: compute distinct classes only when they are fewer than this share of rows
MAX_TABLE_ROWS = 2**23  # feed-forward policies: at most this many (policy, observation) logits cached per batch


def _can_deduplicate(env, stack, classes: int) -> bool:
    """Whether ``_play_deduplicated`` applies: a finite observation set, a stack with ``forward``, and
    class keys (recurrent) or a logits table (feed-forward) of a bounded size."""
    n_ids = getattr(env, "n_observation_ids", None)
    if n_ids is None or not hasattr(env, "observation_ids") or not hasattr(stack, "forward"):
        return False
    return classes * n_ids < 2**62 if stack.recurrent else len(stack) * n_ids <= MAX_TABLE_ROWS


def _rows(t: torch.Tensor, order: torch.Tensor | None) -> torch.Tensor:
    """The games' rows ``t`` in the loop's row order (``_play_deduplicated``): ``t[order]``, or ``t`` itself."""
    return t if order is None else t[order]


def _forward_grouped(stack, obs, state, who, starts):
    """``(logits, state)`` of every row, grouped by policy: the stack's ``forward_grouped`` where it has one."""
    if hasattr(stack, "forward_grouped"):
        return stack.forward_grouped(obs, state, who, starts)
    logits, _, state = stack.forward(obs, state, who, starts)
    return logits, state


def _play_deduplicated(env, stack, seat0: torch.Tensor, seat1: torch.Tensor, seed: int, cache: dict):
    """``_play_games`` computing each distinct (policy, history) once.

    A policy's logits (and recurrent state) at a step depend only on the policy and on the observations
    it has seen since its episode began — for a feed-forward policy only on the current one. In an
    environment with a finite observation set (``observation_ids()``) the stack therefore runs once per
    distinct (policy, observation) of the whole batch for a feed-forward policy (a logits table filled as
    pairs first occur), and once per distinct (policy, observations so far) and step for a recurrent one
    (a row's class: its policy at an episode start, else its previous class and the new observation).
    Every row then draws its own action from its class's logits: the same distribution as one forward
    pass per row, for a fraction of the work (RirRPS: 820 reachable observations against the millions of
    rows of a population evaluation; ``cache`` keeps the table for the next batch of the same policies).
    Rows 0..n−1 are seat 0, n..2n−1 seat 1: a policy's rows of both seats share classes. Actions are
    drawn by inverse transform sampling with a generator seeded with ``seed``.

    Recurrent stacks see the rows grouped by policy (a stable sort of the rows by policy, fixed for the
    block: ``order``), so that a step computing every row reads each policy's rows in place
    (``PolicyStack.forward_grouped``: the numbers of ``forward`` bit for bit, without its padded copies);
    each row keeps its own uniform draw, and its action goes back to its game.
    """
    n = len(seat0)
    n_ids = env.n_observation_ids
    who = torch.cat([seat0, seat1])
    P, rows = len(stack), torch.arange(2 * n)
    generator = torch.Generator().manual_seed(int(seed))
    order = None  # recurrent: row k of the loop below is row order[k] of the games' rows
    if stack.recurrent:
        order = torch.argsort(who, stable=True)
        who = who[order]
        state, history = stack.initial_state(2 * n), who.clone()
    else:  # logits of (policy, observation id) at row policy·n_ids + id, filled as pairs occur
        if not cache:
            cache.update(table=None, known=torch.zeros(P * n_ids, dtype=torch.bool),
                         where=torch.zeros(P * n_ids, dtype=torch.long))
        known, where = cache["known"], cache["where"]
    obs = env.reset()
    start = torch.ones(n, dtype=torch.bool)
    winner = torch.full((n,), -1, dtype=torch.long)
    draw = torch.zeros(n, dtype=torch.bool)
    ended = torch.zeros(n, dtype=torch.bool)
    with torch.no_grad():
        while not bool(ended.all()):
            ids = _rows(torch.cat(env.observation_ids()), order)
            starts = _rows(torch.cat([start, start]), order)
            if stack.recurrent:  # classes [0, P): a policy at its episode start; P + c: a continued class c
                history = torch.where(starts, who, history + P)
                classes, inverse = torch.unique(history * n_ids + ids, return_inverse=True)
                if len(classes) > DEDUPLICATE_BELOW * len(rows):  # few repeats: every row is cheaper than gathering
                    logits, state = _forward_grouped(stack, torch.cat(obs)[order], state, who, starts)
                else:
                    first = torch.empty(len(classes), dtype=torch.long).scatter_(0, inverse, rows)
                    logits, new_state = _forward_grouped(stack, torch.cat(obs)[order[first]], index_state(state, first),
                                                         who[first], starts[first])  # classes come policy by policy
                    logits, state = logits[inverse], index_state(new_state, inverse)
                history = inverse
            else:
                key = who * n_ids + ids
                new = ~known[key]
                if bool(new.any()):
                    where[key[new]] = rows[new]
                    missing = torch.unique(key[new])
                    first = where[missing]
                    logits_new = stack.forward(torch.cat(obs)[first], None, who[first])[0]
                    if cache["table"] is None:
                        cache["table"] = logits_new.new_zeros(P * n_ids, logits_new.shape[1])
                        cache["cdf"] = torch.ones_like(cache["table"])
                    cache["table"][missing], known[missing] = logits_new, True
                    cache["cdf"][missing] = torch.softmax(logits_new, dim=-1).cumsum_(-1)
                logits = cache["table"][key]
            masks = _rows(torch.cat(env.action_masks()), order)
            if not stack.recurrent and bool(masks.all()):
                cdf = cache["cdf"][key]  # every action legal: the table's distribution as it is
            else:
                cdf = torch.softmax(logits.masked_fill(~masks, float("-inf")), dim=-1).cumsum_(-1)
            u = _rows(torch.rand(2 * n, 1, generator=generator), order) * cdf[:, -1:]
            action = (cdf <= u).sum(-1).clamp_(max=cdf.shape[1] - 1)  # the first action whose cdf exceeds u
            if order is not None:  # back to the games' rows
                action = torch.empty_like(action).index_copy_(0, order, action)
            obs, _, done, info = env.step([action[:n], action[n:]])
            first_end = done & ~ended
            winner[first_end] = info["winner"][first_end]
            draw[first_end] = info["draw"][first_end]
            ended |= done
            start = done.clone()
    return winner.numpy(), draw.numpy()


def evaluation_act(policy: Any, obs, state, mask, start, greedy: bool, *index) -> tuple:
    """``policy.act(obs, state, [index,] mask, start)`` as SMAC's test games play it: with ``greedy``, a
    policy whose ``act`` takes ``deterministic`` (the learned agents) plays each unit's most probable
    action, as PyMARL's and MAPPO's test runs do, and without it samples; scripted policies are
    deterministic already."""
    extra = {"deterministic": bool(greedy)} if "deterministic" in inspect.signature(policy.act).parameters else {}
    return policy.act(obs, state, *index, mask, start, **extra)


SCRIPTED_SEEDING = "a batch per policy"  # how ``scripted_outcomes`` seeds its games (recorded with evaluations)


def scripted_win_rates(env_name: str, policies: Sequence[Any], games: int, seed: int = 0, device: str = "cpu",
                       greedy: bool = True) -> np.ndarray:
    """Each policy's win rate over ``games`` games against the environment's scripted opponent
    (SMAC's built-in AI in single-player mode); draws (timeouts) count ½. ``greedy``: the policies play
    their most probable actions (``evaluation_act``), as SMAC's test games do; else they sample, as in
    training. The wins and draws apart, and how the games are seeded: ``scripted_outcomes``."""
    won, drawn = scripted_outcomes(env_name, policies, games, seed, device, greedy)
    return won + 0.5 * drawn


def scripted_outcomes(env_name: str, policies: Sequence[Any], games: int, seed: int = 0, device: str = "cpu",
                      greedy: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The games of ``scripted_win_rates``: each policy's share of games won and share drawn (timeouts), as
    two arrays of ``len(policies)``.

    Each policy plays its ``games`` games in a batch of its own, every batch seeded alike
    (``Stream.SCRIPTED_GAMES`` of ``seed``), so a greedy policy's result is a function of the policy,
    ``games`` and ``seed`` alone — the same whichever other policies are evaluated with it (when all
    policies' games shared one batch, the batch's random draws, SMAC's cooldown jitter, were spread
    over every game of it, and a checkpoint scored differently in a longer population) — and every
    policy meets the same draws (common random numbers: the policies' differences are not the draws').
    With ``greedy=False`` the policies' own sampling adds its randomness to the draws."""
    env_seed = derive_seed(seed, Stream.SCRIPTED_GAMES)
    outcomes = [_scripted_games(env_name, policy, games, env_seed, device, greedy) for policy in policies]
    won, drawn = np.array(outcomes, dtype=float).reshape(len(policies), 2).T
    return won, drawn


def _scripted_games(env_name: str, policy: Any, games: int, env_seed: int, device: str, greedy: bool) -> tuple:
    """(share won, share drawn) of ``games`` games of ``policy`` against the scripted opponent, one
    batch of ``games`` games seeded ``env_seed``, each game's first episode counted."""
    env = make_env(env_name, games, seed=env_seed, device=device, scripted_enemy=True)
    won = torch.zeros(games)
    drawn = torch.zeros(games)
    ended = torch.zeros(games, dtype=torch.bool)
    try:
        state = policy.initial_state(games)
        obs = env.reset()
        start = torch.ones(games, dtype=torch.bool)
        with torch.no_grad():
            while not bool(ended.all()):
                action, state, _ = evaluation_act(policy, obs[0], state, env.action_masks()[0], start, greedy)
                obs, _, done, info = env.step([action])
                first = done & ~ended
                drawn[first] = info["draw"][first].float()
                won[first] = (~info["draw"][first] & (info["winner"][first] == 0)).float()
                ended |= done
                start = done.clone()
    finally:
        if hasattr(env, "close"):  # not in the batched-env contract; the real game's battles hold processes
            env.close()
    return float(won.mean()), float(drawn.mean())


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
