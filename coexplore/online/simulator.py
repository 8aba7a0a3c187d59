"""Discrete-event simulation of a request stream on cores sharing off-chip bandwidth.

A request runs its DNN's layers in order, one layer at a time, each on a core a scheduler chose;
a layer, once started, runs to its end (preemption only between layers). The running layers share
the system bandwidth as in MAGMA's model (`coexplore.system.evaluator`): while their needs add up to
more than the bandwidth B, each layer that needs bandwidth runs at B / (sum of needs) of its no-stall
speed. Events: arrivals, layer ends and (with `drop_late`) deadlines. At every event where a core is
idle and a request is ready, the scheduler decides which ready requests start their next layer on
which idle cores, or lets them wait. With `drop_late` (firm deadlines, the default) a request whose
deadline passes while it waits is dropped: a late answer is worth nothing and the cores go to the
others. Pure Python: a decision sees tens of requests, for which numpy's call overhead dominates.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from coexplore.errors import CoexploreError, check_type
from coexplore.online.models import ServedSystem
from coexplore.online.stream import RequestStream
from coexplore.plugins import label, plugins_code
from coexplore.seeds import check_seed


def is_scheduler(obj) -> bool:
    """Whether `obj` can serve a stream: it has `reset(sim, seed)` and `decide(sim)`."""
    return callable(getattr(obj, "reset", None)) and callable(getattr(obj, "decide", None))


TIME_EPS = 1e-12     # times this close (relative) are one instant: a deadline met at its cycle stays met


def by(t, deadline):
    """`t` is at or before `deadline`, float round-off forgiven (a layer slowed by sharing ends at
    220.00000000000003 for 220 when another event split its run); arrays too. NaN: False."""
    if isinstance(deadline, np.ndarray):
        return t <= deadline + TIME_EPS * np.maximum(np.abs(deadline), 1.0)
    return t <= deadline + TIME_EPS * max(abs(deadline), 1.0)


class SchedulerStalled(CoexploreError):
    """The scheduler let requests wait with every core idle and no event left to wake it."""


class Simulation:
    """The state a scheduler sees (read its attributes, call `start`) and the event loop.

    Per served model m (lists, for speed): `lat[m][l][c]`, `bw[m][l][c]`, `remaining[m][l]` (cycles
    of layers l.. alone on their fastest cores), `isolated[m]`. Per request r: `arrival[r]`,
    `deadline[r]`, `model[r]`, `layer[r]` (the next layer). `ready`: requests waiting for a core;
    `running[c]`: the request core c runs (-1: idle); `demand`: bandwidth the running layers need.
    """

    def __init__(self, system: ServedSystem, stream: RequestStream, drop_late: bool = True):
        self.system = system
        self.bandwidth = system.bandwidth
        self.num_cores = system.num_cores
        self.drop_late = drop_late
        self.lat = [m.latency.tolist() for m in system.models]
        self.alone = [m.alone.tolist() for m in system.models]     # [layer][core], bandwidth-stretched alone
        self.bw = [m.bandwidth.tolist() for m in system.models]
        self._en = [m.energy.tolist() for m in system.models]
        self.remaining = []
        for m in system.models:
            best = m.alone.min(axis=1)
            self.remaining.append(np.concatenate([np.cumsum(best[::-1])[::-1], [0.0]]).tolist())
        self.isolated = [m.isolated_latency for m in system.models]
        if len(stream) and stream.model.max() >= len(system.models):
            i = int(np.argmax(stream.model >= len(system.models)))
            raise CoexploreError(f"request {i} is for model {stream.model[i]}; {len(system.models)} are served",
                                 key="model", expected=f"model indices 0..{len(system.models) - 1} ("
                                 + ", ".join(m.name for m in system.models) + ")")
        self.arrival = stream.arrival.tolist()
        self.deadline = stream.deadline.tolist()
        self.model = stream.model.tolist()
        R = len(self.arrival)
        self.layer = [0] * R
        self.finish = [math.nan] * R
        self.t = 0.0
        self.ready: list[int] = []
        self.running = [-1] * self.num_cores
        self.demand = 0.0
        self.hits = 0                 # requests that ended by their deadline (so far)
        self.misses = 0               # ended late or dropped
        self.energy = 0.0
        self.dram_bytes = 0.0
        self.busy = [0.0] * self.num_cores
        self._left = [0.0] * self.num_cores       # no-stall cycles left of each core's layer
        self._need = [0.0] * self.num_cores
        self._size = [0.0] * self.num_cores
        self._slot = [-1] * self.num_cores        # its row in the trace
        self._next = 0                            # next arrival
        self._ended = 0
        self.trace: list[list] = []               # [request, layer, core, start, end]

    # --- what schedulers call -------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self._ended == len(self.arrival)

    def idle_cores(self) -> list[int]:
        return [c for c, r in enumerate(self.running) if r < 0]

    def start(self, request: int, core: int) -> None:
        """Start `request`'s next layer on idle `core` now."""
        if not (isinstance(core, (int, np.integer)) and 0 <= core < self.num_cores):
            raise CoexploreError(f"no core {core!r}", key="scheduler", expected=f"a core index 0..{self.num_cores - 1}")
        if self.running[core] >= 0:
            raise CoexploreError(f"core {self.system.cores[core]} is busy", key="scheduler",
                                 expected="decisions for idle cores only")
        if request not in self.ready:
            raise CoexploreError(f"request {request} is not waiting for a core", key="scheduler",
                                 expected="decisions for ready requests only, each once")
        m, l = self.model[request], self.layer[request]
        size = self.lat[m][l][core]
        if not math.isfinite(size):
            raise CoexploreError(f"layer {self.system.models[m].layers[l]} cannot run on core "
                                 f"{self.system.cores[core]}", key="scheduler", expected="a core with a finite latency")
        self.ready.remove(request)
        self.running[core] = request
        self._left[core] = self._size[core] = size
        self._need[core] = self.bw[m][l][core]
        self.demand += self._need[core]
        self._slot[core] = len(self.trace)
        self.trace.append([request, l, core, self.t, math.nan])

    # --- the event loop --------------------------------------------------------------------------
    def next_decision(self) -> bool:
        """Advance to the next event at which a core is idle and a request ready; False at the end."""
        while not self.finished:
            self._advance()
            if self.ready and -1 in self.running:
                return True
        return False

    def can_wait(self) -> bool:
        """Whether something is left to happen if nothing starts now: a busy core, an arrival to
        come, or (dropping late requests) a ready request's deadline. Else a wait stalls."""
        return (max(self.running, default=-1) >= 0 or self._next < len(self.arrival)
                or (self.drop_late and bool(self.ready)))

    def _advance(self) -> None:
        """Move time to the next event and process every event at that time."""
        B, run, left, need = self.bandwidth, self.running, self._left, self._need
        share = B / self.demand if self.demand > B else 1.0
        step, first = math.inf, -1
        for c in range(self.num_cores):
            if run[c] >= 0:
                d = left[c] / (share if need[c] > 0 else 1.0)
                if d < step:
                    step, first = d, c
        other = math.inf                          # the next arrival or deadline
        if self._next < len(self.arrival):
            other = self.arrival[self._next] - self.t
        if self.drop_late and self.ready:
            other = min(other, min(self.deadline[r] for r in self.ready) - self.t)
        if other < step:                          # an earlier arrival or deadline: no layer ends by rounding
            step, first = other, -1
        if step == math.inf:
            raise SchedulerStalled(f"{len(self.ready)} requests wait, every core is idle and nothing is left "
                                   "to happen", key="scheduler", expected="a scheduler that starts a ready request "
                                   "when no core is busy (or drop_late, so that deadlines end the wait)")
        step = max(step, 0.0)
        self.t += step
        for c in range(self.num_cores):
            if run[c] >= 0:
                rate = share if need[c] > 0 else 1.0
                left[c] -= step * rate
                self.busy[c] += step
                if c == first and left[c] <= 1e-9 * self._size[c] or left[c] <= 1e-12 * self._size[c]:
                    self._end_layer(c)
        while self._next < len(self.arrival) and self.arrival[self._next] <= self.t:
            self.ready.append(self._next)
            self._next += 1
        if self.drop_late and self.ready:
            late = [r for r in self.ready if by(self.deadline[r], self.t)]
            for r in late:
                self.ready.remove(r)
                self._end_request(r, math.nan)

    def _end_layer(self, c: int) -> None:
        r = self.running[c]
        m, l = self.model[r], self.layer[r]
        self.energy += self._en[m][l][c]
        self.dram_bytes += self._size[c] * self._need[c]
        self.trace[self._slot[c]][4] = self.t
        self.running[c] = -1
        self.demand = sum(self._need[k] for k in range(self.num_cores) if self.running[k] >= 0)
        self.layer[r] = l + 1
        if l + 1 == len(self.lat[m]):
            self._end_request(r, self.t)
        else:
            self.ready.append(r)

    def _end_request(self, r: int, finish: float) -> None:
        self.finish[r] = finish
        self._ended += 1
        if by(finish, self.deadline[r]):          # (NaN, dropped: False)
            self.hits += 1
        else:
            self.misses += 1


@dataclass
class OnlineResult:
    """One scheduler on one stream: per request its finish (NaN: dropped) and whether it met its
    deadline; the energy of the layers run (dropped requests' too), per-core busy time, DRAM bytes."""

    scheduler: str
    models: tuple[str, ...]
    cores: tuple[str, ...]
    bandwidth: float
    arrival: np.ndarray
    deadline: np.ndarray
    model: np.ndarray
    finish: np.ndarray
    energy_pJ: float
    busy: np.ndarray
    dram_bytes: float
    end: float
    decisions: int
    decide_seconds: float
    trace: np.ndarray = field(repr=False, default=None)   # [request, layer, core, start, end] rows

    @property
    def met(self) -> np.ndarray:
        return by(self.finish, self.deadline)

    @property
    def sla_rate(self) -> float:
        """Fraction of the requests that finished by their deadline (NaN for a stream of none)."""
        return float(self.met.mean()) if len(self.met) else math.nan

    def summary(self) -> dict:
        """The figures a comparison reports (JSON-ready)."""
        done = np.isfinite(self.finish)
        latency = (self.finish - self.arrival)[done]
        span = self.end - float(self.arrival[0]) if len(self.arrival) else 0.0
        per = {}
        for i, name in enumerate(self.models):
            mine = self.model == i
            if mine.any():
                per[name] = {"requests": int(mine.sum()), "sla_rate": float(self.met[mine].mean())}
        return {
            "scheduler": self.scheduler, "requests": int(len(self.arrival)), "sla_rate": self.sla_rate,
            "met": int(self.met.sum()), "dropped": int((~done).sum()),
            "energy_pJ": self.energy_pJ,
            "energy_per_met_pJ": self.energy_pJ / int(self.met.sum()) if self.met.any() else math.nan,
            "latency_mean_cycles": float(latency.mean()) if done.any() else math.nan,
            "latency_p95_cycles": float(np.percentile(latency, 95)) if done.any() else math.nan,
            "utilization": float(self.busy.sum() / (span * len(self.cores))) if span > 0 else 0.0,
            "bandwidth_utilization": float(self.dram_bytes / (self.bandwidth * span)) if span > 0 else 0.0,
            "decisions": self.decisions,
            "decision_us": 1e6 * self.decide_seconds / max(1, self.decisions),
            "per_model": per,
        }


CONTRACT = ("a scheduler whose reset(sim, seed) prepares a stream and whose decide(sim) returns a list of "
            "(request, core) pairs to start (coexplore.online.schedulers.Scheduler)")


def _checked_pairs(scheduler, pairs) -> list:
    """decide's answer as (request, core) pairs, refused naming the scheduler when it is none."""
    try:
        return [(r, c) for r, c in pairs]
    except (TypeError, ValueError):
        raise CoexploreError(f"{label(scheduler)} answered decide(sim) "
                             f"with {type(pairs).__name__} {pairs!r:.60}", key="scheduler", expected=CONTRACT) from None


def simulate(system: ServedSystem, stream: RequestStream, scheduler, drop_late: bool = True,
             seed: int = 0) -> OnlineResult:
    """Run `scheduler` (see `coexplore.online.schedulers.Scheduler`; or a heuristic's name) over `stream`."""
    seed = check_seed(seed, option=None, none=False)       # (random.Random took -3 as 3 and 1.5 as itself)
    check_type(system, ServedSystem, "system", "a ServedSystem (coexplore.online.models.served_system)")
    check_type(stream, RequestStream, "stream", "a RequestStream (coexplore.online.stream.poisson_stream)")
    if isinstance(scheduler, str):
        from coexplore.online.schedulers import heuristic
        scheduler = heuristic(scheduler)
    if not is_scheduler(scheduler):
        raise CoexploreError(f"got {scheduler!r}"[:120], key="scheduler",
                             expected="a scheduler (reset(sim, seed), decide(sim)): heuristic(name), "
                                      "LearnedScheduler(policy), or a heuristic's name")
    sim = Simulation(system, stream, drop_late)
    decisions, spent = 0, 0.0
    clock = time.perf_counter
    with plugins_code(scheduler, "reset", CONTRACT, "scheduler"):   # a plugin's policy: its errors its own
        scheduler.reset(sim, seed)
    while sim.next_decision():
        with plugins_code(scheduler, "decide", CONTRACT, "scheduler"):
            t0 = clock()
            pairs = scheduler.decide(sim)
            spent += clock() - t0
        decisions += 1
        for r, c in _checked_pairs(scheduler, pairs):
            try:
                sim.start(r, c)
            except CoexploreError as exc:     # a decision the simulation refuses: said as the scheduler's
                exc.message = f"{label(scheduler)} answered decide(sim) with ({r}, {c}): {exc.message}"
                raise
    return OnlineResult(scheduler.name, tuple(m.name for m in system.models), system.cores, system.bandwidth,
                        stream.arrival, stream.deadline, stream.model, np.array(sim.finish),
                        sim.energy if system.energy_known else math.nan,
                        np.array(sim.busy), sim.dram_bytes, sim.t, decisions, spent,
                        np.array(sim.trace, dtype=float).reshape(-1, 5))
