"""Workloads: a whole network as an ordered list of Timeloop CNN_Layer instances.

A workload file (`problems/<net>.yaml`) holds the problem shape once and every layer's instance:

    version: 0.4                      # optional; Timeloop problem format version
    shape: {name: CNN_Layer, ...}     # optional; Timeloop's CNN_Layer shape if left out
    workload:
      name: resnet50                  # optional (default: the file name without .yaml)
      description: "..."              # optional, free text
      source: "..."                   # optional, where the shapes come from
      layers:                         # in execution order
      - name: conv1                   # unique within the workload
        count: 1                      # optional, default 1: identical independent copies
        instance: {C: 3, M: 64, R: 7, S: 7, N: 1, P: 112, Q: 112, Wstride: 2, Hstride: 2}

`count` is the number of identical, independent instances that run at this point: the groups
of a grouped or depthwise convolution (a depthwise layer over K channels is `count: K` copies
of C = 1, M = 1), the heads of an attention GEMM, the Q/K/V projections. A workload's cost is
the sum over layers of count x the layer's cost. Instance dimensions left out are 1, and
coefficients left out take the shape's defaults, as in Timeloop. GEMMs are R = S = Q = 1
layers with P = rows (sequence length or batch), C = in features, M = out features.

`layer_problem` gives the Timeloop v0.4 problem of one layer and `write_problem` writes it in
the layout of Timeloop's own problem files, so the real `timeloop-model` reads it.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import numbers
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from coexplore.bundled import bundled_dir, resolve
from coexplore.errors import PATH_TYPES, CoexploreError, check_type, did_you_mean
from coexplore.spec.problem import (DEFAULT_CNN_SHAPE, MAX_OPERATIONS, check_dimension_names, check_operations,
                                    flat_projection, underscored_shape)
from coexplore.spec.yamlio import load_yaml

PROBLEM_VERSION = 0.4

# Timeloop's CNN_Layer problem shape (the 7-D convolution); every bundled workload uses it.
CNN_LAYER_SHAPE: dict[str, Any] = DEFAULT_CNN_SHAPE

# the folder of bundled workloads (repository checkout: <repo>/problems)
BUNDLED_DIR = bundled_dir("problems")

_TOP_KEYS = ("version", "shape", "workload")
_WORKLOAD_KEYS = ("name", "description", "source", "layers")
_LAYER_KEYS = ("name", "count", "instance")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


@dataclass(frozen=True)
class Layer:
    """One layer: a problem instance (every dimension and coefficient, in the shape's order)."""

    name: str
    instance: dict[str, int]
    count: int = 1
    shape: dict[str, Any] = field(default_factory=lambda: copy.deepcopy(CNN_LAYER_SHAPE),
                                  repr=False)

    @property
    def dimensions(self) -> tuple[str, ...]:
        return tuple(self.shape["dimensions"])

    @property
    def macs(self) -> int:
        """Multiply-accumulates of one instance (the product of all dimension bounds)."""
        return math.prod(self.instance[d] for d in self.dimensions)

    @property
    def total_macs(self) -> int:
        return self.macs * self.count

    def dataspace_sizes(self) -> dict[str, int]:
        """Elements of each dataspace of one instance, from the shape's projections
        (a sliding-window axis sum(coef * (bound - 1)) + 1, e.g. (P-1)*Wstride + R)."""
        sizes = {}
        for ds in self.shape["data_spaces"]:
            n = 1
            for axis in ds["projection"]:
                extent = 1
                for term in axis:
                    coef = self.instance[term[1]] if len(term) > 1 else 1
                    extent += coef * (self.instance[term[0]] - 1)
                n *= extent
            sizes[ds["name"]] = n
        return sizes

    def key(self) -> tuple:
        """What makes two layers the same problem (name and count excluded): the shape as the model
        reads it (dimensions, each data space's name, projection terms and read_write: two workloads
        may give one shape name other projections; its name, rank names and an explicit
        `read_write: false` do not count) and the instance (every bound and coefficient)."""
        return self._key

    @functools.cached_property
    def _key(self) -> tuple:                  # (a system's job table asks for it per job and core)
        shape = (tuple(self.shape["dimensions"]),
                 tuple((ds["name"], tuple(tuple(tuple(term) for term in axis) for axis in ds["projection"]),
                        bool(ds.get("read_write", False))) for ds in self.shape["data_spaces"]))
        return shape, tuple(sorted(self.instance.items()))


class LayerNotFound(CoexploreError, KeyError):
    """A layer name a workload does not have (a KeyError too, as a mapping lookup is)."""

    def __str__(self) -> str:
        return self.format()


@dataclass(frozen=True)
class Workload:
    """A network: its layers in execution order."""

    name: str
    layers: tuple[Layer, ...]
    description: str = ""
    source: str = ""
    path: Path | None = None

    @property
    def total_macs(self) -> int:
        return sum(layer.total_macs for layer in self.layers)

    def layer(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        names = [layer.name for layer in self.layers]
        raise LayerNotFound(f"workload {self.name} has no layer {name!r}{did_you_mean(name, names)}", key="layer",
                            expected="one of " + ", ".join(names[:20]) + (", ..." if len(names) > 20 else ""))

    def same_problem_groups(self) -> list[list[Layer]]:
        """The layers grouped by problem (`Layer.key`), groups and layers in network order."""
        groups: dict[tuple, list[Layer]] = {}
        for layer in self.layers:
            groups.setdefault(layer.key(), []).append(layer)
        return list(groups.values())

    def unique_layers(self) -> list[tuple[Layer, int]]:
        """Distinct problems (first occurrence) with their total count: what a mapper must
        search once per core."""
        return [(group[0], sum(layer.count for layer in group)) for group in self.same_problem_groups()]

    def __iter__(self) -> Iterator[Layer]:
        return iter(self.layers)

    def __len__(self) -> int:
        return len(self.layers)


# ----------------------------------------------------------------------------- reading

def load_workload(path: str | Path) -> Workload:
    """Read and check a workload file; errors name the file, the key and what was expected. A folder
    of Timeloop problem files is a workload too: one layer per file (named by it), in the files'
    natural order (layer2 before layer10); so is one Timeloop problem file (one layer). A bare
    name that is no file (`resnet50`: no folder, no suffix) is the bundled problems/resnet50.yaml."""
    path = Path(path)
    if not path.exists() and path.parent == Path(".") and not path.suffix:
        path = find_workload(path)
    if path.is_dir():
        return _problem_folder(path)
    doc = load_yaml(path)
    f = str(path)
    if isinstance(doc, dict) and "problem" in doc and "workload" not in doc:
        layer = read_problem(path)
        return Workload(name=layer.name if _NAME.match(layer.name) else "problem", layers=(layer,), path=path,
                        description=f"the Timeloop problem file {path}")
    if not isinstance(doc, dict):
        raise CoexploreError("a workload file is a mapping", file=f,
                             expected="top-level keys " + ", ".join(_TOP_KEYS))
    _no_unknown(doc, _TOP_KEYS, f, "")
    _check_version(doc.get("version", PROBLEM_VERSION), f, "version")
    shape = check_shape(doc.get("shape", CNN_LAYER_SHAPE), f, "shape")
    wl = doc.get("workload")
    if not isinstance(wl, dict):
        raise CoexploreError("missing or not a mapping", file=f, key="workload",
                             expected="workload: {name, layers: [...]}")
    _no_unknown(wl, _WORKLOAD_KEYS, f, "workload")
    name = wl.get("name", path.stem)
    if not isinstance(name, str) or not _NAME.match(name):
        raise CoexploreError(f"bad workload name {name!r}", file=f, key="workload.name",
                             expected="a name of ASCII letters, digits, '_', '-', '.'")
    texts = {}
    for k in ("description", "source"):
        v = wl.get(k, "")
        if not isinstance(v, str):
            raise CoexploreError(f"not text: {v!r}", file=f, key=f"workload.{k}",
                                 expected="a string")
        texts[k] = v
    raw_layers = wl.get("layers")
    if not isinstance(raw_layers, list) or not raw_layers:
        raise CoexploreError("missing or empty", file=f, key="workload.layers",
                             expected="a non-empty list of {name, count, instance}")
    layers, names = [], set()
    for i, raw in enumerate(raw_layers):
        where = f"workload.layers[{i}]"
        layer = _layer(raw, shape, f, where)
        if layer.name in names:
            raise CoexploreError(f"duplicate layer name {layer.name!r}", file=f,
                                 key=f"{where}.name", expected="names unique within a workload")
        names.add(layer.name)
        layers.append(layer)
    return Workload(name=name, layers=tuple(layers), path=path, **texts)


RESULT_FILES = ("result.json", "summary.json", "schedule.json", "sweep.json", "online.json", ".run.json")


def _holds_a_workload(folder: Path) -> bool:
    """A folder of problem files, not a command's result folder (which `--out NAME` may have made
    under a bundled workload's name) nor a folder without any YAML."""
    return bool(problem_files(folder)) and not any((folder / f).exists() for f in RESULT_FILES)


def problem_files(folder: Path) -> list[Path]:
    """The problem files a folder workload is read from, in its layers' (natural) order."""
    return sorted((p for p in Path(folder).iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()),
                  key=lambda p: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.stem)])


def _problem_folder(folder: Path) -> Workload:
    files = problem_files(folder)
    if not files:
        raise CoexploreError("a folder without problem files", file=str(folder),
                             expected="a workload YAML, or a folder of Timeloop problem files (*.yaml)")
    stems = [p.stem for p in files]
    twice = sorted({s for s in stems if stems.count(s) > 1})
    if twice:
        raise CoexploreError(f"two problem files named {twice[0]} (.yaml and .yml)", file=str(folder),
                             expected="one file per layer name")
    hidden = next((p for p in files if p.stem.startswith(".") or not p.stem.strip()), None)
    if hidden is not None:              # a file's name is its layer's, and the name of its results' folder
        raise CoexploreError(f"problem file {hidden.name!r}: its name, the layer's, starts with '.' (a hidden "
                             "file, or '..': its results' folder would be another)", file=str(folder),
                             expected="problem files whose names do not start with '.'")
    name = folder.name if _NAME.match(folder.name) else "problems"
    layers = tuple(dataclasses.replace(layer, count=_written_count(p)) for p, layer in
                   ((p, read_problem(p)) for p in files))
    return Workload(name=name, layers=layers, path=folder,
                    description=f"the {len(files)} Timeloop problem files of {folder}")


_COUNT_NOTE = re.compile(r"^#.*\(count (\d+) in workload [^)]*\)\s*$")


def _written_count(path: Path) -> int:
    """How many times the layer runs, as `write_problems` notes it in the file's first line (a
    comment, so the file stays a plain Timeloop problem); 1 for any other file."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            m = _COUNT_NOTE.match(fh.readline().rstrip("\n"))
    except OSError:
        return 1
    return max(1, int(m.group(1))) if m else 1


def read_problem(path: str | Path, name: str | None = None) -> Layer:
    """A Timeloop problem file (one layer, read as every command reads one: `problem.load_problem`)
    as a Layer: every dimension's bound and every coefficient."""
    import warnings

    from coexplore.errors import CoexploreWarning
    from coexplore.spec.problem import load_problem, problem_warnings
    p = load_problem(path)
    for said in problem_warnings(p, path):    # (as when the file is read alone; a Layer keeps no densities)
        warnings.warn(CoexploreWarning(said), stacklevel=2)
    shape = underscored_shape(p.shape)
    return Layer(name=name or Path(path).stem, instance={**dict(zip(p.dims, p.bounds)), **p.coefficients},
                 count=1, shape=check_shape(shape, str(path), "problem.shape"))


def bundled_workloads() -> list[Path]:
    """The workload files shipped in the repository's problems/ folder."""
    return sorted(BUNDLED_DIR.glob("*.yaml"))


def find_workload(name_or_path: str | Path) -> Path:
    """A path as given if it exists (a file or a folder of problem files), else the bundled file as
    `coexplore.bundled.resolve` finds it: a bare name (`resnet50`), or `problems/<file>` where the
    working directory has no `problems/` folder. Any other missing path is an error, never a
    bundled network of the same file name."""
    p = Path(name_or_path)
    bundled = resolve("problems", p)
    if p.exists():
        if p.is_dir() and len(p.parts) == 1 and bundled.exists() and not _holds_a_workload(p):
            import warnings

            from coexplore.errors import CoexploreNote
            warnings.warn(CoexploreNote(f"{p}/ here is a folder of results (or of no problem files), not a "
                                        f"workload: the bundled workload {p.name} is used"), stacklevel=2)
            return bundled
        return p
    if bundled.exists():
        return bundled
    names = ", ".join(q.stem for q in bundled_workloads()) or "none found"
    raise CoexploreError("no such workload file", file=str(p),
                         expected=f"an existing file or a bundled workload ({names})")


def check_shape(shape: Any, f: str, where: str) -> dict[str, Any]:
    """Check a Timeloop problem shape (dimensions, coefficients, projections) and copy it."""
    if not isinstance(shape, dict):
        raise CoexploreError("not a mapping", file=f, key=where,
                             expected="a problem shape {name, dimensions, coefficients, "
                                      "data_spaces}")
    _no_unknown(shape, ("name", "dimensions", "coefficients", "data_spaces"), f, where)
    if "name" in shape and not isinstance(shape["name"], str):     # optional, as in Timeloop
        raise CoexploreError(f"got {shape['name']!r}", file=f, key=f"{where}.name",
                             expected="a shape name such as CNN_Layer (or none)")
    dims = shape.get("dimensions")
    if (not isinstance(dims, list) or not dims or not all(isinstance(d, str) for d in dims)
            or len(set(dims)) != len(dims)):
        raise CoexploreError(f"bad dimensions {dims!r}", file=f, key=f"{where}.dimensions",
                             expected="a list of distinct dimension names, "
                                      "e.g. [C, M, R, S, N, P, Q]")
    check_dimension_names(dims, f, f"{where}.dimensions")
    coefs = shape.get("coefficients", [])
    if not isinstance(coefs, list):
        raise CoexploreError("not a list", file=f, key=f"{where}.coefficients",
                             expected="a list of {name, default}")
    coef_names = []
    for j, c in enumerate(coefs):
        k = f"{where}.coefficients[{j}]"
        if (not isinstance(c, dict) or not isinstance(c.get("name"), str)
                or set(c) - {"name", "default"} or "default" not in c):     # Timeloop requires default
            raise CoexploreError(f"bad coefficient {c!r}", file=f, key=k,
                                 expected="{name: <text>, default: <positive integer>}")
        _positive_int(c["default"], f, f"{k}.default")
        if c["name"] in dims or c["name"] in coef_names:
            raise CoexploreError(f"name {c['name']!r} used twice", file=f, key=k,
                                 expected="coefficient names distinct from each other and "
                                          "from the dimensions")
        coef_names.append(c["name"])
    spaces = shape.get("data_spaces")
    out = copy.deepcopy(shape)
    if not isinstance(spaces, list) or not spaces:
        raise CoexploreError("missing or empty", file=f, key=f"{where}.data_spaces",
                             expected="a list of {name, projection, read_write}")
    for j, ds in enumerate(spaces):
        k = f"{where}.data_spaces[{j}]"
        if not isinstance(ds, dict) or not isinstance(ds.get("name"), str):
            raise CoexploreError("bad data space", file=f, key=k,
                                 expected="{name: <text>, projection: [...], read_write: <bool>}")
        _no_unknown(ds, ("name", "projection", "read_write", "ranks"), f, k)
        if not isinstance(ds.get("read_write", False), bool):
            raise CoexploreError("not true/false", file=f, key=f"{k}.read_write",
                                 expected="true or false")
        proj = flat_projection(ds.get("projection"))
        if not isinstance(proj, list) or not proj:
            raise CoexploreError("missing or empty", file=f, key=f"{k}.projection",
                                 expected="a list of axes, each a list of [dimension] or "
                                          "[dimension, coefficient] terms")
        ranks = ds.get("ranks")
        if ranks is not None and (not isinstance(ranks, list) or len(ranks) != len(proj)
                                  or not all(isinstance(r, str) for r in ranks)):
            raise CoexploreError(f"got {ranks!r}", file=f, key=f"{k}.ranks",
                                 expected=f"one rank name (text) per projection axis ({len(proj)})")
        out["data_spaces"][j]["projection"] = copy.deepcopy(proj)
        for a, axis in enumerate(proj):
            ok = isinstance(axis, list) and axis and all(
                isinstance(t, list) and len(t) in (1, 2) and t[0] in dims
                and (len(t) == 1 or t[1] in coef_names) for t in axis)
            if not ok:
                raise CoexploreError(f"bad projection axis {axis!r}", file=f,
                                     key=f"{k}.projection[{a}]",
                                     expected="a list of [dimension] or [dimension, "
                                              f"coefficient] terms over {dims} / {coef_names}")
    return out


def _layer(raw: Any, shape: dict, f: str, where: str) -> Layer:
    if not isinstance(raw, dict):
        raise CoexploreError("a layer is a mapping", file=f, key=where,
                             expected="{name, count, instance}")
    _no_unknown(raw, _LAYER_KEYS, f, where)
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise CoexploreError(f"missing or bad layer name {name!r}", file=f, key=f"{where}.name",
                             expected="a name of ASCII letters, digits, '_', '-', '.'")
    count = _positive_int(raw.get("count", 1), f, f"{where}.count")
    instance = _instance(raw.get("instance"), shape, f, f"{where}.instance")
    ops = math.prod(instance[d] for d in shape["dimensions"])
    if count * ops > MAX_OPERATIONS:      # the network's totals (count x each copy's) stay exact floats
        shown = f"{count:,}" if count < 10 ** 15 else f"~10^{len(str(count)) - 1}"
        raise CoexploreError(f"count {shown} x {ops:,} operations per copy is too large", file=f,
                             key=f"{where}.count", expected=f"at most 2^53 = {MAX_OPERATIONS:.2e} operations over "
                                                            "the layer's copies")
    return Layer(name=name, instance=instance, count=count, shape=shape)


def _instance(raw: Any, shape: dict, f: str, where: str) -> dict[str, int]:
    dims = list(shape["dimensions"])
    coefs = {c["name"]: c.get("default", 1) for c in shape.get("coefficients", [])}
    if not isinstance(raw, dict):
        raise CoexploreError("missing or not a mapping", file=f, key=where,
                             expected=f"bounds of the dimensions {', '.join(dims)}")
    _no_unknown(raw, tuple(dims) + tuple(coefs), f, where)
    out = {d: _positive_int(raw.get(d, 1), f, f"{where}.{d}") for d in dims}
    check_operations(out.values(), f, where)          # (here, where the file and the layer are known)
    out.update({c: _positive_int(raw.get(c, default), f, f"{where}.{c}")
                for c, default in coefs.items()})
    return out


def _positive_int(v: Any, f: str, key: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise CoexploreError(f"bad value {v!r}", file=f, key=key, expected="a positive integer")
    return v


def _check_version(v: Any, f: str, key: str) -> None:
    if str(v) != str(PROBLEM_VERSION):
        raise CoexploreError(f"unsupported version {v!r}", file=f, key=key,
                             expected=str(PROBLEM_VERSION))


def _no_unknown(d: dict, allowed: tuple[str, ...], f: str, where: str) -> None:
    for k in d:
        if k not in allowed:
            key = f"{where}.{k}" if where else str(k)
            raise CoexploreError("unknown key", file=f, key=key,
                                 expected="one of " + ", ".join(allowed))


# ----------------------------------------------------------------------------- writing

def layer_problem(layer: Layer) -> dict[str, Any]:
    """The Timeloop v0.4 problem of one layer instance: {'problem': {version, shape, instance}}."""
    return {"problem": {"version": PROBLEM_VERSION, "shape": copy.deepcopy(layer.shape),
                        "instance": dict(layer.instance)}}


def problem_yaml(layer: Layer, header: str | None = None) -> str:
    """The text of `write_problem`: Timeloop's problem-file layout (flow-style projections,
    one-line instance)."""
    shape = layer.shape
    out = [f"# {line}" for line in (header or _default_header(layer)).splitlines()]
    out += ["problem:", f"  version: {PROBLEM_VERSION}", "  shape:",
            *([f"    name: {_flow(shape['name'])}"] if "name" in shape else []),
            f"    dimensions: {_flow(shape['dimensions'])}"]
    if shape.get("coefficients"):
        out.append("    coefficients:")
        out += [f"    - {_flow(c)}" for c in shape["coefficients"]]
    out.append("    data_spaces:")
    for ds in shape["data_spaces"]:
        out.append(f"    - name: {_flow(ds['name'])}")
        out.append("      projection:")
        out += [f"      - {_flow(axis)}" for axis in ds["projection"]]
        out += [f"      {k}: {_flow(v)}" for k, v in ds.items() if k not in ("name", "projection")]
    out.append(f"  instance: {_flow(layer.instance)}")
    return "\n".join(out) + "\n"


def write_problem(layer: Layer, path: str | Path, header: str | None = None) -> Path:
    """Write one layer as a Timeloop v0.4 problem YAML (same structure as Timeloop's files), only
    what reads back as that layer (positive integer bounds and coefficients, numpy's integers made
    Python's; no key the shape does not have), atomically (a stop never leaves half a file)."""
    import yaml
    from coexplore.spec.problem import parse_problem
    from coexplore.spec.yamlio import write_text
    check_type(layer, Layer, "layer", "a workload Layer (e.g. load_workload(...).layer(name))")
    path = Path(check_type(path, PATH_TYPES, "path", "the problem file's path"))
    raw = layer.instance if isinstance(layer.instance, dict) else {}
    plain = {k: int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v for k, v in raw.items()}
    checked = check_shape(copy.deepcopy(layer.shape), str(path), "shape")
    layer = dataclasses.replace(layer, instance=_instance(plain, checked, str(path), f"layer {layer.name}.instance"),
                                shape=checked)
    text = problem_yaml(layer, header)
    parse_problem(yaml.safe_load(text), str(path))       # what the readers would refuse is not written
    write_text(path, text)
    return path


def write_problems(workload: Workload, folder: str | Path) -> list[Path]:
    """One problem file per layer, `<workload>_<layer>.yaml`, in `folder`; each notes its layer's
    count in its first line (a comment), which reading the folder back as a workload takes."""
    folder = Path(folder)
    return [write_problem(layer, folder / f"{workload.name}_{layer.name}.yaml",
                          header=f"{workload.name}_{layer.name}: {_shape_name(layer)}, timeloop "
                                 f"v{PROBLEM_VERSION} problem spec (count {layer.count} in "
                                 f"workload {workload.name})")
            for layer in workload.layers]


def _default_header(layer: Layer) -> str:
    return f"{layer.name}: {_shape_name(layer)}, timeloop v{PROBLEM_VERSION} problem spec"


def _shape_name(layer: Layer) -> str:
    return layer.shape.get("name") or "a problem shape without a name"


_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "~"}  # as PyYAML resolves them


def _flow(v: Any) -> str:
    """One-line YAML (flow style) of plain data."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if v is None:
        return "null"
    if isinstance(v, str):
        if _PLAIN.match(v) and v.lower() not in _YAML_WORDS:
            return v
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_flow(str(k))}: {_flow(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_flow(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to a problem file")
