"""Multi-unit PPO against SMAC's scripted enemy: win rate and return before/after training, wall time.

    .venv/bin/python benchmarks/smac_ppo.py                      # 3m, MLP, 600k game-steps, 128 games
    .venv/bin/python benchmarks/smac_ppo.py --body gru --centralized-value --steps 200000

The learner plays seat 0 of ``SMACBattle(MAP, two_player=False)`` (seat 1 is the map's scripted
attack-move AI). Evaluation: ``--eval-games`` fresh games of the frozen snapshot (sampled actions), on
an environment seeded apart from training. Single torch thread (small networks on a shared machine).

Measured on the shared 2-core development machine (seed 0, 512 evaluation games, wall time under load):

    defaults (MLP, decentralised value), 600k game-steps, 187 updates, 226 s:
        win rate 0.000 -> 0.980, mean return 1.64 -> 19.72 (of 20)
    --body gru --centralized-value --steps 300000, 78 updates, 128 s:
        win rate 0.000 -> 0.994, mean return 1.65 -> 19.93
    --body lstm --steps 300000, 78 updates, 191 s:
        win rate 0.000 -> 0.357, mean return 1.65 -> 10.74
"""

from __future__ import annotations

import argparse
import time

import torch
from selfplay.agents.ppo.config import MultiUnitPPOConfig, ppo_config
from selfplay.agents.ppo.multiunit import MultiUnitPPOLearner
from selfplay.envs.smac import SMACBattle


def evaluate(policy, map_name: str, games: int, seed: int, num_envs: int = 64, centralized: bool = False) -> dict:
    """Win rate and mean return of ``policy`` (seat 0) over the first ``games`` finished games."""
    env = SMACBattle(map_name, num_envs=num_envs, two_player=False, seed=seed)
    obs = env.reset()
    state = policy.initial_state(num_envs)
    start = torch.ones(num_envs, dtype=torch.bool)
    wins, returns, finished = [], [], 0
    while finished < games:
        action, state, _ = policy.act(obs[0], state, env.action_masks()[0], start)
        obs, _, done, info = env.step([action])
        start = done
        if bool(done.any()):
            wins.append(info["battle_won"][0][done].float())
            returns.append(info["episode_reward"][0][done])
            finished += int(done.sum())
    wins, returns = torch.cat(wins)[:games], torch.cat(returns)[:games]
    return {"win_rate": wins.mean().item(), "mean_return": returns.mean().item(), "games": games}


def train(map_name: str, steps: int, num_envs: int, config: MultiUnitPPOConfig, seed: int, log_every: int = 10):
    """Train for ``steps`` game-steps (all games); returns ``(learner, history, wall seconds, CPU seconds)``."""
    env = SMACBattle(map_name, num_envs=num_envs, two_player=False, seed=seed)
    learner = MultiUnitPPOLearner.for_battle(env, 0, config, seed=seed)
    obs = env.reset()
    state = learner.initial_state(num_envs)
    start = torch.ones(num_envs, dtype=torch.bool)
    history, wins, returns = [], [], []
    t0, cpu0 = time.perf_counter(), time.process_time()
    done_steps = 0
    while done_steps < steps:
        gs = env.get_state()[0] if learner.uses_global_state else None
        action, state, _ = learner.act(obs[0], state, env.action_masks()[0], start, global_state=gs)
        obs, rewards, done, info = env.step([action])
        learner.record(rewards[0], done)
        start = done
        done_steps += num_envs
        if bool(done.any()):
            wins.append(info["battle_won"][0][done].float())
            returns.append(info["episode_reward"][0][done])
        if learner.ready():
            metrics = learner.update()
            w, r = (torch.cat(wins), torch.cat(returns)) if wins else (torch.zeros(0), torch.zeros(0))
            history.append({"update": learner.weight_version, "steps": done_steps, "seconds": time.perf_counter() - t0,
                            "train_win_rate": w.mean().item() if len(w) else float("nan"),
                            "train_return": r.mean().item() if len(r) else float("nan"), **metrics})
            wins, returns = [], []
            if log_every and learner.weight_version % log_every == 0:
                h = history[-1]
                print(f"update {h['update']:4d}  steps {h['steps']:8d}  {h['seconds']:6.1f}s  "
                      f"win {h['train_win_rate']:.2f}  return {h['train_return']:5.2f}  "
                      f"entropy {h['entropy']:.2f}  ev {h['explained_variance']:.2f}", flush=True)
    return learner, history, time.perf_counter() - t0, time.process_time() - cpu0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--map", default="3m")
    parser.add_argument("--steps", type=int, default=600_000, help="training game-steps over all games")
    parser.add_argument("--num-envs", type=int, default=128)
    parser.add_argument("--body", default="mlp", choices=("mlp", "gru", "lstm"))
    parser.add_argument("--centralized-value", action="store_true")
    smac = ppo_config("smac")
    parser.add_argument("--horizon", type=int, default=smac.horizon)
    parser.add_argument("--epochs", type=int, default=smac.epochs)
    parser.add_argument("--minibatch-size", type=int, default=smac.minibatch_size,
                        help="game-steps per minibatch (default: the whole batch)")
    parser.add_argument("--lr", type=float, default=smac.learning_rate)
    parser.add_argument("--eval-games", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    config = ppo_config("smac", horizon=args.horizon, epochs=args.epochs, minibatch_size=args.minibatch_size,
                        learning_rate=args.lr, body=args.body, centralized_value=args.centralized_value)
    print(f"map {args.map}  body {args.body}  centralised value {args.centralized_value}  "
          f"{args.num_envs} games  {args.steps} game-steps  seed {args.seed}")
    learner0 = MultiUnitPPOLearner.for_battle(SMACBattle(args.map, 1, two_player=False), 0, config, seed=args.seed)
    before = evaluate(learner0.snapshot(), args.map, args.eval_games, seed=10_000 + args.seed)
    learner, history, seconds, cpu_seconds = train(args.map, args.steps, args.num_envs, config, args.seed)
    after = evaluate(learner.snapshot(), args.map, args.eval_games, seed=10_000 + args.seed)
    print(f"before training: win rate {before['win_rate']:.3f}  mean return {before['mean_return']:.2f}  "
          f"({before['games']} games)")
    print(f"after  training: win rate {after['win_rate']:.3f}  mean return {after['mean_return']:.2f}  "
          f"({after['games']} games)")
    print(f"training: {args.steps} game-steps, {len(history)} updates, {seconds:.1f} s "
          f"({args.steps / seconds:.0f} game-steps/s); {cpu_seconds:.1f} CPU-s "
          f"({args.steps / cpu_seconds:.0f} game-steps per CPU-s)")


if __name__ == "__main__":
    main()
