"""Energy/area tables for generated cores: take a given ERT/ART, or ask coexplore.energy.

Otherwise the built-in estimator (`coexplore.energy.tables.build_tables`) prices the
flattened components (names `<top>_top_level.<level>[1..N]`, as Accelergy names them).
A given ERT/ART (e.g. the corpus' reference tables) is only accepted for a core whose
priced components it names exactly (`<top>_top_level.<level>[1..N]`), so a table made for
another design or size cannot be attached by mistake.
"""

from __future__ import annotations

from pathlib import Path


from coexplore.arch.core import CoreArch
from coexplore.errors import CoexploreError
from coexplore.spec.yamlio import load_yaml


def table_names(path: Path, root: str) -> set[str]:
    """Component names listed in an ERT (`root`='ERT') or ART (`root`='ART') file."""
    doc = load_yaml(path)
    try:
        entries = doc[root]["tables"]
        return {str(e["name"]) for e in entries}
    except (KeyError, TypeError):
        raise CoexploreError("not an Accelergy table", file=str(path), key=f"{root}.tables",
                             expected=f"{root}: {{tables: [{{name: ...}}]}}") from None


def required_names(core: CoreArch, root: str) -> set[str]:
    """Component names the core's tables must hold: ERT prices real components
    (storage and compute, not the dummy spatial levels); ART lists every level."""
    names = set()
    for comp in core.components():
        if root == "ERT" and comp["class"] == "dummy_storage":
            continue
        names.add(comp["full_name"])
    return names


def find_given_tables(core: CoreArch, source: str | Path) -> tuple[Path, Path]:
    """ERT.yaml/ART.yaml for `core` under `source` (`source/<core>/` first, then `source/`),
    checked against the core's component names."""
    src = Path(source)
    for d in (src / core.name, src):
        ert, art = d / "ERT.yaml", d / "ART.yaml"
        if ert.is_file() and art.is_file():
            break
    else:
        raise CoexploreError(f"no ERT.yaml + ART.yaml for core '{core.name}'", file=str(src),
                             expected=f"{src}/{core.name}/ERT.yaml or {src}/ERT.yaml (with ART.yaml)")
    for path, root in ((ert, "ERT"), (art, "ART")):
        have = table_names(path, root)
        missing = sorted(required_names(core, root) - have)
        if missing:
            raise CoexploreError(
                f"does not fit core '{core.name}': no entry for {', '.join(missing[:3])}"
                + (" ..." if len(missing) > 3 else ""), file=str(path), key=f"{root}.tables",
                expected="a table made for this architecture (same level names and instances)")
    return ert, art


def check_own_table(name: str, arch, table: dict, root: str, file) -> None:
    """An ERT or ART attached to a core of the user's own must be that architecture's, as a table
    given for a template core must (`find_given_tables`): an entry for every level that is priced
    (every storage and the compute level; the dummy spatial levels aside), with its instances. A
    table of another design, or of this one at another size ([1..168] on a 64-PE array), would
    price the core silently wrong (Timeloop keys tables by name alone)."""
    from coexplore.energy.tables import entry_instances
    tables = (table.get(root) or table).get("tables") if isinstance(table, dict) else None
    if not isinstance(tables, list):
        raise CoexploreError(f"no {root}.tables list", file=str(file), key=f"{root}.tables",
                             expected=f"Accelergy's {root}.yaml format")
    have: dict[str, set[int]] = {}
    for i, t in enumerate(tables):
        if isinstance(t, dict) and "name" in t:
            short, n = entry_instances(t["name"], f"{root}.tables[{i}].name")
            have.setdefault(short, set()).add(n)
    wrong = [f"{lv.name}[1..{lv.instances}]" + (f" (it has {lv.name} x {', '.join(map(str, sorted(have[lv.name])))})"
                                                if lv.name in have else "")
             for lv in arch.all_levels if not lv.is_dummy and lv.instances not in have.get(lv.name, ())]
    if wrong:
        raise CoexploreError(f"does not fit core '{name}': no entry for {', '.join(wrong[:3])}"
                             + (" ..." if len(wrong) > 3 else ""), file=str(file), key=f"{root}.tables",
                             expected="a table made for this architecture (same level names and instances), or none "
                                      "(the built-in estimator prices the core)")


def price_core(core: CoreArch, estimator: str = "builtin"):
    """ERT and ART of a core from the energy estimator (`coexplore.energy.tables`), priced on the
    flattened form, which carries the inherited attributes (technology, clock) Accelergy sees."""
    from coexplore.energy.tables import build_tables, components_from_processed
    return build_tables(components_from_processed(core.flattened().processed), estimator=estimator)


def art_area_mm2(art: dict) -> float:
    """Area of one copy of a core (mm^2): instances x per-instance area over its ART's entries."""
    from coexplore.energy.tables import area_breakdown
    return sum(n * a for _, n, a in area_breakdown(art)) / 1e6


def write_core_tables(core_dir: Path, core, estimator: str = "builtin") -> tuple[str, list[str]]:
    """ERT.yaml and ART.yaml of a system's core design into `core_dir`: a generated core's priced by
    `estimator`, an own core's (`FileCore.tables`) copied, taken from its file or priced; where they
    came from and what pricing warned. (`coexplore arch generate` also takes tables given.)"""
    from coexplore.arch.file_core import FileCore
    from coexplore.energy.tables import write_art, write_ert
    if isinstance(core, FileCore):
        ert, art, said = core.tables(estimator=estimator)
        return write_own_tables(core_dir, ert, art, estimator), said
    ert, art = price_core(core, estimator=estimator)
    write_ert(Path(core_dir) / "ERT.yaml", priced_beside(ert, core_dir))
    write_art(Path(core_dir) / "ART.yaml", art)
    return ("built-in estimator" if estimator == "builtin" else "accelergy"), [str(w) for w in ert.get("warnings") or ()]


def priced_beside(ert: dict, core_dir: Path) -> dict:
    """`ert` recording the architecture files in core_dir it was priced for (written there first), so
    that an edit of them afterwards is noticed when the table is read (`spec.ert.stale_ert`)."""
    from coexplore.spec.ert import priced_from_line
    files = [f for f in (Path(core_dir) / "arch.yaml", Path(core_dir) / "processed.yaml") if f.is_file()]
    return {**ert, "priced_from": priced_from_line(*files)} if files else ert


def write_own_tables(core_dir: Path, ert: tuple, art: tuple, energy: str) -> str:
    """ERT.yaml and ART.yaml of an own core (`FileCore.tables`: copied, the ERT: inside its file, or
    priced); where they came from."""
    import shutil

    from coexplore.energy.tables import write_art, write_ert
    from coexplore.spec.yamlio import dump_yaml, write_text
    for (kind, table), root, write in ((ert, "ERT", write_ert), (art, "ART", write_art)):
        if kind == "copied":
            shutil.copyfile(table, Path(core_dir) / f"{root}.yaml")
        elif kind == "inside":
            write_text(Path(core_dir) / "ERT.yaml", dump_yaml({"ERT": table}))
        else:
            write(Path(core_dir) / f"{root}.yaml", priced_beside(table, core_dir) if root == "ERT" else table)
    told = [f"copied from {t}" if kind == "copied" else "inside the architecture file" if kind == "inside"
            else "built-in estimator" if energy == "builtin" else "accelergy" for kind, t in (ert, art)]
    return told[0] if told[0] == told[1] else f"ERT {told[0]}, ART {told[1]}"
