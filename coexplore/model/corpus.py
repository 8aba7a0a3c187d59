"""Reference corpora laid out like Timeloop's: `<split>/<arch>/<layer>/<id>/{mapping.yaml, expected.json}`
with `arches/<arch>/{processed.yaml|arch.yaml, ERT.yaml}` and `layers/<layer>.yaml` at the root or above."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from coexplore.errors import CoexploreError
from coexplore.spec.yamlio import read_text


@dataclass
class Case:
    path: Path
    arch: str
    layer: str
    arch_file: Path
    ert_file: Path | None
    layer_file: Path

    @property
    def expected(self) -> dict:
        f = self.path / "expected.json"
        try:
            data = json.loads(read_text(f))
        except ValueError as exc:
            raise CoexploreError(f"not valid JSON: {exc}", file=str(f),
                                 expected="Timeloop results in the corpus' expected.json schema") from None
        need = ("valid",) + (("cycles", "energy_pJ", "edp_J_cycle") if isinstance(data, dict) and data.get("valid")
                             else ())
        missing = [k for k in need if not isinstance(data, dict) or k not in data]
        if missing:
            raise CoexploreError("missing key", file=str(f), key=missing[0],
                                 expected="Timeloop results in the corpus' expected.json schema "
                                          "(valid, cycles, energy_pJ, edp_J_cycle, levels)")
        return data


def _find_up(start: Path, sub: str, stop: Path) -> Path | None:
    """The nearest `sub` at or above `start` (a case may sit deep below the corpus root)."""
    cur = start
    while True:
        cand = cur / sub
        if cand.exists():
            return cand
        if cur.parent == cur:
            return None
        cur = cur.parent


def discover(root: str | Path) -> list[Case]:
    root = Path(root)
    if not root.is_dir():
        raise CoexploreError("not a directory", file=str(root), expected="a corpus directory")
    cases = []
    for exp in sorted(root.rglob("expected.json")):
        case = exp.parent
        if not (case / "mapping.yaml").exists():
            continue
        parts = case.parts
        if len(parts) < 3:
            continue
        arch, layer = parts[-3], parts[-2]
        arch_dir = _find_up(case, f"arches/{arch}", root)
        layer_file = _find_up(case, f"layers/{layer}.yaml", root)
        if arch_dir is None or layer_file is None:
            raise CoexploreError(f"case {case} has no arches/{arch}/ or layers/{layer}.yaml at or above {root}",
                                 file=str(case), expected="arches/ and layers/ at the corpus root or one level up")
        arch_file = arch_dir / "processed.yaml"
        if not arch_file.exists():
            arch_file = arch_dir / "arch.yaml"
        ert = arch_dir / "ERT.yaml"
        cases.append(Case(case, arch, layer, arch_file, ert if ert.exists() else None, layer_file))
    if not cases:
        raise CoexploreError("no cases found", file=str(root),
                             expected="<split>/<arch>/<layer>/<id>/{mapping.yaml, expected.json} below it")
    return cases
