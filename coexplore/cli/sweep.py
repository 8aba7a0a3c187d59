"""`coexplore sweep`: a hardware design-space study of a system YAML.

    coexplore sweep SYSTEM.yaml [--workload problems/X.yaml ...] [--layer-searcher marl]
                    [--layer-budget N] [--layer-seed S] [--searcher magma] [--budget N] [--seed S]
                    [--jobs N] [--ray [ADDRESS]] [--cache PATH | --no-cache]
                    [--objectives latency,energy,area]
                    [--out DIR] [--restart] [--json] [--no-plot] [--no-progress]

For every point of the system's `sweep.axes` (their Cartesian product): map every distinct layer of
the workloads onto every core design (cached: points sharing a core design share its mappings),
schedule the jobs over the shared off-chip bandwidth, and measure latency, energy, EDP, area and
throughput. Writes DIR/points.jsonl (each point as it ends: a rerun resumes), points.csv,
pareto.csv, pareto.png, report.html and per point points/<id>/ (schedule.json, jobs.csv, gantt.png,
the cores' Timeloop YAMLs and ERT/ART).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from coexplore.bundled import record_name, resolve
from coexplore.cli.paths import (show_progress, add_cache_option, command_record, chosen_dir, count, default_run_dir, digests, open_cache,
                                 processes, run_key, seed)
from coexplore.errors import CoexploreError
from coexplore.provenance import run_header
from coexplore.report.html import digits_apart
from coexplore.spec.yamlio import write_text
from coexplore.system.schedule import SCHEDULE_BUDGET, config_record

RESULT = "sweep.json"
SWEEP_FILES = ("points.csv", "pareto.csv", "pareto.png", "report.html")   # written with sweep.json, at the end


def register(subparsers) -> None:
    from coexplore.sweep.metrics import OBJECTIVES
    from coexplore.system.schedule import SEARCHERS

    p = subparsers.add_parser(
        "sweep", help="design-space sweep of a system: every point mapped, scheduled, measured; Pareto fronts",
        description="Run every point of a system YAML's sweep axes: map the workloads' layers onto the cores, "
                    "schedule them over the shared off-chip bandwidth, and report latency, energy, EDP, area "
                    "and throughput with the Pareto front of the objectives.")
    p.add_argument("system", metavar="SYSTEM.yaml",
                   help="system YAML with sweep axes (arch/simba_2x2.yaml), or a bundled name (simba_2x2)")
    from coexplore.cli.schedule import add_job_table_options
    add_job_table_options(p)
    p.add_argument("--searcher", default=None, metavar="S",
                   help="system scheduler: one of " + ", ".join(SEARCHERS) + ", or a system mapper YAML; "
                        "default: the system's mappers.system, else magma")
    p.add_argument("--budget", type=count, default=None, metavar="N",
                   help=f"schedule samples per point (default: the mapper YAML's budget, else {SCHEDULE_BUDGET})")
    p.add_argument("--seed", type=seed, default=0, metavar="S", help="seed of the scheduler (default 0)")
    p.add_argument("--jobs", type=processes, default=None, metavar="N",
                   help="processes: the points' layers mapped N at a time, then the points run N at a time "
                        "(default 1; the same results with any N); with --ray, the Ray tasks in flight "
                        "(default: the cluster's CPUs)")
    # (const True, not "": argparse runs `type` on a text const, and "" is the empty address it refuses)
    p.add_argument("--ray", nargs="?", const=True, default=None, metavar="ADDRESS", type=_given_address,
                   help="run the layer searches and the points as Ray tasks (pip install 'coexplore[ray]'): "
                        "on the cluster at ADDRESS (HOST:6379, ray://HOST:10001, auto) or $RAY_ADDRESS, else "
                        "on a Ray started on this machine with --jobs CPUs; the same results as one process")
    add_cache_option(p, no_cache=True)
    p.add_argument("--objectives", metavar="A,B,...",
                   help="objectives of the Pareto front, from " + ", ".join(
                       f"{o.name} ({o.unit})" for o in OBJECTIVES.values()) +
                        " (default: the system's objectives, else latency,energy,area)")
    p.add_argument("--out", metavar="DIR",
                   help="result folder (default results/sweep/<system file's name>-s<seed>, or <...>-2, -3 ... "
                        "when that folder holds another run's sweep); a rerun of the same sweep resumes there")
    p.add_argument("--restart", action="store_true",
                   help="run every point again, even those an earlier run of this same sweep finished")
    p.add_argument("--json", action="store_true", help="print sweep.json on stdout instead of the summary")
    p.add_argument("--no-plot", action="store_true", help="no pareto.png and no per-point Gantt charts")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.ray is True:            # `--ray` alone: no address (a local Ray, or $RAY_ADDRESS's)
        args.ray = ""
    from coexplore.arch.system import load_system_arch
    from coexplore.cli.schedule import job_table_budget, layer_mapper_option, schedule_budget, system_mapper_option
    from coexplore.report.gantt import draw_gantt
    from coexplore.sweep.run import SweepSettings

    if args.ray is not None:
        from coexplore.workers.ray_tasks import require_ray
        require_ray()
    args.system = str(resolve("arch", args.system))
    system = load_system_arch(args.system)          # every point is checked to build before any work
    spec = system.spec
    objectives = _objectives(args, spec)
    mapper = system_mapper_option(args)
    budget = schedule_budget(args, mapper)
    layer_budget = job_table_budget(args)
    for opt, value in (("--budget", budget), ("--layer-budget", layer_budget)):
        if value < 1:
            raise CoexploreError(f"got {value}", key=opt, expected="an integer >= 1")
    from coexplore.search.registry import default_mapper
    from coexplore.system.from_system import system_layer_mapper, system_workloads
    layer_mapper = layer_mapper_option(args) or system_layer_mapper(system) or default_mapper()
    system_workloads(system, args.workload)         # read now: a bad workload is said before any work
    settings = SweepSettings(workloads=args.workload, layer_mapper=layer_mapper, layer_budget=layer_budget,
                             layer_seed=0 if args.layer_seed is None else args.layer_seed,
                             searcher=mapper.searcher, config=mapper.config, budget=budget, seed=args.seed,
                             workers=(args.jobs or 0) if args.ray is not None else (args.jobs or 1),
                             ray=args.ray is not None, gantt=None if args.no_plot else draw_gantt)
    run_desc = _run_description(args, mapper, settings, spec)
    cache = None if args.no_cache else open_cache(args.cache, "sweep")    # (a bad one said before Ray starts)
    try:
        if args.ray is not None:
            from coexplore.workers.ray_tasks import check_address
            check_address(args.ray or None)         # before the result folder: a bad address is said first
        return _sweep_into(args, spec, settings, run_desc, objectives, cache)
    finally:
        if cache is not None:
            cache.close()


def _sweep_into(args, spec, settings, run_desc: dict, objectives: list, cache) -> int:
    """Run the sweep into its result folder (chosen here) and write its tables and report."""
    if args.out and not args.restart:
        _refuse_other_runs_points(Path(args.out), run_desc)
    out = chosen_dir(args.out, RESULT, run_desc, "sweep", also_writes=SWEEP_FILES) if args.out else \
        default_run_dir(Path("results") / "sweep" / f"{Path(args.system).stem}-s{args.seed}", RESULT, run_desc)
    return _sweep_in(args, spec, settings, run_desc, objectives, out, cache)    # (the folder held: paths.hold)


def _sweep_in(args, spec, settings, run_desc: dict, objectives: list, out: Path, cache) -> int:
    """Run the sweep's points not yet in `out` (held by this process) and write its tables and report."""
    from coexplore.sweep.run import run_sweep
    from coexplore.sweep.store import SweepStore
    from coexplore.workers.processes import WorkerDied
    store = SweepStore(out, run_key(run_desc))
    if store.unsound and not args.restart:
        n = len(store.unsound)
        shown = ", ".join(store.unsound[:8]) + (f", ... ({n - 8} more)" if n > 8 else "")
        print(f"coexplore sweep: note: {out / 'points.jsonl'}: the line{'s' if n > 1 else ''} of {shown} "
              f"{'were' if n > 1 else 'was'} edited, or the point's folder is gone: {'they run' if n > 1 else 'it runs'} "
              "again", file=sys.stderr)
    store.clear() if args.restart else store.drop_others()
    store.drop_stale_points()
    points = spec.sweep_points()
    axes = list(spec.sweep_axes)
    progress = show_progress(args)
    done = len(store.records)
    print(f"coexplore sweep: {spec.name}: {len(points)} point{'s' if len(points) != 1 else ''}"
          + (f" ({' x '.join(str(len(spec.sweep_axes[a])) for a in axes)} values of {', '.join(axes)})" if axes
             else " (no sweep axes: the system as written)")
          + (f"; all done in {out}: nothing to run, the tables and report are written again" if done >= len(points)
             else f"; {done} already done in {out}, resuming" if done else ""), file=sys.stderr)
    try:
        import contextlib
        from coexplore.workers.ray_tasks import ray_session
        with ray_session(args.ray or None, args.jobs) if settings.ray else contextlib.nullcontext():
            records = run_sweep(spec, settings, store, cache=cache, progress=progress,
                                on_point=lambda rec: _tables(out, store.ordered(), axes, objectives))
    except (KeyboardInterrupt, WorkerDied) as stop:
        from coexplore.stops import holding_stops
        records = store.ordered()
        with holding_stops():             # a second stop does not cut the tables and report of the points done
            _finish(args, out, run_desc, spec, records, objectives, len(points), quiet=True)    # (none: 0 of N)
        mapped = "the layers mapped so far are in the cache" if cache is not None else "nothing is cached (--no-cache)"
        kept = (f"{len(records)} of {len(points)} points finished (in {out / 'points.jsonl'})" if records
                else f"no point of {len(points)} had finished")
        what = "interrupted" if isinstance(stop, KeyboardInterrupt) else stop.message
        print(("\n" if sys.stderr.isatty() else "") + f"coexplore sweep: {what}; {kept} and {mapped}: run the "
              "same command again to continue with the next point", file=sys.stderr)
        return 130 if isinstance(stop, KeyboardInterrupt) else 1
    from coexplore.stops import finishing
    with finishing("the sweep's tables and report are written") as guard:     # all points are stored
        code = _finish(args, out, run_desc, spec, records, objectives, len(points))
    if guard.asked:
        print(f"coexplore sweep: the stop came after the last point had ended; the complete sweep is in {out}",
              file=sys.stderr)
    return code


def _objectives(args, spec) -> list:
    from coexplore.spec.system import DEFAULT_OBJECTIVES, say_repeated_objective
    from coexplore.sweep.metrics import OBJECTIVES
    if args.objectives is None:
        names = list(spec.objectives or DEFAULT_OBJECTIVES)
    else:
        names = [n.strip() for n in args.objectives.split(",")]
        if not any(names):
            raise CoexploreError("no objective given", key="--objectives",
                                 expected="a comma-separated list of " + ", ".join(OBJECTIVES))
        if "" in names:                   # `latency,,area`: a typo, most likely
            raise CoexploreError(f"an empty item in {args.objectives!r}", key="--objectives",
                                 expected="a comma-separated list of " + ", ".join(OBJECTIVES) + ", none empty")
        for n in names:
            if n not in OBJECTIVES:
                raise CoexploreError(f"unknown objective {n!r}", key="--objectives",
                                     expected="a comma-separated list of " + ", ".join(OBJECTIVES))
        for i, n in enumerate(names):
            if n in names[:i]:
                say_repeated_objective(n, "--objectives")
    return [OBJECTIVES[n] for n in dict.fromkeys(names)]


def _given_address(text: str) -> str:
    """--ray's ADDRESS when one is written: not blank (`--ray "$HEAD"` with HEAD unset would start a
    local Ray without a word); `--ray` alone means a local one."""
    import argparse
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty address (an unset variable?); give HOST:PORT, ray://HOST:PORT "
                                         "or auto, or --ray alone for a Ray on this machine")
    if text.lower().endswith((".yaml", ".yml")):      # `sweep --ray system.yaml`: the system taken for the address
        raise argparse.ArgumentTypeError(f"{text!r} is a YAML file, not a Ray address: the optional ADDRESS takes "
                                         f"the word after --ray; write `coexplore sweep {text} --ray` (or --ray=ADDRESS)")
    return text


def _run_description(args, mapper, settings, spec) -> dict:
    """Everything a point's results depend on (the objectives only choose the front: not in it);
    `spec`: the system YAML as loaded."""
    from coexplore.cli.schedule import system_input_files
    return {**run_header(), "system": record_name(resolve("arch", args.system)),
            "workloads": [record_name(resolve("problems", w)) for w in args.workload] if args.workload
            else [str(w) for w in spec.workloads],
            "layer_mapper": settings.layer_mapper.to_dict(), "layer_budget": settings.layer_budget,
            "layer_seed": settings.layer_seed, "searcher": mapper.searcher, "searcher_file": mapper.file,
            "config": config_record(mapper.config),
            "budget": settings.budget, "seed": settings.seed,
            "inputs_sha256": {**digests(*[f for f in [mapper.file, *system_input_files(   # (the layer mapper: above)
                args.system, args.workload, None), *_own_core_inputs(spec)] if f]), **_system_content(args.system)}}


def _system_content(system) -> dict:
    """The system YAML's entry of the record: a digest of what it says, its `objectives` left out
    (they only choose the front), so new objectives or an edited comment reuse the points run."""
    import hashlib

    from coexplore.spec.yamlio import load_yaml
    path = resolve("arch", system)
    doc = load_yaml(path)
    if isinstance(doc, dict):
        doc = {k: v for k, v in doc.items() if k != "objectives"}
    text = json.dumps(doc, sort_keys=True, default=str)
    return {record_name(path): "content " + hashlib.sha256(text.encode()).hexdigest()}


def _own_core_inputs(spec) -> list:
    """Every file the own cores of every sweep point are read from (an axis may name other
    architecture files), their ERT and the ART.yaml that gives their area included."""
    from coexplore.arch.file_core import FileCore
    from coexplore.spec import template
    files = []
    for values in spec.sweep_points():
        try:
            point = spec.at_point(values)
        except CoexploreError:            # a point that does not build: failed when it runs
            continue
        for c in point.cores:
            if c.template is None:
                core = FileCore.of(c)
                core.architecture                       # (rendered: a template's includes recorded)
                files += core.inputs()
    return files + list(template.files_read())


def _refuse_other_runs_points(out: Path, run_desc: dict) -> None:
    """An --out folder holding points of another sweep run is refused (they may be hours of work):
    --restart replaces them."""
    from coexplore.cli.paths import differences
    from coexplore.sweep.store import SweepStore
    other = SweepStore(out, run_key(run_desc)).others if out.is_dir() else 0
    if not other:
        return
    try:
        earlier = json.loads((out / RESULT).read_text()).get("run")
    except (OSError, ValueError, AttributeError):
        earlier = None
    why = f" {differences(earlier, json.loads(json.dumps(run_desc, sort_keys=True)))}" if isinstance(earlier, dict) else ""
    raise CoexploreError(f"holds {other} point{'s' if other != 1 else ''} of another sweep run{why}", file=str(out),
                         key="--out", expected="--restart to replace them, another --out folder, or that run's "
                                               "command (with its inputs as they were) to continue it")


def _front(records: list[dict], objectives: list) -> list[bool]:
    from coexplore.sweep.pareto import pareto_front
    nan = float("nan")
    values = [[r.get(o.column, nan) if r["status"] == "ok" else nan for o in objectives] for r in records]
    return [bool(f) for f in pareto_front(values, objectives)] if records else []


def _tables(out: Path, records: list[dict], axes: list[str], objectives: list) -> list[bool]:
    from coexplore.sweep.store import write_tables
    front = _front(records, objectives)
    write_tables(out, records, axes, objectives, front)
    return front


def _finish(args, out: Path, run_desc: dict, spec, records: list[dict], objectives: list, total: int,
            quiet: bool = False) -> int:
    """points.csv, pareto.csv, pareto.png, report.html and sweep.json of the points done; the summary."""
    axes = list(spec.sweep_axes)
    front = _tables(out, records, axes, objectives)
    images = {}
    if args.no_plot:
        (out / "pareto.png").unlink(missing_ok=True)     # another run's or objectives' chart
    else:
        from coexplore.report.gantt import draw_gantt
        from coexplore.report.pareto_plot import plot_pareto
        for r in records:                # points run with plots off (an earlier --no-plot run)
            if r["status"] == "ok" and not (out / r["dir"] / "gantt.png").exists() and not quiet:
                draw_gantt(out, r, spec.name)
        images["Pareto front"] = plot_pareto(records, objectives, front, out / "pareto.png",
                                             title=f"{spec.name}: {len(records)} of {total} points")
    from coexplore.report.html import write_report
    facts = {"name": spec.name, **{k: v for k, v in run_desc.items() if k != "inputs_sha256"}}
    facts.update(axes={a: list(v) for a, v in spec.sweep_axes.items()}, points=f"{len(records)} of {total}",
                 objectives=[o.name for o in objectives])
    write_report(out / "report.html", facts, records, objectives, front, images, total=total)
    ids = [r["point"] for r, f in zip(records, front) if f]
    failed = [r for r in records if r["status"] != "ok"]
    data = {"system": spec.name, "file": args.system, "run": json.loads(json.dumps(run_desc, sort_keys=True)),
            **command_record(), "executor": _executor(args),
            "points": total, "done": len(records), "complete": len(records) == total, "failed": len(failed),
            "objectives": [{"name": o.name, "column": o.column, "sense": o.sense, "unit": o.unit}
                           for o in objectives],
            "axes": {a: list(v) for a, v in spec.sweep_axes.items()}, "pareto": ids,
            "files": {k: str(out / f) for k, f in (("points", "points.csv"), ("pareto", "pareto.csv"),
                                                  ("records", "points.jsonl"), ("report", "report.html"))}
            | ({"plot": str(out / "pareto.png")} if images else {}),
            "records": records}
    write_text(out / RESULT, json.dumps(data, indent=1) + "\n")
    if quiet:                    # stopped: the points done, as sweep.json holds them (as map and schedule do)
        if args.json:
            print(json.dumps(data))
        return 130
    if args.json:
        print(json.dumps(data))
        return _all_failed(records)
    from coexplore.cli.main import said_before
    from coexplore.report.html import grouped_warnings
    for where, w in grouped_warnings(records):        # each warning once, with the points it came from
        if where == "every point" and said_before(w):    # (said already, as the layers were mapped)
            continue
        print(f"coexplore: warning: {where}: {w}", file=sys.stderr)
    print("\n".join(summary_lines(spec, records, objectives, front, total)))
    print(f"points     {out / 'points.csv'}\npareto     {out / 'pareto.csv'}"
          + (f"\nplot       {out / 'pareto.png'}" if images else "") + f"\nreport     {out / 'report.html'}")
    return _all_failed(records)


def _executor(args) -> dict:
    """Where this invocation ran the points (not part of the run's key: any executor gives the same
    records, and a resumed sweep may change it): processes, or Ray with its address and version."""
    if args.ray is None:
        return {"kind": "processes", "jobs": args.jobs or 1}
    from importlib.metadata import PackageNotFoundError, version
    try:
        ray_version = version("ray")
    except PackageNotFoundError:
        ray_version = None
    address = args.ray or os.environ.get("RAY_ADDRESS") or None
    return {"kind": "ray", "in_flight": args.jobs or "the cluster's CPUs", "ray_version": ray_version,
            "address": address if address else f"a Ray started on this machine ({args.jobs or 'all'} CPUs)",
            **({"address_from": "$RAY_ADDRESS"} if address and not args.ray else {})}


def _all_failed(records: list[dict]) -> int:
    """1 (a failed run, as `coexplore map` without a valid mapping) when every point failed."""
    if records and all(r["status"] != "ok" for r in records):
        print(f"coexplore sweep: every point failed; the first: {records[0]['error']}", file=sys.stderr)
        return 1
    return 0


def axis_labels(paths: list[str]) -> list[str]:
    """Short column names of axis paths: a core's parameter as <core>.<parameter> (simba.glb_depth,
    eyeriss.count), the others as written inside `system:` (dram.bandwidth_GBps, clock_GHz)."""
    out = []
    for p in paths:
        p = p[len("system."):] if p.startswith("system.") else p
        p = p[len("cores."):] if p.startswith("cores.") else p
        out.append(p.replace(".params.", ".", 1))
    return out


def _shown(value, width: int = 32) -> str:
    """An axis value in the summary: as written (a file path too: two designs are often both
    `arch.yaml`), its end when longer than `width`."""
    from coexplore.sweep.store import axis_text
    text = axis_text(value)
    return text if len(text) <= width else "..." + text[-(width - 3):]


def summary_lines(spec, records: list[dict], objectives: list, front: list[bool], total: int) -> list[str]:
    """The sweep in a few lines: how many points, the objectives, the Pareto front as a table."""
    axes = list(spec.sweep_axes)
    failed = sum(r["status"] != "ok" for r in records)
    lines = [f"sweep      {spec.name}: {len(records)} of {total} points done"
             + (f", {failed} failed (points.csv and the report say why)" if failed else ""),
             "objectives " + ", ".join(f"{o.name} ({o.column}, {'max' if o.sense == 'max' else 'min'})"
                                       for o in objectives),
             f"Pareto front: {sum(front)} point{'s' if sum(front) != 1 else ''}"]
    head = ["point", *axis_labels(axes), *(o.column for o in objectives)]
    first = objectives[0]
    best_first = sorted((r for r, f in zip(records, front) if f),
                        key=lambda r: r[first.column] * (1 if first.sense == "min" else -1))
    digits = [digits_apart(r[o.column] for r in best_first) for o in objectives]   # front points told apart
    rows = [[r["point"], *(_shown(r["values"].get(a)) for a in axes),
             *(f"{r[o.column]:.{d}g}" for o, d in zip(objectives, digits))] for r in best_first]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines.append("  " + "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(head, widths))))
    for row in rows[:SUMMARY_FRONT]:
        lines.append("  " + "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
    if len(rows) > SUMMARY_FRONT:
        lines.append(f"  ... {len(rows) - SUMMARY_FRONT} more front points (pareto.csv has them all)")
    return lines


SUMMARY_FRONT = 20    # front points listed in the summary (best first in the first objective)
