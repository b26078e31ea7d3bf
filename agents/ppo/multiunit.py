"""Parameter-shared multi-unit PPO for SMAC sides (MAPPO/IPPO style, Yu et al. 2022).

One actor network is shared by every unit of a side (``multiunit_network.py``: a unit's input is its
observation with its one-hot agent id and last action; the critic reads the same or, with
``centralized_value=True``, the side's global state); the team reward ``r_t`` is shared by all units.

Acting, for a batch of ``B`` games of ``U`` units: ``act(obs (B, U, D), state, mask (B, U, A),
episode_start (B,)) -> (actions (B, U), state, info)``. Illegal actions get probability 0; a dead unit
(mask allows only the no-op 0) therefore plays the no-op. The recurrent state is a tuple of tensors
with the game batch first (so the self-play loop can index and assign it by game):

    frozen policy:  (last_action (B, U, A), *actor_rnn (B, U, H))
    learner:        (last_action (B, U, A), *actor_rnn (B, U, H), *critic_rnn (B, U, H))

``actor_rnn`` is empty for ``body="mlp"``, ``(h,)`` for ``"gru"`` and ``(h, c)`` for ``"lstm"``. Where
``episode_start`` is true the whole state is zeroed *before* acting.

Learning (``update()``, once ``horizon`` game-steps are stored) is the one PPO update of
``learner_base.PPOLearnerBase``, as for the one-unit learner; the config is ``config.MultiUnitPPOConfig``
(defaults: ``ppo_config("smac")``, MAPPO's SMAC settings). What is multi-unit:

    per unit i:  A^i = GAE(γ, λ) of (r_t, V^i_t, done_t)        returns R^i = A^i + V^i_old
    weight w^i = 1 for active units (more than the no-op available), 0 for dead ones: A is standardised
    over the active units, and the clipped surrogate and the entropy are means over them
    (``loss.ppo_loss``'s weight), while the value loss covers every unit (dead units still predict the
    team return) — MAPPO's active masks; a dead unit's forced no-op carries no policy gradient
    the actor's and the critic's gradient norms are clipped separately (two networks)

A sample is one game-step of the side (all its units); minibatches (``minibatch_size``, default the
whole batch) and recurrent sequences (``bptt_length``) are drawn as in the one-unit learner.
"""

from __future__ import annotations

from pathlib import Path

import torch
from selfplay.agents.ppo.buffer import RolloutBuffer
from selfplay.agents.ppo.checkpoint import read_policy_file, write_policy_file
from selfplay.agents.ppo.gae import compute_gae
from selfplay.agents.ppo.learner_base import PPOLearnerBase
from torch import nn

from .config import MultiUnitPPOConfig
from .multiunit_network import (
    MultiUnitActorCritic,
    MultiUnitSpec,
    check_start,
    check_state,
    check_unit_mask,
    check_unit_obs,
    policy_step,
    reset_state,
    zero_state,
)

__all__ = ["MultiUnitActorCritic", "MultiUnitFrozenPolicy", "MultiUnitPPOLearner", "MultiUnitSpec", "load_policy",
           "save_policy"]

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
        return zero_state(self.spec, batch, self.device, critic=False)

    @torch.no_grad()
    def act(self, obs, state=None, mask=None, episode_start=None, *, deterministic=False, generator=None,
            global_state=None):
        """``(action (B, U), state, info)``; ``info`` has ``log_prob`` ``(B, U)`` and ``logits``.

        ``global_state`` is accepted (and ignored) so callers can treat learner and snapshots alike.
        """
        obs = check_unit_obs(obs, self.spec, self.device)
        B = obs.shape[0]
        mask = check_unit_mask(mask, B, self.spec, self.device)
        start = check_start(episode_start, B, self.device)
        expected = self.initial_state(B)
        state = expected if state is None else reset_state(check_state(state, expected), start)
        action, log_prob, logits, _, rnn = policy_step(self.network, obs, state[0], state[1:], mask,
                                                        generator or self.generator, deterministic)
        last = nn.functional.one_hot(action, self.spec.n_actions).float()
        return action, (last, *rnn), {"log_prob": log_prob, "logits": logits}

    def __repr__(self) -> str:
        return (f"MultiUnitFrozenPolicy(body={self.spec.body!r}, n_agents={self.spec.n_agents}, "
                f"weight_version={self.weight_version}, seed={self.seed})")


# ---------------------------------------------------------------------------------------- learner

class MultiUnitPPOLearner(PPOLearnerBase):
    """Parameter-shared PPO for one side of ``B`` SMAC games of ``n_agents`` units (module docstring).

    ``state_size``: the side's global-state size; required when ``config.centralized_value`` (then every
    ``act`` takes ``global_state=`` ``(B, state_size)``, e.g. ``SMACBattle.get_state()[seat]``).
    """

    frozen_class = MultiUnitFrozenPolicy
    family = "smac"

    def __init__(self, obs_size: int, n_agents: int, n_actions: int, config: MultiUnitPPOConfig | None = None,
                 seed: int = 0, device="cpu", state_size: int | None = None):
        if config is not None and getattr(config, "centralized_value", False) and state_size is None:
            raise ValueError("state_size must be given (the global state's size) when config.centralized_value is True")

        def spec(c: MultiUnitPPOConfig) -> MultiUnitSpec:
            return MultiUnitSpec(obs_size, n_agents, n_actions, c.body, c.hidden_size, c.agent_id, c.last_action,
                                 state_size if c.centralized_value else None)

        self._setup(config, seed, device, spec, MultiUnitActorCritic)

    @classmethod
    def for_battle(cls, battle, seat: int = 0, config: MultiUnitPPOConfig | None = None, seed: int = 0,
                   device=None) -> MultiUnitPPOLearner:
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
        return zero_state(self.spec, batch, self.device, critic=True)

    # ------------------------------------------------------------------ acting and recording

    @torch.no_grad()
    def act(self, obs, state=None, mask=None, episode_start=None, *, global_state=None):
        """Sample every unit's action in every game and store the step: ``(action (B, U), state, info)``."""
        spec, net = self.spec, self.network
        obs = check_unit_obs(obs, spec, self.device)
        B, U = obs.shape[:2]
        mask = check_unit_mask(mask, B, spec, self.device)
        start = check_start(episode_start, B, self.device)
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
        state = expected if state is None else reset_state(check_state(state, expected), start)
        n = spec.n_rnn
        actor_rnn, critic_rnn = state[1:1 + n], state[1 + n:]

        action, log_prob, logits, x, new_actor_rnn = policy_step(net, obs, state[0], actor_rnn, mask, self.generator)
        c = net.critic_inputs(x, global_state)
        no_start = torch.zeros(B * U, dtype=torch.bool, device=self.device)
        features, new_critic_rnn = net.critic_body.step(c.reshape(B * U, -1),
                                                        tuple(h.reshape(B * U, -1) for h in critic_rnn),
                                                        no_start)
        value = net.value_head(features).view(B, U)
        self.buffer.store_action(actor_rnn + critic_rnn, actor_in=x, critic_in=c, masks=mask, starts=start,
                                 actions=action, log_probs=log_prob, values=value)
        last = nn.functional.one_hot(action, spec.n_actions).float()
        new_state = (last, *new_actor_rnn, *(h.view(B, U, -1) for h in new_critic_rnn))
        return action, new_state, {"log_prob": log_prob, "value": value, "logits": logits}

    # ------------------------------------------------------------------ learning (``PPOLearnerBase.update``)

    def _advantages(self):
        """Per-unit GAE on the shared team reward (the ``(T, B, U)`` rollout as ``T × B·U`` independent
        chains); the policy-gradient weight is 1 for active units (more than the no-op available)."""
        cfg, buf = self.config, self.buffer
        T, B, U = buf.rollout_length, buf.num_envs, self.spec.n_agents
        rewards = buf.rewards[:T, :, None].expand(T, B, U).reshape(T, B * U)
        dones = buf.dones[:T, :, None].expand(T, B, U).reshape(T, B * U)
        advantages, returns = compute_gae(rewards, buf.values[:T].reshape(T, B * U), dones,
                                          buf.values[T].reshape(B * U), cfg.gamma, cfg.gae_lambda)
        return advantages.view(T, B, U), returns.view(T, B, U), buf.masks[:T, ..., 1:].any(-1)

    def _evaluate(self, idx, starts):
        """``(logits, values)`` of the game-steps ``idx`` (all units); recurrent: sequences replayed from
        the actor and critic states stored at ``starts = (t0, game)``."""
        buf, net, U, n = self.buffer, self.network, self.spec.n_agents, self.spec.n_rnn
        if starts is None:
            logits = net.logits(net.actor_body.unroll(buf.actor_in[idx], (), None), buf.masks[idx])
            return logits, net.value_head(net.critic_body.unroll(buf.critic_in[idx], (), None)).squeeze(-1)
        t0, game = starts
        L, S = idx[0].shape
        first = buf.starts[idx][..., None].expand(L, S, U).reshape(L, S * U)
        rnn0 = tuple(h[t0, game].reshape(S * U, -1) for h in buf.rnn)
        actor_f = net.actor_body.unroll(buf.actor_in[idx].reshape(L, S * U, -1), rnn0[:n], first)
        critic_f = net.critic_body.unroll(buf.critic_in[idx].reshape(L, S * U, -1), rnn0[n:], first)
        return net.logits(actor_f.view(L, S, U, -1), buf.masks[idx]), net.value_head(critic_f).view(L, S, U)

    def _clip_groups(self):
        """Actor and critic are separate networks: each gradient norm is clipped on its own, so the value
        loss's scale never shrinks the policy step."""
        return [self.network.actor_parameters(), self.network.critic_parameters()]

    @torch.no_grad()
    def _refresh_carried_value(self) -> None:
        """Re-evaluate the carried-over step's values with the updated critic (its actions stay as taken)."""
        buf, net = self.buffer, self.network
        B, U, n = buf.num_envs, self.spec.n_agents, self.spec.n_rnn
        critic_rnn = tuple(h[0].reshape(B * U, -1) for h in buf.rnn[n:])
        no_start = torch.zeros(B * U, dtype=torch.bool, device=self.device)
        features, _ = net.critic_body.step(buf.critic_in[0].reshape(B * U, -1), critic_rnn, no_start)
        buf.values[0] = net.value_head(features).view(B, U)

    # ------------------------------------------------------------------ internals

    def _new_buffer(self, batch: int, rollout_length: int) -> RolloutBuffer:
        """Per game and unit: actor and critic inputs, mask and scalars (reward, done and the episode start
        per game); the actor's then the critic's recurrent states after the episode-start reset."""
        s = self.spec
        U = s.n_agents
        shapes = {"actor_in": (U, s.actor_input_size), "critic_in": (U, s.critic_input_size), "masks": (U, s.n_actions),
                  "starts": (), "actions": (U,), "log_probs": (U,), "values": (U,), "rewards": (), "dones": ()}
        return RolloutBuffer(batch, rollout_length, shapes, ((U, s.hidden_size),) * (2 * s.n_rnn), self.device)


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
