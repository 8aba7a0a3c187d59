"""System YAML: several accelerator cores sharing an off-chip DRAM, plus the study to run on it.

    system:                       # the hardware
      name: simba_2x2             # optional (default: file name without .yaml)
      description: ...            # optional, free text
      clock_GHz: 1.0              # optional, default 1.0 (one clock for all cores)
      technology: 45nm            # optional; default: each template's own
      dram:                       # shared off-chip memory
        type: LPDDR4              # Accelergy DRAM type (default LPDDR4)
        width: 64                 # bits per access (default 64)
        bandwidth_GBps: 25.6      # shared by all cores; or `bytes_per_cycle: 25.6` (one of them)
      cores:                      # one entry per distinct core design
      - name: simba               # optional (default: the template); unique
        template: simba           # simba | eyeriss
        params: {glb_depth: 4096} # template parameters (see coexplore.arch); optional
        grid: [2, 2]              # rows x columns of identical cores; or `count: 4`; default count 1
      - name: tpu                 # or a core of your own: a Timeloop architecture file (v0.4 node
        arch: tpu/arch.yaml       #   list, whole spec or flattened v0.3), relative to this file;
        ert: tpu/ERT.yaml         #   optional: its energy table (default: beside it or inside it, else
        constraints: tpu/c.yaml   #   priced with the built-in estimator) and mapspace constraints
        count: 2                  #   (a file or a list of files, combined as timeloop-mapper combines
                                  #   them; default: its nodes' or a constraints.yaml beside it); an arch
                                  #   that is a Jinja2 template takes var: {NAME: VALUE} (its names)
    workloads: [../problems/resnet50.yaml]     # optional; paths relative to this file, or bundled names (bert_base)
    sweep:                        # optional; Cartesian product of the axes
      axes:
        cores.simba.params.glb_depth: [1024, 2048, 4096]   # paths inside `system:`;
        dram.bandwidth_GBps: [12.8, 25.6]                 # cores are addressed by name
    objectives: [latency, energy, area]                   # optional
    mappers: {layer: ../mappers/marl.yaml, system: ../mappers/magma.yaml}   # optional

This module checks the document's shape and types; template parameters are checked by
`coexplore.arch.system` (which knows the templates). Every error names the file, the key
(e.g. `system.cores[1].grid`) and what was expected.
"""

from __future__ import annotations

import copy
import os
import re
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from coexplore.bundled import resolve
from coexplore.errors import PATH_TYPES, CoexploreError, check_type
from coexplore.spec.yamlio import load_yaml

TOP_KEYS = ("system", "workloads", "sweep", "objectives", "mappers")
SYSTEM_KEYS = ("name", "description", "clock_GHz", "technology", "dram", "cores")
DRAM_KEYS = ("type", "width", "bandwidth_GBps", "bytes_per_cycle")
CORE_KEYS = ("name", "template", "arch", "ert", "constraints", "var", "params", "count", "grid")
MAX_CORES = 10_000     # cores in a system: the job table has a latency and a bandwidth column per core
OBJECTIVES = ("latency", "energy", "edp", "area", "throughput")   # a sweep's measures (sweep.metrics.OBJECTIVES)
DEFAULT_OBJECTIVES = ("latency", "energy", "area")                 # a system YAML without `objectives:`
MAPPER_ROLES = ("layer", "system")   # an online (multi-tenant) scheduler is not part of coexplore yet


@dataclass(frozen=True)
class DramSpec:
    """The shared off-chip memory: Accelergy type, access width, total bandwidth."""
    type: str = "LPDDR4"
    width: int = 64
    bandwidth_GBps: float | None = None
    bytes_per_cycle: float | None = None

    def bandwidth_bytes_per_cycle(self, clock_GHz: float) -> float:
        """Shared off-chip bandwidth in bytes per core clock cycle."""
        if self.bytes_per_cycle is not None:
            return float(self.bytes_per_cycle)
        return float(self.bandwidth_GBps) / clock_GHz

    def bandwidth_GBps_at(self, clock_GHz: float) -> float:
        if self.bandwidth_GBps is not None:
            return float(self.bandwidth_GBps)
        return float(self.bytes_per_cycle) * clock_GHz


@dataclass(frozen=True)
class CoreSpec:
    """One distinct core design and how many copies the system holds: a template with parameters,
    or (`template` None) a Timeloop architecture file with optional ERT and constraints files."""
    name: str
    template: str | None
    params: dict = field(default_factory=dict)
    count: int = 1
    grid: tuple[int, int] | None = None
    key: str = "system.cores[0]"          # where it sits in the file (for error messages)
    arch: Path | None = None
    ert: Path | None = None
    constraints: tuple[Path, ...] = ()      # several files: combined as timeloop-mapper combines them
    var: dict = field(default_factory=dict)   # an own core's template names (Jinja2), over any --var

    def instance_names(self) -> list[str]:
        """Names of the copies: `name` (one copy), `name_i` (count) or `name_r_c` (grid)."""
        if self.grid is not None:
            return [f"{self.name}_{r}_{c}" for r in range(self.grid[0]) for c in range(self.grid[1])]
        if self.count == 1:
            return [self.name]
        return [f"{self.name}_{i}" for i in range(self.count)]

    def positions(self) -> list[tuple[int, int] | None]:
        """Grid (row, column) of each copy, None for counted cores."""
        if self.grid is not None:
            return [(r, c) for r in range(self.grid[0]) for c in range(self.grid[1])]
        return [None] * self.count


@dataclass(frozen=True)
class SystemSpec:
    """A parsed system YAML (see module docstring). `raw` keeps the document for `with_value`."""
    name: str
    clock_GHz: float
    technology: str | None
    dram: DramSpec
    cores: tuple[CoreSpec, ...]
    description: str = ""
    workloads: tuple[Path, ...] = ()
    sweep_axes: dict = field(default_factory=dict)      # path inside `system:` -> tuple of values
    objectives: tuple[str, ...] = ()
    mappers: dict = field(default_factory=dict)         # role -> Path
    file: str | None = None
    raw: dict = field(default_factory=dict, repr=False, compare=False)
    base_dir: Path | None = field(default=None, repr=False, compare=False)   # relative paths' folder

    @property
    def n_cores(self) -> int:
        return sum(c.count for c in self.cores)

    def core(self, name: str) -> CoreSpec:
        for c in self.cores:
            if c.name == name:
                return c
        raise KeyError(name)

    def with_value(self, path: str, value: Any, *, key: str | None = None) -> "SystemSpec":
        """A copy with the value at `path` (inside `system:`, cores by name) replaced."""
        key = key or path
        doc = _copy_doc(self.raw)
        _set_path(doc, path, value, file=self.file, key=key)
        try:
            return parse_system(doc, file=self.file, base_dir=self.base_dir or _base_dir(self.file),
                                _axes_checked=True)
        except CoexploreError as exc:
            raise CoexploreError(f"value {value!r} makes {exc.key or 'the system'} invalid: "
                                 f"{exc.message}", file=self.file, key=key,
                                 expected=exc.expected) from None

    def sweep_points(self) -> list[dict]:
        """Every point of the sweep as {path: value}, in axis order (last axis fastest)."""
        if not self.sweep_axes:
            return [{}]
        paths = list(self.sweep_axes)
        return [dict(zip(paths, combo))
                for combo in itertools.product(*(self.sweep_axes[p] for p in paths))]

    def at_point(self, point: dict) -> "SystemSpec":
        """The system with a sweep point's values applied."""
        spec = self
        for path, value in point.items():
            spec = spec.with_value(path, value, key=f"sweep.axes.{path}")
        return spec


# ---------------------------------------------------------------------------------------------
def _copy_doc(doc):
    """A deep copy of a system document whose `sweep:` block is shared, not copied: it is never
    changed, and copying its value lists for every axis value made loading a long axis quadratic."""
    if not isinstance(doc, dict):
        return copy.deepcopy(doc)
    return {k: v if k == "sweep" else copy.deepcopy(v) for k, v in doc.items()}


def _no_repeats(values: list, file, key: str) -> None:
    """An axis value given twice would run each of its points twice: refused."""
    def same(v):                   # 16 and 16.0 are one value (one point)
        if isinstance(v, bool) or not isinstance(v, (int, float, dict, list)):
            return v
        if isinstance(v, dict):
            return {k: same(x) for k, x in v.items()}
        return [same(x) for x in v] if isinstance(v, list) else float(v)

    seen: set = set()
    for v in values:
        text = json.dumps(same(v), sort_keys=True, default=str)
        if text in seen:
            raise _err(f"value {v!r} is given twice", file, key, "distinct values")
        seen.add(text)


def _err(message: str, file, key: str, expected: str | None = None) -> CoexploreError:
    return CoexploreError(message, file=file, key=key or None, expected=expected)


def _base_dir(file: str | None) -> Path:
    return Path(file).resolve().parent if file else Path.cwd()


def _mapping(value, file, key: str, allowed: tuple[str, ...], what: str) -> dict:
    if not isinstance(value, dict):
        raise _err(f"must be a mapping, got {_kind(value)}", file, key, what)
    for k in value:
        if k not in allowed:
            raise _err(f"unknown key '{k}'", file, f"{key}.{k}" if key else str(k),
                       "one of " + ", ".join(allowed))
    return value


def _kind(value) -> str:
    if value is None:
        return "nothing"
    return f"an empty {type(value).__name__}" if hasattr(value, "__len__") and not len(value) \
        else type(value).__name__


def _number(value, file, key: str, *, integer: bool = False) -> float | int:
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or not value > 0 or value == float("inf"):
        raise _err(f"got {value!r}", file, key,
                   "a positive integer" if integer else "a finite positive number")
    return value


def _string(value, file, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _err(f"got {value!r}", file, key, "a non-empty string")
    return value


def _bundled_fallback(kind: str, path: Path, where: str | None = None) -> Path:
    """`path` if it exists, else the bundled file of that name (a system YAML copied out of arch/
    keeps finding ../mappers/marl.yaml; a bare name such as `bert_base` is problems/bert_base.yaml,
    as on the command line), else `path` (reported missing where it is read). With `where` (the
    file and key it was read from), a fallback is said in a note: a mistyped folder, or a file of
    that name beside the system file, would otherwise go unnoticed."""
    from coexplore.bundled import bundled_dir
    if path.exists():
        return path
    cand = bundled_dir(kind) / (path.name if path.suffix else f"{path.name}.yaml")
    if not cand.is_file():
        return path
    if path.suffix:                                  # a path that does not exist (a mistyped folder?)
        why = f"{path} does not exist"
    elif path.with_name(cand.name).is_file():        # a bare name, and a file of that name beside the system
        why = f"not {cand.name} beside it"
    else:                                            # a bare name: the bundled workload, as on the command line
        why = None
    if where is not None and why:
        import warnings
        from coexplore.errors import CoexploreNote
        warnings.warn(f"{where}: '{path.name}' is the bundled {kind}/{cand.name}, {why}", CoexploreNote, stacklevel=3)
    return cand


def _join(base: Path, path: str) -> Path:
    """`path` relative to `base` (absolute paths stay), normalised ('..' folded)."""
    return Path(os.path.normpath(base / path))


def _path_list(value, file, key: str, base: Path) -> tuple[Path, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise _err(f"must be a list of file paths, got {_kind(value)}", file, key,
                   "a list of YAML file paths")
    out = []
    for i, item in enumerate(value):
        out.append(_join(base, _string(item, file, f"{key}[{i}]")))
    return tuple(out)


def _parse_dram(value, file) -> DramSpec:
    key = "system.dram"
    d = _mapping(value, file, key, DRAM_KEYS, "type, width and bandwidth_GBps or bytes_per_cycle")
    has_gbps = d.get("bandwidth_GBps") is not None
    has_bpc = d.get("bytes_per_cycle") is not None
    if has_gbps == has_bpc:
        raise _err("give the shared off-chip bandwidth exactly once", file,
                   f"{key}.bandwidth_GBps", "exactly one of bandwidth_GBps, bytes_per_cycle")
    return DramSpec(
        type=_string(d.get("type", "LPDDR4"), file, f"{key}.type"),
        width=_number(d.get("width", 64), file, f"{key}.width", integer=True),
        bandwidth_GBps=_number(d["bandwidth_GBps"], file, f"{key}.bandwidth_GBps")
        if has_gbps else None,
        bytes_per_cycle=_number(d["bytes_per_cycle"], file, f"{key}.bytes_per_cycle")
        if has_bpc else None)


def _core_name(c: dict):
    """A core entry's name as written or defaulted: its template, or its architecture file's name up to the first dot."""
    if "name" in c:
        return c["name"]
    if "template" in c:
        return c["template"]
    return Path(str(c["arch"])).name.split(".")[0] if isinstance(c.get("arch"), str) else None   # tpu.yaml.jinja2: tpu


def _from_file(c: dict) -> str:
    """Where a core's name came from when the entry gives none but an arch file."""
    return " (the arch file's name: give the core a name:)" if "name" not in c and "arch" in c else ""


def _parse_core(value, file, index: int, base: Path) -> CoreSpec:
    key = f"system.cores[{index}]"
    c = _mapping(value, file, key, CORE_KEYS, "template and params, or arch (ert, constraints); count or grid")
    if ("template" in c) == ("arch" in c):
        raise _err("both 'template' and 'arch' given" if "template" in c else "missing key 'template'",
                   file, f"{key}.template", "a core template name (simba, eyeriss), or arch: a Timeloop "
                   "architecture file of your own (not both)")
    files = {}
    if "arch" in c:
        for k in ("params",):
            if k in c:
                raise _err(f"'{k}' with 'arch'", file, f"{key}.{k}",
                           "template parameters only with a template (edit the architecture file instead)")
        for k in ("arch", "ert", "constraints"):
            if k not in c:
                continue
            many = k == "constraints" and isinstance(c[k], list)
            if many and not c[k]:
                raise _err("an empty list", file, f"{key}.{k}", "a Timeloop constraints file, or a list of them")
            paths = []
            for i, v in enumerate(c[k] if many else [c[k]]):
                where = f"{key}.{k}[{i}]" if many else f"{key}.{k}"
                p = _join(base, _string(v, file, where))
                if not p.is_file():
                    raise _err(f"no such file {p}", file, where,
                               "a Timeloop architecture file" if k == "arch" else
                               "an energy table (ERT.yaml)" if k == "ert" else
                               "a Timeloop constraints file (or a list of them)")
                paths.append(p)
            files[k] = tuple(paths) if k == "constraints" else paths[0]
    else:
        for k in ("ert", "constraints"):
            if k in c:
                raise _err(f"'{k}' with a template", file, f"{key}.{k}",
                           f"{k} files only with arch: (a template's core is priced and constrained by coexplore)")
        if "var" in c:
            raise _err("'var' with a template", file, f"{key}.var",
                       "params: {...} for a coexplore template; var: {...} gives the names of an arch: file that "
                       "is a Jinja2 template")
    var = _template_names(c, files.get("arch"), file, key)
    template = _string(c["template"], file, f"{key}.template") if "template" in c else None
    name = _string(_core_name(c), file, f"{key}.name")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", name):
        raise _err(f"core name {name!r}{_from_file(c)} cannot be used in sweep paths and directory names",
                   file, f"{key}.name", "ASCII letters, digits, '_' and '-' (starting with a letter or '_')")
    params = c.get("params") or {}
    if not isinstance(params, dict):
        raise _err(f"must be a mapping, got {_kind(params)}", file, f"{key}.params",
                   "a mapping of template parameters (name: value)")
    if "count" in c and "grid" in c:
        raise _err("both 'count' and 'grid' given", file, f"{key}.grid",
                   "either count: N or grid: [rows, columns]")
    grid = None
    count = 1
    if "grid" in c:
        g = c["grid"]
        if (not isinstance(g, list) or len(g) != 2
                or any(isinstance(x, bool) or not isinstance(x, int) or x <= 0 for x in g)):
            raise _err(f"got {g!r}", file, f"{key}.grid", "[rows, columns] of positive integers")
        grid = (g[0], g[1])
        count = g[0] * g[1]
    elif "count" in c:
        count = _number(c["count"], file, f"{key}.count", integer=True)
    return CoreSpec(name=name, template=template, params=dict(params), count=count, grid=grid,
                    key=key, var=var, **files)


def _template_names(c: dict, arch: Path | None, file, key: str) -> dict:
    """An own core's `var:`: names for its architecture file, which must be a Jinja2 template."""
    if "var" not in c:
        return {}
    var = c["var"]
    if not isinstance(var, dict):
        raise _err(f"must be a mapping, got {_kind(var)}", file, f"{key}.var",
                   "a mapping of the template's names to their values (name: value)")
    for name in var:
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise _err(f"name {name!r} cannot be a template variable", file, f"{key}.var",
                       "names of letters, digits and '_' (as the template writes {{ name }})")
    from coexplore.spec.template import is_template
    from coexplore.spec.yamlio import read_text
    if var and arch is not None and not is_template(arch, read_text(arch)):
        raise _err(f"{arch} is not a template: nothing would use these names", file, f"{key}.var",
                   "var: only with a Jinja2 template (a .jinja2 file, or {{ }} / {% %} in it)")
    return dict(var)


def _split_path(path: str) -> list[str]:
    parts = path.split(".")
    if parts and parts[0] == "system":
        parts = parts[1:]
    return parts


def _set_path(doc: dict, path: str, value: Any, *, file, key: str) -> None:
    """Set `value` at a sweep path (inside `system:`; `cores.<name>` picks a core by name)."""
    parts = _split_path(path)
    node: Any = doc.get("system")
    if not parts or not isinstance(node, dict):
        raise _err("empty path", file, key, "a path inside system:, e.g. cores.<name>.params.glb_depth")
    i = 0
    while i < len(parts) - 1:
        part = parts[i]
        if part == "cores" and isinstance(node.get("cores"), list):
            if i + 1 >= len(parts) - 1:
                raise _err(f"path '{path}' stops at a core", file, key,
                           "cores.<name>.params.<parameter>, cores.<name>.count or .grid, cores.<name>.var.<NAME>")
            name = parts[i + 1]
            match = [c for c in node["cores"] if isinstance(c, dict) and _core_name(c) == name]
            if not match:
                names = [str(_core_name(c)) for c in node["cores"] if isinstance(c, dict)]
                raise _err(f"no core named '{name}'", file, key, "one of " + ", ".join(names))
            node = match[0]
            i += 2
            continue
        if part not in node or (part in ("params", "var") and node[part] is None):    # (`params:` left empty)
            if part == "params" and "template" in node:
                node["params"] = {}
            elif part == "params" and "arch" in node:
                raise _err(f"path '{path}': core '{_core_name(node)}' is an architecture file of its own, with no "
                           "template parameters", file, key,
                           "cores.<name>.count, .grid, .arch or .var.<name> (a Jinja2 template's) for such a core")
            elif part == "var" and "arch" in node:
                node["var"] = {}
            elif part == "var":
                raise _err(f"path '{path}': core '{_core_name(node)}' is a coexplore template: its values are "
                           "params", file, key, f"cores.{_core_name(node)}.params.<parameter>")
            else:
                raise _err(f"path '{path}': no key '{part}'", file, key, "an existing key")
        node = node[part]
        if not isinstance(node, dict):
            raise _err(f"path '{path}': '{part}' is not a mapping", file, key, "a mapping")
        i += 1
    last = parts[-1]
    # alternatives: setting one replaces the other
    for a, b in RIVALS:
        if last == a:
            node.pop(b, None)
        elif last == b:
            node.pop(a, None)
    node[last] = value


# keys of one node that are alternatives: setting one replaces the other
RIVALS = (("count", "grid"), ("bandwidth_GBps", "bytes_per_cycle"))


def _no_rival_axes(paths: list[str], file) -> None:
    """Two axes on alternatives of one node (dram.bandwidth_GBps and dram.bytes_per_cycle, a core's
    count and grid) would each undo the other: every point would run the last one's value only."""
    where: dict[tuple, str] = {}
    for path in paths:
        parts = tuple(_split_path(path))
        if parts in where:               # `system.dram.x` and `dram.x`: the second would undo the first
            raise _err(f"axes '{where[parts]}' and '{path}' set the same setting", file, f"sweep.axes.{path}",
                       f"one axis: {where[parts]} or {path}")
        where[parts] = path
    for parts, path in where.items():
        for a, b in RIVALS:
            if parts[-1:] == (a,) and (other := where.get((*parts[:-1], b))) is not None:
                raise _err(f"axes '{path}' and '{other}' set alternatives of one setting (each replaces the "
                           "other, so one of them would change nothing)", file, f"sweep.axes.{other}",
                           f"one axis: {path} or {other}")


def _other_kind(doc: Any, file: str | None) -> str:
    """What a document given as SYSTEM is when it is another input of coexplore's ("" otherwise)."""
    if isinstance(doc, dict) and "system" not in doc:
        if "architecture" in doc and "problem" in doc:
            return "a Timeloop architecture"           # (a whole spec: one core with its problem)
        for key, kind in (("workload", "a workload"), ("problem", "a Timeloop problem"),
                          ("architecture", "a Timeloop architecture")):
            if key in doc:
                return kind
    if file and str(file).lower().endswith(".csv"):
        return "a CSV"
    return ""


def parse_system(doc: Any, *, file: str | None = None, base_dir: Path | None = None,
                 _axes_checked: bool = False) -> SystemSpec:
    """Build a SystemSpec from a loaded YAML document; errors name `file` and the key."""
    base = base_dir if base_dir is not None else _base_dir(file)
    kind = _other_kind(doc, file)
    if kind:
        raise _err(f"not a system YAML: {kind}", file, "system", "a system YAML (system: {dram, cores}); " + {
            "a workload": "a workload goes with --workload FILE",
            "a Timeloop problem": "a problem file goes with --workload FILE (one layer) or to coexplore map",
            "a Timeloop architecture": "one core's architecture (or a whole spec with its problem) goes to "
                                       "evaluate/map, or into a system YAML's cores: [{arch: FILE}]",
            "a CSV": "a job table (lat_<core>/bw_<core> columns) goes with --table FILE --bandwidth B"}[kind])
    top = _mapping(doc, file, "", TOP_KEYS, "a mapping with a 'system:' key")
    if "system" not in top:
        raise _err("missing key 'system'", file, "system",
                   "system: {clock_GHz, technology, dram, cores}")
    s = _mapping(top["system"], file, "system", SYSTEM_KEYS, "name, clock_GHz, technology, dram, cores")
    name = _string(s.get("name", Path(file).stem if file else "system"), file, "system.name")
    clock = _number(s.get("clock_GHz", 1.0), file, "system.clock_GHz")
    tech = s.get("technology")
    if tech is not None:                 # read as an architecture's technology is (45, '45nm', '16 nm', '0.045um')
        from coexplore.spec.technology import parse_technology
        try:
            nm = parse_technology(tech, key="system.technology")
        except CoexploreError as exc:
            raise exc.with_file(file) from None
        tech = "-1" if nm == -1 else f"{nm:g}nm"
    if "dram" not in s:
        raise _err("missing key 'dram'", file, "system.dram",
                   "dram: {bandwidth_GBps: B} or {bytes_per_cycle: B} (the shared off-chip bandwidth; type and width "
                   "optional)")
    dram = _parse_dram(s["dram"], file)
    _say_implausible(clock, dram, file)
    cores_raw = s.get("cores")
    if not isinstance(cores_raw, list) or not cores_raw:
        raise _err(f"got {_kind(cores_raw)}", file, "system.cores",
                   "a non-empty list of cores ({template, params, count | grid})")
    cores = tuple(_parse_core(c, file, i, base) for i, c in enumerate(cores_raw))
    seen: dict[str, int] = {}
    for i, c in enumerate(cores):
        if c.name in seen:
            raise _err(f"core name '{c.name}'{_from_file(cores_raw[i])} already used by system.cores[{seen[c.name]}]",
                       file, f"system.cores[{i}].name", "a unique name per core entry")
        seen[c.name] = i
    total = sum(c.count for c in cores)
    if total > MAX_CORES:
        raise _err(f"{total:,} cores in all", file, "system.cores", f"at most {MAX_CORES:,} cores (count / grid)")
    copy_of: dict[str, int] = {}           # instance name -> core entry: the job table's columns
    for i, c in enumerate(cores):
        for inst in c.instance_names():
            if inst in copy_of:
                j = copy_of[inst]
                raise _err(f"core instance name '{inst}' is also a copy of system.cores[{j}] ('{cores[j].name}')",
                           file, f"system.cores[{i}].name", "core names whose copies (name, name_0, name_1, "
                           "..., name_r_c) are all distinct")
            copy_of[inst] = i
    description = s.get("description", "")
    if not isinstance(description, str):
        raise _err(f"got {_kind(description)}", file, "system.description", "a string")

    said = None if _axes_checked else f"{file or 'the system'}: workloads"
    workloads = tuple(_bundled_fallback("problems", w, said) for w in _path_list(top.get("workloads"), file,
                                                                         "workloads", base))

    axes: dict = {}
    if top.get("sweep") is not None:
        sw = _mapping(top["sweep"], file, "sweep", ("axes",), "sweep: {axes: {path: [values]}}")
        raw_axes = sw.get("axes") or {}
        if not isinstance(raw_axes, dict):
            raise _err(f"must be a mapping, got {_kind(raw_axes)}", file, "sweep.axes",
                       "path: [values] pairs")
        for path, values in raw_axes.items():
            akey = f"sweep.axes.{path}"
            if not isinstance(path, str):
                raise _err(f"axis name {path!r} is not a string", file, akey,
                           "a dotted path such as cores.simba.params.glb_depth")
            if not isinstance(values, list) or not values:
                raise _err(f"got {values!r}", file, akey, "a non-empty list of values")
            if not _axes_checked:                    # (a copy made for one value: checked already)
                _no_repeats(values, file, akey)
            parts = _split_path(path)
            if parts in (["name"], ["description"]) or (len(parts) == 3 and parts[0] == "cores" and parts[2] == "name"):
                raise _err(f"axis '{path}' names no parameter (a label: every point would run the same design)",
                           file, akey, "a parameter, e.g. dram.bandwidth_GBps, cores.<name>.count, "
                                       "cores.<name>.params.<parameter>")
            axes[path] = tuple(values)
        _no_rival_axes(list(axes), file)

    objectives: tuple[str, ...] = ()
    if top.get("objectives") is not None:
        obj = top["objectives"]
        if not isinstance(obj, list) or not obj:
            raise _err(f"got {_kind(obj) if obj != [] else 'an empty list'}", file, "objectives",
                       "a list of " + ", ".join(OBJECTIVES) + " (leave the key out for "
                       + ", ".join(DEFAULT_OBJECTIVES) + ")")
        for i, o in enumerate(obj):
            if o not in OBJECTIVES:
                raise _err(f"unknown objective {o!r}", file, f"objectives[{i}]",
                           "one of " + ", ".join(OBJECTIVES))
            if o in obj[:i]:
                say_repeated_objective(o, f"{file}: objectives[{i}]" if file else f"objectives[{i}]")
        objectives = tuple(dict.fromkeys(obj))

    mappers: dict = {}
    if top.get("mappers") is not None:
        m = _mapping(top["mappers"], file, "mappers", MAPPER_ROLES,
                     "role: path (roles " + ", ".join(MAPPER_ROLES) + ")")
        for role, path in m.items():
            mappers[role] = _bundled_fallback("mappers", _join(base, _string(path, file, f"mappers.{role}")))

    spec = SystemSpec(name=name, clock_GHz=clock, technology=tech, dram=dram, cores=cores,
                      description=description, workloads=workloads, sweep_axes=axes,
                      objectives=objectives, mappers=mappers, file=file,
                      raw=_copy_doc(doc), base_dir=base)
    if not _axes_checked:
        # every axis must address something that exists (values are checked by coexplore.arch)
        for path, values in axes.items():
            for value in values:
                spec.with_value(path, value, key=f"sweep.axes.{path}")
    return spec


# beyond these a value is almost surely in another unit (MHz for GHz, MB/s for GB/s): legal, but said
PLAUSIBLE_CLOCK_GHZ = (0.01, 10.0)
PLAUSIBLE_GBPS = (0.01, 10_000.0)    # 10 MB/s is below any DRAM; several HBM stacks together stay below the top


def say_repeated_objective(name: str, where: str) -> None:
    """A repeated objective is counted once (a front over [latency, latency] is the front over latency)."""
    import warnings
    from coexplore.errors import CoexploreWarning
    warnings.warn(f"{where} repeats the objective {name!r}: it counts once", CoexploreWarning, stacklevel=3)


def _say_implausible(clock: float, dram: "DramSpec", file) -> None:
    import warnings
    from coexplore.errors import CoexploreWarning
    where = f"{file}: " if file else ""
    if not PLAUSIBLE_CLOCK_GHZ[0] <= clock <= PLAUSIBLE_CLOCK_GHZ[1]:
        warnings.warn(f"{where}system.clock_GHz is {clock:g} GHz, outside {PLAUSIBLE_CLOCK_GHZ[0]:g}-"
                      f"{PLAUSIBLE_CLOCK_GHZ[1]:g} GHz: is it in another unit (MHz)?", CoexploreWarning, stacklevel=3)
    gbps = dram.bandwidth_GBps_at(clock)
    if gbps > PLAUSIBLE_GBPS[1]:
        warnings.warn(f"{where}the DRAM bandwidth is {gbps:g} GB/s, more than {PLAUSIBLE_GBPS[1]:,.0f} GB/s: is it in "
                      "another unit (MB/s)?", CoexploreWarning, stacklevel=3)
    elif gbps < PLAUSIBLE_GBPS[0]:
        warnings.warn(f"{where}the DRAM bandwidth is {gbps:g} GB/s, less than {PLAUSIBLE_GBPS[0]:g} GB/s: is it in "
                      "another unit (TB/s)?", CoexploreWarning, stacklevel=3)


def load_system(path: str | Path, *, check_files: bool = False) -> SystemSpec:
    """Read and check a system YAML. `check_files` also requires the workload and mapper
    files to exist (the sweep needs them; generating the architectures does not)."""
    p = resolve("arch", check_type(path, PATH_TYPES, "path", "a system YAML file's path or a bundled system's name"))
    if not p.is_file():
        from coexplore.bundled import bundled_names
        raise CoexploreError("is a directory, not a file" if p.is_dir() else "file not found", file=str(p),
                             expected=f"a system YAML file or a bundled system ({bundled_names('arch')})")
    doc = load_yaml(p)                  # strict: a key given twice is refused
    spec = parse_system(doc, file=str(p))
    if check_files:
        for i, w in enumerate(spec.workloads):
            if not w.exists():
                raise CoexploreError(f"workload file not found: {w}", file=str(p), key=f"workloads[{i}]",
                                     expected="an existing workload YAML, Timeloop problem file or folder of them")
        for role, m in spec.mappers.items():
            if not m.is_file():
                raise CoexploreError(f"mapper config not found: {m}", file=str(p),
                                     key=f"mappers.{role}", expected="an existing mapper YAML")
    return spec
