"""Self-play on an asymmetric game: a learner per side (issue 6; spec-smac §6–7).

On an asymmetric SMAC map (2m_vs_1z, 5m_vs_6m, ...) one policy cannot play both sides. Each side s
has its own learner (always in seat s), its own menagerie of frozen snapshots and its own payoff
table. The scheme is applied per side: side s's opponents are drawn by Ω over the *other* side's
menagerie, and G curates side s's own menagerie after each of its episodes (two interleaved
populations, like two-population fictitious play). PSRO's single meta-game does not apply here.

Run directory: as the single-learner loop's, with ``menagerie/side{0,1}/`` and ``checkpoints/side{0,1}/``
and a ``side`` column in ``matches.csv``; resumable from ``state.pt`` (games in flight are abandoned).
"""

from __future__ import annotations

import csv
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from selfplay.training.games import GameRunner
from selfplay.core.menagerie import Menagerie
from selfplay.core.payoff import Payoff
from selfplay.training.registry import agent_kit, env_for_agent, make_env
from selfplay.training.rundir import RunDir, save_torch
from selfplay.core.schemes import PSRO, LearnerInfo, make_scheme

SIDES = (0, 1)
MATCH_COLUMNS = ("side", "episode", "opponent", "score")


class TwoSidedTrainer:
    def __init__(self, config, out: str | Path) -> None:
        self.config = config
        self.run = RunDir(out).create()
        self.kit = agent_kit(config.agent, config.env)
        self.schemes = [make_scheme(config.scheme, defer_evaluator=True) for _ in SIDES]
        if isinstance(self.schemes[0], PSRO):
            raise ValueError("PSRO needs one meta-game over one population; with a learner per side use "
                             "naive, delta-uniform or delta-limit-uniform")
        self.env_name = env_for_agent(config.env, config.agent)
        self.envs = [make_env(self.env_name, config.num_envs, seed=config.seed + 7 * s, device=config.device) for s in SIDES]
        self.learners = [self.kit.make_learner(self.envs[s], config.seed + s, seat=s, **config.ppo) for s in SIDES]
        self.menageries = [Menagerie() for _ in SIDES]
        self.checkpoints = [Menagerie() for _ in SIDES]
        self.payoffs = [Payoff() for _ in SIDES]
        self.rng = np.random.default_rng(config.seed)
        self.episodes = [0, 0]
        self.steps = [0, 0]
        self.updates = 0
        self.seconds = 0.0
        self.matches: list[tuple] = []

    def _info(self, s: int) -> LearnerInfo:
        learner = self.learners[s]
        return LearnerInfo(name=f"side{s}", episode=self.episodes[s], step=self.steps[s],
                           weight_version=learner.weight_version, snapshot=learner.snapshot)

    def save(self) -> None:
        for s in SIDES:
            self.menageries[s].save(self.run.menagerie / f"side{s}", self.kit.save_policy)
            self.checkpoints[s].save(self.run.checkpoints / f"side{s}", self.kit.save_policy)
        self.run.write_rows(self.run.matches, MATCH_COLUMNS, self.matches)
        save_torch(self.run.state, {
            "config": asdict(self.config), "learners": [l.state_dict() for l in self.learners],
            "schemes": [sc.state_dict() for sc in self.schemes], "payoffs": [p.to_dict() for p in self.payoffs],
            "episodes": self.episodes, "steps": self.steps, "updates": self.updates, "seconds": self.seconds,
            "rng": self.rng.bit_generator.state, "n_matches": len(self.matches),
        })

    def load(self) -> bool:
        if not self.run.state.exists():
            return False
        import torch

        state = torch.load(self.run.state, weights_only=False)
        if state["config"] != asdict(self.config):
            raise ValueError(f"run directory {self.run.root} holds a run with another configuration")
        for s in SIDES:
            self.learners[s].load_state_dict(state["learners"][s])
            self.schemes[s].load_state_dict(state["schemes"][s])
            self.payoffs[s] = Payoff.from_dict(state["payoffs"][s])
            self.menageries[s] = Menagerie.load(self.run.menagerie / f"side{s}", self.kit.load_policy)
            self.checkpoints[s] = Menagerie.load(self.run.checkpoints / f"side{s}", self.kit.load_policy)
        self.episodes, self.steps, self.updates = list(state["episodes"]), list(state["steps"]), state["updates"]
        self.seconds = state["seconds"]
        self.rng.bit_generator.state = state["rng"]
        with open(self.run.matches, newline="") as f:
            rows = list(csv.reader(f))[1 : 1 + state["n_matches"]]
        self.matches = [(int(s), int(e), int(o), float(sc)) for s, e, o, sc in rows]
        return True

    def train(self):
        import torch

        from selfplay.training.loop import RunResult

        cfg = self.config
        torch.set_num_threads(cfg.torch_threads)
        if not self.load():
            self.run.write_config(cfg)
            for s in SIDES:
                self.menageries[s].add(self.learners[s].snapshot(), step=0, player=f"side{s}", episode=0,
                                       weight_version=self.learners[s].weight_version)
        start = time.perf_counter() - self.seconds
        every = cfg.episodes / cfg.checkpoints

        def draw_for(s: int):
            def draw(k: int):
                other = self.menageries[1 - s]
                return [(e.id, e.policy) for e in self.schemes[s].sample_many(other, k, self.payoffs[s], self.rng)]
            return draw

        runners = [GameRunner(self.envs[s], self.learners[s], draw_for(s), self.rng, seat=s) for s in SIDES]
        for runner in runners:
            runner.start()
        while min(self.episodes) < cfg.episodes:
            updated = False
            for s in SIDES:
                if self.episodes[s] >= cfg.episodes:
                    continue
                finished = runners[s].step()
                self.steps[s] += runners[s].n
                for game in finished[: cfg.episodes - self.episodes[s]]:
                    self.payoffs[s].update(f"side{s}", game.opponent, game.score)
                    self.matches.append((s, self.episodes[s], game.opponent, game.score))
                    self.episodes[s] += 1
                    self.schemes[s].curate(self.menageries[s], self._info(s), self.payoffs[s], game.score)
                    if self.episodes[s] >= (len(self.checkpoints[s]) + 1) * every - 1e-9:
                        self.checkpoints[s].add(self.learners[s].snapshot(), step=self.steps[s],
                                                episode=self.episodes[s], weight_version=self.learners[s].weight_version)
                runners[s].restart([g.game for g in finished])
                if self.learners[s].ready() and self.episodes[s] < cfg.episodes:
                    self.learners[s].update()
                    self.updates += 1
                    updated = True
            if updated:
                self.seconds = time.perf_counter() - start
                self.save()
        self.seconds = time.perf_counter() - start
        self.save()
        return RunResult(self.run.root, min(self.episodes), self.updates, self.seconds,
                         sum(len(m) for m in self.menageries), sum(len(c) for c in self.checkpoints))


def evaluate_two_sided(run_dir: str | Path, matches: int = 25, seed: int = 0, scripted_games: int = 100) -> dict:
    """W[i, j]: side-0 checkpoint i (in seat 0) against side-1 checkpoint j (in seat 1); the zero-sum
    game A = W − ½ solved for both sides; side 0's checkpoints against the map's scripted AI."""
    from selfplay.analysis.nash import solve_zero_sum
    from selfplay.training.matches import play_matches, scripted_win_rates
    from selfplay.utils.io import atomic_write_json

    run = RunDir(run_dir)
    cfg = run.read_config()
    kit = agent_kit(cfg["agent"], cfg["env"])
    sides = [Menagerie.load(run.checkpoints / f"side{s}", kit.load_policy) for s in SIDES]
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
