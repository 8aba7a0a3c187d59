"""Reading reference grids in the format of `accelergy-ert-grid/ert_grid.csv`.

One row per (component, action) priced by real Accelergy, plus one row per component that
Accelergy refused (`status == failed`). See that grid's README for the column meanings.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from coexplore.errors import CoexploreError
from coexplore.spec.yamlio import read_text

REQUIRED_COLUMNS = ("component_id", "class", "definition", "technology", "attributes_json",
                    "action", "energy_pJ", "area_um2", "status")


@dataclass(frozen=True)
class GridRow:
    """One reference row: a component (class + attributes) and one action's energy."""
    row: int
    component_id: str
    group: str
    cls: str
    definition: str            # 'primitive' or 'compound:<class file>'
    attributes: dict = field(hash=False)
    action: str                # '' on failure rows
    energy_pJ: float | None    # full precision when the grid has it
    area_um2: float | None
    status: str                # 'ok' or 'failed'
    error: str = ""
    energy_breakdown: str = ""
    area_breakdown: str = ""

    @property
    def classes(self) -> str:
        """Which class definitions priced it: 'example_designs' (compound) or 'primitives'."""
        return "primitives" if self.definition == "primitive" else "example_designs"


def _float(text: str) -> float | None:
    text = (text or "").strip()
    return float(text) if text else None


def read_grid(path: str | Path) -> list[GridRow]:
    """Parse a grid CSV; raise CoexploreError naming the file and column on bad input."""
    path = Path(path)
    if not path.is_file():
        raise CoexploreError("grid file not found", file=str(path),
                             expected="a CSV in the format of accelergy-ert-grid/ert_grid.csv")
    rows: list[GridRow] = []
    with io.StringIO(read_text(path), newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise CoexploreError("missing column(s) " + ", ".join(missing), file=str(path),
                                 expected="columns " + ", ".join(REQUIRED_COLUMNS))
        for n, rec in enumerate(reader, start=1):
            try:
                attributes = json.loads(rec["attributes_json"] or "{}")
                energy = _float(rec.get("energy_pJ_full", ""))
                if energy is None:
                    energy = _float(rec["energy_pJ"])
                area = _float(rec.get("area_um2_full", ""))
                if area is None:
                    area = _float(rec["area_um2"])
            except (ValueError, json.JSONDecodeError) as exc:
                raise CoexploreError(f"row {n}: {exc}", file=str(path)) from None
            rows.append(GridRow(
                row=int(rec.get("row") or n), component_id=rec["component_id"],
                group=rec.get("group", ""), cls=rec["class"], definition=rec["definition"],
                attributes=attributes, action=rec["action"] or "", energy_pJ=energy,
                area_um2=area, status=rec["status"], error=rec.get("error", "") or "",
                energy_breakdown=rec.get("energy_breakdown", "") or "",
                area_breakdown=rec.get("area_breakdown", "") or ""))
    return rows
