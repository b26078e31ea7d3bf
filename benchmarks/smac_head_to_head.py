"""Head-to-head of MAPPO agents on a SMAC map's two-player battle: the learner trained against the
built-in AI (``selfplay train --opponent builtin-ai``) against the last checkpoints of self-play runs.

    .venv/bin/python benchmarks/smac_head_to_head.py VS_AI_RUN SELF_PLAY_RUN [SELF_PLAY_RUN ...] [--games 32]

Both runs must be on the same map. The battle is the mirrored two-player battle self-play trains on
(``make_env(env, games)``); each pairing is played ``games`` games with the vs-AI agent in seat 0 and
``games`` with it in seat 1 (``matches.play_matches``, game seeds from ``--seed``), once with both sides
sampling their actions (as in training) and once greedy (as SMAC's tests). A game's outcome is its first episode's: a win, a loss
or a draw (a timeout or mutual destruction). The vs-AI agent plays seat 1 through the mirrored
observation every seat-1 policy reads. Written for the 2s3z page (docs/results/smac_2s3z.md): whether a
self-play agent that loses to the built-in AI also loses to an agent that beats it.
"""

from __future__ import annotations

import argparse
import sys


class Greedy:
    """``policy`` playing each unit's most probable action (``deterministic=True``), as SMAC's tests do."""

    def __init__(self, policy):
        self.policy = policy

    def initial_state(self, n):
        return self.policy.initial_state(n)

    def act(self, obs, state, mask=None, start=None):
        return self.policy.act(obs, state, mask, start, deterministic=True)


def play(env_name: str, a, b, games: int, greedy: bool, seed: int) -> tuple[int, int, int]:
    """``(wins of a, wins of b, draws)`` over ``games`` games of ``a`` (seat 0) against ``b`` (seat 1), played
    by ``selfplay.training.matches.play_matches`` (sampled: each policy with its own generator, reseeded
    here from ``seed`` and its seat, so that a pairing plays the same games whatever was played before)."""
    import torch

    from selfplay.training.matches import play_matches
    from selfplay.utils.seeding import derive_seed

    for seat, policy in enumerate((a, b)):
        if isinstance(getattr(policy, "generator", None), torch.Generator):
            policy.generator.manual_seed(derive_seed(seed, "head-to-head", seat))
    policies = [Greedy(a), Greedy(b)] if greedy else [a, b]
    scores = play_matches(env_name, policies, [[0, 1]], games, seed=seed, home_seat=0)[0]
    return int((scores == 1).sum()), int((scores == 0).sum()), int((scores == 0.5).sum())


def vs_ai_agent(run_dir: str):
    """``(env name, the frozen actor)`` of a ``train --opponent builtin-ai`` run's last commit."""
    from selfplay.agents.mappo import mappo_config
    from selfplay.agents.mappo.learner import MAPPOLearner
    from selfplay.agents.mappo.selfplay import MAPPOFrozenPolicy, battle_spec

    from selfplay.training.registry import make_env
    from selfplay.training.rundir import RunDir

    state = RunDir(run_dir).load_commit()
    config = state["config"]
    if config.get("opponent") != "builtin-ai":
        raise ValueError(f"vs_ai_run must be a `selfplay train --opponent builtin-ai` run, got {run_dir!r}")
    settings = mappo_config(**config["resolved_agent_settings"])
    learner = MAPPOLearner.for_battle(make_env(config["env"], 1, seed=0, scripted_enemy=True), settings, seed=0)
    learner.load_state_dict(state["learner"])
    spec = battle_spec(make_env(config["env"], 1, seed=0), 0, settings)
    return config["env"], MAPPOFrozenPolicy(learner.network, spec, learner.weight_version)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("vs_ai_run")
    p.add_argument("self_play_runs", nargs="+")
    p.add_argument("--games", type=int, default=32, help="games per seat and mode")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.games < 1:
        raise ValueError(f"games must be a positive integer, got {args.games}")
    import torch

    from selfplay.training.rundir import open_committed

    torch.set_num_threads(1)
    env_name, vs_ai = vs_ai_agent(args.vs_ai_run)
    print("run,checkpoint_version,mode,vs_ai_agent_wins,self_play_wins,draws,games")
    for path in args.self_play_runs:
        run, state, kit = open_committed(path)
        if state["config"]["env"] != env_name:
            raise ValueError(f"self-play run {path!r} is on {state['config']['env']!r}, the vs-AI run on {env_name!r}")
        checkpoints = run.committed_menagerie(state, "checkpoints", kit.load_policy)
        agent = checkpoints[checkpoints.ids[-1]].policy
        for greedy in (False, True):
            w0, l0, d0 = play(env_name, vs_ai, agent, args.games, greedy, args.seed)
            l1, w1, d1 = play(env_name, agent, vs_ai, args.games, greedy, args.seed + 1)
            print(f"{path},{agent.weight_version},{'greedy' if greedy else 'sampled'},{w0 + w1},{l0 + l1},{d0 + d1},"
                  f"{2 * args.games}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
