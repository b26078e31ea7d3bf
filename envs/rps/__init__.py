"""RirRPS and other repeated zero-sum matrix games with imperfect recall (docs/design/selfplay.md §4)."""

from selfplay.envs.rps.game import (
    BIASED_RPS_PAYOFF,
    GAMES,
    PAPER,
    ROCK,
    RPS_PAYOFF,
    RPSLS,
    RPSLS_PAYOFF,
    SCISSORS,
    BiasedRPS,
    RepeatedMatrixGame,
    RirRPS,
    make_game,
)
from selfplay.envs.rps.parallel import MatrixGameParallelEnv

__all__ = [
    "BIASED_RPS_PAYOFF", "GAMES", "PAPER", "ROCK", "RPS_PAYOFF", "RPSLS", "RPSLS_PAYOFF", "SCISSORS",
    "BiasedRPS", "MatrixGameParallelEnv", "RepeatedMatrixGame", "RirRPS", "make_game",
]
