"""Our policies as OpenSpiel tabular policies, and the exploitability of a run's checkpoints (docs/guides/openspiel.md).

``policy_table(policy, game)`` asks a batched policy (``selfplay/core/policy.py``) for its action
distribution at every information state of the (turn-based) game the ``openspiel:`` environment
plays, exactly as that environment presents it: the seat's information-state tensor as the
observation, the legal actions as the mask (the environment's extra no-op action illegal). A
recurrent policy is run over the seat's whole observation sequence — the seat's information-state
tensor at every decision node of the game so far, as the environment feeds it, the state zeroed at
the game's start — along the representative history OpenSpiel's ``TabularPolicy`` keeps for the
information state. In games whose information state fixes the seat's past observations (Kuhn and
Leduc poker, Liar's Dice, matrix games) that sequence is the same along every history of the state
and the table is exact. Goofspiel's information state forgets the order of the player's own bids,
which a recurrent policy remembers: there a recurrent policy is not a function of the information
state, and its table (along the representative history) approximates it; feed-forward policies
are exact everywhere. The distribution is ``softmax`` of the policy's masked logits (``info["logits"]``).

``evaluate_exploitability`` writes ``evaluation/exploitability.csv`` of a run: per evaluation
checkpoint, the exploitability (NashConv/2) of its policy and of the maxent-Nash mixture (of the
checkpoints' win-rate meta-game A = W − ½ up to it) computed exactly by ``analysis.exploitability``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from selfplay.utils.io import atomic_write_text

EXPLOITABILITY_COLUMNS = ("checkpoint", "episode", "exploitability", "nash_mixture_exploitability")


def _observation_sequences(game: Any, states: Sequence[Any]) -> list[list[list[float]]]:
    """Per state, the mover's information-state tensors at each decision node from the game's start."""
    sequences = []
    for state in states:
        player = state.current_player()
        replay = game.new_initial_state()
        seen = []
        for action in state.history():
            if not replay.is_chance_node():
                seen.append(replay.information_state_tensor(player))
            replay.apply_action(action)
        seen.append(state.information_state_tensor(player))
        sequences.append(seen)
    return sequences


def _act_logits(policy: Any, obs: torch.Tensor, state: Any, mask: torch.Tensor | None, start: torch.Tensor):
    """One ``act`` call that leaves the policy's own sampling generator untouched where it can."""
    throwaway = torch.Generator().manual_seed(0)
    try:
        _, state, info = policy.act(obs, state, mask, start, generator=throwaway)
    except TypeError:  # a policy without the generator keyword
        _, state, info = policy.act(obs, state, mask, start)
    if "logits" not in info:
        raise ValueError(f"policy {policy!r} must return its (masked) logits in info['logits'] to be tabulated")
    return info["logits"], state


@torch.no_grad()
def policy_table(policy: Any, game: Any, template: Any | None = None) -> Any:
    """The ``TabularPolicy`` (of ``game``, both players' rows) that ``policy`` plays in the env."""
    from selfplay.analysis.exploitability import tabular_policy

    template = template if template is not None else tabular_policy(game)
    table = template.__copy__(copy_action_probability_array=False)
    legal = torch.as_tensor(np.asarray(template.legal_actions_mask, dtype=bool))
    n_rows, n_game_actions = legal.shape
    mask = torch.cat([legal, torch.zeros(n_rows, 1, dtype=torch.bool)], dim=1)  # the no-op is never legal here
    recurrent = policy.initial_state(1) is not None
    if not recurrent:
        obs = torch.as_tensor(np.array([s.information_state_tensor(s.current_player()) for s in template.states]),
                              dtype=torch.float32)
        logits, _ = _act_logits(policy, obs, None, mask, torch.ones(n_rows, dtype=torch.bool))
    else:
        sequences = _observation_sequences(game, template.states)
        lengths = np.array([len(s) for s in sequences])
        steps = int(lengths.max())
        obs_size = len(sequences[0][0])
        padded = np.zeros((steps, n_rows, obs_size), dtype=np.float32)  # left-padded: every sequence ends at the last step
        for row, seq in enumerate(sequences):
            padded[steps - len(seq):, row] = seq
        state = policy.initial_state(n_rows)
        first = torch.as_tensor(steps - lengths)
        for t in range(steps):
            start = first == t  # the state is zeroed where a sequence begins (padding before it is forgotten)
            logits, state = _act_logits(policy, torch.as_tensor(padded[t]), state, mask if t == steps - 1 else None,
                                        start)
    probs = torch.softmax(logits.double(), dim=-1)[:, :n_game_actions] * legal
    table.action_probability_array = (probs / probs.sum(dim=1, keepdim=True)).numpy()
    return table


def evaluate_exploitability(env_name: str, ids: Sequence[int], episodes: Sequence[int], policies: Sequence[Any],
                            W: np.ndarray, out_dir: str | Path) -> dict:
    """Write ``out_dir/exploitability.csv`` and return the run's exploitability summary."""
    from selfplay.analysis.exploitability import GameTree, exploitability_curve
    from selfplay.envs.openspiel import load_two_player_zero_sum
    from selfplay.training.registry import openspiel_game

    game = load_two_player_zero_sum(openspiel_game(env_name))
    tree = GameTree(game)
    tables = [policy_table(p, game, tree.template) for p in policies]
    own, mixed = exploitability_curve(game, tables, W, tree=tree)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPLOITABILITY_COLUMNS)
    for row in zip(ids, episodes, own, mixed):
        writer.writerow([int(row[0]), int(row[1]), f"{row[2]:.8f}", f"{row[3]:.8f}"])
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / "exploitability.csv", buffer.getvalue())
    return {"exploitability_first": float(own[0]), "exploitability_final": float(own[-1]),
            "exploitability_min": float(own.min()), "nash_mixture_exploitability_final": float(mixed[-1])}


def read_exploitability(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(episodes, exploitability, nash_mixture_exploitability)`` from an ``exploitability.csv``."""
    data = np.genfromtxt(path, delimiter=",", names=True)
    data = np.atleast_1d(data)
    return data["episode"], data["exploitability"], data["nash_mixture_exploitability"]
