"""Component classes -> per-action energy and area, composed the way Accelergy does.

`estimate_component(class_name, attributes)` prices one component. Compound classes follow
the class files of timeloop-accelergy-exercises `example_designs/_components` (the classes
the corpus designs use): an action's energy is the sum over its sub-actions of
primitive energy x energy_scale x number of identical sub-instances; area is the sum of the
sub-components' areas x area_scale (see notes sec. 11). Primitives come from
`coexplore.energy.primitives` (exact plug-in constants, CACTI replaced by a fitted model).

`classes="example_designs"` (default) uses those compound definitions of `regfile` and
`intmac`; `classes="primitives"` prices `regfile` / `intmac` directly with Aladdin, as the
ISPASS-2020 tutorial architectures do. `SRAM`, `DRAM` are primitives in both.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from coexplore.energy import primitives as P
from coexplore.spec.technology import parse_technology
from coexplore.errors import CoexploreError, misspelt
from coexplore.spec.architecture import MAX_HARDWARE_VALUE

ESTIMATOR = "coexplore-builtin"
CLASSES = ("SRAM", "DRAM", "smartbuffer_SRAM", "smartbuffer_RF", "regfile", "intmac",
           "aladdin_register", "reg", "dummy_storage", "storage")
CLASS_SETS = ("example_designs", "primitives")


@dataclass
class ComponentEstimate:
    """Per-action energy (pJ; leak per global cycle) and area (um^2) of one instance.

    `arguments` is what Accelergy writes as the action's arguments in ERT.yaml ({} for
    compound classes). `primitives` names the plug-in each primitive would come from;
    `warnings` say where a number is not what the reference Accelergy setup would give
    (`accelergy_compatible` is False when that setup refuses the component)."""
    class_name: str
    actions: dict
    area_um2: float
    estimator: str = ESTIMATOR
    arguments: dict = field(default_factory=dict)
    primitives: tuple = ()
    warnings: tuple = ()
    accelergy_compatible: bool = True

    def energy(self, action: str) -> float:
        return self.actions[action]


INTEGRAL = ("depth", "n_banks", "memory_depth", "data_storage_depth")      # counts: whole numbers
# the names Timeloop also reads as a storage's width and depth (timeloopfe's examples write memory_*)
_ALIASES = {"width": ("memory_width", "data_storage_width"), "depth": ("memory_depth", "data_storage_depth")}


def _num(attrs: dict, key: str, cls: str, default=None) -> float:
    """A size/width/time attribute: a finite number > 0 (whole for counts)."""
    value = attrs.get(key)
    for alias in _ALIASES.get(key, ()) if value is None else ():
        value = attrs.get(alias)             # Timeloop reads these as the width/depth too
        if value is not None:
            key = alias
            break
    value = default if value is None else value
    if value is None:
        hint = (" (or --classes primitives, which prices regfile/intmac as Aladdin primitives: an option of "
                "`coexplore energy tables`, and of evaluate/map where they price the file themselves)"
                if cls in ("regfile", "intmac") else "")
        raise CoexploreError(f"class {cls} needs attribute '{key}'{misspelt([key], attrs)}", key=f"attributes.{key}",
                             expected="a positive number" + hint)
    try:
        out = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        out = math.nan
    whole = key not in INTEGRAL or out.is_integer()
    if not math.isfinite(out) or out <= 0 or not whole:
        raise CoexploreError(f"attribute '{key}' of class {cls} is {value!r}", key=f"attributes.{key}",
                             expected="a whole number > 0" if key in INTEGRAL else "a finite number > 0")
    if out > MAX_HARDWARE_VALUE:        # as the architecture reader: a typo, and beyond any fitted model
        raise CoexploreError(f"attribute '{key}' of class {cls} is {value!r}, too large", key=f"attributes.{key}",
                             expected=f"at most 2^40 = {MAX_HARDWARE_VALUE}")
    return out


# the attributes each class's estimate needs (no default), so that all missing ones are said at once
_NEEDS = {"SRAM": ("width", "depth"), "regfile": ("width", "depth"), "smartbuffer_RF": ("width", "depth"),
          "smartbuffer_SRAM": ("width", "depth"), "intmac": ("multiplier_width", "adder_width")}


def _check_needed(attrs: dict, cls: str, primitives: bool) -> None:
    """Refuse a component missing some needed attributes, naming all of them (technology included)."""
    needs = () if cls == "DRAM" else ("technology",)
    if not (primitives and cls == "intmac"):
        needs += _NEEDS.get(cls, ())
    missing = [k for k in needs if attrs.get(k) is None and all(attrs.get(a) is None for a in _ALIASES.get(k, ()))]
    if len(missing) > 1:
        hint = (" (or --classes primitives, which prices regfile/intmac as Aladdin primitives: an option of "
                "`coexplore energy tables`, and of evaluate/map where they price the file themselves)"
                if cls in ("regfile", "intmac") else "")
        raise CoexploreError(f"class {cls} needs attributes " + ", ".join(f"'{k}'" for k in missing)
                             + misspelt(missing, attrs),
                             key="attributes", expected="a value for each (technology e.g. '45nm'; sizes and widths "
                                                        "positive numbers)" + hint)


# what each class's estimate reads (besides technology, global_cycle_seconds, subclass and the ports)
_READS = {"DRAM": ("type", "width"), "SRAM": ("width", "depth", "n_banks"),
          "smartbuffer_SRAM": ("width", "depth", "n_banks"), "smartbuffer_RF": ("width", "depth"),
          "regfile": ("width", "depth"), "intmac": ("multiplier_width", "adder_width", "width", "datawidth"),
          "aladdin_register": ("width", "datawidth"), "reg": ("width", "datawidth")}
# attributes Timeloop or Accelergy read that lie close to one of those names: not misspellings
_OTHERS = {"datawidth", "word_bits", "word-bits", "block_size", "block-size", "cluster_size", "cluster-size",
           "num_banks", "num-banks", "num_ports", "num-ports", "n_rdwr_ports", "n_rd_ports", "n_wr_ports",
           "n_rw_ports", "entries", "sizeKB", "latency", "meshX", "meshY", "instances", "read_bandwidth",
           "write_bandwidth", "shared_bandwidth", "metadata_width", "metadata_depth", "metadata_datawidth",
           "multiple_buffering", "multiple-buffering", "min_utilization", "memory_width", "memory_depth",
           "data_storage_width", "data_storage_depth", "has_power_gating", "leak_power", "name", "class",
           "attributes", "subclass",
           # read by the compound classes of the official exercises (their own, or Accelergy's plug-ins)
           "nports", "n_ports", "nbanks", "width_a", "width_b", "metadata_storage_width", "metadata_storage_depth",
           "cycle_seconds"}


def _near_misses(attrs: dict, cls: str) -> list[str]:
    """Attributes the estimate does not read that are one letter or two from one it reads
    ('tecnology', 'n_bank', 'tpye'): priced without them (an inherited or default value), said."""
    import difflib
    reads = {"technology", "global_cycle_seconds", *_PORTS, *_READS.get(cls, ())}
    reads |= {a for k in list(reads) for a in _ALIASES.get(k, ())}
    out = []
    if "n_banks" in reads:       # other classes' spellings of it: not read here (n_banks may be a default)
        for k in ("nbanks", "num_banks", "num-banks"):
            if k in attrs and attrs.get("n_banks") != attrs[k]:
                used = f"n_banks {attrs['n_banks']}" if "n_banks" in attrs else "its default bank count"
                out.append(f"attribute '{k}' is not read by the {cls} estimate, which reads n_banks (as Accelergy's "
                           f"CACTI plug-in): priced with {used}, not {attrs[k]}")
    for k in map(str, attrs):
        if k in reads or k in _OTHERS or k.replace("-", "_") in reads:
            continue
        if cls == "DRAM" and k.lower().replace("-", "_").endswith("type"):      # dram_type, memory-type
            out.append(f"attribute '{k}' is not read by the DRAM estimate, which reads 'type' (as Accelergy's "
                       f"DRAM table): priced as {attrs.get('type', 'LPDDR4 (its default)')}, not {attrs[k]}")
            continue
        near = difflib.get_close_matches(k, sorted(reads), n=1, cutoff=0.75)
        if near:
            m = near[0]
            used = attrs.get(m)
            out.append(f"attribute '{k}' is not one the {cls} estimate reads: '{m}' misspelt? (priced with "
                       + (f"{m} {used}" if used is not None else f"no {m}: its default") + ")")
    return out


def _implausible_cycle(attrs: dict) -> list[str]:
    """A global_cycle_seconds beyond a 0.01-10 GHz clock (as a system YAML's clock_GHz): most likely
    in another unit (1 for 1 ns), and the leakage per cycle grows with it; said, not refused."""
    from coexplore.spec.system import PLAUSIBLE_CLOCK_GHZ
    try:
        gcs = float(attrs.get("global_cycle_seconds", P.NS))
    except (TypeError, ValueError):
        return []                    # (refused where it is read)
    low, high = 1e-9 / PLAUSIBLE_CLOCK_GHZ[1], 1e-9 / PLAUSIBLE_CLOCK_GHZ[0]
    if not math.isfinite(gcs) or gcs <= 0 or low <= gcs <= high:
        return []
    return [f"global_cycle_seconds is {gcs:g} s (a {1e-9 / gcs:g} GHz clock), outside {low:g}-{high:g} s: is it in "
            "another unit (1 for 1 ns)? Leakage per cycle is proportional to it"]


def _tech(attrs: dict, cls: str) -> float:
    if "technology" not in attrs:
        raise CoexploreError(f"class {cls} needs attribute 'technology'{misspelt(['technology'], attrs)}",
                             key="attributes.technology", expected="e.g. '45nm'")
    return parse_technology(attrs["technology"], key="attributes.technology")


def _addr_bits(depth: float) -> float:
    return max(1, math.ceil(math.log2(depth))) if depth >= 1 else 1


class _Acc:
    """Accumulates sub-actions into a compound's actions (energy, area, provenance)."""

    def __init__(self):
        self.actions: dict = {}
        self.area = 0.0
        self.primitives: list = []
        self.notes: list = []
        self.ok = True

    def use(self, name: str, priced: P.Priced) -> P.Priced:
        self.primitives.append(f"{name}={priced.estimator}")
        self.notes += [n for n in priced.notes if n not in self.notes]
        self.ok = self.ok and priced.accelergy_ok
        return priced

    def add(self, action: str, energy: float):
        self.actions[action] = self.actions.get(action, 0.0) + energy


def _regfile_compound(acc: _Acc, width, depth, tech, gcs, prefix="", dyn=1.0, static=1.0,
                      area_scale=1.0):
    """example_designs regfile: width x depth aladdin_register + depth aladdin_comparator."""
    reg = acc.use(prefix + "storage", P.library_register(1, tech, gcs))
    cmp_ = acc.use(prefix + "comparator", P.library_comparator(tech, gcs))
    for action, reg_action in (("write", "write"), ("read", "read"), ("update", "write")):
        acc.add(action, (width * reg.actions[reg_action] + depth * cmp_.actions["compare"]) * dyn)
    acc.add("leak", (width * depth * reg.actions["leak"] + depth * cmp_.actions["leak"]) * static)
    acc.area += (width * depth * reg.area + depth * cmp_.area) * area_scale


def _address_generators(acc: _Acc, depth, tech, gcs):
    adder = acc.use("address_generators", P.aladdin_intadder(_addr_bits(depth), tech, gcs))
    for action in ("write", "read", "update"):
        acc.add(action, adder.actions["add"])
    acc.add("leak", 2 * adder.actions["leak"])
    acc.area += 2 * adder.area


def _order(actions: dict, order) -> dict:
    return {a: actions[a] for a in order if a in actions}


def _primitive_args(gcs: float) -> dict:
    return {"global_cycle_seconds": gcs, "action_latency_cycles": 1}


# SRAM port counts CACTI would price (the built-in estimate is of one read-write port): value when absent
_PORTS = {"n_rw_ports": 1, "n_rdwr_ports": 1, "n_rd_ports": 0, "n_wr_ports": 0}


def estimate_component(class_name: str, attributes: dict, *, subclass: str | None = None,
                       classes: str = "example_designs", sram_model=None) -> ComponentEstimate:
    """Price one component of Accelergy class `class_name` (pJ per action, um^2).

    A `subclass: X` is priced as X, as Accelergy does (`class: storage` / `compute` with the
    Accelergy class as subclass, v0.3's form; `class: SRAM, subclass: regfile`); a subclass with no
    built-in estimator (a compound class of the user's: `class: SRAM, subclass: register`) is
    priced as its class, with a warning, or refused when the class is Timeloop's. `sram_model`
    replaces the packaged CACTI surfaces (for cross-validation). Port counts other than one
    read-write port are not modelled: the estimate says so in its warnings."""
    if attributes is not None and not isinstance(attributes, dict):
        raise CoexploreError(f"attributes {attributes!r:.60}", key="attributes",
                             expected="a mapping of attribute names to values, e.g. {'width': 64, 'depth': 512, "
                                      "'technology': '45nm'}")
    sub = subclass or (attributes or {}).get("subclass")
    if sub and sub not in CLASSES and class_name in CLASSES and class_name != "storage":
        # a subclass of the user's own (a compound class coexplore does not read): its class instead, said
        est = _estimate(class_name, {k: v for k, v in (attributes or {}).items() if k != "subclass"},
                        subclass=None, classes=classes, sram_model=sram_model)
        est = dataclasses.replace(est, accelergy_compatible=False, warnings=(
            *est.warnings, f"subclass {sub} has no built-in estimator: priced as its class {class_name} "
                           f"(Accelergy prices it as {sub}, with that class's energies)"))
    else:
        est = _estimate(class_name, attributes, subclass=subclass, classes=classes, sram_model=sram_model)
    said = _near_misses(attributes or {}, est.class_name) + _implausible_cycle(attributes or {})
    if said:
        est = dataclasses.replace(est, warnings=(*est.warnings, *said))
    ports = {k: v for k, v in (attributes or {}).items() if k in _PORTS and str(v) != str(_PORTS[k])}
    if ports and est.class_name in ("SRAM", "smartbuffer_SRAM", "regfile", "smartbuffer_RF"):
        note = ("ports " + ", ".join(f"{k}: {v}" for k, v in ports.items()) + " are not modelled: priced as one "
                "read-write port (CACTI would price the ports)")
        est = dataclasses.replace(est, warnings=(*est.warnings, note))
    return est


def _estimate(class_name: str, attributes: dict, *, subclass: str | None, classes: str,
              sram_model) -> ComponentEstimate:
    if classes not in CLASS_SETS:
        raise CoexploreError(f"unknown class set {classes!r}", expected=" or ".join(CLASS_SETS))
    attrs = dict(attributes or {})
    cls = subclass or attrs.get("subclass") or class_name     # Accelergy prices a subclass as its class
    if cls == "storage":
        raise CoexploreError("class storage needs a subclass", key="subclass",
                             expected="one of " + ", ".join(CLASSES[:-1]))
    if str(attrs.get("technology", "")).strip() in ("-1", "-1.0") or cls == "dummy_storage":
        p = P.dummy()
        return ComponentEstimate(cls, p.actions, p.area,
                                 arguments={a: _primitive_args(float(attrs.get(
                                     "global_cycle_seconds", P.NS))) for a in p.actions},
                                 primitives=("self=dummy",))
    if cls not in CLASSES:         # (said before any attribute it would need)
        raise CoexploreError(f"no built-in estimator for class {cls!r}",
                             key="subclass" if cls != class_name else "class",
                             expected="one of " + ", ".join(CLASSES) + "; a compound class of your own is priced by "
                                      "Accelergy: --energy accelergy, or Accelergy's ERT.yaml given to evaluate/map "
                                      "with --ert")
    _check_needed(attrs, cls, classes == "primitives")
    gcs = _num(attrs, "global_cycle_seconds", cls, P.NS)
    if "n_banks" in attrs:            # a bank count given is checked, whether or not the class reads it
        _num(attrs, "n_banks", cls)
    compound_order = ("write", "read", "leak", "update")

    if cls == "DRAM":
        p = P.cacti_dram(str(attrs.get("type", "LPDDR4")), _num(attrs, "width", cls))
        return _primitive(cls, p, gcs)
    tech = _tech(attrs, cls)
    if cls == "SRAM":
        p = P.cacti_sram(_num(attrs, "width", cls), _num(attrs, "depth", cls),
                         _num(attrs, "n_banks", cls, 1), tech, gcs, model=sram_model)
        return _primitive(cls, p, gcs)
    if cls in ("aladdin_register", "reg"):
        width = _num(attrs, "width", cls, attrs.get("datawidth"))
        return _primitive(cls, P.library_register(width, tech, gcs), gcs)
    if cls == "regfile" and classes == "primitives":
        p = P.aladdin_regfile(_num(attrs, "width", cls), _num(attrs, "depth", cls), tech, gcs)
        return _primitive(cls, p, gcs)
    if cls == "intmac" and classes == "primitives":
        width = _num(attrs, "width", cls, attrs.get("datawidth"))
        return _primitive(cls, P.aladdin_intmac(width, tech, gcs), gcs)

    acc = _Acc()
    if cls == "regfile":
        _regfile_compound(acc, _num(attrs, "width", cls), _num(attrs, "depth", cls), tech, gcs)
        order = compound_order
    elif cls == "smartbuffer_RF":
        width, depth = _num(attrs, "width", cls), _num(attrs, "depth", cls)
        mw, md = max(32.0, width), max(64.0, depth)
        ws, ds = width / mw, depth / md
        _regfile_compound(acc, mw, md, tech, gcs, prefix="storage.", dyn=ws * ds ** 0.78,
                          static=ws * ds, area_scale=ws * ds)
        _address_generators(acc, depth, tech, gcs)
        order = compound_order
    elif cls == "smartbuffer_SRAM":
        width, depth = _num(attrs, "width", cls), _num(attrs, "depth", cls)
        # the class does not pass n_banks on: CACTI runs with one bank (a value given is still checked)
        _num(attrs, "n_banks", cls, 1)
        sram = acc.use("storage", P.cacti_sram(width, depth, 1, tech, gcs,
                                                          model=sram_model))
        for action in ("write", "read", "update", "leak"):
            acc.add(action, sram.actions[action])
        acc.area += sram.area
        _address_generators(acc, depth, tech, gcs)
        order = compound_order
    elif cls == "intmac":
        mw = _num(attrs, "multiplier_width", cls)
        aw = _num(attrs, "adder_width", cls)
        adder = acc.use("intadder", P.library_adder(aw, tech, gcs))
        mult = acc.use("intmultiplier", P.library_multiplier(mw, mw, tech, gcs))
        acc.add("compute", adder.actions["read"] + mult.actions["read"])
        acc.add("leak", adder.actions["leak"] + mult.actions["leak"])
        acc.area = adder.area + mult.area
        order = ("compute", "leak")
    else:                          # (a class of CLASSES without a branch here)
        raise AssertionError(f"class {cls} is listed but has no estimator")
    if classes == "primitives" and cls.startswith("smartbuffer"):
        acc.ok = False
        acc.notes.append(f"{cls} is no Accelergy primitive (with no compound classes, Accelergy has no such class); "
                         "priced as the example designs' compound class of that name")
    actions = _order(acc.actions, order)
    return ComponentEstimate(cls, actions, acc.area, arguments={a: {} for a in actions},
                             primitives=tuple(dict.fromkeys(acc.primitives)),
                             warnings=tuple(acc.notes), accelergy_compatible=acc.ok)


def _primitive(cls: str, p: P.Priced, gcs: float) -> ComponentEstimate:
    return ComponentEstimate(cls, dict(p.actions), p.area,
                             arguments={a: _primitive_args(gcs) for a in p.actions},
                             primitives=(f"self={p.estimator}",), warnings=tuple(p.notes),
                             accelergy_compatible=p.accelergy_ok)
