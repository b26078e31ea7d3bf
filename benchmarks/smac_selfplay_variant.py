"""A MAPPO self-play run on SMAC with any ``MAPPOConfig`` setting overridden, for pilots of settings
the CLI does not expose (``value_norm``, ``policy_active_masks``, ...).

    .venv/bin/python benchmarks/smac_selfplay_variant.py --out runs/p8m_novn --settings '{"value_norm": false}'

The run is ``selfplay train --env MAP --agent mappo --scheme SCHEME --epochs 5 --entropy-coef 0.001
--num-envs 128`` (the 3m study's setting; 20 steps per game per update) with ``--settings`` applied
on top; its run directory reads like any other (``benchmarks/smac_movement_probe.py``,
``benchmarks/smac_selfplay_diagnosis.py``). Used for docs/results/smac_8m.md.
"""

from __future__ import annotations

import argparse
import json
import sys

BASE = {"epochs": 5, "entropy_coef": 0.001}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--env", default="smac:8m")
    p.add_argument("--scheme", default="delta-uniform:delta=0")
    p.add_argument("--episodes", type=int, default=900)
    p.add_argument("--num-envs", type=int, default=128)
    p.add_argument("--checkpoints", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--settings", default="{}", help="JSON object of MAPPOConfig fields")
    args = p.parse_args(argv)
    extra = json.loads(args.settings)
    if not isinstance(extra, dict):
        raise ValueError(f"settings must be a JSON object of MAPPOConfig fields, got {args.settings!r}")
    from selfplay.agents.mappo.config import self_play_rollout_length

    from selfplay.training.loop import TrainConfig, train

    settings = {**BASE, "rollout_length": self_play_rollout_length(args.num_envs), **extra}
    config = TrainConfig(env=args.env, agent="mappo", scheme=args.scheme, episodes=args.episodes,
                         num_envs=args.num_envs, seed=args.seed, checkpoints=args.checkpoints,
                         agent_settings=settings)
    result = train(config, args.out)
    print(f"trained {result.episodes} episodes ({result.updates} updates) -> {result.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
