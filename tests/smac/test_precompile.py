"""``python -m selfplay.envs.smac.precompile`` (run by ``make install``) compiles the entries that the
SMAC and SMACv2 environments call, so that a first game does not wait for numba."""

import subprocess
import sys

CHECK = """
from selfplay.envs.smac import build
from selfplay.envs.smac.precompile import precompile
ns = build.cpu()
names = ["step_games", "start_games", "feature_games", "v2_step_games", "v2_start_games"]
assert not any(getattr(ns, n).signatures for n in names), "compiled before precompile ran"
precompile(steps=1)
missing = [n for n in names if not getattr(ns, n).signatures]
assert not missing, missing
"""


def test_precompile_compiles_the_smac_and_smacv2_steps():
    # a fresh process: in this one, earlier tests may already have compiled the entries
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
