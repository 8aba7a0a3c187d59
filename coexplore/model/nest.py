"""Timeloop-compatible nest analysis, batched over mappings of one (architecture, problem).

Everything is computed in closed form with numpy over a batch [B] of mappings (levels are
indexed innermost = 0 here). The semantics follow Timeloop's nest analysis (`nest-analysis.cpp`)
and tile collapse (`tiling.cpp`):

* A level's tile is the box spanned by all loops at or below it, projected onto each dataspace.
* Temporal reuse: Timeloop simulates iterations 0 and 1 of every loop and scales iteration 1 by
  (n-1) ("temporal extrapolation"). The positions a child tile visits therefore follow a binary
  counter over the nontrivial temporal loops above it: stepping loop j from 0 to 1 resets every
  inner nontrivial loop from 1 to 0, and that step occurs (n_j-1) * prod(n_i, i outer to j) times.
  The delta of a step is the new tile minus the resident one (axis-aligned hyper-rectangle
  subtraction: reuse only if the tiles differ along one rank), discarded when the translation
  differs from the previous non-zero one (the stride rule; zero translations are ignored, as in
  Timeloop after its 2025 "translation fix"). `_temporal_accesses` evaluates the weighted sum of
  deltas exactly with a dynamic programme over (loop, stride state).
* Spatial: children whose deltas are identical share one parent access (multicast / spatial
  reduction); that is, children whose tiles sit at the same projected offset.
* Collapse: reads/fills/updates per kept level with bypass promotion (`MaskTiles`), partition
  sizes and first-read elision for read-write tensors, as `tiling.cpp` computes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np

from coexplore.spec.problem import Problem


@dataclass
class NestResult:
    """Per-instance counts, arrays indexed [B, L, DS] (levels innermost = 0)."""

    reads: np.ndarray
    fills: np.ndarray
    updates: np.ndarray
    size: np.ndarray            # utilized capacity (words per instance)
    instances: np.ndarray       # utilized instances [B, L]
    compute_cycles: np.ndarray  # [B]
    compute_instances: np.ndarray  # [B] utilized MACs


def projection_matrices(problem: Problem) -> list[np.ndarray]:
    """Per dataspace, an int matrix [ranks, dims] of coefficients."""
    mats = []
    for ds in problem.dataspaces:
        m = np.zeros((len(ds.ranks), len(problem.dims)), np.int64)
        for r, terms in enumerate(ds.ranks):
            for d, c in terms:
                m[r, d] += c
        mats.append(m)
    return mats


def _rank_extents(P: np.ndarray, E: np.ndarray) -> np.ndarray:
    """Extents per rank of the projection of an op-space box with extents E [..., D]."""
    return (E - 1) @ P.T + 1


def _distinct_offsets(P: np.ndarray, n: np.ndarray, stride: np.ndarray) -> np.ndarray:
    """Number of distinct projected offsets of a spatial fan-out.

    n [B, D]: spatial bounds per dim; stride [B, D]: op-space stride of one spatial step per dim.
    Ranks are independent when they use disjoint dims (true for CNN-like shapes); within a rank
    of two terms the count of distinct a*i + b*j is closed-form, more terms are enumerated.
    """
    B = n.shape[0]
    total = np.ones(B, np.int64)
    for r in range(P.shape[0]):
        dims = np.nonzero(P[r])[0]
        active = [d for d in dims]
        if len(active) == 1:
            d = active[0]
            total *= n[:, d]
        elif len(active) == 2:
            d1, d2 = active
            a = P[r, d1] * stride[:, d1]
            b = P[r, d2] * stride[:, d2]
            n1, n2 = n[:, d1], n[:, d2]
            g = np.gcd(a, b)
            a1, b1 = a // g, b // g
            cnt = np.minimum(n1, b1) * n2 + np.maximum(0, n1 - b1) * np.minimum(n2, a1)
            cnt = np.where((n1 == 1) | (n2 == 1), n1 * n2, cnt)
            total *= cnt
        elif len(active) > 2:
            out = np.empty(B, np.int64)
            for i in range(B):
                vals = np.zeros(1, np.int64)
                for d in active:
                    steps = np.arange(n[i, d], dtype=np.int64) * P[r, d] * stride[i, d]
                    vals = np.unique((vals[:, None] + steps[None, :]).ravel())
                out[i] = len(vals)
            total *= out
    return total


def _temporal_accesses(P: np.ndarray, child_E: np.ndarray, loop_dim: np.ndarray, loop_n: np.ndarray,
                       loop_stride: np.ndarray) -> np.ndarray:
    """Per-instance accesses a child tile makes to its parent over the temporal loops above it.

    child_E [B, D]: op-space extents of the child tile. loop_* [B, K]: the temporal loops above
    the child, innermost first (dimension, bound, op-space stride). Returns [B] int64.
    """
    B, K = loop_n.shape
    D = child_E.shape[1]
    ext = _rank_extents(P, child_E)                           # [B, R]
    full = np.prod(ext, axis=1)                                # [B]
    if K == 0:
        return full
    # keep only nontrivial loops (n >= 2), in order
    order = np.argsort(loop_n < 2, axis=1, kind="stable")
    loop_n = np.take_along_axis(loop_n, order, 1)
    loop_dim = np.take_along_axis(loop_dim, order, 1)
    loop_stride = np.take_along_axis(loop_stride, order, 1)
    K = int((loop_n >= 2).sum(axis=1).max())
    if K == 0:
        return full
    loop_n, loop_dim, loop_stride = loop_n[:, :K], loop_dim[:, :K], loop_stride[:, :K]
    valid = loop_n >= 2
    onehot = np.zeros((B, K, D), np.int64)
    np.put_along_axis(onehot, loop_dim[:, :, None], (loop_stride * valid)[:, :, None], axis=2)
    inner = np.cumsum(onehot, axis=1) - onehot               # sum over loops i < j
    delta = onehot - inner                                     # [B, K, D]
    t = delta @ P.T                                            # [B, K, R]
    nz = t != 0
    cnt = nz.sum(axis=2)
    absr = np.abs(t)
    r_star = np.argmax(nz, axis=2)                             # the moving rank when cnt == 1
    t_star = np.take_along_axis(absr, r_star[:, :, None], 2)[:, :, 0]
    e_star = np.take_along_axis(np.broadcast_to(ext[:, None, :], t.shape), r_star[:, :, None], 2)[:, :, 0]
    partial = np.where((cnt == 1) & (t_star < e_star), t_star * (full[:, None] // np.maximum(e_star, 1)),
                       full[:, None])
    partial = np.where(cnt == 0, 0, partial)
    zero = cnt == 0
    # canonical id of each step's translation (first step with an identical vector), 1-based
    same = np.all(t[:, :, None, :] == t[:, None, :, :], axis=3)  # [B, K, K]
    canon = np.argmax(same, axis=2) + 1                          # [B, K]
    S = K + 1
    states = np.arange(S)[None, :].repeat(B, 0)                  # [B, S]
    Fa = np.zeros((B, S), np.int64)
    Fo = states.copy()
    rows = np.arange(B)[:, None]
    for j in range(K):
        s1 = Fo
        a1 = Fa
        cj = canon[:, j:j + 1]
        z = zero[:, j:j + 1]
        is_null = s1 == 0
        is_same = s1 == cj
        d = np.where(z, 0, np.where(is_null | is_same, partial[:, j:j + 1], full[:, None]))
        s2 = np.where(z, s1, np.where(is_null, cj, np.where(is_same, s1, 0)))
        a2 = Fa[rows, s2]
        s3 = Fo[rows, s2]
        v = valid[:, j:j + 1]
        nm1 = (loop_n[:, j:j + 1] - 1)
        Fa = np.where(v, a1 + nm1 * (d + a2), a1)
        Fo = np.where(v, s3, s1)
    return full + Fa[:, 0]


def analyse(problem: Problem, temporal: np.ndarray, spatial_x: np.ndarray, spatial_y: np.ndarray,
            perm: np.ndarray, keep: np.ndarray) -> NestResult:
    """Reads, fills, updates (per instance), tile sizes and utilized instances for a batch."""
    B, L, D = temporal.shape
    DS = len(problem.dataspaces)
    mats = projection_matrices(problem)
    spatial = spatial_x * spatial_y                                    # [B, L, D]
    level_span = temporal * spatial
    E = np.cumprod(level_span, axis=1)                                 # tile extents at boundaries
    E_below = np.concatenate([np.ones((B, 1, D), np.int64), E[:, :-1]], axis=1)   # E_{l-1}
    Esp = E_below * spatial                                            # spatial-run boxes
    fanout = np.prod(spatial, axis=2)                                  # [B, L]
    rep = np.ones((B, L), np.int64)
    for l in range(L - 2, -1, -1):
        rep[:, l] = rep[:, l + 1] * fanout[:, l + 1]
    compute_cycles = np.prod(temporal.reshape(B, -1), axis=1)
    compute_instances = rep[:, 0] * fanout[:, 0]

    # temporal loops of each level, innermost first: dims, bounds, strides
    ldim = perm                                                          # [B, L, D]
    ln = np.take_along_axis(temporal, perm, axis=2)
    lstride = np.take_along_axis(Esp, perm, axis=2)

    reads = np.zeros((B, L, DS), np.int64)
    fills = np.zeros((B, L, DS), np.int64)
    updates = np.zeros((B, L, DS), np.int64)
    sizes = np.zeros((B, L, DS), np.int64)

    for s, ds in enumerate(problem.dataspaces):
        P = mats[s]
        size = np.prod(_rank_extents(P, E), axis=2)                  # [B, L]
        spsize = np.prod(_rank_extents(P, Esp), axis=2)
        # G[l]: distinct child tiles across level l's fan-out
        G = np.stack([_distinct_offsets(P, spatial[:, l], E_below[:, l]) for l in range(L)], axis=1)
        # partition sizes (integer, outermost first)
        part = np.zeros((B, L), np.int64)
        part[:, L - 1] = size[:, L - 1]
        for l in range(L - 2, -1, -1):
            denom = np.where(fanout[:, l + 1] > 1, spsize[:, l + 1], size[:, l])
            part[:, l] = part[:, l + 1] * size[:, l] // denom
        kp = keep[:, :, s]
        # A[k]: per-instance temporal accesses of level k's tile to the level above (k < L-1)
        A = np.zeros((B, L), np.int64)
        for k in range(L - 1):
            need = kp[:, k]
            if not need.any():
                continue
            A[:, k] = _temporal_accesses(P, E[:, k], ldim[:, k + 1:].reshape(B, -1),
                                         ln[:, k + 1:].reshape(B, -1), lstride[:, k + 1:].reshape(B, -1))
        # walk up: content accesses into each level, promoted through bypassed levels
        content = compute_cycles * G[:, 0]        # accesses arriving at level 0 from compute
        outer_kept = np.full(B, -1)
        for l in range(L):
            k = kp[:, l]
            sizes[:, l, s] = np.where(k, size[:, l], 0)
            if ds.read_write:
                updates[:, l, s] = np.where(k, content, 0)
                reads[:, l, s] = np.where(k, content - part[:, l], 0)
            else:
                reads[:, l, s] = np.where(k, content, 0)
            if l < L - 1:
                fill_next = A[:, l] - (part[:, l] if ds.read_write else 0)
                fills[:, l, s] = np.where(k, fill_next, 0)
                # content at level l+1: from level l's tile if kept, else promoted
                content = np.where(k, A[:, l] * G[:, l + 1], content * G[:, l + 1])
            outer_kept = np.where(k, l, outer_kept)
        # the outermost kept level (backing store) has no fills
        rows = np.arange(B)
        has = outer_kept >= 0
        fills[rows[has], outer_kept[has], s] = 0
    inst = np.broadcast_to(rep[:, :, None], (B, L, DS))
    return NestResult(reads, fills, updates, sizes, rep, compute_cycles, compute_instances)
