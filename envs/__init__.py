"""The environments, installed as ``selfplay.envs`` (pyproject's package-dir maps this folder there).

Import them as ``selfplay.envs``, never as a top-level ``envs`` (run from the repository root): the
simulator's compiled rules are cached on disk per source file, and a cache written under the second
module name holds references that the installed package cannot load (every later run then fails with
"No module named 'envs'").
"""

if __name__ != "selfplay.envs":
    raise ImportError(f"import the environments as selfplay.envs, not {__name__!r} (envs/__init__.py says why)")
