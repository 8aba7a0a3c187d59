"""Primitive estimators: what Accelergy's plug-ins return for one primitive component.

Each function mirrors one plug-in's behaviour for the classes the corpus designs use:

* `cacti_sram`  - CactiSRAM: size rounding/scaling as the plug-in does it, CACTI itself
                  replaced by the fitted surfaces of `sram_model` (a fitted model).
* `cacti_dram`  - CactiDRAM: pJ/bit x width (exact published constants).
* `library_*`   - Library plug-in: Aladdin 40nm table entries scaled linearly in width and
                  to the node with `technology` (exact constants + the plug-in's scaling).
* `aladdin_*`   - Aladdin_table plug-in (40/45nm only; same numbers at both nodes).
* `dummy`       - the dummy plug-in for `technology: -1`.

All energies are pJ per action (leak: per `global_cycle_seconds`), areas um^2 per instance.
The constants are numbers from the Aladdin tables shipped with the Accelergy plug-ins and
CACTI-plugin's DRAM constants; each was checked against the Accelergy reference grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from coexplore.energy import sram_model
from coexplore.energy.technology import area_scale, energy_scale
from coexplore.errors import CoexploreError

NS = 1e-9


@dataclass
class Priced:
    """One primitive's per-action energies (pJ), area (um^2) and who priced it."""
    actions: dict
    area: float
    estimator: str
    notes: list = field(default_factory=list)   # why a number is not what Accelergy gives
    accelergy_ok: bool = True                    # False: the reference Accelergy setup refuses it


# --- Library plug-in: Aladdin 40nm entries (32-bit unless noted) ----------------------------
LIB_NODE = 40.0
LIB_REGISTER = {"read": 0.009, "write": 0.0, "leak": 0.0, "area": 5.98}          # per bit
LIB_COMPARATOR = {"compare": 0.02947, "leak": 2.51e-5, "area": 71.0}              # 32-bit entry
LIB_ADDER = {"read": 0.21, "leak": 0.0024, "area": 278.0}                         # 32-bit
LIB_MULTIPLIER = {"read": 12.68, "leak": 0.08, "area": 6350.0}                    # 32x32-bit

# --- Aladdin_table plug-in (valid at 40 and 45nm) -------------------------------------------
ALADDIN_NODES = (40.0, 45.0)
AL_ADDER = {"add": 0.21, "leak": 0.0023, "area": 278.0}                           # 32-bit
AL_MULTIPLIER = {"read": 12.68, "area": 6350.0}                                   # 32x32-bit
AL_REGISTER = {"access": 0.009, "leak": 7.0e-5, "area": 5.98}
AL_COMPARATOR = {"compare": 0.02947, "leak": 2.51e-5, "area": 70.0}               # 32-bit

# --- CactiDRAM: pJ per bit ------------------------------------------------------------------
DRAM_PJ_PER_BIT = {"LPDDR4": 8.0, "LPDDR": 40.0, "DDR3": 70.0, "GDDR5": 14.0, "HBM2": 3.9,
                   "HMC": 4.2}

# --- CACTI plug-in: nodes CACTI runs at; in between it interpolates linearly -----------------
CACTI_RUN_NODES = (22.0, 32.0, 45.0, 65.0, 90.0)
CACTI_RANGE = (22.0, 180.0)
# the sizes (after the plug-in's rounding) the fitted surfaces were made from (cacti_sram.json)
FIT_RANGE = {"width": (32, 512), "depth": (256, 65536), "n_banks": (1, 32)}


def _leak_scale(gcs: float) -> float:
    return gcs / NS


def _lib_notes(tech: float) -> list:
    """The Library plug-in interpolates the node index the reverse way (see technology.py): energies
    exact at tabulated nodes and at its 40 nm data, not monotonic in between (22 nm above 28 nm).
    Areas go through the bilinear area scaling even at 40 nm (area_scale(40, 40) = 1.156, not 1),
    as the plug-in's scaling module computes them; the grid holds no 40 nm Library row to confirm it."""
    from coexplore.spec.technology import NODES_NM
    if tech in NODES_NM or tech == LIB_NODE:
        return []
    return [f"{tech:g} nm lies between the Library plug-in's tabulated nodes, where its interpolation "
            "(reproduced here, as Accelergy gives it) is not monotonic in the node"]


def _lib(tech: float):
    return energy_scale(LIB_NODE, tech, library=True), area_scale(LIB_NODE, tech, library=True)


def library_register(width: float, tech: float, gcs: float = NS) -> Priced:
    """`aladdin_register` (Library): per-bit register; write/update/leak are 0 in the table."""
    e, a = _lib(tech)
    r = LIB_REGISTER
    return Priced({"read": r["read"] * width * e, "write": 0.0, "update": 0.0,
                   "leak": r["leak"] * width * e * _leak_scale(gcs)}, r["area"] * width * a,
                  "Library", _lib_notes(tech))


def library_comparator(tech: float, gcs: float = NS) -> Priced:
    """`aladdin_comparator` (Library): always the 32-bit entry (the table ignores n_bits)."""
    e, a = _lib(tech)
    c = LIB_COMPARATOR
    return Priced({"compare": c["compare"] * e, "leak": c["leak"] * e * _leak_scale(gcs)},
                  c["area"] * a, "Library", _lib_notes(tech))


def library_adder(width: float, tech: float, gcs: float = NS) -> Priced:
    e, a = _lib(tech)
    s = width / 32.0
    c = LIB_ADDER
    return Priced({"read": c["read"] * s * e, "leak": c["leak"] * s * e * _leak_scale(gcs)},
                  c["area"] * s * a, "Library", _lib_notes(tech))


def library_multiplier(width_a: float, width_b: float, tech: float, gcs: float = NS) -> Priced:
    e, a = _lib(tech)
    s = (width_a / 32.0) * (width_b / 32.0)
    c = LIB_MULTIPLIER
    return Priced({"read": c["read"] * s * e, "leak": c["leak"] * s * e * _leak_scale(gcs)},
                  c["area"] * s * a, "Library", _lib_notes(tech))


def _aladdin_node(tech: float, what: str) -> tuple[float, float, list, bool]:
    """Aladdin_table prices only 40/45nm; elsewhere scale the 45nm entry and flag it."""
    if tech in ALADDIN_NODES:
        return 1.0, 1.0, [], True
    note = (f"{what}: Accelergy's Aladdin_table plug-in supports only 40/45nm; "
            f"scaled from 45nm to {tech:g}nm (Stillmaker-Baas)")
    return energy_scale(45.0, tech), area_scale(45.0, tech), [note], False


def aladdin_intadder(width: float, tech: float, gcs: float = NS) -> Priced:
    """`intadder` (Aladdin_table): 32-bit adder entry scaled linearly in width."""
    e, a, notes, ok = _aladdin_node(tech, "intadder")
    s = width / 32.0
    c = AL_ADDER
    return Priced({"add": c["add"] * s * e, "leak": c["leak"] * s * e * _leak_scale(gcs)},
                  c["area"] * s * a, "Aladdin_table", notes, ok)


def aladdin_regfile(width: float, depth: float, tech: float, gcs: float = NS) -> Priced:
    """Primitive `regfile` (Aladdin_table): one register + depth x log2(depth)-bit comparators.

    Independent of width in this Aladdin version (as the reference grid shows)."""
    e, a, notes, ok = _aladdin_node(tech, "regfile")
    bits = math.ceil(math.log2(depth)) if depth > 1 else 0
    k = depth * bits / 32.0
    r, c = AL_REGISTER, AL_COMPARATOR
    access = (r["access"] + k * c["compare"]) * e
    leak = (r["leak"] + k * c["leak"]) * e * _leak_scale(gcs)
    return Priced({"read": access, "write": access, "update": access, "leak": leak},
                  (r["area"] + k * c["area"]) * a, "Aladdin_table", notes, ok)


def aladdin_intmac(width: float, tech: float, gcs: float = NS) -> Priced:
    """Primitive `intmac` (Aladdin_table): adder(width) + multiplier(width x width)."""
    e, a, notes, ok = _aladdin_node(tech, "intmac")
    s = width / 32.0
    energy = (AL_ADDER["add"] * s + AL_MULTIPLIER["read"] * s * s) * e
    area = (AL_ADDER["area"] * s + AL_MULTIPLIER["area"] * s * s) * a
    return Priced({"compute": energy}, area, "Aladdin_table", notes, ok)


def cacti_dram(dram_type: str, width: float) -> Priced:
    """`DRAM` (CactiDRAM): read = write = update = pJ/bit x width; no leak, no area."""
    if dram_type not in DRAM_PJ_PER_BIT:
        raise CoexploreError(f"DRAM type {dram_type!r} has no estimator (Accelergy's CactiDRAM "
                             "refuses it too)", key="type",
                             expected=", ".join(sorted(DRAM_PJ_PER_BIT)))
    e = DRAM_PJ_PER_BIT[dram_type] * width
    return Priced({"read": e, "write": e, "update": e, "leak": 0.0}, 0.0, "CactiDRAM")


def dummy(action_names=("read", "write", "update", "leak")) -> Priced:
    """`technology: -1` (dummy plug-in): 1 pJ for every non-leak action, area 1 um^2."""
    return Priced({a: (0.0 if a == "leak" else 1.0) for a in action_names}, 1.0, "dummy")


def cacti_rounding(width: float, depth: float, n_banks: float):
    """The CACTI plug-in's rounding of the requested size and the factors that undo it."""
    nb = 2 ** math.ceil(math.log2(max(1.0, n_banks)))
    w = max(32, 8 * math.ceil(width / 8))
    d = max(depth, 64 * nb)
    ws, ds = width / w, depth / d
    return w, d, nb, (0.7 * ws + 0.3) * ds ** 0.78, ws * ds


def _cacti_native(model, w, d, nb, tech: float, given: tuple | None = None) -> tuple[dict, list, bool]:
    """Fitted CACTI values at `tech` (nm) for a rounded size; notes when extrapolated (naming the
    size as written, `given` = (width, depth, banks), when the plug-in's rounding changed it)."""
    def at(node):
        if node in sram_model.CACTI_NODES:
            return model.at_node(w, d, nb, node)
        if node == 32.0:   # 45nm surface x ratio calibrated on the grid's 40nm point
            base = model.at_node(w, d, nb, 45.0)
            return {q: base[q] * model.ratio_32nm[q] for q in base}
        if node == 22.0:
            base, src = at(32.0), 32.0
        else:  # 90nm
            base, src = at(65.0), 65.0
        e, a = energy_scale(src, node), area_scale(src, node)
        return {"read": base["read"] * e, "write": base["write"] * e, "leak": base["leak"] * e,
                "area": base["area"] * a}

    notes, ok = [], True
    for i, (what, value, (low, high)) in enumerate((("width", w, FIT_RANGE["width"]), ("depth", d, FIT_RANGE["depth"]),
                                                    ("banks", nb, FIT_RANGE["n_banks"]))):
        if not low <= value <= high:
            written = given[i] if given is not None else value
            shown = f"{written:g}" if written == value else \
                f"{written:g} (priced as {value:g}, the CACTI plug-in's rounding)"
            notes.append(f"SRAM: {what} {shown} is outside the fitted CACTI data ({low:g}-{high:g}); "
                         "the fit is extrapolated there")
    lo_node, hi_node = CACTI_RUN_NODES[0], CACTI_RUN_NODES[-1]
    if tech < CACTI_RANGE[0] or tech > CACTI_RANGE[1]:       # (one note says both: outside CACTI and the fit)
        ok = False
        notes.append(f"SRAM: CACTI supports {CACTI_RANGE[0]:g}-{CACTI_RANGE[1]:g}nm; {tech:g}nm derived from the "
                     "nearest fitted node (32 or 65nm) with Stillmaker-Baas factors")
    elif tech < 32.0 or tech > 65.0:
        notes.append(f"SRAM: no reference CACTI data at {tech:g}nm; derived from the nearest "
                     "fitted node (32 or 65nm) with Stillmaker-Baas factors")
    if 32.0 <= tech < 40.0:
        notes.append(f"SRAM: at {tech:g}nm derived from 32nm values, the 45nm fit x one ratio calibrated on a "
                     "single 40nm CACTI run (no 32nm run in the fitted data): expect ~15% off Accelergy (the exercises' "
                     "Eyeriss-like 32nm global buffer: read +14%, write +17%)")
    if tech <= lo_node or tech >= hi_node:
        node = lo_node if tech <= lo_node else hi_node
        base = at(node)
        if tech == node:       # (area_scale(x, x) is not 1 between the scaling table's nodes)
            return base, notes, ok
        e, a = energy_scale(node, tech), area_scale(node, tech)
        return ({"read": base["read"] * e, "write": base["write"] * e, "leak": base["leak"] * e,
                 "area": base["area"] * a}, notes, ok)
    if tech in CACTI_RUN_NODES:
        return at(tech), notes, ok
    hi = min(n for n in CACTI_RUN_NODES if n > tech)
    lo = max(n for n in CACTI_RUN_NODES if n < tech)
    f = (tech - lo) / (hi - lo)
    a_lo, a_hi = at(lo), at(hi)
    return {q: a_lo[q] * (1 - f) + a_hi[q] * f for q in a_lo}, notes, ok


def cacti_sram(width: float, depth: float, n_banks: float, tech: float, gcs: float = NS,
               model=None) -> Priced:
    """`SRAM` (CactiSRAM) with CACTI replaced by the fitted surfaces: read, write = update, leak."""
    if width * depth == 0:
        return Priced({"read": 0.0, "write": 0.0, "update": 0.0, "leak": 0.0}, 0.0, "CactiSRAM-fit")
    model = model or sram_model.default_model()
    w, d, nb, dyn, lin = cacti_rounding(width, depth, n_banks)
    raw, notes, ok = _cacti_native(model, w, d, nb, tech, given=(width, depth, n_banks))
    read, write = raw["read"] * dyn, raw["write"] * dyn
    return Priced({"read": read, "write": write, "update": write,
                   "leak": raw["leak"] * lin * _leak_scale(gcs)}, raw["area"] * lin,
                  "CactiSRAM-fit", notes, ok)
