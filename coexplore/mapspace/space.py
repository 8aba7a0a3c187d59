"""The mapspace of one (architecture, layer) as a fixed-length vector of discrete parameters.

Parameters, in this order (each an integer in [0, cardinality)):
* factor parameters: one per prime factor of each dimension (after the constraints' fixed
  factors); its value picks the slot the prime goes to: a level's temporal loop, or the level's
  spatial X or Y fan-out where the level has one and the constraints allow that dimension there.
  Prime-factor assignment makes every decoded mapping factorise the layer exactly.
* permutation parameters: per level, one priority key per dimension that may have a temporal
  factor there; the loop order is the constraint's innermost-first prefix, then those dimensions
  by (key, dimension index). None at the innermost level when no fan-out lies below it: there,
  as in timeloop-mapper (mapspaces/uber.cpp), the loops keep the problem's dimension order and a
  permutation constraint is ignored, since the order of the innermost loops changes no count.
* keep parameters: per (level, dataspace) left free by the constraints, 0 = bypass, 1 = keep.
  The backing store keeps everything.

`decode` turns a batch [B, P] straight into the model's arrays; `encode` goes back (for mappings
that respect the constraints); `canonical` folds candidates that only differ in the order of
unit loops, which Timeloop's pruned mappers treat as the same mapping.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections import Counter
from dataclasses import dataclass

import numpy as np

from coexplore.errors import CoexploreError, CoexploreNote, CoexploreWarning, check_type
from coexplore.mapspace.sampling import fanout_overflow, fanouts, merge_split_axes, prime_factors
from coexplore.search.space import LIST_MAX, DiscreteSpace
from coexplore.spec.architecture import Architecture
from coexplore.spec.constraints import (LevelConstraints, check_dataspace_names, misplaced_parallelism,
                                        resolve_permutation)
from coexplore.spec.mapping import Mapping, MappingArrays, default_spatial_perm
from coexplore.spec.problem import Problem

KIND_T, KIND_X, KIND_Y = 0, 1, 2
EXACT_SIZE_LIMIT = 100_000   # distinct factorisations up to which log10_size counts exactly
CANONICAL_CHUNK = 1 << 16    # points canonicalised at once when listing a small space's mappings


@dataclass(eq=False)
class MappingParams(DiscreteSpace):
    """A layer's mapspace as the searchers see it: its parameters, and which points are one mapping
    (`MapSpace.canonical`), so a searcher's memory never has the cost model evaluate a mapping twice."""

    mapspace: "MapSpace | None" = dataclasses.field(default=None, repr=False)

    def canonical(self, batch: np.ndarray) -> np.ndarray:
        return self.mapspace.canonical(self.check(batch))

    def distinct_keys(self) -> "np.ndarray | list | None":
        if not hasattr(self, "_distinct"):            # (listed once: a space does not change)
            self._distinct = self.mapspace.distinct_keys(LIST_MAX)
        return self._distinct

    @property
    def n_distinct(self) -> int:
        keys = self.distinct_keys()
        if keys is not None:
            return len(keys)
        exact = self.mapspace.enumeration_is_reach() and self.mapspace.size_exact
        return exact if exact else self.size


def _check_constraint_dims(constraints: dict[str, LevelConstraints], problem: Problem,
                           levels: list[str]) -> None:
    """A constraint on a level the architecture or a dimension the layer does not have is a typo
    (Timeloop refuses both)."""
    for level, c in constraints.items():
        if level not in levels:
            raise CoexploreError(f"constraints for unknown level '{level}'", key="constraints",
                                 expected=f"levels of the architecture: {levels}")
        for what, names in (("temporal factors", {**c.temporal_factors, **c.temporal_max, **c.temporal_min}),
                            ("spatial factors", {**c.spatial_factors, **c.spatial_max, **c.spatial_min}),
                            ("temporal permutation", c.temporal_permutation or []),
                            ("spatial permutation", c.spatial_permutation or [])):
            bad = [n for n in names if n not in problem.dims]
            kind, part = what.split()
            entry = ("factors", kind, bad[0]) if bad and part == "factors" else ("permutation", kind)
            if bad and part == "permutation" and all(len(d) == 1 for d in problem.dims):
                # read letter by letter, as Timeloop reads 'RSP CMNQZ': the letters that are no dimension
                bad = list(dict.fromkeys(ch for n in bad for ch in n if ch not in problem.dims and not ch.isspace()))
            if bad:
                raise CoexploreError(f"constraint on unknown dimension(s) {', '.join(bad)} ({what} at {level})",
                                     **c.where(entry, f"constraints of {level}"),
                                     expected=f"dimensions of {problem.name}: {problem.dims}")
            twice = sorted({n for n in names if part == "permutation" and list(names).count(n) > 1})
            if twice:                    # (Timeloop takes such a list as it is; most likely a typo)
                at = c.where(entry, f"constraints of {level}")
                warnings.warn(f"{at['file'] or 'constraints'}: {at['key']}: {', '.join(twice)} listed twice in the "
                              f"{what} at {level} ({''.join(names) if all(len(n) == 1 for n in names) else names}): "
                              "read as its first place", CoexploreWarning, stacklevel=3)
        check_dataspace_names(c, level, problem)


def _resolved(constraints: dict[str, LevelConstraints], problem: Problem) -> dict[str, LevelConstraints]:
    """Constraints with their permutations read against the layer's dimensions ('QRSC PNM' is
    letter by letter, as Timeloop reads it, when the dimensions are single letters) and `*` in a
    keep/bypass list read as every dataspace (as timeloopfe expands it)."""
    dims, every = problem.dims, {ds.name for ds in problem.dataspaces}
    out = {}
    for level, c in constraints.items():
        tp = resolve_permutation(c.temporal_permutation or [], dims)
        sp = resolve_permutation(c.spatial_permutation or [], dims)
        if tp != (c.temporal_permutation or []) or sp != (c.spatial_permutation or []):
            c = dataclasses.replace(c, temporal_permutation=tp, spatial_permutation=sp)
        star = {k: (getattr(c, k) - {"*"}) | every for k in ("keep", "bypass", "bypass_except")
                if getattr(c, k) is not None and "*" in getattr(c, k)}
        if star:
            c = dataclasses.replace(c, **star)
        out[level] = c
    return out


def _check_bounds(c: LevelConstraints, level: str, name: str, kind: str, bound: int, fixed: int | None) -> None:
    """A factor bound no mapping can meet is a conflict in the constraints, refused up front."""
    hi, lo = getattr(c, f"{kind}_max").get(name), getattr(c, f"{kind}_min").get(name)
    where = c.factor_where(kind, name, level)
    if lo is not None and lo > bound:
        raise CoexploreError(f"{name}>={lo} at {level}, but the layer's {name} is {bound}", **where,
                             expected=f"a min factor <= {bound}")
    if lo is not None and hi is not None and lo > hi:
        raise CoexploreError(f"{name}>={lo} and {name}<={hi} at {level} leave no factor", **where,
                             expected="min <= max")
    if fixed is not None and ((hi is not None and fixed > hi) or (lo is not None and fixed < lo)):
        raise CoexploreError(f"{name}={fixed} at {level} breaks its own bound "
                             f"{name}{'<=' + str(hi) if hi is not None and fixed > hi else '>=' + str(lo)}",
                             **where, expected="a fixed factor within the bounds")


def _not_dividing(c: LevelConstraints, level: str, name: str, n: int, left: int, bound: int, kind: str
                  ) -> CoexploreError:
    after = "" if left == bound else f" (what the factors fixed at other levels leave of {bound})"
    if (kind, name) in c.maximized:       # (not the user's number: timeloopfe's uneven greedy split)
        after += ("; maximize_dims chose it, as timeloopfe's greedy allocation does (an uneven split), "
                  "and coexplore models whole factors only: a fan-out or maximize_dims_capacity that a "
                  "factor of the dimension fills, or the factor itself")
    return CoexploreError(f"constraint {name}={n} at {level} does not divide {left}{after}",
                          **c.factor_where(kind, name, level), expected="fixed factors of each dimension whose product "
                          "divides the layer's dimension")


def _idle_fanouts(inner, fx, fy, x_allowed, y_allowed, base_x, base_y, remaining, dims, chosen,
                  layer: str) -> list[str]:
    """The spatial fan-outs this layer cannot use under the constraints (no loop may go there), in
    words: a split or permutation that leaves an axis to dimensions of factor 1 is a common slip
    (timeloopfe counts the unit loops first), and every mapping then idles that part of the array."""
    out = []
    for li, lv in enumerate(inner):
        for axis, fan, allowed, base in (("X", fx, x_allowed, base_x), ("Y", fy, y_allowed, base_y)):
            if fan[li] <= 1 or li in chosen or (base[li] > 1).any():
                continue
            free = [dims[d] for d in range(len(dims)) if allowed[li, d]]
            if not any(remaining[d] > 1 for d in range(len(dims)) if allowed[li, d]):
                why = (f"only {', '.join(free)} may spread there, and this layer leaves "
                       f"{'it' if len(free) == 1 else 'them'} no factor") if free else "no dimension may spread there"
                out.append(f"{lv.name}: its {axis} fan-out of {fan[li]} idles for layer {layer}: under the constraints "
                           f"{why} (check the level's spatial permutation, split and factors)")
    return out


@dataclass
class FactorParam:
    dim: int
    prime: int
    slots: list[tuple[int, int]]      # (level innermost=0, kind)


def _check_constraints_argument(constraints) -> None:
    """None, or a dict of level name -> LevelConstraints (`load_constraints`' result); a file's path
    or a dict of raw YAML is named as such, not an AttributeError inside."""
    expected = ("None or a dict of level name -> LevelConstraints, as coexplore.spec.constraints.load_constraints"
                "(arch, files, problem) returns")
    if constraints is None:
        return
    if not isinstance(constraints, dict):
        raise CoexploreError(f"got {type(constraints).__name__} {constraints!r:.60}", key="constraints", expected=expected)
    for name, c in constraints.items():
        if not isinstance(c, LevelConstraints):
            raise CoexploreError(f"level {name!r} has {type(c).__name__} {c!r:.60}", key="constraints", expected=expected)


def _axes_fit(on_x: int, on_y: int, free: list[int], fan_x: int, fan_y: int) -> bool:
    """Some placement of the `free` fixed factors (each on X or on Y, as the split decides) keeps the
    level's X product within fan_x and its Y product within fan_y (on_x / on_y: the factors already
    placed)."""
    if not free:
        return on_x <= fan_x and on_y <= fan_y
    n, rest = free[0], free[1:]
    return _axes_fit(on_x * n, on_y, rest, fan_x, fan_y) or _axes_fit(on_x, on_y * n, rest, fan_x, fan_y)


class MapSpace:
    """Encoding/decoding of one (architecture, layer) mapspace under Timeloop constraints."""

    def _check_fixed_fanout(self, inner) -> None:
        """Fixed spatial factors that no mapping can fit leave no valid mapping: refused up front,
        naming them, not after a whole search that finds nothing. The test is the model's (and
        Timeloop's): the spatial factors of every level above a unit (a buffer level, the compute
        level) multiply into its X / Y mesh and its instances, so a level may use more than its own
        fan-out where a level above idles; only the fixed factors (others are at least 1) count, and
        a factor the constraints put on no axis (an X or Y choice) counts in the instances only."""
        dims = self.problem.dims
        L = len(inner)
        free_axis = np.ones((L, len(dims)), np.int64)
        for li, d, n in self.axis_choices:
            free_axis[li, d] = n
        fixed_x = np.prod(self.base_x // free_axis, axis=1)         # per level, on X for sure
        fixed_y = np.prod(self.base_y, axis=1)
        fixed = np.prod(self.base_x * self.base_y, axis=1)
        units = [(-1, self.arch.compute)] + list(enumerate(inner))
        for start, unit in reversed(units):          # outermost first: the unit right below the factors
            above = range(start + 1, L)
            cx, cy, ct = (int(np.prod([a[li] for li in above], dtype=np.int64)) for a in (fixed_x, fixed_y, fixed))
            for need, have, what in ((cx, unit.mesh_x, f"an X mesh of {cx}"), (cy, unit.mesh_y, f"a Y mesh of {cy}"),
                                     (ct, unit.instances, f"{ct} instances")):
                if need > have:
                    levels = [li for li in above if fixed[li] > 1]
                    factors = "; ".join(f"{inner[li].name}: {self._fixed_spatial_text(li)}" for li in levels)
                    c = self.constraints.get(inner[levels[0]].name, LevelConstraints())
                    raise CoexploreError(f"the fixed spatial factors ({factors}) need {what} at {unit.name}, which has "
                                         f"{unit.mesh_x} x {unit.mesh_y} (X x Y), {unit.instances} instances: no "
                                         "mapping fits", **c.factor_where("spatial", self._first_fixed(levels[0]),
                                                                          inner[levels[0]].name),
                                         expected="fixed spatial factors whose products fit the array below them")

    def __init__(self, arch: Architecture, problem: Problem, constraints: dict[str, LevelConstraints] | None = None):
        self.arch = check_type(arch, Architecture, "arch", "an Architecture (ctx.arch of load_context)")
        self.problem = check_type(problem, Problem, "problem", "a Problem (ctx.problem of load_context)")
        _check_constraints_argument(constraints)
        self.constraints = _resolved(constraints or {}, problem)
        _check_constraint_dims(self.constraints, problem, [lv.name for lv in arch.levels])
        self.L, self.D, self.S = len(arch.levels), len(problem.dims), len(problem.dataspaces)
        inner = list(reversed(arch.levels))
        fx, fy = fanouts(arch)
        remaining = self._factor_rules(inner, fx, fy)
        self._check_fixed_fanout(inner)
        self._check_every_prime_placed(remaining)
        self._check_bound_products(inner, fx, fy, remaining)
        self._axis_rules(inner, fx, fy)
        self._fanout_rules(fx, fy, remaining)
        self.notes = _idle_fanouts(inner, fx, fy, self.x_allowed, self.y_allowed, self.base_x, self.base_y,
                                   remaining, problem.dims, {li for li, _, _ in self.axis_choices}, problem.name)
        for note in self.notes:          # (the CLI says it for a network's first such layer, counts the others)
            warnings.warn(note, CoexploreNote, stacklevel=2)
        self.has_bounds = bool((self.t_max < np.iinfo(np.int64).max).any() or (self.t_min > 1).any()
                               or (self.s_max < np.iinfo(np.int64).max).any() or (self.s_min > 1).any()
                               or self.min_parallelism > 0 or self.split_order or self.split_count
                               or self.split_place)
        self.factor_params: list[FactorParam] = []
        for d in range(self.D):
            slots = [(li, KIND_T) for li in range(self.L) if self.t_allowed[li, d]]
            slots += [(li, KIND_X) for li in range(self.L) if self.x_allowed[li, d]]
            slots += [(li, KIND_Y) for li in range(self.L) if self.y_allowed[li, d]]
            for p in prime_factors(remaining[d]):
                self.factor_params.append(FactorParam(d, p, slots))
        self._permutation_rules(inner, fx, fy)
        self._keep_rules(inner)
        self.size_exact: int | None = None     # the exact count, once log10_size has counted it
        self._build_space()

    def _factor_rules(self, inner: list, fx, fy) -> list[int]:
        """The constraints' factors per (level, dimension): fixed ones into base_t/x/y, bounds into
        t_/s_min/max, where the mapper may put the rest (t/x/y_allowed) and the fixed spatial factors
        whose axis is a choice (axis_choices). Returns what each dimension's bound leaves to the mapper."""
        problem, dims = self.problem, self.problem.dims
        L, D = self.L, self.D
        self.base_t = np.ones((L, D), np.int64)
        self.base_x = np.ones((L, D), np.int64)
        self.base_y = np.ones((L, D), np.int64)
        # factor bounds X<=n / X>=n per (level, dim), temporal and spatial (X*Y); checked per mapping
        self.t_max = np.full((L, D), np.iinfo(np.int64).max, np.int64)
        self.t_min = np.ones((L, D), np.int64)
        self.s_max = self.t_max.copy()
        self.s_min = self.t_min.copy()
        self.min_parallelism = 0.0
        remaining = list(problem.bounds)
        # fixed spatial factors that the constraints put on no axis, at a level with X and Y
        # fan-outs: (level, dim, factor), each a parameter (0: on X, 1: on Y)
        self.axis_choices: list[tuple[int, int, int]] = []
        t_allowed = self.t_allowed = np.zeros((L, D), bool)
        x_allowed = self.x_allowed = np.zeros((L, D), bool)
        y_allowed = self.y_allowed = np.zeros((L, D), bool)

        def exact(n: int, d: int) -> int:
            # Timeloop: 0 is the whole dimension, a factor above the bound is cut to the bound
            return problem.bounds[d] if n == 0 or n > problem.bounds[d] else n

        for li, lv in enumerate(inner):
            c = self.constraints.get(lv.name, LevelConstraints())
            if c.min_parallelism is not None:
                self._set_min_parallelism(c, lv, li, inner)
            for d, name in enumerate(dims):
                only = c.temporal_factors_only and name not in c.temporal_max and name not in c.temporal_min
                op, n = c.temporal_factors.get(name, ("=", 1) if only else (None, None))
                if not lv.is_dummy:
                    _check_bounds(c, lv.name, name, "temporal", problem.bounds[d],
                                  exact(n, d) if op == "=" and n is not None else None)
                    if op == "=" and n is not None:
                        n = exact(n, d)
                        if n > 1:
                            if remaining[d] % n:
                                raise _not_dividing(c, lv.name, name, n, remaining[d], problem.bounds[d], "temporal")
                            self.base_t[li, d] = n
                            remaining[d] //= n
                    else:
                        t_allowed[li, d] = True
                        self.t_max[li, d] = c.temporal_max.get(name, self.t_max[li, d])
                        self.t_min[li, d] = c.temporal_min.get(name, 1)
                only = c.spatial_factors_only and name not in c.spatial_max and name not in c.spatial_min
                sop, sn = c.spatial_factors.get(name, ("=", 1) if only else (None, None))
                _check_bounds(c, lv.name, name, "spatial", problem.bounds[d],
                              exact(sn, d) if sop == "=" and sn is not None else None)
                if sop == "=" and sn is not None:
                    sn = exact(sn, d)
                    if sn > 1:
                        axis = self._axis(c, name)
                        if axis == "any" and fx[li] > 1 and fy[li] > 1:   # Timeloop's split decides: a choice
                            self.axis_choices.append((li, d, sn))
                        axis_x = axis == "x" or (axis == "any" and not (fy[li] > 1 and fx[li] <= 1))
                        (self.base_x if axis_x else self.base_y)[li, d] = sn
                        if remaining[d] % sn:
                            raise _not_dividing(c, lv.name, name, sn, remaining[d], problem.bounds[d], "spatial")
                        remaining[d] //= sn
                    continue
                axis = self._axis(c, name)
                x_allowed[li, d] = fx[li] > 1 and axis in ("x", "any")
                y_allowed[li, d] = fy[li] > 1 and axis in ("y", "any")
                if x_allowed[li, d] or y_allowed[li, d]:
                    self.s_max[li, d] = c.spatial_max.get(name, self.s_max[li, d])
                    self.s_min[li, d] = c.spatial_min.get(name, 1)
        return remaining

    def _check_bound_products(self, inner: list, fx, fy, remaining: list[int]) -> None:
        """Min (max) factor bounds of one dimension at several levels whose product is more (less)
        than what the fixed factors leave of it: no mapping keeps them all, refused up front. A
        spatial place holds at most its level's own fan-out on the axes it may use (as `map`
        checks it, after timeloop-mapper)."""
        BIG = int(np.iinfo(np.int64).max)
        for d, name in enumerate(self.problem.dims):
            places = []        # (level, kind, min, max, max as the constraints give it)
            for li in range(self.L):
                if self.t_allowed[li, d]:
                    hi = int(self.t_max[li, d])
                    places.append((li, "temporal", int(self.t_min[li, d]), hi, hi))
                if self.x_allowed[li, d] or self.y_allowed[li, d]:
                    fan = (int(fx[li]) if self.x_allowed[li, d] else 1) * (int(fy[li]) if self.y_allowed[li, d] else 1)
                    given = int(self.s_max[li, d])
                    places.append((li, "spatial", int(self.s_min[li, d]), min(given, fan), given))
            lo = math.prod(p[2] for p in places)
            hi = math.prod(p[3] for p in places) if all(p[3] < BIG for p in places) else None
            if lo <= remaining[d] and (hi is None or hi >= remaining[d]):
                continue
            low = lo > remaining[d]
            named = [p for p in places if p[2] > 1] if low else places
            bounds = "; ".join(f"{inner[p[0]].name} {p[1]}: {name}" + (f">={p[2]}" if low else f"<={p[3]}")
                               + (" (its fan-out)" if not low and p[3] < p[4] else "") for p in named)
            li, kind = next((p[:2] for p in named if low or p[4] < BIG), named[0][:2])    # one the user gave
            c = self.constraints.get(inner[li].name, LevelConstraints())
            left = "" if remaining[d] == self.problem.bounds[d] else \
                f" (what the fixed factors leave of {self.problem.bounds[d]})"
            raise CoexploreError(f"the factor bounds of {name} ({bounds}) need {'at least' if low else 'at most'} "
                                 f"{lo if low else hi} in all, and the layer's {name} is {remaining[d]}{left}: "
                                 "no mapping keeps them all", **c.factor_where(kind, name, inner[li].name),
                                 expected=f"min bounds whose product is at most {remaining[d]}" if low else
                                 f"max bounds whose product is at least {remaining[d]}, or a level left unbounded")

    def _check_every_prime_placed(self, remaining: list[int]) -> None:
        """A prime with no level to go to: the constraints conflict."""
        placeable = self.t_allowed | self.x_allowed | self.y_allowed
        for d, name in enumerate(self.problem.dims):
            if remaining[d] > 1 and not placeable[:, d].any():
                raise CoexploreError(f"the constraints leave no level for the factor {remaining[d]} of dimension "
                                     f"{name} (bound {self.problem.bounds[d]}): every level fixes its factor",
                                     file=next((c.source for c in self.constraints.values() if c.source), None),
                                     key="constraints", expected="fixed factors of each dimension that multiply "
                                     "to its bound, or a level left free")

    def _permutation_rules(self, inner: list, fx, fy) -> None:
        """Each level's loop-order prefix (the constraints') and the dimensions left to order."""
        dims = self.problem.dims
        # permutations. Timeloop's mapper gives the innermost tiling level the canonical order
        # (the problem's dimension order) whatever the constraints say, when that level is
        # temporal (no fan-out below the innermost storage level): the order there changes no count.
        self.canonical_innermost = bool(fx[0] * fy[0] == 1)
        self.perm_prefix: list[list[int]] = []
        self.perm_free: list[list[int]] = []
        for li, lv in enumerate(inner):
            c = self.constraints.get(lv.name, LevelConstraints())
            prefix = [dims.index(n) for n in c.temporal_permutation if n in dims]
            if li == 0 and self.canonical_innermost:
                prefix = []
            # a loop the mapper sizes, or one the constraints fix at more than 1: ordered freely
            free = [d for d in range(self.D) if (self.t_allowed[li, d] or self.base_t[li, d] > 1)
                    and d not in prefix]
            if lv.is_dummy or len(free) < 2 or (li == 0 and self.canonical_innermost):
                free = []
            self.perm_prefix.append(prefix)
            self.perm_free.append(free)

    def _keep_rules(self, inner: list) -> None:
        """Which tensors each level keeps for sure (base_keep) and where keeping is the mapper's
        choice (keep_params), from the constraints' keep/bypass."""
        self.base_keep = np.ones((self.L, self.S), bool)
        self.keep_params: list[tuple[int, int]] = []
        dsn = [ds.name for ds in self.problem.dataspaces]
        for li, lv in enumerate(inner):
            c = self.constraints.get(lv.name, LevelConstraints())
            for s, name in enumerate(dsn):
                if lv.is_dummy:
                    self.base_keep[li, s] = False
                elif li == self.L - 1:
                    # Timeloop would apply a bypass there (uber.cpp clears the keep bit); the
                    # mapspace keeps every tensor at the backing store, so it is refused, not dropped
                    if (c.bypass and name in c.bypass) or (c.keep_only and name not in (c.keep or ())) or \
                            (c.bypass_except is not None and name not in c.bypass_except):
                        raise CoexploreError(f"dataspace {name} bypassed at {lv.name}, the outermost level",
                                             **c.where(("dataspace", name), f"constraints of {lv.name}"),
                                             expected="every tensor kept at the backing store (coexplore's "
                                                      "mapspace keeps them all there)")
                    self.base_keep[li, s] = True
                elif c.keep and name in c.keep and c.bypass and name in c.bypass:
                    raise CoexploreError(f"dataspace {name} is both kept and bypassed at {lv.name}",
                                         **c.where(("dataspace", name), f"constraints of {lv.name}"),
                                         expected="one of keep or bypass")
                elif c.keep is not None and (name in c.keep or c.keep_only):
                    self.base_keep[li, s] = name in c.keep      # Timeloop: keep '1'; keep_only: rest '0'
                elif (c.bypass is not None and name in c.bypass) or (c.bypass_except is not None
                                                                       and name not in c.bypass_except):
                    self.base_keep[li, s] = False
                elif c.bypass_only:                              # timeloopfe's bypass_only: the rest kept
                    self.base_keep[li, s] = True
                else:                                            # Timeloop's 'X': the mapper chooses
                    self.keep_params.append((li, s))

    def _set_min_parallelism(self, c: LevelConstraints, lv, li: int, inner) -> None:
        """Timeloop: min parallelism (`type: utilization` / `parallelism`) only at the innermost
        storage level; it bounds the fraction of the compute units a mapping uses."""
        innermost = next(i for i, x in enumerate(inner) if not x.is_dummy)
        if li != innermost:
            file, key = c.min_parallelism_from or (c.source, f"constraints of {lv.name}")
            raise misplaced_parallelism(lv.name, inner[innermost].name, file or c.source, key)
        self.min_parallelism = float(c.min_parallelism)

    def _axis_rules(self, inner, fx, fy) -> None:
        """The X/Y placements timeloop-mapper can make where the constraints fix only part of them
        (uber.cpp: a split given keeps every loop in the permutation, unit ones included, and the
        first `split` positions are X; without one, unit loops are pruned and the split enumerated):
        - a level fanning out in X and Y with a spatial permutation but no split: the loops of
          factor > 1 on X come before those on Y in the permutation (unlisted ones last);
        - a level with a split: the listed loops sit where `_axis` puts them; the unlisted ones take
          the positions after the listed, so at most max(0, split - listed) of them are on X and at
          most D - max(split, listed) on Y; a level fanning out one way with a split and no
          permutation keeps the canonical order: exactly its first `split` dimensions are X.
        Kept as rules on decoded mappings (`bounds_kept`)."""
        D = self.D
        self.split_order: list[tuple[int, np.ndarray, int]] = []   # (level, rank per dim, unlisted rank)
        self.split_count: list[tuple[int, np.ndarray, int, int]] = []   # (level, unlisted, most on X, on Y)
        self.split_place: list[tuple[int, np.ndarray]] = []        # (level, on X allowed per dim)
        for li, lv in enumerate(inner):
            c = self.constraints.get(lv.name)
            if c is None or not (fx[li] > 1 or fy[li] > 1):
                continue
            perm = [n for n in (c.spatial_permutation or []) if n in self.problem.dims]
            if not perm and c.split is not None and not (fx[li] > 1 and fy[li] > 1):
                # a 1-D level keeps the canonical order: the first `split` dimensions are X (uber.cpp)
                self.split_place.append((li, np.arange(D) < c.split))
            elif perm and c.split is None and fx[li] > 1 and fy[li] > 1:
                rank = np.array([perm.index(n) if n in perm else len(perm) for n in self.problem.dims], np.int64)
                self.split_order.append((li, rank, len(perm)))
            elif c.split is not None and len(perm) < D:       # a full permutation: `_axis` places all
                unlisted = np.array([n not in perm for n in self.problem.dims])
                self.split_count.append((li, unlisted, max(0, c.split - len(perm)), max(0, D - max(c.split, len(perm)))))

    def _fanout_rules(self, fx, fy, remaining: list[int]) -> None:
        """Each level's spatial loops must fit its own fan-out (fan_x, fan_y: X and Y per level,
        the inner mesh over the level's), as in timeloop-mapper, which fails any other mapping
        (uber.cpp: "mapped fanoutX .. exceeds hardware fanoutX .."). timeloop-model, and the model
        here, check only the product across levels against each mesh, so a mapping may spread
        16-way below a level that fans out 4 while a level above idles: `evaluate` accepts it as
        timeloop-model does, `map` counts it invalid as timeloop-mapper does (`fits_fanouts`).
        `caps_fanout`: some level can overflow. Fixed factors that cannot fit are refused up front."""
        self.fan_x, self.fan_y = np.asarray(fx, np.int64), np.asarray(fy, np.int64)
        rem = np.array(remaining, np.int64)
        chosen = np.ones((self.L, self.D), np.int64)
        for li, d, n in self.axis_choices:
            chosen[li, d] = n
        most_x = np.prod(np.where(self.x_allowed, rem, 1) * np.maximum(self.base_x, chosen), axis=1)
        most_y = np.prod(np.where(self.y_allowed, rem, 1) * np.maximum(self.base_y, chosen), axis=1)
        self.caps_fanout = bool((most_x > self.fan_x).any() or (most_y > self.fan_y).any())
        fixed_x = np.prod(self.base_x // np.where(self.base_x > 1, chosen, 1), axis=1)   # on X / Y for sure
        fixed_y = np.prod(self.base_y // np.where(self.base_y > 1, chosen, 1), axis=1)
        fixed = np.prod(self.base_x * self.base_y, axis=1)
        inner = list(reversed(self.arch.levels))
        for li, lv in enumerate(inner):
            fan = (int(self.fan_x[li]), int(self.fan_y[li]))
            free = [n for l, _, n in self.axis_choices if l == li]
            for need, have, what in ((fixed_x[li], fan[0], "an X fan-out"), (fixed_y[li], fan[1], "a Y fan-out"),
                                     (fixed[li], fan[0] * fan[1], "a fan-out")):
                if need > have:
                    self._refuse_fixed_spatial(lv, li, f"need {what} of {int(need)}")
            if free and not _axes_fit(int(fixed_x[li]), int(fixed_y[li]), free, *fan):
                self._refuse_fixed_spatial(lv, li, "fit neither on X nor on Y, however they are split between "
                                           "the two")

    def _refuse_fixed_spatial(self, lv, li: int, why: str) -> None:
        """Fixed spatial factors at `lv` that no mapping fits into its own fan-out: a clear error."""
        c = self.constraints.get(lv.name, LevelConstraints())
        factors = self._fixed_spatial_text(li)
        dim = self._first_fixed(li)
        raise CoexploreError(f"the fixed spatial factors at {lv.name} ({factors}) {why}, and {lv.name} fans out "
                             f"{int(self.fan_x[li])} x {int(self.fan_y[li])} (X x Y) to the level below: no "
                             "mapping fits (timeloop-mapper limits each level's spatial loops to its own fan-out)",
                             **c.factor_where("spatial", dim, lv.name),
                             expected="fixed spatial factors that fit the level's own fan-out")

    def _fixed_spatial(self, li: int) -> list[tuple[str, int]]:
        """(dimension, factor) of the fixed spatial factors above 1 at level li."""
        both = self.base_x[li] * self.base_y[li]
        return [(self.problem.dims[d], int(both[d])) for d in range(self.D) if both[d] > 1]

    def _fixed_spatial_text(self, li: int) -> str:
        return " ".join(f"{d}={n}" for d, n in self._fixed_spatial(li))

    def _first_fixed(self, li: int) -> str | None:
        """The first dimension with a fixed spatial factor above 1 at level li (errors name its file)."""
        return next((d for d, _ in self._fixed_spatial(li)), None)

    def fits_fanouts(self, m: MappingArrays) -> np.ndarray:
        """[B] bool: every level's spatial X and Y loops fit its own fan-out (`_fanout_rules`)."""
        if not self.caps_fanout:
            return np.ones(len(m), bool)
        return ((np.prod(m.spatial_x, axis=2) <= self.fan_x).all(axis=1)
                & (np.prod(m.spatial_y, axis=2) <= self.fan_y).all(axis=1))

    def fanout_broken(self, m: MappingArrays, b: int) -> tuple[str, str, str] | None:
        """Where mapping b spreads past a level's own fan-out: (axis, level, in words), None if it fits."""
        return fanout_overflow(self.arch, m, b, self.problem.dims)

    def axis_rules(self) -> dict:
        """The X/Y choices of fixed spatial factors and the split rules of this space, as plain
        data ({} where there are none): what sets it apart from the space before them (cache keys)."""
        if not (self.axis_index or self.split_order or self.split_count or self.split_place):
            return {}
        return {"choices": [[li, d, n] for _, li, d, n in self.axis_index],
                "order": [[li, [int(r) for r in rank]] for li, rank, _ in self.split_order],
                "count": [[li, [bool(u) for u in unl], mx, my] for li, unl, mx, my in self.split_count],
                "place": [[li, [bool(x) for x in x_ok]] for li, x_ok in self.split_place]}

    def satisfies(self, m: MappingArrays) -> np.ndarray:
        """[B] bool: the mappings keep the constraints' factor bounds (X<=n, X>=n), min
        parallelism and the X/Y split rules (`_axis_rules`), which prime-factor assignment cannot
        encode (decode may break them)."""
        return self.bounds_kept(m.temporal, m.spatial_x, m.spatial_y)

    def bounds_kept(self, t: np.ndarray, sx: np.ndarray, sy: np.ndarray) -> np.ndarray:
        """`satisfies` on the loop bounds alone ([B, L, D] each, as `decode_factors` gives them)."""
        B = len(t)
        ok = np.ones(B, bool)
        if not self.has_bounds:
            return ok
        sp = sx * sy
        ok &= ((t <= self.t_max) & (t >= self.t_min)).all(axis=(1, 2))
        ok &= ((sp <= self.s_max) & (sp >= self.s_min)).all(axis=(1, 2))
        if self.min_parallelism > 0:
            used = np.prod(sp.reshape(B, -1).astype(float), axis=1)
            ok &= used >= self.min_parallelism * self.arch.compute.instances * (1 - 1e-12)
        big = np.iinfo(np.int64).max
        for li, rank, unlisted in self.split_order:
            on_x, on_y = sx[:, li] > 1, sy[:, li] > 1
            last_x = np.where(on_x, rank, -1).max(axis=1)
            first_y = np.where(on_y, rank, big).min(axis=1)
            ok &= (last_x < first_y) | ((last_x == first_y) & (last_x == unlisted))
        for li, x_ok in self.split_place:
            ok &= ~((sx[:, li] > 1) & ~x_ok).any(axis=1) & ~((sy[:, li] > 1) & x_ok).any(axis=1)
        for li, unlisted, most_x, most_y in self.split_count:
            ok &= (((sx[:, li] > 1) & unlisted).sum(axis=1) <= most_x) & \
                  (((sy[:, li] > 1) & unlisted).sum(axis=1) <= most_y)
        return ok

    def _bound_broken(self, m: MappingArrays, b: int) -> str:
        """Which of the constraints' bounds mapping b breaks, in words (`satisfies` is False)."""
        names, dims = self.arch.level_names()[::-1], self.problem.dims    # innermost level first
        sp = m.spatial_x[b] * m.spatial_y[b]
        for what, got, lo, hi in (("temporal", m.temporal[b], self.t_min, self.t_max),
                                  ("spatial", sp, self.s_min, self.s_max)):
            for li, d in np.argwhere((got > hi) | (got < lo)):
                bound = f"{dims[d]}<={hi[li, d]}" if got[li, d] > hi[li, d] else f"{dims[d]}>={lo[li, d]}"
                return (f"has {what} {dims[d]}={got[li, d]} at {names[li]}, against the constraints' bound "
                        f"{bound} there")
        used = float(np.prod(sp.astype(float)))
        if self.min_parallelism > 0 and used < self.min_parallelism * self.arch.compute.instances * (1 - 1e-12):
            return (f"uses {used:g} of {self.arch.compute.instances} compute instances, below the constraints' "
                    f"min_parallelism {self.min_parallelism:g}")
        return "places spatial loops on X and Y against the constraints' split (their spatial permutation and split)"

    @staticmethod
    def _axis(c: LevelConstraints, name: str) -> str:
        """'x' or 'y' where the spatial permutation and split place the dimension, else 'any'
        (Timeloop's mapper then tries every split of the level's spatial loops)."""
        if c.split is None or not c.spatial_permutation:
            return "any"
        perm = c.spatial_permutation
        if name not in perm:
            return "any"
        return "x" if perm.index(name) < c.split else "y"

    def _build_space(self) -> None:
        card, names, ordinal, groups = [], [], [], []
        dims = self.problem.dims
        inner = list(reversed(self.arch.levels))
        by_dim: dict[int, list[int]] = {}
        for i, fp in enumerate(self.factor_params):
            card.append(len(fp.slots))
            names.append(f"{dims[fp.dim]}:{fp.prime}#{sum(1 for q in self.factor_params[:i] if q.dim == fp.dim)}")
            ordinal.append(True)
            by_dim.setdefault(fp.dim, []).append(i)
        groups += [g for g in by_dim.values()]
        self.n_factor = len(card)
        self.perm_index: list[tuple[int, int, int]] = []        # (param, level, dim)
        for li, free in enumerate(self.perm_free):
            g = []
            for d in free:
                self.perm_index.append((len(card), li, d))
                g.append(len(card))
                card.append(len(free))
                names.append(f"order:{inner[li].name}:{dims[d]}")
                ordinal.append(False)
            if g:
                groups.append(g)
        self.keep_index: list[tuple[int, int, int]] = []
        for li, s in self.keep_params:
            self.keep_index.append((len(card), li, s))
            card.append(2)
            names.append(f"keep:{inner[li].name}:{self.problem.dataspaces[s].name}")
            ordinal.append(False)
            groups.append([len(card) - 1])
        self.axis_index: list[tuple[int, int, int, int]] = []   # (param, level, dim, factor)
        for li, d, n in self.axis_choices:
            self.axis_index.append((len(card), li, d, n))
            card.append(2)
            names.append(f"axis:{inner[li].name}:{dims[d]}")
            ordinal.append(False)
            groups.append([len(card) - 1])
        if not card:   # a fully fixed mapspace still has one (trivial) parameter
            card, names, ordinal, groups = [1], ["fixed"], [True], [[0]]
        self.space = MappingParams(np.array(card, np.int64), names, np.array(ordinal), groups, mapspace=self)
        # lookup tables for decode
        P = len(self.factor_params)
        maxc = max((len(fp.slots) for fp in self.factor_params), default=1)
        self._slot_level = np.zeros((max(P, 1), maxc), np.int64)
        self._slot_kind = np.zeros((max(P, 1), maxc), np.int64)
        for i, fp in enumerate(self.factor_params):
            for c, (li, k) in enumerate(fp.slots):
                self._slot_level[i, c], self._slot_kind[i, c] = li, k
        self._fp_dim = np.array([fp.dim for fp in self.factor_params], np.int64)
        self._fp_prime = np.array([fp.prime for fp in self.factor_params], np.int64)
        self._canonical_tables()

    # ------------------------------------------------------------------ sizes
    @property
    def n_params(self) -> int:
        return self.space.n_params

    def log10_size(self) -> float:
        """log10 of the number of distinct mappings (factorisations x loop orders x bypass).

        Exact (by counting, `coexplore.mapspace.enumerate`) when the layer has at most
        `EXACT_SIZE_LIMIT` distinct factorisations (counting them costs ~0.3 s per 100,000, and
        `coexplore map` reports the size on every run); otherwise an upper bound that orders, per
        level, every dimension that can have a temporal factor > 1 there.
        """
        if getattr(self, "_log10", None) is not None:     # (counted once: a space does not change)
            return self._log10
        self._log10 = self._count_log10()
        return self._log10

    def _count_log10(self) -> float:
        from coexplore.mapspace.enumerate import count_canonical
        try:
            n = count_canonical(self, max_factor_points=EXACT_SIZE_LIMIT)
            self.size_exact = n
            return math.log10(n) if n else float("-inf")
        except CoexploreError:
            self.size_exact = None
        total = 0.0
        for d in range(self.D):
            primes = Counter(fp.prime for fp in self.factor_params if fp.dim == d)
            nslots = len(next((fp.slots for fp in self.factor_params if fp.dim == d), []))
            for _, k in primes.items():
                total += math.log10(math.comb(k + nslots - 1, nslots - 1))
        for li, free in enumerate(self.perm_free):
            movable = [d for d in free if self.base_t[li, d] > 1 or any(
                fp.dim == d and (li, KIND_T) in fp.slots for fp in self.factor_params)]
            total += math.log10(math.factorial(len(movable)))
        total += (len(self.keep_params) + len(self.axis_index)) * math.log10(2)
        return total

    # ------------------------------------------------------------------ decode / encode
    def decode(self, X: np.ndarray) -> MappingArrays:
        """Mappings [n] from parameter vectors [n, n_params] (values checked against the space)."""
        X = self.space.check(X)
        B, L, D, S = X.shape[0], self.L, self.D, self.S
        t, sx, sy = self.decode_factors(X, checked=True)
        # loop orders: prefix first, then free dims by key, then the rest
        comp = np.broadcast_to(np.arange(D, dtype=np.int64) + 10 * D * D, (B, L, D)).copy()
        for li, prefix in enumerate(self.perm_prefix):
            for pos, d in enumerate(prefix):
                comp[:, li, d] = pos
        for pi, li, d in self.perm_index:
            comp[:, li, d] = D + X[:, pi] * D + d
        for li, free in enumerate(self.perm_free):
            if not free:
                for d in range(D):
                    if self.t_allowed[li, d] and d not in self.perm_prefix[li]:
                        comp[:, li, d] = D + d
        if self.canonical_innermost:          # timeloop-mapper's canonical order: every dimension in order
            comp[:, 0, :] = np.arange(D)
        perm = np.argsort(comp, axis=2, kind="stable")
        keep = np.broadcast_to(self.base_keep, (B, L, S)).copy()
        for pi, li, s in self.keep_index:
            keep[:, li, s] = X[:, pi] == 1
        return MappingArrays(t, sx, sy, perm, keep, self._spatial_order(sx, sy)).well_formed()

    def decode_factors(self, X: np.ndarray, checked: bool = False, merge: bool = True
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The loop bounds of `decode` alone: temporal, spatial X and spatial Y factors [n, L, D]
        (what counting mappings and the factor bounds need, without loop orders and keeps). With
        `merge` False, a dimension's factors that the parameters put on both X and Y of one level
        stay apart (`decode` keeps them on one axis: such points repeat another's mapping)."""
        if not checked:
            X = self.space.check(X)
        B, L, D = X.shape[0], self.L, self.D
        bounds = np.empty((3, B, L, D), np.int64)        # temporal, spatial X, spatial Y
        bounds[KIND_T], bounds[KIND_X], bounds[KIND_Y] = self.base_t, self.base_x, self.base_y
        P = len(self.factor_params)
        if P:   # each factor parameter's choice -> its slot's element of `bounds`, times its prime
            # (one multiply.at for all: a per-parameter loop cost most of a small batch's time)
            offsets = self._slot_kind * (B * L * D) + self._slot_level * D
            at = (np.arange(B) * (L * D))[:, None] + offsets[np.arange(P), X[:, :P]] + self._fp_dim
            np.multiply.at(bounds.reshape(-1), at.reshape(-1), np.broadcast_to(self._fp_prime, (B, P)).reshape(-1))
        for pi, li, d, n in self.axis_index:          # a fixed factor moved from X to Y
            on_y = X[:, pi] == 1
            bounds[KIND_X, on_y, li, d] //= n
            bounds[KIND_Y, on_y, li, d] *= n
        t, sx, sy = bounds
        if merge:
            merge_split_axes(sx, sy, self.x_allowed[None, :, :])
        return t, sx, sy

    def _spatial_order(self, sx: np.ndarray, sy: np.ndarray) -> np.ndarray | None:
        """The spatial loop order (innermost first) where constraints give a spatial permutation:
        X loops, then Y loops, each in the constraint's order (unlisted dimensions after, by
        index), then the unit loops; None (the default order) elsewhere."""
        inner = list(reversed(self.arch.levels))
        ranks = {}
        for li, lv in enumerate(inner):
            perm = self.constraints.get(lv.name, LevelConstraints()).spatial_permutation
            if perm:
                ranks[li] = np.array([perm.index(n) if n in perm else len(perm) + d
                                      for d, n in enumerate(self.problem.dims)], np.int64)
        if not ranks:
            return None
        D = self.D
        key = np.where(sx > 1, 0, np.where(sy > 1, 1, 2)) * (4 * D) + np.arange(D)
        for li, r in ranks.items():
            key[:, li, :] = np.where(sx[:, li] > 1, 0, np.where(sy[:, li] > 1, 1, 2)) * (4 * D) + r
        return np.argsort(key, axis=2, kind="stable")

    def encode(self, m: "MappingArrays | Mapping | list[Mapping]") -> np.ndarray:
        """Parameter vectors of mappings that lie in this mapspace (raises otherwise).

        Raises a CoexploreError when a factor, a keep/bypass choice, a factor bound or the order
        of a level's non-unit temporal loops breaks the constraints (any order is accepted at an
        innermost level without fan-out, where it changes nothing). The spatial loop order is no
        parameter: decode orders spatial loops as the constraints' spatial permutation (else X
        dims then Y dims by dimension index); it matters only where it changes link transfers
        between neighbours. With it, all 58 valid timeloop-mapper results of the public corpus
        encode and decode to Timeloop's numbers.
        """
        from coexplore.spec.mapping import to_arrays
        if isinstance(m, Mapping) or (isinstance(m, (list, tuple)) and m and all(isinstance(x, Mapping) for x in m)):
            m = to_arrays([m] if isinstance(m, Mapping) else list(m), self.arch, self.problem)
        if not isinstance(m, MappingArrays):
            raise CoexploreError(f"got a {type(m).__name__}", key="mappings",
                                 expected="MappingArrays (spec.mapping.to_arrays) or Mapping objects")
        B = len(m)
        X = np.zeros((B, self.n_params), np.int64)
        for b in range(B):
            base_x, base_y = self.base_x.copy(), self.base_y.copy()
            for pi, li, d, n in self.axis_index:        # a fixed factor the mapping has on Y
                if m.spatial_y[b, li, d] % n == 0 and m.spatial_x[b, li, d] % n:
                    X[b, pi] = 1
                    base_x[li, d] //= n
                    base_y[li, d] *= n
            inner = list(reversed(self.arch.levels))
            for k, a, base in ((KIND_T, m.temporal, self.base_t), (KIND_X, m.spatial_x, base_x),
                               (KIND_Y, m.spatial_y, base_y)):
                off = np.argwhere(a[b] % base != 0)          # a factor the constraints fix, not given
                if len(off):
                    li, d = off[0]
                    which = f"mapping {b + 1} of the batch" if B > 1 else "the mapping"
                    raise CoexploreError(f"{which} has {('temporal', 'spatial X', 'spatial Y')[k]} "
                                         f"{self.problem.dims[d]}={a[b, li, d]} at {inner[li].name}, where the "
                                         f"constraints fix {self.problem.dims[d]}={base[li, d]}", key="mapping",
                                         expected="a mapping in the mapspace")
            left = {k: a[b].copy() // base for k, a, base in
                    ((KIND_T, m.temporal, self.base_t), (KIND_X, m.spatial_x, base_x),
                     (KIND_Y, m.spatial_y, base_y))}
            for i, fp in enumerate(self.factor_params):
                for c, (li, k) in enumerate(fp.slots):
                    if left[k][li, fp.dim] % fp.prime == 0:
                        left[k][li, fp.dim] //= fp.prime
                        X[b, i] = c
                        break
                else:
                    inner = list(reversed(self.arch.levels))
                    given = {KIND_T: m.temporal, KIND_X: m.spatial_x, KIND_Y: m.spatial_y}
                    dim = self.problem.dims[fp.dim]
                    at = next(((k, li) for k in (KIND_T, KIND_X, KIND_Y) for li in range(len(inner))
                               if left[k][li, fp.dim] % fp.prime == 0 and left[k][li, fp.dim] > 1), None)
                    where = f"a factor {fp.prime} of {dim} at a level"
                    why = f"a factor {fp.prime} of {dim} finds no place"
                    if at is not None:
                        k, li = at
                        kind = "temporal" if k == KIND_T else "spatial"
                        where = (f"{dim}={given[k][b, li, fp.dim]} at {inner[li].name} "
                                 f"({('temporal', 'spatial X', 'spatial Y')[k]})")
                        c = self.constraints.get(inner[li].name, LevelConstraints())
                        fixed = getattr(c, f"{kind}_factors").get(dim)
                        if fixed is not None and fixed[0] == "=":       # the constraint it breaks, named
                            w = c.factor_where(kind, dim, inner[li].name)
                            why = (f"they fix {dim}={fixed[1]} there" + (f": {w['file']}, " if w["file"] else ": ")
                                   + f"key {w['key']}")
                    which = f"mapping {b + 1} of the batch" if B > 1 else "the mapping"
                    raise CoexploreError(f"{which} puts {where}, which the constraints do not allow ({why})",
                                         key="mapping", expected="a mapping in the mapspace")
            for pi, li, d in self.perm_index:
                order = list(m.perm[b, li])
                free = self.perm_free[li]
                ranked = sorted(free, key=lambda x: order.index(x))
                X[b, pi] = ranked.index(d)
            for pi, li, s in self.keep_index:
                X[b, pi] = int(m.keep[b, li, s])
        self._check_encoded(m, X)
        return X

    def _check_encoded(self, m: MappingArrays, X: np.ndarray) -> None:
        """Raise unless X decodes to the mappings m (same factors, keep/bypass and order of the
        non-unit loops): what the parameters cannot express breaks the constraints."""
        d = self.decode(X)
        mine = m.spatial_perm if m.spatial_perm is not None else default_spatial_perm(m)
        theirs = d.spatial_perm if d.spatial_perm is not None else default_spatial_perm(d)
        names, dims = self.arch.level_names()[::-1], self.problem.dims    # arrays: innermost level first
        ds = [x.name for x in self.problem.dataspaces]
        for b in range(len(m)):
            where = f"mapping {b}" if len(m) > 1 else "the mapping"
            for what, got, want in (("temporal", d.temporal, m.temporal), ("spatial X", d.spatial_x, m.spatial_x),
                                    ("spatial Y", d.spatial_y, m.spatial_y)):
                bad = np.argwhere(got[b] != want[b])
                if len(bad):
                    li, di = bad[0]
                    raise CoexploreError(f"{where} has {what} {dims[di]}={want[b, li, di]} at {names[li]}, which "
                                         "the constraints (or the fan-out) do not allow", key="mapping",
                                         expected="a mapping in the mapspace")
            if self.has_bounds and not self.satisfies(m.take([b]))[0]:
                raise CoexploreError(f"{where} {self._bound_broken(m, b)}", key="mapping",
                                     expected="a mapping in the mapspace")
            bad = np.argwhere(d.keep[b] != m.keep[b])
            if len(bad):
                li, si = bad[0]
                how = "keeps" if m.keep[b, li, si] else "bypasses"
                raise CoexploreError(f"{where} {how} {ds[si]} at {names[li]} against the constraints",
                                     key="mapping", expected="a mapping in the mapspace")
            for li in range(1 if self.canonical_innermost else 0, self.L):
                loops = [int(x) for x in m.perm[b, li] if m.temporal[b, li, x] > 1]
                allowed = [int(x) for x in d.perm[b, li] if d.temporal[b, li, x] > 1]
                if loops != allowed:
                    prefix = "".join(dims[x] for x in self.perm_prefix[li])
                    raise CoexploreError(f"{where} orders the loops at {names[li]} as "
                                         f"{''.join(dims[x] for x in loops)} (innermost first), against the "
                                         f"constraints{f' (permutation {prefix})' if prefix else ''}, which order "
                                         f"them {''.join(dims[x] for x in allowed)}", key="mapping",
                                         expected="a mapping in the mapspace")
            # the spatial loop order is no parameter: decode gives a level with a spatial permutation
            # constraint that order, so another one breaks it (elsewhere encode keeps decode's order)
            for li, lv in enumerate(reversed(self.arch.levels)):
                listed = self.constraints.get(lv.name, LevelConstraints()).spatial_permutation
                if not listed:
                    continue
                fan = m.spatial_x[b, li] * m.spatial_y[b, li]
                ranked = {dims.index(n) for n in listed if n in dims}   # the order of the others is free
                loops = [int(x) for x in mine[b, li] if fan[x] > 1 and x in ranked]
                if loops != [int(x) for x in theirs[b, li] if fan[x] > 1 and x in ranked]:
                    raise CoexploreError(f"{where} orders the spatial loops at {names[li]} as "
                                         f"{''.join(dims[x] for x in loops)} (innermost first), against the "
                                         "constraints' spatial permutation", key="mapping",
                                         expected="a mapping in the mapspace")

    def canonical(self, X: np.ndarray) -> np.ndarray:
        """One parameter vector per mapping: points that decode to the same mapping get the same
        vector (and `decode` gives each the mapping it had). Equal primes of a dimension are
        interchangeable, so their slot choices are sorted; a dimension that the parameters put on
        both X and Y of one level, which `decode` merges onto one axis, has its free primes on
        that axis; loop-order keys of unit loops are cleared and the others ranked. The exhaustive
        walk (`enumerate.canonical_points`) lists exactly such vectors."""
        X = np.array(X, np.int64, copy=True)
        if not len(X):
            return X
        if self.factor_params:
            t, sx, sy = self.decode_factors(X, checked=True, merge=False)
            both = (sx > 1) & (sy > 1)                     # [B, L, D]: decode merges these
            if both.any():
                P = len(self.factor_params)
                c, i = X[:, :P], np.arange(P)
                move = both[np.arange(len(X))[:, None], self._slot_level[i, c], self._fp_dim] \
                    & (self._slot_kind[i, c] == self._merged_from[i, c])
                X[:, :P] = np.where(move, self._merged_to[i, c], c)
            for cols in self._prime_groups:
                X[:, cols] = np.sort(X[:, cols], axis=1)
        else:
            t = self.decode_factors(X, checked=True)[0]
        for li, idx, dims in self._perm_columns:
            keys = X[:, idx] * self.D + dims[None, :]
            nonunit = t[:, li, dims] > 1
            keys = np.where(nonunit, keys, -1)
            ranks = np.argsort(np.argsort(keys, axis=1, kind="stable"), axis=1)
            X[:, idx] = np.where(nonunit, ranks, 0)
        return X

    def _canonical_tables(self) -> None:
        """What `canonical` needs about the factor parameters: the columns of each (dimension,
        prime), and per (parameter, slot) the spatial kind that decode merges away at that slot's
        level (-1: none) and the slot it merges to."""
        groups: dict[tuple[int, int], list[int]] = {}
        for i, fp in enumerate(self.factor_params):
            groups.setdefault((fp.dim, fp.prime), []).append(i)
        self._prime_groups = [cols for cols in groups.values() if len(cols) > 1]
        self._perm_columns = []               # per level with loop-order keys: level, their columns, dims
        for li, free in enumerate(self.perm_free):
            idx = [pi for pi, l2, _ in self.perm_index if l2 == li]
            if free and idx:
                self._perm_columns.append((li, idx, np.array([d for _, l2, d in self.perm_index if l2 == li], np.int64)))
        P = max(len(self.factor_params), 1)
        self._merged_from = np.full(self._slot_kind.shape, -1, np.int64)
        self._merged_to = np.tile(np.arange(self._slot_kind.shape[1], dtype=np.int64), (P, 1))
        for i, fp in enumerate(self.factor_params):
            for c, (li, k) in enumerate(fp.slots):
                if k == KIND_T:
                    continue
                keep = KIND_X if self.x_allowed[li, fp.dim] else KIND_Y    # decode's merge_split_axes
                if k != keep and (li, keep) in fp.slots:
                    self._merged_from[i, c] = k
                    self._merged_to[i, c] = fp.slots.index((li, keep))

    def enumeration_is_reach(self) -> bool:
        """Whether `canonical` maps every point into the exhaustive walk's list (`canonical_points`):
        not when factor bounds leave points out of it, nor where a fixed spatial factor on one axis
        meets primes that may take the other (decode merges them; the walk skips such points)."""
        self.log10_size()                                          # (counts size_exact when it can)
        fixed_vs_free = ((self.base_x > 1) & self.y_allowed) | ((self.base_y > 1) & self.x_allowed)
        return self.size_exact is not None and not self.has_bounds and not self.axis_index \
            and not fixed_vs_free.any()

    def distinct_keys(self, limit: int) -> "np.ndarray | list | None":
        """The sorted keys (`space.keys`: indices, or a list of rows' bytes in a space of 2^63 points
        or more) of the canonical vectors of every point, one per mapping,
        or None when there are more than `limit` or they cannot be listed: the encoded points
        canonicalised one by one where there are at most `limit` of them, else the walk's points
        (those it leaves out included: `canonical_points(every=True)`) canonicalised."""
        from coexplore.mapspace.enumerate import canonical_points
        space = self.space
        if space.size > limit and (self.log10_size() == float("-inf") or self.size_exact is None
                                   or self.size_exact > limit):
            return None          # (the walk's count is at most the mappings: more than `limit`, or not counted)
        if space.size >= 2 ** 63:             # keys are rows' bytes: a set of them
            found: set = set()
            try:
                for X in canonical_points(self, chunk=CANONICAL_CHUNK, max_factor_points=limit, every=True):
                    found.update(space.keys(self.canonical(X)))
                    if len(found) > limit:
                        return None
            except CoexploreError:            # (more factorisations than `limit`)
                return None
            return sorted(found)
        if space.size <= limit:
            batches = (space.unravel(np.arange(a, min(a + CANONICAL_CHUNK, space.size)))
                       for a in range(0, space.size, CANONICAL_CHUNK))
        else:
            batches = canonical_points(self, chunk=CANONICAL_CHUNK, max_factor_points=limit, every=True)
        parts, seen = [], 0
        try:
            for X in batches:
                parts.append(np.unique(space.ravel(self.canonical(X))))
                seen += len(X)
                if seen > 4 * limit and len(np.unique(np.concatenate(parts))) > limit:
                    return None
        except CoexploreError:                # (more factorisations than `limit`)
            return None
        keys = np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
        return keys if len(keys) <= limit else None

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n uniform points of the space ([n, n_params] ints), drawn with `rng`."""
        if not isinstance(rng, np.random.Generator):
            raise CoexploreError(f"got {type(rng).__name__}", key="rng",
                                 expected="a numpy Generator (np.random.default_rng(seed)), then n")
        if not isinstance(n, (int, np.integer)) or n < 0:
            raise CoexploreError(f"got {n!r}", key="n", expected="a number of points >= 0")
        return self.space.sample(rng, n)
