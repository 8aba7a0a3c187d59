"""Find a schedule for a job table: pick a searcher by name, drive it, summarise the result.

The pipeline is: job table + bandwidth -> searcher (ask/tell) -> best candidate -> trace
(timeline) -> summary. Heuristics are one-shot (1 sample) except MET with tied cores.
"""

from __future__ import annotations

import dataclasses

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.plugins import plugins_code
from coexplore.search.base import SearchInterrupted, Searcher, positive_int, run_search
from coexplore.stops import holding_stops
from coexplore.seeds import check_seed
from coexplore.system.baselines import RandomSearcher, StandardGASearcher, nevergrad_searcher
from coexplore.system.bounds import at_longest_job, jobs_alone, longest_job, lower_bound
from coexplore.system.encoding import MakespanObjective, space_of
from coexplore.system.evaluator import Trace, check_bandwidth, trace
from coexplore.system.heuristics import HEURISTICS, HeuristicSearcher, heuristic_schedule
from coexplore.system.jobs import JobTable
from coexplore.system.magma import MagmaConfig, MagmaSearcher

NEVERGRAD = ("pso", "cma", "de", "tbpsa", "oneplusone")
# schedulers of the user's own (a plugin registers them): name -> factory(space, table, budget, seed),
# returning a Searcher over `space` (`encoding.space_of(table)`: per job a core index, then per job
# a priority, lower runs earlier) whose losses are makespans (`encoding.MakespanObjective`)
CUSTOM: dict = {}


def searcher_names() -> tuple[str, ...]:
    """The system searchers by name: the built-in ones, then those a plugin registered."""
    return SEARCHERS + tuple(k for k in CUSTOM if k not in SEARCHERS)


def is_searcher(name) -> bool:
    """`name` names a system searcher (names are read case-blind: MAGMA is magma)."""
    return isinstance(name, str) and name.lower() in {n.lower() for n in searcher_names()}


# candidates asked per round; nevergrad optimizers are told this many workers
BATCH = {"default": 100, "nevergrad": 10}


def heuristic_candidates(table: JobTable) -> np.ndarray:
    """The 12 heuristics' schedules as candidates [12, 2J] (MAGMA's warm start)."""
    rows = []
    for h in HEURISTICS:
        core, prio = heuristic_schedule(table.latency, h)
        rows.append(np.concatenate([core.astype(float), prio]))
    return np.array(rows)


@dataclass
class SystemMapperSpec:
    """A system-level mapper YAML (`mappers/magma.yaml`, a system's `mappers.system`):
    `searcher` (one of `searcher_names()`), optional `budget` (samples) and, for magma, `config`
    (MagmaConfig fields); for a plugin scheduler whose factory takes `config`, its own mapping."""

    searcher: str = "magma"
    budget: int | None = None
    config: MagmaConfig | dict | None = None    # MAGMA's settings, or a plugin scheduler's own (a mapping)
    file: str | None = None       # the mapper YAML it came from


def load_system_mapper(path) -> SystemMapperSpec:
    from coexplore.search.registry import config_from_dict
    from coexplore.spec.yamlio import load_yaml

    f = str(path)
    data = load_yaml(path)
    from coexplore.search.registry import SEARCHERS as LAYER_SEARCHERS
    if isinstance(data, dict) and isinstance(data.get("searcher"), str) and data["searcher"] in LAYER_SEARCHERS \
            and not is_searcher(data["searcher"]):
        raise CoexploreError(f"a layer mapper (searcher: {data['searcher']}), not a system scheduler", file=f,
                             key="searcher", expected="a system mapper: " + " | ".join(searcher_names()))
    if not isinstance(data, dict) or "searcher" not in data:
        raise CoexploreError("a system mapper needs a 'searcher' key", file=f, key="searcher",
                             expected=" | ".join(searcher_names()))
    unknown = sorted(set(data) - {"searcher", "budget", "config"})
    if unknown:
        raise CoexploreError("unknown key", file=f, key=unknown[0], expected="searcher | budget | config")
    name = str(data["searcher"]).lower()
    if not is_searcher(name):
        raise CoexploreError(f"unknown searcher '{data['searcher']}'", file=f, key="searcher",
                             expected="one of " + ", ".join(searcher_names()))
    budget = data.get("budget")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise CoexploreError(f"bad budget {budget!r}", file=f, key="budget", expected="an integer >= 1")
    config = None
    if data.get("config") is not None:
        factory = plugin_factory(name)
        if name == "magma":
            config = check_magma_config(config_from_dict(MagmaConfig, data["config"], f), f, given=set(data["config"]))
        elif factory is not None and _takes_config(factory):     # a plugin's own settings, as it reads them
            if not isinstance(data["config"], dict):
                raise CoexploreError(f"got {data['config']!r:.60}", file=f, key="config",
                                     expected=f"a mapping of '{name}'s settings")
            config = dict(data["config"])
        else:
            raise CoexploreError(f"'{name}' takes no config", file=f, key="config",
                                 expected="config only with searcher: magma, or a plugin scheduler whose factory "
                                          "takes a config argument: factory(space, table, budget, seed, config)")
    return SystemMapperSpec(name, budget, config, str(Path(f).resolve()))


def plugin_factory(name: str):
    """A plugin's scheduler factory registered under `name` (names read case-blind, as the built-in
    ones), or None."""
    return {k.lower(): f for k, f in CUSTOM.items()}.get(str(name).lower())


def _takes_config(factory) -> bool:
    """Whether a plugin's scheduler factory takes the `config:` of a system mapper YAML (a parameter
    named config)."""
    import inspect
    try:
        return "config" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def config_record(config) -> dict | None:
    """A system mapper's settings as a run record writes them (MAGMA's dataclass, a plugin's mapping)."""
    import dataclasses
    return dataclasses.asdict(config) if dataclasses.is_dataclass(config) else \
        dict(config) if config is not None else None


def system_mapper(name: str) -> SystemMapperSpec:
    """A system searcher by name. The one with settings (magma) reads its bundled
    mappers/magma.yaml, as `coexplore map --searcher marl` reads mappers/marl.yaml; the others have
    no settings (a bundled file of their name, e.g. mappers/random.yaml, is a layer mapper's).
    Unknown names are refused."""
    from coexplore.bundled import resolve

    key = name.lower() if isinstance(name, str) else name
    if not is_searcher(key):
        raise CoexploreError(f"unknown searcher '{name}'", key="searcher", option="--searcher",
                             expected="one of " + ", ".join(searcher_names()) + ", or a mapper YAML")
    found = resolve("mappers", key)
    if key == "magma" and found.is_file():
        return load_system_mapper(found)
    return SystemMapperSpec(key)


MAX_POP = 100_000      # a population is asked as one batch: as the layer mappers' batch cap


def check_magma_config(cfg: MagmaConfig, file=None, given: set[str] | None = None) -> MagmaConfig:
    """Refuse populations too small to breed (every island needs two parents) or too large to hold,
    rates outside [0, 1], and options that would do nothing: a mutation floor above the rate,
    more islands or a merge point with original_quirks (the original code breeds one population),
    a merge point with one island; each only when set off its default (`given`: the options a file
    set; default: all)."""
    defaults = MagmaConfig()
    # an option at its default asks for nothing (the bundled mappers/magma.yaml spells them all out),
    # nor do one island or no de-duplication
    asked = {k for k in ("islands", "merge_at") if (given is None or k in given)
             and getattr(cfg, k) != getattr(defaults, k) and not (k == "islands" and cfg.islands == 1)}
    if cfg.original_quirks and asked:
        key = sorted(asked)[0]
        raise CoexploreError(f"option '{key}' does nothing with original_quirks: true (the original code breeds "
                             "one population)", file=file, key=f"config.{key}",
                             expected="original_quirks: false, or the option left out")
    elif cfg.islands <= 1 and "merge_at" in asked:
        raise CoexploreError("option 'merge_at' does nothing with one island", file=file, key="config.merge_at",
                             expected="islands >= 2, or merge_at left out")
    islands = 1 if cfg.original_quirks else max(1, cfg.islands)
    if cfg.pop_size < 2 * islands:
        raise CoexploreError(f"pop_size {cfg.pop_size} is too small for {islands} island(s)", file=file,
                             key="config.pop_size", expected=f"at least 2 per island (>= {2 * islands})")
    if cfg.pop_size > MAX_POP:
        raise CoexploreError(f"pop_size {cfg.pop_size:,} is too large", file=file, key="config.pop_size",
                             expected=f"at most {MAX_POP:,} (a generation is evaluated as one batch)")
    for key in ("elite_ratio", "parent_ratio", "p_crossover_gen", "p_crossover_rg", "p_crossover_accel",
                "p_mutation", "p_mutation_start", "parent_ratio_start", "p_mutation_min", "merge_at"):
        value = getattr(cfg, key)
        if value is not None and not 0 <= value <= 1:
            raise CoexploreError(f"{key} {value}", file=file, key=f"config.{key}", expected="a number in [0, 1]")
    for key in ("p_mutation_start", "parent_ratio_start"):      # geometric annealing: nothing grows from 0
        if getattr(cfg, key) == 0:
            raise CoexploreError(f"{key} 0: the rate anneals geometrically from its start, and from 0 it cannot",
                                 file=file, key=f"config.{key}", expected="a number in (0, 1], or left out")
    top = max(cfg.p_mutation, cfg.p_mutation_start or 0.0)     # the rate anneals from start to p_mutation
    if cfg.p_mutation_min is not None and not 0 < cfg.p_mutation_min < top:
        raise CoexploreError(f"p_mutation_min {cfg.p_mutation_min} is not between 0 and the mutation rate "
                             f"{top} (it would do nothing)", file=file, key="config.p_mutation_min",
                             expected=f"a rate in (0, {top}), or left unset")
    if cfg.original_quirks:          # what runs (one blind population), so a run record says what ran
        cfg = dataclasses.replace(cfg, islands=1, warm_start=False, dedup=False)
    return cfg


MAX_GENERATION_CELLS = 100_000_000     # pop_size x genome length: a generation's arrays (~0.8 GB each) beyond it


def _magma(space, table: JobTable, budget: int, seed, config: MagmaConfig | None) -> Searcher:
    cfg = check_magma_config(config or MagmaConfig())
    if cfg.pop_size * space.dim > MAX_GENERATION_CELLS:     # (held several times over while a generation breeds)
        raise CoexploreError(f"pop_size {cfg.pop_size:,} makes a generation of {cfg.pop_size * space.dim:,} numbers "
                             f"({space.num_jobs:,} jobs, 2 genes each), more than {MAX_GENERATION_CELLS:,} (~0.8 GB "
                             "a copy, held several times while it breeds)", key="config.pop_size",
                             expected=f"pop_size <= {MAX_GENERATION_CELLS // space.dim:,} for this table")
    init = heuristic_candidates(table) if cfg.warm_start else None
    return MagmaSearcher(space, cfg, seed=seed, initial=init, budget=budget)


def _magma_original(space, table: JobTable, budget: int, seed, config) -> Searcher:
    s = MagmaSearcher(space, MagmaConfig.original(), seed=seed, budget=budget)
    s.name = "magma-original"
    return s


# the built-in system searchers: name -> factory(space, table, budget, seed, config); plugins add to CUSTOM
BUILT_IN: dict = {
    "magma": _magma,
    "magma-original": _magma_original,
    "random": lambda space, table, budget, seed, config: RandomSearcher(space, seed=seed),
    "stdga": lambda space, table, budget, seed, config: StandardGASearcher(space, seed=seed),
    **{n: (lambda space, table, budget, seed, config, n=n:
           nevergrad_searcher(space, n, budget, seed=seed, num_workers=BATCH["nevergrad"])) for n in NEVERGRAD},
    **{h.lower(): (lambda space, table, budget, seed, config, h=h.lower():
                   HeuristicSearcher(table.latency, h, seed=seed)) for h in HEURISTICS},
}
SEARCHERS = tuple(BUILT_IN)


def make_searcher(name: str, table: JobTable, budget: int, seed: int | None = 0,
                  config: MagmaConfig | None = None) -> Searcher:
    """Searcher `name` (see `searcher_names()`) for `table`; `budget` sizes nevergrad and MAGMA's annealing; `config`
    replaces magma's defaults."""
    key = name.lower()
    space = space_of(table)
    if key in BUILT_IN:
        return BUILT_IN[key](space, table, budget, seed, config)
    factory = plugin_factory(key)
    if factory is not None:
        with plugins_code(factory, f"making searcher '{name}'", key="searcher",   # its errors its own
                          expected="a factory(space, table, budget, seed[, config]) returning a Searcher"):
            made = factory(space, table, budget, seed, **({"config": config} if config is not None else {}))
        if not isinstance(made, Searcher):
            raise CoexploreError(f"the factory of searcher '{name}' returned {type(made).__name__}", key="searcher",
                                 expected="a coexplore.search.base.Searcher over encoding.space_of(table)")
        return made
    raise CoexploreError(f"unknown searcher '{name}'", key="searcher",
                         expected="one of " + ", ".join(searcher_names()))


@dataclass
class ScheduleResult:
    """The best schedule `search_schedule` found: per job its core and priority; the makespan
    (cycles), energy (pJ), per-core busy cycles, the lower bound, history and the run's facts."""

    searcher: str
    seed: int | None
    bandwidth: float
    samples: int
    core: np.ndarray
    priority: np.ndarray
    makespan: float
    energy: float
    busy: np.ndarray
    history: list[tuple[int, float]] = field(default_factory=list)
    interrupted: bool = False   # Ctrl-C before the budget: the best of the samples evaluated
    lower_bound: float = 0.0    # no schedule of the table is shorter (coexplore.system.bounds)
    optimal: bool = False       # as long as its longest job alone: no schedule is shorter (the search ended)

    def compute_cycles(self, table: JobTable) -> np.ndarray:
        """Per core, the no-stall latency of its jobs: busy time minus waiting for bandwidth."""
        lat = table.latency[np.arange(table.num_jobs), self.core]
        return np.bincount(self.core, weights=lat, minlength=table.num_cores)

    def to_json(self, table: JobTable, clock_GHz: float | None = None) -> dict:
        """The schedule as JSON (times in cycles; with the system's clock also in seconds)."""
        util = self.busy / self.makespan if self.makespan > 0 else np.zeros_like(self.busy)
        compute = self.compute_cycles(table)
        tr = schedule_trace(table, self)
        by_dnn = dnn_ends(table, tr.job_end)
        extra = {"interrupted": True} if self.interrupted else {}
        if self.optimal:
            extra["optimal"] = True
        if clock_GHz is not None:
            extra.update(clock_GHz=clock_GHz, makespan_s=float(self.makespan) / (clock_GHz * 1e9))
        return {
            "units": {**UNITS, **(CLOCK_UNITS if clock_GHz is not None else {})},
            "searcher": self.searcher,
            "seed": self.seed,
            "samples": int(self.samples),
            "bandwidth": self.bandwidth,
            "makespan": float(self.makespan),
            "throughput_jobs_per_cycle": table.num_jobs / float(self.makespan),
            "energy_pJ": None if not np.isfinite(self.energy) else float(self.energy),
            "cores": list(table.cores),
            "core": [table.cores[c] for c in self.core],
            "core_index": [int(c) for c in self.core],
            "priority": [float(p) for p in self.priority],
            "jobs": [j.name for j in table.jobs],
            "start": [float(t) for t in tr.job_start],      # per job, cycles
            "end": [float(t) for t in tr.job_end],
            "dnn_end": by_dnn,                                 # per DNN instance: when its last layer ends
            "lower_bound": self.lower_bound,
            "busy_cycles": [float(b) for b in self.busy],     # running a job, bandwidth stalls included
            "utilization": [float(u) for u in util],          # busy / makespan
            "compute_cycles": [float(c) for c in compute],    # the jobs' no-stall latencies
            "compute_utilization": [float(c / self.makespan) if self.makespan > 0 else 0.0 for c in compute],
            "history": [[int(s), float(b)] for s, b in self.history],
            **extra,
        }


SCHEDULE_BUDGET = 10_000     # evaluated schedules of a search, by default


def search_schedule(table: JobTable, bandwidth: float, searcher: str = "magma",
                    budget: int = SCHEDULE_BUDGET, seed: int | None = 0,
                    progress: bool = False, config: MagmaConfig | None = None,
                    checkpoint=None) -> ScheduleResult:
    """Best schedule found by `searcher` within `budget` evaluated candidates; a `checkpoint`
    (`search.checkpoint`) resumes an interrupted search of this run and is saved as it goes.
    `table` may be a job table file's path (`tables.load_table`). A Searcher object given as
    `searcher` searches with its own seed, which the result records (`seed` is not used)."""
    if isinstance(table, (str, Path)):
        from coexplore.system.tables import load_table
        table = load_table(table)
    if not isinstance(table, JobTable):
        raise CoexploreError(f"got {type(table).__name__}", key="table",
                             expected="a JobTable (system_job_table, tables.load_table) or a job table file's path")
    bandwidth = check_bandwidth(bandwidth)
    budget = positive_int(budget, "budget", "--budget")
    seed = check_seed(seed)
    given = searcher if isinstance(searcher, Searcher) else None      # a searcher object of the caller's own
    if given is not None:
        searcher = str(given.name)
        own = given.seed if isinstance(given.seed, (int, np.integer)) or given.seed is None else None
        seed = None if own is None else int(own)     # (recorded: the one it searches with, not `seed`)
    elif not isinstance(searcher, str):
        raise CoexploreError(f"got {searcher!r}", key="searcher",
                             expected="one of " + ", ".join(searcher_names()) + ", or a Searcher over "
                                      "encoding.space_of(table)")
    plugin = plugin_factory(searcher) if given is None else None
    if config is not None and not (given is None and searcher.lower() == "magma"
                                   or plugin is not None and _takes_config(plugin)):
        raise CoexploreError(f"a config given to searcher '{searcher}', which takes none", key="config",
                             expected="config only with searcher 'magma' (a MagmaConfig), or a plugin scheduler "
                                      "whose factory takes a config argument")
    objective = MakespanObjective(table, bandwidth)
    batch = BATCH["nevergrad"] if searcher.lower() in NEVERGRAD else BATCH["default"]
    stopped = False
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):   # overflowing makespans are inf: refused below
            s = given if given is not None else make_searcher(searcher, table, budget, seed, config)
            # a schedule as long as its longest job alone is optimal: the search ends there (e.g. one
            # job per core); the LP bound is not used to stop (it is solved to ~1e-9 only)
            longest = longest_job(table.latency, table.bandwidth, bandwidth)
            if not np.isfinite(longest):        # no schedule can be finite: said before any search
                raise _overflowing(table, bandwidth)
            if given is None and searcher.lower() == "magma":
                _say_one_generation(budget, config or MagmaConfig())
            res = run_search(s, objective, budget, batch_size=batch, progress=progress, desc=searcher,
                             checkpoint=checkpoint, target=longest * (1 + 1e-12))
    except SearchInterrupted as exc:   # Ctrl-C: hand the best schedule so far to the caller
        if exc.result.best_x is None:
            raise KeyboardInterrupt from None
        res, stopped = exc.result, True
    with holding_stops() as hold:      # a second Ctrl-C while the bound is computed keeps the schedule
        result = _result(searcher, seed, bandwidth, objective, res, longest)
    if stopped or hold.stop_now:
        raise ScheduleInterrupted(result, stop_now=hold.stop_now)
    return result


class ScheduleInterrupted(KeyboardInterrupt):
    """Ctrl-C during `search_schedule`; `.result` is the best schedule so far (interrupted=True),
    or the complete one when a stop-at-once came after the search had ended (interrupted=False);
    `.stop_now`: a stop-at-once came while the result was made (write it, then stop)."""

    def __init__(self, result: ScheduleResult, stop_now: bool = False):
        super().__init__()
        self.result = result
        self.stop_now = stop_now


def _say_one_generation(budget: int, config: MagmaConfig) -> None:
    """A note when MAGMA's budget holds no more than its first population: nothing is bred."""
    if budget <= config.pop_size:
        import warnings
        from coexplore.errors import CoexploreNote
        warnings.warn(f"budget {budget:,} is at most one MAGMA generation (pop_size {config.pop_size:,}): nothing is "
                      "bred, the search is its first population (a larger budget or a smaller pop_size)",
                      CoexploreNote, stacklevel=3)


def _overflowing(table, bandwidth: float) -> CoexploreError:
    """A job whose time alone, on its fastest core, overflows a float at this system bandwidth."""
    j = int(np.flatnonzero(~np.isfinite(jobs_alone(table.latency, table.bandwidth, bandwidth)))[0])
    return CoexploreError(f"job {table.jobs[j].name} alone takes longer than a float holds at a system bandwidth "
                          f"of {bandwidth:g} bytes/cycle (its traffic needs {float(np.min(table.bandwidth[j])):g} "
                          "bytes/cycle): no schedule has a finite makespan", key="bandwidth",
                          expected="a system bandwidth in bytes/cycle that the jobs' traffic can pass "
                                   "(e.g. 25.6 GB/s at 1 GHz is 25.6)")


def _result(searcher: str, seed, bandwidth: float, objective: MakespanObjective, res,
            longest: float) -> ScheduleResult:
    """The best schedule found, with the LP lower bound and whether it is as long as its longest job
    alone (`longest`: `bounds.longest_job`, optimal)."""
    if res.best_x is None or not np.isfinite(res.best_loss):
        raise CoexploreError(f"no schedule with a finite makespan in {res.samples} samples: the latencies "
                             "and bandwidth needs overflow against the system bandwidth", key="bandwidth",
                             expected="latencies, bandwidth needs and system bandwidth whose makespan fits a float")
    core, prio = objective.space.split(res.best_x)
    ev = objective.details(res.best_x[None])
    t = objective.table
    return ScheduleResult(searcher.lower(), seed, bandwidth, res.samples, core[0], prio[0],
                          float(ev.makespan[0]), float(ev.energy[0]), ev.busy[0], res.history,
                          interrupted=res.interrupted,
                          lower_bound=lower_bound(t.latency, t.bandwidth, bandwidth),
                          optimal=at_longest_job(float(ev.makespan[0]), longest))


def schedule_trace(table: JobTable, result: ScheduleResult) -> Trace:
    return trace(table.latency, table.bandwidth, result.bandwidth, result.core, result.priority)


CYCLES = ("makespan", "lower_bound", "start", "end", "dnn_end", "busy_cycles", "compute_cycles")
UNITS = {"bandwidth": "bytes/cycle", **{k: "cycles" for k in CYCLES},
         "throughput_jobs_per_cycle": "jobs/cycle", "energy_pJ": "pJ (the jobs' energy from the job table)",
         "utilization": "busy_cycles / makespan", "compute_utilization": "compute_cycles / makespan",
         "history": "[samples, best makespan in cycles]"}
CLOCK_UNITS = {"clock_GHz": "GHz (the system's)", "makespan_s": "seconds"}


def summary_lines(table: JobTable, result: ScheduleResult, clock_GHz: float | None = None) -> list[str]:
    """Human-readable summary: makespan (also in time, given the clock), throughput, energy, when
    each DNN is done, per-core utilisation."""
    util = result.busy / result.makespan
    at_clock = "" if clock_GHz is None else f" = {_time(result.makespan / (clock_GHz * 1e9))} at {clock_GHz:g} GHz"
    lines = [
        f"searcher   {result.searcher} (seed {result.seed}, {result.samples} sample{'s' if result.samples != 1 else ''}"
        + ("; as long as its longest job alone: optimal, no search goes further)" if result.optimal else ")"),
        f"jobs       {table.num_jobs} on {table.num_cores} core{'s' if table.num_cores != 1 else ''}, "
        f"bandwidth {result.bandwidth:g} bytes/cycle",
        f"makespan   {result.makespan:.6g} cycles{at_clock} (lower bound "
        f"{result.lower_bound:.6g}: no schedule is shorter)",
        f"throughput {table.num_jobs / result.makespan:.4g} jobs/cycle "
        f"({table.num_jobs / result.makespan * 1e6:.4g} jobs per 1e6 cycles)",
        "energy     " + (f"{result.energy:.6g} pJ ({result.energy / 1e9:.4g} mJ)" if np.isfinite(result.energy)
                         else "n/a (the table has no energy columns)"),
    ]
    lines += _dnn_lines(table, result)
    w = max(8, *(len(str(name)) for name in table.cores))
    compute = result.compute_cycles(table) / result.makespan
    lines.append(f"{'core':<{w + 2}} {'jobs':>5}   {'busy (cycles)':>13}   {'busy':>6}   {'computing':>9}")
    counts = np.bincount(result.core, minlength=table.num_cores)
    shown = range(table.num_cores) if table.num_cores <= SUMMARY_CORES else range(SUMMARY_CORES - 1)
    for c in shown:
        lines.append(f"  {str(table.cores[c]):<{w}} {counts[c]:>5}   {result.busy[c]:>13.6g}   {util[c]:>6.1%}"
                     f"   {compute[c]:>9.1%}")
    if table.num_cores > SUMMARY_CORES:
        rest = table.num_cores - len(shown)
        lines.append(f"  ... {rest:,} more cores (busy {util[len(shown):].min():.1%} to "
                     f"{util[len(shown):].max():.1%}; every core in schedule.json)")
    lines.append("  (busy: running a job, waiting for DRAM bandwidth included; computing: the jobs' "
                 "no-stall latency)")
    return lines


SUMMARY_CORES = 32   # more cores than this: the summary lists the first ones, schedule.json all
SUMMARY_DNNS = 8     # more DNNs than this: the summary names the first ones, schedule.json all


def _dnn_lines(table: JobTable, result: ScheduleResult) -> list[str]:
    """With several DNNs: when each one's last layer ends (cycles), in the order they finish."""
    ends = dnn_ends(table, schedule_trace(table, result).job_end)
    if len(ends) < 2:
        return []
    done = sorted(ends.items(), key=lambda kv: kv[1])
    text = ", ".join(f"{d} {t:.6g}" for d, t in done[:SUMMARY_DNNS])
    more = f", ... {len(done) - SUMMARY_DNNS} more (dnn_end in schedule.json)" if len(done) > SUMMARY_DNNS else ""
    return [f"DNNs done  {text}{more} (cycles)"]


def dnn_ends(table: JobTable, job_end) -> dict[str, float]:
    """Per DNN instance of the table: when its last job ends (cycles)."""
    ends: dict[str, float] = {}
    for j, job in enumerate(table.jobs):
        if job.dnn:
            ends[job.dnn] = max(ends.get(job.dnn, 0.0), float(job_end[j]))
    return ends


def _time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"
