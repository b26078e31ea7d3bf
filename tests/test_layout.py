"""The package layout (docs/design/architecture.md, "Layout" and "Layers"): one import namespace, layers whose
imports never point up, no import cycles, a numpy-only core."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# import name prefix -> folder in the repository (pyproject's package-dir)
FOLDERS = {"selfplay.envs": "envs", "selfplay.agents": "agents", "selfplay.analysis": "analysis", "selfplay": "selfplay"}

# Bottom to top; a module may import from its own layer and the layers below it, never above.
LAYERS = [
    ("selfplay.utils",),
    ("selfplay.analysis",),
    ("selfplay.envs",),
    ("selfplay.core",),
    ("selfplay.agents",),
    ("selfplay.training",),
    ("selfplay.evaluation",),
    ("selfplay.cli", "selfplay.__main__", "selfplay"),
]
# analysis and envs are independent of each other (both sit on utils only).
INDEPENDENT = {("selfplay.analysis", "selfplay.envs"), ("selfplay.envs", "selfplay.analysis")}


def module_files() -> dict[str, Path]:
    """Every module of the installed namespace, by import name."""
    out = {}
    for prefix, folder in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([prefix, *parts]) if parts else prefix
            out.setdefault(name, path)
    return out


def imports_of(name: str, path: Path) -> set[str]:
    """Absolute names of every selfplay module that ``name`` imports, at module level or lazily."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)
    return {m for m in found if m == "selfplay" or m.startswith("selfplay.")}


def layer_of(name: str) -> int:
    best, best_len = None, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (name == p or name.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    assert best is not None, name
    return best


def top_prefix(name: str) -> str:
    for prefixes in LAYERS:
        for p in prefixes:
            if name == p or name.startswith(p + "."):
                return p
    return name


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    files = module_files()
    return {name: {m for m in imports_of(name, path) if m in files and m != name} for name, path in files.items()}


def test_pyproject_lists_every_package():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {k: v for k, v in FOLDERS.items()}
    packages = {n for n, p in module_files().items() if p.name == "__init__.py"}
    assert set(config["packages"]) == packages


def test_imports_never_point_up(graph):
    wrong = []
    for name, targets in graph.items():
        if name == "selfplay":  # the package's own __init__ re-exports the core
            targets = {t for t in targets if not t.startswith("selfplay.core")}
        for t in targets:
            if layer_of(t) > layer_of(name) or (top_prefix(name), top_prefix(t)) in INDEPENDENT:
                wrong.append(f"{name} -> {t}")
    assert not wrong, "imports that point up a layer:\n" + "\n".join(sorted(wrong))


def test_no_import_cycles(graph):
    # Tarjan's strongly connected components over module imports (lazy ones included).
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            # a package importing its own submodules (its __init__ re-exporting them) is not a cycle
            if len(comp) > 1 and not all(c.startswith(min(comp, key=len)) for c in comp):
                cycles.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_core_and_analysis_import_without_torch(tmp_path):
    code = (
        "import sys\n"
        "import selfplay, selfplay.core.schemes, selfplay.core.league, selfplay.analysis.nash, "
        "selfplay.analysis.population, selfplay.analysis.winrate\n"
        "heavy = sorted(m for m in ('torch', 'gymnasium', 'pandas') if m in sys.modules)\n"
        "print(heavy)\n"
    )
    result = run_python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_namespace_does_not_collide_with_a_clients_envs_package(tmp_path):
    """PyMARL/EPyMARL put their own ``envs`` package first on sys.path; ours must still import."""
    client = tmp_path / "client"
    (client / "envs").mkdir(parents=True)
    (client / "envs" / "__init__.py").write_text("CLIENT = True\n")
    (client / "agents").mkdir()
    (client / "agents" / "__init__.py").write_text("CLIENT = True\n")
    code = (
        f"import sys; sys.path.insert(0, {str(client)!r})\n"
        "import envs, agents\n"
        "assert envs.CLIENT and agents.CLIENT\n"
        "import selfplay.envs.smac, selfplay.agents.ppo, selfplay.analysis.nash\n"
        "from selfplay.envs.smac import SMACEnv\n"
        "print(selfplay.envs.smac.__name__)\n"
    )
    result = run_python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "selfplay.envs.smac"


def test_no_generic_top_level_names_from_an_installed_copy(tmp_path):
    code = (
        "import importlib.util\n"
        "print([n for n in ('envs', 'agents', 'analysis') if importlib.util.find_spec(n) is not None])\n"
    )
    result = run_python(code, tmp_path)  # outside the repository: only what is installed is importable
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_environments_refuse_a_second_module_name():
    """Run from the repository root, ``import envs`` would compile the simulator's rules under a second
    module name into the same on-disk cache, which the installed package then cannot load: refused."""
    result = run_python("import envs\n", ROOT)
    assert result.returncode != 0 and "import the environments as selfplay.envs" in result.stderr
    assert run_python("import selfplay.envs\n", ROOT).returncode == 0
