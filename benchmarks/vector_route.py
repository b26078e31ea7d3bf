"""Environment steps per second of the adapter routes on RirRPS, against the suite's own loop.

Every route plays the same thing: δ=0-Uniform, a frozen MLP opponent per game (64-64, the paper's
size; a new weight version every 2 000 steps, so opponents act in several groups), the learner's
moves random (no learning: this measures the route, not PPO). Steps are counted per game (one step
of 8 games = 8 steps).

* suite loop     — ``selfplay.training.games.GameRunner`` with the session's Ω/G bookkeeping done as the
                   suite's trainer does (payoff, curate per finished game);
* native         — ``SelfPlayVectorEnv`` (Gymnasium VectorEnv over one batched engine);
* sb3            — ``SelfPlayVecEnv`` (Stable-Baselines3 VecEnv over one batched engine);
* sync           — ``gymnasium.vector.SyncVectorEnv`` of ``OpponentEnv`` copies sharing the session;
* async          — ``gymnasium.vector.AsyncVectorEnv`` of ``OpponentEnv`` copies + ``SessionVectorEnv``;
* core route     — the README's core loop: one game at a time, ``scheme.sample`` (Ω), the game,
                   ``payoff.update``, ``scheme.curate`` (G) — as ``examples/core_loop_psro.py``;
* one OpponentEnv — the single-game Gymnasium route stepped in a plain loop.

    python benchmarks/vector_route.py [--quick] [--num-envs 8]
"""

from __future__ import annotations

import argparse
import os
import time

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from selfplay.envs.rps import RirRPS

from selfplay.training.adapters import OpponentEnv, SelfPlaySession, SelfPlayVecEnv, SelfPlayVectorEnv, SessionVectorEnv
from selfplay.training.games import GameRunner

NEW_VERSION_EVERY = 2000


class FrozenMLP:
    """A frozen 64-64 MLP policy (the suite's policy protocol); picklable."""

    def __init__(self, seed: int):
        torch.manual_seed(seed)
        self.net = nn.Sequential(nn.Linear(30, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 3)).requires_grad_(False)

    def initial_state(self, batch):
        return None

    def act(self, obs, state=None, mask=None, episode_start=None):
        logits = self.net(torch.as_tensor(obs, dtype=torch.float32))
        return torch.distributions.Categorical(logits=logits).sample(), None, {}


class RandomLearner:
    """The suite loop's learner interface with random moves and no learning."""

    weight_version = 0

    def initial_state(self, batch):
        return None

    def act(self, obs, state, mask=None, episode_start=None):
        return torch.randint(0, 3, (len(obs),)), None, {}

    def record(self, reward, done):
        pass


def session() -> SelfPlaySession:
    return SelfPlaySession("delta-uniform:delta=0", FrozenMLP(0), seed=0, keep_records=False)


def maybe_update(s: SelfPlaySession, steps_before: int, steps_after: int) -> None:
    if steps_after // NEW_VERSION_EVERY > steps_before // NEW_VERSION_EVERY:
        s.on_policy_update(FrozenMLP(steps_after // NEW_VERSION_EVERY))


def suite_loop(n: int, total: int) -> float:
    s = session()

    def draw(k):
        return [(e.id, e.policy) for e in s.scheme.sample_many(s.menagerie, k, s.payoff, s.rng)]

    runner = GameRunner(RirRPS(n, seed=0), RandomLearner(), draw, np.random.default_rng(0))
    runner.start()
    steps, start = 0, time.perf_counter()
    while steps < total:
        with torch.no_grad():
            finished = runner.step()
        maybe_update(s, steps, steps + n)
        steps += n
        for game in finished:  # the trainer's bookkeeping: payoff, then G
            s.payoff.update("learner", game.opponent, game.score)
            s.episode += 1
            s.scheme.curate(s.menagerie, s.learner_info(), s.payoff, game.score)
        runner.restart([g.game for g in finished])
    return steps / (time.perf_counter() - start)


def gym_vector(kind: str, n: int, total: int) -> float:
    s = session()
    if kind == "native":
        env = SelfPlayVectorEnv(RirRPS(n, seed=0), s)
    elif kind == "sync":
        env = gym.vector.SyncVectorEnv([lambda i=i: OpponentEnv(RirRPS(1, seed=i), s) for i in range(n)])
    else:
        env = SessionVectorEnv(gym.vector.AsyncVectorEnv([lambda i=i: OpponentEnv(RirRPS(1, seed=i)) for i in range(n)],
                                                         context="spawn"), s)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    env.step(rng.integers(3, size=n))  # workers warmed up
    steps, start = 0, time.perf_counter()
    while steps < total:
        env.step(rng.integers(3, size=n))
        maybe_update(s, steps, steps + n)
        steps += n
    seconds = time.perf_counter() - start
    env.close()
    return steps / seconds


def sb3(n: int, total: int) -> float:
    s = session()
    env = SelfPlayVecEnv(RirRPS(n, seed=0), s)
    env.reset()
    rng = np.random.default_rng(0)
    steps, start = 0, time.perf_counter()
    while steps < total:
        env.step(rng.integers(3, size=n))
        maybe_update(s, steps, steps + n)
        steps += n
    return steps / (time.perf_counter() - start)


def core_loop(total: int) -> float:
    s = session()
    game = RirRPS(1, seed=0)
    rng = np.random.default_rng(0)
    steps, start = 0, time.perf_counter()
    while steps < total:
        opponent = s.scheme.sample(s.menagerie, s.payoff, s.rng)  # Ω
        obs = game.reset()
        while True:
            with torch.no_grad():
                b, _, _ = opponent.policy.act(obs[1], None)
            obs, _, done, info = game.step([torch.as_tensor(rng.integers(3, size=1)), b])
            maybe_update(s, steps, steps + 1)
            steps += 1
            if bool(done[0]):
                break
        score = float(int(info["winner"][0]) == 0)
        s.payoff.update("learner", opponent.id, score)
        s.episode += 1
        s.scheme.curate(s.menagerie, s.learner_info(), s.payoff, score)  # G
    return steps / (time.perf_counter() - start)


def single_game(total: int) -> float:
    s = session()
    env = OpponentEnv(RirRPS(1, seed=0), s)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    steps, start = 0, time.perf_counter()
    while steps < total:
        _, _, terminated, _, _ = env.step(int(rng.integers(3)))
        maybe_update(s, steps, steps + 1)
        steps += 1
        if terminated:
            env.reset()
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[8, 64])
    args = parser.parse_args()
    torch.set_num_threads(1)
    total = 8_000 if args.quick else 40_000
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {total} steps per route")
    for n in args.num_envs:
        base = suite_loop(n, total)
        rows = [("suite loop (GameRunner)", base), ("native SelfPlayVectorEnv", gym_vector("native", n, total)),
                ("SB3 SelfPlayVecEnv", sb3(n, total))]
        if n <= 16:  # one Python env (and, for async, one process) per game
            rows += [("SyncVectorEnv of OpponentEnv", gym_vector("sync", n, total // 4)),
                     ("AsyncVectorEnv + SessionVectorEnv", gym_vector("async", n, total // 4))]
        rows += [("core route (one game at a time)", core_loop(total // 8)),
                 ("one OpponentEnv", single_game(total // 8))]
        print(f"num_envs={n}")
        for name, value in rows:
            print(f"  {name:36s} {value:10.0f} steps/s   {value / base:6.2f}x the suite loop")


if __name__ == "__main__":
    main()
