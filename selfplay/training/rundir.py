"""The run directory: everything a run produces, committed atomically, resumable (docs/design/run-directory.md).

    manifest.json      the commit point: generation, state file, every file the state needs (size,
                       and the state's SHA-256); replaced atomically, last, at each save
    state-<gen>.pt     the resumable state of that generation (learners, schemes, payoffs, counters,
                       RNG, menagerie indexes, match/metric rows, trajectories)
    config.yaml        the full resolved configuration (display-only options left out)
    menagerie/         frozen policies (immutable files) + index.json (the scheme's menagerie)
    checkpoints/       evaluation checkpoints + index.json (separate from the menagerie)
    matches.csv        every match outcome: player, episode, step, opponent, opponent_kind, learner_seat, score
    metrics.csv        training curves (also TensorBoard events under tb/)
    trajectories.npz   per-episode trajectory vectors for embeddings
    evaluation/        winrate matrices, Nash, population metrics
    figures/           plots
    report.md          a short human-readable summary
    .lock              held (flock) by the one process writing the directory

A save is one commit (docs/design/run-directory.md): new policy files are written first (each
atomically, never rewritten), then ``state-<gen>.pt``, then ``manifest.json`` is replaced. Resume
reads only what the manifest names and verifies it, so a run killed at any instant — or stopped by a
full disk — resumes from its last commit. The tables, indexes and ``trajectories.npz`` are exports
of the committed state, rewritten after each commit (and on resume), for readers and for
``selfplay evaluate``.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import io
import os
import pickle
import re
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import yaml

from selfplay.utils.io import TMP_SUFFIX, atomic_write, atomic_write_json, atomic_write_text, fsync_dir, read_json

MANIFEST = "manifest.json"
LOCK = ".lock"
STATE_PATTERN = re.compile(r"^state-(\d+)\.pt$")
FORMAT = "selfplay-run/2"


class RunDirError(ValueError):
    """A run directory that cannot be used as asked (damaged, locked, not a run, another config)."""


class RunDir:
    def __init__(self, root: str | os.PathLike) -> None:
        if isinstance(root, str) and not root.strip():
            raise ValueError("out must name a directory, got an empty string")
        self.root = Path(root)
        self._lock_fd: int | None = None

    # paths ------------------------------------------------------------------------------
    config = property(lambda self: self.root / "config.yaml")
    manifest = property(lambda self: self.root / MANIFEST)
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
        """Make the directory (with a clear error where that is impossible)."""
        if self.root.exists() and not self.root.is_dir():
            raise RunDirError(f"out {str(self.root)!r} is a file, not a directory")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RunDirError(f"out {str(self.root)!r} cannot be created: {error.strerror or error}") from None
        if not os.access(self.root, os.W_OK):
            raise RunDirError(f"out {str(self.root)!r} is not writable")
        return self

    # one writer -------------------------------------------------------------------------
    def lock(self) -> "RunDir":
        """Take the directory's exclusive lock (released when the process dies, so a crashed run can
        be resumed at once); a second writer gets a clear error naming the holder's pid."""
        if self._lock_fd is not None:
            return self
        self.create()
        path = self.root / LOCK
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunDirError(f"run directory {str(self.root)!r} is being written by another process (pid {holder}); "
                              "wait for it to finish or use another --out") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd
        return self

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    # config -----------------------------------------------------------------------------
    def write_config(self, config: Any) -> None:
        data = asdict(config) if is_dataclass(config) else dict(config)
        atomic_write_text(self.config, yaml.safe_dump(data, sort_keys=False))

    def read_config(self) -> dict:
        if not self.root.is_dir():
            raise RunDirError(f"run_dir {str(self.root)!r} is not a directory")
        if not self.config.is_file():
            if (self.root / "compare_config.json").is_file():
                raise RunDirError(f"run_dir {str(self.root)!r} is a comparison (`selfplay compare`), already evaluated "
                                  "in its report.md; evaluate one of its runs: runs/<agent>/<scheme>-s<seed>")
            if (self.root / "matchmaking.csv").is_file() or (self.root / "report.md").is_file():
                raise RunDirError(f"run_dir {str(self.root)!r} has no config.yaml: not a finished run directory")
            raise RunDirError(f"run_dir {str(self.root)!r} is not a run directory (no config.yaml)")
        try:
            with open(self.config, encoding="utf-8") as f:
                data = yaml.safe_load(f)
        except (yaml.YAMLError, UnicodeDecodeError) as error:
            raise RunDirError(f"{self.config} is damaged (not valid YAML: {str(error).splitlines()[0]})") from None
        if not isinstance(data, dict):
            raise RunDirError(f"{self.config} is damaged (expected a mapping of settings)")
        return data

    # tables -----------------------------------------------------------------------------
    def write_rows(self, path: Path, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Rewrite a whole CSV atomically."""
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(columns)
        writer.writerows(rows)
        atomic_write_text(path, buffer.getvalue())

    # commits ----------------------------------------------------------------------------
    def has_commit(self) -> bool:
        return self.manifest.exists()

    def commit(self, state: dict, files: Sequence[Path]) -> int:
        """Commit ``state`` (picklable) as the next generation; ``files`` are the policy files it refers
        to, already written. Returns the generation. The manifest's replacement is the commit."""
        previous = read_json(self.manifest)["generation"] if self.manifest.exists() else 0
        generation = previous + 1
        name = f"state-{generation:06d}.pt"
        data = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        atomic_write(self.root / name, lambda tmp: Path(tmp).write_bytes(data))
        listed = {str(Path(f).relative_to(self.root)): Path(f).stat().st_size for f in files}
        atomic_write_json(self.manifest, {
            "format": FORMAT, "generation": generation, "state": name, "state_size": len(data),
            "state_sha256": hashlib.sha256(data).hexdigest(), "files": listed,
        })
        fsync_dir(self.root)
        for old in self.root.iterdir():
            match = STATE_PATTERN.match(old.name)
            if match and int(match.group(1)) != generation:
                old.unlink(missing_ok=True)
        return generation

    def load_commit(self) -> dict:
        """The last committed state, after checking every file the manifest names.

        Raises ``RunDirError`` naming what is damaged and how to recover; removes stray files of an
        interrupted save (temporary files, uncommitted states and policy files).
        """
        try:
            manifest = read_json(self.manifest)
            generation, name = int(manifest["generation"]), str(manifest["state"])
        except (OSError, ValueError, KeyError, TypeError):
            raise self._damaged(f"{MANIFEST} is unreadable") from None
        path = self.root / name
        if not path.is_file():
            raise self._damaged(f"the committed state {name} is missing")
        data = path.read_bytes()
        if len(data) != manifest.get("state_size") or hashlib.sha256(data).hexdigest() != manifest.get("state_sha256"):
            raise self._damaged(f"the committed state {name} does not match its checksum")
        for rel, size in manifest.get("files", {}).items():
            f = self.root / rel
            if not f.is_file():
                raise self._damaged(f"{rel} is missing")
            if f.stat().st_size != size:
                raise self._damaged(f"{rel} has {f.stat().st_size} bytes, the commit recorded {size}")
        try:
            state = pickle.loads(data)
        except Exception as error:  # a checksum-valid file that does not unpickle: another program wrote it
            raise self._damaged(f"the committed state {name} cannot be read ({type(error).__name__})") from None
        self._remove_strays(generation, set(manifest.get("files", {})))
        return state

    def _remove_strays(self, generation: int, keep: set[str]) -> None:
        for f in self.root.rglob("*"):
            if not f.is_file():
                continue
            rel = str(f.relative_to(self.root))
            match = STATE_PATTERN.match(f.name)
            if f.name.endswith(TMP_SUFFIX) and f.name.startswith("."):
                f.unlink(missing_ok=True)
            elif match and f.parent == self.root and int(match.group(1)) != generation:
                f.unlink(missing_ok=True)
            elif f.suffix == ".pt" and f.name.startswith("policy_") and rel not in keep:
                f.unlink(missing_ok=True)  # written by an interrupted save, never committed

    def _damaged(self, what: str) -> RunDirError:
        return RunDirError(f"run directory {str(self.root)!r} is damaged: {what}. Restore the directory from a "
                           "backup to resume, or start afresh with another --out")
