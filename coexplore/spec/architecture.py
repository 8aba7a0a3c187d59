"""Timeloop architectures: the v0.4 `nodes` form and the flattened v0.3 `subtree`/`local` form.

Both are read into one `Architecture`: a list of storage `Level`s from the backing store (index 0
in `levels`, e.g. DRAM) down to the innermost buffer, plus the compute `Level`. Every v0.4
`!Container` with a spatial mesh adds a dummy storage level `inter_<container>_spatial` that
carries the spatial loops into the container, exactly as Timeloop's front-end (timeloopfe) does.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coexplore.errors import CoexploreError, CoexploreWarning
from coexplore.spec import expressions
from coexplore.spec.yamlio import TAG_KEY, load_yaml, name_from_path

_RANGE = re.compile(r"^(?P<base>.*?)\[(?P<lo>\d+)\.\.(?P<hi>\d+)\]$")
# Timeloop's topology (isBufferClass / isComputeClass): a component is a buffer when its class
# contains one of BUFFER_CLASSES (case-sensitive, tested first), else an arithmetic unit when it
# contains one of COMPUTE_CLASSES (Timeloop also lists intmac and fpmac, which contain mac); any
# other component is ignored
BUFFER_CLASSES = ("DRAM", "SRAM", "regfile", "smartbuffer", "storage")
COMPUTE_CLASSES = ("mac", "compute")

# attributes whose value Timeloop reads (aliases, hyphens turned into underscores)
_ALIASES = {
    "word_bits": ("word_bits", "word_width", "datawidth"),
    "block_size": ("block_size", "n_words"),
    "width": ("width", "memory_width", "data_storage_width"),
    "depth": ("depth", "memory_depth", "data_storage_depth"),
}


def _attr(attrs: dict, key: str, default=None):
    for alias in _ALIASES.get(key, (key,)):
        if alias in attrs and attrs[alias] is not None:
            return attrs[alias]
    return default


def _attr_name(attrs: dict, key: str, default: str) -> str:
    """The alias of `key` the attributes give (named in errors as written), else `default`."""
    return next((a for a in _ALIASES.get(key, (key,)) if attrs.get(a) is not None), default)


def _number(value, *, file, key, expected="a number"):
    if isinstance(value, bool):
        raise CoexploreError(f"got {value!r}", file=file, key=key, expected=expected)
    if isinstance(value, (int, float)):
        return value
    try:
        return float(value) if any(c in str(value) for c in ".eE") else int(value)
    except (TypeError, ValueError):
        why = expressions.FAILED.get(value) if isinstance(value, str) else None
        if isinstance(value, str) and re.fullmatch(r"\s*\d+(\.\d+)?\s*([kKmMgG]i?[bB]|[bB]|bits?|[kKmMgG])\s*", value):
            hint = ("a depth counts words of `width` bits: 64 KB at width 64 is depth: 8192" if key.endswith("depth")
                    else "sizes are plain numbers of bits or words")
            raise CoexploreError(f"got {value!r}", file=file, key=key,
                                 expected=f"{expected} without units ({hint})") from None
        if why:
            expected += (f" ('{value}' is a v0.4 expression that cannot be computed: {why}; names come from "
                         "the spec's variables:, the attributes of the node and the containers around it, and "
                         "other nodes by name: GlobalBuffer.attributes[\"depth\"])")
        elif isinstance(value, str) and re.search(r"[A-Za-z_][A-Za-z_0-9]*|[*/+()-]", value.strip()):
            expected += (" (expressions and variables are evaluated in a v0.4 node's attributes, mesh and "
                         "split only: write the number)")
        raise CoexploreError(f"got {value!r}", file=file, key=key, expected=expected) from None


# the largest size, count or mesh accepted: counts derived from it stay exact in int64 and float64
# (Timeloop reads these as 32-bit integers; a larger value is a typo, not a design)
MAX_HARDWARE_VALUE = 2 ** 40
MAX_CAPACITY = 2 ** 53          # words per instance (depth x block size)


def _positive(value, *, file, key, integer: bool = True):
    """A size, count or mesh: a finite number > 0 (an integer unless `integer` is False), at most
    MAX_HARDWARE_VALUE."""
    what = "a positive integer" if integer else "a positive number"
    v = _number(value, file=file, key=key, expected=what)
    if not v > 0 or not math.isfinite(v) or (integer and v != int(v)):
        raise CoexploreError(f"got {value!r}", file=file, key=key, expected=what.replace("a ", "a finite ", 1))
    if v > MAX_HARDWARE_VALUE:
        raise CoexploreError(f"got {value!r}, too large", file=file, key=key,
                             expected=f"{what} of at most 2^40 = {MAX_HARDWARE_VALUE}")
    return int(v) if integer else v


def yaml_list(value, *, file, key, what: str) -> list:
    """A YAML list (None counts as empty); anything else is refused naming the key."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise CoexploreError(f"got {value!r}", file=file, key=key, expected=f"a list of {what}")
    return value


def _mapping(value, *, file, key) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CoexploreError(f"got {value!r}", file=file, key=key, expected="a mapping")
    return value


def _bandwidth(value, *, file, key) -> float:
    """Words per cycle: a number > 0 (.inf: unlimited, as leaving it out). Timeloop divides by it
    (slowdown = bandwidth / demand): 0 gives an infinite cycle count, a negative one negative
    cycles, and NaN is silently unlimited; all three are refused."""
    v = _number(value, file=file, key=key, expected="a positive number of words per cycle")
    if not v > 0:
        raise CoexploreError(f"got {value!r}", file=file, key=key,
                             expected="a positive number of words per cycle (leave it out, or .inf, for unlimited)")
    return float(v)


@dataclass
class Level:
    """One level of the flattened architecture (a storage level or the compute level)."""

    name: str
    cls: str
    attributes: dict
    instances: int = 1
    mesh_x: int = 1
    mesh_y: int = 1
    subclass: str | None = None
    is_compute: bool = False
    constraints: dict = field(default_factory=dict)
    # storage specs as Timeloop derives them (None for compute)
    word_bits: int = 16
    block_size: int = 1
    cluster_size: int = 1
    size: float = math.inf          # words per instance (inf: unbounded, e.g. DRAM)
    effective_size: float = math.inf
    read_bandwidth: float = math.inf   # words/cycle/instance
    write_bandwidth: float = math.inf
    shared_bandwidth: float = math.inf
    min_utilization: float = 0.0       # a mapping must fill at least this share of effective_size
    is_dummy: bool = False
    from_container: bool = False       # the dummy level a v0.4 node's mesh adds (as timeloopfe does)
    branches: tuple = ()               # the v0.4 !Parallel branches it is in, outermost first (`Architecture.branches`)
    ignored: bool = False              # a class Timeloop does not model (`timeloop_kind`): dropped on parsing
    # what timeloop-model reads of the component, where it differs from `attributes` (a v0.3 tree:
    # the component's own attributes; `attributes` also holds the subtrees', as Accelergy sees them)
    own_attributes: dict | None = field(default=None, repr=False)

    @property
    def accelergy_class(self) -> str:
        return self.subclass or self.cls

    @property
    def timeloop_attributes(self) -> dict:
        """The attributes timeloop-model reads for this level (its specs, its built-in energies)."""
        return self.attributes if self.own_attributes is None else self.own_attributes


@dataclass
class Architecture:
    """Storage levels from the backing store (index 0) inward, and the compute level."""

    name: str
    levels: list[Level]
    compute: Level
    attributes: dict = field(default_factory=dict)
    source: str | None = None
    warnings: list[str] = field(default_factory=list)   # legal for Timeloop, but likely mistakes
    meshless: tuple[str, ...] = ()     # v0.4 containers of fan-out 1: no level (as timeloopfe places them)
    # each v0.4 !Parallel branch, (parallel, branch index) -> what its nodes keep as written: the
    # `keep`/`keep_only` names and the `bypass_only` lists (the constraints add what extra
    # constraint files say before the branch's bypasses are worked out)
    branches: dict = field(default_factory=dict)

    def level_names(self) -> list[str]:
        return [lv.name for lv in self.levels]

    def no_spatial_level(self, i: int) -> str | None:
        """Timeloop's parser message for a spatial directive or constraint at storage level i (0 =
        the backing store) when nothing fans out below it; None where something does."""
        if math.prod(self.fanout(i)) > 1:
            return None
        inner = f"({self.levels[i + 1].name}) " if i + 1 < len(self.levels) else ""
        return (f"cannot find spatial tiling level associated with storage level {self.levels[i].name}. This is "
                f"because the number of instances of the next-inner level {inner}is the same as this level, which "
                "means there cannot be a spatial fanout.")

    def fanout(self, i: int) -> tuple[int, int]:
        """X and Y fan-out from storage level i (0 = the backing store) to the next inner level."""
        lv = self.levels[i]
        child = self.levels[i + 1] if i + 1 < len(self.levels) else self.compute
        return max(1, child.mesh_x // max(1, lv.mesh_x)), max(1, child.mesh_y // max(1, lv.mesh_y))

    @property
    def all_levels(self) -> list[Level]:
        return self.levels + [self.compute]


def split_range(name: str, file: str | None = None, key: str = "name") -> tuple[str, int]:
    """`PE[0..15]` -> ("PE", 16); a plain name has one instance. A range that is not two integers
    lo <= hi (`Buf[1..x]`, `Buf[3..1]`) is refused: read as a plain name it became a level whose
    energy table or instance count no one could find."""
    text = str(name)
    m = _RANGE.match(text)
    if not m:
        if "[" in text and ".." in text[text.index("["):]:
            raise CoexploreError(f"bad instance range in name '{text}'", file=file, key=key,
                                 expected="name[lo..hi] with integers lo <= hi, e.g. PE[0..15]")
        return text, 1
    lo, hi = int(m.group("lo")), int(m.group("hi"))
    if hi < lo:
        raise CoexploreError(f"bad instance range in name '{text}' ({hi} < {lo})", file=file, key=key,
                             expected="name[lo..hi] with integers lo <= hi, e.g. PE[0..15]")
    return m.group("base"), hi - lo + 1



def timeloop_kind(cls: str) -> str | None:
    """'storage', 'compute', or None for a component Timeloop ignores, from its class name."""
    if any(b in cls for b in BUFFER_CLASSES):
        return "storage"
    if any(c in cls for c in COMPUTE_CLASSES):
        return "compute"
    return None


def ignored_class_note(name: str, cls: str) -> str:
    return (f"{name}: class '{cls}' names no buffer ({', '.join(BUFFER_CLASSES)}) and no compute unit "
            f"({', '.join(COMPUTE_CLASSES)}; case matters), so Timeloop ignores the component, and so does coexplore")


def _derive_storage(level: Level, file: str | None) -> None:
    """Timeloop's BufferLevel::ParseSpecs: word, block and cluster sizes, capacity, bandwidths.

    width (or memory_width / data_storage_width) = datawidth x block_size x cluster_size, and must
    be a multiple of datawidth x block_size (block_size 1 when not given; Timeloop asserts). Without
    block_size and cluster_size, width sets the block size; with cluster_size only, block_size =
    width / cluster_size / datawidth; with block_size only, width sets the cluster size; with both,
    their product must be the width (Timeloop stops otherwise)."""
    a = level.timeloop_attributes
    key = f"{level.name}.attributes"
    level.word_bits = _positive(_attr(a, "word_bits", 16), file=file,
                                key=f"{key}.{_attr_name(a, 'word_bits', 'datawidth')}")
    cluster = a.get("cluster_size")
    level.cluster_size = 1 if cluster is None else _positive(cluster, file=file, key=f"{key}.cluster_size")
    block = _attr(a, "block_size")
    level.block_size = 1 if block is None else _positive(block, file=file, key=f"{key}.block_size")
    written = next((k for k in _ALIASES["width"] if a.get(k) is not None), None)
    if written is not None:
        w, wkey = _positive(a[written], file=file, key=f"{key}.{written}"), f"{key}.{written}"
        unit = level.word_bits * level.block_size
        if w % unit:
            what = "datawidth x block_size" if block is not None else "datawidth"
            note = ""
            if _attr(a, "word_bits") is None:       # the default, most likely a misspelt key
                typo = next((k for k in a if _close_attribute(str(k)) in ("word_bits", "datawidth")
                             and k not in TIMELOOP_ATTRIBUTES), None)
                note = ("; the datawidth is Timeloop's default 16: no datawidth or word-bits was read"
                        + (f" ('{typo}' is not one Timeloop reads)" if typo else ""))
            raise CoexploreError(f"{written} {w} is not a multiple of {what} = {unit}{note}", file=file, key=wkey,
                                 expected=f"a multiple of {unit} (Timeloop asserts it)")
        if block is not None and cluster is not None:
            if unit * level.cluster_size != w:
                raise CoexploreError(f"block_size x datawidth x cluster_size = {unit * level.cluster_size} is not "
                                     f"{written} {w}", file=file, key=wkey,
                                     expected="the product of the three (Timeloop stops otherwise)")
        elif cluster is not None:
            level.block_size = w // level.cluster_size // level.word_bits
            if level.block_size == 0:
                raise CoexploreError(f"{written} {w} split into {level.cluster_size} clusters holds no "
                                     f"{level.word_bits}-bit word", file=file, key=wkey,
                                     expected="a width of at least cluster_size x datawidth")
        elif block is not None:
            level.cluster_size = w // unit
        else:
            level.block_size = w // level.word_bits
    is_dram = "dram" in level.cls.lower() or str(a.get("technology", "")).upper() == "DRAM"
    if is_dram and level.cluster_size != 1:
        raise CoexploreError(f"cluster_size {level.cluster_size} on a DRAM", file=file, key=f"{key}.cluster_size",
                             expected="1 (Timeloop requires it for DRAM)")
    port_key = "num_ports" if "num_ports" in a else "n_ports"       # (Timeloop: num-ports, else n_ports)
    ports = a.get(port_key)
    if ports is not None and ports not in (1, 2):
        raise CoexploreError(f"got {ports!r}", file=file, key=f"{key}.{port_key}",
                             expected="1 or 2 (Timeloop asserts it)")
    entries = a.get("entries")
    depth = _attr(a, "depth")
    if entries is not None:
        level.size, size_key = _positive(entries, file=file, key=f"{key}.entries"), "entries"
    elif depth is not None:
        level.size, size_key = _positive(depth, file=file, key=f"{key}.{_attr_name(a, 'depth', 'depth')}") \
            * level.block_size, "depth"
    elif a.get("sizeKB") is not None:
        level.size = _positive(a["sizeKB"], file=file, key=f"{key}.sizeKB", integer=False) * 8192 // level.word_bits
        size_key = "sizeKB"
    else:
        level.size, size_key = math.inf, None
    if math.isfinite(level.size) and level.size > MAX_CAPACITY:
        raise CoexploreError(f"a capacity of {level.size:.3e} words per instance is too large", file=file,
                             key=f"{key}.{size_key}", expected="at most 2^53 words (depth x block size; counts "
                             "are 64-bit integers)")
    mb = a.get("multiple_buffering")        # Timeloop divides the capacity by it: 0 is no buffer at all
    mb = 1 if mb is None else _positive(mb, file=file, key=f"{key}.multiple_buffering", integer=False)
    level.effective_size = math.floor(level.size / mb) if math.isfinite(level.size) else math.inf
    if math.isfinite(level.effective_size) and level.effective_size > MAX_CAPACITY:
        raise CoexploreError(f"{mb!r} makes an effective capacity of {level.effective_size:.3e} words, too large",
                             file=file, key=f"{key}.multiple_buffering",
                             expected="a factor such as 1 or 2 (capacity / factor at most 2^53 words)")
    mu = a.get("min_utilization")
    if mu is not None:
        level.min_utilization = _number(mu, file=file, key=f"{key}.min_utilization")
        if not 0 <= level.min_utilization <= 1:
            raise CoexploreError(f"got {mu!r}", file=file, key=f"{key}.min_utilization", expected="a number in [0, 1]")
        if level.min_utilization > 0 and not math.isfinite(level.effective_size):
            raise CoexploreError("min_utilization on a buffer without a size", file=file,
                                 key=f"{key}.min_utilization", expected="depth, entries or sizeKB as well")
    bw = a.get("bandwidth")
    if bw is not None:
        half = _bandwidth(bw, file=file, key=f"{key}.bandwidth") / 2
        level.read_bandwidth = level.write_bandwidth = half
    for attr in ("read_bandwidth", "write_bandwidth", "shared_bandwidth"):
        if a.get(attr) is not None:
            setattr(level, attr, _bandwidth(a[attr], file=file, key=f"{key}.{attr}"))
    _refuse_unmodelled(a, file, key, level.name)
    level.is_dummy = is_fanout_level(level.name, level.cls)


def is_fanout_level(name: str, cls: str) -> bool:
    """timeloopfe's level for a fan-out (`inter_<node>_spatial`, class dummy_storage), which it gives
    no temporal loops, lets keep nothing and prices not at all; a component of its own whose class
    is dummy_storage is a buffer like any other, for Timeloop and here."""
    return "dummy" in cls.lower() and re.fullmatch(r"inter_.+_spatial", name) is not None


def _no_networks(what: str, file, key: str, expected: str) -> CoexploreError:
    return CoexploreError(f"{what}: explicit networks are not modelled (coexplore models Timeloop's "
                          "default network only)", file=file, key=key, expected=expected)


def _refuse_unmodelled(a: dict, file, key: str, name: str = "") -> None:
    """Attributes that change Timeloop's numbers in ways this model does not reproduce: refused
    rather than silently ignored (an empty, zero or all-1 value changes nothing and is accepted)."""
    if a.get("addr_gen_energy") not in (None, "", 0):      # BufferLevel::ComputeAddrGenEnergy
        raise CoexploreError(f"addr_gen_energy {a['addr_gen_energy']!r} is not modelled (Timeloop charges it per "
                             "address generation)", file=file, key=f"{key}.addr_gen_energy",
                             expected="no addr_gen_energy (or 0)")
    if a.get("has_power_gating") not in (None, "", False, 0, "false", "False"):   # timeloopfe then gates the next levels
        raise CoexploreError("power gating is not modelled (timeloopfe gates the levels below it, and Timeloop "
                             "scales their leakage by this level's utilized instances)", file=file,
                             key=f"{key}.has_power_gating", expected="has_power_gating: false, or left out")
    gated = a.get("power_gated_at")
    if gated not in (None, "") and str(gated).split("[")[0] != name:      # Topology: leakage by the gater's use
        raise CoexploreError(f"power gating at '{gated}' is not modelled (Timeloop scales the leakage by "
                             "that level's utilized instances)", file=file, key=f"{key}.power_gated_at",
                             expected=f"no power_gated_at (or null, or '{name}' itself)")
    for net in ("network_type", "router_energy", "wire_energy"):   # the level's own (legacy) network
        if a.get(net) not in (None, "", 0):
            raise _no_networks(f"{net} {a[net]!r} sets up the level's network", file, f"{key}.{net}",
                               f"no {net} (Timeloop's default network: no network energy, no distributed multicast)")
    scale = a.get("per_dataspace_bandwidth_consumption_scale")
    if isinstance(scale, dict) and any(v != 1 for v in scale.values()) or \
            (scale is not None and not isinstance(scale, dict)):
        raise CoexploreError("per-dataspace bandwidth scaling is not modelled", file=file,
                             key=f"{key}.per_dataspace_bandwidth_consumption_scale",
                             expected="no scale (or 1 for every dataspace)")
    for lat in ("network_fill_latency", "network_drain_latency"):
        if a.get(lat) not in (None, "", 0):     # Timeloop adds them to the cycle count (topology.cpp)
            raise CoexploreError(f"{lat} {a[lat]!r} is not modelled (Timeloop adds it to the cycles)", file=file,
                                 key=f"{key}.{lat}", expected=f"no {lat} (or 0)")
    for net in ("network_read", "network_fill", "network_update", "network_drain"):
        if a.get(net) not in (None, ""):
            raise _no_networks(f"'{a[net]}' names a network", file, f"{key}.{net}", "no network_* attributes")


def _resolved(attrs: dict, scope: dict) -> dict:
    """A v0.4 node's attributes with expressions computed as timeloopfe computes them: over the
    variables, the containers' attributes and the node's own earlier attributes."""
    done: dict = {}
    for k, v in attrs.items():
        done[k], _ = expressions.resolve(v, {**scope, **done})
    return done


def _variables(data: dict, file: str | None) -> dict:
    """The spec's top-level `variables:` (or the architecture's), each computed in order over the
    earlier ones, as timeloopfe does; one that names something undefined or fails is refused (as
    Accelergy refuses it), one this evaluator does not compute (a lambda, list arithmetic) stays
    text (warned)."""
    spec = dict(data)
    problem = data.get("problem")
    if isinstance(problem, dict) and isinstance(problem.get("instance"), dict):   # timeloopfe's has densities
        spec["problem"] = {**problem, "instance": {"densities": {}, **problem["instance"]}}
    scope: dict = {"spec": expressions.Namespace(spec)}   # timeloopfe's spec: the whole document
    for where, block in (("variables", data.get("variables")),
                         ("architecture.variables", (data.get("architecture") or {}).get("variables"))):
        if block is None:
            continue
        for k, v in _mapping(block, file=file, key=where).items():
            if k == "version":
                continue
            scope[str(k)], why = expressions.resolve(v, scope)
            if str(k) == "spec":
                raise CoexploreError("a variable named spec hides timeloopfe's spec", file=file,
                                     key=f"{where}.{k}", expected="another name")
            if why and not expressions.unsupported(why):
                raise CoexploreError(f"'{v}' cannot be computed: {why}", file=file, key=f"{where}.{k}",
                                     expected="a number, text, or an expression over the variables before it")
            if why:     # (Accelergy computes any Python; only what a size or mesh uses must be arithmetic here)
                warnings.warn(f"{file}: {where}.{k}: '{v}' cannot be computed here ({why}); kept as text, which "
                              "no size, mesh or factor may use", CoexploreWarning, stacklevel=2)
    return scope


def _computed_split(constraints, scope: dict, file, where: str):
    """Node constraints with a spatial `split` written as an expression computed, as timeloopfe
    computes it (`split: len(spec.problem.instance)`)."""
    spatial = constraints.get("spatial") if isinstance(constraints, dict) else None
    split = spatial.get("split") if isinstance(spatial, dict) else None
    if not isinstance(split, str):
        return constraints
    value, why = expressions.resolve(split, scope)
    if isinstance(value, str):
        why = why or expressions.FAILED.get(split) or "not an expression"
        if "spec.problem" in split and "problem" not in scope["spec"]:
            why += " (this file holds no problem: give the whole spec, with its problem, as ARCH)"
        raise CoexploreError(f"split '{split}' cannot be computed: {why}", file=file,
                             key=f"{where}.constraints.spatial.split",
                             expected="a number, or an expression over the variables, attributes and "
                                      "spec (spec.problem.instance...)")
    return {**constraints, "spatial": {**spatial, "split": value}}


# the storage attributes timeloopfe writes into every storage component before it copies the
# containers' attributes in (only where absent): a container's `multiple_buffering` never reaches one
TIMELOOPFE_STORAGE_DEFAULTS = {"n_banks": 2, "cluster_size": 1, "reduction_supported": True, "multiple_buffering": 1,
                               "min_utilization": 0, "allow_overbooking": False, "has_power_gating": False}


def _make_level(node: dict, inherited: dict, instances: int, mesh_x: int, mesh_y: int,
                file: str | None, where: str, scope: dict | None = None, own_specs: bool = False,
                containers: dict | None = None) -> Level:
    """One component as a Level. `inherited`: the enclosing containers' attributes, which the level's
    `attributes` carry (Accelergy prices a component with them); `own_specs`: Timeloop's buffer specs
    (sizes, widths, bandwidths, mesh) from the component's own attributes only, as timeloop-model
    reads a v0.3 tree (BufferLevel::ParseSpecs sees the component alone); `containers`: a v0.4
    node's enclosing containers' attributes, which timeloopfe copies into it where absent, after its
    storage defaults (the spec's top-level variables reach Accelergy, not Timeloop's specs)."""
    if not isinstance(node, dict):
        raise CoexploreError(f"got {type(node).__name__}", file=file, key=where,
                             expected="a component mapping with name and class")
    if "name" not in node:
        raise CoexploreError("missing key", file=file, key=f"{where}.name", expected="a component name")
    if "class" not in node:
        raise CoexploreError("missing key", file=file, key=f"{where}.class",
                             expected="a component class such as DRAM, smartbuffer_SRAM, intmac")
    attrs = dict(inherited)
    own = node.get("attributes") or {}
    if not isinstance(own, dict):
        raise CoexploreError("not a mapping", file=file, key=f"{where}.attributes", expected="a mapping")
    own = {str(k).replace("-", "_"): v for k, v in own.items()}
    attrs.update(_resolved(own, {**(scope or {}), **inherited}) if scope is not None else own)
    name, _ = split_range(node["name"], file, f"{where}.name")
    if containers is not None and "[" in str(node["name"]):       # timeloopfe appends its own [1..n]
        raise CoexploreError(f"a v0.4 node name with an instance range ('{node['name']}')", file=file,
                             key=f"{where}.name", expected="a plain name, the copies given by a `spatial: {meshX: n}`")
    mx, my = ((own if own_specs else attrs).get(k) for k in ("meshX", "meshY"))
    mx = _positive(mesh_x if mx is None else mx, file=file, key=f"{where}.attributes.meshX")
    my = _positive(mesh_y if my is None else my, file=file, key=f"{where}.attributes.meshY")
    constraints = _computed_split(node.get("constraints") or {}, {**(scope or {}), **attrs}, file, where) \
        if scope is not None else node.get("constraints") or {}
    level = Level(name=name, cls=str(node["class"]), subclass=node.get("subclass"), attributes=attrs,
                  instances=instances, mesh_x=mx, mesh_y=my, constraints=constraints)
    kind = timeloop_kind(level.cls)
    if kind is None and any(n in level.cls for n in NETWORK_CLASSES):     # Timeloop's isNetworkClass
        raise _no_networks(f"'{level.cls}' is a network", file, f"{where}.class",
                           "storage and compute components")
    level.is_compute, level.ignored = kind == "compute", kind is None
    mine = {k: attrs[k] for k in own}
    if own_specs:
        level.own_attributes = mine
    elif containers is not None:
        view = dict(mine)
        for k, v in (*(TIMELOOPFE_STORAGE_DEFAULTS.items() if kind == "storage" else ()), *containers.items()):
            view.setdefault(k, v)
        level.own_attributes = view
        if kind == "storage" and mine.get("datawidth") is None:    # (before it copies the containers' in)
            raise CoexploreError("a storage component without its own datawidth", file=file,
                                 key=f"{where}.attributes.datawidth",
                                 expected="datawidth in the component's attributes (timeloopfe requires it there: "
                                          "a container's does not count)")
    if kind == "storage":
        _derive_storage(level, file)
    return level


V4_TAGS = ("Container", "Component", "Parallel", "Hierarchical", "Pipelined", "Nothing")
# Timeloop's network classes (isNetworkClass: a case-sensitive substring, tested after buffer and compute)
NETWORK_CLASSES = ("XY_NoC", "Legacy", "ReductionTree", "SimpleMulticast")


# keys timeloopfe accepts on a v0.4 node and in its constraints (timeloopfe refuses others too: a
# misspelt `spatial` or `constraints` would otherwise silently change the hardware or the mapspace)
V4_NODE_KEYS = {TAG_KEY, "name", "class", "subclass", "attributes", "spatial", "constraints", "nodes",
                "networks", "sparse_optimizations", "required_actions", "area_share", "enabled", "actions",
                "power_gated_at", "energy_scale", "area_scale", "description"}
V4_CONSTRAINT_KEYS = {"dataspace", "temporal", "spatial", "max_overbooked_proportion", "utilization"}
V4_SPATIAL_KEYS = ("meshX", "meshY")


def _check_v4_keys(node: dict, here: str, file) -> None:
    for k in node:
        if k not in V4_NODE_KEYS:
            raise CoexploreError(f"unknown key '{k}'", file=file, key=f"{here}.{k}",
                                 expected="keys of a v0.4 node: " + ", ".join(sorted(V4_NODE_KEYS - {TAG_KEY})))
    cons = node.get("constraints")
    if cons is not None and not isinstance(cons, dict):
        raise CoexploreError(f"got {cons!r}", file=file, key=f"{here}.constraints",
                             expected="a mapping {temporal: {...}, spatial: {...}, dataspace: {...}}")
    for k, v in (cons or {}).items():
        if k not in V4_CONSTRAINT_KEYS:
            raise CoexploreError(f"unknown key '{k}'", file=file, key=f"{here}.constraints.{k}",
                                 expected="keys of v0.4 node constraints: " + ", ".join(sorted(V4_CONSTRAINT_KEYS)))
        if k in ("dataspace", "temporal", "spatial") and v is not None and not isinstance(v, dict):
            raise CoexploreError(f"got {v!r}", file=file, key=f"{here}.constraints.{k}",
                                 expected="a mapping (e.g. " + {"dataspace": "{keep: [Inputs], bypass: [Weights]}",
                                                                "temporal": "{factors: 'C=1', permutation: [M, C]}",
                                                                "spatial": "{factors: 'M=4', split: 1}"}[k] + ")")
    spatial = node.get("spatial")
    if isinstance(spatial, dict):       # timeloopfe's Spatial node has meshX and meshY only
        for k in spatial:
            if k not in V4_SPATIAL_KEYS:
                raise CoexploreError(f"unknown key '{k}'", file=file, key=f"{here}.spatial.{k}",
                                     expected="keys of a v0.4 spatial mesh: " + ", ".join(V4_SPATIAL_KEYS))


def _branch_keeps(node: Any) -> tuple[set[str], list[set[str]]]:
    """What a `!Parallel` branch keeps, as timeloopfe's Dataspace2BranchProcessor counts it after
    the constraint macros: the `keep` / `keep_only` lists in its subtree, and each `bypass_only`
    list (which keeps every other dataspace)."""
    keeps: set[str] = set()
    others: list[set[str]] = []
    if isinstance(node, dict):
        cons = node.get("constraints")
        ds = cons.get("dataspace") if isinstance(cons, dict) else None
        for k in ("keep", "keep_only", "bypass_only"):
            v = ds.get(k) if isinstance(ds, dict) else None
            names = {str(x) for x in v} if isinstance(v, (list, tuple)) else None
            if names is not None:
                (others.append(names) if k == "bypass_only" else keeps.update(names))
        for child in node.get("nodes") if isinstance(node.get("nodes"), list) else []:
            k, o = _branch_keeps(child)
            keeps |= k
            others += o
    return keeps, others


def _enabled(node: dict, scope: dict, file, here: str) -> bool:
    """A node's `enabled` (an expression too, as timeloopfe computes it): true or false."""
    value = node.get("enabled", True)
    if isinstance(value, str):
        value, _ = expressions.resolve(value, scope)
    if not isinstance(value, bool):
        raise CoexploreError(f"got {value!r}", file=file, key=f"{here}.enabled", expected="true or false")
    return value


def _from_v4_nodes(nodes: list, file: str | None,
                   scope: dict | None = None) -> tuple[list[Level], dict, tuple[str, ...], dict]:
    """The levels of a v0.4 node list as timeloopfe's v4-to-v3 transpiler places them, the
    attributes the top level passes down, the containers that get no level (a fan-out of 1) and
    the !Parallel branches (`Architecture.branches`)."""
    levels: list[Level] = []
    meshless: list[str] = []
    branches: dict = {}
    parallels = itertools.count()                  # (numbers the !Parallel nodes)
    scope = {} if scope is None else scope
    # timeloopfe makes the variables the top level's attributes: every component inherits them
    inherited: dict = {k: v for k, v in scope.items() if k != "spec"}
    # ... and names every component and container in expressions (`GlobalBuffer.attributes["datawidth"]`,
    # as the exercises' cheatsheet writes): its attributes as written, computed once it is read
    named = _node_names(nodes)
    scope = {**named, **scope}
    containers: dict = {}                          # the containers' attributes alone (what Timeloop's specs see)
    mesh_x = mesh_y = 1

    def dummy_level(name: str, constraints: dict, here: str) -> None:
        """The dummy storage level timeloopfe places where a node fans out (`inter_<name>_spatial`):
        it carries the node's spatial loops and keeps nothing."""
        dummy = {"name": f"inter_{name}_spatial", "class": "dummy_storage",
                 "attributes": {"width": 1, "depth": 1, "datawidth": 1, "technology": -1},
                 "constraints": _computed_split(constraints, {**scope, **inherited}, file, here)}
        lv = _make_level(dummy, {}, mesh_x * mesh_y, mesh_x, mesh_y, file, here, scope)
        lv.from_container = True
        lv.attributes.update({"meshX": mesh_x, "meshY": mesh_y})
        levels.append(lv)

    def mesh(node: dict, own: dict, here: str) -> tuple[int, int]:
        spatial = node.get("spatial") or {}
        if not isinstance(spatial, dict):
            raise CoexploreError(f"got {spatial!r}", file=file, key=f"{here}.spatial",
                                 expected="a mapping {meshX: n, meshY: m}")
        spatial = _resolved(spatial, {**scope, **inherited, **own})
        return (_positive(spatial.get("meshX", 1), file=file, key=f"{here}.spatial.meshX"),
                _positive(spatial.get("meshY", 1), file=file, key=f"{here}.spatial.meshY"))

    def walk(items, where, parallel: bool = False):
        nonlocal mesh_x, mesh_y, inherited, containers
        items = yaml_list(items, file=file, key=where, what="nodes")
        branch = [_branch_keeps(node) for node in items] if parallel else []
        pid = next(parallels) if parallel else None
        for a, b in itertools.combinations(range(len(branch)), 2):
            shared = branch[a][0] & branch[b][0]
            if shared:                     # timeloopfe's Dataspace2BranchProcessor refuses it
                raise CoexploreError(f"{', '.join(sorted(shared))} kept in two branches of a !Parallel", file=file,
                                     key=f"{where}[{b}]", expected="each dataspace kept in one branch at most")
        for i, node in enumerate(items):
            here = f"{where}[{i}]"
            if not isinstance(node, dict):
                raise CoexploreError(f"got {node!r}", file=file, key=here,
                                     expected="a !Container, !Component or !Parallel node")
            tag = node.get(TAG_KEY, "Component" if "class" in node else "Container")
            tag = "Component" if tag == "Element" else tag        # the older timeloopfe's name for it
            if tag not in V4_TAGS:
                raise CoexploreError(f"unknown tag !{tag}", file=file, key=here,
                                     expected="one of " + ", ".join("!" + t for t in V4_TAGS))
            if tag == "Nothing" or not _enabled(node, {**scope, **inherited}, file, here):   # no hardware
                continue
            _check_v4_keys(node, here, file)
            start = len(levels)
            if tag in ("Parallel", "Hierarchical", "Pipelined") or ("nodes" in node and "class" not in node
                                                                     and tag != "Container"):
                walk(node.get("nodes"), f"{here}.nodes", parallel=tag == "Parallel")
            elif tag == "Container":
                if parallel:               # timeloopfe's transpiler refuses it
                    raise CoexploreError("a !Container directly inside a !Parallel", file=file, key=here,
                                         expected="components, !Nothing or !Hierarchical branches (timeloopfe "
                                                  "refuses containers under a !Parallel too)")
                if node.get("networks"):
                    raise _no_networks("a networks list", file, f"{here}.networks", "no networks")
                inherited, containers = dict(inherited), dict(containers)
                own = {str(k).replace("-", "_"): v for k, v in
                       _mapping(node.get("attributes"), file=file, key=f"{here}.attributes").items()}
                resolved = _resolved(own, {**scope, **inherited})
                if str(node.get("name")) in named:
                    named[str(node["name"])]["attributes"] = resolved
                inherited.update(resolved)
                containers.update(resolved)
                sx, sy = mesh(node, {}, here)
                if sx * sy != 1:           # timeloopfe places no level for a fan-out of 1
                    dummy_level(node["name"], node.get("constraints") or {}, here)
                    mesh_x, mesh_y = mesh_x * sx, mesh_y * sy
                else:
                    meshless.append(str(node.get("name")))
                if "nodes" in node:
                    walk(node["nodes"], f"{here}.nodes")
            else:
                sx, sy = mesh(node, {}, here)
                if sx * sy != 1:           # a component's own mesh: a dummy level, then the copies
                    if parallel:
                        raise CoexploreError("a component with a spatial mesh inside a !Parallel", file=file,
                                             key=f"{here}.spatial", expected="the mesh on a node around the "
                                             "!Parallel (timeloopfe refuses it too)")
                    dummy_level(node["name"], {"spatial": (node.get("constraints") or {}).get("spatial") or {}},
                                here)
                    mesh_x, mesh_y = mesh_x * sx, mesh_y * sy
                    node = {k: v for k, v in node.items() if k != "spatial"}
                    if isinstance(node.get("constraints"), dict):
                        node["constraints"] = {k: v for k, v in node["constraints"].items() if k != "spatial"}
                lv = _make_level(node, inherited, mesh_x * mesh_y, mesh_x, mesh_y, file, here, scope,
                                 containers=containers)
                lv.mesh_x, lv.mesh_y, lv.instances = mesh_x, mesh_y, mesh_x * mesh_y
                # what Accelergy reads is what timeloopfe wrote for the component (its own attributes,
                # its storage defaults such as n_banks 2, the containers'), then the spec's variables
                lv.attributes = {**lv.attributes, **lv.own_attributes}
                if str(node.get("name")) in named:
                    named[str(node["name"])]["attributes"] = lv.own_attributes
                levels.append(lv)
            if parallel:                   # a !Parallel branch: every other dataspace bypasses it
                branches[(pid, i)] = branch[i]
                for lv in levels[start:]:
                    lv.branches = ((pid, i), *lv.branches)

    walk(nodes, "architecture.nodes")
    return levels, inherited, tuple(meshless), branches


def _node_names(nodes) -> dict:
    """Every named node of a v0.4 tree -> a Namespace holding its `attributes` as written (timeloopfe's
    symbol table holds each leaf by name); a node read before it is made gives its text."""
    out: dict = {}
    for node in nodes if isinstance(nodes, list) else []:
        if not isinstance(node, dict):
            continue
        attrs = node.get("attributes")
        if isinstance(node.get("name"), str) and node["name"].isidentifier():
            out.setdefault(node["name"], expressions.Namespace(
                name=node["name"], attributes=attrs if isinstance(attrs, dict) else {}))
        for k, v in _node_names(node.get("nodes")).items():
            out.setdefault(k, v)
    return out


def _refuse_sparse_nodes(nodes, key: str, file: str | None) -> None:
    """A v0.4 node with Sparseloop's sparse_optimizations is refused (`spec.unmodelled`)."""
    from coexplore.spec.unmodelled import check_sparse_node
    for i, node in enumerate(nodes if isinstance(nodes, list) else []):
        if isinstance(node, dict):
            check_sparse_node(node, f"{key}[{i}]", file)
            _refuse_sparse_nodes(node.get("nodes"), f"{key}[{i}].nodes", file)


V3_SUBTREE_KEYS = ("name", "attributes", "local", "subtree", "description")
V3_COMPONENT_KEYS = ("name", "class", "subclass", "attributes", "enabled", "required_actions", "actions",
                     "area_share", "description")


def _unknown_v3_keys(node: dict, known: tuple[str, ...], here: str) -> list[str]:
    """Keys of a v0.3 subtree or component that Timeloop does not read (it ignores them silently:
    most likely typos, e.g. `atributes`, whose attributes are then all defaults)."""
    import difflib
    out = []
    for key in node:
        if str(key) not in known:
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.75)
            out.append(f"{here}: unknown key '{key}' ignored, as Timeloop ignores it"
                       + (f" (did you mean '{close[0]}'?)" if close else f" (it reads {', '.join(known)})"))
    return out


def _from_v3_tree(tree: list, file: str | None) -> tuple[list[Level], dict, list[str]]:
    levels: list[Level] = []
    top_attrs: dict = {}
    notes: list[str] = []

    def walk(subtrees, inherited, mult, where):
        for i, st in enumerate(yaml_list(subtrees, file=file, key=where, what="subtrees")):
            here = f"{where}[{i}]"
            if not isinstance(st, dict) or "name" not in st:
                raise CoexploreError("malformed subtree", file=file, key=here,
                                     expected="a mapping with name, local and/or subtree")
            notes.extend(_unknown_v3_keys(st, V3_SUBTREE_KEYS, here))
            attrs = dict(inherited)
            attrs.update({str(k).replace("-", "_"): v for k, v in
                          _mapping(st.get("attributes"), file=file, key=f"{here}.attributes").items()})
            if not top_attrs:
                top_attrs.update(attrs)
            _, count = split_range(st["name"], file, f"{here}.name")
            m = mult * count
            for j, comp in enumerate(yaml_list(st.get("local"), file=file, key=f"{here}.local", what="components")):
                cname = comp.get("name", "") if isinstance(comp, dict) else ""
                if isinstance(comp, dict):
                    notes.extend(_unknown_v3_keys(comp, V3_COMPONENT_KEYS, f"{here}.local[{j}]"))
                _, n = split_range(cname, file, f"{here}.local[{j}].name")
                inst = m * n        # a ranged local inside ranged subtrees: Timeloop multiplies (PE[0..15] x [0..3])
                lv = _make_level(comp, attrs, inst, 1, 1, file, f"{here}.local[{j}]", own_specs=True)
                if lv.ignored:
                    levels.append(lv)
                    continue
                own = lv.own_attributes or {}          # (the component's own: Timeloop reads no subtree's)
                _check_instances_attribute(lv, file)     # (before the meshes: their message would count the range)
                given_y = "meshY" in own
                if "meshX" not in (comp.get("attributes") or {}) and lv.mesh_x == 1 and inst > 1:
                    y = int(own.get("meshY") or 1) if given_y else 1
                    if inst % y:                           # Timeloop: instances % meshY == 0, meshX the quotient
                        raise CoexploreError(f"{lv.name}: its {inst} instances are not divisible by meshY {y}",
                                             file=file, key=f"{here}.local[{j}].attributes.meshY",
                                             expected="a meshY dividing the number of instances (meshX is their quotient)")
                    lv.mesh_x = inst // y
                lv.mesh_y = int(own.get("meshY", max(1, inst // max(1, lv.mesh_x))) or 1)
                if lv.mesh_x * lv.mesh_y != inst:            # Timeloop's ValidateTopology asserts
                    raise CoexploreError(
                        f"{lv.name}: " + (f"meshX {lv.mesh_x} x meshY {lv.mesh_y} is not its {inst} instances"
                                          if given_y else f"its {inst} instances are not divisible by meshX {lv.mesh_x}"),
                        file=file, key=f"{here}.local[{j}].attributes.meshX",
                        expected="meshX x meshY = the number of instances" if given_y
                        else "a meshX dividing the number of instances (meshY is their quotient)")
                levels.append(lv)
            walk(st.get("subtree"), attrs, m, f"{here}.subtree")

    walk(tree, {}, 1, "architecture.subtree")
    return levels, top_attrs, notes


# Timeloop's environment variables that change what it counts: first-read elision is on unless its
# variable is "0"; updated RMW and toroidal links are on when theirs is set and not "0" (tiling.cpp,
# nest-analysis.cpp); link transfers' variable has meant disabled when present, or when not "0", in
# different versions: any value is refused. The model is Timeloop without them.
# TIMELOOP_HIDE_INCONSEQUENTIAL_STATS changes only its printout.
TIMELOOP_ENV_ON_UNLESS_ZERO = ("TIMELOOP_ENABLE_FIRST_READ_ELISION",)        # "0" changes the counts
TIMELOOP_ENV_OFF_UNLESS_SET = ("TIMELOOP_ENABLE_UPDATED_RMW", "TIMELOOP_ENABLE_TOROIDAL_LINKS")  # set, not "0"
TIMELOOP_ENV_ANY_VALUE = ("TIMELOOP_DISABLE_LINK_TRANSFERS",)
TIMELOOP_ENV_OUTPUT_ONLY = {"TIMELOOP_HIDE_INCONSEQUENTIAL_STATS"}


def _check_environment(data: dict, file) -> None:
    """A v0.4 spec's `globals.environment_variables`, which timeloopfe hands to Timeloop (as text):
    one that changes what Timeloop counts is refused; others are warned of as not read."""
    glob = data.get("globals") if isinstance(data.get("globals"), dict) else {}
    custom = glob.get("expression_custom_functions")
    if custom:                     # timeloopfe imports them into the expressions' scope
        raise CoexploreError(f"custom expression functions {custom!r} are not loaded (coexplore runs no code "
                             "from a spec)", file=file, key="globals.expression_custom_functions",
                             expected="an empty list, the expressions that call them written out")
    env = glob.get("environment_variables")
    if not isinstance(env, dict):
        return
    for k, v in env.items():
        k, text = str(k), str(v)
        if k in TIMELOOP_ENV_OUTPUT_ONLY or (k in TIMELOOP_ENV_ON_UNLESS_ZERO and text != "0") or \
                (k in TIMELOOP_ENV_OFF_UNLESS_SET and text == "0"):
            continue
        if k in (*TIMELOOP_ENV_ON_UNLESS_ZERO, *TIMELOOP_ENV_OFF_UNLESS_SET, *TIMELOOP_ENV_ANY_VALUE):
            raise CoexploreError(f"{k}: {v!r} changes what Timeloop counts, which coexplore does not model",
                                 file=file, key=f"globals.environment_variables.{k}",
                                 expected=f"{k} left out (Timeloop's default)")
        if k.startswith("TIMELOOP_"):
            warnings.warn(f"{file}: globals.environment_variables.{k} is not read here: the numbers are those "
                          "of Timeloop without it", CoexploreWarning, stacklevel=3)


def parse_architecture(data: Any, file: str | None = None, name: str | None = None) -> Architecture:
    """Build an Architecture from a parsed YAML document (v0.4 nodes or v0.3 subtree)."""
    if not isinstance(data, dict) or "architecture" not in data:
        raise CoexploreError("missing key", file=file, key="architecture",
                             expected="a Timeloop architecture (architecture: {version, nodes|subtree})")
    arch = data["architecture"]
    if not isinstance(arch, dict):
        raise CoexploreError("not a mapping", file=file, key="architecture", expected="a mapping")
    expressions.FAILED.clear()
    _check_environment(data, file)
    from coexplore.spec.unmodelled import check_document
    check_document(data, file)
    _refuse_sparse_nodes(arch.get("nodes"), "architecture.nodes", file)
    unknown: list[str] = []
    if "nodes" in arch:
        levels, attrs, meshless, branches = _from_v4_nodes(arch["nodes"], file, _variables(data, file))
    elif "subtree" in arch:
        levels, attrs, unknown = _from_v3_tree(arch["subtree"], file)
        meshless, branches = (), {}
    else:
        raise CoexploreError("missing key", file=file, key="architecture.nodes",
                             expected="'nodes' (v0.4) or 'subtree' (v0.3)")
    ignored = [ignored_class_note(lv.name, lv.cls) for lv in levels if lv.ignored]
    levels = [lv for lv in levels if not lv.ignored]
    computes = [lv for lv in levels if lv.is_compute]
    if len(computes) == 1:     # Timeloop's topology makes the compute unit level 0 wherever it is listed
        levels = [lv for lv in levels if not lv.is_compute] + computes
    if not levels:
        raise CoexploreError("no components" + (f" ({'; '.join(unknown)})" if unknown else ""), file=file,
                             key="architecture", expected="at least one storage level and a compute level")
    compute = levels[-1]
    if not compute.is_compute:
        dropped = f" ({'; '.join(ignored + unknown)})" if ignored or unknown else ""   # (a `lokal:` lost the MAC)
        raise CoexploreError(f"the innermost component '{compute.name}' (class {compute.cls}) is not a "
                             f"compute unit{dropped}", file=file, key="architecture",
                             expected="the last component to be a MAC (class containing 'mac' or 'compute')")
    storage = levels[:-1]
    for lv in storage:
        if lv.is_compute:
            raise CoexploreError(f"compute component '{lv.name}' is not the innermost one", file=file,
                                 key="architecture", expected="exactly one compute level, last")
    if not storage:
        raise CoexploreError("no storage levels", file=file, key="architecture",
                             expected="at least one storage level (e.g. DRAM) above the compute level")
    for lv in levels:                   # instance counts multiply into int64 arrays of the model
        if max(lv.instances, lv.mesh_x * lv.mesh_y) > MAX_HARDWARE_VALUE:
            raise CoexploreError(f"{max(lv.instances, lv.mesh_x * lv.mesh_y):.3e} instances of {lv.name}, too many",
                                 file=file, key=f"{lv.name}.name",
                                 expected=f"at most 2^40 = {MAX_HARDWARE_VALUE} instances (name ranges x meshes)")
    for lv in levels:
        _check_instances_attribute(lv, file)
    for outer, inner in zip(levels, levels[1:]):   # Timeloop's FloorPlan asserts each level's fan-out is whole
        if inner.instances % outer.instances:
            raise CoexploreError(f"'{inner.name}' has {inner.instances} instances, not a multiple of the "
                                 f"{outer.instances} of '{outer.name}' above it", file=file, key="architecture",
                                 expected="instance counts that divide inward (Timeloop asserts it): "
                                          "the compute unit inside the containers of the buffers below it")
    names = [lv.name for lv in levels]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise CoexploreError(f"duplicate level names {sorted(dup)}", file=file, key="architecture",
                             expected="unique component names")
    return Architecture(name=name or (name_from_path(file, "arch") if file else "arch"), levels=storage,
                        compute=compute, attributes=attrs, source=file,
                        warnings=unknown + ignored + _suspicious(storage), meshless=meshless, branches=branches)


def _check_instances_attribute(lv: Level, file) -> None:
    """Refuse an `instances` attribute other than the count the name ranges, containers and meshes
    give: Timeloop would take it in their place (BufferLevel::ParseSpecs), coexplore counts instances
    from those alone."""
    given = lv.attributes.get("instances")
    if given is not None and given != lv.instances:
        raise CoexploreError(f"instances {given!r}, but its name range and containers give {lv.instances}: "
                             "coexplore counts instances from those (and meshes) only", file=file,
                             key=f"{lv.name}.attributes.instances",
                             expected=f"{lv.instances} (or no instances attribute), or a name range such as "
                                      f"{lv.name}[0..{int(given) - 1 if isinstance(given, int) and given > 0 else 'N-1'}] "
                                      "(v0.3) or a container's spatial meshX (v0.4)")


# attributes Timeloop reads from a storage level (others are Accelergy's business)
TIMELOOP_ATTRIBUTES = ("depth", "width", "datawidth", "word_bits", "word_width", "block_size", "n_words",
                       "entries", "sizeKB", "cluster_size", "multiple_buffering", "bandwidth",
                       "read_bandwidth", "write_bandwidth", "shared_bandwidth", "meshX", "meshY",
                       "n_banks", "memory_depth", "memory_width", "technology", "network_word_bits",
                       "min_utilization", "num_ports", "n_ports", "allow_overbooking", "nports")
# the names a typo is pointed to: Timeloop's own (`nports` is Accelergy's spelling of `num_ports`,
# `n_ports` Timeloop's second one)
HINTED_ATTRIBUTES = tuple(a for a in TIMELOOP_ATTRIBUTES if a not in ("nports", "n_ports"))


def _suspicious(storage: list[Level]) -> list[str]:
    """What Timeloop accepts silently but is most likely a typo: an unknown attribute one letter
    away from a Timeloop one (`dpeth`), and an on-chip buffer without any size (unbounded)."""
    out = []
    for lv in storage:
        for key in lv.attributes:
            if key in TIMELOOP_ATTRIBUTES:
                continue
            close = _close_attribute(str(key))
            if close and close not in lv.attributes:
                out.append(f"{lv.name}: attribute '{key}' is not one Timeloop reads (did you mean '{close}'?)")
        if math.isinf(lv.size) and not lv.is_dummy and "dram" not in lv.cls.lower() and \
                "dram" not in lv.accelergy_class.lower():
            out.append(f"{lv.name}: no depth, entries or sizeKB, so its capacity is unlimited")
    return out


@functools.lru_cache(maxsize=4096)
def _close_attribute(key: str) -> str | None:
    """The Timeloop attribute one letter or so away from `key` (difflib, cached: the same keys
    come back in every level of every architecture a sweep builds)."""
    import difflib
    close = difflib.get_close_matches(key, HINTED_ATTRIBUTES, n=1, cutoff=0.8)
    close = close or [a for a in HINTED_ATTRIBUTES if a.endswith("_" + key)]   # `ports`: num_ports
    return close[0] if close else None


def load_architecture(path: str | Path) -> Architecture:
    """Read a v0.4 arch.yaml or a flattened processed.yaml (or a whole spec, also a template)."""
    data = load_yaml(path)
    try:
        return parse_architecture(data, str(path))
    except CoexploreError as exc:
        from coexplore.spec.template import with_origin
        raise with_origin(exc, path, "architecture")


def architecture_to_v3(arch: Architecture, top: str = "system") -> dict:
    """The flattened (subtree/local) form, as timeloopfe writes into parsed-processed-input.yaml
    (its subtree is named after the top container: `<top>_top_level`)."""
    local = []
    for lv in arch.all_levels:
        attrs = {k: v for k, v in lv.attributes.items()}
        attrs["meshX"], attrs["meshY"] = lv.mesh_x, lv.mesh_y
        entry = {"name": f"{lv.name}[1..{lv.instances}]", "class": lv.cls}
        if lv.subclass:
            entry["subclass"] = lv.subclass
        entry["attributes"] = attrs
        local.append(entry)
    return {"architecture": {"version": "0.4", "subtree": [
        {"name": f"{top}_top_level", "attributes": dict(arch.attributes), "local": local}]}}
