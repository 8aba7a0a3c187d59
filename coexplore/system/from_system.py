"""Job tables from a system YAML and its workloads, through the layer mapper and the cache.

Each distinct core design of the system gets its Timeloop architecture (generator), its ERT
(built-in estimator) and its constraints; each distinct layer of the workloads is mapped once per
core design with the layer mapper (results cached in SQLite); every layer occurrence of every
workload becomes a job, and every core instance (simba_0_0, ...) a column of the job table:
latency = the best mapping's cycles, energy = its energy, bandwidth need = its DRAM traffic (bytes)
over its latency.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from coexplore.arch.file_core import FileCore
from coexplore.arch.system import SystemArch, load_system_arch
from coexplore.arch.tables import check_own_table, price_core
from coexplore.errors import CoexploreError, CoexploreWarning
from coexplore.model.cache import take_over
from coexplore.model.evaluate import dram_bytes, level_costs
from coexplore.model.inputs import Context
from coexplore.search import registry
from coexplore.search.layer import WHY_SAMPLES, NoValidMapping, map_layer
from coexplore.spec.architecture import parse_architecture
from coexplore.energy.pricing import builtin_ert
from coexplore.spec.constraints import constraints_from_targets, load_constraints
from coexplore.spec.ert import load_ert, parse_ert, stale_ert
from coexplore.spec.problem import parse_problem
from coexplore.spec.system import SystemSpec
from coexplore.spec.workload import Workload, bundled_workloads, find_workload, layer_problem, load_workload
from coexplore.system.jobs import Job, JobTable, build_job_table
from coexplore.workers.processes import in_processes


@dataclass
class CoreModel:
    """What the layer mapper needs for one distinct core design."""

    name: str
    context_arch: object
    costs: object
    ert: object
    constraints: dict
    warnings: tuple = ()     # where the built-in energy estimate is not what Accelergy would give
    own: bool = False        # a core of the user's own files (system.cores[].arch)
    constraints_files: tuple[Path, ...] = ()
    names: dict = field(default_factory=dict)    # an own template core's `var:` (its file is read again)

    def constraints_for(self, problem) -> dict:
        """The mapspace constraints of one layer on this core: a template core's are fixed (flattened
        as timeloopfe writes them); an own core's are read as `coexplore map` reads its file, completed
        for the layer as timeloopfe completes a node list's (unit loops, permutations, macros)."""
        if not self.own:
            return self.constraints
        from coexplore.spec.template import with_names
        with with_names(self.names):
            return load_constraints(self.context_arch, list(self.constraints_files) or None, problem)


def system_layer_mapper(system) -> "registry.MapperSpec | None":
    """The layer mapper a system YAML names under `mappers.layer` (made absolute by the parser), if any."""
    path = system.spec.mappers.get("layer")
    if not path:
        return None
    if not Path(path).is_file():
        raise CoexploreError(f"no such mapper file {path}", file=system.spec.file, key="mappers.layer",
                             expected="a layer mapper YAML, relative to the system file")
    return registry.load_mapper(path)


def core_model(system: SystemArch, name: str, ert: Path | str | None = None) -> CoreModel:
    """Architecture, ERT and constraints of the core design `name`; `ert`: an energy table file to
    use instead of the core's own (`--ert`: then the core is not priced at all). `system` may be a
    system YAML's path or a bundled system's name."""
    if isinstance(system, (str, Path)):
        from coexplore.arch.system import load_system_arch
        from coexplore.bundled import resolve
        system = load_system_arch(resolve("arch", str(system)))
    if name not in system.cores:
        raise CoexploreError(f"no core design {name!r}", file=system.spec.file, key="core",
                             expected="one of " + ", ".join(system.cores))
    core = system.cores[name]
    if isinstance(core, FileCore):
        return _file_core_model(core, Path(ert) if ert is not None else None)
    flat = core.flattened()
    arch = parse_architecture(flat.processed, file=f"{system.spec.file}:{name}", name=name)
    told: tuple = ()
    if ert is not None:
        table = load_ert(ert)
    else:
        try:
            ert_dict, _ = price_core(core)     # exactly as `coexplore arch generate` prices it
        except CoexploreError as exc:       # a DRAM type or technology the estimator refuses
            raise exc.with_file(system.spec.file) from None
        table, told = parse_ert(ert_dict, f"{name} (built-in estimator)"), tuple(ert_dict.get("warnings") or ())
    targets = flat.constraints.get("architecture_constraints", {}).get("targets", [])
    cons = constraints_from_targets(targets, arch, f"{name} constraints")
    return CoreModel(name, arch, level_costs(arch, table), table, cons, told)


def _file_core_model(core: FileCore, ert_file: Path | None = None) -> CoreModel:
    """A core of the user's own files, found as `coexplore evaluate` / `map` find them: its ERT given,
    else beside or inside the architecture file, else priced with the built-in estimator (a note says
    so); its constraints given, else its nodes' or a constraints.yaml beside it."""
    arch = core.architecture
    source = ert_file if ert_file is not None else core.ert_source()
    with warnings.catch_warnings(record=True) as said, core.rendering():      # (a template: the core's var:)
        warnings.simplefilter("always")
        ert = load_ert(source) if isinstance(source, Path) else parse_ert(source, str(core.arch_file)) \
            if source is not None else builtin_ert(core.arch_file, override=f"ert: FILE in {core.key}")
        if source is not None:            # a table given, beside or inside: it must be this design's
            check_own_table(core.name, arch, ert.raw, "ERT", source if isinstance(source, Path) else core.arch_file)
        costs = level_costs(arch, ert)
    told = [f"{core.arch_file}: {w}" for w in arch.warnings] + [str(w.message) for w in said] + \
        [f"{ert.source}: {w}" for w in costs.notes] + ([stale] if (stale := stale_ert(ert, core.arch_file)) else [])
    with core.rendering():
        cons = load_constraints(arch, list(core.constraints_files) or None)    # read now: a bad file is said at once
    return CoreModel(core.name, arch, costs, ert, cons, tuple(told), own=True,
                     constraints_files=core.constraints_files,
                     names=dict(core.var))


def core_models(system: SystemArch) -> dict[str, CoreModel]:
    return {name: core_model(system, name) for name in system.cores}


LAYER_BUDGET = 2000     # samples per (layer, core design) of a job table, by default
MAX_JOBS = 100_000   # a schedule genome has 2 genes per job: beyond this, the search is no use


def layer_context(cm: CoreModel, layer) -> Context:
    """The evaluation context of a workload layer (`spec.workload`) on a core design (`core_model`)."""
    return Context(cm.context_arch, parse_problem(layer_problem(layer), name=layer.name), cm.ert, cm.costs)


MEMORY = ":memory:"          # a search's cache held in its task (`MemoryCache`), for a task on another machine


def _map_in_worker(task) -> tuple:
    """One (layer, core design) search in a worker process or a Ray task: (pair index, the best
    mapping's record, None when the search raised (the parent repeats it to raise it, the layer
    named), the `delta()` of a cache held in memory for the parent to take over, else None). `cache_path`: the SQLite file
    (a process of this machine writes it itself), MEMORY (a task elsewhere), or None (no cache)."""
    i, cm, layer, spec, budget, seed, cache_path = task
    from coexplore.model.cache import MemoryCache, ResultCache
    warnings.simplefilter("ignore")       # what a search says, the parent says once (not raw, per worker)
    cache = None
    try:
        cache = MemoryCache() if cache_path == MEMORY else ResultCache(cache_path) if cache_path is not None else None
        ctx = layer_context(cm, layer)
        res = map_layer(ctx, cm.constraints_for(ctx.problem), spec, budget, seed, cache=cache)
        best = {**res.best, "mapping": res.mapping, "cached": res.cached}
    except Exception:
        best = None
    return i, best, cache.delta() if isinstance(cache, MemoryCache) else None


def _map_in_parallel(items: list, spec, budget: int, seed: int, cache, workers: int, done,
                     ray: bool = False) -> dict:
    """The best mapping records of `items` = [(key, layer, CoreModel)] searched by `workers` processes,
    or as tasks on the Ray cluster the caller joined (`ray`; `workers` then caps the tasks in flight,
    0: the cluster's CPUs), each search seeded as it would be alone, so the results are those of one
    process; by key. Finished searches are cached as they end (by the processes, or here for Ray
    tasks), so an interrupted run keeps them. `done(key)` after each."""
    from coexplore.mapspace.space import MapSpace
    for _, layer, cm in items:            # what each layer's mapspace says (a fan-out it idles): said here, once,
        try:                              # as a search in this process says it (the workers are silent)
            ctx = layer_context(cm, layer)
            MapSpace(ctx.arch, ctx.problem, cm.constraints_for(ctx.problem))
        except CoexploreError:
            pass                          # (the search refuses it, naming the layer)
    cache_path = MEMORY if ray else None if cache is None else str(cache.path)
    tasks = [(i, cm, layer, spec, budget, seed, cache_path) for i, (_, layer, cm) in enumerate(items)]
    if ray:
        from coexplore.workers.ray_tasks import on_ray
        ended = (result for _, result in on_ray(_map_in_worker, tasks, limit=workers or None))
    else:
        ended = in_processes(_map_in_worker, tasks, workers)
    records = {}
    for i, rec, delta in ended:
        take_over(cache, delta)
        if rec is not None:
            records[items[i][0]] = rec
        done(items[i][0])
    return records


def system_workloads(system: SystemArch | SystemSpec, workloads: list | None = None) -> list[Workload]:
    """The workloads a system's job table is made of: `workloads` (files, bundled names, or Workloads
    already read: a sweep reads its files once, where it runs, and hands its tasks what they say),
    else the system file's own `workloads:`."""
    spec = system.spec if isinstance(system, SystemArch) else system
    if isinstance(workloads, (str, Path, Workload)):
        workloads = [workloads]          # one workload given alone
    named = not workloads                # the system file's own `workloads:` (paths made absolute there)
    paths = list(workloads or spec.workloads)
    if not paths:
        raise CoexploreError("no workloads", file=spec.file, key="workloads",
                             expected="a workloads list in the system file or --workload problems/X.yaml")

    def load(i: int, p) -> Workload:
        if isinstance(p, Workload):
            return p
        if named and not Path(p).exists():
            raise CoexploreError(f"no such workload file {p}", file=spec.file, key=f"workloads[{i}]",
                                 expected="a path relative to the system file (a workload YAML, a Timeloop problem "
                                          "file or a folder of them), a bundled name ("
                                          + ", ".join(q.stem for q in bundled_workloads()) + "), or --workload NAME")
        return load_workload(find_workload(p))
    return [load(i, p) for i, p in enumerate(paths)]


def map_layers(systems: list[SystemArch], workloads: list[str | Path] | None = None,
               layer_mapper: registry.MapperSpec | None = None, layer_budget: int = LAYER_BUDGET, seed: int = 0,
               cache=None, progress: bool = False, workers: int = 1, ray: bool = False,
               entries: dict | None = None) -> int:
    """Map every distinct (layer, core design) pair of several systems (a sweep's points) into `cache`
    in `workers` processes (or as Ray tasks: `ray`, see `_map_in_parallel`), a design shared by
    several systems (equal content) once, so that their job
    tables then come from the cache; pairs already cached are not searched. Searches that find no
    valid mapping are left for the job table to report. `entries`, if given, receives the cache
    records of every pair (key -> record), for tasks that cannot read the cache. The number of pairs
    searched."""
    if not systems:
        return 0
    spec = layer_mapper or system_layer_mapper(systems[0]) or registry.default_mapper()  # `mappers:` is not swept
    items: dict = {}
    for system in systems:
        layers = {layer.key(): layer for w in system_workloads(system, workloads) for layer in w.layers}
        try:
            models = core_models(system)
        except CoexploreError:          # a core that cannot be priced or read: its point says so when it runs
            continue
        for name, cm in models.items():
            digest = system.cores[name].digest()
            for lkey, layer in layers.items():
                items.setdefault((lkey, digest), (layer, cm))
    stored = {k: _cached(layer, cm, spec, layer_budget, seed, cache) for k, (layer, cm) in items.items()}
    todo = [(k, layer, cm) for k, (layer, cm) in items.items() if stored[k][1] is None]
    if todo:
        bar = None
        if progress:
            from coexplore.progress import progress_bar
            bar = progress_bar(total=len(todo), desc="map layers", unit="layer x core", leave=False)
        try:
            _map_in_parallel(todo, spec, layer_budget, seed, cache, workers,
                             lambda key: bar.update(1) if bar is not None else None, ray=ray)
        finally:
            if bar is not None:
                bar.close()
    if entries is not None and cache is not None:
        for key, _ in stored.values():
            record = None if key is None else cache.get(key, count=False)
            if record is not None:
                entries[key] = record
    return len(todo)


def _cached(layer, cm: CoreModel, spec, budget: int, seed: int, cache) -> tuple[str | None, dict | None]:
    """This (layer, core design) search's cache key and the record `cache` holds (None: no cache)."""
    from coexplore.search.layer import cached_entry
    ctx = layer_context(cm, layer)
    return cached_entry(ctx, cm.constraints_for(ctx.problem), spec, budget=budget, seed=seed, cache=cache)


def system_job_table(system: SystemArch | str | Path, workloads: list[str | Path] | None = None,
                     layer_mapper: registry.MapperSpec | None = None, layer_budget: int = LAYER_BUDGET,
                     seed: int = 0, cache=None, progress: bool = False,
                     workers: int = 1) -> tuple[JobTable, SystemArch]:
    """The job table of a system's workloads (`system`: a system YAML's path, or a system already
    built, e.g. a sweep point's); `workers` > 1 maps the distinct (layer, core design) pairs in that
    many processes (the same table)."""
    if not isinstance(system, SystemArch):
        system = load_system_arch(system)
    wls = system_workloads(system, workloads)
    paths = [w.path or w.name for w in wls]         # (named in messages)
    total = sum(layer.count for w in wls for layer in w.layers)
    if total > MAX_JOBS:
        raise CoexploreError(f"the workloads make {total:,} jobs (layer counts included)", file=str(paths[0]),
                             key="layers[].count", expected=f"at most {MAX_JOBS:,} jobs to schedule")
    jobs, layer_of, seen, made_by = [], {}, {}, {}
    for w in wls:
        seen[w.name] = seen.get(w.name, 0) + 1           # the same DNN twice: two tenants
        dnn = w.name if seen[w.name] == 1 else f"{w.name}@{seen[w.name]}"
        for layer in w.layers:
            for k in range(layer.count):
                name = f"{dnn}.{layer.name}" + (f"#{k}" if layer.count > 1 else "")
                if name in made_by and made_by[name] != (dnn, layer.name):   # `a` + `b.c` and `a.b` + `c`
                    other = made_by[name]
                    raise CoexploreError(f"job name '{name}' is made twice: workload '{other[0]}' layer "
                                         f"'{other[1]}' and workload '{dnn}' layer '{layer.name}'",
                                         file=str(w.path or paths[0]), key="workload.name",
                                         expected="workload and layer names whose '<workload>.<layer>' differ")
                made_by[name] = (dnn, layer.name)
                job = Job(name=name, dnn=dnn, layer=layer.name, kind=layer.shape.get("name", ""),
                          dims=tuple(sorted(layer.instance.items())))
                jobs.append(job)
                layer_of[job] = layer
    if not jobs:
        raise CoexploreError("the workloads have no layers", file=str(paths[0]), key="workload.layers",
                             expected="at least one layer")
    models = core_models(system)
    instances = system.instances()
    core_of = {inst.name: inst.core for inst in instances}
    spec = layer_mapper or system_layer_mapper(system) or registry.default_mapper()
    memo: dict = {}
    pairs: dict = {}                      # (layer key, design) -> (layer, design), in first-use order
    for j in jobs:
        for inst in instances:
            pairs.setdefault((layer_of[j].key(), core_of[inst.name]), (layer_of[j], core_of[inst.name]))
    bar = None
    if progress:
        from coexplore.progress import progress_bar
        bar = progress_bar(total=len(pairs), desc="map layers", unit="layer x core", leave=False)

    def search(layer, design: str) -> dict:
        """The best mapping's record of one (layer, core design), searched here (cached)."""
        cm = models[design]
        try:
            ctx = layer_context(cm, layer)
            res = map_layer(ctx, cm.constraints_for(ctx.problem), spec, layer_budget, seed, cache=cache,
                            progress=bar is not None)      # a bar of its own under the layers'
        except NoValidMapping as exc:     # a failed search, not bad input: the caller decides
            exc.message = f"layer {layer.name} on core {design}: {exc.message}"
            if exc.key != "objective":    # (an objective that refused every valid mapping says where it is written)
                exc.file, exc.key, exc.option = system.spec.file, "layer_budget", "--layer-budget"
                if exc.reasons and exc.reasons[0][1] >= 0.99 * WHY_SAMPLES:   # (nearly) every random mapping fails
                    c = system.spec.core(design)                       # it: the design, more than the budget
                    exc.key, exc.option = (f"{c.key}.params" if c.template else c.key), None
                    exc.expected = (f"a core design whose {exc.reasons[0][0]} fits this layer (the commonest failure "
                                    f"of {exc.reasons[0][1]} of {WHY_SAMPLES:,} random mappings), or a larger "
                                    "--layer-budget")
            raise
        except CoexploreError as exc:     # a search setting this layer refuses (budget, searcher limits)
            if exc.key == "budget":
                raise CoexploreError(f"layer {layer.name} on core {design}: {exc.message}",
                                     file=system.spec.file, key="layer_budget", option="--layer-budget",
                                     expected=exc.expected) from None
            if (exc.file is None or exc.is_setting) and not exc.message.startswith("layer "):
                exc.message = f"layer {layer.name} on core {design}: {exc.message}"
            raise
        if bar is not None and not parallel:      # in parallel, counted as each search ended
            bar.update(1)
        return {**res.best, "mapping": res.mapping, "cached": res.cached}

    failed: dict = {}                     # (layer key, design) -> why no mapping was found
    mapped: dict = {}                     # (design, workload, layer) -> the best mapping found
    sources = {"cached": 0, "searched": 0, "failed": 0}   # the (layer, design) searches: cached, run, of them failed

    def cost(job: Job, instance: str):
        design = core_of[instance]
        layer = layer_of[job]
        key = (layer.key(), design)
        if key not in memo:               # searched in parallel, else here (a failed one is repeated here)
            try:
                rec = searched.get(key) or search(layer, design)
            except NoValidMapping as exc:       # the job cannot run on this core: inf, kept off it
                failed[key] = exc
                sources["searched"] += 1          # (a search that found nothing is never cached)
                sources["failed"] += 1
                memo[key] = (math.inf, math.nan, 0.0)
                return memo[key]
            memo[key] = (float(rec["cycles"]), float(rec["energy_pJ"]), dram_bytes(rec, models[design].context_arch))
            mapped.setdefault((design, job.dnn.split("@")[0], job.layer), rec.get("mapping"))
            sources["cached" if rec.get("cached") else "searched"] += 1
        return memo[key]

    parallel = workers > 1 and len(pairs) > 1
    try:
        searched = {} if not parallel else _map_in_parallel(
            [(key, layer, models[design]) for key, (layer, design) in pairs.items()], spec, layer_budget, seed,
            cache, workers, lambda key: bar.update(1) if bar is not None else None)
        table = build_job_table(jobs, [i.name for i in instances], cost)
    except CoexploreError as exc:
        nowhere = [k for k in failed if all(k2 in failed for k2 in pairs if k2[0] == k[0])]
        if nowhere:                       # a layer no core design can map: the first design's reason
            exc, (lkey, first) = failed[nowhere[0]], nowhere[0]
            others = [d for (k, d) in failed if k == lkey and d != first]
            if others:                    # said once: the others were tried too
                exc.message = exc.message.replace(f" on core {first}:", f" on core {first} (nor on "
                                                  + ", ".join(others) + "):", 1)
            raise exc from None
        raise exc
    finally:
        if bar is not None:
            bar.close()
    for (lkey, design), exc in failed.items():
        name = next(layer.name for (k, _), (layer, _) in pairs.items() if k == lkey)
        why = (f"the layer mapper's objective {exc.objective!r} refused every valid mapping it sampled"
               if exc.objective else "a core too small for its tiles, or valid mappings too rare for this budget: "
               "a larger --layer-budget may find one")
        warnings.warn(f"layer {name} has no valid mapping on core {design} ({exc.samples:,} samples): its jobs "
                      f"are scheduled on the other cores ({why})", CoexploreWarning, stacklevel=2)
    table.core_notes = {name: tuple(cm.warnings) for name, cm in models.items()}
    table.mappings = {k: m for k, m in mapped.items() if m is not None}
    table.layer_searches = sources
    return table, system
