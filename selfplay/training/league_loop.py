"""Training AlphaStar's league: several learners sharing one menagerie and payoff (spec-selfplay §3).

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
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Hashable

import numpy as np

from selfplay.core.league import AlphaStarLeague, LeagueConfig
from selfplay.core.menagerie import Menagerie
from selfplay.core.schemes import LearnerInfo, parse_spec
from selfplay.training.registry import agent_kit, check_env_name, env_for_agent, is_openspiel, is_smac, make_env
from selfplay.training.rundir import RunDir
from selfplay.training.trainer import Player, Trainer
from selfplay.utils.seeding import derive_seed


@dataclass
class LeagueTrainConfig:
    env: str = "rirrps"  # environment: rirrps | biased-rps | rpsls | smac:MAP[@sc2] | openspiel:GAME[(param=value,...)]
    agent: str = "ppo-mlp"  # ppo-mlp | ppo-rnn (a recurrent cell: --rnn-cell) | alphastar (SMAC only)
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
            if getattr(self, label) < 1:
                raise ValueError(f"{label} must be ≥ 1, got {getattr(self, label)!r}")

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
        envs = {name: make_env(self.env_name, config.num_envs, seed=derive_seed(config.seed, 101, i))
                for i, name in enumerate(league.players)}
        players = [Player(name, kit.make_learner(envs[name], config.seed + 1 + i, **config.agent_settings), envs[name])
                   for i, name in enumerate(league.players)]
        sl_policy = kit.make_learner(next(iter(envs.values())), config.seed, **config.agent_settings).snapshot()
        super().__init__(RunDir(out).create(), config, kit, LeagueMode(config, league, sl_policy), players,
                         np.random.default_rng(config.seed), config.run_config(), progress=config.progress,
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


VS_START, VS_SCRIPTED = "vs starting policy", "vs scripted AI"


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
                                    seed=cfg.seed + 1, stack_policies=kit.stack_policies).mean(axis=1)}
    if is_smac(cfg.env):
        rates[VS_SCRIPTED] = scripted_win_rates(trainer.env_name, policies, 50, seed=cfg.seed,
                                                stack_policies=kit.stack_policies)
    return rates


def evaluate_league(trainer: LeagueTrainer, blocks: Any = None) -> dict:
    """Winrate matrix and maxent Nash of the league's historicals; figures and ``report.md``
    (``blocks``: a ``RayExecutor`` that plays the matrix's further blocks as tasks, ``play_matches``)."""
    from selfplay.analysis import plots
    from selfplay.training.matches import evaluate_population
    from selfplay.utils.io import atomic_write_text

    cfg = trainer.config
    entries = trainer.league.menagerie.entries
    run = trainer.run
    lines = [f"# League: `{cfg.league}` on `{cfg.env}` with `{cfg.agent}`", "",
             f"{cfg.steps} learner steps per player; checkpoint rule min/max steps {cfg.min_steps}/{cfg.max_steps}; "
             f"{len(entries)} historical checkpoints; {trainer.seconds:.0f} s of training.", "",
             "## Historicals per player", ""]
    lines += [f"- `{n}` ({p.kind}): {len(trainer.league.historicals(parent=n))} checkpoints, {trainer.steps[n]} steps"
              for n, p in trainer.league.players.items()]
    lines += ["", "## Matchmaking: measured frequency vs the rules' expectation at each draw", "",
              "| player | opponent kind | drawn | measured | expected |", "|---|---|---|---|---|"]
    lines += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.3f} | {r[4]:.3f} |" for r in trainer.matchmaking_rows()]
    summary = {"historicals": len(entries)}
    if len(entries) >= 2:
        ev = evaluate_population(trainer.env_name, [e.policy for e in entries], cfg.matches, seed=cfg.seed,
                                 stack_policies=trainer.kit.stack_policies, ids=[e.id for e in entries], blocks=blocks)
        run.evaluation.mkdir(parents=True, exist_ok=True)
        np.savez(run.evaluation / "winrate.npz", W=ev.W, counts=ev.counts, nash=ev.nash, ids=np.array(ev.ids))
        labels = [f"{e.tags['parent']}@{e.step}" for e in entries]
        plots.plot_winrate_matrix(ev.W, ev.nash, ids=labels, title=cfg.league, path=run.figures / "winrate_matrix.png")
        support = {labels[i]: round(float(p), 4) for i, p in enumerate(ev.nash) if p > 1e-6}
        summary.update(nash_support=len(support), lower_triangle_winrate=ev.lower_triangle_winrate)
        lines += ["", "## The league's historicals", "", f"Maxent Nash support: {support}", "",
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
    if entries:
        evaluated = evaluated_policies(trainer)
        measures = checkpoint_win_rates(trainer, [r.policy for r in evaluated])
        start = "the SL policy" if cfg.agent == "alphastar" else "the initial policy every player starts from"
        lines += ["", "## Each checkpoint against the starting policy and the map's scripted AI", "",
                  f"Win rates (draws ½): against {start} ({2 * cfg.matches} games, both seats)"
                  + (" and against SMAC's scripted AI (50 games)." if VS_SCRIPTED in measures else ".")
                  + " \"(final)\": a player's weights at the end of training.", "",
                  "| checkpoint | player type | step | " + " | ".join(measures) + " |",
                  "|---|---|---|" + "---|" * len(measures)]
        lines += [f"| {r.label} | {r.kind} | {r.step} | " + " | ".join(f"{rates[i]:.2f}" for rates in measures.values())
                  + " |" for i, r in enumerate(evaluated)]
        curves = {m: {} for m in measures}
        for m, rates in measures.items():
            for r, rate in zip(evaluated, rates):
                steps, values = curves[m].setdefault(r.player, ([], []))
                steps.append(r.step)
                values.append(float(rate))
        plots.plot_checkpoint_curves(curves, title=f"{cfg.league} on {cfg.env}", path=run.figures / "checkpoints.png")
        lines += ["", "![checkpoint win rates](figures/checkpoints.png)"]
        for kind in sorted({r.kind for r in evaluated}):
            rows = [i for i, r in enumerate(evaluated) if r.kind == kind]
            summary[f"vs_start_last_{kind}"] = float(measures[VS_START][rows[-1]])
            if VS_SCRIPTED in measures:
                summary[f"vs_scripted_best_{kind}"] = float(max(measures[VS_SCRIPTED][i] for i in rows))
                summary[f"vs_scripted_last_{kind}"] = float(measures[VS_SCRIPTED][rows[-1]])
    atomic_write_text(run.report, "\n".join(lines) + "\n")
    return summary


def train_league(config: LeagueTrainConfig, out: str | Path) -> dict:
    trainer = LeagueTrainer(config, out)
    trainer.train()
    return evaluate_league(trainer)
