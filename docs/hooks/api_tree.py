"""MkDocs hook: the import tree the API reference reads, and which warnings fail a strict build.

The folders ``envs/``, ``agents/`` and ``analysis/`` install as ``selfplay.envs``, ``selfplay.agents``
and ``selfplay.analysis`` (``package-dir`` in ``pyproject.toml``), a mapping that mkdocstrings' static
reader does not follow. Before each build this hook makes ``build/api/selfplay/``: a link to every
entry of ``selfplay/`` plus links named ``envs``, ``agents`` and ``analysis`` to those folders, so the
reference documents ``selfplay.envs.rps`` under the name users import. Nothing is imported or run.

A strict build fails on every warning about the site's own pages (a broken link, a missing anchor, a
file left out of the navigation). Text inside docstrings such as ``grid[y][x]`` reads to Markdown as
a cross-reference; those warnings, on the generated API pages only, are still printed but do not fail
the build.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.utils import CountHandler

MAPPED = {"envs": "envs", "agents": "agents", "analysis": "analysis"}  # selfplay.<key> is the folder <value>
API_PAGES = "reference/"


def lay_out(root: Path) -> Path:
    """Create ``root/build/api/selfplay`` afresh; returns ``root/build/api``."""
    api = root / "build" / "api"
    package = api / "selfplay"
    if api.exists():
        shutil.rmtree(api)
    package.mkdir(parents=True)
    for entry in sorted((root / "selfplay").iterdir()):
        if entry.name != "__pycache__":
            os.symlink(entry.resolve(), package / entry.name)
    for name, folder in MAPPED.items():
        os.symlink((root / folder).resolve(), package / name, target_is_directory=True)
    return api


def docstring_cross_reference(record: logging.LogRecord) -> bool:
    """True for an unresolved cross-reference that Markdown read into a docstring of an API page."""
    message = record.getMessage().removeprefix("mkdocs_autorefs: ")  # the plugin logger's prefix
    return message.startswith(API_PAGES) and "Could not find cross-reference target" in message


@event_priority(100)  # before mkdocstrings reads its search paths, which must exist by then
def on_config(config, **kwargs):
    lay_out(Path(config.config_file_path).parent)
    for handler in logging.getLogger("mkdocs").handlers:
        if isinstance(handler, CountHandler):
            handler.addFilter(lambda record: not docstring_cross_reference(record))
    return config
