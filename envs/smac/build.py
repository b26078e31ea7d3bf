"""Compiles the rules written once (``rules.py``, ``feature_rules.py``) for the CPU and for a GPU.

The rule modules are plain Python: their functions call each other by their module-level names.
``compile_modules`` copies those functions into one namespace, decorates each with the target's
``jit``, and points every copy's globals at that namespace, so that each rule calls the compiled
version of the others (numba resolves a global dispatcher at compile time):

- ``cpu()``: ``numba.njit`` of the rules (``CPU_INLINE`` inlined into their callers) and of the CPU
  drivers (``cpu_drivers.py``, loops over games), without reference counting and without the GIL (a
  large batch's chunks of games run on threads: ``CpuBuild.bind``); cached on disk under ``__pycache__/rules-<hash>``, the hash of
  every source the compiled code depends on (``CACHE_SOURCES``).  numba alone would check only each
  function's own file: a cached driver would keep an edited rule's old code, and every function a
  changed constant's old value.
- ``gpu()``: ``numba.cuda.jit(device=True)`` of the rules and ``numba.cuda.jit`` of the kernels
  (``gpu_kernels.py``, one game per thread).  With ``NUMBA_ENABLE_CUDASIM=1`` (set before numba is
  imported) numba-cuda's simulator runs the same kernels in Python without a GPU.

Identical floats on both: numba's CPU code never fuses a multiply and an add, but NVVM does by
default (``-fma=1``) and numba-cuda has no switch for it outside ``fastmath``; ``no_fma`` turns
it off (``-fma=0``) while ``GpuBuild`` launches a kernel (kernels compile at their first launch).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import os
import types
from functools import cache

from . import cpu_drivers, feature_rules, game_step, maps, pathing, records, rules, smacv2_step, units
from .records import Scratch, new_scratch

RULE_MODULES = (rules, feature_rules, game_step, smacv2_step)
# every module whose code or constants end up in the compiled rules
CACHE_SOURCES = (rules, feature_rules, game_step, smacv2_step, cpu_drivers, records, units, maps, pathing)


def compile_modules(modules_and_jits) -> types.SimpleNamespace:
    """One namespace holding every function of the given ``(module, jit)`` pairs compiled with its
    ``jit``, each calling the others' compiled versions; module constants are shared (a name
    defined differently by two modules is an error)."""
    ns: dict = {}
    funcs: dict = {}
    for module, jit in modules_and_jits:
        for name, value in vars(module).items():
            if name.startswith("__"):
                continue
            if isinstance(value, types.FunctionType) and value.__module__ in {m.__name__ for m, _ in modules_and_jits}:
                if value.__module__ != module.__name__:
                    continue  # imported from another rule module: compiled with its own module
                if name in funcs:
                    raise ValueError(f"rule modules both define a function {name!r}")
                funcs[name] = (value, jit)
            elif name in ns and ns[name] is not value and not _same_constant(ns[name], value):
                raise ValueError(f"rule modules define {name!r} differently")
            else:
                ns[name] = value
    ns["__name__"] = __name__
    for name, (f, jit) in funcs.items():
        copy = types.FunctionType(f.__code__, ns, name, f.__defaults__, f.__closure__)
        copy.__qualname__, copy.__module__, copy.__doc__ = f.__qualname__, f.__module__, f.__doc__
        ns[name] = jit(copy)
    return types.SimpleNamespace(**{k: v for k, v in ns.items() if not k.startswith("__")})


def _same_constant(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


@cache
def cpu() -> types.SimpleNamespace:
    """The CPU build: rules and drivers under ``numba.njit(cache=True)``, without numba's reference
    counting (``_nrt=False``): the rules allocate nothing, as device code cannot, and reading a field
    of a record of arrays would otherwise count a reference each time (measured: 3x slower steps).
    Compiled code releases the GIL (``nogil``): a large batch's chunks of games run on Python threads,
    each through the same compiled driver (``CpuBuild.bind``), which numba's ``parallel=True`` would
    compile a second time (minutes: docs/results/speed.md)."""
    from numba import njit

    plain = njit(cache=True, _nrt=False, nogil=True)
    inline = njit(cache=True, _nrt=False, nogil=True, inline="always")

    def jit(f):
        return (inline if f.__name__ in CPU_INLINE else plain)(f)

    with _cache_dir(os.path.join(os.path.dirname(__file__), "__pycache__", f"rules-{source_hash()}")):
        return compile_modules([(m, jit) for m in RULE_MODULES] + [(cpu_drivers, jit)])


# Rules the CPU build inlines into their callers (numba's ``inline="always"``, before LLVM sees the code):
# LLVM leaves these large functions as calls, and numba passes a record as its arrays one by one, several
# words each, so every call of ``game_loop`` (8 per step, ~90 arrays) and of ``orca_lines`` (per moving
# unit, 14 arrays) copied hundreds of words.  Inlined, a step of 3s5z took ~11 % less time and one of 3m
# ~19 % less, the same games (docs/results/speed.md).  The GPU build is left to NVVM, which inlines
# device functions itself.
CPU_INLINE = frozenset({"game_loop", "orca_lines"})


def source_hash() -> str:
    """A hash of the sources in ``CACHE_SOURCES`` and of this module (module docstring)."""
    digest = hashlib.sha256()
    for path in [module.__file__ for module in CACHE_SOURCES] + [__file__]:  # this file: the compile options
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _cache_dir(path: str):
    """numba caches the functions decorated inside this block under ``path`` (its locator reads
    ``config.CACHE_DIR`` when a function is decorated)."""
    from numba.core import config

    previous = config.CACHE_DIR
    config.CACHE_DIR = path
    try:
        yield
    finally:
        config.CACHE_DIR = previous


@cache
def gpu() -> types.SimpleNamespace:
    """The GPU build: rules as CUDA device functions, ``gpu_kernels`` as kernels."""
    from numba import cuda

    from . import gpu_kernels

    device = cuda.jit(device=True)
    return compile_modules([(m, device) for m in RULE_MODULES] + [(gpu_kernels, cuda.jit)])


@contextlib.contextmanager
def no_fma():
    """NVVM compiles without fused multiply-add contraction inside this block (module docstring)."""
    from numba.cuda.cudadrv import nvvm

    original = nvvm.compile_ir

    def compile_ir(llvmir, **options):
        if not options.get("fastmath"):
            options["fma"] = False
        return original(llvmir, **options)

    nvvm.compile_ir = compile_ir
    try:
        yield
    finally:
        nvvm.compile_ir = original


THREADS_PER_BLOCK = 64
PARALLEL_MIN_GAMES = 256  # batches from this size on step on threads (measured: docs/results/speed.md)
PIECES_PER_SLOT = 8  # a batch's pieces per thread (measured: docs/results/speed.md)
MIN_PIECE_GAMES = 32  # no piece smaller than this (a call costs about 5 µs before its games)


def parallel_slots(games: int) -> int:
    """The scratch slots (threads side by side, each taking pieces of the batch) of a CPU batch:
    ``selfplay.utils.threads.smac_threads()`` when the batch is made (one per core unless
    ``NUMBA_NUM_THREADS`` or ``SELFPLAY_SMAC_THREADS`` says fewer; at most one per game) from
    ``PARALLEL_MIN_GAMES`` games on, else 1."""
    from selfplay.utils.threads import smac_threads

    return min(smac_threads(), games) if games >= PARALLEL_MIN_GAMES else 1


class CpuBuild:
    """The rules on numpy arrays, one game after another (``cpu()``); a batch of at least
    ``PARALLEL_MIN_GAMES`` games steps in chunks side by side on threads (``bind``)."""

    name = "cpu"

    def __init__(self):
        self.r = cpu()

    def scratch(self, games: int, units: int):
        slots = parallel_slots(games)  # each slot reused by its chunk's games, its rows apart from the others'
        return new_scratch(slots, units, apart=slots > 1)

    def bind(self, name: str, *args):
        """A call of ``name`` on exactly these objects, as a function of no arguments: the compiled
        entry point for their types, bound to them, which skips numba's typing of the arguments at
        every call (numba types a ``NamedTuple`` in Python: about 40 µs for the records of a step,
        against a few µs of compiled work for one small game).  The objects must keep their types:
        the caller binds again when it replaces any of them.

        The range drivers (``RANGE_DRIVERS``: a step, its score and its features, SMAC's and SMACv2's)
        take the games ``first .. last - 1`` and a scratch slot ``w`` before these objects: with one slot
        the call covers every game; with more (``parallel_slots``) it is ``Chunks``, the games cut into
        contiguous chunks, one per slot, run side by side on threads."""
        from numba import int64, typeof

        types_ = tuple(typeof(a) for a in args)
        if name not in RANGE_DRIVERS:
            return functools.partial(getattr(self.r, _DRIVERS[name]).compile(types_), *args)
        entry = getattr(self.r, _DRIVERS[name]).compile((int64, int64, int64) + types_)
        counted = args[_GAMES_ARG[name]]
        games, slots = counted.hp.shape[0], _scratch_slots(args)
        if slots == 1:
            return functools.partial(entry, 0, games, 0, *args)
        return Chunks(entry, games, slots, args)

    def __getattr__(self, name):
        return getattr(self.r, _DRIVERS[name])


class GpuBuild:
    """The rules on device arrays (numba-cuda; host numpy arrays under the simulator), one game per
    thread (``gpu()``); same methods as ``CpuBuild``."""

    name = "gpu"

    def __init__(self):
        self.k = gpu()

    def scratch(self, games: int, units: int):
        from numba import cuda

        return new_scratch(games, units, empty=cuda.device_array)

    def bind(self, name: str, *args):
        """A launch of kernel ``name`` on these arrays, as a function of no arguments (``CpuBuild.bind``)."""
        return functools.partial(getattr(self, name), *args)

    def __getattr__(self, name):
        kernel = getattr(self.k, _KERNELS[name])

        def launch(*args):
            counted = args[_GAMES_ARG[name]]
            games = (counted.hp if hasattr(counted, "hp") else counted).shape[0]
            blocks = (games + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
            with no_fma():
                kernel[blocks, THREADS_PER_BLOCK](*args)

        return launch


# method -> CPU driver, GPU kernel, and which argument's first axis counts the games
_DRIVERS = {"command": "command_games", "advance": "advance_games", "positions": "positions_games",
            "avail": "avail_games", "observations": "observation_games", "state": "state_games",
            "rewards": "reward_games", "finish": "finish_games", "outcome": "outcome_games",
            "first_illegal": "first_illegal", "one_hot": "one_hot", "step": "step_games",
            "features": "feature_games", "check_actions": "check_actions", "reset": "reset_games",
            "start": "start_games", "score": "score_games", "v2_step": "v2_step_games",
            "v2_features": "v2_feature_games", "v2_start": "v2_start_games"}
RANGE_DRIVERS = frozenset({"step", "score", "features", "v2_step", "v2_features"})


class Chunks:
    """A range driver bound to its objects for a batch of ``games`` games on ``slots`` threads: the games
    are cut into contiguous pieces (``PIECES_PER_SLOT`` per thread, none under ``MIN_PIECE_GAMES``
    games), and each thread takes the next piece not yet taken until none is left, running it on its
    own scratch slot ``w``.  Calling it runs thread 0 on the calling thread and the others on threads of
    its own pool, side by side (the compiled drivers release the GIL), and returns when all are done; an
    error in any piece is raised.  Taking pieces as they come, rather than one fixed half each, keeps a
    thread that the machine runs slower from holding the step up: on a shared host one core can run
    the same code 1.5× slower than the other for a while (docs/results/speed.md).  Every game is
    independent (its jitter drawn before the call, its scratch rows written before they are read), so
    the games are the same bit for bit whatever the pieces and whichever thread plays them
    (``tests/smac/test_parallel_step.py``)."""

    def __init__(self, entry, games: int, slots: int, args: tuple):
        pieces = max(slots, min(slots * PIECES_PER_SLOT, games // MIN_PIECE_GAMES))
        self.entry, self.args, self.slots = entry, args, slots
        self.bounds = [games * k // pieces for k in range(pieces + 1)]
        self.pool = None  # made at the first call (a bound call that is never made starts no thread)

    def _work(self, w: int, taken) -> None:
        """Thread ``w``: the next piece not yet taken (``next`` on the shared counter is atomic under
        the GIL), until every piece is."""
        pieces = len(self.bounds) - 1
        k = next(taken)
        while k < pieces:
            self.entry(self.bounds[k], self.bounds[k + 1], w, *self.args)
            k = next(taken)

    def __call__(self):
        if self.pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(max_workers=self.slots - 1, thread_name_prefix="smac-chunk")
        taken = itertools.count()
        others = [self.pool.submit(self._work, w, taken) for w in range(1, self.slots)]
        try:
            self._work(0, taken)
        finally:
            for thread in others:  # waits for every thread; an error in one is raised here
                thread.result()

    def __del__(self):
        if self.pool is not None:
            self.pool.shutdown(wait=False)


def _scratch_slots(args) -> int:
    """The slot count of the ``Scratch`` among a driver's arguments (1 when none)."""
    for a in args:
        if isinstance(a, Scratch):
            return a.alive.shape[0]
    return 1


_KERNELS = {"command": "command_kernel", "advance": "advance_kernel", "positions": "positions_kernel",
            "avail": "avail_kernel", "observations": "observation_kernel", "state": "state_kernel",
            "rewards": "reward_kernel", "finish": "finish_kernel", "outcome": "outcome_kernel", "step": "step_kernel",
            "features": "feature_kernel", "reset": "reset_kernel", "start": "start_kernel", "score": "score_kernel",
            "v2_step": "v2_step_kernel", "v2_features": "v2_feature_kernel", "v2_start": "v2_start_kernel"}
_GAMES_ARG = {"command": 1, "advance": 1, "positions": 2, "avail": 1, "observations": 4, "state": 3,
              "rewards": 4, "finish": 1, "outcome": 3, "step": 1, "features": 0, "reset": 0, "start": 0, "score": 0,
              "v2_step": 1, "v2_features": 0, "v2_start": 0}
