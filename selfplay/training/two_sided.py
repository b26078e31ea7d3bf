"""Self-play on an asymmetric game: a learner per side (issue 6; spec-smac §6–7).

On an asymmetric SMAC map (2m_vs_1z, 5m_vs_6m, ...) one policy cannot play both sides. Each side s
has its own learner (always in seat s), its own menagerie of frozen snapshots and its own payoff
table. The scheme is applied per side: side s's opponents are drawn by Ω over the *other* side's
menagerie, and G curates side s's own menagerie after each of its episodes (two interleaved
populations, like two-population fictitious play). PSRO's single meta-game does not apply here.

The loop, run directory and resume are the trainer core's (``selfplay.training.trainer``); the run
directory has ``menagerie/side{0,1}/`` and ``checkpoints/side{0,1}/``, and ``matches.csv`` names the
side as the player (``side0``, ``side1``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from selfplay.core.menagerie import Menagerie
from selfplay.core.payoff import Payoff
from selfplay.core.schemes import PSRO, LearnerInfo, make_scheme
from selfplay.training.registry import agent_kit, env_for_agent, make_env
from selfplay.training.rundir import RunDir, open_committed
from selfplay.training.trainer import Player, Trainer
from selfplay.utils.seeding import derive_seed

SIDES = (0, 1)


class PerSideMode:
    """A learner per side; side s draws from the other side's menagerie with its own scheme and payoff."""

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
            env = make_env(self.env_name, config.num_envs, seed=derive_seed(config.seed, 7, s), device=config.device)
            players.append(Player(f"side{s}", kit.make_learner(env, config.seed + s, seat=s, **config.agent_settings), env, seat=s))
        super().__init__(RunDir(out).create(), config, kit, mode, players, np.random.default_rng(config.seed),
                         config.run_config(), progress=config.progress, tensorboard=config.tensorboard,
                         progress_total=2 * config.episodes)


def evaluate_two_sided(run_dir: "str | Path | RunDir", matches: int = 25, seed: int = 0, scripted_games: int = 100,
                       committed: tuple | None = None) -> dict:
    """W[i, j]: side-0 checkpoint i (in seat 0) against side-1 checkpoint j (in seat 1); the zero-sum
    game A = W − ½ solved for both sides; side 0's checkpoints against the map's scripted AI."""
    from selfplay.analysis.nash import solve_zero_sum
    from selfplay.training.matches import play_matches, scripted_win_rates
    from selfplay.utils.io import atomic_write_json

    if committed is None:
        run, state, kit = open_committed(run_dir)
    else:
        run, (state, kit) = run_dir, committed
    cfg = state["config"]
    sides = [run.committed_menagerie(state, f"checkpoints/side{s}", kit.load_policy) for s in SIDES]
    P, Q = [e.policy for e in sides[0]], [e.policy for e in sides[1]]
    ii, jj = np.meshgrid(np.arange(len(P)), np.arange(len(Q)), indexing="ij")
    pairs = np.stack([ii.ravel(), jj.ravel() + len(P)], axis=1)
    env = env_for_agent(cfg["env"], cfg["agent"])
    scores = play_matches(env, P + Q, pairs, matches, seed, kit.stack_policies, home_seat=0)
    W = scores.mean(axis=1).reshape(len(P), len(Q))
    p, q, value = solve_zero_sum(W - 0.5)
    vs_ai = scripted_win_rates(env, P, scripted_games, seed=seed, stack_policies=kit.stack_policies)
    run.evaluation.mkdir(parents=True, exist_ok=True)
    np.savez(run.evaluation / "winrate.npz", W=W, p=p, q=q, vs_scripted=vs_ai)
    _plot_cross_matrix(W, p, q, f"{cfg['scheme']} on {cfg['env']}", run.figures / "winrate_matrix.png")
    summary = {"side0_value": float(value + 0.5), "side0_nash_support": int((p > 1e-6).sum()),
               "side1_nash_support": int((q > 1e-6).sum()), "final_vs_final": float(W[-1, -1]),
               "vs_scripted_first": float(vs_ai[0]), "vs_scripted_final": float(vs_ai[-1])}
    atomic_write_json(run.evaluation / "summary.json", summary)
    return summary


def _plot_cross_matrix(W: np.ndarray, p: np.ndarray, q: np.ndarray, title: str, path: Path) -> None:
    """Heatmap of side 0's checkpoints (rows) against side 1's (columns) with each side's Nash mass."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 5.5), layout="constrained")
    grid = fig.add_gridspec(2, 2, width_ratios=(6, 1), height_ratios=(1, 6))
    ax = fig.add_subplot(grid[1, 0])
    image = ax.imshow(W, cmap="RdBu", vmin=0, vmax=1, interpolation="nearest", aspect="auto")
    ax.set_xlabel("side 1 checkpoint")
    ax.set_ylabel("side 0 checkpoint")
    fig.add_subplot(grid[0, 0], sharex=ax).bar(np.arange(len(q)), q, color="0.3")
    fig.add_subplot(grid[1, 1], sharey=ax).barh(np.arange(len(p)), p, color="0.3")
    fig.colorbar(image, ax=ax, label="side 0 win rate")
    fig.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
