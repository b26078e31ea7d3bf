"""Demonstration recorder and dataset for supervised learning (docs/design/alphastar.md §3).

``record_demonstrations(battle, demonstrator, num_games, out_dir)`` plays ``battle``'s seat 0 with a
scripted commander (``demonstrators.py``) through ``SMACCommander`` and stores, for every decision
step, the network input the commander saw (features) and the demonstrator's action (labels).

On disk (``out_dir``): ``meta.json`` (map, seat, sizes, field list, counts) and chunks
``chunk_00000.npz`` … of ``games_per_chunk`` games each, written with ``np.savez_compressed``
(atomically: temporary file, then rename). Per decision step (row):

    entities float16 [N, F]    entity_mask bool [N]    entity_positions uint8 [N, 2]
    spatial float16 [C, R, R]  scalars float16 [K]     opponent_scalars float16 [K]   (packed in
                                                        the network's scalar-feature order)
    available bool [A]   selectable bool [A, N]   targetable bool [A, N]   location_mask bool [R, R]
    action_type / delay / queued int8, target_unit / location int16, selected_units int16 [S]
    game int32 (index in the chunk)

and per game ``outcome`` int8 (+1 win, 0 draw, −1 loss of the demonstrator) and ``length``.

``DemonstrationDataset(out_dir)`` loads the chunks and serves ``[B, T]`` batches for training an
LSTM over sequence chunks with carried state: every game is cut into windows of ``T`` decision
steps (the last one padded, ``valid`` false); games are dealt to ``B`` lanes (shuffled with a seed,
each to the lane with the fewest windows so far); batch ``k`` holds window ``k`` of every lane, so a
lane's LSTM state carries from one batch to the next, and ``episode_start`` resets it where a game
begins (always at a window's first step).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from selfplay.utils.io import atomic_write, atomic_write_text

from .demonstrators import merge_actions, random_nudge
from .network import AlphaStarActions, AlphaStarObs
from .scalar_encoder import split_scalars
from .smac.commander import SMACCommander
from .smac.features import MOVE

OBS_FIELDS = {
    "entities": np.float16,
    "entity_mask": np.bool_,
    "entity_positions": np.uint8,
    "spatial": np.float16,
    "scalars": np.float16,
    "opponent_scalars": np.float16,
    "available": np.bool_,
    "selectable": np.bool_,
    "targetable": np.bool_,
    "location_mask": np.bool_,
}
LABEL_FIELDS = {
    "action_type": np.int8,
    "delay": np.int8,
    "queued": np.int8,
    "target_unit": np.int16,
    "location": np.int16,
    "selected_units": np.int16,
}


def _pack_scalars(config, scalars: dict) -> torch.Tensor:
    return torch.cat([scalars[f.name].float() for f in config.scalar_feature_list], -1)


def _rows(obs: AlphaStarObs, actions: AlphaStarActions, games: torch.Tensor, config) -> dict[str, np.ndarray]:
    """The decision rows of the ``games`` (E,) bool, as numpy arrays in the stored dtypes."""
    g = games
    first = lambda x: x[:, 0][g]  # noqa: E731  [E, 1, ...] → [k, ...]
    obs_np = {
        "entities": first(obs.entities),
        "entity_mask": first(obs.entity_mask),
        "entity_positions": first(obs.entity_positions),
        "spatial": first(obs.spatial),
        "scalars": _pack_scalars(config, obs.scalars)[:, 0][g],
        "opponent_scalars": _pack_scalars(config, obs.opponent_scalars)[:, 0][g],
        "available": first(obs.available_action_types),
        "selectable": first(obs.selectable_units),
        "targetable": first(obs.targetable_units),
        "location_mask": first(obs.location_mask),
    }
    out = {k: v.cpu().numpy().astype(OBS_FIELDS[k]) for k, v in obs_np.items()}
    for k, dtype in LABEL_FIELDS.items():
        out[k] = getattr(actions, k).reshape(games.shape[0], -1)[g].squeeze(-1).cpu().numpy().astype(dtype)
    return out


def _save_npz(path: Path, arrays: dict) -> None:
    """``np.savez_compressed`` to a temporary file in the same folder, then rename (atomic)."""
    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, **arrays)

    atomic_write(path, write)


@torch.no_grad()
def record_demonstrations(battle, demonstrator, num_games: int, out_dir: str | os.PathLike,
                          games_per_chunk: int = 500, commander: SMACCommander | None = None,
                          perturb: float = 0.0, seed: int = 0) -> dict:
    """Play seat 0 of ``battle`` (all its games at once) with ``demonstrator`` until ``num_games``
    games have finished, store them in ``out_dir`` (module docstring) and return a summary:
    games, wins, draws, losses, win_rate, decisions, bytes, bytes_per_game.

    ``perturb``: probability per decision of executing ``demonstrators.random_nudge`` (a random
    short move of one unit, seeded by ``seed``) instead of the demonstrator's action; the stored
    label is always the demonstrator's action (state diversity with clean labels). SMAC's fixed
    spawns make the plain demonstrators' games nearly identical (3m: 12 distinct label sequences
    in 300 games), so ``perturb > 0`` is what makes a validation split measure generalisation.

    The battle must reset finished games itself (``auto_reset=True``). Seat 1 is the map's scripted AI
    on a one-seat battle (``two_player=False``); on a two-player battle the demonstrator plays seat 1
    too, through its own commander (self-play demonstrations: no game against the built-in AI), and
    only seat 0's decisions are stored."""
    _check_recording(battle, num_games, games_per_chunk, perturb)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cmd = commander or SMACCommander(battle, 0)
    rows, outcome = _play_games(battle, cmd, demonstrator, num_games, perturb, seed)
    lengths = np.bincount(rows["game"], minlength=num_games)
    chunks, total_bytes = _write_chunks(out, rows, outcome, lengths, games_per_chunk)
    summary = {
        "games": num_games,
        "wins": int((outcome == 1).sum()),
        "draws": int((outcome == 0).sum()),
        "losses": int((outcome == -1).sum()),
        "win_rate": float((outcome == 1).mean()),
        "decisions": int(lengths.sum()),
        "bytes": int(total_bytes),
        "bytes_per_game": total_bytes / num_games,
    }
    meta = {
        "map_name": getattr(battle, "map_name", None),
        "seat": 0,
        "opponent": "demonstrator" if battle.n_seats == 2 else "scripted_ai",
        "demonstrator": getattr(demonstrator, "name", type(demonstrator).__name__),
        "num_entities": cmd.n_entities,
        "max_selected_units": cmd.max_selected_units,
        "num_delays": cmd.config.num_delays,
        "chunks": chunks,
        "obs_fields": list(OBS_FIELDS),
        "label_fields": list(LABEL_FIELDS),
        **summary,
    }
    atomic_write_text(out / "meta.json", json.dumps(meta, indent=2))
    return summary


def _check_recording(battle, num_games: int, games_per_chunk: int, perturb: float) -> None:
    if not isinstance(num_games, int) or num_games < 1:
        raise ValueError(f"num_games must be a positive int, got {num_games!r}")
    if not isinstance(games_per_chunk, int) or games_per_chunk < 1:
        raise ValueError(f"games_per_chunk must be a positive int, got {games_per_chunk!r}")
    if not 0.0 <= perturb <= 1.0:
        raise ValueError(f"perturb must be in [0, 1], got {perturb!r}")
    if getattr(battle, "n_seats", 1) not in (1, 2):
        raise ValueError(f"record_demonstrations needs a battle of 1 or 2 seats, got {battle.n_seats}")


def _play_games(battle, cmd: SMACCommander, demonstrator, num_games: int, perturb: float,
                seed: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Play until games 0 … ``num_games``−1 have finished (env e starts as game e; a finished env takes
    the next game id). Returns the rows of those games' decision steps, sorted by game (time order
    kept; ``game``: the id), and each game's ``outcome`` (+1 win, 0 draw, −1 loss)."""
    config = cmd.network_config()
    E = cmd.num_envs
    rival = SMACCommander(battle, 1, cmd.config) if battle.n_seats == 2 else None  # self-play: seat 1
    battle.reset()
    cmd.reset_games()
    if rival is not None:
        rival.reset_games()
    game_of_env = torch.arange(E, device=cmd.device)  # the game id each env is playing
    generator = torch.Generator(device=cmd.device).manual_seed(int(seed))
    next_game = E
    outcome = np.zeros(num_games, dtype=np.int8)
    finished = np.zeros(num_games, dtype=bool)
    parts: list[dict] = []
    while not finished.all():
        due = cmd.due()
        obs = cmd.observe()
        actions = demonstrator(cmd)
        executed = actions
        if perturb > 0:
            nudge = torch.rand(E, generator=generator, device=cmd.device) < perturb
            executed = merge_actions(actions, random_nudge(cmd, generator), nudge & cmd.masks["available"][:, MOVE])
        cmd.apply(executed, due)
        keep = due & (game_of_env < num_games)
        if bool(keep.any()):
            rows = _rows(obs, actions, keep, config)
            rows["game"] = game_of_env[keep].cpu().numpy().astype(np.int32)
            parts.append(rows)
        seat_actions = [cmd.unit_actions()]
        if rival is not None:
            rival_due = rival.due()
            rival.observe()
            rival.apply(demonstrator(rival), rival_due)
            seat_actions.append(rival.unit_actions())
        _, _, done, info = battle.step(seat_actions)
        cmd.reset_games(done)
        if rival is not None:
            rival.reset_games(done)
        if bool(done.any()):
            won, lost = info["battle_won"][0].cpu(), (info["winner"] == 1).cpu()
            for e in torch.nonzero(done.cpu()).flatten().tolist():
                g = int(game_of_env[e])
                if g < num_games:
                    outcome[g] = 1 if bool(won[e]) else (-1 if bool(lost[e]) else 0)
                    finished[g] = True
                game_of_env[e] = next_game
                next_game += 1
    rows = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    order = np.argsort(rows["game"], kind="stable")  # by game, time order kept
    return {k: v[order] for k, v in rows.items()}, outcome


def _write_chunks(out: Path, rows: dict[str, np.ndarray], outcome: np.ndarray, lengths: np.ndarray,
                  games_per_chunk: int) -> tuple[list[str], int]:
    """``chunk_<c>.npz`` of ``games_per_chunk`` games each (``game`` counted from the chunk's first);
    returns the chunks' file names and their total size in bytes."""
    num_games = len(outcome)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    total_bytes = 0
    chunks = []
    for c, g0 in enumerate(range(0, num_games, games_per_chunk)):
        g1 = min(g0 + games_per_chunk, num_games)
        sl = slice(starts[g0], starts[g1])
        arrays = {k: v[sl] for k, v in rows.items()}
        arrays["game"] = arrays["game"] - g0
        arrays["outcome"] = outcome[g0:g1]
        arrays["length"] = lengths[g0:g1].astype(np.int32)
        path = out / f"chunk_{c:05d}.npz"
        _save_npz(path, arrays)
        total_bytes += path.stat().st_size
        chunks.append(path.name)
    return chunks, total_bytes


@dataclass
class SequenceBatch:
    """One ``[B, T]`` training batch: ``obs`` (with ``episode_start``), ``actions`` (labels),
    ``valid`` [B, T] bool (false on padding)."""

    obs: AlphaStarObs
    actions: AlphaStarActions
    valid: torch.Tensor


class DemonstrationDataset:
    """The recorded games of ``directory``, in memory (module docstring)."""

    def __init__(self, directory: str | os.PathLike, config=None):
        path = Path(directory)
        meta_path = path / "meta.json"
        if not meta_path.exists():
            raise ValueError(f"directory {str(path)!r} holds no recorded demonstrations (meta.json missing)")
        self.meta = json.loads(meta_path.read_text())
        self.config = config
        parts = [dict(np.load(path / name)) for name in self.meta["chunks"]]
        fields = list(OBS_FIELDS) + list(LABEL_FIELDS)
        self.data = {k: np.concatenate([p[k] for p in parts]) for k in fields}
        self.outcome = np.concatenate([p["outcome"] for p in parts])
        self.length = np.concatenate([p["length"] for p in parts]).astype(np.int64)
        self.start = np.concatenate([[0], np.cumsum(self.length)[:-1]]).astype(np.int64)
        self._game_start = np.zeros(self.num_steps, dtype=bool)
        self._game_start[self.start[self.length > 0]] = True

    @property
    def num_games(self) -> int:
        return len(self.length)

    @property
    def num_steps(self) -> int:
        return int(self.length.sum())

    def split(self, validation_fraction: float = 0.1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(train game ids, validation game ids), a seeded random split by game."""
        if not 0.0 < validation_fraction < 1.0:
            raise ValueError(f"validation_fraction must be in (0, 1), got {validation_fraction!r}")
        ids = np.random.default_rng(seed).permutation(self.num_games)
        n_val = max(1, int(round(validation_fraction * self.num_games)))
        if n_val >= self.num_games:
            raise ValueError(f"need at least 2 games to split, got {self.num_games}")
        return np.sort(ids[n_val:]), np.sort(ids[:n_val])

    def lanes(self, games: np.ndarray, batch_size: int, seq_len: int, seed: int | None = 0) -> np.ndarray:
        """(K, B, T) step indices (−1 = padding) of the windows dealt to ``batch_size`` lanes;
        ``seed=None`` keeps the given game order (evaluation)."""
        if batch_size < 1 or seq_len < 1:
            raise ValueError(f"batch_size and seq_len must be >= 1, got {batch_size}, {seq_len}")
        games = np.asarray(games)
        if seed is not None:
            games = np.random.default_rng(seed).permutation(games)
        lane_windows: list[list[np.ndarray]] = [[] for _ in range(batch_size)]
        for g in games:
            lane = min(range(batch_size), key=lambda b: len(lane_windows[b]))
            steps = np.arange(self.length[g])
            n_w = -(-len(steps) // seq_len)
            padded = np.full(n_w * seq_len, -1, dtype=np.int64)
            padded[: len(steps)] = self.start[g] + steps
            lane_windows[lane].extend(padded.reshape(n_w, seq_len))
        K = max(len(w) for w in lane_windows)
        out = np.full((K, batch_size, seq_len), -1, dtype=np.int64)
        for b, windows in enumerate(lane_windows):
            if windows:
                out[: len(windows), b] = np.stack(windows)
        return out

    def batch(self, index: np.ndarray) -> SequenceBatch:
        """The batch of step indices ``index`` [B, T] (−1: padding)."""
        if self.config is None:
            raise ValueError("batch() needs the network config (DemonstrationDataset(directory, config))")
        valid = index >= 0
        idx = np.where(valid, index, 0)
        d = {k: torch.from_numpy(v[idx]) for k, v in self.data.items()}
        first = self._game_start[idx] & valid  # the LSTM state resets where a game begins
        obs = AlphaStarObs(
            entities=d["entities"].float(),
            entity_mask=d["entity_mask"],
            spatial=d["spatial"].float(),
            scalars=split_scalars(self.config, d["scalars"].float()),
            available_action_types=d["available"],
            selectable_units=d["selectable"],
            targetable_units=d["targetable"],
            location_mask=d["location_mask"],
            entity_positions=d["entity_positions"].long(),
            opponent_scalars=split_scalars(self.config, d["opponent_scalars"].float()),
            episode_start=torch.from_numpy(first),
        )
        actions = AlphaStarActions(**{k: d[k].long() for k in LABEL_FIELDS})
        return SequenceBatch(obs=obs, actions=actions, valid=torch.from_numpy(valid))
