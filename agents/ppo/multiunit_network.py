"""The multi-unit actor-critic of a SMAC side (``multiunit.py``'s learner and frozen policy, and the
population stack ``multiunit_stack.py``): its spec, bodies, input construction and the shared acting
rule with its input checks (MAPPO/IPPO style, Yu et al. 2022).

One actor network is shared by every unit of a side; a unit's input is its own observation with its
one-hot agent id and the one-hot of its own last action appended (``agent_id``/``last_action``):

    x_i = [o_i, onehot(i), onehot(a_i^{t-1})]            (a^{-1} = zeros at an episode start)

The critic is a separate network of the same body type. Its input is either ``x_i`` (decentralised,
IPPO) or, with ``centralized_value=True``, the side's global state with the agent id (MAPPO):
``[s, onehot(i)]``. Both give one value per unit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from selfplay.utils.seeding import keeps_global_rng

from .config import MultiUnitPPOConfig
from .network import MASKED_LOGIT, MLPBody

BODIES = MultiUnitPPOConfig.BODIES


# ---------------------------------------------------------------------------------------- network spec

@dataclass(frozen=True)
class MultiUnitSpec:
    """What a saved multi-unit policy needs to rebuild its network."""

    obs_size: int
    n_agents: int
    n_actions: int
    body: str = "mlp"
    hidden_size: int = 64
    agent_id: bool = True
    last_action: bool = True
    state_size: int | None = None  # set: the critic reads the global state (centralised value)

    def __post_init__(self):
        for name in ("obs_size", "n_agents", "n_actions", "hidden_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.state_size is not None and (not isinstance(self.state_size, int) or isinstance(self.state_size, bool)
                                            or self.state_size < 1):
            raise ValueError(f"state_size must be None or an integer >= 1, got {self.state_size!r}")
        if self.body not in BODIES:
            raise ValueError(f"body must be one of {BODIES}, got {self.body!r}")

    @property
    def actor_input_size(self) -> int:
        return self.obs_size + self.n_agents * self.agent_id + self.n_actions * self.last_action

    @property
    def critic_input_size(self) -> int:
        return self.actor_input_size if self.state_size is None else self.state_size + self.n_agents

    @property
    def n_rnn(self) -> int:
        """Tensors in one body's recurrent state: 0 (MLP), 1 (GRU: h) or 2 (LSTM: h, c)."""
        return {"mlp": 0, "gru": 1, "lstm": 2}[self.body]

    def to_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------- network

class SharedBody(nn.Module):
    """An MLP (``agents.ppo.network.MLPBody``), GRU or LSTM body over a flat batch of units.

    Recurrent state: a tuple of ``(N, hidden)`` tensors, zeroed where ``start`` is true:
    ``h ← h · (1 − start)`` (and ``c`` likewise) before the step.
    """

    def __init__(self, kind: str, input_size: int, hidden_size: int):
        super().__init__()
        self.kind, self.hidden_size = kind, hidden_size
        if kind == "mlp":
            self.net = MLPBody(input_size, hidden_size)
        else:
            self.net = (nn.GRU if kind == "gru" else nn.LSTM)(input_size, hidden_size)

    def reset_parameters(self, generator: torch.Generator) -> None:
        if self.kind == "mlp":
            self.net.reset_parameters(generator)
            return
        for name, param in self.net.named_parameters():
            if name.startswith("weight"):
                nn.init.orthogonal_(param, gain=1.0, generator=generator)
            else:
                nn.init.zeros_(param)

    def _reset(self, state: tuple, start) -> tuple:
        keep = (~start).to(state[0].dtype)[:, None]
        return tuple(s * keep for s in state)

    def _call(self, x, state: tuple):
        """Run the recurrent layer on ``x`` ``(L, N, D)`` from ``state``; ``(out, new_state)``."""
        if self.kind == "gru":
            out, h = self.net(x, state[0][None].contiguous())
            return out, (h[0],)
        out, (h, c) = self.net(x, (state[0][None].contiguous(), state[1][None].contiguous()))
        return out, (h[0], c[0])

    def step(self, x, state: tuple, start):
        """One step for ``x`` ``(N, D)``; returns ``(features (N, H), new_state)``."""
        if self.kind == "mlp":
            return self.net(x), ()
        out, state = self._call(x[None], self._reset(state, start))
        return out[0], state

    def unroll(self, x, state: tuple, starts):
        """``x`` ``(L, N, D)``, ``starts`` ``(L, N)`` -> features ``(L, N, H)``.

        The sequence is cut where any row starts an episode; each piece is one fused recurrent call
        from the state reset at its first step.
        """
        if self.kind == "mlp":
            return self.net(x)
        cuts = [0] + (starts[1:].any(dim=1).nonzero().squeeze(1) + 1).tolist() + [x.shape[0]]
        pieces = []
        for a, b in zip(cuts[:-1], cuts[1:]):
            out, state = self._call(x[a:b], self._reset(state, starts[a]))
            pieces.append(out)
        return torch.cat(pieces)


class MultiUnitActorCritic(nn.Module):
    """Shared actor (body + policy head) and critic (body + value head) for every unit of a side.

    Initialisation (CleanRL): orthogonal weights (√2 in MLP bodies, 1 in recurrent ones), 0.01 for the
    policy head, 1 for the value head, zero biases; every draw from ``generator``.
    """

    @keeps_global_rng
    def __init__(self, spec: MultiUnitSpec, generator: torch.Generator | None = None):
        super().__init__()
        self.spec = spec
        H = spec.hidden_size
        self.actor_body = SharedBody(spec.body, spec.actor_input_size, H)
        self.policy_head = nn.Linear(H, spec.n_actions)
        self.critic_body = SharedBody(spec.body, spec.critic_input_size, H)
        self.value_head = nn.Linear(H, 1)
        if generator is None:
            generator = torch.Generator().manual_seed(0)
        self.actor_body.reset_parameters(generator)
        self.critic_body.reset_parameters(generator)
        nn.init.orthogonal_(self.policy_head.weight, gain=0.01, generator=generator)
        nn.init.orthogonal_(self.value_head.weight, gain=1.0, generator=generator)
        nn.init.zeros_(self.policy_head.bias)
        nn.init.zeros_(self.value_head.bias)
        self.register_buffer("eye_agents", torch.eye(spec.n_agents), persistent=False)

    @property
    def device(self) -> torch.device:
        return self.policy_head.weight.device

    def actor_parameters(self):
        return [*self.actor_body.parameters(), *self.policy_head.parameters()]

    def critic_parameters(self):
        return [*self.critic_body.parameters(), *self.value_head.parameters()]

    def actor_inputs(self, obs, last_action):
        """``[o_i, onehot(i), onehot(a_i^{t-1})]`` per unit: ``(B, U, D)`` -> ``(B, U, actor_input_size)``."""
        parts = [obs]
        B = obs.shape[0]
        if self.spec.agent_id:
            parts.append(self.eye_agents.expand(B, -1, -1))
        if self.spec.last_action:
            parts.append(last_action)
        return torch.cat(parts, dim=-1)

    def critic_inputs(self, actor_inputs, global_state):
        """``x_i`` (decentralised) or ``[s, onehot(i)]`` (centralised) per unit."""
        if self.spec.state_size is None:
            return actor_inputs
        B, U = actor_inputs.shape[:2]
        return torch.cat([global_state[:, None, :].expand(B, U, -1), self.eye_agents.expand(B, -1, -1)], dim=-1)

    def logits(self, features, mask):
        logits = self.policy_head(features)
        return logits if mask is None else logits.masked_fill(~mask, MASKED_LOGIT)


# ---------------------------------------------------------------------------------------- checks

def check_unit_obs(obs, spec: MultiUnitSpec, device) -> torch.Tensor:
    obs = torch.as_tensor(obs, dtype=torch.float32, device=device)
    if obs.ndim != 3 or obs.shape[1:] != (spec.n_agents, spec.obs_size):
        raise ValueError(f"obs must have shape (batch, {spec.n_agents}, {spec.obs_size}), got {tuple(obs.shape)}")
    return obs


def check_unit_mask(mask, batch: int, spec: MultiUnitSpec, device) -> torch.Tensor | None:
    if mask is None:
        return None
    mask = torch.as_tensor(mask, device=device)
    shape = (batch, spec.n_agents, spec.n_actions)
    if mask.dtype != torch.bool or tuple(mask.shape) != shape:
        raise ValueError(f"mask must be a bool tensor of shape {shape}, got {mask.dtype} {tuple(mask.shape)}")
    if not bool(mask.any(dim=-1).all()):
        raise ValueError("mask must allow at least one action for every unit (a dead unit: the no-op 0)")
    return mask


def check_start(episode_start, batch: int, device) -> torch.Tensor:
    if episode_start is None:
        return torch.zeros(batch, dtype=torch.bool, device=device)
    start = torch.as_tensor(episode_start, device=device)
    if tuple(start.shape) != (batch,):
        raise ValueError(f"episode_start must have shape ({batch},), got {tuple(start.shape)}")
    return start.bool()


def check_state(state, expected: tuple) -> tuple:
    """``state`` must be a tuple/list of tensors shaped like ``expected`` (an initial state)."""
    if not isinstance(state, (tuple, list)) or len(state) != len(expected) or any(
            not isinstance(s, torch.Tensor) or s.shape != e.shape for s, e in zip(state, expected)):
        shapes = [tuple(e.shape) for e in expected]
        got = [tuple(s.shape) if isinstance(s, torch.Tensor) else type(s).__name__ for s in state] \
            if isinstance(state, (tuple, list)) else type(state).__name__
        raise ValueError(f"state must be None or a tuple of tensors of shapes {shapes} (from initial_state), got {got}")
    return tuple(s.to(e.device, e.dtype) for s, e in zip(state, expected))


def zero_state(spec: MultiUnitSpec, batch: int, device, critic: bool) -> tuple:
    B, U, H = batch, spec.n_agents, spec.hidden_size
    n = spec.n_rnn * (2 if critic else 1)
    rnn = tuple(torch.zeros(B, U, H, device=device) for _ in range(n))
    return (torch.zeros(B, U, spec.n_actions, device=device),) + rnn


def policy_step(net: MultiUnitActorCritic, obs, last_action, actor_rnn: tuple, mask, generator, deterministic=False):
    """The shared acting rule (learner and frozen policies alike), after the episode-start reset.

    Returns ``(action (B, U), log_prob (B, U), logits (B, U, A), actor_inputs, new actor_rnn)``.
    """
    B, U = obs.shape[:2]
    x = net.actor_inputs(obs, last_action)
    flat_rnn = tuple(h.reshape(B * U, -1) for h in actor_rnn)
    no_start = torch.zeros(B * U, dtype=torch.bool, device=obs.device)
    features, new_rnn = net.actor_body.step(x.reshape(B * U, -1), flat_rnn, no_start)
    logits = net.logits(features.view(B, U, -1), mask)
    log_probs = torch.log_softmax(logits, dim=-1)
    if deterministic:
        action = logits.argmax(dim=-1)
    else:
        action = torch.multinomial(log_probs.exp().view(B * U, -1), 1, generator=generator).view(B, U)
    log_prob = log_probs.gather(-1, action[..., None]).squeeze(-1)
    return action, log_prob, logits, x, tuple(h.view(B, U, -1) for h in new_rnn)


def reset_state(state: tuple, start) -> tuple:
    keep = (~start).to(state[0].dtype)
    return tuple(s * keep.view(-1, *([1] * (s.dim() - 1))) for s in state)
