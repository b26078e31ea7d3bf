"""PPO settings: one dataclass with the paper's Table I defaults (spec-selfplay §5)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

BODIES = ("mlp", "lstm")


@dataclass
class PPOConfig:
    """Proximal Policy Optimisation hyper-parameters.

    Defaults are the paper's Table I (horizon 2048, Adam 3e-4, 10 epochs, minibatch 64, γ 0.99,
    GAE λ 0.95, entropy 0.01, clip 0.2) and its code (Adam eps 1e-5, grad-norm clip 5, standardised
    advantages). ``value_coef`` (0.5) is not given by the paper; 0.5 is the common choice (CleanRL).

    ``horizon`` counts transitions over all games of the batch: with ``num_envs`` games each rollout
    is ``ceil(horizon / num_envs)`` steps per game (rounded up to a multiple of ``bptt_length``).
    ``body``: ``"mlp"`` (two tanh layers of ``hidden_size``) or ``"lstm"`` (one LSTM of ``hidden_size``).
    ``bptt_length``: LSTM only; the length of the truncated-BPTT sequences the rollout's per-game
    segments are cut into (``None``: each game's whole rollout segment is one sequence). An LSTM
    minibatch holds ``max(1, minibatch_size // sequence_length)`` whole sequences.
    """

    horizon: int = 2048
    learning_rate: float = 3e-4
    adam_eps: float = 1e-5
    epochs: int = 10
    minibatch_size: int = 64
    gamma: float = 0.99
    gae_lambda: float = 0.95
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    clip_coef: float = 0.2
    max_grad_norm: float = 5.0
    normalize_advantages: bool = True
    body: str = "mlp"
    hidden_size: int = 64
    bptt_length: int | None = None

    def __post_init__(self):
        for name in ("horizon", "epochs", "minibatch_size", "hidden_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.bptt_length is not None and (not isinstance(self.bptt_length, int) or self.bptt_length < 1):
            raise ValueError(f"bptt_length must be None or an integer >= 1, got {self.bptt_length!r}")
        for name in ("learning_rate", "adam_eps", "clip_coef", "max_grad_norm"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("gamma", "gae_lambda"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)!r}")
        for name in ("entropy_coef", "value_coef"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if self.body not in BODIES:
            raise ValueError(f"body must be one of {BODIES}, got {self.body!r}")

    def to_dict(self) -> dict:
        return asdict(self)
