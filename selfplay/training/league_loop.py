"""Training AlphaStar's league: several learners sharing one menagerie and payoff (docs/design/selfplay.md §3).

Every player (main players, main exploiters, league exploiters) is a learner with its own batch of
games. Players take turns, one rollout each: every game draws its opponent with the league's
matchmaking for that player (``AlphaStarLeague.get_match``) — a historical checkpoint (an entry id)
or an active player (its current frozen snapshot) — and every finished game is recorded in the
shared, decayed payoff table. After each of its updates a player is offered a checkpoint by the
league's rules (``min_steps``/``max_steps`` in learner steps, win-rate thresholds) and exploiters are
reset to the starting ("supervised") policy. On games without demonstrations the starting policy is
the initial policy shared by all players.

Matchmaking is logged as it happens: for every draw, the opponent's kind is counted, and the
probability the rules gave that kind at that moment (from the explicit ``league.distribution``) is
accumulated, so ``matchmaking.csv`` compares measured frequencies with the rules' expectations.
The league's evaluation and ``report.md`` are the evaluation layer's (``selfplay.evaluation.league``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from selfplay.core.league import AlphaStarLeague, LeagueConfig
from selfplay.core.menagerie import Menagerie
from selfplay.core.schemes import LearnerInfo, parse_spec
from selfplay.training.registry import agent_kit, check_env_name, env_for_agent, make_env
from selfplay.training.rundir import RunDir
from selfplay.training.trainer import Player, Trainer
from selfplay.utils.checks import MAX_NUM_ENVS, check_int, check_seed
from selfplay.utils.seeding import Stream, derive_seed


@dataclass
class LeagueTrainConfig:
    env: str = "rirrps"  # environment: rirrps | biased-rps | rpsls | smac:MAP[@sc2] | smacv2:SCENARIO | openspiel:GAME[(param=value,...)]
    agent: str = "ppo-mlp"  # ppo-mlp | ppo-rnn (a recurrent cell: --rnn-cell) | alphastar (SMAC only) | mappo (SMAC and SMACv2)
    league: str = "league:main=1,main_exploiters=1,league_exploiters=2"
    steps: int = 100_000  # learner steps (transitions) per player
    min_steps: int = 10_000  # no checkpoint before this many learner steps since the last (the paper: 2e9 frames)
    max_steps: int = 20_000  # a checkpoint after this many learner steps regardless (the paper: 4e9 frames)
    num_envs: int = 64  # games played at once per player
    seed: int = 0  # seed of the run (same seed, same machine: same results)
    matches: int = 25  # matches per pair in the final evaluation of the menagerie
    agent_settings: dict = field(default_factory=dict)  # overrides of the agent's settings dataclass (as TrainConfig's)
    torch_threads: int = 1
    progress: bool = False
    tensorboard: bool = True

    DISPLAY_ONLY = ("progress", "tensorboard", "torch_threads")  # not part of what defines a run

    def settings(self):
        """The agent's typed settings (as ``TrainConfig.settings``)."""
        return agent_kit(self.agent, self.env).settings(**self.agent_settings)

    def run_config(self) -> dict:
        """What defines the run, with the agent's resolved settings: compared on resume, written to config.yaml."""
        return {**{k: v for k, v in asdict(self).items() if k not in self.DISPLAY_ONLY},
                "resolved_agent_settings": asdict(self.settings())}

    def __post_init__(self) -> None:
        check_env_name(self.env)
        agent_kit(self.agent)
        env_for_agent(self.env, self.agent)
        self.settings()  # unknown or invalid agent settings fail here, naming the setting
        name, _ = parse_spec(self.league)
        if name != "league":
            raise ValueError(f"league must be a spec like 'league:main=1,main_exploiters=1', got {self.league!r}")
        for label in ("steps", "num_envs", "matches"):
            check_int(getattr(self, label), label, 1, MAX_NUM_ENVS if label == "num_envs" else None)
        check_seed(self.seed)

    def league_config(self) -> LeagueConfig:
        _, kwargs = parse_spec(self.league)
        kwargs.setdefault("min_steps", self.min_steps)
        kwargs.setdefault("max_steps", self.max_steps)
        return LeagueConfig.from_kwargs(kwargs)


def opponent_kind(league: AlphaStarLeague, key: Hashable) -> str:
    """``historical:<parent kind>`` for a checkpoint, the player kind for an active player."""
    if isinstance(key, str):
        return league.player(key).kind
    return f"historical:{league.menagerie[key].tags['kind']}"


class LeagueMode:
    """Every player a learner; opponents by the league's matchmaking; the league's checkpoint and reset
    rules after each update. Players take turns, one rollout (until their learner updates) each."""

    name = "league"
    turn = "update"

    def __init__(self, config: LeagueTrainConfig, league: AlphaStarLeague, sl_policy: Any) -> None:
        self.config, self.league, self.sl_policy = config, league, sl_policy
        self.drawn: dict[tuple[str, str], float] = defaultdict(float)  # (player, opponent kind) -> count
        self.expected: dict[tuple[str, str], float] = defaultdict(float)  # ... -> Σ rule probability
        self._learners: dict[str, Any] = {}

    def start(self, trainer: Trainer) -> None:
        self.league.start(self.sl_policy)
        for p in trainer.players:
            p.learner.restore(self.sl_policy)

    def _policy_of(self, key: Hashable) -> Any:
        return self._learners[key].snapshot() if isinstance(key, str) else self.league.menagerie[key].policy

    def draw(self, trainer: Trainer, p: Player, k: int) -> list:
        self._learners = {q.name: q.learner for q in trainer.players}
        by_kind: dict[str, float] = defaultdict(float)
        for key, prob in self.league.distribution(p.name).items():
            by_kind[opponent_kind(self.league, key)] += prob
        out = []
        for _ in range(k):
            key = self.league.get_match(p.name, trainer.rng)
            self.drawn[(p.name, opponent_kind(self.league, key))] += 1
            for kind, prob in by_kind.items():
                self.expected[(p.name, kind)] += prob
            out.append((key, self._policy_of(key)))
        return out

    def opponent_kind(self, p: Player, key: Hashable) -> str:
        return opponent_kind(self.league, key)

    def remaining(self, p: Player) -> None:
        return None  # the budget is in learner steps

    def progress(self, p: Player) -> float:
        return p.steps / self.config.steps

    def done(self, p: Player) -> bool:
        return p.steps >= self.config.steps

    def game_finished(self, trainer: Trainer, p: Player, game) -> None:
        self.league.record(p.name, game.opponent, game.score)

    def learner_updated(self, trainer: Trainer, p: Player, metrics: dict) -> dict:
        info = LearnerInfo(name=p.name, episode=p.episodes, step=p.steps, weight_version=p.learner.weight_version,
                           snapshot=p.learner.snapshot)
        curation = self.league.step(p.name, info, trainer.rng)
        if curation.reset_to is not None:
            p.learner.restore(curation.reset_to)
        return {"checkpoint": int(bool(curation.added)), "reset": int(curation.reset_to is not None)}

    def menageries(self) -> dict[str, Menagerie]:
        return {"menagerie": self.league.menagerie}

    def menagerie_size(self, p: Player) -> int:
        return len(self.league.menagerie)

    def matchmaking_rows(self) -> list[tuple]:
        rows = []
        for name in self.league.players:
            total = sum(v for (q, _), v in self.drawn.items() if q == name)
            kinds = sorted({k for (q, k) in list(self.drawn) + list(self.expected) if q == name})
            for kind in kinds:
                drawn = self.drawn.get((name, kind), 0.0)
                rows.append((name, kind, int(drawn), round(drawn / total, 4) if total else 0.0,
                             round(self.expected.get((name, kind), 0.0) / total, 4) if total else 0.0))
        return rows

    def state_dict(self) -> dict:
        return {"league": self.league.state_dict(), "drawn": dict(self.drawn), "expected": dict(self.expected)}

    def load_state_dict(self, state: dict) -> None:
        self.league.menagerie = state["menageries"]["menagerie"]
        self.league.load_state_dict(state["league"])
        self.league.sl_policy = self.sl_policy
        self.drawn = defaultdict(float, state["drawn"])
        self.expected = defaultdict(float, state["expected"])


class LeagueTrainer(Trainer):
    def __init__(self, config: LeagueTrainConfig, out: str | Path) -> None:
        kit = agent_kit(config.agent, config.env)
        league = AlphaStarLeague(config.league_config(), name=config.league)
        self.env_name = env_for_agent(config.env, config.agent)
        envs = {name: make_env(self.env_name, config.num_envs, seed=derive_seed(config.seed, Stream.ENV, i))
                for i, name in enumerate(league.players)}
        players = [Player(name, kit.make_learner(envs[name], derive_seed(config.seed, Stream.LEARNER, i),
                                                 **config.agent_settings), envs[name])
                   for i, name in enumerate(league.players)]
        sl_policy = kit.make_learner(next(iter(envs.values())), derive_seed(config.seed, Stream.START_POLICY),
                                     **config.agent_settings).snapshot()
        super().__init__(RunDir(out, kind="league").create(), config, kit, LeagueMode(config, league, sl_policy), players,
                         np.random.default_rng(derive_seed(config.seed, Stream.SAMPLER)), config.run_config(), progress=config.progress,
                         tensorboard=config.tensorboard, progress_total=config.steps * len(players), progress_unit="step")

    league = property(lambda self: self.mode.league)
    sl_policy = property(lambda self: self.mode.sl_policy)
    learners = property(lambda self: {p.name: p.learner for p in self.players})
    steps = property(lambda self: {p.name: p.steps for p in self.players})

    def matchmaking_rows(self) -> list[tuple]:
        return self.mode.matchmaking_rows()

    def export(self) -> None:
        super().export()
        self.run.write_rows(self.run.root / "matchmaking.csv", ("player", "opponent_kind", "drawn", "measured", "expected"),
                            self.mode.matchmaking_rows())
