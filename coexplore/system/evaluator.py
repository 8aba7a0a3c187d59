"""Makespan of candidate schedules under shared off-chip bandwidth (MAGMA's model, vectorised).

A candidate gives every job a core and a priority; each core runs its jobs back to back in
ascending priority (ties: table row order). At any time the running jobs ask for their
bandwidth needs; while the sum exceeds the system bandwidth B, every job gets the same
fraction s = B / sum and progresses at rate s of its no-stall speed (its latency stretches
by 1/s). This is MAGMA's "proportional allocation of a fixed data volume lat x bw": the
remaining time of a job is (remaining no-stall cycles) / s. Jobs that need no bandwidth are
never slowed (MAGMA's own code divides 0 by 0 there).

The simulation is event driven and advanced for all candidates at once: every event
finishes exactly one job (ties finish at the next event with zero duration), so a
population of P candidates with J jobs takes exactly J vectorised steps.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from coexplore.errors import CoexploreError


@dataclass
class Evaluation:
    """Per candidate: makespan [P] (cycles), energy [P] (pJ, NaN if unknown), busy [P, N]
    (cycles each core spends running jobs = the time its last job ends)."""

    makespan: np.ndarray
    energy: np.ndarray
    busy: np.ndarray


@dataclass
class Trace:
    """One candidate's timeline: job start/end (cycles) and the bandwidth segments.

    Segment i spans [seg_start[i], seg_end[i]) and core c runs job seg_job[i, c] (-1 idle)
    with allocated bandwidth seg_bw[i, c] (bytes/cycle)."""

    job_core: np.ndarray
    job_start: np.ndarray
    job_end: np.ndarray
    seg_start: np.ndarray
    seg_end: np.ndarray
    seg_job: np.ndarray
    seg_bw: np.ndarray
    bandwidth: float

    @property
    def makespan(self) -> float:
        return float(self.job_end.max())


def check_bandwidth(bandwidth: float) -> float:
    """The system bandwidth as a float: a finite number > 0 (a string such as "16" is refused, as
    every other number argument is, not read)."""
    if isinstance(bandwidth, (str, bytes, bool, np.bool_)) or not isinstance(bandwidth, numbers.Real):
        raise CoexploreError(f"got {type(bandwidth).__name__} {bandwidth!r:.40}", key="bandwidth",
                             expected="a finite number of bytes/cycle > 0")
    b = float(bandwidth)
    if not np.isfinite(b) or b <= 0:
        raise CoexploreError(f"system bandwidth is {bandwidth}", key="bandwidth",
                             expected="a finite number of bytes/cycle > 0")
    return b


def check_candidates(core: np.ndarray, priority: np.ndarray, num_jobs: int, num_cores: int):
    """Return (core int [P, J], priority float [P, J]) or raise CoexploreError."""
    core = np.atleast_2d(np.asarray(core))
    if core.dtype.kind == "b":           # (True/False read as cores 1/0)
        raise CoexploreError("core ids are booleans", key="core", expected=f"integers 0..{num_cores - 1}")
    priority = np.atleast_2d(np.asarray(priority, dtype=float))
    if core.shape != priority.shape or core.shape[1] != num_jobs:
        raise CoexploreError(f"candidates have shapes {core.shape} / {priority.shape}",
                             expected=f"[n, {num_jobs}] core ids and priorities")
    if not np.all(np.isfinite(core)) or np.any(core != np.floor(core)):
        raise CoexploreError("core ids must be integers", expected=f"0..{num_cores - 1}")
    core = core.astype(np.int64)
    if core.size and (core.min() < 0 or core.max() >= num_cores):
        raise CoexploreError(f"core ids out of range: {core.min()}..{core.max()} given",
                             expected=f"0..{num_cores - 1}")
    if not np.all(np.isfinite(priority)):
        raise CoexploreError("priorities must be finite numbers")
    return core, priority


def _tables(latency, bandwidth_need, energy=None) -> tuple[np.ndarray, np.ndarray]:
    """(latency, bandwidth need) as float [J, N] arrays of one shape (and `energy` of it when given),
    else a CoexploreError (a shorter table gave an IndexError from inside the simulation)."""
    lat = np.asarray(latency, dtype=float)
    bw = np.asarray(bandwidth_need, dtype=float)
    if lat.ndim != 2:
        raise CoexploreError(f"latency of shape {lat.shape}", key="latency", expected="[jobs, cores] cycles")
    for key, a in (("bandwidth_need", bw), ("energy", None if energy is None else np.asarray(energy, dtype=float))):
        if a is not None and a.shape != lat.shape:
            raise CoexploreError(f"{key} of shape {a.shape}, latency of {lat.shape}", key=key,
                                 expected="one value per (job, core), as latency")
    return lat, bw


def _simulate(lat, bw, bandwidth, core, priority, record=False):
    P, J = core.shape
    N = lat.shape[1]
    rows = np.arange(P)
    order = np.lexsort((priority, core), axis=-1)             # by core, then priority; stable
    qcore = np.take_along_axis(core, order, axis=1)
    L = np.concatenate([lat[order, qcore], np.full((P, 1), np.inf)], axis=1)
    B = np.concatenate([bw[order, qcore], np.zeros((P, 1))], axis=1)
    counts = np.zeros((P, N), dtype=np.int64)
    np.add.at(counts, (np.repeat(rows, J), core.ravel()), 1)
    end = np.cumsum(counts, axis=1)
    ptr = end - counts
    head = np.where(ptr < end, ptr, J)
    rem = np.take_along_axis(L, head, axis=1)
    bwh = np.take_along_axis(B, head, axis=1)
    t = np.zeros(P)
    finish = np.zeros((P, N))
    segs = []
    for _ in range(J):
        req = bwh.sum(axis=1)
        over = req > bandwidth
        s = np.where(over, bandwidth / np.where(over, req, 1.0), 1.0)
        rate = np.where(bwh > 0, s[:, None], 1.0)
        tf = rem / rate
        k = np.argmin(tf, axis=1)
        d = tf[rows, k]
        if record:
            segs.append((t[0], t[0] + d[0], np.where(head[0] < J, order[0, np.minimum(head[0], J - 1)], -1),
                         bwh[0] * rate[0]))
        t = t + d
        rem = np.maximum(rem - d[:, None] * rate, 0.0)
        p = ptr[rows, k] + 1
        ptr[rows, k] = p
        done = p >= end[rows, k]
        finish[rows[done], k[done]] = t[done]
        h = np.where(done, J, p)
        head[rows, k] = h
        rem[rows, k] = L[rows, h]
        bwh[rows, k] = B[rows, h]
    return t, finish, segs


def evaluate(latency: np.ndarray, bandwidth_need: np.ndarray, bandwidth: float,
             core: np.ndarray, priority: np.ndarray, energy: np.ndarray | None = None,
             chunk: int = 512) -> Evaluation:
    """Makespan, energy and per-core busy time of P candidates (core [P, J], priority [P, J])."""
    lat, bw = _tables(latency, bandwidth_need, energy)
    bandwidth = check_bandwidth(bandwidth)
    core, priority = check_candidates(core, priority, lat.shape[0], lat.shape[1])
    P = core.shape[0]
    makespan = np.empty(P)
    busy = np.empty((P, lat.shape[1]))
    for a in range(0, P, chunk):
        t, fin, _ = _simulate(lat, bw, bandwidth, core[a:a + chunk], priority[a:a + chunk])
        makespan[a:a + chunk], busy[a:a + chunk] = t, fin
    if energy is None:
        en = np.full(P, np.nan)
    else:
        en = np.asarray(energy, dtype=float)[np.arange(lat.shape[0])[None, :], core].sum(axis=1)
    return Evaluation(makespan, en, busy)


def trace(latency: np.ndarray, bandwidth_need: np.ndarray, bandwidth: float,
          core: np.ndarray, priority: np.ndarray) -> Trace:
    """Timeline of one candidate (core [J], priority [J]) for Gantt charts and summaries."""
    lat, bw = _tables(latency, bandwidth_need)
    bandwidth = check_bandwidth(bandwidth)
    core, priority = check_candidates(core, priority, lat.shape[0], lat.shape[1])
    _, _, segs = _simulate(lat, bw, bandwidth, core, priority, record=True)
    J = lat.shape[0]
    seg_start = np.array([s[0] for s in segs])
    seg_end = np.array([s[1] for s in segs])
    seg_job = np.array([s[2] for s in segs], dtype=np.int64)
    seg_bw = np.array([s[3] for s in segs])
    job_start = np.full(J, np.inf)
    job_end = np.zeros(J)
    for i in range(len(segs)):
        for j in seg_job[i][seg_job[i] >= 0]:
            job_start[j] = min(job_start[j], seg_start[i])
            job_end[j] = max(job_end[j], seg_end[i])
    return Trace(core[0], job_start, job_end, seg_start, seg_end, seg_job, seg_bw, bandwidth)
