"""The real Accelergy as an energy backend (`--energy accelergy`).

Writes the components in the processed form timeloopfe hands to Accelergy
(`architecture.subtree[0].local[]` + `compound_components`), runs the `accelergy`
executable found on PATH, and reads back its ERT.yaml / ART.yaml. When no `accelergy`
executable is on PATH this raises CoexploreError saying so (the CLI exits 2).

The compound classes written for `classes="example_designs"` describe the same compositions
that `coexplore.energy.components` implements (smartbuffer_SRAM, smartbuffer_RF, regfile,
intmac), so both backends price the same thing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml

from coexplore.energy.components import ComponentEstimate
from coexplore.errors import CoexploreError

EXECUTABLE = "accelergy"
ESTIMATOR = "accelergy"

_ADDR_BITS = "max(1, ceil(log2({d}))) if {d} >= 1 else 1"


def _act(name, subs):
    return {"name": name, "subcomponents": [
        {"name": s, "actions": [{"name": a, **({"energy_scale": k} if k else {})}]}
        for s, a, k in subs]}


def compound_classes() -> dict:
    """Accelergy 0.4 compound-class definitions of the example-design classes."""
    addr = {"n_bits": _ADDR_BITS.format(d="depth"), "precision": _ADDR_BITS.format(d="depth"),
            "width": _ADDR_BITS.format(d="depth"), "global_cycle_seconds": "global_cycle_seconds"}
    rf_addr = {k: v.replace("depth", "real_depth") for k, v in addr.items()}
    rf_addr["global_cycle_seconds"] = "global_cycle_seconds"
    classes = [
        {"name": "intmac",
         "attributes": {"technology": "must_specify", "multiplier_width": "must_specify",
                        "adder_width": "must_specify", "global_cycle_seconds": "must_specify"},
         "subcomponents": [
             {"name": "intadder", "class": "aladdin_adder", "attributes": {"width": "adder_width"}},
             {"name": "intmultiplier", "class": "aladdin_multiplier",
              "attributes": {"width_a": "multiplier_width", "width_b": "multiplier_width"}}],
         "actions": [_act("compute", [("intadder", "read", None), ("intmultiplier", "read", None)]),
                     _act("leak", [("intadder", "leak", None), ("intmultiplier", "leak", None)])]},
        {"name": "regfile",
         "attributes": {"technology": "must_specify", "width": "must_specify",
                        "depth": "must_specify"},
         "subcomponents": [
             {"name": "storage[1..width*depth]", "class": "aladdin_register",
              "attributes": {"global_cycle_seconds": "global_cycle_seconds"}},
             {"name": "comparator[1..depth]", "class": "aladdin_comparator",
              "attributes": {"n_bits": "max(1, ceil(log2(depth)))",
                             "global_cycle_seconds": "global_cycle_seconds"}}],
         "actions": [
             _act("write", [("storage[1..width]", "write", None), ("comparator[1..depth]", "compare", None)]),
             _act("read", [("storage[1..width]", "read", None), ("comparator[1..depth]", "compare", None)]),
             _act("leak", [("storage[1..width*depth]", "leak", None), ("comparator[1..depth]", "leak", None)]),
             _act("update", [("storage[1..width]", "write", None), ("comparator[1..depth]", "compare", None)])]},
        {"name": "smartbuffer_RF",
         "attributes": {"technology": "must_specify", "width": "must_specify",
                        "depth": "must_specify", "memory_width": "max(32, width)",
                        "memory_depth": "max(64, depth)", "widthscale": "width / memory_width",
                        "depthscale": "depth / memory_depth", "real_depth": "depth",
                        "area_scale": "widthscale * depthscale",
                        "dynamic_energy_scale": "widthscale * (depthscale ** (1.56 / 2))",
                        "static_energy_scale": "area_scale", "n_rdwr_ports": 1,
                        "global_cycle_seconds": "must_specify"},
         "subcomponents": [
             {"name": "storage", "class": "regfile", "area_scale": "area_scale",
              "attributes": {"width": "memory_width", "depth": "memory_depth",
                             "n_rdwr_ports": "n_rdwr_ports",
                             "global_cycle_seconds": "global_cycle_seconds"}},
             {"name": "address_generators[0..1]", "class": "intadder", "attributes": rf_addr}],
         "actions": [
             _act("write", [("storage", "write", "dynamic_energy_scale"), ("address_generators[0]", "add", None)]),
             _act("read", [("storage", "read", "dynamic_energy_scale"), ("address_generators[1]", "add", None)]),
             _act("leak", [("storage", "leak", "static_energy_scale"), ("address_generators[0..1]", "leak", None)]),
             _act("update", [("storage", "write", "dynamic_energy_scale"), ("address_generators[0]", "add", None)])]},
        {"name": "smartbuffer_SRAM",
         "attributes": {"technology": "must_specify", "width": "must_specify",
                        "depth": "must_specify", "n_rw_ports": 1,
                        "global_cycle_seconds": "must_specify"},
         "subcomponents": [
             {"name": "storage", "class": "SRAM",
              "attributes": {"width": "width", "depth": "depth", "n_rw_ports": "n_rw_ports",
                             "technology": "technology",
                             "global_cycle_seconds": "global_cycle_seconds"}},
             {"name": "address_generators[0..1]", "class": "intadder", "attributes": addr}],
         "actions": [
             _act("write", [("storage", "write", None), ("address_generators[0]", "add", None)]),
             _act("read", [("storage", "read", None), ("address_generators[1]", "add", None)]),
             _act("leak", [("storage", "leak", None), ("address_generators[0..1]", "leak", None)]),
             _act("update", [("storage", "write", None), ("address_generators[0]", "add", None)])]},
    ]
    return {"compound_components": {"version": "0.4", "classes": classes}}


def find_accelergy() -> str:
    exe = shutil.which(EXECUTABLE)
    if exe is None:
        raise CoexploreError("accelergy is not installed (no 'accelergy' executable on PATH); "
                             "use the built-in estimator (--energy builtin) or install Accelergy",
                             expected="an 'accelergy' executable on PATH for --energy accelergy")
    return exe


def _name_parts(full_name: str) -> list[str]:
    """A flattened name's parts, split at the dots outside `[a..b]`:
    `System.PE[0..15].buf[0..3]` -> [`System`, `PE[0..15]`, `buf[0..3]`]."""
    return re.findall(r"(?:[^.\[]|\[[^\]]*\])+", full_name)


def _processed_input(items, top_attrs: dict) -> dict:
    """Accelergy's input tree for `items`: each name's leading parts as nested subtrees (the first
    one the top level, `system_top_level` for a bare name), the last as the component."""
    paths = [_name_parts(name) for name, *_ in items]
    paths = [p if len(p) > 1 else ["system_top_level", *p] for p in paths]
    tops = {p[0] for p in paths}
    if len(tops) != 1:
        raise CoexploreError(f"components under {len(tops)} top-level names ({', '.join(sorted(tops))})",
                             key="components", expected="names under one top level, like <top>.<component>[1..N]")
    root = {"name": tops.pop(), "attributes": {"version": "0.4", **top_attrs}, "local": [], "subtree": []}
    for path, (name, cls, attrs, required) in zip(paths, items):
        node = root
        for part in path[1:-1]:
            node = next((t for t in node["subtree"] if t["name"] == part), None) or \
                _append(node["subtree"], {"name": part, "local": [], "subtree": []})
        subclass = attrs.get("subclass")
        attrs = {k: v for k, v in attrs.items() if k != "subclass"}
        entry = {"name": path[-1], "class": cls, "attributes": attrs}
        if cls == "storage" and subclass:
            entry["subclass"] = subclass
        entry["required_actions"] = required if required is not None else (
            ["compute"] if cls == "intmac" else ["update", "write", "read", "leak"])
        if cls == "dummy_storage":
            entry.pop("required_actions")
        node["local"].append(entry)
    _prune(root)
    return {"architecture": {"version": "0.4", "subtree": [root]}}


def _append(nodes: list, node: dict) -> dict:
    nodes.append(node)
    return node


def _prune(node: dict) -> None:
    """Drop empty `local` / `subtree` lists (Accelergy's inputs leave them out)."""
    for t in node.get("subtree", []):
        _prune(t)
    for key in ("local", "subtree"):
        if not node.get(key):
            node.pop(key, None)


def run_accelergy(items, *, classes: str = "example_designs", workdir=None):
    """Run the real Accelergy on `items` [(full_name, class, attributes, required_actions)]
    and return `(ert, art)` as Accelergy wrote them (plus the `estimator` key)."""
    exe = find_accelergy()
    top_attrs = {}
    for _, _, attrs, _ in items:
        for key in ("technology", "global_cycle_seconds"):
            if key in attrs and key not in top_attrs:
                top_attrs[key] = attrs[key]
    top_attrs.setdefault("global_cycle_seconds", 1e-9)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        tmp = Path(tmp)
        files = [tmp / "arch.yaml"]
        files[0].write_text(yaml.safe_dump(_processed_input(items, top_attrs), sort_keys=False))
        if classes == "example_designs":
            files.append(tmp / "components.yaml")
            files[1].write_text(yaml.safe_dump(compound_classes(), sort_keys=False))
        out = tmp / "out"
        proc = subprocess.run([exe, *map(str, files), "-o", str(out)], capture_output=True,
                              text=True, cwd=tmp)
        ert_path, art_path = out / "ERT.yaml", out / "ART.yaml"
        if proc.returncode != 0 or not ert_path.is_file() or not art_path.is_file():
            tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            raise CoexploreError(f"accelergy failed (exit {proc.returncode}): {tail}")
        ert = yaml.safe_load(ert_path.read_text())
        art = yaml.safe_load(art_path.read_text())
    ert["estimator"] = art["estimator"] = f"{ESTIMATOR} ({exe})"
    return ert, art


def accelergy_estimate(cls: str, attributes: dict, classes: str = "example_designs",
                       workdir=None) -> ComponentEstimate:
    """One component priced by the real Accelergy (for `coexplore energy check`)."""
    name = "system_top_level.c[1..1]"
    ert, art = run_accelergy([(name, cls, dict(attributes), None)], classes=classes,
                             workdir=workdir)
    actions, arguments = {}, {}
    for table in ert["ERT"]["tables"]:
        for act in table.get("actions", []):
            e = float(act["energy"])
            if e >= actions.get(act["name"], float("-inf")):
                actions[act["name"]] = e
                arguments[act["name"]] = act.get("arguments") or {}
    area = sum(float(t["area"]) for t in art["ART"]["tables"])
    return ComponentEstimate(cls, actions, area, estimator=ert["estimator"], arguments=arguments)
