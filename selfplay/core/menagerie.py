"""The menagerie: an ordered, append-only record of frozen policies (docs/design/architecture.md "Menagerie"; docs/design/selfplay.md §1).

An entry has a stable integer id (its order of entry; ids are never reused, even after a discard),
the learner step at which it entered, free-form tags (player name, parent, episode, ...) and a
handle on the frozen policy. Several entries may share one policy object (snapshots of a learner
whose weights did not change); ``save`` writes such a policy once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from selfplay.utils.io import atomic_write, atomic_write_json, read_json

INDEX_FILE = "index.json"
_FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")  # a policy file's name: plain, inside the folder


@dataclass
class Entry:
    """One frozen policy of the menagerie."""

    id: int
    step: int
    tags: dict = field(default_factory=dict)
    policy: Any = None
    file: str | None = None  # policy file name inside the menagerie folder, once saved

    def __repr__(self) -> str:
        return f"Entry(id={self.id}, step={self.step}, tags={self.tags})"


class Menagerie:
    """Ordered set of frozen policies with stable, increasing, never-reused ids."""

    def __init__(self) -> None:
        self._entries: dict[int, Entry] = {}
        self._next_id = 0
        self._rows: dict[int, dict] = {}  # index()'s row of each entry, kept while its step and file are the same

    # -- building -------------------------------------------------------------------------
    def add(self, policy: Any, *, step: int = 0, **tags: Any) -> Entry:
        """Append ``policy`` as a new entry and return it."""
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
            raise ValueError(f"step must be a non-negative integer, got {step!r}")
        entry = Entry(id=self._next_id, step=int(step), tags=dict(tags), policy=policy)
        self._entries[entry.id] = entry
        self._next_id += 1
        return entry

    def discard(self, entry_id: int) -> Entry:
        """Remove an entry; its id is never given out again."""
        if entry_id not in self._entries:
            raise ValueError(f"entry_id {entry_id!r} is not in the menagerie (ids: {self.ids[:10]}...)")
        return self._entries.pop(entry_id)

    # -- reading --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(list(self._entries.values()))

    def __getitem__(self, entry_id: int) -> Entry:
        try:
            return self._entries[entry_id]
        except KeyError:
            raise KeyError(f"no entry with id {entry_id!r}") from None

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._entries

    @property
    def ids(self) -> list[int]:
        return list(self._entries)

    @property
    def entries(self) -> list[Entry]:
        return list(self._entries.values())

    @property
    def next_id(self) -> int:
        return self._next_id

    @property
    def latest(self) -> Entry:
        if not self._entries:
            raise ValueError("the menagerie is empty: there is no latest entry")
        return self._entries[next(reversed(self._entries))]

    def where(self, **tags: Any) -> list[Entry]:
        """Entries whose tags contain every given ``key=value``."""
        return [e for e in self._entries.values() if all(e.tags.get(k) == v for k, v in tags.items())]

    # -- persistence ----------------------------------------------------------------------
    def save_policies(self, directory: str | os.PathLike, save_policy: Callable[[Any, str], None]) -> list[str]:
        """Write every not-yet-saved policy (once per shared object) into ``directory``; returns the
        file names every entry refers to. Policy files are immutable (frozen policies do not change),
        so saving is incremental and a file is never rewritten once an entry names it."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        written: dict[int, str] = {id(e.policy): e.file for e in self._entries.values() if e.file}
        for entry in self._entries.values():
            if entry.policy is None or entry.file is not None:
                continue
            key = id(entry.policy)
            if key not in written:
                name = f"policy_{entry.id:06d}.pt"
                atomic_write(directory / name, lambda tmp, p=entry.policy: save_policy(p, tmp))
                written[key] = name
            entry.file = written[key]
        return sorted({e.file for e in self._entries.values() if e.file})

    def index(self) -> dict:
        """The menagerie without its policies: ``{"next_id", "entries": [{id, step, tags, file}]}``. An entry's
        row is the same dict object from one call to the next while its step, tags object and file are (a
        commit encodes it once); an entry's tags are not changed in place once it is added."""
        rows, kept = [], {}
        for e in self._entries.values():
            row = self._rows.get(e.id)
            if row is None or row["step"] != e.step or row["tags"] is not e.tags or row["file"] != e.file:
                row = {"id": e.id, "step": e.step, "tags": e.tags, "file": e.file}
            rows.append(row)
            kept[e.id] = row
        self._rows = kept
        return {"next_id": self._next_id, "entries": rows}

    def save(self, directory: str | os.PathLike, save_policy: Callable[[Any, str], None] | None = None) -> Path:
        """Write every not-yet-saved policy and then ``index.json``, atomically.

        ``save_policy(policy, path)`` writes one policy; without it only the index is written.
        """
        if save_policy is not None:
            self.save_policies(directory, save_policy)
        return atomic_write_json(Path(directory) / INDEX_FILE, self.index())

    @classmethod
    def from_index(cls, index: dict, directory: str | os.PathLike | None = None,
                   load_policy: Callable[[str], Any] | None = None) -> Menagerie:
        """Rebuild a menagerie from ``index()``; entries sharing a file share one loaded policy."""
        rows = index.get("entries", []) if isinstance(index, dict) else None
        if not isinstance(rows, list) or not all(isinstance(r, dict) and {"id", "step", "tags", "file"} <= set(r) for r in rows):
            raise ValueError("menagerie index must hold a list of entries with id, step, tags and file")
        for row in rows:
            name = row["file"]
            if name is not None and not (isinstance(name, str) and _FILE_NAME.match(name)):
                raise ValueError(f"menagerie index names file {name!r}, which is not a plain file name in its folder")
            if not isinstance(row["tags"], dict) or isinstance(row["id"], bool) or not isinstance(row["id"], int):
                raise ValueError(f"menagerie index entry {row['id']!r} must have an integer id and a mapping of tags")
        ids = [row["id"] for row in rows]
        if len(set(ids)) != len(ids):
            raise ValueError(f"menagerie index has duplicate entry ids: {sorted(i for i in set(ids) if ids.count(i) > 1)}")
        next_id = index.get("next_id")
        if not isinstance(next_id, int) or next_id < 0 or any(i >= next_id for i in ids):
            raise ValueError(f"menagerie index has next_id {next_id!r}, which must be an integer above every entry id")
        menagerie = cls()
        loaded: dict[str, Any] = {}
        for row in index["entries"]:
            policy = None
            if load_policy is not None and row["file"]:
                if row["file"] not in loaded:
                    loaded[row["file"]] = load_policy(str(Path(directory) / row["file"]))
                policy = loaded[row["file"]]
            entry = Entry(id=int(row["id"]), step=int(row["step"]), tags=dict(row["tags"]), policy=policy, file=row["file"])
            menagerie._entries[entry.id] = entry
        menagerie._next_id = next_id
        return menagerie

    @classmethod
    def load(cls, directory: str | os.PathLike, load_policy: Callable[[str], Any] | None = None) -> Menagerie:
        """Read a menagerie written by ``save``."""
        directory = Path(directory)
        return cls.from_index(read_json(directory / INDEX_FILE), directory, load_policy)
