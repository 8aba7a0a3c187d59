"""Tasks in worker processes (spawn) for the commands' `--jobs N`: results as each task ends, a
worker that dies said as such (not a hang), and Ctrl-C / SIGTERM handled by the parent alone."""

from __future__ import annotations

import multiprocessing

from coexplore.errors import CoexploreError


class WorkerDied(CoexploreError):
    """A worker process ended without its result (killed, out of memory): the run stops; what
    finished before is kept."""


def ignore_ctrl_c() -> None:
    """A worker process's initializer: the parent process handles Ctrl-C and SIGTERM (sent to the
    whole process group by a terminal, `kill -- -PGID` or a job scheduler) and ends the workers."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def in_processes(fn, tasks: list, workers: int):
    """Yield fn(task) of every task, run in min(workers, len(tasks)) spawn processes, as each ends
    (completion order). Ctrl-C, SIGTERM, an error or the caller's leaving the loop ends the workers at
    once; a worker that dies is a WorkerDied error, not a wait for a result that never comes."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool
    if not tasks:
        return
    pool = ProcessPoolExecutor(max_workers=min(workers, len(tasks)), initializer=ignore_ctrl_c,
                               mp_context=multiprocessing.get_context("spawn"))
    complete = False
    try:
        pending = {pool.submit(fn, t) for t in tasks}
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            broken = [f for f in finished if isinstance(f.exception(), BrokenProcessPool)]
            for f in finished:
                if f not in broken:
                    yield f.result()            # (the results that did end are handed over first)
            if broken:
                raise BrokenProcessPool
        complete = True
    except BrokenProcessPool:
        raise WorkerDied("a worker process died before its task ended (killed, or out of memory)", key="--jobs",
                         expected="fewer --jobs if memory ran out") from None
    finally:
        if complete:
            pool.shutdown(wait=True)
        else:
            _stop(pool)


def _stop(pool) -> None:
    """Cancel what has not started and end the workers now (not after their running tasks)."""
    for p in list(getattr(pool, "_processes", {}).values()):
        p.kill()                      # (they ignore SIGINT and SIGTERM)
    pool.shutdown(wait=True, cancel_futures=True)
