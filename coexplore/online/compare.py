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
         "utilization", "bandwidth_utilization", "decisions", "decision_us", "dropped")
# (latencies are over the finished requests only: a scheduler that drops the long ones looks fast)


def run_schedulers(system: ServedSystem, scenario: Scenario, schedulers: dict, seeds: list[int],
                   drop_late: bool = True, done=None, streams: dict | None = None) -> dict[str, list[OnlineResult]]:
    """{name: [result per seed]} of every scheduler (name -> `Scheduler`) on the seeds' streams
    (Poisson streams of `scenario`, or `streams[seed]`: a trace's); `done(name, seed)` after each run
    (a progress bar)."""
    if streams is None:
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
    per = np.array(list(mean["per_model_sla_rate"].values()))
    mean["min_model_sla_rate"] = float(per.min()) if len(per) else math.nan
    # Jain's fairness index over the tenants' SLA rates: 1 = all equal, 1/n = one tenant served alone
    mean["fairness_jain"] = float(per.sum() ** 2 / (len(per) * (per ** 2).sum())) if (per > 0).any() else math.nan
    return mean


def gains(means: dict[str, dict], of: str) -> dict[str, dict]:
    """Scheduler `of` against each other one (`mean_summary` records): SLA gain, energy overhead (all
    layers run) and energy-per-met-request overhead (None where undefined); with per-stream rates, on
    how many streams `of` met more / as many deadlines (a paired comparison)."""
    mine = means[of]

    def ratio(a, b):
        return a / b - 1 if b is not None and a is not None and b > 0 and math.isfinite(a) and math.isfinite(b) \
            else None
    out = {}
    for name, other in means.items():
        if name == of:
            continue
        out[name] = {"sla_gain": ratio(mine["sla_rate"], other["sla_rate"]),
                     "energy_overhead": ratio(mine["energy_pJ"], other["energy_pJ"])}
        if "energy_per_met_pJ" in mine and "energy_per_met_pJ" in other:
            out[name]["energy_per_met_overhead"] = ratio(mine["energy_per_met_pJ"], other["energy_per_met_pJ"])
        a, b = mine.get("sla_rate_per_seed"), other.get("sla_rate_per_seed")
        if a is not None and b is not None and len(a) == len(b):
            out[name]["streams_better"] = int(sum(x > y for x, y in zip(a, b)))
            out[name]["streams_equal"] = int(sum(x == y for x, y in zip(a, b)))
            out[name]["streams"] = len(a)
    return out
