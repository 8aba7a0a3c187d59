"""Timeloop mapspace constraints, per level: factor bounds, permutation prefixes, split, keep/bypass.

Read from the flattened `architecture_constraints` / `mapspace_constraints` `targets:` list (v0.3,
`constraints.yaml`) or from the `constraints:` of v0.4 nodes (a container's spatial constraints
apply to its `inter_<container>_spatial` level, as timeloopfe flattens them).
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from coexplore.errors import CoexploreError, CoexploreWarning, did_you_mean, shortened
from coexplore.spec.architecture import Architecture
from coexplore.spec.problem import MAX_OPERATIONS, int_text
from coexplore.spec.yamlio import load_yaml

# Timeloop's factor syntax (constraints.cpp): `C=1`, `M<=4`, `P>=2`, also `R3` (the '=' is optional);
# names are letters, and text around the entries (commas, stray characters) is skipped, as
# Timeloop's regex search does
# Timeloop's factor pattern `([A-Za-z]+)\s*=*\s*([0-9]+)` (K==4, K 4 and K4 are K=4), plus <= and >=
_FACTOR = re.compile(r"(?<![A-Za-z])([A-Za-z]++)\s*(<=|>=|=+)\s*(\d+)|(?<![A-Za-z])([A-Za-z]++)\s*(\d+)")
# directive types with a network/reuse meaning coexplore's mapspace does not model: accepted and
# reported as not applied (like max_overbooked_proportion, a sparse-tile setting)
NOT_APPLIED_TYPES = ("max_overbooked_proportion", "no_multicast", "no_reduction", "no_multicast_no_reduction",
                     "no_link_transfer", "no_temporal_reuse")
# the kinds of directive, as `LevelConstraints.origin` files them
_KIND = {"bypass": "dataspace", "bypassing": "dataspace", "datatype": "dataspace", "parallelism": "utilization"}
TYPES = ("temporal", "spatial", "bypass", "bypassing", "datatype", "dataspace", "utilization", "parallelism",
         *NOT_APPLIED_TYPES)


@dataclass
class LevelConstraints:
    temporal_factors: dict[str, tuple[str, int]] = field(default_factory=dict)   # dim -> ("=", n); 0 = whole
    temporal_permutation: list[str] = field(default_factory=list)               # innermost-first prefix
    spatial_factors: dict[str, tuple[str, int]] = field(default_factory=dict)
    spatial_permutation: list[str] = field(default_factory=list)
    split: int | None = None
    keep: set[str] | None = None
    bypass: set[str] | None = None
    # keep_only: the dataspaces not in `keep` are bypassed (timeloopfe's `keep_only` macro);
    # otherwise, as in Timeloop's constraints files and timeloopfe outside a !Parallel, a
    # dataspace named in neither list is left to the mapper
    keep_only: bool = False
    bypass_only: bool = False                 # timeloopfe's `bypass_only`: the dataspaces not bypassed are kept
    bypass_except: set[str] | None = None     # every other dataspace is bypassed (a v0.4 !Parallel branch)
    # factors_only (timeloopfe): the dimensions not listed get factor 1 at this level
    temporal_factors_only: bool = False
    spatial_factors_only: bool = False
    # factor bounds `X<=n` / `X>=n` (Timeloop's max factors; min factors as timeloopfe writes them)
    temporal_max: dict[str, int] = field(default_factory=dict)
    temporal_min: dict[str, int] = field(default_factory=dict)
    spatial_max: dict[str, int] = field(default_factory=dict)
    spatial_min: dict[str, int] = field(default_factory=dict)
    # `type: utilization` / `parallelism` (innermost storage level): least fraction of the compute
    # units a mapping must use, as timeloop-mapper's min parallelism
    min_parallelism: float | None = None
    ignored: list[str] = field(default_factory=list)   # keys read but not applied (e.g. no_reuse)
    # timeloopfe's maximize_dims macro, per kind: (lists of dimensions, capacity or None), turned
    # into fixed factors once the layer is known (`expand_macros`)
    maximize: dict = field(default_factory=dict)
    # timeloopfe's no_iteration_over_dataspaces / must_iterate_over_dataspaces, per kind: factors
    # of 1 for the dimensions of the listed dataspaces / for the others, once the layer is known
    iteration_rules: dict = field(default_factory=dict)
    maximized: set = field(default_factory=set)    # (kind, dimension) factors maximize_dims chose
    source: str | None = field(default=None, compare=False)   # the file they were read from
    # where each entry was given, (file, key), when several files constrain the level (extra
    # constraints on a v0.4 architecture's own, several --constraints files): by kind ("temporal",
    # "spatial", "dataspace", "utilization": the last such directive), ("factors", kind, dim),
    # ("permutation", kind) and ("dataspace", name); errors name the file and key of the entry
    origin: dict = field(default_factory=dict, compare=False)
    # where the min parallelism was given (file, key), when several files constrain the level
    min_parallelism_from: tuple | None = field(default=None, compare=False)

    def file_of(self, kind: str, dim: str | None = None) -> str | None:
        """The file that gave this level's `kind` factor of `dim` (or its last `kind` directive)."""
        return self.origin.get(("factors", kind, dim), self.origin.get(kind, (self.source,)))[0]

    def factor_where(self, kind: str, dim: str | None, level: str) -> dict:
        """file= and key= for an error about the `kind` factor of `dim` at `level`: the entry that gave
        it (`mapspace_constraints.targets[0].factors`), else the level's `kind` factors."""
        return dict(zip(("file", "key"), self.origin.get(("factors", kind, dim),
                                                         (self.file_of(kind, dim), f"{level}.{kind}.factors"))))

    def where(self, entry: tuple, key: str) -> dict:
        """file= and key= for an error about one entry (`origin`), else this level's file and `key`."""
        file, k = self.origin.get(entry, (self.source, key))
        return {"file": file, "key": k}


def check_dataspace_names(c: "LevelConstraints", level: str, problem) -> None:
    """Refuse keep/bypass constraints naming a dataspace the problem lacks: Timeloop looks each name
    up in the problem's dataspaces and stops on an unknown one (a typo would otherwise say nothing)."""
    names = [ds.name for ds in problem.dataspaces]
    bad = sorted((c.keep or set()) - set(names)) + sorted((c.bypass or set()) - set(names))
    if bad:
        raise CoexploreError(f"keep/bypass of unknown dataspace(s) {', '.join(bad)} at {level}",
                             **c.where(("dataspace", bad[0]), f"constraints of {level}"),
                             expected=f"dataspaces of {problem.name}: {names}")


def misplaced_parallelism(level: str, innermost: str | None, file, key: str) -> CoexploreError:
    """Timeloop applies min parallelism (`type: utilization` / `parallelism`) only at the
    innermost storage level."""
    return CoexploreError(f"parallelism cannot be constrained at {level}: it must be constrained at the "
                          f"innermost storage level ({innermost})", file=file, key=key,
                          expected=f"type: utilization on {innermost}")


def _factors(value, *, file, key) -> dict[str, dict[str, int]]:
    """{'=': {dim: n}, '<=': {...}, '>=': {...}} from a factor string or list."""
    out: dict[str, dict[str, int]] = {"=": {}, "<=": {}, ">=": {}}
    if value is None:
        return out
    text = " ".join(str(v) for v in value) if isinstance(value, list) else str(value)
    found = False
    said = set()
    for m in _FACTOR.finditer(text):
        found = True
        dim, op, n = (m.group(4), "=", m.group(5)) if m.group(4) else (m.group(1), m.group(2), m.group(3))
        op = "=" if set(op) == {"="} else op
        if (op, dim) in said:
            what = {"=": "factor", "<=": "max factor", ">=": "min factor"}[op]
            warnings.warn(f"{file or 'constraints'}: {key}: the {what} of {dim} is given twice in {text!r}: the last, "
                          f"{dim}{op}{n}, counts (as Timeloop reads it)", CoexploreWarning, stacklevel=4)
        said.add((op, dim))
        if int(n) > MAX_OPERATIONS:     # no bound is larger; nor would it fit the mapspace's int64 arrays
            raise CoexploreError(f"factor {dim}{op}{n} is too large", file=file, key=key,
                                 expected=f"at most 2^53 = {MAX_OPERATIONS} (a layer's bounds are no larger)")
        out[op][dim] = int(n)
    if text.strip() and not found:
        raise CoexploreError(f"cannot read factor constraint {shortened(text)!r}", file=file, key=key,
                             expected="entries like 'C=1', 'M<=4' or 'P>=2'")
    unread = [t for t in _FACTOR.sub(" ", text).split() if any(ch.isalnum() for ch in t)]
    if unread:                   # ('M=2.5': Timeloop reads M=2 and skips '.5'; a stray '#' says nothing)
        warnings.warn(f"{file or 'constraints'}: {key}: {shortened(' '.join(unread))!r} in {shortened(text)!r} is not "
                      "read (Timeloop skips it too)", CoexploreWarning, stacklevel=4)
    for dim, n in out["<="].items():
        if n <= 0:       # Timeloop: "max factor must be positive"
            raise CoexploreError(f"max factor {dim}<={n} must be positive", file=file, key=key,
                                 expected="X<=n with n >= 1")
    return out


def _perm(value) -> list[str]:
    """A permutation as written: a list, a string of one-letter dimensions (Timeloop reads it
    letter by letter, skipping spaces), or space-separated names; `resolve_permutation` settles
    which against the layer's dimensions."""
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    s = str(value).strip()
    if "," in s:                     # timeloopfe's Permutation splits "P, R, C" at its commas
        return [t.strip() for t in s.split(",") if t.strip()]
    return s.split() if " " in s else list(s)


def resolve_permutation(perm: list[str], dims: list[str]) -> list[str]:
    """Names of `dims` from a parsed permutation: as given when every entry is a dimension, else
    letter by letter (Timeloop's reading of 'QRSC PNM'); unknown names are left for the caller."""
    if all(p in dims for p in perm):
        return list(perm)
    letters = [ch for p in perm for ch in p if not ch.isspace()]
    return letters if all(ch in dims for ch in letters) else list(perm)


# keys of a constraint that the mapspace applies, per kind (others are recorded in `ignored`)
_MACROS = {"maximize_dims", "maximize_dims_capacity", "no_iteration_over_dataspaces", "must_iterate_over_dataspaces"}
_APPLIED = {"temporal": {"factors", "factors_only", "permutation", *_MACROS},
            "spatial": {"factors", "factors_only", "permutation", "split", *_MACROS},
            "bypass": {"keep", "bypass", "keep_only", "bypass_only"},
            "utilization": {"min"}, "parallelism": {"min"}, **{t: set() for t in NOT_APPLIED_TYPES}}
_APPLIED["dataspace"] = _APPLIED["datatype"] = _APPLIED["bypassing"] = _APPLIED["bypass"]


def _resembling(key: str, known) -> str:
    """' (did you mean 'factors'?)' for a key one letter or so from one the mapspace applies."""
    return did_you_mean(key, sorted(known), cutoff=0.8)


def _respecified(what: str, level: str, file, key):
    return CoexploreError(f"re-specification of {what} at level {level}: this may imply a conflict between "
                          "architecture and mapspace constraints (timeloop-mapper refuses it too)",
                          file=file, key=key, expected="each constraint given once per level")


def _apply(c: LevelConstraints, kind: str, body: dict, file, key, level: str = "?", last: bool = False,
           same_ok: bool = False, problem=None, macros: bool = False) -> None:
    """Add one directive to a level's constraints; one that says again what is already there is
    refused, unless `same_ok` (extra constraints on a v0.4 architecture's own) and it says the
    same: the same values, a permutation that differs only by unit loops listed first (the
    completion timeloopfe writes; `problem` tells which loops are 1)."""
    if kind not in TYPES:
        raise CoexploreError(f"unrecognized constraint type '{kind}'", file=file, key=f"{key}.type",
                             expected=" | ".join(TYPES))
    applied = _APPLIED[kind] if macros else _APPLIED[kind] - _MACROS    # (timeloopfe's, not Timeloop's)
    if file is not None:
        c.origin[_KIND.get(kind, kind)] = (str(file), key)
    where = f" in {Path(str(file)).name}" if file else ""      # (several constraints files are combined)
    c.ignored += [f"{key}.{k}" + _resembling(str(k), applied) + where for k in body
                  if k not in applied | {"target", "type", "name"}]
    for rule in ("no_iteration_over_dataspaces", "must_iterate_over_dataspaces") if macros else ():
        if kind in ("temporal", "spatial") and body.get(rule) is not None:
            names = body[rule]
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise CoexploreError(f"got {names!r}", file=file, key=f"{key}.{rule}", expected="a list of dataspace names")
            c.iteration_rules.setdefault(kind, []).append((rule, list(names), file, f"{key}.{rule}"))
    if macros and kind in ("temporal", "spatial") and body.get("maximize_dims"):
        c.maximize[kind] = (_dimension_lists(body["maximize_dims"], file, f"{key}.maximize_dims"),
                            body.get("maximize_dims_capacity"), file, key)
    if kind in ("temporal", "spatial"):
        factors = _factors(body.get("factors"), file=file, key=f"{key}.factors")
        if body.get("factors_only") is not None:
            only = _factors(body["factors_only"], file=file, key=f"{key}.factors_only")
            for op in factors:
                factors[op].update(only[op])
            setattr(c, f"{kind}_factors_only", True)
        for op, attr in (("=", f"{kind}_factors"), ("<=", f"{kind}_max"), (">=", f"{kind}_min")):
            have = getattr(c, attr)
            for dim, n in factors[op].items():
                if dim in have and same_ok and have[dim] == (("=", n) if op == "=" else n):
                    continue
                if dim in have:
                    raise _respecified(f"{'max ' if op == '<=' else 'min ' if op == '>=' else ''}factor for "
                                       f"dimension {dim}", level, file, f"{key}.factors")
                have[dim] = ("=", n) if op == "=" else n
                c.origin[("factors", kind, dim)] = (None if file is None else str(file), f"{key}.factors")
        if body.get("permutation") is not None:
            perm = _perm(body["permutation"])
            if perm:
                have = getattr(c, f"{kind}_permutation")
                if have and same_ok and _same_order(have, perm, c, kind, problem):
                    perm = max(have, perm, key=len)           # the completed one (unit loops first)
                elif have:
                    raise _respecified(f"{kind} permutation", level, file, f"{key}.permutation")
                setattr(c, f"{kind}_permutation", perm)
                c.origin[("permutation", kind)] = (None if file is None else str(file), f"{key}.permutation")
    if kind == "spatial" and body.get("split") is not None:
        split = int_text(body["split"])
        if isinstance(split, bool) or not isinstance(split, int) or split < 0:
            raise CoexploreError(f"got {split!r}", file=file, key=f"{key}.split",
                                 expected="a non-negative integer" + (" (v0.4 expressions are not evaluated)"
                                                                      if isinstance(split, str) else ""))
        if c.split is not None and not (same_ok and c.split == split):
            raise _respecified("spatial split", level, file, f"{key}.split")
        c.split = split
    elif kind in ("bypass", "bypassing", "dataspace", "datatype"):
        for k in ("keep", "keep_only", "bypass", "bypass_only"):
            v = body.get(k)
            if v is not None and (isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple, set))
                                  or not all(isinstance(name, str) for name in v)):
                raise CoexploreError(f"got {v!r:.80}", file=file, key=f"{key}.{k}", expected="a list of dataspace names")
        said = (c.keep or set()) | (c.bypass or set())
        for k in ("keep", "keep_only", "bypass", "bypass_only"):
            again = set(body.get(k) or []) & said
            if same_ok:                          # only a flag set the other way is said again
                again &= (c.keep or set()) if k.startswith("bypass") else (c.bypass or set())
            if again and not last:
                raise _respecified(f"dataspace {k.split('_')[0]} flag ({', '.join(sorted(again))})", level,
                                   file, f"{key}.{k}")
            said |= set(body.get(k) or [])
            for name in body.get(k) or []:
                c.origin[("dataspace", name)] = (None if file is None else str(file), f"{key}.{k}")
        if body.get("keep") is not None:
            c.keep = (c.keep or set()) | set(body["keep"])
        if body.get("keep_only") is not None:
            c.keep = (c.keep or set()) | set(body["keep_only"])
            c.keep_only = True
        if body.get("bypass") is not None:
            c.bypass = (c.bypass or set()) | set(body["bypass"])
        if body.get("bypass_only") is not None:
            c.bypass = (c.bypass or set()) | set(body["bypass_only"])
            c.bypass_only = True
    elif kind in ("utilization", "parallelism"):
        v = body.get("min")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise CoexploreError("missing" if v is None else f"got {v!r}", file=file, key=f"{key}.min",
                                 expected="a number in [0, 1] (Timeloop asserts a min)")
        if c.min_parallelism is not None and not (same_ok and c.min_parallelism == float(v)):
            raise _respecified("min parallelism/utilization", level, file, key)
        c.min_parallelism = float(v)
        c.min_parallelism_from = (None if file is None else str(file), key)
    elif kind in NOT_APPLIED_TYPES:
        c.ignored.append(f"{key} (type {kind}: not modelled by the mapspace)" + (f" in {Path(str(file)).name}" if file else ""))


def _same_order(a: list, b: list, c: LevelConstraints, kind: str, problem=None) -> bool:
    """Two permutations of one level are the same loop order: the longer is the shorter with
    loops of factor 1 there (fixed to 1, or of bound 1 in the layer) listed first."""
    if problem is not None:                       # 'CM RSPQN' is read letter by letter, as Timeloop does
        a, b = resolve_permutation(a, problem.dims), resolve_permutation(b, problem.dims)
    short, long = sorted((a, b), key=len)
    if long[len(long) - len(short):] != short:
        return False
    return all(_is_unit(c, kind, d, problem) for d in long[:len(long) - len(short)])


def _directives(targets: list, file) -> list[tuple[str, dict, str]]:
    """(level name, directive, key) for every directive, in the layouts Timeloop reads: flat
    entries with `target` (or `name`) and `type`, or a target with a `constraints:` list; a
    directive's fields may sit under `attributes:`."""
    out = []
    if targets is not None and not isinstance(targets, list):
        raise CoexploreError(f"got {targets!r}", file=file, key="targets",
                             expected="a list of constraints {target, type, factors|permutation|keep|bypass}")
    keys = getattr(targets, "keys", None)
    for i, t in enumerate(targets or []):
        key = keys[i] if keys and len(keys) == len(targets) else f"targets[{i}]"
        if not isinstance(t, dict) or ("target" not in t and "name" not in t):
            raise CoexploreError("missing target", file=file, key=key, expected="a mapping with target and type")
        level = t.get("target", t.get("name"))
        if isinstance(level, (dict, list)):
            raise CoexploreError(f"got {level!r}", file=file, key=f"{key}.target", expected="a level name")
        inner = t.get("constraints")
        items = [(c, f"{key}.constraints[{j}]") for j, c in enumerate(inner)] if isinstance(inner, list) else [(t, key)]
        for c, k in items:
            if not isinstance(c, dict):
                raise CoexploreError("not a mapping", file=file, key=k, expected="a constraint with a type")
            body = {**c, **c["attributes"]} if isinstance(c.get("attributes"), dict) else c
            out.append((str(level), {kk: v for kk, v in body.items() if kk != "attributes"}, k))
    return out


def constraints_from_targets(targets: list, arch: Architecture, file=None,
                             base: dict[str, LevelConstraints] | None = None,
                             problem=None) -> dict[str, LevelConstraints]:
    """Per-level constraints from Timeloop constraint directives. `targets` may be a list of
    (directives, file) pairs (several files combined, as timeloop-mapper combines its inputs);
    `base`: constraints they add to (a v0.4 architecture's own node constraints, not yet
    completed; a target may then name a container, as timeloopfe's extra constraints do)."""
    out = base if base is not None else \
        {lv.name: LevelConstraints(source=None if file is None else str(file)) for lv in arch.levels}
    groups = targets if targets and isinstance(targets[0], tuple) else [(targets, file)]
    last = arch.levels[0].name if arch.levels else None
    for body, f in groups:
        for level, t, key in _directives(body, f):
            if level not in out and base is not None and f"inter_{level}_spatial" in out:
                level = f"inter_{level}_spatial"       # a v0.4 container, as timeloopfe names its level
            if level not in out and base is not None and level in arch.meshless:
                continue                               # a container of fan-out 1: no level (timeloopfe)
            if level not in out:
                if level == arch.compute.name and t.get("type") not in ("utilization", "parallelism"):
                    warnings.warn(f"{f or 'constraints'}: {key}: target '{level}' is the compute level, which holds "
                                  f"no tile: this {t.get('type', 'untyped')} constraint constrains nothing and is "
                                  "not applied", CoexploreWarning, stacklevel=2)
                    continue                       # nothing of the compute level is mapped
                if level == arch.compute.name:
                    innermost = next((x.name for x in reversed(arch.levels) if not x.is_dummy), None)
                    raise misplaced_parallelism(level, innermost, f, f"{key}.target")
                src = (f" (the levels of {arch.source}: renamed there?)" if arch.source and str(f) != str(arch.source)
                       else "")
                raise CoexploreError(f"unknown level '{level}'", file=f, key=f"{key}.target",
                                     expected=f"one of {list(out)}{src}")
            if f is not None and out[level].source is None:
                out[level].source = str(f)
            if "type" not in t:                    # Timeloop asserts a type
                raise CoexploreError("a constraint without a type", file=f, key=key,
                                     expected="type: " + " | ".join(TYPES))
            if t["type"] == "spatial":
                _check_fans_out(arch, level, f, key)
            _apply(out[level], t["type"], t, f, key, level, last=level == last, same_ok=base is not None,
                   problem=problem, macros=base is not None)
    return out


def _check_fans_out(arch: Architecture, level: str, file, key: str) -> None:
    """A spatial constraint at a level without a fan-out below it: Timeloop's FindTargetTilingLevel
    stops there (there is no spatial tiling level to constrain)."""
    li = [lv.name for lv in arch.levels].index(level)
    if arch.levels[li].from_container or arch.levels[li].is_dummy:
        return          # (a container's level: timeloopfe writes its constraints whatever its mesh, as 1 x 1)
    if (said := arch.no_spatial_level(li)) is not None:
        raise CoexploreError(said, file=file, key=f"{key}.target",
                             expected="a spatial constraint only at a level that fans out (timeloop-mapper stops otherwise)")


def branch_bypasses(out: dict[str, LevelConstraints], arch: Architecture) -> None:
    """What each level in a v0.4 !Parallel branch bypasses, as timeloopfe's Dataspace2BranchProcessor
    decides it once the nodes' constraints (extra ones included) and macros are in place: every
    dataspace the branch does not keep (with a bypass_only there, the branch keeps all but what each
    such list names)."""
    for bid, (written, all_but) in arch.branches.items():
        members = [out[lv.name] for lv in arch.levels if bid in lv.branches and lv.name in out]
        keeps, lists = set(written), list(all_but)
        for c in members:
            if c.bypass_only:
                lists.append(set(c.bypass or ()))
            else:
                keeps |= c.keep or set()
        for c in members:
            if lists:
                c.bypass = (c.bypass or set()) | (set.intersection(*lists) - keeps - (c.keep or set()))
            else:
                c.bypass_except = set(keeps) if c.bypass_except is None else c.bypass_except & keeps


def constraints_from_nodes(arch: Architecture, problem=None, branches: bool = True) -> dict[str, LevelConstraints]:
    """Constraints from the v0.4 nodes. With the layer (`problem`), each permutation is completed as
    timeloopfe flattens it for Timeloop: the dimensions it does not list but that are 1 at that
    level (fixed to 1 there, or of bound 1 in the layer) go first, so a spatial `split` counts them
    (`permutation: [C, M], split: 1` puts C and M on Y when N, P, Q, R, S are 1)."""
    out = {}
    for lv in arch.levels:
        c = LevelConstraints(source=arch.source)
        raw = lv.constraints or {}
        for kind in ("temporal", "spatial", "dataspace", "utilization"):
            if isinstance(raw.get(kind), dict):
                if lv.is_dummy and kind != "spatial":
                    continue
                _apply(c, kind, raw[kind], arch.source, f"{lv.name}.constraints.{kind}", lv.name, macros=True)
        if raw.get("max_overbooked_proportion") is not None:
            c.ignored.append(f"{lv.name}.constraints.max_overbooked_proportion (sparse: not modelled)")
        if lv.is_dummy:
            # dummy spatial levels carry no temporal loops and keep nothing
            c.temporal_factors = {}
            c.keep, c.bypass, c.keep_only = set(), None, True
        out[lv.name] = c
    if branches:           # (not yet when extra constraints are to be added: `load_constraints`)
        branch_bypasses(out, arch)
    if problem is not None:
        expand_macros(out, arch, problem)
        for c in out.values():
            _complete_permutations(c, problem)
    return out


def _dimension_lists(value, file, key) -> list[list[str]]:
    """maximize_dims: a list of dimension names, or a list of such lists (timeloopfe's two forms)."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return [list(value)]
    if isinstance(value, list) and all(isinstance(v, list) and all(isinstance(d, str) for d in v) for v in value):
        return [list(v) for v in value]
    raise CoexploreError(f"got {value!r}", file=file, key=key,
                         expected="a list of dimensions, or a list of lists of them ([[M, C], [P]])")


def _greedy_allocation(sizes: tuple[tuple[str, int], ...], capacity: int, memo: dict) -> tuple[list, float]:
    """timeloopfe's greedy_allocate: how to spread dimensions of these (remaining) sizes over
    `capacity` units for the highest utilization. Each dimension in turn, first an uneven split
    (when it is larger than the capacity), then each of its distinct primes with the rest of
    the capacity; a later candidate replaces the best only when strictly better. Returns
    ([(dim, low, high), ...], utilization); memoized (the search is exponential otherwise)."""
    if capacity <= 1:
        return [], 1
    if (sizes, capacity) in memo:
        return memo[(sizes, capacity)]
    best, best_util = [], 1
    for i, (dim, v) in enumerate(sizes):
        if v > capacity:
            parts = -(-v // capacity)
            alloc = -(-v // parts)
            util = (alloc * (parts - 1) + v % alloc) / parts
            if util > best_util:
                best, best_util = [(dim, v % alloc, alloc)], util
        for p in set(_primes(v)):          # (in a set's order, as timeloopfe iterates them: ties go alike)
            if p > capacity:
                continue
            rest = sizes[:i] + ((dim, v // p),) + sizes[i + 1:]
            alloc, util = _greedy_allocation(rest, capacity // p, memo)
            if util * p > best_util:
                best, best_util = [(dim, p, p)] + alloc, util * p
    memo[(sizes, capacity)] = (best, best_util)
    return best, best_util


def _primes(n: int) -> list[int]:
    out, p = [], 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out + ([n] if n > 1 else [])


def _iteration_rules(out: dict[str, LevelConstraints], problem) -> None:
    """no_iteration_over_dataspaces: [Weights] fixes the dimensions Weights' projection uses to 1;
    must_iterate_over_dataspaces: [Weights] fixes every other dimension to 1 (timeloopfe's macros)."""
    spaces = {ds.name: {problem.dims[i] for rank in ds.ranks for i, _ in rank} for ds in problem.dataspaces}
    for name, c in out.items():
        for kind, rules in c.iteration_rules.items():
            fixed = getattr(c, f"{kind}_factors")
            for rule, names, file, key in rules:
                unknown = [n for n in names if n not in spaces and n != "*"]
                if unknown:
                    raise CoexploreError(f"unknown dataspace '{unknown[0]}'", file=file, key=key,
                                         expected=f"one of {sorted(spaces)}")
                used = set().union(*(spaces.values() if "*" in names else (spaces[n] for n in names)))
                ones = used if rule.startswith("no_") else set(problem.dims) - used
                for d in sorted(ones, key=problem.dims.index):
                    if fixed.get(d, ("=", 1)) != ("=", 1):
                        raise _respecified(f"factor for {d} ({rule})", name, file, key)
                    fixed[d] = ("=", 1)


def expand_macros(out: dict[str, LevelConstraints], arch: Architecture, problem) -> None:
    """timeloopfe's iteration macros made fixed factors, as its ConstraintMacroProcessor does: first
    `no_iteration_over_dataspaces` / `must_iterate_over_dataspaces`, then `maximize_dims`:
    levels innermost first, every spatial constraint before every temporal one; each list of
    dimensions gets the greedy allocation of what the fixed factors elsewhere leave of them within
    the capacity (a spatial level's fan-out, else `maximize_dims_capacity`) over the level's own
    fixed factors; every dimension of the list is fixed (1 where none went)."""
    _iteration_rules(out, problem)
    if not any(c.maximize for c in out.values()):
        return
    bounds = dict(zip(problem.dims, problem.bounds))
    left = dict(bounds)
    for c in out.values():                 # (a factor 0 is the whole dimension, as timeloopfe reads it)
        for kind in ("temporal", "spatial"):
            for d, (op, n) in getattr(c, f"{kind}_factors").items():
                if op == "=" and d in left:
                    left[d] = -(-left[d] // (n or bounds[d]))
    index = {lv.name: i for i, lv in enumerate(arch.levels)}
    order = [lv.name for lv in reversed(arch.levels) if lv.name in out]
    for kind in ("spatial", "temporal"):
        for name in order:
            c = out[name]
            if kind not in c.maximize:
                continue
            lists, capacity, file, key = c.maximize[kind]
            if capacity is None:
                if kind == "temporal":
                    raise CoexploreError("maximize_dims without maximize_dims_capacity", file=file,
                                         key=f"{key}.maximize_dims_capacity",
                                         expected="the number of loop iterations to fill (timeloopfe asks for it)")
                x, y = arch.fanout(index[name])
                capacity = x * y
            if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
                raise CoexploreError(f"got {capacity!r}", file=file, key=f"{key}.maximize_dims_capacity",
                                     expected="a positive integer")
            fixed = getattr(c, f"{kind}_factors")
            start = capacity
            for dims in lists:
                capacity = start
                for d, (op, n) in fixed.items():
                    if op == "=":
                        capacity //= n or bounds.get(d, 1)
                for d, n in getattr(c, f"{kind}_min").items():
                    capacity //= n or bounds.get(d, 1)
                for d in dims:
                    if d not in bounds:
                        raise CoexploreError(f"cannot maximize '{d}': not a dimension of the layer", file=file,
                                             key=f"{key}.maximize_dims", expected=f"one of {problem.dims}")
                    only = getattr(c, f"{kind}_factors_only")
                    bounded = d in getattr(c, f"{kind}_max") or d in getattr(c, f"{kind}_min")
                    if d in fixed or bounded or only:
                        raise CoexploreError(f"cannot maximize '{d}': it already has a factor at {name}", file=file,
                                             key=f"{key}.maximize_dims", expected="dimensions without factors here")
                alloc, _ = _greedy_allocation(tuple((d, left[d]) for d in dims), capacity, {})
                chosen = {d: 1 for d in dims}
                for d, _, high in alloc:
                    chosen[d] *= high
                for d, n in chosen.items():
                    fixed[d] = ("=", n)
                    c.maximized.add((kind, d))
                    left[d] = -(-left[d] // n)


def _is_unit(c: LevelConstraints, kind: str, d: str, problem=None) -> bool:
    """Dimension d counts as a loop of factor 1 at this level, as timeloopfe's completion counts
    them: a factor constraint of value 1 whatever its operator (`Q=1`, `Q<=1`, also `Q>=1`), bound 1
    in the layer, or left out of `factors_only` without a bound (as the mapspace reads them)."""
    fixed, only = getattr(c, f"{kind}_factors"), getattr(c, f"{kind}_factors_only")
    hi, lo = getattr(c, f"{kind}_max"), getattr(c, f"{kind}_min")
    bound = dict(zip(problem.dims, problem.bounds)) if problem is not None else {}
    return (fixed.get(d) == ("=", 1) or hi.get(d) == 1 or lo.get(d) == 1 or bound.get(d) == 1
            or (only and d not in fixed and d not in hi and d not in lo))


def _complete_permutations(c: LevelConstraints, problem) -> None:
    """A level's temporal and spatial permutations with the layer's loops of factor 1 listed
    first, as timeloopfe writes them for Timeloop (a split counts those positions)."""
    for kind in ("temporal", "spatial"):
        perm = resolve_permutation(getattr(c, f"{kind}_permutation") or [], problem.dims)
        if perm:
            units = [d for d in problem.dims if d not in perm and _is_unit(c, kind, d, problem)]
            setattr(c, f"{kind}_permutation", units + list(perm))


class Directives(list):
    """Constraint directives gathered from a document, each with the key it sits at in its file
    (`mapspace_constraints.targets[2]`), so that a message names it where the user wrote it."""

    def __init__(self, items=(), keys=()):
        super().__init__(items)
        self.keys = list(keys)

    def add(self, items: list, where: str) -> None:
        self.keys += [f"{where}[{i}]" for i in range(len(items))]
        self.extend(items)


def constraint_blocks(data: dict, file=None) -> list[str]:
    """The keys of a Timeloop input document whose constraints timeloop-mapper reads (mapper.cpp):
    one architecture block, `arch_constraints` if the key is there, else `architecture_constraints`,
    and one mapspace block, `mapspace` if the key is there, else `mapspace_constraints` (else the
    older top-level `constraints`). A block of constraints the other name hides is said (warned)."""
    read = []
    for names in (("arch_constraints", "architecture_constraints"), ("mapspace", "mapspace_constraints", "constraints")):
        present = [k for k in names if k in data]
        if not present:
            continue
        read.append(present[0])
        for hidden in present[1:]:
            v = data[hidden]
            if v and (isinstance(v, list) or (isinstance(v, dict) and v.get("targets"))):
                warnings.warn(f"{file or 'the constraints'}: {hidden} is not read: timeloop-mapper reads "
                              f"{present[0]} instead (one block of each kind); put them together", CoexploreWarning,
                              stacklevel=3)
    return read


def constraint_targets(data, file=None) -> list | None:
    """The constraint directives of a Timeloop input document, of the blocks timeloop-mapper reads
    (`constraint_blocks`: an architecture block and a mapspace block, combined), each a `targets:`
    list or a bare list; or a top-level `targets` list; None when the document has none."""
    if not isinstance(data, dict):
        return None
    found = False
    body = Directives()
    for k in constraint_blocks(data, file):
        v = data.get(k)
        where = k
        if isinstance(v, dict) and "targets" in v:
            v, where = v["targets"], f"{k}.targets"
        elif not isinstance(v, list):
            continue
        if v is not None and not isinstance(v, list):
            raise CoexploreError(f"got {v!r:.80}", file=file, key=where,
                                 expected="a list of constraints {target, type, factors|permutation|keep|bypass}")
        found = True
        body.add(list(v or []), where)
    if not found and "targets" in data:
        if data["targets"] is not None and not isinstance(data["targets"], list):
            raise CoexploreError(f"got {data['targets']!r:.80}", file=file, key="targets",
                                 expected="a list of constraints {target, type, factors|permutation|keep|bypass}")
        body.add(list(data["targets"] or []), "targets")
        return body
    return body if found else None


_BLOCKS = ("arch_constraints", "architecture_constraints", "mapspace", "mapspace_constraints", "constraints", "targets")


def empty_constraints_file(data, path) -> bool:
    """A constraints file with no directives (`constraint_targets` found none): True, with a warning,
    when it says nothing (empty, comments only, or blocks left empty, which timeloop-mapper reads as
    no constraints); any other content is refused, naming what was found."""
    if data is None or (isinstance(data, dict) and data and all(k in _BLOCKS and not v for k, v in data.items())):
        warnings.warn(f"{path}: no constraints in it (empty); it adds none, as timeloop-mapper reads it",
                      CoexploreWarning, stacklevel=3)
        return True
    got = (f"a list of {len(data)} at the top" if isinstance(data, list) else
           f"keys {', '.join(map(str, list(data)[:6]))}" if isinstance(data, dict) and data else f"{data!r:.60}")
    raise CoexploreError(f"no constraint targets: got {got}", file=str(path),
                         key="architecture_constraints / mapspace_constraints",
                         expected="a mapping holding a list of {target, type, factors|permutation|keep|bypass}, "
                                  "under architecture_constraints, mapspace_constraints or targets")


def combined_constraints(paths) -> dict:
    """One constraints document holding the directives of several files, read block by block as
    `constraint_targets` reads each (`constraint_blocks`; a bare `targets` list counts when no block
    is there): what timeloop-mapper reads from them together, as
    one file (`arch generate` writes it for a core given several)."""
    out: dict = {}

    def add(block: str, targets) -> None:
        out.setdefault(block, {"targets": []})["targets"].extend(list(targets or []))

    for path in paths:
        data = load_yaml(path)
        if constraint_targets(data, str(path)) is None and empty_constraints_file(data, path):
            continue
        found = False
        for k in constraint_blocks(data, str(path)):
            v = data.get(k)
            if isinstance(v, dict) and "targets" in v:
                v = v["targets"]
            elif not isinstance(v, list):
                continue
            found = True
            add("architecture_constraints" if k in ("architecture_constraints", "arch_constraints")
                else "mapspace_constraints", v)
        if not found:
            add("mapspace_constraints", data.get("targets"))
    return out


def _is_node_list(arch: Architecture, doc) -> bool:
    """The architecture was written as v0.4 nodes (timeloopfe's input), not flattened; `doc` is its
    file's content (None without a file)."""
    if doc is None:
        return any(lv.constraints for lv in arch.levels)
    return isinstance(doc, dict) and isinstance(doc.get("architecture"), dict) and "nodes" in doc["architecture"]


def _extra_constraints(doc, arch: Architecture) -> list[tuple[list, str]]:
    """The constraint target lists a whole v0.4 spec holds beside its node list, which timeloopfe's
    ConstraintAttacherProcessor adds to the nodes' own, each as (targets, where): top-level keys
    matched as timeloopfe's Specification matches them, by part of their name (one naming
    `ignore` is ignored, then `constraints`, then `mapping`: `constraints: {targets: [...]}`,
    `mapping: [...]`, `extra_mapping_constraints` where the example designs' top.yaml.jinja2 puts a
    design's mapping.yaml)."""
    if not isinstance(doc, dict) or not _is_node_list(arch, doc):
        return []
    out = []
    for key, value in doc.items():
        k = str(key)
        if "ignore" in k or ("constraints" not in k and "mapping" not in k) or value is None:
            continue
        body = value.get("targets") if isinstance(value, dict) else value
        if not isinstance(body, list):
            raise CoexploreError(f"got {body!r}", file=arch.source, key=k + (".targets" if isinstance(value, dict) else ""),
                                 expected="a list of constraints {target, type, factors|permutation|keep|bypass}")
        if body:
            found = Directives()
            found.add(body, k + (".targets" if isinstance(value, dict) else ""))   # (each named where it is written)
            out.append((found, arch.source))
    return out


def load_constraints(arch: Architecture, path: str | Path | list | tuple | None = None, problem=None,
                     add_to_nodes: bool = True) -> dict[str, LevelConstraints]:
    """Constraints from constraints files (one path or several, combined with the
    architecture_constraints inside the architecture's own file as timeloop-mapper combines its
    inputs, or with the constraints of a v0.4 architecture's nodes as timeloopfe adds extra
    constraints to them; a directive given twice for one level is refused, as there), else those in
    the architecture's own file (timeloopfe's parsed-processed-input carries them), else a
    constraints.yaml beside it (the nodes' flattened form, instead of them), else its v0.4 nodes
    (completed as timeloopfe completes them when the layer is given: `constraints_from_nodes`)."""
    if not isinstance(arch, Architecture):
        raise CoexploreError(f"got {type(arch).__name__} {arch!r}"[:120], key="arch",
                             expected="the Architecture the constraints apply to (ctx.arch), the files as path=")
    paths = [] if path is None else [path] if isinstance(path, (str, Path)) else list(path)
    inline = own = None
    if arch.source and Path(arch.source).is_file():
        own = load_yaml(arch.source)
        # a flattened file's own targets are its constraints; a node list's add to its nodes' (extras)
        inline = None if _is_node_list(arch, own) else constraint_targets(own, arch.source)
    if paths and arch.source and any(os.path.realpath(p) == os.path.realpath(arch.source) for p in paths):
        inline = None                      # the architecture's own file given again: read once
    extra = _extra_constraints(own, arch)
    if paths or extra:
        groups = [(inline, str(arch.source))] if inline else []
        groups += extra
        for p in paths:
            data = load_yaml(p)
            body = constraint_targets(data, str(p))
            if body is None and empty_constraints_file(data, p):
                continue
            groups.append((body, str(p)))
        nodes = constraints_from_nodes(arch, branches=False) if add_to_nodes and not inline and _is_node_list(arch, own) \
            else None
        alone = str(paths[0]) if len(paths) == 1 and not inline and not extra else None
        out = constraints_from_targets(groups, arch, alone, base=nodes, problem=problem)
        if nodes is not None:                  # timeloopfe resolves the branches after adding the extras
            branch_bypasses(out, arch)
        if nodes is not None and problem is not None:   # and completes after adding them
            expand_macros(out, arch, problem)
            for c in out.values():
                _complete_permutations(c, problem)
        return out
    if inline is not None:
        return constraints_from_targets(inline, arch, str(arch.source))
    if arch.source and Path(arch.source).is_file():
        cand = Path(arch.source).parent / "constraints.yaml"
        if cand.exists() and any(lv.constraints == {} for lv in arch.levels):
            return load_constraints(arch, cand, problem, add_to_nodes=False)   # the nodes' flattened form
    return constraints_from_nodes(arch, problem)
