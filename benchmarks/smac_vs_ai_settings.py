"""MAPPO against the built-in AI in ``selfplay train --opponent builtin-ai``'s own loop (the single-player
battle, ``vs_builtin.side_inputs``), from scratch, under chosen learner settings: does the fall into
passive play of the self-play pilots need the self-play path, or only their settings?

    .venv/bin/python benchmarks/smac_vs_ai_settings.py --num-envs 128 --rollout-length 20 --epochs 5 \
        --entropy-coef 0.001 --updates 40

One line per update: the learner's mean reward per step, its win rate in the games that ended during
the update's rollout, how many ended, CPU seconds so far (docs/results/smac_8m.md, "The self-play path,
step by step").
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="smac:8m")
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--rollout-length", type=int, default=400)
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--entropy-coef", type=float, default=0.01)
    p.add_argument("--updates", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.updates < 1:
        raise ValueError(f"updates must be a positive integer, got {args.updates}")
    import torch
    from selfplay.agents.mappo import MAPPOLearner
    from selfplay.agents.mappo.config import MAPPOConfig

    from selfplay.training.registry import make_env
    from selfplay.training.vs_builtin import side_inputs

    torch.set_num_threads(1)
    config = MAPPOConfig(epochs=args.epochs, entropy_coef=args.entropy_coef, rollout_length=args.rollout_length,
                         num_envs=args.num_envs)
    battle = make_env(args.env, args.num_envs, seed=args.seed + 5, scripted_enemy=True)
    learner = MAPPOLearner.for_battle(battle, config, seed=args.seed + 3)
    obs, start = battle.reset(), torch.ones(args.num_envs, dtype=torch.bool)
    began, wins = time.process_time(), []
    print("update,mean_reward,win,games,cpu_s")
    for update in range(1, args.updates + 1):
        while not learner.ready():
            o, s, m = side_inputs(battle, config, obs)
            action = learner.act(o, s, m, start)
            obs, rewards, start, info = battle.step([action])
            learner.record(rewards[0], start)
            wins += info["battle_won"][0][start].float().tolist()
        _, s, m = side_inputs(battle, config, obs)
        metrics = learner.update(s, m, start)
        win = sum(wins) / len(wins) if wins else float("nan")
        print(f"{update},{metrics['mean_reward']:.3f},{win:.2f},{len(wins)},{time.process_time() - began:.0f}",
              flush=True)
        wins = []
    return 0


if __name__ == "__main__":
    sys.exit(main())
