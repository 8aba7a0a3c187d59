"""Flatten a v0.4 node list into the v0.3 `subtree/local` form and its mapspace constraints.

This reproduces what timeloopfe writes into `parsed-processed-input.yaml` for the
architectures of the Timeloop exercises (checked against the corpus' processed.yaml and
constraints.yaml):

- one subtree `<top container>_top_level` whose attributes are the global variables
  (version, technology, global_cycle_seconds) overlaid with the top container's attributes;
- one `local` entry per storage/compute component, outermost first, named `name[1..N]`
  with N = the product of the enclosing spatial meshes, and `meshX`/`meshY` = the
  products of the enclosing meshX / meshY;
- every `!Container` with a `spatial` mesh inserts, where it stands, a `dummy_storage`
  level `inter_<container>_spatial` (depth = width = datawidth = 1, technology -1) that
  carries the container's spatial loops and keeps nothing; its instances are those of
  the enclosing meshes (not its own);
- `!Parallel` siblings become a linear chain in listed order; `!Nothing` disappears;
- defaults timeloopfe adds to every storage level (n_banks 2, cluster_size 1, ...) and
  attributes inherited from enclosing containers (e.g. `technology`) are filled in.

Constraints follow the same walk: storage levels get their keep/bypass (the missing half
is the complement) and a temporal constraint (the user's, else `permutation: N`); each
spatial container's dummy level gets its spatial constraint, all-ones temporal factors and
bypass of every dataspace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coexplore.arch.timeloop_yaml import Component, Container, Nothing, Parallel
from coexplore.errors import CoexploreError
from coexplore.spec.architecture import timeloop_kind

# the CNN_Layer problem shape every coexplore workload uses (GEMMs are R=S=Q=1 layers)
DIMENSIONS = ("C", "M", "R", "S", "N", "P", "Q")
DATASPACES = ("Weights", "Inputs", "Outputs")


# defaults timeloopfe writes into every storage level, in its order (meshX/meshY follow)
_STORAGE_DEFAULTS = (("has_power_gating", False), ("n_banks", 2), ("cluster_size", 1),
                     ("reduction_supported", True), ("multiple_buffering", 1),
                     ("min_utilization", 0), ("allow_overbooking", False))
_STORAGE_ACTIONS = ["read", "update", "leak", "write"]


@dataclass(frozen=True)
class Flattened:
    """The flattened architecture (`{'architecture': ...}`) and mapspace constraints
    (`{'architecture_constraints': {'targets': [...]}}`), plus the level names in order."""
    processed: dict
    constraints: dict
    top_name: str
    levels: tuple[str, ...]
    instances: tuple[int, ...]


def _joined(value: Any, sep: str) -> str:
    """A factor/permutation list (or a space-separated string) as Timeloop's flat string."""
    if isinstance(value, str):
        parts = value.replace(",", " ").split()
    else:
        parts = [str(v) for v in value]
    return sep.join(parts)


class _Walker:
    def __init__(self, top: Container):
        self.top_attrs = dict(top.get("attributes") or {})
        self.nested: dict = {}
        self.mesh_x = 1
        self.mesh_y = 1
        self.local: list[dict] = []
        self.targets: list[dict] = []
        self.levels: list[str] = []
        self.instances: list[int] = []

    # -- attributes ---------------------------------------------------------------
    def _finish_attrs(self, attrs: dict, kind: str) -> dict:
        out = dict(attrs)
        if kind == "storage":
            for key, value in _STORAGE_DEFAULTS:
                out.setdefault(key, value)
        else:
            out.setdefault("has_power_gating", False)
        out["meshX"] = self.mesh_x
        out["meshY"] = self.mesh_y
        for key, value in self.top_attrs.items():
            out.setdefault(key, value)
        out.setdefault("power_gated_at", None)
        for key, value in self.nested.items():
            out.setdefault(key, value)
        return out

    def _add_level(self, name: str, entry: dict) -> None:
        n = self.mesh_x * self.mesh_y
        self.local.append({"name": f"{name}[1..{n}]", **entry})
        self.levels.append(name)
        self.instances.append(n)

    # -- nodes --------------------------------------------------------------------
    def walk(self, nodes: list) -> None:
        for node in nodes:
            if isinstance(node, Parallel):
                self.walk(list(node.get("nodes") or []))
            elif isinstance(node, Nothing):
                continue
            elif isinstance(node, Container):
                self.container(node)
            elif isinstance(node, Component):
                self.component(node)
            else:
                raise CoexploreError(f"unknown architecture node {node!r}",
                                     expected="!Container, !Component, !Parallel or !Nothing")

    def container(self, node: Container) -> None:
        self.nested.update(node.get("attributes") or {})
        spatial = node.get("spatial")
        if spatial is None:
            return
        name = f"inter_{node['name']}_spatial"
        attrs = self._finish_attrs({"width": 1, "depth": 1, "datawidth": 1, "technology": -1},
                                   "storage")
        self._add_level(name, {"class": "dummy_storage", "attributes": attrs, "enabled": True})
        cons = (node.get("constraints") or {}).get("spatial")
        if cons:
            entry: dict = {"type": "spatial"}
            if "factors" in cons:
                entry["factors"] = _joined(cons["factors"], ",")
            if "permutation" in cons:
                entry["permutation"] = _joined(cons["permutation"], "")
            if "split" in cons:
                entry["split"] = cons["split"]
            entry["target"] = name
            self.targets.append(entry)
        self.targets.append({"factors": ",".join(f"{d}=1" for d in DIMENSIONS),
                             "permutation": "".join(DIMENSIONS), "type": "temporal",
                             "target": name})
        self.targets.append({"bypass": list(DATASPACES), "type": "bypass", "target": name})
        self.mesh_x *= int(spatial.get("meshX", 1))
        self.mesh_y *= int(spatial.get("meshY", 1))

    def component(self, node: Component) -> None:
        name = node["name"]
        kind = timeloop_kind(str(node["class"]))
        if kind is None:      # a class Timeloop does not model: it ignores the component (so does the reader)
            return
        entry: dict = {"class": node["class"]}
        if "subclass" in node:
            entry["subclass"] = node["subclass"]
        entry["attributes"] = self._finish_attrs(dict(node.get("attributes") or {}), kind)
        entry["required_actions"] = list(_STORAGE_ACTIONS) if kind == "storage" else ["compute"]
        entry["enabled"] = True
        self._add_level(name, entry)
        if kind != "storage":
            return
        cons = node.get("constraints") or {}
        ds = cons.get("dataspace")
        if ds:
            keep = list(ds.get("keep") or [])
            bypass = list(ds.get("bypass") or [])
            if "keep" in ds and "bypass" in ds:
                entry_c = {"keep": keep, "bypass": bypass, "type": "bypass"}
            elif "keep" in ds:
                entry_c = {"keep": keep, "type": "bypass",
                           "bypass": [d for d in DATASPACES if d not in keep]}
            else:
                entry_c = {"bypass": bypass, "type": "bypass",
                           "keep": [d for d in DATASPACES if d not in bypass]}
            entry_c["target"] = name
            self.targets.append(entry_c)
        temporal = cons.get("temporal")
        if temporal:
            entry_t: dict = {}
            for key, value in temporal.items():
                if key in ("factors",):
                    entry_t[key] = _joined(value, ",")
                elif key == "permutation":
                    entry_t[key] = _joined(value, "")
                else:
                    entry_t[key] = value
            entry_t["type"] = "temporal"
            entry_t["target"] = name
        else:
            entry_t = {"type": "temporal", "permutation": "N", "target": name}
        self.targets.append(entry_t)


def flatten(nodes: list, variables: dict) -> Flattened:
    """Flatten a v0.4 `nodes` list (top container first) with global `variables`."""
    if not nodes or not isinstance(nodes[0], Container) or "spatial" in nodes[0]:
        raise CoexploreError("the first architecture node must be a non-spatial !Container",
                             key="architecture.nodes[0]", expected="!Container without 'spatial'")
    top = nodes[0]
    walker = _Walker(top)
    walker.walk(list(nodes[1:]))
    top_attrs = dict(variables)
    top_attrs.update(top.get("attributes") or {})
    top_attrs.setdefault("has_power_gating", False)
    top_attrs.setdefault("power_gated_at", None)
    top_name = f"{top['name']}_top_level"
    version = str(variables.get("version", "0.4"))
    top_attrs["version"] = version
    processed = {"architecture": {"version": version, "subtree": [
        {"name": top_name, "attributes": top_attrs, "local": walker.local}]}}
    constraints = {"architecture_constraints": {"targets": walker.targets}}
    return Flattened(processed, constraints, top_name, tuple(walker.levels),
                     tuple(walker.instances))
