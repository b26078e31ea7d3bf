"""``python -m selfplay.envs.smac.precompile`` (run by ``make install``) compiles the entries that the
SMAC and SMACv2 environments call, so that a first game does not wait for numba."""

from selfplay.envs.smac import build
from selfplay.envs.smac.precompile import precompile


def test_precompile_compiles_the_one_thread_parallel_and_smacv2_steps():
    precompile(steps=1)
    ns = build.cpu()
    for name in ("step_games", "start_games", "feature_games", "v2_step_games", "v2_start_games"):
        assert getattr(ns, name).signatures, name
    if build.parallel_slots(build.PARALLEL_MIN_GAMES) > 1:
        assert ns.step_chunks.signatures
