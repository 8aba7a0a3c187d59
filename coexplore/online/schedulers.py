"""Online schedulers: at each decision point, which ready requests start on which idle cores.

The contract (`Scheduler`): `reset(sim, seed)` before a stream, then `decide(sim)` at every
decision point returns (request, core) pairs, each request and idle core at most once; requests
left out wait for the next event. The heuristics here are the baselines of RELMAS_NOTES.md
section 7: a priority rule (FCFS, EDF, least slack, shortest remaining) that hands each request,
in priority order, the idle core that runs its next layer fastest; PREMA-like tokens; a static
Herald-like layer-to-core assignment and one planned by MAGMA; random. The learned scheduler is in `policy.py`.
"""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod

from coexplore.errors import CoexploreError
from coexplore.online.simulator import Simulation, is_scheduler
from coexplore.plugins import plugins_code


class Scheduler(ABC):
    """Base class: `name`, `reset`, `decide`."""

    name = "scheduler"

    def reset(self, sim: Simulation, seed: int) -> None:
        """Called once before the stream starts."""

    @abstractmethod
    def decide(self, sim: Simulation) -> list[tuple[int, int]]:
        """(request, idle core) pairs to start now, each request and core at most once."""


def fastest_idle(sim: Simulation, request: int, idle: list[int]) -> int:
    """The idle core that runs `request`'s next layer in the fewest cycles when it runs alone, its
    bandwidth stretch included (as the deadlines count it; -1: none can). (By the table's no-stall
    cycles, a core whose need exceeds the system's bandwidth looked fastest and missed deadlines on an
    idle system.)"""
    row = sim.alone[sim.model[request]][sim.layer[request]]
    best, core = math.inf, -1
    for c in idle:
        if row[c] < best:
            best, core = row[c], c
    return core


def greedy(sim: Simulation, order) -> list[tuple[int, int]]:
    """Requests in `order` each take the fastest idle core for their next layer."""
    idle = sim.idle_cores()
    pairs = []
    for r in order:
        if not idle:
            break
        c = fastest_idle(sim, r, idle)
        if c >= 0:
            pairs.append((r, c))
            idle.remove(c)
    return pairs


class PriorityScheduler(Scheduler):
    """Smallest key first (ties: the request that became ready first), each on its fastest idle core."""

    @abstractmethod
    def key(self, sim: Simulation, r: int) -> float:
        """The priority of ready request r (smaller first)."""

    def decide(self, sim):
        return greedy(sim, sorted(sim.ready, key=lambda r: self.key(sim, r)))


class FCFS(PriorityScheduler):
    """First come, first served: earliest arrival first."""
    name = "fcfs"

    def key(self, sim, r):
        return sim.arrival[r]


class EDF(PriorityScheduler):
    """Earliest deadline first."""
    name = "edf"

    def key(self, sim, r):
        return sim.deadline[r]


class LeastSlack(PriorityScheduler):
    """Least slack first: deadline - now - the remaining layers' isolated latency."""
    name = "lsf"

    def key(self, sim, r):
        return sim.deadline[r] - sim.t - sim.remaining[sim.model[r]][sim.layer[r]]


class ShortestRemaining(PriorityScheduler):
    """Shortest remaining work first (the remaining layers' isolated latency)."""
    name = "sjf"

    def key(self, sim, r):
        return sim.remaining[sim.model[r]][sim.layer[r]]


class Prema(Scheduler):
    """PREMA-like token scheduling (Choi & Rhu, HPCA 2020): each request earns tokens as it waits,
    in units of its DNN's isolated latency (equal priorities); those holding at least `threshold`
    tokens are the candidates (all when none does), shortest remaining work first among them."""

    name = "prema"

    def __init__(self, threshold: float = 1.0):
        self.threshold = threshold

    def decide(self, sim):
        tokens = {r: (sim.t - sim.arrival[r]) / sim.isolated[sim.model[r]] for r in sim.ready}
        rich = [r for r in sim.ready if tokens[r] >= self.threshold] or list(sim.ready)
        rich.sort(key=lambda r: sim.remaining[sim.model[r]][sim.layer[r]])
        return greedy(sim, rich)


class StaticAssignment(Scheduler):
    """Herald-like static placement: before the stream, every (DNN, layer) gets one core, chosen
    greedily for balance (layers by decreasing expected load, each on the core where its expected
    load, request rate x latency alone (bandwidth-stretched), adds the least to that core's total); at
    run time each core serves the requests whose next layer it owns, first come first served; others
    wait for their core.
    `rates`: the DNNs' request rates the placement plans for (the tenants' agreed rates; equal if None)."""

    name = "static"

    def __init__(self, rates=None):
        self.rates = None if rates is None else [float(r) for r in rates]

    def reset(self, sim, seed):
        rates = self.rates or [1.0] * len(sim.lat)
        if len(rates) != len(sim.lat):
            raise CoexploreError(f"{len(rates)} request rates for {len(sim.lat)} DNNs", key="rates",
                                 expected="one rate per served DNN")
        share = [r / sum(rates) for r in rates]
        load = [0.0] * sim.num_cores
        self.owner = [[-1] * len(layers) for layers in sim.lat]
        items = sorted(((share[m] * min(row), m, l) for m, layers in enumerate(sim.alone)
                        for l, row in enumerate(layers)), reverse=True)
        for _, m, l in items:
            row = sim.alone[m][l]            # (its cycles alone, bandwidth stretch included)
            c = min((c for c in range(sim.num_cores) if math.isfinite(row[c])),
                    key=lambda c: (load[c] + share[m] * row[c], row[c], c))
            self.owner[m][l] = c
            load[c] += share[m] * row[c]

    def decide(self, sim):
        idle = set(sim.idle_cores())
        pairs = []
        for r in sorted(sim.ready, key=lambda r: sim.arrival[r]):
            c = self.owner[sim.model[r]][sim.layer[r]]
            if c in idle:
                pairs.append((r, c))
                idle.discard(c)
        return pairs


class MagmaPlanned(StaticAssignment):
    """MAGMA-planned static placement: before the stream, MAGMA (`coexplore.system`) schedules a batch
    of requests, as many of each DNN as its share of the request rates asks (at least one), as
    independent jobs over the shared bandwidth; each (DNN, layer) then lives on the core MAGMA gave
    its first copy, and each core serves its layers first come first served, as `static` does.
    `budget` candidates, `seed`: MAGMA's (the plan is made once per served system)."""

    name = "magma"

    def __init__(self, rates=None, budget: int = 2000, seed: int = 0, batch: int = 6):
        super().__init__(rates)
        self.budget, self.seed, self.batch = int(budget), int(seed), int(batch)
        self._plans: dict = {}

    def reset(self, sim, seed):
        key = id(sim.system)
        if key not in self._plans:
            self._plans[key] = (sim.system, self._plan(sim))
        self.owner = self._plans[key][1]

    def _plan(self, sim) -> list[list[int]]:
        import numpy as np
        from coexplore.system.jobs import Job, JobTable
        from coexplore.system.schedule import search_schedule
        rates = self.rates or [1.0] * len(sim.lat)
        copies = [max(1, round(self.batch * r / sum(rates))) for r in rates]
        rows, first = [], []
        for m, model in enumerate(sim.system.models):
            for k in range(copies[m]):
                if k == 0:
                    first.append(len(rows))
                rows.extend((m, l) for l in range(len(model.layers)))
        models = sim.system.models
        table = JobTable([Job(name=f"{models[m].name}.{l}.{i}", dnn=models[m].name) for i, (m, l) in enumerate(rows)],
                         list(sim.system.cores), np.array([models[m].latency[l] for m, l in rows]),
                         np.array([models[m].bandwidth[l] for m, l in rows]))
        res = search_schedule(table, sim.bandwidth, "magma", self.budget, self.seed)
        return [[int(res.core[first[m] + l]) for l in range(len(model.layers))] for m, model in enumerate(models)]


class RandomScheduler(Scheduler):
    """Ready requests in random order, each on a random idle core that can run its next layer."""

    name = "random"

    def reset(self, sim, seed):
        self.rng = random.Random(seed)

    def decide(self, sim):
        idle = sim.idle_cores()
        order = list(sim.ready)
        self.rng.shuffle(order)
        pairs = []
        for r in order:
            row = sim.lat[sim.model[r]][sim.layer[r]]
            able = [c for c in idle if math.isfinite(row[c])]
            if able:
                c = self.rng.choice(able)
                pairs.append((r, c))
                idle.remove(c)
        return pairs


HEURISTICS = {cls.name: cls for cls in (FCFS, EDF, LeastSlack, ShortestRemaining, Prema, StaticAssignment,
                                        MagmaPlanned, RandomScheduler)}


def heuristic(name: str, rates=None) -> Scheduler:
    """A baseline scheduler by name; `rates` (the DNNs' request rates) for the static placements
    (None: equal rates)."""
    if isinstance(name, str) and name not in HEURISTICS:      # names read case-blind, as the system schedulers'
        name = next((k for k in HEURISTICS if k.lower() == name.lower()), name)
    if isinstance(name, str) and name.lower() == "relmas":
        raise CoexploreError("relmas is the learned policy, not a heuristic", key="scheduler",
                             expected="LearnedScheduler(policy) with a policy from train_policy or load_policy")
    if name not in HEURISTICS:
        raise CoexploreError(f"unknown scheduler {name!r}", key="scheduler", option="--schedulers",
                             expected="one of: " + ", ".join(HEURISTICS) + ", or relmas, the learned scheduler "
                                      "(a name for --schedulers; in Python LearnedScheduler(policy))")
    with plugins_code(HEURISTICS[name], "__init__", key="scheduler", option="--schedulers",
                      expected="a scheduler class built with no arguments (registered as HEURISTICS[name] = SchedulerClass)"):
        made = HEURISTICS[name](rates) if name in ("static", "magma") else HEURISTICS[name]()
    if not is_scheduler(made):
        raise CoexploreError(f"scheduler {name!r} made a {type(made).__name__}", key="scheduler", option="--schedulers",
                             expected="a scheduler with reset(sim, seed) and decide(sim) (registered as "
                                      "HEURISTICS[name] = SchedulerClass)")
    return made
