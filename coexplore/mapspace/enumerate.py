"""Every distinct mapping of a small mapspace, once each: the exhaustive optimum reference.

The encoded space counts the same mapping many times (the order of unit loops, and which of
several equal prime factors of one dimension goes where), so enumerating it is hopeless even for
tiny layers. Here each distinct mapping appears once, in canonical form (`MapSpace.canonical`):
- equal primes of one dimension are interchangeable: their slot choices are taken non-decreasing;
- per level only the loops with a factor > 1 are ordered: every permutation of them, the unit
  loops' keys 0;
- every keep/bypass combination the constraints leave free.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np

from coexplore.errors import CoexploreError


# factorisations counted per step: a few thousand keep the decoded bounds in the CPU caches
# (counting the 4M factorisations of an Eyeriss-like BERT layer: 8.7 s and 700 MB in steps of
# 200,000, 2.2-2.6 s in steps of 2,000-5,000)
COUNT_CHUNK = 4096


def _factor_groups(ms) -> list[tuple[list[int], np.ndarray]]:
    """Per (dimension, prime): its parameter columns and every multiset of slot choices; per
    fixed spatial factor with a choice of axis: its column and both choices."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, fp in enumerate(ms.factor_params):
        groups.setdefault((fp.dim, fp.prime), []).append(i)
    out = []
    for cols in groups.values():
        n_slots = len(ms.factor_params[cols[0]].slots)
        combos = np.array(list(itertools.combinations_with_replacement(range(n_slots), len(cols))), np.int64)
        out.append((cols, combos))
    for pi, _, _, _ in ms.axis_index:      # a fixed spatial factor on X or on Y: part of the factorisation
        out.append(([pi], np.array([[0], [1]], np.int64)))
    return out


def _check_factor_points(ms, max_factor_points: int) -> None:
    """The error `_factor_chunks` gives for more than `max_factor_points` factorisations, from the
    sizes of `_factor_groups` worked out without listing them: a group of k factors of one prime over
    n slots has comb(n + k - 1, k) multisets, a fixed spatial factor's axis 2 choices."""
    counts: dict[tuple[int, int], list[int]] = {}
    for fp in ms.factor_params:
        counts.setdefault((fp.dim, fp.prime), [len(fp.slots), 0])[1] += 1
    sizes = [math.comb(n + k - 1, k) for n, k in counts.values()] + [2] * len(ms.axis_index)
    total = math.prod(sizes) if sizes else 1
    if total > max_factor_points:
        raise CoexploreError(f"the space has {total:.3e} distinct factorisations, too many to enumerate",
                             key="max_size", expected=f"at most {max_factor_points:.0e}")


def _unravel(start: int, count: int, sizes: list[int]) -> list[np.ndarray]:
    """The mixed-radix digits (last size fastest, as np.unravel_index) of the indices start ..
    start + count - 1, exact for any number of points (Python integers above 2^62)."""
    low = 1                     # the fastest digits whose product stays well inside int64
    cut = len(sizes)
    while cut > 0 and low * sizes[cut - 1] <= 2 ** 40:
        cut -= 1
        low *= sizes[cut]
    offset = start % low + np.arange(count, dtype=np.int64)
    carry = offset // low                          # (a chunk shorter than `low` spans two values at most)
    digits_low = list(np.unravel_index(offset % low, sizes[cut:])) if cut < len(sizes) else []
    digits_high = [np.zeros(count, np.int64) for _ in sizes[:cut]]
    for h in np.unique(carry):
        rows = carry == h
        value = start // low + int(h)              # (a Python integer: beyond int64 too)
        for i in range(cut - 1, -1, -1):
            value, digits_high[i][rows] = divmod(value, sizes[i])
    return digits_high + digits_low


def _factor_chunks(ms, max_factor_points: int | None, chunk: int,
                   start: int = 0, every: bool = False) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Distinct factorisations as full parameter vectors (other columns 0) with their temporal
    factors [n, L, D], in chunks from factorisation number `start`; those that break the
    constraints' factor bounds are left out, and those decode merges onto another's mapping (a
    dimension on X and Y of one level), unless `every`. `max_factor_points` None: no limit (a walk)."""
    if max_factor_points is not None:
        _check_factor_points(ms, max_factor_points)   # before listing every group's choices (~16 ms)
    groups = _factor_groups(ms)
    sizes = [len(c) for _, c in groups]
    total = math.prod(sizes) if sizes else 1
    if max_factor_points is not None and total > max_factor_points:
        raise CoexploreError(f"the space has {total:.3e} distinct factorisations, too many to enumerate",
                             key="max_size", expected=f"at most {max_factor_points:.0e}")
    from coexplore.stops import DeferredInterrupt
    for first in range(start, total, chunk):
        if DeferredInterrupt.requested:   # a first Ctrl-C or SIGTERM: a count or a walk of minutes stops here too
            raise KeyboardInterrupt
        n = min(total, first + chunk) - first
        full = np.zeros((n, ms.n_params), np.int64)
        if groups:
            for (cols, combos), k in zip(groups, _unravel(first, n, sizes)):
                full[:, cols] = combos[k]
        t, sx, sy = ms.decode_factors(full, merge=False)
        if every:
            yield full, t
            continue
        one_axis = ~((sx > 1) & (sy > 1)).any(axis=(1, 2))     # a dimension on X and Y of one level: decoded
        if not one_axis.all():                                   # onto one axis, another point's mapping
            full, t, sx, sy = full[one_axis], t[one_axis], sx[one_axis], sy[one_axis]
        if ms.has_bounds:                 # factor bounds (X<=n, X>=n) and min parallelism
            ok = ms.bounds_kept(t, sx, sy)
            full, t = full[ok], t[ok]
        yield full, t


def _level_orders(n_keys: int, nonunit: tuple[int, ...]) -> np.ndarray:
    """Canonical key rows [k!, n_keys] for one level: unit loops 0, the others every order."""
    u = n_keys - len(nonunit)
    rows = []
    for perm in itertools.permutations(range(len(nonunit))):
        row = np.zeros(n_keys, np.int64)
        for pos, k in zip(perm, nonunit):
            row[k] = u + pos
        rows.append(row)
    return np.array(rows, np.int64).reshape(-1, n_keys)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Every row of a next to every row of b."""
    return np.concatenate([np.repeat(a, len(b), axis=0), np.tile(b, (len(a), 1))], axis=1)


def _order_columns(ms):
    """Levels with free loop orders [(level, param columns, dims)], the order and keep columns, and
    every keep/bypass combination [2^k, k]."""
    levels = []
    for li in range(len(ms.perm_free)):
        cols = [pi for pi, l2, _ in ms.perm_index if l2 == li]
        if cols:
            levels.append((li, cols, [d for _, l2, d in ms.perm_index if l2 == li]))
    keep_cols = [pi for pi, _, _ in ms.keep_index]
    keeps = np.array(list(itertools.product((0, 1), repeat=len(keep_cols))), np.int64)
    return levels, [c for _, cols, _ in levels for c in cols], keep_cols, keeps.reshape(2 ** len(keep_cols), -1)


def canonical_rows(ms, chunk: int = 4096) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The walk of `canonical_points` one factorisation at a time, of any size: (its parameter
    vector, its tail [T, order + keep columns]: every loop order of its non-unit loops x every
    keep/bypass choice, keep/bypass fastest); `tail_columns(ms)` says which columns the tail fills."""
    levels, _, _, keeps = _order_columns(ms)
    tails: dict[tuple, np.ndarray] = {}
    for full, temporal in _factor_chunks(ms, None, chunk):
        for r in range(len(full)):
            key = tuple(tuple(k for k, d in enumerate(dims) if temporal[r, li, d] > 1) for li, _, dims in levels)
            tail = tails.get(key)
            if tail is None:
                orders = np.zeros((1, 0), np.int64)
                for (li, cols, dims), nonunit in zip(levels, key):
                    orders = _cross(orders, _level_orders(len(cols), nonunit))
                tail = tails[key] = _cross(orders, keeps)
            yield full[r], tail


def tail_columns(ms) -> list[int]:
    """The parameter columns a `canonical_rows` tail fills: loop orders, then keep/bypass."""
    _, perm_cols, keep_cols, _ = _order_columns(ms)
    return perm_cols + keep_cols


def canonical_points(ms, chunk: int = 100_000, max_factor_points: int | None = 50_000_000,
                     every: bool = False) -> Iterator[np.ndarray]:
    """Batches of encoded vectors covering each distinct mapping of `ms` exactly once (a chunk's
    factorisations grouped by which loops are non-unit, for speed; `canonical_rows` walks them in
    index order). `max_factor_points` None: any number of factorisations. With `every`, also the
    points the walk leaves out (factor bounds broken; a split decode merges: some repeat a mapping),
    so that their `MapSpace.canonical` vectors are every point's."""
    levels, perm_cols, keep_cols, keeps = _order_columns(ms)
    tails: dict[tuple, np.ndarray] = {}
    buf: list[np.ndarray] = []
    size = 0
    for full, temporal in _factor_chunks(ms, max_factor_points, max(1, chunk // 8), every=every):
        patterns: dict[tuple, list[int]] = {}
        for r in range(len(full)):
            key = tuple(tuple(k for k, d in enumerate(dims) if temporal[r, li, d] > 1)
                        for li, _, dims in levels)
            patterns.setdefault(key, []).append(r)
        for key, rows in patterns.items():
            if key not in tails:
                orders = np.zeros((1, 0), np.int64)
                for (li, cols, dims), nonunit in zip(levels, key):
                    orders = _cross(orders, _level_orders(len(cols), nonunit))
                tails[key] = _cross(orders, keeps)             # [T, perm + keep columns]
            tail = tails[key]
            step = max(1, chunk // len(tail))
            for start in range(0, len(rows), step):
                part = full[rows[start:start + step]]
                block = np.repeat(part, len(tail), axis=0)
                block[:, perm_cols + keep_cols] = np.tile(tail, (len(part), 1))
                buf.append(block)
                size += len(block)
                if size >= chunk:
                    yield np.concatenate(buf)
                    buf, size = [], 0
    if buf:
        yield np.concatenate(buf)


def count_canonical(ms, max_factor_points: int = 50_000_000, stop_above: int | None = None) -> int:
    """Number of distinct mappings (without building them); with `stop_above`, counting stops as
    soon as the count exceeds it (the result is then only a lower bound above `stop_above`)."""
    import math
    fact = np.array([math.factorial(k) for k in range(ms.D + 1)], dtype=object)
    total = 0
    keep = 2 ** len(ms.keep_index)
    for full, temporal in _factor_chunks(ms, max_factor_points, COUNT_CHUNK):
        if stop_above is not None and total * keep > stop_above:
            break
        nonunit = temporal > 1                                      # [N, L, D]
        per_row = np.ones(len(full), dtype=object)
        for li in range(len(ms.perm_free)):
            dims = [d for _, l2, d in ms.perm_index if l2 == li]
            if dims:
                per_row = per_row * fact[nonunit[:, li, dims].sum(axis=1)]
        total += int(per_row.sum())
    return total * keep
