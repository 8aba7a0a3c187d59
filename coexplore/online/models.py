"""The DNNs a multi-tenant system serves, as chains of layers with per-core costs.

Built from a job table (`coexplore.system.jobs.JobTable`): the jobs of one DNN (`Job.dnn`), in
table order, are its layers, run one after the other for every request. Per layer and core: the
no-stall latency (cycles), the bandwidth need (bytes/cycle) and the energy (pJ), as the layer mapper
found them. The isolated latency of a DNN (what a request's deadline is measured against) is the
sum over its layers of the fastest core's latency when that layer runs alone on the system (a need
above the system bandwidth stretches it as the contention model would).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.system.evaluator import check_bandwidth
from coexplore.system.jobs import JobTable


ROOM = np.finfo(float).max / 1e12     # cycles a layer may take alone: room for sums, slack and many requests


@dataclass(frozen=True)
class ServedModel:
    """One DNN: `latency`, `bandwidth`, `energy` are [layers, cores]; `layers` their names."""

    name: str
    layers: tuple[str, ...]
    latency: np.ndarray
    bandwidth: np.ndarray
    energy: np.ndarray
    alone: np.ndarray        # [layers, cores] latency when the layer runs alone (bandwidth-stretched)

    @property
    def isolated_latency(self) -> float:
        """Cycles of one request alone on the system, each layer on its fastest core."""
        return float(self.alone.min(axis=1).sum())

    @property
    def work(self) -> float:
        """No-stall cycles of one request with each layer on its fastest core (the load unit)."""
        return float(self.latency.min(axis=1).sum())


@dataclass(frozen=True)
class ServedSystem:
    """The models served, the cores (names) and the shared off-chip bandwidth (bytes/cycle)."""

    models: tuple[ServedModel, ...]
    cores: tuple[str, ...]
    bandwidth: float
    energy_known: bool = True     # False: the job table has no (or not every) energy: results say NaN

    @property
    def num_cores(self) -> int:
        return len(self.cores)


def served_system(table: JobTable, bandwidth: float) -> ServedSystem:
    """Group a job table's jobs by DNN (first appearance order) into served models; `table` may
    be a job table file's path (`tables.load_table`), as for `search_schedule`."""
    if isinstance(table, (str, Path)):
        from coexplore.system.tables import load_table
        table = load_table(table)
    if not isinstance(table, JobTable):
        raise CoexploreError(f"got {table!r:.60}", key="table",
                             expected="a JobTable (system_job_table, tables.load_table) or a job table file's path")
    bandwidth = check_bandwidth(bandwidth)
    names = [job.dnn for job in table.jobs]
    if not all(names):
        i = names.index("")
        said = (f"job {table.jobs[i].name!r} (job row {i + 1}) has no DNN" if any(names) else
                "the job table does not say which DNN each job belongs to")
        raise CoexploreError(said, key="dnn", expected="a dnn column naming each job's DNN (the jobs.csv `coexplore "
                                                       "schedule` writes has one) or a system YAML")
    order = list(dict.fromkeys(names))
    models = []
    for name in order:
        rows = [j for j, d in enumerate(names) if d == name]
        lat, bw = table.latency[rows], table.bandwidth[rows]
        en = np.where(np.isfinite(table.energy[rows]), table.energy[rows], 0.0)
        with np.errstate(invalid="ignore", over="ignore"):
            stretch = np.maximum(1.0, bw / bandwidth)
            alone = lat * stretch
        over = np.flatnonzero(~(alone.min(axis=1) < ROOM) & np.isfinite(lat.min(axis=1)))
        if len(over):            # a layer whose time alone overflows at this bandwidth: nothing could serve it
            job = table.jobs[rows[int(over[0])]]
            raise CoexploreError(f"layer {job.name} alone takes longer than a stream's floats hold at a system bandwidth "
                                 f"of {bandwidth:g} bytes/cycle (its traffic needs {float(bw[over[0]].min()):g} "
                                 "bytes/cycle)", key="bandwidth", option="--bandwidth",
                                 expected="a system bandwidth in bytes/cycle that the layers' traffic can pass")
        models.append(ServedModel(name, tuple(table.jobs[j].layer or table.jobs[j].name for j in rows),
                                  lat, bw, en, alone))
    return ServedSystem(tuple(models), tuple(table.cores), bandwidth, table.has_energy())
