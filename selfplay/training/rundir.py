"""The run directory: everything a run produces, written atomically, resumable (architecture.md).

    config.yaml        the full resolved configuration
    state.pt           the resumable state (learner, scheme, payoff, counters, RNG), atomically replaced
    menagerie/         frozen policies + index.json (the scheme's menagerie)
    checkpoints/       evaluation checkpoints + index.json (separate from the menagerie)
    matches.csv        every match outcome: episode, learner, opponent, learner_seat, score
    metrics.csv        training curves (also TensorBoard events under tb/)
    trajectories.npz   per-episode trajectory vectors for embeddings
    evaluation/        winrate matrices, Nash, population metrics
    figures/           plots
    report.md          a short human-readable summary
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import yaml

from selfplay.utils.io import atomic_write, atomic_write_text

MATCH_COLUMNS = ("episode", "learner", "opponent", "learner_seat", "score")


class RunDir:
    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    # paths ------------------------------------------------------------------------------
    config = property(lambda self: self.root / "config.yaml")
    state = property(lambda self: self.root / "state.pt")
    menagerie = property(lambda self: self.root / "menagerie")
    checkpoints = property(lambda self: self.root / "checkpoints")
    matches = property(lambda self: self.root / "matches.csv")
    metrics = property(lambda self: self.root / "metrics.csv")
    trajectories = property(lambda self: self.root / "trajectories.npz")
    evaluation = property(lambda self: self.root / "evaluation")
    figures = property(lambda self: self.root / "figures")
    tensorboard = property(lambda self: self.root / "tb")
    report = property(lambda self: self.root / "report.md")

    def create(self) -> "RunDir":
        self.root.mkdir(parents=True, exist_ok=True)
        return self

    # config -----------------------------------------------------------------------------
    def write_config(self, config: Any) -> None:
        data = asdict(config) if is_dataclass(config) else dict(config)
        atomic_write_text(self.config, yaml.safe_dump(data, sort_keys=False))

    def read_config(self) -> dict:
        with open(self.config, encoding="utf-8") as f:
            return yaml.safe_load(f)

    # tables -----------------------------------------------------------------------------
    def write_rows(self, path: Path, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Rewrite a whole CSV atomically (tables are small enough: one row per episode/update)."""
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(columns)
        writer.writerows(rows)
        atomic_write_text(path, buffer.getvalue())


def save_torch(path: Path, obj: Any) -> None:
    import torch

    atomic_write(path, lambda tmp: torch.save(obj, tmp))
