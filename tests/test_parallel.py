"""coexplore.system.parallel: results in task order from a kept pool (the same as one process), and
workers that do not outlive a parent killed without cleaning up."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from coexplore.system.parallel import WorkerPool

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
from coexplore.system.parallel import in_processes

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


def test_processes_started_for_the_workers_ignore_ctrl_c_from_their_start():
    """A Ctrl-C while a worker still starts (imports its site) must not kill it: processes started
    by the pool inherit an ignored SIGINT/SIGTERM, which Python keeps; the parent's handlers are back after."""
    import signal
    import subprocess
    import sys
    from coexplore.system.parallel import _children_ignore_stops
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with _children_ignore_stops():
        out = subprocess.run([sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT), "
                              "signal.getsignal(signal.SIGTERM))"], capture_output=True, text=True).stdout
    assert out.split() == [str(signal.SIG_IGN)] * 2           # (printed as 1, or Handlers.SIG_IGN)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
