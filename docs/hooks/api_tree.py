"""MkDocs hook: the import tree the API reference reads, laid out as the installed package sees it.

The folders ``envs/``, ``agents/`` and ``analysis/`` install as ``selfplay.envs``, ``selfplay.agents``
and ``selfplay.analysis`` (``package-dir`` in ``pyproject.toml``), a mapping that mkdocstrings' static
reader does not follow. Before each build this hook makes ``build/api/selfplay/``: a link to every
entry of ``selfplay/`` plus links named ``envs``, ``agents`` and ``analysis`` to those folders, so the
reference documents ``selfplay.envs.rps`` under the name users import. Nothing is imported or run.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

MAPPED = {"envs": "envs", "agents": "agents", "analysis": "analysis"}  # selfplay.<key> is the folder <value>


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


def on_config(config, **kwargs):
    lay_out(Path(config.config_file_path).parent)
    return config
