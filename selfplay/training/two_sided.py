"""Self-play on an asymmetric game: a learner per side (docs/design/trainer.md, "Modes"; docs/design/smac.md §6–7).

On an asymmetric SMAC map (2m_vs_1z, 5m_vs_6m, ...) one policy cannot play both sides. Each side s
has its own learner (always in seat s), its own menagerie of frozen snapshots and its own payoff
table. The scheme is applied per side: side s's opponents are drawn by Ω over the *other* side's
menagerie, and G curates side s's own menagerie after each of its episodes (two interleaved
populations, like two-population fictitious play). PSRO's single meta-game does not apply here.

The loop, run directory and resume are the trainer core's (``selfplay.training.trainer``); the run
directory has ``menagerie/side{0,1}/`` and ``checkpoints/side{0,1}/``, and ``matches.csv`` names the
side as the player (``side0``, ``side1``). Its evaluation across sides is the evaluation layer's
(``selfplay.evaluation.two_sided``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from selfplay.core.menagerie import Menagerie
from selfplay.core.payoff import Payoff
from selfplay.core.schemes import PSRO, LearnerInfo, make_scheme
from selfplay.training.registry import agent_kit, env_for_agent, make_env
from selfplay.training.rundir import RunDir
from selfplay.training.trainer import Player, Trainer
from selfplay.utils.seeding import Stream, derive_seed

SIDES = (0, 1)


class PerSideMode:
    """A learner per side; side s draws from the other side's menagerie with its own scheme and payoff."""

    name = "two-sided"
    turn = "step"

    def __init__(self, config) -> None:
        self.config = config
        self.schemes = [make_scheme(config.scheme, defer_evaluator=True) for _ in SIDES]
        if isinstance(self.schemes[0], PSRO):
            raise ValueError("PSRO needs one meta-game over one population; with a learner per side use "
                             "naive, delta-uniform or delta-limit-uniform")
        self.menageries_ = [Menagerie() for _ in SIDES]
        self.checkpoints = [Menagerie() for _ in SIDES]
        self.payoffs = [Payoff() for _ in SIDES]

    @staticmethod
    def info(p: Player) -> LearnerInfo:
        return LearnerInfo(name=p.name, episode=p.episodes, step=p.steps,
                           weight_version=p.learner.weight_version, snapshot=p.learner.snapshot)

    def start(self, trainer: Trainer) -> None:
        for p in trainer.players:
            self.menageries_[p.seat].add(p.learner.snapshot(), step=0, player=p.name, episode=0,
                                         weight_version=p.learner.weight_version)

    def draw(self, trainer: Trainer, p: Player, k: int) -> list:
        other = self.menageries_[1 - p.seat]
        return [(e.id, e.policy) for e in self.schemes[p.seat].sample_many(other, k, self.payoffs[p.seat], trainer.rng)]

    def opponent_kind(self, p: Player, key) -> str:
        return f"side{1 - p.seat}"

    def remaining(self, p: Player) -> int:
        return self.config.episodes - p.episodes

    def progress(self, p: Player) -> float:
        return p.episodes / self.config.episodes

    def done(self, p: Player) -> bool:
        return p.episodes >= self.config.episodes

    def game_finished(self, trainer: Trainer, p: Player, game) -> None:
        s = p.seat
        self.payoffs[s].update(p.name, game.opponent, game.score)
        self.schemes[s].curate(self.menageries_[s], self.info(p), self.payoffs[s], game.score)
        every = self.config.episodes / self.config.checkpoints
        if p.episodes >= (len(self.checkpoints[s]) + 1) * every - 1e-9:
            self.checkpoints[s].add(p.learner.snapshot(), step=p.steps, episode=p.episodes,
                                    weight_version=p.learner.weight_version)

    def learner_updated(self, trainer: Trainer, p: Player, metrics: dict) -> dict:
        return {}

    def menageries(self) -> dict[str, Menagerie]:
        return {**{f"menagerie/side{s}": self.menageries_[s] for s in SIDES},
                **{f"checkpoints/side{s}": self.checkpoints[s] for s in SIDES}}

    def menagerie_size(self, p: Player) -> int:
        return len(self.menageries_[1 - p.seat])

    def state_dict(self) -> dict:
        return {"schemes": [sc.state_dict() for sc in self.schemes], "payoffs": [p.to_dict() for p in self.payoffs]}

    def load_state_dict(self, state: dict) -> None:
        for s in SIDES:
            self.schemes[s].load_state_dict(state["schemes"][s])
            self.payoffs[s] = Payoff.from_dict(state["payoffs"][s])
            self.menageries_[s] = state["menageries"][f"menagerie/side{s}"]
            self.checkpoints[s] = state["menageries"][f"checkpoints/side{s}"]


class TwoSidedTrainer(Trainer):
    def __init__(self, config, out: str | Path) -> None:
        kit = agent_kit(config.agent, config.env)
        mode = PerSideMode(config)
        self.env_name = env_for_agent(config.env, config.agent)
        players = []
        for s in SIDES:
            env = make_env(self.env_name, config.num_envs, seed=derive_seed(config.seed, Stream.ENV, s), device=config.device)
            learner = kit.make_learner(env, derive_seed(config.seed, Stream.LEARNER, s), seat=s, **config.agent_settings)
            players.append(Player(f"side{s}", learner, env, seat=s))
        sampler = np.random.default_rng(derive_seed(config.seed, Stream.SAMPLER))
        super().__init__(RunDir(out).create(), config, kit, mode, players, sampler,
                         config.run_config(), progress=config.progress, tensorboard=config.tensorboard,
                         progress_total=2 * config.episodes)
