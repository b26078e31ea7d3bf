"""Repeated zero-sum matrix games with imperfect recall, batched over games (docs/design/selfplay.md §4).

One game: two players move simultaneously ``repetitions`` times. Each repetition seat 0 receives
``payoff[a0, a1]`` and seat 1 receives ``-payoff[a0, a1]``. The episode winner is the seat with the
higher cumulative reward; a tie (equal returns, up to float rounding) is broken uniformly at random with the environment's seeded
generator, so every finished game has a winner (``info["draw"]`` is always False).

Observation (imperfect recall): the last ``n_recall`` joint actions, oldest to newest, each a one-hot
block over ``k² + 1`` slots, where ``k`` is the number of actions. Slot ``k·a_self + a_other`` is the
joint action *seen from the observing seat* (own move first); slot ``k²`` means "empty" (fewer than
``n_recall`` repetitions played so far). RirRPS: k = 3, 10 slots per block, 3 blocks: 30 dims.

Trajectory vector (design §6, for the t-SNE embeddings): the newest recall block of the
observations that precede repetitions 2 … ``repetitions`` — that is, the joint-action one-hots of
repetitions 1 … ``repetitions − 1`` from the seat's view — concatenated:
``(repetitions − 1)·(k² + 1)`` dims (RirRPS: 9 × 10 = 90). This is the vector the paper's authors
embedded (their code takes the last block of observations 1…9); we take it from each seat's own
view. It is returned per seat in ``info["trajectory"]`` for games that just ended.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch

ROCK, PAPER, SCISSORS = 0, 1, 2

# Seat-0 payoffs. Rows: seat 0's action; columns: seat 1's action.
RPS_PAYOFF = [
    [0.0, -1.0, 1.0],
    [1.0, 0.0, -1.0],
    [-1.0, 1.0, 0.0],
]
# Biased RPS: still symmetric (payoff = -payoffᵀ) and cyclic, but wins are worth different amounts,
# so the Nash equilibrium is not uniform: (1/16, 10/16, 5/16) (solve pᵀ·payoff = 0 on the simplex).
BIASED_RPS_PAYOFF = [
    [0.0, -0.5, 1.0],
    [0.5, 0.0, -0.1],
    [-1.0, 0.1, 0.0],
]
# Rock-paper-scissors-lizard-Spock. Actions: rock, paper, scissors, lizard, Spock. Each beats two:
# scissors cuts paper, paper covers rock, rock crushes lizard, lizard poisons Spock, Spock smashes
# scissors, scissors decapitates lizard, lizard eats paper, paper disproves Spock, Spock vaporizes
# rock, rock crushes scissors.
_RPSLS_BEATS = [(2, 1), (1, 0), (0, 3), (3, 4), (4, 2), (2, 3), (3, 1), (1, 4), (4, 0), (0, 2)]
RPSLS_PAYOFF = [[0.0] * 5 for _ in range(5)]
for _winner, _loser in _RPSLS_BEATS:
    RPSLS_PAYOFF[_winner][_loser] = 1.0
    RPSLS_PAYOFF[_loser][_winner] = -1.0


class RepeatedMatrixGame:
    """``num_envs`` independent repeated zero-sum matrix games advanced together (torch, batched).

    Parameters
    ----------
    payoff: ``(k, k)`` seat-0 payoff matrix (seat 1 receives its negative), ``k ≥ 2``.
    num_envs: number of games played in parallel.
    n_recall: number of past joint actions in an observation (≥ 1).
    repetitions: moves per episode (≥ 1).
    seed: seeds the tie-breaking generator; ``None`` draws a non-deterministic seed.
    device: torch device of every tensor.
    name: a short name (``"rirrps"``, ...).
    action_names: one name per action (for the embedding basis and plots).
    """

    def __init__(
        self,
        payoff,
        num_envs: int,
        n_recall: int = 3,
        repetitions: int = 10,
        seed: int | None = None,
        device: str | torch.device = "cpu",
        name: str = "matrix-game",
        action_names: Sequence[str] | None = None,
    ):
        self.device = torch.device(device)
        payoff = torch.as_tensor(payoff, dtype=torch.float32, device=self.device)
        if payoff.ndim != 2 or payoff.shape[0] != payoff.shape[1] or payoff.shape[0] < 2:
            raise ValueError(f"payoff must be a square (k, k) matrix with k >= 2, got shape {tuple(payoff.shape)}")
        if not torch.isfinite(payoff).all():
            raise ValueError("payoff must contain only finite values")
        for param, value, low in (("num_envs", num_envs, 1), ("n_recall", n_recall, 1), ("repetitions", repetitions, 1)):
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
                raise ValueError(f"{param} must be an integer >= {low}, got {value!r}")
        num_envs, n_recall, repetitions = int(num_envs), int(n_recall), int(repetitions)
        k = payoff.shape[0]
        if action_names is None:
            action_names = [f"action_{i}" for i in range(k)]
        if len(action_names) != k:
            raise ValueError(f"action_names must have one name per action ({k}), got {len(action_names)}")

        self.payoff = payoff
        self.name = name
        self.action_names = list(action_names)
        self.num_envs = num_envs
        self.n_recall = n_recall
        self.repetitions = repetitions
        self.episode_length = repetitions
        self.n_actions = k
        self.n_slots = k * k + 1  # k² joint actions + the empty slot
        self.empty_slot = k * k
        self.obs_size = n_recall * self.n_slots
        self.n_observation_ids = self.n_slots ** n_recall  # observation_ids() lie in [0, n_observation_ids)
        self.trajectory_size = (repetitions - 1) * self.n_slots
        self.symmetric = bool(torch.allclose(payoff, -payoff.T))
        # Returns within float rounding of 0 are ties (biased RPS: 0.1 + 0.5 − 0.6 is not exactly 0 in float32).
        self._tie_tolerance = 1e-5 * float(payoff.abs().max()) * repetitions

        # Seat 1 sees joint action k·a0 + a1 as k·a1 + a0; the empty slot stays empty.
        a0, a1 = torch.meshgrid(torch.arange(k), torch.arange(k), indexing="ij")
        swap = torch.empty(self.n_slots, dtype=torch.long)
        swap[(k * a0 + a1).flatten()] = (k * a1 + a0).flatten()
        swap[self.empty_slot] = self.empty_slot
        self._seat1_view = swap.to(self.device)
        self._no_trajectory = torch.zeros(1, self.trajectory_size, device=self.device)

        self._generator = torch.Generator(device=self.device)
        self.seed(seed)
        # Game state, seat 0's view: recalled joint actions, the full joint-action history, the step
        # counter and seat 0's cumulative reward.
        self._recall = torch.full((num_envs, n_recall), self.empty_slot, dtype=torch.long, device=self.device)
        self._history = torch.full((num_envs, repetitions), self.empty_slot, dtype=torch.long, device=self.device)
        self._t = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        self._return0 = torch.zeros(num_envs, dtype=torch.float32, device=self.device)

    # ------------------------------------------------------------------ public API

    def seed(self, seed: int | None) -> None:
        """(Re)seed the tie-breaking generator; ``None`` picks a non-deterministic seed."""
        if seed is None:
            self._generator.seed()
        else:
            self._generator.manual_seed(int(seed))

    def reset(self, seed: int | None = None) -> list[torch.Tensor]:
        """Start every game afresh; returns ``[obs0, obs1]``, each ``(num_envs, obs_size)`` (all empty)."""
        if seed is not None:
            self.seed(seed)
        self._reset_games(torch.ones(self.num_envs, dtype=torch.bool, device=self.device))
        return self.observe()

    def observe(self) -> list[torch.Tensor]:
        """The current observation of both seats, each ``(num_envs, obs_size)`` float32."""
        return [self._encode(self._recall), self._encode(self._seat1_view[self._recall])]

    def observation_ids(self) -> list[torch.Tensor]:
        """The current observation of both seats as integers, each ``(num_envs,)`` long: the recalled
        slots read as the digits of a base-``n_slots`` number, oldest first (``n_slots ** n_recall``
        ids). Two rows have the same id exactly when ``observe()`` gives them the same vector, so
        evaluation can compute a policy once per distinct observation (``training.matches``)."""
        return [self._recall_ids(self._recall), self._recall_ids(self._seat1_view[self._recall])]

    def _recall_ids(self, slots: torch.Tensor) -> torch.Tensor:
        ids = slots[:, 0].clone()
        for k in range(1, self.n_recall):
            ids.mul_(self.n_slots).add_(slots[:, k])
        return ids

    def action_masks(self) -> list[torch.Tensor]:
        """Every action is always legal: ``[mask0, mask1]``, each ``(num_envs, n_actions)`` all True."""
        mask = torch.ones(self.num_envs, self.n_actions, dtype=torch.bool, device=self.device)
        return [mask, mask.clone()]

    def step(self, actions: Sequence[torch.Tensor], auto_reset: bool = True):
        """Play one repetition in every game.

        Returns ``(obs, rewards, done, info)``: ``rewards = [payoff[a0, a1], -payoff[a0, a1]]``;
        ``done`` is True for games whose last repetition this was. ``info`` holds, per game,
        ``winner`` (0/1 where done, else −1; a tied episode goes to a uniformly random seat),
        ``draw`` (all False), ``episode_reward`` ``[R0, R1]`` and ``trajectory`` ``[traj0, traj1]``
        (each ``(num_envs, trajectory_size)``), both valid where ``done`` and zero elsewhere.
        With ``auto_reset`` (default) finished games restart and ``obs`` is their first observation;
        without it ``obs`` is the terminal observation and the caller must ``reset()``.
        """
        ended = self._t >= self.repetitions
        if bool(ended.any()):
            games = torch.nonzero(ended).flatten().tolist()
            raise ValueError(f"games {games[:10]} have ended (step(auto_reset=False) returned done); "
                             "call reset() before stepping them again")
        a0, a1 = self._check_actions(actions)
        k = self.n_actions
        reward0 = self.payoff[a0, a1]
        joint = k * a0 + a1
        self._recall = torch.cat([self._recall[:, 1:], joint[:, None]], dim=1)
        self._history.scatter_(1, self._t.clamp(max=self.repetitions - 1)[:, None], joint[:, None])
        self._t += 1
        self._return0 += reward0
        done = self._t >= self.repetitions

        coin = torch.randint(0, 2, (self.num_envs,), generator=self._generator, device=self.device)
        tol = self._tie_tolerance
        winner = torch.where(self._return0 > tol, 0, torch.where(self._return0 < -tol, 1, coin))
        winner = torch.where(done, winner, -1)
        episode_return0 = torch.where(done, self._return0, 0.0)
        info = {
            "winner": winner,
            "draw": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "episode_reward": [episode_return0, -episode_return0],
            "trajectory": self._trajectories(done),
        }
        if auto_reset and bool(done.any()):
            self._reset_games(done)
        return self.observe(), [reward0, -reward0], done, info

    # ------------------------------------------------------------------ internals

    def _encode(self, slots: torch.Tensor) -> torch.Tensor:
        """``(n, m)`` slot indices -> ``(n, m·n_slots)`` concatenated one-hot blocks."""
        out = torch.zeros(*slots.shape, self.n_slots, device=self.device)
        return out.scatter_(-1, slots[..., None], 1.0).reshape(slots.shape[0], -1)

    def _trajectories(self, done: torch.Tensor) -> list[torch.Tensor]:
        """Per seat, the one-hot joint actions of repetitions 1 … R−1 (seat's view), zero where not done.

        While no game ends, both entries are a read-only zero view (no per-step allocation).
        """
        if not bool(done.any()):
            zeros = self._no_trajectory.expand(self.num_envs, -1)
            return [zeros, zeros]
        first = self._history[:, : self.repetitions - 1]
        trajectories = [self._encode(first), self._encode(self._seat1_view[first])]
        if not bool(done.all()):
            trajectories = [t * done[:, None] for t in trajectories]
        return trajectories

    def _reset_games(self, which: torch.Tensor) -> None:
        self._recall[which] = self.empty_slot
        self._history[which] = self.empty_slot
        self._t[which] = 0
        self._return0[which] = 0.0

    def _check_actions(self, actions: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        if len(actions) != 2:
            raise ValueError(f"actions must be a pair [a0, a1] (one per seat), got {len(actions)} entries")
        checked = []
        for seat, a in enumerate(actions):
            a = torch.as_tensor(a, device=self.device)
            if a.shape != (self.num_envs,) or a.is_floating_point() or a.dtype == torch.bool:
                raise ValueError(
                    f"actions[{seat}] must be an integer tensor of shape ({self.num_envs},), "
                    f"got dtype {a.dtype} shape {tuple(a.shape)}"
                )
            if bool(((a < 0) | (a >= self.n_actions)).any()):
                raise ValueError(f"actions[{seat}] must lie in [0, {self.n_actions - 1}]")
            checked.append(a.long())
        return checked[0], checked[1]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, num_envs={self.num_envs}, n_actions={self.n_actions}, "
            f"n_recall={self.n_recall}, repetitions={self.repetitions}, device={str(self.device)!r})"
        )


class RirRPS(RepeatedMatrixGame):
    """Repeated imperfect-recall Rock-Paper-Scissors (design §4): Rock=0, Paper=1, Scissors=2."""

    def __init__(self, num_envs: int, n_recall: int = 3, repetitions: int = 10, seed: int | None = None, device="cpu"):
        super().__init__(RPS_PAYOFF, num_envs, n_recall, repetitions, seed, device, name="rirrps",
                         action_names=["rock", "paper", "scissors"])


class BiasedRPS(RepeatedMatrixGame):
    """Repeated imperfect-recall biased RPS (``BIASED_RPS_PAYOFF``; Nash (1/16, 10/16, 5/16))."""

    def __init__(self, num_envs: int, n_recall: int = 3, repetitions: int = 10, seed: int | None = None, device="cpu"):
        super().__init__(BIASED_RPS_PAYOFF, num_envs, n_recall, repetitions, seed, device, name="biased-rps",
                         action_names=["rock", "paper", "scissors"])


class RPSLS(RepeatedMatrixGame):
    """Repeated imperfect-recall rock-paper-scissors-lizard-Spock (k = 5: 26 slots per recall block)."""

    def __init__(self, num_envs: int, n_recall: int = 3, repetitions: int = 10, seed: int | None = None, device="cpu"):
        super().__init__(RPSLS_PAYOFF, num_envs, n_recall, repetitions, seed, device, name="rpsls",
                         action_names=["rock", "paper", "scissors", "lizard", "spock"])


GAMES = {"rirrps": RirRPS, "biased-rps": BiasedRPS, "rpsls": RPSLS}


def make_game(name: str, num_envs: int, **kwargs) -> RepeatedMatrixGame:
    """Build a registered game by name (``GAMES``: rirrps, biased-rps, rpsls)."""
    if name not in GAMES:
        raise ValueError(f"name must be one of {sorted(GAMES)}, got {name!r}")
    return GAMES[name](num_envs, **kwargs)
