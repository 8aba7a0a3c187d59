"""Comparing an estimator with a reference grid (rows in `ert_grid.csv` format).

Relative error per row = |estimate - reference| / |reference| (a zero reference counts as
error 0 when the estimate is 0 too, else 1). Errors are summarised per class (over its
action rows) and per (class, action); area is reported as the pseudo-action `area` (one
value per component) and is not counted in `rows`. Components the reference Accelergy
refused (`status == failed`) are listed under `reference_failed` with what we did: refused
too, priced but flagged (not Accelergy-compatible), or priced silently.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from coexplore.energy.components import ComponentEstimate, estimate_component
from coexplore.energy.grid import GridRow
from coexplore.errors import CoexploreError

Estimator = Callable[[str, dict, str], ComponentEstimate]


def builtin_estimator(cls: str, attributes: dict, classes: str) -> ComponentEstimate:
    return estimate_component(cls, attributes, classes=classes)


def rel_err(est: float, ref: float) -> float:
    if ref == 0:
        return 0.0 if abs(est) <= 1e-12 else 1.0
    return abs(est - ref) / abs(ref)


def summarize(errors) -> dict:
    e = np.asarray(errors, float)
    if e.size == 0:
        return {"rows": 0, "median_rel_err": None, "p95_rel_err": None, "max_rel_err": None}
    return {"rows": int(e.size), "median_rel_err": float(np.median(e)),
            "p95_rel_err": float(np.percentile(e, 95)), "max_rel_err": float(e.max())}


@dataclass
class RowResult:
    row: int
    component_id: str
    cls: str
    action: str
    reference: float
    estimate: float
    rel_err: float


@dataclass
class CheckResult:
    estimator: str
    rows: list = field(default_factory=list)          # RowResult (actions and 'area')
    unsupported: list = field(default_factory=list)   # {"row", "component_id", "class", "reason"}
    reference_failed: list = field(default_factory=list)

    def to_json(self) -> dict:
        per_class = defaultdict(list)
        per_action = defaultdict(lambda: defaultdict(list))
        for r in self.rows:
            if r.action != "area":
                per_class[r.cls].append(r.rel_err)
            per_action[r.cls][r.action].append(r.rel_err)
        classes = {}
        for cls in sorted(per_action):
            entry = summarize(per_class.get(cls, []))
            entry["actions"] = {a: summarize(v) for a, v in sorted(per_action[cls].items())}
            classes[cls] = entry
        return {"estimator": self.estimator, "classes": classes,
                "rows": sum(1 for r in self.rows if r.action != "area"),
                "unsupported": self.unsupported, "reference_failed": self.reference_failed}


def check_rows(grid: list[GridRow], estimator: Estimator = builtin_estimator,
               estimator_name: str = "coexplore-builtin", progress=None) -> CheckResult:
    """Price every component of `grid` and compare action by action (and area)."""
    result = CheckResult(estimator_name)
    comps: dict[str, list[GridRow]] = defaultdict(list)
    for r in grid:
        comps[r.component_id].append(r)
    items = list(comps.items())
    for cid, rows in (progress(items) if progress else items):
        first = rows[0]
        try:
            est = estimator(first.cls, first.attributes, first.classes)
            error = None
        except CoexploreError as exc:
            est, error = None, exc.format()
        if first.status != "ok":
            if est is None:
                did = "refused"
            elif not est.accelergy_compatible:
                did = "flagged"
            else:
                did = "priced-silently"
            result.reference_failed.append({"row": first.row, "component_id": cid,
                                            "class": first.cls, "ours": did,
                                            "reason": error or "; ".join(est.warnings)})
            continue
        if est is None:
            result.unsupported += [{"row": r.row, "component_id": cid, "class": r.cls,
                                    "action": r.action, "reason": error} for r in rows]
            continue
        for r in rows:
            if r.action not in est.actions:
                result.unsupported.append({"row": r.row, "component_id": cid, "class": r.cls,
                                           "action": r.action,
                                           "reason": f"no action {r.action!r}"})
                continue
            result.rows.append(RowResult(r.row, cid, r.cls, r.action, r.energy_pJ,
                                         est.actions[r.action],
                                         rel_err(est.actions[r.action], r.energy_pJ)))
        if first.area_um2 is not None:
            result.rows.append(RowResult(first.row, cid, first.cls, "area", first.area_um2,
                                         est.area_um2, rel_err(est.area_um2, first.area_um2)))
    return result


def format_table(summary: dict) -> str:
    """Plain-text table of a `CheckResult.to_json()` summary."""
    def pct(v):
        return "   -  " if v is None else f"{100 * v:6.2f}"
    lines = [f"estimator: {summary['estimator']}",
             f"{'class':18s} {'action':8s} {'rows':>5s} {'median%':>8s} {'p95%':>8s} {'max%':>8s}"]
    for cls, entry in summary["classes"].items():
        lines.append(f"{cls:18s} {'(all)':8s} {entry['rows']:5d} {pct(entry['median_rel_err']):>8s} "
                     f"{pct(entry['p95_rel_err']):>8s} {pct(entry['max_rel_err']):>8s}")
        for act, s in entry["actions"].items():
            lines.append(f"{'':18s} {act:8s} {s['rows']:5d} {pct(s['median_rel_err']):>8s} "
                         f"{pct(s['p95_rel_err']):>8s} {pct(s['max_rel_err']):>8s}")
    fitted = [c for c in ("SRAM", "smartbuffer_SRAM") if c in summary["classes"]]
    if fitted and str(summary["estimator"]).startswith("coexplore-builtin"):
        lines.append(f"({', '.join(fitted)}: the built-in CACTI surfaces were fitted to the grid's own CACTI runs, "
                     "so on grid rows these are fit residuals; on sizes outside that data expect a median ~2.7% and "
                     "a p95 ~12-13% (leave one run out, docs/readme_energy.md))")
    reasons = list(dict.fromkeys(str(u["reason"]) for u in summary["unsupported"]))
    lines.append(f"rows compared: {summary['rows']}; unsupported rows: {len(summary['unsupported'])}"
                 + (f" (e.g. {reasons[0]}{f'; {len(reasons) - 1} other reasons' if len(reasons) > 1 else ''})"
                    if reasons else ""))
    if summary["reference_failed"]:
        lines.append("components the reference Accelergy refused (ours: 'refused' too, or 'flagged': priced "
                     "with a warning that Accelergy would not): " + ", ".join(
            f"{f['component_id']}({f['class']}): {f['ours']}" for f in summary["reference_failed"]))
    return "\n".join(lines)
