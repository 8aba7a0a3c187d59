"""Uniform random mappings of one (architecture, layer), drawn straight into model arrays.

Every prime factor of every dimension goes to a random slot: a level's temporal loop, or its
spatial X or Y fan-out where that level has one (so products always equal the layer bounds;
fan-outs may still overflow, which the model reports as invalid). Loop orders are random
permutations; keep/bypass is given (e.g. from the architecture's constraints) or all-keep.
"""

from __future__ import annotations

import numpy as np

from coexplore.spec.architecture import Architecture
from coexplore.spec.mapping import MappingArrays
from coexplore.spec.problem import Problem


def prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def fanouts(arch: Architecture) -> tuple[np.ndarray, np.ndarray]:
    """Per level (innermost = 0), the X and Y fan-out from it to the next inner level."""
    fx, fy = zip(*(arch.fanout(i) for i in reversed(range(len(arch.levels)))))
    return np.array(fx), np.array(fy)


def fanout_overflow(arch: Architecture, m: MappingArrays, b: int, dims: list[str]) -> tuple[str, str, str] | None:
    """Where mapping b spreads past a level's own fan-out, which timeloop-mapper refuses ("mapped
    fanoutX .. exceeds hardware fanoutX ..") and timeloop-model accepts while the product across
    levels fits the meshes: (axis, level, in words), or None."""
    fx, fy = fanouts(arch)
    names = arch.level_names()[::-1]                                   # innermost level first
    for axis, got, fan in (("X", m.spatial_x[b], fx), ("Y", m.spatial_y[b], fy)):
        for li in np.flatnonzero(np.prod(got, axis=1) > fan):
            loops = " ".join(f"{dims[d]}={got[li, d]}" for d in range(len(dims)) if got[li, d] > 1)
            return axis, names[li], (f"spreads {int(np.prod(got[li]))}-way in {axis} at {names[li]} ({loops}), "
                                     f"which fans out {int(fan[li])} in {axis}")
    return None


def merge_split_axes(sx: np.ndarray, sy: np.ndarray, prefer_x: np.ndarray | bool = True) -> None:
    """In place: a dimension with factors on both X and Y of one level keeps them on one axis
    (X where `prefer_x`), since a Timeloop mapping has one spatial factor per dimension and level."""
    both = (sx > 1) & (sy > 1)
    if not both.any():
        return
    px = np.broadcast_to(prefer_x, sx.shape)
    to_x = both & px
    to_y = both & ~px
    sx[to_x] *= sy[to_x]
    sy[to_x] = 1
    sy[to_y] *= sx[to_y]
    sx[to_y] = 1


def random_mappings(arch: Architecture, problem: Problem, n: int, rng: np.random.Generator,
                    keep: np.ndarray | None = None) -> MappingArrays:
    L, D, S = len(arch.levels), len(problem.dims), len(problem.dataspaces)
    fx, fy = fanouts(arch)
    slots = [("t", l) for l in range(L)] + [("x", l) for l in range(L) if fx[l] > 1] + \
            [("y", l) for l in range(L) if fy[l] > 1]
    t = np.ones((n, L, D), np.int64)
    sx = np.ones((n, L, D), np.int64)
    sy = np.ones((n, L, D), np.int64)
    arr = {"t": t, "x": sx, "y": sy}
    rows = np.arange(n)
    for d, bound in enumerate(problem.bounds):
        for p in prime_factors(bound):
            choice = rng.integers(0, len(slots), n)
            for si, (kind, l) in enumerate(slots):
                sel = rows[choice == si]
                arr[kind][sel, l, d] *= p
    merge_split_axes(sx, sy)
    perm = np.argsort(rng.random((n, L, D)), axis=2).astype(np.int64)
    if keep is None:
        keep = np.ones((L, S), bool)
        for li, lv in enumerate(reversed(arch.levels)):
            keep[li] = not lv.is_dummy
    k = np.broadcast_to(np.asarray(keep, bool), (n, L, S)).copy()
    return MappingArrays(t, sx, sy, perm, k)
