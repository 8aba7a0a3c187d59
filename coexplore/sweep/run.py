"""Run a system YAML's design-space sweep: for every point of its `sweep.axes` (the Cartesian
product), build the system, map every distinct layer of the workloads onto every core design (the
layer mapper, results in the SQLite cache: points that share a core design share its mappings),
schedule the jobs over the shared off-chip bandwidth (MAGMA by default) and measure the point
(`metrics.point_metrics`). Each finished point is stored at once (`store.SweepStore`): a rerun after
a kill resumes with the first point not stored.
"""

from __future__ import annotations

import dataclasses
import json
import numbers
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from coexplore.arch.system import SystemArch, build_system
from coexplore.arch.tables import art_area_mm2, write_core_tables
from coexplore.energy.tables import read_art
from coexplore.errors import CoexploreError, CoexploreWarning
from coexplore.model.cache import take_over
from coexplore.system.from_system import LAYER_BUDGET
from coexplore.system.schedule import SCHEDULE_BUDGET
from coexplore.spec.system import SystemSpec
from coexplore.spec.yamlio import write_text, write_texts
from coexplore.sweep.metrics import point_metrics
from coexplore.sweep.store import SweepStore


@dataclass
class SweepSettings:
    """How every point is mapped and scheduled (the same for all points)."""

    workloads: list | None = None        # workload files; None: the system's `workloads:`
    layer_mapper: object = None          # search.registry.MapperSpec; None: the system's, else marl
    layer_budget: int = LAYER_BUDGET
    layer_seed: int = 0
    searcher: str = "magma"              # a system scheduler (system.schedule.searcher_names(), plugins too)
    config: object = None                # its MagmaConfig, if any
    budget: int = SCHEDULE_BUDGET
    seed: int = 0
    workers: int = 1                     # processes: every point's layers mapped, then points run, N at a time
    ray: bool = False                    # as tasks on the Ray cluster joined (ray_tasks.start_ray); workers: in flight (0: all CPUs)
    gantt: Callable | None = None        # draws a point's Gantt chart (report.gantt.draw_gantt), if any
    estimator: str = "builtin"           # prices the cores' ERT/ART written per point

    def __post_init__(self):
        """Settings every point would refuse are refused here, before any point runs (and is
        stored as failed under the run's key)."""
        from coexplore.search.base import positive_int
        from coexplore.search.registry import MapperSpec, load_mapper
        from coexplore.seeds import check_seed
        from coexplore.system.schedule import is_searcher, searcher_names
        self.layer_budget = positive_int(self.layer_budget, "layer_budget")
        self.budget = positive_int(self.budget, "budget")
        self.layer_seed = check_seed(self.layer_seed, "layer_seed", "--layer-seed", none=False)
        self.seed = check_seed(self.seed, none=False)
        if isinstance(self.layer_mapper, (str, Path)):
            self.layer_mapper = load_mapper(self.layer_mapper)
        if self.layer_mapper is not None and not isinstance(self.layer_mapper, MapperSpec):
            raise CoexploreError(f"got {self.layer_mapper!r}", key="layer_mapper",
                                 expected="a MapperSpec (search.registry.mapper_spec), a searcher name or a mapper YAML")
        if not is_searcher(self.searcher):
            raise CoexploreError(f"unknown searcher {self.searcher!r}", key="searcher",
                                 expected="one of " + ", ".join(searcher_names()))
        if isinstance(self.workers, bool) or not isinstance(self.workers, numbers.Integral) or self.workers < 0:
            raise CoexploreError(f"got {self.workers!r}", key="workers", expected="an integer >= 0 (processes)")
        self.workers = int(self.workers)
        if self.estimator not in ("builtin", "accelergy"):
            raise CoexploreError(f"unknown energy estimator {self.estimator!r}", key="estimator",
                                 expected="builtin or accelergy")
        if self.gantt is not None and not callable(self.gantt):
            raise CoexploreError(f"got {self.gantt!r}", key="gantt",
                                 expected="None or a function (folder, record, name) drawing a point's chart, "
                                          "e.g. coexplore.report.gantt.draw_gantt")


def point_ids(n: int) -> list[str]:
    """p0, p1, ... zero-padded to the same width (p00..p17 for 18 points)."""
    width = len(str(max(n - 1, 0)))
    return [f"p{i:0{width}d}" for i in range(n)]


def run_point(spec: SystemSpec, index: int, pid: str, values: dict, settings: SweepSettings, out: Path,
              cache=None, progress: bool = False) -> dict:
    """Map, schedule and measure one point; its files go to out/points/<pid>/ (emptied first). A point
    that cannot be measured (a combination of values that gives an invalid system, a layer no core
    can map, no finite schedule) is a failed point: recorded with its reason, not raised. What the
    point warns of (coexplore's warnings) is in its record, each once."""
    import shutil
    folder = out / "points" / pid
    shutil.rmtree(folder, ignore_errors=True)     # what a stopped or other run left there
    shutil.rmtree(folder.with_name(f".{pid}.part"), ignore_errors=True)     # (a stopped `_put_files`)
    record = {"point": pid, "index": index, "values": values, "dir": f"points/{pid}", "status": "ok",
              "error": None, "warnings": []}
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", CoexploreWarning)
        try:
            _measure(spec, record, settings, out, cache, progress)
        except KeyboardInterrupt:         # stopped: no half-written point stays in points/
            _drop_unfinished(out, [pid])
            raise
        except CoexploreError as exc:
            if _bad_objective(exc):       # the layer mapper's objective, the same at every point: bad input
                _drop_unfinished(out, [pid])
                raise
            record.update(status="failed", error=exc.format(cli=True))   # (the command's words: shown by it)
    record["warnings"] = list(dict.fromkeys(record["warnings"] + [str(w.message) for w in said
                                                                   if issubclass(w.category, CoexploreWarning)]))
    for w in said:                        # the others (numpy's, Python's) as they would have been shown
        if not issubclass(w.category, CoexploreWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return record


def _bad_objective(exc: CoexploreError) -> bool:
    """An objective expression whose losses no search can take (<= 0 for a learner, -inf): not the
    point's failure (a cap no mapping of a point's design meets is, `NoValidMapping`)."""
    from coexplore.search.layer import NoValidMapping
    return exc.key == "objective" and not isinstance(exc, NoValidMapping)


def _invalid(values: dict, exc: CoexploreError) -> CoexploreError:
    """What a point's values make invalid (a combination not checked in advance)."""
    where = ", ".join(f"{p}={v!r}" for p, v in values.items())
    said = exc.message if (exc.key or "").startswith("sweep.axes") else \
        f"it makes {exc.key or 'the system'} invalid: {exc.message}"     # (an axis's own error names its key)
    return CoexploreError(f"the point {where}: {said}" + (f" (expected {exc.expected})" if exc.expected else ""))


def _measure(spec: SystemSpec, record: dict, settings: SweepSettings, out: Path, cache, progress: bool) -> None:
    """Build, map, schedule and measure the point of `record` (filled in place)."""
    from coexplore.system.from_system import system_job_table, system_workloads
    from coexplore.system.schedule import search_schedule
    from coexplore.system.tables import layer_mapping_files, save_table
    folder = out / record["dir"]
    try:       # a combination not checked in advance (sweeps of over 256 points) may not build
        system: SystemArch = build_system(spec.at_point(record["values"]))
    except CoexploreError as exc:
        raise _invalid(record["values"], exc) from None
    area, macs, told = _write_cores(system, folder / "cores", settings.estimator)
    record.update(area_mm2=float(area), cores=system.spec.n_cores, macs=int(macs))   # known if mapping fails too
    record["warnings"] += told + _tables_for_one_rendering(system, record["values"])
    table, system = system_job_table(system, settings.workloads, settings.layer_mapper, settings.layer_budget,
                                     settings.layer_seed, cache=cache, progress=progress, workers=settings.workers)
    for name, notes in table.core_notes.items():       # how each design is priced, as schedule says it
        record["warnings"] += [f"core {name}: {w}" for w in notes]
    save_table(table, folder / "jobs.csv")
    write_texts(layer_mapping_files(table, folder))     # the layer mappings behind the job table
    bandwidth = system.offchip_bytes_per_cycle
    result = search_schedule(table, bandwidth, settings.searcher, settings.budget, settings.seed,
                             progress=progress, config=settings.config)
    clock = system.spec.clock_GHz
    data = result.to_json(table, clock)
    data.update(point=record["point"], values=record["values"])
    write_text(folder / "schedule.json", json.dumps(data, indent=1) + "\n")
    if settings.gantt is not None:
        settings.gantt(out, record, spec.name, table, data)
    record.update(point_metrics(makespan_cycles=result.makespan, energy_pJ=result.energy, clock_GHz=clock,
                                area_mm2=area, inferences=len({j.dnn for j in table.jobs}),
                                cores=table.num_cores, macs=macs, jobs=table.num_jobs,
                                offchip_bytes_per_cycle=bandwidth,
                                operations=sum(layer.total_macs for w in system_workloads(system, settings.workloads)
                                               for layer in w.layers)),
                  lower_bound_cycles=float(result.lower_bound))


def _tables_for_one_rendering(system: SystemArch, values: dict) -> list[str]:
    """A template core of the user's own whose names the sweep changes, priced by a table given or
    beside it, or a core whose architecture file the sweep changes, priced by the table its `ert:` key
    gives: one table for every design (a buffer's depth swept, its energy and area not)."""
    from coexplore.arch.file_core import FileCore
    out = []
    for name, core in system.cores.items():
        swept = sorted(p for p in values if p.removeprefix("system.").startswith(f"cores.{name}.var."))
        files = any(p.removeprefix("system.") == f"cores.{name}.arch" for p in values)
        if not (swept or files) or not isinstance(core, FileCore):
            continue
        ert, art, _ = core.tables(price=False)
        given = [str(t[1]) if t[0] == "copied" else "the ERT: inside it" for t in (ert, art) if t is not None]
        if given and files and core.ert_file is not None:
            out.append(f"core {name}: the sweep changes its architecture file, but {' and '.join(given)} "
                       f"(its ert: key) price{'s' if len(given) == 1 else ''} every file as given (made for one "
                       "design: another buffer size or array changes no energy or area); put each file's ERT/ART "
                       "beside it and leave out ert: to have each point priced")
        elif given and swept:
            out.append(f"core {name}: the sweep changes its template's names ({', '.join(swept)}), but "
                       f"{' and '.join(given)} price{'s' if len(given) == 1 else ''} every point as given (made for "
                       "one rendering: a depth or width swept changes no energy or area); leave no ERT/ART beside "
                       "the template to have each point priced")
    return out


def _write_cores(system: SystemArch, folder: Path, estimator: str) -> tuple[float, int, list[str]]:
    """Each core design's Timeloop files and ERT/ART into folder/<core>/; the system's on-chip area
    (mm^2, every core copy), its MACs and what pricing warned."""
    from coexplore.arch.file_core import FileCore
    area, macs, said = 0.0, 0, []
    for name, core in system.cores.items():
        core.write(folder / name)
        _, told = write_core_tables(folder / name, core, estimator)
        if isinstance(core, FileCore):            # what reading its architecture file warned of
            told = [f"{core.arch_file}: {w}" for w in core.architecture.warnings] + list(told)
        said += [f"core {name}: {w}" for w in told]
        copies = system.spec.core(name).count
        area += copies * art_area_mm2(read_art(folder / name / "ART.yaml"))
        per_copy = core.architecture.compute.instances if isinstance(core, FileCore) else core.params.macs
        macs += copies * per_copy
    return area, macs, said


def run_sweep(spec: SystemSpec, settings: SweepSettings, store: SweepStore, cache=None,
              progress: bool = False, on_point=None) -> list[dict]:
    """Every point of `spec`'s sweep not yet in `store`, in sweep order (last axis fastest); each
    stored as it ends and handed to `on_point(record)`. With `settings.workers` > 1 the layers of all
    the points are mapped first (each distinct core design once, into the cache) and then the points
    run in that many processes; with `settings.ray`, both as tasks on the Ray cluster (see
    `_points_on_ray`). The same records as one process. Returns every point's record. `spec` may be
    a system YAML's path."""
    if isinstance(spec, (str, Path)):
        from coexplore.spec.system import load_system
        spec = load_system(spec)
    for name, value, kind, made in (("spec", spec, SystemSpec, "load_system(path)"),
                                    ("settings", settings, SweepSettings, "SweepSettings(...)"),
                                    ("store", store, SweepStore, "SweepStore(folder, key)")):
        if not isinstance(value, kind):
            raise CoexploreError(f"got {type(value).__name__} {value!r}"[:120], key=name,
                                 expected=f"a {kind.__name__}: {made}")
    if store.others:
        raise CoexploreError(f"holds {store.others} points of another sweep run (another key)", file=str(store.path),
                             expected="a folder of this run, or store.drop_others() / store.clear() first")
    points = spec.sweep_points()
    for i, rec in store.records.items():        # the key is the caller's: a point of another sweep is refused
        if i >= len(points) or rec.get("values", points[i]) != json.loads(json.dumps(points[i])):
            raise CoexploreError(f"holds point {rec.get('point')} with values {rec.get('values')}, which is not this "
                                 f"sweep's point {i}" + (f" ({points[i]})" if i < len(points) else "")
                                 + ": another sweep's points under the same key", file=str(store.path),
                                 expected="a key naming this sweep and its settings (e.g. a hash of them), or "
                                          "store.clear() first")
    # the workloads read once, here: a task (a process, a Ray node) is handed what the files say,
    # not their paths (a node may not see them, or see other files, or bundled ones, by those names)
    from coexplore.system.from_system import system_workloads
    settings = dataclasses.replace(settings, workloads=system_workloads(spec, settings.workloads))
    ids = point_ids(len(points))
    todo = [i for i in range(len(points)) if i not in store.records]
    bar = None
    parallel = (settings.workers > 1 and len(todo) > 1) or (settings.ray and bool(todo))
    entries: dict = {}                          # the layers' cache records, for the points' Ray tasks

    def done(rec: dict) -> None:
        store.add(rec)
        if on_point is not None:
            on_point(store.records[rec["index"]])
        if bar is not None:
            bar.update(1)
    try:
        if parallel and cache is not None:      # before the points' bar: the long part of a cold sweep
            from coexplore.system.from_system import map_layers
            map_layers(_buildable(spec, [points[i] for i in todo]), settings.workloads,
                       settings.layer_mapper, settings.layer_budget, settings.layer_seed, cache=cache,
                       progress=progress, workers=settings.workers, ray=settings.ray,
                       entries=entries if settings.ray else None)
        if progress:
            from coexplore.progress import progress_bar
            bar = progress_bar(total=len(points), initial=len(points) - len(todo), desc="sweep points",
                               unit="point")
        if parallel and settings.ray:
            _points_on_ray(spec, [(i, ids[i], points[i]) for i in todo], settings, store.out, cache, entries, done)
        elif parallel:
            _points_in_parallel(spec, [(i, ids[i], points[i]) for i in todo], settings, store.out, cache, done)
        else:
            _points_in_turn(spec, [(i, ids[i], points[i]) for i in todo], settings, store.out, cache, progress, done)
    finally:
        if bar is not None:
            bar.close()
    return store.ordered()


def _points_in_turn(spec: SystemSpec, todo: list, settings: SweepSettings, out: Path, cache, progress: bool,
                    done) -> None:
    """Run the points `todo` = [(index, id, values)] one after another in this process. A first stop
    (Ctrl-C, SIGTERM) ends the sweep after the point being run: its searches stop after their batch
    (the point then unfinished, not recorded), or, if it came during a search's last batch or between
    searches, the point ends and is recorded and the sweep stops there (KeyboardInterrupt)."""
    from coexplore.stops import DeferredInterrupt
    with DeferredInterrupt(say=True, doing="the batch being evaluated (the point being run is kept if that was its "
                                           "last search's last batch; else a rerun runs it again)") as guard:
        for n, (i, pid, values) in enumerate(todo):
            done(run_point(spec, i, pid, values, settings, out, cache=cache, progress=progress))
            if guard.asked and n + 1 < len(todo):
                raise KeyboardInterrupt


def _buildable(spec: SystemSpec, points: list[dict]) -> list[SystemArch]:
    """The systems of the points that build (one that does not is a failed point when it runs)."""
    out = []
    for values in points:
        try:
            out.append(build_system(spec.at_point(values)))
        except CoexploreError:
            continue
    return out


def _points_in_parallel(spec: SystemSpec, todo: list, settings: SweepSettings, out: Path, cache, done) -> None:
    """Run the points `todo` = [(index, id, values)] in `settings.workers` processes, each point's
    layers in its own process (mapped before when there is a cache); `done(record)` as each ends."""
    import dataclasses

    from coexplore.workers.processes import in_processes
    one = dataclasses.replace(settings, workers=1)
    cache_path = None if cache is None else str(cache.path)
    tasks = [(spec, i, pid, values, one, str(out), cache_path) for i, pid, values in todo]
    ended = set()
    try:
        for rec, error in in_processes(_point_in_worker, tasks, settings.workers):
            if error is not None:           # bad input found in a worker: said as in one process
                _drop_unfinished(out, [pid for _, pid, _ in todo if pid not in ended])
                raise CoexploreError.from_parts(error)
            ended.add(rec["point"])
            done(rec)
    except KeyboardInterrupt:               # stopped (the workers are gone): no half-written point stays
        _drop_unfinished(out, [pid for _, pid, _ in todo if pid not in ended], keep_empty=True)
        raise


def _drop_unfinished(out: Path, pids: list[str], keep_empty: bool = False) -> None:
    """The folders of points stopped before they ended (by a stop, or another point's bad input:
    their workers are gone, or never wrote a record), with a stopped file move's temporary folder,
    and points/ if that leaves it empty (unless `keep_empty`): as one process leaves the result folder."""
    import contextlib
    import shutil
    for pid in pids:
        shutil.rmtree(out / "points" / pid, ignore_errors=True)
        shutil.rmtree(out / "points" / f".{pid}.part", ignore_errors=True)
    if not keep_empty:
        with contextlib.suppress(OSError):
            (out / "points").rmdir()


def _point_in_worker(task) -> tuple:
    """One point in a worker process: (record, None), or (None, the CoexploreError's parts)."""
    from coexplore.model.cache import ResultCache
    spec, index, pid, values, settings, out, cache_path = task
    warnings.simplefilter("ignore")       # what the point warns of is in its record
    cache = ResultCache(cache_path) if cache_path is not None else None
    try:
        return run_point(spec, index, pid, values, settings, Path(out), cache=cache), None
    except CoexploreError as exc:
        return None, exc.parts()
    finally:
        if cache is not None:
            cache.close()


def _points_on_ray(spec: SystemSpec, todo: list, settings: SweepSettings, out: Path, cache, entries: dict,
                   done) -> None:
    """Run the points `todo` = [(index, id, values)] as Ray tasks. A task gets the layers' cache
    records (`entries`, one object for all) and runs its point in a folder of its own node; its
    record, files and cache use (new entries, hits and misses) come back, and are written here: the
    cache and the result folder have one writer, whatever the nodes can reach. `done(record)` as each ends."""
    import dataclasses

    from coexplore.workers.ray_tasks import on_ray
    one = dataclasses.replace(settings, workers=1, ray=False)
    tasks = [(spec, i, pid, values, one) for i, pid, values in todo]
    for _, (rec, files, delta, error) in on_ray(_point_on_ray, tasks, shared=entries, limit=settings.workers or None):
        take_over(cache, delta)
        if error is not None:
            _drop_unfinished(out, [])   # (a task's files never reach this folder before it ends well)
            raise CoexploreError.from_parts(error)
        _put_files(out / rec["dir"], files)
        done(rec)


def _point_on_ray(task, entries: dict) -> tuple:
    """One point as a Ray task, in a temporary folder: (record, {path in its folder: bytes}, its cache's
    `delta()`, None), or (None, {}, delta, the CoexploreError's parts)."""
    from coexplore.model.cache import MemoryCache
    from coexplore.workers.ray_tasks import scratch_folder
    spec, index, pid, values, settings = task
    warnings.simplefilter("ignore")       # what the point warns of is in its record
    cache = MemoryCache(entries)
    with scratch_folder() as tmp:
        try:
            rec = run_point(spec, index, pid, values, settings, Path(tmp), cache=cache)
        except CoexploreError as exc:
            return None, {}, cache.delta(), exc.parts()
        folder = Path(tmp) / rec["dir"]
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    return rec, files, cache.delta(), None


def _put_files(folder: Path, files: dict) -> None:
    """A point's files into `folder`, replacing what was there: written beside it, then renamed, so
    a stop leaves either the old folder or the whole new one."""
    import shutil
    part = folder.with_name(f".{folder.name}.part")
    shutil.rmtree(part, ignore_errors=True)
    if not files:                         # (a point that failed before writing: no folder, as in one process)
        shutil.rmtree(folder, ignore_errors=True)
        return
    for name, data in files.items():
        path = part / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    part.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(folder, ignore_errors=True)
    part.rename(folder)
