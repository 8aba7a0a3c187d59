"""`coexplore schedule`: map a batch of jobs onto many cores sharing off-chip bandwidth.

    coexplore schedule --table TABLE.csv --bandwidth B [--searcher magma] [--budget N]
                       [--seed S] [--json] [--out DIR] [--no-plot]

TABLE.csv is a job table in the format of MAGMA's tables (lat_<core>/bw_<core> columns).
Writes DIR/schedule.json and DIR/gantt.png (Gantt chart + bandwidth timeline) and prints a
summary, or with --json the schedule as JSON on stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from coexplore.errors import CoexploreError


def register(subparsers) -> None:
    from coexplore.system.schedule import SEARCHERS

    p = subparsers.add_parser(
        "schedule", help="assign jobs to cores and order them (MAGMA and baselines)",
        description="Find the job-to-core assignment and per-core order with the smallest "
                    "makespan under shared off-chip bandwidth (MAGMA's model).")
    p.add_argument("--table", metavar="TABLE.csv",
                   help="job table CSV with lat_<core> and bw_<core> columns (MAGMA's format)")
    p.add_argument("--bandwidth", type=float, metavar="B",
                   help="system (off-chip) bandwidth in bytes/cycle")
    p.add_argument("--searcher", default="magma", metavar="S",
                   help="one of: " + ", ".join(SEARCHERS) + " (default magma)")
    p.add_argument("--budget", type=int, default=10_000, metavar="N",
                   help="evaluated candidates (samples); heuristics use 1 (default 10000)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default 0)")
    p.add_argument("--json", action="store_true",
                   help="print the schedule as JSON on stdout instead of the summary")
    p.add_argument("--out", metavar="DIR",
                   help="write schedule.json and gantt.png here "
                        "(default results/schedule/<table>-<searcher>-s<seed>)")
    p.add_argument("--no-plot", action="store_true", help="do not draw gantt.png")
    p.set_defaults(func=run)


def run(args) -> int:
    from coexplore.system.schedule import schedule_trace, search_schedule, summary_lines
    from coexplore.system.tables import load_table

    if not args.table:
        raise CoexploreError("no job table given", key="--table",
                             expected="--table TABLE.csv --bandwidth B")
    if args.bandwidth is None:
        raise CoexploreError("no system bandwidth given", key="--bandwidth",
                             expected="--bandwidth B (bytes/cycle, > 0)")
    table = load_table(args.table)
    result = search_schedule(table, args.bandwidth, args.searcher, args.budget, args.seed,
                             progress=sys.stderr.isatty() or not args.json)
    data = result.to_json(table)
    data["table"] = str(args.table)
    out = Path(args.out) if args.out else (
        Path("results") / "schedule" / f"{Path(args.table).stem}-{result.searcher}-s{args.seed}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "schedule.json").write_text(json.dumps(data, indent=1) + "\n")
    png = None
    if not args.no_plot:
        from coexplore.system.plot import plot_schedule

        png = plot_schedule(table, schedule_trace(table, result), out / "gantt.png",
                            title=f"{Path(args.table).name}: {result.searcher}, makespan "
                                  f"{result.makespan:.4g} cycles, BW {result.bandwidth:g} B/cycle")
    if args.json:
        print(json.dumps(data))
    else:
        print("\n".join(summary_lines(table, result)))
        print(f"schedule   {out / 'schedule.json'}" + (f"\ngantt      {png}" if png else ""))
    return 0
