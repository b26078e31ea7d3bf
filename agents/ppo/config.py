"""PPO settings: one dataclass for every PPO learner, per-environment defaults in one table, and the
batch sizes derived from them (docs/design/selfplay.md §5; CleanRL's ``Args`` style: one field, one line).

``PPOConfig``'s defaults are the paper's Table I (horizon 2048, Adam 3e-4, 10 epochs, minibatch 64,
γ 0.99, GAE λ 0.95, entropy 0.01, clip 0.2) and its code (Adam eps 1e-5, grad-norm clip 5,
standardised advantages); ``value_coef`` 0.5 is not in the paper (CleanRL's choice).
``MultiUnitPPOConfig`` adds only what a parameter-shared SMAC side needs (agent id, last action,
centralised value). ``ENV_DEFAULTS`` holds the per-environment defaults (SMAC: MAPPO's settings,
Yu et al. 2022) and ``ppo_config(family, **overrides)`` builds a config from them.

Sizes (``PPOConfig.sizes``): with ``num_envs`` games a rollout is ``ceil(horizon / num_envs)`` steps
per game (recurrent bodies: rounded up to whole ``bptt_length`` sequences); the batch is
``rollout_length · num_envs`` samples (a sample is one step of the learner's side in one game, all
its units together). Minibatches are ``minibatch_size`` samples (``None``: the whole batch);
recurrent minibatches are ``max(1, minibatch_size // sequence_length)`` whole sequences.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class BatchSizes:
    """The sizes of one PPO update, derived from a config and the number of games (``PPOConfig.sizes``)."""

    num_envs: int  # games acted for at once
    rollout_length: int  # steps per game in one rollout
    batch_size: int  # samples per update: rollout_length · num_envs
    sequence_length: int  # steps per replayed sequence (1 for feed-forward bodies)
    num_sequences: int  # sequences in the batch: (rollout_length // sequence_length) · num_envs
    sequences_per_minibatch: int  # sequences (feed-forward: samples) per minibatch
    num_minibatches: int  # minibatches per epoch (the last one may be smaller)

    @property
    def minibatch_size(self) -> int:
        """Samples in a full minibatch."""
        return self.sequences_per_minibatch * self.sequence_length


@dataclass
class PPOConfig:
    """Proximal Policy Optimisation hyper-parameters (defaults: the paper's Table I)."""

    horizon: int = 2048
    """Samples per update over all games (the rollout is ``ceil(horizon / num_envs)`` steps per game)."""
    learning_rate: float = 3e-4
    """Adam step size."""
    adam_eps: float = 1e-5
    """Adam's ε."""
    epochs: int = 10
    """Passes over the batch per update."""
    minibatch_size: int | None = 64
    """Samples per minibatch (recurrent bodies: floor to whole sequences, at least one); ``None``: the whole batch."""
    gamma: float = 0.99
    """Discount factor γ."""
    gae_lambda: float = 0.95
    """GAE's λ."""
    entropy_coef: float = 0.01
    """Weight c_e of the entropy bonus."""
    value_coef: float = 0.5
    """Weight c_v of the value loss."""
    clip_coef: float = 0.2
    """Clip range ε of the probability ratio."""
    max_grad_norm: float = 5.0
    """Gradient-norm clip, per separately optimised network (the shared actor-critic; actor and critic)."""
    normalize_advantages: bool = True
    """Standardise the advantages over the batch's policy-gradient samples before the update."""
    body: str = "mlp"
    """Network body: ``"mlp"`` (two tanh layers) or a recurrent cell (``BODIES``)."""
    hidden_size: int = 64
    """Width of the body's layers."""
    bptt_length: int | None = None
    """Recurrent bodies: truncated-BPTT sequence length; ``None``: each game's whole rollout segment."""

    BODIES = ("mlp", "lstm")  # class attribute (no annotation): the bodies this learner family builds

    def __post_init__(self):
        for name in ("horizon", "epochs", "hidden_size"):
            _check_int(name, getattr(self, name))
        for name in ("minibatch_size", "bptt_length"):
            if getattr(self, name) is not None:
                _check_int(name, getattr(self, name), "None or ")
        for name in ("learning_rate", "adam_eps", "clip_coef", "max_grad_norm"):
            if not (_finite(getattr(self, name)) and getattr(self, name) > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {getattr(self, name)!r}")
        for name in ("gamma", "gae_lambda"):
            if not (_finite(getattr(self, name)) and 0.0 <= getattr(self, name) <= 1.0):
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)!r}")
        for name in ("entropy_coef", "value_coef"):
            if not (_finite(getattr(self, name)) and getattr(self, name) >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {getattr(self, name)!r}")
        if self.body not in self.BODIES:
            raise ValueError(f"body must be one of {self.BODIES}, got {self.body!r}")
        for name in self._bool_fields():
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.minibatch_size is not None and self.minibatch_size > self.horizon:  # the batch is >= horizon
            raise ValueError(f"minibatch_size must be None or at most horizon ({self.horizon}), "
                             f"got {self.minibatch_size}")

    def _bool_fields(self) -> tuple[str, ...]:
        return ("normalize_advantages",)

    @property
    def recurrent(self) -> bool:
        return self.body != "mlp"

    def sizes(self, num_envs: int) -> BatchSizes:
        """The batch and minibatch sizes of an update over ``num_envs`` games (module docstring)."""
        _check_int("num_envs", num_envs)
        T = math.ceil(self.horizon / num_envs)
        if self.recurrent and self.bptt_length is not None:
            T = self.bptt_length * math.ceil(T / self.bptt_length)
        L = (T if self.bptt_length is None else self.bptt_length) if self.recurrent else 1
        batch = T * num_envs
        n_seq = (T // L) * num_envs
        mb = batch if self.minibatch_size is None else self.minibatch_size  # <= horizon <= batch (__post_init__)
        per = min(n_seq, max(1, mb // L))
        return BatchSizes(num_envs, T, batch, L, n_seq, per, math.ceil(n_seq / per))

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class MultiUnitPPOConfig(PPOConfig):
    """PPO for a parameter-shared side of several units (``multiunit.MultiUnitPPOLearner``)."""

    agent_id: bool = True
    """Append the unit's one-hot id to its observation."""
    last_action: bool = True
    """Append the one-hot of the unit's previous action to its observation."""
    centralized_value: bool = False
    """The critic reads the side's global state and the agent id (MAPPO) instead of the unit's input (IPPO)."""

    BODIES = ("mlp", "gru", "lstm")

    def _bool_fields(self) -> tuple[str, ...]:
        return ("normalize_advantages", "agent_id", "last_action", "centralized_value")


ENV_DEFAULTS: dict[str, tuple[type[PPOConfig], dict]] = {
    # design §5, Table I: the one-unit learner on RPS-like games
    "rps": (PPOConfig, {}),
    # MAPPO's SMAC settings (Yu et al. 2022): 3200 game-steps, one minibatch, lr 5e-4, c_v 1, clip 10, BPTT 10
    "smac": (MultiUnitPPOConfig, dict(horizon=3200, learning_rate=5e-4, minibatch_size=None, value_coef=1.0,
                                      max_grad_norm=10.0, bptt_length=10)),
}


def ppo_config(family: str = "rps", **overrides) -> PPOConfig:
    """The config of environment ``family`` (``ENV_DEFAULTS``: ``"rps"`` or ``"smac"``) with ``overrides``.

    An override that is not a field of that family's config raises ``ValueError`` naming it."""
    if family not in ENV_DEFAULTS:
        raise ValueError(f"family must be one of {sorted(ENV_DEFAULTS)}, got {family!r}")
    cls, defaults = ENV_DEFAULTS[family]
    known = cls.__dataclass_fields__
    unknown = sorted(k for k in overrides if k not in known)
    if unknown:
        raise ValueError(f"{unknown} are not settings of {cls.__name__} (known: {sorted(known)})")
    return cls(**{**defaults, **overrides})


def _check_int(name: str, value, prefix: str = "") -> None:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be {prefix}an integer >= 1, got {value!r}")


def _finite(value) -> bool:
    """A real number (not a bool), neither infinite nor NaN."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
