"""The AlphaStar league as Ray actors (docs/guides/ray.md, "The league as Ray actors"; docs/design/selfplay.md §3).

Three kinds of actor, and the driver that watches them:

- **Coordinator** (one, ``LeagueCoordinator``): owns the league exactly as the local path holds it —
  a ``LeagueTrainer`` whose ``LeagueMode`` carries the menagerie, the decayed payoff table, PFSP
  matchmaking and the checkpoint and reset rules, whose players carry the counters and each player's
  last learned state, and whose ``RunDir`` takes the directory's lock and commits (new policy files,
  then ``state-<gen>.npz``, then ``manifest.json``: ``Trainer.save``). The committed state has the
  local path's format, so ``selfplay league`` (local or ``--ray``) resumes it, and ``evaluate_league``
  reports on it.
- **Rollout workers** (``RolloutWorker``): ask the coordinator for a *lease* on a player, load the
  player's state, and play its batch of games (``GameRunner``) until the rollout is full. At every
  step where games ended, one call (``report``) sends the finished games' outcomes and asks for as
  many new opponents; the reply names each opponent by key with an object-store reference to its
  frozen weights (a historical by menagerie id, an active player by name and weight version), which
  the worker fetches once and caches. When the rollout is full the worker hands it to the player's
  learner and tells the coordinator to expect the result, then takes the next lease.
- **Learners** (``LeagueLearner``, one per player, may ask for a GPU): take a full rollout, run the
  update, and return the new state; the coordinator publishes the new frozen weights to the object
  store (``ray.put``, owned by the coordinator so they outlive any worker) for the workers to pick up.

**The AlphaStar agent (chunk agents).** Its learner's state does not hold what it recorded: the
worker plays until a batch of chunks is ready, takes it out of its recorder (``take_batch``: at most
one chunk per lane, oldest first, each with the behaviour policy's log-probabilities and the weight
version of its oldest decision), puts it in the object store and hands the reference to the
coordinator (``handoff``), then takes its next lease — the player is free again at once. The
coordinator runs a player's updates one at a time in hand-off order: it calls the player's learner
with the player's state *as last committed* and the batch's reference (``LeagueLearner.learn``: the
learner fetches the chunks straight from the worker's node and runs ``update_on``), and the reply
comes back to the coordinator itself (``update_done``), which applies it like ``finish`` and starts
the next. Partial chunks of games that go on into the worker's next lease of the same player stay
in its recorder.

**Staleness.** PPO: a player is leased to one worker at a time, and not again until its update is
in: every rollout is collected entirely with the weights the update starts from — on-policy, zero
lag, as in the single-process loop. Parallelism comes from the players (a league has 4 by default)
and from the learners updating while the workers play other players. AlphaStar: a player is leased
again while at most ``max_lag`` (default 1) of its updates are unfinished, so the weights a lease
plays with are at most ``max_lag`` updates older than the weights its batch updates; decisions
carried over from the worker's previous lease of that player (partial chunks, and chunks beyond one
per lane left in its recorder) are older still. V-trace, with the behaviour log-probabilities each
chunk carries, corrects for it, and every update records the measured lag (``policy_lag`` in
``metrics.csv``: weight versions between the batch's oldest decision and the weights it updates;
an exploiter's reset counts as a version).
Opponents that are *active* players are the snapshot of their last finished update.

**Faults.** A finished game is counted when its outcome reaches the coordinator (``matches.csv`` and
the payoff table are updated together, in one actor method); games still running when a worker dies
are never counted. A worker that dies is replaced by the driver; its lease is released and the
player goes, with its last learned state, to another worker (its rollout so far is lost); chunk
batches it had handed off are learned, or, if they died with it (the worker owns them in the object
store), their update is dropped (``dropped_updates``; the steps are not counted, the games stay
counted). A learner holds nothing between updates (the rollout, or the committed state with the
chunks, comes with each call; the AlphaStar learner keeps only the frozen SL network's per-lane
LSTM states, a cache), so Ray restarts one that died and retries the update from the last commit.
A coordinator that dies takes the other actors down with it, and the driver restarts them all from
the last commit (games reported since are not counted, chunk batches queued are dropped). A run whose driver
was killed resumes from the last commit (``selfplay league --ray`` again). The driver
(``LeagueDriver``) records every actor lost — the worker, the node it ran on and whether that node
left the cluster, the worker that replaced it; coordinator restarts — in ``ray_events.csv``, and
``train_league_on_ray`` adds them to ``report.md`` with each player's opponents drawn versus games
finished (``league_report``). Scheduling
order is not reproducible across runs (as the asynchronous AlphaStar learner): the Ray league is
not bit-for-bit the single-process one; the single-process path stays the default and is unchanged.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from selfplay.training.distributed.executor import RaySettings, connect
from selfplay.training.league_loop import LeagueTrainConfig, LeagueTrainer, opponent_kind
from selfplay.training.trainer import RECENT_GAMES
from selfplay.utils.seeding import Stream, derive_seed

# agents whose workers stream recorded chunks to the learner (``take_batch`` / ``update_on``), V-trace
# correcting the lag between the weights that acted and the weights that learn; the others (PPO) hand
# their full rollout over inside the learner's state_dict
CHUNK_AGENTS = ("alphastar",)
SEQ_EPOCH = 2 ** 32  # a worker's chunk sequence numbers of one run of games: epoch · SEQ_EPOCH + seq


@dataclass
class RayLeagueSettings:
    """Actors of a Ray league and what each asks for."""

    ray: RaySettings = field(default_factory=RaySettings)
    workers: int = 2
    cpus_per_worker: float = 1.0
    cpus_per_learner: float = 0.0  # learners work only between a worker's rollouts: by default they share the CPUs
    gpus_per_learner: float = 0.0
    worker_resources: dict | None = None  # custom resources (None: {"sc2": 1} for smac:MAP@sc2, else none)
    max_lag: int = 1  # chunk agents: a player is leased again while ≤ max_lag of its updates are unfinished
    max_worker_restarts: int = 10
    max_coordinator_restarts: int = 3
    poll_seconds: float = 0.2
    progress: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.workers, int) and self.workers >= 1):
            raise ValueError(f"workers must be an integer ≥ 1, got {self.workers!r}")
        for name in ("cpus_per_worker", "cpus_per_learner", "gpus_per_learner"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be ≥ 0, got {getattr(self, name)!r}")
        if not (isinstance(self.max_lag, int) and self.max_lag >= 0):
            raise ValueError(f"max_lag must be an integer ≥ 0, got {self.max_lag!r}")
        for name in ("max_worker_restarts", "max_coordinator_restarts"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be ≥ 0, got {getattr(self, name)!r}")

    def resources_for(self, env: str) -> dict:
        """Custom resources of a rollout worker: real-game SMAC workers land only on nodes with the game."""
        if self.worker_resources is not None:
            return dict(self.worker_resources)
        from selfplay.training.registry import is_smac, smac_backend

        return {"sc2": 1.0} if is_smac(env) and smac_backend(env) == "sc2" else {}


@dataclass
class _Lease:
    id: int
    player: str
    worker: int
    handed: bool = False  # chunk agents: its chunks went to the learner, the player may be leased again
    steps: int = 0  # steps of its games, once handed off


@dataclass
class _Outcome:
    """A finished game as ``LeagueMode.game_finished`` reads it."""

    opponent: Hashable
    score: float


class LeagueCoordinator:
    """The league's state and its commits (run as a Ray actor; plain Python otherwise)."""

    def __init__(self, config: LeagueTrainConfig, out: str, max_lag: int = 1) -> None:
        import torch

        torch.set_num_threads(1)  # this actor's own process
        self.chunks = config.agent in CHUNK_AGENTS
        self.max_lag = max_lag if self.chunks else 0
        self.trainer = t = LeagueTrainer(config, out)
        t.run.lock()
        # the commit this league resumed from (0: a fresh start); the workers' seeds depend on it
        self.resumed_from = t.run.read_manifest()["generation"] if t.load() else 0
        if not self.resumed_from:
            t.run.write_config(t.run_config)
            t.mode.start(t)
            t.save()
        self.start = time.perf_counter() - t.seconds
        self.leases: dict[int, _Lease] = {}
        self.held: dict[str, int] = {}  # player -> lease id
        self.last: dict[str, tuple[int, int]] = {}  # player -> (worker, lease id) of its last completed lease
        self.lease_steps: dict[int, int] = {}  # lease id -> steps reported so far (the matches' step column)
        self.next_id = 0
        # chunk agents: handed-off leases per player, their steps, the queue of updates to run (one at a time
        # per player, each from the state the previous one left), the update running, and the learners
        self.pending: dict[str, list[int]] = {p.name: [] for p in t.players}
        self.pending_steps: dict[str, int] = {p.name: 0 for p in t.players}
        self.queue: dict[str, deque] = {p.name: deque() for p in t.players}
        self.updating: dict[str, int] = {}
        self.learners: dict[str, Any] = {}
        self._me: Any = None
        self._update_calls: dict[str, Any] = {}  # player -> ref of its running update_done call
        self._state_refs: dict[str, tuple[int, Any]] = {}  # player -> (updates, ref of its learner state)
        self._policy_refs: dict[Any, Any] = {}  # ("h", id) or ("p", name, weight version) -> ref
        self.counts = {"leases": 0, "finished": 0, "released": 0, "ignored_finishes": 0, "reports": 0,
                       "handoffs": 0, "dropped_updates": 0, "max_lag_at_lease": 0}
        # where the coordinator's time goes (seconds inside each method), and when play began and ended
        self.busy = {"lease_s": 0.0, "report_s": 0.0, "finish_s": 0.0, "commit_s": 0.0, "handoff_to_finish_s": 0.0}
        self.first_lease: float | None = None
        self.last_finish: float | None = None
        self.committed = _committed_games(t.matches)  # (games, league games) the last commit holds

    # -- leases -------------------------------------------------------------------------------
    def players(self) -> list[str]:
        return [p.name for p in self.trainer.players]

    def resumed(self) -> int:
        """The generation of the commit this league resumed from; 0 for a fresh start."""
        return self.resumed_from

    def set_learners(self, learners: dict[str, Any]) -> None:
        """The learner actors (chunk agents: the coordinator starts their updates)."""
        self.learners = dict(learners)

    def _done(self, p) -> bool:
        return self.trainer.mode.done(p)

    def lease(self, worker: int) -> dict:
        """A player to play (``{"lease", "player", "index", "state", "continues"}``), ``{"wait": True}``
        while every unfinished player is leased, or ``{"done": True}``."""
        import ray

        began = time.perf_counter()
        try:
            return self._lease(worker, ray)
        finally:
            self.busy["lease_s"] += time.perf_counter() - began

    def _lease(self, worker: int, ray: Any) -> dict:
        t = self.trainer
        # steps handed off count towards the budget; a chunk agent's player is leased again while at most
        # max_lag of its updates are unfinished (PPO: max_lag 0, its rollouts stay on-policy)
        free = [p for p in t.players if p.steps + self.pending_steps[p.name] < t.config.steps
                and p.name not in self.held and len(self.pending[p.name]) <= self.max_lag]
        if not free:
            return {"done": True} if not self.held and not any(self.pending.values()) else {"wait": True}
        # the least advanced player first (players progress together, so the end of the run has no long
        # tail of one player's collect-update-collect); among equals, one whose games this worker holds
        p = min(free, key=lambda q: (q.steps + self.pending_steps[q.name], self.last.get(q.name, (None,))[0] != worker))
        self.counts["max_lag_at_lease"] = max(self.counts["max_lag_at_lease"], len(self.pending[p.name]))
        lease = _Lease(self.next_id, p.name, worker)
        self.next_id += 1
        self.leases[lease.id], self.held[p.name] = lease, lease.id
        self.lease_steps[lease.id] = 0
        self.counts["leases"] += 1
        self.first_lease = self.first_lease or time.time()
        last = self.last.get(p.name)
        return {"lease": lease.id, "player": p.name, "index": t.players.index(p), "state": self._state_ref(p, ray),
                "continues": last is not None and last[0] == worker}

    def _state_ref(self, p, ray: Any) -> Any:
        """The object-store copy of ``p``'s learner state as last committed (one per update)."""
        cached = self._state_refs.get(p.name)
        if cached is None or cached[0] != p.updates:
            cached = (p.updates, ray.put(p.learner.state_dict()))
            self._state_refs[p.name] = cached
        return cached[1]

    def report(self, lease_id: int, outcomes: list[tuple], steps: int, k: int) -> list | None:
        """Record finished games ``(opponent, seat, score, trajectory)`` of a lease (``steps``: the lease's
        steps so far) and draw ``k`` opponents: ``[(key, token, ref)]``. ``None``: the lease was revoked."""
        lease = self.leases.get(lease_id)
        if lease is None or lease.handed:
            return None
        began = time.perf_counter()
        t = self.trainer
        p = t.player(lease.player)
        self.counts["reports"] += 1
        self.lease_steps[lease_id] = steps
        played = p.steps + self.pending_steps[p.name] + steps
        for key, seat, score, trajectory in outcomes:
            t.matches.append((p.name, p.episodes, played, key, t.mode.opponent_kind(p, key), seat, score))
            if trajectory is not None:
                t.trajectories.append(np.asarray(trajectory)[None])
            p.episodes += 1
            t.mode.game_finished(t, p, _Outcome(key, score))
        drawn = [self._draw(p) for _ in range(k)]
        self.busy["report_s"] += time.perf_counter() - began
        return drawn

    def _draw(self, p) -> tuple:
        """One opponent by the league's matchmaking, logged as ``LeagueMode.draw`` logs it."""
        import ray

        mode, league = self.trainer.mode, self.trainer.mode.league
        by_kind: dict[str, float] = {}
        for key, prob in league.distribution(p.name).items():
            kind = opponent_kind(league, key)
            by_kind[kind] = by_kind.get(kind, 0.0) + prob
        key = league.get_match(p.name, self.trainer.rng)
        mode.drawn[(p.name, opponent_kind(league, key))] += 1
        for kind, prob in by_kind.items():
            mode.expected[(p.name, kind)] += prob
        if isinstance(key, str):
            policy = self.trainer.player(key).learner.snapshot()
            token = ("p", key, policy.weight_version)
        else:
            policy, token = None, ("h", int(key))
        if token not in self._policy_refs:
            self._policy_refs[token] = ray.put(policy if policy is not None else league.menagerie[key].policy)
        return key, token, self._policy_refs[token]

    def finish(self, lease_id: int, learned: tuple[dict, dict], steps: int, handed: float | None = None) -> bool:
        """The lease's rollout was learned (``learned``: the learner's new state and metrics): count the
        steps, apply the league's checkpoint and reset rules, commit. False: the lease was revoked.
        ``handed``: when the worker handed the rollout to the learner (``time.time()``), for the latency."""
        lease = self.leases.pop(lease_id, None)
        if lease is None:
            self.counts["ignored_finishes"] += 1
            return False
        if handed is not None:
            self.busy["handoff_to_finish_s"] += time.time() - handed
        del self.held[lease.player]
        self.lease_steps.pop(lease_id, None)
        self._learned(lease, learned, steps)
        return True

    # -- chunk agents: hand-off, then updates one at a time per player --------------------------
    def handoff(self, lease_id: int, chunks: list, steps: int, handed: float | None = None) -> bool:
        """A chunk agent's lease is played out: ``chunks`` (``[ref]``, the batch in the object store) go to
        the player's learner once its earlier updates are in, and the player may be leased again (at most
        ``max_lag`` unfinished updates). False: the lease was revoked (the chunks are dropped)."""
        lease = self.leases.get(lease_id)
        if lease is None or lease.handed:
            return False
        p = lease.player
        lease.handed, lease.steps = True, steps
        del self.held[p]
        self.lease_steps.pop(lease_id, None)
        self.pending[p].append(lease_id)
        self.pending_steps[p] += steps
        self.last[p] = (lease.worker, lease_id)
        self.queue[p].append((lease_id, chunks, handed))
        self.counts["handoffs"] += 1
        self._next_update(p)
        return True

    def _next_update(self, name: str) -> None:
        """Start the player's next queued update from its state as last committed; the learner's reply
        goes to ``update_done`` (this actor calling itself, so no worker waits for it)."""
        import ray

        if name in self.updating or not self.queue[name]:
            return
        lease_id, chunks, handed = self.queue[name].popleft()
        self.updating[name] = lease_id
        if self._me is None:
            self._me = ray.get_runtime_context().current_actor
        learned = self.learners[name].learn.remote(self._state_ref(self.trainer.player(name), ray), chunks)
        self._update_calls[name] = self._me.update_done.remote(lease_id, learned, handed)

    def update_done(self, lease_id: int, learned: tuple[dict, dict] | None, handed: float | None = None) -> bool:
        """A chunk agent's update is in (``None``: its chunks were lost with the worker that held them, so
        nothing is learned and the steps are not counted; the games stay counted): apply it as ``finish``
        does, then start the player's next one."""
        lease = self.leases.pop(lease_id)
        name = lease.player
        del self.updating[name]
        self.pending[name].remove(lease_id)
        self.pending_steps[name] -= lease.steps
        if handed is not None:
            self.busy["handoff_to_finish_s"] += time.time() - handed
        if learned is None:
            self.counts["dropped_updates"] += 1
        else:
            self._learned(lease, learned, lease.steps)
        self._next_update(name)
        return learned is not None

    def _learned(self, lease: _Lease, learned: tuple[dict, dict], steps: int) -> None:
        """An update of ``lease``'s player: its new state, the steps, the league's rules, a commit."""
        began = time.perf_counter()
        t = self.trainer
        p = t.player(lease.player)
        state, metrics = learned
        p.learner.load_state_dict(state)
        p.steps += steps
        p.updates += 1
        extra = t.mode.learner_updated(t, p, metrics)
        recent = [m[6] for m in t.matches[-4 * RECENT_GAMES:] if m[0] == p.name][-RECENT_GAMES:]
        t.metrics.append({"player": p.name, "update": p.updates, "episode": p.episodes, "step": p.steps,
                          "menagerie_size": t.mode.menagerie_size(p),
                          "win_rate": float(np.mean(recent)) if recent else 0.5,
                          **extra, **{k: float(v) for k, v in metrics.items()}})
        if not lease.handed:  # a chunk agent's last lease was set at its hand-off (a later one may have followed)
            self.last[p.name] = (lease.worker, lease.id)
        self.counts["finished"] += 1
        t.seconds = time.perf_counter() - self.start
        committing = time.perf_counter()
        t.save()
        self.committed = _committed_games(t.matches)
        now = time.perf_counter()
        self.busy["commit_s"] += now - committing
        self.busy["finish_s"] += now - began
        self.last_finish = time.time()

    def release_worker(self, worker: int) -> int:
        """A worker died: its leases go back (their rollouts are lost; finished games stay counted). Leases
        it handed off stay: their updates run, or are dropped if their chunks died with the worker."""
        gone = [lid for lid, lease in self.leases.items() if lease.worker == worker and not lease.handed]
        for lid in gone:
            lease = self.leases.pop(lid)
            del self.held[lease.player]
            self.lease_steps.pop(lid, None)
            self.last.pop(lease.player, None)  # its games died with the worker
        self.counts["released"] += len(gone)
        return len(gone)

    def progress(self) -> dict:
        """Counters for the driver; raises the error of a chunk agent's update that failed (a bug, not a
        fault of the cluster: Ray retries updates whose learner died), which would otherwise stall it."""
        import ray

        for ref in list(self._update_calls.values()):
            if ray.wait([ref], timeout=0)[0]:
                ray.get(ref)
        t = self.trainer
        return {"steps": sum(p.steps for p in t.players), "episodes": sum(p.episodes for p in t.players),
                "updates": sum(p.updates for p in t.players), "held": len(self.held), **self.counts, **self.busy,
                "pending": sum(len(v) for v in self.pending.values()),
                "committed_games": self.committed[0], "committed_league_games": self.committed[1],
                "done": not self.held and not any(self.pending.values()) and all(self._done(p) for p in t.players),
                "play_seconds": (self.last_finish - self.first_lease) if self.last_finish and self.first_lease else 0.0}

    def close(self) -> dict:
        """The last commit, then the lock goes; returns the progress counters."""
        t = self.trainer
        t.seconds = time.perf_counter() - self.start
        t.save()
        t.run.unlock()
        return self.progress()


def _committed_games(matches: list[tuple]) -> tuple[int, int]:
    """(games, league games — against another player or a historical, the games the payoff records)."""
    return len(matches), sum(1 for m in matches if m[0] != m[3])


class LeagueLearner:
    """One player's learner: takes a full rollout (the learner's state with its buffer), updates, and
    returns the new state and the update's metrics. For a chunk agent (``learn``) it takes the player's
    state as last committed and a batch of chunks, and keeps nothing between updates but the SL
    network's per-lane LSTM states (a cache for the KL term's target; without it the learner falls
    back to the actor's stored state, counted in the ``sl_state_fallbacks`` metric)."""

    def __init__(self, config: LeagueTrainConfig, index: int) -> None:
        import torch

        from selfplay.training.registry import agent_kit, env_for_agent, make_env

        torch.set_num_threads(1)
        kit = agent_kit(config.agent, config.env)
        env = make_env(env_for_agent(config.env, config.agent), 1, seed=0)  # for the network's shapes only
        self.learner = kit.make_learner(env, derive_seed(config.seed, Stream.LEARNER, index), **config.agent_settings)
        if getattr(getattr(self.learner, "config", None), "linear_lr_decay", False):
            raise ValueError("linear_lr_decay needs the run's progress, which the Ray league's learners are not told: "
                             "run the league without --ray")
        self.counts = {"updates": 0, "samples": 0, "update_s": 0.0, "lost_chunks": 0}

    def update(self, state: dict) -> tuple[dict, dict]:
        self.learner.load_state_dict(state)
        began = time.perf_counter()
        samples = self.learner.buffer.num_envs * self.learner.buffer.rollout_length
        metrics = self.learner.update()
        self.counts["update_s"] += time.perf_counter() - began
        self.counts["updates"] += 1
        self.counts["samples"] += samples
        return self.learner.state_dict(), {k: float(v) for k, v in metrics.items()}

    def learn(self, state: dict, chunks: list) -> tuple[dict, dict] | None:
        """A chunk agent's update: ``state`` (the player's, as last committed) plus the batch ``chunks``
        (``[ref]``, fetched here from the worker that recorded it; ``None`` is returned if that worker died
        and took it along). Metrics gain ``policy_lag``: how many weight versions the oldest decision of
        the batch is behind the weights it updates (V-trace corrects for it)."""
        import ray

        try:
            batch = ray.get(chunks[0])
        except ray.exceptions.ObjectLostError:
            self.counts["lost_chunks"] += 1
            return None
        sl_states = self.learner.sl_states
        self.learner.load_state_dict(state)
        self.learner.sl_states = sl_states  # the frozen SL network's states do not depend on the weights
        lag = max(self.learner.weight_version - c.version for c in batch)
        began = time.perf_counter()
        metrics = self.learner.update_on(batch)
        self.counts["update_s"] += time.perf_counter() - began
        self.counts["updates"] += 1
        self.counts["samples"] += sum(c.rewards.shape[0] - 1 for c in batch)
        return self.learner.state_dict(), {**{k: float(v) for k, v in metrics.items()}, "policy_lag": float(lag)}

    def stats(self) -> dict:
        return dict(self.counts)


class _Revoked(Exception):
    """The coordinator no longer holds this worker's lease."""


class RolloutWorker:
    """Plays leased players' batched games; one ``run`` call loops until the league is done."""

    def __init__(self, config: LeagueTrainConfig, worker: int, coordinator: Any, learners: dict[str, Any],
                 resumed_from: int = 0) -> None:
        """``resumed_from``: the generation of the commit the league resumed from (0: a fresh start). A
        fresh league's worker draws from ``SAMPLER`` [1 + worker] and plays player *i* in ``ENV`` [i,
        1 + worker]; a resumed league's from ``SAMPLER`` [1 + worker, generation] and ``ENV_RESUMED`` [i,
        1 + worker, generation], so a restarted league does not replay its first run's games."""
        import torch

        from selfplay.training.registry import agent_kit, env_for_agent

        torch.set_num_threads(1)
        self.config, self.worker, self.coordinator, self.learners = config, worker, coordinator, learners
        self.kit = agent_kit(config.agent, config.env)
        self.env_name = env_for_agent(config.env, config.agent)
        self.resumed_from = resumed_from
        after = (resumed_from,) if resumed_from else ()
        self.rng = np.random.default_rng(derive_seed(config.seed, Stream.SAMPLER, 1 + worker, *after))
        self.envs: dict[str, Any] = {}
        self.local: dict[str, Any] = {}  # player -> a learner object that acts (its state comes with each lease)
        self.runners: dict[str, Any] = {}
        self.cache: dict[tuple, Any] = {}  # opponent token -> frozen policy
        self.chunks = config.agent in CHUNK_AGENTS
        self.epochs: dict[str, int] = {}  # player -> runs of games started here (chunk sequence epochs)
        # games whose opponent was drawn but which never finished here: dropped when the worker started a
        # new run of games for a player (its lease was another worker's last, or was revoked), and those
        # still in play when the league was done
        self.stats = {"leases": 0, "reports": 0, "report_s": 0.0, "lease_s": 0.0, "fetches": 0, "fetch_s": 0.0,
                      "steps": 0, "play_s": 0.0, "revoked": 0, "dropped_games": 0, "games_in_play_at_end": 0}

    def pid(self) -> int:
        import os

        return os.getpid()

    def node(self) -> str:
        """The id of the Ray node this worker runs on."""
        import ray

        return ray.get_runtime_context().get_node_id()

    def run(self) -> dict:
        import ray

        while True:
            t0 = time.perf_counter()
            lease = ray.get(self.coordinator.lease.remote(self.worker))
            self.stats["lease_s"] += time.perf_counter() - t0
            if lease.get("done"):
                self.stats["games_in_play_at_end"] = sum(r.n for r in self.runners.values())
                return self.stats
            if lease.get("wait"):
                time.sleep(0.01)
                continue
            self.stats["leases"] += 1
            try:
                self._play(lease)
            except _Revoked:
                self.stats["revoked"] += 1
                dropped = self.runners.pop(lease["player"], None)
                self.stats["dropped_games"] += dropped.n if dropped is not None else 0

    def make_player(self, name: str, index: int) -> None:
        """This worker's environment for player ``name`` (the ``index``-th; its own seed per worker) and a
        learner object that acts (its state comes with each lease), made at the player's first lease."""
        from selfplay.training.registry import make_env

        cfg = self.config
        if name not in self.envs:
            stream, after = (Stream.ENV_RESUMED, (self.resumed_from,)) if self.resumed_from else (Stream.ENV, ())
            self.envs[name] = make_env(self.env_name, cfg.num_envs, seed=derive_seed(cfg.seed, stream, index, 1 + self.worker, *after))
            self.local[name] = self.kit.make_learner(self.envs[name], derive_seed(cfg.seed, Stream.LEARNER, index),
                                                     **cfg.agent_settings)

    def _play(self, lease: dict) -> None:
        import ray

        from selfplay.training.games import GameRunner

        name = lease["player"]
        self.make_player(name, lease["index"])
        learner = self.local[name]
        runner = self.runners.get(name) if lease["continues"] else None
        recorder = getattr(learner, "recorder", None) if runner is not None else None
        learner.load_state_dict(ray.get(lease["state"]))
        if self.chunks:  # the games go on: so do their lanes' partial chunks (V-trace corrects their lag)
            learner.recorder = recorder
        self._lease, self._pending, self._steps = lease["lease"], [], 0
        started = time.perf_counter()
        if runner is None:
            if name in self.runners:
                self.stats["dropped_games"] += self.runners[name].n
            runner = GameRunner(self.envs[name], learner, self._draw, self.rng)
            self.runners[name] = runner
            self.epochs[name] = self.epochs.get(name, -1) + 1
            runner.start()
        while not learner.ready():
            finished = runner.step()
            self._steps += runner.n
            if finished:
                self._pending = [(g.opponent, g.seat, g.score, g.trajectory) for g in finished]
                runner.restart([g.game for g in finished])  # the outcomes travel with the request
        self.stats["steps"] += self._steps
        self.stats["play_s"] += time.perf_counter() - started
        if self.chunks:
            self._handoff(learner, name)
            return
        learned = self.learners[name].update.remote(learner.state_dict())
        self.coordinator.finish.remote(self._lease, learned, self._steps, time.time())

    def _handoff(self, learner: Any, name: str) -> None:
        """A chunk agent's batch into the object store (owned here), its reference to the coordinator,
        which runs the update when the player's earlier ones are in. Lanes are renamed per worker and
        their sequence numbers per run of games, so the learner carries the SL network's state per lane."""
        import ray

        batch = learner.take_batch()
        for c in batch:
            c.lane = self.worker * self.config.num_envs + c.lane
            c.seq = self.epochs[name] * SEQ_EPOCH + c.seq
        self.coordinator.handoff.remote(self._lease, [ray.put(batch)], self._steps, time.time())

    def _draw(self, k: int) -> list:
        import ray

        t0 = time.perf_counter()
        reply = ray.get(self.coordinator.report.remote(self._lease, self._pending, self._steps, k))
        self.stats["reports"] += 1
        self.stats["report_s"] += time.perf_counter() - t0
        self._pending = []
        if reply is None:
            raise _Revoked()
        out = []
        for key, token, ref in reply:
            if token not in self.cache:
                t0 = time.perf_counter()
                self.cache[token] = ray.get(ref)
                self.stats["fetches"] += 1
                self.stats["fetch_s"] += time.perf_counter() - t0
            out.append((key, self.cache[token]))
        return out


@dataclass
class RayLeagueResult:
    progress: dict
    workers: dict[int, dict]  # each finished worker's message counters and times
    restarts: int
    seconds: float
    learners: dict[str, dict] = field(default_factory=dict)  # each learner's updates, samples and update time
    coordinator_restarts: int = 0
    events: list[dict] = field(default_factory=list)  # actors lost and replaced (``EVENT_COLUMNS``), in order


NODE_DEATH_WAIT_S = 15.0  # how long the end of a run waits for the cluster to report a lost worker's node
EVENT_COLUMNS = ("seconds", "event", "worker", "node", "node_lost", "replaced_by", "detail")
EVENTS_FILE = "ray_events.csv"  # in the run directory: one row per event, appended by every run of the league


class _CoordinatorDied(Exception):
    """The coordinator actor (or its node) died: everything restarts from the last commit."""


@dataclass
class _Actors:
    coordinator: Any
    learners: dict[str, Any]
    workers: dict[int, Any] = field(default_factory=dict)
    running: dict[Any, int] = field(default_factory=dict)  # run() result ref -> worker id
    nodes: dict[int, Any] = field(default_factory=dict)  # worker id -> ref of the node id it runs on

    def all(self) -> list:
        return [self.coordinator, *self.learners.values(), *self.workers.values()]


class LeagueDriver:
    """Starts a Ray league's actors and watches them until the league is done (``run_league_on_ray``).

    A rollout worker that dies is replaced by a new one (a new worker id; its lease released) and the
    loss is recorded with the node the worker ran on and whether that node is gone from the cluster; a
    worker's own error (a bug, not a fault of the cluster) is raised. A coordinator that dies takes
    every actor down with it and all restart from the last commit. Every loss is an event
    (``EVENT_COLUMNS``), returned in the result and appended to ``ray_events.csv`` in the run directory.
    """

    def __init__(self, config: LeagueTrainConfig, out: str | Path, settings: RayLeagueSettings,
                 on_poll: Callable[[dict, dict], None] | None = None) -> None:
        self.config, self.out, self.settings, self.on_poll = config, Path(out), settings, on_poll
        self.ray = connect(settings.ray)
        self.started = time.perf_counter()
        self.finished: dict[int, dict] = {}  # worker id -> the counters its run() returned
        self.worker_restarts = 0
        self.coordinator_restarts = 0
        self.next_worker = 0
        self.resumed_from = 0  # the generation the coordinator resumed from (``LeagueCoordinator.resumed``)
        self.events: list[dict] = []
        self.actors: _Actors | None = None
        self.bar = self._progress_bar()
        self._classes()

    def _classes(self) -> None:
        """The actor classes with their resources: the coordinator writes the run directory, so it runs on
        the driver's node; a learner holds nothing between updates (the rollout brings the state), so Ray
        restarts one whose process or node died and retries the update there."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray, s = self.ray, self.settings
        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        self.coordinator_cls = ray.remote(LeagueCoordinator).options(num_cpus=0, scheduling_strategy=here)
        self.learner_cls = ray.remote(LeagueLearner).options(num_cpus=s.cpus_per_learner, num_gpus=s.gpus_per_learner,
                                                             max_restarts=-1, max_task_retries=-1)
        self.worker_cls = ray.remote(RolloutWorker).options(num_cpus=s.cpus_per_worker,
                                                            resources=s.resources_for(self.config.env))

    def _progress_bar(self) -> Any:
        if not self.settings.progress:
            return None
        from tqdm import tqdm

        league = self.config.league_config()
        players = league.main + league.main_exploiters + league.league_exploiters
        return tqdm(total=self.config.steps * players, unit="step", leave=False)

    # -- the run -------------------------------------------------------------------------------
    def run(self) -> RayLeagueResult:
        """Train until the league is done (resuming its last commit); the actors are gone afterwards."""
        try:
            progress, learned = self._until_done()
        finally:
            if self.bar is not None:
                self.bar.close()
            self._kill_actors()
            self._nodes_lost()
            self._write_events()
        return RayLeagueResult(progress, self.finished, self.worker_restarts, time.perf_counter() - self.started,
                               learned, self.coordinator_restarts, list(self.events))

    def _until_done(self) -> tuple[dict, dict]:
        while True:
            try:
                self.actors = self._start()
                progress = self._watch()
                handles = self.actors.learners
                return progress, dict(zip(handles, self.ray.get([h.stats.remote() for h in handles.values()])))
            except _CoordinatorDied as died:
                self._coordinator_died(str(died))

    def _start(self) -> _Actors:
        coordinator = self.coordinator_cls.remote(self.config, str(self.out), self.settings.max_lag)
        names = self._call(coordinator.players.remote())
        self.resumed_from = self._call(coordinator.resumed.remote())
        actors = _Actors(coordinator, {name: self.learner_cls.remote(self.config, i) for i, name in enumerate(names)})
        self._call(coordinator.set_learners.remote(actors.learners))
        for _ in range(self.settings.workers):
            self._spawn(actors)
        return actors

    def _spawn(self, actors: _Actors) -> int:
        wid, self.next_worker = self.next_worker, self.next_worker + 1
        handle = self.worker_cls.remote(self.config, wid, actors.coordinator, actors.learners, self.resumed_from)
        actors.workers[wid] = handle
        actors.nodes[wid] = handle.node.remote()  # runs before run(): an actor's calls run in order
        actors.running[handle.run.remote()] = wid
        return wid

    def _call(self, ref: Any) -> Any:
        """A coordinator call's result; its death becomes ``_CoordinatorDied``."""
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayActorError as error:
            raise _CoordinatorDied(_first_line(error)) from None

    def _watch(self) -> dict:
        """Poll the actors until the league is done; returns the coordinator's last progress."""
        ray, actors = self.ray, self.actors
        while actors.running:
            ready, _ = ray.wait(list(actors.running), num_returns=1, timeout=self.settings.poll_seconds)
            for ref in ready:
                self._worker_returned(ref)
            progress = self._call(actors.coordinator.progress.remote())
            if self.bar is not None:
                self.bar.update(progress["steps"] - self.bar.n)
            if self.on_poll is not None:
                self.on_poll(progress, {"coordinator": actors.coordinator, "learners": dict(actors.learners),
                                        "workers": dict(actors.workers)})
            if progress["done"]:
                self._last_workers()
                break
        return self._call(actors.coordinator.close.remote())

    def _worker_returned(self, ref: Any) -> None:
        """A worker's ``run`` ended: its counters, or — if it died — its release, an event, a replacement."""
        actors = self.actors
        wid = actors.running.pop(ref)
        try:
            self.finished[wid] = self.ray.get(ref)
        except self.ray.exceptions.RayActorError as error:
            self._call(actors.coordinator.release_worker.remote(wid))
            self._worker_died(wid, error)
        else:
            actors.workers.pop(wid, None)

    def _worker_died(self, wid: int, error: Exception) -> None:
        actors = self.actors
        actors.workers.pop(wid, None)
        self.worker_restarts += 1
        if self.worker_restarts > self.settings.max_worker_restarts:
            self._event("worker lost", wid, error, self._node_of(wid), None)
            raise RuntimeError(f"rollout workers died {self.worker_restarts} times (max_worker_restarts="
                               f"{self.settings.max_worker_restarts}); the run directory holds the last commit")
        node = self._node_of(wid)
        self._event("worker lost", wid, error, node, self._spawn(actors))

    def _last_workers(self) -> None:
        """The league is done: collect the workers' counters (they end at their next lease). A replacement
        still waiting for a CPU is not needed (killed with the others); one that died now is recorded."""
        actors = self.actors
        ready, _ = self.ray.wait(list(actors.running), num_returns=len(actors.running), timeout=5.0)
        for ref in ready:
            wid = actors.running.pop(ref)
            try:
                self.finished[wid] = self.ray.get(ref)
            except self.ray.exceptions.RayActorError as error:
                self._event("worker lost after the league was done", wid, error, self._node_of(wid), None)

    def _coordinator_died(self, detail: str) -> None:
        self.coordinator_restarts += 1
        self._event("coordinator lost: every actor restarted from the last commit", None, detail,
                    None, None)
        if self.coordinator_restarts > self.settings.max_coordinator_restarts:
            raise RuntimeError(f"the coordinator died {self.coordinator_restarts} times (max_coordinator_restarts="
                               f"{self.settings.max_coordinator_restarts}); the run directory holds the last commit")
        self._kill_actors()

    def _kill_actors(self) -> None:
        if self.actors is not None:
            for handle in self.actors.all():
                self.ray.kill(handle)
        self.actors = None

    # -- the record of what was lost -------------------------------------------------------------
    def _node_of(self, wid: int) -> str | None:
        """The node a worker ran on, if it said so before it died."""
        ref = self.actors.nodes.get(wid)
        if ref is None:
            return None
        try:
            return self.ray.get(ref, timeout=0)
        except (self.ray.exceptions.RayError, self.ray.exceptions.GetTimeoutError):
            return None  # it died before answering: the node is unknown

    def _event(self, event: str, worker: int | None, error: Any, node: str | None, replaced_by: int | None) -> None:
        alive = {n["NodeID"]: n["Alive"] for n in self.ray.nodes()} if node is not None else {}
        self.events.append({"seconds": round(time.perf_counter() - self.started, 3), "event": event, "worker": worker,
                            "node": node, "node_lost": None if node is None else not alive.get(node, False),
                            "replaced_by": replaced_by, "detail": _first_line(error)})

    def _nodes_lost(self, wait_s: float = NODE_DEATH_WAIT_S) -> None:
        """Whether each event's node is gone, as the cluster says.  The cluster notices a node's death
        some seconds after its actors': while a lost worker's node is still listed alive, ask again
        (every half second, for up to ``wait_s`` seconds) — unless that node is the driver's own, which
        is alive (the driver runs on it)."""
        deadline = time.perf_counter() + wait_s
        here = self.ray.get_runtime_context().get_node_id()
        while True:
            alive = {n["NodeID"]: n["Alive"] for n in self.ray.nodes()}
            for e in self.events:
                if e["node"] is not None:
                    e["node_lost"] = not alive.get(e["node"], False)
            if time.perf_counter() >= deadline or not any(
                    e["event"] == "worker lost" and e["node"] not in (None, here) and not e["node_lost"]
                    for e in self.events):
                return
            time.sleep(0.5)

    def _write_events(self) -> None:
        """Append this run's events to ``ray_events.csv`` (a log beside the commits, not part of them)."""
        if not self.events:
            return
        import csv

        path = self.out / EVENTS_FILE
        new = not path.exists()
        with open(path, "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=EVENT_COLUMNS)
            if new:
                writer.writeheader()
            writer.writerows(self.events)


def _first_line(error: Any) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:200] if text else type(error).__name__


def run_league_on_ray(config: LeagueTrainConfig, out: str | Path, settings: RayLeagueSettings | None = None,
                      on_poll: Callable[[dict, dict], None] | None = None) -> RayLeagueResult:
    """Train the league with Ray actors into ``out`` (resuming its last commit); returns counters and the
    actors lost (``LeagueDriver``). ``on_poll(progress, actors)`` is called every ``poll_seconds`` with the
    coordinator's progress and the live actors (``{"coordinator", "learners": {name: handle}, "workers":
    {id: handle}}``): a progress display, or a test that kills one."""
    return LeagueDriver(config, out, settings or RayLeagueSettings(), on_poll).run()


def check_league_records(out: str | Path) -> dict:
    """That a league's committed records agree (docs/guides/ray.md, "Faults"); raises ``ValueError`` naming the
    first disagreement, else returns the counts it checked.

    - ``matches.csv`` is the committed match list, and each player's episode numbers run 0, 1, … with
      no gap or repeat (no game counted twice, none lost);
    - the payoff is ``matches.csv`` replayed: every league game (self-play is not recorded), in file
      order, through a fresh payoff with the league's decay (``Payoff.update``) reproduces the committed
      table's wins, draws, losses and games of every pair exactly, whatever the decay;
    - the menagerie's index names exactly the commit's policy files, and has one historical per
      main player at the start plus one per ``checkpoint`` row of ``metrics.csv``;
    - each player's update counter equals its rows in ``metrics.csv``.
    """
    import pandas as pd

    from selfplay.core.payoff import Payoff
    from selfplay.training.rundir import RunDir

    run = RunDir(out)
    state = run.load_commit()
    matches = pd.read_csv(run.matches, dtype={"opponent": str})
    if len(matches) != len(state["matches"]):
        raise ValueError(f"matches.csv has {len(matches)} rows, the commit {len(state['matches'])}")
    for name, rows in matches.groupby("player"):
        if list(rows["episode"]) != list(range(len(rows))):
            raise ValueError(f"player {name}'s episodes in matches.csv are not 0..{len(rows) - 1} in order")
        if state["players"][name]["episodes"] != len(rows):
            raise ValueError(f"player {name} counted {state['players'][name]['episodes']} episodes, matches.csv has {len(rows)}")
    payoff = Payoff.from_dict(state["mode"]["league"]["payoff"])
    games = _check_payoff_replay(payoff, matches)
    metrics = pd.read_csv(run.metrics) if run.metrics.exists() else pd.DataFrame(columns=["player", "checkpoint"])
    index = state["menageries"]["menagerie"]
    files = sorted(rel.split("/", 1)[1] for rel in run.committed_files if rel.startswith("menagerie/"))
    named = sorted({e["file"] for e in index["entries"]})
    if files != named:
        raise ValueError(f"the commit holds menagerie files {files}, its index names {named}")
    mains = sum(1 for p in state["mode"]["league"]["players"] if p["kind"] == "main")
    if len(index["entries"]) != mains + int(metrics["checkpoint"].sum()):
        raise ValueError(f"the menagerie has {len(index['entries'])} entries; {mains} starting ones and "
                         f"{int(metrics['checkpoint'].sum())} checkpoints in metrics.csv")
    for name, saved in state["players"].items():
        if saved["updates"] != int((metrics["player"] == name).sum()):
            raise ValueError(f"player {name} counted {saved['updates']} updates, metrics.csv has "
                             f"{int((metrics['player'] == name).sum())} rows")
    return {"games": len(matches), "self_play_games": int((matches["player"] == matches["opponent"]).sum()),
            "payoff_games": games, "menagerie": len(index["entries"]), "updates": len(metrics)}


def _check_payoff_replay(payoff, matches) -> int:
    """Replay ``matches`` (``player, opponent, score`` rows in order; an opponent that is a number is a
    menagerie id) through a fresh payoff with ``payoff``'s decay; raises ``ValueError`` naming the first
    pair whose ``[wins, draws, losses, games]`` differ from ``payoff``'s, else returns the games replayed."""
    from selfplay.core.payoff import Payoff

    replayed = Payoff(payoff.decay)
    games = 0
    for player, opponent, score in zip(matches["player"], matches["opponent"], matches["score"]):
        if player != opponent:  # the league does not record self-play
            replayed.update(player, int(opponent) if opponent.isdigit() else opponent, float(score))
            games += 1
    for home, away in dict.fromkeys([*payoff._counts, *replayed._counts]):
        have, want = payoff.counts(home, away), replayed.counts(home, away)
        if not np.array_equal(have, want):
            raise ValueError(f"the payoff holds [wins, draws, losses, games] = {have.tolist()} for {home} vs {away}; "
                             f"replaying matches.csv (decay {payoff.decay}) gives {want.tolist()}")
    return games
