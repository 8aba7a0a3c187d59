"""`coexplore map ARCH WORKLOAD --all-layers`: every distinct layer of a network mapped onto one core.

Each distinct layer is one `coexplore map` run (the same search, cache, resume and files, in a
sub-folder named after the layer); the network's table (`layers.csv`) and totals (`summary.json`)
count each layer as often as the network runs it, one layer after another on the core.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import sys
import time
from pathlib import Path

from coexplore.errors import CoexploreError
from coexplore.cli.paths import command_record, show_progress
from coexplore.provenance import run_header
from coexplore.model.evaluate import dram_bytes
from coexplore.workers.processes import WorkerDied, in_processes

COLUMNS = ("layer", "count", "also", "macs", "cycles", "energy_uJ", "edp_J_cycle", "pJ_per_mac", "utilization",
           "dram_bytes", "samples", "exhausted", "mapping_file")


NETWORK_FILES = ("layers.csv", "summary.json")      # beside the layers' folders


def run_all_layers(args, map_one) -> int:
    """Map every distinct layer of the workload PROBLEM with `map_one` (the one-layer `map`), then
    write layers.csv and summary.json; the exit code is the worst of the layers' (130 stops)."""
    from coexplore.cli.inputs import is_workload, load_inputs, top_keys
    from coexplore.cli.main import note_groups
    from coexplore.cli.map import mapper_of
    from coexplore.stops import finishing
    from coexplore.spec.yamlio import write_text
    from coexplore.spec.workload import find_workload, load_workload

    if args.layer is not None:
        raise CoexploreError("--all-layers maps every layer; --layer picks one", key="--layer",
                             expected="either --layer NAME or --all-layers")
    if not is_workload(args.problem):
        keys = top_keys(args.problem)
        if Path(args.problem).is_file() and "problem" not in keys:   # no single problem either: what it holds
            from coexplore.errors import did_you_mean
            names = sorted(map(str, keys))
            held = ("top keys " + ", ".join(names) + did_you_mean(names[0], ["workload"]) if names
                    else "no mapping of keys (empty, or a list)")
            raise CoexploreError(f"holds {held}: neither a workload (`workload:`) nor a problem (`problem:`)",
                                 file=str(args.problem), key="workload",
                                 expected="workload: {name, layers: [...]} (docs/readme_workloads.md)")
        raise CoexploreError("--all-layers needs a workload (a network's layers), not a single problem",
                             file=str(args.problem), key="--all-layers",
                             expected="a workload YAML or a bundled workload name such as resnet50")
    wl = load_workload(find_workload(args.problem))
    layers = wl.unique_layers()
    for i, layer in enumerate(wl.layers):      # a layer's folder beside the network's tables: not one of them
        if layer.name in NETWORK_FILES:
            raise CoexploreError(f"layer name {layer.name!r} is the name of a file `map --all-layers` writes",
                                 file=str(wl.path or args.problem), key=f"workload.layers[{i}].name",
                                 expected="another layer name (each layer's results go to a folder of its name)")
    first = argparse.Namespace(**{**vars(args), "layer": layers[0][0].name})
    said: set = set()
    groups = note_groups()      # notes naming a layer: the first said, the others counted (said at the end)
    early = io.StringIO()                       # its warnings: said once, not again by the first layer
    try:        # the design's name, what the results depend on, and the inputs' errors before any folder
        with contextlib.redirect_stderr(early):
            ctx, constraints = load_inputs(first, with_constraints=True)
            spec = mapper_of(args)
    except CoexploreError as exc:
        raise _in_layer(exc, layers[0][0].name) from None
    finally:
        _say_once(early.getvalue(), said, None, groups)
    ctx.stride_rule = args.stride_rule
    record = _run_record(args, wl, ctx, constraints, spec)
    if args.out:
        _refuse_others_state(Path(args.out), record, [layer.name for layer, _ in layers])
    out = _result_folder(args, wl, ctx.arch.name, spec.searcher, record)
    results: dict[int, dict] = {}                # layer index -> its result.json (finished layers)
    failed, code, error, died = [], 0, None, None
    bar = None
    if show_progress(args):
        from coexplore.progress import progress_bar
        bar = progress_bar(total=len(layers), desc=f"{wl.name} layers", unit="layer")
    started = time.time()                      # result files written since are this run's
    subs = [argparse.Namespace(**{**vars(args), "layer": layer.name, "out": str(out / layer.name), "json": False,
                                  "all_layers": False, "no_progress": True, "jobs": 1, "layer_of_network": True})
            for layer, _ in layers]
    try:
        with finishing("the layer being mapped" if args.jobs <= 1 else
                       "the next layer to finish (the others running resume from their last periodic save)"
                       ) as guard, contextlib.closing(_outcomes(subs, map_one, args.jobs, bar, guard)) as outcomes:
            try:
                for i, rc, notes, exc in outcomes:
                    _say_once(notes, said, bar, groups)
                    if exc is not None:                    # bad input that only this layer meets
                        error = _in_layer(exc, layers[i][0].name)
                        break
                    if rc == 130:                          # stopped: the layer's result only if complete
                        done = _complete_result(out / layers[i][0].name / "result.json", started)
                        if done is not None:
                            results[i] = done
                        code = 130
                        break
                    result = json.loads((out / layers[i][0].name / "result.json").read_text())
                    if rc != 0 or result.get("best") is None:
                        failed.append(layers[i][0].name)
                        code = max(code, rc or 1)
                    else:
                        results[i] = result
                    if bar is not None:
                        bar.update(1)
                    if guard.asked and len(results) + len(failed) < len(layers):   # a stop after this layer
                        code = 130
                        break
            except WorkerDied as lost:         # the layers that ended are kept; a rerun resumes
                died, code = lost, 1
    finally:
        if bar is not None:
            bar.close()
    also = _same_problem(wl)
    rows = {layers[i][0].name: _row(layers[i][0], layers[i][1], results[i], ctx.arch, also, out) for i in results}
    if len(rows) + len(failed) < len(layers):    # stopped: layers an earlier run of these settings did
        rows, failed = _with_earlier(out / "summary.json", record, rows, failed)
    rows = [rows[layer.name] for layer, _ in layers if layer.name in rows]    # in the network's order
    failed = [layer.name for layer, _ in layers if layer.name in failed]
    if error is not None or code == 130 or died is not None:
        from coexplore.cli.paths import remove_if_unused
        for sub in subs:             # (layer folders a stop or a worker left unused: a worker cannot remove its own)
            remove_if_unused(Path(sub.out))
    if error is not None and not rows and not failed:
        raise error                  # nothing done: no table (the empty folder is removed)
    summary = _summary(ctx.arch.name, wl, rows, failed, len(layers), record)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    write_text(out / NETWORK_FILES[0], buf.getvalue())
    write_text(out / NETWORK_FILES[1], json.dumps(summary, indent=1))
    if error is not None:
        raise error
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        _print(summary, rows, out, sum(1 for r in results.values() if r.get("cached")))
    if code == 130 or died is not None:
        again = "searched again (--no-cache)" if args.no_cache else "from the cache"
        why = "stopped" if died is None else f"{died.message}; stopped"
        print(f"coexplore map: {why} with {len(rows) + len(failed)} of {len(layers)} layers done; rerunning "
              f"the same command resumes (finished layers {again})", file=sys.stderr)
    return code


def _map_quietly(map_one, sub) -> tuple[int, str, CoexploreError | None]:
    """One layer's `map`: (exit code, its notes, its bad-input error); its summary goes to its
    result.json, not to the console (130: stopped before it had a result)."""
    notes = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(notes):
            return map_one(sub), notes.getvalue(), None
    except KeyboardInterrupt:
        return 130, notes.getvalue(), None
    except CoexploreError as exc:
        return 2, notes.getvalue(), exc


def _map_in_worker(task) -> tuple:
    """A layer's `map` in a worker process (the error as its parts: exceptions with keyword-only
    arguments do not unpickle)."""
    from coexplore.cli.main import command_settings
    from coexplore.cli.map import run
    i, fields = task
    args = argparse.Namespace(**fields)
    with command_settings(args, say_unused=False):       # a fresh process: the --var names, the warning lines
        rc, notes, exc = _map_quietly(run, args)
    parts = None if exc is None else exc.parts()
    return i, rc, notes, parts


def _outcomes(subs: list, map_one, jobs: int, bar, guard):
    """(layer index, exit code, notes, error) of each layer as it finishes: in order in this
    process, or in `jobs` worker processes (each search as it would run alone; a stop ends the
    searches running, which resume from their last periodic save)."""
    if jobs <= 1 or len(subs) < 2:
        for i, sub in enumerate(subs):
            if bar is not None:
                bar.set_postfix_str(sub.layer)
            yield (i, *_map_quietly(map_one, sub))
        return
    tasks = [(i, {k: v for k, v in vars(sub).items() if k != "func"}) for i, sub in enumerate(subs)]
    for i, rc, notes, parts in in_processes(_map_in_worker, tasks, jobs):   # no worker outlives the loop
        exc = None if parts is None else CoexploreError.from_parts(parts)
        yield i, rc, notes, exc
        if guard.asked:
            break


def _in_layer(exc: CoexploreError, name: str) -> CoexploreError:
    """The error of one layer's run, saying which layer was being mapped."""
    exc.message = f"mapping layer {name}: {exc.message}"
    return exc


def _run_record(args, wl, ctx, constraints, spec) -> dict:
    """What the network's result depends on: the settings, the digests of the files given, and the
    content key a one-layer `map` computes (architecture, ERT and constraints as found, also beside
    ARCH, searcher settings, budget, seed). An edited input is another run (another default folder)."""
    from coexplore.cli.paths import digests
    from coexplore.model.cache import cache_key
    from coexplore.search.layer import cache_parts
    desc = {k: v for k, v in sorted(vars(args).items()) if k not in
            ("func", "out", "json", "no_progress", "restart", "cache", "no_cache", "command", "jobs")}
    parts = cache_parts(ctx, constraints, spec, budget=args.budget, seed=args.seed)
    parts["layer"] = None                                # the workload's digest stands for the layers
    parts.pop("encoding", None)                          # (the first layer's mapspace layout)
    from coexplore.bundled import resolve
    from coexplore.spec import template
    given = [resolve("arch", args.arch), wl.path, args.ert, *(args.constraints or []),
             resolve("mappers", args.searcher) if args.searcher else None, *template.files_read()]
    from coexplore.bundled import record_name
    desc.update(all_layers=True, workload=record_name(wl.path) if wl.path is not None else None, **run_header(),
                inputs_sha256=digests(*[f for f in given if f]),
                content_key=cache_key(**parts))
    return json.loads(json.dumps(desc, default=str))


def _refuse_others_state(out: Path, record: dict, names: list[str]) -> None:
    """Refuse, before any layer is mapped, a --out folder whose summary is another network run's
    while a layer's folder holds that run's saved search state: the layers before it would be
    replaced (results, table, summary) before the layer's own check refused the run."""
    from coexplore.cli.paths import CHECKPOINT, differences
    saved = [n for n in names if (out / n / CHECKPOINT).is_file()]
    try:
        earlier = json.loads((out / NETWORK_FILES[1]).read_text(encoding="utf-8")).get("run") if saved else None
    except (OSError, ValueError, AttributeError):
        earlier = None
    if isinstance(earlier, dict) and earlier != record:
        raise CoexploreError(f"holds the saved search state of another run, interrupted (layer {saved[0]}'s "
                             f".checkpoint.pkl) {differences(earlier, record)}: mapping the layers here would "
                             "lose it", file=str(out), key="--out",
                             expected=f"another --out folder, or delete {out / saved[0] / CHECKPOINT} to discard "
                                      "that state (the command of that run, with its inputs as they were, resumes it)")


def _result_folder(args, wl, arch: str, searcher: str, record: dict) -> Path:
    """--out, else results/map/<arch>-<workload>-<searcher>-seed<S> (numbered when another run's)."""
    from coexplore.cli.paths import chosen_dir, default_run_dir
    if args.out:
        return chosen_dir(args.out, "summary.json", record, "map")
    return default_run_dir(Path("results") / "map" / f"{arch}-{wl.name}-{searcher}-seed{args.seed}",
                           "summary.json", record)


def _say_once(text: str, said: set, bar, groups) -> None:
    """A layer's notes and warnings, each said once for the whole network (not once per layer; a
    note naming its layer for the first such layer, the others counted in `groups`)."""
    for line in text.splitlines():
        if line.strip() and line not in said and (groups.admit(line) or groups.is_first(line)):
            said.add(line)
            if bar is not None:
                bar.write(line, file=sys.stderr)
            else:
                print(line, file=sys.stderr)


def _complete_result(path: Path, since: float) -> dict | None:
    """A layer's result.json when this run wrote it (at or after `since`) and it holds a complete
    search (a stop that came after the search had ended still writes it), else None."""
    try:
        if path.stat().st_mtime < since:
            return None
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(result, dict) and result.get("best") is not None and not result.get("interrupted")
    return result if ok else None


def _with_earlier(path: Path, record: dict, rows: dict, failed: list) -> tuple[dict, list]:
    """The layers of a stopped run, plus those an earlier run of the same settings (the same run
    record) finished and this one had not reached: a stop on a rerun never shrinks the table."""
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return rows, failed
    if not isinstance(earlier, dict) or earlier.get("run") != record:
        return rows, failed
    rows = {**{r["layer"]: r for r in earlier.get("layers", []) if r["layer"] not in failed}, **rows}
    return rows, [*failed, *(n for n in earlier.get("failed", []) if n not in rows and n not in failed)]


def _same_problem(wl) -> dict[str, str]:
    """For each distinct layer mapped, the other layers of the network that are the same problem
    (mapped once, counted in its `count`), separated by '; ' (a problem file's name may hold spaces)."""
    return {g[0].name: "; ".join(layer.name for layer in g[1:]) for g in wl.same_problem_groups()}


def _row(layer, n: int, result: dict, arch, also: dict[str, str], out: Path) -> dict:
    """One layer's row of layers.csv and summary.json; its mapping file relative to their folder
    (the folder can move or be read from anywhere)."""
    b = result["best"]
    return {"layer": layer.name, "count": n, "also": also.get(layer.name, ""), "macs": layer.macs, "cycles": b["cycles"],
            "energy_uJ": b["energy_pJ"] / 1e6, "edp_J_cycle": b["edp_J_cycle"],
            "pJ_per_mac": b["energy_pJ"] / b["computes"], "utilization": b["utilization"],
            "dram_bytes": dram_bytes(b, arch),          # off-chip traffic: a schedule's bandwidth need
            "samples": result["samples"], "exhausted": result.get("exhausted"),   # True: the optimum
            "mapping_file": _relative(result["mapping_file"], out)}


def _relative(path, folder) -> str:
    """`path` relative to `folder` (the table's folder can move), or absolute where no relative path
    leads there (another drive)."""
    try:
        return os.path.relpath(Path(path).resolve(), Path(folder).resolve())
    except ValueError:
        return str(Path(path).resolve())


def _summary(arch: str, wl, rows: list[dict], failed: list[str], n_layers: int, desc: dict) -> dict:
    """Network totals: each layer counted as often as the network runs it, one after another."""
    complete = not failed and len(rows) == n_layers
    cycles = sum(r["count"] * r["cycles"] for r in rows)
    energy_uj = sum(r["count"] * r["energy_uJ"] for r in rows)
    macs = sum(r["count"] * r["macs"] for r in rows)
    totals = {"macs": macs, "cycles": cycles, "energy_uJ": energy_uj, "edp_J_cycle": energy_uj * 1e-6 * cycles,
              "pJ_per_mac": energy_uj * 1e6 / macs if macs else None,
              "dram_bytes": sum(r["count"] * r["dram_bytes"] for r in rows)
              if all(r.get("dram_bytes") not in (None, "") for r in rows) else None}   # (an earlier run's rows lack it)
    if not rows:                          # no layer mapped: no totals (not a network that costs nothing)
        totals = dict.fromkeys(totals)
    return {"arch": arch, "workload": wl.name, "distinct_layers": n_layers, "mapped": len(rows),
            "failed": failed, "complete": complete, "layers_run": sum(r["count"] for r in rows),
            **totals, "layers": rows, "run": desc, **command_record()}


def _print(summary: dict, rows: list[dict], out: Path, cached: int = 0) -> None:
    print(f"coexplore map: {summary['workload']} on {summary['arch']}: {summary['mapped']} of "
          f"{summary['distinct_layers']} distinct layers mapped" + (f" ({cached} from the cache)" if cached else ""))
    cells = [(r["layer"], f"{r['count']:,}", f"{r['cycles']:,}", f"{r['energy_uJ']:,.3f}", f"{r['pJ_per_mac']:.3f}",
              f"{r['utilization']:.3f}") for r in rows]
    head = ("layer", "count", "cycles", "energy uJ", "pJ/MAC", "util")
    w = [max([28, len(head[0]) + 1, *(len(c[0]) + 1 for c in cells)]),       # columns as wide as their values
         *(max([n, *(len(c[i]) + 2 for c in cells)]) for i, n in enumerate((6, 16, 14, 9, 7), start=1))]
    print(f"{head[0]:<{w[0]}}" + "".join(f"{h:>{n}}" for h, n in zip(head[1:], w[1:])))
    for c in cells:
        print(f"{c[0]:<{w[0]}}" + "".join(f"{v:>{n}}" for v, n in zip(c[1:], w[1:])))
    same = [f"{r['layer']} (also {', '.join(r['also'].split('; '))})" for r in rows if r.get("also")]
    if same:
        print("the same problem, mapped once and counted: " + "; ".join(same))
    if summary["failed"]:
        print(f"no valid mapping found: {', '.join(summary['failed'])} (see their result.json)")
    if not rows:
        print("no layer mapped: no totals")
        return
    what = "network" if summary["complete"] else "mapped layers only"
    print(f"total ({what}, each layer x its count, one after another): {summary['cycles']:,} cycles, "
          f"{summary['energy_uJ']:,.3f} uJ, EDP {summary['edp_J_cycle']:.6g} J*cycle"
          + (f", {summary['pJ_per_mac']:.3f} pJ/MAC" if summary["pJ_per_mac"] else ""))
    print(f"wrote {out / 'layers.csv'}, {out / 'summary.json'} and one folder per layer")
