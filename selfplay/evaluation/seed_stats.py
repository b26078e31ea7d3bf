"""A comparison's statistics over seeds (docs/guides/statistics.md): interval estimates of every summary metric,
the probability of improvement between schemes, relative population performance over seeds (same
seed and across seeds), curves over training with confidence bands, and averaged winrate matrices.

The statistics are :mod:`analysis.statistics` (stratified bootstrap over seeds, percentile
intervals, rliable's definitions). Outputs under ``DIR/evaluation/``:

- ``aggregate.csv``: ``agent, scheme, metric, n_seeds, mean, mean_ci_low, mean_ci_high, iqm,
  iqm_ci_low, iqm_ci_high`` for every summary metric (NaN bounds: one seed, no interval);
- ``improvement.csv``: ``agent, metric, scheme_x, scheme_y, probability, ci_low, ci_high`` for every
  ordered pair of schemes, ``probability`` = P(X improves on Y) oriented by the metric's
  declared direction (:data:`METRICS`);
- ``rpp_values_<agent>.csv`` (every v(X seed i, Y seed j)), ``rpp_<agent>_s<seed>.csv`` (one table per
  seed), ``rpp_<agent>.csv`` (the same-seed mean), ``rpp_intervals.csv`` (``pairing`` ``same-seed``:
  the mean over seeds of v(X_s, Y_s); ``cross-seed``: the mean over all (i, j) of v(X_i, Y_j), seeds
  of X and of Y resampled independently);
- ``curves.csv``: per (agent, scheme, curve, checkpoint) the mean over seeds with its interval.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from selfplay.analysis.statistics import (
    BootstrapConfig,
    Interval,
    aggregate,
    cross_seed_interval,
    curve_intervals,
    improvement_interval,
    interval_estimate,
    is_significant,
    smallest_rank_test_p,
)
from selfplay.evaluation.panel import PANEL_NAMES
from selfplay.utils.io import atomic_write_text
from selfplay.utils.seeding import Stream, derive_seed


@dataclass(frozen=True)
class Metric:
    """A summary metric, which direction is better, and the range of its values (the figures' axes
    span it; a bound ``None``: open; ``"checkpoints"``: the comparison's checkpoints per run)."""

    higher_is_better: bool
    description: str
    bounds: tuple = (None, None)


RATE = (0.0, 1.0)  # a win rate


# Every numeric column of summary.csv that is not bookkeeping must be declared here.
METRICS: dict[str, Metric] = {
    "lower_triangle_winrate": Metric(True, "mean of W below the diagonal (later checkpoints against earlier "
                                           "ones; > 0.5: monotone improvement)", RATE),
    "final_vs_first": Metric(True, "the last checkpoint's win rate against the first", RATE),
    "nash_support": Metric(False, "checkpoints in the maxent-Nash support of W − ½ (1 for a monotone "
                                  "improvement, whose last checkpoint dominates; larger: cycles)", (1, "checkpoints")),
    "vs_scripted_first": Metric(True, "the first checkpoint's win rate against the map's scripted AI", RATE),
    "vs_scripted_final": Metric(True, "the last checkpoint's win rate against the map's scripted AI", RATE),
    "vs_scripted_best": Metric(True, "the best checkpoint's win rate against the map's scripted AI", RATE),
    "exploitability_first": Metric(False, "exact exploitability (NashConv/2) of the first checkpoint's policy", (0, None)),
    "exploitability_final": Metric(False, "exact exploitability (NashConv/2) of the last checkpoint's policy", (0, None)),
    "exploitability_min": Metric(False, "exact exploitability of the least exploitable checkpoint", (0, None)),
    "nash_mixture_exploitability_final": Metric(False, "exact exploitability of the maxent-Nash mixture of all "
                                                       "checkpoints", (0, None)),
}
METRICS.update({f"panel_{member}_{who}": Metric(True, f"the {label}'s win rate against the panel's {member!r} "
                                                       "script (timeouts are non-wins)")
                for member in PANEL_NAMES
                for who, label in (("final", "last checkpoint"), ("nash", "maxent-Nash mixture"))})
BOOKKEEPING = ("scheme", "agent", "seed", "episodes", "seconds", "menagerie_size", "updates", "checkpoints")
AGGREGATE_COLUMNS = ["agent", "scheme", "metric", "n_seeds", "mean", "mean_ci_low", "mean_ci_high", "iqm",
                     "iqm_ci_low", "iqm_ci_high"]
IMPROVEMENT_COLUMNS = ["agent", "metric", "scheme_x", "scheme_y", "probability", "ci_low", "ci_high"]
RPP_INTERVAL_COLUMNS = ["agent", "scheme_x", "scheme_y", "pairing", "n", "mean", "ci_low", "ci_high"]


def metric_columns(summary: pd.DataFrame, metrics: dict[str, Metric] | None = None) -> list[str]:
    """The summary's metrics: its numeric columns that are not bookkeeping, each declared in ``metrics``."""
    metrics = METRICS if metrics is None else metrics
    out = []
    for column in summary.columns:
        if column in BOOKKEEPING or not pd.api.types.is_numeric_dtype(summary[column]):
            continue
        if column not in metrics:
            raise ValueError(f"summary column {column!r} has no declared orientation: add it to "
                             f"selfplay.evaluation.seed_stats.METRICS (higher or lower is better) or to BOOKKEEPING")
        out.append(column)
    return out


def _groups(summary: pd.DataFrame):
    for column in ("agent", "scheme", "seed"):
        if column not in summary.columns:
            raise ValueError(f"summary must have a {column!r} column")
    if summary.duplicated(["agent", "scheme", "seed"]).any():
        raise ValueError("summary must have one row per (agent, scheme, seed)")
    return summary.groupby(["agent", "scheme"], sort=False)


def aggregate_table(summary: pd.DataFrame, bootstrap: BootstrapConfig | None = None,
                    metrics: dict[str, Metric] | None = None, notes: list | None = None) -> pd.DataFrame:
    """Rows of ``aggregate.csv`` (missing values of a metric are left out of that metric's seeds;
    ``notes`` collects (agent, scheme, metric, note) for degenerate intervals)."""
    columns = metric_columns(summary, metrics)
    rows = []
    for (agent, scheme), group in _groups(summary):
        for metric in columns:
            values = group[metric].dropna().to_numpy(dtype=float)
            if len(values) == 0:
                continue
            row = aggregate(values, bootstrap)
            if notes is not None and row["note"]:
                notes.append((agent, scheme, metric, row["note"]))
            rows.append({"agent": agent, "scheme": scheme, "metric": metric, **row})
    return pd.DataFrame(rows, columns=AGGREGATE_COLUMNS)


def improvement_table(summary: pd.DataFrame, bootstrap: BootstrapConfig | None = None,
                      metrics: dict[str, Metric] | None = None) -> pd.DataFrame:
    """Rows of ``improvement.csv``: every agent, metric and ordered pair (X, Y) of its schemes."""
    metrics = METRICS if metrics is None else metrics
    columns = metric_columns(summary, metrics)
    rows = []
    for agent, by_agent in summary.groupby("agent", sort=False):
        schemes = list(dict.fromkeys(by_agent["scheme"]))
        for metric in columns:
            values = {s: by_agent.loc[by_agent["scheme"] == s, metric].dropna().to_numpy(dtype=float) for s in schemes}
            for x in schemes:
                for y in schemes:
                    if x == y or not len(values[x]) or not len(values[y]):
                        continue
                    ci = improvement_interval(values[x], values[y], not metrics[metric].higher_is_better, bootstrap)
                    rows.append({"agent": agent, "metric": metric, "scheme_x": x, "scheme_y": y,
                                 "probability": ci.estimate, "ci_low": ci.low, "ci_high": ci.high})
    return pd.DataFrame(rows, columns=IMPROVEMENT_COLUMNS)


# ----------------------------------------------------------------------------- relative population performance
def rpp_tasks(config, runs, agent: str, cross_seed: bool = True) -> list[tuple]:
    """The cross-population games to play: (scheme_x, seed_x, scheme_y, seed_y, task) for every pair of
    schemes, x the one whose name sorts first, and every pair of seeds (only equal seeds unless
    ``cross_seed``). The game of schemes x and y, seeds sx and sy is seeded ``derive_seed(sx, RPP, sy, x, y)``,
    by the schemes' names: a pair's games do not depend on which other schemes are compared or in what
    order, and a same-seed pair has the seed it had when only one seed was compared."""
    paths = {(r.scheme, r.seed): r.path for r in runs if r.agent == agent}
    schemes = list(dict.fromkeys(r.scheme for r in runs if r.agent == agent))
    seeds = list(dict.fromkeys(r.seed for r in runs if r.agent == agent))
    out = []
    for x, y in (sorted(pair) for pair in itertools.combinations(schemes, 2)):
        for sx in seeds:
            for sy in seeds:
                if sx != sy and not cross_seed:
                    continue
                game_seed = derive_seed(sx, Stream.RPP, sy, x, y)
                out.append((x, sx, y, sy, (config.env, agent, str(paths[(x, sx)]), str(paths[(y, sy)]),
                                           config.matches, game_seed)))
    return out


def rpp_groups(tasks: list[tuple], jobs: int) -> list[list[int]]:
    """The ``rpp_tasks`` (by position) played together, each group loading its runs' checkpoints once: the
    pairs of one seed pair, cut into as many groups as give every process about four to play."""
    by_seeds: dict[tuple, list[int]] = {}
    for k, (_, sx, _, sy, _) in enumerate(tasks):
        by_seeds.setdefault((sx, sy), []).append(k)
    cuts = max(1, -(-4 * max(1, jobs) // max(1, len(by_seeds))))
    groups = []
    for members in by_seeds.values():
        size = -(-len(members) // min(cuts, len(members)))
        groups += [members[i:i + size] for i in range(0, len(members), size)]
    return groups


def rpp_values(config, runs, agent: str, jobs: int = 1, cross_seed: bool = True, run_map=None) -> pd.DataFrame:
    """v(X seed i, Y seed j) for every ordered pair of schemes (both orientations, v(Y, X) = −v(X, Y)).
    ``run_map(function, tasks, jobs)`` plays the population pairs in groups (``rpp_groups``; ``RayExecutor.map``:
    one Ray task per group); ``None``: the local process pool. Same values either way (each pair has its own seed)."""
    return rpp_values_of_agents(config, runs, [agent], jobs, cross_seed, run_map)[agent]


def rpp_values_of_agents(config, runs, agents: list[str], jobs: int = 1, cross_seed: bool = True,
                         run_map=None, cache: dict[str, float] | None = None) -> dict[str, pd.DataFrame]:
    """``rpp_values`` of each agent, every agent's groups played in one ``run_map`` — the recurrent agents'
    first (``runs.slowest_first``: their games are the slowest, and the short ones left to the end fill
    the processes; one map per agent would wait at its end for its last, longest group). ``cache``
    (``runs.rpp_cache_key`` → value): pairs found there are not played again, and the pairs played are added
    (a resumed or extended comparison plays only its new pairs; the same values, since each pair has its own seed)."""
    from selfplay.evaluation.runs import map_in_order, pool_map, rpp_cache_key, rpp_pairs, slowest_first

    states: dict[str, str] = {}
    plans = []  # (agent, tasks, keys, groups of the tasks not in the cache)
    for agent in agents:
        tasks = rpp_tasks(config, runs, agent, cross_seed)
        keys = list(range(len(tasks))) if cache is None else [rpp_cache_key(t[-1], states) for t in tasks]
        todo = [k for k, key in enumerate(keys) if cache is None or key not in cache]
        groups = [[todo[i] for i in group] for group in rpp_groups([tasks[k] for k in todo], jobs)]
        plans.append((agent, tasks, keys, groups))
    work = [(agent, [tasks[k][-1] for k in group]) for agent, tasks, _, groups in plans for group in groups]
    grouped = iter(map_in_order(run_map or pool_map, rpp_pairs, [w for _, w in work],
                                slowest_first([a for a, _ in work]), jobs) if work else [])
    out = {}
    for agent, tasks, keys, groups in plans:
        played = {} if cache is None else cache
        for group in groups:
            for k, v in zip(group, next(grouped)):
                played[keys[k]] = float(v)
        values = [played[key] for key in keys]
        rows = []
        for (x, sx, y, sy, _), v in zip(tasks, values):
            rows.append({"scheme_x": x, "seed_x": sx, "scheme_y": y, "seed_y": sy, "value": float(v)})
            rows.append({"scheme_x": y, "seed_x": sy, "scheme_y": x, "seed_y": sx, "value": 0.0 - float(v)})
        out[agent] = pd.DataFrame(rows, columns=["scheme_x", "seed_x", "scheme_y", "seed_y", "value"])
    return out


def rpp_seed_table(values: pd.DataFrame, schemes: list[str], seed: int) -> pd.DataFrame:
    """The RPP table of one seed: v(row, column) between the schemes' seed-``seed`` populations."""
    table = pd.DataFrame(0.0, index=schemes, columns=schemes)
    same = values[(values["seed_x"] == seed) & (values["seed_y"] == seed)]
    for row in same.itertuples():
        table.loc[row.scheme_x, row.scheme_y] = row.value
    return table


def rpp_interval_rows(agent: str, values: pd.DataFrame, schemes: list[str], seeds: list[int],
                      bootstrap: BootstrapConfig | None = None) -> list[dict]:
    rows = []
    for x in schemes:
        for y in schemes:
            if x == y:
                continue
            pair = values[(values["scheme_x"] == x) & (values["scheme_y"] == y)]
            if pair.empty:
                continue
            same = pair[pair["seed_x"] == pair["seed_y"]].set_index("seed_x")["value"].reindex(seeds).dropna()
            ci = interval_estimate(same.to_numpy(), "mean", bootstrap)
            rows.append({"agent": agent, "scheme_x": x, "scheme_y": y, "pairing": "same-seed", "n": len(same),
                         "mean": ci.estimate, "ci_low": ci.low, "ci_high": ci.high})
            grid = pair.pivot_table(index="seed_x", columns="seed_y", values="value")
            if grid.shape[0] * grid.shape[1] > len(same) and not grid.isna().any().any():
                ci = cross_seed_interval(grid.to_numpy(), bootstrap)
                rows.append({"agent": agent, "scheme_x": x, "scheme_y": y, "pairing": "cross-seed",
                             "n": grid.size, "mean": ci.estimate, "ci_low": ci.low, "ci_high": ci.high})
    return rows


# ----------------------------------------------------------------------------- curves over training
def run_curves(run, episodes: int, checkpoints: int) -> pd.DataFrame:
    """A run's curves over its evaluation checkpoints: the support size of the maxent Nash of the first
    k checkpoints (k = 1..n), and on SMAC each checkpoint's win rate against the scripted AI. Checkpoint
    k (from 0) was taken at episode (k + 1)·episodes/checkpoints."""
    from selfplay.evaluation.runs import nash_evolution

    evaluation = Path(run.path) / "evaluation"
    data = np.load(evaluation / "winrate.npz")
    P = nash_evolution(evaluation, data["W"])  # saved by the run's evaluation, else computed
    support = (P > 1e-6).sum(axis=1)
    frames = [pd.DataFrame({"curve": "maxent_nash_support", "checkpoint": np.arange(len(support)),
                            "value": support.astype(float)})]
    vs = evaluation / "vs_scripted.csv"
    if vs.exists():
        table = pd.read_csv(vs)
        frames.append(pd.DataFrame({"curve": "win_rate_vs_scripted", "checkpoint": np.arange(len(table)),
                                    "value": table["win_rate_vs_scripted"].to_numpy(dtype=float)}))
    out = pd.concat(frames, ignore_index=True)
    out["episode"] = (out["checkpoint"] + 1) * episodes / checkpoints
    out.insert(0, "seed", run.seed)
    out.insert(0, "scheme", run.scheme)
    out.insert(0, "agent", run.agent)
    return out


def curve_table(per_run: pd.DataFrame, bootstrap: BootstrapConfig | None = None) -> pd.DataFrame:
    """Per (agent, scheme, curve, checkpoint): the mean over seeds and its interval (the curves cut to
    the shortest run's length)."""
    rows = []
    for (agent, scheme, curve), group in per_run.groupby(["agent", "scheme", "curve"], sort=False):
        by_seed = [g.sort_values("checkpoint") for _, g in group.groupby("seed", sort=False)]
        length = min(len(g) for g in by_seed)
        C = np.stack([g["value"].to_numpy()[:length] for g in by_seed])
        episode = by_seed[0]["episode"].to_numpy()[:length]
        est, low, high = curve_intervals(C, "mean", bootstrap)
        for k in range(length):
            rows.append({"agent": agent, "scheme": scheme, "curve": curve, "checkpoint": k, "episode": episode[k],
                         "n_seeds": len(C), "mean": est[k], "ci_low": low[k], "ci_high": high[k]})
    return pd.DataFrame(rows, columns=["agent", "scheme", "curve", "checkpoint", "episode", "n_seeds", "mean",
                                       "ci_low", "ci_high"])


# ----------------------------------------------------------------------------- writing it all
@dataclass
class SeedStatistics:
    aggregate: pd.DataFrame
    improvement: pd.DataFrame
    rpp_intervals: pd.DataFrame
    rpp_tables: dict[str, pd.DataFrame]  # agent → the same-seed mean table
    curves: pd.DataFrame
    notes: list = field(default_factory=list)
    figures: dict[str, list[Path]] = field(default_factory=dict)


@dataclass
class RppOverSeeds:
    """Relative population performance over seeds, per agent: every game's value, one table per seed,
    the same-seed mean table, and the interval rows of every pair of schemes."""

    values: dict[str, pd.DataFrame] = field(default_factory=dict)  # agent → rpp_values rows
    seed_tables: dict[str, dict[int, pd.DataFrame]] = field(default_factory=dict)  # agent → seed → table
    mean_tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # agent → the same-seed mean table
    intervals: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=RPP_INTERVAL_COLUMNS))


def bootstrap_config(config) -> BootstrapConfig:
    return BootstrapConfig(confidence=getattr(config, "confidence", 0.95),
                           resamples=getattr(config, "bootstrap_resamples", 10_000), seed=0)


def write_seed_statistics(config, out: Path, runs, summary: pd.DataFrame, evaluations: dict,
                          timings: dict | None = None, run_map=None) -> SeedStatistics:
    """Compute and write the statistics over seeds and their figures (see the module docstring): for
    each of the five artefacts (aggregate, improvement, RPP, curves, averaged winrate matrices) its
    table is computed, written under ``evaluation/``, then plotted under ``figures/``. ``timings``
    gets the seconds of its stages (rpp, curves, seed_statistics: the rest)."""
    import time

    timings = {} if timings is None else timings
    started = time.perf_counter()
    bootstrap = bootstrap_config(config)
    evaluation, figures = out / "evaluation", out / "figures"
    notes: list = []
    agg = aggregate_table(summary, bootstrap, notes=notes)
    imp = improvement_table(summary, bootstrap)
    atomic_write_text(evaluation / "aggregate.csv", agg.to_csv(index=False))
    atomic_write_text(evaluation / "improvement.csv", imp.to_csv(index=False))
    paths: dict[str, list[Path]] = {"intervals": plot_aggregate(agg, config, bootstrap.confidence, figures),
                                    "improvement": plot_improvement(imp, summary, config, figures)}

    t0 = time.perf_counter()
    from selfplay.evaluation.runs import read_rpp_cache, write_rpp_cache

    cache = read_rpp_cache(evaluation)  # the pairs an earlier pass over this comparison played
    rpp = rpp_over_seeds(config, runs, bootstrap, run_map, cache=cache)
    write_rpp_cache(evaluation, cache)
    write_rpp(rpp, evaluation)
    paths["rpp_seeds"] = plot_rpp_seeds(rpp, figures) if len(config.seeds) > 1 else []
    timings["rpp"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    per_run = pd.concat([run_curves(r, config.episodes, config.checkpoints) for r in runs], ignore_index=True)
    curves = curve_table(per_run, bootstrap)
    atomic_write_text(evaluation / "curves.csv", curves.to_csv(index=False))
    paths["curves"] = plot_curves(curves, config, bootstrap.confidence, figures)
    timings["curves"] = time.perf_counter() - t0

    means = mean_winrate_matrices(config, runs, evaluations, notes) if len(config.seeds) > 1 else {}
    for (agent, scheme), (W, _) in means.items():
        np.save(evaluation / f"winrate_mean_{agent}_{_slug(scheme)}.npy", W)
    paths["winrate_mean"] = plot_mean_winrates(means, figures)
    timings["seed_statistics"] = time.perf_counter() - started - timings["rpp"] - timings["curves"]
    return SeedStatistics(agg, imp, rpp.intervals, rpp.mean_tables, curves, notes, paths)


def rpp_over_seeds(config, runs, bootstrap: BootstrapConfig, run_map=None,
                   cache: dict[str, float] | None = None) -> RppOverSeeds:
    """Plays every agent's cross-population games (``rpp_values``; none with fewer than two schemes; ``cache``:
    as ``rpp_values_of_agents``) and builds its per-seed tables, their mean (the same-seed mean) and the interval rows."""
    out, rows = RppOverSeeds(), []
    seeds, schemes = list(config.seeds), list(config.schemes)
    agents = list(config.agents) if len(schemes) >= 2 else []
    every = rpp_values_of_agents(config, runs, agents, jobs=config.jobs or 2, run_map=run_map, cache=cache,
                                 cross_seed=getattr(config, "rpp_cross_seed", True) and len(seeds) > 1)
    for agent in agents:
        values = every[agent]
        out.values[agent] = values
        out.seed_tables[agent] = {s: rpp_seed_table(values, schemes, s) for s in seeds}
        out.mean_tables[agent] = sum(out.seed_tables[agent].values()) / len(seeds)
        rows += rpp_interval_rows(agent, values, schemes, seeds, bootstrap)
    out.intervals = pd.DataFrame(rows, columns=RPP_INTERVAL_COLUMNS)
    return out


def write_rpp(rpp: RppOverSeeds, evaluation: Path) -> None:
    """``rpp_values_<agent>.csv``, ``rpp_<agent>_s<seed>.csv`` and ``rpp_intervals.csv``."""
    for agent, values in rpp.values.items():
        atomic_write_text(evaluation / f"rpp_values_{agent}.csv", values.to_csv(index=False))
        for s, table in rpp.seed_tables[agent].items():
            atomic_write_text(evaluation / f"rpp_{agent}_s{s}.csv", table.to_csv())
    atomic_write_text(evaluation / "rpp_intervals.csv", rpp.intervals.to_csv(index=False))


def mean_winrate_matrices(config, runs, evaluations: dict, notes: list) -> dict[tuple[str, str], tuple[np.ndarray, int]]:
    """(agent, scheme) → (W averaged over seeds, number of seeds), where every seed's matrix has the
    same shape; a note in ``notes`` for each scheme whose seeds differ."""
    out = {}
    for agent in config.agents:
        for scheme in config.schemes:
            Ws = [np.asarray(evaluations[r.label]["W"]) for r in runs if r.agent == agent and r.scheme == scheme]
            if len({W.shape for W in Ws}) != 1:
                notes.append((agent, scheme, "winrate", "seeds have different checkpoint counts: no averaged matrix"))
                continue
            out[(agent, scheme)] = (np.mean(Ws, axis=0), len(Ws))
    return out


# ----------------------------------------------------------------------------- the figures
def plot_aggregate(agg: pd.DataFrame, config, confidence: float, figures: Path) -> list[Path]:
    """``intervals_<agent>.png``: mean and IQM with their intervals, one panel per metric."""
    from selfplay.analysis import interval_plots

    paths = []
    for agent in config.agents:
        rows = agg[agg["agent"] == agent]
        panels, limits = {}, {}
        for metric in dict.fromkeys(rows["metric"]):
            m = rows[rows["metric"] == metric]
            arrow = "↑" if METRICS[metric].higher_is_better else "↓"
            limits[f"{metric} ({arrow} better)"] = metric_range(METRICS[metric], config)
            panels[f"{metric} ({arrow} better)"] = {
                r.scheme: {"mean": (r.mean, r.mean_ci_low, r.mean_ci_high), "IQM": (r.iqm, r.iqm_ci_low, r.iqm_ci_high)}
                for r in m.itertuples()}
        if panels:
            path = figures / f"intervals_{agent}.png"
            interval_plots.plot_interval_estimates(panels, confidence, path=path, limits=limits,
                                                   title=f"Interval estimates over seeds ({agent}, {len(config.seeds)} seeds)")
            paths.append(path)
    return paths


def plot_improvement(imp: pd.DataFrame, summary: pd.DataFrame, config, figures: Path) -> list[Path]:
    """``improvement_<agent>_<metric>.png``: the matrix of P(X improves on Y) with its intervals."""
    from selfplay.analysis import interval_plots

    paths = []
    for agent in config.agents:
        schemes = list(dict.fromkeys(summary.loc[summary["agent"] == agent, "scheme"]))
        for metric in dict.fromkeys(imp.loc[imp["agent"] == agent, "metric"]):
            m = imp[(imp["agent"] == agent) & (imp["metric"] == metric)]
            P, L, H = (np.full((len(schemes), len(schemes)), np.nan) for _ in range(3))
            for r in m.itertuples():
                i, j = schemes.index(r.scheme_x), schemes.index(r.scheme_y)
                P[i, j], L[i, j], H[i, j] = r.probability, r.ci_low, r.ci_high
            path = figures / f"improvement_{agent}_{metric}.png"
            orientation = "higher" if METRICS[metric].higher_is_better else "lower"
            interval_plots.plot_improvement_matrix(P, schemes, L, H, path=path,
                                                   title=f"P(X improves on Y): {metric} ({orientation} is better)")
            paths.append(path)
    return paths


def plot_rpp_seeds(rpp: RppOverSeeds, figures: Path) -> list[Path]:
    """``rpp_<agent>_s<seed>.png``: one RPP table per seed."""
    from selfplay.analysis import plots

    paths = []
    for agent, tables in rpp.seed_tables.items():
        for s, table in tables.items():
            path = figures / f"rpp_{agent}_s{s}.png"
            plots.plot_rpp_table(table.values, list(table.index), path=path,
                                 title=f"Relative population performance ({agent}, seed {s})")
            paths.append(path)
    return paths


CURVE_LABELS = {"maxent_nash_support": "maxent-Nash support of the first k checkpoints",
                "win_rate_vs_scripted": "win rate vs the scripted AI"}
CURVE_BOUNDS = {"maxent_nash_support": (0, "checkpoints"), "win_rate_vs_scripted": RATE}  # as Metric.bounds


def metric_range(metric: Metric | tuple, config) -> tuple:
    """A metric's (low, high) axis range for ``config``'s comparison (``Metric.bounds`` resolved)."""
    bounds = metric.bounds if isinstance(metric, Metric) else metric
    return tuple(getattr(config, "checkpoints", None) if b == "checkpoints" else b for b in bounds)


def plot_curves(curves: pd.DataFrame, config, confidence: float, figures: Path) -> list[Path]:
    """``curves_<agent>.png``: each curve's mean over seeds with its band, one panel per curve."""
    from selfplay.analysis import interval_plots

    paths = []
    for agent in config.agents:
        c = curves[curves["agent"] == agent]
        panels, limits = {}, {}
        for curve in dict.fromkeys(c["curve"]):
            limits[CURVE_LABELS.get(curve, curve)] = metric_range(CURVE_BOUNDS.get(curve, (None, None)), config)
            panels[CURVE_LABELS.get(curve, curve)] = {
                scheme: (g["episode"], g["mean"], g["ci_low"], g["ci_high"])
                for scheme, g in c[c["curve"] == curve].groupby("scheme", sort=False)}
        if panels:
            path = figures / f"curves_{agent}.png"
            interval_plots.plot_curves_with_bands(panels, path=path, limits=limits,
                                                  title=f"Over training: mean over seeds, {confidence:.0%} CI ({agent})")
            paths.append(path)
    return paths


def plot_mean_winrates(means: dict[tuple[str, str], tuple[np.ndarray, int]], figures: Path) -> list[Path]:
    """``winrate_mean_<agent>_<scheme>.png``: each averaged winrate matrix."""
    from selfplay.analysis import plots

    paths = []
    for (agent, scheme), (W, n) in means.items():
        path = figures / f"winrate_mean_{agent}_{_slug(scheme)}.png"
        plots.plot_winrate_matrix(W, title=f"{scheme} ({agent}), mean over {n} seeds", path=path)
        paths.append(path)
    return paths


def _slug(spec: str) -> str:
    from selfplay.evaluation.runs import slug

    return slug(spec)


# ----------------------------------------------------------------------------- the report's words
def _ci(low: float, high: float) -> str:
    if math.isnan(low) or math.isnan(high):
        return "no CI"
    return f"[{low:.3f}, {high:.3f}]"


def significance_lines(imp: pd.DataFrame, confidence: float, metrics: dict[str, Metric] | None = None) -> list[str]:
    """One bullet per (agent, metric): which ordered pairs differ significantly (the interval of
    P(X improves on Y) excludes ½) and which do not."""
    metrics = METRICS if metrics is None else metrics
    lines = []
    for (agent, metric), m in imp.groupby(["agent", "metric"], sort=False):
        significant, undecided, no_ci = [], 0, 0
        for r in m.itertuples():
            verdict = is_significant(Interval(r.probability, r.ci_low, r.ci_high, 0))
            if verdict is None:
                no_ci += 1
            elif verdict and r.probability > 0.5:
                significant.append(f"{r.scheme_x} over {r.scheme_y} (P = {r.probability:.2f}, {_ci(r.ci_low, r.ci_high)})")
            elif not verdict:
                undecided += 1
        orientation = "higher" if metrics[metric].higher_is_better else "lower"
        pairs = len(m) // 2
        if no_ci == len(m):
            lines.append(f"- `{metric}` ({agent}, {orientation} is better): no intervals (one seed); nothing can be "
                         "called significant.")
        elif significant:
            lines.append(f"- `{metric}` ({agent}, {orientation} is better): significant: "
                         + "; ".join(significant) + f". The other {pairs - len(significant)} of {pairs} pairs are not.")
        else:
            lines.append(f"- `{metric}` ({agent}, {orientation} is better): no difference is significant "
                         "(every interval of P contains ½).")
    return lines


def render_section(stats: SeedStatistics, config, rel) -> list[str]:
    """The report's section on statistics over seeds."""
    confidence = getattr(config, "confidence", 0.95)
    n = len(config.seeds)
    lines = ["", f"## Over seeds: interval estimates ({n} seed{'s' if n != 1 else ''}, {confidence:.0%} CIs)", "",
             "Mean and IQM (interquartile mean, the 25 % trimmed mean; with 3 seeds it equals the mean) of each "
             "metric over seeds, with stratified-bootstrap percentile intervals (seeds resampled within each scheme; "
             "rliable's protocol, Agarwal et al. 2021). Table: `evaluation/aggregate.csv`.", ""]
    if n == 1:
        lines += ["**One seed: no intervals.** Every CI below is empty; run with `--seeds 0,1,2` or more.", ""]
    for agent, rows in stats.aggregate.groupby("agent", sort=False):
        table = pd.DataFrame({"scheme": rows["scheme"], "metric": rows["metric"], "n": rows["n_seeds"],
                              "mean": rows["mean"], "mean CI": [_ci(a, b) for a, b in zip(rows["mean_ci_low"], rows["mean_ci_high"])],
                              "IQM": rows["iqm"], "IQM CI": [_ci(a, b) for a, b in zip(rows["iqm_ci_low"], rows["iqm_ci_high"])]})
        lines += [f"### {agent}", "", _markdown(table.sort_values(["metric"], kind="stable")), ""]
    lines += [f"![{p.stem}]({rel(p)})" for p in stats.figures.get("intervals", [])]
    by_note: dict[str, list[str]] = {}
    for agent, scheme, metric, note in stats.notes:
        by_note.setdefault(note, []).append(f"{scheme} `{metric}` ({agent})")
    if by_note:
        lines += ["", "Degenerate intervals:", ""] + [f"- {note}: {', '.join(items)}." for note, items in by_note.items()]
    lines += ["", f"## Probability of improvement ({confidence:.0%} CIs)", "",
              "P(X improves on Y): over all pairs of X's and Y's seeds, the share where X's score is better "
              "(ties count ½; for `nash_support` and other lower-is-better metrics, better means lower). "
              "Significant: the interval excludes ½ (the report's one criterion). Table: `evaluation/improvement.csv`.",
              ""]
    lines += significance_lines(stats.improvement, confidence)
    if n > 1:
        p = smallest_rank_test_p(n, n)
        lines += ["", f"Caution: with {n} seeds per scheme the bootstrap interval is optimistic — two fully separated "
                      f"samples give P = 1 with a zero-width interval, while the exact two-sided Mann–Whitney test "
                      f"cannot go below p = {p:.3g}"
                      + (f", above {1 - confidence:.3g}: read \"significant\" here as \"consistent on these seeds\", "
                         "not as a tested claim." if p > 1 - confidence else ".")]
    lines += [""] + [f"![{p.stem}]({rel(p)})" for p in stats.figures.get("improvement", [])]
    if not stats.rpp_intervals.empty:
        lines += ["", f"## Relative population performance over seeds ({confidence:.0%} CIs)", "",
                  "`same-seed`: the mean over seeds s of v(X_s, Y_s), the cross-population game between the two "
                  "schemes' seed-s checkpoint populations. `cross-seed`: the mean over all seed pairs (i, j) of "
                  "v(X_i, Y_j), X's and Y's seeds resampled independently. Positive: X's population wins. "
                  "Significant: the interval excludes 0 (the caution above on few seeds applies). Tables: "
                  "`evaluation/rpp_intervals.csv`, per seed `evaluation/rpp_<agent>_s<seed>.csv`, every game "
                  "`evaluation/rpp_values_<agent>.csv`.", ""]
        r = stats.rpp_intervals
        order = list(config.schemes)
        half = r[[order.index(x) < order.index(y) for x, y in zip(r["scheme_x"], r["scheme_y"])]]
        table = pd.DataFrame({"agent": half["agent"], "X": half["scheme_x"], "Y": half["scheme_y"],
                              "pairing": half["pairing"], "n": half["n"], "v(X, Y)": half["mean"],
                              "CI": [_ci(a, b) for a, b in zip(half["ci_low"], half["ci_high"])],
                              "significant": [_verdict(a, b) for a, b in zip(half["ci_low"], half["ci_high"])]})
        lines += [_markdown(table), ""]
    if stats.figures.get("curves"):
        lines += ["", "## Curves over training (mean over seeds with CI bands)", "",
                  "Maxent-Nash support of the first k evaluation checkpoints (k = 1..n) and, on SMAC, each "
                  "checkpoint's win rate against the scripted AI. Table: `evaluation/curves.csv`.", ""]
        lines += [f"![{p.stem}]({rel(p)})" for p in stats.figures["curves"]]
    return lines


def _verdict(low: float, high: float) -> str:
    if math.isnan(low) or math.isnan(high):
        return "no CI"
    return "yes" if low > 0 or high < 0 else "no"


def _markdown(df: pd.DataFrame) -> str:
    from selfplay.evaluation.runs import markdown_table

    return markdown_table(df.reset_index(drop=True))
