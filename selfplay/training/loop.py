"""The generic self-play loop (spec-selfplay §1, architecture.md "Self-play loop").

``num_envs`` games run at once. Each game draws its opponent from Ω when it starts and seats the
learner at random; opponents act grouped by policy object (one forward pass per group). After every
step the learner records its reward; when its horizon is full it updates. Every finished game is
scored for the learner (1 win, ½ draw, 0 loss), recorded in the payoff table and matches.csv, and
then G curates the menagerie — in the order games finished. Evaluation checkpoints (separate from the
menagerie) are taken every ``episodes / checkpoints`` episodes. After each update the whole run state
is written atomically to the run directory, so a killed run resumes from its last update: games in
flight at the kill are abandoned (they were never counted), and the run ends with exactly
``episodes`` counted episodes.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from selfplay.training.games import GameRunner
from selfplay.core.menagerie import Menagerie
from selfplay.core.payoff import Payoff
from selfplay.training.registry import agent_kit, check_env_name, env_for_agent, make_env
from selfplay.training.rundir import MATCH_COLUMNS, RunDir, save_torch
from selfplay.core.schemes import PSRO, LearnerInfo, Scheme, make_scheme

LEARNER_KEY = "learner"


@dataclass
class TrainConfig:
    """One training run: a learner trained by self-play under one scheme."""

    env: str = "rirrps"
    agent: str = "ppo-mlp"
    scheme: str = "delta-uniform:delta=0"
    episodes: int = 10_000
    num_envs: int = 64
    seed: int = 0
    checkpoints: int = 100  # evaluation checkpoints, evenly spaced over the run
    ppo: dict = field(default_factory=dict)  # overrides of the agent's config (horizon, minibatch_size, ...)
    device: str = "cpu"
    progress: bool = False
    tensorboard: bool = True
    torch_threads: int = 1  # small networks run fastest single-threaded (and runs can go in parallel)

    def __post_init__(self) -> None:
        check_env_name(self.env)
        if not isinstance(make_scheme(self.scheme, defer_evaluator=True), Scheme):  # validates the spec string too
            raise ValueError(f"scheme {self.scheme!r} trains several learners: use `selfplay league` (LeagueTrainer)")
        agent_kit(self.agent)
        env_for_agent(self.env, self.agent)
        for name in ("episodes", "num_envs", "checkpoints"):
            v = getattr(self, name)
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if self.checkpoints > self.episodes:
            raise ValueError(f"checkpoints ({self.checkpoints}) must not exceed episodes ({self.episodes})")


@dataclass
class RunResult:
    run_dir: Path
    episodes: int
    updates: int
    seconds: float
    menagerie_size: int
    checkpoints: int


class SelfPlayTrainer:
    """Owns one run: environment, learner, scheme, menagerie, payoff and run directory."""

    def __init__(self, config: TrainConfig, out: str | Path, scheme: Scheme | None = None) -> None:
        if is_two_sided(config.env):
            raise ValueError(f"{config.env!r} is asymmetric: use selfplay.training.two_sided.TwoSidedTrainer (or train())")
        self.config = config
        self.run = RunDir(out).create()
        self.kit = agent_kit(config.agent, config.env)
        self.env_name = env_for_agent(config.env, config.agent)  # what the agent plays (registry)
        self.env = make_env(self.env_name, config.num_envs, seed=config.seed, device=config.device)
        self.learner = self.kit.make_learner(self.env, config.seed, **config.ppo)
        self.scheme = scheme if scheme is not None else make_scheme(config.scheme, defer_evaluator=True)
        if isinstance(self.scheme, PSRO) and self.scheme.evaluate is None:
            self.scheme.evaluate = self._psro_evaluator
        self.menagerie = Menagerie()
        self.checkpoints = Menagerie()
        self.payoff = Payoff()
        self.rng = np.random.default_rng(config.seed)
        self.episodes = 0
        self.steps = 0
        self.updates = 0
        self.seconds = 0.0
        self.matches: list[tuple] = []
        self.metrics: list[dict] = []
        self.trajectories: list[np.ndarray] = []
        self._writer = None

    # -- resumable state --------------------------------------------------------------------
    def _learner_info(self) -> LearnerInfo:
        return LearnerInfo(name=LEARNER_KEY, episode=self.episodes, step=self.steps,
                           weight_version=self.learner.weight_version, snapshot=self.learner.snapshot)

    def save(self) -> None:
        """Write every part of the run; state.pt last, so it never points at missing files."""
        self.menagerie.save(self.run.menagerie, self.kit.save_policy)
        self.checkpoints.save(self.run.checkpoints, self.kit.save_policy)
        self.run.write_rows(self.run.matches, MATCH_COLUMNS, self.matches)
        if self.metrics:
            columns = list(dict.fromkeys(k for row in self.metrics for k in row))
            self.run.write_rows(self.run.metrics, columns, ([row.get(c, "") for c in columns] for row in self.metrics))
        if self.trajectories:
            from selfplay.utils.io import atomic_write

            data = np.concatenate(self.trajectories).astype(np.uint8)
            atomic_write(self.run.trajectories, lambda tmp: np.savez_compressed(open(tmp, "wb"), vectors=data))
        save_torch(self.run.state, {
            "learner": self.learner.state_dict(), "scheme": self.scheme.state_dict(), "payoff": self.payoff.to_dict(),
            "episodes": self.episodes, "steps": self.steps, "updates": self.updates, "seconds": self.seconds,
            "rng": self.rng.bit_generator.state, "n_matches": len(self.matches), "n_metrics": len(self.metrics),
            "n_trajectories": sum(len(t) for t in self.trajectories), "config": asdict(self.config),
        })

    def load(self) -> bool:
        """Resume from ``state.pt`` if the run directory has one; returns whether it did."""
        if not self.run.state.exists():
            return False
        import csv

        import torch

        state = torch.load(self.run.state, weights_only=False)
        if state["config"] != asdict(self.config):
            raise ValueError(f"run directory {self.run.root} holds a run with another configuration; "
                             "use a new --out or the same settings to resume")
        self.learner.load_state_dict(state["learner"])
        self.scheme.load_state_dict(state["scheme"])
        self.payoff = Payoff.from_dict(state["payoff"])
        self.menagerie = Menagerie.load(self.run.menagerie, self.kit.load_policy)
        self.checkpoints = Menagerie.load(self.run.checkpoints, self.kit.load_policy)
        self.episodes, self.steps, self.updates = state["episodes"], state["steps"], state["updates"]
        self.seconds = state["seconds"]
        self.rng.bit_generator.state = state["rng"]
        with open(self.run.matches, newline="") as f:
            rows = list(csv.reader(f))[1:]
        self.matches = [(int(e), l, int(o), int(s), float(sc)) for e, l, o, s, sc in rows[: state["n_matches"]]]
        if self.run.metrics.exists() and state["n_metrics"]:
            with open(self.run.metrics, newline="") as f:
                self.metrics = [dict(r) for r in csv.DictReader(f)][: state["n_metrics"]]
        if state["n_trajectories"]:
            self.trajectories = [np.load(self.run.trajectories)["vectors"][: state["n_trajectories"]]]
        # the environment restarts its games from a seed derived from the progress made
        self.env = make_env(self.env_name, self.config.num_envs, seed=self.config.seed + 1_000_003 * self.updates,
                            device=self.config.device)
        return True

    # -- PSRO's meta-game -------------------------------------------------------------------
    def _psro_evaluator(self, entry, opponents, matches):
        from selfplay.training.matches import play_matches

        policies = [entry.policy] + [o.policy for o in opponents]
        pairs = np.array([[0, j + 1] for j in range(len(opponents))])
        scores = play_matches(self.env_name, policies, pairs, matches, seed=int(self.rng.integers(2**31)),
                              stack_policies=self.kit.stack_policies, device=self.config.device)
        return scores.mean(axis=1)

    # -- the loop ---------------------------------------------------------------------------
    def train(self) -> RunResult:
        import torch

        cfg = self.config
        torch.set_num_threads(cfg.torch_threads)
        resumed = self.load()
        if not resumed:
            self.run.write_config(cfg)
            self.menagerie.add(self.learner.snapshot(), step=0, player=LEARNER_KEY, episode=0,
                               weight_version=self.learner.weight_version)
        checkpoint_every = cfg.episodes / cfg.checkpoints
        start = time.perf_counter() - self.seconds
        bar = _progress(cfg, self.episodes)
        if cfg.tensorboard:
            self._writer = _tensorboard(self.run.tensorboard)

        def draw(k: int):
            return [(e.id, e.policy) for e in self.scheme.sample_many(self.menagerie, k, self.payoff, self.rng)]

        runner = GameRunner(self.env, self.learner, draw, self.rng)
        runner.start()
        while self.episodes < cfg.episodes:
            finished = runner.step()
            self.steps += runner.n
            for game in finished[: cfg.episodes - self.episodes]:
                self.payoff.update(LEARNER_KEY, game.opponent, game.score)
                self.matches.append((self.episodes, LEARNER_KEY, game.opponent, game.seat, game.score))
                if game.trajectory is not None:
                    self.trajectories.append(game.trajectory[None])
                self.episodes += 1
                curation = self.scheme.curate(self.menagerie, self._learner_info(), self.payoff, game.score)
                if curation.reset_to is not None:
                    self.learner.restore(curation.reset_to)
                if self.episodes >= (len(self.checkpoints) + 1) * checkpoint_every - 1e-9:
                    self.checkpoints.add(self.learner.snapshot(), step=self.steps, episode=self.episodes,
                                         weight_version=self.learner.weight_version)
            if finished:
                if self._writer is not None:
                    self._writer.add_scalar("selfplay/win_rate", float(np.mean([g.score for g in finished])), self.episodes)
                    self._writer.add_scalar("selfplay/menagerie_size", len(self.menagerie), self.episodes)
                if bar is not None:
                    bar.update(min(len(finished), cfg.episodes - bar.n))
                runner.restart([g.game for g in finished])

            if self.learner.ready() and self.episodes < cfg.episodes:
                metrics = self.learner.update()
                self.updates += 1
                row = {"update": self.updates, "episode": self.episodes, "step": self.steps,
                       "menagerie_size": len(self.menagerie),
                       "win_rate": float(np.mean([m[4] for m in self.matches[-200:]])) if self.matches else 0.5,
                       **{k: float(v) for k, v in metrics.items()}}
                self.metrics.append(row)
                if self._writer is not None:
                    for key, value in row.items():
                        self._writer.add_scalar(f"train/{key}", value, self.steps)
                self.seconds = time.perf_counter() - start
                self.save()

        self.seconds = time.perf_counter() - start
        self.save()
        if bar is not None:
            bar.close()
        if self._writer is not None:
            self._writer.close()
        return RunResult(self.run.root, self.episodes, self.updates, self.seconds, len(self.menagerie), len(self.checkpoints))


def is_two_sided(env: str) -> bool:
    """Asymmetric SMAC maps need a learner per side (``selfplay.training.two_sided``)."""
    from selfplay.training.registry import is_smac, smac_map, smac_map_is_symmetric

    return is_smac(env) and not smac_map_is_symmetric(smac_map(env))


def train(config: TrainConfig, out: str | Path) -> RunResult:
    """Train (or resume) one run into ``out`` (a learner per side on asymmetric maps)."""
    if is_two_sided(config.env):
        from selfplay.training.two_sided import TwoSidedTrainer

        return TwoSidedTrainer(config, out).train()
    return SelfPlayTrainer(config, out).train()


def _progress(cfg: TrainConfig, initial: int):
    if not cfg.progress:
        return None
    from tqdm import tqdm

    return tqdm(total=cfg.episodes, initial=initial, desc=cfg.scheme, unit="ep", leave=False)


def _tensorboard(path: Path):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except Exception:  # tensorboard missing: the CSVs still hold every curve
        return None
    return SummaryWriter(str(path))
