"""Jobs and job tables: per (job, core) no-stall latency, energy and bandwidth need.

A job is one layer of one DNN instance. The job table is what the system-level schedulers
see: `latency[j, c]` (cycles, no stall), `bandwidth[j, c]` (bytes/cycle the job needs to
run at that speed = DRAM bytes / latency) and `energy[j, c]` (pJ; NaN when unknown, e.g.
MAGMA's tables). Tables are built from any cost callable so the caller decides where the
numbers come from (layer mapper + cache, a MAESTRO table, a test stub).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from coexplore.errors import CoexploreError


@dataclass(frozen=True)
class Job:
    """One layer of one DNN instance. `dims` are the layer's sizes (e.g. K, C, Y, X, R, S)."""

    name: str
    dnn: str = ""
    layer: str = ""
    kind: str = ""
    dims: tuple[tuple[str, int], ...] = ()


@dataclass
class JobTable:
    """Per (job, core) latency [cycles], bandwidth need [bytes/cycle] and energy [pJ]."""

    jobs: list[Job]
    cores: list[str]
    latency: np.ndarray          # [J, N] float, > 0; inf: the job cannot run on that core
    bandwidth: np.ndarray        # [J, N] float, >= 0
    energy: np.ndarray = field(default=None)  # [J, N] float, NaN = unknown
    # what each core design's model said of itself (its pricing, its energy table's coverage), by
    # design: filled by the system's job table, empty for a table read from a file
    core_notes: dict = field(default_factory=dict, repr=False, compare=False)
    # the best mapping behind each (core design, workload, layer)'s entries (a Timeloop mapping list):
    # filled by the system's job table (`layer_mapping_files` writes them), empty for a table read
    mappings: dict = field(default_factory=dict, repr=False, compare=False)
    # of the (layer, core design) searches behind it, how many were read from the cache / run
    layer_searches: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        self.latency = np.asarray(self.latency, dtype=float)
        self.bandwidth = np.asarray(self.bandwidth, dtype=float)
        if self.energy is None:
            self.energy = np.full_like(self.latency, np.nan)
        self.energy = np.asarray(self.energy, dtype=float)
        validate_table(self)

    def __repr__(self) -> str:          # a table of 100,000 jobs would print megabytes
        return f"JobTable({self.num_jobs} jobs x {self.num_cores} cores: {', '.join(self.cores[:8])}" \
               f"{', ...' if self.num_cores > 8 else ''})"

    @property
    def num_jobs(self) -> int:
        return self.latency.shape[0]

    @property
    def num_cores(self) -> int:
        return self.latency.shape[1]

    @property
    def dram_bytes(self) -> np.ndarray:
        """Bytes each job moves from/to DRAM on each core (= latency x bandwidth)."""
        return self.latency * self.bandwidth

    def has_energy(self) -> bool:
        """Every (job, core) a job can run on has its energy (where it cannot, latency inf, none is due)."""
        runs = np.isfinite(self.latency)
        return bool(np.all(np.isfinite(self.energy[runs])))


def validate_table(table: JobTable, file: str | None = None) -> None:
    """Raise CoexploreError unless shapes agree, latencies are > 0 and bandwidths >= 0."""
    lat, bw, en = table.latency, table.bandwidth, table.energy
    if lat.ndim != 2:
        raise CoexploreError(f"the latency table has {lat.ndim} dimension(s), shape {lat.shape}", file=file,
                             key="latency", expected="a [jobs, cores] array (one row per job, one column per core; "
                                                     "one core: shape [jobs, 1])")
    if lat.shape[0] == 0:
        raise CoexploreError("the job table has no jobs (empty workload)", file=file,
                             expected="at least one job row")
    if lat.shape[1] == 0:
        raise CoexploreError("the job table has no cores", file=file,
                             expected="lat_<core> and bw_<core> columns")
    if bw.shape != lat.shape or en.shape != lat.shape:
        raise CoexploreError(f"latency {lat.shape}, bandwidth {bw.shape} and energy {en.shape} "
                             "tables differ in shape", file=file,
                             key="bandwidth" if bw.shape != lat.shape else "energy",
                             expected=f"bandwidth and energy of the latency table's shape {lat.shape}")
    if isinstance(table.cores, (str, bytes)) or not all(isinstance(c, str) and c for c in table.cores):
        raise CoexploreError(f"cores {table.cores!r}"[:120], file=file, key="cores",
                             expected="a list of core names (non-empty strings)")
    if len(set(table.cores)) != len(table.cores):
        twice = next(c for c in table.cores if list(table.cores).count(c) > 1)
        raise CoexploreError(f"core '{twice}' is named twice", file=file, key="cores",
                             expected="each core name once")
    if isinstance(table.jobs, (str, bytes)) or not all(isinstance(j, Job) for j in table.jobs):
        first = next((j for j in table.jobs if not isinstance(j, Job)), table.jobs)
        raise CoexploreError(f"job {first!r}"[:120], file=file, key="jobs",
                             expected="a list of Job(name, dnn=..., layer=...) (coexplore.system.jobs.Job)")
    names = [j.name for j in table.jobs]
    if len(set(names)) != len(names):            # (a table file names each job once: save_table's would not load)
        seen: set = set()
        twice = next(n for n in names if n in seen or seen.add(n))
        raise CoexploreError(f"job '{twice}' is named twice", file=file, key="jobs",
                             expected="each job name once (Job(name=...); a layer run twice is two jobs, "
                                      "e.g. conv1#1 and conv1#2)")
    if len(table.jobs) != lat.shape[0] or len(table.cores) != lat.shape[1]:
        raise CoexploreError(f"{len(table.jobs)} jobs x {len(table.cores)} cores named but the "
                             f"table is {lat.shape[0]} x {lat.shape[1]}", file=file)
    bad = np.argwhere(np.isnan(lat) | (lat <= 0) | (lat == -np.inf))
    if len(bad):
        j, c = bad[0]
        raise CoexploreError(f"latency of job {table.jobs[j].name} on core {table.cores[c]} is "
                             f"{lat[j, c]}", file=file, key=f"lat_{table.cores[c]}",
                             expected="a number of cycles > 0 (inf: the job cannot run on that core)")
    nowhere = np.flatnonzero(~np.isfinite(lat).any(axis=1))
    if len(nowhere):
        raise CoexploreError(f"job {table.jobs[nowhere[0]].name} can run on no core (its latency is inf on "
                             "every one)", file=file, key="lat_*",
                             expected="at least one core with a finite latency per job")
    bad = np.argwhere(~np.isfinite(bw) | (bw < 0))
    if len(bad):
        j, c = bad[0]
        raise CoexploreError(f"bandwidth need of job {table.jobs[j].name} on core "
                             f"{table.cores[c]} is {bw[j, c]}", file=file,
                             key=f"bw_{table.cores[c]}", expected="a finite number >= 0 bytes/cycle")
    bad = np.argwhere(en < 0)                     # (NaN: unknown; inf: refused by the energy sums below)
    if len(bad):
        j, c = bad[0]
        raise CoexploreError(f"energy of job {table.jobs[j].name} on core {table.cores[c]} is {en[j, c]}",
                             file=file, key=f"en_{table.cores[c]}", expected="a number of pJ >= 0 (empty: unknown)")
    # every job on its slowest core, one after the other, with room for bandwidth stretching:
    # beyond this a makespan or its lower bound overflows to inf
    finite = np.where(np.isfinite(lat), lat, 0.0)
    with np.errstate(over="ignore"):
        total = finite.max(axis=1).sum() * 1e6
    if not np.isfinite(total):
        j, c = np.unravel_index(int(np.argmax(finite)), lat.shape)
        raise CoexploreError(f"latencies too large to add up (job {table.jobs[j].name} on core "
                             f"{table.cores[c]}: {lat[j, c]:.3g} cycles)", file=file, key=f"lat_{table.cores[c]}",
                             expected="latencies whose sum over the jobs stays below ~1e300 cycles")


CostFn = Callable[[Job, str], tuple[float, float, float]]


def build_job_table(jobs: Sequence[Job], cores: Sequence[str], cost: CostFn) -> JobTable:
    """Job table from a cost callable `(job, core) -> (latency_cycles, energy_pJ, dram_bytes)`.

    The bandwidth need is DRAM traffic spread over the no-stall latency (bytes/cycle). Calls
    are made once per (job, core); identical jobs are the caller's to cache (e.g. SQLite).
    """
    if isinstance(cores, (str, bytes)) or isinstance(jobs, (str, bytes)):
        raise CoexploreError(f"got the string {cores if isinstance(cores, (str, bytes)) else jobs!r}",
                             key="cores" if isinstance(cores, (str, bytes)) else "jobs",
                             expected="a list (of core names / of Job)")
    jobs, cores = list(jobs), list(cores)
    dup = sorted({c for c in cores if cores.count(c) > 1})
    if dup:
        raise CoexploreError(f"core {dup[0]!r} given twice", key="cores", expected="each core name once")
    if not jobs:
        raise CoexploreError("the workload has no jobs (empty workload)",
                             expected="at least one layer")
    if not cores:
        raise CoexploreError("the system has no cores", expected="at least one core")
    lat = np.empty((len(jobs), len(cores)))
    en = np.empty_like(lat)
    dram = np.empty_like(lat)
    for j, job in enumerate(jobs):
        for c, core in enumerate(cores):
            got = cost(job, core)
            try:
                lat[j, c], en[j, c], dram[j, c] = (float(v) for v in got)
            except (TypeError, ValueError):
                raise CoexploreError(f"the cost of job {job.name} on core {core} is {got!r}", key="cost",
                                     expected="(latency_cycles, energy_pJ, dram_bytes): three numbers") from None
    if np.any(dram < 0):
        j, c = np.argwhere(dram < 0)[0]
        raise CoexploreError(f"the cost model gave {dram[j, c]} DRAM bytes for job "
                             f"{jobs[j].name} on core {cores[c]}", expected="bytes >= 0")
    with np.errstate(divide="ignore", invalid="ignore"):
        bw = np.where(np.isfinite(lat), dram / lat, 0.0)     # (a job that cannot run there needs none)
    return JobTable(jobs, cores, lat, bw, en)
