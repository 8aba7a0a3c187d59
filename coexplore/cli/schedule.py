"""`coexplore schedule`: map a batch of jobs onto many cores sharing off-chip bandwidth.

    coexplore schedule SYSTEM.yaml [--workload problems/X.yaml ...] [--searcher magma] [--budget N]
                       [--seed S] [--layer-searcher marl] [--layer-budget N] [--layer-seed S]
                       [--json] [--out DIR]
    coexplore schedule --table TABLE.csv --bandwidth B [--searcher magma] [--budget N]
                       [--seed S] [--json] [--out DIR] [--no-plot]

SYSTEM.yaml describes the cores and the shared off-chip bandwidth (arch/simba_2x2.yaml); every
distinct layer of the workloads is mapped once per core design with the layer mapper (cached in
SQLite) to build the job table. TABLE.csv is a job table in the format of MAGMA's tables
(lat_<core>/bw_<core> columns).
Writes DIR/schedule.json, DIR/timeline.csv (per job: core, start, end) and DIR/gantt.png (Gantt
chart + bandwidth timeline) and prints a
summary, or with --json the schedule as JSON on stdout.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from coexplore.bundled import record_name, resolve
from coexplore.cli.paths import (show_progress, add_cache_option, command_record, add_restart_option, chosen_dir, count, default_run_dir, digests,
                                 interrupted_note, keeps_earlier, open_cache, processes, remove_empty_created,
                                 run_checkpoint, seed, table_run_name)
from coexplore.errors import CoexploreError
from coexplore.provenance import run_header
from coexplore.stops import finishing
from coexplore.search.layer import NoValidMapping
from coexplore.spec.yamlio import write_texts
from coexplore.system.from_system import LAYER_BUDGET
from coexplore.system.schedule import SCHEDULE_BUDGET


def register(subparsers) -> None:
    from coexplore.system.schedule import SEARCHERS

    p = subparsers.add_parser(
        "schedule", help="assign jobs to cores and order them (MAGMA and baselines)",
        description="Find the job-to-core assignment and per-core order with the smallest "
                    "makespan under shared off-chip bandwidth (MAGMA's model).")
    p.add_argument("system", nargs="?", metavar="SYSTEM.yaml",
                   help="system YAML (cores, shared DRAM bandwidth, workloads), or a bundled name "
                        "(simba, eyeriss, simba_2x2, hetero_2simba_2eyeriss)")
    add_job_table_options(p)
    p.add_argument("--jobs", type=processes, default=1, metavar="N",
                   help="processes mapping the layers for the job table at once (default 1; the same table "
                        "with any N)")
    add_cache_option(p, no_cache=True)
    p.add_argument("--table", metavar="TABLE.csv",
                   help="job table CSV with lat_<core> and bw_<core> columns (MAGMA's format)")
    p.add_argument("--bandwidth", type=float, metavar="B",
                   help="system (off-chip) bandwidth in bytes/cycle (with SYSTEM.yaml: overrides "
                        "the system's)")
    p.add_argument("--searcher", default=None, metavar="S",
                   help="one of: " + ", ".join(SEARCHERS) + ", or a system mapper YAML "
                        "(mappers/magma.yaml); default: the system's mappers.system, else magma")
    p.add_argument("--budget", type=count, default=None, metavar="N",
                   help="evaluated candidates (samples); heuristics use 1, except MET ones with tied "
                        "cores, which try random tie-breaks up to the budget (default: the mapper "
                        f"YAML's budget, else {SCHEDULE_BUDGET})")
    p.add_argument("--seed", type=seed, default=0, metavar="S", help="random seed (default 0)")
    p.add_argument("--json", action="store_true",
                   help="print the schedule as JSON on stdout instead of the summary")
    p.add_argument("--out", metavar="DIR",
                   help="write schedule.json, timeline.csv and gantt.png (and jobs.csv, the job table of a system) "
                        "here (default results/schedule/<table or system>-<searcher>-s<seed>, or "
                        "<...>-2, -3 ... when that folder holds another run's schedule)")
    p.add_argument("--no-plot", action="store_true", help="do not draw gantt.png")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_restart_option(p)
    p.set_defaults(func=run)


def add_job_table_options(p) -> None:
    """The options that make a system's job table (`schedule`, `online` and `sweep`): workloads and the layer mapper."""
    p.add_argument("--workload", action="append", metavar="WORKLOAD.yaml",
                   help="workload file(s) or bundled names (default: the system's workloads)")
    p.add_argument("--layer-searcher", default=None, metavar="S",
                   help="layer mapper for the job table (default: the system's mappers.layer, else marl)")
    p.add_argument("--layer-budget", type=count, default=None, metavar="N",
                   help=f"samples per (layer, core design) for the job table (default {LAYER_BUDGET})")
    p.add_argument("--layer-seed", type=seed, default=None, metavar="S",
                   help="seed of the layer mapper (default 0): the job table stays the same when "
                        "--seed changes, so seeds compare schedulers, not job tables")


def check_job_table_source(args, command: str, jobs_map_only: bool = True) -> None:
    """SYSTEM.yaml (a bundled name made a path) or --table with --bandwidth, not both; the options that
    build a system's job table only with SYSTEM.yaml (--jobs too when `jobs_map_only`); --bandwidth > 0."""
    from coexplore.system.evaluator import check_bandwidth
    if args.system and args.table:
        raise CoexploreError("give either SYSTEM.yaml or --table, not both", key="--table",
                             expected=f"coexplore {command} SYSTEM.yaml ... or coexplore {command} --table T.csv ...")
    if not args.system and not args.table:
        raise CoexploreError("no system or job table given", key="SYSTEM.yaml",
                             expected="SYSTEM.yaml, or --table TABLE.csv --bandwidth B")
    if args.table:
        for opt, given in (("--workload", args.workload), ("--layer-searcher", args.layer_searcher),
                           ("--layer-budget", args.layer_budget), ("--layer-seed", args.layer_seed),
                           ("--jobs", args.jobs if args.jobs != 1 and jobs_map_only else None),
                           ("--cache", getattr(args, "cache", None)),      # (the layers' mappings: none here)
                           ("--no-cache", True if getattr(args, "no_cache", False) else None)):
            if given is not None:
                raise CoexploreError("only used to build the job table of a system YAML", key=opt,
                                     expected=f"no {opt} with --table (the table is given)")
        if args.bandwidth is None:
            raise CoexploreError("no system bandwidth given", key="--bandwidth",
                                 expected="--bandwidth B (bytes/cycle, > 0)")
    else:
        args.system = str(resolve("arch", args.system))   # a bundled system name such as `simba_2x2`
    if args.bandwidth is not None:
        try:
            check_bandwidth(args.bandwidth)
        except CoexploreError as exc:
            exc.key, exc.option = "--bandwidth", None
            raise
        from coexplore.spec.system import PLAUSIBLE_GBPS
        if args.bandwidth > PLAUSIBLE_GBPS[1]:      # bytes/cycle: even at 1 GHz more than any DRAM gives
            print(f"coexplore {command}: warning: --bandwidth {args.bandwidth:g} bytes/cycle is more than "
                  f"{PLAUSIBLE_GBPS[1]:,.0f} GB/s at 1 GHz: is it in another unit (bytes/s, GB/s)?", file=sys.stderr)


def bandwidth_given(exc: CoexploreError, args) -> CoexploreError:
    """An error about the system bandwidth (key 'bandwidth') said where it was given: --bandwidth,
    or the system file's dram bandwidth."""
    if exc.key == "bandwidth" and exc.file is None:
        if args.bandwidth is not None:
            exc.option = "--bandwidth"
        elif args.system:
            exc.file, exc.key, exc.option = str(args.system), "system.dram.bandwidth_GBps", None
    return exc


def load_table_option(path: str):
    """The --table job table; a file that cannot be read is said with the option's name."""
    from coexplore.system.tables import load_table
    try:
        return load_table(path)
    except CoexploreError as exc:
        if exc.key is None:
            exc.key = "--table"
        raise


def run(args) -> int:
    check_job_table_source(args, "schedule")
    progress = show_progress(args)
    # everything that can be wrong is checked before the (possibly long) job-table step
    mapper = system_mapper_option(args)
    budget = schedule_budget(args, mapper)
    if budget < 1:
        raise CoexploreError(f"got {budget}", key="--budget", expected="an integer >= 1")
    if args.table:            # checked before the output folder is chosen (and announced)
        table, bandwidth = load_table_option(args.table), args.bandwidth
    else:                     # so are the system's cores and its workloads
        from coexplore.arch.system import load_system_arch
        from coexplore.system.from_system import core_models, system_workloads
        system = load_system_arch(args.system)
        system_workloads(system, args.workload)
        core_models(system)
        check_layer_options(args)
    run_desc = _run_description(args, mapper, budget)
    out = _out_dir(args, mapper, run_desc)
    clock = None                                # GHz: the system's (a table has no clock)
    if args.system:
        try:
            table, bandwidth, clock = system_table(args, progress)
        except NoValidMapping as exc:    # a failed layer search, not bad input: exit 1, as `coexplore map`
            print(f"coexplore schedule: {exc.format(cli=True)}", file=sys.stderr)
            remove_empty_created()
            return 1
    checkpoint = run_checkpoint(out, run_desc, "schedule", args.restart)
    # a Ctrl-C after the search (lower bound, writing, plotting) waits for the schedule to be written
    with finishing("the schedule is written", hold_after_stop=True) as guard:
        code = _search_and_write(args, table, bandwidth, clock, mapper, budget, run_desc, out, checkpoint, progress)
    if guard.asked and code == 0:
        print("coexplore schedule: the stop came after the search had finished; the complete schedule "
              f"is in {out / 'schedule.json'}", file=sys.stderr)
    return code


def _search_and_write(args, table, bandwidth, clock: float | None, mapper, budget: int, run_desc: dict,
                      out: Path, checkpoint, progress: bool) -> int:
    """The search, then schedule.json, gantt.png and the summary; the exit code (130: interrupted)."""
    from coexplore.stops import holding_stops
    from coexplore.system.schedule import ScheduleInterrupted, schedule_trace, search_schedule, summary_lines
    from coexplore.system.tables import MAPPINGS, layer_mapping_files, table_csv

    _seed_note(args, table, mapper.searcher)
    stop_now = False          # a stop-at-once while the result was made: it is written, no chart
    try:
        result = search_schedule(table, bandwidth, mapper.searcher, budget, args.seed, progress=progress,
                                 config=mapper.config, checkpoint=checkpoint)
    except ScheduleInterrupted as exc:   # Ctrl-C: write the best schedule so far, then exit 130
        result = exc.result
        stop_now = exc.stop_now
        if result.interrupted and keeps_earlier(out / "schedule.json", run_desc, result.samples, "schedule",
                                                checkpoint):
            if args.json:             # the schedule kept is this run's best: a script gets it as usual
                print(json.dumps(json.loads((out / "schedule.json").read_text())))
            return 130
    except KeyboardInterrupt:
        interrupted_note("schedule", checkpoint)
        raise
    except CoexploreError as exc:
        raise bandwidth_given(exc.of_mapper_file(mapper.file), args)   # (a pop_size the table finds too large)
    with holding_stops() as hold:     # a second Ctrl-C here still leaves schedule.json and timeline.csv
        data = result.to_json(table, clock)
        data["table" if args.table else "system"] = str(args.table or args.system)
        data["run"] = run_desc
        data.update(command_record())
        if args.system:
            data["job_table"] = str(out / "jobs.csv")
        files = {out / "timeline.csv": _timeline_csv(table, data)}
        if args.system:
            files[out / "jobs.csv"] = table_csv(table)      # the job table the schedule is for
            files.update(layer_mapping_files(table, out))   # and the layer mappings behind it
            data["mappings"] = str(out / MAPPINGS)
        files[out / "schedule.json"] = json.dumps(data, indent=1) + "\n"     # the record last
        if (out / MAPPINGS).is_dir():     # an earlier run's mappings would not all match this table
            shutil.rmtree(out / MAPPINGS)
        write_texts(files)                # together: the folder never mixes two runs' files
        if not result.interrupted:
            checkpoint.discard()          # the schedule is stored: nothing to resume
        stale = out / "jobs.csv"              # another run's job table would not match this schedule
        if args.table and stale.exists() and stale.resolve() != Path(args.table).resolve():
            stale.unlink()
    stop_now = stop_now or hold.stop_now
    png = None
    if not (args.no_plot or stop_now):
        from coexplore.report.schedule_plot import plot_schedule

        png = plot_schedule(table, schedule_trace(table, result), out / "gantt.png",
                            title=f"{Path(args.table or args.system).name}: {result.searcher}, makespan "
                                  f"{result.makespan:.4g} cycles, BW {result.bandwidth:g} B/cycle")
    elif (out / "gantt.png").exists():
        (out / "gantt.png").unlink()         # an earlier run's chart would not match this schedule
    if args.json:
        print(json.dumps(data))
    else:
        print("\n".join(summary_lines(table, result, clock)))
        if result.interrupted:
            print(f"interrupted after {result.samples:,} of {budget:,} samples: this is the best schedule so far")
        print(f"schedule   {out / 'schedule.json'}\ntimeline   {out / 'timeline.csv'}"
              + (f"\njob table  {out / 'jobs.csv'}" if args.system else "")
              + (f"\ngantt      {png}" if png else ""))
    if result.interrupted:
        print(f"coexplore schedule: interrupted after {result.samples:,} of {budget:,} samples; "
              f"wrote the best schedule so far to {out / 'schedule.json'}", file=sys.stderr)
        interrupted_note("schedule", checkpoint)
        return 130
    if stop_now:
        print(f"coexplore schedule: stopped after the search had ended: the complete schedule is in "
              f"{out / 'schedule.json'}" + ("" if args.no_plot else " (no gantt.png)"), file=sys.stderr)
        return 130
    return 0


def _run_description(args, mapper, budget: int) -> dict:
    """Everything the schedule depends on, written into schedule.json (and compared with an
    existing default output folder before reusing it)."""
    from coexplore.system.magma import MagmaConfig
    from coexplore.system.schedule import config_record
    config = mapper.config if mapper.config is not None else MagmaConfig() if mapper.searcher == "magma" else \
        MagmaConfig.original() if mapper.searcher == "magma-original" else None    # (the settings it runs with)
    desc = {**run_header(), "searcher": mapper.searcher, "searcher_file": mapper.file,
            "config": config_record(config),
            "budget": budget, "seed": args.seed, "bandwidth": args.bandwidth}
    if args.table:
        desc["table"] = str(Path(args.table).resolve())
    else:
        desc.update(system=record_name(resolve("arch", args.system)),      # (a bundled name: its file)
                    workloads=[record_name(resolve("problems", w)) for w in args.workload] if args.workload else None,
                    layer_searcher=args.layer_searcher, layer_budget=job_table_budget(args),
                    layer_seed=_layer_seed(args))
    files = [args.table, mapper.file]
    if args.system:
        files += system_input_files(args.system, args.workload, args.layer_searcher)
    desc["inputs_sha256"] = digests(*[f for f in files if f])
    return desc


def system_input_files(system: str, workloads: list | None, layer_searcher: str | None) -> list:
    """The files a system's job table is made from: the system YAML and what it points to
    (workloads, bundled names too; mapper files; own cores' files and a template's includes)."""
    from coexplore.arch.file_core import FileCore
    from coexplore.spec import template
    from coexplore.spec.system import load_system
    spec = load_system(system)
    files = [system, *([resolve("problems", w) for w in workloads] if workloads else spec.workloads)]
    files += list(spec.mappers.values())
    own = [FileCore.of(c) for c in spec.cores if c.template is None]
    files += [p for core in own for p in core.files()]
    for core in own:
        core.architecture                               # (rendered: its includes recorded)
    files += template.files_read()
    if layer_searcher:
        files.append(resolve("mappers", layer_searcher))
    return files


def _seed_note(args, table, searcher: str) -> None:
    """Say that --seed changes nothing for a heuristic with one schedule (all but MET with tied cores)."""
    from coexplore.system.heuristics import HeuristicSearcher
    from coexplore.system.schedule import HEURISTICS
    if args.seed != 0 and searcher.upper() in HEURISTICS and HeuristicSearcher(table.latency, searcher).size == 1:
        print(f"coexplore schedule: note: {searcher} gives one schedule, with no random choice on this table: "
              f"--seed {args.seed} changes nothing", file=sys.stderr)


def _out_dir(args, mapper, run_desc: dict) -> Path:
    """--out, else results/schedule/<table or system>-<searcher>-s<seed> (numbered when it holds
    another run's schedule)."""
    if args.out:
        given = Path(args.out) / "jobs.csv"       # written (a system's table), or removed unless it is the --table
        touched = args.system or (given.exists() and given.resolve() != Path(args.table).resolve())
        return chosen_dir(args.out, "schedule.json", run_desc, "schedule", writes=("jobs.csv",) if touched else (),
                          also_writes=("timeline.csv", "gantt.png"))
    name = table_run_name(args.table) if args.table else Path(args.system).stem
    label = Path(mapper.file).stem if mapper.file else mapper.searcher
    return default_run_dir(Path("results") / "schedule" / f"{name}-{label}-s{args.seed}", "schedule.json", run_desc)


def job_table_budget(args) -> int:
    """--layer-budget, else the job tables' default."""
    return LAYER_BUDGET if args.layer_budget is None else args.layer_budget


def schedule_budget(args, mapper) -> int:
    """--budget, else the system mapper's, else the default."""
    return args.budget if args.budget is not None else (mapper.budget or SCHEDULE_BUDGET)


def _layer_seed(args) -> int:
    return 0 if args.layer_seed is None else args.layer_seed


def _timeline_csv(table, data: dict) -> str:
    """One row per job, by start time: its DNN, layer, core and start / end (cycles)."""
    import csv
    import io
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["job", "dnn", "layer", "core", "start_cycle", "end_cycle", "priority"])
    rows = sorted(range(table.num_jobs), key=lambda j: (data["start"][j], j))
    for j in rows:
        job = table.jobs[j]
        w.writerow([job.name, job.dnn, job.layer, data["core"][j], float(data["start"][j]),
                    float(data["end"][j]), float(data["priority"][j])])     # shortest exact text
    return buf.getvalue()


def system_mapper_option(args):
    """--searcher (a name or a mapper YAML), else the system YAML's mappers.system, else magma."""
    from coexplore.system.schedule import load_system_mapper, system_mapper

    if args.searcher:
        if args.searcher.endswith((".yaml", ".yml")) or Path(args.searcher).exists():   # a folder: read_text says so
            return load_system_mapper(resolve("mappers", args.searcher))     # mappers/magma.yaml anywhere
        return system_mapper(args.searcher)
    if args.system:
        from coexplore.spec.system import load_system
        path = load_system(args.system).mappers.get("system")
        if path is not None:
            if not Path(path).is_file():
                raise CoexploreError(f"no mapper file {path}", file=args.system, key="mappers.system",
                                     expected="the path of a system mapper YAML (e.g. ../mappers/magma.yaml), "
                                              "relative to the system YAML")
            return load_system_mapper(path)
    return system_mapper("magma")


LARGE_TABLE = 2_000   # jobs from which schedule says how many there are, per DNN, before searching


def layer_mapper_option(args):
    """--layer-searcher as a layer MapperSpec (a name or a mapper YAML), None when not given."""
    if not args.layer_searcher:
        return None
    from coexplore.search.registry import load_mapper
    try:
        return load_mapper(args.layer_searcher)
    except CoexploreError as exc:
        if exc.key == "searcher":
            exc.key, exc.option = "--layer-searcher", None
        raise


def check_layer_options(args):
    """--layer-budget and --layer-searcher checked (bad ones refused); the layer MapperSpec or None.
    Called before an output folder is chosen, and again where the job table is made."""
    if job_table_budget(args) < 1:
        raise CoexploreError(f"bad layer budget {args.layer_budget}", key="--layer-budget",
                             expected="an integer >= 1")
    return layer_mapper_option(args)


def system_table(args, progress: bool, command: str = "schedule"):
    """Job table of a system YAML + workloads, through the layer mapper and the cache (the options of
    `add_job_table_options`, --jobs, --cache / --no-cache and --bandwidth); notes name `command`."""
    import contextlib

    from coexplore.stops import DeferredInterrupt
    from coexplore.system.from_system import system_job_table
    from coexplore.workers.processes import WorkerDied

    spec = check_layer_options(args)
    cache = None
    if not args.no_cache:
        cache = open_cache(args.cache, command)
    # in one process a first stop ends the layer search after its batch, and the job table with it, even
    # when it came in a search's last batch (that search ends complete; the next one stops); processes
    # are stopped at once (the layers they finished are cached)
    guard = DeferredInterrupt(say=True, doing="the batch being evaluated") if args.jobs <= 1 else None
    try:
        with guard or contextlib.nullcontext():
            table, system = system_job_table(args.system, args.workload, spec, job_table_budget(args),
                                             _layer_seed(args), cache=cache, progress=progress, workers=args.jobs)
        if guard is not None and guard.asked:
            raise KeyboardInterrupt
    except (KeyboardInterrupt, WorkerDied) as stop:
        kept = (f"the layers mapped so far are in the cache ({cache.path}) and a rerun reuses them"
                if cache is not None else "with --no-cache a rerun maps every layer again")
        what = "interrupted" if isinstance(stop, KeyboardInterrupt) else "stopped (a worker process died)"
        print(f"\ncoexplore {command}: {what} while mapping the layers for the job table; {kept}", file=sys.stderr)
        raise
    finally:
        if cache is not None:
            cache.close()
    for name, notes in table.core_notes.items():
        for w in notes:
            print(f"coexplore: warning: {args.system} core {name}: {w}", file=sys.stderr)
    done = table.layer_searches
    if done:                              # where the job table's layer mappings came from
        print(f"coexplore {command}: job table from {done['cached'] + done['searched']} (layer, core design) "
              f"searches: {done['cached']} read from the cache" + (f" {cache.path}" if cache is not None else "")
              + f", {done['searched']} run" + (" (--no-cache)" if cache is None else "")
              + (f", of which {done['failed']} found no valid mapping (not cached: searched on every run)"
                 if done["failed"] else ""), file=sys.stderr)
    if table.num_jobs >= LARGE_TABLE and command == "schedule":    # e.g. MobileNet-V2's depthwise layers: one job per channel
        per_dnn: dict = {}
        for job in table.jobs:
            per_dnn[job.dnn] = per_dnn.get(job.dnn, 0) + 1
        print(f"coexplore {command}: note: {table.num_jobs:,} jobs to schedule ("
              + ", ".join(f"{d} {n:,}" for d, n in sorted(per_dnn.items(), key=lambda kv: -kv[1]))
              + "): each search sample simulates them all", file=sys.stderr)
    bandwidth = args.bandwidth if args.bandwidth is not None else system.offchip_bytes_per_cycle
    return table, bandwidth, system.spec.clock_GHz
