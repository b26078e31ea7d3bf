"""Supervised learning of the AlphaStar commander from scripted demonstrations on SMAC
(docs/design/alphastar.md §3).

    loss = Σ_heads masked CE (``supervised_loss``: each head counted only where the labelled action
           type uses it), Adam, gradient-norm clip 0.5,
    the LSTM unrolled over windows of ``seq_len`` decision steps with its state carried from one
    window of a game to the next (``DemonstrationDataset.lanes``) and reset where a game begins.

``run_sl(map_name, quick, out, seed)`` does the whole pipeline: record ``num_games`` demonstrator
games against the map's scripted AI, or against itself on the two-player battle (``demonstrations_against``),
(its win rate against the AI is ``demonstrator_win_rate``; with ``perturb > 0`` or self-play
demonstrations that rate comes from separate clean games against the AI), hold out a
validation split of games, train, measure per-head accuracy on the validation games, play the
trained policy against the scripted AI (``win_rate_vs_scripted``) and write
``out/sl_metrics.json`` and ``out/sl_checkpoint.pt`` (the network's ``state_dict`` and config).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from selfplay.utils.io import atomic_write, atomic_write_text
from selfplay.utils.seeding import Stream, derive_seed

from .config import HEADS
from .dataset import DemonstrationDataset, record_demonstrations
from .demonstrators import DEMONSTRATORS, make_demonstrator
from .network import AlphaStarNet, seeded_network
from .smac.commander import CommanderConfig, SMACCommander
from .smac.policy import AlphaStarSMACPolicy
from .supervised import per_head_accuracy, supervised_loss

DEMONSTRATION_OPPONENTS = ("scripted_ai", "self_play")  # whom the demonstrator plays in the recorded games

# A network small enough for the quick run on 2 CPU cores (every other size: the config defaults).
QUICK_NETWORK = dict(
    entity_d_model=32, entity_heads=2, entity_layers=1, entity_ff_size=64, entity_embedding_size=32,
    embedded_entity_size=32, scatter_channels=4, spatial_stem_channels=8, spatial_downsample_channels=(16, 16),
    spatial_resblocks=1, embedded_spatial_size=32, embedded_scalar_size=32, scalar_context_size=16, lstm_size=64,
    action_type_hidden=64, action_type_resblocks=1, autoregressive_embedding_size=64, delay_hidden=32,
    queue_hidden=16, unit_key_size=16, selected_units_lstm_size=16, func_embed_size=32, value_hidden=32,
    value_resblocks=1,
)


@dataclass(frozen=True)
class SLConfig:
    """Every setting of the SL pipeline (``run_sl``). ``network``: overrides of ``AlphaStarConfig``
    sizes (the map-dependent ones come from ``commander_config``); ``grid``: the commander's
    spatial/location grid; ``max_train_seconds`` stops training early (None: run every epoch);
    ``perturb``: the recorder's probability of a random nudge per decision (``record_demonstrations``);
    ``demonstrator``: the script imitated (``demonstrators.DEMONSTRATORS``); ``demonstrations_against``: whom it
    plays in the recorded games, ``"scripted_ai"`` (the map's built-in AI) or ``"self_play"`` (itself,
    on the two-player battle: the policy never sees a game against the built-in AI)."""

    map_name: str = "3m"
    demonstrator: str = "focus_fire"
    demonstrations_against: str = "scripted_ai"
    num_games: int = 2000
    num_envs: int = 64
    validation_fraction: float = 0.1
    batch_size: int = 32
    seq_len: int = 16
    epochs: int = 20
    max_train_seconds: float | None = None
    learning_rate: float = 1e-3
    grad_clip: float = 0.5
    eval_games: int = 200
    eval_temperature: float = 0.5
    perturb: float = 0.2
    grid: int = 32
    network: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.demonstrator not in DEMONSTRATORS:
            raise ValueError(f"demonstrator must be one of {sorted(DEMONSTRATORS)}, got {self.demonstrator!r}")
        if self.demonstrations_against not in DEMONSTRATION_OPPONENTS:
            raise ValueError(f"demonstrations_against must be one of {list(DEMONSTRATION_OPPONENTS)}, "
                             f"got {self.demonstrations_against!r}")
        for name in ("num_games", "num_envs", "batch_size", "seq_len", "epochs", "eval_games"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if self.num_games < 2:
            raise ValueError(f"num_games must be >= 2 (train and validation games), got {self.num_games}")
        if not 0.0 <= self.perturb <= 1.0:
            raise ValueError(f"perturb must be in [0, 1], got {self.perturb!r}")
        if not 0.0 < self.validation_fraction < 1.0:
            raise ValueError(f"validation_fraction must be in (0, 1), got {self.validation_fraction!r}")
        for name in ("learning_rate", "grad_clip", "eval_temperature"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")

    @classmethod
    def quick(cls, map_name: str = "3m", **overrides) -> SLConfig:
        """The ≤ 5-minute setting on 2 CPU cores: few games, a small network, a time cap (the epochs that fit in
        ``max_train_seconds`` of wall-clock: how many depends on the machine and its load, and ``train_history``
        in ``sl_metrics.json`` says; give ``epochs`` and ``max_train_seconds=None`` for a start that does not,
        as the league's SL stage and ``selfplay sl --epochs`` do)."""
        sizes = dict(map_name=map_name, num_games=300, num_envs=64, batch_size=32, seq_len=16, epochs=80,
                     max_train_seconds=150.0, learning_rate=2e-3, eval_games=64, grid=16,
                     network=dict(QUICK_NETWORK))
        sizes.update(overrides)
        return cls(**sizes)


def _detach(state):
    return tuple(s.detach() for s in state)


def sl_step(net: AlphaStarNet, optimizer, batch, state, grad_clip: float = 0.5):
    """One Adam step on one ``SequenceBatch`` with the carried LSTM ``state`` → (loss terms, new state)."""
    out = net(batch.obs, state, actions=batch.actions)
    terms = supervised_loss(out, batch.valid)
    optimizer.zero_grad(set_to_none=True)
    terms["total"].backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(net.parameters(), grad_clip)
    optimizer.step()
    metrics = {k: float(v.detach()) for k, v in terms.items()}
    metrics["grad_norm"] = float(grad_norm)
    return metrics, _detach(out.state)


def train_sl(net: AlphaStarNet, dataset: DemonstrationDataset, games: np.ndarray, config: SLConfig,
             seed: int = 0, log=None) -> list[dict]:
    """Train ``net`` on the ``games`` of ``dataset`` (module docstring); one dict of metrics per epoch."""
    optimizer = torch.optim.Adam(net.parameters(), lr=config.learning_rate)
    net.train()
    history = []
    t0 = time.perf_counter()
    for epoch in range(config.epochs):
        lanes = dataset.lanes(games, config.batch_size, config.seq_len, seed=derive_seed(seed, Stream.SL_EPOCH, epoch))
        state = net.initial_state(config.batch_size)
        sums, n = {}, 0
        for k in range(lanes.shape[0]):
            metrics, state = sl_step(net, optimizer, dataset.batch(lanes[k]), state, config.grad_clip)
            for key, v in metrics.items():
                sums[key] = sums.get(key, 0.0) + v
            n += 1
        record = {"epoch": epoch, "seconds": time.perf_counter() - t0, **{k: v / n for k, v in sums.items()}}
        history.append(record)
        if log:
            log(f"epoch {epoch}: loss {record['total']:.3f} ({record['seconds']:.0f}s)")
        if config.max_train_seconds is not None and record["seconds"] >= config.max_train_seconds:
            break
    return history


@torch.no_grad()
def evaluate_sl(net: AlphaStarNet, dataset: DemonstrationDataset, games: np.ndarray, batch_size: int = 32,
                seq_len: int = 16) -> dict:
    """Per-head accuracy (``per_head_accuracy``, pooled over every valid step using the head) and
    masked cross-entropy on the ``games``, the LSTM carried as in training."""
    net.eval()
    lanes = dataset.lanes(games, batch_size, seq_len, seed=None)
    state = net.initial_state(batch_size)
    correct = {h: 0.0 for h in HEADS}
    count = {h: 0 for h in HEADS}
    loss_sum, steps = 0.0, 0
    for k in range(lanes.shape[0]):
        batch = dataset.batch(lanes[k])
        out = net(batch.obs, state, actions=batch.actions)
        state = out.state
        acc = per_head_accuracy(out, batch.valid)
        valid_steps = int(batch.valid.sum())
        loss_sum += float(supervised_loss(out, batch.valid)["total"]) * valid_steps
        steps += valid_steps
        for h in HEADS:
            c = int((out.argument_used[h] & batch.valid).sum())
            if c:
                correct[h] += acc[h] * c
                count[h] += c
    result = {f"{h}_accuracy": (correct[h] / count[h] if count[h] else float("nan")) for h in HEADS}
    result["loss"] = loss_sum / max(steps, 1)
    result["steps"] = steps
    return result


@torch.no_grad()
def play_vs_scripted(net: AlphaStarNet, battle, num_games: int, temperature: float = 1.0, seed: int = 0) -> dict:
    """Play seat 0 of ``battle`` (two_player=False: seat 1 is the scripted AI) with the network until
    ``num_games`` games have ended (the first game of every env counts first); win/draw/loss rates."""
    net.eval()
    policy = AlphaStarSMACPolicy(net, battle, seat=0, temperature=temperature, seed=seed)
    E = battle.num_envs
    obs = battle.reset()
    state = policy.initial_state(E)
    start = torch.ones(E, dtype=torch.bool)
    wins = draws = games = 0
    while games < num_games:
        actions, state, _ = policy.act(obs[0], state, None, episode_start=start)
        obs, _, done, info = battle.step([actions])
        n_done = int(done.sum())
        take = min(n_done, num_games - games)
        ended = torch.nonzero(done).flatten()[:take]
        wins += int(info["battle_won"][0][ended].sum())
        draws += int(info["draw"][ended].sum())
        games += take
        start = done
    return {"games": games, "win_rate": wins / games, "draw_rate": draws / games,
            "loss_rate": (games - wins - draws) / games}


@torch.no_grad()
def play_demonstrator(battle, demonstrator, num_games: int) -> dict:
    """The demonstrator alone (no perturbation) on seat 0 of ``battle`` against the scripted AI:
    win/draw/loss rates over the first ``num_games`` games to end."""
    cmd = SMACCommander(battle, 0)
    battle.reset()
    wins = draws = games = 0
    while games < num_games:
        due = cmd.due()
        cmd.observe()
        cmd.apply(demonstrator(cmd), due)
        _, _, done, info = battle.step([cmd.unit_actions()])
        cmd.reset_games(done)
        ended = torch.nonzero(done).flatten()[: num_games - games]
        wins += int(info["battle_won"][0][ended].sum())
        draws += int(info["draw"][ended].sum())
        games += len(ended)
    return {"games": games, "win_rate": wins / games, "draw_rate": draws / games,
            "loss_rate": (games - wins - draws) / games}


def sl_metrics_beside(sl_checkpoint: str | os.PathLike) -> dict | None:
    """The ``sl_metrics.json`` that ``run_sl`` wrote beside ``sl_checkpoint`` (None when there is none),
    with the demonstration settings of runs made before a setting existed filled in by its default."""
    path = Path(sl_checkpoint).parent / "sl_metrics.json"
    if not path.is_file():
        return None
    return {"demonstrations_against": SLConfig.demonstrations_against, **json.loads(path.read_text())}


def count_parameters(net: torch.nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())


def run_sl(map_name: str = "3m", quick: bool = False, out: str | os.PathLike = "runs/sl", seed: int = 0,
           config: SLConfig | None = None, log=print) -> dict:
    """Record demonstrations, train, evaluate; write ``out/sl_metrics.json`` and ``out/sl_checkpoint.pt``.

    ``selfplay sl --env smac:3m [--quick] --out DIR`` is ``run_sl("3m", quick, DIR)``. ``config``
    replaces the settings (its ``map_name`` is set to ``map_name``). Returns the metrics dict."""
    from selfplay.utils.checks import check_out, check_seed

    check_out(out)
    check_seed(seed)
    return _run_sl(map_name, quick, Path(out), seed, config, log)


def _run_sl(map_name: str, quick: bool, out: Path, seed: int, config: SLConfig | None, log) -> dict:
    from selfplay.envs.smac import SMACBattle, get_map  # the battles demonstrations are played on

    if config is None:
        config = SLConfig.quick(map_name) if quick else SLConfig(map_name=map_name)
    config = replace(config, map_name=map_name)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()

    self_play = config.demonstrations_against == "self_play"
    # self-play: the two-player battle as training plays it, seat 1 mirrored where the teams are the same
    battle = SMACBattle(map_name, config.num_envs, two_player=self_play, mirror=self_play and get_map(map_name).same_teams,
                        seed=derive_seed(seed, Stream.DEMONSTRATIONS, 0))
    commander = SMACCommander(battle, 0, CommanderConfig(grid=config.grid))
    net_config = commander.network_config(**config.network)
    demonstrator = make_demonstrator(config.demonstrator)
    summary = record_demonstrations(battle, demonstrator, config.num_games, out / "demonstrations",
                                    commander=commander, perturb=config.perturb,
                                    seed=derive_seed(seed, Stream.DEMONSTRATIONS, 1))
    t_record = time.perf_counter() - t0
    if config.perturb > 0 or self_play:  # not the recorded games: the demonstrator alone against the AI
        clean = play_demonstrator(SMACBattle(map_name, config.num_envs, two_player=False,
                                             seed=derive_seed(seed, Stream.SL_EVALUATION, 0)),
                                  demonstrator, config.eval_games)
    else:
        clean = {k: summary[k] for k in ("games", "win_rate")}
    log(f"recorded {summary['games']} games ({summary['decisions']} decisions, "
        f"{summary['bytes_per_game']:.0f} bytes/game, win rate {summary['win_rate']:.3f} against "
        f"{'itself' if self_play else 'the AI'}; demonstrator alone against the AI {clean['win_rate']:.3f}) "
        f"in {t_record:.0f}s")

    dataset = DemonstrationDataset(out / "demonstrations", net_config)
    train_games, val_games = dataset.split(config.validation_fraction, seed=derive_seed(seed, Stream.SL_SPLIT))
    net = seeded_network(net_config, derive_seed(seed, Stream.SL_NETWORK))
    history = train_sl(net, dataset, train_games, config, seed=seed, log=log)
    t_train = time.perf_counter() - t0 - t_record
    validation = evaluate_sl(net, dataset, val_games, config.batch_size, config.seq_len)
    log("validation: " + ", ".join(f"{k} {v:.3f}" for k, v in validation.items() if k.endswith("accuracy")))

    # the same games as the demonstrator's measure above (paired)
    eval_battle = SMACBattle(map_name, min(config.num_envs, config.eval_games), two_player=False,
                             seed=derive_seed(seed, Stream.SL_EVALUATION, 0))
    play = play_vs_scripted(net, eval_battle, config.eval_games, config.eval_temperature,
                            seed=derive_seed(seed, Stream.SL_EVALUATION, 1))
    log(f"SL policy vs scripted: win rate {play['win_rate']:.3f} over {play['games']} games")

    checkpoint = out / "sl_checkpoint.pt"
    payload = {"state_dict": net.state_dict(), "network_config": asdict(net_config),
               "commander_config": asdict(commander.config), "map_name": map_name, "seed": seed}
    atomic_write(checkpoint, lambda tmp: torch.save(payload, tmp))
    metrics = {
        "map_name": map_name,
        "quick": bool(quick),
        "seed": seed,
        "demonstrator": config.demonstrator,
        "demonstrations_against": config.demonstrations_against,
        "action_type_accuracy": validation["action_type_accuracy"],
        "validation": validation,
        "win_rate_vs_scripted": play["win_rate"],
        "sl_policy_eval": play,
        "demonstrator_win_rate": clean["win_rate"],
        "demonstrator_eval": clean,
        "demonstrations": summary,
        "train_history": history,
        "parameters": count_parameters(net),
        "seconds": {"record": t_record, "train": t_train, "total": time.perf_counter() - t0},
        "config": {k: v for k, v in asdict(config).items()},
        "checkpoint": checkpoint.name,
    }
    metrics = json.loads(json.dumps(metrics, default=_jsonable))
    atomic_write_text(out / "sl_metrics.json", json.dumps(metrics, indent=2))
    return metrics


def _jsonable(x):
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, (tuple, set)):
        return list(x)
    return str(x)
