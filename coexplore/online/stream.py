"""Streams of inference requests from several tenants (Poisson arrivals, deadlines from slack).

Each served DNN is a tenant sending requests as a Poisson process. The offered load rho is measured
on one of two bases:
- `fastest` (the default): rho = sum_m lambda_m * W_m / cores, with W_m the DNN's work (no-stall
  cycles, each layer on its fastest core): at rho = 1 every core would be busy all the time doing
  only fastest-core work, which a system of unequal cores cannot do, so it saturates below 1;
- `capacity`: rho = the request rate / the largest rate the cores can serve (`capacity_rate`: the
  layers' work split over the cores as a linear program, each core busy at most all the time): at
  rho = 1 the cores are exactly saturated. On equal cores the two are the same.
Neither counts bandwidth contention. The mix says how the request rate is shared among the DNNs (equal by
default). A request's deadline is its arrival + k x the DNN's isolated latency, with k drawn
uniformly from the slack range (RELMAS_NOTES.md section 4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.online.models import ServedSystem
from coexplore.seeds import check_seed


LOAD_BASES = ("fastest", "capacity")


@dataclass(frozen=True)
class Scenario:
    """What a stream is drawn from: offered load, number of requests, slack range, DNN mix."""

    load: float = 0.8
    requests: int = 200
    slack: tuple[float, float] = (1.5, 4.0)
    mix: tuple[float, ...] | None = None      # relative request rates per served model (None: equal)
    basis: str = "fastest"                    # what load 1 is: "fastest" or "capacity" (see the module)

    def __post_init__(self):
        for name in ("load", "requests"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise CoexploreError(f"{name} {v!r}", key=name, option=f"--{name}", expected="a number")
        if not (isinstance(self.slack, (tuple, list)) and len(self.slack) == 2
                and all(isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
                        for x in self.slack)):
            raise CoexploreError(f"slack {self.slack!r}", key="slack", option="--slack",
                                 expected="(LOW, HIGH): two numbers, 0 < LOW <= HIGH")
        if not (np.isfinite(self.load) and self.load > 0):
            raise CoexploreError(f"load {self.load}", key="load", option="--load",
                                 expected="a number > 0 (1.0: the cores' capacity)")
        if not np.isfinite(self.requests) or int(self.requests) != self.requests or self.requests < 1:
            raise CoexploreError(f"{self.requests} requests", key="requests", option="--requests",
                                 expected="an integer >= 1")
        object.__setattr__(self, "requests", int(self.requests))     # (2.0 is 2: numpy's sizes take ints)
        lo, hi = self.slack
        if not (np.isfinite(lo) and np.isfinite(hi) and 0 < lo <= hi):
            raise CoexploreError(f"slack range {lo} {hi}", key="slack", option="--slack",
                                 expected="LOW HIGH with 0 < LOW <= HIGH (deadline = arrival + slack x isolated latency)")
        if self.basis not in LOAD_BASES:
            raise CoexploreError(f"load basis {self.basis!r}", key="basis", option="--load-basis",
                                 expected=" or ".join(LOAD_BASES))
        if self.mix is not None and (any(not np.isfinite(w) or w < 0 for w in self.mix) or max(self.mix) <= 0):
            raise CoexploreError(f"mix {list(self.mix)}", key="mix", option="--mix", expected="weights >= 0, not all 0")


@dataclass(frozen=True)
class RequestStream:
    """Requests by arrival time: arrival and deadline (cycles), the served model's index; `origin`:
    the cycle the times count from, as written (a trace of log timestamps is counted from its first
    arrival, so its differences keep their digits)."""

    arrival: np.ndarray
    deadline: np.ndarray
    model: np.ndarray
    origin: str = "0"

    def __post_init__(self):
        """A stream built by hand (a trace) is checked as the simulation needs it: one arrival,
        deadline and model index per request, arrivals finite and in order, deadlines not before
        them, model indices >= 0 (below the number of served models: `Simulation` checks)."""
        arrays = {k: np.asarray(getattr(self, k)) for k in ("arrival", "deadline", "model")}
        n = arrays["arrival"].shape[0] if arrays["arrival"].ndim == 1 else None
        for k, a in arrays.items():
            if a.ndim != 1 or a.shape[0] != n:
                raise CoexploreError(f"{k} of shape {a.shape}", key=k,
                                     expected="one value per request (1-D arrays of one length)")
            if a.dtype.kind not in "iuf":
                raise CoexploreError(f"{k} of type {a.dtype}", key=k, expected="numbers (cycles; model indices)")
        model = arrays["model"]
        if model.dtype.kind == "f" and np.all(np.isfinite(model)) and np.all(model == np.round(model)):
            arrays["model"] = model.astype(np.int64)          # (a trace read by numpy: integral floats)
        for k, a in arrays.items():
            object.__setattr__(self, k, a)
        arrival, deadline, model = arrays.values()
        bad = np.flatnonzero(~np.isfinite(arrival.astype(float)) | (arrival < 0))
        if len(bad):
            raise CoexploreError(f"request {bad[0]}: arrival {arrival[bad[0]]}", key="arrival",
                                 expected="finite arrival times >= 0 (cycles)")
        back = np.flatnonzero(np.diff(arrival) < 0)
        if len(back):
            i = int(back[0]) + 1
            raise CoexploreError(f"request {i} arrives at {arrival[i]:g}, before request {i - 1} ({arrival[i - 1]:g})",
                                 key="arrival", expected="requests in order of arrival (sort a trace by arrival "
                                                         "first, its deadlines and models with it)")
        early = np.flatnonzero(~(deadline >= arrival))
        if len(early):
            raise CoexploreError(f"request {early[0]}: deadline {deadline[early[0]]} before its arrival "
                                 f"{arrival[early[0]]}", key="deadline", expected="deadlines >= arrivals (cycles)")
        if len(model) == 0:
            object.__setattr__(self, "model", model.astype(np.int64))
        elif model.dtype.kind not in "iu" or model.min() < 0:
            shown = model[:5].tolist()
            raise CoexploreError(f"model indices {shown}" + ("..." if len(model) > 5 else ""), key="model",
                                 expected="integer indices >= 0 of the served models")

    def __len__(self) -> int:
        return len(self.arrival)


def request_rates(system: ServedSystem, scenario: Scenario) -> np.ndarray:
    """Requests per cycle of each served model for the scenario's offered load."""
    mix = np.ones(len(system.models)) if scenario.mix is None else np.asarray(scenario.mix, dtype=float)
    mix = mix / mix.max() if len(mix) else mix    # (only the ratios count: 1e308s or 5e-324s do not overflow)
    if len(mix) != len(system.models):
        raise CoexploreError(f"{len(mix)} mix weights for {len(system.models)} served models", key="mix", option="--mix",
                             expected="one weight per DNN: " + ", ".join(m.name for m in system.models))
    if scenario.basis == "capacity":
        return mix * scenario.load * capacity_rate(system, mix)
    work = np.array([m.work for m in system.models])
    per_weight = scenario.load * system.num_cores / float(np.dot(mix, work))
    return mix * per_weight


def check_scenario(system: ServedSystem, scenario: Scenario) -> np.ndarray:
    """The scenario's request rates, once its streams are known to fit a float: rates finite and
    > 0, the span of its arrivals and its longest deadline finite (an extreme --load or --slack is
    refused naming it, not met as an overflow inside a simulation)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        rates = request_rates(system, scenario)
        total = float(rates.sum())
        span = scenario.requests / total if total > 0 else np.inf
        longest = scenario.slack[1] * max(m.isolated_latency for m in system.models)
    if not (np.all(np.isfinite(rates)) and total > 0 and np.isfinite(span) and span * 1e6 < np.finfo(float).max):
        raise CoexploreError(f"load {scenario.load:g} gives request rates of {total:g} per cycle: "
                             f"{scenario.requests:,} arrivals would not fit a float", key="load", option="--load",
                             expected="a load a float can draw arrivals from (e.g. 0.1 to 10; 1.0: the cores' "
                                      "capacity)")
    if not (np.isfinite(longest) and (span + longest) * 1e6 < np.finfo(float).max):
        raise CoexploreError(f"slack {scenario.slack[1]:g} x the longest isolated latency does not fit a float",
                             key="slack", option="--slack",
                             expected="LOW HIGH whose deadlines fit a float (e.g. 1.5 4)")
    return rates


def offered_load(system: ServedSystem, rates, basis: str = "fastest") -> float:
    """The load (on `basis`) of requests at `rates` per cycle: the inverse of `request_rates`."""
    rates = np.asarray(rates, dtype=float)
    if basis == "capacity":
        return float(rates.sum()) / capacity_rate(system, rates / rates.sum())
    work = np.array([m.work for m in system.models])
    return float(np.dot(rates, work)) / system.num_cores


def dram_demand(system: ServedSystem, rates) -> float:
    """The DRAM traffic the requests at `rates` (per cycle) ask for, as a fraction of the system
    bandwidth: each layer's bytes (latency x bandwidth need) on its least-traffic core, so no
    schedule asks for less. Above 1 no scheduler can keep up, whatever the cores' load."""
    with np.errstate(invalid="ignore"):         # (inf x 0: a layer that cannot run on that core)
        per_request = [float(np.where(np.isfinite(m.latency), m.latency * m.bandwidth, np.inf).min(axis=1).sum())
                       for m in system.models]
    return float(np.dot(np.asarray(rates, dtype=float), per_request)) / system.bandwidth


def capacity_rate(system: ServedSystem, mix) -> float:
    """The largest t such that requests at rates t * mix (per cycle) can be served: a linear program
    over y[m, l, c], the rate at which layer l of model m runs on core c: sum_c y = t * mix_m for
    every layer, sum over (m, l) of y * no-stall latency <= 1 for every core (bandwidth ignored)."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix
    mix = np.asarray(mix, dtype=float)
    cores = system.num_cores
    eq_rows, core_rows, core_vals = [], [], []  # per y (one column each): its layer's row, its core, the latency
    layer = 0
    eq_t = []                                   # -mix_m on each layer's row, for the column of t
    for m, model in enumerate(system.models):
        if mix[m] == 0:
            continue
        for lat in model.latency:
            for c in np.flatnonzero(np.isfinite(lat)):
                eq_rows.append(layer)
                core_rows.append(int(c))
                core_vals.append(float(lat[c]))
            eq_t.append(-mix[m])
            layer += 1
    cols = np.arange(len(eq_rows))
    n = len(cols) + 1                           # the y's, then t
    a_eq = coo_matrix((np.r_[np.ones(len(cols)), eq_t], (np.r_[eq_rows, np.arange(layer)],
                                                         np.r_[cols, np.full(layer, n - 1)])), shape=(layer, n))
    a_ub = coo_matrix((core_vals, (core_rows, cols)), shape=(cores, n))
    c = np.zeros(n)
    c[-1] = -1.0
    res = linprog(c, A_ub=a_ub.tocsr(), b_ub=np.ones(cores), A_eq=a_eq.tocsr(), b_eq=np.zeros(layer),
                  bounds=(0, None), method="highs")
    if res.status != 0 or not res.x[-1] > 0:
        raise CoexploreError(f"the cores' capacity could not be computed ({res.message})",
                             key="basis", option="--load-basis",
                             expected="every layer of the served DNNs runnable on some core, or --load-basis fastest")
    return float(res.x[-1])


def poisson_stream(system: ServedSystem, scenario: Scenario, seed: int | None) -> RequestStream:
    """The first `scenario.requests` arrivals of the tenants' merged Poisson processes (seed None:
    unseeded, another stream each call, as `map_layer` and `search_schedule` take it)."""
    seed = check_seed(seed)
    rng = np.random.default_rng(None if seed is None else [seed, 0x0E1])
    rates = request_rates(system, scenario)
    total = rates.sum()
    gaps = rng.exponential(1.0 / total, size=scenario.requests)     # the merged process, then who sent each
    arrival = np.cumsum(gaps)
    model = rng.choice(len(rates), size=scenario.requests, p=rates / total)
    iso = np.array([m.isolated_latency for m in system.models])
    slack = rng.uniform(scenario.slack[0], scenario.slack[1], size=scenario.requests)
    return RequestStream(arrival, arrival + slack * iso[model], model.astype(np.int64))
