"""The run directory: everything a run produces, committed atomically, resumable (docs/design/run-directory.md).

    manifest.json      the commit point: format, kind of run, generation, state file, and the size and
                       SHA-256 of every committed file (state and policies); replaced atomically, last
    state-<gen>.npz    the resumable state of that generation (learners, schemes, payoffs, counters,
                       RNG, menagerie indexes, match/metric rows, trajectories) as data (``statefile``)
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
atomically, never rewritten), then ``state-<gen>.npz``, then ``manifest.json`` is replaced. Resume
reads only what the manifest names and verifies each file's SHA-256, so a run killed at any instant —
or stopped by a full disk — resumes from its last commit; one killed before its first commit has no
manifest and starts afresh. The tables, indexes and ``trajectories.npz`` are exports of the committed
state, brought up to date after each commit (``commit_texts``; rewritten whole on resume), for readers; ``selfplay evaluate`` reads the
committed state itself.

A run directory is data, possibly someone else's: nothing read from it runs code (the state is JSON
and arrays, policies are read with ``torch.load(weights_only=True)``), every name read from a manifest
or index is a plain name inside the directory, files are opened without following links, a directory
holding a symbolic link is refused, and cleanup removes only the temporary and stray files this module
names, in the run's own folders, once the run was accepted for resume.
"""

from __future__ import annotations

import csv
import errno
import fcntl
import hashlib
import io
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import yaml

from selfplay.training import statefile
from selfplay.training.rundir_paths import RunDirError, check_out, find_links, plain_name, read_inside, unlink_regular
from selfplay.utils.io import atomic_write, atomic_write_json, atomic_write_text, fsync_dir

__all__ = ["RunDir", "RunDirError", "check_out", "kind_of", "open_committed", "read_inside", "KINDS", "FORMAT"]

MANIFEST = "manifest.json"
LOCK = ".lock"
STATE_PATTERN = re.compile(r"^state-(\d{6})\.(npz|pt)$")  # .pt: the pickled state of selfplay-run/2
POLICY_PATTERN = re.compile(r"^policy_\d{6}\.pt$")
TEMP_PATTERN = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")  # utils.io.atomic_write's temporary files (mkstemp)
FORMAT = "selfplay-run/3"
OLD_FORMATS = {"selfplay-run/2": "selfplay-run/2 (a pickled state-<gen>.pt)"}
MAX_MANIFEST_BYTES = 16 << 20

KINDS = {
    "train": "a training run (`selfplay train`)",
    "league": "a league run (`selfplay league`)",
    "comparison": "a comparison (`selfplay compare`)",
    "sl": "an SL run (`selfplay sl`)",
    "vs-ai": "a run against the built-in AI (`selfplay train --opponent builtin-ai`)",
}


def kind_of(root: Path) -> str | None:
    """What a directory holds (a key of ``KINDS``), from its marker files; ``None``: none of them."""
    if (root / "compare_config.json").is_file():
        return "comparison"
    manifest = root / MANIFEST
    if manifest.is_file() and not manifest.is_symlink():
        try:
            kind = statefile.json_object(read_inside(root, MANIFEST, "manifest", MAX_MANIFEST_BYTES)).get("kind")
        except (OSError, ValueError):
            kind = None
        if kind in KINDS:
            return kind
    config = root / "config.yaml"
    if config.is_file():
        try:
            data = yaml.safe_load(read_inside(root, "config.yaml", "config", MAX_MANIFEST_BYTES).decode("utf-8"))
        except RunDirError:
            raise
        except (OSError, ValueError, yaml.YAMLError):
            data = None
        return "league" if isinstance(data, dict) and "league" in data else "train"
    if (root / "sl_checkpoint.pt").is_file() or (root / "sl_metrics.json").is_file():
        return "sl"
    return None


class RunDir:
    def __init__(self, root: str | os.PathLike, kind: str = "train") -> None:
        check_out(root)
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
        self.root = Path(root)
        self.kind = kind  # what this directory is to hold (KINDS), recorded in the manifest
        self._lock_fd: int | None = None
        self._hashes: dict[str, dict] = {}  # committed files' size and SHA-256 (policy files are immutable)

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

    def create(self) -> RunDir:
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

    def check_kind(self, command: str | None = None) -> None:
        """Refuse a directory that holds another kind of output than ``self.kind``, in one line."""
        held = kind_of(self.root) if self.root.is_dir() else None
        if held is not None and held != self.kind:
            command = command or f"selfplay {'compare' if self.kind == 'comparison' else self.kind}"
            raise RunDirError(f"out {str(self.root)!r} holds {KINDS[held]}; `{command}` writes {KINDS[self.kind]}: "
                              "use another directory")

    def check_links(self) -> None:
        """Refuse a directory holding symbolic links (a link could send a write or a read elsewhere)."""
        links = find_links(self.root)
        if links:
            shown = ", ".join(links[:3]) + (f" and {len(links) - 3} more" if len(links) > 3 else "")
            raise RunDirError(f"run directory {str(self.root)!r} holds symbolic links ({shown}); a run directory "
                              "holds no links: remove them or use another directory")

    # one writer -------------------------------------------------------------------------
    def lock(self, command: str | None = None) -> RunDir:
        """Take the directory's exclusive lock (released when the process dies, so a crashed run can
        be resumed at once); a second writer gets a clear error naming the holder's pid. The lock file
        is never opened through a link; a directory holding links or another kind of output is refused."""
        if self._lock_fd is not None:
            return self
        self.create()
        self.check_kind(command)
        path = self.root / LOCK
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise RunDirError(f"run directory {str(self.root)!r}: its {LOCK} is a symbolic link; a run "
                                  "directory holds no links") from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise RunDirError(f"run directory {str(self.root)!r}: its {LOCK} is not a regular file")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunDirError(f"run directory {str(self.root)!r} is being written by another process (pid {holder}); "
                              "wait for it to finish or use another directory") from None
        try:
            self.check_links()
        except RunDirError:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd
        return self

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    def check_not_written(self) -> None:
        """Refuse a directory whose lock another process holds (a run being written)."""
        if self._lock_fd is not None:
            return
        try:
            fd = os.open(self.root / LOCK, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise RunDirError(f"run directory {str(self.root)!r}: its {LOCK} is a symbolic link; a run "
                                  "directory holds no links") from None
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise RunDirError(f"run directory {str(self.root)!r} is being written by another process (pid {holder}); "
                              "read it when that run has finished") from None
        finally:
            os.close(fd)

    # config -----------------------------------------------------------------------------
    def write_config(self, config: Any) -> None:
        data = asdict(config) if is_dataclass(config) else dict(config)
        atomic_write_text(self.config, yaml.safe_dump(data, sort_keys=False))

    def read_config(self) -> dict:
        if not self.root.is_dir():
            raise RunDirError(f"run_dir {str(self.root)!r} is not a directory")
        held = kind_of(self.root)
        if held == "comparison":
            raise RunDirError(f"run_dir {str(self.root)!r} is a comparison (`selfplay compare`), already evaluated "
                              "in its report.md; evaluate one of its runs: runs/<agent>/<scheme>-s<seed>")
        if held == "sl":
            raise RunDirError(f"run_dir {str(self.root)!r} holds {KINDS['sl']}, not a training run")
        if not self.config.is_file():
            if (self.root / "matchmaking.csv").is_file() or (self.root / "report.md").is_file():
                raise RunDirError(f"run_dir {str(self.root)!r} has no config.yaml: not a finished run directory")
            raise RunDirError(f"run_dir {str(self.root)!r} is not a run directory (no config.yaml)")
        try:
            data = yaml.safe_load(read_inside(self.root, "config.yaml", "config", MAX_MANIFEST_BYTES).decode("utf-8"))
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
        return self.manifest.exists() or self.manifest.is_symlink()

    def _file_record(self, rel: str) -> dict:
        if rel not in self._hashes:
            data = read_inside(self.root, rel, "commit")
            self._hashes[rel] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        return self._hashes[rel]

    def commit(self, state: dict, files: Sequence[Path]) -> int:
        """Commit ``state`` (data: ``statefile``) as the next generation; ``files`` are the policy files
        it refers to, already written. Returns the generation. The manifest's replacement is the commit."""
        previous = self.read_manifest()["generation"] if self.has_commit() else 0
        generation = previous + 1
        name = f"state-{generation:06d}.npz"
        data = statefile.encode(state)
        atomic_write(self.root / name, lambda tmp: Path(tmp).write_bytes(data))
        listed = {str(Path(f).relative_to(self.root)): self._file_record(str(Path(f).relative_to(self.root)))
                  for f in files}
        record = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        atomic_write_json(self.manifest, {"format": FORMAT, "kind": self.kind, "generation": generation,
                                          "state": name, "files": {name: record, **listed}})
        fsync_dir(self.root)
        self._hashes = {rel: r for rel, r in listed.items()}
        for old in os.listdir(self.root):
            match = STATE_PATTERN.match(old)
            if match and old != name:
                unlink_regular(self.root / old)
        return generation

    def read_manifest(self) -> dict:
        """The manifest, checked: this format, plain names, a size and SHA-256 for every file."""
        try:
            manifest = statefile.json_object(read_inside(self.root, MANIFEST, "manifest", MAX_MANIFEST_BYTES))
        except FileNotFoundError:
            raise self._damaged(f"{MANIFEST} is missing") from None
        except (OSError, ValueError) as error:
            if isinstance(error, RunDirError):
                raise
            raise self._damaged(f"{MANIFEST} is unreadable") from None
        fmt = manifest.get("format")
        if fmt != FORMAT:
            if fmt in OLD_FORMATS:
                raise RunDirError(f"run directory {str(self.root)!r} holds a run of an older format, {OLD_FORMATS[fmt]}, "
                                  "which this version does not read (it is a pickle, and unpickling can run code); "
                                  "start afresh with another directory")
            raise self._damaged(f"{MANIFEST} has format {fmt!r}, not {FORMAT!r}")
        generation, name, files = manifest.get("generation"), manifest.get("state"), manifest.get("files")
        if (not isinstance(generation, int) or isinstance(generation, bool) or generation < 1
                or name != f"state-{generation:06d}.npz" or not isinstance(files, dict) or name not in files):
            raise self._damaged(f"{MANIFEST} is malformed (generation, state and files must agree)")
        for rel, record in files.items():
            plain_name(rel, MANIFEST)
            if (not isinstance(record, dict) or not isinstance(record.get("size"), int)
                    or not isinstance(record.get("sha256"), str) or not re.fullmatch(r"[0-9a-f]{64}", record["sha256"])):
                raise self._damaged(f"{MANIFEST} has no size and SHA-256 for {rel}")
        return manifest

    def load_commit(self) -> dict:
        """The last committed state, after checking the SHA-256 of every file the manifest names.

        Raises ``RunDirError`` naming what is damaged and how to recover. Removes nothing: a caller that
        accepts the run calls ``remove_strays`` (``committed_files`` names what to keep).
        """
        manifest = self.read_manifest()
        hashes = {}
        for rel, record in manifest["files"].items():
            try:
                data = read_inside(self.root, rel, "commit")
            except FileNotFoundError:
                raise self._damaged(f"{'the committed state ' if rel == manifest['state'] else ''}{rel} is missing") from None
            if len(data) != record["size"] or hashlib.sha256(data).hexdigest() != record["sha256"]:
                raise self._damaged(f"{rel} does not match its SHA-256 in the manifest")
            hashes[rel] = record
            if rel == manifest["state"]:
                state_bytes = data
        try:
            state = statefile.decode(state_bytes)
        except statefile.StateFileError as error:
            raise self._damaged(f"the committed state {manifest['state']} is not a state file ({error})") from None
        if not isinstance(state, dict):
            raise self._damaged(f"the committed state {manifest['state']} is not a mapping")
        self._hashes = {rel: r for rel, r in hashes.items() if rel != manifest["state"]}
        self.committed_files = set(manifest["files"])
        return state

    committed_files: set = frozenset()

    def committed_menagerie(self, state: dict, folder: str, load_policy: Any = None):
        """The menagerie of ``folder`` as ``state`` (a ``load_commit``) holds it, its policies read with
        ``load_policy``; every policy file it names must be a file of the commit (so its SHA-256 was checked)."""
        from selfplay.core.menagerie import Menagerie

        index = state.get("menageries", {}).get(folder) if isinstance(state.get("menageries"), dict) else None
        if not isinstance(index, dict):
            raise self._damaged(f"the committed state has no {folder} index")
        for row in index.get("entries", []):
            name = row.get("file") if isinstance(row, dict) else None
            if name is not None and f"{folder}/{name}" not in self.committed_files:
                raise self._damaged(f"the {folder} index names {name!r}, which is not a file of the commit")
        try:
            return Menagerie.from_index(index, self.root / folder, load_policy)
        except RunDirError:
            raise
        except (ValueError, KeyError, TypeError) as error:
            raise self._damaged(f"the {folder} index is malformed ({error})") from None

    def remove_strays(self, folders: Iterable[str]) -> None:
        """Remove what an interrupted save left, once the run was accepted: this module's temporary
        files (``TEMP_PATTERN``) and uncommitted states in the directory, and policy files no commit
        names in the run's menagerie ``folders`` — regular files only, nothing else."""
        keep = set(self.committed_files)
        for folder in ["", *folders]:
            here = self.root / folder if folder else self.root
            if folder:
                plain_name(folder, "menagerie folder")
            if not here.is_dir() or here.is_symlink():
                continue
            for name in os.listdir(here):
                rel = f"{folder}/{name}" if folder else name
                stray = (TEMP_PATTERN.match(name)
                         or (not folder and STATE_PATTERN.match(name) and rel not in keep)
                         or (folder and POLICY_PATTERN.match(name) and rel not in keep))
                if stray:
                    unlink_regular(here / name)

    def _damaged(self, what: str) -> RunDirError:
        return RunDirError(f"run directory {str(self.root)!r} is damaged: {what}. Restore the directory from a "
                           "backup to resume, or start afresh with another directory")


def open_committed(run_dir: str | Path | RunDir) -> tuple[RunDir, dict, Any]:
    """``(run, state, kit)`` of a training run's directory for a reader: a directory of another kind, one
    being written or one without a commit is refused; ``state`` is its last commit, every file's SHA-256
    checked (``RunDir.load_commit``); ``kit`` the agent's, from the committed configuration."""
    run = run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir)
    if "league" in run.read_config():
        raise ValueError(f"run_dir {str(run.root)!r} is a league run: `selfplay league` evaluated it into its report.md")
    run.check_not_written()
    if not run.has_commit():
        raise ValueError(f"run_dir {str(run.root)!r} has no commit yet (its run never saved): nothing to evaluate")
    state = run.load_commit()
    config = state.get("config")
    if not isinstance(config, dict) or not isinstance(config.get("agent"), str) or not isinstance(config.get("env"), str):
        raise run._damaged("the committed state has no agent and env")
    from selfplay.training.registry import agent_kit

    return run, state, agent_kit(config["agent"], config["env"])
