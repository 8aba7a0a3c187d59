"""Schedulers compared on the same request streams: per-scheduler means and RELMAS-style gains.

Every scheduler runs on the same evaluation streams (seeds `seed`, `seed + 1`, ...), so differences
are the schedulers', not the streams'. The gain of scheduler A over B is SLA_A / SLA_B - 1 (the
form of RELMAS's "+173%"); the energy overhead of A is its energy over B's - 1.
"""

from __future__ import annotations

import math

import numpy as np

from coexplore.online.models import ServedSystem
from coexplore.online.simulator import OnlineResult, simulate
from coexplore.online.stream import Scenario, poisson_stream

MEANS = ("sla_rate", "energy_pJ", "energy_per_met_pJ", "latency_mean_cycles", "latency_p95_cycles",
         "utilization", "bandwidth_utilization", "decision_us", "dropped")


def run_schedulers(system: ServedSystem, scenario: Scenario, schedulers: dict, seeds: list[int],
                   drop_late: bool = True, done=None) -> dict[str, list[OnlineResult]]:
    """{name: [result per seed]} of every scheduler (name -> `Scheduler`) on the seeds' streams;
    `done(name, seed)` after each run (a progress bar)."""
    streams = {s: poisson_stream(system, scenario, s) for s in seeds}
    out: dict[str, list[OnlineResult]] = {}
    for name, sched in schedulers.items():
        out[name] = []
        for s in seeds:
            out[name].append(simulate(system, streams[s], sched, drop_late, seed=s))
            if done is not None:
                done(name, s)
    return out


def mean_summary(results: list[OnlineResult]) -> dict:
    """Means over the seeds of the figures in MEANS, plus per-model SLA rates and the per-seed SLA."""
    rows = [r.summary() for r in results]
    mean = {k: float(np.nanmean([row[k] for row in rows])) if any(math.isfinite(row[k]) for row in rows)
            else math.nan for k in MEANS}
    mean["sla_rate_per_seed"] = [row["sla_rate"] for row in rows]
    models = sorted({m for row in rows for m in row["per_model"]}, key=list(results[0].models).index)
    mean["per_model_sla_rate"] = {m: float(np.mean([row["per_model"][m]["sla_rate"] for row in rows
                                                    if m in row["per_model"]])) for m in models}
    return mean


def gains(means: dict[str, dict], of: str) -> dict[str, dict]:
    """SLA gain and energy overhead of scheduler `of` over each other one (None where undefined)."""
    mine = means[of]
    out = {}
    for name, other in means.items():
        if name == of:
            continue
        sla = mine["sla_rate"] / other["sla_rate"] - 1 if other["sla_rate"] > 0 else None
        energy = mine["energy_pJ"] / other["energy_pJ"] - 1 if other["energy_pJ"] > 0 else None
        out[name] = {"sla_gain": sla, "energy_overhead": energy}
    return out
