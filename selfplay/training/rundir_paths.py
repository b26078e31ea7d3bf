"""Names and links inside a run directory, which may be someone else's (docs/design/run-directory.md).

Every name read from a manifest or an index must be a plain relative name inside the directory
(``plain_name``: components of letters, digits, ``_``, ``.`` and ``-``, not starting with a dot, so no
``..``, no absolute path, no hidden file); files are opened one component at a time with
``O_NOFOLLOW`` (``open_inside``), so a symbolic link anywhere on the way is refused rather than
followed; ``find_links`` lists the links below a directory without following any; ``unlink_regular``
removes regular files only.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path
from typing import Any

from selfplay.utils.checks import check_out  # noqa: F401 (re-exported)

NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")  # one plain path component


class RunDirError(ValueError):
    """A run directory that cannot be used as asked (damaged, locked, not a run, another config)."""


def plain_name(rel: Any, what: str) -> tuple[str, ...]:
    """The components of ``rel``, a relative path of plain names (no ``..``, no absolute path, no
    hidden or odd names); ``RunDirError`` otherwise."""
    parts = tuple(rel.split("/")) if isinstance(rel, str) else ()
    if not parts or len(parts) > 4 or not all(NAME.match(p) and p not in (".", "..") for p in parts):
        raise RunDirError(f"{what} names {rel!r}, which is not a plain file name inside the run directory")
    return parts


def open_inside(root: Path, rel: str, what: str) -> int:
    """A read-only descriptor of ``root/rel`` opened component by component without following links
    (``O_NOFOLLOW``): a link, at any level, is a ``RunDirError``; a missing file is ``FileNotFoundError``."""
    parts = plain_name(rel, what)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_RDONLY | os.O_NOFOLLOW | (0 if last else os.O_DIRECTORY)
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(os.path.join(root, *parts[:i + 1])):
                    raise RunDirError(f"{what}: {'/'.join(parts[:i + 1])} in {str(root)!r} is a symbolic link; "
                                      "a run directory holds no links") from None
                raise
            os.close(fd)
            fd = nxt
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RunDirError(f"{what}: {rel} in {str(root)!r} is not a regular file")
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_inside(root: Path, rel: str, what: str, limit: int | None = None) -> bytes:
    """The bytes of ``root/rel`` (``open_inside``); at most ``limit`` bytes or a ``RunDirError``."""
    fd = open_inside(root, rel, what)
    with os.fdopen(fd, "rb") as f:
        data = f.read() if limit is None else f.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise RunDirError(f"{what}: {rel} in {str(root)!r} is larger than {limit} bytes")
    return data


def find_links(root: Path) -> list[str]:
    """Symbolic links anywhere below ``root`` (links are never followed while looking)."""
    found, stack = [], [root]
    while stack:
        here = stack.pop()
        try:
            entries = list(os.scandir(here))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if entry.is_symlink():
                found.append(os.path.relpath(entry.path, root))
            elif entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
    return sorted(found)


def unlink_regular(path: Path) -> None:
    """Remove ``path`` if it is a regular file (never a link or a directory)."""
    try:
        if stat.S_ISREG(os.lstat(path).st_mode):
            path.unlink()
    except FileNotFoundError:
        pass
