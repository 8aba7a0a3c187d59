"""Tasks on a Ray cluster, for `coexplore sweep --ray` (the optional extra `coexplore[ray]`).

A task gets its inputs as Ray objects and hands back its results the same way: the layer searches'
cache entries and a sweep point's files travel to the driver, which alone writes the SQLite cache
(SQLite on a network filesystem is not safe to share) and the result folder. The nodes need the
same coexplore, numpy, scipy and Python (checked before a task runs) and, for own-core systems and
plugins given as files, those files at the same paths (a shared filesystem, or one machine).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator

from coexplore.errors import CoexploreError
from coexplore.workers.processes import WorkerDied

INSTALL = "pip install 'coexplore[ray]' (from a clone: pip install '.[ray]'; Ray 2.9 or newer)"
EXPECTED = ("the address `ray start --head` printed (HOST:6379), ray://HOST:10001 (Ray Client), auto (the "
            "cluster `ray start` began on this machine), or no address to start Ray on this machine")
CONNECT_TIMEOUT_S = 60.0


def require_ray() -> None:
    """Raise the install hint now (before any work) when Ray is missing."""
    _ray()


def _ray():
    try:
        import ray
    except ImportError as exc:
        if exc.name in (None, "ray"):
            raise CoexploreError("Ray is not installed", key="ray", option="--ray", expected=INSTALL) from None
        raise CoexploreError(f"Ray is installed but cannot be imported ({exc})", key="ray", option="--ray",
                             expected=f"a working Ray ({INSTALL})") from None
    except Exception as exc:     # a broken install: said as such, not as a coexplore bug
        raise CoexploreError(f"Ray is installed but cannot be imported ({type(exc).__name__}: {exc})",
                             key="ray", option="--ray",
                             expected=f"a working Ray ({INSTALL})") from None
    return ray


def check_address(address: str | None, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse now (before any work) the cluster address `start_ray` would connect to ($RAY_ADDRESS
    without one), if it is malformed, nothing answers there, or it does not answer as Ray in a child
    process within `timeout` s (Ray itself retries for ever where something that is not Ray answers)."""
    target = address or os.environ.get("RAY_ADDRESS") or None
    if target is not None:
        where = target + ("" if address else " (from $RAY_ADDRESS)")
        try:
            if target == "auto":
                found = _auto_address()
                where += f" ({found})"
                _check_reachable(found, where)
            else:
                _check_reachable(target, where)
            _probe(target, where, timeout)
        except CoexploreError as exc:
            if not address:              # the user gave no address: the environment's is the one to fix
                exc.key, exc.option, exc.expected = "$RAY_ADDRESS", None, (f"$RAY_ADDRESS unset (Ray started on this machine) or "
                                                         f"naming a running cluster: {exc.expected}")
            raise


@contextlib.contextmanager
def ray_session(address: str | None, cpus: int | None = None):
    """Ray joined or started for a block (`start_ray`, the address checked already) and ended after
    it; what Ray prints meanwhile, its shutdown's reports included, goes to standard error."""
    with stdout_to_stderr():
        joined = start_ray(address, cpus, probe=False)
        try:
            yield
        finally:
            if joined:
                stop_ray()


def start_ray(address: str | None, cpus: int | None = None, timeout: float = CONNECT_TIMEOUT_S,
              probe: bool = True) -> bool:
    """Connect to the Ray cluster at `address` ("auto": the one `ray start` began on this machine,
    "HOST:PORT", "ray://HOST:10001"); with None, to the one $RAY_ADDRESS names, else start a new one on
    this machine with `cpus` CPUs (None: all), even when a cluster runs here. An address is tried
    first (`check_address`, unless `probe` is False: done before). True when this call started or
    joined Ray (the caller ends it with `stop_ray`)."""
    ray = _ray()
    target = address or os.environ.get("RAY_ADDRESS") or None
    where = None if target is None else target + ("" if address else " (from $RAY_ADDRESS)")
    if probe:
        check_address(address, timeout)
    if ray.is_initialized():            # (a Python caller's own ray.init: its cluster is used)
        return False
    import signal
    ours = signal.getsignal(signal.SIGTERM)
    try:
        with stdout_to_stderr():
            ray.init(address=target or "local", num_cpus=cpus if target is None else None,  # ("local": a new
                     include_dashboard=False, log_to_driver=False, configure_logging=False)   # one beside a cluster)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise CoexploreError(f"cannot {'start Ray on this machine' if target is None else 'connect to ' + where}: "
                             f"{exc}", key="ray", option="--ray", expected=EXPECTED) from None
    finally:        # Ray's own SIGTERM handler exits at once: a stop keeps being handled as Ctrl-C
        signal.signal(signal.SIGTERM, ours)
    if target is not None and not _ray().cluster_resources().get("CPU", 0) >= 1:
        import sys
        print(f"coexplore: note: the Ray cluster at {where} has no CPUs now: the tasks wait until nodes with CPUs "
              "join (an autoscaling cluster); Ctrl-C stops", file=sys.stderr)
    return True


def _auto_address() -> str:
    """The cluster Ray's "auto" joins on this machine: the last `ray start`'s address (Ray keeps it in
    its temporary folder, also after the cluster is gone), else a running local cluster's; refused when
    there is none, so a stale or missing cluster is said at once, by its address."""
    try:
        from ray._private.services import get_ray_address_from_environment
    except ImportError:           # (another Ray: "auto" is left to Ray itself)
        return "auto"
    try:
        found = get_ray_address_from_environment("auto", None)
    except ConnectionError:
        found = None
    if not found:
        raise CoexploreError("no Ray cluster was started on this machine (`ray start` leaves the address \"auto\" "
                             "finds)", key="ray", option="--ray",
                             expected="`ray start --head` run first, or the address of a running cluster: " + EXPECTED)
    return found


def _check_reachable(address: str, where: str, timeout: float = 5.0) -> None:
    """Refuse a malformed address, or one where nothing answers within `timeout` s, at once."""
    import socket
    if address == "auto":
        return
    scheme, sep, hostport = address.rpartition("://")
    if sep and scheme != "ray":
        raise CoexploreError(f"{where}: Ray addresses have no {scheme}:// scheme", key="ray", option="--ray",
                             expected=EXPECTED)
    host, colon, port = hostport.rpartition(":")
    if not colon or not host:
        raise CoexploreError(f"{where} is not HOST:PORT", key="ray", option="--ray", expected=EXPECTED)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise CoexploreError(f"{where}: {port!r} is not a port number", key="ray", option="--ray", expected=EXPECTED)
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise CoexploreError(f"nothing answers at {where} ({exc.strerror or exc})", key="ray", option="--ray",
                             expected=f"a running Ray cluster (`ray start --head` on its head node): {EXPECTED}"
                             ) from None


_PROBE = """
import json, sys, ray
ray.init(address=sys.argv[1], log_to_driver=False, configure_logging=False)
print(json.dumps(ray.cluster_resources()))
"""


def _probe(target: str, where: str, timeout: float) -> None:
    """Connect to `target` in a child process given `timeout` s: a cluster that does not answer as Ray,
    a stale `auto`, a missing authentication token are said here instead of a hang."""
    import subprocess
    import sys
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE, target], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise CoexploreError(f"no Ray cluster answered at {where} within {timeout:g} s", key="ray", option="--ray",
                             expected="the address of a running Ray cluster's head (GCS) port: " + EXPECTED) from None
    if done.returncode == 0:
        return
    text = done.stderr
    if "InvalidAuthToken" in text or "Unauthenticated" in text or "AuthenticationError" in text:
        raise CoexploreError(f"the Ray cluster at {where} asks for its authentication token", key="ray", option="--ray",
                             expected="RAY_AUTH_MODE=token and the cluster's token in ~/.ray/auth_token or "
                                      "$RAY_AUTH_TOKEN on this machine (Ray's token authentication)")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith((" ", "Traceback", "["))]
    raise CoexploreError(f"cannot connect to {where}: {lines[-1] if lines else 'exit ' + str(done.returncode)}",
                         key="ray", option="--ray", expected=EXPECTED)


def stdout_to_stderr():
    """A context in which what Ray prints (to sys.stdout or file descriptor 1: a lost worker's report)
    goes to standard error, so that standard output carries only the command's own (--json)."""
    import sys

    @contextlib.contextmanager
    def swapped():
        try:
            sys.stdout.flush()
            saved = os.dup(1)
        except (OSError, ValueError):         # (no real descriptor, e.g. under a test's capture)
            saved = None
        if saved is not None:
            os.dup2(2, 1)
        try:
            with contextlib.redirect_stdout(sys.stderr):
                yield
        finally:
            if saved is not None:
                sys.stdout.flush()
                os.dup2(saved, 1)
                os.close(saved)
    return swapped()


def stop_ray() -> None:
    _ray().shutdown()


def cluster_cpus() -> int:
    """The CPUs of the connected cluster (at least 1)."""
    return max(1, int(_ray().cluster_resources().get("CPU", 1)))


@functools.lru_cache(maxsize=1)
def _versions() -> dict:
    """What must be equal on the driver and the nodes for a task's result to be the driver's: Python's
    minor version, numpy's, scipy's (the MARL clustering, the schedules' lower bound) and coexplore's,
    with a digest of coexplore's own source files (two checkouts of one version number can differ)."""
    import platform

    import numpy
    import scipy

    import coexplore
    from coexplore.provenance import source_digest
    return {"coexplore": coexplore.__version__, "source": source_digest(), "numpy": numpy.__version__,
            "scipy": scipy.__version__, "python": ".".join(platform.python_version_tuple()[:2])}


def _imported_from(theirs: str) -> str:
    """Where the node and this machine import coexplore from, when that differs: on one machine, a
    Ray worker started in a clone imports the clone's coexplore/ folder, not the installed package."""
    ours = _package_folder()
    if theirs == ours:
        return ""
    return (f" (coexplore imported from {theirs} there, {ours} here: run from a folder that holds no "
            "coexplore/ source folder, or install the clone with `pip install -e .`)")


def _package_folder() -> str:
    import coexplore
    return os.path.dirname(os.path.abspath(coexplore.__file__))


class _OtherVersions:
    """A task's answer instead of its result when its node runs other versions than the driver."""

    def __init__(self, versions: dict, where: str):
        self.versions = versions
        self.where = where                      # the folder the node imports coexplore from


def _call(fn, task: bytes, shared: bytes | None, versions: dict, plugin_names: tuple = ()):
    """A task as run on a node: fn(task) (or fn(task, shared)), unless the node's versions differ from
    the driver's `versions` (then nothing is run); the driver's plugins (`--plugin`) imported first.
    `task` and `shared` come pickled (`_packed`) and are read only then: they may hold a plugin's
    classes, which Ray could not load before the plugin is imported."""
    import pickle
    theirs = _versions()
    if theirs != versions:
        return _OtherVersions(theirs, _package_folder())
    if plugin_names:
        from coexplore import plugins
        for name in plugin_names:
            plugins.load(name)
    task = pickle.loads(task)
    return fn(task) if shared is None else fn(task, pickle.loads(shared))


def _packed(obj) -> bytes:
    import pickle
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


SCRATCH_PREFIX = "coexplore-task-"


@contextlib.contextmanager
def scratch_folder() -> Iterator[str]:
    """A temporary folder for one task on its node, removed after it. A task cancelled by a stop
    or whose worker is killed cannot remove its own, so the folder's name holds the worker's
    process id and each new one first removes those of processes that are gone."""
    import shutil
    import tempfile
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        pid = _owner(name)
        if pid is not None and pid != os.getpid() and not _alive(pid):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-") as tmp:
        yield tmp


def _owner(name: str) -> int | None:
    """The process id in a scratch folder's name, None for other names."""
    if not name.startswith(SCRATCH_PREFIX):
        return None
    pid, sep, _ = name[len(SCRATCH_PREFIX):].partition("-")
    return int(pid) if sep and pid.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:               # another user's process: alive (and its folder not ours)
        return True
    return True


def _cannot_run(exc: BaseException, expected: str) -> CoexploreError:
    return CoexploreError(f"a Ray node cannot run coexplore's tasks ({str(exc).splitlines()[0]})",
                          key="ray", option="--ray",
                          expected=expected)


def on_ray(fn, tasks: list, shared=None, limit: int | None = None) -> Iterator[tuple[int, object]]:
    """Yield (task index, fn(task[, shared])) as each Ray task ends (completion order), at most
    `limit` tasks in flight (None: the cluster's CPUs). `shared` (one large object every task reads)
    is put in Ray's object store once. A stop, an error or the caller's leaving the loop cancels
    the tasks not ended; a task lost with its worker or node is run again once, and lost twice is a
    WorkerDied error."""
    if not tasks:
        return
    ray = _ray()
    from ray.exceptions import RayError, RaySystemError, RayTaskError
    remote = ray.remote(num_cpus=1, max_retries=1)(_call)
    ref = ray.put(_packed(shared)) if shared is not None else None
    limit = max(1, limit or cluster_cpus())
    mine = _versions()
    from coexplore import plugins
    plugin_names = tuple(plugins.loaded())
    expected = "the same coexplore (and numpy, scipy, and Python minor version) installed on every node"
    running: dict = {}
    nxt = 0
    try:
        while nxt < len(tasks) or running:
            while nxt < len(tasks) and len(running) < limit:
                running[remote.remote(fn, _packed(tasks[nxt]), ref, mine, plugin_names)] = nxt
                nxt += 1
            [ended], _ = ray.wait(list(running), num_returns=1)
            i = running.pop(ended)
            try:
                result = ray.get(ended)
            except RayTaskError as exc:
                cause = getattr(exc, "cause", None)
                if isinstance(cause, (ImportError, RaySystemError)):     # the node cannot load coexplore's code
                    raise _cannot_run(cause, expected) from None
                raise exc.as_instanceof_cause() from None     # the task raised: the same error as here
            except RaySystemError as exc:
                raise _cannot_run(exc, expected) from None
            except RayError as exc:
                raise WorkerDied(f"a Ray task was lost twice ({type(exc).__name__}: {str(exc).splitlines()[0]})",
                                 key="ray", option="--ray", expected="a cluster whose nodes stay up") from None
            if isinstance(result, _OtherVersions):
                differ = {k: (v, mine.get(k)) for k, v in result.versions.items() if mine.get(k) != v}
                raise CoexploreError("a Ray node runs other versions than this machine: " + ", ".join(
                    f"{k} {theirs} there, {ours} here" for k, (theirs, ours) in differ.items())
                    + _imported_from(result.where), key="ray", option="--ray", expected=expected)
            yield i, result
    finally:
        for pending in running:
            try:
                ray.cancel(pending, force=True)
            except Exception:         # (a task ending meanwhile, a cluster going away: nothing to cancel)
                pass
