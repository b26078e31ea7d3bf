"""Win rates against the panel of fixed SMAC opponents (``envs/smac/panel.py``): the ground truth next
to the winrate matrix, which only compares a population with itself.

How a number is made: for each panel member and each evaluation seed, ``games`` games on the run's
map. Against ``builtin`` (the map's built-in AI) every game is SMAC's own single-player game, as
SMAC's ``test_won_rate`` is made and as ``selfplay train --opponent builtin-ai`` evaluates: the agent is
player 1 (seat 0) of the single-player battle (``make_env(..., scripted_enemy=True)``), both sides at
the map's own spawns, the AI's side driven by the engine (``builtin_battle``). Against the scripted
members (``SCRIPTED_MEMBERS``) the battle is the two-player one the run trained on (``make_env``:
seat 1 mirrored on a symmetric map, its spawns the mirror image of seat 0's), half of the games with
the agent in seat 0 and half in seat 1 (the member in the other seat), the fair symmetric setting.
The agent plays greedily (each unit's most probable action, as SMAC's test games:
``matches.evaluation_act``) unless ``greedy=False``; each game counts 1 if the agent wins and 0
otherwise: a loss, a timeout and a mutual destruction are all non-wins. A seed's win rate is the mean
over its games; the reported interval is the Student-t 95 % interval of the mean over seeds (``None``
with one seed). The maxent-Nash mixture of a population draws one checkpoint per game with the Nash
probabilities (the draw seeded from the evaluation seed). On SMACv2 scenarios every game draws its own
units and start positions: ``builtin`` is the scenario's single-player game, the scripted members
play the scenario's two-player battle (seat 1 mirrored) and read each game's draw. An AlphaStar agent
(``smac-commander:MAP``) meets the members in the same battles, its seat played through the commander
(``agent_battle``); its network has no greedy mode, so it samples (the report says so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from selfplay.utils.checks import check_int, check_seed
from selfplay.utils.seeding import derive_seed

# the members of envs.smac.panel.PANEL, in its order (kept here so that reading a report needs no simulator)
PANEL_NAMES = ("builtin", "heuristic", "kiting", "focus_weakest", "regroup")
BUILTIN = "builtin"  # played in SMAC's single-player game, the agent in seat 0 (module docstring)
SCRIPTED_MEMBERS = PANEL_NAMES[1:]  # played in the mirrored two-player battle, half the games per seat
PANEL_STREAM = "panel-games"  # seeds of the games against the panel [member, seat]
MIXTURE_STREAM = "panel-mixture"  # the Nash mixture's draw of a checkpoint per game [member, seat]
COMPARE_PANEL_GAMES = 20  # games per panel member of each SMAC run's final agent and Nash mixture in a comparison
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def battle_words(env_name: str) -> tuple[str, str]:
    """How the games are laid out, in words for the reports: (against ``builtin``, against a script).
    A SMAC map has fixed spawns; a SMACv2 scenario draws each game's units and start positions."""
    from selfplay.training.registry import is_smacv2

    if is_smacv2(env_name):
        return ("the scenario's single-player game (each game its own draw of both teams and start positions), "
                "the AI's side driven by the engine, as SMACv2's test games",
                "the scenario's two-player battle, as self-play trains on it (both teams drawn per game, seat 1's "
                "start mirrored)")
    return ("SMAC's single-player game: the map's own spawns, the AI's side driven by the engine, as SMAC's test games",
            "the two-player battle of the map, as self-play trains on it (seat 1 mirrored on a symmetric map)")


def summary_key(member: str, who: str) -> str:
    """The summary column of ``who`` ("final" checkpoint or "nash" mixture) against ``member``."""
    return f"panel_{member}_{who}"


def mean_interval(values: Sequence[float]) -> tuple[float, float | None, float | None]:
    """(mean, low, high): the Student-t 95 % interval of the mean over seeds, clipped to [0, 1]
    (no interval from one value)."""
    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    if len(v) < 2:
        return m, None, None
    half = T_975.get(len(v) - 1, 1.96) * float(v.std(ddof=1)) / math.sqrt(len(v))
    return m, max(0.0, m - half), min(1.0, m + half)


@dataclass
class PanelEvaluation:
    """Per member, the win rate of each evaluated policy per seed; ``games`` per seed (half per seat)."""

    members: list[str]
    seeds: list[int]
    games: int
    greedy: bool = True
    rates: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # who -> member -> per seed
    env: str = ""  # the environment played, for ``how`` (a SMAC map when empty)

    def rows(self) -> list[dict]:
        out = []
        for who, per in self.rates.items():
            for member in self.members:
                m, lo, hi = mean_interval(per[member])
                out.append({"policy": who, "member": member, "seeds": len(self.seeds), "games_per_seed": self.games,
                            "mean": m, "ci_low": lo, "ci_high": hi})
        return out

    def how(self) -> str:
        from selfplay.training.registry import is_commander

        why = "; the AlphaStar network has no greedy mode" if is_commander(self.env) else ""
        play = ("greedily (each unit's most probable action, as SMAC's test games)" if self.greedy
                else f"with sampled actions (as in training{why})")
        settings = []
        single, two = battle_words(self.env)
        if BUILTIN in self.members:
            settings.append(f"against builtin (the map's built-in AI) all {self.games} with the agent as player 1 "
                            f"(seat 0) of {single}")
        scripted = [m for m in self.members if m != BUILTIN]
        if scripted:
            settings.append(f"against {', '.join(scripted)} {self.games // 2} with the agent in each seat of {two}")
        return (f"{self.games} games per member and seed ({'; '.join(settings)}), "
                f"{len(self.seeds)} evaluation seed(s); the agent plays {play}; a win counts 1, a loss, timeout or mutual destruction 0; "
                "interval: Student-t 95 % over seeds")


def member_seats(member: str, games: int) -> list[tuple[int, int]]:
    """(agent's seat, games) per batch of ``games`` games against ``member`` (module docstring):
    ``builtin`` all in seat 0 (SMAC's single-player game), a scripted member half in each seat."""
    return [(0, games)] if member == BUILTIN else [(0, games // 2), (1, games // 2)]


def panel_members(env_name: str) -> tuple[str, ...]:
    """The members the panel has on ``env_name``: all of them on a SMAC battle (``smac:MAP``, also in the
    AlphaStar commander's view ``smac-commander:MAP``) and a SMACv2 scenario (``smacv2:SCENARIO``); other
    environments have none."""
    from selfplay.training.registry import is_smac

    return PANEL_NAMES if is_smac(env_name) else ()


def builtin_battle(env_name: str, num_envs: int, seed: int | None, device: str = "cpu") -> Any:
    """SMAC's single-player battle of ``env_name``: the agent's side is seat 0 (player 1), the map's
    built-in AI drives player 2, both sides spawn at the map's own positions (no mirroring); the
    battle ``selfplay train --opponent builtin-ai`` trains and evaluates on."""
    from selfplay.training.registry import make_env

    return make_env(env_name, num_envs, seed=seed, device=device, scripted_enemy=True)


def member_battle(env_name: str, member: str, num_envs: int, seed: int | None, device: str = "cpu") -> Any:
    """The battle the games against ``member`` are played in (module docstring): ``builtin_battle`` for
    ``builtin``, else the two-player battle of ``make_env`` (seat 1 mirrored on a symmetric map; with
    ``smac:MAP(spawns=map)`` its units start at the map's own enemy spawns)."""
    from selfplay.training.registry import make_env

    if member == BUILTIN:
        return builtin_battle(env_name, num_envs, seed, device)
    return make_env(env_name, num_envs, seed=seed, device=device)


def agent_battle(env_name: str, member: str, seat: int, num_envs: int, seed: int | None,
                 device: str = "cpu") -> tuple[Any, Any]:
    """(the environment the agent's ``seat`` plays, the battle ``member`` reads): ``member_battle`` for
    both, or on ``smac-commander:MAP`` the commander environment ``member_battle`` makes, re-bound so that
    the commander plays only the agent's seat (``CommanderEnv(..., seats=(seat,))``; the member's seat stays
    per-unit)."""
    from selfplay.training.registry import is_commander

    env = member_battle(env_name, member, num_envs, seed, device)
    if not is_commander(env_name):
        return env, env
    from selfplay.agents.alphastar.smac.env import CommanderEnv

    return CommanderEnv(env.battle, env.commander_config, seats=(seat,)), env.battle


def play_vs_member(env_name: str, policies: Sequence[Any], who: np.ndarray, member: str, seat: int,
                   seed: int, device: str = "cpu", greedy: bool = True) -> np.ndarray:
    """Per game (``len(who)`` games), 1.0 if ``policies[who[g]]`` in ``seat`` beat panel member
    ``member`` (the other seat) in the game's first episode, else 0.0; ``greedy``: the policies play
    their most probable actions (``matches.evaluation_act``; the AlphaStar commander always samples). The
    battle: ``agent_battle`` (against ``builtin`` SMAC's single-player game, the agent in seat 0 only)."""
    import torch

    from selfplay.envs.smac.panel import panel_member
    from selfplay.training.batching import assign_state, group_by_policy, index_state
    from selfplay.training.matches import evaluation_act
    if seat not in (0, 1):
        raise ValueError(f"seat must be 0 or 1, got {seat!r}")
    if member == BUILTIN and seat != 0:
        raise ValueError("seat must be 0 against 'builtin': the built-in AI is player 2 of SMAC's single-player "
                         f"game, the agent player 1 (seat 0); got seat {seat!r}")
    n = len(who)
    single = member == BUILTIN
    available = panel_members(env_name)
    if not available:
        raise ValueError("the panel plays SMAC battles ('smac:MAP', 'smac-commander:MAP' or 'smacv2:SCENARIO'), "
                         f"got env {env_name!r}")
    env, battle = agent_battle(env_name, member, seat, n, seed, device)
    obs = env.reset()
    opponent = None if single else panel_member(member, battle, 1 - seat)
    players = [policies[i] for i in who.tolist()]
    groups = group_by_policy(players)
    state = players[0].initial_state(n)
    start = torch.ones(n, dtype=torch.bool)
    won = torch.zeros(n)
    ended = torch.zeros(n, dtype=torch.bool)
    with torch.no_grad():
        while not bool(ended.all()):
            masks = env.action_masks()
            action = None  # (n, n_agents) unit actions, or (n, 5 + S) packed commander actions
            for policy, idx in groups:
                idx = torch.as_tensor(idx)
                a, st, _ = evaluation_act(policy, obs[seat][idx], index_state(state, idx), masks[seat][idx],
                                          start[idx], greedy)
                a = torch.as_tensor(a, dtype=torch.long)
                if action is None:
                    action = torch.zeros((n, *a.shape[1:]), dtype=torch.long)
                action[idx] = a
                assign_state(state, idx, st)
            if opponent is None:
                actions = [action]
            else:
                other = opponent.act(obs[1 - seat], None, masks[1 - seat], start)[0]
                actions = [action, other] if seat == 0 else [other, action]
            obs, _, done, info = env.step(actions)
            first = done & ~ended
            won[first] = (info["winner"][first] == seat).float()
            ended |= done
            start = done.clone()
    return won.numpy()


def evaluate_panel(env_name: str, entries: dict[str, tuple[Sequence[Any], np.ndarray | None]], games: int = 40,
                   seeds: Sequence[int] = (0,), members: Sequence[str] = PANEL_NAMES,
                   device: str = "cpu", greedy: bool = True) -> PanelEvaluation:
    """Win rates of each entry ``who -> (policies, weights)`` against every panel member (module
    docstring; the seats per member: ``member_seats``): ``weights`` None plays ``policies[0]``, else a
    checkpoint drawn per game with these probabilities (the maxent-Nash mixture); ``greedy``: the
    policies play their most probable actions."""
    bad = [m for m in members if m not in PANEL_NAMES]
    if bad:
        raise ValueError(f"members must be among {list(PANEL_NAMES)}, got {bad}")
    scripted = [m for m in members if m != BUILTIN]
    check_int(games, "games", 2 if scripted else 1)
    if games % 2 and scripted:
        raise ValueError(f"games must be even with a scripted member on the panel ({scripted[0]!r} plays half the games "
                         f"with the agent in each seat; against 'builtin' alone any count), got {games}")
    for s in seeds:
        check_seed(s)
    from selfplay.training.registry import is_commander

    greedy = bool(greedy) and not is_commander(env_name)  # the AlphaStar network has no greedy mode
    result = PanelEvaluation(list(members), list(seeds), games, greedy, env=env_name)
    for who, (policies, weights) in entries.items():
        if weights is not None and len(weights) != len(policies):
            raise ValueError(f"{who}: weights must have one probability per policy ({len(policies)}), got {len(weights)}")
        per: dict[str, list[float]] = {m: [] for m in members}
        for seed in seeds:
            for k, member in enumerate(members):
                scores = []
                for seat, n_games in member_seats(member, games):
                    if weights is None:
                        picks = np.zeros(n_games, dtype=np.int64)
                    else:
                        rng = np.random.default_rng(derive_seed(seed, MIXTURE_STREAM, k, seat))
                        p = np.clip(np.asarray(weights, dtype=float), 0, None)
                        picks = rng.choice(len(policies), size=n_games, p=p / p.sum())
                    scores.append(play_vs_member(env_name, policies, picks, member, seat,
                                                 derive_seed(seed, PANEL_STREAM, k, seat), device, greedy))
                per[member].append(float(np.concatenate(scores).mean()))
        result.rates[who] = per
    return result


def panel_summary(ev: PanelEvaluation) -> dict[str, float]:
    """The summary columns (``summary_key``): the mean over seeds per evaluated policy and member."""
    return {summary_key(m, who): float(np.mean(per[m])) for who, per in ev.rates.items() for m in ev.members}


def markdown_table(ev: PanelEvaluation) -> list[str]:
    """A markdown table: one row per evaluated policy, one column per member (mean [interval])."""
    lines = ["| policy | " + " | ".join(ev.members) + " |", "|---|" + "---|" * len(ev.members)]
    for who, per in ev.rates.items():
        cells = []
        for m in ev.members:
            mean, lo, hi = mean_interval(per[m])
            cells.append(f"{mean:.2f}" + ("" if lo is None else f" [{lo:.2f}, {hi:.2f}]"))
        lines.append(f"| {who} | " + " | ".join(cells) + " |")
    return lines


# ----------------------------------------------------------------------------- the comparison report
def _cell(mean: float, low: float | None, high: float | None) -> str:
    if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
        return f"{mean:.2f}"
    return f"{mean:.2f} [{low:.2f}, {high:.2f}]"


def matrix_scores(rpp_table) -> dict[str, float]:
    """Each scheme's mean relative population performance against the other schemes (its RPP row
    without the diagonal): the winrate-matrix verdict across schemes."""
    schemes = list(rpp_table.index)
    values = np.asarray(rpp_table, dtype=float)
    off = ~np.eye(len(schemes), dtype=bool)
    return {s: float(values[i][off[i]].mean()) if len(schemes) > 1 else 0.0 for i, s in enumerate(schemes)}


def disagreements(matrix: dict[str, float], panel: dict[str, float]) -> list[tuple[str, str]]:
    """Pairs (x, y) that the RPP ranks x above y and the panel ranks y above x (strictly both)."""
    out = []
    for x in matrix:
        for y in matrix:
            if x != y and matrix[x] > matrix[y] and panel.get(y, np.nan) > panel.get(x, np.nan):
                out.append((x, y))
    return out


def sampling_words(summary) -> str:
    """The exception to greedy play in a comparison's panel games: the AlphaStar commander samples."""
    if "agent" in summary.columns and "alphastar" in set(summary["agent"]):
        return "; the AlphaStar commander samples its actions (its network has no greedy mode)"
    return ""


def report_section(summary, aggregate, rpp_tables: dict, games: int, env_name: str = "") -> list[str]:
    """The comparison report's panel section (SMAC, SMACv2 on ``env_name``): per agent, each scheme's final
    agent and maxent-Nash mixture against every member (mean over seeds with the aggregate's interval), and
    where the panel's verdict and the winrate matrix's (relative population performance) disagree."""
    members = [m for m in PANEL_NAMES if summary_key(m, "final") in summary.columns]
    if not members:
        return []
    single, two = battle_words(env_name)
    lines = ["", "## Against the panel of fixed opponents", "",
             f"Each run's last checkpoint (`final`) and the maxent-Nash mixture of its checkpoints (`nash`, one "
             f"checkpoint drawn per game) played {games} games against each panel member (members: the map's built-in "
             "AI, SMAC's heuristic, kiting, focus-weakest, retreat-and-regroup — `docs/guides/smac-panel.md`). "
             f"Against the built-in AI all {games} are played as player 1 (seat 0) of {single}. Against the "
             f"scripts, {games // 2} with the agent in each seat of {two}. The agents play greedily (each unit's most probable action, as SMAC's "
             f"test games){sampling_words(summary)}. A win counts 1; a loss, a timeout or a mutual destruction counts 0. "
             "Cells: mean over seeds [the bootstrap interval of `evaluation/aggregate.csv`]; per run: "
             "`runs/<agent>/<scheme>-s<seed>/evaluation/panel.csv`.", ""]
    for agent, rows in summary.groupby("agent", sort=False):
        agg = aggregate[aggregate["agent"] == agent].set_index(["scheme", "metric"])
        schemes = list(dict.fromkeys(rows["scheme"]))
        panel_mean: dict[str, float] = {}
        for who in ("final", "nash"):
            header = "| scheme | " + " | ".join(members) + " | mean over the panel |"
            table = [f"### {agent}: `{who}` against the panel", "", header, "|---|" + "---|" * (len(members) + 1)]
            for scheme in schemes:
                cells, means = [], []
                for m in members:
                    key = (scheme, summary_key(m, who))
                    if key in agg.index:
                        r = agg.loc[key]
                        cells.append(_cell(float(r["mean"]), r["mean_ci_low"], r["mean_ci_high"]))
                        means.append(float(r["mean"]))
                    else:
                        cells.append("–")
                overall = float(np.mean(means)) if means else float("nan")
                if who == "final":
                    panel_mean[scheme] = overall
                table.append(f"| {scheme} | " + " | ".join(cells) + f" | {overall:.2f} |")
            lines += table + [""]
        finite = {s: v for s, v in panel_mean.items() if np.isfinite(v)}
        if not finite:
            continue
        best_panel = max(finite, key=finite.get)
        lines.append(f"Panel verdict ({agent}): `{best_panel}`'s final agents win most against the panel "
                     f"(mean {finite[best_panel]:.2f} over members and seeds).")
        table = rpp_tables.get(agent)
        if table is None or len(table) < 2:
            lines += ["", "No cross-scheme winrate-matrix verdict (one scheme).", ""]
            continue
        matrix = matrix_scores(table)
        best_matrix = max(matrix, key=matrix.get)
        agree = "agree" if best_matrix == best_panel else "disagree"
        lines.append(f"Winrate-matrix verdict ({agent}): `{best_matrix}` has the highest mean relative population "
                     f"performance against the other schemes ({matrix[best_matrix]:+.3f}). The two verdicts {agree} "
                     "on the best scheme.")
        pairs = disagreements(matrix, finite)
        if pairs:
            lines.append("They order these pairs differently (RPP says the first is better, the panel the second): "
                         + "; ".join(f"`{x}` vs `{y}`" for x, y in pairs) + ".")
        else:
            lines.append("No pair of schemes is ordered one way by RPP and the other way by the panel.")
        lines.append("")
    return lines
