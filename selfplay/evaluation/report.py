"""The comparison's tables, figures and ``report.md`` (docs/design/selfplay.md §6–7)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from selfplay.evaluation.runs import markdown_table, nash_evolution
from selfplay.utils.io import atomic_write_json, atomic_write_text

SUMMARY_COLUMNS = ["scheme", "agent", "seed", "lower_triangle_winrate", "nash_support", "episodes", "seconds",
                   "final_vs_first", "menagerie_size", "updates"]
SMAC_COLUMNS = ["vs_scripted_first", "vs_scripted_final", "vs_scripted_best"]  # first / last / best checkpoint vs the map's AI
EXPLOITABILITY_COLUMNS = ["exploitability_first", "exploitability_final", "exploitability_min",
                          "nash_mixture_exploitability_final"]  # OpenSpiel games (selfplay/evaluation/openspiel_eval.py)


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


def _embed_seed(args: tuple) -> dict[str, Path]:
    """One seed's t-SNE of every agent's runs and the reference basis, fitted jointly (one fit, so every
    agent's and scheme's points share one map); saved per agent as ``runs/<agent>/embedding_s<seed>.png``
    and ``.npz`` (the basis points and that agent's runs: ``basis/<name>``, ``run/<scheme>``)."""
    from selfplay.analysis import plots
    from selfplay.analysis.embedding import embed_runs

    config, out, runs, agents, seed = args
    basis, trajectories = None, {}
    for agent in agents:
        basis, mine = embedding_inputs(config, runs, agent, seed)  # the basis does not depend on the agent
        trajectories.update({(agent, scheme): vectors for scheme, vectors in mine.items()})
    keys = list(trajectories)
    basis_points, run_points = embed_runs(basis, {f"{i}": trajectories[k] for i, k in enumerate(keys)}, seed=seed)
    paths = {}
    for agent in agents:
        points = {scheme: run_points[f"{i}"] for i, (a, scheme) in enumerate(keys) if a == agent}
        folder = Path(out) / "runs" / agent
        path = paths[agent] = folder / f"embedding_s{seed}.png"
        plots.plot_embedding(basis_points, points, title=f"t-SNE trajectory embedding ({agent}, seed {seed})",
                             path=path)
        np.savez(folder / f"embedding_s{seed}.npz", **{f"basis/{k}": v for k, v in basis_points.items()},
                 **{f"run/{k}": v for k, v in points.items()})
    return paths


class EmbeddingFits:
    """Every seed's t-SNE fit (``_embed_seed``) started in background processes as soon as the
    trajectories exist — the fits need nothing else, so they run while the checkpoints are evaluated
    and the RPP games are played, and no core idles while the last seed's fit runs alone. With one job
    the fits run when ``results`` is called. Same fits, same results either way."""

    def __init__(self, config, out: Path, runs, agents: list[str], jobs: int = 1) -> None:
        from concurrent.futures import ProcessPoolExecutor

        from selfplay.evaluation.runs import _die_with_parent

        self.tasks = [(config, str(out), runs, list(agents), seed) for seed in config.seeds]
        self.pool = None
        if jobs > 1 and len(self.tasks) > 1:
            self.pool = ProcessPoolExecutor(max_workers=min(jobs, len(self.tasks)), initializer=_die_with_parent)
            self.futures = [self.pool.submit(_embed_seed, t) for t in self.tasks]

    def results(self, progress: bool = False) -> list[dict[str, Path]]:
        """Each seed's ``_embed_seed`` result, in the order of ``config.seeds`` (waits for the fits)."""
        if self.pool is None:
            from selfplay.evaluation.runs import pool_map

            return pool_map(_embed_seed, self.tasks, 1, progress="t-SNE embeddings" if progress else None)
        try:
            return [f.result() for f in self.futures]
        finally:
            self.pool.shutdown()

    def cancel(self) -> None:
        """Drop the fits (the comparison failed): queued ones never start, running ones are not waited for."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def write_embeddings(config, out: Path, runs, agents: list[str], figure_paths: dict, jobs: int = 1,
                     fits: EmbeddingFits | None = None) -> None:
    """One t-SNE embedding per seed of all the agents' schemes with the reference basis (fitted together,
    so comparable across schemes and agents; seeds in parallel processes): ``runs/<agent>/embedding_s<seed>.png``
    (and ``.npz``); the chosen (first) seed's also as ``figures/embedding_<agent>.png`` and
    ``evaluation/embedding_<agent>.npz`` (Fig. 2 reads these rather than fitting again). ``fits``: the
    fits already started (``EmbeddingFits``); ``None``: start them here."""
    import shutil

    fits = fits if fits is not None else EmbeddingFits(config, out, runs, agents, jobs)
    results = fits.results(progress=getattr(config, "progress", False))
    for seed, paths in zip(config.seeds, results):
        if seed != config.seeds[0]:
            continue
        for agent, path in paths.items():
            shutil.copyfile(path, out / "figures" / f"embedding_{agent}.png")
            shutil.copyfile(path.with_suffix(".npz"), out / "evaluation" / f"embedding_{agent}.npz")
            figure_paths["embedding"].append(out / "figures" / f"embedding_{agent}.png")


def write_comparison(config, out: Path, runs, rows: list[dict], evaluations: dict, train_seconds: float,
                     started: float, timings: dict | None = None, run_map=None,
                     embedding_fits: EmbeddingFits | None = None) -> Path:
    """Tables, figures and report.md of a comparison; ``timings`` (stage → seconds, filled in here
    too) goes to ``evaluation/timings.json``; ``run_map``: how the RPP games are spread (``RayExecutor.map``;
    ``None``: the local process pool); ``embedding_fits``: the t-SNE fits started after training
    (``None``: they start here, after the other stages)."""
    timings = {} if timings is None else timings
    from selfplay.analysis import plots

    evaluation = out / "evaluation"
    figures = out / "figures"
    evaluation.mkdir(parents=True, exist_ok=True)
    figures.mkdir(parents=True, exist_ok=True)
    columns = SUMMARY_COLUMNS + [c for c in SMAC_COLUMNS + EXPLOITABILITY_COLUMNS if any(c in r for r in rows)]
    columns += [c for c in dict.fromkeys(k for r in rows for k in r) if c not in columns]  # e.g. exploitability
    summary = pd.DataFrame(rows, columns=columns)
    atomic_write_text(evaluation / "summary.csv", summary.to_csv(index=False))
    from selfplay.evaluation.seed_stats import write_seed_statistics

    seed_stats = write_seed_statistics(config, out, runs, summary, evaluations, timings, run_map=run_map)
    t0 = time.perf_counter()

    figure_paths: dict[str, list[Path]] = {"exploitability": [], "winrate": [], "nash": [], "embedding": [], "rpp": []}
    if "exploitability_final" in summary.columns:
        figure_paths["exploitability"] = exploitability_figures(config, runs, figures)
    for r in runs:
        ev = evaluations[r.label]
        name = f"{r.agent}_{_slug(r.scheme)}_s{r.seed}"
        path = figures / f"winrate_{name}.png"
        if r.seed != config.seeds[0]:
            continue  # every seed's figure is in its run directory (figures/winrate_matrix.png)
        plots.plot_winrate_matrix(ev["W"], ev["nash"], title=r.label, path=path)
        figure_paths["winrate"].append(path)
        path = figures / f"nash_evolution_{name}.png"
        plots.plot_nash_evolution(ev["W"] - 0.5, title=r.label, path=path,
                                  evolution=nash_evolution(r.path / "evaluation", ev["W"]))
        figure_paths["nash"].append(path)

    rpp_tables = seed_stats.rpp_tables  # agent → the mean over seeds of the same-seed tables
    for agent, table in rpp_tables.items():
        atomic_write_text(evaluation / f"rpp_{agent}.csv", table.to_csv())
        path = figures / f"rpp_{agent}.png"
        over = f", mean over {len(config.seeds)} seeds" if len(config.seeds) > 1 else ""
        plots.plot_rpp_table(table.values, list(table.index), title=f"Relative population performance ({agent}{over})",
                             path=path)
        figure_paths["rpp"].append(path)
    timings["figures"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    if wants_embedding(config):
        write_embeddings(config, out, runs, list(config.agents), figure_paths, jobs=config.jobs or 2,
                         fits=embedding_fits)
    timings["embedding" if embedding_fits is None else "embedding_wait"] = time.perf_counter() - t0

    total = time.perf_counter() - started
    timings["total"] = total
    atomic_write_json(evaluation / "timings.json", {k: round(v, 3) for k, v in timings.items()})
    report = out / "report.md"
    figure_paths["winrate_mean"] = seed_stats.figures.get("winrate_mean", [])
    text = render_report(config, summary, rpp_tables, figure_paths, out, train_seconds, total, seed_stats,
                         timings)
    atomic_write_text(report, text)
    return report


def wants_embedding(config) -> bool:
    """Whether the comparison has a t-SNE embedding (RirRPS's trajectory vectors only)."""
    return bool(config.embedding) and config.env in ("rirrps",)


def exploitability_figures(config, runs, figures: Path) -> list[Path]:
    """One figure per agent: per scheme, the mean over seeds of the exploitability curves
    (``evaluation/exploitability.csv`` of each run) with its bootstrap confidence band, for the
    checkpoint policy and for the maxent-Nash mixture of the checkpoints so far."""
    from selfplay.analysis.interval_plots import plot_curves_with_bands
    from selfplay.analysis.statistics import BootstrapConfig, curve_intervals
    from selfplay.training.openspiel_eval import read_exploitability

    bootstrap = BootstrapConfig(confidence=config.confidence, resamples=config.bootstrap_resamples)
    paths = []
    for agent in config.agents:
        panels: dict[str, dict[str, tuple]] = {"checkpoint policy": {}, "maxent-Nash mixture of checkpoints so far": {}}
        for scheme in config.schemes:
            curves = [read_exploitability(r.path / "evaluation" / "exploitability.csv")
                      for r in runs if r.agent == agent and r.scheme == scheme]
            n = min(len(c[0]) for c in curves)  # a common length (runs of one comparison align)
            for k, measure in ((1, "checkpoint policy"), (2, "maxent-Nash mixture of checkpoints so far")):
                estimate, low, high = curve_intervals(np.array([c[k][:n] for c in curves]), config=bootstrap)
                panels[measure][scheme] = (curves[0][0][:n], estimate, low, high)
        path = figures / f"exploitability_{agent}.png"
        plot_curves_with_bands(panels, title=f"Exploitability (NashConv/2) on {config.env} ({agent}): mean over "
                                             f"{len(config.seeds)} seed(s), {config.confidence:.0%} band", path=path)
        paths.append(path)
    return paths


def render_report(config, summary: pd.DataFrame, rpp_tables: dict, figure_paths: dict, out: Path,
                  train_seconds: float, total_seconds: float, seed_stats=None, timings: dict | None = None) -> str:
    rel = lambda p: p.relative_to(out).as_posix()  # noqa: E731
    lines = [
        "# Self-play scheme comparison",
        "",
        f"Environment `{config.env}`; agents {', '.join(f'`{a}`' for a in config.agents)}; "
        f"{config.episodes} episodes per run; seeds {config.seeds}; {config.checkpoints} evaluation checkpoints "
        f"per run; {config.matches} matches per pair (both seats). "
        + (f"PPO overrides: `{config.ppo}`. " if any(a.startswith("ppo") for a in config.agents) else "")
        + (f"MAPPO settings: `{config._agent_settings('mappo')}`. " if "mappo" in config.agents else "")
        + (f"AlphaStar settings: `{config.alphastar}`." if "alphastar" in config.agents else ""),
        f"Training: {summary['seconds'].sum():.0f} s summed over the runs (in parallel processes); this invocation "
        f"took {train_seconds:.0f} s to train (finished runs are resumed, not retrained) and {total_seconds:.0f} s in all"
        + (" (" + ", ".join(f"{k.replace('_', ' ')} {v:.0f} s" for k, v in timings.items() if k != "total")
           + "; `evaluation/timings.json`)." if timings else "."),
        "",
        *answer_lines(seed_stats, config),
        *measurement_lines(config, summary),
        "## Summary",
        "",
        "`lower_triangle_winrate`: mean of W below the diagonal (later checkpoints against earlier ones; "
        "> 0.5 means monotone improvement). `nash_support`: checkpoints in the support of the maxent Nash of "
        "A = W − ½. `final_vs_first`: the last checkpoint's win rate against the first. On SMAC, "
        "`vs_scripted_first`/`vs_scripted_final`: the first/last checkpoint's win rate against the map's scripted AI. "
        "On OpenSpiel games, exact exploitability (NashConv/2; 0 is a Nash equilibrium): `exploitability_first`/"
        "`_final`/`_min` of the first/last/best checkpoint's policy, `nash_mixture_exploitability_final` of the "
        "maxent-Nash mixture of all checkpoints (per checkpoint: each run's `evaluation/exploitability.csv`).",
        "",
    ]
    shown = ["lower_triangle_winrate", "nash_support", "final_vs_first"] + \
        [c for c in SMAC_COLUMNS + EXPLOITABILITY_COLUMNS if c in summary.columns] + ["seconds"]
    means = summary.groupby(["agent", "scheme"], sort=False)[shown].mean()
    if len(config.seeds) > 1:
        lines += [f"Means over the {len(config.seeds)} seeds; intervals in the next sections.", ""]
    lines.append(markdown_table(means.reset_index()))
    if seed_stats is not None:
        from selfplay.evaluation.panel import COMPARE_PANEL_GAMES, report_section

        lines += report_section(summary, seed_stats.aggregate, rpp_tables, COMPARE_PANEL_GAMES, config.env)
    if seed_stats is not None:
        from selfplay.evaluation.seed_stats import render_section

        lines += render_section(seed_stats, config, rel)
    for agent, table in rpp_tables.items():
        which = f"mean over seeds {config.seeds}" if len(config.seeds) > 1 else f"seed {config.seeds[0]}"
        lines += ["", f"## Relative population performance ({agent}, {which})", "",
                  "v(row, column) = pᵀ A q for the Nash (p, q) of the cross-population game A = W − ½ "
                  "between the two schemes' checkpoint populations; positive: the row's population wins.", "",
                  markdown_table(table.round(4).reset_index().rename(columns={"index": "scheme"})), "",
                  f"![rpp_{agent}](figures/rpp_{agent}.png)"]
    chosen = f" (seed {config.seeds[0]}; every seed's in its run directory)" if len(config.seeds) > 1 else ""
    titles = {"exploitability": "Exploitability over training (exact)", "embedding": f"Trajectory embeddings{chosen}",
              "winrate": f"Winrate matrices (with maxent-Nash support){chosen}",
              "winrate_mean": f"Winrate matrices averaged over the {len(config.seeds)} seeds (checkpoint k of every seed)",
              "nash": f"Maxent Nash over checkpoints (seed {config.seeds[0]})"}
    for key in ("exploitability", "embedding", "winrate", "winrate_mean", "nash"):
        if figure_paths.get(key):
            lines += ["", f"## {titles[key]}", ""]
            lines += [f"![{p.stem}]({rel(p)})" for p in figure_paths[key]]
    lines += ["", "Every run directory under `runs/` holds its config, menagerie, matches, metrics and "
              "TensorBoard events, and can be resumed or re-evaluated with `selfplay evaluate RUN_DIR`.", ""]
    return "\n".join(lines)


def answer_lines(seed_stats, config) -> list[str]:
    """The report's first section: the best scheme per metric and whether it beats the runner-up
    significantly (``verdict.answer_lines``); nothing without the statistics over seeds."""
    if seed_stats is None:
        return []
    from selfplay.evaluation.verdict import answer_lines as lines

    return lines(seed_stats, config)


def measurement_lines(config, summary: pd.DataFrame) -> list[str]:
    """How the numbers against a fixed opponent were made, where the comparison has them (SMAC: the
    map's built-in AI)."""
    if not any(c in summary.columns for c in SMAC_COLUMNS):
        return []
    from selfplay.evaluation.runs import SCRIPTED_GAMES
    from selfplay.training.registry import is_smacv2

    draws = (" (on a SMACv2 scenario each game its own draw of both teams and their start positions)"
             if is_smacv2(config.env) else "")
    return ["## How the numbers against the built-in AI were made", "",
            f"`vs_scripted_*`: each evaluated checkpoint plays {SCRIPTED_GAMES} games against the map's built-in "
            "(scripted) AI, as in SMAC: the checkpoint controls the allied side (the map's first player), the AI the "
            f"enemy side{draws}; it is never trained against that AI, and plays greedily (each unit's most probable action, "
            "as SMAC's test games). A win counts 1, a loss 0, and a game that reaches the "
            "map's time limit (or where both sides die) is a draw and counts ½ (SMAC's own win rate counts it 0). "
            "Every checkpoint's games are seeded alike, in a batch of their own, so a checkpoint's rate does not "
            "depend on which others were evaluated with it, and all meet the same random draws. "
            "The rate is the mean over those games; intervals are over seeds. The panel's `builtin` column (where the "
            "comparison has one) is the same game, with a timeout counted 0. Each run's "
            "`evaluation/vs_scripted.csv` splits every checkpoint's games into the share won (`won`) and the share "
            "timed out (`timed_out`): a rate near ½ made of timeouts is an agent that holds back, not one that wins.", ""]


def _slug(spec: str) -> str:
    from selfplay.evaluation.runs import slug

    return slug(spec)
