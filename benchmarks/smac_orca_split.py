"""Where collision avoidance (ORCA) spends a SMAC game loop, and candidate exact cuts, measured A/B in one process.

Each *variant* is ``envs/smac/rules.py`` with one edit, compiled with the rest of the CPU build
(``build.compile_modules``, numba without a disk cache), and timed against the build the battle loads
(``build.cpu()``) on the same saved states: ``advance_games`` (the 8 game loops of a step, one thread)
of ``--games`` two-player games of ``--map`` after each of ``--at`` random steps, in CPU seconds
(``time.process_time``), the best over ``--rounds`` interleaved rounds; µs per game-step.

Two kinds of variant (``VARIANTS``):

- *ablations* (not the game: their units move differently) split ORCA's cost:
  ``no-avoidance`` (no neighbour scan, no lines, no linear programs), ``scan-only`` (the neighbour
  scan's tests, trivial lines, no linear programs; its units move as in ``no-avoidance``),
  ``no-lp`` (the lines, no linear programs). scan = scan-only − no-avoidance, line arithmetic =
  no-lp − scan-only, linear programs = build − no-lp.
- *exact* cuts, which must play the same games: their advanced states are compared with the
  build's, array by array, bit for bit (``bit-equal``). ``identity`` (the build's source compiled the
  same way as the variants) is the control: it shows how much the timing moves with nothing changed.
  ``compact``: each moving unit's candidates collected branch-free into an index list, then the lines
  built over the list; ``two-pass``: a first loop (free of branches, written to vectorise) flags the
  neighbours within reach and touch distance, a second builds the lines of the flagged ones;
  ``band``: the touch test in float64 squares with a ±2·10⁻⁴ band, the float32 square-root test
  only inside the band. The last three hold each unit's |vel| once per loop (in a scratch row the game
  loop does not use: ``hp_frac``; ``compact`` keeps its index list in ``shield_frac``).

Results (2026-12-02, loaded machine): docs/results/speed.md, "SMAC collision avoidance: where ORCA's
time goes, and exact scan cuts that did not pay". Run (idle, one thread; several minutes, mostly numba compiling the variants):

    NUMBA_NUM_THREADS=1 python benchmarks/smac_orca_split.py [--map 3s5z] [--games 512] [--rounds 6]
        [--variants identity compact two-pass band no-lp scan-only no-avoidance]
"""

from __future__ import annotations

import argparse
import os
import time
import types

import numpy as np

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

_CALL = "        n = orca_lines(i, lines_unit, lines_static, lines_sc, reach)\n"
_VNORM_ROW = ("    for i in range(U):\n        sc.avoid_vx[i] = sc.dx[i]",
              "    for j in range(U):\n"
              "        sc.hp_frac[j] = sqrt32(unit.vel[j, 0] * unit.vel[j, 0] + unit.vel[j, 1] * unit.vel[j, 1])\n"
              "    for i in range(U):\n        sc.avoid_vx[i] = sc.dx[i]")
_HEAD = "def orca_lines(i, unit, static, sc, reach):"
_LINE_MATH = "        rvx = vix - vjx\n"
_LINE_STORE = "        sc.line_px[n] = vix + share * ux"
_PREAMBLE = '''    n = 0
    pix = unit.pos[i, 0]
    piy = unit.pos[i, 1]
    vix = unit.vel[i, 0]
    viy = unit.vel[i, 1]
    mask_i = static.collide_mask[i]
    radius_i = static.radius[i]
    speed_i = static.speed[i]
    reach_sq = reach * reach
'''
_NEIGHBOUR = '''        rpx = unit.pos[j, 0] - pix
        rpy = unit.pos[j, 1] - piy
        dist_sq = rpx * rpx + rpy * rpy
        comb = radius_i + static.radius[j]
        vjx = unit.vel[j, 0]
        vjy = unit.vel[j, 1]
'''
_COMPACT = (_HEAD[:-2] + ", vnorm, near):\n" + _PREAMBLE + '''    c = 0
    for j in range(unit.hp.shape[0]):
        rpx = unit.pos[j, 0] - pix
        rpy = unit.pos[j, 1] - piy
        dist_sq = rpx * rpx + rpy * rpy
        comb = radius_i + static.radius[j]
        ok = (j != i) & sc.alive[j] & ((mask_i & static.collide_mask[j]) != 0) & (not (dist_sq > reach_sq)) & (
            not (sqrt32(dist_sq) - comb > (speed_i + vnorm[j]) / INV_HORIZON))
        near[c] = F(j)
        c += np.int64(ok)
    for q in range(c):
        j = np.int64(near[q])
''' + _NEIGHBOUR)
_TWO_PASS = (_HEAD[:-2] + ", vnorm, flag):\n" + _PREAMBLE + '''    for j in range(unit.hp.shape[0]):
        rpx = unit.pos[j, 0] - pix
        rpy = unit.pos[j, 1] - piy
        dist_sq = rpx * rpx + rpy * rpy
        comb = radius_i + static.radius[j]
        far = (dist_sq > reach_sq) | (sqrt32(dist_sq) - comb > (speed_i + vnorm[j]) / INV_HORIZON)
        flag[j] = ZERO if far else ONE
    for j in range(unit.hp.shape[0]):
        if flag[j] == ZERO or j == i or not sc.alive[j] or (mask_i & static.collide_mask[j]) == 0:
            continue
''' + _NEIGHBOUR)
_EXACT_TEST = """        if sqrt32(dist_sq) - comb > (speed_i + sqrt32(vjx * vjx + vjy * vjy)) / INV_HORIZON:
            continue
"""
_BAND_TEST = """        touch = np.float64(comb) + (np.float64(speed_i) + np.float64(vnorm[j])) / np.float64(INV_HORIZON)
        d64 = np.float64(dist_sq)
        if d64 > touch * touch * 1.0002:
            continue
        if not (d64 < touch * touch * 0.9998):
            if sqrt32(dist_sq) - comb > (speed_i + vnorm[j]) / INV_HORIZON:
                continue
"""


def _replace(src: str, old: str, new: str) -> str:
    if old not in src:
        raise RuntimeError(f"this variant no longer applies to rules.py (text not found: {old[:60]!r})")
    return src.replace(old, new)


def _cut_scan(src: str, scan: str, extra_args: str) -> str:
    """``orca_lines`` with its neighbour loop replaced by ``scan`` (ending where the line arithmetic
    starts), called with ``extra_args``, and each unit's |vel| held per loop in ``hp_frac``."""
    a = src.index(_HEAD)
    b = src.index(_LINE_MATH, a)
    src = src[:a] + scan + src[b:]
    src = _replace(src, _CALL, _CALL.replace("reach)", f"reach, {extra_args})"))
    return _replace(src, *_VNORM_ROW)


def _no_lp(src: str) -> str:
    return _replace(src, _CALL, _CALL + "        if sc.dx[i] != F(12345.0):\n            continue\n")


def _scan_only(src: str) -> str:
    a = src.index(_LINE_MATH, src.index(_HEAD))
    b = src.index(_LINE_STORE, a)
    return _no_lp(src[:a] + "        share = ONE\n        ux = rpx\n        uy = rpy\n        dx = vjx\n        dy = vjy\n"
                  + src[b:])


def _band(src: str) -> str:
    src = _replace(src, _EXACT_TEST, _BAND_TEST)
    src = _replace(src, _HEAD, _HEAD[:-2] + ", vnorm):")
    src = _replace(src, _CALL, _CALL.replace("reach)", "reach, sc.hp_frac)"))
    return _replace(src, *_VNORM_ROW)


# name -> (source edit, plays the same games)
VARIANTS = {
    "identity": (lambda s: s, True),
    "compact": (lambda s: _cut_scan(s, _COMPACT, "sc.hp_frac, sc.shield_frac"), True),
    "two-pass": (lambda s: _cut_scan(s, _TWO_PASS, "sc.hp_frac, sc.shield_frac"), True),
    "band": (_band, True),
    "no-lp": (_no_lp, False),
    "scan-only": (_scan_only, False),
    "no-avoidance": (lambda s: _replace(s, _CALL, "        n = 0\n"), False),
}


def compile_variant(edit) -> types.SimpleNamespace:
    """The CPU build with ``rules.py`` replaced by ``edit(its source)`` (no disk cache)."""
    from numba import njit
    from selfplay.envs.smac import build, cpu_drivers, feature_rules, game_step, rules, smacv2_step

    module = types.ModuleType(rules.__name__)
    module.__dict__.update(__name__=rules.__name__, __package__=rules.__package__)
    exec(compile(edit(open(rules.__file__).read()), f"<{rules.__name__} variant>", "exec"), module.__dict__)
    plain, inline = njit(_nrt=False), njit(_nrt=False, inline="always")

    def jit(f):
        return (inline if f.__name__ in build.CPU_INLINE else plain)(f)

    mods = [module, feature_rules, game_step, smacv2_step, cpu_drivers]
    return build.compile_modules([(m, jit) for m in mods])


def saved_states(map_name: str, games: int, at: list[int], seed: int):
    """The engine and ``(state, jitter)`` after each of the ``at`` seeded random two-player steps."""
    import torch
    from selfplay.envs.smac import SMACBattle

    battle = SMACBattle(map_name, games, two_player=True, mirror=False, seed=seed)  # the layout measured before
    eng = battle.engine
    gen = torch.Generator().manual_seed(seed)
    battle.reset()
    out = []
    for t in range(max(at) + 1):
        if t in at:
            st = eng.unit_state()
            out.append((type(st)(*[a.copy() for a in st]), eng.draw_jitter(8).copy()))
        masks = battle.action_masks()
        battle.step([(torch.rand(m.shape, generator=gen) * m).argmax(-1) for m in masks])
    return eng, out


def time_advance(ns, eng, snapshot) -> tuple[float, tuple]:
    """CPU seconds of one ``advance_games`` from a copy of ``snapshot``, and the advanced state."""
    st0, jitter = snapshot
    st = type(st0)(*[a.copy() for a in st0])
    t = time.process_time()
    ns.advance_games(jitter, st, eng.static, eng.maps, eng.flags, eng.scratch)
    return time.process_time() - t, st


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--map", default="3s5z")
    p.add_argument("--games", type=int, default=512)
    p.add_argument("--at", type=int, nargs="+", default=[5, 15, 30], help="random steps before each saved state")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), help=f"of {', '.join(VARIANTS)}")
    args = p.parse_args(argv)
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        p.error(f"--variants: unknown {unknown}; allowed: {', '.join(VARIANTS)}")
    if args.games < 1 or args.rounds < 1 or min(args.at) < 0:
        p.error("--games and --rounds must be at least 1, --at steps at least 0")
    from selfplay.envs.smac import build

    print(f"load average {os.getloadavg()}", flush=True)
    eng, snaps = saved_states(args.map, args.games, sorted(set(args.at)), args.seed)
    builds = {"build": build.cpu()} | {v: compile_variant(VARIANTS[v][0]) for v in args.variants}
    for ns in builds.values():  # compile (numba compiles a driver at its first call)
        time_advance(ns, eng, snaps[0])
    best = {k: [float("inf")] * len(snaps) for k in builds}
    equal = {k: True for k in builds}
    reference = {}
    for _ in range(args.rounds):
        for k, ns in builds.items():  # "build" first: each round's reference states
            for s, snap in enumerate(snaps):
                secs, st = time_advance(ns, eng, snap)
                best[k][s] = min(best[k][s], secs / args.games * 1e6)
                if k == "build":
                    reference[s] = st
                else:
                    equal[k] &= all(np.array_equal(a, b) for a, b in zip(reference[s], st))
    print(f"{args.map}, {args.games} games, advance_games (8 loops), µs of CPU per game-step, best of "
          f"{args.rounds}; states after steps {sorted(set(args.at))}")
    for k in builds:
        exact = "" if k == "build" else (" bit-equal" if equal[k] else " differs") + (
            "" if VARIANTS[k][1] else " (ablation)")
        print(f"  {k:14s} " + "  ".join(f"{x:7.2f}" for x in best[k]) + exact)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
