"""Reading reference grids in the format of `accelergy-ert-grid/ert_grid.csv`.

One row per (component, action) priced by real Accelergy, plus one row per component that
Accelergy refused (`status == failed`). See that grid's README for the column meanings.
"""

from __future__ import annotations

import csv
import io
import json
import math
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


def _float(text: str | None, where: str, column: str, file: str) -> float | None:
    """A number, or None for an empty cell; a non-finite or negative one is refused."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise CoexploreError(f"{where}: not a number: {text[:40]!r}", file=file, key=column,
                             expected="a number >= 0 (pJ or um^2)") from None
    if not math.isfinite(value) or value < 0:
        raise CoexploreError(f"{where}: {value}", file=file, key=column, expected="a finite number >= 0 (pJ or um^2)")
    return value


ROUNDING = 1e-4    # the grid's rounded column (6 significant digits) against its full-precision one


def _value(rec: dict, column: str, where: str, file: str) -> float | None:
    """A row's reference value: its `<column>_full` when the grid has one, else `<column>`; both
    are read, and a rounded value that is not the full one rounded is refused (an edited cell)."""
    rounded = _float(rec[column], where, column, file)
    full = _float(rec.get(column + "_full"), where, column + "_full", file)
    if full is None:
        return rounded
    if rounded is not None and abs(rounded - full) > ROUNDING * max(abs(full), 1e-12):
        raise CoexploreError(f"{where}: {rounded:g} is not {column}_full = {full:g} rounded", file=file, key=column,
                             expected=f"{column} and {column}_full the same number (one rounded)")
    return full


def read_grid(path: str | Path) -> list[GridRow]:
    """Parse a grid CSV; raise CoexploreError naming the file and column on bad input."""
    path = Path(path)
    if not path.is_file():
        raise CoexploreError("grid file not found", file=str(path),
                             expected="a CSV in the format of accelergy-ert-grid/ert_grid.csv")
    rows: list[GridRow] = []
    file = str(path)
    with io.StringIO(read_text(path), newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise CoexploreError("missing column(s) " + ", ".join(missing), file=file,
                                 expected="columns " + ", ".join(REQUIRED_COLUMNS))
        try:
            for n, rec in enumerate(reader, start=1):
                rows.append(_grid_row(rec, n, file, reader.line_num))
        except csv.Error as exc:
            raise CoexploreError(f"line {reader.line_num}: {exc}", file=file,
                                 expected="a CSV in the format of accelergy-ert-grid/ert_grid.csv") from None
    if not rows:
        raise CoexploreError("no rows after the header", file=file,
                             expected="a CSV in the format of accelergy-ert-grid/ert_grid.csv, one row per action")
    return rows


def _grid_row(rec: dict, n: int, file: str, line: int | None = None) -> GridRow:
    """Record `n` (the grid's row when it has no `row` column), ending at file line `line` (said in errors)."""
    where = f"line {line}" if line is not None else f"row {n}"
    if None in rec or any(rec.get(c) is None for c in REQUIRED_COLUMNS):
        what = "more" if None in rec else "fewer"
        raise CoexploreError(f"{where} has {what} cells than the header", file=file,
                             expected="one cell per column of the header")
    try:
        attributes = json.loads(rec["attributes_json"] or "{}")
    except json.JSONDecodeError as exc:
        raise CoexploreError(f"{where}: not JSON ({exc.msg})", file=file, key="attributes_json",
                             expected="a JSON object of the component's attributes") from None
    if not isinstance(attributes, dict):
        raise CoexploreError(f"{where}: {type(attributes).__name__}", file=file, key="attributes_json",
                             expected="a JSON object of the component's attributes")
    energy, area = _value(rec, "energy_pJ", where, file), _value(rec, "area_um2", where, file)
    row = (rec.get("row") or "").strip()
    if row and not row.isdigit():
        raise CoexploreError(f"{where}: {row[:40]!r}", file=file, key="row", expected="a whole number >= 0")
    return GridRow(
        row=int(row) if row else n, component_id=rec["component_id"],
        group=rec.get("group", ""), cls=rec["class"], definition=rec["definition"],
        attributes=attributes, action=rec["action"] or "", energy_pJ=energy,
        area_um2=area, status=rec["status"], error=rec.get("error", "") or "",
        energy_breakdown=rec.get("energy_breakdown", "") or "",
        area_breakdown=rec.get("area_breakdown", "") or "")
