"""PPO self-play on RirRPS with a Gymnasium vector env and any scheme — single file, CleanRL style.

    python examples/ppo_vector_selfplay.py --scheme delta-uniform:delta=0 --num-envs 8 --total-timesteps 200000
    python examples/ppo_vector_selfplay.py --scheme psro --vector async
    python examples/ppo_vector_selfplay.py --total-timesteps 100000 --checkpoints 20   # + winrate matrix

Every game of the vector env draws its own opponent from the scheme's Ω when it starts and reports
its own outcome; the scheme's G runs after each game. After every PPO update the session gets a
``freeze`` function: a frozen copy of the agent is made only if G adds this weight version.

``--vector``:
  native  ``SelfPlayVectorEnv`` — one batched engine, opponents act grouped by policy (fastest;
          SAME_STEP autoreset: the observation after a game's end is the next game's first);
  sync    ``gymnasium.vector.SyncVectorEnv`` of ``OpponentEnv`` copies sharing the session
          (NEXT_STEP autoreset: the step after a game's end only resets it, its action is ignored);
  async   ``gymnasium.vector.AsyncVectorEnv`` of session-less ``OpponentEnv`` copies driven by
          ``SessionVectorEnv`` (the session stays in this process; NEXT_STEP autoreset).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from selfplay.analysis.winrate import lower_triangle_winrate
from selfplay.envs.rps import RirRPS
from torch.distributions import Categorical

from selfplay.core.schemes import make_scheme
from selfplay.training.adapters import MatchEvaluator, OpponentEnv, SelfPlaySession, SelfPlayVectorEnv, SessionVectorEnv
from selfplay.training.matches import play_matches, round_robin_pairs, winrate_from_pair_scores
from selfplay.training.snapshots import torch_snapshot
from selfplay.utils.seeding import Stream, derive_seed


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scheme", default="delta-uniform:delta=0", help="any scheme spec: naive, delta-uniform:delta=0.5, psro, ...")
    p.add_argument("--vector", default="native", choices=("native", "sync", "async"))
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--num-steps", type=int, default=128, help="steps per env per rollout")
    p.add_argument("--total-timesteps", type=int, default=200_000)
    p.add_argument("--learning-rate", type=float, default=3e-4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--checkpoints", type=int, default=0,
                   help="keep this many evenly spaced frozen checkpoints and report their winrate matrix at the end")
    p.add_argument("--eval-matches", type=int, default=25, help="matches per pair of checkpoints")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torch-threads", type=int, default=1, help="small networks run fastest on one thread")
    return p.parse_args(argv)


class Agent(nn.Module):
    def __init__(self, obs_size: int, n_actions: int):
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(obs_size, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))
        self.actor = nn.Sequential(nn.Linear(obs_size, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, n_actions))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        dist = Categorical(logits=self.actor(x))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


def frozen_agent(agent: Agent, seed: int, version: int):
    """A frozen copy of the agent's actor (observations → logits) speaking the suite's policy protocol
    (``act(obs, state, mask, episode_start) -> (actions, state, info)``): the library's ``torch_snapshot``,
    picklable for AsyncVectorEnv (a closure over ``agent`` would be refused there), sampling with its
    own generator, seeded per weight version."""
    return torch_snapshot(agent.actor, seed=derive_seed(seed, Stream.SNAPSHOT, version))


@dataclass
class Result:
    session: SelfPlaySession
    updates: int
    seconds: float
    # games as this trainer saw them end: (env index, episode token, opponent id, outcome)
    ended: list = field(default_factory=list)
    # the opponent each env was playing when its game ended, as announced when that game started
    announced: list = field(default_factory=list)
    W: np.ndarray | None = None  # winrate matrix of the checkpoints (row beats column), training order
    lower_triangle: float = float("nan")  # mean of W below the diagonal: 1 = monotone progress, ½ = none


def make_vector_env(args, session):
    if args.vector == "native":
        return SelfPlayVectorEnv(RirRPS(args.num_envs, seed=args.seed), session)
    if args.vector == "sync":
        return gym.vector.SyncVectorEnv([lambda i=i: OpponentEnv(RirRPS(1, seed=args.seed + i), session)
                                         for i in range(args.num_envs)])
    envs = gym.vector.AsyncVectorEnv([lambda i=i: OpponentEnv(RirRPS(1, seed=args.seed + i))
                                      for i in range(args.num_envs)], context="spawn")
    return SessionVectorEnv(envs, session)


def main(argv=None) -> Result:
    args = parse_args(argv)
    torch.set_num_threads(args.torch_threads)  # this script is the application: its choice
    torch.manual_seed(args.seed)
    evaluate = MatchEvaluator("rirrps", seed=args.seed) if args.scheme.startswith("psro") else None
    scheme = make_scheme(args.scheme, **({"evaluate": evaluate} if evaluate else {}))
    session = SelfPlaySession(scheme, seed=args.seed)  # the initial policy comes once the env gives the sizes
    envs = make_vector_env(args, session)
    obs_size = int(np.prod(envs.single_observation_space.shape))
    agent = Agent(obs_size, int(envs.single_action_space.n))
    session.add_initial_policy(frozen_agent(agent, args.seed, 0))  # menagerie_0 = {π}
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    same_step = envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP

    n, T = args.num_envs, args.num_steps
    batch_size = n * T
    minibatch_size = batch_size // args.num_minibatches
    num_updates = max(1, args.total_timesteps // batch_size)
    obs_buf = torch.zeros((T, n, obs_size))
    actions = torch.zeros((T, n), dtype=torch.long)
    logprobs, rewards, dones, values, valid = (torch.zeros((T, n)) for _ in range(5))

    result = Result(session, 0, 0.0)
    checkpoints: list = []
    start = time.perf_counter()
    next_obs, info = envs.reset(seed=args.seed)
    current = np.asarray(info["opponent"]).copy()  # each env's opponent, as announced at its game's start
    next_obs = torch.as_tensor(next_obs)
    next_done = torch.zeros(n)
    resetting = np.zeros(n, bool)  # NEXT_STEP: this step only resets the env (its action is ignored)
    for update in range(num_updates):
        for t in range(T):
            obs_buf[t], dones[t] = next_obs, next_done
            valid[t] = torch.as_tensor(~resetting, dtype=torch.float32)
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[t], actions[t], logprobs[t] = value.flatten(), action, logprob
            next_obs, reward, terminations, truncations, infos = envs.step(action.numpy())
            rewards[t] = torch.as_tensor(reward, dtype=torch.float32)
            done = np.logical_or(terminations, truncations)
            ended = infos["final_info"] if same_step and "final_info" in infos else infos
            for g in np.flatnonzero(done):
                result.ended.append((int(g), int(ended["episode_token"][g]), int(ended["opponent"][g]), float(ended["outcome"][g])))
                result.announced.append(int(current[g]))
            if same_step:
                current[done] = infos["opponent"][done]  # the new games' opponents
            else:
                started = resetting & infos.get("_opponent", np.zeros(n, bool))
                if started.any():
                    current[started] = infos["opponent"][started]
                resetting = done
            next_obs, next_done = torch.as_tensor(next_obs), torch.as_tensor(done, dtype=torch.float32)

        with torch.no_grad():  # GAE; a game's end cuts the chain
            next_value = agent.get_value(next_obs).flatten()
            advantages = torch.zeros_like(rewards)
            last = torch.zeros(n)
            for t in reversed(range(T)):
                nonterminal = 1.0 - (next_done if t == T - 1 else dones[t + 1])
                nv = next_value if t == T - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * nv * nonterminal - values[t]
                advantages[t] = last = delta + args.gamma * args.gae_lambda * nonterminal * last
            returns = advantages + values

        keep = valid.reshape(-1).bool()  # NEXT_STEP's reset steps carry no transition
        b_obs, b_actions = obs_buf.reshape(-1, obs_size)[keep], actions.reshape(-1)[keep]
        b_logprobs, b_adv, b_ret = logprobs.reshape(-1)[keep], advantages.reshape(-1)[keep], returns.reshape(-1)[keep]
        size = len(b_obs)
        for _ in range(args.update_epochs):
            for mb in torch.randperm(size).split(max(1, min(minibatch_size, size))):
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions[mb])
                ratio = (newlogprob - b_logprobs[mb]).exp()
                adv = b_adv[mb]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8) if len(mb) > 1 else adv
                pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                v_loss = 0.5 * ((newvalue.flatten() - b_ret[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        # the weights changed: one frozen copy per weight version, made only if G adds it
        version = result.updates + 1
        session.on_policy_update(freeze=lambda: frozen_agent(agent, args.seed, version))
        result.updates += 1
        if args.checkpoints and (update + 1) % max(1, num_updates // args.checkpoints) == 0:
            checkpoints.append(frozen_agent(agent, args.seed, version))

    envs.close()
    result.seconds = time.perf_counter() - start
    if len(checkpoints) > 1:  # the analysis inputs: every pair of checkpoints, both seats, one batched env
        pairs = round_robin_pairs(len(checkpoints))
        scores = play_matches("rirrps", checkpoints, pairs, args.eval_matches, seed=args.seed + 1)
        result.W, _ = winrate_from_pair_scores(len(checkpoints), pairs, scores)
        result.lower_triangle = lower_triangle_winrate(result.W)
    return result


if __name__ == "__main__":
    res = main()
    recent = [r.outcome for r in res.session.records[-500:]]
    print(f"{res.updates} updates, {len(res.session.records)} games in {res.seconds:.1f}s; "
          f"menagerie {len(res.session.menagerie)} entries; win rate over the last {len(recent)} games "
          f"{np.mean(recent) if recent else float('nan'):.3f}")
    if res.W is not None:
        print(f"{len(res.W)} checkpoints: lower-triangle win rate {res.lower_triangle:.3f} (1 = each beats all earlier ones)")
