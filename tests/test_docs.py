"""The design inside the repository (docs/design/index.md): every citation of a design page in the code
names a section that page has, no file cites a document outside the repository or an issue number, and
the documentation build's API tree (docs/hooks/api_tree.py) lays out the installed namespace."""

from __future__ import annotations

import importlib.util
import logging
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design"
# Folders whose citations are redirected into docs/design separately (the SMAC engine's own rewrite).
NOT_YET_REDIRECTED: tuple[str, ...] = ()
CITATION = re.compile(r"docs/design/([a-z-]+)\.md((?:,? ?§ ?\d+(?:[–-]\d+)?(?:, §\d+)*)?)")
# the specifications that used to live outside the repository; a page's own links (design/architecture.md,
# ](architecture.md) are inside it
OUTSIDE = re.compile(r"\.\./shared/docs|(?<!/)(?<!\]\()\barchitecture\.md|\bspec-(?:selfplay|smac|alphastar)\b")
ISSUE = re.compile(r"\bissues? #?\d+", re.IGNORECASE)


def tracked(suffixes: tuple[str, ...]) -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / n for n in names if n.endswith(suffixes) and not n.startswith(NOT_YET_REDIRECTED)]


def sections(page: str) -> set[str]:
    """The numbered sections of a design page: its headings ``## N. Title``."""
    return set(re.findall(r"^## (\d+)\. ", (DESIGN / f"{page}.md").read_text(encoding="utf-8"), re.MULTILINE))


def cited_sections(text: str) -> list[tuple[str, str]]:
    """(page, section) for every ``docs/design/PAGE.md §N`` (ranges give both ends), and for a bare
    ``design §N`` in a file that cites exactly one design page."""
    out, pages = [], set()
    for m in CITATION.finditer(text):
        pages.add(m.group(1))
        out += [(m.group(1), n) for n in re.findall(r"\d+", m.group(2))]
    if len(pages) == 1:
        out += [(next(iter(pages)), n) for n in re.findall(r"\bdesign §(\d+)", text)]
    return out


def test_cited_sections_parse_pages_ranges_and_bare_references():
    text = "x (docs/design/alphastar.md §2–4; docs/design/alphastar.md §1, §5) y (design §3)"
    assert cited_sections(text) == [("alphastar", "2"), ("alphastar", "4"), ("alphastar", "1"), ("alphastar", "5"),
                                    ("alphastar", "3")]
    assert sections("selfplay") == {str(n) for n in range(1, 8)}


def test_every_design_citation_names_an_existing_page_and_section():
    wrong = []
    for path in tracked((".py", ".md")):
        for page, section in cited_sections(path.read_text(encoding="utf-8")):
            if not (DESIGN / f"{page}.md").is_file() or section not in sections(page):
                wrong.append(f"{path.relative_to(ROOT)}: docs/design/{page}.md §{section}")
    assert not wrong, wrong


def test_no_file_cites_a_document_outside_the_repository_or_an_issue_number():
    wrong = []
    for path in tracked((".py", ".md", ".toml", ".yml", ".yaml", "Makefile")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line) or ISSUE.search(line):
                wrong.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not wrong, wrong


@pytest.fixture(scope="module")
def hook():
    pytest.importorskip("mkdocs")
    spec = importlib.util.spec_from_file_location("api_tree", ROOT / "docs" / "hooks" / "api_tree.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_tree_lays_out_the_installed_namespace(hook, tmp_path):
    for folder in ("selfplay/core", "envs/rps", "agents", "analysis"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "selfplay" / "__init__.py").write_text("")
    (tmp_path / "selfplay" / "__pycache__").mkdir()
    stale = tmp_path / "build" / "api" / "selfplay" / "gone.py"
    stale.parent.mkdir(parents=True)
    stale.write_text("")
    api = hook.lay_out(tmp_path)
    package = api / "selfplay"
    assert sorted(p.name for p in package.iterdir()) == ["__init__.py", "agents", "analysis", "core", "envs"]
    assert (package / "envs").resolve() == (tmp_path / "envs").resolve()
    assert (package / "envs" / "rps" / "__init__.py").is_file() and (package / "core" / "__init__.py").is_file()


def test_only_docstring_cross_references_on_api_pages_are_spared(hook):
    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("mkdocs.plugins.mkdocs_autorefs", logging.WARNING, __file__, 1, message, None, None)

    spared = "mkdocs_autorefs: reference/envs.md: from x.py:75: (f) Could not find cross-reference target 'y'"
    assert hook.docstring_cross_reference(record(spared))
    assert not hook.docstring_cross_reference(record(spared.replace("reference/", "guides/")))
    assert not hook.docstring_cross_reference(record("reference/core.md: a link to 'x.md' that is not found"))
