"""Timeloop mappings: per level temporal/spatial factors, permutations (innermost first), keep/bypass.

`Mapping` is the YAML-side view (level name -> directives); `to_arrays` turns one or more mappings
into the integer arrays the batched model consumes, and `from_arrays` goes back.
"""

from __future__ import annotations

import math

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from coexplore.errors import CoexploreError, shortened
from coexplore.spec.architecture import Architecture
from coexplore.spec.problem import MAX_OPERATIONS, Problem, int_text
from coexplore.spec.yamlio import load_yaml, write_yaml



@dataclass
class LevelMapping:
    temporal: dict[str, int] = field(default_factory=dict)
    permutation: list[str] = field(default_factory=list)       # innermost first
    spatial: dict[str, int] = field(default_factory=dict)
    spatial_permutation: list[str] = field(default_factory=list)
    split: int | None = None
    keep: list[str] | None = None
    bypass: list[str] | None = None


@dataclass
class Mapping:
    """One Timeloop mapping as read from YAML: per level its temporal and spatial factors, loop
    orders and kept dataspaces (`to_arrays` turns mappings into the model's batch arrays)."""

    levels: dict[str, LevelMapping] = field(default_factory=dict)
    source: str | None = None
    warnings: list[str] = field(default_factory=list)   # what Timeloop also warns about


MAX_FACTOR = MAX_OPERATIONS      # beyond it a factor cannot divide any bound, nor fit the int64 arrays
# Timeloop's factor syntax: C4, C=4, C = 4, and C=4,3 (a residual: the last iteration's count)
# (a name starts a run of letters, taken whole: a long run of letters is read once, not once per letter)
_FACTOR_SCAN = re.compile(r"(?<![A-Za-z_])([A-Za-z_]++)\s*=*\s*(\d+)(?:\s*,\s*(\d+))?")


def _unread(gap: str) -> bool:
    """Text between factors other than separators (blanks, commas, semicolons), which Timeloop's regex
    search would skip: a mistyped factor, '4.5', a residual, a stray symbol: refused."""
    return bool(gap.strip(" ,;\t"))


def _parse_factors(value, *, file, key, dims, bounds=None, warnings=None) -> dict[str, int]:
    """Factors as Timeloop's parser reads them ('C4 M2', 'C=4,M=2', 'R = 1 P = 16', 'R1P16', a
    list, text after '#' ignored); a factor 0 means the whole dimension (Timeloop warns too)."""
    if value is None:
        return {}
    items = [str(v) for v in value] if isinstance(value, list) else [str(value).split("#")[0]]
    out = {}
    for item in items:
        pos = 0
        for m in _FACTOR_SCAN.finditer(item):
            if _unread(item[pos:m.start()]):
                break
            d, n = m.group(1), int(m.group(2))
            if m.group(3) is not None and int(m.group(3)) != n:
                pos = item.rindex(",", m.start(), m.start(3))         # (refused below, at its comma)
                break
            pos = m.end()           # (a residual equal to the factor: a perfect split, `C=4,4`)
            if n > MAX_FACTOR:
                raise CoexploreError(f"factor {d}{n} is too large", file=file, key=key,
                                     expected=f"at most 2^53 = {MAX_FACTOR} (a valid factor divides the dimension's bound)")
            if d not in dims:
                raise CoexploreError(f"unknown dimension '{d}'", file=file, key=key, expected=f"one of {dims}")
            if d in out:
                raise CoexploreError(f"dimension '{d}' given twice", file=file, key=key,
                                     expected="one factor per dimension")
            if n == 0 and bounds is not None:
                n = bounds[d]
                if warnings is not None:
                    warnings.append(f"{key}: {d}0 read as the whole dimension {d}={n} (as Timeloop does)")
            out[d] = n
        if _unread(item[pos:]):
            rest = item[pos:].strip()
            residual = re.match(r",\s*\d", rest) is not None     # Timeloop's residual factor `K=3,2`
            raise CoexploreError(f"cannot read factor {shortened(rest)!r} of {shortened(item.strip())!r}" + (
                                 ": a residual factor (imperfect factorisation), which coexplore does not model"
                                 if residual else ""), file=file, key=key,
                                 expected="whole-number factors like 'C4 M2' or 'C=4'" + (
                                     ", each dividing what the levels below leave" if residual else ""))
    return out


def _parse_perm(value, *, file, key, dims) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) and "," in value:     # timeloopfe's form: "P, R, C" (its Permutation splits at commas)
        value = [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, str):      # Timeloop reads it character by character, skipping blanks
        toks = value.split()           # words first: a lone multi-letter name ('KB') is that dimension
        letters = [ch for ch in value if not ch.isspace()]
        if not all(t in dims for t in toks) and all(ch in dims for ch in letters):
            toks = letters             # 'NSP MQRC'; multi-letter names stay words ('K1 K2')
    elif isinstance(value, list):
        toks = [str(v) for v in value]
    else:
        raise CoexploreError(f"got {value!r}", file=file, key=key,
                             expected=f"dimension names innermost first, as text like '{''.join(dims)}' or a list")
    for t in toks:
        if t not in dims:
            if len(t) > 1 and all(len(d) == 1 for d in dims):     # read letter by letter: name the letter
                t = next((ch for ch in t if ch not in dims), t)
            raise CoexploreError(f"unknown dimension '{t}'", file=file, key=key, expected=f"one of {dims}")
    twice = sorted({t for t in toks if toks.count(t) > 1})
    if twice:
        raise CoexploreError(f"dimension(s) {', '.join(twice)} listed twice", file=file, key=key,
                             expected="each dimension at most once")
    return toks


def parse_mapping(data: Any, arch: Architecture, problem: Problem, file: str | None = None) -> Mapping:
    """A Timeloop mapping (the YAML's `mapping:` list, or the dict holding it) checked against the
    architecture's levels and the problem's dimensions; errors name `file` and the key."""
    from coexplore.spec.unmodelled import check_document
    check_document(data, file)
    if isinstance(data, dict) and "mapping" in data:
        data = data["mapping"]
        if isinstance(data, dict):
            raise CoexploreError(f"got a mapping of {', '.join(map(str, list(data)[:4]))}, not a list" if data else
                                 "got an empty mapping ({}), not a list", file=file,
                                 key="mapping", expected="a list of mapping directives (- target: ..., type: ...)")
    if isinstance(data, dict):
        raise CoexploreError("missing key", file=file, key="mapping", expected="a list of mapping directives")
    if data is None:
        raise CoexploreError("no directives: the file (or its mapping:) is empty", file=file, key="mapping",
                             expected="mapping: a list of directives ({target, type, factors, permutation})")
    if not isinstance(data, list):
        raise CoexploreError("not a list", file=file, key="mapping", expected="a list of mapping directives")
    names = arch.level_names()
    containers = {lv.name for lv in arch.levels if lv.from_container}
    backing = arch.levels[0].name if arch.levels else None
    dims = problem.dims
    dsnames = [ds.name for ds in problem.dataspaces]
    mapping = Mapping(levels={n: LevelMapping() for n in names}, source=file)
    backing_bypass: dict[str, str] = {}        # dataspace -> key of the directive bypassing it at the backing store
    said_at: dict[tuple[str, str], str] = {}   # (level, dataspace) -> key of the last keep/bypass naming it
    temporal_at: set[str] = set()              # levels a temporal directive names
    directed: dict[tuple[str, str], str] = {}  # (level, temporal|spatial) -> key of the first directive
    for i, entry in enumerate(data):
        key = f"mapping[{i}]"
        if not isinstance(entry, dict):
            raise CoexploreError(f"got {entry!r}", file=file, key=key, expected="a mapping with target and type")
        target = entry.get("target")
        if target is None:
            raise CoexploreError("missing key", file=file, key=f"{key}.target", expected=f"one of {names}")
        if isinstance(target, bool) or not isinstance(target, (str, int)):
            raise CoexploreError(f"got {target!r}", file=file, key=f"{key}.target",
                                 expected=f"a level name, one of {names}")
        if isinstance(target, int) and str(target) not in mapping.levels:
            # Timeloop's FindTargetStorageLevel tries the target as a name first, and its YAML reader
            # (CompoundConfigNode::lookupValue) gives any scalar as text: a level id works in a
            # libconfig .cfg file only, a YAML one stops Timeloop
            raise CoexploreError(f"target storage level not found: {target}", file=file, key=f"{key}.target",
                                 expected=f"a level name, one of {names} (Timeloop reads a number in a YAML "
                                          "mapping as a name; levels by number only in libconfig .cfg files)")
        target = str(target)
        if target not in mapping.levels and f"inter_{target}_spatial" in containers:
            target = f"inter_{target}_spatial"           # a v0.4 container, as timeloopfe names it
        if target not in mapping.levels:
            if target == arch.compute.name:      # holds no tile: timeloop-model rejects it
                raise CoexploreError(f"target '{target}' is the compute level, which holds no tile (timeloop-model "
                                     "rejects a directive there)", file=file, key=f"{key}.target",
                                     expected=f"a storage level, one of {names}")
            flat = f" (a flattened architecture names container {target}'s level inter_{target}_spatial)" \
                if f"inter_{target}_spatial" in mapping.levels else ""
            raise CoexploreError(f"unknown level '{target}'", file=file, key=f"{key}.target",
                                 expected=f"one of {names}{flat}")
        if "type" not in entry:          # Timeloop asserts a type
            raise CoexploreError("a directive without a type", file=file, key=f"{key}.type",
                                 expected="type: temporal | spatial | datatype | bypass")
        kind = entry["type"]
        _check_directive_keys(entry, key, file, mapping.warnings)
        lm = mapping.levels[target]
        bounds = dict(zip(dims, problem.bounds))
        factors = dict(file=file, key=f"{key}.factors", dims=dims, bounds=bounds, warnings=mapping.warnings)
        if kind in ("temporal", "spatial") and (target, kind) in directed:
            # Timeloop's parser (mapping/parser.cpp): a level's later directive replaces the earlier one whole
            mapping.warnings.append(f"{key}: a second {kind} directive for {target} (the first is "
                                    f"{directed[(target, kind)]}): it replaces the first whole (factors, permutation"
                                    + (", split" if kind == "spatial" else "") + "), as Timeloop reads it")
        if kind in ("temporal", "spatial"):
            directed.setdefault((target, kind), key)
        if kind == "temporal":
            temporal_at.add(target)
            lm.temporal = _parse_factors(entry.get("factors"), **factors)
            lm.permutation = _parse_perm(entry.get("permutation"), file=file, key=f"{key}.permutation", dims=dims)
        elif kind == "spatial":
            li = names.index(target)
            if (said := arch.no_spatial_level(li)) is not None:     # Timeloop's parser: no spatial tiling level
                below = next((n for j, n in enumerate(names[li + 1:], li + 1) if math.prod(arch.fanout(j)) > 1), None)
                hint = ""
                if below is not None:             # a v0.4 container's fan-out is its dummy level's
                    container = re.fullmatch(r"inter_(.+)_spatial", below)
                    owner = f"container {container.group(1)}" if container else below
                    named = container.group(1) if container and below in containers else below   # (flattened: its level)
                    hint = f"; the fan-out below it is {owner}'s: target: {named}"
                raise CoexploreError(said, file=file, key=f"{key}.target",
                    expected="a spatial directive only at a level that fans out (as timeloop-model requires)" + hint)
            lm.spatial = _parse_factors(entry.get("factors"), **factors)
            lm.spatial_permutation = _parse_perm(entry.get("permutation"), file=file,
                                                 key=f"{key}.permutation", dims=dims)
            split = int_text(entry.get("split"))   # each spatial directive sets it (Timeloop: all-X when not given)
            if split is not None and (isinstance(split, bool) or not isinstance(split, int) or split < 0):
                raise CoexploreError(f"got {split!r}", file=file, key=f"{key}.split",
                                     expected="a non-negative integer (dimensions on the X axis)")
            lm.split = split
        elif kind in ("datatype", "bypass", "dataspace"):
            # Timeloop's ParseUserDatatypeBypassSettings edits one keep/bypass string per level:
            # directives add up, a later one changing only the dataspaces it names; keep, then bypass
            for k in ("keep", "bypass"):
                vals = entry.get(k)
                if vals is None:
                    continue
                if not isinstance(vals, list):        # (Timeloop's lookupArrayValue asserts a sequence)
                    raise CoexploreError(f"got {vals!r}", file=file, key=f"{key}.{k}",
                                         expected=f"a list of dataspace names from {dsnames} ({k}: [{vals}] for one: "
                                                  "Timeloop stops on a single name)" if isinstance(vals, str) else
                                         f"a list of dataspace names from {dsnames}")
                for v in vals:
                    if v not in dsnames:
                        raise CoexploreError(f"unknown dataspace '{v}'", file=file, key=f"{key}.{k}",
                                             expected=f"one of {dsnames}")
                if k == "bypass" and target == backing:
                    backing_bypass.update({str(v): f"{key}.bypass" for v in vals})
                if k == "bypass":
                    for v in [v for v in vals if v in (entry.get("keep") or [])]:
                        mapping.warnings.append(f"{key}: {v} both kept and bypassed at {target}: bypassed, as "
                                                "Timeloop reads it (keep first, then bypass)")
                said_at.update({(target, str(v)): f"{key}.{k}" for v in vals})
                other = "bypass" if k == "keep" else "keep"
                setattr(lm, other, [d for d in getattr(lm, other) or [] if d not in vals] or None)
                setattr(lm, k, [*(d for d in getattr(lm, k) or [] if d not in vals), *(str(v) for v in vals)])
        elif kind == "skew":                  # (Timeloop's ParseUserSkew: real, not modelled here)
            raise CoexploreError("a skew directive changes Timeloop's analysis and is not modelled by coexplore",
                                 file=file, key=f"{key}.type", expected="no skew directive")
        else:
            raise CoexploreError(f"unknown type '{kind}'", file=file, key=f"{key}.type",
                                 expected="temporal, spatial, datatype or bypass (or dataspace, timeloopfe's name)")
    _with_node_dataspaces(mapping, arch, problem, said_at)
    unnamed = [lv.name for lv in arch.levels if not lv.from_container and lv.name not in temporal_at]
    if unnamed and temporal_at:               # (Timeloop: "factors not found for level", then 1s)
        mapping.warnings.append(f"no temporal directive for level(s) {', '.join(unnamed)}: their temporal factors "
                                "are 1, as Timeloop sets them (it warns 'factors not found for level')")
    _refuse_backing_bypass(mapping, arch, backing_bypass, file)
    return mapping


def _refuse_backing_bypass(mapping: Mapping, arch: Architecture, said: dict[str, str], file) -> None:
    """A dataspace bypassed at the backing store but kept below it: nothing above could supply it,
    and timeloop-model's counts wrap around for it (NVlabs/timeloop#218), so it is refused. One
    bypassed at every level is left to the model, which fails it as Timeloop does ("one of the
    tensors is bypassed in all storage levels")."""
    for ds, key in said.items():
        if ds not in (mapping.levels[arch.levels[0].name].bypass or []):
            continue                               # (a later directive kept it again)
        below = [lv.name for lv in arch.levels[1:]
                 if ds in (mapping.levels[lv.name].keep or []) or
                 not (lv.from_container or ds in (mapping.levels[lv.name].bypass or []))]
        if below:
            raise CoexploreError(f"{ds} bypassed at {arch.levels[0].name}, the backing store, but kept at {below[0]}: "
                                 "nothing above could supply it (timeloop-model's counts wrap around for it, "
                                 "NVlabs/timeloop#218)", file=file, key=key,
                                 expected="every dataspace kept at the backing store (or bypassed at every level)")


def _with_node_dataspaces(mapping: Mapping, arch: Architecture, problem: Problem,
                          said_at: dict | None = None) -> None:
    """A v0.4 architecture's node `dataspace` constraints (and its !Parallel branches' bypasses)
    joined to the mapping, as timeloopfe hands timeloop-model each node's constraints combined with
    the mapping's directives (ConstraintAttacherProcessor, then one directive list): per level the
    keep and bypass lists are united. A mapping that keeps what a node bypasses, or bypasses what it
    keeps, is refused, as timeloopfe refuses the re-specification; a mapping's keep in a !Parallel
    branch places that dataspace there (timeloopfe works out the branches after joining).
    `said_at`: (level, dataspace) -> the key of the directive that named it (errors name it)."""
    if not any(isinstance((lv.constraints or {}).get("dataspace"), dict) for lv in arch.levels) and not arch.branches:
        return
    from coexplore.spec.constraints import check_dataspace_names, constraints_from_nodes
    every = [ds.name for ds in problem.dataspaces]
    for name, c in constraints_from_nodes(arch, problem).items():
        check_dataspace_names(c, name, problem)
        lv = next(lv for lv in arch.levels if lv.name == name)
        if lv.is_dummy:
            continue                  # (a container's fan-out level holds nothing in any case)
        lm = mapping.levels[name]
        said_keep, said_bypass = set(lm.keep or ()), set(lm.bypass or ())
        keep = set(c.keep or ())
        bypass = set(c.bypass or ())
        if c.keep_only:
            bypass |= set(every) - keep
        if c.bypass_only:
            keep |= set(every) - bypass
        clash = sorted((said_keep & bypass) | (said_bypass & keep))
        if clash:
            raise CoexploreError(f"the mapping {'keeps' if clash[0] in said_keep else 'bypasses'} {clash[0]} at "
                                 f"{name}, which the architecture's constraints "
                                 f"{'bypass' if clash[0] in said_keep else 'keep'} there", file=mapping.source,
                                 key=(said_at or {}).get((name, clash[0]), "mapping"),
                                 expected="a mapping that agrees with the nodes' dataspace constraints (timeloopfe "
                                 "refuses the re-specification)")
        if c.bypass_except is not None:       # a !Parallel branch: what no peer branch keeps may stay here
            bypass |= set(every) - set(c.bypass_except) - said_keep
        if not keep and not bypass:
            continue
        lm.keep = [d for d in every if d in keep or d in said_keep] if keep or lm.keep is not None else None
        lm.bypass = [d for d in every if d in bypass or d in said_bypass]


DIRECTIVE_KEYS = {"target", "type", "factors", "permutation", "split", "keep", "bypass"}
# Timeloop reads these and they change its numbers; this model does not: refused when they say something
UNMODELLED_DIRECTIVES = ("no_multicast_no_reduction", "no_link_transfer", "no_temporal_reuse",
                         "rmw_on_first_writeback", "passthrough", "skew", "modulo", "terms")


# what each type of directive reads (Timeloop's parser skips the rest)
_READ_BY = {"temporal": {"factors", "permutation"}, "spatial": {"factors", "permutation", "split"},
            "datatype": {"keep", "bypass"}, "bypass": {"keep", "bypass"}, "dataspace": {"keep", "bypass"}}


def _check_directive_keys(entry: dict, key: str, file, warnings: list[str]) -> None:
    kind = entry.get("type")
    reads = (_READ_BY.get(kind, DIRECTIVE_KEYS) if isinstance(kind, str) else DIRECTIVE_KEYS) | {"target", "type"}
    for k, v in entry.items():
        if k in DIRECTIVE_KEYS and k not in reads and v not in (None, [], ""):
            warnings.append(f"{key}: key '{k}' is not read by a {entry.get('type')} directive (it reads "
                            f"{', '.join(sorted(reads - {'target', 'type'}))})")
        if k in DIRECTIVE_KEYS:
            continue
        if k in UNMODELLED_DIRECTIVES and v not in (None, [], ""):
            raise CoexploreError(f"'{k}' changes Timeloop's analysis and is not modelled by coexplore",
                                 file=file, key=f"{key}.{k}", expected=f"no {k} (or an empty list)")
        if k not in UNMODELLED_DIRECTIVES:
            warnings.append(f"{key}: key '{k}' is not read (a mapping directive has "
                            f"{', '.join(sorted(DIRECTIVE_KEYS))})")


def load_mapping(path: str | Path, arch: Architecture, problem: Problem) -> Mapping:
    """`parse_mapping` of a Timeloop mapping YAML file, or of Timeloop's loop-nest printout (a
    map.txt: what a v0.3 timeloop-mapper run leaves of its best mapping; `spec.map_txt`)."""
    doc = read_mapping_doc(path, problem)
    try:
        return parse_mapping(doc, arch, problem, str(path))
    except CoexploreError as exc:             # (a printout's directive said at its line)
        raise doc.at_line(exc) if hasattr(doc, "at_line") else exc


def read_mapping_doc(path: str | Path, problem: Problem):
    """The document of a mapping file as `parse_mapping` takes it: the YAML, or a map.txt read into
    that form. Only what makes the file unreadable is refused here (missing, not UTF-8, malformed
    YAML or map.txt); what the mapping says is `parse_mapping`'s to judge."""
    from coexplore.spec.map_txt import looks_like_map_txt, parse_map_txt
    text = Path(path).read_text(errors="replace") if Path(path).is_file() else ""
    if looks_like_map_txt(text):
        return parse_map_txt(text, [ds.name for ds in problem.dataspaces], str(path))
    return load_yaml(path)


@dataclass
class MappingArrays:
    """A batch of mappings of one (architecture, problem), levels ordered innermost (0) outward.

    temporal, spatial_x, spatial_y: int64 [B, L, D] loop bounds; perm: int64 [B, L, D] dimension
    index of the k-th innermost temporal loop; keep: bool [B, L, DS]. spatial_perm (optional)
    int64 [B, L, D]: the spatial loop order innermost first (X dims, then Y dims); Timeloop numbers
    a fan-out's children in this order, which matters for link transfers only. None = the default
    order (X dims then Y dims, each by dimension index).
    """

    temporal: np.ndarray
    spatial_x: np.ndarray
    spatial_y: np.ndarray
    perm: np.ndarray
    keep: np.ndarray
    spatial_perm: np.ndarray | None = None
    # ids of the arrays as to_arrays / MapSpace.decode built them (well-formed): while they are
    # the same objects, `checked` need not look (the model's hot path). Editing such arrays in
    # place is not detected: assign new arrays (or a copy) to have them checked.
    trusted: tuple = field(default=(), repr=False, compare=False)

    FIELDS = ("temporal", "spatial_x", "spatial_y", "perm", "keep")

    def __len__(self) -> int:
        return self.temporal.shape[0]

    def _ids(self) -> tuple:
        return tuple(id(getattr(self, f)) for f in (*self.FIELDS, "spatial_perm"))

    def well_formed(self) -> "MappingArrays":
        """Mark these arrays as built well-formed (by to_arrays or MapSpace.decode)."""
        self.trusted = self._ids()
        return self

    def checked(self, levels: int, dims: int, dataspaces: int) -> "MappingArrays":
        """These arrays as the model needs them (int64 factors and orders, bool keep), or a
        CoexploreError naming the field: hand-built arrays of the wrong shape, factors below 1
        or a loop order that is no permutation would otherwise give numbers for no mapping."""
        if self.trusted and self.trusted == self._ids() and self.temporal.shape[1:] == (levels, dims):
            return self

        def fail(field, got, expected):
            raise CoexploreError(got, key=f"MappingArrays.{field}", expected=expected)

        shape = (levels, dims)
        out = {}
        for f in ("temporal", "spatial_x", "spatial_y", "perm", "spatial_perm"):
            a = getattr(self, f)
            if a is None:
                continue
            a = np.asarray(a)
            if a.ndim != 3 or a.shape[1:] != shape:
                fail(f, f"shape {a.shape}", f"[batch, {levels} levels, {dims} dimensions]")
            if not np.issubdtype(a.dtype, np.integer):
                if not np.issubdtype(a.dtype, np.number) or np.any(a != np.round(a)):
                    fail(f, f"dtype {a.dtype}", "integers")
            a = a.astype(np.int64, copy=False)
            if f in ("perm", "spatial_perm"):
                if np.any(np.sort(a, axis=2) != np.arange(dims)):
                    fail(f, "a level's loop order is not a permutation of the dimension indices",
                         f"each [batch, level] row a permutation of 0..{dims - 1}")
            elif np.any(a < 1):
                fail(f, "a loop bound below 1", "factors >= 1")
            out[f] = a
        keep = np.asarray(self.keep)
        if keep.ndim != 3 or keep.shape[1:] != (levels, dataspaces):
            fail("keep", f"shape {keep.shape}", f"[batch, {levels} levels, {dataspaces} dataspaces]")
        if keep.dtype != bool:
            if not np.all((keep == 0) | (keep == 1)):
                fail("keep", "values other than 0/1", "booleans")
            keep = keep.astype(bool)
        batch = {a.shape[0] for a in out.values()} | {keep.shape[0]}
        if len(batch) != 1:
            fail("temporal", f"batch sizes {sorted(batch)} differ between fields", "one batch size")
        return MappingArrays(out["temporal"], out["spatial_x"], out["spatial_y"], out["perm"], keep,
                             out.get("spatial_perm"))

    def take(self, idx) -> "MappingArrays":
        sp = None if self.spatial_perm is None else self.spatial_perm[idx]
        return MappingArrays(self.temporal[idx], self.spatial_x[idx], self.spatial_y[idx],
                             self.perm[idx], self.keep[idx], sp)


def default_spatial_perm(m: MappingArrays) -> np.ndarray:
    """X dims then Y dims then the rest, each in dimension order (what `from_arrays` writes)."""
    D = m.temporal.shape[2]
    key = np.where(m.spatial_x > 1, 0, np.where(m.spatial_y > 1, 1, 2)) * D + np.arange(D)
    return np.argsort(key, axis=2, kind="stable").astype(np.int64)


def to_arrays(mappings: list[Mapping], arch: Architecture, problem: Problem) -> MappingArrays:
    """The batch arrays the model evaluates (`Context.evaluate`) of a list of Mappings."""
    B, L, D, S = len(mappings), len(arch.levels), len(problem.dims), len(problem.dataspaces)
    t = np.ones((B, L, D), np.int64)
    sx = np.ones((B, L, D), np.int64)
    sy = np.ones((B, L, D), np.int64)
    perm = np.tile(np.arange(D, dtype=np.int64), (B, L, 1))
    sperm = np.tile(np.arange(D, dtype=np.int64), (B, L, 1))
    keep = np.ones((B, L, S), bool)
    dim_idx = {d: i for i, d in enumerate(problem.dims)}
    ds_idx = {ds.name: i for i, ds in enumerate(problem.dataspaces)}
    names = set(arch.level_names())
    dims = set(problem.dims)
    for b, m in enumerate(mappings):
        alien = [n for n, lm in m.levels.items() if n not in names and lm != LevelMapping()]
        if alien:
            raise CoexploreError(f"the mapping has level(s) {', '.join(alien)} this architecture does not have",
                                 file=m.source, key="mapping", expected=f"levels of {sorted(names)}")
        wrong = sorted({d for lm in m.levels.values()
                        for d in (*lm.temporal, *lm.spatial, *lm.permutation, *lm.spatial_permutation)} - dims)
        if wrong:
            raise CoexploreError(f"the mapping uses dimension(s) {', '.join(wrong)} this problem does not have",
                                 file=m.source, key="mapping", expected=f"dimensions of {problem.dims}")
        wrong = sorted({d for lm in m.levels.values() for d in (*(lm.keep or ()), *(lm.bypass or ()))} - set(ds_idx))
        if wrong:
            raise CoexploreError(f"the mapping names dataspace(s) {', '.join(wrong)} this problem does not have",
                                 file=m.source, key="mapping", expected=f"dataspaces of {list(ds_idx)}")
        for li, lv in enumerate(reversed(arch.levels)):      # li: innermost = 0
            lm = m.levels.get(lv.name, LevelMapping())
            for d, n in lm.temporal.items():
                t[b, li, dim_idx[d]] = n
            order = [dim_idx[d] for d in lm.permutation]
            order += [i for i in range(D) if i not in order]
            perm[b, li] = order
            sp = [dim_idx[d] for d in lm.spatial_permutation]
            sp += [i for i in range(D) if i not in sp]
            split = lm.split if lm.split is not None else D
            sperm[b, li] = sp
            for d, n in lm.spatial.items():
                i = dim_idx[d]
                if sp.index(i) < split:
                    sx[b, li, i] = n
                else:
                    sy[b, li, i] = n
            # Timeloop's rule: a dataspace a datatype directive does not name stays unspecified,
            # which means keep; `bypass` is applied after `keep`, so it wins when both name one.
            # The dummy level a v0.4 container adds holds nothing (timeloopfe bypasses everything
            # there): only what the mapping keeps explicitly is kept
            keep[b, li] = not lv.from_container
            for ds in (lm.keep or []) if lv.from_container else []:
                keep[b, li, ds_idx[ds]] = True
            for ds in lm.bypass or []:
                keep[b, li, ds_idx[ds]] = False
    out = MappingArrays(t, sx, sy, perm, keep, sperm)
    with np.errstate(over="ignore"):
        huge = len(t) and np.prod(t.astype(np.float64) * sx * sy, axis=1).max() >= 2.0 ** 62
    # (factors whose int64 product may wrap: left to the model's float check, as arrays built by hand)
    return out if huge else out.well_formed()


def from_arrays(arrays: MappingArrays, index: int, arch: Architecture, problem: Problem) -> list[dict]:
    """The Timeloop mapping list (YAML-ready) of row `index` of a batch."""
    dims = problem.dims
    L = len(arch.levels)
    entries = []
    for li in range(L):
        name = arch.levels[L - 1 - li].name
        keep = [ds.name for s, ds in enumerate(problem.dataspaces) if arrays.keep[index, li, s]]
        bypass = [ds.name for s, ds in enumerate(problem.dataspaces) if not arrays.keep[index, li, s]]
        entries.append({"target": name, "type": "datatype", "keep": keep, "bypass": bypass})
    sep = "" if all(len(d) == 1 for d in dims) else " "   # multi-letter dimensions: space-separated
    for li in range(L):
        name = arch.levels[L - 1 - li].name
        perm = [dims[int(i)] for i in arrays.perm[index, li]]
        factors = " ".join(f"{d}{int(arrays.temporal[index, li, i])}" for i, d in enumerate(dims))
        entries.append({"target": name, "type": "temporal", "factors": factors, "permutation": sep.join(perm)})
        sxv, syv = arrays.spatial_x[index, li], arrays.spatial_y[index, li]
        if ((sxv > 1) & (syv > 1)).any():
            d = dims[int(np.nonzero((sxv > 1) & (syv > 1))[0][0])]
            raise CoexploreError(f"dimension {d} is split over both X and Y at level {name}, which a "
                                 "Timeloop mapping cannot express", key="mapping",
                                 expected="one spatial factor per dimension and level")
        fx, fy = arch.fanout(L - 1 - li)
        if fx * fy == 1 and ((sxv > 1) | (syv > 1)).any():
            d = dims[int(np.nonzero((sxv > 1) | (syv > 1))[0][0])]
            raise CoexploreError(f"dimension {d} has a spatial factor at level {name}, which has no fan-out: no "
                                 "Timeloop mapping can express it", key="mapping",
                                 expected="spatial factors only at levels with a fan-out")
        if fx * fy > 1:    # every fan-out gets its directive, all 1 when unused (v0.3's parser asks for one)
            if arrays.spatial_perm is not None:
                order = [dims[int(i)] for i in arrays.spatial_perm[index, li]]
            else:
                order = list(dims)
            xs = [d for d in order if sxv[dims.index(d)] > 1]
            ys = [d for d in order if syv[dims.index(d)] > 1]
            rest = [d for d in order if d not in xs and d not in ys]
            fac = " ".join(f"{d}{int(max(sxv[i], syv[i]))}" for i, d in enumerate(dims))
            entries.append({"target": name, "type": "spatial", "factors": fac,
                            "permutation": sep.join(xs + ys + rest), "split": len(xs)})
    return entries


def save_mapping(path: str | Path, arrays: MappingArrays, index: int, arch: Architecture, problem: Problem,
                 header: str | None = None) -> Path:
    """Write mapping `index` of a batch as a Timeloop mapping YAML (what `coexplore map` writes;
    `load_mapping`, `coexplore evaluate` and timeloop-model read it back)."""
    path = Path(path)
    arrays = arrays.checked(len(arch.levels), len(problem.dims), len(problem.dataspaces))
    n = arrays.temporal.shape[0]
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)) or not -n <= index < n:
        raise CoexploreError(f"mapping {index!r} of a batch of {n}", key="index",
                             expected=f"an index in [-{n}, {n}) (negative counts from the end)")
    write_yaml(path, {"mapping": from_arrays(arrays, index, arch, problem)}, header=header)
    return path
