"""The objectives a system YAML may name (`objectives:`) and how a sweep point measures them.

Each objective is one column of a point's record, minimised except throughput. Latency is the
schedule's makespan; energy the scheduled jobs' energy (each job's best mapping on the core it
runs on, its DRAM traffic included); area the sum over the system's core instances of each core's
area from its ART (on-chip only: Accelergy gives DRAM no area); throughput the DNN inferences (the
workloads' DNN instances) finished per second of makespan.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Objective:
    name: str          # as written in a system YAML's `objectives:`
    column: str        # the point record's key
    sense: str         # "min" | "max"
    unit: str


OBJECTIVES = {
    "latency": Objective("latency", "latency_s", "min", "s"),
    "energy": Objective("energy", "energy_J", "min", "J"),
    "edp": Objective("edp", "edp_J_s", "min", "J*s"),
    "area": Objective("area", "area_mm2", "min", "mm^2"),
    "throughput": Objective("throughput", "throughput_per_s", "max", "inferences/s"),
}

# every measured column of a point record, in table order, with its unit
COLUMNS = {"latency_cycles": "cycles", "latency_s": "s", "energy_J": "J", "edp_J_s": "J*s",
           "area_mm2": "mm^2", "throughput_per_s": "inferences/s", "cores": "", "macs": "",
           "jobs": "", "offchip_bytes_per_cycle": "bytes/cycle", "mac_utilization": ""}


def point_metrics(*, makespan_cycles: float, energy_pJ: float, clock_GHz: float, area_mm2: float,
                  inferences: int, cores: int, macs: int, jobs: int, offchip_bytes_per_cycle: float,
                  operations: int | None = None) -> dict:
    """A point's measured columns (COLUMNS) from its schedule and its cores; `mac_utilization`: the
    workloads' operations over what the point's MAC units could do in the makespan (a low value
    flags an oversized design, or layer mappings a larger --layer-budget would improve)."""
    seconds = makespan_cycles / (clock_GHz * 1e9)
    energy_J = energy_pJ * 1e-12
    return {"latency_cycles": float(makespan_cycles), "latency_s": seconds, "energy_J": energy_J,
            "edp_J_s": energy_J * seconds, "area_mm2": float(area_mm2),
            "throughput_per_s": inferences / seconds if seconds > 0 else float("inf"),
            "cores": int(cores), "macs": int(macs), "jobs": int(jobs),
            "offchip_bytes_per_cycle": float(offchip_bytes_per_cycle),
            "mac_utilization": (operations / (makespan_cycles * macs)
                                if operations is not None and makespan_cycles > 0 and macs > 0 else None)}
