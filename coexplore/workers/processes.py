"""Tasks in worker processes (spawn) for the commands' `--jobs N`: results as each task ends, a
worker that dies said as such (not a hang), and Ctrl-C / SIGTERM handled by the parent alone."""

from __future__ import annotations

import contextlib
import multiprocessing

from coexplore.errors import CoexploreError


class WorkerDied(CoexploreError):
    """A worker process ended without its result (killed, out of memory): the run stops; what
    finished before is kept."""


def ignore_ctrl_c() -> None:
    """A worker process's initializer: the parent process handles Ctrl-C and SIGTERM (sent to the
    whole process group by a terminal, `kill -- -PGID` or a job scheduler) and ends the workers. A
    worker whose parent dies without ending it (killed, or a script with no SIGTERM handling) exits
    within a second instead of running its task on for nobody."""
    import os
    import signal
    import threading
    import time
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):         # (blocked from its start; Windows has no masks)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)
    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


def start_worker() -> None:
    """A worker process's initializer: stops left to the parent (`ignore_ctrl_c`), and the user's
    plugins imported as the parent imported them (a spawned process starts afresh)."""
    ignore_ctrl_c()
    from coexplore import plugins
    plugins.load_all()


@contextlib.contextmanager
def _children_ignore_stops():
    """Processes started inside begin with Ctrl-C and SIGTERM blocked (a signal mask is inherited
    across fork and exec), until their initializer ignores them and unblocks them: a Ctrl-C while a
    worker imports its site no longer kills it, and the run no longer says a worker died. In the
    parent the two are blocked (in the starting thread) only while the processes start, a few
    milliseconds: one arriving then is delivered when they are unblocked, not lost (or, with other
    threads running, at once through one of them)."""
    import signal
    if not hasattr(signal, "pthread_sigmask"):      # (Windows: no signal masks; the initializer alone)
        yield
        return
    stops = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _new_pool(workers: int):
    from concurrent.futures import ProcessPoolExecutor
    return ProcessPoolExecutor(max_workers=workers, initializer=start_worker,
                               mp_context=multiprocessing.get_context("spawn"))


def _completed(pool, fn, tasks: list):
    """Yield (task index, fn(task)) from `pool` as each ends; a dead worker is a WorkerDied error."""
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool
    try:
        with _children_ignore_stops():
            index = {pool.submit(fn, t): i for i, t in enumerate(tasks)}     # (starts the processes)
        pending = set(index)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            broken = [f for f in finished if isinstance(f.exception(), BrokenProcessPool)]
            for f in finished:
                if f not in broken:
                    yield index[f], f.result()      # (the results that did end are handed over first)
            if broken:
                raise BrokenProcessPool
    except BrokenProcessPool:
        raise WorkerDied("a worker process died before its task ended (killed, or out of memory)",
                         key="workers", option="--jobs",
                         expected="fewer --jobs if memory ran out") from None


def in_processes(fn, tasks: list, workers: int):
    """Yield fn(task) of every task, run in min(workers, len(tasks)) spawn processes, as each ends
    (completion order). Ctrl-C, SIGTERM, an error or the caller's leaving the loop ends the workers at
    once; a worker that dies is a WorkerDied error, not a wait for a result that never comes."""
    if not tasks:
        return
    pool = _new_pool(min(workers, len(tasks)))
    complete = False
    try:
        for _, result in _completed(pool, fn, tasks):
            yield result
        complete = True
    finally:
        if complete:
            pool.shutdown(wait=True)
        else:
            _stop(pool)


class WorkerPool:
    """Spawn processes kept for several rounds of tasks (the generations of a training: each round
    would otherwise pay the 2-3 s start of its processes). `map` returns the results in task order;
    a stop or an error ends the workers at once, as `in_processes` does. Use it as a context manager."""

    def __init__(self, workers: int):
        self.workers = int(workers)
        self._pool = None

    def map(self, fn, tasks: list) -> list:
        if self._pool is None:
            self._pool = _new_pool(self.workers)
        out = [None] * len(tasks)
        try:
            for i, result in _completed(self._pool, fn, tasks):
                out[i] = result
        except BaseException:
            self._kill()
            raise
        return out

    def _kill(self) -> None:
        if self._pool is not None:
            _stop(self._pool)
            self._pool = None

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, kind, *rest) -> None:
        if kind is None and self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        else:
            self._kill()


def _stop(pool) -> None:
    """Cancel what has not started and end the workers now (not after their running tasks)."""
    for p in list(getattr(pool, "_processes", {}).values()):
        p.kill()                      # (they ignore SIGINT and SIGTERM)
    pool.shutdown(wait=True, cancel_futures=True)
