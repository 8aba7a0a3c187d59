"""Tasks on a Ray cluster, for `coexplore sweep --ray` (the optional extra `coexplore[ray]`).

A task gets its inputs as Ray objects and hands back its results the same way: the layer searches'
cache entries and a sweep point's files travel to the driver, which alone writes the SQLite cache
(SQLite on a network filesystem is not safe to share) and the result folder. The nodes need the
same coexplore (checked: a task says its version) and, for own-core systems, the input files at the
same paths (a shared filesystem, or one machine).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from coexplore.errors import CoexploreError
from coexplore.system.parallel import WorkerDied

INSTALL = "pip install 'coexplore[ray]' (Ray 2.9 or newer)"


def require_ray() -> None:
    """Raise the install hint now (before any work) when Ray is missing."""
    _ray()


def _ray():
    try:
        import ray
    except ImportError:
        raise CoexploreError("Ray is not installed", key="--ray", expected=INSTALL) from None
    return ray


def start_ray(address: str | None, cpus: int | None = None) -> bool:
    """Connect to the Ray cluster at `address` ("auto": the one `ray start` began on this machine,
    "HOST:PORT", "ray://HOST:10001"); with None, to the one $RAY_ADDRESS names, else start a new one on
    this machine with `cpus` CPUs (None: all), even when a cluster runs here.
    True when this call started or joined Ray (the caller then ends it with `stop_ray`)."""
    ray = _ray()
    target = address or os.environ.get("RAY_ADDRESS") or None
    expected = ("the address `ray start --head` printed (HOST:6379), ray://HOST:10001, auto, or no address "
                "to start Ray on this machine")
    if target is not None:
        _check_reachable(target, expected)
    if ray.is_initialized():            # (a Python caller's own ray.init: its cluster is used)
        return False
    import signal
    ours = signal.getsignal(signal.SIGTERM)
    try:
        ray.init(address=target or "local", num_cpus=cpus if target is None else None,  # ("local": a new
                 include_dashboard=False, log_to_driver=False, configure_logging=False)   # one, even beside a cluster)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise CoexploreError(f"cannot connect to a Ray cluster at {target}: {exc}", key="--ray",
                             expected=expected) from None
    finally:        # Ray's own SIGTERM handler exits at once: a stop keeps being handled as Ctrl-C
        signal.signal(signal.SIGTERM, ours)
    return True


def _check_reachable(address: str, expected: str, timeout: float = 5.0) -> None:
    """Refuse an address where nothing answers within `timeout` s (Ray itself would retry for ever)."""
    import socket
    hostport = address.removeprefix("ray://")
    if address == "auto" or ":" not in hostport:
        return
    host, _, port = hostport.rpartition(":")
    if not port.isdigit():
        raise CoexploreError(f"{address!r} has no port number", key="--ray", expected=expected)
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise CoexploreError(f"nothing answers at {address} ({exc.strerror or exc})", key="--ray",
                             expected=f"a running Ray cluster (`ray start --head` on its head node): {expected}"
                             ) from None


def stop_ray() -> None:
    _ray().shutdown()


def cluster_cpus() -> int:
    """The CPUs of the connected cluster (at least 1)."""
    return max(1, int(_ray().cluster_resources().get("CPU", 1)))


def _versions() -> dict:
    """What must be equal on the driver and the nodes for a task's result to be the driver's."""
    import platform

    import numpy

    import coexplore
    return {"coexplore": coexplore.__version__, "numpy": numpy.__version__,
            "python": ".".join(platform.python_version_tuple()[:2])}


def _call(fn, task, shared):
    """A task as run on a node: (its coexplore versions, fn(task) or fn(task, shared))."""
    return _versions(), (fn(task) if shared is None else fn(task, shared))


def on_ray(fn, tasks: list, shared=None, limit: int | None = None) -> Iterator[tuple[int, object]]:
    """Yield (task index, fn(task[, shared])) as each Ray task ends (completion order), at most
    `limit` tasks in flight (None: the cluster's CPUs). `shared` (one large object every task reads)
    is put in Ray's object store once. A stop, an error or the caller's leaving the loop cancels
    the tasks not ended; a task lost with its worker or node is a WorkerDied error."""
    if not tasks:
        return
    ray = _ray()
    from ray.exceptions import RayError, RayTaskError
    remote = ray.remote(num_cpus=1, max_retries=1)(_call)
    ref = ray.put(shared) if shared is not None else None
    limit = max(1, limit or cluster_cpus())
    mine = _versions()
    running: dict = {}
    nxt = 0
    try:
        while nxt < len(tasks) or running:
            while nxt < len(tasks) and len(running) < limit:
                running[remote.remote(fn, tasks[nxt], ref)] = nxt
                nxt += 1
            [ended], _ = ray.wait(list(running), num_returns=1)
            i = running.pop(ended)
            try:
                theirs, result = ray.get(ended)
            except RayTaskError as exc:           # the task raised: the same error as here
                raise exc.as_instanceof_cause() from None
            except RayError as exc:
                raise WorkerDied(f"a Ray task was lost ({type(exc).__name__}: {str(exc).splitlines()[0]})",
                                 key="--ray", expected="a cluster whose nodes stay up") from None
            if theirs != mine:
                raise CoexploreError(f"a Ray node runs {theirs}, this machine {mine}", key="--ray",
                                     expected="the same coexplore installed on every node")
            yield i, result
    finally:
        for pending in running:
            ray.cancel(pending, force=True)
