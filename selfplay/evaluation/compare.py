"""``selfplay compare``: train every scheme (× agent × seed), evaluate, and report (docs/design/selfplay.md §6–7).

For each run: a winrate matrix over its evaluation checkpoints (every pair, both seats), its maxent
Nash, and the lower-triangle win rate (the "ideal" monotone-improvement matrix has every cell below
the diagonal > ½). Between schemes: the relative population performance of their checkpoint
populations (the value of the cross-population game; same seed paired, and every pair of seeds). Over
all runs of an agent and seed: a t-SNE embedding of the learners' trajectories with the reference
agents as basis.
Outputs: ``DIR/runs/<agent>/<scheme>-s<seed>/`` (each a resumable run directory),
``DIR/evaluation/summary.csv``, ``DIR/evaluation/rpp_<agent>.csv``, ``DIR/figures/*.png``, ``DIR/report.md``.
Over seeds (selfplay.evaluation.seed_stats): ``DIR/evaluation/aggregate.csv`` (mean and IQM of every summary metric
with bootstrap CIs), ``DIR/evaluation/improvement.csv`` (probability of improvement between schemes),
RPP per seed and across seeds with CIs, curves over training with CI bands.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from selfplay.core.menagerie import Menagerie
from selfplay.core.schemes import make_scheme
from selfplay.evaluation.panel import COMPARE_PANEL_GAMES
from selfplay.evaluation.runs import (  # noqa: F401 (re-exported)
    SCRIPTED_GAMES,
    checkpoints_identity,
    load_checkpoint_policies,
    map_in_order,
    open_committed,
    pool_map,
    run_mode,
    slowest_first,
    slug,
)
from selfplay.training.loop import TrainConfig, train
from selfplay.training.matches import SCRIPTED_SEEDING
from selfplay.training.registry import (
    agent_kit,
    check_env_name,
    env_for_agent,
    is_openspiel,
    is_smac,
)
from selfplay.training.rundir import RunDir, check_out
from selfplay.utils.checks import check_int, check_seed
from selfplay.utils.io import atomic_write_json
from selfplay.utils.threads import torch_threads

DEFAULT_SCHEMES = [
    "naive",
    "delta-uniform:delta=0",
    "delta-uniform:delta=0.5",
    "delta-limit-uniform:delta=0",
    "delta-limit-uniform:delta=0.5",
    "psro",
]


@dataclass
class CompareConfig:
    env: str = "rirrps"  # environment: rirrps | biased-rps | rpsls | smac:MAP[@sc2] | smacv2:SCENARIO | openspiel:GAME[(param=value,...)]
    agents: list[str] = field(default_factory=lambda: ["ppo-mlp"])  # comma-separated agents: ppo-mlp | ppo-rnn | alphastar | mappo (SMAC)
    schemes: list[str] = field(default_factory=lambda: list(DEFAULT_SCHEMES))  # comma-separated scheme specs
    seeds: list[int] = field(default_factory=lambda: [0])  # comma-separated seeds, e.g. 0,1,2
    episodes: int = 3000  # episodes per run (the budget)
    checkpoints: int = 30  # evaluation checkpoints per run
    matches: int = 25  # matches per pair of checkpoints (both seats)
    num_envs: int = 64  # games played at once per run
    ppo: dict = field(default_factory=lambda: {"horizon": 512})
    alphastar: dict = field(default_factory=dict)  # the alphastar agent's settings (sl_checkpoint, learning_rate, ...)
    mappo: dict = field(default_factory=dict)  # the mappo agent's settings (MAPPOConfig fields; rollout_length
    # defaults to self_play_rollout_length(num_envs): about MAPPO's 3200 game-steps per update)
    embedding: bool = True  # t-SNE of every seed's runs (RirRPS only)
    embed_per_run: int = 3000  # trajectories per run in the t-SNE (evenly spaced in time)
    basis_episodes: int = 1000  # per reference agent
    jobs: int | None = None  # processes (runs, evaluations) in parallel; None: the CPU count
    confidence: float = 0.95  # coverage of the intervals over seeds (selfplay.evaluation.seed_stats)
    bootstrap_resamples: int = 10_000
    rpp_cross_seed: bool = True  # also v(X seed i, Y seed j) for i ≠ j: n_seeds² cross-population games per pair
    progress: bool = False  # a progress bar per stage on stderr (display only: not part of the comparison)

    DISPLAY_ONLY = ("jobs", "progress")  # how fast and what is shown: may differ when a comparison is resumed
    GROWABLE = ("agents", "schemes", "seeds")  # may grow when a comparison is resumed: its runs are kept

    @classmethod
    def preset(cls, quick: bool = False, env: str = "rirrps") -> CompareConfig:
        """``make run`` scale (a few minutes on 2 cores) or ``--quick`` (about a minute; SMAC: a few)."""
        if env.startswith(("smac:", "smacv2:")):
            # multi-unit PPO's own defaults (horizon 3200 game-steps, 10 epochs); SMAC episodes are longer
            if quick:
                return cls(env=env, episodes=800, checkpoints=5, matches=8, num_envs=64, ppo={}, embedding=False)
            return cls(env=env, episodes=6000, checkpoints=12, matches=16, num_envs=128, ppo={}, embedding=False)
        if quick:
            return cls(episodes=600, checkpoints=8, matches=10, ppo={"horizon": 256}, embed_per_run=600,
                       basis_episodes=200)
        return cls()

    def validate(self) -> None:
        check_env_name(self.env)
        from selfplay.training.registry import is_two_sided

        if is_two_sided(self.env):
            raise ValueError(f"compare needs a symmetric game; {self.env!r} is asymmetric: train and evaluate its "
                             "runs one by one (`selfplay train` / `selfplay evaluate` use a learner per side)")
        for agent in self.agents:
            agent_kit(agent)
            env_for_agent(self.env, agent)
        for spec in self.schemes:
            make_scheme(spec, defer_evaluator=True)  # validates the spec; the trainer supplies PSRO's evaluator
        if not self.schemes:
            raise ValueError("schemes must name at least one scheme")
        if not self.seeds:
            raise ValueError("seeds must hold at least one seed")
        for name in ("agents", "schemes", "seeds"):
            values = getattr(self, name)
            twice = sorted({str(v) for v in values if values.count(v) > 1})
            if twice:
                raise ValueError(f"{name} must not repeat a value (each run has one directory), got {', '.join(twice)} twice")
        if self.checkpoints < 2:
            raise ValueError(f"checkpoints must be ≥ 2 to build a winrate matrix, got {self.checkpoints}")
        if self.matches < 1:
            raise ValueError(f"matches must be ≥ 1, got {self.matches}")
        from selfplay.analysis.statistics import BootstrapConfig

        for seed in self.seeds:
            check_seed(seed, "seeds")
        BootstrapConfig(confidence=self.confidence, resamples=self.bootstrap_resamples).validate()
        self.train_configs()  # every run's settings (agent settings included) are checked before anything is written

    def run_specs(self, out: Path) -> list[RunSpec]:
        """The runs, each with its directory under ``out``: every agent × scheme × seed."""
        return [RunSpec(a, s, seed, out / "runs" / a / f"{slug(s)}-s{seed}")
                for a in self.agents for s in self.schemes for seed in self.seeds]

    def train_configs(self, runs: list[RunSpec] | None = None) -> list[TrainConfig]:
        """Each run's ``TrainConfig`` (built, so checked: a bad setting of any run is a ``ValueError`` here)."""
        runs = self.run_specs(Path(".")) if runs is None else runs
        return [TrainConfig(env=self.env, agent=r.agent, scheme=r.scheme, episodes=self.episodes,
                            num_envs=self.num_envs, seed=r.seed, checkpoints=self.checkpoints,
                            agent_settings=self._agent_settings(r.agent), tensorboard=True) for r in runs]

    def _agent_settings(self, agent: str) -> dict:
        if agent == "alphastar":
            return dict(self.alphastar)
        if agent == "mappo":
            from selfplay.agents.mappo.config import self_play_rollout_length

            return {"rollout_length": self_play_rollout_length(self.num_envs), **self.mappo}
        return dict(self.ppo)


@dataclass
class RunSpec:
    agent: str
    scheme: str
    seed: int
    path: Path

    @property
    def label(self) -> str:
        return f"{self.scheme} ({self.agent}, seed {self.seed})"


def _train_one(args: tuple[TrainConfig, str]) -> dict:
    config, out = args
    result = train(config, out)
    return {"seconds": result.seconds, "updates": result.updates, "menagerie_size": result.menagerie_size}


def _evaluate_one(args: tuple) -> dict:
    """``(run_dir, matches, seed)`` or ``(run_dir, matches, seed, blocks)`` (``blocks``: as ``evaluate_run_dir``)."""
    run_dir, matches, seed, *rest = args
    with torch_threads(1):
        return evaluate_run_dir(run_dir, matches, seed=seed, blocks=rest[0] if rest else None,
                                panel_games=COMPARE_PANEL_GAMES, reuse=True)


def evaluate_run_dir(run_dir: str | Path, matches: int = 25, seed: int = 0, figures: bool = True,
                     scripted_games: int = SCRIPTED_GAMES, max_games: int | None = None, blocks: Any = None,
                     panel_games: int = 0, panel_seeds: int = 1, reuse: bool = False) -> dict:
    """Winrate matrix, maxent Nash and summaries of one run's checkpoints, saved under evaluation/.
    ``max_games`` (games per block, ``None``: ``matches.MAX_GAMES``) and ``blocks`` (a ``RayExecutor``
    that plays the matrix's further blocks as tasks): as ``training.matches.play_matches``.
    ``panel_games`` > 0 on a SMAC run: the last checkpoint and the maxent-Nash mixture against every
    panel member (``selfplay.evaluation.panel``), ``panel_games`` games per member and evaluation seed
    (evaluation seeds ``seed``, ``seed + 1``, … : ``panel_seeds`` of them), in ``evaluation/panel.csv`` and the summary.
    ``reuse``: return the run's saved summary, playing nothing, when its ``evaluation/inputs.json`` says it was
    made from these checkpoints with these settings (a resumed or extended comparison); an evaluation
    stopped midway has no ``inputs.json`` and is made again."""
    check_out(run_dir, "run_dir")
    check_int(matches, "matches", 1)
    check_seed(seed)
    check_int(panel_games, "panel_games", 0)
    check_int(panel_seeds, "panel_seeds", 1)
    if panel_games % 2:
        raise ValueError(f"panel_games must be even (against a scripted member half with the agent in each seat), got {panel_games}")
    run = RunDir(run_dir)
    if run_mode(run.read_config()) == "league":
        raise ValueError(f"run_dir {str(run_dir)!r} is a league run: `selfplay league` evaluated it into its report.md")
    run.lock("selfplay evaluate")  # evaluation/ and figures/ are written: one writer, and not during training
    try:
        # what this evaluation is made from (None before a first commit: _evaluate_locked says so)
        inputs = None if not run.has_commit() else {
            "checkpoints": checkpoints_identity(run.root), "matches": matches, "seed": seed, "figures": figures,
            "scripted_games": scripted_games, "max_games": max_games, "panel_games": panel_games,
            "panel_seeds": panel_seeds}
        if inputs is not None and is_smac(run.read_config()["env"]):  # evaluations of the games seeded before are made again
            inputs["scripted_seeding"] = SCRIPTED_SEEDING
        if reuse and inputs is not None and (summary := _reusable_evaluation(run, inputs)) is not None:
            return summary
        (run.evaluation / EVALUATION_INPUTS).unlink(missing_ok=True)  # until this evaluation is whole
        summary = _evaluate_locked(run, matches, seed, figures, scripted_games, max_games, blocks)
        if panel_games:
            summary.update(_evaluate_panel(run, seed, panel_games, panel_seeds))
            atomic_write_json(run.evaluation / "summary.json", summary)
        atomic_write_json(run.evaluation / EVALUATION_INPUTS, inputs)
        return summary
    finally:
        run.unlock()


EVALUATION_INPUTS = "inputs.json"  # what a run's evaluation/ was made from (``evaluate_run_dir(reuse=True)``)


def _reusable_evaluation(run: RunDir, inputs: dict) -> dict | None:
    """The summary of the run's evaluation if its ``inputs.json`` is ``inputs`` (the run's committed checkpoints,
    ``runs.checkpoints_identity``, and the evaluation's settings), else None."""
    from selfplay.training import statefile
    from selfplay.training.rundir import read_inside

    try:
        made_from = statefile.json_object(read_inside(run.root, f"evaluation/{EVALUATION_INPUTS}", "inputs", 1 << 20))
        summary = statefile.json_object(read_inside(run.root, "evaluation/summary.json", "summary", 16 << 20))
    except (OSError, ValueError):
        return None
    return summary if made_from == inputs and (run.evaluation / "winrate.npz").is_file() else None


def _evaluate_locked(run: RunDir, matches: int, seed: int, figures: bool, scripted_games: int,
                     max_games: int | None, blocks: Any) -> dict:
    from selfplay.evaluation.runs import save_nash_evolution
    from selfplay.training.matches import MAX_GAMES, evaluate_population

    run_dir = run.root
    run, state, kit = open_committed(run)
    cfg = state["config"]
    if run_mode(cfg) == "two-sided":  # a learner per side (asymmetric map)
        from selfplay.evaluation.two_sided import evaluate_two_sided

        return evaluate_two_sided(run, matches, seed, scripted_games, committed=(state, kit))
    checkpoints = run.committed_menagerie(state, "checkpoints", kit.load_policy)
    ids, policies = checkpoints.ids, [e.policy for e in checkpoints]
    if len(policies) < 2:
        raise ValueError(f"run {run_dir} has {len(policies)} checkpoint(s); a winrate matrix needs at least 2")
    _warn_same_policies(run_dir, ids, policies)
    env = env_for_agent(cfg["env"], cfg["agent"])
    ev = evaluate_population(env, policies, matches, seed=seed, stack_policies=kit.stack_policies, ids=ids,
                             max_games=max_games or MAX_GAMES, blocks=blocks)
    run.evaluation.mkdir(parents=True, exist_ok=True)
    np.savez(run.evaluation / "winrate.npz", W=ev.W, counts=ev.counts, nash=ev.nash, ids=np.array(ids))
    save_nash_evolution(run.evaluation, ev.W)  # here, in the parallel evaluation, for the curves and figures after it
    summary = {
        "lower_triangle_winrate": ev.lower_triangle_winrate,
        "nash_support": int((ev.nash > 1e-6).sum()),
        "final_vs_first": float(ev.W[-1, 0]),
        "checkpoints": len(ids),
    }
    if is_smac(cfg["env"]):
        from selfplay.training.matches import scripted_outcomes

        won, drawn = scripted_outcomes(env, policies, scripted_games, seed=seed)
        vs_ai = won + 0.5 * drawn  # a timeout ½ (the reports say so); the csv also splits wins and timeouts
        np.savetxt(run.evaluation / "vs_scripted.csv", np.stack([ids, vs_ai, won, drawn], axis=1), delimiter=",",
                   header="checkpoint,win_rate_vs_scripted,won,timed_out", comments="", fmt=["%d", "%.4f", "%.4f", "%.4f"])
        summary.update(vs_scripted_first=float(vs_ai[0]), vs_scripted_final=float(vs_ai[-1]),
                       vs_scripted_best=float(vs_ai.max()))
    if is_openspiel(cfg["env"]):  # exact exploitability of every checkpoint and of its Nash mixture
        summary.update(_exploitability(run, env, checkpoints, policies, ev.W, figures, cfg))
    atomic_write_json(run.evaluation / "summary.json", summary)
    if figures:
        from selfplay.analysis import plots

        title = cfg["scheme"] + f" ({cfg['agent']})"
        plots.plot_winrate_matrix(ev.W, ev.nash, title=title, path=run.figures / "winrate_matrix.png")
    return summary


def _evaluate_panel(run: RunDir, seed: int, games: int, seeds: int) -> dict:
    """The panel section of a SMAC run's evaluation (``evaluate_run_dir``); {} for other runs."""
    from selfplay.evaluation.panel import evaluate_panel, panel_members, panel_summary

    run, state, kit = open_committed(run)
    cfg = state["config"]
    if not is_smac(cfg["env"]) or run_mode(cfg) == "two-sided":
        return {}  # the panel plays one learner's seat of a symmetric SMAC battle (per-unit or commander view)
    checkpoints = run.committed_menagerie(state, "checkpoints", kit.load_policy)
    policies = [e.policy for e in checkpoints]
    nash = np.load(run.evaluation / "winrate.npz")["nash"]
    env = env_for_agent(cfg["env"], cfg["agent"])
    ev = evaluate_panel(env, {"final": (policies[-1:], None), "nash": (policies, nash)}, games=games,
                        seeds=[seed + k for k in range(seeds)], members=panel_members(cfg["env"]))
    write_panel(run.evaluation, ev)
    return panel_summary(ev)


def write_panel(folder: Path, ev) -> None:
    """``panel.csv`` (one row per evaluated policy, member and seed) and ``panel.json`` (how the numbers were
    made, and the rates) of a panel evaluation, in ``folder``."""
    import csv

    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "panel.csv", "w", newline="") as f:
        rows = ev.rows()
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    atomic_write_json(folder / "panel.json", {"how": ev.how(), "rates": ev.rates})


def same_policy_checkpoints(ids: list[int], policies: list) -> list[list[int]]:
    """Groups of checkpoint ids that hold one and the same policy (the learner did not update between
    them: ``Menagerie.load`` gives checkpoints sharing a policy file one policy object)."""
    groups: dict[int, list[int]] = {}
    for entry_id, policy in zip(ids, policies):
        groups.setdefault(id(policy), []).append(entry_id)
    return [g for g in groups.values() if len(g) > 1]


def _warn_same_policies(run_dir, ids: list[int], policies: list) -> None:
    same = same_policy_checkpoints(ids, policies)
    if same:
        import warnings

        listed = "; ".join(", ".join(map(str, g)) for g in same)
        warnings.warn(f"run {run_dir}: checkpoints {listed} are the same policy (no learner update between them), so "
                      "their winrate-matrix cells are a policy against itself; take fewer --checkpoints or a smaller "
                      "--horizon", stacklevel=3)


def _check_same_comparison(out: Path, config: dict) -> None:
    """Refuse, before writing anything, to continue a comparison in ``out`` with other settings
    (``CompareConfig.DISPLAY_ONLY`` settings may differ). ``CompareConfig.GROWABLE`` lists (agents,
    schemes, seeds) may grow: the runs already there are kept, and only the new ones train."""
    from selfplay.training import statefile
    from selfplay.training.rundir import read_inside

    path = out / "compare_config.json"
    if not path.is_file():
        return
    try:
        before = statefile.json_object(read_inside(out, path.name, "compare_config", 16 << 20))
    except (OSError, ValueError):
        raise ValueError(f"{path} is damaged; use another --out") from None
    fixed = CompareConfig.DISPLAY_ONLY + CompareConfig.GROWABLE
    differ = [f"{k}: {before.get(k)!r} in the directory, {v!r} now" for k, v in config.items()
              if k not in fixed and before.get(k) != v]
    for k in CompareConfig.GROWABLE:
        if not isinstance(before.get(k), list):
            differ.append(f"{k}: {before.get(k)!r} in the directory, {config[k]!r} now")
    if differ:
        raise ValueError(f"{out} holds a comparison with other settings (" + "; ".join(differ)
                         + "); use the same settings to resume or extend it, or another --out")
    dropped = [f"{k} {', '.join(map(str, missing))}" for k in CompareConfig.GROWABLE
               if (missing := [v for v in before[k] if v not in config[k]])]
    if dropped:
        raise ValueError(f"{out} holds a comparison that also covers " + "; ".join(dropped) + ": a comparison "
                         "may add agents, schemes and seeds but not leave any out (its report covers all its runs); "
                         "list them again, or use another --out")


STANDARD_SUMMARY = ("lower_triangle_winrate", "nash_support", "final_vs_first", "checkpoints")


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _exploitability(run: RunDir, env: str, menagerie: Menagerie, policies: list, W: np.ndarray, figures: bool,
                    cfg: dict) -> dict:
    """``evaluation/exploitability.csv`` (and its figure) of an OpenSpiel run; the summary's entries."""
    from selfplay.training.openspiel_eval import evaluate_exploitability, read_exploitability

    ids = menagerie.ids
    episodes = [int(menagerie[i].tags.get("episode", 0)) for i in ids]
    summary = evaluate_exploitability(env, ids, episodes, policies, W, run.evaluation)
    if figures:
        from selfplay.analysis import plots

        label = f"{cfg['scheme']} ({cfg['agent']})"
        plots.plot_exploitability_curves({label: read_exploitability(run.evaluation / "exploitability.csv")},
                                         title=f"exploitability on {cfg['env']}", path=run.figures / "exploitability.png")
    return summary


def compare(config: CompareConfig, out: str | Path, executor: Any = None) -> Path:
    """Run the whole comparison into ``out``; returns the path of ``report.md``. ``executor``: an object
    with ``map(function, tasks, jobs)`` that runs the training and evaluation tasks elsewhere (e.g.
    ``training.distributed.executor.RayExecutor``: one Ray task per run); ``None``: the local process pool."""
    config.validate()
    check_out(out)
    out = Path(out)
    run = RunDir(out, kind="comparison")
    if out.is_dir():
        run.check_links()  # before anything in it is read
    run.check_kind("selfplay compare")
    _check_same_comparison(out, asdict(config))
    run.lock("selfplay compare")  # one comparison writes ``out`` at a time
    try:
        with torch_threads(1):  # small networks: one thread per process (runs and evaluations go in parallel)
            return _compare(config, out, executor)
    finally:
        run.unlock()


def _compare(config: CompareConfig, out: Path, executor: Any) -> Path:
    import os

    runs = config.run_specs(out)
    tasks = [(c, str(r.path)) for c, r in zip(config.train_configs(runs), runs)]
    atomic_write_json(out / "compare_config.json", asdict(config))
    started = time.perf_counter()

    # 1. training, in parallel processes (each single-threaded), the slowest runs first
    jobs = config.jobs or min(len(runs), os.cpu_count() or 1)
    run_map = executor.map if executor is not None else _local_map(config.progress)
    trained = map_in_order(run_map, _train_one, tasks, slowest_first([r.agent for r in runs]), jobs)
    train_seconds = time.perf_counter() - started

    # 2. the t-SNE fits start now (they need only the trajectories) and run beside the evaluation
    from selfplay.evaluation.report import EmbeddingFits, wants_embedding

    fits = None
    if executor is None and wants_embedding(config):
        fits = EmbeddingFits(config, out, runs, list(config.agents), config.jobs or 2)
    try:
        return _evaluate_and_report(config, out, runs, trained, run_map, executor, jobs, started, train_seconds, fits)
    except BaseException:
        if fits is not None:
            fits.cancel()
        raise


def _evaluate_and_report(config, out, runs, trained, run_map, executor, jobs, started, train_seconds, fits) -> Path:
    # 3. per-run evaluation (also in parallel processes), then the statistics, figures and report
    from selfplay.evaluation.report import write_comparison

    blocks = executor if hasattr(executor, "submit") else None  # a matrix's further blocks as tasks too
    summaries = run_map(_evaluate_one, [(str(r.path), config.matches, r.seed, blocks) for r in runs], jobs)
    timings = {"training": train_seconds, "winrate_matrices": time.perf_counter() - started - train_seconds}
    rows = []
    evaluations = {}
    for r, info, summary in zip(runs, trained, summaries):
        evaluations[r.label] = np.load(r.path / "evaluation" / "winrate.npz")
        rows.append({"scheme": r.scheme, "agent": r.agent, "seed": r.seed,
                     "lower_triangle_winrate": round(summary["lower_triangle_winrate"], 6),
                     "nash_support": summary["nash_support"], "episodes": config.episodes,
                     "seconds": round(info["seconds"], 2), "final_vs_first": round(summary["final_vs_first"], 6),
                     "menagerie_size": info["menagerie_size"], "updates": info["updates"],
                     **{k: round(v, 6) for k, v in summary.items() if k not in STANDARD_SUMMARY and _is_number(v)}})
    return write_comparison(config, out, runs, rows, evaluations, train_seconds, started, timings, run_map=run_map,
                            embedding_fits=fits)


STAGES = {"_train_one": "training runs", "_evaluate_one": "winrate matrices",
          "rpp_pairs": "relative population performance"}  # the progress bars' labels


def _local_map(progress: bool):
    """``pool_map`` with a progress bar per stage (``STAGES``) when ``progress``."""
    def run_map(function, tasks: list, jobs: int) -> list:
        return pool_map(function, tasks, jobs, progress=STAGES.get(function.__name__, function.__name__) if progress else None)

    return run_map
