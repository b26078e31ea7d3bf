"""The trainer core: one episode loop for every training mode (docs/design/trainer.md).

A run has one or more *players* — learners, each with its own batch of ``num_envs`` games. The
core owns what every mode shares:

- the run directory: one writer (lock), one commit per save, resume from the last commit;
- batched games with per-game opponents (``GameRunner``: each game draws its opponent when it
  starts, opponents act grouped by policy object);
- recording: every finished game is one row of ``matches.csv`` (``MATCH_COLUMNS``), every learner
  update one row of ``metrics.csv``, every finished game's trajectory vector in ``trajectories.npz``;
- progress (tqdm) and TensorBoard;
- the order of events: step the games; for each finished game record it and let the mode curate;
  when the learner is ready, update it and let the mode apply its update rules; after a round in
  which some learner updated, commit.

A *mode* is the thin policy over it (``TrainingMode``): which opponents a player draws, what
happens after a finished game (the scheme's G, evaluation checkpoints) and after an update (the
league's checkpoint and reset rules), when a player is done, and the mode's own resumable state.
The single-learner (``loop.SelfPlayMode``), per-side (``two_sided.PerSideMode``) and league
(``league_loop.LeagueMode``) modes are the three there are; each has a ``name`` (``MODES``) that the
run records as ``mode`` in its configuration (``config.yaml`` and the committed state), so readers of
the run directory know its layout without looking at its folders.

``turn`` says how players interleave: ``"step"`` — every player advances one environment step per
round; ``"update"`` — a player plays its games until its learner updates (the league's turns).
Games in flight at a kill are abandoned on resume (they were never counted); the run still ends
with exactly the budgeted number of counted episodes or steps.

A run with an episode budget (the self-play and per-side modes) may be resumed with a larger one
(``budget_extension``): it continues from its last commit to the new budget, keeping everything it
recorded, with the checkpoint spacing ``episodes / checkpoints`` unchanged; the new budget is then the
run's configuration (``config.yaml`` and the committed state). Like any resume, the continuation is
statistically, not bitwise, the run a fresh start with the larger budget would have made: its games
restart from a seed of the progress made, and the games in flight at the commit are not carried over.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from selfplay.core.menagerie import Menagerie
from selfplay.core.policy import ScheduledLearner
from selfplay.training.commit_texts import CommitTexts
from selfplay.training.games import FinishedGame, GameRunner
from selfplay.training.rundir import RunDir, RunDirError
from selfplay.utils.threads import torch_threads

MATCH_COLUMNS = ("player", "episode", "step", "opponent", "opponent_kind", "learner_seat", "score")
RECENT_GAMES = 200  # the metrics' win_rate: the player's share of its last RECENT_GAMES games


@dataclass
class Player:
    """One learner of a run and its games."""

    name: str
    learner: Any
    env: Any
    seat: int | None = None  # the learner's fixed seat (asymmetric games), None: a random seat per game
    episodes: int = 0
    steps: int = 0
    updates: int = 0
    runner: GameRunner | None = field(default=None, repr=False)

    def counters(self) -> dict:
        return {"episodes": self.episodes, "steps": self.steps, "updates": self.updates}


MODES = ("self-play", "two-sided", "league")  # the modes' names, as ``mode`` in config.yaml


def run_identity(run_config: dict) -> dict:
    """What must agree for a resume: the run's configuration less the agents' speed-only settings
    (``SPEED_ONLY``, e.g. MAPPO's ``update_threads``: they change how fast a run goes, not its numbers)."""
    from selfplay.agents.mappo.config import without_speed_settings

    return {k: without_speed_settings(v) if k in ("agent_settings", "resolved_agent_settings") and isinstance(v, dict)
            else v for k, v in run_config.items()}


BUDGET = ("episodes", "checkpoints")  # what a resume may change: a larger budget at the same checkpoint spacing


def budget_extension(run_dir: str, saved: dict, now: dict) -> bool:
    """Whether configuration ``now`` extends the run of configuration ``saved`` to a larger episode
    budget (module docstring): every other setting equal, ``now["episodes"]`` larger and the checkpoint
    spacing equal (``episodes * checkpoints_saved == episodes_saved * checkpoints``, exactly). False
    when the budgets are equal or other settings differ (the caller names those); a smaller budget or
    another spacing raises ``RunDirError`` naming what to pass instead."""
    if any(k not in saved or k not in now for k in BUDGET) or now["episodes"] == saved["episodes"]:
        return False
    saved, now = run_identity(saved), run_identity(now)
    if any(saved.get(k) != now.get(k) for k in set(saved) | set(now) if k not in BUDGET):
        return False
    e0, c0, e, c = saved["episodes"], saved["checkpoints"], now["episodes"], now["checkpoints"]
    if e < e0:
        raise RunDirError(f"run directory {run_dir!r} holds a run of episodes={e0}; a resume may only extend it "
                          f"(episodes >= {e0}), got {e}")
    if e * c0 != e0 * c:
        spacing = f"one checkpoint every {e0 / c0:g} episodes ({e0} episodes, {c0} checkpoints)"
        step = e0 // math.gcd(e0, c0)  # the budgets with a whole number of checkpoints at that spacing
        fix = (f"pass checkpoints={e * c0 // e0} (--checkpoints {e * c0 // e0}) to extend it to {e} episodes, "
               f"got checkpoints={c}" if (e * c0) % e0 == 0 else
               f"episodes must be a multiple of {step} to keep it (next: {-(-e // step) * step}), got {e}")
        raise RunDirError(f"run directory {run_dir!r} holds a run with {spacing}; an extended run keeps that spacing: "
                          + fix)
    return True


class TrainingMode(Protocol):
    name: str  # one of MODES
    turn: str  # "step" or "update"

    def start(self, trainer: Trainer) -> None:
        """A fresh run: the menageries' first entries."""

    def draw(self, trainer: Trainer, player: Player, k: int) -> list[tuple[Hashable, Any]]:
        """``k`` opponents (key, frozen policy) for ``player``'s games that are starting."""

    def opponent_kind(self, player: Player, key: Hashable) -> str:
        """What an opponent is, for ``matches.csv`` (``historical``, a player kind, ...)."""

    def remaining(self, player: Player) -> int | None:
        """How many more finished games count for ``player`` (``None``: no episode budget)."""

    def progress(self, player: Player) -> float:
        """The share of ``player``'s budget spent, in [0, 1] (a learner's step-size schedule reads it)."""

    def done(self, player: Player) -> bool:
        """Whether ``player`` has used its budget."""

    def game_finished(self, trainer: Trainer, player: Player, game: FinishedGame) -> None:
        """After a counted game was recorded: payoff, G, evaluation checkpoints."""

    def learner_updated(self, trainer: Trainer, player: Player, metrics: dict) -> dict:
        """After an update: the mode's rules; returns extra metric columns."""

    def menageries(self) -> dict[str, Menagerie]:
        """The menageries to persist, by folder relative to the run directory."""

    def menagerie_size(self, player: Player) -> int:
        """The size of the menagerie ``player``'s opponents come from (a metric)."""

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


@dataclass
class RunResult:
    run_dir: Path
    episodes: int
    updates: int
    seconds: float
    menagerie_size: int
    checkpoints: int
    extended_from: int | None = None  # the episode budget this resume extended (``budget_extension``)


class Trainer:
    """Runs ``players`` under ``mode`` into ``run``; resumable from the run directory's last commit."""

    def __init__(self, run: RunDir, config: Any, kit: Any, mode: TrainingMode, players: list[Player],
                 rng: np.random.Generator, run_config: dict, progress: bool = False, tensorboard: bool = False,
                 progress_total: int | None = None, progress_unit: str = "ep") -> None:
        self.run, self.config, self.kit, self.mode, self.players = run, config, kit, mode, players
        self.rng = rng
        self.run_config = {"mode": mode.name, **run_config}  # what defines the run (compared on resume, in config.yaml)
        self.progress, self.tensorboard = progress, tensorboard
        self.progress_total, self.progress_unit = progress_total, progress_unit
        self.matches: list[tuple] = []
        self.metrics: list[dict] = []
        self.trajectories: list[np.ndarray] = []
        self.seconds = 0.0
        self._writer = None
        self._bar = None
        self._texts = CommitTexts()  # each commit encodes only what is new since the last one
        self.extended_from: int | None = None  # the episode budget of a run this resume extends (budget_extension)

    # -- state --------------------------------------------------------------------------------
    def player(self, name: str) -> Player:
        return next(p for p in self.players if p.name == name)

    def state_dict(self) -> dict:
        return {
            "config": self.run_config, "mode": self.mode.state_dict(), "rng": self.rng.bit_generator.state,
            "players": {p.name: {**p.counters(), "learner": p.learner.state_dict()} for p in self.players},
            "menageries": {folder: m.index() for folder, m in self.mode.menageries().items()},
            "matches": self.matches, "metrics": self.metrics, "seconds": self.seconds,
            "trajectories": self._trajectory_array() if self.trajectories else None,
        }

    def save(self) -> None:
        """One commit: new policy files, then the state, then the manifest (rundir.RunDir.commit)."""
        files = []
        for folder, menagerie in self.mode.menageries().items():
            names = menagerie.save_policies(self.run.root / folder, self.kit.save_policy)
            files += [self.run.root / folder / n for n in names]
        self.run.commit(self._commit_state(), files)
        self.export()

    def _commit_state(self) -> dict:
        """``state_dict()`` with the parts that grow (match rows, menagerie entries, payoff pairs) as the
        texts ``CommitTexts`` keeps: the same state file, encoded only where it changed."""
        from selfplay.core.payoff import Payoff

        state = self.state_dict()
        live = [list(index["entries"]) for index in state["menageries"].values()]
        state["matches"] = self._texts.rows(self.matches)
        state["menageries"] = {folder: self._texts.index(index) for folder, index in state["menageries"].items()}
        mode_state = state["mode"]
        for key, value in list(mode_state.items()):
            if isinstance(getattr(self.mode, key, None), Payoff) and isinstance(value, dict) and "pairs" in value:
                live.append(value["pairs"])
                mode_state[key] = {**value, "pairs": self._texts.pairs(value["pairs"])}
        self._texts.prune(live)
        return state

    def export(self) -> None:
        """Rewrite the readable views of the committed state: indexes, tables, trajectories (the tables
        are appended to, ``CommitTexts.write_table``)."""
        from selfplay.utils.io import atomic_write

        for folder, menagerie in self.mode.menageries().items():
            self._texts.write_index(menagerie, self.run.root / folder)  # policy files are committed already
        self._texts.write_table(self.run.matches, list(MATCH_COLUMNS), self.matches)
        if self.metrics:
            columns = list(dict.fromkeys(k for row in self.metrics for k in row))
            self._texts.write_table(self.run.metrics, columns, [[row.get(c, "") for c in columns] for row in self.metrics])
        if self.trajectories:
            data = self._trajectory_array().astype(np.uint8)
            atomic_write(self.run.trajectories, lambda tmp: np.savez_compressed(open(tmp, "wb"), vectors=data),
                         durable=False)

    def _trajectory_array(self) -> np.ndarray:
        """Every recorded trajectory vector, one row each (the list is kept as one array plus the new rows)."""
        if len(self.trajectories) > 1:
            self.trajectories = [np.concatenate(self.trajectories)]
        return self.trajectories[0]

    def load(self) -> bool:
        """Resume from the last commit, if there is one; returns whether it did. A directory without a
        commit (new, or killed during its first commit) starts afresh; once the run is accepted, the
        strays of an interrupted save are removed (``RunDir.remove_strays``)."""
        self.run.check_kind()
        folders = list(self.mode.menageries())
        if not self.run.has_commit():
            if (self.run.root / "state.pt").is_file():
                raise RunDirError(f"run directory {str(self.run.root)!r} holds a run of an older format, selfplay-run/1 "
                                  "(a pickled state.pt without manifest.json), which this version does not read; start "
                                  "afresh with another directory")
            self.run.remove_strays(folders)  # a first commit that never completed
            return False
        state = self.run.load_commit()
        saved = state.get("config")
        if not isinstance(saved, dict):
            raise self.run._damaged("the committed state has no configuration")
        if "mode" not in saved:  # committed before runs recorded their mode: it is the resuming trainer's
            saved = state["config"] = {"mode": self.run_config["mode"], **saved}
        if budget_extension(str(self.run.root), saved, self.run_config):
            self.extended_from = saved["episodes"]
            saved = {**saved, **{k: self.run_config[k] for k in BUDGET}}
        was, now = run_identity(saved), run_identity(self.run_config)
        differ = [f"{k}: {was.get(k)!r} in the directory, {v!r} now" for k, v in now.items() if was.get(k) != v]
        differ += [f"{k}: {v!r} in the directory, absent now" for k, v in was.items() if k not in now]
        if differ:
            raise RunDirError(f"run directory {str(self.run.root)!r} holds a run with another configuration ("
                              + "; ".join(differ) + "); use the same settings to resume, or another --out")
        self.run.remove_strays(folders)
        if self.extended_from is not None or saved != self.run_config:  # a new budget or speed setting from now on
            self.run.write_config(self.run_config)
        menageries = {folder: self.run.committed_menagerie(state, folder, self.kit.load_policy) for folder in folders}
        self.mode.load_state_dict({**state["mode"], "menageries": menageries})
        for p in self.players:
            saved = state["players"][p.name]
            p.episodes, p.steps, p.updates = saved["episodes"], saved["steps"], saved["updates"]
            p.learner.load_state_dict(saved["learner"])
        self.rng.bit_generator.state = state["rng"]
        self.matches, self.metrics, self.seconds = list(state["matches"]), list(state["metrics"]), state["seconds"]
        self.trajectories = [] if state["trajectories"] is None else [state["trajectories"]]
        for i, p in enumerate(self.players):
            p.env = self.resumed_env(i, p)
        self.export()  # repairs exports that were cut or deleted after the commit
        return True

    def resumed_env(self, index: int, player: Player) -> Any:
        """Player ``index``'s environment on resume: its games restart from
        ``derive_seed(seed, ENV_RESUMED, index, updates)`` — a seed of the progress made, so a resumed run
        does not replay the first games of its fresh start (``ENV``'s seed). Trainers with an
        ``env_name`` rebuild the environment; others keep the one they have."""
        from selfplay.training import registry
        from selfplay.utils.seeding import Stream, derive_seed

        if getattr(self, "env_name", None) is None:
            return player.env
        seed = derive_seed(self.config.seed, Stream.ENV_RESUMED, index, player.updates)
        return registry.make_env(self.env_name, self.config.num_envs, seed=seed,
                                 device=getattr(self.config, "device", "cpu"))

    # -- the loop -----------------------------------------------------------------------------
    def train(self) -> RunResult:
        self.run.lock()
        try:
            with torch_threads(getattr(self.config, "torch_threads", None)):
                return self._train()
        finally:
            self.run.unlock()

    def _train(self) -> RunResult:
        resumed = self.load()
        if not resumed:
            self.run.write_config(self.run_config)
            self.mode.start(self)
        start = time.perf_counter() - self.seconds
        self._open_outputs()
        for p in self.players:
            p.runner = GameRunner(p.env, p.learner, _drawer(self, p), self.rng, seat=p.seat)
            p.runner.start()
        stepped = False
        while not all(self.mode.done(p) for p in self.players):
            stepped, updated = True, False
            for p in self.players:
                if self.mode.done(p):
                    continue
                if self.mode.turn == "update":
                    while not p.learner.ready():
                        self._step(p)
                else:
                    self._step(p)
                if p.learner.ready() and not self.mode.done(p):
                    self._update(p)
                    updated = True
            if updated:
                self.seconds = time.perf_counter() - start
                self.save()
        if stepped or not resumed:  # a finished run that is resumed commits nothing new
            self.seconds = time.perf_counter() - start
            self.save()
        self._close_outputs()
        sizes = self.mode.menageries()
        return RunResult(self.run.root, min(p.episodes for p in self.players), sum(p.updates for p in self.players),
                         self.seconds, sum(len(m) for f, m in sizes.items() if f.startswith("menagerie")),
                         sum(len(m) for f, m in sizes.items() if f.startswith("checkpoints")), self.extended_from)

    def _step(self, p: Player) -> None:
        finished = p.runner.step()
        p.steps += p.runner.n
        remaining = self.mode.remaining(p)
        counted = finished if remaining is None else finished[:remaining]
        for game in counted:
            self.matches.append((p.name, p.episodes, p.steps, game.opponent, self.mode.opponent_kind(p, game.opponent),
                                 game.seat, game.score))
            if game.trajectory is not None:
                self.trajectories.append(game.trajectory[None])
            p.episodes += 1
            self.mode.game_finished(self, p, game)
        if finished:
            if self._writer is not None:
                self._writer.add_scalar(f"{p.name}/win_rate", float(np.mean([g.score for g in finished])), p.episodes)
            if self._bar is not None and self.progress_unit == "ep":
                self._bar.update(len(counted))
            p.runner.restart([g.game for g in finished])
        if self._bar is not None and self.progress_unit == "step":
            self._bar.update(p.runner.n)

    def _update(self, p: Player) -> None:
        if isinstance(p.learner, ScheduledLearner):
            p.learner.set_progress(min(1.0, self.mode.progress(p)))
        metrics = p.learner.update()
        p.updates += 1
        extra = self.mode.learner_updated(self, p, metrics)
        recent = [m[6] for m in self.matches[-4 * RECENT_GAMES:] if m[0] == p.name][-RECENT_GAMES:]
        row = {"player": p.name, "update": p.updates, "episode": p.episodes, "step": p.steps,
               "menagerie_size": self.mode.menagerie_size(p), "win_rate": float(np.mean(recent)) if recent else 0.5,
               **extra, **{k: float(v) for k, v in metrics.items()}}
        self.metrics.append(row)
        if self._writer is not None:
            for key, value in row.items():
                if key != "player":
                    self._writer.add_scalar(f"{p.name}/{key}", value, p.steps)

    def _open_outputs(self) -> None:
        if self.progress:
            from tqdm import tqdm

            done = (sum(p.episodes for p in self.players) if self.progress_unit == "ep"
                    else sum(p.steps for p in self.players))
            self._bar = tqdm(total=self.progress_total, initial=done, unit=self.progress_unit, leave=False)
        if self.tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except Exception:  # tensorboard missing: the CSVs still hold every curve
                return
            self._writer = SummaryWriter(str(self.run.tensorboard))

    def _close_outputs(self) -> None:
        if self._bar is not None:
            self._bar.close()
        if self._writer is not None:
            self._writer.close()


def _drawer(trainer: Trainer, player: Player) -> Callable[[int], list]:
    return lambda k: trainer.mode.draw(trainer, player, k)
