"""List-scheduling heuristics: job order {FCFS, SJF, HEFT} x core choice {GREEDY, RR, MET, HEFT}.

These are the heuristics of MAGMA's code (`run_heursitic`), re-implemented from their
description. Each builds one candidate (core + priority per job) while ignoring bandwidth
contention, keeping a per-core busy-time estimate (sum of no-stall latencies); the candidate
is then scored by the bandwidth-aware evaluator like any other.

Job order (also the order in which cores are chosen, and the priority = position):
* FCFS: table row order.
* SJF:  rows sorted (stable) by no-stall latency on the last core, then the one before it, ...
        down to core 2 -- MAGMA's `sorting_job` key, kept so the results match its code. With
        fewer than 3 cores this key is empty and SJF = FCFS, as in MAGMA.
* HEFT: cores are chosen in row order, priority = rank of the job's mean latency over cores
        (numpy's default argsort, as MAGMA: tied means of *different* rows are ordered by
        numpy's unstable sort, which can differ between CPUs' SIMD sort kernels).
Core choice for each job in that order:
* GREEDY: the least busy core; RR: position mod #cores; MET: the core with the minimum
  latency for the job (ties, e.g. identical cores: a uniformly random one of them, the draws of
  MAGMA's `rng.choice` per job made at once; the default `RandomState(0)` per schedule is what reproduces MAGMA's
  published numbers);
  HEFT: the core where the job would finish first (busy + latency).
"""

from __future__ import annotations

import functools

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.search.base import Searcher

JOB_ORDERS = ("FCFS", "SJF", "HEFT")
CORE_RULES = ("GREEDY", "RR", "MET", "HEFT")
HEURISTICS = tuple(f"{o}-{c}" for o in JOB_ORDERS for c in CORE_RULES)


def sjf_order(latency: np.ndarray) -> np.ndarray:
    """Row order of SJF: stable sort by latency on cores N-1, N-2, ..., 2 (MAGMA's key)."""
    n = latency.shape[1]
    keys = [latency[:, n - i] for i in range(1, n - 1)]
    if not keys:
        return np.arange(latency.shape[0])
    return np.lexsort(keys[::-1])


def heuristic_schedule(latency: np.ndarray, name: str, rng=None) -> tuple[np.ndarray, np.ndarray]:
    """(core [J] int, priority [J] float in [0, 1)) of heuristic `name`, e.g. "SJF-HEFT".

    rng (a numpy Generator or RandomState) breaks MET's ties; None = RandomState(0)."""
    try:
        job_rule, core_rule = name.upper().split("-")
    except ValueError:
        job_rule = core_rule = ""
    if job_rule not in JOB_ORDERS or core_rule not in CORE_RULES:
        raise CoexploreError(f"unknown heuristic '{name}'", key="searcher",
                             expected=", ".join(h.lower() for h in HEURISTICS))
    lat = np.asarray(latency, dtype=float)
    J, N = lat.shape
    seq = sjf_order(lat) if job_rule == "SJF" else np.arange(J)
    priority = np.empty(J)
    if job_rule == "HEFT":
        mean = np.array([row[np.isfinite(row)].mean() for row in lat])    # (over the cores it can run on)
        priority[np.argsort(mean)] = np.arange(J) / J
    else:
        priority[seq] = np.arange(J) / J
    if rng is None:
        rng = np.random.RandomState(0)
    core = np.empty(J, dtype=np.int64)
    if core_rule == "MET":     # no busy times: every job's tie-break drawn at once, in job order
        ties = lat == lat.min(axis=1, keepdims=True)
        k = ties[seq].sum(axis=1)
        # one bounded draw per job, in `seq` order: the same stream as a rng.choice(cand, 1) per job
        pick = rng.randint(0, k) if isinstance(rng, np.random.RandomState) else rng.integers(0, k)
        nth = np.cumsum(ties[seq], axis=1) - 1          # rank of each tied core within its row
        core[seq] = np.argmax(ties[seq] & (nth == np.asarray(pick)[:, None]), axis=1)
        return core, priority
    busy = np.zeros(N)
    for pos, j in enumerate(seq):
        if core_rule == "GREEDY":           # (only among the cores the job can run on)
            c = int(np.argmin(np.where(np.isfinite(lat[j]), busy, np.inf)))
        elif core_rule == "RR":
            c = next(c % N for c in range(pos, pos + N) if np.isfinite(lat[j, c % N]))
        else:
            c = int(np.argmin(busy + lat[j]))
        core[j] = c
        busy[c] += lat[j, c]
    return core, priority


class HeuristicSearcher(Searcher):
    """A one-shot heuristic behind ask/tell: its first sample is the heuristic's schedule.

    A deterministic heuristic proposes its one schedule (`size` = 1), then nothing; MET with tied
    minimum-latency cores (homogeneous systems) proposes a fresh random tie-break per sample.
    """

    def __init__(self, latency: np.ndarray, name: str, seed: int | None = 0):
        super().__init__(seed)
        self.latency = latency
        self.heuristic = name.upper()
        self.name = name.lower()

    @property
    def space(self):
        """The schedule space of the table (told batches are checked against it)."""
        from coexplore.system.encoding import ScheduleSpace
        return ScheduleSpace.of(self.latency)

    @functools.cached_property
    def size(self) -> int | None:
        lat = np.asarray(self.latency)
        ties = np.sum(lat == lat.min(axis=1, keepdims=True), axis=1)
        return None if self.heuristic.endswith("-MET") and ties.max() > 1 else 1

    def ask(self, n: int) -> np.ndarray:
        if self.size is not None:
            n = max(0, min(n, self.size - self.samples))
            if n == 0:
                return np.empty((0, 2 * np.shape(self.latency)[0]))
        if not hasattr(self, "_ties"):  # MAGMA's convention: a RandomState seeded per schedule
            seed = int(self.rng.integers(2**31)) if self.seed is None else int(self.seed)
            # RandomState takes seeds below 2^32 as they are (MAGMA's); a larger one as its 32-bit words
            self._ties = np.random.RandomState(seed if seed < 2**32 else
                                               [(seed >> s) & 0xFFFFFFFF for s in range(0, seed.bit_length(), 32)])
        out = []
        for _ in range(n):
            core, prio = heuristic_schedule(self.latency, self.heuristic, self._ties)
            out.append(np.concatenate([core.astype(float), prio]))
        return np.array(out)
