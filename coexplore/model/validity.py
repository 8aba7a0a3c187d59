"""Timeloop's mapping checks, vectorised: factorisation, spatial loops only where the architecture
fans out, every tensor kept somewhere, fan-out per axis (cumulative), capacity and minimum
utilization; and coexplore's own:
counts that could pass 64-bit integers.

`check(...)` returns a `Validity` with per-mapping arrays (which check failed first, at which
level, the mapped value and the limit); messages are only formatted for the rows asked for, so
large batches of mostly invalid random mappings stay cheap. As in Timeloop, levels are checked
from the compute level outward and the first failure is reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from coexplore.spec.architecture import Architecture
from coexplore.spec.problem import Problem

OK, FACTORS, X_EXPANSION, Y_EXPANSION, INSTANCES, CAPACITY, UNDERUSED, NO_FANOUT, OVERFLOW, UNKEPT = range(10)
# the model counts in int64: a mapping whose counts could pass this is refused, not wrapped (a bound
# on the counts, with room for the sums of reads, fills and updates)
COUNT_LIMIT = 2 ** 59


@dataclass
class Validity:
    valid: np.ndarray    # [B] bool
    kind: np.ndarray     # [B] int: OK or the failing check
    where: np.ndarray    # [B] int: level (-1: compute) or dimension index for FACTORS
    value: np.ndarray    # [B] int: mapped value
    limit: np.ndarray    # [B] int: what the hardware / problem allows
    products: np.ndarray | None = None   # [B, D] product of each dimension's factors
    # a buffer over its capacity whose fan-out check fails too: Timeloop says both, one after the other
    also: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None   # (kind, value, limit), kind OK if none

    def message(self, b: int, arch: Architecture, problem: Problem) -> str | None:
        kind = int(self.kind[b])
        if kind == OK:
            return None
        value, limit, where = int(self.value[b]), int(self.limit[b]), int(self.where[b])
        if kind == FACTORS:   # Timeloop's parser: one line per dimension whose factors are off
            dims = [where] if self.products is None else \
                np.flatnonzero(self.products[b] != np.asarray(problem.bounds)).tolist()
            got = [value] if self.products is None else [int(self.products[b, d]) for d in dims]
            return "\nERROR: ".join(
                f"parsing mapping: product of all factors of dimension {problem.dims[d]} is "
                f"{g if g < 2 ** 62 else 'more than 2^62'}, "
                f"which is not equal to the dimension size of the workload {problem.bounds[d]}."
                for d, g in zip(dims, got))
        name = arch.compute.name if where < 0 else arch.levels[len(arch.levels) - 1 - where].name
        if kind == NO_FANOUT:     # (Timeloop's parser refuses such a spatial directive)
            names = arch.level_names()     # (Timeloop names the next-inner storage level; none below the innermost)
            inner = f"({names[names.index(name) + 1]}) " if names.index(name) + 1 < len(names) else ""
            return (f"cannot find spatial tiling level associated with storage level {name}. This is because the "
                    f"number of instances of the next-inner level {inner}is the same as this level, which "
                    f"means there cannot be a spatial fanout (spatial factors {value} there)")
        if kind == OVERFLOW:
            reach = f"reach {value:.3e}" if value < 2 ** 62 else "pass 2^62"
            return (f"counts at level {name} could {reach}, beyond what 64-bit integers hold exactly "
                    f"(coexplore refuses the mapping rather than wrap them, as Timeloop's counters would)")
        text = f"couldn't map level {name}: " + _reason(kind, where, value, limit, arch)
        if self.also is not None and int(self.also[0][b]) != OK:      # appended without a separator, as Timeloop
            text += _reason(int(self.also[0][b]), where, int(self.also[1][b]), int(self.also[2][b]), arch)
        return text


def _reason(kind: int, where: int, value: int, limit: int, arch: Architecture) -> str:
    """Timeloop's fail_reason for one check at level `where` (-1: compute)."""
    if kind == UNKEPT:
        return "one of the tensors is bypassed in all storage levels"
    if kind == UNDERUSED:
        lv = arch.levels[len(arch.levels) - 1 - where]
        return (f"mapped tile size {value} is less than constrained minimum "
                f"utilization {lv.effective_size * lv.min_utilization:g}")
    arith = "max Arithmetic " if where < 0 else ""
    what = {X_EXPANSION: f"{arith}X expansion", Y_EXPANSION: f"{arith}Y expansion",
            INSTANCES: f"{arith}instances", CAPACITY: "tile size"}[kind]
    limit_what = ("buffer capacity" if kind == CAPACITY else
                  "hardware instances" if where < 0 else "available hardware instances")
    return f"mapped {what} {value} exceeds {limit_what} {limit}"


def check(arch: Architecture, problem: Problem, extents: np.ndarray, spatial_x: np.ndarray,
          spatial_y: np.ndarray, tile_sizes: np.ndarray, float_products: np.ndarray | None = None) -> Validity:
    """extents [B, L, D]: cumulative loop bounds per level (`nest.tile_extents`);
    tile_sizes [B, L, DS]: per-instance words of each kept dataspace (0 if bypassed);
    float_products [B, D]: each dimension's factors multiplied in floats (factors whose int64 product
    wraps to the bound are caught by it)."""
    B, L, D = extents.shape
    kind = np.zeros(B, np.int64)
    where = np.zeros(B, np.int64)
    value = np.zeros(B, np.int64)
    limit = np.zeros(B, np.int64)

    def fail(mask, k, w, v, lim):
        new = mask & (kind == OK)
        kind[new] = k
        where[new] = w if np.isscalar(w) else w[new]
        value[new] = v[new] if not np.isscalar(v) else v
        limit[new] = lim if np.isscalar(lim) else lim[new]

    bounds = np.asarray(problem.bounds, np.int64)
    prod = extents[:, -1, :]                                             # [B, D] all factors
    if float_products is not None:           # a product past int64 (wrapped): shown as its float value, capped
        with np.errstate(invalid="ignore"):
            big = np.minimum(float_products, 2.0 ** 62)
        prod = np.where(float_products != prod.astype(np.float64), big.astype(np.int64), prod)
    bad = prod != bounds[None, :]
    first = np.argmax(bad, axis=1)
    rows = np.arange(B)
    fail(bad.any(axis=1), FACTORS, first, prod[rows, first], bounds[first])
    px = np.prod(spatial_x, axis=2)
    py = np.prod(spatial_y, axis=2)
    # spatial loops at a level that does not fan out (arrays built by hand; the mapspace makes none)
    still = [L - 1 - i for i in range(L) if math.prod(arch.fanout(i)) == 1]
    if still and (spread := px[:, still] * py[:, still] > 1).any():
        for j, li in enumerate(still):
            fail(spread[:, j], NO_FANOUT, li, px[:, li] * py[:, li], 1)
    # a tensor no level keeps: Timeloop's Evaluate fails every level before any other check (tiling.cpp
    # CheckMaskValidity), and the first failing level it reports is the compute level
    ones = np.ones(B, np.int64)
    fail((tile_sizes.sum(axis=1) == 0).any(axis=1), UNKEPT, -1, ones, 1)
    # cumulative expansion feeding level l (spatial loops of levels > l); compute: all levels
    cx = np.cumprod(px[:, ::-1], axis=1)[:, ::-1]                       # product over l' >= l
    cy = np.cumprod(py[:, ::-1], axis=1)[:, ::-1]
    inner = list(reversed(arch.levels))
    units = [(-1, arch.compute, cx[:, 0], cy[:, 0])]
    units += [(li, lv, cx[:, li + 1] if li + 1 < L else ones, cy[:, li + 1] if li + 1 < L else ones)
              for li, lv in enumerate(inner)]
    used = tile_sizes.sum(axis=2)
    also = (np.zeros(B, np.int64), np.zeros(B, np.int64), np.zeros(B, np.int64))
    for li, lv, x, y in units:
        # Timeloop's order within a level: capacity (buffers), then instances, X, Y expansion; a buffer
        # checks its capacity and its fan-out separately and reports both when both fail
        before = kind == OK
        if li >= 0 and math.isfinite(lv.effective_size):
            fail(used[:, li] > lv.effective_size, CAPACITY, li, used[:, li], int(lv.effective_size))
            if lv.min_utilization > 0:        # Timeloop: tile < effective size x min_utilization
                least = lv.effective_size * lv.min_utilization
                fail(used[:, li] < least, UNDERUSED, li, used[:, li], math.ceil(least))
        sized = before & (kind != OK)         # failed its capacity check here
        for k, bad, v, lim in ((INSTANCES, x * y > lv.instances, x * y, lv.instances),
                               (X_EXPANSION, x > lv.mesh_x, x, lv.mesh_x), (Y_EXPANSION, y > lv.mesh_y, y, lv.mesh_y)):
            second = sized & bad & (also[0] == OK)
            also[0][second], also[1][second], also[2][second] = k, v[second], lim
            fail(bad, k, li, v, lim)
    _check_counts(problem, extents, tile_sizes, fail)
    return Validity(kind == OK, kind, where, value, limit, prod, also if (also[0] != OK).any() else None)


def _check_counts(problem: Problem, extents: np.ndarray, tile_sizes: np.ndarray, fail) -> None:
    """Refuse mappings whose counts could pass COUNT_LIMIT (huge strides: a tile's words can far exceed
    its operations). A level's traffic is at most its tile's words per tile, and its tiles number at
    most the operations over the operations of one tile; the compute level's at most the operations."""
    ops = float(math.prod(problem.bounds))
    if ops * max(problem.tensor_size(ds) for ds in problem.dataspaces) <= COUNT_LIMIT:
        return                               # no tile holds more than its tensor: no mapping can pass the limit
    per_tile = np.prod(extents.astype(np.float64), axis=2)                  # [B, L]
    bound = ops / per_tile * tile_sizes.max(axis=2, initial=0).astype(np.float64)
    if not len(bound) or bound.max(initial=ops) <= COUNT_LIMIT:
        return
    li = np.argmax(bound, axis=1)
    worst = bound[np.arange(len(bound)), li]
    fail(worst > COUNT_LIMIT, OVERFLOW, li, np.minimum(worst, 2.0 ** 62).astype(np.int64), COUNT_LIMIT)
