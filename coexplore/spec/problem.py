"""Timeloop problems (CNN_Layer and other shapes given by dimensions, coefficients, data spaces)."""

from __future__ import annotations

import math
import re

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coexplore.errors import CoexploreError
from coexplore.spec.yamlio import load_yaml, name_from_path

DEFAULT_CNN_SHAPE = {
    "name": "CNN_Layer",
    "dimensions": ["C", "M", "R", "S", "N", "P", "Q"],
    "coefficients": [{"name": "Wstride", "default": 1}, {"name": "Hstride", "default": 1},
                     {"name": "Wdilation", "default": 1}, {"name": "Hdilation", "default": 1}],
    "data_spaces": [
        {"name": "Weights", "projection": [[["C"]], [["M"]], [["R"]], [["S"]]]},
        {"name": "Inputs", "projection": [[["N"]], [["C"]], [["R", "Wdilation"], ["P", "Wstride"]],
                                          [["S", "Hdilation"], ["Q", "Hstride"]]]},
        {"name": "Outputs", "projection": [[["N"]], [["M"]], [["Q"]], [["P"]]], "read_write": True},
    ],
}


def _cnn_layer(name: str) -> dict:
    """Timeloop's own CNN layer shape (its problem-shapes/cnn-layer.yaml and cnn_layer.yaml): the
    output channels are K, not the exercises' M, and its dimensions come in this order."""
    return {"name": name, "dimensions": ["R", "S", "P", "Q", "C", "K", "N"],
            "coefficients": [dict(c) for c in DEFAULT_CNN_SHAPE["coefficients"]],
            "data_spaces": [
                {"name": "Weights", "projection": [[["C"]], [["K"]], [["R"]], [["S"]]]},
                {"name": "Inputs", "projection": [[["N"]], [["C"]], [["R", "Wdilation"], ["P", "Wstride"]],
                                                  [["S", "Hdilation"], ["Q", "Hstride"]]]},
                {"name": "Outputs", "projection": [[["N"]], [["K"]], [["Q"]], [["P"]]], "read_write": True}]}


def _gemm_abz(name: str) -> dict:
    return {"name": name, "dimensions": ["M", "N", "K"],
            "data_spaces": [{"name": "A", "projection": [[["M"]], [["K"]]]},
                            {"name": "B", "projection": [[["N"]], [["K"]]]},
                            {"name": "Z", "projection": [[["M"]], [["N"]]], "read_write": True}]}


# the shapes Timeloop ships in its problem-shapes/ folder, which `shape: NAME` names (Timeloop's
# ShapeFileName); a problem without a shape is Timeloop's cnn-layer
TIMELOOP_SHAPES = {"cnn-layer": lambda: _cnn_layer("CNN-Layer"), "cnn_layer": lambda: _cnn_layer("CNN_Layer"),
                   "gemm-ABZ": lambda: _gemm_abz("gemm-ABZ"), "gemm_ABZ": lambda: _gemm_abz("gemm_ABZ")}
SHAPE_DIR_VARIABLES = ("TIMELOOP_PROBLEM_SHAPE_DIR", "TIMELOOP_PROBLEM_SHAPE_DIRS")


def named_shape(name: str, file: str | None) -> dict:
    """The shape `shape: NAME` names, found as Timeloop's ShapeFileName finds it: NAME.yaml (NAME
    itself when it has an extension) in $TIMELOOP_PROBLEM_SHAPE_DIR, then each folder of
    $TIMELOOP_PROBLEM_SHAPE_DIRS (':'-separated), then the shapes Timeloop ships."""
    import os
    has_ext = any(e in name for e in (".yml", ".yaml", ".cfg"))
    names = [name] if has_ext else [name + ".yaml", name + ".cfg"]
    dirs = [os.environ[SHAPE_DIR_VARIABLES[0]]] if os.environ.get(SHAPE_DIR_VARIABLES[0]) else []
    dirs += [d for d in os.environ.get(SHAPE_DIR_VARIABLES[1], "").split(":") if d]
    for folder in dirs:
        for n in names:
            path = Path(folder) / n
            if not path.is_file():
                continue
            if n.endswith(".cfg"):
                raise CoexploreError(f"shape '{name}' is {path}, a libconfig file, which coexplore does not read",
                                     file=file, key="problem.shape", expected="a YAML shape file (NAME.yaml)")
            doc = load_yaml(path)
            shape = doc.get("shape") if isinstance(doc, dict) else None
            if not isinstance(shape, dict):
                raise CoexploreError("no shape: mapping", file=str(path), key="shape",
                                     expected="a problem shape file: shape: {name, dimensions, data_spaces}")
            return shape
    stem = re.sub(r"\.(yaml|yml)$", "", name)
    if stem in TIMELOOP_SHAPES:
        return TIMELOOP_SHAPES[stem]()
    if re.sub(r"\.cfg$", "", name) == "gemm":           # (Timeloop ships it as libconfig only)
        raise CoexploreError("problem shape 'gemm' is Timeloop's problem-shapes/gemm.cfg, a libconfig file, which "
                             "coexplore does not read", file=file, key="problem.shape",
                             expected="shape: gemm_ABZ (Timeloop's YAML GEMM shape), or the shape written out")
    raise CoexploreError(f"problem shape '{name}': no file {' or '.join(names)} in "
                         + (", ".join(dirs) if dirs else "$TIMELOOP_PROBLEM_SHAPE_DIR(S) (unset)")
                         + ", and not a shape Timeloop ships (Timeloop stops: problem shape files not found)",
                         file=file, key="problem.shape",
                         expected="a shape {name, dimensions, data_spaces}, a shape Timeloop ships ("
                                  + ", ".join(TIMELOOP_SHAPES) + "), or NAME with NAME.yaml in $TIMELOOP_PROBLEM_SHAPE_DIR")


@dataclass
class DataSpace:
    """One tensor: each rank is a sum of (dimension index, coefficient) terms."""

    name: str
    ranks: list[list[tuple[int, int]]]
    read_write: bool = False


PROBLEM_KEYS = ("version", "shape", "instance")       # what Timeloop's ParseWorkload reads of problem:
SHAPE_KEYS = ("name", "dimensions", "coefficients", "data_spaces", "data-spaces")


@dataclass
class Problem:
    """One layer as Timeloop reads it: dimensions with their bounds, coefficients (strides,
    dilations) and dataspaces with their projections."""

    name: str
    dims: list[str]
    bounds: list[int]
    coefficients: dict[str, int]
    dataspaces: list[DataSpace]
    shape: dict = field(default_factory=dict)
    instance: dict = field(default_factory=dict)
    ignored: tuple[str, ...] = ()   # instance keys that are neither dimensions nor coefficients
    unread: tuple[str, ...] = ()    # keys of problem: / problem.shape: that Timeloop does not read (typos?)
    default_shape: bool = False     # no problem.shape: Timeloop's cnn-layer (which Timeloop warns of)

    @property
    def macs(self) -> int:
        out = 1
        for b in self.bounds:
            out *= b
        return out

    def dataspace_index(self, name: str) -> int:
        for i, ds in enumerate(self.dataspaces):
            if ds.name == name:
                return i
        raise KeyError(name)

    def tensor_size(self, ds: DataSpace) -> int:
        size = 1
        for rank in ds.ranks:
            size *= sum(c * (self.bounds[d] - 1) for d, c in rank) + 1
        return size


MAX_OPERATIONS = 2 ** 53    # per-level counts stay exact in int64 and in float64 energies


def check_operations(bounds, file, key: str) -> None:
    """Refuse a layer whose bounds multiply past MAX_OPERATIONS (counts are 64-bit integers, as in
    Timeloop; floats stay exact below 2^53)."""
    ops = math.prod(bounds)
    if ops > MAX_OPERATIONS:
        raise CoexploreError(f"{ops:.3e} operations (the product of the bounds) is too large", file=file, key=key,
                             expected=f"at most 2^53 = {MAX_OPERATIONS:.2e} (counts stay exact in 64-bit integers "
                             "and floats)")


def int_text(value: Any) -> Any:
    """'112' as 112: Timeloop's YAML reader takes a quoted whole number as the number."""
    return int(value) if isinstance(value, str) and value.strip().isdigit() else value


def _with_variables(instance: Any, data: dict) -> Any:
    """A whole spec's problem instance with the bounds written over its `variables:` computed
    (`N: BATCH_SIZE`), as timeloopfe computes the variables before the problem."""
    from coexplore.spec import expressions
    from coexplore.spec.yamlio import Quoted
    variables = data.get("variables")
    if not isinstance(instance, dict) or not isinstance(variables, dict) or not any(
            isinstance(v, str) and not isinstance(v, Quoted) and not v.strip().isdigit() for v in instance.values()):
        return instance
    scope: dict = {}
    for k, v in variables.items():
        scope[str(k)] = expressions.resolve(v, scope)[0]
    return {k: expressions.resolve(v, scope)[0] if isinstance(v, str) and not isinstance(v, Quoted) else v
            for k, v in instance.items()}


def _coefficient(value: Any, file: str | None, key: str) -> int:
    """A stride, dilation or other projection coefficient: Timeloop's shapes multiply a dimension's
    index by it, so it is a positive integer (0 or less gives negative or empty tensors, and
    numbers for no real layer)."""
    value = int_text(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CoexploreError(f"got {value!r}", file=file, key=key,
                             expected="a positive integer (strides, dilations and other coefficients are >= 1)")
    return value


def flat_projection(projection: Any) -> Any:
    """Timeloop's short projection form, a list of dimension names (`[M, K]`: each name one axis),
    as the long one (`[[[M]], [[K]]]`); anything else as given."""
    if isinstance(projection, list) and projection and all(isinstance(d, str) for d in projection):
        return [[[d]] for d in projection]
    return projection


def _scalar_name(name: Any, file: str | None, key: str) -> None:
    """A data space's or coefficient's name is one word: a list or mapping there (`name: [Weights,
    W2]`) is refused, not turned into the text "['Weights', 'W2']"."""
    if isinstance(name, (list, dict, bool)) or name is None:
        raise CoexploreError(f"got {name!r}", file=file, key=key, expected="a name (text)")


def check_dimension_names(dims: list, file: str | None, where: str) -> None:
    """Dimension names of letters (Timeloop's are one letter): a mapping's factors read `K12` as
    K = 12, so a name holding a digit could be written but never read back."""
    for i, d in enumerate(dims):
        if not re.fullmatch(r"[A-Za-z_]+", d):
            raise CoexploreError(f"dimension name {d!r}", file=file, key=f"{where}[{i}]",
                                 expected="a name of letters (Timeloop's are one letter; a digit would read as "
                                          "a factor in a mapping, K12 as K = 12)")


def underscored_shape(shape: dict) -> dict:
    """A shape with a v0.3 file's `data-spaces` / `read-write` spelt as v0.4 and current Timeloop
    read them (`data_spaces`, `read_write`)."""
    out = {k.replace("-", "_"): v for k, v in shape.items()}
    if isinstance(out.get("data_spaces"), list):
        out["data_spaces"] = [{k.replace("-", "_"): v for k, v in ds.items()} if isinstance(ds, dict) else ds
                              for ds in out["data_spaces"]]
    return out


def parse_problem(data: Any, file: str | None = None, name: str | None = None) -> Problem:
    """A Timeloop v0.3/v0.4 problem (the YAML's dict with a `problem:` key): shape, dimensions,
    bounds and coefficients; errors name `file` and the key."""
    if not isinstance(data, dict) or "problem" not in data:
        raise CoexploreError("missing key", file=file, key="problem",
                             expected="a Timeloop problem (problem: {shape, instance})")
    from coexplore.spec.unmodelled import check_document
    check_document(data, file)
    prob = data["problem"]
    if not isinstance(prob, dict):
        raise CoexploreError("not a mapping", file=file, key="problem", expected="a mapping")
    shape = prob["shape"] if "shape" in prob else TIMELOOP_SHAPES["cnn-layer"]()    # (Timeloop's default, warned)
    if isinstance(shape, str):
        shape = named_shape(shape, file)
    if not isinstance(shape, dict):
        raise CoexploreError(f"got {shape!r}", file=file, key="problem.shape",
                             expected="a mapping {name, dimensions, coefficients, data_spaces}, or the name of a shape")
    direct = "instance" not in prob        # Timeloop reads bounds from problem: itself then (backwards-compatible)
    instance = _with_variables({k: v for k, v in prob.items() if k not in PROBLEM_KEYS} if direct
                               else prob.get("instance"), data)
    ikey = "problem" if direct else "problem.instance"
    if not isinstance(instance, dict):
        raise CoexploreError(f"got {prob['instance']!r}", file=file,
                             key="problem.instance", expected="a mapping of dimension bounds, e.g. {C: 64, M: 64, ...}")
    dims = shape.get("dimensions")
    if not isinstance(dims, list) or not dims:
        raise CoexploreError("missing or empty" if not dims else f"got {dims!r}", file=file,
                             key="problem.shape.dimensions", expected="a list of dimension names")
    dims = [str(d) for d in dims]
    check_dimension_names(dims, file, "problem.shape.dimensions")
    if "flatten" in shape:             # Timeloop's flattened dimensions rename what mappings may name
        raise CoexploreError("flattened dimensions are not modelled", file=file, key="problem.shape.flatten",
                             expected="a shape without flatten (its dimensions named one by one)")
    twice = sorted({d for d in dims if dims.count(d) > 1})
    if twice:
        raise CoexploreError(f"dimension{'s' if len(twice) > 1 else ''} {', '.join(twice)} listed twice",
                             file=file, key="problem.shape.dimensions", expected="each dimension name once")
    coeffs = {}
    coeff_list = shape.get("coefficients") or []
    if not isinstance(coeff_list, list):
        raise CoexploreError(f"got {coeff_list!r}", file=file, key="problem.shape.coefficients",
                             expected="a list of {name, default}")
    for i, c in enumerate(coeff_list):
        default = c.get("default") if isinstance(c, dict) else None      # Timeloop requires it
        if (not isinstance(c, dict) or "name" not in c or isinstance(default, bool)
                or not isinstance(default, int)):
            raise CoexploreError(f"got {c!r}", file=file, key=f"problem.shape.coefficients[{i}]",
                                 expected="{name: NAME, default: INTEGER}")
        _scalar_name(c["name"], file, f"problem.shape.coefficients[{i}].name")
        coeffs[str(c["name"])] = _coefficient(default, file, f"problem.shape.coefficients[{i}].default")
    for k, v in instance.items():
        if k in coeffs:
            coeffs[k] = _coefficient(v, file, f"{ikey}.{k}")
    missing = [d for d in dims if d not in instance]
    if missing:                         # Timeloop's ParseWorkloadInstance asserts a bound for each
        strays = [str(k) for k in instance if k not in dims and k not in coeffs and k != "densities"
                  and str(k) not in TIMELOOPFE_INSTANCE_KEYS]
        why = (f"; {', '.join(strays)} {'is' if len(strays) == 1 else 'are'} no dimension of the shape" if strays else "")
        if "shape" not in prob:
            unread = [str(k) for k in prob if k not in PROBLEM_KEYS and not direct]
            why += ("; no problem.shape" + (f" ({', '.join('problem.' + k for k in unread)} is not a key Timeloop "
                                             "reads)" if unread else "")
                    + ", so Timeloop's cnn-layer shape, whose output channels are K")
        raise CoexploreError(f"no bound for {', '.join(missing)}{why}", file=file, key=ikey,
                             expected=f"a bound for every dimension of the shape ({', '.join(dims)}; 1 where "
                                      "unused: Timeloop stops without one)")
    bounds = []
    for d in dims:
        v = int_text(instance[d])
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise CoexploreError(f"got {v!r}", file=file, key=f"{ikey}.{d}",
                                 expected="a positive integer bound")
        bounds.append(v)
    check_operations(bounds, file, ikey)
    unknown = [k for k in instance if k not in dims and k not in coeffs and k != "densities"]
    dataspaces = []
    key_ds = "data_spaces" if "data_spaces" in shape else "data-spaces"
    ds_list = shape.get(key_ds) or []
    if not isinstance(ds_list, list):
        raise CoexploreError(f"got {ds_list!r}", file=file, key=f"problem.shape.{key_ds}",
                             expected="a list of {name, projection, read_write}")
    for i, ds in enumerate(ds_list):
        where = f"problem.shape.{key_ds}[{i}]"
        if not isinstance(ds, dict) or "name" not in ds or not isinstance(ds.get("projection"), list):
            raise CoexploreError(f"got {ds!r}", file=file, key=where,
                                 expected="{name: NAME, projection: [[[DIM], ...], ...], read_write: BOOL}")
        _scalar_name(ds["name"], file, f"{where}.name")
        extra = sorted(set(ds) - {"name", "projection", "read_write", "read-write", "ranks"})
        if extra:
            raise CoexploreError(f"unknown key '{extra[0]}'", file=file, key=where,
                                 expected="name, projection, read_write, ranks")
        projection = flat_projection(ds["projection"])
        if not projection or any(isinstance(r, list) and not r for r in projection):
            raise CoexploreError("a tensor with no ranks (a scalar) or a rank with no terms is not modelled",
                                 file=file, key=f"{where}.projection",
                                 expected="one or more ranks, each a list of terms like [[P, Wstride], [R]]")
        if "ranks" in ds and (not isinstance(ds["ranks"], list) or len(ds["ranks"]) != len(projection)
                              or not all(isinstance(r, str) for r in ds["ranks"])):
            raise CoexploreError(f"got {ds['ranks']!r}", file=file, key=f"{where}.ranks",
                                 expected=f"one rank name (text) per projection axis ({len(projection)})")
        ranks = []
        for j, rank in enumerate(projection):
            if not isinstance(rank, list):
                raise CoexploreError(f"got {rank!r}", file=file, key=f"{where}.projection[{j}]",
                                     expected="a list of terms like [[P, Wstride], [R]]")
            terms = []
            for term in rank:
                if not isinstance(term, list) or len(term) not in (1, 2):     # Timeloop: 1 or 2 items
                    raise CoexploreError(f"got {term!r}", file=file,
                                         key=f"problem.shape.data_spaces[{i}].projection[{j}]",
                                         expected="terms like [P, Wstride] or [C] (a dimension, then "
                                                  "at most one coefficient)")
                dname = str(term[0])
                if dname not in dims:
                    raise CoexploreError(f"unknown dimension '{dname}'", file=file,
                                         key=f"problem.shape.data_spaces[{i}].projection[{j}]",
                                         expected=f"one of {dims}")
                coef = 1
                if len(term) > 1:
                    cname = str(term[1])
                    if cname not in coeffs:
                        raise CoexploreError(f"unknown coefficient '{cname}'", file=file,
                                             key=f"problem.shape.data_spaces[{i}].projection[{j}]",
                                             expected=f"one of {sorted(coeffs)}")
                    coef = coeffs[cname]
                terms.append((dims.index(dname), coef))
            ranks.append(terms)
        rw = _yaml_cpp_bool(ds.get("read_write", ds.get("read-write", False)))
        if not isinstance(rw, bool):
            raise CoexploreError(f"got {rw!r}", file=file, key=f"{where}.read_write", expected="true or false")
        if any(d.name == str(ds["name"]) for d in dataspaces):
            raise CoexploreError(f"data space '{ds['name']}' listed twice", file=file, key=f"{where}.name",
                                 expected="each data space name once (mappings and results name them)")
        dataspaces.append(DataSpace(str(ds["name"]), ranks, rw))
    if not dataspaces:
        import difflib
        near = difflib.get_close_matches("data_spaces", [str(k).replace("-", "_") for k in shape], n=1, cutoff=0.75)
        typo = next((k for k in shape if str(k).replace("-", "_") in near and k != key_ds), None)
        raise CoexploreError("no data spaces" + (f" ('{typo}' is not a key Timeloop reads: {key_ds}?)" if typo else ""),
                             file=file, key=f"problem.shape.{typo or key_ds}",
                             expected="a list of tensors with projections under problem.shape.data-spaces "
                                      "(v0.3) or data_spaces")
    problem = Problem(name=name or (name_from_path(file, "problem") if file else "problem"), dims=dims,
                      bounds=bounds, coefficients=coeffs, dataspaces=dataspaces, shape=shape,
                      instance=dict(instance), ignored=tuple(str(k) for k in unknown),
                      default_shape="shape" not in prob,
                      unread=tuple(f"problem.{k}" for k in prob if k not in PROBLEM_KEYS and not direct)
                      + tuple(f"problem.shape.{k}" for k in shape if k not in SHAPE_KEYS))
    for ds in dataspaces:               # strides/dilations widen a tensor: its size must stay countable
        size = problem.tensor_size(ds)
        if size > MAX_OPERATIONS:
            raise CoexploreError(f"tensor {ds.name} would hold {size:.3e} elements, too many", file=file,
                                 key="problem.instance", expected=f"at most {MAX_OPERATIONS:.2e} elements "
                                 "per tensor (counts stay exact in 64-bit integers and floats); smaller bounds or strides")
    # extra instance keys (H, W, padding...) are ignored, as Timeloop does; kept for a warning,
    # since a misspelt dimension silently becomes a bound of 1
    return problem


# instance keys timeloopfe's problem files carry for the input size and padding (not typos: no warning)
TIMELOOPFE_INSTANCE_KEYS = ("H", "W", "Hpad", "Wpad")


def problem_warnings(problem: Problem, path) -> list[str]:
    """What a problem file has that Timeloop ignores silently (most likely a typo), one line each."""
    out = []
    if problem.instance.get("densities"):
        out.append(f"{path}: problem.instance.densities ignored: coexplore models dense tensors (no Sparseloop)")
    ignored = [k for k in problem.ignored if k not in TIMELOOPFE_INSTANCE_KEYS]
    if ignored:
        out.append(f"{path}: problem.instance key(s) {', '.join(ignored)} ignored (not a dimension or "
                   "coefficient of the shape, as in Timeloop)")
    if problem.unread:
        out.append(f"{path}: {', '.join(problem.unread)}: not a key Timeloop reads, ignored")
    if problem.default_shape:
        out.append(f"{path}: no problem.shape: Timeloop's cnn-layer shape applies (dimensions "
                   f"{', '.join(problem.dims)}; output channels K)")
    return out


def _yaml_cpp_bool(value: Any) -> Any:
    """A quoted true/false (yes/no, on/off) as the bool Timeloop's YAML reader makes of it."""
    if isinstance(value, str):
        for truth, words in ((True, ("y", "yes", "true", "on")), (False, ("n", "no", "false", "off"))):
            if value in words or value in (w.title() for w in words) or value in (w.upper() for w in words):
                return truth
    return value


WRITTEN_HEADER = re.compile(r"# (\S+): .*, timeloop v[\d.]+ problem spec$")   # `spec.workload.problem_yaml`'s


def written_layer_name(path: str | Path) -> str | None:
    """The layer named in the first line of a problem file coexplore wrote for a workload's layer
    (`map` writes `problem.yaml`: the file name says nothing), when the file's name is generic;
    None otherwise (the name then comes from the path)."""
    from coexplore.spec.yamlio import is_generic_name
    if not is_generic_name(path):
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            found = WRITTEN_HEADER.match(f.readline().rstrip("\n"))
    except OSError:
        return None
    return found[1] if found else None


def load_problem(path: str | Path) -> Problem:
    """`parse_problem` of a Timeloop problem YAML file (one layer; `spec.workload.read_problem` gives
    it as a workload's Layer)."""
    data = load_yaml(path)
    try:
        return parse_problem(data, str(path), name=written_layer_name(path))
    except CoexploreError as exc:
        from coexplore.spec.template import with_origin
        raise with_origin(exc, path, "problem")
