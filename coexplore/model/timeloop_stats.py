"""Reading what real Timeloop wrote: `timeloop-model.stats.txt` and the error of a failed run, as
records of the expected.json schema (`Context.record`), so that they compare with the built-in
model's field by field (`model.compare`).

stats.txt prints per level the arithmetic's computes, cycles and energy, and per storage level
and dataspace the per-instance scalar reads/fills/updates, the utilized capacity and instances and
the energy; the totals here are per-instance counts x utilized instances (exact integers) and the
printed energies (pJ to two decimals, so a record's energies carry up to 0.005 pJ per printed value
of rounding). Levels Timeloop leaves out (the zero-energy spatial dummies, by default) get zeros.
"""

from __future__ import annotations

import re

from coexplore.errors import CoexploreError

_LEVEL = re.compile(r"^=== (.+) ===$")
_FIELD = re.compile(r"^(\s*)([^:]+?)\s*:\s*(.*)$")
_DATASPACE = re.compile(r"^    (\S[^:]*):$")
_SUMMARY_CYCLES = re.compile(r"^Summary Stats\n-+\n(?:.*\n)*?Cycles: ([0-9]+)$", re.MULTILINE)
_NUMBER = re.compile(r"^(-?[0-9.]+(?:e[+-]?[0-9]+)?)")


def _number(text: str, where: str) -> float:
    m = _NUMBER.match(text.strip())
    if not m:
        raise CoexploreError(f"not a number: {text.strip()!r}", key=where, expected="a number as Timeloop prints it")
    return float(m.group(1))


def parse_stats(text: str, levels: list[str] | None = None, file: str | None = None) -> dict:
    """The record of a stats.txt: `valid`, `energy_pJ`, `cycles`, `computes`, `utilization`,
    `edp_J_cycle` and `levels` {name: {energy_pJ, leakage_pJ, dataspaces: {name: {reads, fills,
    updates, utilized_capacity, utilized_instances, energy_pJ}}}} (the arithmetic level: its
    energy only). `levels`, the architecture's level names top to bottom, orders the record and
    adds the levels stats.txt leaves out."""
    found: dict[str, dict] = {}
    arith = None
    name = section = ds = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith(("Networks", "Operational Intensity Stats", "Summary Stats")):
            break                                 # (the sections after the levels name them again)
        m = _LEVEL.match(line)
        if m:
            name, section, ds = m.group(1), None, None
            found[name] = {"energy_pJ": 0.0, "leakage_pJ": 0.0, "dataspaces": {}, "_fields": {}}
            continue
        if name is None:
            continue
        if line.strip() in ("SPECS", "STATS"):
            section, ds = line.strip(), None
            continue
        lv = found[name]
        m = _DATASPACE.match(line)
        if section == "STATS" and m:
            ds = m.group(1)
            lv["dataspaces"][ds] = {}
            continue
        m = _FIELD.match(line)
        if not m or section is None:
            continue
        key, value = m.group(2), m.group(3)
        if ds is not None and section == "STATS":
            lv["dataspaces"][ds][key] = value
        else:
            lv["_fields"][(section, key)] = value
    if not found:
        raise CoexploreError("no level statistics", file=file, expected="a timeloop-model.stats.txt of a valid run "
                             "(its 'Buffer and Arithmetic Levels' section)")
    out_levels: dict[str, dict] = {}
    computes = instances = None
    for name, lv in found.items():
        f = lv.pop("_fields")
        where = f"{name}"
        if ("STATS", "Computes (total)") in f:            # the arithmetic level
            arith = name
            computes = int(_number(f[("STATS", "Computes (total)")], where + ".Computes"))
            instances = int(_number(f[("SPECS", "Instances")], where + ".Instances"))
            out_levels[name] = {"energy_pJ": _number(f[("STATS", "Energy (total)")], where + ".Energy"),
                                "dataspaces": {}}
            continue
        leak = _number(f.get(("SPECS", "Leakage energy (total)"), "0"), where + ".Leakage energy")
        spaces = {}
        for ds, d in lv["dataspaces"].items():
            at = f"{name}.{ds}"
            used = int(_number(d["Utilized instances (max)"], at + ".Utilized instances"))
            spaces[ds] = {
                "reads": int(_number(d["Scalar reads (per-instance)"], at + ".Scalar reads")) * used,
                "fills": int(_number(d["Scalar fills (per-instance)"], at + ".Scalar fills")) * used,
                "updates": int(_number(d["Scalar updates (per-instance)"], at + ".Scalar updates")) * used,
                "utilized_capacity": int(_number(d["Utilized capacity"], at + ".Utilized capacity")),
                "utilized_instances": used,
                "energy_pJ": _number(d["Energy (total)"], at + ".Energy (total)"),
            }
        out_levels[name] = {"energy_pJ": sum(s["energy_pJ"] for s in spaces.values()) + leak,
                            "leakage_pJ": leak, "dataspaces": spaces}
    if arith is None:
        raise CoexploreError("no arithmetic level", file=file, expected="a level with 'Computes (total)' "
                             "(a timeloop-model.stats.txt)")
    if levels is not None:
        missing = [n for n in out_levels if n not in levels]
        if missing:
            raise CoexploreError(f"levels the architecture does not have: {', '.join(missing)}", file=file,
                                 expected="the stats of a run on this architecture")
        out_levels = {n: out_levels.get(n, {"energy_pJ": 0.0, "leakage_pJ": 0.0, "dataspaces": {}})
                      for n in levels}
        out_levels[arith] = {k: v for k, v in out_levels[arith].items() if k != "leakage_pJ"}
    summary = _SUMMARY_CYCLES.search(text)       # the slowest level's (bandwidth), not the arithmetic's
    if summary is None:
        raise CoexploreError("no 'Cycles:' in its 'Summary Stats'", file=file,
                             expected="a whole timeloop-model.stats.txt")
    cycles = int(summary.group(1))
    energy = sum(lv["energy_pJ"] for lv in out_levels.values())
    return {"valid": True, "error": None, "energy_pJ": energy, "cycles": cycles, "computes": computes,
            "utilization": computes / (cycles * instances) if cycles and instances else 0.0,
            "edp_J_cycle": energy * 1e-12 * cycles, "levels": out_levels}


def energy_tolerance_pJ(record: dict) -> float:
    """How far a stats.txt record's total energy may lie from the exact one: half a hundredth of a
    pJ for each value printed (each level's leakage, each dataspace's energy, the arithmetic's)."""
    printed = sum(1 + len(lv.get("dataspaces", {})) for lv in record.get("levels", {}).values())
    return 0.005 * printed


def failed_run(log: str) -> dict:
    """The record of a run timeloop-model refused: its first `ERROR:` line (what the corpus's
    expected.json keeps as `error`), or its last non-empty line if it printed none."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    error = next((ln for ln in lines if ln.startswith("ERROR")), lines[-1] if lines else "timeloop-model failed")
    return {"valid": False, "error": error, "energy_pJ": None, "cycles": None, "computes": None,
            "utilization": None, "edp_J_cycle": None}
