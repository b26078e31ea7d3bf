"""Recurrent MAPPO for one side of ``B`` SMAC games (Yu et al. 2022; config: ``config.MAPPOConfig``).

Acting (``act``), per step of the ``B`` games of ``U`` agents: each agent's actor input (``network.actor_inputs``)
goes through the shared GRU actor and actions are sampled from the masked policy; the critic input
(``network.critic_inputs``: agent-specific or global state, death-masked) is stored, and the critic reads
the whole rollout at once when it is full (``evaluate_rollout``: the same values as a step-by-step
critic, since the weights do not change within a rollout). The learner keeps the games' recurrent
states and last actions; where ``start`` is true (a game's first step) they are zeroed first.
An agent is *active* while it has more than the no-op available (SMAC gives a dead agent only the no-op).

``record(reward, done)`` follows every ``act``; after ``rollout_length`` steps ``ready()`` is true and
``update(state, mask, start)`` — the inputs of the step after the rollout, for the bootstrap value —
runs the whole update (``update``'s body is all of it, in order):

    V   = denormalize(critic outputs of the rollout and of the bootstrap step)        (value normalisation)
    A, R = rules.gae(r, V, done, γ, λ) per agent on the team reward
    Â   = rules.standardize(A) over the active samples
    the rollout cut into ``chunk_length``-step sequences of one agent in one game, replayed from the
    recurrent states stored at their first steps; for each of ``epochs`` epochs (the critic: ``critic_epochs``,
    by default the same; epoch e shuffles alike for both), for each of ``num_minibatches`` shuffled
    minibatches of sequences:
        actor:  L_π = rules.policy_loss(log π, log π_old, Â, ε, active) − c_e · mean_active(entropy)
                      + α · mean_active(KL(π ‖ ρ))       (only where ``magnet_coef`` α > 0: the magnet below)
                one Adam step after clipping the actor's gradient norm to ``max_grad_norm``
        critic: ValueNorm.update(R);  L_V = rules.value_loss(V, V_old, normalize(R), ε, δ, clipped, w)
                (w: the active masks when ``value_active_masks``); one Adam step on c_v · L_V, clipped

The magnet ρ (``magnet_coef`` > 0: magnetic mirror descent with a moving magnet, Sokota et al. 2023; R-NaD's
regularisation policy, Perolat et al. 2021) is a frozen copy of the actor, reset to it at every
``magnet_interval``-th update before the fit. Its log-probabilities over the rollout are computed once per update,
by one unroll of its own GRU over the rollout's actor inputs, its recurrent state carried from rollout to rollout
as the critic's is; at a reset the magnet is the actor that acted, so it starts from the actor's stored states and
its probabilities are the acted ones (KL 0 at the first epoch).

Two shortcuts leave these numbers as they are (up to float summation order): a sequence with no active
step carries zero weight in a masked loss, so it is left out of the actor's pass (``policy_active_masks``)
and of the critic's (``value_active_masks``; the value normaliser still sees every return); and the
actor's and critic's passes share nothing, so with ``update_threads=2`` they run at once on two threads.
With ``update_precision="bfloat16"`` (an option, not a shortcut: the numbers change by bf16 rounding) the
passes' matrix products take bf16 operands and everything else stays float32 (``network.linear``,
``network.GRUSequence``); acting and ``evaluate_rollout`` stay float32.

Acting reads the actor only, so the critic's pass need not end before the next rollout starts:
``start_update`` returns once the actor is fitted, with the critic still fitting on the second thread
(``update_threads=2``), and ``finish_update`` waits for it and gives the update's metrics. The next rollout
is written to a second buffer meanwhile; everything that reads the critic (the next update, ``policy``,
``state_dict``) waits for it first, so the numbers are those of ``update`` (tested bit for bit).
"""

from __future__ import annotations

import copy
import numbers
import time
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn

from selfplay.utils.seeding import Stream, derive_seed

from . import rules
from .config import UPDATE_PRECISIONS, MAPPOConfig, without_speed_settings
from .network import MAPPONetwork, actor_inputs, critic_inputs, masked_logits

# MAPPOConfig.update_precision → the dtype of the update's products' operands (None: float32, no cast)
PRECISIONS = {name: None if name == "float32" else getattr(torch, name) for name in UPDATE_PRECISIONS}


def enemy_obs_layout(battle, seat: int) -> tuple | None:
    """``(offset, n_enemies, feats)`` of ``seat``'s observation in a SMAC or SMACv2 battle: its enemy blocks follow
    the move features (StarCraft2Env's ``get_obs_move_feats_size``, ``get_obs_enemy_feats_size``; SMACv2 puts its
    optional time step last); ``None`` for a battle without that layout."""
    views = getattr(battle, "views", None) or getattr(battle, "layouts", None)
    view = views[seat] if views is not None else None
    if view is None or not all(hasattr(view, k) for k in ("move_feats_size", "n_enemies", "enemy_feats_size")):
        return None
    return int(view.move_feats_size), int(view.n_enemies), int(view.enemy_feats_size)


def agent_starts(starts: torch.Tensor, n_agents: int) -> torch.Tensor:
    """``(T, B)`` game starts → ``(T, B·U)``, one row per agent of each game (the recurrent unrolls' layout)."""
    T, B = starts.shape
    return starts[:, :, None].expand(T, B, n_agents).reshape(T, B * n_agents)


def active_agents(mask: torch.Tensor) -> torch.Tensor:
    """``(B, U)`` bool: more than the no-op (action 0) available, i.e. alive in SMAC."""
    return mask[..., 1:].any(-1)


def actor_loss(net: MAPPONetwork, mb: dict, h0: torch.Tensor, c: MAPPOConfig, normalized: bool = False) -> tuple:
    """``(L_π, mean_active(entropy), statistics)`` of the minibatch ``mb`` of sequences (``(L, S, ...)`` each,
    recurrent states ``h0`` ``(S, H)``) under the current actor; the weights are the active masks where
    ``policy_active_masks``. A sequence without an active step adds nothing to either mean (zero weight).
    Where ``mb`` holds the magnet's log-probabilities (``"magnet_log_probs"``), ``L_π`` includes
    ``magnet_coef · mean_active(KL(π ‖ ρ))`` (``statistics["magnet_kl"]``: the mean KL).
    ``normalized``: ``mb["actor_in"]`` holds ``net.actor.normalize``'s output (``RecurrentBase.unroll``)."""
    weight = mb["active"] if c.policy_active_masks else None
    feats = net.actor.unroll(mb["actor_in"], h0, mb["starts"], normalized=normalized)
    log_probs = torch.log_softmax(masked_logits(net.policy_logits(feats, mb.get("enemies")), mb["masks"]), -1)
    log_prob = log_probs.gather(-1, mb["actions"][..., None]).squeeze(-1)
    entropy = rules.masked_mean(-(log_probs.exp() * log_probs).sum(-1), weight)
    pi_loss, ratio = rules.policy_loss(log_prob, mb["log_probs"], mb["advantages"], c.clip_coef, weight)
    with torch.no_grad():
        log_ratio = log_prob - mb["log_probs"]
        stats = {"policy_loss": pi_loss.detach(), "entropy": entropy.detach(), "ratio": rules.masked_mean(ratio, weight),
                 "approx_kl": rules.masked_mean((ratio - 1) - log_ratio, weight),
                 "clip_fraction": rules.masked_mean(((ratio - 1).abs() > c.clip_coef).float(), weight)}
    if "magnet_log_probs" in mb:
        magnet_kl = rules.masked_mean(rules.kl_divergence(log_probs, mb["magnet_log_probs"]), weight)
        pi_loss = pi_loss + c.magnet_coef * magnet_kl
        stats["magnet_kl"] = magnet_kl.detach()
    return pi_loss, entropy, stats


def critic_loss(net: MAPPONetwork, mb: dict, h0: torch.Tensor, c: MAPPOConfig, value_norm,
                normalized: bool = False) -> torch.Tensor:
    """``L_V`` of the minibatch ``mb`` under the current critic, against the normalised returns; weighted by
    the active masks where ``value_active_masks`` (then a sequence without an active step adds nothing).
    ``normalized`` as in ``actor_loss``."""
    values = net.value_head(net.critic.unroll(mb["critic_in"], h0, mb["starts"], normalized=normalized)).squeeze(-1)
    return rules.value_loss(values, mb["old_values"], value_norm.normalize(mb["returns"]), c.clip_coef,
                            c.huber_delta, c.clipped_value_loss, mb["active"] if c.value_active_masks else None)


class MAPPOPolicy:
    """A frozen copy of the actor: ``act(obs, state, mask, start)`` with ``state = (h, last_action)``.

    Greedy (``deterministic=True``, the default: SMAC's test episodes) or sampled from ``generator``."""

    def __init__(self, network: MAPPONetwork, config: MAPPOConfig, n_agents: int, weight_version: int, seed: int):
        self.network = network.eval().requires_grad_(False)
        self.config, self.n_agents, self.weight_version = config, n_agents, int(weight_version)
        self.n_actions = network.sizes["n_actions"]
        self.generator = torch.Generator().manual_seed(int(seed))

    def initial_state(self, batch: int) -> tuple:
        H, U = self.network.sizes["hidden_size"], self.n_agents
        return torch.zeros(batch, U, H), torch.zeros(batch, U, self.n_actions)

    @torch.no_grad()
    def act(self, obs, state, mask, start, deterministic: bool = True):
        h, last = state
        B, U = h.shape[:2]
        keep = (~start)[:, None, None].float()
        last = last * keep
        x = actor_inputs(obs, last, self.config.agent_id, self.config.last_action)
        x = x.reshape(B * U, -1)
        f, h = self.network.actor.step(x, h.reshape(B * U, -1), start.repeat_interleave(U))
        logits = masked_logits(self.network.acting_logits(f, x).view(B, U, -1), mask)
        if deterministic:
            action = logits.argmax(-1)
        else:
            action = torch.multinomial(torch.softmax(logits, -1).view(B * U, -1), 1, generator=self.generator).view(B, U)
        return action, (h.view(B, U, -1), nn.functional.one_hot(action, self.n_actions).float())


class MAPPOLearner:
    """MAPPO for a side of ``n_agents`` agents with ``n_actions`` actions (module docstring).

    ``obs_size``: an agent's observation size (ignored under ``open_loop``, whose observation is 1 wide);
    ``state_size``: the agent-specific state's size (``critic_input="AS"``) or the global state's (``"EP"``);
    ``enemy_obs``: ``(offset, n_enemies, feats)``, where the observation's enemy blocks lie (``enemy_obs_layout``),
    needed by ``attack_head="entity"`` and ignored otherwise.
    """

    def __init__(self, obs_size: int, state_size: int, n_agents: int, n_actions: int,
                 config: MAPPOConfig | None = None, seed: int = 0, enemy_obs: tuple | None = None):
        self.config = c = MAPPOConfig() if config is None else config
        if not isinstance(c, MAPPOConfig):
            raise ValueError(f"config must be a MAPPOConfig, got {type(config).__name__}")
        if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        for name, v in (("obs_size", obs_size), ("state_size", state_size), ("n_agents", n_agents),
                        ("n_actions", n_actions)):
            if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        self.seed, self.n_agents, self.n_actions = int(seed), int(n_agents), int(n_actions)
        self.obs_size = 1 if c.open_loop else int(obs_size)
        self.state_size = int(state_size)
        actor_in = self.obs_size + n_agents * c.agent_id + n_actions * c.last_action
        critic_in = state_size if c.critic_input == "AS" else state_size + n_agents
        init = torch.Generator().manual_seed(derive_seed(self.seed, Stream.INITIAL_WEIGHTS))
        if c.attack_head == "entity" and enemy_obs is None:
            raise ValueError("attack_head 'entity' needs enemy_obs, the observation's enemy layout (offset, "
                             "n_enemies, feats): build the learner with for_battle or give enemy_obs_layout(battle)")
        self.network = MAPPONetwork(actor_in, critic_in, n_actions, c.hidden_size, c.layers, init, c.policy_gain,
                                    c.recurrent, enemy_obs if c.attack_head == "entity" else None)
        self.actor_optimizer = torch.optim.Adam(self.network.actor_parameters(), lr=c.learning_rate, eps=c.adam_eps)
        self.critic_optimizer = torch.optim.Adam(self.network.critic_parameters(), lr=c.critic_learning_rate,
                                                 eps=c.adam_eps)
        self.value_norm = rules.ValueNorm(c.value_norm_beta) if c.value_norm else rules.IdentityNorm()
        self.generator = torch.Generator().manual_seed(self.seed)
        self.weight_version = 0
        self.buffer: dict | None = None
        self.step_index = 0
        self.pending = False
        self.pass_seconds = {"actor": 0.0, "critic": 0.0}  # CPU seconds of the last update's passes (profiling)
        self._fitting: tuple | None = None  # started, not finished: (critic pass future, actor metrics, critic stats)
        self._spare_buffer: dict | None = None  # the rollout buffer the critic may still be reading
        self.magnet: MAPPONetwork | None = None  # the magnet ρ (magnet_coef > 0): a frozen copy of the network
        self.progress = 0.0  # the share of the run's budget spent (linear_lr_decay; set_progress)

    @classmethod
    def for_battle(cls, battle, config: MAPPOConfig | None = None, seed: int = 0) -> MAPPOLearner:
        """Sized for seat 0 of a ``SMACBattle`` (its agent-specific or global state by ``critic_input``)."""
        c = MAPPOConfig() if config is None else config
        state = battle.special_state_size[0] if c.critic_input == "AS" else battle.state_size[0]
        return cls(battle.obs_size[0], state, battle.n_agents[0], battle.n_actions[0], c, seed,
                   enemy_obs_layout(battle, 0))

    # ------------------------------------------------------------------ acting

    def _rollout_buffer(self, B: int) -> dict:
        """An empty rollout of ``B`` games (``evaluate_rollout`` adds ``values``)."""
        U, A, H, T = self.n_agents, self.n_actions, self.config.hidden_size, self.config.rollout_length
        n = self.network.sizes
        z = torch.zeros
        return {
            "actor_in": z(T, B, U, n["actor_input_size"]), "critic_in": z(T, B, U, n["critic_input_size"]),
            "masks": torch.ones(T, B, U, A, dtype=torch.bool), "starts": z(T, B, dtype=torch.bool),
            "active": z(T, B, U, dtype=torch.bool), "h_actor": z(T, B, U, H), "h_critic": z(T, B, U, H),
            "actions": z(T, B, U, dtype=torch.long), "log_probs": z(T, B, U),
            "rewards": z(T, B), "dones": z(T, B, dtype=torch.bool),
        }

    def _new_buffer(self, B: int) -> None:
        """A new rollout buffer for ``B`` games and their recurrent states and last actions zeroed."""
        U, A, H = self.n_agents, self.n_actions, self.config.hidden_size
        self.buffer, self._spare_buffer = self._rollout_buffer(B), None
        z = torch.zeros
        self.h_actor, self.h_critic, self.h_magnet = z(B, U, H), z(B, U, H), z(B, U, H)
        self.last_action = z(B, U, A)
        self.num_envs = B

    def _checked(self, obs, state, mask, start):
        U = self.n_agents
        obs = torch.as_tensor(obs, dtype=torch.float32)
        B = obs.shape[0]
        if obs.shape != (B, U, self.obs_size):
            raise ValueError(f"obs must have shape (batch, {U}, {self.obs_size}), got {tuple(obs.shape)}")
        state = torch.as_tensor(state, dtype=torch.float32)
        want = (B, U, self.state_size) if self.config.critic_input == "AS" else (B, self.state_size)
        if tuple(state.shape) != want:
            raise ValueError(f"state must have shape {want} (critic_input={self.config.critic_input!r}), "
                             f"got {tuple(state.shape)}")
        mask = torch.as_tensor(mask)
        if mask.dtype != torch.bool or tuple(mask.shape) != (B, U, self.n_actions):
            raise ValueError(f"mask must be a bool tensor of shape {(B, U, self.n_actions)}, got "
                             f"{mask.dtype} {tuple(mask.shape)}")
        start = torch.as_tensor(start, dtype=torch.bool)
        if tuple(start.shape) != (B,):
            raise ValueError(f"start must have shape ({B},), got {tuple(start.shape)}")
        return obs, state, mask, start

    @torch.no_grad()
    def act(self, obs, state, mask, start) -> torch.Tensor:
        """Sample every agent's action in every game and store the step; ``(B, U)`` actions.

        ``obs`` ``(B, U, obs_size)`` (open loop: ``network.open_loop_inputs``), ``state`` (AS: ``(B, U, S)``,
        EP: ``(B, S)``), ``mask`` ``(B, U, A)`` bool, ``start`` ``(B,)``: a game's first step."""
        obs, state, mask, start = self._checked(obs, state, mask, start)
        B, U = obs.shape[:2]
        if self.pending:
            raise RuntimeError("record(reward, done) must follow every act()")
        if self.buffer is None or self.step_index == 0 and B != self.num_envs:
            self._new_buffer(B)
        if B != self.num_envs:
            raise ValueError(f"obs must keep the batch size of the current rollout ({self.num_envs}), got {B}")
        if self.ready():
            raise RuntimeError("the rollout is full: call update() before acting again")
        c, buf, t, net = self.config, self.buffer, self.step_index, self.network
        if c.last_action:
            self.last_action *= (~start)[:, None, None].float()
        active = active_agents(mask)
        x = actor_inputs(obs, self.last_action, c.agent_id, c.last_action, out=buf["actor_in"][t])
        critic_inputs(state, active, c.critic_input, c.death_masking, out=buf["critic_in"][t])
        for name, value in (("masks", mask), ("starts", start), ("active", active), ("h_actor", self.h_actor)):
            buf[name][t] = value
        if t == 0:
            buf["h_critic"][0] = self.h_critic
        starts = start.repeat_interleave(U)
        f, h = net.actor.step(x.view(B * U, -1), self.h_actor.view(B * U, -1), starts)
        logits = net.acting_logits(f, x.view(B * U, -1)).view(B, U, -1)
        log_probs = torch.log_softmax(masked_logits(logits, mask), -1)
        action = torch.multinomial(log_probs.exp().view(B * U, -1), 1, generator=self.generator).view(B, U)
        buf["actions"][t] = action
        torch.gather(log_probs, -1, action[..., None], out=buf["log_probs"][t][..., None])
        self.h_actor = h.view(B, U, -1)
        if c.last_action:
            self.last_action = nn.functional.one_hot(action, self.n_actions).float()
        self.pending = True
        return action

    def record(self, reward, done) -> None:
        """The team reward of the step just acted and whether it ended each game, ``(B,)`` each."""
        if not self.pending:
            raise RuntimeError("record() must follow an act()")
        reward, done = torch.as_tensor(reward, dtype=torch.float32), torch.as_tensor(done, dtype=torch.bool)
        if tuple(reward.shape) != (self.num_envs,) or tuple(done.shape) != (self.num_envs,):
            raise ValueError(f"reward and done must have shape ({self.num_envs},), got {tuple(reward.shape)} "
                             f"and {tuple(done.shape)}")
        self.buffer["rewards"][self.step_index] = reward
        self.buffer["dones"][self.step_index] = done
        self.step_index += 1
        self.pending = False

    def ready(self) -> bool:
        return self.buffer is not None and self.step_index == self.config.rollout_length

    def set_progress(self, progress: float) -> None:
        """The share of the run's budget spent before the next update, in [0, 1]: with ``linear_lr_decay`` the
        update's step sizes are ``lr · (1 − progress)``."""
        if isinstance(progress, bool) or not (isinstance(progress, (int, float)) and 0.0 <= progress <= 1.0):
            raise ValueError(f"progress must be a number in [0, 1], got {progress!r}")
        self.progress = float(progress)

    # ------------------------------------------------------------------ the update

    @torch.no_grad()
    def evaluate_rollout(self, state, mask, start) -> None:
        """The critic's values of the full rollout, under the weights that acted (``update`` calls it first):
        ``buffer["values"]`` ``(T+1, B, U)``, the last row the bootstrap value of the step after the rollout
        (``state``, ``mask``, ``start``), and the critic's recurrent states ``buffer["h_critic"]`` before every
        step. One unroll from the critic's state at the rollout's start, as acting step by step would give
        (the critic does not act, so acting leaves it out); its state after the rollout's last step carries
        over to the next rollout. Calling it again gives the same."""
        if not self.ready():
            raise RuntimeError("evaluate_rollout() needs a full rollout: call it when ready() is true")
        self._wait_for_critic()
        c, buf = self.config, self.buffer
        obs_dummy = torch.zeros(self.num_envs, self.n_agents, self.obs_size)
        _, state, mask, start = self._checked(obs_dummy, state, mask, start)
        T, B, U = c.rollout_length, self.num_envs, self.n_agents
        last = critic_inputs(state, active_agents(mask), c.critic_input, c.death_masking)
        x = torch.cat([buf["critic_in"], last[None]]).view(T + 1, B * U, -1)
        starts = agent_starts(torch.cat([buf["starts"], start[None]]), U)
        features, states = self.network.critic.unroll(x, buf["h_critic"][0].view(B * U, -1), starts, with_states=True)
        buf["values"] = self.network.value_head(features).view(T + 1, B, U)
        buf["h_critic"][1:] = states[: T - 1].view(T - 1, B, U, -1)
        self.h_critic = states[T - 1].view(B, U, -1).clone()

    @torch.no_grad()
    def _magnet_log_probs(self) -> torch.Tensor:
        """The magnet's masked log-probabilities over the full rollout, ``(T, B, U, A)`` (module docstring): reset
        to the current actor first at every ``magnet_interval``-th update. One unroll of the magnet's GRU from its
        state at the rollout's start, which advances that state to the next rollout's: called once per update."""
        c, buf, T, B, U = self.config, self.buffer, self.config.rollout_length, self.num_envs, self.n_agents
        if self.magnet is None or self.weight_version % c.magnet_interval == 0:
            self.magnet = copy.deepcopy(self.network).requires_grad_(False)
            self.h_magnet = buf["h_actor"][0].clone()
        x = buf["actor_in"].view(T, B * U, -1)
        f, states = self.magnet.actor.unroll(x, self.h_magnet.view(B * U, -1), agent_starts(buf["starts"], U),
                                             with_states=True)
        self.h_magnet = states[T - 1].view(B, U, -1).clone()
        logits = self.magnet.acting_logits(f.reshape(T * B * U, -1), x.reshape(T * B * U, -1)).view(T, B, U, -1)
        return torch.log_softmax(masked_logits(logits, buf["masks"]), -1)

    def update(self, state, mask, start) -> dict:
        """One MAPPO update (module docstring); ``state``, ``mask``, ``start``: the step after the rollout.
        Its metrics: the passes' means of their losses and statistics, and the rollout's."""
        self.start_update(state, mask, start)
        return self.finish_update()

    def start_update(self, state, mask, start) -> None:
        """``update`` up to the actor's fitted weights; with ``update_threads=2`` the critic goes on fitting on
        the second thread after this returns, and the next rollout may be acted meanwhile. ``finish_update``
        must follow before the next update."""
        if self._fitting is not None:
            raise RuntimeError("finish_update() must follow start_update() before the next update")
        if not self.ready():
            raise RuntimeError("update() needs a full rollout: call it when ready() is true")
        c, buf, net = self.config, self.buffer, self.network
        T, B, U, L = c.rollout_length, self.num_envs, self.n_agents, c.chunk_length
        self.evaluate_rollout(state, mask, start)  # checks state, mask and start
        scale = 1.0 - self.progress if c.linear_lr_decay else 1.0
        for optimizer, lr in ((self.actor_optimizer, c.learning_rate), (self.critic_optimizer, c.critic_learning_rate)):
            for group in optimizer.param_groups:
                group["lr"] = lr * scale
        with torch.no_grad():
            values = self.value_norm.denormalize(buf["values"])
            advantages, returns = rules.gae(buf["rewards"], values, buf["dones"], c.gamma, c.gae_lambda)
            active = buf["active"]
            advantages = rules.standardize(advantages, active if c.policy_active_masks else torch.ones_like(active))

        # sequences: (T, B, U, ...) -> (L, C·B·U, ...), sequence s = (chunk, game, agent); h0 at each chunk's start
        C, N = T // L, B * U

        def seq(x):
            return x.reshape(C, L, N, *x.shape[3:]).transpose(0, 1).reshape(L, C * N, *x.shape[3:])

        starts = seq(buf["starts"][:, :, None].expand(T, B, U))
        data = {name: seq(buf[name]) for name in ("actor_in", "critic_in", "masks", "active", "actions", "log_probs")}
        actor_names = ("actor_in", "starts", "masks", "actions", "log_probs", "advantages", "active")
        if c.magnet_coef > 0:
            data["magnet_log_probs"], actor_names = seq(self._magnet_log_probs()), actor_names + ("magnet_log_probs",)
        enemies = net.enemy_features(data["actor_in"])  # the attack scorer reads the raw observation
        # every epoch replays these inputs: their feature normalisation (less its affine part) is done once
        # (held in bfloat16 under update_precision "bfloat16": the passes' products then take bf16 operands)
        precision = PRECISIONS[c.update_precision]
        data["actor_in"] = net.actor.normalize(data["actor_in"], precision)
        data["critic_in"] = net.critic.normalize(data["critic_in"], precision)
        data.update(old_values=seq(buf["values"][:T]), returns=seq(returns), advantages=seq(advantages), starts=starts)
        if enemies is not None:
            data["enemies"], actor_names = enemies.contiguous(), actor_names + ("enemies",)
        h0_actor = buf["h_actor"][::L].reshape(C * N, -1)
        h0_critic = buf["h_critic"][::L].reshape(C * N, -1)

        # one permutation per epoch, drawn before either pass so both see the same minibatches
        orders = [torch.randperm(C * N, generator=self.generator) for _ in range(max(c.epochs, c.value_epochs))]
        live = data["active"].any(0)  # (C·N,): sequences with at least one active step

        def minibatches(skip_dead: bool, epochs: int):
            """The first ``epochs`` epochs' minibatches as ``(every index, kept index)``; ``None`` is every sequence
            (one minibatch: the shuffle would change nothing but the summation order). ``skip_dead`` keeps only
            the sequences with an active step: the others carry zero weight in the masked loss."""
            every_live = None if live.all() else live.nonzero().squeeze(1)
            for order in orders[:epochs]:
                for idx in order.tensor_split(c.num_minibatches):
                    if c.num_minibatches == 1:
                        yield None, every_live if skip_dead else None
                    else:
                        yield idx, idx[live[idx]] if skip_dead else idx

        def take(idx, names, h0):
            return ({k: data[k] for k in names}, h0) if idx is None else ({k: data[k][:, idx] for k in names}, h0[idx])

        actor_stats, critic_stats = [], []

        def actor_pass():
            began = time.thread_time()
            mb = None
            for _, kept in minibatches(c.policy_active_masks, c.epochs):
                if mb is None or c.num_minibatches > 1:  # one minibatch: the same sequences every epoch
                    mb, h0 = take(kept, actor_names, h0_actor)
                pi_loss, entropy, stats = actor_loss(net, mb, h0, c, normalized=True)
                self.actor_optimizer.zero_grad()
                (pi_loss - c.entropy_coef * entropy).backward()
                stats["actor_grad_norm"] = nn.utils.clip_grad_norm_(net.actor_parameters(), c.max_grad_norm).detach()
                self.actor_optimizer.step()
                actor_stats.append(stats)
            self.pass_seconds["actor"] = time.thread_time() - began

        def critic_pass():
            began = time.thread_time()
            mb = None
            for idx, kept in minibatches(c.value_active_masks, c.value_epochs):
                self.value_norm.update(data["returns"] if idx is None else data["returns"][:, idx])
                if mb is None or c.num_minibatches > 1:
                    mb, h0 = take(kept, ("critic_in", "starts", "old_values", "returns", "active"), h0_critic)
                v_loss = critic_loss(net, mb, h0, c, self.value_norm, normalized=True)
                self.critic_optimizer.zero_grad()
                (c.value_coef * v_loss).backward()
                norm = nn.utils.clip_grad_norm_(net.critic_parameters(), c.max_grad_norm)
                self.critic_optimizer.step()
                critic_stats.append({"value_loss": v_loss.detach(), "critic_grad_norm": norm.detach()})
            self.pass_seconds["critic"] = time.thread_time() - began

        if c.update_threads == 2:  # two disjoint graphs and optimisers: the same numbers as one after the other
            pool = ThreadPoolExecutor(1)
            critic_done = pool.submit(critic_pass)
            pool.shutdown(wait=False)  # the thread ends with the pass; finish_update waits for it
            actor_pass()
            # the next rollout goes to the other buffer: the critic's minibatches may be views of this one
            self.buffer, self._spare_buffer = self._spare_buffer or self._rollout_buffer(B), buf
        else:
            actor_pass()
            critic_pass()
            critic_done = None
        metrics = {k: torch.stack([s[k] for s in actor_stats]).mean().item() for k in actor_stats[0]}
        y, v = returns.flatten(), values[:T].flatten()
        metrics.update(explained_variance=(1.0 - ((y - v).var() / y.var()).item()) if y.var() > 0 else float("nan"),
                       mean_reward=buf["rewards"].mean().item(), active_fraction=active.float().mean().item())
        self.weight_version += 1
        metrics["weight_version"] = self.weight_version
        if c.linear_lr_decay:
            metrics["learning_rate"] = c.learning_rate * scale
        self.step_index = 0
        self._fitting = (critic_done, metrics, critic_stats)

    def finish_update(self) -> dict:
        """Wait for the critic's pass of the update ``start_update`` began; that update's metrics."""
        if self._fitting is None:
            raise RuntimeError("finish_update() follows start_update()")
        self._wait_for_critic()
        _, metrics, critic_stats = self._fitting
        self._fitting = None
        metrics.update({k: torch.stack([s[k] for s in critic_stats]).mean().item() for k in critic_stats[0]})
        return metrics

    def _wait_for_critic(self) -> None:
        """Block until the critic's pass of the last started update has ended (its errors raised here)."""
        if self._fitting is not None and self._fitting[0] is not None:
            self._fitting[0].result()

    # ------------------------------------------------------------------ snapshots and resume

    def policy(self) -> MAPPOPolicy:
        """A frozen copy of the current actor (greedy by default)."""
        self._wait_for_critic()  # the copy takes the whole network
        return MAPPOPolicy(copy.deepcopy(self.network), self.config, self.n_agents, self.weight_version,
                           derive_seed(self.seed, Stream.SNAPSHOT, self.weight_version))

    def state_dict(self, drop_rollout: bool = False) -> dict:
        """What resumes the learner between updates: weights, optimisers, value normaliser, RNG, version.
        The games' recurrent states are not kept: a resumed run restarts its games.  Taken mid-rollout only
        with ``drop_rollout`` (the rollout so far is left out: a resumed learner starts a new one)."""
        if (self.step_index or self.pending) and not drop_rollout:
            raise RuntimeError("state_dict() is taken between updates (the rollout must be empty)")
        self._wait_for_critic()
        return copy.deepcopy({"config": self.config.to_dict(), "seed": self.seed, "weight_version": self.weight_version,
                              "network": self.network.state_dict(), "actor_optimizer": self.actor_optimizer.state_dict(),
                              "critic_optimizer": self.critic_optimizer.state_dict(),
                              "value_norm": self.value_norm.state_dict(), "generator": self.generator.get_state(),
                              **({"magnet": self.magnet.state_dict()} if self.magnet is not None else {})})

    def load_state_dict(self, state: dict) -> None:
        if not isinstance(state.get("config"), dict) or \
                without_speed_settings(state["config"]) != without_speed_settings(self.config.to_dict()):
            raise ValueError(f"state['config'] must match this learner's config {self.config.to_dict()}, "
                             f"got {state.get('config')}")
        self._wait_for_critic()
        self._fitting = None
        self.network.load_state_dict(state["network"])
        self.actor_optimizer.load_state_dict(state["actor_optimizer"])
        self.critic_optimizer.load_state_dict(state["critic_optimizer"])
        self.value_norm.load_state_dict(state["value_norm"])
        self.generator.set_state(torch.as_tensor(state["generator"], dtype=torch.uint8))
        self.magnet = None  # without a saved magnet, the next update resets it to the actor
        if self.config.magnet_coef > 0 and "magnet" in state:
            self.magnet = copy.deepcopy(self.network).requires_grad_(False)
            self.magnet.load_state_dict(state["magnet"])
        self.seed, self.weight_version = int(state["seed"]), int(state["weight_version"])
        self.buffer, self._spare_buffer, self.step_index, self.pending = None, None, 0, False
