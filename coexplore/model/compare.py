"""Comparing model results with reference results (Timeloop's `expected.json`)."""

from __future__ import annotations

import math

COUNT_KEYS = ("reads", "fills", "updates", "utilized_capacity", "utilized_instances")


def rel_err(got, ref) -> float:
    if got is None or ref is None:
        return math.nan
    if ref == 0:
        return 0.0 if got == 0 else math.inf
    return abs(got - ref) / abs(ref)


def compare_records(got: dict, ref: dict) -> dict:
    """Per-case comparison: validity, cycles, energy error and every per-level count."""
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
    return out
