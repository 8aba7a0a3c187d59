"""Building ERT/ART tables for an architecture and reading/writing them as Accelergy does.

`build_tables(components)` prices every component and returns `(ert, art)` dicts shaped like
Accelergy 0.4's ERT.yaml / ART.yaml (`{"ERT": {"version": "0.4", "tables": [...]}}`), plus a
top-level `estimator` key naming what produced the numbers (written as a comment only);
`write_ert` / `write_art` write them in Accelergy's exact layout (energies and areas at 6
significant figures, Accelergy's default precision) with a comment line naming the
estimator; `read_ert` / `read_art` read either ours or Accelergy's files.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Iterable


from coexplore.energy.components import ESTIMATOR, ComponentEstimate, estimate_component
from coexplore.errors import CoexploreError
from coexplore.spec.architecture import is_fanout_level, split_range, yaml_list
from coexplore.spec.yamlio import load_yaml, write_text

VERSION = "0.4"
PRECISION = 6   # significant digits of the energies and areas in the tables, as Accelergy writes them


def as_written(value: float) -> float:
    """`value` rounded as it is written to ERT.yaml/ART.yaml. The tables are built rounded, so a
    model fed from memory and one fed from the written files give the same numbers."""
    return float(f"{value:.{PRECISION}g}")


def _component_tuple(entry, index: int):
    """Normalise (name, class, attributes[, required_actions]) or a processed-YAML dict."""
    if isinstance(entry, dict):
        name = entry.get("full_name") or entry.get("name")
        cls = entry.get("class")
        attrs = dict(entry.get("attributes") or {})
        if entry.get("subclass"):
            attrs["subclass"] = entry["subclass"]
        required = entry.get("required_actions")
    else:
        try:
            name, cls, attrs, *rest = entry
        except (TypeError, ValueError):
            raise CoexploreError(f"component #{index} is {entry!r}",
                                 expected="(full_name, class, attributes[, required_actions])") from None
        attrs = dict(attrs or {})
        required = rest[0] if rest else None
    if not name or not cls:
        raise CoexploreError(f"component #{index} needs a name and a class", key=f"components[{index}]")
    if required is not None and (not isinstance(required, (list, tuple))
                                 or not all(isinstance(a, str) for a in required)):
        raise CoexploreError(f"required_actions of {name} is {required!r:.60}", key=f"{name}.required_actions",
                             expected="a list of action names (read, write, ...)")
    return str(name), str(cls), attrs, (list(required) if required is not None else None)


def _actions_for(est: ComponentEstimate, cls: str, required, fanout_level: bool = False) -> list[str]:
    """The actions of a component's ERT table: the required ones, else every one its class
    defines; a dummy (timeloopfe's `inter_*_spatial` fan-out level, a technology -1 table) only
    the required ones, as Accelergy emits them; a dummy_storage component of its own (a buffer
    for Timeloop) every one, at Accelergy's dummy energy."""
    compound = all(args == {} for args in est.arguments.values())
    if cls == "dummy_storage" and required is None and not fanout_level:
        return list(est.actions)          # a buffer of its own: every action, at the dummy energy
    if fanout_level or cls == "dummy_storage" or est.primitives == ("self=dummy",):
        return [a for a in (required or []) if a in est.actions]
    if required is None or compound:   # Accelergy emits every action a compound class defines
        return list(est.actions)
    missing = [a for a in required if a not in est.actions]
    if missing:
        raise CoexploreError(f"class {cls} has no action(s) {missing}", key="required_actions",
                             expected=", ".join(est.actions))
    return list(required)


def _node_name(full_name: str) -> str:
    """The component's own name in an architecture file: `system_top_level.shared_glb[1..1]` ->
    `shared_glb`, `System.ws.PE[0..15].PEWeightBuffer[0..3]` -> `PEWeightBuffer`."""
    return re.sub(r"\[\d+\.\.\d+\]", "", full_name).rsplit(".", 1)[-1]


def build_tables(components: Iterable, *, classes: str = "example_designs",
                 estimator: str = "builtin", workdir: str | Path | None = None):
    """Price `components` [(full_name, class, attributes[, required_actions]) or processed
    dicts] and return `(ert, art)` in Accelergy's format.

    estimator: 'builtin' (this package) or 'accelergy' (the real tool, must be on PATH)."""
    if isinstance(components, dict):          # a whole architecture document, not its components
        raise CoexploreError("got an architecture document", key="components",
                             expected="its components: components_from_processed(processed) (or "
                                      "coexplore.arch.tables.price_core(core) for a generated core)")
    items = [_component_tuple(e, i) for i, e in enumerate(components)]
    if estimator == "accelergy":
        from coexplore.energy.accelergy_backend import run_accelergy
        return run_accelergy(items, classes=classes, workdir=workdir)
    if estimator != "builtin":
        raise CoexploreError(f"unknown energy estimator {estimator!r}",
                             expected="builtin or accelergy")
    ert_tables, art_tables, warnings = [], [], []
    for name, cls, attrs, required in items:
        try:
            est = estimate_component(cls, attrs, classes=classes)
        except CoexploreError as exc:
            node = _node_name(name)                 # the name the user's file gives it
            exc.key = f"{node}.{exc.key}" if exc.key else node
            if classes == "primitives" and exc.expected:       # (the hint to use them is moot)
                exc.expected = exc.expected.split(" (or --classes primitives")[0]
            raise
        notes = list(est.warnings) or (["the reference Accelergy setup refuses this component; the numbers "
                                        "are extrapolated"] if not est.accelergy_compatible else [])
        short = re.sub(r"\[\d+\.\.\d+\]$", "", name.split(".", 1)[-1])     # shared_glb
        warnings += [(w, short) for w in notes]
        # Accelergy lists plug-in-priced (primitive) components first, then compound ones
        compound = bool(est.arguments) and all(a == {} for a in est.arguments.values())
        actions = _actions_for(est, est.class_name, required, is_fanout_level(short, est.class_name))
        if actions:
            ert_tables.append((compound, {"name": name, "actions": [
                {"name": a, "arguments": dict(est.arguments.get(a, {})), "energy": as_written(est.actions[a])}
                for a in actions]}))
        art_tables.append((compound, {"name": name, "area": as_written(est.area_um2)}))
    ert_tables = [t for _, t in sorted(ert_tables, key=lambda x: x[0])]
    art_tables = [t for _, t in sorted(art_tables, key=lambda x: x[0])]
    name = f"{ESTIMATOR} ({classes} classes)"
    grouped: dict[str, list[str]] = {}          # one line per note, naming the components it concerns
    for note, comp in warnings:
        grouped.setdefault(note, []).append(comp)
    warnings = [f"{note} ({', '.join(dict.fromkeys(comps))})" for note, comps in grouped.items()]
    return ({"ERT": {"version": VERSION, "tables": ert_tables}, "estimator": name, "warnings": warnings},
            {"ART": {"version": VERSION, "tables": art_tables}, "estimator": name, "warnings": warnings})


def components_from_processed(arch: dict, *, file: str | None = None) -> list:
    """Components of a flattened (processed, v0.3-style `subtree`/`local`) architecture, with
    full names `<top>.<name>` and the container attributes (technology, global_cycle_seconds,
    ...) inherited where the component does not set them."""
    root = arch.get("architecture", arch) if isinstance(arch, dict) else arch
    out = []

    def listed(value, key, what):
        return yaml_list(value, file=file, key=key, what=what)

    def mapping(value, key, what):
        if not isinstance(value, dict) or "name" not in value:
            raise CoexploreError(f"got {value!r}", file=file, key=key, expected=f"a mapping with a name ({what})")
        attrs = value.get("attributes")
        if attrs is not None and not isinstance(attrs, dict):
            raise CoexploreError(f"got {attrs!r}", file=file, key=f"{key}.attributes", expected="a mapping")
        split_range(value["name"], file, f"{key}.name")   # a bad instance range is refused here, as by the model
        return value

    def walk(node, prefix, inherited, key):
        node = mapping(node, key, "a subtree")
        name = node["name"]
        attrs = {**inherited, **(node.get("attributes") or {})}
        path = f"{prefix}.{name}" if prefix else name
        for j, comp in enumerate(listed(node.get("local"), f"{key}.local", "components")):
            comp = mapping(comp, f"{key}.local[{j}]", "a component")
            entry = dict(comp)
            entry["attributes"] = {**attrs, **(comp.get("attributes") or {})}
            entry["attributes"].pop("version", None)
            entry["name"] = f"{path}.{comp['name']}"
            out.append(entry)
        for j, child in enumerate(listed(node.get("subtree"), f"{key}.subtree", "subtrees")):
            walk(child, path, attrs, f"{key}.subtree[{j}]")

    subtree = root.get("subtree") if isinstance(root, dict) else None
    if not subtree:
        raise CoexploreError("no architecture.subtree", file=file, key="architecture.subtree",
                             expected="a Timeloop architecture (v0.3 tree or v0.4 node list); for a coexplore "
                                      "system YAML, price its cores' files (`coexplore arch generate` writes them)")
    for i, node in enumerate(listed(subtree, "architecture.subtree", "subtrees")):
        walk(node, "", {}, f"architecture.subtree[{i}]")
    return out


def _fmt(value: float) -> str:
    if value == 0:
        return "0.0"
    if not math.isfinite(value):
        raise CoexploreError(f"non-finite value {value!r} in a table")
    return repr(as_written(value))


def _scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    text = str(value)
    return text if re.fullmatch(r"[A-Za-z_][\w.\-\[\]]*", text) else repr(text)


def format_ert(ert: dict, estimator: str | None = None) -> str:
    estimator = estimator or ert.get("estimator", "unknown estimator")
    lines = [f"# energy reference table (pJ per action) by {estimator}",
             *([ert["priced_from"]] if ert.get("priced_from") else []),
             *(f"# warning: {w}" for w in ert.get("warnings") or ()),
             "ERT:", f"    version: '{ert['ERT'].get('version', VERSION)}'", "    tables:"]
    for table in ert["ERT"]["tables"]:
        lines += [f"      - name: {table['name']}", "        actions:"]
        for act in table["actions"]:
            lines.append(f"          - name: {act['name']}")
            args = act.get("arguments") or {}
            if args:
                lines.append("            arguments:")
                lines += [f"                {k}: {_scalar(v)}" for k, v in args.items()]
            else:
                lines.append("            arguments: {}")
            lines.append(f"            energy: {_fmt(float(act['energy']))}")
    return "\n".join(lines) + "\n"


def format_art(art: dict, estimator: str | None = None) -> str:
    estimator = estimator or art.get("estimator", "unknown estimator")
    lines = [f"# area reference table (um^2 per instance) by {estimator}",
             *(f"# warning: {w}" for w in art.get("warnings") or ()),
             "ART:", f"    version: '{art['ART'].get('version', VERSION)}'", "    tables:"]
    for table in art["ART"]["tables"]:
        lines += [f"      - name: {table['name']}", f"        area: {_fmt(float(table['area']))}"]
    return "\n".join(lines) + "\n"


def _path_and_table(a, b) -> tuple[Path, dict]:
    """Accept (path, table) and (table, path)."""
    return (Path(b), a) if isinstance(a, dict) else (Path(a), b)


def write_ert(path: str | Path, ert: dict, estimator: str | None = None) -> Path:
    """Write `ert` to `path` in Accelergy's ERT.yaml layout (arguments in either order)."""
    path, ert = _path_and_table(path, ert)
    write_text(path, format_ert(ert, estimator))     # atomic; makes the folder
    return path


def area_breakdown(art: dict) -> list[tuple[str, int, float]]:
    """(component, instances, um^2 per instance) of each ART entry; the instance count is the
    product of the `[a..b]` ranges in the component's full name, as Accelergy writes it (the
    component's own and its v0.3 subtrees': `system.PE[0..15].MAC[0..15]` is 256 MACs)."""
    return [(*entry_instances(t["name"], f"ART.tables[{i}].name"), float(t["area"]))
            for i, t in enumerate(art["ART"]["tables"])]


def entry_instances(name, key: str = "name") -> tuple[str, int]:
    """(component, instances) of an ERT/ART entry's full name: its last segment, and the product of
    the `[a..b]` ranges along the name (`system.PE[0..15].MAC[0..15]`: MAC, 256)."""
    parts = re.findall(r"([^.\[\]]+)(\[[^\[\]]*\])?", str(name))
    n = 1
    for part, rng in parts:
        if rng:
            n *= split_range(part + rng, key=key)[1]   # refuses PE[16..1]
    return (parts[-1][0] if parts else str(name)), n


def write_art(path: str | Path, art: dict, estimator: str | None = None) -> Path:
    """Write `art` to `path` in Accelergy's ART.yaml layout (arguments in either order)."""
    path, art = _path_and_table(path, art)
    write_text(path, format_art(art, estimator))
    return path


def _load(path: str | Path, key: str) -> dict:
    path = Path(path)
    if not path.is_file():
        raise CoexploreError(f"{key} file not found", file=str(path))
    data = load_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get(key), dict) \
            or not isinstance(data[key].get("tables"), list):
        raise CoexploreError(f"no {key}.tables list", file=str(path), key=f"{key}.tables",
                             expected=f"Accelergy's {key}.yaml format")
    return data


def read_ert(path: str | Path) -> dict:
    """An ERT.yaml as the plain dict `write_ert` writes (`spec.ert.load_ert` gives the model's view)."""
    return _load(path, "ERT")


def read_art(path: str | Path) -> dict:
    """An ART.yaml as the plain dict `write_art` writes."""
    return _load(path, "ART")
