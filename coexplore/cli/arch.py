"""`coexplore arch generate SYSTEM.yaml --out DIR`: write every distinct core's Timeloop files.

Per core, DIR/<core>/ gets arch.yaml (Timeloop v0.4), processed.yaml (the flattened form
timeloop-model reads), constraints.yaml (mapspace constraints for timeloop-mapper) and
ERT.yaml/ART.yaml (from the built-in estimator, or copied from `--ert-from`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import sys
from pathlib import Path

from coexplore.arch.file_core import FileCore
from coexplore.arch.system import load_system_arch
from coexplore.arch.tables import art_area_mm2, find_given_tables, price_core, priced_beside, write_own_tables
from coexplore.energy.tables import read_art, write_art, write_ert
from coexplore.bundled import resolve
from coexplore.cli.paths import output_dir
from coexplore.errors import CoexploreError
from coexplore.spec.ert import load_ert, stale_ert
from coexplore.spec.yamlio import read_text

WRITTEN = ".coexplore-arch.json"     # in --out: the files this command wrote there (relative path -> SHA-256)
WRITES = ("arch.yaml", "processed.yaml", "constraints.yaml", "ERT.yaml", "ART.yaml")     # per core folder


def register(subparsers) -> None:
    parser = subparsers.add_parser("arch", help="generate Timeloop architectures from a system YAML",
                                   description="Generate each core of a system YAML as Timeloop files: "
                                               "v0.4 arch.yaml, flattened processed.yaml, constraints.yaml, "
                                               "and ERT/ART from the built-in estimator (or given ones).")
    sub = parser.add_subparsers(dest="arch_command", metavar="ACTION")
    sub.required = True
    gen = sub.add_parser("generate", help="write arch/processed/constraints/ERT/ART YAML per core")
    gen.add_argument("system", help="system YAML (e.g. arch/simba_2x2.yaml)")
    gen.add_argument("--out", required=True, help="output directory (one sub-directory per core)")
    gen.add_argument("--ert-from", metavar="DIR", default=None,
                     help="copy ERT.yaml/ART.yaml from DIR/<core>/ or DIR/ (e.g. a corpus "
                          "arches/<arch>/ folder) instead of estimating them")
    gen.add_argument("--energy", choices=("builtin", "accelergy"), default="builtin",
                     help="ERT/ART estimator when --ert-from is not given (accelergy: the real "
                          "tool, must be on PATH)")
    gen.add_argument("--json", action="store_true",
                     help="print one JSON object (the system's off-chip link and, per core, its files)")
    gen.set_defaults(func=run)


def run(args) -> int:
    found = resolve("arch", args.system)
    if found.exists():
        read_text(found)      # the shared one-line errors: a directory, unreadable, not UTF-8
    if args.ert_from and Path(args.ert_from).is_file():
        raise CoexploreError("is a file, not a folder", file=args.ert_from, key="--ert-from",
                             expected="a folder holding ERT.yaml + ART.yaml, or <core>/ERT.yaml + ART.yaml")
    system = load_system_arch(args.system)
    if system.spec.workloads:         # checked as schedule and sweep read them: a typo is said here too
        from coexplore.system.from_system import system_workloads
        system_workloads(system)
    out = output_dir(args.out)
    rows = []
    # price (or find the given tables of) every core before writing anything: a failure leaves the
    # folder as it was, never new architecture files beside old energy tables
    priced, notes, warned = {}, [], []
    for name, core in system.cores.items():
        if isinstance(core, FileCore):        # the user's own files: its tables given, beside it, or priced
            from coexplore.system.from_system import core_model
            cm = core_model(system, name)     # read as schedule reads it: an ERT or constraints that do not fit stop here
            mine = [p for p in core.inputs() if p.resolve().parent == (out / name).resolve()]
            if mine:                          # writing OUT/<core>/ would replace the core's own files
                raise CoexploreError(f"core {name}'s own file {mine[0]} is in {out / name}, which this command "
                                     "writes", key="--out", expected="an output folder that holds none of the "
                                     "cores' input files")
            read = (f"{core.arch_file}: ", f"{cm.ert.source}: ")    # what reading it said (the pricing: below)
            warned += [f"{name}: {w}" for w in cm.warnings if w.startswith(read)]
            priced[name] = ("files", core.tables(estimator=args.energy))
            if args.ert_from:
                notes.append(f"core {name} is priced from its own files, not --ert-from (which applies to the "
                             "template cores)")
        elif args.ert_from:
            priced[name] = ("given", find_given_tables(core, args.ert_from))
        else:
            try:
                priced[name] = ("built", price_core(core, estimator=args.energy))
            except CoexploreError as exc:      # a DRAM type or technology the estimator refuses
                raise exc.with_file(system.spec.file) from None
    others = _not_written_here(out, list(system.cores))
    if others:                     # e.g. a hand-written arch.yaml: never written over
        raise CoexploreError(f"holds {', '.join(str(f.relative_to(out)) for f in others)}, not written by "
                             "`coexplore arch generate` (or edited since), which this run would write over",
                             file=str(out), key="--out", expected="another --out folder, or those files moved "
                                                                  "away (an earlier run's own files are replaced)")
    wrote: list[Path] = []
    for name, core in system.cores.items():
        core_dir = out / name
        written = core.write(core_dir)
        wrote += [*written.values(), core_dir / "ERT.yaml", core_dir / "ART.yaml"]
        how, what = priced[name]
        if how == "files":
            source = write_own_tables(core_dir, *what[:2], args.energy)
            warned += [f"{name}: {w}" for w in what[2]]
        elif how == "given":
            shutil.copyfile(what[0], core_dir / "ERT.yaml")
            shutil.copyfile(what[1], core_dir / "ART.yaml")
            source = f"copied from {what[0].parent}"
            if (stale := stale_ert(load_ert(core_dir / "ERT.yaml"), core_dir / "arch.yaml")) is not None:
                notes.append(f"core {name}: {stale}")
        else:
            ert, art = what
            write_ert(core_dir / "ERT.yaml", priced_beside(ert, core_dir))
            write_art(core_dir / "ART.yaml", art)
            warned += [f"{name}: {w}" for w in ert.get("warnings") or ()]
            source = "built-in estimator" if args.energy == "builtin" else "accelergy"
        count = system.spec.core(name).count
        area = art_area_mm2(read_art(core_dir / "ART.yaml"))
        own = core.architecture if isinstance(core, FileCore) else None
        macs, levels = (own.compute.instances, len(own.all_levels)) if own else (core.params.macs, len(core.flat.levels))
        rows.append((name, core.template, count, macs, levels, source, area, list(written)))
    _record_written(out, wrote)
    notes += _remove_gone_cores(out, list(system.cores))
    spec = system.spec
    if args.json:
        print(json.dumps({
            "system": spec.name, "file": str(args.system), "out": str(out), "cores_total": spec.n_cores,
            "clock_GHz": spec.clock_GHz, "offchip_GBps": spec.dram.bandwidth_GBps_at(spec.clock_GHz),
            "offchip_bytes_per_cycle": system.offchip_bytes_per_cycle,
            "dram": {"type": spec.dram.type, "width": spec.dram.width},
            "cores": [{"name": name, "template": template, "copies": count, "macs": macs, "levels": levels,
                       "area_mm2": area, "ert_art": source,
                       "files": {f: str(out / name / f"{f}.yaml") for f in (*written, "ERT", "ART")}}
                      for name, template, count, macs, levels, source, area, written in rows],
            "warnings": warned, "notes": notes}, indent=1))
        return 0
    print(f"system {spec.name}: {spec.n_cores} core{'s' if spec.n_cores != 1 else ''}, off-chip "
          f"{spec.dram.bandwidth_GBps_at(spec.clock_GHz):g} GB/s "
          f"({system.offchip_bytes_per_cycle:g} B/cycle at {spec.clock_GHz:g} GHz), "
          f"DRAM {spec.dram.type} x{spec.dram.width}")
    w = max(14, *(len(r[0]) for r in rows))
    print(f"{'core':<{w}} {'template':<9} {'copies':>6} {'MACs':>6} {'levels':>6} {'area mm^2':>10}  ERT/ART")
    for name, template, count, macs, levels, source, area, _ in rows:
        print(f"{name:<{w}} {template or '(file)':<9} {count:>6} {macs:>6} {levels:>6} {area:>10.4g}  {source}")
    print("(levels: storage levels, a node list's fan-out levels (inter_*_spatial) and the compute level; "
          "area: one copy, instances x per-instance area from its ART.yaml)")
    made = [name for name, template, *_ in rows if template is not None]
    print("wrote " + "; ".join(([f"{out}/<core>/{{arch,processed,constraints,ERT,ART}}.yaml ({', '.join(made)})"]
                                if made else [])
                               + [f"{out}/{name}/: " + ", ".join(f"{f}.yaml" for f in (*written, "ERT", "ART"))
                                  for name, template, *_, written in rows if template is None]))
    for w in warned:
        print(f"coexplore: warning: {w}", file=sys.stderr)
    for n in notes:
        print(f"coexplore arch: note: {n}", file=sys.stderr)
    return 0


def _not_written_here(out: Path, cores: list[str]) -> list[Path]:
    """The files of `cores`' folders in `out` that this command would write and that are not as an
    earlier `arch generate` left them (the user's own, or edited since)."""
    known = _written(out)
    files = [out / name / f for name in cores for f in WRITES]
    return [f for f in files if f.is_file() and known.get(f.relative_to(out).as_posix()) != _sha(f)]


def _sha(f: Path) -> str:
    return hashlib.sha256(f.read_bytes()).hexdigest()


def _written(out: Path) -> dict:
    try:
        known = json.loads((out / WRITTEN).read_text())
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def _remove_gone_cores(out: Path, cores: list[str]) -> list[str]:
    """Remove the files an earlier run wrote for cores this system no longer has (unedited since; an
    edited one is kept, said), so the folder holds this system's designs only; what was done, said."""
    known = _written(out)
    gone: dict[str, list[str]] = {}
    kept = []
    for rel in sorted(known):
        core = rel.split("/", 1)[0]
        if core in cores or "/" not in rel:
            continue
        f = out / rel
        if f.is_file() and _sha(f) != known[rel]:
            kept.append(rel)                  # edited since: the user's now
            continue
        if f.is_file():
            f.unlink()
            gone.setdefault(core, []).append(rel)
        del known[rel]
        with contextlib.suppress(OSError):
            (out / core).rmdir()              # (only when nothing else is in it)
    if gone or kept:
        (out / WRITTEN).write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
    said = [f"removed the files an earlier run wrote for core {c} ({out / c}), which is not in "
            "this system" for c in gone]
    said += [f"kept {out / rel}: written for a core not in this system, but edited since" for rel in kept]
    return said


def _record_written(out: Path, files: list[Path]) -> None:
    known = _written(out)
    known.update({f.relative_to(out).as_posix(): _sha(f) for f in files})
    (out / WRITTEN).write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
