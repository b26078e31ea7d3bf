"""The Ray league's section of ``report.md``: the actors it lost and replaced, and why more opponents
were drawn than games finished.

A game's opponent is drawn — and counted in ``matchmaking.csv``'s ``drawn`` — when the game starts; the
game is counted in ``matches.csv`` and the payoff only when its outcome reaches the coordinator. A
rollout worker keeps ``num_envs`` games going for each player it plays. Games that never finish:

- those a worker drops when it starts a fresh run of games for a player (its lease of that player
  follows another worker's, or its lease was revoked);
- those running on a worker that dies, or reported after the last commit when the coordinator dies;
- those still running when the league is done.

So ``drawn − finished`` is about ``num_envs`` per player per dropped run of games, not a lost record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from selfplay.utils.io import atomic_write_text


def drawn_and_finished(out: str | Path) -> pd.DataFrame:
    """Per player: opponents ``drawn`` (``matchmaking.csv``), games ``finished`` (``matches.csv``) and
    ``unfinished`` = drawn − finished."""
    out = Path(out)
    drawn = pd.read_csv(out / "matchmaking.csv").groupby("player")["drawn"].sum()
    finished = pd.read_csv(out / "matches.csv", dtype={"opponent": str}).groupby("player").size()
    table = pd.DataFrame({"drawn": drawn, "finished": finished}).fillna(0).astype(int)
    table["unfinished"] = table["drawn"] - table["finished"]
    return table


def _node(node: Any) -> str:
    return f"node `{str(node)[:12]}`" if isinstance(node, str) and node else "an unknown node"


def lost_actor_lines(events: list[dict]) -> list[str]:
    """One line per event of ``LeagueDriver``: which worker was lost, on which node, whether the node
    left the cluster, and which worker replaced it; coordinator restarts."""
    lines = []
    for e in events:
        if e["worker"] is None:
            lines.append(f"- {e['seconds']:.0f} s: {e['event']} ({e['detail']}).")
            continue
        where = _node(e["node"])
        if e["node_lost"] is True:
            where += ", which left the cluster"
        elif e["node_lost"] is False:
            where += ", still in the cluster (the worker's process died)"
        then = f"replaced by worker {e['replaced_by']}" if e["replaced_by"] is not None else "not replaced"
        lines.append(f"- {e['seconds']:.0f} s: {e['event']}: worker {e['worker']} on {where}; {then}.")
    return lines


def ray_report_lines(out: str | Path, result: Any) -> list[str]:
    """The section: actors started, lost and replaced (``result``: a ``RayLeagueResult``), and the drawn
    versus finished games of every player with the reasons (module docstring)."""
    finished_workers = result.workers
    dropped = sum(w.get("dropped_games", 0) for w in finished_workers.values())
    in_play = sum(w.get("games_in_play_at_end", 0) for w in finished_workers.values())
    lost = [e for e in result.events if e["worker"] is not None]
    nodes_lost = sorted({str(e["node"]) for e in lost if e["node_lost"] is True})
    lines = ["", "## The Ray run", "",
             f"{len(finished_workers)} rollout workers finished; {result.restarts} lost and replaced, "
             f"{len(nodes_lost)} node(s) lost from the cluster"
             + (f" ({', '.join(f'`{n[:12]}`' for n in nodes_lost)})" if nodes_lost else "")
             + f"; the coordinator restarted {result.coordinator_restarts} time(s) from the last commit. "
             "Every loss is in `ray_events.csv`."]
    events = lost_actor_lines(result.events)
    if events:
        lines += [""] + events
    table = drawn_and_finished(out)
    lines += ["", "### Opponents drawn and games finished", "",
              "An opponent is drawn (`matchmaking.csv`) when a game starts; the game counts (`matches.csv`, the "
              "payoff) when its outcome reaches the coordinator. Games that never finish: those a rollout worker "
              "drops when it starts a fresh run of games for a player (its lease follows another worker's, or was "
              "revoked), those on a worker that died, and those still running when the league was done — "
              "`num_envs` per player a worker plays.", "",
              f"In this run the workers that finished dropped {dropped} games and had {in_play} in play at the end "
              "(a worker that died does not report its own).", "",
              "| player | drawn | finished | unfinished |", "|---|---|---|---|"]
    lines += [f"| {name} | {row.drawn} | {row.finished} | {row.unfinished} |" for name, row in table.iterrows()]
    return lines


def append_ray_report(out: str | Path, result: Any) -> None:
    """Append ``ray_report_lines`` to the run's ``report.md`` (written by ``evaluate_league``)."""
    report = Path(out) / "report.md"
    text = report.read_text() if report.exists() else ""
    atomic_write_text(report, text + "\n".join(ray_report_lines(out, result)) + "\n")
