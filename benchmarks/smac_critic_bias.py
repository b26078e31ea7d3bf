"""Does MAPPO's critic bias the advantages of SMAC self-play? Per update of a self-play run, the
advantages of the moves of units that see no enemy, beside the Monte-Carlo returns that followed them.

    .venv/bin/python benchmarks/smac_critic_bias.py --out runs/cb_base --updates 26 \
        [--settings '{"gae_lambda": 1.0}'] [--num-envs 128] [--probe-every 2 --probe-games 32]

The run is ``selfplay train --env MAP --agent mappo --scheme SCHEME --epochs 15 --entropy-coef 0.001
--num-envs N --episodes 1500 --checkpoints 10 --seed S`` (the 8m study's pilot at 15 epochs; 20 steps per
game per update at 128 games) with ``--settings`` (``MAPPOConfig`` fields as JSON) on top, stopped after
``--updates`` updates. It trains through the suite's own ``train`` (the same games and updates as that
command, bit for bit): this script only wraps ``MAPPOLearner.update`` to read, before each update, what the
update computes — the denormalised values, GAE's advantages ``A`` and their standardisation
``Â = (A − m) / s`` (``rules.gae``, ``rules.standardize``) — and, after it, to save the policy.

A unit is *blind* at a step when it is alive and no enemy is within its sight (the observation's enemy
features are all zero: SMAC's ``unit_sight_range`` 9). Its move is classed by SMAC's actions 1–5 (stop,
north, south, east, west; in the learner's frame, where the enemy starts east on both seats of the
mirrored battle); *away* is south or west. The units with an enemy in sight (``seen``) are classed by
moving east, away, or attacking. Per update and class (and over all active samples, and all blind ones),
``diagnosis.csv`` holds:

- ``n_*``: samples; ``adv_*``: mean ``Â``, what the actor follows; ``gae_*``: mean ``A``;
- ``value_*``: mean ``V(s_t)`` (denormalised); ``ret_*``: mean Monte-Carlo return
  ``G_t = Σ_{k≥t} γ^{k−t} r_k`` to the game's end (followed across later rollouts until the game ends:
  ``rollout_returns``, ``ReturnTracker``; empty while any of the class's games still runs);
- ``mc_*``: the Monte-Carlo advantage in ``Â``'s units, ``(mean(G_t − V(s_t)) − m) / s``;
- ``pending_*``: samples whose game had not ended when the run stopped.

``adv_*`` and ``mc_*`` differ by the bootstrap's error (the critic's values at the rollout's end and at
every later step weighted by γλ); if away-moves get a higher ``adv`` than east-moves while their ``mc`` is
lower, the critic points the actor downhill (docs/results/smac_8m.md). ``metrics`` of each update (mean
reward per step, the actor's gradient norm, ...) come with each row. ``--probe-every K``: every K-th
update's policy is saved and probed against the built-in AI after training
(``smac_movement_probe.probe``: greedy wins/losses/timeouts, the greedy east share out of sight) into
``probe.csv``. ``--smac-game FILES`` plays saved policies against the AI in SMAC's own game instead
(the probe with ``smac_game=True``: the map's layout, 100 greedy games each).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import torch

BASE = {"epochs": 15, "entropy_coef": 0.001}
MOVES = ("stop", "north", "south", "east", "west")  # SMAC's actions 1..5
AWAY = (3, 5)  # south, west: the passive pilots' moves (docs/results/smac_8m.md)
CLASSES = ("all", "blind", *MOVES, "away", "seen", "seen_east", "seen_away", "seen_attack")


def rollout_returns(rewards: torch.Tensor, dones: torch.Tensor, gamma: float):
    """Per step of a rollout ``(T, B)``: the discounted reward to the game's end or the rollout's end,

        P_t = r_t + γ·(1 − d_t)·P_{t+1},   P_T = 0,

    and the weight of what comes after the rollout, ``W_t = γ^{T−t}`` where the game runs past the
    rollout (no done at or after t), else 0: ``W_t = γ·(1 − d_t)·W_{t+1}``, ``W_T = 1``. The Monte-Carlo
    return is ``G_t = P_t + W_t·G'_0``, ``G'_0`` the return from the next rollout's first step of the
    same game. Returns ``(P, W)``, float ``(T, B)`` each."""
    T = rewards.shape[0]
    keep = (~dones).to(torch.float64)
    r = rewards.to(torch.float64)
    P, W = torch.zeros_like(r), torch.zeros_like(r)
    p, w = torch.zeros_like(r[0]), torch.ones_like(r[0])
    for t in reversed(range(T)):
        p = r[t] + gamma * keep[t] * p
        w = gamma * keep[t] * w
        P[t], W[t] = p, w
    return P, W


class ReturnTracker:
    """Sums of Monte-Carlo returns per (update, class), completed across rollouts.

    ``add(key, P, W, select)``: the samples ``select`` ``(T, B, U)`` bool of the rollout just played,
    under ``key``; with ``P``, ``W`` of ``rollout_returns``. ``advance(P, W)``: the next rollout of the same
    games (call it first for every rollout after the first, before ``add``); a pending sum grows by
    ``W_pending · P_0`` and its weight becomes ``W_pending · W_0`` (0 once its game ended). ``result(key)``:
    ``(n, sum of G, pending)``, ``pending`` the samples whose game still runs (their sum is partial)."""

    def __init__(self) -> None:
        self.count: dict = {}
        self.total: dict = {}  # key -> (B,) float64: sums of P (and of W·P' for later rollouts)
        self.weight: dict = {}  # key -> (B,) float64: sums of the pending weights
        self.pending: dict = {}  # key -> (B,) int64: samples per game whose game still runs

    def advance(self, P: torch.Tensor, W: torch.Tensor) -> None:
        for key in self.weight:
            live = self.pending[key] > 0
            if not bool(live.any()):
                continue
            self.total[key] += self.weight[key] * P[0]
            self.weight[key] = self.weight[key] * W[0]
            self.pending[key] = torch.where(W[0] > 0, self.pending[key], torch.zeros_like(self.pending[key]))

    def add(self, key, P: torch.Tensor, W: torch.Tensor, select: torch.Tensor) -> None:
        s = select.to(torch.float64)  # (T, B, U)
        per_step = s.sum(-1)  # (T, B)
        self.count[key] = int(select.sum())
        self.total[key] = (per_step * P).sum(0)
        self.weight[key] = (per_step * W).sum(0)
        self.pending[key] = (per_step * (W > 0)).sum(0).to(torch.int64)

    def result(self, key) -> tuple[int, float, int]:
        return self.count[key], float(self.total[key].sum()), int(self.pending[key].sum())


def blind_units(actor_in: torch.Tensor, active: torch.Tensor, enemy_block: slice) -> torch.Tensor:
    """``(T, B, U)`` bool: alive and every enemy feature zero (no enemy within sight) at that step."""
    return active & ~(actor_in[..., enemy_block] != 0).any(-1)


def class_masks(actions: torch.Tensor, active: torch.Tensor, blind: torch.Tensor) -> dict:
    """The samples of each of ``CLASSES``: all active, all blind, blind by move, blind moving away; the
    active units with an enemy in sight (``seen``), moving east, away, or attacking (actions 6 and up)."""
    seen = active & ~blind
    away = (actions == AWAY[0]) | (actions == AWAY[1])
    out = {"all": active, "blind": blind}
    for i, name in enumerate(MOVES, start=1):
        out[name] = blind & (actions == i)
    out.update(away=blind & away, seen=seen, seen_east=seen & (actions == 4), seen_away=seen & away,
               seen_attack=seen & (actions >= 6))
    return out


class CriticBias:
    """The per-update rows of ``diagnosis.csv`` (module docstring): ``observe(learner, state, mask, start)``
    before an update, ``finish(metrics)`` after it."""

    def __init__(self, enemy_block: slice) -> None:
        self.enemy_block = enemy_block
        self.tracker = ReturnTracker()
        self.rows: list[dict] = []
        self._current: dict | None = None

    @torch.no_grad()
    def observe(self, learner, state, mask, start) -> None:
        from selfplay.agents.mappo import rules

        c, buf = learner.config, learner.buffer
        learner.evaluate_rollout(state, mask, start)  # the update calls it again: the same values
        values = learner.value_norm.denormalize(buf["values"])
        adv, _ = rules.gae(buf["rewards"], values, buf["dones"], c.gamma, c.gae_lambda)
        active = buf["active"]
        weight = active if c.policy_active_masks else torch.ones_like(active)
        chosen = adv[weight]
        m, s = float(chosen.mean()), float(chosen.std(unbiased=False)) + 1e-5  # rules.standardize's m, s
        std = rules.standardize(adv, weight)
        T = c.rollout_length
        P, W = rollout_returns(buf["rewards"], buf["dones"], c.gamma)
        if self.rows:
            self.tracker.advance(P, W)
        blind = blind_units(buf["actor_in"], active, self.enemy_block)
        row = {"update": len(self.rows) + 1, "adv_mean": m, "adv_std": s,
               "blind_share": float(blind.sum()) / max(int(active.sum()), 1)}
        for name, sel in class_masks(buf["actions"], active, blind).items():
            n = int(sel.sum())
            self.tracker.add((row["update"], name), P, W, sel)
            row[f"n_{name}"] = n
            row[f"adv_{name}"] = float(std[sel].mean()) if n else float("nan")
            row[f"gae_{name}"] = float(adv[sel].mean()) if n else float("nan")
            row[f"value_{name}"] = float(values[:T][sel].mean()) if n else float("nan")
        self._current = row

    def finish(self, metrics: dict) -> dict:
        row = self._current
        for k in ("mean_reward", "actor_grad_norm", "explained_variance", "value_loss", "approx_kl", "clip_fraction",
                  "entropy"):
            row[k] = float(metrics[k])
        self.rows.append(row)
        self._current = None
        return row

    def table(self) -> list[dict]:
        """The rows with every class's Monte-Carlo columns as far as the games have ended."""
        out = []
        for row in self.rows:
            r = dict(row)
            for name in CLASSES:
                n, total, pending = self.tracker.result((row["update"], name))
                r[f"pending_{name}"] = pending
                done = n and not pending
                r[f"ret_{name}"] = total / n if done else float("nan")
                r[f"mc_{name}"] = ((total / n - r[f"value_{name}"]) - r["adv_mean"]) / r["adv_std"] if done else float("nan")
            out.append(r)
        return out


def write_csv(rows: list[dict], path: Path) -> None:
    if not rows:
        return
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in row.items()})


def summary(out: Path, every: int = 2) -> str:
    """A markdown table of a finished ``--out`` directory, every ``every``-th update: the mean reward per
    step, blind east and away samples, ``adv`` and ``mc`` of east minus away, the critic's error on blind
    units (mean ``V − G``), and the probe's wins / losses / timeouts and greedy east share."""
    with open(out / "diagnosis.csv") as f:
        rows = list(csv.DictReader(f))
    probes = {}
    if (out / "probe.csv").exists():
        with open(out / "probe.csv") as f:
            probes = {r["update"]: r for r in csv.DictReader(f)}

    def num(r, k):
        return float(r[k]) if r[k] not in ("", "nan") else float("nan")

    def signed(x, digits=2):
        return "" if x != x else f"{x:+.{digits}f}"

    lines = ["| update | reward/step | blind east / away | Â east − away | MC east − away | V − G, blind | probe: W / L / T, east |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if int(r["update"]) % every:
            continue
        pr = probes.get(r["update"])
        cells = [r["update"], f"{num(r, 'mean_reward'):.2f}", f"{r['n_east']} / {r['n_away']}",
                 signed(num(r, "adv_east") - num(r, "adv_away")), signed(num(r, "mc_east") - num(r, "mc_away")),
                 signed(num(r, "value_blind") - num(r, "ret_blind"), 1),
                 f"{pr['win']} / {pr['loss']} / {pr['timeout']}, {float(pr['greedy_east']):.2f}" if pr else ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def movement_probe():
    """``smac_movement_probe.probe`` (the benchmark beside this one): greedy games against the built-in AI,
    on the mirrored battle or, with ``smac_game=True``, in SMAC's own game (the map's layout)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from smac_movement_probe import probe

    return probe


class _Stop(Exception):
    """Raised inside the wrapped update once ``--updates`` updates are done."""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--env", default="smac:8m")
    p.add_argument("--scheme", default="delta-uniform:delta=0")
    p.add_argument("--updates", type=int, default=26)
    p.add_argument("--episodes", type=int, default=1500, help="the run's budget (the pilot's 1500; --updates stops it)")
    p.add_argument("--checkpoints", type=int, default=10)
    p.add_argument("--num-envs", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--settings", default="{}", help="JSON object of MAPPOConfig fields (over epochs 15, entropy 0.001)")
    p.add_argument("--probe-every", type=int, default=2, help="probe every K-th update's policy (0: none)")
    p.add_argument("--probe-games", type=int, default=32)
    p.add_argument("--summarize", type=int, default=0, metavar="K",
                   help="print the markdown table of a finished --out, every K-th update, and stop (no training)")
    p.add_argument("--smac-game", default=None, metavar="FILES",
                   help="comma-separated policy files: 100 greedy games of each against the AI in SMAC's own game "
                        "(smac_movement_probe.probe in SMAC's game), then stop (no training)")
    args = p.parse_args(argv)
    if args.smac_game:
        from selfplay.agents.mappo.selfplay import load_policy

        probe = movement_probe()
        for path in args.smac_game.split(","):
            r = probe(args.env, load_policy(path), 100, 7, smac_game=True)
            print(path, {k: r[k] for k in ("win", "loss", "timeout", "mutual")})
        return 0
    if args.summarize:
        print(summary(Path(args.out), args.summarize))
        return 0
    if not args.env.startswith("smac:"):
        raise ValueError(f"env must be a SMAC map (smac:MAP), got {args.env!r}")
    for name in ("updates", "probe_games"):
        if getattr(args, name) < 1:
            raise ValueError(f"{name} must be a positive integer, got {getattr(args, name)}")
    if args.probe_every < 0:
        raise ValueError(f"probe_every must be >= 0, got {args.probe_every}")
    extra = json.loads(args.settings)
    if not isinstance(extra, dict):
        raise ValueError(f"settings must be a JSON object of MAPPOConfig fields, got {args.settings!r}")
    import copy

    from selfplay.agents.mappo.config import self_play_rollout_length
    from selfplay.agents.mappo.learner import MAPPOLearner
    from selfplay.agents.mappo.selfplay import MAPPOFrozenPolicy, MAPPOSpec, save_policy

    from selfplay.training.loop import TrainConfig, train
    from selfplay.training.registry import make_env

    torch.set_num_threads(1)
    out = Path(args.out)
    (out / "policies").mkdir(parents=True, exist_ok=True)
    view = make_env(args.env, 1).views[0]
    diag = CriticBias(slice(view.move_feats_size, view.move_feats_size + view.n_enemies * view.enemy_feats_size))
    settings = {**BASE, "rollout_length": self_play_rollout_length(args.num_envs), **extra}
    config = TrainConfig(env=args.env, agent="mappo", scheme=args.scheme, episodes=args.episodes,
                         num_envs=args.num_envs, seed=args.seed, checkpoints=args.checkpoints,
                         agent_settings=settings, tensorboard=False)
    saved = []
    original = MAPPOLearner.update

    def update(self, state, mask, start):
        diag.observe(self, state, mask, start)
        metrics = original(self, state, mask, start)
        row = diag.finish(metrics)
        u = row["update"]
        write_csv(diag.table(), out / "diagnosis.csv")
        print(f"update {u}: reward/step {row['mean_reward']:.3f}, blind {row['blind_share']:.2f}, "
              f"adv east {row['adv_east']:+.3f} away {row['adv_away']:+.3f}", flush=True)
        if args.probe_every and u % args.probe_every == 0:
            scorer = self.network.attack_scorer  # the entity head's enemy layout, where there is one
            enemy_obs = None if scorer is None else (scorer.offset, scorer.n_enemies, scorer.feats)
            spec = MAPPOSpec.make(self.obs_size, self.state_size, self.n_agents, self.n_actions, self.config.to_dict(),
                                  enemy_obs)
            path = out / "policies" / f"update_{u:03d}.pt"
            save_policy(MAPPOFrozenPolicy(copy.deepcopy(self.network), spec, self.weight_version, 0), path)
            saved.append((u, path))
        if u >= args.updates:
            raise _Stop
        return metrics

    MAPPOLearner.update = update
    try:
        train(config, out / "run")
    except _Stop:
        pass
    finally:
        MAPPOLearner.update = original
    write_csv(diag.table(), out / "diagnosis.csv")
    if saved:
        from selfplay.agents.mappo.selfplay import load_policy

        probe = movement_probe()
        rows = []
        for u, path in saved:
            r = probe(args.env, load_policy(path), args.probe_games, 1000)
            rows.append({"update": u, **r})
            print(f"probe update {u}: {r['win']} / {r['loss']} / {r['timeout']}, east {r['greedy_east']:.2f}", flush=True)
            write_csv(rows, out / "probe.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
