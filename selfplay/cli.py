"""The ``selfplay`` command line (also ``python -m selfplay``). It only builds configs and calls the
library; every subcommand's options map one-to-one onto a config dataclass."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from selfplay.cli_options import ConfigHelpFormatter, add_field_options, describe, given


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


PPO_FIELDS = ["horizon", "minibatch_size", "epochs", "learning_rate"]  # PPOConfig fields that are options

# The command line's own presets (the dataclasses hold the full-scale defaults; `compare`'s presets are
# CompareConfig.preset): each written here once, applied by the commands and shown by --help.
TRAIN_QUICK = {"episodes": 600, "checkpoints": 8}  # `train --quick`
TRAIN_QUICK_PPO = {"horizon": 256}  # `train --quick` on the matrix games
LEAGUE_STEPS = {(False, False): 200_000, (True, False): 30_000, (False, True): 400_000, (True, True): 40_000}
# `league` learner steps per player by (--quick, alphastar agent); min/max steps default to steps/8 and steps/4
LEAGUE_QUICK = {"matches": 10}  # `league --quick`
LEAGUE_QUICK_PPO = {"horizon": 1024}  # `league --quick` without PPO options
EVALUATE_QUICK_MATCHES = 5  # `evaluate --quick`; the full default is evaluate_run_dir's


def _ppo_default(field: str, preset: dict | None = None, family: str = "rps"):
    """A PPO field's value in environment ``family`` with ``preset``'s overrides (the value a run gets)."""
    from selfplay.agents.ppo.config import ppo_config

    return (preset or {}).get(field, getattr(ppo_config(family), field))


def _add_ppo_options(p: argparse.ArgumentParser, presets: Callable[[str], list[tuple[str, object]]]) -> None:
    """``PPO_FIELDS`` as options; ``presets(field)``: the labelled defaults --help states."""
    add_field_options(p, "selfplay.agents.ppo.config", "PPOConfig", PPO_FIELDS,
                      lambda name: describe(presets(name) + ([("alphastar", _alphastar_learning_rate())]
                                                             if name == "learning_rate" else [])))


def _alphastar_learning_rate() -> float:
    from selfplay.agents.alphastar.learner import AlphaStarRLConfig

    return AlphaStarRLConfig.learning_rate


def _add_alphastar_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sl", default=None, help="alphastar: SL checkpoint to start from (default: run SL into OUT/sl first)")
    p.add_argument("--sl-epochs", type=int, default=None,
                   help="alphastar: epochs of that SL run (default: 3 with --quick, else SL's own)")
    _add_demonstration_options(p, "alphastar: ")
    p.add_argument("--asynchronous", action="store_true",
                   help="alphastar: learn in a background thread while the actors play (faster; not bit-reproducible)")


def _add_demonstration_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    from selfplay.agents.alphastar.demonstrators import DEMONSTRATORS
    from selfplay.agents.alphastar.sl import DEMONSTRATION_OPPONENTS

    p.add_argument("--demonstrator", choices=sorted(DEMONSTRATORS), default=argparse.SUPPRESS,
                   help=f"{prefix}the script the SL run imitates (default: focus_fire, on the weakest enemy in reach; "
                        "nearest: on the enemy nearest the army, the stronger on 3m and 2s3z; docs/guides/alphastar.md)")
    p.add_argument("--demonstrations-against", choices=DEMONSTRATION_OPPONENTS, default=argparse.SUPPRESS,
                   help=f"{prefix}whom the demonstrator plays in the recorded games (default: scripted_ai, the map's "
                        "built-in AI; self_play: itself, so no part of training sees the built-in AI)")


DEMONSTRATION_OPTIONS = ("demonstrator", "demonstrations_against")  # SLConfig fields, given only when on the command line


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
    sl_options = [f"--{k.replace('_', '-')}" for k in given(args, DEMONSTRATION_OPTIONS)] + (
        ["--sl-epochs"] if args.sl_epochs is not None else [])
    if args.sl is not None and sl_options:
        raise ValueError(f"{', '.join(sl_options)} set the SL run this command makes; with --sl the SL checkpoint "
                         "is given: drop one")
    if args.sl is None:
        quick = getattr(args, "quick", False)
        epochs = args.sl_epochs if args.sl_epochs is not None else (3 if quick else None)
        sl = ensure_sl_checkpoint(smac_map(args.env), f"{out}/sl", quick=quick, grid=COMMANDER_GRID,
                                  seed=args.seed, epochs=epochs, **given(args, DEMONSTRATION_OPTIONS))
    else:
        sl = args.sl
    settings = {"sl_checkpoint": str(sl)}
    if getattr(args, "learning_rate", None) is not None:
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


def _ppo_overrides(args: argparse.Namespace) -> dict:
    """The PPO options given, as ``PPOConfig`` fields (``--rnn-cell`` is its ``body``)."""
    keys = ("horizon", "minibatch_size", "epochs", "learning_rate")
    out = {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}
    alphastar_only = [f"--{k.replace('_', '-')}" for k in ("sl", "sl_epochs", "asynchronous", *DEMONSTRATION_OPTIONS)
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
            "StarCraft II; smac:MAP(spawns=map) starts the second side at the map's own spawns, not mirrored; "
            "smac:MAP(reward_only_positive=false) also charges each side half the damage it takes); "
            "smacv2:SCENARIO (protoss|terran|zerg_5_vs_5, _10_vs_10, _20_vs_20, _10_vs_11, _20_vs_23, "
            "each also _epo); openspiel:GAME or openspiel:GAME(param=value,...) for two-player zero-sum OpenSpiel "
            "games with information-state tensors (kuhn_poker, leduc_poker, goofspiel(num_cards=4), liars_dice, "
            f"matrix_rps, ...). agents: {', '.join(AGENTS)}. schemes: {', '.join(s for s in SCHEME_NAMES if s != 'league')}"
            " (specs: naive, delta-uniform:delta=D, delta-limit-uniform:delta=D, psro[:solver=...,threshold=...]); "
            "`selfplay league` trains AlphaStar's league.")


def _subparser(sub, name: str, help: str) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help, description=help, epilog=_epilog(), formatter_class=ConfigHelpFormatter)


def _add_rnn_cell(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rnn-cell", choices=("lstm", "gru"), default=None,
                   help="ppo-rnn's recurrent cell (default: lstm on matrix and OpenSpiel games, where it is the only "
                        "cell; gru on SMAC, which also takes lstm)")


TRAIN_FIELDS = ["env", "agent", "scheme", "episodes", "num_envs", "checkpoints", "seed", "progress"]
COMPARE_FIELDS = ["env", "agents", "schemes", "episodes", "checkpoints", "matches", "seeds", "num_envs", "jobs",
                  "confidence"]
LEAGUE_FIELDS = ["env", "agent", "steps", "min_steps", "max_steps", "num_envs", "matches", "seed"]


def _train_defaults(name: str) -> list[tuple[str, object]]:
    from selfplay.training.loop import TrainConfig

    if name in PPO_FIELDS:
        return [("", _ppo_default(name)), ("--quick on matrix games", _ppo_default(name, TRAIN_QUICK_PPO)),
                ("on SMAC", _ppo_default(name, family="smac"))]
    full = getattr(TrainConfig, name)
    return [("", full), ("--quick", TRAIN_QUICK.get(name, full))]


def _compare_defaults(name: str) -> list[tuple[str, object]]:
    from selfplay.evaluation.compare import CompareConfig

    presets = [("", CompareConfig.preset()), ("--quick", CompareConfig.preset(quick=True)),
               ("on SMAC", CompareConfig.preset(env="smac:3m")),
               ("--quick on SMAC", CompareConfig.preset(quick=True, env="smac:3m"))]
    if name in PPO_FIELDS:
        return [(label, _ppo_default(name, c.ppo, "smac" if "SMAC" in label else "rps")) for label, c in presets]
    if name == "jobs":
        return [("", "the CPU count")]
    if name == "env":
        return [("", CompareConfig.env)]
    return [(label, getattr(c, name)) for label, c in presets]


def _league_defaults(name: str) -> list[tuple[str, object]]:
    from selfplay.training.league_loop import LeagueTrainConfig

    if name in PPO_FIELDS:
        return [("", _ppo_default(name)), ("--quick", _ppo_default(name, LEAGUE_QUICK_PPO)),
                ("on SMAC", _ppo_default(name, family="smac"))]
    if name in ("steps", "min_steps", "max_steps"):
        share = {"steps": 1, "min_steps": 8, "max_steps": 4}[name]
        text = "{}" if share == 1 else f"steps/{share} = {{}}"
        return [(label, text.format(LEAGUE_STEPS[key] // share)) for label, key in
                [("", (False, False)), ("--quick", (True, False)), ("alphastar", (False, True)),
                 ("alphastar --quick", (True, True))]]
    full = getattr(LeagueTrainConfig, name)
    return [("", full), ("--quick", LEAGUE_QUICK.get(name, full))]


def _ray_league_default(name: str) -> int:
    """A ``RayLeagueSettings`` default, as ``--help`` states it and ``--ray`` uses it."""
    from selfplay.training.distributed.league import RayLeagueSettings

    return getattr(RayLeagueSettings, name)


def _league_roles() -> dict[str, int]:
    """The players of the default league spec (``LeagueTrainConfig.league``)."""
    from selfplay.core.schemes import parse_spec
    from selfplay.training.league_loop import LeagueTrainConfig

    return parse_spec(LeagueTrainConfig.league)[1]


def _evaluate_matches(quick: bool) -> int:
    """Matches per pair of ``selfplay evaluate``: ``evaluate_run_dir``'s default, or the quick one."""
    import inspect

    from selfplay.evaluation.compare import evaluate_run_dir

    return EVALUATE_QUICK_MATCHES if quick else inspect.signature(evaluate_run_dir).parameters["matches"].default


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="selfplay", description="Self-play framework comparison and evaluation suite.",
                                     epilog=_epilog())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = _subparser(sub, "train", "train one learner under one self-play scheme")
    add_field_options(p, "selfplay.training.loop", "TrainConfig", TRAIN_FIELDS, lambda n: describe(_train_defaults(n)))
    _add_rnn_cell(p)
    p.add_argument("--quick", action="store_true", help=QUICK_HELP)
    p.add_argument("--out", required=True, help=OUT_HELP)
    _add_ppo_options(p, _train_defaults)
    _add_alphastar_options(p)
    _add_ray_options(p, "the run as a Ray task")
    _add_builtin_ai_options(p)

    p = _subparser(sub, "evaluate", "winrate matrix, maxent Nash and figures of a run's checkpoints")
    p.add_argument("run_dir", help="a run directory written by `selfplay train` (or one of a comparison's runs)")
    action = p.add_argument("--matches", type=int, default=argparse.SUPPRESS, help="matches per pair (both seats)")
    action.default_text = lambda: describe([("", _evaluate_matches(False)), ("--quick", _evaluate_matches(True))])
    p.add_argument("--seed", type=int, default=0, help="seed of the evaluation games")
    p.add_argument("--quick", action="store_true", help="a smoke-test evaluation: fewer matches per pair")
    p.add_argument("--panel", action="store_true", help="SMAC: also the last checkpoint and the maxent-Nash mixture "
                   "against every panel opponent (evaluation/panel.csv; docs: guides/smac-panel.md)")
    p.add_argument("--panel-games", type=int, default=40, help="--panel: games per opponent and seed (against builtin all in SMAC's single-player game, the agent in "
                   "seat 0; against a script half per seat)")
    p.add_argument("--panel-seeds", type=int, default=3, help="--panel: evaluation seeds (the interval is over them)")
    _add_ray_options(p, "the evaluation as a Ray task")

    p = _subparser(sub, "compare", "train every scheme (and seed), evaluate, and write a report with figures")
    add_field_options(p, "selfplay.evaluation.compare", "CompareConfig", COMPARE_FIELDS,
                      lambda n: describe(_compare_defaults(n)), types={"schemes": _csv},
                      flags={"agents": ["--agents", "--agent"]})
    _add_rnn_cell(p)
    p.add_argument("--quick", action="store_true", help=QUICK_HELP)
    p.add_argument("--no-embedding", action="store_true", help="skip the t-SNE embedding figure")
    p.add_argument("--no-cross-seed-rpp", action="store_true",
                   help="RPP only between same-seed populations (not every seed pair: n_seeds² games per pair)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    p.add_argument("--out", required=True, help=OUT_HELP)
    _add_ppo_options(p, _compare_defaults)
    _add_rollout_length(p)
    _add_mappo_loss_options(p)
    _add_mappo_learner_options(p)
    _add_alphastar_options(p)
    _add_ray_options(p, "each run and each run's evaluation as a Ray task")

    p = _subparser(sub, "league", "train AlphaStar's league (main players, main and league exploiters) and evaluate it")
    add_field_options(p, "selfplay.training.league_loop", "LeagueTrainConfig", LEAGUE_FIELDS,
                      lambda n: describe(_league_defaults(n)))
    _add_rnn_cell(p)
    for role in ("main", "main_exploiters", "league_exploiters"):
        action = p.add_argument("--" + role.replace("_", "-"), dest=role, type=int, default=argparse.SUPPRESS,
                                help=role.replace("_", " ") + " (players of that role)")
        action.default_text = (lambda r=role: str(_league_roles()[r]))
    p.add_argument("--quick", action="store_true",
                   help="a small league that finishes in about a minute (alphastar on SMAC: under 10 minutes)")
    p.add_argument("--out", required=True, help=OUT_HELP)
    _add_ppo_options(p, _league_defaults)
    _add_rollout_length(p)
    _add_mappo_loss_options(p)
    _add_mappo_learner_options(p)
    _add_alphastar_options(p)
    _add_ray_options(p, "the league as Ray actors (coordinator, rollout workers, a learner per player)")
    action = p.add_argument("--workers", type=int, default=argparse.SUPPRESS, help="with --ray: rollout-worker actors")
    action.default_text = lambda: str(_ray_league_default("workers"))
    action = p.add_argument("--max-lag", type=int, default=argparse.SUPPRESS,
                            help="with --ray and --agent alphastar: a player plays on while up to this many of its "
                                 "updates are unfinished (V-trace corrects the lag; PPO is always on-policy)")
    action.default_text = lambda: str(_ray_league_default("max_lag"))

    p = _subparser(sub, "sl", "AlphaStar agent: record scripted demonstrations on SMAC and train it by supervised learning")
    p.add_argument("--env", default="smac:3m", help="smac:MAP")
    p.add_argument("--quick", action="store_true", help="a small run that finishes in a few minutes")
    p.add_argument("--seed", type=int, default=0, help=SEED_HELP)
    p.add_argument("--out", required=True, help="output directory (sl_checkpoint.pt, sl_metrics.json)")
    p.add_argument("--epochs", type=int, default=None, help="passes over the demonstrations, with no time cap (default: "
                   "20; --quick: 80 or 150 s of training, whichever ends first, so a loaded machine trains less)")
    _add_demonstration_options(p)

    p = _subparser(sub, "replay", "play one SMAC or SMACv2 game between two players and write it as an animated GIF")
    p.add_argument("--env", required=True, help="smac:MAP or smacv2:SCENARIO (two-player, as in training; with --b "
                   "panel:builtin SMAC's single-player game, as the panel evaluation)")
    p.add_argument("--a", required=True, metavar="PLAYER", help="seat 0: panel:NAME (heuristic, kiting, "
                   "focus_weakest, regroup on SMAC maps; builtin only as --b, and the only member on SMACv2), "
                   "a run directory (its last checkpoint) or RUN@ID")
    p.add_argument("--b", required=True, metavar="PLAYER", help="seat 1: as --a, or panel:builtin (the map's built-in AI)")
    p.add_argument("--out", required=True, help="the GIF to write (.gif)")
    p.add_argument("--seed", type=int, default=0, help="seed of the game")
    p.add_argument("--fps", type=float, default=8.0, help="frames (environment steps) per second of GIF")
    p.add_argument("--scale", type=int, default=16, help="pixels per map unit")
    p.add_argument("--sampled", action="store_true", help="checkpoints sample their actions, as in training "
                   "(default: greedy, each unit's most probable action, as SMAC's test games)")

    p = _subparser(sub, "omega", "print a scheme's Ω for a menagerie of a given size")
    p.add_argument("scheme", help="scheme spec, e.g. delta-uniform:delta=0.5")
    p.add_argument("--size", type=int, default=10, help="number of menagerie entries")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``selfplay`` command (``argv`` None: this process's arguments, and this process is the command's:
    its allocator is set for the MAPPO update's two threads, ``utils.threads.keep_freed_memory``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if argv is None:
        from selfplay.utils.threads import keep_freed_memory

        keep_freed_memory()
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return COMMANDS[args.command](args)
    except (ValueError, OSError, ImportError) as err:  # bad input, a damaged or locked run directory, a full
        # disk, an optional part that is not installed (the real game, Ray, OpenSpiel)
        print(f"selfplay {args.command}: error: {err}", file=sys.stderr)
        return 2


def _with_defaults(args: argparse.Namespace, config_class, names: list[str]) -> None:
    """Give ``args`` the dataclass default of every field option in ``names`` that was not given, so that
    the helpers below read ``args.env``, ``args.agent`` and ``args.seed`` as the run will have them
    (take ``given(args, names)`` before this)."""
    for name in names:
        if not hasattr(args, name) and isinstance(getattr(config_class, name, None), (int, float, str)):
            setattr(args, name, getattr(config_class, name))


def cmd_train(args: argparse.Namespace) -> int:
    from selfplay.training.loop import TrainConfig, train

    if args.opponent == "builtin-ai":
        return _train_vs_builtin(args)
    if args.opponent is not None:
        raise ValueError(f"opponent must be 'builtin-ai' (or left out: self-play), got {args.opponent!r}")
    mappo = getattr(args, "agent", None) == "mappo"
    given_vs_ai = [k for k in VS_AI_ONLY if _is_given(getattr(args, k, None))
                   and not (mappo and k in SELF_PLAY_TOO)]
    if given_vs_ai:
        def flags(keys):
            return ", ".join(f"--{k.replace('_', '-')}" for k in keys)

        mappo_too = [k for k in given_vs_ai if k in SELF_PLAY_TOO]
        raise ValueError(f"options {flags(given_vs_ai)} apply to --opponent builtin-ai only"
                         + (f" ({flags(mappo_too)} also to self-play with --agent mappo)" if mappo_too else ""))
    options = {**(TRAIN_QUICK if args.quick else {}), **given(args, TRAIN_FIELDS)}
    if "checkpoints" not in given(args, TRAIN_FIELDS):
        options.update(_resumed_checkpoints(args.out, options.get("episodes", TrainConfig.episodes)))
    _with_defaults(args, TrainConfig, TRAIN_FIELDS)
    settings = _ppo_overrides(args)
    if mappo:
        settings = _mappo_self_play_settings(args, settings, options.get("num_envs", args.num_envs))
    elif args.agent == "alphastar":
        import torch

        torch.set_num_threads(1)
        settings = _alphastar_settings(args, args.out)
    elif args.quick and args.env in ("rirrps", "biased-rps", "rpsls"):
        settings = {**TRAIN_QUICK_PPO, **settings}
    config = TrainConfig(**options, agent_settings=settings)
    ray = _ray_settings(args)
    if ray is not None:
        from selfplay.evaluation.compare import _train_one
        from selfplay.training.distributed.executor import RayExecutor

        (info,) = RayExecutor(ray).map(_train_one, [(config, args.out)])
        print(f"trained {config.episodes} episodes ({info['updates']} updates) in {info['seconds']:.1f}s on Ray; "
              f"menagerie {info['menagerie_size']} -> {args.out}")
        return 0
    result = train(config, args.out)
    if result.extended_from is not None:
        print(f"extended the run from {result.extended_from} to {config.episodes} episodes "
              f"({config.checkpoints} checkpoints); config.yaml records the new budget")
    print(f"trained {result.episodes} episodes ({result.updates} updates) in {result.seconds:.1f}s; "
          f"menagerie {result.menagerie_size}, checkpoints {result.checkpoints} -> {result.run_dir}")
    return 0


def _resumed_checkpoints(out: str, episodes: int) -> dict:
    """``--checkpoints`` left out when ``out`` holds a self-play run: the run's own checkpoint spacing
    at ``episodes`` (``{"checkpoints": episodes * c / e}`` for a run of ``e`` episodes and ``c``
    checkpoints, when that is whole), so that resuming, or extending the budget, keeps the run's spacing
    (``training.trainer.budget_extension``); ``{}`` otherwise (the default applies)."""
    from selfplay.training.rundir import RunDir, RunDirError

    if not (Path(out) / "config.yaml").is_file():
        return {}
    try:  # read as every run directory is read (inside the directory, bounded); the trainer names any fault
        saved = RunDir(out).read_config()
    except RunDirError:
        return {}
    e, c = saved.get("episodes"), saved.get("checkpoints")
    if not (isinstance(e, int) and isinstance(c, int) and e > 0 and isinstance(episodes, int)) or (episodes * c) % e:
        return {}
    return {"checkpoints": episodes * c // e}


# `train --opponent builtin-ai`: options of the run (VsAIConfig) and of the MAPPO learner (MAPPOConfig)
VS_AI_ONLY = ("steps", "open_loop", "critic_input", "rollout_length", "entropy_coef", "gae_lambda", "eval_interval",
              "eval_episodes", "update_threads", "update_precision", "critic_learning_rate", "critic_epochs",
              "clip_coef", "paper_map_settings", "attack_head", "magnet_coef", "magnet_interval", "linear_lr_decay")
VS_AI_MAPPO = {"num_envs": "num_envs", "epochs": "epochs", "learning_rate": "learning_rate",
               "critic_learning_rate": "critic_learning_rate", "critic_epochs": "critic_epochs", "clip_coef": "clip_coef",
               "open_loop": "open_loop", "critic_input": "critic_input", "rollout_length": "rollout_length",
               "entropy_coef": "entropy_coef", "gae_lambda": "gae_lambda",
               "eval_interval": "eval_interval", "eval_episodes": "eval_episodes",
               "update_threads": "update_threads", "update_precision": "update_precision",
               "attack_head": "attack_head", "magnet_coef": "magnet_coef",
               "magnet_interval": "magnet_interval", "linear_lr_decay": "linear_lr_decay"}  # dest -> MAPPOConfig field


MAPPO_SELF_PLAY = ("critic_input", "rollout_length", "entropy_coef", "gae_lambda", "update_threads",
                   "update_precision", "critic_learning_rate", "critic_epochs", "clip_coef",
                   "attack_head", "magnet_coef", "magnet_interval", "linear_lr_decay")  # MAPPOConfig fields
SELF_PLAY_TOO = MAPPO_SELF_PLAY + ("paper_map_settings",)  # the builtin-ai options `train --agent mappo` also takes
MAPPO_COMPARE = ("rollout_length", "entropy_coef", "gae_lambda", "update_precision",
                 "attack_head", "magnet_coef", "magnet_interval", "linear_lr_decay")  # the MAPPO options `compare` takes


def _mappo_self_play_settings(args: argparse.Namespace, settings: dict, num_envs: int) -> dict:
    """MAPPOConfig overrides of ``train --agent mappo`` under a scheme: ``--epochs``, ``--learning-rate``,
    ``--critic-input``, ``--entropy-coef``, ``--gae-lambda``, ``--rollout-length`` (default: ``self_play_rollout_length(num_envs)``,
    about MAPPO's 3200 game-steps per update)."""
    from selfplay.agents.mappo.config import self_play_rollout_length

    ppo_only = [f"--{k.replace('_', '-')}" for k in ("horizon", "minibatch_size") if k in settings]
    if ppo_only:
        raise ValueError(f"options {', '.join(ppo_only)} apply to the ppo agents; mappo's is --rollout-length")
    given = {k: getattr(args, k) for k in MAPPO_SELF_PLAY if _is_given(getattr(args, k, None))}
    out = {**_paper_map_settings(args), **settings, **given}
    out.setdefault("rollout_length", self_play_rollout_length(num_envs))
    return out


def _is_given(value) -> bool:
    """Whether an option was given: not left at ``None`` (or ``False``, a flag not set). By identity, so that a
    value equal to False — ``--entropy-coef 0`` — counts as given."""
    return value is not None and value is not False


def _paper_map_settings(args: argparse.Namespace) -> dict:
    """With ``--paper-map-settings``, the MAPPO paper's settings for the SMAC map of ``--env``
    (``agents.mappo.config.paper_map_settings``); otherwise none."""
    from selfplay.agents.mappo.config import paper_map_settings
    from selfplay.training.registry import smac_map
    from selfplay.training.vs_builtin import VsAIConfig

    if not getattr(args, "paper_map_settings", False):
        return {}
    env = getattr(args, "env", VsAIConfig.env)  # train --opponent builtin-ai leaves a missing --env to VsAIConfig
    if not (isinstance(env, str) and env.startswith("smac:")):
        raise ValueError(f"--paper-map-settings applies to SMAC maps (smac:MAP), got env {env!r}")
    return paper_map_settings(smac_map(env))


def _refuse_mappo_options(args: argparse.Namespace, which: str) -> None:
    """MAPPO's ``MAPPO_COMPARE`` options given to a run without a MAPPO learner: refused, naming ``which``."""
    if any(getattr(args, k) is not None for k in MAPPO_COMPARE):
        *first, last = ["--" + k.replace("_", "-") for k in MAPPO_COMPARE]
        raise ValueError(f"{', '.join(first)} and {last} apply to the mappo agent {which}")


def _add_rollout_length(p: argparse.ArgumentParser) -> None:
    """``--rollout-length`` of MAPPO under a scheme or in a league (``_mappo_self_play_settings``)."""
    p.add_argument("--rollout-length", type=int, default=None,
                   help="mappo: steps of every game per update (default: 3200 / num-envs in multiples of 10, "
                        "MAPPO's game-steps per update)")


def _add_mappo_learner_options(p: argparse.ArgumentParser) -> None:
    """``--update-precision`` and ``--attack-head`` (MAPPOConfig fields: how the learner computes and what its
    actor is) on train, compare and league."""
    from selfplay.agents.mappo.config import ATTACK_HEADS, UPDATE_PRECISIONS, MAPPOConfig

    p.add_argument("--attack-head", choices=ATTACK_HEADS, default=None,
                   help=f"mappo on SMAC: 'entity' adds to each attack's logit a score computed from the attacked "
                        f"enemy's observed features, one function for every enemy (after the Action Semantics "
                        f"Network); 'linear' is the paper's head (default: {MAPPOConfig.attack_head})")

    p.add_argument("--update-precision", choices=UPDATE_PRECISIONS, default=None,
                   help=f"mappo: the update's matrix products in float32 or with bfloat16 operands (mixed precision: "
                        f"about 1.3x faster training where the CPU has bf16 dot products; not the paper's; default: "
                        f"{MAPPOConfig.update_precision})")


def _add_mappo_loss_options(p: argparse.ArgumentParser) -> None:
    """``--entropy-coef``, ``--magnet-coef``, ``--magnet-interval``, ``--linear-lr-decay`` and ``--gae-lambda``
    (MAPPOConfig fields) on train, compare and league."""
    from selfplay.agents.mappo.config import MAPPOConfig

    p.add_argument("--entropy-coef", type=float, default=None,
                   help=f"mappo: weight of the entropy bonus (default: {MAPPOConfig.entropy_coef})")
    p.add_argument("--magnet-coef", type=float, default=None,
                   help=f"mappo: α of a KL penalty α·KL(π‖ρ) to a magnet policy ρ, a copy of the actor reset every "
                        f"--magnet-interval updates (magnetic mirror descent with a moving magnet, Sokota et al. "
                        f"2023; damps self-play's cycling; default: {MAPPOConfig.magnet_coef}, none)")
    p.add_argument("--magnet-interval", type=int, default=None,
                   help=f"mappo: updates between the magnet's resets to the actor (default: "
                        f"{MAPPOConfig.magnet_interval})")
    p.add_argument("--linear-lr-decay", action="store_true", default=None,
                   help="mappo: both step sizes decay linearly to 0 over the run's budget (MAPPO's "
                        "use_linear_lr_decay; default: off)")
    p.add_argument("--gae-lambda", type=float, default=None,
                   help=f"mappo: GAE's λ, the advantage's trace (1: Monte-Carlo returns less the value; "
                        f"default: {MAPPOConfig.gae_lambda})")


def _add_builtin_ai_options(p: argparse.ArgumentParser) -> None:
    from selfplay.agents.mappo.config import MAPPOConfig
    from selfplay.training.vs_builtin import VsAIConfig

    p.add_argument("--opponent", default=None, metavar="builtin-ai",
                   help="builtin-ai: train one side against the SMAC map's built-in AI (agent mappo), evaluating "
                        "greedy test win rates into metrics.csv (default: self-play under --scheme)")
    p.add_argument("--steps", type=int, default=None,
                   help=f"--opponent builtin-ai: game-steps of training (default: {VsAIConfig.steps})")
    p.add_argument("--open-loop", action="store_true",
                   help="--opponent builtin-ai: open-loop control (the policy sees only the time step and its agent id)")
    p.add_argument("--critic-input", choices=("AS", "EP"), default=None,
                   help=f"mappo: the critic's state, agent-specific (AS) or the environment's (EP) "
                        f"(default: {MAPPOConfig.critic_input})")
    p.add_argument("--rollout-length", type=int, default=None,
                   help=f"mappo: steps of every game per update (default: {MAPPOConfig.rollout_length})")
    p.add_argument("--critic-learning-rate", type=float, default=None,
                   help=f"mappo: the critic's Adam step size (default: {MAPPOConfig.critic_learning_rate}; "
                        f"--learning-rate is the actor's)")
    p.add_argument("--critic-epochs", type=int, default=None,
                   help="mappo: epochs of the critic's update (default: --epochs, one count for both)")
    p.add_argument("--clip-coef", type=float, default=None,
                   help=f"mappo: PPO's clip range ε, of the policy ratio and the value change (default: {MAPPOConfig.clip_coef})")
    _add_mappo_loss_options(p)
    p.add_argument("--eval-interval", type=int, default=None,
                   help=f"--opponent builtin-ai: game-steps between test evaluations (default: {MAPPOConfig.eval_interval})")
    p.add_argument("--eval-episodes", type=int, default=None,
                   help=f"--opponent builtin-ai: greedy test games per evaluation (default: {MAPPOConfig.eval_episodes})")
    p.add_argument("--update-threads", type=int, choices=(1, 2), default=None,
                   help=f"mappo: 2 fits the actor and critic at once on two threads, 1 one after the other (the "
                        f"same numbers; a run may resume with the other; default: {MAPPOConfig.update_threads})")
    _add_mappo_learner_options(p)
    p.add_argument("--paper-map-settings", action="store_true",
                   help="mappo on a SMAC map: start from the MAPPO paper's settings for that map (the epochs, clip "
                        "range, minibatches, logits gain and, on corridor and 6h_vs_8z, an MLP policy without GRU, of "
                        "its train_smac_MAP.sh) instead of 3m's; options given still win")


def _train_vs_builtin(args: argparse.Namespace) -> int:
    """``train --opponent builtin-ai`` (``selfplay.training.vs_builtin``)."""
    from selfplay.training.vs_builtin import VsAIConfig, train_vs_builtin

    unsupported = [f"--{k.replace('_', '-')}" for k in ("scheme", "episodes", "checkpoints", "horizon",
                                                        "minibatch_size", "rnn_cell", "sl", "sl_epochs")
                   if getattr(args, k, None) is not None]
    unsupported += [f"--{k}" for k in ("quick", "asynchronous", "ray") if getattr(args, k, False)]
    if unsupported:
        raise ValueError(f"options {', '.join(unsupported)} do not apply to --opponent builtin-ai")
    settings = {**_paper_map_settings(args), **{field: getattr(args, dest) for dest, field in VS_AI_MAPPO.items()
                                                 if _is_given(getattr(args, dest, None))}}
    options = {k: getattr(args, k) for k in ("env", "agent", "seed") if hasattr(args, k)}
    if args.steps is not None:
        options["steps"] = args.steps
    config = VsAIConfig(**options, agent_settings=settings)
    result = train_vs_builtin(config, args.out)
    print(f"trained {result.steps} game-steps ({result.updates} updates) in {result.seconds:.1f}s; "
          f"final test win rate {result.final_win_rate:.3f} -> {result.run_dir}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    import torch

    from selfplay.evaluation.compare import evaluate_run_dir
    from selfplay.training.rundir import kind_of

    torch.set_num_threads(1)
    ray = _ray_settings(args)
    if kind_of(Path(args.run_dir)) == "vs-ai":
        return _evaluate_vs_ai(args, ray)
    matches = args.matches if hasattr(args, "matches") else _evaluate_matches(args.quick)
    if ray is not None and args.panel:
        raise ValueError("--panel runs in this process: drop --ray/--ray-address")
    if ray is not None:
        from selfplay.evaluation.compare import _evaluate_one
        from selfplay.training.distributed.executor import RayExecutor

        (summary,) = RayExecutor(ray).map(_evaluate_one, [(args.run_dir, matches, args.seed, RayExecutor(ray))])
    else:
        panel = {"panel_games": args.panel_games, "panel_seeds": args.panel_seeds} if args.panel else {}
        summary = evaluate_run_dir(args.run_dir, matches=matches, seed=args.seed, **panel)
        if args.panel:
            _print_panel(Path(args.run_dir))
    for key, value in summary.items():
        print(f"{key}: {value}")
    return 0


def _evaluate_vs_ai(args: argparse.Namespace, ray) -> int:
    """A run against the built-in AI: its last checkpoint against the panel (``evaluation.vs_ai``)."""
    from selfplay.evaluation.vs_ai import evaluate_vs_ai_run

    if not args.panel:
        raise ValueError(f"run_dir {args.run_dir!r} was trained against the built-in AI and evaluated as it trained "
                         "(metrics.csv): pass --panel to play its last checkpoint against the SMAC panel")
    extra = [flag for flag, given_ in (("--matches", hasattr(args, "matches")), ("--quick", args.quick),
                                       ("--ray/--ray-address", ray is not None)) if given_]
    if extra:
        raise ValueError(f"not for a run against the built-in AI (no population to match): {', '.join(extra)}; "
                         "it takes --panel, --panel-games, --panel-seeds and --seed")
    summary = evaluate_vs_ai_run(args.run_dir, games=args.panel_games, seeds=args.panel_seeds, seed=args.seed)
    _print_panel(Path(args.run_dir))
    for key, value in summary.items():
        print(f"{key}: {value}")
    return 0


def _print_panel(run_dir: Path) -> None:
    """The panel table of an evaluated SMAC run, and how it was made."""
    import json

    path = run_dir / "evaluation" / "panel.json"
    if not path.is_file():
        raise ValueError(f"--panel needs a SMAC run of the per-unit agents on a symmetric map; {run_dir} is not one")
    from selfplay.evaluation.panel import PanelEvaluation, markdown_table

    data = json.loads(path.read_text())
    rates = data["rates"]
    members = list(next(iter(rates.values())))
    ev = PanelEvaluation(members, [], 0, rates=rates)
    print("\n".join(markdown_table(ev)))
    print(data["how"])


def cmd_compare(args: argparse.Namespace) -> int:
    from selfplay.evaluation.compare import CompareConfig, compare

    env = getattr(args, "env", CompareConfig.env)
    config = CompareConfig.preset(quick=args.quick, env=env)
    for name, value in given(args, COMPARE_FIELDS).items():
        setattr(config, name, value)
    args.env, args.agent = config.env, ",".join(config.agents)
    overrides = _ppo_overrides(args)
    config.ppo.update(overrides)
    if "mappo" in config.agents:
        config.mappo.update({k: v for k, v in overrides.items() if k in ("epochs", "learning_rate")})
        config.mappo.update({k: getattr(args, k) for k in MAPPO_COMPARE if getattr(args, k) is not None})
    else:
        _refuse_mappo_options(args, "(--agents mappo)")
    if "alphastar" in config.agents:
        import torch

        torch.set_num_threads(1)
        args.seed = config.seeds[0]
        config.alphastar.update(_alphastar_settings(args, args.out, only_agent=config.agents == ["alphastar"],
                                                    kind="comparison"))
    if args.no_embedding:
        config.embedding = False
    if args.no_cross_seed_rpp:
        config.rpp_cross_seed = False
    config.progress = not args.no_progress
    config.validate()
    ray = _ray_settings(args)
    executor = None
    if ray is not None:
        from selfplay.training.distributed.executor import RayExecutor

        executor = RayExecutor(ray, progress=config.progress)
    report = compare(config, args.out, executor=executor)
    print(f"report: {report}")
    return 0


def cmd_league(args: argparse.Namespace) -> int:
    from selfplay.evaluation.league import train_league
    from selfplay.training.league_loop import LeagueTrainConfig

    explicit = given(args, LEAGUE_FIELDS)
    _with_defaults(args, LeagueTrainConfig, LEAGUE_FIELDS)
    roles = {**_league_roles(), **given(args, ["main", "main_exploiters", "league_exploiters"])}
    spec = "league:" + ",".join(f"{role}={n}" for role, n in roles.items())
    alphastar = args.agent == "alphastar"
    ray, ray_only = _ray_settings(args), given(args, ["workers", "max_lag"])
    if ray is None and ray_only:
        flags = " and ".join("--" + k.replace("_", "-") for k in ray_only)
        raise ValueError(f"{flags} {'apply' if len(ray_only) > 1 else 'applies'} to a league on Ray only: add --ray "
                         "(or --ray-address), or leave it out")
    if "max_lag" in ray_only and not alphastar:
        raise ValueError(f"--max-lag applies to the alphastar agent only (PPO players stay on-policy), not agent {args.agent!r}")
    if alphastar:
        import torch

        torch.set_num_threads(1)
        settings = _alphastar_settings(args, args.out, kind="league")
    else:
        settings = _ppo_overrides(args) or (dict(LEAGUE_QUICK_PPO) if args.quick else {})
    steps = explicit.get("steps", LEAGUE_STEPS[(args.quick, alphastar)])  # not args.steps: _with_defaults filled it
    options = {"min_steps": steps // 8, "max_steps": steps // 4, **(LEAGUE_QUICK if args.quick else {}),
               **explicit, "steps": steps}
    if args.agent == "mappo":
        settings = _mappo_self_play_settings(args, _ppo_overrides(args), options.get("num_envs", args.num_envs))
    else:
        _refuse_mappo_options(args, f"(--agent mappo), not agent {args.agent!r}")
    config = LeagueTrainConfig(**options, league=spec, agent_settings=settings)
    if ray is not None:
        from selfplay.evaluation.league import train_league_on_ray
        from selfplay.training.distributed.league import RayLeagueSettings

        summary = train_league_on_ray(config, args.out, RayLeagueSettings(ray=ray, progress=True, **ray_only))
    else:
        summary = train_league(config, args.out)
    print(f"league done: {summary}; report: {args.out}/report.md")
    return 0


def cmd_sl(args: argparse.Namespace) -> int:
    from selfplay.training.registry import check_env_name, is_smac, smac_map

    check_env_name(args.env)
    if not is_smac(args.env):
        raise ValueError(f"env must be smac:MAP for the AlphaStar agent, got {args.env!r}")
    from dataclasses import replace

    import torch

    from selfplay.agents.alphastar.sl import SLConfig, run_sl

    torch.set_num_threads(1)
    from selfplay.training.rundir import RunDir

    map_name = smac_map(args.env)
    config = SLConfig.quick(map_name) if args.quick else SLConfig(map_name=map_name)
    config = replace(config, **given(args, DEMONSTRATION_OPTIONS))
    if args.epochs is not None:
        config = replace(config, epochs=args.epochs, max_train_seconds=None)
    run = RunDir(args.out, kind="sl")
    run.lock("selfplay sl")  # one writer; a directory of another kind or holding links is refused
    try:
        metrics = run_sl(map_name, quick=args.quick, out=args.out, seed=args.seed, config=config)
    finally:
        run.unlock()
    keys = ("action_type_accuracy", "win_rate_vs_scripted", "demonstrator_win_rate")
    print(", ".join(f"{k} {metrics[k]:.3f}" for k in keys) + f"; metrics and checkpoint in {args.out}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from selfplay.evaluation.replay import play_replay

    result = play_replay(args.env, args.a, args.b, args.out, seed=args.seed, fps=args.fps, scale=args.scale,
                         greedy=not args.sampled)
    outcome = "a draw" if result.winner < 0 else f"won by {'--a' if result.winner == 0 else '--b'}"
    print(f"{result.steps} steps, {outcome} -> {result.path}")
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
            "sl": cmd_sl, "omega": cmd_omega, "replay": cmd_replay}
