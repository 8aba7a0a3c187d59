"""Accelergy energy (ERT) and area (ART) tables, reduced to what Timeloop looks up.

Timeloop keys a table by the last `.`-segment of its name with `[a..b]` removed, takes per action
the largest energy over the action's argument variants (and over repeated tables of the same
component), and maps Accelergy action names onto its own operations (read, fill, update, leak,
compute) in a fixed order of preference (src/model/topology.cpp, ParseAccelergyERT).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coexplore.errors import CoexploreError
from coexplore.spec.yamlio import load_yaml

OPERATIONS = {
    "read": ("random_read", "read"),
    "fill": ("random_fill", "random_write", "fill", "write"),
    "update": ("random_update", "random_write", "update", "write"),
    "leak": ("leak",),
    "compute": ("mac_random", "mult_random", "mac", "mult", "compute"),
}


def level_key(table_name: str) -> str:
    name = re.sub(r"\[\d+\.\.\d+\]", "", str(table_name))
    return name.split(".")[-1]


def named_instances(table_name: str) -> int | None:
    """The instances a table's name gives its component (the product of its `[a..b]` ranges:
    `system.PE[0..15].MAC[0..15]` 256), None for a name without ranges."""
    ranges = re.findall(r"\[(\d+)\.\.(\d+)\]", str(table_name))
    return math.prod(max(0, int(hi) - int(lo) + 1) for lo, hi in ranges) if ranges else None


@dataclass
class EnergyTable:
    """Per level, the max energy (pJ) of each Accelergy action, and Timeloop's per-operation view."""

    actions: dict[str, dict[str, float]] = field(default_factory=dict)
    source: str | None = None
    raw: Any = None
    instances: dict[str, set[int]] = field(default_factory=dict)   # level -> what its tables' names give
    priced_from: dict[str, str] = field(default_factory=dict)   # architecture file name -> digest when priced

    def energy(self, level: str, op: str) -> float | None:
        acts = self.actions.get(level)
        if acts is None:
            return None
        for name in OPERATIONS[op]:
            if name in acts:
                return acts[name]
        return None

    def has_level(self, level: str) -> bool:
        return level in self.actions


def parse_ert(data: Any, file: str | None = None) -> EnergyTable:
    """An Accelergy energy reference table (the `ERT:` dict, or the dict holding it) as the model
    reads it: per level, the energy of each action (pJ)."""
    if isinstance(data, dict) and "ERT" not in data and "ART" in data:
        raise CoexploreError("an area reference table (ART), not an energy table", file=file, key="ERT",
                             expected="the ERT.yaml Accelergy wrote beside the ART.yaml")
    if isinstance(data, dict) and "ERT" in data:
        data = data["ERT"]
    tables = data.get("tables") if isinstance(data, dict) else None
    if not isinstance(tables, list):
        said = "missing key" if not isinstance(data, dict) or "tables" not in data else f"got {tables!r}"[:80]
        raise CoexploreError(said, file=file, key="ERT.tables",
                             expected="a list of {name, actions: [{name, energy}]}")
    # as Timeloop reads it: the actions of one component name are pooled (largest energy per
    # action); components whose names differ but end in the same level name are applied in the
    # order they appear, a later one replacing the operations (read, fill, ...) it prices
    full: dict[str, dict[str, float]] = {}
    for i, t in enumerate(tables):
        if not isinstance(t, dict) or "name" not in t:
            raise CoexploreError("malformed table", file=file, key=f"ERT.tables[{i}]",
                                 expected="a mapping with name and actions")
        acts = full.setdefault(str(t["name"]), {})
        if t.get("actions") is not None and not isinstance(t["actions"], list):
            raise CoexploreError(f"got {t['actions']!r}"[:80], file=file, key=f"ERT.tables[{i}].actions",
                                 expected="a list of {name, energy} (one per action)")
        for j, a in enumerate(t.get("actions") or []):
            where = f"ERT.tables[{i}].actions[{j}]"
            if not isinstance(a, dict) or a.get("name") is None:
                raise CoexploreError("an action without a name", file=file, key=f"{where}.name",
                                     expected="an Accelergy action name (read, write, leak, ...)")
            e = _energy(a.get("energy"))
            if e is None:
                raise CoexploreError(f"energy {a.get('energy')!r}" if "energy" in a else
                                     f"action {a['name']} has no energy", file=file, key=f"{where}.energy",
                                     expected="a finite number >= 0 (pJ)")
            acts[str(a["name"])] = max(e, acts.get(str(a["name"]), float("-inf")))
    out: dict[str, dict[str, float]] = {}
    instances: dict[str, set[int]] = {}
    for name in full:
        n = named_instances(name)
        if n is not None:
            instances.setdefault(level_key(name), set()).add(n)
    for name, acts in full.items():
        level = out.setdefault(level_key(name), {})
        for names in OPERATIONS.values():
            if any(n in acts for n in names):          # this table prices the operation: it wins
                for n in names:
                    level.pop(n, None)
        level.update(acts)
    return EnergyTable(out, file, data, instances)


def _energy(value) -> float | None:
    """An action energy (pJ): a number, also one YAML read as text ('1e-3'), finite and >= 0."""
    if isinstance(value, bool):
        return None
    try:
        e = float(value)
    except (TypeError, ValueError):
        return None
    return e if math.isfinite(e) and e >= 0 else None


def load_ert(path: str | Path) -> EnergyTable:
    """`parse_ert` of an ERT.yaml file, with the architecture file it was priced from when
    coexplore wrote it (its `# priced from` line, `priced_from_line`)."""
    ert = parse_ert(load_yaml(path), str(path))
    with open(path, encoding="utf-8", errors="replace") as f:
        head = [f.readline() for _ in range(3)]
    line = next((line for line in head if line.startswith(PRICED_FROM)), "")
    ert.priced_from = dict(re.findall(r"\s*([^,]+?) \(sha256 ([0-9a-f]{16})\)", line[len(PRICED_FROM):]))
    return ert


PRICED_FROM = "# priced from "


def file_digest(path: str | Path) -> str:
    """The first 16 hex digits of a file's SHA-256 (what `priced_from_line` records)."""
    import hashlib
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def priced_from_line(*arch_paths: str | Path) -> str:
    """The header line of an ERT.yaml that coexplore priced from the architecture file(s) (one
    design's arch.yaml and processed.yaml): with it, an edit of such a file since is noticed when
    the table is read with it (`stale_ert`). Files are known by name (without spaces)."""
    return PRICED_FROM + ", ".join(f"{Path(p).name} (sha256 {file_digest(p)})" for p in arch_paths)


def stale_ert(ert: EnergyTable, arch_path: str | Path) -> str | None:
    """What to say when `ert` was priced by coexplore from a file of `arch_path`'s name whose content
    has changed since (an architecture edited after its ERT.yaml was written); None otherwise."""
    then = ert.priced_from.get(Path(arch_path).name)
    if then is None or not Path(arch_path).is_file() or (now := file_digest(arch_path)) == then:
        return None
    return (f"{ert.source} was priced from {Path(arch_path).name} before it changed (sha256 "
            f"{then} then, {now} now): its energies may be stale; write it again "
            f"(coexplore energy tables {arch_path} --out {Path(ert.source).parent}) or move it away")


# the energy tables found beside an architecture file, in this order (Accelergy's, timeloop-model's
# and timeloop-mapper's names)
ERT_FILE_NAMES = ("ERT.yaml", "timeloop-model.ERT.yaml", "timeloop-mapper.ERT.yaml")


def ert_file_beside(arch_path: str | Path) -> Path | None:
    """The first of ERT_FILE_NAMES in the architecture file's folder, if any."""
    for name in ERT_FILE_NAMES:
        cand = Path(arch_path).parent / name
        if cand.exists() or cand.is_symlink():     # (a broken link is read, and said unreadable)
            return cand
    return None
