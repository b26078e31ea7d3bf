"""What a commit writes again, written once: the texts of the parts of a run's state that only grow.

A run commits after every learner update (``trainer.Trainer.save``). Under δ-Uniform the menagerie
gains an entry per finished game, so by the end every commit held thousands of menagerie entries,
payoff pairs and match rows, and encoded all of them again, and rewrote ``matches.csv`` and the
indexes. ``CommitTexts`` keeps each item's text and encodes only what is new or changed since the
last commit; the bytes written are the same as a full rewrite's (the state file through
``statefile.Encoded``, the indexes as ``utils.io.json_text`` lays them out, the tables as
``csv.writer`` writes them — tested against the full rewrite):

- the exports are views of the committed state, rebuilt on resume: they are replaced atomically or
  appended to, not flushed to disk (``utils.io.atomic_write(durable=False)``);
- match rows and metric rows only grow: their texts are appended, and the CSV files are appended to
  (a file that is not the size the last write left, or whose columns changed, is rewritten whole);
- a menagerie entry's row and a payoff pair's row are the same object from one commit to the next
  while they are unchanged (``Menagerie.index``, ``Payoff.to_dict``): their texts are kept by the row.
"""

from __future__ import annotations

import csv
import errno
import io
import os
from pathlib import Path

from selfplay.core.menagerie import Menagerie
from selfplay.training.statefile import Encoded, plain_text, rows_text
from selfplay.utils.io import DiskFullError, _is_disk_full, atomic_write_text
from selfplay.utils.io import _encode as index_text

_PLAIN = frozenset((str, int, float, bool, type(None)))


class CommitTexts:
    """One run's cache of item texts (module docstring); a fresh one knows nothing and writes everything."""

    def __init__(self) -> None:
        self._rows: tuple = (None, 0, None, [])  # (the list, rows encoded, its last row, their texts)
        self._items: dict[int, tuple] = {}  # id(row) -> (row, state text, index.json text or None)
        self._tables: dict[Path, tuple] = {}  # path -> (columns, rows written, size on disk)

    # -- the state file ------------------------------------------------------------------
    def rows(self, rows: list) -> Encoded | list:
        """``rows`` (a list that only grows, of tuples of plain values) as its state text; anything else as is."""
        held, n, last, texts = self._rows
        if held is not rows or len(rows) < n or (n and rows[n - 1] is not last):
            n, texts = 0, []
        for row in rows[n:]:
            if type(row) is not tuple or not all(type(v) in _PLAIN for v in row):
                self._rows = (None, 0, None, [])
                return rows
            texts.append(plain_text(list(row)))
        self._rows = (rows, len(rows), rows[-1] if rows else None, texts)
        return Encoded(rows_text(texts))

    def _texts(self, rows: list, both: bool = False) -> list[tuple]:
        """``(state text, index.json text if both)`` of each row (dicts or lists of plain data), kept by the
        row object; a row of other data is ``TypeError``."""
        kept, out = {}, []
        for row in rows:
            cached = self._items.get(id(row))
            if cached is None or cached[0] is not row:
                cached = (row, plain_text(row), index_text(row) if both else None)
            kept[id(row)] = cached
            out.append(cached)
        self._items.update(kept)
        return out

    def index(self, index: dict) -> dict:
        """A menagerie's ``index()`` with its entries as their state text."""
        try:
            texts = [t[1] for t in self._texts(index["entries"], both=True)]
        except TypeError:  # tags that are not plain data: the full encoding names the problem
            return index
        return {**index, "entries": Encoded("[" + ",".join(texts) + "]")}

    def pairs(self, rows: list) -> Encoded | list:
        """A payoff's ``to_dict()["pairs"]`` as their state text."""
        try:
            return Encoded("[" + ",".join(t[1] for t in self._texts(rows)) + "]")
        except TypeError:
            return rows

    def prune(self, live: list) -> None:
        """Forget the texts of rows not in ``live`` (lists of rows still held)."""
        ids = {id(row) for rows in live for row in rows}
        self._items = {k: v for k, v in self._items.items() if k in ids}

    # -- the exports ---------------------------------------------------------------------
    def write_index(self, menagerie: Menagerie, directory: Path) -> None:
        """``index.json`` of ``menagerie`` as ``Menagerie.save`` writes it (``json_text``, two levels)."""
        index = menagerie.index()
        try:
            texts = [t[2] or index_text(t[0]) for t in self._texts(index["entries"], both=True)]
        except TypeError:
            menagerie.save(directory)
            return
        entries = "[\n  " + ",\n  ".join(texts) + "\n ]" if texts else "[]"
        atomic_write_text(directory / "index.json", f'{{\n "next_id": {index["next_id"]},\n "entries": {entries}\n}}\n',
                          durable=False)

    def write_table(self, path: Path, columns: list, rows: list) -> None:
        """``path`` as ``RunDir.write_rows(path, columns, rows)`` writes it, appending the rows added since
        the last call when the file is as that call left it and the columns are the same."""
        done = self._tables.get(path)
        try:
            size = os.stat(path).st_size
        except OSError:
            size = None
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        if done is not None and done[0] == columns and done[2] == size and done[1] <= len(rows):
            writer.writerows(rows[done[1]:])
            try:
                with open(path, "a", encoding="utf-8", newline="") as f:
                    f.write(buffer.getvalue())
            except OSError as error:
                if _is_disk_full(error):
                    raise DiskFullError(errno.ENOSPC, f"no space left on the device while writing {path}") from error
                raise
        else:
            writer.writerow(columns)
            writer.writerows(rows)
            atomic_write_text(path, buffer.getvalue(), durable=False)
        self._tables[path] = (list(columns), len(rows), os.stat(path).st_size)
