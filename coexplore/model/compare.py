"""Comparing model results with reference results (Timeloop's `expected.json`)."""

from __future__ import annotations

import math

from coexplore.model.timeloop_stats import PRINTED_PJ, energy_tolerance_pJ

COUNT_KEYS = ("reads", "fills", "updates", "utilized_capacity", "utilized_instances")


def rel_err(got, ref) -> float:
    if got is None or ref is None:
        return math.nan
    if ref == 0:
        return 0.0 if got == 0 else math.inf
    return abs(got - ref) / abs(ref)


ENERGY_TOL = 1e-4          # relative energy difference beyond which a case disagrees
UTILIZATION_TOL = 1e-9     # utilization: computes / (cycles x instances), float round-off only


def compare_records(got: dict, ref: dict, printed: bool = False) -> dict:
    """Per-case comparison: validity, cycles, energy error, every per-level count, and (`others`) the
    other numbers of the reference: computes, utilization, EDP and the energy of each level (and its
    leakage) and of each dataspace there. `printed`: the reference's energies were printed to 0.01 pJ
    (a stats.txt), so each may lie that rounding away."""
    out = {"valid_ref": bool(ref["valid"]), "valid_got": bool(got["valid"]),
           "valid_agree": bool(ref["valid"]) == bool(got["valid"])}
    if not ref["valid"] and not got["valid"]:      # Timeloop's message, word for word
        out["message_exact"] = (got.get("error") or "").strip() == (ref.get("error") or "").strip()
    if not (ref["valid"] and got["valid"]):
        out["error_got"], out["error_ref"] = got.get("error"), ref.get("error")     # (why either refused)
        return out
    out["cycles_exact"] = got["cycles"] == ref["cycles"]
    out["cycles_got"], out["cycles_ref"] = got["cycles"], ref["cycles"]
    out["cycles_rel_err"] = rel_err(got["cycles"], ref["cycles"])
    out["energy_rel_err"] = rel_err(got["energy_pJ"], ref["energy_pJ"])
    out["edp_rel_err"] = rel_err(got["edp_J_cycle"], ref["edp_J_cycle"])
    mismatches = []
    worst = 0.0
    for lv, rlv in ref.get("levels", {}).items():
        glv = got.get("levels", {}).get(lv, {})
        for ds, rds in rlv.get("dataspaces", {}).items():
            gds = glv.get("dataspaces", {}).get(ds)
            for k in COUNT_KEYS:
                g = None if gds is None else gds.get(k)
                if g != rds.get(k):
                    e = rel_err(g, rds.get(k))
                    worst = max(worst, e if not math.isnan(e) else math.inf)
                    mismatches.append({"level": lv, "dataspace": ds, "key": k, "got": g, "ref": rds.get(k)})
        for ds in glv.get("dataspaces", {}):
            if ds not in rlv.get("dataspaces", {}):
                mismatches.append({"level": lv, "dataspace": ds, "key": "kept", "got": True, "ref": False})
                worst = math.inf
    out["counts_exact"] = not mismatches
    out["count_max_rel_err"] = worst
    out["mismatches"] = mismatches
    out["others"] = other_mismatches(got, ref, printed)
    return out


def other_mismatches(got: dict, ref: dict, printed: bool = False) -> list[dict]:
    """The numbers of a valid reference beyond cycles, total energy and counts that the model's record
    does not reproduce: computes (exact), utilization (to round-off), EDP and each level's energy and
    leakage and each dataspace's energy (to ENERGY_TOL, or the printing of a stats.txt). Keys the
    reference leaves out (or null) are not compared. Each: {level, dataspace, key, got, ref}."""
    out = []

    def check(level, ds, key, g, r, rel: float, absolute: float = 0.0):
        if r is None:
            return
        ok = g is not None and (g == r if rel == 0 else abs(g - r) <= max(rel * abs(r), absolute))
        if not ok:
            out.append({"level": level, "dataspace": ds, "key": key, "got": g, "ref": r})
    check(None, None, "computes", got.get("computes"), ref.get("computes"), 0)
    check(None, None, "utilization", got.get("utilization"), ref.get("utilization"), UTILIZATION_TOL)
    check(None, None, "edp_J_cycle", got.get("edp_J_cycle"), ref.get("edp_J_cycle"), ENERGY_TOL,
          energy_tolerance_pJ(ref) * 1e-12 * (ref.get("cycles") or 0) if printed else 0.0)
    for lv, rlv in (ref.get("levels") or {}).items():
        glv = (got.get("levels") or {}).get(lv) or {}
        dss = rlv.get("dataspaces") or {}
        unit = PRINTED_PJ if printed else 0.0     # a printed energy's rounding; a sum's is one per part
        check(lv, None, "energy_pJ", glv.get("energy_pJ"), rlv.get("energy_pJ"), ENERGY_TOL, unit * (1 + 3 * len(dss)))
        check(lv, None, "leakage_pJ", glv.get("leakage_pJ"), rlv.get("leakage_pJ"), ENERGY_TOL, unit)
        for ds, rds in dss.items():
            gds = (glv.get("dataspaces") or {}).get(ds) or {}
            check(lv, ds, "energy_pJ", gds.get("energy_pJ"), rds.get("energy_pJ"), ENERGY_TOL, 3 * unit)
    return out
