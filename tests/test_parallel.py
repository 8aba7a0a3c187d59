"""coexplore.workers.processes: results in task order from a kept pool (the same as one process), and
workers that do not outlive a parent killed without cleaning up."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coexplore.workers.processes import WorkerPool

ROOT = Path(__file__).resolve().parents[1]


def _square(x):
    return x * x


def test_worker_pool_keeps_task_order_over_rounds():
    with WorkerPool(2) as pool:
        assert pool.map(_square, list(range(7))) == [x * x for x in range(7)]
        assert pool.map(_square, [3, 1]) == [9, 1]


PARENT = """
import sys, time
sys.path.insert(0, {root!r})
from coexplore.workers.processes import in_processes

def slow(x):
    time.sleep(120)
    return x

if __name__ == "__main__":
    for r in in_processes(slow, [1, 2], 2):
        print(r)
"""


def _children(pid: int) -> set[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


def test_workers_exit_when_their_parent_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(PARENT.format(root=str(ROOT)))
    parent = subprocess.Popen([sys.executable, str(script)])
    try:
        deadline = time.time() + 60
        workers: set[int] = set()
        while time.time() < deadline and len(workers) < 2:      # (the resource tracker is a child too)
            workers = _children(parent.pid)
            time.sleep(0.2)
        assert len(workers) >= 2
        time.sleep(1.0)                                         # the workers are up and sleeping in their task
        os.kill(parent.pid, signal.SIGKILL)                     # no cleanup: the workers are on their own
        parent.wait()
        end = time.time() + 10
        while time.time() < end and any(_alive(w) for w in workers):
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers)
    finally:
        if parent.poll() is None:
            parent.kill()


def _stop_signals_of(status: str) -> dict:
    """Whether SIGINT (bit 2) and SIGTERM (bit 15) are in each signal set of /proc/<pid>/status."""
    import signal
    sets = {k: int(v, 16) for k, v in (line.split(":\t") for line in status.splitlines()
                                       if line.startswith(("SigBlk", "SigIgn")))}
    return {k: all(v >> (s - 1) & 1 for s in (signal.SIGINT, signal.SIGTERM)) for k, v in sets.items()}


def _own_status(_task=None) -> str:
    with open("/proc/self/status") as f:
        return f.read()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="no /proc here")
def test_workers_start_with_ctrl_c_blocked_then_ignore_it_and_the_parent_loses_none():
    """A Ctrl-C while a worker still starts (imports its site) must not kill it: processes are
    started with SIGINT/SIGTERM blocked (inherited across exec); a worker then ignores and unblocks
    them; the parent's mask is back after, and a signal sent while it was blocked still arrives."""
    import signal
    import subprocess
    import sys
    import threading
    from coexplore.workers.processes import _children_ignore_stops, in_processes
    with _children_ignore_stops():
        child = subprocess.run([sys.executable, "-c", "print(open('/proc/self/status').read())"],
                               capture_output=True, text=True).stdout
        got = []
        old = signal.signal(signal.SIGINT, lambda *a: got.append(1))
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)   # (to this thread: others, e.g. a test
        assert not got                                       # runner's, may take a process-wide one) blocked: pending
    assert got == [1]                                        # delivered once unblocked
    signal.signal(signal.SIGINT, old)
    assert _stop_signals_of(child)["SigBlk"]                 # a process started inside: blocked from its start
    assert not _stop_signals_of(_own_status())["SigBlk"]     # the parent's mask is back
    (worker,) = list(in_processes(_own_status, [0], 1))
    assert _stop_signals_of(worker) == {"SigBlk": False, "SigIgn": True}   # the worker: ignored, unblocked
