"""Ray as an executor: ``map`` a function over tasks, one Ray task each (docs/guides/ray.md,
"Comparisons and evaluations").

``RaySettings`` says where the tasks run — a local instance started for the call (``address=None``),
the cluster this machine belongs to (``"auto"``), or a head node (``"HOST:PORT"``) — and what each
task asks for. ``RayExecutor.map`` keeps the order of ``tasks`` (so the caller builds exactly the
same outputs as its local map), retries a task whose worker process died up to ``max_retries``
times, and shows one progress bar for the whole cluster. ``RayExecutor.submit`` starts tasks that
share one large argument (put in the object store once) and returns without waiting: a winrate
matrix's blocks (``training.matches.play_matches``) run so while the caller plays the first block.
Ray is imported only here, inside ``connect``: importing this module costs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_ADDRESS = re.compile(r"^(?:ray://)?[A-Za-z0-9.\-\[\]:]+:(\d{1,5})$")


def check_address(address: str | None) -> str | None:
    """``None`` (start a local instance), ``"auto"`` or ``"HOST:PORT"``; anything else is a ValueError."""
    if address is None or address == "auto":
        return address
    match = _ADDRESS.match(str(address))
    if not match or not 0 < int(match.group(1)) < 65536:
        raise ValueError(f"ray_address must be 'auto' or HOST:PORT (e.g. 10.0.0.5:6379), got {address!r}")
    return address


@dataclass
class RaySettings:
    """Where Ray tasks run and what each asks for."""

    address: str | None = None  # None: start (or reuse) a local instance; "auto" or "HOST:PORT": join a cluster
    num_cpus: int | None = None  # CPUs of a local instance (None: all of this machine's)
    cpus_per_task: float = 1.0
    max_retries: int = 2  # retries of a task whose worker process died (system failures)
    torch_threads: int | None = 1  # torch's intra-op threads and a SMAC batch's threads inside each task (None: leave the defaults)
    connect_timeout_s: float = 10.0  # how long a HOST:PORT address may take to answer before it is refused

    def __post_init__(self) -> None:
        check_address(self.address)
        if self.num_cpus is not None and self.num_cpus < 1:
            raise ValueError(f"num_cpus must be ≥ 1, got {self.num_cpus!r}")
        if not self.cpus_per_task > 0:
            raise ValueError(f"cpus_per_task must be > 0, got {self.cpus_per_task!r}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be ≥ 0, got {self.max_retries!r}")
        if not 0 < self.connect_timeout_s < float("inf"):
            raise ValueError(f"connect_timeout_s must be a finite number > 0, got {self.connect_timeout_s!r}")


def connect(settings: RaySettings) -> Any:
    """Import Ray and make sure this process is connected: reuse a connection that exists, else start
    a local instance or join the cluster at ``settings.address``. Returns the ``ray`` module.

    A local instance listens on 127.0.0.1 only (Ray's own single-machine setting, as on macOS and
    Windows), so nothing outside this machine can reach it. A cluster is joined only if its address
    answers within ``connect_timeout_s`` (Ray itself would wait minutes). Ray has no authentication:
    a cluster must be on a trusted network (README, docs/scaling.md)."""
    try:
        import ray
    except ImportError:
        raise ValueError("--ray needs Ray: install the extra with `pip install -e .[ray]`") from None
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if settings.address is None:
            kwargs["num_cpus"] = settings.num_cpus
            _init_on_loopback(ray, kwargs)
        else:
            check_reachable(_resolve(settings.address), settings.connect_timeout_s, settings.address)
            ray.init(address=settings.address, **kwargs)
    return ray


def _init_on_loopback(ray: Any, kwargs: dict) -> None:
    """``ray.init`` of a local instance whose node address is 127.0.0.1: Ray takes the loopback address
    where ``ray_constants.ENABLE_RAY_CLUSTER`` is off (its macOS/Windows default), so the switch is off
    for this one call."""
    from ray._private import ray_constants

    before = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        ray.init(**kwargs)
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before


def _resolve(address: str) -> str | None:
    """``HOST:PORT`` of ``address``; for ``"auto"``, the cluster Ray would join (``RAY_ADDRESS`` or the
    last ``ray start`` on this machine), ``None`` where Ray finds none (``ray.init`` then says so)."""
    if address != "auto":
        return address
    try:
        from ray._private import services

        return services.canonicalize_bootstrap_address("auto")
    except Exception:  # Ray's own lookup failed: ray.init reports it
        return None


def check_reachable(address: str | None, timeout_s: float, given: str | None = None) -> None:
    """Refuse ``HOST:PORT`` (or ``ray://HOST:PORT``) when nothing accepts a TCP connection there
    within ``timeout_s`` seconds, in one line naming ``ray_address`` (as ``given``)."""
    import socket

    if address is None:
        return
    given = address if given is None else given
    host, port = str(address).removeprefix("ray://").rsplit(":", 1)
    host = host.strip("[]")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except OSError as error:
        reason = "timed out" if isinstance(error, TimeoutError) else (error.strerror or type(error).__name__)
        at = "" if given == address else f" ({address})"
        raise ValueError(f"ray_address {given!r}{at}: nothing answers there ({reason} within {timeout_s:g} s); "
                         "start the cluster's head node first, or check the address") from None


def _set_threads(n: int | None) -> None:
    """``n`` torch threads and SMAC batch threads in this Ray worker process, the executor's own (None: leave them)."""
    if n:
        import torch

        from selfplay.utils.threads import set_smac_threads

        torch.set_num_threads(n)
        set_smac_threads(n)


def _run_task(function: Callable, task: Any, torch_threads: int | None) -> Any:
    """The body of every Ray task: one torch thread and one SMAC batch thread (as the local pool's workers), then ``function``."""
    _set_threads(torch_threads)
    return function(task)


def _run_shared_task(function: Callable, common: Any, task: Any, torch_threads: int | None) -> Any:
    """``_run_task`` for ``function(common, task)`` (``common``: resolved from the object store)."""
    _set_threads(torch_threads)
    return function(common, task)


class RayExecutor:
    """``map(function, tasks)`` as Ray tasks; same order and results as ``[function(t) for t in tasks]``."""

    def __init__(self, settings: RaySettings | None = None, progress: bool = False) -> None:
        self.settings = settings or RaySettings()
        self.progress = progress

    def map(self, function: Callable, tasks: Sequence[Any], jobs: int | None = None) -> list:
        """``jobs`` is ignored (the cluster's free CPUs decide); kept for the local map's signature."""
        if not tasks:
            return []
        ray = connect(self.settings)
        remote = ray.remote(_run_task).options(num_cpus=self.settings.cpus_per_task,
                                               max_retries=self.settings.max_retries)
        refs = [remote.remote(function, task, self.settings.torch_threads) for task in tasks]
        if self.progress:
            from tqdm import tqdm

            pending = list(refs)
            with tqdm(total=len(refs), unit="task", leave=False) as bar:
                while pending:
                    done, pending = ray.wait(pending, num_returns=1)
                    bar.update(len(done))
        return ray.get(refs)

    def submit(self, function: Callable, common: Any, tasks: Sequence[Any]) -> Callable[[], list]:
        """Start ``function(common, task)`` for every task as Ray tasks, ``common`` put in the object store
        once; returns a callable that waits for the results and returns them in the order of ``tasks``."""
        if not tasks:
            return lambda: []
        ray = connect(self.settings)
        shared = ray.put(common)
        remote = ray.remote(_run_shared_task).options(num_cpus=self.settings.cpus_per_task,
                                                      max_retries=self.settings.max_retries)
        refs = [remote.remote(function, shared, task, self.settings.torch_threads) for task in tasks]
        return lambda: ray.get(refs)
