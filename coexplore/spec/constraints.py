"""Timeloop mapspace constraints, per level: factor bounds, permutation prefixes, split, keep/bypass.

Read from the flattened `architecture_constraints` / `mapspace_constraints` `targets:` list (v0.3,
`constraints.yaml`) or from the `constraints:` of v0.4 nodes (a container's spatial constraints
apply to its `inter_<container>_spatial` level, as timeloopfe flattens them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coexplore.errors import CoexploreError
from coexplore.spec.architecture import Architecture
from coexplore.spec.yamlio import load_yaml

_FACTOR = re.compile(r"^\s*([A-Za-z_][A-Za-z_0-9]*)\s*(<=|>=|=)\s*(\d+)\s*$")


@dataclass
class LevelConstraints:
    temporal_factors: dict[str, tuple[str, int]] = field(default_factory=dict)   # dim -> (op, n)
    temporal_permutation: list[str] = field(default_factory=list)               # innermost-first prefix
    spatial_factors: dict[str, tuple[str, int]] = field(default_factory=dict)
    spatial_permutation: list[str] = field(default_factory=list)
    split: int | None = None
    keep: set[str] | None = None
    bypass: set[str] | None = None
    # keep_only: the dataspaces not in `keep` are bypassed (v0.4 node constraints as timeloopfe
    # flattens them, or a `keep_only` key); otherwise, as in Timeloop's constraints files, a
    # dataspace named in neither list is left to the mapper
    keep_only: bool = False
    # factors_only (timeloopfe): the dimensions not listed get factor 1 at this level
    temporal_factors_only: bool = False
    spatial_factors_only: bool = False
    ignored: list[str] = field(default_factory=list)   # keys read but not applied (e.g. maximize_dims)
    source: str | None = field(default=None, compare=False)   # the file they were read from


def _factors(value, *, file, key) -> dict[str, tuple[str, int]]:
    if value is None:
        return {}
    items = value if isinstance(value, list) else re.split(r"[,\s]+", str(value).strip())
    out = {}
    for item in items:
        if not str(item).strip():
            continue
        m = _FACTOR.match(str(item))
        if not m:
            raise CoexploreError(f"cannot read factor constraint {item!r}", file=file, key=key,
                                 expected="entries like 'C=1', 'M<=4' or 'P>=2'")
        out[m.group(1)] = (m.group(2), int(m.group(3)))
    return out


def _perm(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    s = str(value).strip()
    return s.split() if " " in s else list(s)


# keys of a constraint that the mapspace applies, per kind (others are recorded in `ignored`)
_APPLIED = {"temporal": {"factors", "factors_only", "permutation"},
            "spatial": {"factors", "factors_only", "permutation", "split"},
            "bypass": {"keep", "bypass", "keep_only"}}
_APPLIED["dataspace"] = _APPLIED["datatype"] = _APPLIED["bypass"]


def _apply(c: LevelConstraints, kind: str, body: dict, file, key) -> None:
    c.ignored += [f"{key}.{k}" for k in body if k not in _APPLIED.get(kind, ()) | {"target", "type", "name"}]
    if kind in ("temporal", "spatial"):
        factors = _factors(body.get("factors"), file=file, key=f"{key}.factors")
        if body.get("factors_only") is not None:
            factors.update(_factors(body["factors_only"], file=file, key=f"{key}.factors_only"))
            setattr(c, f"{kind}_factors_only", True)
        getattr(c, f"{kind}_factors").update(factors)
        if body.get("permutation") is not None:
            setattr(c, f"{kind}_permutation", _perm(body["permutation"]))
    if kind == "spatial" and body.get("split") is not None:
        split = body["split"]
        if isinstance(split, bool) or not isinstance(split, int) or split < 0:
            raise CoexploreError(f"got {split!r}", file=file, key=f"{key}.split",
                                 expected="a non-negative integer (v0.4 expressions are not evaluated)")
        c.split = split
    elif kind in ("bypass", "dataspace", "datatype"):
        if body.get("keep") is not None:
            c.keep = set(body["keep"])
        if body.get("keep_only") is not None:
            c.keep = set(body["keep_only"])
            c.keep_only = True
        if body.get("bypass") is not None:
            c.bypass = set(body["bypass"])


def constraints_from_targets(targets: list, arch: Architecture, file=None) -> dict[str, LevelConstraints]:
    out = {lv.name: LevelConstraints(source=None if file is None else str(file)) for lv in arch.levels}
    for i, t in enumerate(targets or []):
        key = f"targets[{i}]"
        if not isinstance(t, dict) or "target" not in t:
            raise CoexploreError("missing target", file=file, key=key, expected="a mapping with target and type")
        if t["target"] not in out:
            if t["target"] == arch.compute.name:
                continue
            raise CoexploreError(f"unknown level '{t['target']}'", file=file, key=f"{key}.target",
                                 expected=f"one of {list(out)}")
        _apply(out[t["target"]], t.get("type", "temporal"), t, file, key)
    return out


def constraints_from_nodes(arch: Architecture) -> dict[str, LevelConstraints]:
    out = {}
    for lv in arch.levels:
        c = LevelConstraints(source=arch.source)
        raw = lv.constraints or {}
        for kind in ("temporal", "spatial", "dataspace"):
            if isinstance(raw.get(kind), dict):
                if lv.is_dummy and kind != "spatial":
                    continue
                _apply(c, kind, raw[kind], arch.source, f"{lv.name}.constraints.{kind}")
        if c.keep is not None and c.bypass is None:
            c.keep_only = True          # timeloopfe writes the complement as the bypass list
        if lv.is_dummy:
            # dummy spatial levels carry no temporal loops and keep nothing
            c.temporal_factors = {}
            c.keep, c.bypass, c.keep_only = set(), None, True
        out[lv.name] = c
    return out


def constraint_targets(data) -> list | None:
    """The constraint directives of a Timeloop input document: `architecture_constraints` and
    `mapspace_constraints` (or `mapspace` / `constraints`) targets together, as timeloop-mapper
    combines them, or a bare `targets` list; None when the document has none."""
    if not isinstance(data, dict):
        return None
    found = False
    body: list = []
    for k in ("architecture_constraints", "mapspace_constraints", "mapspace", "constraints"):
        v = data.get(k)
        if isinstance(v, dict) and "targets" in v:
            found = True
            body += list(v["targets"] or [])
            if k == "mapspace":
                break                          # mapspace and constraints: older names of one block
    if not found and "targets" in data:
        return list(data["targets"] or [])
    return body if found else None


def load_constraints(arch: Architecture, path: str | Path | None = None) -> dict[str, LevelConstraints]:
    """Constraints from a constraints file, else those in the architecture's own file (timeloopfe's
    parsed-processed-input carries `architecture_constraints`), else a constraints.yaml beside
    it, else its v0.4 nodes."""
    if path is not None:
        body = constraint_targets(load_yaml(path))
        if body is None:
            raise CoexploreError("no constraint targets", file=str(path), key="architecture_constraints.targets",
                                 expected="a list of {target, type, factors|permutation|keep|bypass}")
        return constraints_from_targets(body, arch, str(path))
    if arch.source and Path(arch.source).is_file():
        inline = constraint_targets(load_yaml(arch.source))
        if inline is not None:
            return constraints_from_targets(inline, arch, str(arch.source))
        cand = Path(arch.source).parent / "constraints.yaml"
        if cand.exists() and any(lv.constraints == {} for lv in arch.levels):
            return load_constraints(arch, cand)
    return constraints_from_nodes(arch)
