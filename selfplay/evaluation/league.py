"""Evaluating AlphaStar's league and writing its ``report.md``.

After training (``selfplay.training.league_loop``, or the Ray league), the league's historicals get a
winrate matrix and its maxent Nash (on OpenSpiel games: the exact exploitability of each historical
and of the Nash mixture), and every historical — with each player's final weights where they are
newer than its last checkpoint — is measured against the policy all players started from and, on
SMAC, against the map's scripted AI. ``report.md`` gathers the run's settings, the matchmaking
frequencies against the rules' expectations, and these measures with their figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from selfplay.training.league_loop import LeagueTrainConfig, LeagueTrainer
from selfplay.training.registry import is_openspiel, is_smac
from selfplay.utils.seeding import Stream, derive_seed

if TYPE_CHECKING:
    import pandas as pd

    from selfplay.training.distributed.league import RayLeagueSettings

VS_START, VS_SCRIPTED = "vs starting policy", "vs scripted AI"
SCRIPTED_GAMES = 50  # games of each evaluated policy against SMAC's built-in AI
CHECKPOINTS_CSV = "checkpoints.csv"  # every evaluated policy's rates, in evaluation/
MEASURE_COLUMNS = {VS_START: "vs_start", VS_SCRIPTED: "vs_scripted"}


@dataclass
class EvaluatedPolicy:
    """A league policy the report measures: a historical checkpoint, or a player's final weights."""

    player: str
    kind: str
    step: int
    policy: Any
    final: bool

    @property
    def label(self) -> str:
        return f"{self.player} (final)" if self.final else self.player


def evaluated_policies(trainer: LeagueTrainer) -> list[EvaluatedPolicy]:
    """The historicals in menagerie order, then every player's current weights where they are newer
    than its last checkpoint (what training produced last is measured too)."""
    rows = [EvaluatedPolicy(e.tags["parent"], e.tags["kind"], e.step, e.policy, False)
            for e in trainer.league.menagerie.entries]
    for name, player in trainer.league.players.items():
        mine = [r for r in rows if r.player == name]
        if not mine or mine[-1].step < trainer.steps[name]:
            rows.append(EvaluatedPolicy(name, player.kind, trainer.steps[name], trainer.learners[name].snapshot(), True))
    return rows


def checkpoint_win_rates(trainer: LeagueTrainer, policies: list[Any]) -> dict[str, np.ndarray]:
    """Each policy's win rate (draws ½) against the policy all players started from (the SL policy
    for the AlphaStar agent; ``2 · matches`` games, both seats) and, on SMAC, against the map's
    scripted AI (50 games)."""
    from selfplay.training.matches import play_matches, scripted_win_rates

    cfg, kit = trainer.config, trainer.kit
    pairs = np.array([[i, len(policies)] for i in range(len(policies))])
    rates = {VS_START: play_matches(trainer.env_name, list(policies) + [trainer.sl_policy], pairs, 2 * cfg.matches,
                                    seed=derive_seed(cfg.seed, Stream.VS_START), stack_policies=kit.stack_policies).mean(axis=1)}
    if is_smac(cfg.env):
        rates[VS_SCRIPTED] = scripted_win_rates(trainer.env_name, policies, SCRIPTED_GAMES, seed=cfg.seed)
    return rates


def evaluate_league(trainer: LeagueTrainer, blocks: Any = None) -> dict:
    """Winrate matrix and maxent Nash of the league's historicals, each checkpoint against the starting
    policy (and the scripted AI); figures and ``report.md``; returns the summary (``blocks``: a
    ``RayExecutor`` that plays the matrix's further blocks as tasks, ``play_matches``)."""
    from selfplay.utils.io import atomic_write_json, atomic_write_text

    summary = {"historicals": len(trainer.league.menagerie.entries)}
    lines = overview_lines(trainer)
    lines += historicals_section(trainer, summary, blocks)
    answer: list[str] = []
    lines += checkpoints_section(trainer, summary, answer)
    lines += panel_section(trainer, summary)
    lines[2:2] = answer  # the answer first, under the title
    atomic_write_text(trainer.run.report, "\n".join(lines) + "\n")
    trainer.run.evaluation.mkdir(parents=True, exist_ok=True)
    atomic_write_json(trainer.run.evaluation / "summary.json", summary)
    return summary


def overview_lines(trainer: LeagueTrainer) -> list[str]:
    """The report's head: the run's settings, the historicals per player, and the matchmaking table."""
    cfg, league = trainer.config, trainer.league
    lines = [f"# League: `{cfg.league}` on `{cfg.env}` with `{cfg.agent}`", "",
             f"{cfg.steps} learner steps per player; checkpoint rule min/max steps {cfg.min_steps}/{cfg.max_steps}; "
             f"{len(league.menagerie.entries)} historical checkpoints; {trainer.seconds:.0f} s of training.", ""]
    lines += sl_start_lines(cfg.agent_settings.get("sl_checkpoint"))
    lines += ["## Historicals per player", ""]
    lines += [f"- `{n}` ({p.kind}): {len(league.historicals(parent=n))} checkpoints, {trainer.steps[n]} steps"
              for n, p in league.players.items()]
    lines += ["", "## Matchmaking: measured frequency vs the rules' expectation at each draw", "",
              "| player | opponent kind | drawn | measured | expected |", "|---|---|---|---|---|"]
    lines += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.3f} | {r[4]:.3f} |" for r in trainer.matchmaking_rows()]
    return lines


def sl_start_lines(sl_checkpoint: str | None) -> list[str]:
    """The report's line on the SL policy every player starts from (the AlphaStar agent): how its
    demonstrations were made and how they play against the built-in AI, from the ``sl_metrics.json``
    that ``run_sl`` writes beside the checkpoint; nothing when there is none."""
    from selfplay.agents.alphastar.sl import sl_metrics_beside

    m = sl_metrics_beside(sl_checkpoint) if sl_checkpoint else None
    if m is None:
        return []
    against = {"self_play": "itself (two-player, mirrored)", "scripted_ai": "the built-in AI"}
    return [f"Start: the SL policy trained on {m['demonstrations']['games']} games of the `{m['demonstrator']}` "
            f"demonstrator against {against[m['demonstrations_against']]}; against the built-in "
            f"AI the demonstrator alone wins {m['demonstrator_win_rate']:.2f} and the SL policy, sampled at "
            f"temperature {m['config']['eval_temperature']}, {m['win_rate_vs_scripted']:.2f} "
            f"({m['sl_policy_eval']['games']} games; the checkpoint table below plays it greedily).", ""]


def historicals_section(trainer: LeagueTrainer, summary: dict, blocks: Any = None) -> list[str]:
    """With at least two historicals: their winrate matrix and maxent Nash (``evaluation/winrate.npz``,
    ``figures/winrate_matrix.png``) and, on OpenSpiel games, their exact exploitability; adds the
    measures to ``summary`` and returns the report's lines."""
    from selfplay.analysis import plots
    from selfplay.training.matches import evaluate_population

    cfg, run, entries = trainer.config, trainer.run, trainer.league.menagerie.entries
    if len(entries) < 2:
        return []
    ev = evaluate_population(trainer.env_name, [e.policy for e in entries], cfg.matches, seed=cfg.seed,
                             stack_policies=trainer.kit.stack_policies, ids=[e.id for e in entries], blocks=blocks)
    run.evaluation.mkdir(parents=True, exist_ok=True)
    np.savez(run.evaluation / "winrate.npz", W=ev.W, counts=ev.counts, nash=ev.nash, ids=np.array(ev.ids))
    labels = [f"{e.tags['parent']}@{e.step}" for e in entries]
    plots.plot_winrate_matrix(ev.W, ev.nash, ids=labels, title=cfg.league, path=run.figures / "winrate_matrix.png")
    support = {labels[i]: round(float(p), 4) for i, p in enumerate(ev.nash) if p > 1e-6}
    summary.update(nash_support=len(support), lower_triangle_winrate=ev.lower_triangle_winrate)
    lines = ["", "## The league's historicals", "", f"Maxent Nash support: {support}", "",
             "![winrate matrix](figures/winrate_matrix.png)"]
    if is_openspiel(cfg.env):  # exact exploitability of each historical and of the Nash mixture up to it
        from selfplay.training.openspiel_eval import evaluate_exploitability

        exact = evaluate_exploitability(trainer.env_name, ev.ids, [e.step for e in entries],
                                        [e.policy for e in entries], ev.W, run.evaluation)
        summary.update(exact)
        lines += ["", f"Exact exploitability (NashConv/2): last historical {exact['exploitability_final']:.4f}, "
                  f"maxent-Nash mixture of all historicals {exact['nash_mixture_exploitability_final']:.4f} "
                  "(per historical, in order of entry: `evaluation/exploitability.csv`, whose `episode` column "
                  "holds the learner step here)."]
    return lines


def checkpoints_section(trainer: LeagueTrainer, summary: dict, answer: list | None = None) -> list[str]:
    """With at least one historical: every evaluated policy (``evaluated_policies``) against the starting
    policy and, on SMAC, the scripted AI (``checkpoint_win_rates``), as a table and as curves over the
    learner steps (``figures/checkpoints.png``); adds each player type's last and best rates to
    ``summary`` and returns the report's lines; ``answer`` receives the best player per measure
    (``verdict.league_answer_lines``)."""
    from selfplay.analysis import plots

    cfg = trainer.config
    if not trainer.league.menagerie.entries:
        return []
    evaluated = evaluated_policies(trainer)
    measures = checkpoint_win_rates(trainer, [r.policy for r in evaluated])
    start = "the SL policy" if cfg.agent == "alphastar" else "the initial policy every player starts from"
    lines = ["", "## Each checkpoint against the starting policy and the map's scripted AI", "",
             f"Win rates (draws ½): against {start} ({2 * cfg.matches} games, half in each seat)"
             + (f" and against SMAC's built-in (scripted) AI ({SCRIPTED_GAMES} games; the policy controls the allied "
                "side, the AI the enemy side; a game that reaches the map's time limit is a draw and counts ½, where "
                "SMAC's own win rate counts it 0)." if VS_SCRIPTED in measures else ".")
             + " \"(final)\": a player's weights at the end of training.", "",
             "| checkpoint | player type | step | " + " | ".join(measures) + " |",
             "|---|---|---|" + "---|" * len(measures)]
    lines += [f"| {r.label} | {r.kind} | {r.step} | " + " | ".join(f"{rates[i]:.2f}" for rates in measures.values())
              + " |" for i, r in enumerate(evaluated)]
    write_checkpoint_rates(trainer.run.evaluation / CHECKPOINTS_CSV, evaluated, measures)
    plots.plot_checkpoint_curves(checkpoint_curves(evaluated, measures), title=f"{cfg.league} on {cfg.env}",
                                 path=trainer.run.figures / "checkpoints.png")
    lines += ["", "![checkpoint win rates](figures/checkpoints.png)"]
    summary.update(checkpoint_summary(evaluated, measures))
    if answer is not None:
        from selfplay.evaluation.verdict import league_answer_lines

        last = {r.player: i for i, r in enumerate(evaluated)}  # each player's final policy
        games = {VS_START: 2 * cfg.matches, VS_SCRIPTED: SCRIPTED_GAMES}
        answer += league_answer_lines(list(last), {m: ([float(rates[i]) for i in last.values()], games[m])
                                                   for m, rates in measures.items()})
    return lines


def panel_section(trainer: LeagueTrainer, summary: dict) -> list[str]:
    """On a SMAC or SMACv2 battle whose seats field the same units (any agent: MAPPO, PPO, the AlphaStar
    commander): the first main player's final weights (``final``) and the maxent-Nash mixture
    of the league's historicals (``nash``, one historical drawn per game) against every member of the
    panel, as ``selfplay compare`` plays each self-play run (``COMPARE_PANEL_GAMES`` games per member,
    one evaluation seed: ``evaluation.panel``); writes ``evaluation/panel.csv`` and ``panel.json``, adds
    ``panel_<member>_final`` / ``_nash`` to ``summary`` and returns the report's lines."""
    from selfplay.evaluation.compare import write_panel
    from selfplay.evaluation.panel import (
        COMPARE_PANEL_GAMES,
        evaluate_panel,
        markdown_table,
        panel_members,
        panel_summary,
    )
    from selfplay.training.registry import is_two_sided

    cfg, run, entries = trainer.config, trainer.run, trainer.league.menagerie.entries
    members = panel_members(cfg.env)
    mains = [name for name, p in trainer.league.players.items() if p.kind == "main"]
    if not members or is_two_sided(cfg.env) or not mains or len(entries) < 2:
        return []
    nash = np.load(run.evaluation / "winrate.npz")["nash"]  # historicals_section's, in menagerie order
    final = trainer.learners[mains[0]].snapshot()
    ev = evaluate_panel(trainer.env_name, {"final": ([final], None), "nash": ([e.policy for e in entries], nash)},
                        games=COMPARE_PANEL_GAMES, seeds=[cfg.seed], members=members)
    write_panel(run.evaluation, ev)
    summary.update(panel_summary(ev))
    return ["", "## Against the panel of fixed opponents", "",
            f"`final`: {mains[0]}'s weights at the end of training; `nash`: the maxent-Nash mixture of the league's "
            f"historicals. {ev.how()}.", "", *markdown_table(ev)]


def write_checkpoint_rates(path: Path, evaluated: list[EvaluatedPolicy], measures: dict[str, np.ndarray]) -> None:
    """``evaluation/checkpoints.csv``: one row per evaluated policy (``player``, ``kind``, ``step``,
    ``final``) with its rate under each measure (``vs_start``, and on SMAC ``vs_scripted``; draws ½),
    the report's table as data, read by ``league_seed_rows``."""
    import pandas as pd

    from selfplay.utils.io import atomic_write

    table = pd.DataFrame({"player": [r.player for r in evaluated], "kind": [r.kind for r in evaluated],
                          "step": [r.step for r in evaluated], "final": [r.final for r in evaluated]})
    for measure, rates in measures.items():
        table[MEASURE_COLUMNS[measure]] = np.asarray(rates, dtype=float)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda tmp: table.to_csv(tmp, index=False, float_format="%.4f"))


def league_seed_rows(run_dirs: list[str | Path]) -> pd.DataFrame:
    """One row per league run (each run a seed) and player: its last evaluated policy's rates
    (``last_vs_start``, ``last_vs_scripted``) and its best checkpoint's rate against the scripted AI
    (``best_vs_scripted``), read from each run's ``evaluation/checkpoints.csv``; ``seed`` from its
    ``config.yaml``.  A run without that file (not evaluated yet) is named in the error."""
    import io

    import pandas as pd

    from selfplay.training.rundir import RunDir
    from selfplay.training.rundir_paths import read_inside

    rows = []
    for run_dir in map(Path, run_dirs):
        rel = f"evaluation/{CHECKPOINTS_CSV}"
        if not (run_dir / rel).is_file():
            raise FileNotFoundError(f"run_dirs: {run_dir} has no {rel} (a league run "
                                    "evaluated by this version of `selfplay league`)")
        seed = RunDir(run_dir, kind="league").read_config()["seed"]  # the run directory's hardened readers
        table = pd.read_csv(io.BytesIO(read_inside(run_dir, rel, "checkpoint rates")))
        for player, own in table.groupby("player", sort=False):
            last = own.iloc[-1]
            row = {"run": str(run_dir), "seed": int(seed), "player": player, "kind": last["kind"],
                   "step": int(last["step"]), "last_vs_start": float(last["vs_start"])}
            if "vs_scripted" in own:
                row.update(last_vs_scripted=float(last["vs_scripted"]), best_vs_scripted=float(own["vs_scripted"].max()))
            rows.append(row)
    return pd.DataFrame(rows)


def league_panel_rows(run_dirs: list[str | Path]) -> pd.DataFrame:
    """One row per league run (each run a seed): its ``seed`` and the panel rates of its evaluation
    (``panel_<member>_final`` / ``_nash``, ``panel_section``) from ``evaluation/summary.json``; runs
    evaluated without a panel (not a SMAC battle, or evaluated before the league met the panel) give
    no row."""
    import json

    import pandas as pd

    from selfplay.training.rundir import RunDir
    from selfplay.training.rundir_paths import read_inside

    rows = []
    for run_dir in map(Path, run_dirs):
        seed = RunDir(run_dir, kind="league").read_config()["seed"]
        if not (run_dir / "evaluation" / "summary.json").is_file():
            continue
        summary = json.loads(read_inside(run_dir, "evaluation/summary.json", "league summary", limit=1 << 20))
        if not isinstance(summary, dict):
            raise ValueError(f"run_dirs: {run_dir}'s evaluation/summary.json is not a JSON object")
        panel = {k: float(v) for k, v in summary.items() if k.startswith("panel_")}
        if panel:
            rows.append({"run": str(run_dir), "seed": int(seed), **panel})
    return pd.DataFrame(rows)


def checkpoint_curves(evaluated: list[EvaluatedPolicy], measures: dict[str, np.ndarray]) -> dict:
    """measure → player → (steps, win rates), in the order of ``evaluated``."""
    curves: dict = {m: {} for m in measures}
    for m, rates in measures.items():
        for r, rate in zip(evaluated, rates):
            steps, values = curves[m].setdefault(r.player, ([], []))
            steps.append(r.step)
            values.append(float(rate))
    return curves


def checkpoint_summary(evaluated: list[EvaluatedPolicy], measures: dict[str, np.ndarray]) -> dict:
    """Per player type: the last policy's rate against the starting policy and, on SMAC, the last and
    the best rate against the scripted AI."""
    out = {}
    for kind in sorted({r.kind for r in evaluated}):
        rows = [i for i, r in enumerate(evaluated) if r.kind == kind]
        out[f"vs_start_last_{kind}"] = float(measures[VS_START][rows[-1]])
        if VS_SCRIPTED in measures:
            out[f"vs_scripted_best_{kind}"] = float(max(measures[VS_SCRIPTED][i] for i in rows))
            out[f"vs_scripted_last_{kind}"] = float(measures[VS_SCRIPTED][rows[-1]])
    return out


def train_league(config: LeagueTrainConfig, out: str | Path) -> dict:
    """``selfplay league``: train (or resume) the league into ``out``, then evaluate it here."""
    trainer = LeagueTrainer(config, out)
    trainer.train()
    return evaluate_league(trainer)


def train_league_on_ray(config: LeagueTrainConfig, out: str | Path, settings: RayLeagueSettings | None = None) -> dict:
    """``selfplay league --ray``: train on Ray (``run_league_on_ray``), then evaluate the committed league
    here, the matrix's further blocks as Ray tasks; ``report.md`` gains the Ray run's section
    (``league_report``: actors lost and replaced, drawn versus finished games)."""
    from selfplay.training.distributed.executor import RayExecutor
    from selfplay.training.distributed.league import RayLeagueSettings, run_league_on_ray
    from selfplay.training.distributed.league_report import append_ray_report

    settings = settings or RayLeagueSettings()
    result = run_league_on_ray(config, out, settings)
    trainer = LeagueTrainer(config, out)
    trainer.load()
    summary = evaluate_league(trainer, blocks=RayExecutor(settings.ray))
    append_ray_report(out, result)
    return {**summary, "replaced_workers": result.restarts, "coordinator_restarts": result.coordinator_restarts,
            "nodes_lost": len({e["node"] for e in result.events if e["node_lost"] is True})}
