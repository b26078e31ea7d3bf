"""The AlphaStar actor–learner (docs/design/alphastar.md §4), in one process with a seam between
the two halves.

Actor side (``ChunkRecorder``): every game slot is a *lane*; each decision of the commander (the
steps where its delay has run out) is appended with its packed observation, packed action, the
behaviour log-probability of every head, the LSTM state it acted from and whether it began an
episode. (Of the behaviour logits only the log-probabilities of the chosen arguments are kept: they
are all V-trace and UPGO use; the KL term compares the target policy with the SL policy, both
recomputed by the learner.) Rewards that arrive between two decisions are summed onto the earlier one, and a game that
ends marks its last decision ``done``. When a lane holds ``chunk_length + 1`` decisions the first
``chunk_length`` form a ``Chunk`` (the extra one bootstraps the value) and the lane goes on from that
last decision. Chunks may span episode ends (the network resets its LSTM at ``episode_start``).

Learner side (``AlphaStarLearner.update``): a batch of chunks, at most one per lane, oldest first, is
teacher-forced through the network from the stored start states; the loss is ``alphastar_rl_loss``
(TD(λ) value, split V-trace policy gradient, UPGO, KL to the frozen SL network, entropy) with
γ = 1 inside an episode; Adam with AlphaStar's β = (0, 0.99), ε = 1e-5 and gradient-norm clipping.
The SL network's LSTM state is carried per lane from one chunk to the next (chunks of a lane are
consecutive and consumed in order), so its KL target is exact.

The seam: actors only produce ``Chunk`` objects into ``recorder.chunks`` and read the learner's
weights; ``update`` only consumes chunks. By default both run in turn on one ``nn.Module``. With
``asynchronous=True`` the learner runs in a background thread on its own copy of the network while
the actors keep playing with the last weights it published (IMPALA's policy lag, corrected by
V-trace): ``update`` hands a batch to the thread and returns the previous update's metrics, and the
actor picks up the new weights at its next ``act`` (``weight_version`` counts those). A process or
distributed split moves the same two things: chunks to the learner, weights back — ``take_batch`` on
the acting side, ``update_on(batch)`` on the learning side (the Ray league, training/distributed/
league.py). Every chunk carries ``version``, the oldest weight version its decisions were made with,
so a learner elsewhere can measure the policy lag V-trace corrects.

Through ``AlphaStarLearner`` the whole loop is the suite's ``Learner`` contract (selfplay/core/policy.py):
``act`` (records the decisions), ``record(reward, done)``, ``ready`` (a batch of chunks is waiting),
``update``, ``snapshot`` / ``restore`` (exploiter resets to the SL policy) and ``state_dict``.
"""

from __future__ import annotations

import copy
import math
import threading
from collections import deque
from dataclasses import asdict, dataclass, field, fields, replace

import torch

from selfplay.utils.seeding import Stream, derive_seed

from .actor import AlphaStarPolicy, batch_first, config_from_dict, layers_first
from .config import HEADS
from .losses import RLLossConfig, alphastar_rl_loss
from .network import AlphaStarNet, AlphaStarOutput


@dataclass(frozen=True)
class AlphaStarRLConfig:
    """The actor–learner's settings. AlphaStar's own values where the design gives them (Adam β, ε, the
    loss weights in ``loss``); the learning rate and batch are small-scale defaults (AlphaStar: lr 3e-5,
    batch 512 chunks of 64 steps) chosen so that a few minutes on 2 cores move the policy.

    ``early_game_decisions``: the extra action-type KL (``loss.action_type_kl_cost``) applies to the
    first that many decisions of every episode (0: never; AlphaStar: the first 4 minutes).
    ``asynchronous``: learn in a background thread while the actors play (module docstring)."""

    chunk_length: int = 16
    batch_chunks: int = 16
    learning_rate: float = 3e-4
    adam_beta1: float = 0.0
    adam_beta2: float = 0.99
    adam_eps: float = 1e-5
    grad_clip: float = 10.0
    temperature: float = 1.0
    early_game_decisions: int = 0
    asynchronous: bool = False
    loss: RLLossConfig = field(default_factory=RLLossConfig)

    def __post_init__(self) -> None:
        for name in ("chunk_length", "batch_chunks"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        for name in ("learning_rate", "grad_clip", "temperature", "adam_eps"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
        for name in ("adam_beta1", "adam_beta2"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v < 1.0):
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)!r}")
        if not isinstance(self.early_game_decisions, int) or self.early_game_decisions < 0:
            raise ValueError(f"early_game_decisions must be an int >= 0, got {self.early_game_decisions!r}")

    @classmethod
    def from_overrides(cls, **overrides) -> AlphaStarRLConfig:
        """Top-level settings by name; loss settings (``kl_cost``, ``entropy_cost``, ``td_lambda``, ...) too."""
        loss_names = {f.name for f in fields(RLLossConfig)}
        loss = {k: overrides.pop(k) for k in list(overrides) if k in loss_names}
        unknown = sorted(set(overrides) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown AlphaStar RL settings {unknown}; settings: "
                             f"{sorted({f.name for f in fields(cls)} | loss_names)}")
        base = cls(**overrides)
        return replace(base, loss=replace(base.loss, **loss)) if loss else base


@dataclass
class Chunk:
    """``T + 1`` consecutive decisions of one lane (the last one only bootstraps)."""

    lane: int
    seq: int  # the lane's chunk counter: chunk seq + 1 starts at this chunk's last decision
    obs: torch.Tensor  # [T+1, obs_size] packed
    actions: torch.Tensor  # [T+1, action_size] packed
    behaviour_log_probs: torch.Tensor  # [T+1, heads]
    rewards: torch.Tensor  # [T+1] summed from the decision until the next one
    dones: torch.Tensor  # [T+1] the episode ended before the next decision
    starts: torch.Tensor  # [T+1] the decision began an episode
    state: tuple[torch.Tensor, torch.Tensor]  # LSTM state the first decision acted from, [layers, H] each
    version: int = 0  # the oldest weight version among the first T decisions (the behaviour policy's age)


class ChunkRecorder:
    """Per-lane decision buffers → ``Chunk`` objects in ``chunks`` (module docstring)."""

    def __init__(self, lanes: int, chunk_length: int, obs_size: int, action_size: int, state_shape: tuple[int, int]):
        T1 = chunk_length + 1
        self.lanes, self.T = lanes, chunk_length
        self.obs = torch.zeros(lanes, T1, obs_size)
        self.actions = torch.zeros(lanes, T1, action_size, dtype=torch.long)
        self.logp = torch.zeros(lanes, T1, len(HEADS))
        self.rewards = torch.zeros(lanes, T1)
        self.dones = torch.zeros(lanes, T1, dtype=torch.bool)
        self.starts = torch.zeros(lanes, T1, dtype=torch.bool)
        self.h = torch.zeros(lanes, T1, *state_shape)
        self.c = torch.zeros(lanes, T1, *state_shape)
        self.versions = torch.zeros(lanes, T1, dtype=torch.long)
        self.count = torch.zeros(lanes, dtype=torch.long)
        self.seq = torch.zeros(lanes, dtype=torch.long)
        self.chunks: deque[Chunk] = deque()
        self.decisions = 0

    def add(self, rows: torch.Tensor, obs: torch.Tensor, actions: torch.Tensor, log_probs: dict,
            state: tuple[torch.Tensor, torch.Tensor], starts: torch.Tensor, version: int = 0) -> None:
        """Append one decision for each lane of ``rows`` (obs/actions/... are already those rows'),
        made with weights of ``version``."""
        if rows.numel() == 0:
            return
        pos = self.count[rows]
        self.obs[rows, pos] = obs
        self.actions[rows, pos] = actions
        self.logp[rows, pos] = torch.stack([log_probs[k] for k in HEADS], -1)
        self.rewards[rows, pos] = 0.0
        self.dones[rows, pos] = False
        self.starts[rows, pos] = starts
        self.h[rows, pos], self.c[rows, pos] = state
        self.versions[rows, pos] = int(version)
        self.count[rows] += 1
        self.decisions += int(rows.numel())
        full = rows[self.count[rows] == self.T + 1]
        for lane in full.tolist():
            self.chunks.append(Chunk(
                lane=lane, seq=int(self.seq[lane]), obs=self.obs[lane].clone(), actions=self.actions[lane].clone(),
                behaviour_log_probs=self.logp[lane].clone(), rewards=self.rewards[lane].clone(),
                dones=self.dones[lane].clone(), starts=self.starts[lane].clone(),
                state=(self.h[lane, 0].clone(), self.c[lane, 0].clone()),
                version=int(self.versions[lane, :self.T].min())))
        if full.numel():
            T = self.T
            for buf in (self.obs, self.actions, self.logp, self.rewards, self.dones, self.starts, self.h, self.c,
                        self.versions):
                buf[full, 0] = buf[full, T]
            self.count[full] = 1
            self.seq[full] += 1

    def outcome(self, reward: torch.Tensor, done: torch.Tensor) -> None:
        """The step's reward and end flag, onto each lane's latest decision."""
        has = self.count > 0
        last = (self.count - 1).clamp(min=0)
        lanes = torch.arange(self.lanes)
        self.rewards[lanes, last] += torch.where(has, reward, 0.0)
        self.dones[lanes, last] |= done & has


def slice_time(out: AlphaStarOutput, steps: int) -> AlphaStarOutput:
    """The first ``steps`` steps of a *time-major* output."""
    cut = lambda d: {k: v[:steps] for k, v in d.items()}  # noqa: E731
    return replace(out, logits=cut(out.logits), log_probs=cut(out.log_probs), entropies=cut(out.entropies),
                   argument_used=cut(out.argument_used), selected_units_pick_mask=out.selected_units_pick_mask[:steps],
                   value=out.value[:steps], values=cut(out.values), attention_maps=[])


class AlphaStarLearner:
    """The AlphaStar agent as a suite ``Learner`` (module docstring).

    ``net`` starts from the SL weights (``sl_net``, frozen, the KL anchor and the reset target); the
    batch of games is fixed by the first ``act`` (one lane per game)."""

    recurrent = True

    def __init__(self, net: AlphaStarNet, sl_net: AlphaStarNet, config: AlphaStarRLConfig = AlphaStarRLConfig(),
                 seed: int = 0):
        if asdict(net.config) != asdict(sl_net.config):
            raise ValueError("net and sl_net must have the same AlphaStarConfig")
        self.net, self.config, self.seed = net, config, int(seed)
        self.sl_net = sl_net.eval()
        for p in self.sl_net.parameters():
            p.requires_grad_(False)
        # the actors' network: the learner's own, or (asynchronous) a copy refreshed after each update
        self.actor_net = copy.deepcopy(net) if config.asynchronous else net
        self.actor = AlphaStarPolicy(self.actor_net, config.temperature, seed)
        self.layout = self.actor.layout
        self._worker: threading.Thread | None = None
        self._published: dict | None = None  # weights of a finished background update, not yet acted with
        self._last_metrics: dict = {}
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self.optimizer = self._new_optimizer()
        self.weight_version = 0
        self.recorder: ChunkRecorder | None = None
        self.sl_states: dict[int, tuple[int, tuple[torch.Tensor, torch.Tensor]]] = {}
        self._snapshot = None
        self._acted = False
        self.samples = 0  # decisions consumed by updates

    def _new_optimizer(self):
        c = self.config
        return torch.optim.Adam(self.net.parameters(), lr=c.learning_rate, betas=(c.adam_beta1, c.adam_beta2),
                                eps=c.adam_eps)

    # ---------------------------------------------------------------- acting
    def initial_state(self, batch: int):
        return self.actor.initial_state(batch)

    def act(self, obs, state=None, mask=None, episode_start=None):
        self._take_published_weights()
        step = self.actor.decide(obs, state, mask, episode_start)
        B = step["action"].shape[0]
        if self.recorder is None:
            h = step["state"][0]
            self.recorder = ChunkRecorder(B, self.config.chunk_length, self.layout.size, self.layout.action_size,
                                          tuple(h.shape[1:]))
        elif self.recorder.lanes != B:
            raise ValueError(f"the learner plays {self.recorder.lanes} games (lanes); act got {B}")
        rows = step["rows"]
        obs = torch.as_tensor(obs, dtype=torch.float32)
        self.recorder.add(rows, obs[rows], step["action"][rows],
                          {k: v[rows] for k, v in step["info"]["log_probs"].items()}, step["input_state"], step["start"],
                          version=self.weight_version)
        self._acted = True
        return step["action"], step["state"], step["info"]

    def record(self, reward, done) -> None:
        if not self._acted:
            raise RuntimeError("record() must follow an act() of the learner")
        n = self.recorder.lanes
        reward = torch.as_tensor(reward, dtype=torch.float32).reshape(-1)
        done = torch.as_tensor(done).bool().reshape(-1)
        if reward.shape != (n,) or done.shape != (n,):
            raise ValueError(f"reward and done must have shape ({n},), got {tuple(reward.shape)} and {tuple(done.shape)}")
        self.recorder.outcome(reward, done)
        self._acted = False

    def ready(self) -> bool:
        """A batch of chunks is waiting (and, asynchronous, the learner thread is free)."""
        if self._worker is not None and self._worker.is_alive():
            return False
        return self.recorder is not None and len(self.recorder.chunks) >= self.config.batch_chunks

    # ------------------------------------------------------------ asynchronous
    def _take_published_weights(self) -> None:
        """Asynchronous: the actors take the weights of the last finished update (parameters flow back)."""
        if self._error is not None:
            error, self._error = self._error, None
            raise RuntimeError("the background learner update failed") from error
        if self._published is None:
            return
        with self._lock:
            weights, self._published = self._published, None
        self.actor_net.load_state_dict(weights)
        self.weight_version += 1
        self._snapshot = None

    def wait(self) -> None:
        """Block until a background update has finished and its weights are in the actors' network."""
        if self._worker is not None:
            self._worker.join()
            self._worker = None
        self._take_published_weights()

    def _learn_in_background(self, batch: list[Chunk]) -> None:
        try:
            metrics = self._learn(batch)
            weights = {k: v.detach().clone() for k, v in self.net.state_dict().items()}
            with self._lock:
                self._published, self._last_metrics = weights, metrics
        except BaseException as error:  # surfaced by the next act / wait
            self._error = error

    # ---------------------------------------------------------------- learning
    def _take_batch(self) -> list[Chunk]:
        """Up to ``batch_chunks`` chunks, oldest first, at most one per lane (keeps each lane in order)."""
        taken, lanes, rest = [], set(), deque()
        chunks = self.recorder.chunks
        while chunks and len(taken) < self.config.batch_chunks:
            c = chunks.popleft()
            (rest if c.lane in lanes else taken).append(c)
            lanes.add(c.lane)
        chunks.extendleft(reversed(rest))
        return taken

    def _sl_start_states(self, batch: list[Chunk]) -> tuple[tuple[torch.Tensor, torch.Tensor], int]:
        """The SL network's LSTM state at each chunk's start (carried per lane; zeros at a lane's first
        chunk, which begins an episode). A lane whose previous chunk was not seen (after a resume)
        falls back to the actor's state; the number of fallbacks is returned."""
        hs, cs, fallbacks = [], [], 0
        zero = torch.zeros_like(batch[0].state[0])
        for c in batch:
            seq, state = self.sl_states.get(c.lane, (0, (zero, zero)))
            if seq != c.seq:
                fallbacks += 1
                state = c.state
            hs.append(state[0])
            cs.append(state[1])
        return layers_first((torch.stack(hs), torch.stack(cs))), fallbacks

    def take_batch(self) -> list[Chunk]:
        """The chunks the next ``update`` would learn from (oldest first, at most one per lane), taken out
        of the recorder: the acting side of a split hands them to a learner elsewhere (``update_on``)."""
        return self._take_batch() if self.recorder is not None else []

    def update_on(self, batch: list[Chunk]) -> dict:
        """One learner step, here and now, on chunks recorded elsewhere (possibly by older weights: the
        behaviour log-probabilities they carry let V-trace correct the lag); its metrics."""
        if not batch:
            raise ValueError("batch must hold at least one Chunk")
        self.wait()
        metrics = self._learn(batch)
        if self.actor_net is not self.net:
            self.actor_net.load_state_dict(self.net.state_dict())
        self.weight_version += 1
        self._snapshot = None
        return metrics

    def update(self) -> dict:
        """One learner step on the oldest chunks; its metrics (asynchronous: start it in the background
        and return the metrics of the previous background step, ``{}`` for the first)."""
        batch = self._take_batch()
        if not batch:
            raise RuntimeError("update() needs chunks; call it when ready()")
        if not self.config.asynchronous:
            return self.update_on(batch)
        self.wait()
        previous = self._last_metrics
        self._worker = threading.Thread(target=self._learn_in_background, args=(batch,), daemon=True)
        self._worker.start()
        return previous

    def _learn(self, batch: list[Chunk]) -> dict:
        """The loss on ``batch`` (module docstring) and one Adam step on ``self.net``."""
        T, cfg = self.config.chunk_length, self.config
        stack = lambda name: torch.stack([getattr(c, name) for c in batch])  # noqa: E731  [B, T+1, ...]
        starts = stack("starts")
        packed_obs, packed_actions = stack("obs"), stack("actions")
        obs = self.layout.unpack(packed_obs, episode_start=starts)
        actions = self.layout.unpack_actions(packed_actions)
        state = layers_first((torch.stack([c.state[0] for c in batch]), torch.stack([c.state[1] for c in batch])))

        self.net.train()
        out = self.net(obs, state, actions=actions, temperature=cfg.temperature).time_major()
        target = slice_time(out, T)
        bootstrap = {name: v[T].detach() for name, v in out.values.items()}
        first = lambda x: x[:, :T]  # noqa: E731
        obs_T = self.layout.unpack(first(packed_obs), episode_start=first(starts))
        actions_T = self.layout.unpack_actions(first(packed_actions))
        sl_state, fallbacks = self._sl_start_states(batch)
        with torch.no_grad():
            sl_out = self.sl_net(obs_T, sl_state, actions=actions_T, temperature=cfg.temperature)
        for c, h, cc in zip(batch, *batch_first(sl_out.state)):
            self.sl_states[c.lane] = (c.seq + 1, (h, cc))
        sl_logits = {k: v.transpose(0, 1) for k, v in sl_out.logits.items()}
        behaviour = {k: stack("behaviour_log_probs")[:, :T, i].T for i, k in enumerate(HEADS)}
        rewards = stack("rewards")[:, :T].T
        discounts = 1.0 - stack("dones")[:, :T].T.float()
        early = None
        if cfg.early_game_decisions > 0:
            early = self._early_game(starts[:, :T]).T
        terms = alphastar_rl_loss(target, behaviour, sl_logits, rewards, discounts, bootstrap,
                                  early_game=early, config=cfg.loss)
        self.optimizer.zero_grad(set_to_none=True)
        terms["total"].backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.net.parameters(), cfg.grad_clip)
        self.optimizer.step()
        self.samples += len(batch) * T
        with torch.no_grad():
            log_rho = sum(target.log_probs[k] for k in HEADS).detach() - sum(behaviour.values())
        metrics = {k.replace("/", "_"): float(v.detach()) for k, v in terms.items()}
        metrics.update(grad_norm=float(grad_norm), chunks=len(batch), value_mean=float(target.value.detach().mean()),
                       rho_mean=float(log_rho.exp().clamp(max=10).mean()), sl_state_fallbacks=fallbacks,
                       reward_sum=float(rewards.sum()))
        return metrics

    def _early_game(self, starts: torch.Tensor) -> torch.Tensor:
        """[B, T] bool: the decision is among the first ``early_game_decisions`` of its episode, counted
        from episode starts inside the chunk (a chunk without a start counts as late game)."""
        idx = torch.arange(starts.shape[1]).expand_as(starts)
        last_start = torch.where(starts, idx, -10**9).cummax(1).values
        return (idx - last_start) < self.config.early_game_decisions

    # ---------------------------------------------------------------- policies
    def snapshot(self) -> AlphaStarPolicy:
        """A frozen copy of the current weights; the same object while ``weight_version`` is unchanged."""
        if self._snapshot is None or self._snapshot.weight_version != self.weight_version:
            net = copy.deepcopy(self.actor_net).eval()
            for p in net.parameters():
                p.requires_grad_(False)
            policy = AlphaStarPolicy(net, self.config.temperature, derive_seed(self.seed, Stream.SNAPSHOT, self.weight_version))
            policy.weight_version = self.weight_version
            self._snapshot = policy
        return self._snapshot

    def restore(self, frozen: AlphaStarPolicy) -> None:
        """Take ``frozen``'s weights (exploiter resets to the SL policy) with a fresh optimiser. Recorded
        decisions are kept: V-trace corrects for their older behaviour policy."""
        if not isinstance(frozen, AlphaStarPolicy) or asdict(frozen.config) != asdict(self.net.config):
            raise ValueError("frozen must be an AlphaStarPolicy with the learner's network config")
        self.wait()
        self.net.load_state_dict(frozen.net.state_dict())
        if self.actor_net is not self.net:
            self.actor_net.load_state_dict(frozen.net.state_dict())
        self.optimizer = self._new_optimizer()
        self.weight_version += 1
        self._snapshot = None

    def state_dict(self) -> dict:
        """Weights, optimiser, sampling generator and counters. Recorded decisions are not kept: a
        resumed run restarts its games, so every lane starts a new episode and a new chunk."""
        self.wait()
        return copy.deepcopy({"network_config": asdict(self.net.config), "rl_config": asdict(self.config),
                              "seed": self.seed, "weight_version": self.weight_version, "samples": self.samples,
                              "network": self.net.state_dict(), "optimizer": self.optimizer.state_dict(),
                              "generator": self.actor.generator.get_state()})

    def load_state_dict(self, state: dict) -> None:
        if config_from_dict(state["network_config"]) != self.net.config:
            raise ValueError("state['network_config'] must match this learner's network")
        if state["rl_config"] != asdict(self.config):
            raise ValueError(f"state['rl_config'] must match this learner's config {asdict(self.config)}")
        self.wait()
        self.net.load_state_dict(state["network"])
        if self.actor_net is not self.net:
            self.actor_net.load_state_dict(state["network"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.actor.generator.set_state(state["generator"])
        self.seed, self.weight_version, self.samples = int(state["seed"]), int(state["weight_version"]), int(state["samples"])
        self.recorder, self.sl_states, self._snapshot, self._acted = None, {}, None, False


__all__ = ["AlphaStarLearner", "AlphaStarRLConfig", "Chunk", "ChunkRecorder", "slice_time"]
