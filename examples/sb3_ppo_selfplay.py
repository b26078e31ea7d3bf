"""Stable-Baselines3 PPO self-play on RirRPS through a ``VecEnv`` — single file.

    python examples/sb3_ppo_selfplay.py --scheme delta-limit-uniform:delta=0 --n-envs 4 --total-timesteps 100000
    python examples/sb3_ppo_selfplay.py --scheme psro --route dummy

``--route``:
  native  ``SelfPlayVecEnv`` — one batched RirRPS engine of ``n_envs`` games, each against its own
          opponent drawn from Ω at its own start (opponents act grouped by policy);
  dummy   SB3's ``DummyVecEnv`` over ``OpponentEnv`` copies sharing one session.

After every PPO update (SB3 calls ``_on_rollout_start`` before the next rollout) the session gets a
``freeze`` function; SB3's policy is copied only if G adds that weight version, by the library's
``sb3_snapshot`` (a frozen, picklable copy: ``copy.deepcopy(model.policy)`` fails after an update).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from selfplay.envs.rps import RirRPS
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import DummyVecEnv

from selfplay.core.schemes import make_scheme
from selfplay.training.adapters import MatchEvaluator, OpponentEnv, PolicyWrapper, SelfPlaySession, SelfPlayVecEnv
from selfplay.training.snapshots import sb3_snapshot


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scheme", default="delta-uniform:delta=0")
    p.add_argument("--route", default="native", choices=("native", "dummy"))
    p.add_argument("--n-envs", type=int, default=4)
    p.add_argument("--n-steps", type=int, default=256, help="steps per env per rollout")
    p.add_argument("--total-timesteps", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torch-threads", type=int, default=1, help="small networks run fastest on one thread")
    return p.parse_args(argv)


def freeze(model: PPO) -> PolicyWrapper:
    """A frozen copy of SB3's current policy as a suite policy (``predict`` sampled, not greedy)."""
    return sb3_snapshot(model, deterministic=False)


class SelfPlayCallback(BaseCallback):
    """Hands the session a freeze function after every update and keeps the games SB3 saw end."""

    def __init__(self, session: SelfPlaySession):
        super().__init__()
        self.session = session
        self.ended: list[tuple] = []  # (env index, episode token, opponent id, outcome)

    def _on_rollout_start(self) -> None:
        if self.num_timesteps > 0:  # a PPO update has just happened
            model = self.model
            self.session.on_policy_update(freeze=lambda: freeze(model))

    def _on_step(self) -> bool:
        for g in np.flatnonzero(self.locals["dones"]):
            info = self.locals["infos"][g]
            self.ended.append((int(g), int(info["episode_token"]), int(info["opponent"]), float(info["outcome"])))
        return True


@dataclass
class Result:
    session: SelfPlaySession
    seconds: float
    ended: list = field(default_factory=list)


def main(argv=None, log_dir: str | None = None) -> Result:
    args = parse_args(argv)
    torch.set_num_threads(args.torch_threads)  # this script is the application: its choice
    evaluate = MatchEvaluator("rirrps", seed=args.seed) if args.scheme.startswith("psro") else None
    scheme = make_scheme(args.scheme, **({"evaluate": evaluate} if evaluate else {}))
    session = SelfPlaySession(scheme, seed=args.seed)
    if args.route == "native":
        env = SelfPlayVecEnv(RirRPS(args.n_envs, seed=args.seed), session)
    else:
        env = DummyVecEnv([lambda i=i: OpponentEnv(RirRPS(1, seed=args.seed + i), session) for i in range(args.n_envs)])
    model = PPO("MlpPolicy", env, n_steps=args.n_steps, batch_size=64, n_epochs=4, seed=args.seed, device="cpu",
                policy_kwargs={"net_arch": [64, 64]}, verbose=0)
    if log_dir is not None:
        model.set_logger(configure(log_dir, []))
    session.add_initial_policy(freeze(model))  # menagerie_0 = {π}: the model exists only now
    callback = SelfPlayCallback(session)
    start = time.perf_counter()
    model.learn(total_timesteps=args.total_timesteps, callback=callback)
    env.close()
    return Result(session, time.perf_counter() - start, callback.ended)


if __name__ == "__main__":
    res = main()
    recent = [r.outcome for r in res.session.records[-500:]]
    print(f"{len(res.session.records)} games in {res.seconds:.1f}s, weight version {res.session.weight_version}, "
          f"menagerie {len(res.session.menagerie)} entries; win rate over the last {len(recent)} games {np.mean(recent):.3f}")
