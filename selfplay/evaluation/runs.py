"""What the evaluation layer's modules share about a comparison's runs: their folder names, how a
run was trained, loading their checkpoints, and mapping work over processes that die with their parent."""

from __future__ import annotations

import json
import re
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from selfplay.training.registry import RECURRENT_AGENTS, agent_kit, is_two_sided
from selfplay.training.rundir import RunDirError, open_committed
from selfplay.training.trainer import MODES

if TYPE_CHECKING:
    import pandas as pd


def slug(spec: str) -> str:
    """A file-name-safe form of a scheme spec: ``delta-uniform:delta=0.5`` → ``delta-uniform_delta-0.5``."""
    return re.sub(r"[^A-Za-z0-9.\-]+", "-", spec.replace(":", "_")).strip("-")


def run_mode(config: dict) -> str:
    """How a run was trained (one of ``trainer.MODES``), from its ``config.yaml``: the ``mode`` its trainer
    recorded. A run written before runs recorded their mode is read by the rule that chose its trainer:
    ``league`` if its configuration has a ``league`` spec, else ``two-sided`` if its environment is
    asymmetric (``registry.is_two_sided``), else ``self-play``."""
    mode = config.get("mode")
    if mode is None:
        if "league" in config:
            return "league"
        return "two-sided" if is_two_sided(str(config.get("env", ""))) else "self-play"
    if mode not in MODES:
        raise RunDirError(f"config.yaml's mode must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


SCRIPTED_GAMES = 100  # games of each checkpoint against SMAC's built-in AI in a run's evaluation


def _die_with_parent() -> None:
    """Pool worker initializer: the worker is killed when its parent dies (Linux ``PR_SET_PDEATHSIG``),
    so a killed ``selfplay compare`` leaves no worker training into its run directories."""
    import ctypes
    import os
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # not Linux: workers still end when the pool's pipe closes
        return
    if os.getppid() == 1:  # the parent died before the call above took effect
        os._exit(1)


def slowest_first(agents: list[str]) -> list[int]:
    """The order in which to start the runs of these agents: recurrent agents' runs first, each group in its
    given order. With more runs than processes, the last runs to start decide when training ends; starting
    the slowest first leaves the short ones to fill the processes at the end (longest processing time first)."""
    return sorted(range(len(agents)), key=lambda i: agents[i] not in RECURRENT_AGENTS)


def map_in_order(run_map, function, tasks: list, order: list[int], jobs: int) -> list:
    """``run_map(function, tasks, jobs)`` with the tasks started in ``order`` (a permutation of their
    indices); the results come back in the tasks' own order."""
    results = [None] * len(tasks)
    for i, result in zip(order, run_map(function, [tasks[i] for i in order], jobs), strict=True):
        results[i] = result
    return results


def _init_worker() -> None:
    """Pool worker initializer: dies with its parent; SMAC batches on one thread, as torch in the workers."""
    from selfplay.utils.threads import set_smac_threads

    _die_with_parent()
    set_smac_threads(1)


def pool_map(function, tasks: list, jobs: int, progress: str | None = None) -> list:
    """``map`` over processes when ``jobs > 1`` (each single-threaded: torch by its callers, SMAC batches by
    ``_init_worker``), in order; workers die with the parent.
    ``progress``: a label; a progress bar (tqdm, on stderr) then counts the finished tasks."""
    from tqdm import tqdm

    with tqdm(total=len(tasks), desc=progress, unit="task", disable=progress is None) as bar:
        if jobs > 1 and len(tasks) > 1:
            with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), initializer=_init_worker) as pool:
                futures = [pool.submit(function, t) for t in tasks]
                for _ in as_completed(futures):
                    bar.update(1)
                return [f.result() for f in futures]
        results = []
        for task in tasks:
            results.append(function(task))
            bar.update(1)
        return results


def load_checkpoint_policies(run_dir: str | Path) -> tuple[list[int], list[Any]]:
    """Ids and frozen policies of a run's evaluation checkpoints, as last committed (the SHA-256 of every
    file checked). Works on any run directory::

        ids, policies = load_checkpoint_policies("runs/compare/runs/ppo-mlp/naive-s0")
        action, state, info = policies[-1].act(obs)  # the last checkpoint acting for a batch of games
    """
    run, state, kit = open_committed(run_dir)
    menagerie = run.committed_menagerie(state, "checkpoints", kit.load_policy)
    return menagerie.ids, [e.policy for e in menagerie]


NASH_EVOLUTION = "nash_evolution.npz"  # a run's maxent Nash of its first k checkpoints, k = 1..n, with its W (evaluation/)


def save_nash_evolution(evaluation: Path, W: np.ndarray) -> None:
    """``maxent_nash_evolution(W − ½)`` of a run's winrate matrix ``W``, saved with ``W`` in its ``evaluation``
    folder (read by ``nash_evolution``: the curves over training and the nash-evolution figure)."""
    from selfplay.analysis.nash import maxent_nash_evolution

    np.savez(Path(evaluation) / NASH_EVOLUTION, W=W, P=maxent_nash_evolution(W - 0.5))


def nash_evolution(evaluation: Path, W: np.ndarray) -> np.ndarray:
    """``maxent_nash_evolution(W − ½)``: the one the run's evaluation saved (``save_nash_evolution``) if it was
    computed from this very ``W``, else computed here (an evaluation from before the file, another matrix)."""
    from selfplay.analysis.nash import maxent_nash_evolution

    path = Path(evaluation) / NASH_EVOLUTION
    if path.exists():
        with np.load(path) as saved:
            if saved["W"].shape == np.shape(W) and np.array_equal(saved["W"], W):
                return saved["P"]
    return maxent_nash_evolution(W - 0.5)


def checkpoints_identity(run_dir: str | Path) -> str:
    """A SHA-256 that names a run's committed evaluation checkpoints: of the run's config, its checkpoints index
    (ids, steps, tags, files) and the SHA-256 of each checkpoint file (from the manifest). Two evaluations of
    the same identity play the same policies; it leaves out what a commit records of the wall clock."""
    import hashlib

    from selfplay.training.rundir import RunDir

    run = RunDir(run_dir)
    state, files = run.load_commit(), run.read_manifest()["files"]
    index = state.get("menageries", {}).get("checkpoints") if isinstance(state.get("menageries"), dict) else None
    named = {"config": state.get("config"), "checkpoints": index,
             "files": {k: v["sha256"] for k, v in sorted(files.items()) if k.startswith("checkpoints/")}}
    return hashlib.sha256(json.dumps(named, sort_keys=True, default=str).encode()).hexdigest()


RPP_CACHE = "rpp_cache.json"  # a comparison's evaluation/: the population games' values already played


def rpp_cache_key(task: tuple, states: dict[str, str]) -> str:
    """The key of an ``rpp_pair`` task ``(env, agent, path_p, path_q, matches, seed)`` in the RPP cache: the runs'
    checkpoints in place of their paths (``states``: path → ``checkpoints_identity``, filled here)."""
    env, agent, path_p, path_q, matches, seed = task
    for path in (path_p, path_q):
        if path not in states:
            states[path] = checkpoints_identity(path)
    return json.dumps([env, agent, states[path_p], states[path_q], matches, seed])


def read_rpp_cache(evaluation: Path) -> dict[str, float]:
    """The values saved in ``evaluation/rpp_cache.json`` ({} when there are none or the file is not one of ours:
    the games are then played again)."""
    from selfplay.training import statefile
    from selfplay.training.rundir_paths import read_inside

    try:
        values = statefile.json_object(read_inside(evaluation, RPP_CACHE, "rpp cache", 64 << 20)).get("values")
    except (OSError, ValueError):
        return {}
    if not isinstance(values, dict):
        return {}
    return {k: float(v) for k, v in values.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)}


def write_rpp_cache(evaluation: Path, values: dict[str, float]) -> None:
    from selfplay.utils.io import atomic_write_json

    atomic_write_json(evaluation / RPP_CACHE, {"format": 1, "values": values})


def rpp_pair(args: tuple) -> float:
    """v(P, Q) between the checkpoint populations of two run directories; ``args``: ``(env, agent, path_p,
    path_q, matches, seed)``."""
    return rpp_pairs([args])[0]


def rpp_pairs(tasks: list[tuple]) -> list[float]:
    """``rpp_pair`` of each task, every run directory's checkpoints loaded once for all of them (the same
    values: each pair plays from its own seed)."""
    from selfplay.analysis.population import relative_population_performance
    from selfplay.training.matches import cross_population
    from selfplay.training.registry import env_for_agent
    from selfplay.utils.threads import torch_threads

    loaded: dict[str, list] = {}
    values = []
    with torch_threads(1):
        for env, agent, path_p, path_q, matches, seed in tasks:
            for path in (path_p, path_q):
                if path not in loaded:
                    loaded[path] = load_checkpoint_policies(path)[1]
            W = cross_population(env_for_agent(env, agent), loaded[path_p], loaded[path_q], matches, seed=seed,
                                 stack_policies=agent_kit(agent, env).stack_policies)
            values.append(relative_population_performance(W - 0.5))
    return values


def markdown_table(df: pd.DataFrame) -> str:
    """A DataFrame as a Markdown table (numbers formatted by ``fmt``)."""
    cols = list(df.columns)
    out = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        out.append("| " + " | ".join(fmt(row[c]) for c in cols) + " |")
    return "\n".join(out)


def fmt(x: Any) -> str:
    """Whole numbers without decimals, other floats with three."""
    if isinstance(x, (float, np.floating)):
        return f"{x:.0f}" if float(x).is_integer() and abs(x) >= 1 else f"{x:.3f}"
    return str(x)
