"""Atomic file writes (docs/design/run-directory.md).

Every file of a run directory is written to a temporary file in the same folder, flushed to disk and
renamed over the destination, so a killed run never leaves a half-written checkpoint, index or table.
Files get the permissions the process's umask allows (as ``open`` would), not ``mkstemp``'s 0600.
A full disk is reported as such (``DiskFullError``), naming the file, instead of a library's own
message from deep inside a serialiser.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

TMP_SUFFIX = ".tmp"


class DiskFullError(OSError):
    """No space left on the device while writing a run file."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def fsync_dir(path: str | os.PathLike) -> None:
    """Flush a directory entry (a rename inside it) to disk; a no-op where directories can't be opened."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike, write: Callable[[str], None], durable: bool = True) -> Path:
    """Call ``write(tmp_path)``, flush it, and atomically move the result to ``path``. ``durable=False``
    skips the flush to disk (``fsync``): for files that are views rebuilt from a committed state (a run's
    exports), whose readers never see a half-written file yet need not outlive a power cut."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=path.parent)
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        write(tmp)
        if durable:
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as error:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if _is_disk_full(error):
            raise DiskFullError(errno.ENOSPC, f"no space left on the device while writing {path}") from error
        raise
    return path


def _is_disk_full(error: BaseException) -> bool:
    """ENOSPC, also when a serialiser (torch.save, numpy) wrapped it in its own error."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if "No space left on device" in str(error) or "unexpected pos" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def atomic_write_text(path: str | os.PathLike, text: str, durable: bool = True) -> Path:
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    return atomic_write(path, write, durable)


def json_text(data: Any, depth: int = 2) -> str:
    """``data`` as JSON, laid out for reading: the dicts and lists of the outer ``depth`` levels hold one
    member per line (indented one space a level), everything deeper is written on one line.

    A menagerie index of thousands of entries is then one line per entry, and the text comes from the
    json module's C encoder: ``json.dumps(..., indent=1)`` runs the pure-Python encoder and cost a
    run's commits seconds. Dicts with keys other than strings are written on one line too."""
    return _json_text(data, depth, 0)


def _json_text(value: Any, depth: int, level: int) -> str:
    if depth <= 0 or not value or not isinstance(value, (dict, list, tuple)):
        return _encode(value)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return _encode(value)
        items = [f"{_encode(k)}: {_json_text(v, depth - 1, level + 1)}" for k, v in value.items()]
        opening, closing = "{", "}"
    else:
        items = [_json_text(v, depth - 1, level + 1) for v in value] if depth > 1 else list(map(_encode, value))
        opening, closing = "[", "]"
    inner = "\n" + " " * (level + 1)
    return opening + inner + ("," + inner).join(items) + "\n" + " " * level + closing


_encode = json.JSONEncoder().encode  # the json module's C encoder (no indent)


def atomic_write_json(path: str | os.PathLike, data: Any) -> Path:
    """Write ``data`` as JSON (``json_text``'s layout), atomically."""
    return atomic_write_text(path, json_text(data) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def load_torch_data(path: str | os.PathLike, what: str) -> Any:
    """``torch.load(path, weights_only=True)``: tensors and plain containers only, never code (a file
    that would need arbitrary objects is refused, not run). Any file that is not such a torch file —
    garbage, a crafted pickle, a directory — is a one-line ``ValueError`` naming ``what``."""
    import pickle

    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise ValueError(f"{what} {str(path)!r} does not exist") from None
    except IsADirectoryError:
        raise ValueError(f"{what} {str(path)!r} is a directory, not a file") from None
    except (pickle.UnpicklingError, RuntimeError, ValueError, EOFError, OSError, KeyError, TypeError,
            AttributeError, IndexError, UnicodeDecodeError, ImportError) as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        raise ValueError(f"{what} {str(path)!r} is not a torch data file this program wrote "
                         f"({type(error).__name__}: {first})") from None
