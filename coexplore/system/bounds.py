"""Lower bounds on the makespan of any schedule of a job table (optimality certificates)."""

from __future__ import annotations

import numpy as np

from coexplore.system.evaluator import check_bandwidth


def lower_bound(latency: np.ndarray, bandwidth_need: np.ndarray, bandwidth: float) -> float:
    """A makespan no schedule can beat (cycles): the largest of
    - the longest job on its fastest core (a job never runs faster than its no-stall latency);
    - the total no-stall work, each job on its fastest core, spread over all cores;
    - the total DRAM traffic (each job on its least-traffic core) at the full system bandwidth.
    A schedule that reaches it is optimal, so no baseline can be better there.
    """
    lat = np.asarray(latency, dtype=float)
    traffic = lat * np.asarray(bandwidth_need, dtype=float)
    bandwidth = check_bandwidth(bandwidth)
    bounds = [float(lat.min(axis=1).max()), float(lat.min(axis=1).sum() / lat.shape[1])]
    if bandwidth > 0 and np.isfinite(bandwidth):
        bounds.append(float(traffic.min(axis=1).sum() / bandwidth))
    return max(bounds)
