"""The ``selfplay`` command line (also ``python -m selfplay``). It only builds configs and calls the
library; every subcommand's options map one-to-one onto a config dataclass."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields


def _csv(text: str) -> list[str]:
    """Comma-separated scheme specs. Specs have commas inside their parameters
    (``psro:window=10,threshold=0.5``): a piece with ``key=value`` before any ``:`` continues the
    previous spec, any other piece starts a new one."""
    parts: list[str] = []
    for piece in text.split(","):
        if not parts or "=" not in piece.split(":", 1)[0]:
            parts.append(piece.strip())
        else:
            parts[-1] += "," + piece.strip()
    return [p for p in parts if p]


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _add_ppo_options(p: argparse.ArgumentParser) -> None:
    # fields of agents.ppo.config.PPOConfig; defaults per environment from its ENV_DEFAULTS
    p.add_argument("--horizon", type=int,
                   help="PPO samples (learner steps, all units of a SMAC side together) per update "
                        "(RPS games: 2048, Table I; SMAC: 3200)")
    p.add_argument("--minibatch-size", type=int,
                   help="PPO samples per minibatch, at most the horizon (RPS games: 64; SMAC: the whole batch)")
    p.add_argument("--epochs", type=int, help="PPO epochs per update (10)")
    p.add_argument("--learning-rate", type=float, help="Adam learning rate (RPS games: 3e-4; SMAC: 5e-4)")


def _add_alphastar_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sl", default=None, help="alphastar: SL checkpoint to start from (default: run SL into OUT/sl first)")
    p.add_argument("--sl-epochs", type=int, default=None,
                   help="alphastar: epochs of that SL run (default: 3 with --quick, else SL's own)")
    p.add_argument("--asynchronous", action="store_true",
                   help="alphastar: learn in a background thread while the actors play (faster; not bit-reproducible)")


def _alphastar_settings(args: argparse.Namespace, out: str, only_agent: bool = True, kind: str = "train") -> dict:
    """The AlphaStar learner's settings: the SL checkpoint (made first if not given) and RL overrides.
    ``only_agent``: no other agent takes the PPO options, so passing them is an error. ``out`` is checked
    (a directory, of ``kind``) before the SL run writes into ``out/sl``."""
    from selfplay.agents.alphastar.rl import ensure_sl_checkpoint
    from selfplay.training.registry import COMMANDER_GRID, env_for_agent, smac_map
    from selfplay.training.rundir import RunDir

    run = RunDir(out, kind=kind)
    run.check_kind(f"selfplay {args.command}")
    if run.root.is_dir():
        run.check_links()  # OUT/sl/sl_checkpoint.pt is read below: not through a link
    env_for_agent(args.env, "alphastar")
    unsupported = [k for k in ("horizon", "minibatch_size", "epochs") if getattr(args, k, None) is not None]
    if unsupported and only_agent:
        raise ValueError(f"options {unsupported} are PPO settings; the alphastar agent takes --learning-rate")
    if args.sl is None:
        quick = getattr(args, "quick", False)
        epochs = args.sl_epochs if args.sl_epochs is not None else (3 if quick else None)
        sl = ensure_sl_checkpoint(smac_map(args.env), f"{out}/sl", quick=quick, grid=COMMANDER_GRID,
                                  seed=args.seed, epochs=epochs)
    else:
        sl = args.sl
    settings = {"sl_checkpoint": str(sl)}
    if args.learning_rate is not None:
        settings["learning_rate"] = args.learning_rate
    if args.asynchronous:
        settings["asynchronous"] = True
    return settings


def _add_ray_options(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--ray", action="store_true", help=f"run {what} on Ray (starts a local instance; needs .[ray])")
    p.add_argument("--ray-address", default=None, metavar="HOST:PORT|auto",
                   help="join an existing Ray cluster instead (implies --ray; --out must be a path every node sees)")


def _ray_settings(args: argparse.Namespace):
    """The Ray settings the options ask for, or ``None`` for the local path (Ray is not imported)."""
    if not (args.ray or args.ray_address):
        return None
    from selfplay.training.distributed.executor import RaySettings

    return RaySettings(address=args.ray_address)


def _given(value, default):
    """The option's value when it was given (0 included), else the default."""
    return default if value is None else value


def _ppo_overrides(args: argparse.Namespace) -> dict:
    """The PPO options given, as ``PPOConfig`` fields (``--rnn-cell`` is its ``body``)."""
    keys = ("horizon", "minibatch_size", "epochs", "learning_rate")
    out = {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}
    alphastar_only = [f"--{k.replace('_', '-')}" for k in ("sl", "sl_epochs", "asynchronous")
                      if getattr(args, k, None) is not None and getattr(args, k) is not False]
    if alphastar_only and "alphastar" not in args.agent.split(","):
        raise ValueError(f"options {', '.join(alphastar_only)} apply to the alphastar agent only, not agent {args.agent!r}")
    cell = getattr(args, "rnn_cell", None)
    if cell is not None:
        agents = args.agent.split(",")
        if "ppo-rnn" not in agents:
            raise ValueError(f"rnn_cell applies to the ppo-rnn agent, got agent {args.agent!r}")
        if agents != ["ppo-rnn"]:
            raise ValueError("rnn_cell with several agents is ambiguous: compare ppo-rnn on its own")
        from selfplay.agents.ppo.config import ENV_DEFAULTS
        from selfplay.training.registry import is_smac

        family = "smac" if is_smac(args.env) else "rps"
        cells = [b for b in ENV_DEFAULTS[family][0].BODIES if b != "mlp"]
        if cell not in cells:
            raise ValueError(f"rnn_cell on {args.env!r} must be one of {cells}, got {cell!r}")
        out["body"] = cell
    return out


ENV_HELP = "environment: rirrps | biased-rps | rpsls | smac:MAP[@sc2] | openspiel:GAME[(param=value,...)]"
AGENT_HELP = "ppo-mlp | ppo-rnn (a recurrent cell: --rnn-cell) | alphastar (SMAC only)"
SEED_HELP = "seed of the run (same seed, same machine: same results)"
OUT_HELP = "output directory (a run is resumed from it when it exists)"
QUICK_HELP = "a smoke-test scale that finishes in about a minute"


def _epilog() -> str:
    """The names the options take: environments, maps, games, agents, scheme specs."""
    from selfplay.core.schemes import SCHEME_NAMES
    from selfplay.training.registry import AGENTS, MATRIX_GAMES

    try:
        from selfplay.envs.smac import MAP_NAMES
        maps = ", ".join(MAP_NAMES)
    except ImportError:  # pragma: no cover - the simulator ships with the package
        maps = "see envs/smac"
    return (f"environments: {', '.join(MATRIX_GAMES)}; smac:MAP (maps: {maps}; smac:MAP@sc2 plays the real "
            "StarCraft II); openspiel:GAME or openspiel:GAME(param=value,...) for two-player zero-sum OpenSpiel "
            "games with information-state tensors (kuhn_poker, leduc_poker, goofspiel(num_cards=4), liars_dice, "
            f"matrix_rps, ...). agents: {', '.join(AGENTS)}. schemes: {', '.join(s for s in SCHEME_NAMES if s != 'league')}"
            " (specs: naive, delta-uniform:delta=D, delta-limit-uniform:delta=D, psro[:solver=...,threshold=...]); "
            "`selfplay league` trains AlphaStar's league.")


def _subparser(sub, name: str, help: str) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help, description=help, epilog=_epilog(),
                          formatter_class=argparse.ArgumentDefaultsHelpFormatter)


def _add_run_options(p: argparse.ArgumentParser, several_agents: bool = False) -> None:
    """The options every training command shares, with one name each."""
    p.add_argument("--env", default="rirrps", help=ENV_HELP)
    if several_agents:
        p.add_argument("--agents", "--agent", dest="agent", default="ppo-mlp",
                       help="one agent or several, comma-separated: " + AGENT_HELP)
    else:
        p.add_argument("--agent", default="ppo-mlp", help=AGENT_HELP)
    p.add_argument("--rnn-cell", choices=("lstm", "gru"), default=None,
                   help="ppo-rnn's recurrent cell (default: lstm on matrix and OpenSpiel games, where it is the only "
                        "cell; gru on SMAC, which also takes lstm)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="selfplay", description="Self-play framework comparison and evaluation suite.",
                                     epilog=_epilog())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = _subparser(sub, "train", "train one learner under one self-play scheme")
    _add_run_options(p)
    p.add_argument("--scheme", default="delta-uniform:delta=0", help="scheme spec, e.g. delta-limit-uniform:delta=0.5")
    p.add_argument("--episodes", type=int, default=None, help="episodes to train (the budget; default 10000, --quick 600)")
    p.add_argument("--num-envs", type=int, default=64, help="games played at once")
    p.add_argument("--checkpoints", type=int, default=None, help="evaluation checkpoints over the run (default 100, --quick 8)")
    p.add_argument("--quick", action="store_true", help=QUICK_HELP + " (PPO horizon 256 on matrix games)")
    p.add_argument("--seed", type=int, default=0, help=SEED_HELP)
    p.add_argument("--out", required=True, help=OUT_HELP)
    p.add_argument("--progress", action="store_true", help="show a progress bar (display only: not part of the run)")
    _add_ppo_options(p)
    _add_alphastar_options(p)
    _add_ray_options(p, "the run as a Ray task")

    p = _subparser(sub, "evaluate", "winrate matrix, maxent Nash and figures of a run's checkpoints")
    p.add_argument("run_dir", help="a run directory written by `selfplay train` (or one of a comparison's runs)")
    p.add_argument("--matches", type=int, default=None, help="matches per pair (both seats; default 25, --quick 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the evaluation games")
    p.add_argument("--quick", action="store_true", help="a smoke-test evaluation: 5 matches per pair")
    _add_ray_options(p, "the evaluation as a Ray task")

    p = _subparser(sub, "compare", "train every scheme (and seed), evaluate, and write a report with figures")
    _add_run_options(p, several_agents=True)
    p.add_argument("--schemes", type=_csv, default=None, help="comma-separated scheme specs (default: the six of the paper)")
    p.add_argument("--episodes", type=int, default=None, help="episodes per run (the budget; default by preset)")
    p.add_argument("--checkpoints", type=int, default=None, help="evaluation checkpoints per run")
    p.add_argument("--matches", type=int, default=None, help="matches per pair (both seats)")
    p.add_argument("--seeds", type=_ints, default=None, help="comma-separated seeds, e.g. 0,1,2")
    p.add_argument("--num-envs", type=int, default=None, help="games played at once per run")
    p.add_argument("--jobs", type=int, default=None, help="training runs in parallel (default: CPU count)")
    p.add_argument("--quick", action="store_true", help=QUICK_HELP)
    p.add_argument("--no-embedding", action="store_true", help="skip the t-SNE embedding figure")
    p.add_argument("--confidence", type=float, default=None, help="coverage of the intervals over seeds (default 0.95)")
    p.add_argument("--no-cross-seed-rpp", action="store_true",
                   help="RPP only between same-seed populations (not every seed pair: n_seeds² games per pair)")
    p.add_argument("--out", required=True, help=OUT_HELP)
    _add_ppo_options(p)
    _add_alphastar_options(p)
    _add_ray_options(p, "each run and each run's evaluation as a Ray task")

    p = _subparser(sub, "league", "train AlphaStar's league (main players, main and league exploiters) and evaluate it")
    _add_run_options(p)
    p.add_argument("--main", type=int, default=1, help="main players")
    p.add_argument("--main-exploiters", type=int, default=1, help="main exploiters")
    p.add_argument("--league-exploiters", type=int, default=2, help="league exploiters")
    p.add_argument("--steps", type=int, default=None,
                   help="learner steps per player (the budget; default 200000, --quick 30000; alphastar 400000/40000)")
    p.add_argument("--min-steps", type=int, default=None, help="no checkpoint before this many steps since the last (default steps/8)")
    p.add_argument("--max-steps", type=int, default=None, help="checkpoint after this many steps regardless (default steps/4)")
    p.add_argument("--num-envs", type=int, default=64, help="games played at once per player")
    p.add_argument("--matches", type=int, default=None, help="matches per pair in the evaluation (default 25; --quick 10)")
    p.add_argument("--seed", type=int, default=0, help=SEED_HELP)
    p.add_argument("--quick", action="store_true",
                   help="a small league that finishes in about a minute (alphastar on SMAC: under 10 minutes)")
    p.add_argument("--out", required=True, help=OUT_HELP)
    _add_ppo_options(p)
    _add_alphastar_options(p)
    _add_ray_options(p, "the league as Ray actors (coordinator, rollout workers, a learner per player)")
    p.add_argument("--workers", type=int, default=2, help="with --ray: rollout-worker actors")
    p.add_argument("--max-lag", type=int, default=1,
                   help="with --ray and --agent alphastar: a player plays on while up to this many of its updates are "
                        "unfinished (V-trace corrects the lag; PPO is always on-policy)")

    p = _subparser(sub, "sl", "AlphaStar agent: record scripted demonstrations on SMAC and train it by supervised learning")
    p.add_argument("--env", default="smac:3m", help="smac:MAP")
    p.add_argument("--quick", action="store_true", help="a small run that finishes in a few minutes")
    p.add_argument("--seed", type=int, default=0, help=SEED_HELP)
    p.add_argument("--out", required=True, help="output directory (sl_checkpoint.pt, sl_metrics.json)")

    p = _subparser(sub, "omega", "print a scheme's Ω for a menagerie of a given size")
    p.add_argument("scheme", help="scheme spec, e.g. delta-uniform:delta=0.5")
    p.add_argument("--size", type=int, default=10, help="number of menagerie entries")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return COMMANDS[args.command](args)
    except (ValueError, OSError, ImportError) as err:  # bad input, a damaged or locked run directory, a full
        # disk, an optional part that is not installed (the real game, Ray, OpenSpiel)
        print(f"selfplay {args.command}: error: {err}", file=sys.stderr)
        return 2


def cmd_train(args: argparse.Namespace) -> int:
    from selfplay.training.loop import TrainConfig, train

    settings = _ppo_overrides(args)
    if args.agent == "alphastar":
        import torch

        torch.set_num_threads(1)
        settings = _alphastar_settings(args, args.out)
    elif args.quick and args.env in ("rirrps", "biased-rps", "rpsls"):
        settings.setdefault("horizon", 256)
    config = TrainConfig(env=args.env, agent=args.agent, scheme=args.scheme,
                         episodes=_given(args.episodes, 600 if args.quick else 10_000),
                         num_envs=args.num_envs, seed=args.seed,
                         checkpoints=_given(args.checkpoints, 8 if args.quick else 100),
                         agent_settings=settings, progress=args.progress)
    ray = _ray_settings(args)
    if ray is not None:
        from selfplay.evaluation.compare import _train_one
        from selfplay.training.distributed.executor import RayExecutor

        (info,) = RayExecutor(ray).map(_train_one, [(config, args.out)])
        print(f"trained {config.episodes} episodes ({info['updates']} updates) in {info['seconds']:.1f}s on Ray; "
              f"menagerie {info['menagerie_size']} -> {args.out}")
        return 0
    result = train(config, args.out)
    print(f"trained {result.episodes} episodes ({result.updates} updates) in {result.seconds:.1f}s; "
          f"menagerie {result.menagerie_size}, checkpoints {result.checkpoints} -> {result.run_dir}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    import torch

    from selfplay.evaluation.compare import evaluate_run_dir

    torch.set_num_threads(1)
    matches = _given(args.matches, 5 if args.quick else 25)
    ray = _ray_settings(args)
    if ray is not None:
        from selfplay.evaluation.compare import _evaluate_one
        from selfplay.training.distributed.executor import RayExecutor

        (summary,) = RayExecutor(ray).map(_evaluate_one, [(args.run_dir, matches, args.seed, RayExecutor(ray))])
    else:
        summary = evaluate_run_dir(args.run_dir, matches=matches, seed=args.seed)
    for key, value in summary.items():
        print(f"{key}: {value}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from selfplay.evaluation.compare import CompareConfig, compare

    config = CompareConfig.preset(quick=args.quick, env=args.env)
    overrides = {"env": args.env, "agents": args.agent.split(","), "schemes": args.schemes, "episodes": args.episodes,
                 "checkpoints": args.checkpoints, "matches": args.matches, "seeds": args.seeds,
                 "num_envs": args.num_envs, "jobs": args.jobs, "confidence": args.confidence}
    for f in fields(config):
        if overrides.get(f.name) is not None:
            setattr(config, f.name, overrides[f.name])
    config.ppo.update(_ppo_overrides(args))
    if "alphastar" in config.agents:
        import torch

        torch.set_num_threads(1)
        config.alphastar.update(_alphastar_settings(args, args.out, only_agent=config.agents == ["alphastar"],
                                                    kind="comparison"))
    if args.no_embedding:
        config.embedding = False
    if args.no_cross_seed_rpp:
        config.rpp_cross_seed = False
    config.validate()
    ray = _ray_settings(args)
    executor = None
    if ray is not None:
        from selfplay.training.distributed.executor import RayExecutor

        executor = RayExecutor(ray, progress=True)
    report = compare(config, args.out, executor=executor)
    print(f"report: {report}")
    return 0


def cmd_league(args: argparse.Namespace) -> int:
    from selfplay.evaluation.league import train_league
    from selfplay.training.league_loop import LeagueTrainConfig

    spec = f"league:main={args.main},main_exploiters={args.main_exploiters},league_exploiters={args.league_exploiters}"
    if args.agent == "alphastar":
        import torch

        torch.set_num_threads(1)
        settings = _alphastar_settings(args, args.out, kind="league")
        steps = _given(args.steps, 40_000 if args.quick else 400_000)
    else:
        settings = _ppo_overrides(args) or ({"horizon": 1024} if args.quick else {})
        steps = _given(args.steps, 30_000 if args.quick else 200_000)
    config = LeagueTrainConfig(env=args.env, agent=args.agent, league=spec, steps=steps,
                               min_steps=_given(args.min_steps, steps // 8), max_steps=_given(args.max_steps, steps // 4),
                               num_envs=args.num_envs, seed=args.seed, matches=_given(args.matches, 10 if args.quick else 25),
                               agent_settings=settings)
    ray = _ray_settings(args)
    if ray is not None:
        from selfplay.evaluation.league import train_league_on_ray
        from selfplay.training.distributed.league import RayLeagueSettings

        summary = train_league_on_ray(config, args.out, RayLeagueSettings(ray=ray, workers=args.workers, max_lag=args.max_lag,
                                                                       progress=True))
    else:
        summary = train_league(config, args.out)
    print(f"league done: {summary}; report: {args.out}/report.md")
    return 0


def cmd_sl(args: argparse.Namespace) -> int:
    from selfplay.training.registry import check_env_name, is_smac, smac_map

    check_env_name(args.env)
    if not is_smac(args.env):
        raise ValueError(f"env must be smac:MAP for the AlphaStar agent, got {args.env!r}")
    import torch

    from selfplay.agents.alphastar.sl import run_sl

    torch.set_num_threads(1)
    from selfplay.training.rundir import RunDir

    run = RunDir(args.out, kind="sl")
    run.lock("selfplay sl")  # one writer; a directory of another kind or holding links is refused
    try:
        metrics = run_sl(smac_map(args.env), quick=args.quick, out=args.out, seed=args.seed)
    finally:
        run.unlock()
    keys = ("action_type_accuracy", "win_rate_vs_scripted", "demonstrator_win_rate")
    print(", ".join(f"{k} {metrics[k]:.3f}" for k in keys) + f"; metrics and checkpoint in {args.out}")
    return 0


def cmd_omega(args: argparse.Namespace) -> int:
    from selfplay.core.menagerie import Menagerie
    from selfplay.core.schemes import make_scheme
    from selfplay.utils.checks import check_int

    scheme = make_scheme(args.scheme, defer_evaluator=True)  # Ω only: no meta-game matches played
    check_int(args.size, "size", 1, MAX_OMEGA_SIZE)
    menagerie = Menagerie()
    for i in range(args.size):
        menagerie.add(f"policy-{i}", step=i, weight_version=i)
    for entry_id, p in scheme.distribution(menagerie).items():
        print(f"{entry_id:6d}  {p:.6f}")
    return 0


MAX_OMEGA_SIZE = 10**6  # menagerie entries `omega` prints one line each for (a million lines is already unreadable)

COMMANDS = {"train": cmd_train, "evaluate": cmd_evaluate, "compare": cmd_compare, "league": cmd_league,
            "sl": cmd_sl, "omega": cmd_omega}
