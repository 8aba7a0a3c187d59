"""`coexplore energy`: the Accelergy-compatible energy/area estimator from the command line.

    coexplore energy check GRID.csv [--json] [--energy builtin|accelergy]
        compare an estimator with every row of a reference grid (ert_grid.csv format)
    coexplore energy tables ARCH.yaml --out DIR [--energy builtin|accelergy]
        write ERT.yaml / ART.yaml for a Timeloop architecture (flattened, or a v0.4 node list)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from coexplore.cli.paths import show_progress
from coexplore.progress import progress_bar

from coexplore.energy.check import builtin_estimator, check_rows, format_table
from coexplore.energy.grid import read_grid
from coexplore.energy.tables import area_breakdown, write_art, write_ert
from coexplore.energy.pricing import CLASS_SETS, price_architecture
from coexplore.cli.paths import output_dir
from coexplore.cli.inputs import CLASSES_HELP, add_var_argument
from coexplore.spec.ert import priced_from_line
from coexplore.spec.yamlio import read_text

ESTIMATORS = ("builtin", "accelergy")


def register(subparsers) -> None:
    parser = subparsers.add_parser("energy", help="Accelergy-compatible energy/area estimation",
                                   description="The built-in Accelergy-compatible energy/area estimator: "
                                               "check it against a grid of real Accelergy results, or "
                                               "write ERT.yaml/ART.yaml for an architecture.")
    sub = parser.add_subparsers(dest="energy_command", metavar="ACTION")
    sub.required = True
    chk = sub.add_parser("check", help="compare the estimator with a reference grid CSV")
    chk.add_argument("grid", help="CSV in the format of accelergy-ert-grid/ert_grid.csv")
    chk.add_argument("--json", action="store_true", help="print the summary as JSON")
    chk.add_argument("--no-progress", action="store_true", help="no progress bar")
    chk.add_argument("--energy", choices=ESTIMATORS, default="builtin",
                     help="estimator to check (accelergy: the real tool, must be on PATH)")
    chk.set_defaults(func=run_check)
    tab = sub.add_parser("tables", help="write ERT.yaml/ART.yaml for an architecture")
    tab.add_argument("arch", help="architecture YAML: flattened (processed: subtree/local) or a v0.4 node list")
    tab.add_argument("--out", required=True, help="output directory")
    tab.add_argument("--energy", choices=ESTIMATORS, default="builtin",
                     help="estimator (default builtin; accelergy: the real tool, must be on PATH)")
    tab.add_argument("--classes", choices=CLASS_SETS, default=None, help=CLASSES_HELP)
    add_var_argument(tab)
    tab.add_argument("--json", action="store_true",
                     help="print one JSON object (files, table counts, estimator, area per component)")
    tab.set_defaults(func=run_tables)


def run_check(args) -> int:
    if Path(args.grid).exists():
        read_text(args.grid)      # the shared one-line errors: a directory, unreadable, not UTF-8
    grid = read_grid(args.grid)
    if args.energy == "accelergy":
        from coexplore.energy.accelergy_backend import accelergy_estimate, find_accelergy
        name = f"accelergy ({find_accelergy()})"
        estimator = accelergy_estimate
    else:
        name, estimator = "coexplore-builtin", builtin_estimator
    progress = ((lambda it: progress_bar(it, desc="components", file=sys.stderr, leave=False))
                if show_progress(args) else None)
    summary = check_rows(grid, estimator, name, progress=progress).to_json()
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(format_table(summary))
    if not summary["rows"]:      # nothing compared: the estimator failed on every component (a broken tool?)
        reasons = list(dict.fromkeys(str(u["reason"]) for u in summary["unsupported"]))
        print(f"coexplore energy check: error: no row of {args.grid} could be compared"
              + (f"; {len(reasons)} reason{'s' if len(reasons) > 1 else ''}, the first: {reasons[0]}" if reasons else ""),
              file=sys.stderr)
        return 1
    return 0


def run_tables(args) -> int:
    ert, art, _ = price_architecture(args.arch, args.classes, args.energy, reader_warnings=True)
    out = output_dir(args.out)
    write_ert(out / "ERT.yaml", {**ert, "priced_from": priced_from_line(args.arch)})
    write_art(out / "ART.yaml", art)
    parts = sorted(area_breakdown(art), key=lambda c: -c[1] * c[2])
    total = sum(n * a for _, n, a in parts)
    if args.json:
        print(json.dumps({"ert_file": str(out / "ERT.yaml"), "art_file": str(out / "ART.yaml"),
                          "estimator": ert["estimator"], "ert_tables": len(ert["ERT"]["tables"]),
                          "art_tables": len(art["ART"]["tables"]), "area_um2": total,
                          "area": [{"component": name, "instances": n, "area_um2_each": a, "area_um2": n * a}
                                   for name, n, a in parts],
                          "warnings": list(ert.get("warnings") or ())}, indent=1))
        return 0
    print(f"wrote {out / 'ERT.yaml'} and {out / 'ART.yaml'} "
          f"({len(ert['ERT']['tables'])} ERT / {len(art['ART']['tables'])} ART tables; "
          f"estimator: {ert['estimator']})")
    big = ", ".join(f"{name} {n} x {a / 1e6:.4g}" for name, n, a in parts[:3] if n * a > 0)
    print(f"area: {total / 1e6:.4g} mm^2 in all (instances x per-instance area from ART.yaml; largest: "
          f"{big or 'none'} mm^2)")
    return 0
