"""MAGMA's encoding of a schedule and the loss every system-level searcher minimises.

A candidate is one row of 2J floats: `x[:J]` = core of each job (integer-valued; searchers
on a continuous box give values in [0, N] that are floored, N read as core N-1), `x[J:]` = priority
of each job in [0, 1] (lower runs earlier on its core). Job index = table row.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from coexplore.system.evaluator import Evaluation, check_bandwidth, evaluate
from coexplore.system.jobs import JobTable


@dataclass(frozen=True)
class ScheduleSpace:
    """A schedule as a real vector (MAGMA's encoding): per job its core (a number in
    [0, num_cores], floored into range), then per job its priority in [0, 1]. `remap`: per job
    and core, the core it runs on (the job's fastest core where it cannot run on the one chosen;
    None when every job can run everywhere), so every searcher's candidates are feasible."""

    num_jobs: int
    num_cores: int
    remap: np.ndarray | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, latency: np.ndarray) -> "ScheduleSpace":
        """The space of a latency table [J, N] (inf where a job cannot run on a core)."""
        lat = np.asarray(latency, dtype=float)
        J, N = lat.shape
        ok = np.isfinite(lat)
        if ok.all():
            return cls(J, N)
        remap = np.where(ok, np.arange(N)[None, :], np.argmin(lat, axis=1)[:, None])
        return cls(J, N, remap)

    @property
    def dim(self) -> int:
        return 2 * self.num_jobs

    def lower(self) -> np.ndarray:
        return np.zeros(self.dim)

    def upper(self) -> np.ndarray:
        return np.concatenate([np.full(self.num_jobs, float(self.num_cores)),
                               np.ones(self.num_jobs)])

    def split(self, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(core int [n, J], priority [n, J]) of a batch [n, 2J]; cores floored into range."""
        batch = np.atleast_2d(np.asarray(batch, dtype=float))
        J = self.num_jobs
        core = np.clip(np.floor(batch[:, :J]), 0, self.num_cores - 1).astype(np.int64)
        if self.remap is not None:
            core = self.remap[np.arange(J)[None, :], core]
        return core, batch[:, J:]

    def check(self, batch) -> np.ndarray:
        """batch as floats [n, 2J], or a CoexploreError when a row is not a candidate: cores in
        [0, N] (a box searcher's N is floored into range), priorities in [0, 1], all finite."""
        from coexplore.errors import CoexploreError
        x = np.asarray(batch)
        if x.ndim != 2 or x.shape[1] != self.dim or not (np.issubdtype(x.dtype, np.number)
                                                          or x.dtype == bool):
            raise CoexploreError(f"candidates of shape {x.shape} ({x.dtype})", key="batch",
                                 expected=f"numbers of shape [n, {self.dim}] (2 x {self.num_jobs} jobs)")
        x = x.astype(float)
        J = self.num_jobs
        if not np.all(np.isfinite(x)) or np.any(x < 0) or np.any(x[:, :J] > self.num_cores) \
                or np.any(x[:, J:] > 1):
            raise CoexploreError("candidate value out of range", key="batch",
                                 expected=f"cores 0 <= x[:{J}] <= {self.num_cores} (floored, {self.num_cores} read as core "
                                          f"{self.num_cores - 1}), priorities 0 <= x[{J}:] <= 1")
        return x

    def join(self, core: np.ndarray, priority: np.ndarray) -> np.ndarray:
        return np.concatenate([np.atleast_2d(core).astype(float), np.atleast_2d(priority)], axis=1)

    def random(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n uniform candidates: core ~ U{0..N-1}, priority ~ U[0, 1)."""
        core = rng.integers(0, self.num_cores, (n, self.num_jobs))
        return self.join(core, rng.random((n, self.num_jobs)))

    sample = random      # the name a layer's DiscreteSpace gives it: a searcher written for one calls either


def space_of(table: JobTable) -> ScheduleSpace:
    return ScheduleSpace.of(table.latency)


class MakespanObjective:
    """Callable batch [n, 2J] -> makespans [n] (cycles) for one table and system bandwidth; a
    candidate outside the space (`ScheduleSpace.check`) is refused, not clamped into it."""

    def __init__(self, table: JobTable, bandwidth: float):
        from coexplore.errors import check_type
        self.table = check_type(table, JobTable, "table", "a JobTable (coexplore.system.jobs)")
        self.bandwidth = check_bandwidth(bandwidth)
        self.space = space_of(table)

    def details(self, batch: np.ndarray) -> Evaluation:
        core, prio = self.space.split(self.space.check(batch))
        t = self.table
        return evaluate(t.latency, t.bandwidth, self.bandwidth, core, prio, energy=t.energy)

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        return self.details(batch).makespan
