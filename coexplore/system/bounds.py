"""Lower bounds on the makespan of any schedule of a job table (optimality certificates)."""

from __future__ import annotations

import numpy as np

from coexplore.system.evaluator import check_bandwidth

# relative slack taken off the bound so that round-off (the LP is solved to ~1e-9 relative
# accuracy; the simulated makespans are sums of floats) never lifts it above a real makespan;
# a makespan within 2 x LP_SLACK of the bound counts as reaching it
LP_SLACK = 1e-7


def lower_bound(latency: np.ndarray, bandwidth_need: np.ndarray, bandwidth: float) -> float:
    """A makespan no schedule can beat (cycles), less LP_SLACK: the larger of
    - the longest job on its fastest core (a job never runs faster than its no-stall latency, nor
      faster than its traffic passes through the whole bandwidth: latency x max(1, need / bandwidth));
    - the optimum of the assignment LP (`assignment_bound`): jobs split fractionally over the
      cores, no core busier than T with the jobs' shortest times, the DRAM traffic moved within T
      at the full system bandwidth. It is at least the simple bounds (total work over the cores,
      total traffic over the bandwidth) and on heterogeneous cores much tighter, as it charges a
      job moved off its fastest core with its time where it runs.
    A schedule that reaches it is optimal, so no baseline can be better there.
    """
    return max(longest_job(latency, bandwidth_need, bandwidth),
               assignment_bound(latency, bandwidth_need, check_bandwidth(bandwidth))) * (1 - LP_SLACK)


def longest_job(latency: np.ndarray, bandwidth_need: np.ndarray, bandwidth: float) -> float:
    """The longest job on its fastest core, alone (exact: no LP): no schedule is shorter, and one
    as long is optimal (`at_longest_job`)."""
    return float(jobs_alone(latency, bandwidth_need, bandwidth).max())


def jobs_alone(latency: np.ndarray, bandwidth_need: np.ndarray, bandwidth: float) -> np.ndarray:
    """Each job's time alone on its fastest core (inf where that overflows a float)."""
    lat = np.asarray(latency, dtype=float)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _alone(lat, np.asarray(bandwidth_need, dtype=float), check_bandwidth(bandwidth)).min(axis=1)


def at_longest_job(makespan: float, longest: float) -> bool:
    """The makespan is the longest job's own time (to float round-off): the schedule is optimal."""
    return makespan <= longest * (1 + 1e-12)


def _alone(lat: np.ndarray, need: np.ndarray, bandwidth: float) -> np.ndarray:
    """The shortest time each job can take on each core: its no-stall latency, stretched when it
    needs more than the whole system bandwidth (its traffic cannot pass faster)."""
    return lat * np.maximum(1.0, need / bandwidth) if np.isfinite(bandwidth) else lat


def _simple_bounds(lat: np.ndarray, traffic: np.ndarray, bandwidth: float) -> float:
    """Total no-stall work (each job on its fastest core) over the cores; total traffic (each job
    on its least-traffic core) at the full bandwidth."""
    out = float(lat.min(axis=1).sum() / lat.shape[1])
    if np.isfinite(bandwidth):
        out = max(out, float(traffic.min(axis=1).sum() / bandwidth))
    return out


def assignment_bound(latency: np.ndarray, bandwidth_need: np.ndarray, bandwidth: float) -> float:
    """min T over fractional assignments x[j, c] >= 0, sum_c x[j, c] = 1, with
    sum_j x[j, c] * alone[j, c] <= T for every core c (alone: the latency, stretched for a job that
    needs more than the whole bandwidth) and
    sum_{j, c} x[j, c] * latency[j, c] * bandwidth_need[j, c] <= T * bandwidth.
    Every schedule gives a feasible point (x = its 0/1 assignment, T = its makespan: a core runs
    its jobs one after another, none faster than its no-stall latency, and all traffic passes
    through the shared bandwidth), so the optimum is a lower bound on the makespan. Cores a job
    cannot run on (infinite latency) get no share of it. Falls back to the simple bounds if the
    solver fails."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, hstack, vstack

    lat = np.asarray(latency, dtype=float)
    need = np.asarray(bandwidth_need, dtype=float)
    with np.errstate(invalid="ignore"):
        traffic = np.where(np.isfinite(lat), lat * need, np.inf)    # (inf: the job cannot run there)
    lat = _alone(lat, need, bandwidth)
    simple = _simple_bounds(lat, traffic, bandwidth)
    n_jobs, n_cores = lat.shape
    ok = np.isfinite(lat) & np.isfinite(traffic)
    if not ok.any(axis=1).all():
        return simple
    j_idx, c_idx = np.nonzero(ok)                 # one variable per allowed (job, core)
    nv = len(j_idx)
    rows = np.arange(nv)
    times = lat[j_idx, c_idx]
    moves = traffic[j_idx, c_idx] / bandwidth if np.isfinite(bandwidth) else None
    # cycles scaled around the geometric middle of the coefficients: HiGHS refuses values above
    # 1e15 and drops those below 1e-9, so a table spanning 1e3..1e15 cycles is solved as 1e-6..1e6
    coeffs = np.concatenate([times, moves if moves is not None else []])
    coeffs = coeffs[coeffs > 0]
    scale = float(np.sqrt(coeffs.min()) * np.sqrt(coeffs.max())) if len(coeffs) else 1.0   # no overflow
    # per-core load - T <= 0
    load = coo_matrix((times / scale, (c_idx, rows)), shape=(n_cores, nv))
    a_ub = [hstack([load, coo_matrix(-np.ones((n_cores, 1)))])]
    if moves is not None:
        tr = coo_matrix((moves / scale, (np.zeros(nv, dtype=int), rows)), shape=(1, nv))
        a_ub.append(hstack([tr, coo_matrix(-np.ones((1, 1)))]))
    a_ub = vstack(a_ub).tocsr()
    a_eq = hstack([coo_matrix((np.ones(nv), (j_idx, rows)), shape=(n_jobs, nv)),
                   coo_matrix((n_jobs, 1))]).tocsr()
    cost = np.zeros(nv + 1)
    cost[-1] = 1.0
    res = linprog(cost, A_ub=a_ub, b_ub=np.zeros(a_ub.shape[0]), A_eq=a_eq, b_eq=np.ones(n_jobs),
                  bounds=(0, None), method="highs")
    if res.status != 0 or not np.isfinite(res.fun):
        return simple
    return max(simple, float(res.fun) * scale)
