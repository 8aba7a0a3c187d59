"""`coexplore schedule`: map a batch of jobs onto many cores sharing off-chip bandwidth.

    coexplore schedule SYSTEM.yaml [--workload problems/X.yaml ...] [--searcher magma] [--budget N]
                       [--seed S] [--layer-searcher marl] [--layer-budget N] [--json] [--out DIR]
    coexplore schedule --table TABLE.csv --bandwidth B [--searcher magma] [--budget N]
                       [--seed S] [--json] [--out DIR] [--no-plot]

SYSTEM.yaml describes the cores and the shared off-chip bandwidth (arch/simba_2x2.yaml); every
distinct layer of the workloads is mapped once per core design with the layer mapper (cached in
SQLite) to build the job table. TABLE.csv is a job table in the format of MAGMA's tables
(lat_<core>/bw_<core> columns).
Writes DIR/schedule.json and DIR/gantt.png (Gantt chart + bandwidth timeline) and prints a
summary, or with --json the schedule as JSON on stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from coexplore.bundled import resolve
from coexplore.cli.paths import count, output_dir, seed
from coexplore.errors import CoexploreError


def register(subparsers) -> None:
    from coexplore.system.schedule import SEARCHERS

    p = subparsers.add_parser(
        "schedule", help="assign jobs to cores and order them (MAGMA and baselines)",
        description="Find the job-to-core assignment and per-core order with the smallest "
                    "makespan under shared off-chip bandwidth (MAGMA's model).")
    p.add_argument("system", nargs="?", metavar="SYSTEM.yaml",
                   help="system YAML (cores, shared DRAM bandwidth, workloads), or a bundled name "
                        "(simba, eyeriss, simba_2x2, hetero_2simba_2eyeriss)")
    p.add_argument("--workload", action="append", metavar="WORKLOAD.yaml",
                   help="workload file(s) (default: the system's workloads)")
    p.add_argument("--layer-searcher", default=None, metavar="S",
                   help="layer mapper for the job table (default: the system's mappers.layer, else marl)")
    p.add_argument("--layer-budget", type=count, default=2000, metavar="N",
                   help="samples per (layer, core design) for the job table (default 2000)")
    p.add_argument("--cache", help="result cache (default results/cache.sqlite or $COEXPLORE_CACHE)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")
    p.add_argument("--table", metavar="TABLE.csv",
                   help="job table CSV with lat_<core> and bw_<core> columns (MAGMA's format)")
    p.add_argument("--bandwidth", type=float, metavar="B",
                   help="system (off-chip) bandwidth in bytes/cycle")
    p.add_argument("--searcher", default=None, metavar="S",
                   help="one of: " + ", ".join(SEARCHERS) + ", or a system mapper YAML "
                        "(mappers/magma.yaml); default: the system's mappers.system, else magma")
    p.add_argument("--budget", type=count, default=None, metavar="N",
                   help="evaluated candidates (samples); heuristics use 1 (default: the mapper "
                        "YAML's budget, else 10000)")
    p.add_argument("--seed", type=seed, default=0, metavar="S", help="random seed (default 0)")
    p.add_argument("--json", action="store_true",
                   help="print the schedule as JSON on stdout instead of the summary")
    p.add_argument("--out", metavar="DIR",
                   help="write schedule.json and gantt.png here "
                        "(default results/schedule/<table>-<searcher>-s<seed>)")
    p.add_argument("--no-plot", action="store_true", help="do not draw gantt.png")
    p.set_defaults(func=run)


def run(args) -> int:
    from coexplore.system.schedule import ScheduleInterrupted, schedule_trace, search_schedule, summary_lines
    from coexplore.system.tables import load_table

    if args.system and args.table:
        raise CoexploreError("give either SYSTEM.yaml or --table, not both", key="--table",
                             expected="coexplore schedule SYSTEM.yaml ... or coexplore schedule --table T.csv ...")
    if args.system:
        args.system = str(resolve("arch", args.system))   # a bundled system name such as `simba_2x2`
    progress = sys.stderr.isatty() or not args.json
    mapper = _system_mapper(args)          # before the (possibly long) job-table step
    if args.system:
        table, bandwidth, name = _system_table(args, progress)
    else:
        if not args.table:
            raise CoexploreError("no system or job table given", key="SYSTEM.yaml",
                                 expected="SYSTEM.yaml, or --table TABLE.csv --bandwidth B")
        if args.bandwidth is None:
            raise CoexploreError("no system bandwidth given", key="--bandwidth",
                                 expected="--bandwidth B (bytes/cycle, > 0)")
        table, bandwidth, name = load_table(args.table), args.bandwidth, Path(args.table).stem
    searcher = mapper.searcher
    budget = args.budget if args.budget is not None else (mapper.budget or 10_000)
    out = output_dir(args.out or Path("results") / "schedule" / f"{name}-{searcher}-s{args.seed}")
    try:
        result = search_schedule(table, bandwidth, searcher, budget, args.seed, progress=progress,
                                 config=mapper.config)
    except ScheduleInterrupted as exc:   # Ctrl-C: write the best schedule so far, then exit 130
        result = exc.result
    data = result.to_json(table)
    data["table" if args.table else "system"] = str(args.table or args.system)
    if args.system:
        data["jobs"] = [j.name for j in table.jobs]
        data["cores"] = list(table.cores)
    (out / "schedule.json").write_text(json.dumps(data, indent=1) + "\n")
    png = None
    if not args.no_plot:
        from coexplore.system.plot import plot_schedule

        png = plot_schedule(table, schedule_trace(table, result), out / "gantt.png",
                            title=f"{name}: {result.searcher}, makespan "
                                  f"{result.makespan:.4g} cycles, BW {result.bandwidth:g} B/cycle")
    if args.json:
        print(json.dumps(data))
    else:
        print("\n".join(summary_lines(table, result)))
        print(f"schedule   {out / 'schedule.json'}" + (f"\ngantt      {png}" if png else ""))
    if result.interrupted:
        print(f"coexplore schedule: interrupted after {result.samples:,} of {budget:,} samples; "
              f"wrote the best schedule so far to {out / 'schedule.json'}", file=sys.stderr)
        return 130
    return 0


def _system_mapper(args):
    """--searcher (a name or a mapper YAML), else the system YAML's mappers.system, else magma."""
    from coexplore.system.schedule import SEARCHERS, SystemMapperSpec, load_system_mapper

    if args.searcher:
        if args.searcher.endswith((".yaml", ".yml")) or Path(args.searcher).is_file():
            return load_system_mapper(args.searcher)
        if args.searcher.lower() not in SEARCHERS:
            raise CoexploreError(f"unknown searcher '{args.searcher}'", key="--searcher",
                                 expected="one of " + ", ".join(SEARCHERS) + ", or a mapper YAML")
        return SystemMapperSpec(args.searcher.lower())
    if args.system:
        from coexplore.spec.system import load_system
        path = load_system(args.system).mappers.get("system")
        if path is not None:
            return load_system_mapper(path)
    return SystemMapperSpec()


def _system_table(args, progress: bool):
    """Job table of a system YAML + workloads, through the layer mapper and the cache."""
    from coexplore.search import registry
    from coexplore.system.from_system import system_job_table

    if args.table is None and args.bandwidth is not None:
        pass  # --bandwidth overrides the system's off-chip bandwidth below
    if args.layer_budget < 1:
        raise CoexploreError(f"bad layer budget {args.layer_budget}", key="--layer-budget",
                             expected="an integer >= 1")
    spec = None
    if args.layer_searcher:
        from coexplore.cli.map import resolve_spec
        spec = resolve_spec(args.layer_searcher, None, None)
    cache = None
    if not args.no_cache:
        from coexplore.model.cache import ResultCache
        cache = ResultCache(args.cache)
    try:
        table, system = system_job_table(args.system, args.workload, spec, args.layer_budget, args.seed,
                                         cache=cache, progress=progress)
    finally:
        if cache is not None:
            cache.close()
    bandwidth = args.bandwidth if args.bandwidth is not None else system.offchip_bytes_per_cycle
    return table, bandwidth, Path(args.system).stem
