"""The actor-critic network: a body (MLP 64-64 or LSTM(64), docs/design/selfplay.md §5) and two linear heads.

Body and heads are separate modules so that another environment (SMAC's multi-unit sides) can reuse
them: any observation size and action count, given to the constructor.

Initialisation (CleanRL): orthogonal weights, gain √2 in the MLP body, 0.01 for the policy head, 1 for
the value head, zero biases. Every random draw uses the ``generator`` passed in (no global RNG).
Masked logits: illegal actions get ``MASKED_LOGIT`` (−1e8), so their probability is exactly 0 and the
entropy stays finite.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass

import torch
from torch import nn

from selfplay.utils.seeding import keeps_global_rng

MASKED_LOGIT = -1e8


@dataclass(frozen=True)
class NetworkSpec:
    """What a saved policy needs to rebuild its network."""

    obs_size: int
    n_actions: int
    body: str = "mlp"
    hidden_size: int = 64

    def __post_init__(self):
        for name in ("obs_size", "n_actions", "hidden_size"):
            value = getattr(self, name)
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
            object.__setattr__(self, name, int(value))  # plain ints, so that specs compare and save cleanly
        if self.body not in ("mlp", "lstm"):
            raise ValueError(f"body must be 'mlp' or 'lstm', got {self.body!r}")

    def to_dict(self) -> dict:
        return asdict(self)


class MLPBody(nn.Module):
    """``tanh(W2 · tanh(W1 · x + b1) + b2)``: two hidden layers of ``hidden_size``."""

    recurrent = False

    def __init__(self, obs_size: int, hidden_size: int):
        super().__init__()
        self.fc1 = nn.Linear(obs_size, hidden_size)
        self.fc2 = nn.Linear(hidden_size, hidden_size)

    def reset_parameters(self, generator: torch.Generator) -> None:
        for layer in (self.fc1, self.fc2):
            nn.init.orthogonal_(layer.weight, gain=math.sqrt(2), generator=generator)
            nn.init.zeros_(layer.bias)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.fc2(torch.tanh(self.fc1(obs))))


class LSTMBody(nn.Module):
    """One LSTM layer of ``hidden_size``; the state ``(h, c)`` is zeroed where an episode starts."""

    recurrent = True

    def __init__(self, obs_size: int, hidden_size: int):
        super().__init__()
        self.hidden_size = hidden_size
        self.lstm = nn.LSTM(obs_size, hidden_size)

    def reset_parameters(self, generator: torch.Generator) -> None:
        nn.init.orthogonal_(self.lstm.weight_ih_l0, gain=1.0, generator=generator)
        nn.init.orthogonal_(self.lstm.weight_hh_l0, gain=1.0, generator=generator)
        nn.init.zeros_(self.lstm.bias_ih_l0)
        nn.init.zeros_(self.lstm.bias_hh_l0)

    def initial_state(self, batch: int, device) -> tuple[torch.Tensor, torch.Tensor]:
        zeros = torch.zeros(batch, self.hidden_size, device=device)
        return zeros, zeros.clone()

    @staticmethod
    def _reset(state, episode_start):
        h, c = state
        if episode_start is None:
            return h, c
        keep = (~episode_start.bool()).to(h.dtype)[:, None]
        return h * keep, c * keep

    def step(self, obs, state, episode_start=None):
        """One step: ``(h, c) ← LSTM(obs, (h, c)·(1 − episode_start))``; returns ``(h, (h, c))``."""
        h, c = self._reset(state, episode_start)
        out, (h, c) = self.lstm(obs[None], (h[None], c[None]))
        return out[0], (h[0], c[0])

    def unroll(self, obs, state, episode_starts):
        """``obs`` ``(L, B, obs_size)``, ``episode_starts`` ``(L, B)`` -> features ``(L, B, hidden)``.

        The sequence is cut where any game starts an episode; each piece runs as one fused LSTM call
        from the state reset at its first step (games whose episodes start together — RirRPS — need
        one call per episode, not one per step).
        """
        cuts = [0] + (episode_starts[1:].any(dim=1).nonzero().squeeze(1) + 1).tolist() + [obs.shape[0]]
        features = []
        for a, b in zip(cuts[:-1], cuts[1:]):
            h, c = self._reset(state, episode_starts[a])
            out, (h, c) = self.lstm(obs[a:b], (h[None], c[None]))
            features.append(out)
            state = (h[0], c[0])
        return torch.cat(features), state


class ActorCritic(nn.Module):
    """Body + policy head (logits over actions) + value head (a scalar)."""

    @keeps_global_rng
    def __init__(self, spec: NetworkSpec, generator: torch.Generator | None = None):
        super().__init__()
        self.spec = spec
        body_class = MLPBody if spec.body == "mlp" else LSTMBody
        self.body = body_class(spec.obs_size, spec.hidden_size)
        self.policy_head = nn.Linear(spec.hidden_size, spec.n_actions)
        self.value_head = nn.Linear(spec.hidden_size, 1)
        if generator is None:
            generator = torch.Generator().manual_seed(0)
        self.body.reset_parameters(generator)
        nn.init.orthogonal_(self.policy_head.weight, gain=0.01, generator=generator)
        nn.init.orthogonal_(self.value_head.weight, gain=1.0, generator=generator)
        nn.init.zeros_(self.policy_head.bias)
        nn.init.zeros_(self.value_head.bias)

    @property
    def recurrent(self) -> bool:
        return self.body.recurrent

    def initial_state(self, batch: int):
        if not self.recurrent:
            return None
        return self.body.initial_state(batch, self.policy_head.weight.device)

    def features(self, obs, state=None, episode_start=None):
        """Body features for one step of a batch; returns ``(features, new_state)``."""
        if not self.recurrent:
            return self.body(obs), None
        if state is None:
            state = self.initial_state(obs.shape[0])
        return self.body.step(obs, state, episode_start)

    def heads(self, features, mask=None):
        """``(masked logits, value)`` from body features."""
        logits = self.policy_head(features)
        if mask is not None:
            logits = logits.masked_fill(~mask, MASKED_LOGIT)
        return logits, self.value_head(features).squeeze(-1)


def check_mask(mask, batch: int, n_actions: int, device) -> torch.Tensor | None:
    """Validate a legal-action mask: bool ``(batch, n_actions)`` with a legal action in every row."""
    if mask is None:
        return None
    mask = torch.as_tensor(mask, device=device)
    if mask.dtype != torch.bool or mask.shape != (batch, n_actions):
        raise ValueError(f"mask must be a bool tensor of shape ({batch}, {n_actions}), got {mask.dtype} {tuple(mask.shape)}")
    if not bool(mask.any(dim=1).all()):
        raise ValueError("mask must allow at least one action in every row")
    return mask


def check_obs(obs, obs_size: int, device) -> torch.Tensor:
    obs = torch.as_tensor(obs, dtype=torch.float32, device=device)
    if obs.ndim != 2 or obs.shape[1] != obs_size:
        raise ValueError(f"obs must have shape (batch, {obs_size}), got {tuple(obs.shape)}")
    return obs


def sample_actions(logits, generator, deterministic: bool = False):
    """Draw one action per row from ``softmax(logits)`` (or its argmax); returns ``(action, log_prob)``."""
    log_probs = torch.log_softmax(logits, dim=-1)
    if deterministic:
        action = logits.argmax(dim=-1)
    else:
        action = torch.multinomial(log_probs.exp(), 1, generator=generator).squeeze(-1)
    return action, log_probs.gather(-1, action[:, None]).squeeze(-1)
