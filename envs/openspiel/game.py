"""Two-player zero-sum OpenSpiel games as a batched two-seat environment (``envs/base.py``).

``OpenSpielGame(game, num_envs)`` plays ``num_envs`` independent games of one OpenSpiel game
(``"kuhn_poker"``, ``"goofspiel(num_cards=4)"``, ...) together, behind the same interface as RirRPS
and the SMAC battle: observations, legal-action masks and rewards per seat, each seat from its own
point of view; finished games restart on their own.

Which games: two players, ``ZERO_SUM`` utility, information-state tensors, chance either absent or
explicit (``DETERMINISTIC`` / ``EXPLICIT_STOCHASTIC``, so that exploitability can be computed
exactly). Anything else is refused with a ``ValueError`` naming what is missing.

Simultaneous-move games (``matrix_rps``, ``goofspiel``) are played in their turn-based form
(``pyspiel.convert_to_turn_based``): player 0 chooses, then player 1 chooses without seeing that
choice, then both are applied. Information is the same as in the simultaneous game, and the game
the environment plays (``self.game``) is a sequential one on which OpenSpiel's exact best response,
exploitability and tabular policies all work.

Observation of seat ``p``: ``state.information_state_tensor(p)`` (float32, ``obs_size`` =
the game's information-state tensor size), for both seats at every step.

Turn-based play through masks (the convention): ``n_actions = game.num_distinct_actions() + 1``.
Actions ``0 … num_distinct_actions − 1`` are the game's own action ids; the last index,
``noop_action = num_distinct_actions``, is the "wait" action. At every step exactly one seat is to
move: its mask holds the game's legal actions (``noop_action`` illegal); the other seat's mask holds
only ``noop_action``, and whatever action it sends is ignored. An illegal action of the seat to move
is a ``ValueError``.

Chance is handled inside: after every move (and at each game start) chance nodes are resolved by
sampling ``state.chance_outcomes()`` with the environment's seeded generator, so every step the
caller sees is a decision of a player.

Rewards: the change in ``state.returns()`` caused by the step (so the rewards of a game sum to its
returns; poker pays at the end). A finished game's winner is the seat with the higher return; equal
returns are a draw (``info["draw"]``, winner −1).
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

_NAME = re.compile(r"^[A-Za-z0-9_]+(\((\s*[A-Za-z0-9_]+\s*=\s*[^,()=]+\s*)(,\s*[A-Za-z0-9_]+\s*=\s*[^,()=]+\s*)*\))?$")
INSTALL_HINT = "OpenSpiel games need the open_spiel package: pip install 'selfplay[openspiel]' (or open_spiel)"


def import_pyspiel():
    """``pyspiel``, or a ``ModuleNotFoundError`` saying how to install it."""
    try:
        import pyspiel
    except ModuleNotFoundError as err:  # the rest of the suite works without it
        raise ModuleNotFoundError(INSTALL_HINT) from err
    return pyspiel


def load_two_player_zero_sum(game: str) -> Any:
    """Load ``game`` (``"GAME"`` or ``"GAME(param=value,...)"``) and check that the suite can play it.

    Returns the pyspiel game the environment plays: the game itself, or its turn-based form for a
    simultaneous-move game. ``ValueError`` for a malformed or unknown name, bad parameters, or a game
    that is not two-player zero-sum with information-state tensors and explicit (or no) chance.
    """
    if not isinstance(game, str) or not _NAME.match(game.strip()):
        raise ValueError(f"game must look like 'GAME' or 'GAME(param=value,...)' (e.g. 'goofspiel(num_cards=4)'), "
                         f"got {game!r}")
    negative = [f"{k}={v.strip()}" for k, v in re.findall(r"([A-Za-z0-9_]+)\s*=\s*([^,()=]+)", game)
                if re.fullmatch(r"\s*-\s*\d+\s*", v)]
    if negative:  # counts and sizes: OpenSpiel's C++ code does not check them (a negative size corrupts memory)
        raise ValueError(f"game {game!r}: parameters must not be negative, got {', '.join(negative)}")
    pyspiel = import_pyspiel()
    base = game.strip().split("(", 1)[0]
    if base not in pyspiel.registered_names():
        raise ValueError(f"game {base!r} is not an OpenSpiel game (pyspiel.registered_names() lists them)")
    try:
        loaded = pyspiel.load_game(game.strip())
    except (pyspiel.SpielError, ValueError, RuntimeError, IndexError, OverflowError, MemoryError) as err:
        # SpielError for a checked parameter; a C++ exception (std::length_error, ...) for an unchecked one
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else repr(err)
        raise ValueError(f"game {game!r} cannot be loaded by OpenSpiel: {first_line}") from None
    kind = loaded.get_type()
    problems = []
    if loaded.num_players() != 2:
        problems.append(f"it has {loaded.num_players()} players (needs 2)")
    if kind.utility != pyspiel.GameType.Utility.ZERO_SUM:
        problems.append(f"its utility is {kind.utility.name} (needs ZERO_SUM)")
    if not kind.provides_information_state_tensor:
        problems.append("it provides no information-state tensor")
    if kind.chance_mode not in (pyspiel.GameType.ChanceMode.DETERMINISTIC, pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC):
        problems.append(f"its chance mode is {kind.chance_mode.name} (needs DETERMINISTIC or EXPLICIT_STOCHASTIC)")
    if problems:
        raise ValueError(f"game {game!r} cannot be played as a two-player zero-sum game: " + "; ".join(problems))
    if kind.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        loaded = pyspiel.convert_to_turn_based(loaded)
    return loaded


class OpenSpielGame:
    """``num_envs`` games of one two-player zero-sum OpenSpiel game, advanced together.

    Parameters
    ----------
    game: ``"GAME"`` or ``"GAME(param=value,...)"`` as ``pyspiel.load_game`` takes it.
    num_envs: number of games played in parallel (≥ 1).
    seed: seeds the chance-sampling generator; ``None`` draws a non-deterministic seed.
    device: torch device of the returned tensors.
    """

    def __init__(self, game: str, num_envs: int, seed: int | None = None, device: str | torch.device = "cpu"):
        if not isinstance(num_envs, numbers.Integral) or isinstance(num_envs, bool) or num_envs < 1:
            raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        self.game = load_two_player_zero_sum(game)
        self.name = f"openspiel:{game.strip()}"
        self.game_string = game.strip()
        self.device = torch.device(device)
        self.num_envs = int(num_envs)
        self.obs_size = int(np.prod(self.game.information_state_tensor_shape()))
        self.num_game_actions = self.game.num_distinct_actions()
        self.noop_action = self.num_game_actions
        self.n_actions = self.num_game_actions + 1
        self.episode_length = self.game.max_game_length()
        self.seed(seed)
        self._states = [None] * self.num_envs
        self._returns = np.zeros((self.num_envs, 2))
        self._obs = np.zeros((2, self.num_envs, self.obs_size), dtype=np.float32)
        self._masks = np.zeros((2, self.num_envs, self.n_actions), dtype=bool)
        self._to_move = np.zeros(self.num_envs, dtype=np.int64)
        for i in range(self.num_envs):
            self._new_game(i)

    # ------------------------------------------------------------------ public API

    def seed(self, seed: int | None) -> None:
        """(Re)seed the chance generator; ``None`` picks a non-deterministic seed."""
        self._rng = np.random.default_rng(None if seed is None else int(seed))

    def reset(self, seed: int | None = None) -> list[torch.Tensor]:
        """Start every game afresh; returns ``[obs0, obs1]``, each ``(num_envs, obs_size)``."""
        if seed is not None:
            self.seed(seed)
        for i in range(self.num_envs):
            self._new_game(i)
        return self.observe()

    def observe(self) -> list[torch.Tensor]:
        """Both seats' information-state tensors, each ``(num_envs, obs_size)`` float32."""
        return [torch.as_tensor(self._obs[s].copy(), device=self.device) for s in range(2)]

    def action_masks(self) -> list[torch.Tensor]:
        """``[mask0, mask1]``, bool ``(num_envs, n_actions)``: the mover's legal actions; only
        ``noop_action`` for the seat that waits."""
        return [torch.as_tensor(self._masks[s].copy(), device=self.device) for s in range(2)]

    def current_player(self) -> np.ndarray:
        """Per game, the seat to move (0 or 1)."""
        return self._to_move.copy()

    def information_state_strings(self, seat: int) -> list[str]:
        """Per game, seat ``seat``'s OpenSpiel information-state string (the key of tabular policies)."""
        if seat not in (0, 1):
            raise ValueError(f"seat must be 0 or 1, got {seat!r}")
        return [state.information_state_string(seat) for state in self._states]

    def step(self, actions: Sequence[Any]):
        """Apply the mover's action in every game (the waiting seat's action is ignored).

        Returns ``(obs, rewards, done, info)`` as ``envs/base.py`` describes; finished games restart
        and ``obs`` holds their first observation.
        """
        chosen = self._check_actions(actions)
        n = self.num_envs
        rewards = np.zeros((2, n), dtype=np.float32)
        done = np.zeros(n, dtype=bool)
        winner = np.full(n, -1, dtype=np.int64)
        draw = np.zeros(n, dtype=bool)
        episode_reward = np.zeros((2, n), dtype=np.float32)
        for i, state in enumerate(self._states):
            state.apply_action(int(chosen[i]))
            self._resolve_chance(state)
            returns = np.asarray(state.returns(), dtype=np.float64)
            rewards[:, i] = returns - self._returns[i]
            self._returns[i] = returns
            if state.is_terminal():
                done[i] = True
                episode_reward[:, i] = returns
                if returns[0] > returns[1]:
                    winner[i] = 0
                elif returns[1] > returns[0]:
                    winner[i] = 1
                else:
                    draw[i] = True
                self._new_game(i)
            else:
                self._observe_game(i)
        info = {
            "winner": torch.as_tensor(winner, device=self.device),
            "draw": torch.as_tensor(draw, device=self.device),
            "episode_reward": [torch.as_tensor(episode_reward[s], device=self.device) for s in range(2)],
        }
        tensors = [torch.as_tensor(rewards[s], device=self.device) for s in range(2)]
        return self.observe(), tensors, torch.as_tensor(done, device=self.device), info

    # ------------------------------------------------------------------ internals

    def _resolve_chance(self, state) -> None:
        while state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            probs = np.asarray(probs, dtype=np.float64)
            state.apply_action(int(outcomes[self._rng.choice(len(outcomes), p=probs / probs.sum())]))

    def _new_game(self, i: int) -> None:
        state = self.game.new_initial_state()
        self._resolve_chance(state)
        if state.is_terminal():
            raise ValueError(f"game {self.game_string!r} ended before any player moved; nothing to learn")
        self._states[i] = state
        self._returns[i] = 0.0
        self._observe_game(i)

    def _observe_game(self, i: int) -> None:
        state = self._states[i]
        mover = state.current_player()
        self._to_move[i] = mover
        for seat in range(2):
            self._obs[seat, i] = state.information_state_tensor(seat)
        self._masks[:, i] = False
        self._masks[mover, i, state.legal_actions(mover)] = True
        self._masks[1 - mover, i, self.noop_action] = True

    def _check_actions(self, actions: Sequence[Any]) -> np.ndarray:
        """Per game, the action of the seat to move (validated)."""
        if len(actions) != 2:
            raise ValueError(f"actions must be a pair [a0, a1] (one per seat), got {len(actions)} entries")
        per_seat = []
        for seat, a in enumerate(actions):
            a = torch.as_tensor(a)
            if a.shape != (self.num_envs,) or a.is_floating_point() or a.dtype == torch.bool:
                raise ValueError(f"actions[{seat}] must be an integer tensor of shape ({self.num_envs},), "
                                 f"got dtype {a.dtype} shape {tuple(a.shape)}")
            per_seat.append(a.cpu().numpy().astype(np.int64))
        chosen = np.where(self._to_move == 0, per_seat[0], per_seat[1])
        rows = np.arange(self.num_envs)
        in_range = (chosen >= 0) & (chosen < self.num_game_actions)
        legal = in_range & self._masks[self._to_move, rows, np.clip(chosen, 0, self.n_actions - 1)]
        if not legal.all():
            i = int(np.flatnonzero(~legal)[0])
            seat = int(self._to_move[i])
            allowed = np.flatnonzero(self._masks[seat, i]).tolist()
            raise ValueError(f"actions[{seat}][{i}] = {int(chosen[i])} is not legal for seat {seat}, which is to move "
                             f"in game {i}; legal actions: {allowed}")
        return chosen

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(game={self.game_string!r}, num_envs={self.num_envs}, "
                f"obs_size={self.obs_size}, n_actions={self.n_actions}, device={str(self.device)!r})")
