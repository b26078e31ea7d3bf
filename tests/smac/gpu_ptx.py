"""Compiles every GPU kernel of the SMAC rules (``build.gpu()``) to PTX for a compute capability 9.0
GPU without a GPU (NVVM only), with and without ``build.no_fma``, and prints ``KERNELS n FMA a b``:
the number of kernels compiled and the fused multiply-adds in their PTX each way.  Where NVVM,
libdevice or NVRTC are not installed it types every kernel and lowers it to LLVM IR for that GPU
(numba-cuda's own front end, no NVVM) and prints ``LOWERED n UNAVAILABLE reason``.  Run by
``test_gpu_build.py`` in a fresh process (it stands in for the device query that compiling needs).
"""

from __future__ import annotations

import sys
import types

import numba
import numpy as np


def main(ptx: bool = True, reason: str = "") -> None:
    import numba.cuda.cudadrv.nvrtc as nvrtc
    import numba.cuda.dispatcher as dispatcher
    from numba import cuda
    from selfplay.envs.smac import SMACBattle, build
    from selfplay.envs.smac.records import new_scratch
    from selfplay.envs.smac.smacv2_battle import SMACv2Battle

    cc = (9, 0)
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)  # no GPU here
    nvrtc.get_arch_option = lambda major, minor: f"compute_{major}{minor}"

    b = SMACBattle("MMM2", 2, two_player=False, seed=0, obs_last_action=True)
    eng, view, fv, rw = b.engine, b.views[0], b.fast_views[0], b.fast_rewards
    E, U = eng.num_envs, eng.num_units
    xy = fv.positions()
    avail = fv.avail_actions(*xy)
    f32, i64 = np.float32, np.int64
    sc = new_scratch(E, U)
    battle, lost = np.zeros((2, E), f32), np.zeros((E, 2), np.bool_)
    outcome = [np.zeros((2, E), np.bool_), np.zeros(E, np.bool_), np.zeros(E, np.bool_), np.zeros(E, np.bool_),
               np.zeros(E, i64), np.zeros((2, E), i64)]
    la = b._np_last_action[0]
    t = np.zeros(E, f32)
    calls = {
        "command_kernel": (i64(0), np.zeros((E, fv.n), i64), eng.unit_state(), eng.static, eng.flags),
        "advance_kernel": (np.zeros((8, E, U), i64), eng.unit_state(), eng.static, eng.maps, eng.flags, sc),
        "positions_kernel": (*xy, eng.arrays("pos"), i64(fv.map_x), False),
        "avail_kernel": (np.zeros_like(avail), *xy, eng.arrays("hp"), i64(fv.ally0), i64(fv.n), i64(fv.enemy0),
                         i64(fv.m), fv.is_medivac, fv.pathing),
        "observation_kernel": (np.zeros((E, fv.n, fv.obs_size), f32), avail, la, t, *xy, eng.arrays("hp"),
                               eng.arrays("shield"), fv.hp_max, fv.shield_max, sc, i64(fv.ally0), i64(fv.n),
                               i64(fv.enemy0), i64(fv.m), fv.ally_type, fv.enemy_type, i64(view.bits),
                               i64(view.shield_ally), i64(view.shield_enemy), fv.pathing, fv.height, fv.config),
        "state_kernel": (np.zeros((E, fv.state_size), f32), la, t, *xy, eng.arrays("hp"), eng.arrays("shield"),
                         fv.hp_max, fv.shield_max, eng.arrays("cooldown"), eng.arrays("energy"), fv.max_cd,
                         fv.is_medivac, i64(fv.ally0), i64(fv.n), i64(fv.enemy0), i64(fv.m), fv.ally_type,
                         fv.enemy_type, i64(view.bits), i64(view.shield_ally), i64(view.shield_enemy), fv.cx, fv.cy,
                         fv.width, fv.playable_height, fv.config),
        "reward_kernel": (battle, lost, rw.prev, rw.counted_dead, eng.arrays("hp"), eng.arrays("shield"),
                          i64(eng.n_side[0]), rw.counts_for_survival, f32(10), f32(0.5), f32(5), True, False),
        "finish_kernel": (np.zeros(E, f32), battle[0], outcome[0][0], lost[:, 0].copy(), f32(200), f32(0), f32(1),
                          False, True),
        "outcome_kernel": (lost, np.zeros(E, i64), i64(60), eng.arrays("hp"), i64(eng.n_side[0]), *outcome),
        "step_kernel": (np.zeros((8, E, U), i64), eng.unit_state(), eng.static, eng.maps, eng.flags, sc, *b._seats,
                        b._episode, b._switches),
        "feature_kernel": (eng.unit_state(), sc, *b._seats, b._episode, b._switches),
        "score_kernel": (eng.unit_state(), sc, *b._seats, b._episode, b._switches),
        "reset_kernel": (np.ones(E, np.bool_), eng.unit_state(), eng.static, eng.spawn_points(), b._goals),
        "start_kernel": (np.ones(E, np.bool_), eng.unit_state(), eng.static, eng.spawn_points(), b._goals, sc,
                         *b._seats, b._episode, b._switches),
    }
    v2 = SMACv2Battle("terran_5_vs_5", 2, seed=0, conic_fov=True).games  # SMACv2: every game its own draw
    v2e = v2.engine
    v2_records = (*v2.seats, v2.episode, v2._switches)
    calls.update({
        "v2_step_kernel": (np.zeros((8, E, v2e.num_units), i64), v2e.unit_state(), v2e.static, v2e.maps, v2e.flags,
                           new_scratch(E, v2e.num_units), *v2_records),
        "v2_feature_kernel": (v2e.unit_state(), v2e.static, new_scratch(E, v2e.num_units), *v2_records),
        "v2_start_kernel": (np.ones(E, np.bool_), v2e.unit_state(), v2e.static, v2._spawn, v2._goals, v2e.flags,
                            new_scratch(E, v2e.num_units), *v2_records),
    })
    kernels = build.gpu()
    if not ptx:
        from numba.cuda.compiler import compile_cuda

        for name, args in calls.items():
            compile_cuda(getattr(kernels, name).py_func, numba.types.void, tuple(numba.typeof(a) for a in args), cc=cc)
        print(f"LOWERED {len(calls)} UNAVAILABLE {reason}")
        return
    fma_off = fma_on = 0
    for name, args in calls.items():
        py_func = getattr(kernels, name).py_func
        sig = tuple(numba.typeof(a) for a in args)
        with build.no_fma():
            fma_off += cuda.compile_ptx(py_func, sig, cc=cc)[0].count("fma.rn")
        if name == "advance_kernel":
            fma_on += cuda.compile_ptx(py_func, sig, cc=cc)[0].count("fma.rn")
    print(f"KERNELS {len(calls)} FMA {fma_off} {fma_on}")


if __name__ == "__main__":
    try:
        from numba.cuda.cudadrv import libs, nvvm

        nvvm.NVVM()
        if libs.get_libdevice() is None:
            raise RuntimeError("libdevice not found")
    except Exception as exc:  # noqa: BLE001 - any missing CUDA library means: no PTX here
        main(ptx=False, reason=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        sys.exit(0)
    main()
