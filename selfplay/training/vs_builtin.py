"""Training one side against the map's built-in AI (SMAC's single-player setting), evaluated as SMAC clients do.

``selfplay train --env smac:MAP --opponent builtin-ai --steps N [--agent mappo]``: the MAPPO learner
plays seat 0 of ``num_envs`` single-player battles (seat 1 is the map's scripted AI) for ``steps``
game-steps (one step of one game counts one, as SMAC's ``total_num_steps``). Test evaluation, as PyMARL
(``test_interval``/``test_nepisode``) and MAPPO's runner (``eval_interval``/``eval_episodes``) do it:
before training and then at the first update boundary after every ``eval_interval`` game-steps,
``eval_episodes`` games with greedy actions on environments seeded apart from training — each of
``eval_episodes`` games played once, so short games are not over-counted. A timeout counts as not won.
The same game as the panel's games against ``builtin`` (``selfplay.evaluation.panel.builtin_battle``:
the agent as player 1, both sides at the map's own spawns, the AI driven by the engine).
Rows go to ``metrics.csv`` (``step``, ``test_win_rate``, ``test_return``, ...), one row per test game to
``test_games.csv`` (its outcome, length, deaths, and on SMACv2 the drawn teams and start layout, so a
researcher can see which draws the lost games held), per-update learner statistics to ``updates.csv``,
the curve to ``figures/learning_curve.png``. The policy each evaluation played is kept as a checkpoint
(``checkpoints/``, the same files and index as a self-play run's; not under open-loop control, whose
actor reads the time step alone), so it can be watched (``selfplay replay --a RUN``) and played against
the SMAC panel (``selfplay evaluate RUN --panel``: ``evaluation.vs_ai``).

The run directory follows docs/design/run-directory.md: one writer, one commit (``kind`` ``vs-ai``)
after each evaluation, resume from the last commit — a resumed run restarts its games (from a seed
derived from the updates made), so it is statistically, not bitwise, the same as an uninterrupted one.
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from selfplay.agents.mappo import MAPPOConfig, MAPPOLearner, mappo_config
from selfplay.agents.mappo.network import open_loop_inputs
from selfplay.agents.mappo.selfplay import MAPPOFrozenPolicy, battle_spec, save_policy
from selfplay.core.menagerie import Menagerie
from selfplay.training.registry import MATRIX_GAMES, check_env_name, is_commander, is_openspiel, make_env
from selfplay.training.rundir import RunDir
from selfplay.training.trainer import run_identity
from selfplay.utils.checks import check_int, check_seed
from selfplay.utils.seeding import Stream, derive_seed

METRIC_COLUMNS = ("step", "test_win_rate", "test_return", "test_episodes", "updates", "seconds")
GAME_COLUMNS = ("step", "game", "won", "timeout", "return", "episode_steps", "dead_allies", "dead_enemies",
                "start", "allies", "enemies")
UPDATE_COLUMNS = ("step", "update", "train_win_rate", "train_return", "policy_loss", "value_loss", "entropy",
                  "approx_kl", "clip_fraction", "explained_variance", "seconds")
AGENTS = ("mappo",)
MAX_STEPS = 10**10
CHECKPOINTS = "checkpoints"  # the folder (and menagerie) of the evaluated policies


@dataclass
class VsAIConfig:
    """One run of a learner against a SMAC map's built-in AI."""

    env: str = "smac:3m"  # smac:MAP (any map of the simulator; any SMAC battle name of the registry)
    agent: str = "mappo"  # the learner (mappo)
    steps: int = 2_000_000  # game-steps of training (all games together)
    seed: int = 0  # seed of the run (same seed, same machine: same results)
    agent_settings: dict = field(default_factory=dict)  # overrides of MAPPOConfig's fields
    torch_threads: int = 1  # small networks run fastest single-threaded

    DISPLAY_ONLY = ("torch_threads",)

    def __post_init__(self) -> None:
        check_env_name(self.env)
        if self.env in MATRIX_GAMES or is_openspiel(self.env) or is_commander(self.env):
            raise ValueError(f"env must be a SMAC battle ('smac:MAP' or another SMAC name the registry knows) "
                             f"to play the built-in AI, got {self.env!r}")
        if self.agent not in AGENTS:
            raise ValueError(f"agent must be one of {AGENTS} against the built-in AI, got {self.agent!r}")
        check_int(self.steps, "steps", 1, MAX_STEPS)
        check_seed(self.seed)
        self.settings()

    def settings(self) -> MAPPOConfig:
        return mappo_config(**self.agent_settings)

    def run_config(self) -> dict:
        return {**{k: v for k, v in asdict(self).items() if k not in self.DISPLAY_ONLY},
                "opponent": "builtin-ai", "resolved_agent_settings": self.settings().to_dict()}


@dataclass
class VsAIResult:
    steps: int
    updates: int
    seconds: float
    final_win_rate: float
    run_dir: str


def side_inputs(battle, config: MAPPOConfig, obs) -> tuple:
    """``(obs, state, mask)`` of seat 0 as the learner reads them (open loop: the time step for ``obs``)."""
    if config.open_loop:
        obs = open_loop_inputs(battle.episode_steps, battle.episode_limit, battle.n_agents[0])
    else:
        obs = obs[0]
    state = battle.get_special_state()[0] if config.critic_input == "AS" else battle.get_state()[0]
    return obs, state, battle.action_masks()[0]


def evaluate(policy, env: str, config: MAPPOConfig, episodes: int, seed: int) -> tuple[float, float, list[dict]]:
    """Greedy test games: ``(win rate, mean return, games)`` over ``episodes`` games, each of ``episodes``
    environments counting its first game only; ``games`` holds one dict per game (``GAME_COLUMNS`` but
    ``step``: see ``game_draws`` for ``start``, ``allies`` and ``enemies``)."""
    battle = make_env(env, episodes, seed=seed, scripted_enemy=True)
    obs = battle.reset()
    draws = game_draws(battle)
    state = policy.initial_state(episodes)
    start = torch.ones(episodes, dtype=torch.bool)
    finished = torch.zeros(episodes, dtype=torch.bool)
    won, ret = torch.zeros(episodes), torch.zeros(episodes)
    timeout, length = torch.zeros(episodes, dtype=torch.bool), torch.zeros(episodes, dtype=torch.long)
    dead = torch.zeros(2, episodes, dtype=torch.long)
    while not bool(finished.all()):
        o, _, mask = _obs_mask(battle, config, obs)
        action, state = policy.act(o, state, mask, start)
        obs, _, done, info = battle.step([action])
        new = done & ~finished
        won[new] = info["battle_won"][0][new].float()
        ret[new] = info["episode_reward"][0][new].float()
        timeout[new] = info["timeout"][new].bool()
        length[new] = info["episode_steps"][new].long()
        dead[0, new] = info["dead_allies"][0][new].long()
        dead[1, new] = info["dead_enemies"][0][new].long()
        finished |= done
        start = done
    games = [{"game": e, "won": int(won[e]), "timeout": int(timeout[e]), "return": round(float(ret[e]), 4),
              "episode_steps": int(length[e]), "dead_allies": int(dead[0, e]), "dead_enemies": int(dead[1, e]),
              **draws[e]} for e in range(episodes)]
    return won.mean().item(), ret.mean().item(), games


def game_draws(battle) -> list[dict]:
    """Each game's current draw as text: ``start`` (SMACv2's start layout, ``reflect`` or ``surrounded``;
    ``fixed`` where the scenario has no drawn positions; ``map`` for SMAC v1's fixed spawns) and the teams
    (``allies``, ``enemies``: ``name:count`` by name, e.g. ``stalker:3 zealot:2``)."""
    from selfplay.envs.smac.smacv2_battle import SMACv2Battle

    if isinstance(battle, SMACv2Battle):
        return [{"start": battle.kinds[e], "allies": team_text(spec.units(0)), "enemies": team_text(spec.units(1))}
                for e, spec in enumerate(battle.games.specs)]
    names, n0 = list(battle.engine.unit_names), battle.engine.n_side[0]  # SMAC v1: fixed spawns and teams
    teams = {"start": "map", "allies": team_text(names[:n0]), "enemies": team_text(names[n0:])}
    return [dict(teams) for _ in range(battle.num_envs)]


def team_text(names) -> str:
    """A team as ``test_games.csv`` writes it: ``name:count`` by name (``["zealot", "stalker", "zealot"]`` ->
    ``"stalker:1 zealot:2"``); ``parse_team`` reads it back."""
    return " ".join(f"{name}:{count}" for name, count in sorted(Counter(names).items()))


def parse_team(text: str) -> dict[str, int]:
    """A team as ``test_games.csv`` writes it (``"stalker:3 zealot:2"``) -> ``{"stalker": 3, "zealot": 2}``."""
    return {name: int(count) for name, count in (part.split(":") for part in text.split())}


def _obs_mask(battle, config: MAPPOConfig, obs):
    """The actor's inputs without the (costly) agent-specific state: acting needs no critic."""
    o = open_loop_inputs(battle.episode_steps, battle.episode_limit, battle.n_agents[0]) if config.open_loop else obs[0]
    return o, None, battle.action_masks()[0]


def train_vs_builtin(config: VsAIConfig, out: str | Path, log=print) -> VsAIResult:
    """Train (or resume) the run in ``out`` (module docstring)."""
    torch.set_num_threads(config.torch_threads)
    run = RunDir(out, kind="vs-ai")
    run.lock("selfplay train --opponent builtin-ai")
    try:
        return _train(config, run, log)
    finally:
        run.unlock()


def _train(config: VsAIConfig, run: RunDir, log) -> VsAIResult:
    mc = config.settings()
    wanted = config.run_config()
    probe = make_env(config.env, 1, seed=0, scripted_enemy=True)
    learner = MAPPOLearner.for_battle(probe, mc, seed=derive_seed(config.seed, Stream.LEARNER, 0))
    spec = battle_spec(probe, 0, mc)
    checkpoints = None if mc.open_loop else Menagerie()  # open loop: the actor cannot play from observations
    steps = updates = 0
    seconds = 0.0
    rows: list[list] = []
    update_rows: list[list] = []
    game_rows: list[list] = []
    next_eval = 0
    if run.has_commit():
        state = run.load_commit()
        if _without_budget(state.get("config")) != _without_budget(wanted):
            raise ValueError(f"out {str(run.root)!r} holds a run with other settings ({state.get('config')}); "
                             "use another directory")
        learner.load_state_dict(state["learner"])
        steps, updates, seconds = int(state["steps"]), int(state["updates"]), float(state["seconds"])
        rows, update_rows, next_eval = [list(r) for r in state["rows"]], [list(r) for r in state["update_rows"]], \
            int(state["next_eval"])
        game_rows = [list(r) for r in state.get("game_rows", [])]  # runs committed before per-game rows: none
        if checkpoints is not None and "menageries" in state:  # runs committed before checkpoints were kept: none
            checkpoints = run.committed_menagerie(state, CHECKPOINTS)  # the files are kept, not read
        run.remove_strays((CHECKPOINTS,))
        env_seed = derive_seed(config.seed, Stream.ENV_RESUMED, updates)
        log(f"resumed at {steps} game-steps ({updates} updates)")
    else:
        env_seed = derive_seed(config.seed, Stream.ENV, 0)

    run.write_config(wanted)

    def evaluate_now():
        win, ret, games = evaluate(learner.policy(), config.env, mc, mc.eval_episodes,
                                   derive_seed(config.seed, Stream.SCRIPTED_GAMES, steps))
        rows.append([steps, win, ret, mc.eval_episodes, updates, round(seconds, 3)])
        if checkpoints is not None:
            frozen = MAPPOFrozenPolicy(copy.deepcopy(learner.network), spec, learner.weight_version,
                                       derive_seed(config.seed, Stream.SNAPSHOT, learner.weight_version))
            checkpoints.add(frozen, step=steps, updates=updates, test_win_rate=win)
        game_rows.extend([steps, *(g[c] for c in GAME_COLUMNS[1:])] for g in games)
        log(f"step {steps:9d}  test win rate {win:.3f}  test return {ret:6.2f}  ({seconds:.0f} s)")

    def commit():
        state = {"config": wanted, "learner": learner.state_dict(), "steps": steps, "updates": updates,
                 "seconds": seconds, "rows": rows, "update_rows": update_rows, "game_rows": game_rows,
                 "next_eval": next_eval}
        names = []
        if checkpoints is not None:
            names = checkpoints.save_policies(run.root / CHECKPOINTS, save_policy)
            state["menageries"] = {CHECKPOINTS: checkpoints.index()}
        run.commit(state, [run.root / CHECKPOINTS / n for n in names])
        export(run, rows, update_rows, game_rows)
        if checkpoints is not None:
            checkpoints.save(run.root / CHECKPOINTS)  # index.json, for readers (the commit holds the index)

    if steps == 0 and not rows:
        evaluate_now()
        next_eval = mc.eval_interval
        commit()
    battle = make_env(config.env, mc.num_envs, seed=env_seed, scripted_enemy=True)
    obs = battle.reset()
    start = torch.ones(mc.num_envs, dtype=torch.bool)
    wins: list[torch.Tensor] = []
    returns: list[torch.Tensor] = []
    t0 = time.perf_counter() - seconds
    unfinished: list | None = None  # the row of the update whose critic may still be fitting

    def finish_update():
        nonlocal unfinished
        if unfinished is not None:
            m = learner.finish_update()
            row_steps, row_updates, w, r, row_seconds = unfinished
            update_rows.append([row_steps, row_updates, w, r, m["policy_loss"], m["value_loss"], m["entropy"],
                                m["approx_kl"], m["clip_fraction"], m["explained_variance"], row_seconds])
            unfinished = None

    while steps < config.steps:
        o, s, mask = side_inputs(battle, mc, obs)
        action = learner.act(o, s, mask, start)
        obs, rewards, done, info = battle.step([action])
        learner.record(rewards[0], done)
        start = done
        steps += mc.num_envs
        if bool(done.any()):
            wins.append(info["battle_won"][0][done].float())
            returns.append(info["episode_reward"][0][done].float())
        if learner.ready():
            _, s, mask = side_inputs(battle, mc, obs)
            finish_update()
            learner.set_progress(min(1.0, (steps - mc.batch_steps) / config.steps))  # spent before this rollout
            learner.start_update(s, mask, start)  # update_threads=2: the critic fits on while the next rollout plays
            updates += 1
            seconds = time.perf_counter() - t0
            w = torch.cat(wins) if wins else torch.full((1,), float("nan"))
            r = torch.cat(returns) if returns else torch.full((1,), float("nan"))
            wins, returns = [], []
            unfinished = [steps, updates, w.mean().item(), r.mean().item(), round(seconds, 3)]
            if steps >= next_eval or steps >= config.steps:
                finish_update()
                evaluate_now()
                while next_eval <= steps:
                    next_eval += mc.eval_interval
                commit()
    finish_update()
    seconds = time.perf_counter() - t0
    return VsAIResult(steps, updates, seconds, rows[-1][1] if rows else float("nan"), str(run.root))


def _without_budget(run_config) -> dict | None:
    """What must agree for a resume: everything but ``steps`` (a run may be resumed to a larger budget) and
    the learner's speed-only settings (``SPEED_ONLY``: they do not change the numbers)."""
    if not isinstance(run_config, dict):
        return None
    return {k: v for k, v in run_identity(run_config).items() if k != "steps"}


def export(run: RunDir, rows: list, update_rows: list, game_rows: list) -> None:
    """``metrics.csv``, ``updates.csv``, ``test_games.csv`` and ``figures/learning_curve.png`` from the
    committed rows."""
    run.write_rows(run.metrics, METRIC_COLUMNS, rows)
    run.write_rows(run.root / "updates.csv", UPDATE_COLUMNS, update_rows)
    run.write_rows(run.root / "test_games.csv", GAME_COLUMNS, game_rows)
    plot_learning_curve([r[0] for r in rows], [r[1] for r in rows], run.figures / "learning_curve.png",
                        title=f"test win rate against the built-in AI ({run.read_config().get('env', '')})")


def plot_learning_curve(steps, win_rates, path: Path, title: str = "") -> None:
    """Test win rate (0–1) against game-steps, one PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.5), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot(steps, win_rates, marker="o", markersize=3)
    ax.set_ylim(0, 1)
    ax.set_xlabel("game-steps")
    ax.set_ylabel("test win rate")
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title, fontsize=9)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
