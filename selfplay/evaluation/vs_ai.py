"""``selfplay evaluate RUN --panel`` on a run trained against the built-in AI (``training.vs_builtin``).

Such a run has no population to match against itself: it is evaluated as it trains (``metrics.csv``,
greedy test games against the AI). What it can add is the question SMAC-HARD asks — does the agent
beat opponents it never trained against? — so its last checkpoint plays every member of the SMAC panel
(``evaluation.panel``: the same games, seats and counting as a self-play run's ``final`` row). On a map
whose sides field different units (``5m_vs_6m``, a SMACv2 scenario with more enemies than agents) the
agent can only hold seat 0, so the panel there is the built-in AI alone. Written to the run's
``evaluation/`` (``panel.csv``, ``panel.json``, ``summary.json``).
"""

from __future__ import annotations

from pathlib import Path

from selfplay.utils.checks import check_int, check_seed


def vs_ai_checkpoints(run, state: dict, kit):
    """The committed checkpoints of a run against the built-in AI, read with ``kit.load_policy``; a run that
    keeps none (made before runs kept them, or under open-loop control) is named in the error."""
    config = state["config"]
    if "menageries" not in state:
        why = ("its actor read the time step alone (open-loop control)" if config.get("resolved_agent_settings", {})
               .get("open_loop") else "it was trained before runs against the AI kept their checkpoints")
        raise ValueError(f"run {str(run.root)!r} holds no policy to load: {why}")
    return run.committed_menagerie(state, "checkpoints", kit.load_policy)


def evaluate_vs_ai_run(run_dir: str | Path, games: int = 40, seeds: int = 3, seed: int = 0) -> dict:
    """The last checkpoint of the run in ``run_dir`` against every panel member it can meet (module
    docstring), ``games`` games per member and evaluation seed ``seed, seed + 1, …`` (``seeds`` of them);
    returns the summary (``panel_<member>_final``, the checkpoint's step) also written to
    ``evaluation/summary.json``."""
    from selfplay.evaluation.compare import write_panel
    from selfplay.evaluation.panel import BUILTIN, evaluate_panel, panel_members, panel_summary
    from selfplay.training.registry import is_two_sided
    from selfplay.training.rundir import RunDir, open_committed
    from selfplay.utils.io import atomic_write_json

    check_int(games, "games", 1)
    check_int(seeds, "seeds", 1)
    check_seed(seed)
    run = RunDir(run_dir, kind="vs-ai")
    run.lock("selfplay evaluate")  # evaluation/ is written: one writer, and not while the run trains
    try:
        run, state, kit = open_committed(run)
        env = state["config"]["env"]
        checkpoints = vs_ai_checkpoints(run, state, kit)
        if not checkpoints.ids:
            raise ValueError(f"run {str(run.root)!r} has no checkpoint yet")
        last = checkpoints[checkpoints.ids[-1]]
        members = (BUILTIN,) if is_two_sided(env) else panel_members(env)  # seat 1 needs the same units
        ev = evaluate_panel(env, {"final": ([last.policy], None)}, games=games, seeds=[seed + k for k in range(seeds)],
                            members=members)
        write_panel(run.evaluation, ev)
        summary = {**panel_summary(ev), "checkpoint": last.id, "checkpoint_step": last.step}
        atomic_write_json(run.evaluation / "summary.json", summary)
        return summary
    finally:
        run.unlock()
