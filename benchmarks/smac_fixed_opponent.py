"""MAPPO trained through the self-play game runner against one fixed, frozen snapshot: does the
learner improve its return when its opponent never changes?

    .venv/bin/python benchmarks/smac_fixed_opponent.py --opponent RUN/menagerie/policy_000417.pt \
        --start RUN/menagerie/policy_000417.pt --updates 30 [--seat 0]

The learner (``MAPPOSelfPlayLearner``, the 3m study's settings: 5 epochs, entropy bonus 0.001, 128
games × 20 steps per update) starts from ``--start``'s weights (actor and critic; the value
normaliser starts empty) or from scratch (``--start none``) and plays every game against
``--opponent`` (sampling, as self-play opponents do; ``builtin``: the map's built-in AI, bound to seat 1 of
the same two-player battle) through ``GameRunner``, the trainer's own game
loop; ``--seat``: the learner's seat (default: random per game, as in self-play). One line per update:
the learner's mean reward per step, its score in the games that ended during the update's rollout
(1 win, ½ draw) and the share of draws, the actor's gradient norm. Since the opponent is fixed, a
falling return is the learner's failure to improve, not a change of opponents
(docs/results/smac_8m.md).
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="smac:8m")
    p.add_argument("--opponent", required=True, help="a MAPPO policy file, or builtin (the map's built-in AI in seat 1)")
    p.add_argument("--start", default="none", help="a MAPPO policy file to start from, or none")
    p.add_argument("--updates", type=int, default=30)
    p.add_argument("--seat", type=int, default=None, choices=(0, 1))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=5, help="PPO epochs per update (the pilots' 5; MAPPO's SMAC value 15)")
    args = p.parse_args(argv)
    if args.updates < 1:
        raise ValueError(f"updates must be a positive integer, got {args.updates}")
    import numpy as np
    import torch
    from selfplay.agents.mappo.config import MAPPOConfig
    from selfplay.agents.mappo.selfplay import MAPPOSelfPlayLearner, load_policy

    from selfplay.training.games import GameRunner
    from selfplay.training.registry import make_env

    torch.set_num_threads(1)
    env = make_env(args.env, 128, seed=args.seed + 5)
    learner = MAPPOSelfPlayLearner.for_battle(env, 0, MAPPOConfig(epochs=args.epochs, entropy_coef=0.001, rollout_length=20),
                                              seed=args.seed + 3)
    if args.opponent == "builtin":
        from selfplay.envs.smac.panel import panel_member

        if args.seat not in (None, 0):
            raise ValueError("--opponent builtin takes seat 1: the learner's --seat must be 0")
        args.seat, opponent = 0, panel_member("builtin", env, 1)
    else:
        opponent = load_policy(args.opponent)
    if args.start != "none":
        learner.restore(load_policy(args.start))
    runner = GameRunner(env, learner, lambda k: [(0, opponent)] * k, np.random.default_rng(args.seed), seat=args.seat)
    runner.start()
    update, scores = 0, []
    print("update,mean_reward,score,draws,games,actor_grad_norm")
    while update < args.updates:
        finished = runner.step()
        scores += [g.score for g in finished]
        runner.restart([g.game for g in finished])
        if learner.ready():
            m = learner.update()
            update += 1
            s = np.array(scores)
            print(f"{update},{m['mean_reward']:.3f},{s.mean() if len(s) else float('nan'):.2f},"
                  f"{(s == 0.5).mean() if len(s) else float('nan'):.2f},{len(s)},{m['actor_grad_norm']:.3f}", flush=True)
            scores = []
    return 0


if __name__ == "__main__":
    sys.exit(main())
