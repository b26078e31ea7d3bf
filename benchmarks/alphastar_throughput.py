"""AlphaStar actor–learner throughput on SMAC, and batched vs per-game acting side by side.

What is measured (CPU, ``torch.set_num_threads(--threads)``, default 1):

* **Actor–learner loop** (ours): ``--num-envs`` games of ``smac-commander:MAP`` (``make_env``); the
  learner (``AlphaStarLearner``, seat 0) plays a frozen snapshot of its own starting weights (seat 1),
  as the league loop does: step every game until ``learner.ready()``, then one ``learner.update()``;
  ``--updates`` updates after a warm-up (filling the recorder and one update, not timed). Each part
  is timed with ``time.perf_counter`` around it:
    - *env*: ``CommanderEnv.step`` (the order executor, the battle step, the feature building of the
      next observation; ``action_masks`` too),
    - *inference*: ``learner.act`` (the network's batched pass over the due games, plus the chunk
      recorder's bookkeeping) and the opponent's ``policy.act``,
    - *learning*: ``learner.update`` (teacher-forced pass of the learner and of the SL network,
      loss, backward, Adam),
    - *other*: ``learner.record`` and the loop itself (what is left of the wall time).
  Printed: actor frames/s = game steps (env steps × games) per second of acting (env + inference +
  other, i.e. wall time minus learning); decisions/s = commander decisions (due games, both seats;
  the learner's alone in brackets) per second of acting; learner samples/s = decision steps
  consumed by ``update`` (``learner.samples``) per second of ``update``; the three shares of wall time.
* **Peer** (per-game acting): the same network and the same acting code on a battle of
  ``num_envs=1`` — one game at a time, one forward pass per decision of one game, as a naive
  unbatched actor does — for ``--peer-steps`` steps (no updates). The ratio printed is ours
  (actor frames/s of the loop above) over the peer's frames/s.

The last line is machine-readable:
``actor_frames_per_s=... learner_samples_per_s=... env_share=... inference_share=...
learning_share=... batched_vs_per_game=... batched_vs_per_game_cpu=...``.

    .venv/bin/python benchmarks/alphastar_throughput.py [--map 3m --num-envs 64 --updates 20]
        [--sl-checkpoint runs/sl/sl_checkpoint.pt] [--network quick|default] [--threads 1]

Without ``--sl-checkpoint`` the network is untrained (``sl.QUICK_NETWORK`` size with ``--network
quick``, ``AlphaStarConfig``'s default sizes with ``--network default``): an untrained commander picks
random delays, so decisions per step (and hence inference cost) differ from a trained one's.

The peer also gets a CPU-time ratio (frames per CPU-second of this process, both sides), which
is steadier than the wall-clock one when other jobs share the cores (the two sides run one after
the other, so a load change between them moves the wall-clock ratio).

Measured
--------
2026-11-29 21:17 UTC, 2 cores shared with another engineer's jobs (load average 2.06 before,
2.38 after), defaults (3m, 64 games, 20 updates, untrained quick network, 1 thread)::

    AlphaStar actor–learner on smac-commander:3m, untrained quick network (140,582 parameters), 1 thread(s), load average 2.38 1.29 1.04
    ours: 64 games, 20 updates, 329 env steps (21056 game steps) in 12.5 s
      actor frames/s           2157   (game steps per second of acting)
      decisions/s              1021   (both seats; learner's 515; 0.47 decisions per game step)
      learner samples/s        1903   (5120 decision steps in 2.7 s of update)
      env share               0.305   (3.8 s)
      inference share         0.473   (5.9 s)
      learning share          0.216   (2.7 s)
      other share             0.006   (0.1 s)
    peer: per-game acting (num_envs=1), 1000 steps in 12.4 s: 81 frames/s, 38 decisions/s (env 0.74, inference 0.25 of its time)
    batched / per-game actor frames/s: 26.7x  (per CPU-second of this process: 27.1x, 3129 vs 115 frames/cpu-s)
    actor_frames_per_s=2157 learner_samples_per_s=1903 env_share=0.305 inference_share=0.473 learning_share=0.216 batched_vs_per_game=26.65 batched_vs_per_game_cpu=27.13

Two earlier default runs a minute before, at load 1.15 and 2.16, gave 3467 / 3156 actor frames/s,
2823 / 2616 learner samples/s, the same shares within 0.02, and batched/per-game 30.4x / 39.9x
(wall clock): the wall-clock numbers move by ~±30 % with the other jobs' load; the shares do not.
``--network default`` (755,186 parameters, load 1.44): 2784 actor frames/s, 1596 learner samples/s,
shares 0.24 / 0.46 / 0.29, 23x over per-game. A quick-size SL checkpoint of 3m (``run_sl``, fits the
grid-16 commander) decides at 1.67 decisions per game step instead of 0.47 (it picks short delays),
so inference and learning weigh more (load 1.71): 2243 actor frames/s, 2192 learner samples/s,
shares 0.17 / 0.36 / 0.47, 28x over per-game.

The last part runs the whole loop twice more, untimed by part: the learner in turn with the actors
(the default) and in a background thread (``asynchronous=True``: the actors keep playing while it
learns). 21:37 UTC, idle machine (load 0.63), the 3-epoch SL checkpoint of the documented league run::

    actor frames/s 2422, learner samples/s 2709, shares env 0.17 / inference 0.39 / learning 0.44,
    batched / per-game 30.3x
    whole loop (acting + learning), frames/s: learner in turn 1648, learner in a background thread 1961 (1.19x)

(A longer 30-update run of the same pair at load 0.5 gave 1409 → 2057 and 1495 → 1953 frames/s, 1.3–1.5x:
torch releases the GIL inside its kernels, so on 2 cores the learner's backward overlaps acting.)
"""

from __future__ import annotations

import argparse
import copy
import os
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import replace

import torch
from selfplay.agents.alphastar.learner import AlphaStarLearner, AlphaStarRLConfig
from selfplay.agents.alphastar.network import AlphaStarNet
from selfplay.agents.alphastar.rl import make_alphastar_learner

from selfplay.training.registry import make_env


class Timers:
    """Accumulated wall time (``total``) and CPU time of this process (``cpu``) per part."""

    def __init__(self):
        self.total = defaultdict(float)
        self.cpu = defaultdict(float)

    @contextmanager
    def __call__(self, part: str):
        t, c = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.total[part] += time.perf_counter() - t
            self.cpu[part] += time.process_time() - c


def build_learner(env, args, seed: int = 0) -> AlphaStarLearner:
    """The learner for ``env``: from the SL checkpoint, else an untrained network of the chosen size."""
    if args.sl_checkpoint or args.network == "quick":
        return make_alphastar_learner(env, seed, sl_checkpoint=args.sl_checkpoint)
    torch.manual_seed(seed)
    sl_net = AlphaStarNet(env.network_config())
    return AlphaStarLearner(copy.deepcopy(sl_net), sl_net, AlphaStarRLConfig(), seed=seed)


class Loop:
    """Learner (seat 0) against a frozen opponent (seat 1) on every game of ``env``, timed by part."""

    def __init__(self, env, learner: AlphaStarLearner, opponent, timers: Timers):
        self.env, self.learner, self.opponent, self.timers = env, learner, opponent, timers
        n = env.num_envs
        self.obs = env.reset()
        self.state = learner.initial_state(n)
        self.opp_state = opponent.initial_state(n)
        self.start = torch.ones(n, dtype=torch.bool)
        self.reset_counters(timers)

    def reset_counters(self, timers: Timers) -> None:
        """Start timing afresh (after the warm-up): new timers, zero steps and decisions."""
        self.timers = timers
        self.steps = 0  # env steps (each steps all games)
        self.decisions = [0, 0]  # per seat

    def step(self) -> None:
        t, env = self.timers, self.env
        with t("env"):
            due = env.action_masks()
        with t("inference"):
            a0, self.state, _ = self.learner.act(self.obs[0], self.state, due[0], self.start)
            a1, self.opp_state, _ = self.opponent.act(self.obs[1], self.opp_state, due[1], self.start)
        with t("env"):
            self.obs, rewards, done, _ = env.step([a0, a1])
        with t("other"):
            self.learner.record(rewards[0], done)
            self.start = done.clone()
            self.steps += 1
            self.decisions[0] += int(due[0].sum())
            self.decisions[1] += int(due[1].sum())

    def until_ready(self) -> None:
        while not self.learner.ready():
            self.step()

    def update(self) -> None:
        with self.timers("learning"):
            self.learner.update()


def run_loop(args) -> dict:
    env = make_env(f"smac-commander:{args.map}", args.num_envs, seed=args.seed)
    learner = build_learner(env, args, args.seed)
    opponent = learner.snapshot()  # the starting weights, frozen (the league's first opponent)
    loop = Loop(env, learner, opponent, Timers())
    loop.until_ready()  # warm-up: fill the recorder once and update once (allocations, first passes)
    loop.update()

    timers = Timers()
    loop.reset_counters(timers)
    samples0 = learner.samples
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(args.updates):
        loop.until_ready()
        loop.update()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    T = timers.total
    acting = wall - T["learning"]
    return dict(wall=wall, env=T["env"], inference=T["inference"], learning=T["learning"],
                other=wall - T["env"] - T["inference"] - T["learning"], acting=acting,
                acting_cpu=cpu - timers.cpu["learning"], steps=loop.steps,
                frames=loop.steps * env.num_envs, decisions=sum(loop.decisions), learner_decisions=loop.decisions[0],
                samples=learner.samples - samples0, params=sum(p.numel() for p in learner.net.parameters()))


def run_per_game(args) -> dict:
    """The peer: the same network and acting code, one game (``num_envs=1``), no updates."""
    env = make_env(f"smac-commander:{args.map}", 1, seed=args.seed)
    learner = build_learner(env, args, args.seed)
    opponent = learner.snapshot()
    loop = Loop(env, learner, opponent, Timers())
    for _ in range(20):  # warm-up
        loop.step()
    timers = Timers()
    loop.reset_counters(timers)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(args.peer_steps):
        loop.step()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    T = timers.total
    return dict(wall=wall, cpu=cpu, env=T["env"], inference=T["inference"], steps=loop.steps, frames=loop.steps,
                decisions=sum(loop.decisions))


def run_sync_vs_async(args) -> dict:
    """Wall-clock frames/s of the whole loop (acting + learning) for ``--updates`` updates, with the
    learner in turn with the actors (default) and in its background thread (``asynchronous=True``)."""
    out = {}
    for asynchronous in (False, True):
        env = make_env(f"smac-commander:{args.map}", args.num_envs, seed=args.seed)
        learner = build_learner(env, args, args.seed)
        if asynchronous:
            learner = AlphaStarLearner(learner.net, learner.sl_net, replace(learner.config, asynchronous=True), args.seed)
        loop = Loop(env, learner, learner.snapshot(), Timers())
        loop.until_ready()
        loop.update()
        learner.wait()
        steps0, t0, updates = loop.steps, time.perf_counter(), 0
        while updates < args.updates:
            if learner.ready():
                learner.update()
                updates += 1
            loop.step()
        learner.wait()
        out[asynchronous] = (loop.steps - steps0) * args.num_envs / (time.perf_counter() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--map", default="3m")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--updates", type=int, default=20, help="timed learner updates (after one warm-up update)")
    parser.add_argument("--sl-checkpoint", default=None, help="run_sl's sl_checkpoint.pt (default: untrained network)")
    parser.add_argument("--network", choices=("quick", "default"), default="quick",
                        help="size of the untrained network: sl.QUICK_NETWORK or AlphaStarConfig's defaults")
    parser.add_argument("--peer-steps", type=int, default=1000, help="timed steps of the per-game peer")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1: the CPU is shared)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    ours = run_loop(args)
    peer = run_per_game(args)
    modes = run_sync_vs_async(args)
    load = os.getloadavg()

    net = f"SL checkpoint {args.sl_checkpoint}" if args.sl_checkpoint else f"untrained {args.network} network"
    print(f"AlphaStar actor–learner on smac-commander:{args.map}, {net} ({ours['params']:,} parameters), "
          f"{torch.get_num_threads()} thread(s), load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    w = ours["wall"]
    print(f"ours: {args.num_envs} games, {args.updates} updates, {ours['steps']} env steps "
          f"({ours['frames']} game steps) in {w:.1f} s")
    print(f"  actor frames/s     {ours['frames'] / ours['acting']:10.0f}   (game steps per second of acting)")
    print(f"  decisions/s        {ours['decisions'] / ours['acting']:10.0f}   (both seats; learner's "
          f"{ours['learner_decisions'] / ours['acting']:.0f}; {ours['decisions'] / max(ours['frames'], 1):.2f} "
          f"decisions per game step)")
    print(f"  learner samples/s  {ours['samples'] / ours['learning']:10.0f}   ({ours['samples']} decision steps "
          f"in {ours['learning']:.1f} s of update)")
    for part in ("env", "inference", "learning", "other"):
        print(f"  {part + ' share':<18} {ours[part] / w:10.3f}   ({ours[part]:.1f} s)")
    peer_fps = peer["frames"] / peer["wall"]
    print(f"peer: per-game acting (num_envs=1), {peer['steps']} steps in {peer['wall']:.1f} s: "
          f"{peer_fps:.0f} frames/s, {peer['decisions'] / peer['wall']:.0f} decisions/s "
          f"(env {peer['env'] / peer['wall']:.2f}, inference {peer['inference'] / peer['wall']:.2f} of its time)")
    ratio = (ours["frames"] / ours["acting"]) / peer_fps
    ratio_cpu = (ours["frames"] / ours["acting_cpu"]) / (peer["frames"] / peer["cpu"])
    print(f"batched / per-game actor frames/s: {ratio:.1f}x  (per CPU-second of this process: {ratio_cpu:.1f}x, "
          f"{ours['frames'] / ours['acting_cpu']:.0f} vs {peer['frames'] / peer['cpu']:.0f} frames/cpu-s)")
    async_ratio = modes[True] / modes[False]
    print(f"whole loop (acting + learning), frames/s: learner in turn {modes[False]:.0f}, learner in a background "
          f"thread {modes[True]:.0f} ({async_ratio:.2f}x)")
    print(f"actor_frames_per_s={ours['frames'] / ours['acting']:.0f} "
          f"learner_samples_per_s={ours['samples'] / ours['learning']:.0f} "
          f"env_share={ours['env'] / w:.3f} inference_share={ours['inference'] / w:.3f} "
          f"learning_share={ours['learning'] / w:.3f} batched_vs_per_game={ratio:.2f} "
          f"batched_vs_per_game_cpu={ratio_cpu:.2f} async_vs_sync={async_ratio:.2f}")


if __name__ == "__main__":
    main()
