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

# what timeloop-model prints when the mapping does not fit (model.cpp): other errors (exit 1 too) are
# a problem with its inputs or build, not an invalid mapping
REFUSALS = ("ERROR: couldn't map level", "ERROR: mapping violates architecture constraints")

_LEVEL = re.compile(r"^=== (.+) ===$")
_FIELD = re.compile(r"^(\s*)([^:]+?)\s*:\s*(.*)$")
_DATASPACE = re.compile(r"^    (\S[^:]*):$")
_SUMMARY = re.compile(r"^Summary Stats\n-+\n(?:.*\n)*?Cycles: ([0-9]+)$", re.MULTILINE)
_SUMMARY_COMPUTES = re.compile(r"^(?:MACCs|Computes) = ([0-9]+)$", re.MULTILINE)
_NUMBER = re.compile(r"^(-?[0-9.]+(?:e[+-]?[0-9]+)?)")


def _number(text: str, where: str) -> float:
    m = _NUMBER.match(text.strip())
    if not m:
        raise CoexploreError(f"not a number: {text.strip()!r}", key=where, expected="a number as Timeloop prints it")
    return float(m.group(1))


def parse_stats(text: str, levels: list[str] | None = None, file: str | None = None) -> dict:
    """`read_stats_text` of `text`, an error in it naming `file` (a tree of runs holds many stats.txt)."""
    try:
        return read_stats_text(text, levels, file)
    except CoexploreError as exc:
        raise exc.with_file(file) if file is not None else exc


def read_stats_text(text: str, levels: list[str] | None = None, file: str | None = None) -> dict:
    """The record of a stats.txt: `valid`, `energy_pJ`, `cycles`, `computes`, `utilization`,
    `edp_J_cycle` and `levels` {name: {energy_pJ, leakage_pJ, dataspaces: {name: {reads, fills,
    updates, utilized_capacity, utilized_instances, energy_pJ}}}} (the arithmetic level, Level 0:
    its energy only). `levels`, the architecture's level names top to bottom, orders the record and
    adds the levels stats.txt leaves out. Also the layout of Timeloop before 2022 (no leakage,
    `MACCs = N` in the summary); Sparseloop's statistics are refused (coexplore models dense
    tensors)."""
    found: dict[str, dict] = {}
    order: list[str] = []
    name = section = ds = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith(("Networks", "Operational Intensity Stats", "Summary Stats")):
            break                                 # (the sections after the levels name them again)
        m = _LEVEL.match(line)
        if m:
            name, section, ds = m.group(1), None, None
            found[name] = {"dataspaces": {}, "fields": {}}
            order.append(name)
            continue
        if name is None:
            continue
        if line.strip() in ("SPECS", "STATS", "MAPPING"):
            section, ds = line.strip(), None
            continue
        lv = found[name]
        m = _DATASPACE.match(line)
        if section == "STATS" and m:
            ds = m.group(1)
            lv["dataspaces"][ds] = {}
            continue
        m = _FIELD.match(line)
        if not m or section not in ("SPECS", "STATS"):
            continue
        if ds is not None and section == "STATS":
            lv["dataspaces"][ds][m.group(2)] = m.group(3)
        else:
            lv["fields"][(section, m.group(2))] = m.group(3)
    if not found:
        raise CoexploreError("no level statistics", file=file, expected="a timeloop-model.stats.txt of a valid run "
                             "(its 'Buffer and Arithmetic Levels' section)")
    arith = order[0]                              # Level 0: the arithmetic units
    f = found[arith]["fields"]
    instances = int(_field(f, ("SPECS", "Instances"), arith, file))
    out_levels = {arith: {"energy_pJ": _field(f, ("STATS", "Energy (total)"), arith, file), "dataspaces": {}}}
    for name in order[1:]:
        lv = found[name]
        leak = _number(lv["fields"].get(("SPECS", "Leakage energy (total)"), "0"), f"{name}.Leakage energy")
        spaces = {}
        for ds, d in lv["dataspaces"].items():
            at = f"{name}.{ds}"
            if "Scalar reads (per-instance)" not in d and any(k.startswith("Actual scalar") for k in d):
                raise CoexploreError(f"sparse-tensor statistics at {at} (Sparseloop)", file=file,
                                     expected="a dense run's stats.txt (coexplore models dense tensors)")
            used = int(_field(d, "Utilized instances (max)", at, file))
            spaces[ds] = {
                "reads": int(_field(d, "Scalar reads (per-instance)", at, file)) * used,
                "fills": int(_field(d, "Scalar fills (per-instance)", at, file)) * used,
                "updates": int(_field(d, "Scalar updates (per-instance)", at, file)) * used,
                "utilized_capacity": int(_field(d, "Utilized capacity", at, file)),
                "utilized_instances": used,
                "energy_pJ": _field(d, "Energy (total)", at, file),
            }
        extra = sum(_number(d.get(k, "0"), f"{name}.{ds}.{k}") for ds, d in lv["dataspaces"].items()
                    for k in ("Temporal Reduction Energy (total)", "Address Generation Energy (total)"))
        out_levels[name] = {"energy_pJ": sum(sp["energy_pJ"] for sp in spaces.values()) + leak + extra,
                            "leakage_pJ": leak, "dataspaces": spaces}   # (a level's energy as BufferLevel::Energy)
    if levels is not None:
        missing = [n for n in out_levels if n not in levels]
        if missing:
            raise CoexploreError(f"levels the architecture does not have: {', '.join(missing)}", file=file,
                                 expected="the stats of a run on this architecture")
        out_levels = {n: out_levels.get(n, {"energy_pJ": 0.0, "leakage_pJ": 0.0, "dataspaces": {}})
                      for n in levels}
    summary = _SUMMARY.search(text)
    if summary is None:
        raise CoexploreError("no 'Summary Stats' section with 'Cycles:'", file=file,
                             expected="a whole timeloop-model.stats.txt")
    cycles = int(summary.group(1))               # the slowest level's (bandwidth), not the arithmetic's
    if ("STATS", "Computes (total)") in f:
        computes = int(_field(f, ("STATS", "Computes (total)"), arith, file))
    else:                                         # (Timeloop before 2022: the summary's MACCs)
        m = _SUMMARY_COMPUTES.search(text)
        if m is None:
            raise CoexploreError("no compute count (neither 'Computes (total)' nor the summary's 'MACCs ='/"
                                 "'Computes ='", file=file, expected="a whole timeloop-model.stats.txt")
        computes = int(m.group(1))
    energy = sum(lv["energy_pJ"] for lv in out_levels.values())
    return {"valid": True, "error": None, "energy_pJ": energy, "cycles": cycles, "computes": computes,
            "utilization": computes / (cycles * instances) if cycles and instances else 0.0,
            "edp_J_cycle": energy * 1e-12 * cycles, "levels": out_levels}


def _field(fields: dict, key, where: str, file) -> float:
    """A number stats.txt printed; a missing one names the level (and dataspace) and the field."""
    if key not in fields:
        label = key[1] if isinstance(key, tuple) else key
        raise CoexploreError("missing field", file=file, key=f"{where}.{label}",
                             expected="a stats.txt as timeloop-model writes it")
    label = key[1] if isinstance(key, tuple) else key
    return _number(fields[key], f"{where}.{label}")


PRINTED_PJ = 0.005     # half a hundredth of a pJ: the rounding of each energy a stats.txt prints


def energy_tolerance_pJ(record: dict) -> float:
    """How far a stats.txt record's total energy may lie from the exact one: half a hundredth of a
    pJ for each energy printed and summed (each level's leakage, the arithmetic's energy, and per
    dataspace its access, temporal-reduction and address-generation energy)."""
    printed = sum(1 + 3 * len(lv.get("dataspaces", {})) for lv in record.get("levels", {}).values())
    return PRINTED_PJ * printed


def refuses_mapping(log: str) -> bool:
    """timeloop-model's output says the mapping does not fit (not that its inputs were bad)."""
    return any(ln.strip().startswith(REFUSALS) for ln in log.splitlines())


def failed_run(log: str) -> dict:
    """The record of a run timeloop-model refused: its first `ERROR:` line (what the corpus's
    expected.json keeps as `error`), or its last non-empty line if it printed none."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    error = next((ln for ln in lines if ln.startswith("ERROR")), lines[-1] if lines else "timeloop-model failed")
    return {"valid": False, "error": error, "energy_pJ": None, "cycles": None, "computes": None,
            "utilization": None, "edp_J_cycle": None}
