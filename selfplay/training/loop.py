"""The single-learner mode: one learner trained by self-play under one scheme (docs/design/selfplay.md §1).

``num_envs`` games run at once. Each game draws its opponent from Ω when it starts and seats the
learner at random; opponents act grouped by policy object (one forward pass per group). After every
step the learner records its reward; when its horizon is full it updates. Every finished game is
scored for the learner (1 win, ½ draw, 0 loss), recorded in the payoff table and matches.csv, and
then G curates the menagerie — in the order games finished. Evaluation checkpoints (separate from the
menagerie) are taken every ``episodes / checkpoints`` episodes. The loop itself, the run directory's
commits and resume are the trainer core's (``selfplay.training.trainer``); this module is the mode.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from selfplay.core.menagerie import Menagerie
from selfplay.core.payoff import Payoff
from selfplay.core.schemes import PSRO, LearnerInfo, Scheme, make_scheme
from selfplay.training.registry import agent_kit, check_env_name, env_for_agent, is_two_sided, make_env
from selfplay.training.rundir import RunDir
from selfplay.training.trainer import Player, RunResult, Trainer
from selfplay.utils.checks import MAX_NUM_ENVS, check_int, check_seed
from selfplay.utils.seeding import Stream, derive_seed

LEARNER_KEY = "learner"


@dataclass
class TrainConfig:
    """One training run: a learner trained by self-play under one scheme."""

    env: str = "rirrps"  # environment: rirrps | biased-rps | rpsls | smac:MAP[@sc2] | smacv2:SCENARIO | openspiel:GAME[(param=value,...)]
    agent: str = "ppo-mlp"  # ppo-mlp | ppo-rnn (a recurrent cell: --rnn-cell) | alphastar (SMAC only) | mappo (SMAC and SMACv2)
    scheme: str = "delta-uniform:delta=0"  # scheme spec, e.g. delta-limit-uniform:delta=0.5
    episodes: int = 10_000  # episodes to train (the budget)
    num_envs: int = 64  # games played at once
    seed: int = 0  # seed of the run (same seed, same machine: same results)
    checkpoints: int = 100  # evaluation checkpoints, evenly spaced over the run (a resume to more episodes keeps the spacing)
    agent_settings: dict = field(default_factory=dict)  # overrides of the agent's settings dataclass (PPOConfig:
    # horizon, minibatch_size, ...; alphastar: sl_checkpoint and AlphaStarRLConfig fields); checked at construction
    device: str = "cpu"
    progress: bool = False  # show a progress bar (display only: not part of the run)
    tensorboard: bool = True
    torch_threads: int = 1  # small networks run fastest single-threaded (and runs can go in parallel)

    DISPLAY_ONLY = ("progress", "tensorboard", "torch_threads")  # not part of what defines a run

    def __post_init__(self) -> None:
        check_env_name(self.env)
        if not isinstance(make_scheme(self.scheme, defer_evaluator=True), Scheme):  # validates the spec string too
            raise ValueError(f"scheme {self.scheme!r} trains several learners: use `selfplay league` (LeagueTrainer)")
        agent_kit(self.agent)
        env_for_agent(self.env, self.agent)
        self.settings()  # unknown or invalid agent settings fail here, naming the setting
        for name in ("episodes", "num_envs", "checkpoints"):
            v = getattr(self, name)
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        check_int(self.num_envs, "num_envs", 1, MAX_NUM_ENVS)
        check_seed(self.seed)
        if self.checkpoints > self.episodes:
            raise ValueError(f"checkpoints ({self.checkpoints}) must not exceed episodes ({self.episodes})")

    def settings(self):
        """The agent's typed settings: its dataclass (``PPOConfig``, ``AlphaStarAgentSettings``) with the
        environment's defaults and ``agent_settings`` applied."""
        return agent_kit(self.agent, self.env).settings(**self.agent_settings)

    def run_config(self) -> dict:
        """What defines the run, with the agent's resolved settings: compared on resume, written to config.yaml."""
        return {**{k: v for k, v in asdict(self).items() if k not in self.DISPLAY_ONLY},
                "resolved_agent_settings": asdict(self.settings())}


class SelfPlayMode:
    """One learner, one scheme ⟨Ω, G⟩, one menagerie; evaluation checkpoints every episodes/checkpoints."""

    name = "self-play"
    turn = "step"

    def __init__(self, config: TrainConfig, scheme: Scheme, psro_evaluator) -> None:
        self.config = config
        self.scheme = scheme
        if isinstance(scheme, PSRO) and scheme.evaluate is None:
            scheme.evaluate = psro_evaluator
        self.menagerie = Menagerie()
        self.checkpoints = Menagerie()
        self.payoff = Payoff()

    def info(self, p: Player) -> LearnerInfo:
        return LearnerInfo(name=p.name, episode=p.episodes, step=p.steps,
                           weight_version=p.learner.weight_version, snapshot=p.learner.snapshot)

    def start(self, trainer: Trainer) -> None:
        p = trainer.players[0]
        self.menagerie.add(p.learner.snapshot(), step=0, player=p.name, episode=0, weight_version=p.learner.weight_version)

    def draw(self, trainer: Trainer, p: Player, k: int) -> list:
        return [(e.id, e.policy) for e in self.scheme.sample_many(self.menagerie, k, self.payoff, trainer.rng)]

    def opponent_kind(self, p: Player, key) -> str:
        return "historical"

    def remaining(self, p: Player) -> int:
        return self.config.episodes - p.episodes

    def progress(self, p: Player) -> float:
        return p.episodes / self.config.episodes

    def done(self, p: Player) -> bool:
        return p.episodes >= self.config.episodes

    def game_finished(self, trainer: Trainer, p: Player, game) -> None:
        self.payoff.update(p.name, game.opponent, game.score)
        curation = self.scheme.curate(self.menagerie, self.info(p), self.payoff, game.score)
        if curation.reset_to is not None:
            p.learner.restore(curation.reset_to)
        every = self.config.episodes / self.config.checkpoints
        if p.episodes >= (len(self.checkpoints) + 1) * every - 1e-9:
            self.checkpoints.add(p.learner.snapshot(), step=p.steps, episode=p.episodes,
                                 weight_version=p.learner.weight_version)

    def learner_updated(self, trainer: Trainer, p: Player, metrics: dict) -> dict:
        return {}

    def menageries(self) -> dict[str, Menagerie]:
        return {"menagerie": self.menagerie, "checkpoints": self.checkpoints}

    def menagerie_size(self, p: Player) -> int:
        return len(self.menagerie)

    def state_dict(self) -> dict:
        return {"scheme": self.scheme.state_dict(), "payoff": self.payoff.to_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.scheme.load_state_dict(state["scheme"])
        self.payoff = Payoff.from_dict(state["payoff"])
        self.menagerie, self.checkpoints = state["menageries"]["menagerie"], state["menageries"]["checkpoints"]


class SelfPlayTrainer(Trainer):
    """One run: environment, learner, scheme, menagerie, payoff and run directory."""

    def __init__(self, config: TrainConfig, out: str | Path, scheme: Scheme | None = None) -> None:
        if is_two_sided(config.env):
            raise ValueError(f"{config.env!r} is asymmetric: use selfplay.training.two_sided.TwoSidedTrainer (or train())")
        kit = agent_kit(config.agent, config.env)
        self.env_name = env_for_agent(config.env, config.agent)  # what the agent plays (registry)
        env = make_env(self.env_name, config.num_envs, seed=derive_seed(config.seed, Stream.ENV, 0), device=config.device)
        learner = kit.make_learner(env, derive_seed(config.seed, Stream.LEARNER, 0), **config.agent_settings)
        mode = SelfPlayMode(config, scheme if scheme is not None else make_scheme(config.scheme, defer_evaluator=True),
                            self._psro_evaluator)
        super().__init__(RunDir(out).create(), config, kit, mode, [Player(LEARNER_KEY, learner, env)],
                         np.random.default_rng(derive_seed(config.seed, Stream.SAMPLER)), config.run_config(),
                         progress=config.progress,
                         tensorboard=config.tensorboard, progress_total=config.episodes)

    # the single-learner view of the run, as the evaluation code and tests read it
    learner = property(lambda self: self.players[0].learner)
    env = property(lambda self: self.players[0].env)
    scheme = property(lambda self: self.mode.scheme)
    menagerie = property(lambda self: self.mode.menagerie)
    checkpoints = property(lambda self: self.mode.checkpoints)
    payoff = property(lambda self: self.mode.payoff)
    episodes = property(lambda self: self.players[0].episodes)
    steps = property(lambda self: self.players[0].steps)
    updates = property(lambda self: self.players[0].updates)

    def _psro_evaluator(self, entry, opponents, matches):
        """PSRO's meta-game entries: ``entry``'s win rate (draws ½) against each opponent, both seats
        (``MatchEvaluator``, seeded from the run's RNG so that a resumed run draws on)."""
        from selfplay.training.adapters import MatchEvaluator

        evaluate = MatchEvaluator(self.env_name, seed=int(self.rng.integers(2**31)),
                                  stack_policies=self.kit.stack_policies, device=self.config.device)
        return evaluate(entry, opponents, matches)


def train(config: TrainConfig, out: str | Path) -> RunResult:
    """Train (or resume) one run into ``out`` (a learner per side on asymmetric maps)."""
    if is_two_sided(config.env):
        from selfplay.training.two_sided import TwoSidedTrainer

        return TwoSidedTrainer(config, out).train()
    return SelfPlayTrainer(config, out).train()
