"""OpenSpiel's PSRO (``psro_v2``) side by side with our PSRO and δ-Uniform on Kuhn and Leduc poker.

Two comparisons per game, each printed as a table and as ratios (ours / OpenSpiel's):

1. Reinforcement-learning oracles at matched training-episode budgets. OpenSpiel: ``psro_v2`` with
   its ``RLOracle`` training a policy-gradient agent (``open_spiel.python.pytorch.policy_gradient``,
   wrapped by OpenSpiel's own ``rl_policy_factory``; its JAX agents are not imported) with the settings
   its authors publish (``PGOracleSettings``: the defaults of OpenSpiel's ``psro_v2_example.py``, the
   script that reproduces Muller et al., "A Generalized Training Approach for Multiagent Learning",
   ICLR 2020 — QPG loss, 4 × 256 MLP, Adam, 10 000 training episodes per player and iteration, 1 000
   meta-game episodes per entry), Nash meta-solver, ``--rl-iterations`` iterations. Ours:
   ``SelfPlayTrainer`` with PPO-MLP under ``psro`` and ``delta-uniform:delta=0`` for the number of
   training episodes OpenSpiel's oracle used.
   Measured: exploitability (NashConv/2, exact) of the meta-strategy's mixture — for δ-Uniform its Ω
   (uniform over the menagerie), for our PSRO its meta-Nash — and of the final trained policy
   (ours: the learner; OpenSpiel's: the last oracle's policies), plus wall-clock. Meta-game episodes
   (the matches that fill PSRO's meta-game) are reported separately: they are not training.
2. Exact best-response oracles at matched iterations: ``psro_v2`` with its ``BestResponseOracle``
   (C++ best response, sampled meta-game, ``sims_per_entry`` episodes per entry) against
   ``selfplay.training.exact_psro.run_exact_psro`` (our PSRO scheme with OpenSpiel's exact best response and an
   exact meta-game): exploitability of the meta-Nash mixture after each number of iterations, seconds.

    python benchmarks/openspiel_psro.py [--games kuhn_poker,leduc_poker] [--rl-iterations 3] [--iterations 10]

Needs the ``bench`` extra (``pip install -e .[bench]``: OpenSpiel, and cvxpy with ECOS for psro_v2's
Nash meta-solver).

State the machine's load (``uptime``) with any figure quoted: the script prints it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import sys
import tempfile
import time
import types
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class PGOracleSettings:
    """OpenSpiel's policy-gradient PSRO oracle as its authors run it: the flag defaults of
    ``open_spiel/python/examples/psro_v2_example.py`` (PG branch, ``init_pg_responder``)."""

    loss_str: str = "qpg"
    hidden_layers_sizes: tuple = (256, 256, 256, 256)  # hidden_layer_size 256 × n_hidden_layers 4
    batch_size: int = 32
    entropy_cost: float = 0.001
    critic_learning_rate: float = 1e-2
    pi_learning_rate: float = 1e-3
    num_critic_before_pi: int = 8  # num_q_before_pi
    optimizer_str: str = "adam"
    number_training_episodes: int = 10_000  # per new policy, i.e. per player and iteration
    sims_per_entry: int = 1000  # meta-game episodes per entry


def _openspiel_pg_policy_class():
    """OpenSpiel's ``rl_policy_factory`` around its PyTorch policy-gradient agent.

    ``rl_policy`` imports OpenSpiel's JAX agents at module level only to build its default classes;
    where JAX is absent, placeholder modules stand in for them so that the factory can be used."""
    for name in ("open_spiel.python.jax.dqn", "open_spiel.python.jax.policy_gradient"):
        try:
            importlib.import_module(name)
        except ImportError:
            placeholder = types.ModuleType(name)
            placeholder.DQN = placeholder.PolicyGradient = object
            sys.modules[name] = placeholder
    from open_spiel.python.algorithms.psro_v2 import rl_policy
    from open_spiel.python.pytorch import policy_gradient

    class PolicyGradient(policy_gradient.PolicyGradient):
        """OpenSpiel 2.0.2's PyTorch ``copy_with_noise`` fails on its own MLP torso (it looks for
        ``.weight`` on ``nn.Sequential`` blocks). What it means to do: build a new agent from the same
        hyperparameters (fresh weights; its weight "copy" perturbs the new agent's own weights) and
        multiply them by (1 + σ·ε); psro_v2's default σ = 0 makes that a fresh agent."""

        def copy_with_noise(self, sigma=0.0, copy_weights=True):
            if sigma != 0.0:
                raise ValueError(f"sigma must be 0 here, got {sigma!r}")
            kwargs = {k: v for k, v in self._kwargs.items() if k not in ("self", "__class__")}
            return type(self)(**kwargs)

    return rl_policy.rl_policy_factory(PolicyGradient)


def _mixture_exploitability(game, policies_per_player, probabilities) -> float:
    """OpenSpiel's own measure: aggregate each player's meta-strategy mixture, then exploitability."""
    from open_spiel.python.algorithms import exploitability, policy_aggregator

    aggregated = policy_aggregator.PolicyAggregator(game).aggregate(range(2), policies_per_player, probabilities)
    return float(exploitability.exploitability(game, aggregated))


def _last_policies_exploitability(game, policies_per_player) -> float:
    from open_spiel.python import policy as policy_lib
    from open_spiel.python.algorithms import exploitability

    last = policy_lib.merge_tabular_policies(
        [policy_lib.tabular_policy_from_callable(game, policies_per_player[p][-1], [p]) for p in range(2)], game)
    return float(exploitability.exploitability(game, last))


def openspiel_psro_rl(game_name: str, iterations: int, settings: PGOracleSettings, seed: int) -> dict:
    import pyspiel
    import torch
    from open_spiel.python import rl_environment
    from open_spiel.python.algorithms.psro_v2 import psro_v2, rl_oracle, strategy_selectors

    np.random.seed(seed)
    torch.manual_seed(seed)
    game = pyspiel.load_game(game_name)
    env = rl_environment.Environment(game)
    counted = {"train": 0, "meta": 0}
    reset = env.reset

    def counting_reset(*args, **kwargs):
        counted["train"] += 1
        return reset(*args, **kwargs)

    env.reset = counting_reset
    policy_class = _openspiel_pg_policy_class()
    kwargs = {k: v for k, v in asdict(settings).items() if k not in ("number_training_episodes", "sims_per_entry")}
    kwargs.update(info_state_size=env.observation_spec()["info_state"][0], num_actions=env.action_spec()["num_actions"],
                  loss_class=False, hidden_layers_sizes=list(settings.hidden_layers_sizes))
    oracle = rl_oracle.RLOracle(env, policy_class, kwargs, number_training_episodes=settings.number_training_episodes)
    agents = [policy_class(env, p, **kwargs) for p in range(2)]
    for agent in agents:
        agent.freeze()
    start = time.perf_counter()
    solver = psro_v2.PSROSolver(game, oracle, initial_policies=agents,
                                training_strategy_selector=strategy_selectors.probabilistic,
                                sims_per_entry=settings.sims_per_entry, meta_strategy_method="nash",
                                sample_from_marginals=True)
    sample = solver.sample_episodes

    def counting_sample(policies, num_episodes):
        counted["meta"] += num_episodes
        return sample(policies, num_episodes)

    solver.sample_episodes = counting_sample
    for _ in range(iterations):
        solver.iteration()
    seconds = time.perf_counter() - start
    policies, meta = solver.get_policies(), solver.get_meta_strategies()
    return {"method": "openspiel psro_v2 (authors' PG oracle)", "train_episodes": counted["train"],
            "meta_episodes": counted["meta"], "iterations": iterations,
            "mixture": _mixture_exploitability(game, policies, meta),
            "final_policy": _last_policies_exploitability(game, policies), "seconds": seconds}


def ours_rl(game_name: str, scheme: str, budget: int, seed: int, num_envs: int, horizon: int) -> dict:
    import torch
    from selfplay.analysis.exploitability import GameTree, exploitability

    from selfplay.training.loop import SelfPlayTrainer, TrainConfig
    from selfplay.training.openspiel_eval import policy_table

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as out:
        config = TrainConfig(env=f"openspiel:{game_name}", agent="ppo-mlp", scheme=scheme, episodes=budget,
                             num_envs=num_envs, seed=seed, checkpoints=1, agent_settings={"horizon": horizon},
                             tensorboard=False)
        trainer = SelfPlayTrainer(config, out)
        meta = {"episodes": 0}
        if hasattr(trainer.scheme, "evaluate") and trainer.scheme.evaluate is not None:
            evaluate = trainer.scheme.evaluate

            def counting_evaluate(entry, opponents, matches):
                meta["episodes"] += matches * len(opponents)
                return evaluate(entry, opponents, matches)

            trainer.scheme.evaluate = counting_evaluate
        result = trainer.train()
        game = trainer.env.game
        tree = GameTree(game)
        weights: dict[int, float] = {}
        objects: dict[int, object] = {}
        for entry_id, p in trainer.scheme.distribution(trainer.menagerie, trainer.payoff).items():
            policy = trainer.menagerie[entry_id].policy  # unchanged weights share one frozen object
            weights[id(policy)] = weights.get(id(policy), 0.0) + p
            objects[id(policy)] = policy
        tables = [policy_table(objects[k], game, tree.template) for k in weights]
        mixture = exploitability(game, tree.aggregate(tables, list(weights.values())))
        final = exploitability(game, policy_table(trainer.learner.snapshot(), game, tree.template))
    return {"method": f"ours {scheme} (PPO-MLP)", "train_episodes": result.episodes, "meta_episodes": meta["episodes"],
            "iterations": getattr(trainer.scheme, "iterations", "-"), "mixture": mixture,
            "final_policy": final, "seconds": result.seconds}


def openspiel_psro_br(game_name: str, iterations: int, sims_per_entry: int, seed: int) -> list[tuple[float, float]]:
    import pyspiel
    from open_spiel.python import policy as policy_lib
    from open_spiel.python.algorithms.psro_v2 import best_response_oracle, psro_v2, strategy_selectors

    np.random.seed(seed)
    game = pyspiel.load_game(game_name)
    start = time.perf_counter()
    random_policy = policy_lib.TabularPolicy(game)
    oracle = best_response_oracle.BestResponseOracle(game=game, policy=random_policy)
    solver = psro_v2.PSROSolver(game, oracle, initial_policies=[random_policy.__copy__() for _ in range(2)],
                                training_strategy_selector=strategy_selectors.probabilistic,
                                sims_per_entry=sims_per_entry, meta_strategy_method="nash", sample_from_marginals=True)
    spent = time.perf_counter() - start  # PSRO's own time; measuring exploitability is not counted
    curve = []
    for _ in range(iterations):
        start = time.perf_counter()
        solver.iteration()
        spent += time.perf_counter() - start
        curve.append((_mixture_exploitability(game, solver.get_policies(), solver.get_meta_strategies()), spent))
    return curve


def ours_br(game_name: str, iterations: int) -> list[tuple[float, float]]:
    import pyspiel

    from selfplay.training.exact_psro import run_exact_psro

    result = run_exact_psro(pyspiel.load_game(game_name), iterations)
    return list(zip(result.exploitability[1:], result.seconds[1:]))


def _row(r: dict) -> str:
    return (f"  {r['method']:<40} {r['train_episodes']:>7} {r['meta_episodes']:>7} {r['iterations']:>5} "
            f"{r['mixture']:>9.4f} {r['final_policy']:>9.4f} {r['seconds']:>8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default="kuhn_poker,leduc_poker")
    parser.add_argument("--rl-iterations", type=int, default=3,
                        help="OpenSpiel RL-oracle PSRO iterations; ours train for as many episodes as its oracle did")
    parser.add_argument("--sims-per-entry", type=int, default=PGOracleSettings.sims_per_entry,
                        help="OpenSpiel's meta-game episodes per entry (both oracles)")
    parser.add_argument("--skip-rl", action="store_true", help="only the exact best-response comparison")
    parser.add_argument("--iterations", type=int, default=10, help="exact best-response PSRO iterations")
    parser.add_argument("--num-envs", type=int, default=32)
    parser.add_argument("--horizon", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"load average (1, 5, 15 min): {os.getloadavg()}; {os.cpu_count()} CPUs")
    for game in args.games.split(","):
        if not args.skip_rl:
            rl_comparison(game, args)
        print(f"\n== {game}: exact best-response oracles, {args.iterations} iterations ==")
        with contextlib.redirect_stdout(io.StringIO()):
            theirs_br = openspiel_psro_br(game, args.iterations, args.sims_per_entry, args.seed)
        ours = ours_br(game, args.iterations)
        print(f"  {'iteration':>9} {'openspiel':>10} {'ours':>10} {'openspiel s':>12} {'ours s':>8}")
        for i, ((e_t, s_t), (e_o, s_o)) in enumerate(zip(theirs_br, ours), start=1):
            print(f"  {i:>9} {e_t:>10.4f} {e_o:>10.4f} {s_t:>12.2f} {s_o:>8.2f}")
        (e_t, s_t), (e_o, s_o) = theirs_br[-1], ours[-1]
        print(f"  ours / OpenSpiel BR-PSRO after {args.iterations} iterations: exploitability "
              f"{e_o:.4f} vs {e_t:.4f}, wall-clock ×{s_o / s_t:.2f}")
    print(f"\nload average at the end: {os.getloadavg()}")


def rl_comparison(game: str, args) -> None:
    """OpenSpiel's PG-oracle PSRO for ``args.rl_iterations`` iterations, then ours for as many training episodes."""
    settings = PGOracleSettings(sims_per_entry=args.sims_per_entry)
    print(f"\n== {game}: RL oracles, OpenSpiel's {args.rl_iterations} iterations × 2 players × "
          f"{settings.number_training_episodes} episodes, ours at its training-episode count ==", flush=True)
    with contextlib.redirect_stdout(io.StringIO()):  # psro_v2 prints its settings and progress
        theirs = openspiel_psro_rl(game, args.rl_iterations, settings, args.seed)
    print(f"  {'method':<40} {'train':>7} {'meta':>7} {'iters':>5} {'mixture':>9} {'final':>9} {'seconds':>8}")
    print(_row(theirs), flush=True)
    rows = []
    for scheme in ("psro", "delta-uniform:delta=0"):
        rows.append(ours_rl(game, scheme, theirs["train_episodes"], args.seed, args.num_envs, args.horizon))
        print(_row(rows[-1]), flush=True)
    for r in rows:
        print(f"  {r['method']} / OpenSpiel PG-PSRO: mixture exploitability ×{r['mixture'] / theirs['mixture']:.2f}, "
              f"final-policy exploitability ×{r['final_policy'] / theirs['final_policy']:.2f}, "
              f"wall-clock ×{r['seconds'] / theirs['seconds']:.2f} (training episodes "
              f"{r['train_episodes']} vs {theirs['train_episodes']})")


if __name__ == "__main__":
    main()
