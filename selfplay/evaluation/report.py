"""The comparison's tables, figures and ``report.md`` (spec-selfplay §6–7)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from selfplay.utils.io import atomic_write_text
from selfplay.training.registry import agent_kit, env_for_agent

SUMMARY_COLUMNS = ["scheme", "agent", "seed", "lower_triangle_winrate", "nash_support", "episodes", "seconds",
                   "final_vs_first", "menagerie_size", "updates"]
SMAC_COLUMNS = ["vs_scripted_first", "vs_scripted_final"]  # win rate of the first / last checkpoint vs the map's AI


def _rpp_pair(args: tuple) -> float:
    """v(P, Q) between the checkpoint populations of two run directories."""
    import torch

    from selfplay.analysis.population import relative_population_performance
    from selfplay.evaluation.compare import load_checkpoint_policies
    from selfplay.training.matches import cross_population

    torch.set_num_threads(1)
    env, agent, path_p, path_q, matches, seed = args
    P, Q = load_checkpoint_policies(path_p)[1], load_checkpoint_policies(path_q)[1]
    W = cross_population(env_for_agent(env, agent), P, Q, matches, seed=seed, stack_policies=agent_kit(agent, env).stack_policies)
    return relative_population_performance(W - 0.5)


def relative_population_table(config, runs, agent: str, seed: int, jobs: int = 1) -> pd.DataFrame:
    """RPP v(P, Q) between the checkpoint populations of every pair of schemes (one seed)."""
    from selfplay.evaluation.compare import _pool_map

    paths = {r.scheme: r.path for r in runs if r.agent == agent and r.seed == seed}
    names = list(paths)
    pairs = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
    tasks = [(config.env, agent, str(paths[names[i]]), str(paths[names[j]]), config.matches, seed + 7919 * (i + 1) + j)
             for i, j in pairs]
    table = np.zeros((len(names), len(names)))
    for (i, j), v in zip(pairs, _pool_map(_rpp_pair, tasks, jobs)):
        table[i, j], table[j, i] = v, -v
    return pd.DataFrame(table, index=names, columns=names)


def embedding_inputs(config, runs, agent: str, seed: int) -> tuple[dict, dict]:
    """Basis trajectories of the reference agents and each scheme's (time-ordered, subsampled) ones."""
    from selfplay.agents.reference import embedding_basis
    from selfplay.training.registry import make_env

    basis = embedding_basis(make_env(config.env, 250, seed=seed), episodes=config.basis_episodes, seed=seed)
    basis = {name.capitalize(): vectors for name, vectors in basis.items()}  # "Rock", "Paper", "Scissors"
    trajectories = {}
    for r in runs:
        if r.agent != agent or r.seed != seed:
            continue
        vectors = np.load(r.path / "trajectories.npz")["vectors"]
        keep = np.linspace(0, len(vectors) - 1, min(config.embed_per_run, len(vectors))).round().astype(int)
        trajectories[r.scheme] = vectors[keep].astype(np.float32)
    return basis, trajectories


def write_comparison(config, out: Path, runs, rows: list[dict], evaluations: dict, train_seconds: float,
                     started: float) -> Path:
    from selfplay.analysis import plots

    evaluation = out / "evaluation"
    figures = out / "figures"
    evaluation.mkdir(parents=True, exist_ok=True)
    figures.mkdir(parents=True, exist_ok=True)
    columns = SUMMARY_COLUMNS + [c for c in SMAC_COLUMNS if any(c in r for r in rows)]
    summary = pd.DataFrame(rows, columns=columns)
    atomic_write_text(evaluation / "summary.csv", summary.to_csv(index=False))

    figure_paths: dict[str, list[Path]] = {"winrate": [], "nash": [], "embedding": [], "rpp": []}
    for r in runs:
        ev = evaluations[r.label]
        name = f"{r.agent}_{_slug(r.scheme)}_s{r.seed}"
        path = figures / f"winrate_{name}.png"
        plots.plot_winrate_matrix(ev["W"], ev["nash"], title=r.label, path=path)
        figure_paths["winrate"].append(path)
        if r.seed == config.seeds[0]:
            path = figures / f"nash_evolution_{name}.png"
            plots.plot_nash_evolution(ev["W"] - 0.5, title=r.label, path=path)
            figure_paths["nash"].append(path)

    rpp_tables = {}
    embed_seconds = 0.0
    for agent in config.agents:
        seed = config.seeds[0]
        if len(config.schemes) > 1:
            table = relative_population_table(config, runs, agent, seed, jobs=config.jobs or 2)
            rpp_tables[agent] = table
            atomic_write_text(evaluation / f"rpp_{agent}.csv", table.to_csv())
            path = figures / f"rpp_{agent}.png"
            plots.plot_rpp_table(table.values, list(table.index), title=f"Relative population performance ({agent})",
                                 path=path)
            figure_paths["rpp"].append(path)
        if config.embedding and config.env in ("rirrps",):
            from selfplay.analysis.embedding import embed_runs

            t0 = time.perf_counter()
            basis, trajectories = embedding_inputs(config, runs, agent, seed)
            basis_points, run_points = embed_runs(basis, trajectories, seed=seed)
            path = figures / f"embedding_{agent}.png"
            plots.plot_embedding(basis_points, run_points, title=f"t-SNE trajectory embedding ({agent})", path=path)
            np.savez(evaluation / f"embedding_{agent}.npz", **{f"basis/{k}": v for k, v in basis_points.items()},
                     **{f"run/{k}": v for k, v in run_points.items()})
            figure_paths["embedding"].append(path)
            embed_seconds += time.perf_counter() - t0

    total = time.perf_counter() - started
    report = out / "report.md"
    atomic_write_text(report, render_report(config, summary, rpp_tables, figure_paths, out, train_seconds, total))
    return report


def render_report(config, summary: pd.DataFrame, rpp_tables: dict, figure_paths: dict, out: Path,
                  train_seconds: float, total_seconds: float) -> str:
    rel = lambda p: p.relative_to(out).as_posix()  # noqa: E731
    lines = [
        "# Self-play scheme comparison",
        "",
        f"Environment `{config.env}`; agents {', '.join(f'`{a}`' for a in config.agents)}; "
        f"{config.episodes} episodes per run; seeds {config.seeds}; {config.checkpoints} evaluation checkpoints "
        f"per run; {config.matches} matches per pair (both seats). "
        + (f"PPO overrides: `{config.ppo}`. " if any(a != "alphastar" for a in config.agents) else "")
        + (f"AlphaStar settings: `{config.alphastar}`." if "alphastar" in config.agents else ""),
        f"Training: {summary['seconds'].sum():.0f} s summed over the runs (in parallel processes); this invocation "
        f"took {train_seconds:.0f} s to train (finished runs are resumed, not retrained) and {total_seconds:.0f} s in all.",
        "",
        "## Summary",
        "",
        "`lower_triangle_winrate`: mean of W below the diagonal (later checkpoints against earlier ones; "
        "> 0.5 means monotone improvement). `nash_support`: checkpoints in the support of the maxent Nash of "
        "A = W − ½. `final_vs_first`: the last checkpoint's win rate against the first. On SMAC, "
        "`vs_scripted_first`/`vs_scripted_final`: the first/last checkpoint's win rate against the map's scripted AI.",
        "",
    ]
    shown = ["lower_triangle_winrate", "nash_support", "final_vs_first"] + \
        [c for c in SMAC_COLUMNS if c in summary.columns] + ["seconds"]
    means = summary.groupby(["agent", "scheme"], sort=False)[shown].mean()
    lines.append(_markdown_table(means.reset_index()))
    for agent, table in rpp_tables.items():
        lines += ["", f"## Relative population performance ({agent}, seed {config.seeds[0]})", "",
                  "v(row, column) = pᵀ A q for the Nash (p, q) of the cross-population game A = W − ½ "
                  "between the two schemes' checkpoint populations; positive: the row's population wins.", "",
                  _markdown_table(table.round(4).reset_index().rename(columns={"index": "scheme"})), "",
                  f"![rpp_{agent}](figures/rpp_{agent}.png)"]
    titles = {"embedding": "Trajectory embeddings", "winrate": "Winrate matrices (with maxent-Nash support)",
              "nash": "Maxent Nash over checkpoints"}
    for key in ("embedding", "winrate", "nash"):
        if figure_paths.get(key):
            lines += ["", f"## {titles[key]}", ""]
            lines += [f"![{p.stem}]({rel(p)})" for p in figure_paths[key]]
    lines += ["", "Every run directory under `runs/` holds its config, menagerie, matches, metrics and "
              "TensorBoard events, and can be resumed or re-evaluated with `selfplay evaluate RUN_DIR`.", ""]
    return "\n".join(lines)


def _markdown_table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    out = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        out.append("| " + " | ".join(_fmt(row[c]) for c in cols) + " |")
    return "\n".join(out)


def _fmt(x: Any) -> str:
    if isinstance(x, (float, np.floating)):
        return f"{x:.0f}" if float(x).is_integer() and abs(x) >= 1 else f"{x:.3f}"
    return str(x)


def _slug(spec: str) -> str:
    from selfplay.evaluation.compare import slug

    return slug(spec)
