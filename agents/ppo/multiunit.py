"""Parameter-shared multi-unit PPO for SMAC sides (issue 6; MAPPO/IPPO style, Yu et al. 2022).

One actor network is shared by every unit of a side; a unit's input is its own observation with its
one-hot agent id and the one-hot of its own last action appended (``agent_id``/``last_action``):

    x_i = [o_i, onehot(i), onehot(a_i^{t-1})]            (a^{-1} = zeros at an episode start)

The critic is a separate network of the same body type. Its input is either ``x_i`` (decentralised,
IPPO) or, with ``centralized_value=True``, the side's global state with the agent id (MAPPO):
``[s, onehot(i)]``. Both give one value per unit; the team reward ``r_t`` is shared by all units.

Acting, for a batch of ``B`` games of ``U`` units: ``act(obs (B, U, D), state, mask (B, U, A),
episode_start (B,)) -> (actions (B, U), state, info)``. Illegal actions get probability 0; a dead unit
(mask allows only the no-op 0) therefore plays the no-op. The recurrent state is a tuple of tensors
with the game batch first (so the self-play loop can index and assign it by game):

    frozen policy:  (last_action (B, U, A), *actor_rnn (B, U, H))
    learner:        (last_action (B, U, A), *actor_rnn (B, U, H), *critic_rnn (B, U, H))

``actor_rnn`` is empty for ``body="mlp"``, ``(h,)`` for ``"gru"`` and ``(h, c)`` for ``"lstm"``. Where
``episode_start`` is true the whole state is zeroed *before* acting.

Learning (``update()``, once ``horizon`` game-steps are stored; the step after the rollout supplies the
bootstrap value and becomes the first step of the next rollout, as in ``agents/ppo/learner.py``):

    per unit i:  A^i = GAE(γ, λ) of (r_t, V^i_t, done_t)        returns R^i = A^i + V^i_old
    A standardised over the active units of the rollout (active: more than the no-op available)
    for each of ``epochs`` epochs, for each of ``num_minibatches`` shuffled minibatches of game-steps
    (recurrent bodies: of ``bptt_length``-step sequences, replayed from the state stored at their start):
        ratio   = exp(log π(a_i|x_i) − log π_old(a_i|x_i))
        L_clip  = mean over active units of max(−A·ratio, −A·clip(ratio, 1 − ε, 1 + ε))
        L_value = ½ · mean over all units of (V^i − R^i)²     (dead units still predict the team return)
        loss    = L_clip + c_v · L_value − c_e · mean over active units of entropy
        Adam step after clipping the actor's and the critic's gradient norms separately
        to ``max_grad_norm`` (so the value scale never shrinks the policy step)

Dead units' transitions carry no policy gradient (their only action is forced), as MAPPO's active masks.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from selfplay.agents.ppo.checkpoint import read_policy_file, write_policy_file
from selfplay.agents.ppo.gae import compute_gae
from selfplay.agents.ppo.learner_base import PPOLearnerBase
from selfplay.agents.ppo.network import MASKED_LOGIT, MLPBody

BODIES = ("mlp", "gru", "lstm")


# ---------------------------------------------------------------------------------------- settings

@dataclass
class MultiUnitPPOConfig:
    """Hyper-parameters of the multi-unit learner (defaults after MAPPO's SMAC settings).

    ``horizon``: game-steps per update over all games (each game-step holds every unit of the side);
    with ``B`` games a rollout is ``ceil(horizon / B)`` steps per game, rounded up to a multiple of
    ``bptt_length`` for recurrent bodies. ``num_minibatches``: minibatches per epoch (MAPPO uses 1 on
    SMAC). ``body``: ``"mlp"`` (two tanh layers), ``"gru"`` or ``"lstm"`` (one recurrent layer), all of
    ``hidden_size``. ``bptt_length``: recurrent bodies only, the truncated-BPTT sequence length
    (``None``: each game's whole rollout segment is one sequence). ``agent_id`` / ``last_action``: append
    those one-hots to each unit's observation. ``centralized_value``: the critic reads the global state
    (then ``act`` needs ``global_state=``).
    """

    horizon: int = 3200
    learning_rate: float = 5e-4
    adam_eps: float = 1e-5
    epochs: int = 10
    num_minibatches: int = 1
    gamma: float = 0.99
    gae_lambda: float = 0.95
    entropy_coef: float = 0.01
    value_coef: float = 1.0
    clip_coef: float = 0.2
    max_grad_norm: float = 10.0
    normalize_advantages: bool = True
    body: str = "mlp"
    hidden_size: int = 64
    bptt_length: int | None = 10
    agent_id: bool = True
    last_action: bool = True
    centralized_value: bool = False

    def __post_init__(self):
        for name in ("horizon", "epochs", "num_minibatches", "hidden_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.bptt_length is not None and (not isinstance(self.bptt_length, int) or isinstance(self.bptt_length, bool)
                                             or self.bptt_length < 1):
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
        for name in ("normalize_advantages", "agent_id", "last_action", "centralized_value"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")

    def to_dict(self) -> dict:
        return asdict(self)


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

def _check_obs(obs, spec: MultiUnitSpec, device) -> torch.Tensor:
    obs = torch.as_tensor(obs, dtype=torch.float32, device=device)
    if obs.ndim != 3 or obs.shape[1:] != (spec.n_agents, spec.obs_size):
        raise ValueError(f"obs must have shape (batch, {spec.n_agents}, {spec.obs_size}), got {tuple(obs.shape)}")
    return obs


def _check_mask(mask, batch: int, spec: MultiUnitSpec, device) -> torch.Tensor | None:
    if mask is None:
        return None
    mask = torch.as_tensor(mask, device=device)
    shape = (batch, spec.n_agents, spec.n_actions)
    if mask.dtype != torch.bool or tuple(mask.shape) != shape:
        raise ValueError(f"mask must be a bool tensor of shape {shape}, got {mask.dtype} {tuple(mask.shape)}")
    if not bool(mask.any(dim=-1).all()):
        raise ValueError("mask must allow at least one action for every unit (a dead unit: the no-op 0)")
    return mask


def _check_start(episode_start, batch: int, device) -> torch.Tensor:
    if episode_start is None:
        return torch.zeros(batch, dtype=torch.bool, device=device)
    start = torch.as_tensor(episode_start, device=device)
    if tuple(start.shape) != (batch,):
        raise ValueError(f"episode_start must have shape ({batch},), got {tuple(start.shape)}")
    return start.bool()


def _check_state(state, expected: tuple) -> tuple:
    """``state`` must be a tuple/list of tensors shaped like ``expected`` (an initial state)."""
    if not isinstance(state, (tuple, list)) or len(state) != len(expected) or any(
            not isinstance(s, torch.Tensor) or s.shape != e.shape for s, e in zip(state, expected)):
        shapes = [tuple(e.shape) for e in expected]
        got = [tuple(s.shape) if isinstance(s, torch.Tensor) else type(s).__name__ for s in state] \
            if isinstance(state, (tuple, list)) else type(state).__name__
        raise ValueError(f"state must be None or a tuple of tensors of shapes {shapes} (from initial_state), got {got}")
    return tuple(s.to(e.device, e.dtype) for s, e in zip(state, expected))


def _initial_state(spec: MultiUnitSpec, batch: int, device, critic: bool) -> tuple:
    B, U, H = batch, spec.n_agents, spec.hidden_size
    n = spec.n_rnn * (2 if critic else 1)
    rnn = tuple(torch.zeros(B, U, H, device=device) for _ in range(n))
    return (torch.zeros(B, U, spec.n_actions, device=device),) + rnn


def _policy_step(net: MultiUnitActorCritic, obs, last_action, actor_rnn: tuple, mask, generator, deterministic=False):
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


def _reset_state(state: tuple, start) -> tuple:
    keep = (~start).to(state[0].dtype)
    return tuple(s * keep.view(-1, *([1] * (s.dim() - 1))) for s in state)


# ---------------------------------------------------------------------------------------- frozen policy

class MultiUnitFrozenPolicy:
    """A side's shared policy with fixed weights: batched ``act`` for ``(B, U)`` units.

    ``network`` must not change afterwards (the learner hands over a private copy). The critic's weights
    travel along (for ``restore``) but acting uses the actor only, so ``global_state`` is never needed.
    Sampling uses the policy's own generator seeded with ``seed``; ``act(..., generator=g)`` uses ``g``.
    """

    def __init__(self, network: MultiUnitActorCritic, weight_version: int = 0, seed: int = 0):
        self.network = network.eval().requires_grad_(False)
        self.spec = network.spec
        self.weight_version = int(weight_version)
        self.seed = int(seed)
        self.device = network.device
        self.generator = torch.Generator(device=self.device).manual_seed(self.seed)

    @property
    def recurrent(self) -> bool:
        return self.spec.body != "mlp"

    def initial_state(self, batch: int) -> tuple:
        """``(last_action (B, U, A), *actor_rnn (B, U, H))``, all zeros."""
        return _initial_state(self.spec, batch, self.device, critic=False)

    @torch.no_grad()
    def act(self, obs, state=None, mask=None, episode_start=None, *, deterministic=False, generator=None,
            global_state=None):
        """``(action (B, U), state, info)``; ``info`` has ``log_prob`` ``(B, U)`` and ``logits``.

        ``global_state`` is accepted (and ignored) so callers can treat learner and snapshots alike.
        """
        obs = _check_obs(obs, self.spec, self.device)
        B = obs.shape[0]
        mask = _check_mask(mask, B, self.spec, self.device)
        start = _check_start(episode_start, B, self.device)
        expected = self.initial_state(B)
        state = expected if state is None else _reset_state(_check_state(state, expected), start)
        action, log_prob, logits, _, rnn = _policy_step(self.network, obs, state[0], state[1:], mask,
                                                        generator or self.generator, deterministic)
        last = nn.functional.one_hot(action, self.spec.n_actions).float()
        return action, (last, *rnn), {"log_prob": log_prob, "logits": logits}

    def __repr__(self) -> str:
        return (f"MultiUnitFrozenPolicy(body={self.spec.body!r}, n_agents={self.spec.n_agents}, "
                f"weight_version={self.weight_version}, seed={self.seed})")


# ---------------------------------------------------------------------------------------- rollout storage

class MultiUnitRolloutBuffer:
    """``rollout_length + 1`` time-major rows of ``B`` games × ``U`` units (row ``T``: the bootstrap step).

    Row ``t``: the actor and critic inputs, mask, episode-start flag, recurrent states (after the
    episode-start reset), actions, log-probabilities and values of step ``t``, then its team reward and
    done flag. ``carry_over`` makes the bootstrap row row 0 of the next rollout.
    """

    FIELDS = ("actor_in", "critic_in", "masks", "starts", "actions", "log_probs", "values", "rewards", "dones")

    def __init__(self, num_envs: int, rollout_length: int, spec: MultiUnitSpec, device):
        self.num_envs, self.rollout_length = num_envs, rollout_length
        R, B, U, A = rollout_length + 1, num_envs, spec.n_agents, spec.n_actions
        self.actor_in = torch.zeros(R, B, U, spec.actor_input_size, device=device)
        self.critic_in = torch.zeros(R, B, U, spec.critic_input_size, device=device)
        self.masks = torch.ones(R, B, U, A, dtype=torch.bool, device=device)
        self.starts = torch.zeros(R, B, dtype=torch.bool, device=device)
        self.actions = torch.zeros(R, B, U, dtype=torch.long, device=device)
        self.log_probs = torch.zeros(R, B, U, device=device)
        self.values = torch.zeros(R, B, U, device=device)
        self.rewards = torch.zeros(R, B, device=device)
        self.dones = torch.zeros(R, B, dtype=torch.bool, device=device)
        self.rnn = tuple(torch.zeros(R, B, U, spec.hidden_size, device=device) for _ in range(2 * spec.n_rnn))
        self.filled, self.pending = 0, False

    @property
    def full(self) -> bool:
        return self.filled == self.rollout_length + 1

    def store_action(self, **row) -> None:
        t = self.filled
        for name, value in row.items():
            if name == "rnn":
                for buf, v in zip(self.rnn, value):
                    buf[t] = v
            elif name == "masks" and value is None:
                self.masks[t] = True
            else:
                getattr(self, name)[t] = value
        self.pending = True

    def store_outcome(self, reward, done) -> None:
        self.rewards[self.filled], self.dones[self.filled] = reward, done
        self.filled += 1
        self.pending = False

    def carry_over(self) -> None:
        last = self.rollout_length
        for tensor in [getattr(self, name) for name in self.FIELDS] + list(self.rnn):
            tensor[0] = tensor[last]
        self.filled = 1

    def state_dict(self) -> dict:
        state = {name: getattr(self, name).clone() for name in self.FIELDS}
        state.update(rnn=tuple(r.clone() for r in self.rnn), num_envs=self.num_envs,
                     rollout_length=self.rollout_length, filled=self.filled, pending=self.pending)
        return state

    def load_state_dict(self, state: dict) -> None:
        for name in self.FIELDS:
            getattr(self, name).copy_(state[name])
        for mine, saved in zip(self.rnn, state["rnn"]):
            mine.copy_(saved)
        self.filled, self.pending = int(state["filled"]), bool(state["pending"])


# ---------------------------------------------------------------------------------------- learner

class MultiUnitPPOLearner(PPOLearnerBase):
    """Parameter-shared PPO for one side of ``B`` SMAC games of ``n_agents`` units (module docstring).

    ``state_size``: the side's global-state size; required when ``config.centralized_value`` (then every
    ``act`` takes ``global_state=`` ``(B, state_size)``, e.g. ``SMACBattle.get_state()[seat]``).
    """

    frozen_class = MultiUnitFrozenPolicy


    def __init__(self, obs_size: int, n_agents: int, n_actions: int, config: MultiUnitPPOConfig | None = None,
                 seed: int = 0, device="cpu", state_size: int | None = None):
        self.config = config if config is not None else MultiUnitPPOConfig()
        if not isinstance(self.config, MultiUnitPPOConfig):
            raise ValueError(f"config must be a MultiUnitPPOConfig, got {type(config).__name__}")
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        if self.config.centralized_value and state_size is None:
            raise ValueError("state_size must be given (the global state's size) when config.centralized_value is True")
        cfg = self.config
        self.spec = MultiUnitSpec(obs_size, n_agents, n_actions, cfg.body, cfg.hidden_size, cfg.agent_id,
                                  cfg.last_action, state_size if cfg.centralized_value else None)
        self.seed = seed
        self.device = torch.device(device)
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self.network = MultiUnitActorCritic(self.spec, torch.Generator().manual_seed(seed)).to(self.device)
        self.optimizer = self._new_optimizer()
        self.weight_version = 0
        self.buffer: MultiUnitRolloutBuffer | None = None
        self._snapshot: MultiUnitFrozenPolicy | None = None

    @classmethod
    def for_battle(cls, battle, seat: int = 0, config: MultiUnitPPOConfig | None = None, seed: int = 0,
                   device=None) -> "MultiUnitPPOLearner":
        """A learner sized for ``seat`` of a ``SMACBattle`` (observation, units, actions, global state)."""
        if seat not in range(battle.n_seats):
            raise ValueError(f"seat must be one of {list(range(battle.n_seats))} for this battle, got {seat!r}")
        return cls(battle.obs_size[seat], battle.n_agents[seat], battle.n_actions[seat], config, seed,
                   battle.device if device is None else device, state_size=battle.state_size[seat])

    @property
    def recurrent(self) -> bool:
        return self.spec.body != "mlp"

    @property
    def uses_global_state(self) -> bool:
        """Whether ``act`` needs ``global_state=`` (centralised value)."""
        return self.spec.state_size is not None

    def initial_state(self, batch: int) -> tuple:
        """``(last_action (B, U, A), *actor_rnn, *critic_rnn)``, all zeros."""
        return _initial_state(self.spec, batch, self.device, critic=True)

    # ------------------------------------------------------------------ acting and recording

    @torch.no_grad()
    def act(self, obs, state=None, mask=None, episode_start=None, *, global_state=None):
        """Sample every unit's action in every game and store the step: ``(action (B, U), state, info)``."""
        spec, net = self.spec, self.network
        obs = _check_obs(obs, spec, self.device)
        B, U = obs.shape[:2]
        mask = _check_mask(mask, B, spec, self.device)
        start = _check_start(episode_start, B, self.device)
        if self.uses_global_state:
            if global_state is None:
                raise ValueError("global_state must be given (B, state_size): this learner has a centralised value")
            global_state = torch.as_tensor(global_state, dtype=torch.float32, device=self.device)
            if tuple(global_state.shape) != (B, spec.state_size):
                raise ValueError(f"global_state must have shape ({B}, {spec.state_size}), "
                                 f"got {tuple(global_state.shape)}")
        self._ensure_buffer(B)
        if self.buffer.pending:
            raise RuntimeError("record(reward, done) must follow every act() of a learner")
        if self.buffer.full:
            raise RuntimeError("the rollout is full: call update() before acting again")
        expected = self.initial_state(B)
        state = expected if state is None else _reset_state(_check_state(state, expected), start)
        n = spec.n_rnn
        actor_rnn, critic_rnn = state[1:1 + n], state[1 + n:]

        action, log_prob, logits, x, new_actor_rnn = _policy_step(net, obs, state[0], actor_rnn, mask, self.generator)
        c = net.critic_inputs(x, global_state)
        no_start = torch.zeros(B * U, dtype=torch.bool, device=self.device)
        features, new_critic_rnn = net.critic_body.step(c.reshape(B * U, -1),
                                                        tuple(h.reshape(B * U, -1) for h in critic_rnn),
                                                        no_start)
        value = net.value_head(features).view(B, U)
        self.buffer.store_action(actor_in=x, critic_in=c, masks=mask, starts=start, actions=action, log_probs=log_prob,
                                 values=value, rnn=actor_rnn + critic_rnn)
        last = nn.functional.one_hot(action, spec.n_actions).float()
        new_state = (last, *new_actor_rnn, *(h.view(B, U, -1) for h in new_critic_rnn))
        return action, new_state, {"log_prob": log_prob, "value": value, "logits": logits}

    # ------------------------------------------------------------------ learning

    def update(self) -> dict:
        """One PPO update on the full rollout (module docstring); bumps ``weight_version``."""
        if not self.ready():
            raise RuntimeError("update() needs a full rollout: call it when ready() is true")
        cfg, buf, net = self.config, self.buffer, self.network
        T, B, U = buf.rollout_length, buf.num_envs, self.spec.n_agents

        # Per-unit GAE on the shared team reward: the (T, B, U) rollout as (T, B·U) independent chains.
        rewards = buf.rewards[:T, :, None].expand(T, B, U).reshape(T, B * U)
        dones = buf.dones[:T, :, None].expand(T, B, U).reshape(T, B * U)
        advantages, returns = compute_gae(rewards, buf.values[:T].reshape(T, B * U), dones,
                                          buf.values[T].reshape(B * U), cfg.gamma, cfg.gae_lambda)
        advantages, returns = advantages.view(T, B, U), returns.view(T, B, U)
        active = buf.masks[:T, ..., 1:].any(-1)  # alive units: more than the no-op available
        if cfg.normalize_advantages and bool(active.any()):
            adv_active = advantages[active]
            advantages = (advantages - adv_active.mean()) / (adv_active.std(unbiased=False) + 1e-8)

        stats = []
        for _ in range(cfg.epochs):
            for idx, logits, values in self._minibatches(T, B):
                log_probs = torch.log_softmax(logits, dim=-1)
                new_log_prob = log_probs.gather(-1, buf.actions[:T][idx][..., None]).squeeze(-1)
                entropy = -(log_probs.exp() * log_probs).sum(-1)
                weight = active[idx].float()
                n_active = weight.sum().clamp(min=1.0)
                adv = advantages[idx]
                log_ratio = new_log_prob - buf.log_probs[:T][idx]
                ratio = log_ratio.exp()
                policy_loss = (torch.max(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef))
                               * weight).sum() / n_active
                value_loss = 0.5 * ((values - returns[idx]) ** 2).mean()
                mean_entropy = (entropy * weight).sum() / n_active
                loss = policy_loss + cfg.value_coef * value_loss - cfg.entropy_coef * mean_entropy
                self.optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.actor_parameters(), cfg.max_grad_norm)
                torch.nn.utils.clip_grad_norm_(net.critic_parameters(), cfg.max_grad_norm)
                self.optimizer.step()
                with torch.no_grad():
                    stats.append({
                        "policy_loss": policy_loss.detach(), "value_loss": value_loss.detach(),
                        "entropy": mean_entropy.detach(),
                        "approx_kl": (((ratio - 1) - log_ratio) * weight).sum() / n_active,
                        "clip_fraction": (((ratio - 1).abs() > cfg.clip_coef).float() * weight).sum() / n_active,
                    })

        metrics = {name: torch.stack([s[name] for s in stats]).mean().item() for name in stats[0]}
        y, v = returns.flatten(), buf.values[:T].flatten()
        metrics.update(explained_variance=(1.0 - ((y - v).var() / y.var()).item()) if y.var() > 0 else float("nan"),
                       mean_reward=buf.rewards[:T].mean().item(), active_fraction=active.float().mean().item(),
                       transitions=T * B)
        self.weight_version += 1
        metrics["weight_version"] = self.weight_version
        buf.carry_over()
        self._refresh_carried_value()
        return metrics

    def _minibatches(self, T: int, B: int):
        """Yield ``(idx, logits, values)`` per shuffled minibatch; ``idx`` indexes ``(T, B, ...)`` tensors.

        MLP: ``idx`` is a pair of flat (time, game) index tensors (each game-step with all its units).
        Recurrent: ``idx`` is a pair of ``(L, n_seq)`` index tensors of whole sequences, each replayed from
        the recurrent states stored at its first step (actor and critic alike).
        """
        cfg, buf, net, U = self.config, self.buffer, self.network, self.spec.n_agents
        if not self.recurrent:
            order = torch.randperm(T * B, generator=self.generator, device=self.device)
            size = math.ceil(T * B / cfg.num_minibatches)
            for start in range(0, T * B, size):
                flat = order[start:start + size]
                idx = (flat // B, flat % B)
                logits = net.logits(net.actor_body.unroll(buf.actor_in[idx], (), None), buf.masks[idx])
                values = net.value_head(net.critic_body.unroll(buf.critic_in[idx], (), None)).squeeze(-1)
                yield idx, logits, values
            return
        L = T if cfg.bptt_length is None else cfg.bptt_length
        n_seq = (T // L) * B
        order = torch.randperm(n_seq, generator=self.generator, device=self.device)
        size = math.ceil(n_seq / cfg.num_minibatches)
        steps = torch.arange(L, device=self.device)[:, None]
        n = self.spec.n_rnn
        for start in range(0, n_seq, size):
            seq = order[start:start + size]
            t0, game = (seq // B) * L, seq % B
            idx = (t0[None, :] + steps, game[None, :].expand(L, -1))
            S = seq.shape[0]
            starts = buf.starts[idx][..., None].expand(L, S, U).reshape(L, S * U)
            rnn0 = tuple(h[t0, game].reshape(S * U, -1) for h in buf.rnn)
            actor_f = net.actor_body.unroll(buf.actor_in[idx].reshape(L, S * U, -1), rnn0[:n], starts)
            critic_f = net.critic_body.unroll(buf.critic_in[idx].reshape(L, S * U, -1), rnn0[n:], starts)
            logits = net.logits(actor_f.view(L, S, U, -1), buf.masks[idx])
            values = net.value_head(critic_f).view(L, S, U)
            yield idx, logits, values

    @torch.no_grad()
    def _refresh_carried_value(self) -> None:
        """Re-evaluate the carried-over step's values with the updated critic (its actions stay as taken)."""
        buf, net = self.buffer, self.network
        B, U, n = buf.num_envs, self.spec.n_agents, self.spec.n_rnn
        critic_rnn = tuple(h[0].reshape(B * U, -1) for h in buf.rnn[n:])
        no_start = torch.zeros(B * U, dtype=torch.bool, device=self.device)
        features, _ = net.critic_body.step(buf.critic_in[0].reshape(B * U, -1), critic_rnn, no_start)
        buf.values[0] = net.value_head(features).view(B, U)

    # ------------------------------------------------------------------ snapshots and persistence

    # ------------------------------------------------------------------ internals

    def _new_optimizer(self) -> torch.optim.Adam:
        return torch.optim.Adam(self.network.parameters(), lr=self.config.learning_rate, eps=self.config.adam_eps)

    def _new_buffer(self, batch: int, rollout_length: int) -> "MultiUnitRolloutBuffer":
        return MultiUnitRolloutBuffer(batch, rollout_length, self.spec, self.device)


# ---------------------------------------------------------------------------------------- checkpoints

FORMAT = "selfplay.ppo.multiunit.policy"
FORMAT_VERSION = 1


def save_policy(frozen: MultiUnitFrozenPolicy, path) -> Path:
    """Write ``frozen`` (spec, weights, version, seed) to ``path`` atomically; returns the path."""
    if not isinstance(frozen, MultiUnitFrozenPolicy):
        raise ValueError(f"frozen must be a MultiUnitFrozenPolicy, got {type(frozen).__name__}")
    return write_policy_file(path, FORMAT, frozen, FORMAT_VERSION)


def load_policy(path, device="cpu") -> MultiUnitFrozenPolicy:
    """Read a policy written by ``save_policy``."""
    payload = read_policy_file(path, FORMAT, device, FORMAT_VERSION)
    network = MultiUnitActorCritic(MultiUnitSpec(**payload["spec"])).to(device)
    network.load_state_dict(payload["weights"])
    return MultiUnitFrozenPolicy(network, payload["weight_version"], payload["seed"])
