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
import sys
from pathlib import Path

from coexplore.errors import CoexploreError

COLUMNS = ("layer", "count", "macs", "cycles", "energy_uJ", "edp_J_cycle", "pJ_per_mac", "utilization",
           "samples", "mapping_file")


def run_all_layers(args, map_one) -> int:
    """Map every distinct layer of the workload PROBLEM with `map_one` (the one-layer `map`), then
    write layers.csv and summary.json; the exit code is the worst of the layers' (130 stops)."""
    from coexplore.cli.inputs import is_workload, load_inputs
    from coexplore.cli.map import mapper_of
    from coexplore.search.base import finishing
    from coexplore.spec.yamlio import write_text
    from coexplore.spec.workload import find_workload, load_workload

    if args.layer is not None:
        raise CoexploreError("--all-layers maps every layer; --layer picks one", key="--layer",
                             expected="either --layer NAME or --all-layers")
    if not is_workload(args.problem):
        raise CoexploreError("--all-layers needs a workload (a network's layers), not a single problem",
                             file=str(args.problem), key="--all-layers",
                             expected="a workload YAML or a bundled workload name such as resnet50")
    wl = load_workload(find_workload(args.problem))
    layers = wl.unique_layers()
    first = argparse.Namespace(**{**vars(args), "layer": layers[0][0].name})
    ctx, _ = load_inputs(first)                       # the design's name (and early input errors)
    searcher = mapper_of(args).searcher
    out = _result_folder(args, wl, ctx.arch.name, searcher)
    rows, failed, code, error = [], [], 0, None
    bar = None
    if not (args.no_progress or args.json):
        from coexplore.progress import progress_bar
        bar = progress_bar(total=len(layers), desc=f"{wl.name} layers", unit="layer")
    said: set = set()
    try:
        with finishing("the layer being mapped") as guard:
            for layer, n in layers:
                if bar is not None:
                    bar.set_postfix_str(layer.name)
                sub = argparse.Namespace(**{**vars(args), "layer": layer.name, "out": str(out / layer.name),
                                            "json": False, "all_layers": False, "no_progress": True})
                notes = io.StringIO()
                try:
                    # the layer's summary is in its result.json; its notes are said once per network
                    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(notes):
                        rc = map_one(sub)
                except KeyboardInterrupt:   # stopped before the layer had a result: the others are kept
                    rc = 130
                except CoexploreError as exc:          # bad input that only this layer meets
                    exc.message = f"layer {layer.name}: {exc.message}"
                    exc.args = (exc.format(),)
                    error = exc
                finally:
                    _say_once(notes.getvalue(), said, bar)
                if error is not None:
                    break
                if rc == 130:                          # the layer's search was cut short
                    code = 130
                    break
                result = json.loads((out / layer.name / "result.json").read_text())
                if rc != 0 or result.get("best") is None:
                    failed.append(layer.name)
                    code = max(code, rc or 1)
                else:
                    rows.append(_row(layer, n, result))
                if bar is not None:
                    bar.update(1)
                if guard.asked and len(rows) + len(failed) < len(layers):   # a stop after this layer's search
                    code = 130
                    break
    finally:
        if bar is not None:
            bar.close()
    summary = _summary(ctx.arch.name, wl, rows, failed, len(layers), _run_record(args, wl))
    with open(out / "layers.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    write_text(out / "summary.json", json.dumps(summary, indent=1))
    if error is not None:
        raise error
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        _print(summary, rows, out)
    if code == 130:
        print(f"coexplore map: stopped after {len(rows) + len(failed)} of {len(layers)} layers; rerunning "
              "the same command resumes (finished layers come from the cache)", file=sys.stderr)
    for name in failed:
        print(f"coexplore map: layer {name}: no valid mapping found (see {out / name / 'result.json'})",
              file=sys.stderr)
    return code


def _run_record(args, wl) -> dict:
    """What the network's result depends on: the settings and the digests of the input files (an
    edited input is another run, so a default folder is never reused for it)."""
    import coexplore
    from coexplore.cli.paths import digests
    from coexplore.bundled import resolve
    desc = {k: v for k, v in sorted(vars(args).items()) if k not in
            ("func", "out", "json", "no_progress", "restart", "cache", "no_cache", "command")}
    files = [resolve("arch", args.arch), wl.path, args.ert, *(args.constraints or []),
             resolve("mappers", args.searcher) if args.searcher else None]
    desc.update(all_layers=True, workload=str(wl.path), coexplore_version=coexplore.__version__,
                inputs_sha256=digests(*[f for f in files if f and Path(f).is_file()]))
    return json.loads(json.dumps(desc, default=str))


def _result_folder(args, wl, arch: str, searcher: str) -> Path:
    from coexplore.cli.paths import chosen_dir, default_run_dir
    desc = _run_record(args, wl)
    if args.out:
        return chosen_dir(args.out, "summary.json", desc, "map")
    return default_run_dir(Path("results") / "map" / f"{arch}-{wl.name}-{searcher}-seed{args.seed}",
                           "summary.json", desc)


def _say_once(text: str, said: set, bar) -> None:
    """A layer's notes and warnings, each said once for the whole network (not once per layer)."""
    for line in text.splitlines():
        if line.strip() and line not in said:
            said.add(line)
            if bar is not None:
                bar.write(line, file=sys.stderr)
            else:
                print(line, file=sys.stderr)


def _row(layer, n: int, result: dict) -> dict:
    b = result["best"]
    return {"layer": layer.name, "count": n, "macs": layer.macs, "cycles": b["cycles"],
            "energy_uJ": b["energy_pJ"] / 1e6, "edp_J_cycle": b["edp_J_cycle"],
            "pJ_per_mac": b["energy_pJ"] / b["computes"], "utilization": b["utilization"],
            "samples": result["samples"], "mapping_file": result["mapping_file"]}


def _summary(arch: str, wl, rows: list[dict], failed: list[str], n_layers: int, desc: dict) -> dict:
    """Network totals: each layer counted as often as the network runs it, one after another."""
    complete = not failed and len(rows) == n_layers
    cycles = sum(r["count"] * r["cycles"] for r in rows)
    energy_uj = sum(r["count"] * r["energy_uJ"] for r in rows)
    macs = sum(r["count"] * r["macs"] for r in rows)
    return {"arch": arch, "workload": wl.name, "distinct_layers": n_layers, "mapped": len(rows),
            "failed": failed, "complete": complete, "layers_run": sum(r["count"] for r in rows),
            "macs": macs, "cycles": cycles, "energy_uJ": energy_uj,
            "edp_J_cycle": energy_uj * 1e-6 * cycles, "pJ_per_mac": energy_uj * 1e6 / macs if macs else None,
            "layers": rows, "run": desc}


def _print(summary: dict, rows: list[dict], out: Path) -> None:
    print(f"coexplore map: {summary['workload']} on {summary['arch']}: {summary['mapped']} of "
          f"{summary['distinct_layers']} distinct layers mapped")
    print(f"{'layer':<28}{'count':>6}{'cycles':>16}{'energy uJ':>14}{'pJ/MAC':>9}{'util':>7}")
    for r in rows:
        print(f"{r['layer']:<28}{r['count']:>6}{r['cycles']:>16,}{r['energy_uJ']:>14,.3f}"
              f"{r['pJ_per_mac']:>9.3f}{r['utilization']:>7.3f}")
    if not rows:
        print("no layer mapped: no totals")
        return
    what = "network" if summary["complete"] else "mapped layers only"
    print(f"total ({what}, each layer x its count, one after another): {summary['cycles']:,} cycles, "
          f"{summary['energy_uJ']:,.3f} uJ, EDP {summary['edp_J_cycle']:.6g} J*cycle"
          + (f", {summary['pJ_per_mac']:.3f} pJ/MAC" if summary["pJ_per_mac"] else ""))
    print(f"wrote {out / 'layers.csv'}, {out / 'summary.json'} and one folder per layer")
