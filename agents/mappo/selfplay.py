"""MAPPO as a self-play learner: the trainer's learner and frozen-policy interface (docs/design/mappo.md).

The trainer (``selfplay.training.games.GameRunner``) drives a learner through
``initial_state(B)``, ``act(obs, state, mask, episode_start, global_state=...) -> (action, state, info)``,
``record(reward, done)``, ``ready()``, ``update() -> metrics``, ``snapshot()``, ``restore(frozen)``,
``weight_version`` and ``state_dict``/``load_state_dict``; the opponents drawn from the menagerie are
frozen policies ``initial_state(B)`` / ``act(obs, state, mask, episode_start) -> (action, state, info)``.
``MAPPOSelfPlayLearner`` fits ``MAPPOLearner`` to it:

- the learner keeps its games' recurrent states itself, so the trainer's learner state is ``()``;
- the critic reads the agent-specific state (``critic_input="AS"``: ``critic_state == "special"``, the
  runner passes ``env.get_special_state()``) or the environment's state (``"EP"``: ``get_state()``);
- MAPPO's update bootstraps from the step after the rollout: once the rollout is full the runner hands
  that step's critic state, masks and starts to ``bootstrap(...)``, and only then is ``ready()`` true.

``MAPPOFrozenPolicy`` is a snapshot of the actor (the critic's weights travel along for ``restore``); its
state ``(h (B, U, H), last action (B, U, A))`` has the game batch first, so the trainer indexes it by game.
It samples its actions (self-play opponents are stochastic, as the multi-unit PPO's snapshots);
``deterministic=True`` gives the greedy action.  Policy files (``save_policy``/``load_policy``) hold the
sizes, the acting settings (``MAPPOSpec``; numbers and strings only) and the weights; loading runs no code.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from selfplay.agents.ppo.checkpoint import read_policy_file, write_policy_file
from torch import nn

from selfplay.utils.seeding import Stream, derive_seed

from .config import ACTING_SETTINGS, MAPPOConfig, mappo_config
from .learner import MAPPOLearner, enemy_obs_layout
from .network import MAPPONetwork, actor_inputs, head_logits, masked_logits

FORMAT = "selfplay.mappo.policy"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class MAPPOSpec:
    """What a frozen MAPPO policy is: one seat's sizes and the settings its network and acting depend on
    (``config.ACTING_SETTINGS``; training settings such as the epochs or the magnet are the learner's, not the
    policy's, so policies of runs that differ only in them stack and restore into one another)."""

    obs_size: int
    state_size: int
    n_agents: int
    n_actions: int
    config: tuple  # the ACTING_SETTINGS items of MAPPOConfig.to_dict(), sorted (hashable: populations are checked by spec)
    enemy_obs: tuple | None = None  # (offset, n_enemies, feats) of the observation's enemy blocks: attack_head "entity"

    @classmethod
    def make(cls, obs_size: int, state_size: int, n_agents: int, n_actions: int, config: dict,
             enemy_obs=None) -> MAPPOSpec:
        """``config``: a ``MAPPOConfig.to_dict()`` (or a policy file's settings, whole or acting ones only);
        ``enemy_obs`` is kept only where the settings' ``attack_head`` reads it (``"entity"``)."""
        settings = mappo_config(**config)  # a file written before a setting existed gets its default
        layout = tuple(int(v) for v in enemy_obs) if settings.attack_head == "entity" and enemy_obs else None
        return cls(int(obs_size), int(state_size), int(n_agents), int(n_actions),
                   acting_settings(settings), layout)

    def to_dict(self) -> dict:
        return {**asdict(self), "config": dict(self.config)}

    def settings(self) -> MAPPOConfig:
        """The acting settings, every training setting at its default: enough to build the network."""
        return mappo_config(**dict(self.config))


def acting_settings(config: MAPPOConfig) -> tuple:
    """``config``'s ``ACTING_SETTINGS`` as sorted ``(name, value)`` pairs: ``MAPPOSpec.config``."""
    return tuple(sorted((name, getattr(config, name)) for name in ACTING_SETTINGS))


def _actor_step_inputs(policy, obs, state, episode_start) -> tuple:
    """``(start (B,), h, x)`` of one acting step of a frozen policy or a stack: games starting an episode
    (all when ``episode_start`` is None) get a zero hidden state and no last action; ``x`` the
    actor's inputs (``network.actor_inputs``)."""
    B = obs.shape[0]
    start = torch.ones(B, dtype=torch.bool) if episode_start is None else torch.as_tensor(episode_start,
                                                                                          dtype=torch.bool)
    h, last = policy.initial_state(B) if state is None else state
    keep = (~start)[:, None, None].float()
    h, last = h * keep, last * keep
    return start, h, actor_inputs(obs, last, policy.config.agent_id, policy.config.last_action)


class MAPPOFrozenPolicy:
    """A side's MAPPO actor with fixed weights, acting for ``(B, U)`` agents (module docstring)."""

    recurrent = True

    def __init__(self, network: MAPPONetwork, spec: MAPPOSpec, weight_version: int = 0, seed: int = 0):
        self.network = network.eval().requires_grad_(False)
        self.spec, self.config = spec, spec.settings()
        self.weight_version, self.seed = int(weight_version), int(seed)
        self.n_agents, self.n_actions = spec.n_agents, spec.n_actions
        self.device = torch.device("cpu")
        self.generator = torch.Generator().manual_seed(self.seed)

    def initial_state(self, batch: int) -> tuple:
        """``(h (B, U, H), last action (B, U, A))``, zeros."""
        H = self.network.sizes["hidden_size"]
        return torch.zeros(batch, self.n_agents, H), torch.zeros(batch, self.n_agents, self.n_actions)

    @torch.no_grad()
    def act(self, obs, state=None, mask=None, episode_start=None, *, deterministic=None, generator=None,
            global_state=None):
        """``(action (B, U), state, info)``; where ``episode_start`` is true the state is zeroed first.
        ``deterministic`` None: greedy when the settings say ``greedy_opponents``, else sampled.
        ``global_state`` is accepted and ignored (acting needs no critic)."""
        if deterministic is None:
            deterministic = self.config.greedy_opponents
        obs = torch.as_tensor(obs, dtype=torch.float32)
        B, U = obs.shape[:2]
        if obs.shape[1:] != (self.n_agents, self.spec.obs_size):
            raise ValueError(f"obs must have shape (batch, {self.n_agents}, {self.spec.obs_size}), "
                             f"got {tuple(obs.shape)}")
        start, h, x = _actor_step_inputs(self, obs, state, episode_start)
        x = x.reshape(B * U, -1)
        f, h = self.network.actor.step(x, h.reshape(B * U, -1), start.repeat_interleave(U))
        logits = masked_logits(self.network.acting_logits(f, x).view(B, U, -1),
                               None if mask is None else torch.as_tensor(mask, dtype=torch.bool))
        if deterministic:
            action = logits.argmax(-1)
        else:
            probs = torch.softmax(logits, -1).view(B * U, -1)
            action = torch.multinomial(probs, 1, generator=generator or self.generator).view(B, U)
        return action, (h.view(B, U, -1), nn.functional.one_hot(action, self.n_actions).float()), {"logits": logits}

    def __repr__(self) -> str:
        return f"MAPPOFrozenPolicy(n_agents={self.n_agents}, weight_version={self.weight_version}, seed={self.seed})"


def battle_spec(battle, seat: int, config: MAPPOConfig) -> MAPPOSpec:
    """The spec of ``seat`` of a SMAC/SMACv2 battle: its critic reads the agent-specific state (AS) or
    the global state (EP)."""
    if seat not in range(battle.n_seats):
        raise ValueError(f"seat must be one of {list(range(battle.n_seats))} for this battle, got {seat!r}")
    state = battle.special_state_size[seat] if config.critic_input == "AS" else battle.state_size[seat]
    return MAPPOSpec.make(battle.obs_size[seat], state, battle.n_agents[seat], battle.n_actions[seat], config.to_dict(),
                          enemy_obs_layout(battle, seat))


class MAPPOSelfPlayLearner:
    """``MAPPOLearner`` behind the trainer's learner interface (module docstring)."""

    uses_global_state = True

    def __init__(self, spec: MAPPOSpec, seed: int = 0, config: MAPPOConfig | None = None):
        """``config``: the learner's settings (default: ``spec``'s acting settings, every training setting at
        the MAPPO paper's default); its acting settings must be ``spec``'s."""
        if config is None:
            config = spec.settings()
        elif acting_settings(config) != spec.config:
            raise ValueError(f"config's acting settings {dict(acting_settings(config))} must be the spec's "
                             f"{dict(spec.config)}")
        if config.open_loop:
            raise ValueError("open_loop applies to training against the built-in AI (--opponent builtin-ai), "
                             "not to self-play")
        self.spec, self.config, self.seed = spec, config, int(seed)
        self.inner = MAPPOLearner(spec.obs_size, spec.state_size, spec.n_agents, spec.n_actions, config, seed,
                                  spec.enemy_obs)
        self.critic_state = "special" if config.critic_input == "AS" else "state"
        self._bootstrap = None
        self._snapshot = None

    @classmethod
    def for_battle(cls, battle, seat: int = 0, config: MAPPOConfig | None = None, seed: int = 0):
        config = MAPPOConfig() if config is None else config
        return cls(battle_spec(battle, seat, config), seed, config)

    @property
    def weight_version(self) -> int:
        return self.inner.weight_version

    def initial_state(self, batch: int) -> tuple:
        """The learner keeps its games' recurrent states: the trainer's copy is empty."""
        return ()

    def act(self, obs, state=None, mask=None, episode_start=None, *, global_state=None):
        if global_state is None:
            raise ValueError("global_state must be given: MAPPO's critic reads the "
                             f"{'agent-specific' if self.critic_state == 'special' else 'global'} state")
        start = torch.as_tensor(episode_start, dtype=torch.bool)
        return self.inner.act(obs, global_state, mask, start), (), {}

    def record(self, reward, done) -> None:
        self.inner.record(reward, done)

    def set_progress(self, progress: float) -> None:
        """The share of the run's budget spent (the trainer's, before each update): ``linear_lr_decay``."""
        self.inner.set_progress(progress)

    def needs_bootstrap(self) -> bool:
        """The rollout is full and waits for the next step's critic inputs."""
        return self.inner.ready() and self._bootstrap is None

    def bootstrap(self, state, mask, start) -> None:
        """The critic state, masks and starts of the step after the rollout (the last value's inputs)."""
        self._bootstrap = (state, mask, torch.as_tensor(start, dtype=torch.bool).clone())

    def ready(self) -> bool:
        return self.inner.ready() and self._bootstrap is not None

    def update(self) -> dict:
        if not self.ready():
            raise RuntimeError("update() needs a full rollout and its bootstrap step")
        metrics = self.inner.update(*self._bootstrap)
        self._bootstrap = None
        return metrics

    def snapshot(self) -> MAPPOFrozenPolicy:
        """A frozen copy of the current weights; the same object while ``weight_version`` is unchanged."""
        if self._snapshot is None or self._snapshot.weight_version != self.weight_version:
            self._snapshot = MAPPOFrozenPolicy(copy.deepcopy(self.inner.network), self.spec, self.weight_version,
                                               derive_seed(self.seed, Stream.SNAPSHOT, self.weight_version))
        return self._snapshot

    def restore(self, frozen) -> None:
        """Take ``frozen``'s weights (exploiter resets): fresh optimisers, empty rollout, new weight version,
        the magnet (``magnet_coef`` > 0) reset to the new weights at the next update (the value normaliser's
        statistics stay)."""
        if getattr(frozen, "spec", None) != self.spec:
            raise ValueError(f"frozen must be a MAPPO policy with the learner's spec {self.spec}, "
                             f"got {getattr(frozen, 'spec', frozen)}")
        inner = self.inner
        inner.network.load_state_dict(frozen.network.state_dict())
        c = self.config
        inner.actor_optimizer = torch.optim.Adam(inner.network.actor_parameters(), lr=c.learning_rate, eps=c.adam_eps)
        inner.critic_optimizer = torch.optim.Adam(inner.network.critic_parameters(), lr=c.critic_learning_rate,
                                                  eps=c.adam_eps)
        inner.buffer, inner.step_index, inner.pending, inner.magnet = None, 0, False, None
        inner.weight_version += 1
        self._bootstrap = self._snapshot = None

    def state_dict(self) -> dict:
        """The learner's state (``MAPPOLearner.state_dict``); the trainer's last commit may fall
        mid-rollout, whose steps a resumed run does not keep (it restarts its games anyway)."""
        return self.inner.state_dict(drop_rollout=True)

    def load_state_dict(self, state: dict) -> None:
        self.inner.load_state_dict(state)
        self._bootstrap = self._snapshot = None


def save_policy(frozen: MAPPOFrozenPolicy, path) -> Path:
    """Write ``frozen`` (spec, weights, version, seed) to ``path`` atomically; returns the path."""
    if not isinstance(frozen, MAPPOFrozenPolicy):
        raise ValueError(f"frozen must be a MAPPOFrozenPolicy, got {type(frozen).__name__}")
    return write_policy_file(path, FORMAT, frozen, FORMAT_VERSION)


def load_policy(path, device="cpu") -> MAPPOFrozenPolicy:
    """Read a policy written by ``save_policy`` (CPU only)."""
    if torch.device(device).type != "cpu":
        raise ValueError(f"device must be 'cpu' for MAPPO policies, got {device!r}")
    payload = read_policy_file(path, FORMAT, "cpu", FORMAT_VERSION)
    spec = MAPPOSpec.make(**payload["spec"])
    network = MAPPOLearner(spec.obs_size, spec.state_size, spec.n_agents, spec.n_actions, spec.settings(),
                           enemy_obs=spec.enemy_obs).network
    network.load_state_dict(payload["weights"])
    return MAPPOFrozenPolicy(network, spec, payload["weight_version"], payload["seed"])


class _Actor(nn.Module):
    """One policy's acting path, written out for ``torch.func.vmap`` (the GRU cell as PyTorch's
    ``GRUCell``, gate order r, z, n):

        z = MLP(LayerNorm(x));  r = σ(W_ir z + b_ir + W_hr h + b_hr);  u = σ(W_iz z + b_iz + W_hz h + b_hz)
        n = tanh(W_in z + b_in + r ⊙ (W_hn h + b_hn));  h' = (1 − u) ⊙ n + u ⊙ h;  logits = head(LayerNorm(h'))

    and without the GRU (``recurrent=False``): ``logits = head(z)``, ``h' = h``; ``head`` is the network's
    ``policy_logits`` (with the attack scorer's scores where it has one)."""

    def __init__(self, network: MAPPONetwork):
        super().__init__()
        self.actor, self.head, self.scorer = network.actor, network.policy_head, network.attack_scorer

    def _head(self, f, x):
        return head_logits(self.head, self.scorer, f, None if self.scorer is None else self.scorer.enemies(x))

    def forward(self, x, h):
        a = self.actor
        z = a.mlp(a.feature_norm(x))
        if not a.recurrent:
            return self._head(z, x), h
        gru = a.gru
        xr, xz, xn = nn.functional.linear(z, gru.weight_ih, gru.bias_ih).chunk(3, -1)
        hr, hz, hn = nn.functional.linear(h, gru.weight_hh, gru.bias_hh).chunk(3, -1)
        r, u = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        h = (1 - u) * torch.tanh(xn + r * hn) + u * h
        return self._head(a.out_norm(h), x), h


class MAPPOPolicyStack:
    """Frozen MAPPO policies (one spec) acting in one computation: ``act(obs, state, policy_index, mask,
    episode_start)`` plays game ``b`` (all its agents) with ``policies[policy_index[b]]``. The games are
    grouped by policy into a padded ``(groups, games_per_group · agents, features)`` layout and the
    actors' stacked weights run once under ``torch.func.vmap`` over the groups present (``_Actor``). The
    state is the frozen policies' ``(h, last action)``, so games can move between a stack and single
    policies."""

    recurrent = True

    def __init__(self, policies, seed: int = 0):
        from selfplay.agents.ppo.stack import check_population
        from torch.func import functional_call, stack_module_state

        self.policies = policies = check_population(policies, MAPPOFrozenPolicy)
        self.spec, self.config = policies[0].spec, policies[0].config
        self.n_agents, self.n_actions = self.spec.n_agents, self.spec.n_actions
        self.hidden = policies[0].network.sizes["hidden_size"]
        self.device = torch.device("cpu")
        self.generator = torch.Generator().manual_seed(int(seed))
        actors = [_Actor(p.network) for p in policies]
        self.params, self.buffers = stack_module_state(actors)
        base = copy.deepcopy(actors[0]).to("meta")
        self._forward = torch.func.vmap(lambda p, b, x, h: functional_call(base, (p, b), (x, h)))

    def __len__(self) -> int:
        return len(self.policies)

    def initial_state(self, batch: int) -> tuple:
        return torch.zeros(batch, self.n_agents, self.hidden), torch.zeros(batch, self.n_agents, self.n_actions)

    @torch.no_grad()
    def act(self, obs, state, policy_index, mask=None, episode_start=None, *, deterministic=False, generator=None):
        """``(action (B, U), state, info)``; game ``b`` acts with ``policies[policy_index[b]]``."""
        obs = torch.as_tensor(obs, dtype=torch.float32)
        B, U, A = obs.shape[0], self.n_agents, self.n_actions
        index = torch.as_tensor(policy_index)
        if tuple(index.shape) != (B,) or index.is_floating_point() or index.dtype == torch.bool:
            raise ValueError(f"policy_index must be an integer tensor of shape ({B},), got {index.dtype} "
                             f"{tuple(index.shape)}")
        if bool(((index < 0) | (index >= len(self))).any()):
            raise ValueError(f"policy_index must lie in [0, {len(self) - 1}]")
        start, h, x = _actor_step_inputs(self, obs, state, episode_start)
        groups, group_of_row = torch.unique(index, return_inverse=True)
        order = torch.argsort(group_of_row, stable=True)
        counts = torch.bincount(group_of_row, minlength=len(groups))
        G, W = len(groups), int(counts.max())
        rank = torch.empty_like(order)
        rank[order] = torch.arange(B) - (torch.cumsum(counts, 0) - counts)[group_of_row[order]]
        dest = group_of_row * W + rank

        def pad(t):  # (B, U, F) -> (G, W·U, F)
            return t.new_zeros(G * W, *t.shape[1:]).index_copy_(0, dest, t).view(G, W * U, t.shape[-1])

        def unpad(t):  # (G, W·U, F) -> (B, U, F)
            return t.reshape(G * W, U, t.shape[-1]).index_select(0, dest)

        params = {k: v[groups] for k, v in self.params.items()}
        buffers = {k: v[groups] for k, v in self.buffers.items()}
        logits, h = self._forward(params, buffers, pad(x), pad(h))
        logits = masked_logits(unpad(logits), None if mask is None else torch.as_tensor(mask, dtype=torch.bool))
        if deterministic:
            action = logits.argmax(-1)
        else:
            probs = torch.softmax(logits, -1).view(B * U, A)
            action = torch.multinomial(probs, 1, generator=generator or self.generator).view(B, U)
        return action, (unpad(h), nn.functional.one_hot(action, A).float()), {"logits": logits}


def stack_policies(frozens, seed: int = 0) -> MAPPOPolicyStack:
    """Stack frozen MAPPO policies (one spec) for batched population inference."""
    return MAPPOPolicyStack(frozens, seed)
