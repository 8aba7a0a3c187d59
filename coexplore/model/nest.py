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
  deltas exactly, in closed form (see its docstring).
* Spatial: children whose deltas are identical share one parent access (multicast / spatial
  reduction); that is, children whose tiles sit at the same projected offset.
* Link transfers: at each step a child whose delta equals the delta a mesh neighbour received at
  the previous step may take it from that neighbour, if that leaves fewer parent accesses. This
  happens with sliding windows (e.g. a temporal Q step over a spatial S fan-out); a cheap screen
  (`_prescreen`, `_link_candidates`) finds the few mappings where it can, and those are evaluated
  exactly (`_level_links`) and collapsed with Timeloop's histogram arithmetic
  (`_collapse_with_links`: peer reads/fills, masking that voids links).
* Collapse: reads/fills/updates per kept level with bypass promotion (`MaskTiles`), partition
  sizes and first-read elision for read-write tensors, as `tiling.cpp` computes them.
"""

from __future__ import annotations

import functools

from dataclasses import dataclass

import numpy as np

from coexplore.spec.problem import Problem

# which Timeloop's counting rules: today's (since PR #297, 2025); before it (a zero translation resets
# sliding-window reuse too: the 2024 exercise references); the Timeloop of 2020-21 that made the v0.3
# exercises' references (that reuse rule, and fills of a read-write tensor without first-read elision)
STRIDE_RULES = ("current", "pre2025", "v0.3")


def check_stride_rule(rule) -> str:
    """`rule` if it is one of STRIDE_RULES, else a CoexploreError naming `stride_rule`."""
    if rule not in STRIDE_RULES:
        from coexplore.errors import CoexploreError
        raise CoexploreError(f"unknown stride rule {rule!r}", key="stride_rule", option="--stride-rule",
                             expected="one of " + ", ".join(STRIDE_RULES))
    return rule
RULE_NOTES = {"pre2025": "sliding-window reuse as Timeloop before 2025",
              "v0.3": "the Timeloop of 2020-21: its sliding-window reuse, first fills of read-write tensors "
                      "counted, each ERT table's largest action per access, no leakage"}


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
    """Extents per rank of the projection of an op-space box with extents E [..., D].

    Written as a sum over the few non-zero coefficients (numpy has no BLAS for integers)."""
    out = np.empty(E.shape[:-1] + (P.shape[0],), np.int64)
    for r in range(P.shape[0]):
        acc = np.ones(E.shape[:-1], np.int64)
        for d in np.nonzero(P[r])[0]:
            acc += int(P[r, d]) * (E[..., d] - 1)
        out[..., r] = acc
    return out


def _distinct_offsets(P: np.ndarray, n: np.ndarray, stride: np.ndarray) -> np.ndarray:
    """Number of distinct projected offsets of a spatial fan-out.

    n [B, D]: spatial bounds per dim; stride [B, D]: op-space stride of one spatial step per dim.
    Ranks that share no dims are independent (CNN-like shapes): their counts multiply; within a
    rank of two terms the count of distinct a*i + b*j is closed-form, more terms are enumerated.
    Ranks that share a dim (A[m+k][k]) are enumerated together, as joint points.
    """
    B = n.shape[0]
    total = np.ones(B, np.int64)
    for group in _rank_groups(P.shape, P.tobytes()):
        if len(group) > 1:
            total *= _joint_offsets(P[group], n, stride)
            continue
        r = group[0]
        active = list(np.nonzero(P[r])[0])
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
            total *= _joint_offsets(P[[r]], n, stride)
    return total


@functools.lru_cache(maxsize=256)
def _rank_groups(shape: tuple, data: bytes) -> list[list[int]]:
    """The ranks of a projection matrix (int64, `shape`, as bytes) grouped by shared dims (connected
    through any dim); a problem has a few matrices, so they are worked out once."""
    P = np.frombuffer(data, np.int64).reshape(shape)
    groups: list[tuple[set, list[int]]] = []
    for r in range(P.shape[0]):
        dims, ranks = set(np.nonzero(P[r])[0].tolist()), [r]
        for g in [g for g in groups if g[0] & dims]:
            groups.remove(g)
            dims |= g[0]
            ranks = g[1] + ranks
        groups.append((dims, sorted(ranks)))
    return [ranks for dims, ranks in groups if dims]


def _joint_offsets(P: np.ndarray, n: np.ndarray, stride: np.ndarray) -> np.ndarray:
    """Distinct points (one coordinate per rank of P) a fan-out of n[b, d] steps of op-space stride
    stride[b, d] per dim projects to, enumerated per distinct fan-out (a fan-out has few children).
    A fan-out over one of the dims (or none) needs no enumeration: its n points are distinct."""
    dims = np.flatnonzero(P.any(axis=0))
    nd, sd = n[:, dims], stride[:, dims]
    out = np.prod(nd, axis=1).astype(np.int64)                  # exact where at most one dim fans out
    rows = np.flatnonzero((nd > 1).sum(axis=1) > 1)
    seen: dict[bytes, int] = {}
    Pd = P[:, dims]
    for i in rows:
        key = nd[i].tobytes() + sd[i].tobytes()
        if key not in seen:
            grids = np.meshgrid(*[np.arange(nd[i, k], dtype=np.int64) * sd[i, k] for k in range(len(dims))],
                                indexing="ij")
            pts = np.stack([g.ravel() for g in grids], axis=1) @ Pd.T       # [points, ranks]
            pts -= pts.min(axis=0)
            span = pts.max(axis=0) + 1
            if float(np.prod(span.astype(np.float64))) < 2.0 ** 62:     # one integer per point
                radix = np.concatenate([[1], np.cumprod(span[:-1])]).astype(np.int64)
                seen[key] = len(np.unique(pts @ radix))
            else:
                seen[key] = len(np.unique(pts, axis=0))
        out[i] = seen[key]
    return out


def _op_steps(loop_dim: np.ndarray, loop_n: np.ndarray, loop_stride: np.ndarray, D: int):
    """The nontrivial temporal loops above a tile and the op-space translation of each step.

    loop_* [B, K]: loops innermost first (dimension, bound, op-space stride). Returns the loops
    with n >= 2 moved to the front (order kept) and cut to the longest such list:
    (n [B, K'], valid [B, K'], delta [B, K', D]), delta[j] = the move of the tile when loop j steps
    from 0 to 1 and every inner nontrivial loop resets from 1 to 0 (binary-counter order).
    """
    B = loop_n.shape[0]
    if loop_n.shape[1] == 0:
        return np.zeros((B, 0), np.int64), np.zeros((B, 0), bool), np.zeros((B, 0, D), np.int64)
    order = np.argsort(loop_n < 2, axis=1, kind="stable")
    loop_n = np.take_along_axis(loop_n, order, 1)
    K = int((loop_n >= 2).sum(axis=1).max())
    if K == 0:
        return np.zeros((B, 0), np.int64), np.zeros((B, 0), bool), np.zeros((B, 0, D), np.int64)
    loop_n = loop_n[:, :K]
    loop_dim = np.take_along_axis(loop_dim, order[:, :K], 1)
    loop_stride = np.take_along_axis(loop_stride, order[:, :K], 1)
    valid = loop_n >= 2
    onehot = np.zeros((B, K, D), np.int64)
    np.put_along_axis(onehot, loop_dim[:, :, None], (loop_stride * valid)[:, :, None], axis=2)
    inner = np.cumsum(onehot, axis=1) - onehot               # sum over loops i < j
    return loop_n, valid, onehot - inner


def _step_table(P: np.ndarray, child_E: np.ndarray, delta: np.ndarray):
    """Per step j of the binary counter: rank translation, delta sizes and translation class.

    Returns (full [B], t [B, K, R], partial [B, K], zero [B, K], canon [B, K]): `partial` is the
    delta when the stride rule keeps the resident data (a slab if the tile moves along one rank by
    less than its extent, else the whole tile), `canon` a 1-based id shared by equal translations.
    """
    ext = _rank_extents(P, child_E)                           # [B, R]
    full = np.prod(ext, axis=1)                                # [B]
    t = delta @ P.T                                            # [B, K, R]
    nz = t != 0
    cnt = nz.sum(axis=2)
    absr = np.abs(t)
    r_star = np.argmax(nz, axis=2)                             # the moving rank when cnt == 1
    t_star = np.take_along_axis(absr, r_star[:, :, None], 2)[:, :, 0]
    e_star = np.take_along_axis(np.broadcast_to(ext[:, None, :], t.shape), r_star[:, :, None], 2)[:, :, 0]
    partial = np.where((cnt == 1) & (t_star < e_star), t_star * (full[:, None] // np.maximum(e_star, 1)),
                       full[:, None])
    zero = cnt == 0
    partial = np.where(zero, 0, partial)
    same = np.all(t[:, :, None, :] == t[:, None, :, :], axis=3)  # [B, K, K]
    canon = np.argmax(same, axis=2) + 1                          # [B, K]
    return full, t, partial, zero, canon


def _temporal_accesses(P: np.ndarray, child_E: np.ndarray, steps, zero_is_stride: bool = False) -> np.ndarray:
    """Per-instance accesses a child tile makes to its parent over the temporal loops above it.

    child_E [B, D]: op-space extents of the child tile; steps: `_op_steps` of the loops above it.
    Returns [B] int64: |tile| + sum_j W_j * delta_j, W_j = (n_j - 1) * prod(n_i, i outer to j).

    Current rule (zero translations leave the stride state alone), in closed form: in binary-counter
    order every step of a loop j > m is directly preceded, among the steps that move the tile, by a
    step of m = the innermost nontrivial loop whose step moves the tile. So step m always keeps its
    reuse (its state is empty or its own translation) and a step j > m keeps it exactly when its
    translation equals step m's; otherwise the whole tile is fetched again.
    The pre-2025 rule (`zero_is_stride`: a stationary step also counts as a stride) has no such
    shortcut and is evaluated with a dynamic programme over (loop, stride state).
    """
    loop_n, valid, delta = steps
    B, K = loop_n.shape
    if K == 0:
        return np.prod(_rank_extents(P, child_E), axis=1)
    if zero_is_stride:
        return _temporal_accesses_dp(P, child_E, steps)
    ext = _rank_extents(P, child_E)                              # [B, R]
    full = np.prod(ext, axis=1)                                  # [B]
    t = delta @ P.T                                              # [B, K, R]
    nz = t != 0
    cnt = nz.sum(axis=2)
    r_star = np.argmax(nz, axis=2)
    t_star = np.abs(np.take_along_axis(t, r_star[:, :, None], 2)[:, :, 0])
    e_star = np.take_along_axis(ext, r_star, 1)
    partial = np.where((cnt == 1) & (t_star < e_star), t_star * (full[:, None] // e_star), full[:, None])
    moving = valid & (cnt > 0)
    m = np.argmax(moving, axis=1)
    t_m = np.take_along_axis(t, m[:, None, None], 1)             # [B, 1, R]
    same_as_m = np.all(t == t_m, axis=2)
    d = np.where(moving, np.where(same_as_m, partial, full[:, None]), 0)
    outer = np.cumprod(loop_n[:, ::-1], axis=1)[:, ::-1]          # prod over i >= j
    outer = np.concatenate([outer[:, 1:], np.ones((B, 1), np.int64)], axis=1)
    return full + ((loop_n - 1) * valid * outer * d).sum(axis=1)


def _temporal_accesses_dp(P: np.ndarray, child_E: np.ndarray, steps) -> np.ndarray:
    """The pre-2025 stride rule: state 0 = no translation yet (or reset), s > 0 = the last
    translation (zero included) had id s."""
    loop_n, valid, delta = steps
    B, K = loop_n.shape
    full, t, partial, zero, canon = _step_table(P, child_E, delta)
    S = K + 1
    Fa = np.zeros((B, S), np.int64)
    Fo = np.arange(S)[None, :].repeat(B, 0)                     # end state from each start state
    rows = np.arange(B)[:, None]
    for j in range(K):
        s1 = Fo
        a1 = Fa
        cj = canon[:, j:j + 1]
        z = zero[:, j:j + 1]
        is_null = s1 == 0
        is_same = s1 == cj
        d = np.where(z, 0, np.where(is_null | is_same, partial[:, j:j + 1], full[:, None]))
        s2 = np.where(z, cj, np.where(is_null, cj, np.where(is_same, s1, 0)))
        a2 = Fa[rows, s2]
        s3 = Fo[rows, s2]
        v = valid[:, j:j + 1]
        nm1 = (loop_n[:, j:j + 1] - 1)
        Fa = np.where(v, a1 + nm1 * (d + a2), a1)
        Fo = np.where(v, s3, s1)
    return full + Fa[:, 0]


# --- link transfers --------------------------------------------------------------------------------
#
# Timeloop links every master spatial loop: at each call (one per step of the binary counter over
# the temporal loops above the fan-out) a child whose delta equals the delta a mesh neighbour held
# at the previous call may take it over the link instead of from the parent. The fan-out's children
# are numbered by Timeloop's spatial loop order (X loops innermost, then Y; outer loops more
# significant) and that number is read as (h, v) = (i % h_size, i // h_size) on the physical
# mesh below the level (h_size, v_size = the architecture's X/Y fan-out there). Links are used at
# a call when they leave fewer parent accesses than multicast alone. Since every child's delta is
# the same box moved by the child's offset, a child c is served over a link at step j exactly when
# (a) the delta at this call and at the previous one are of the same kind (both whole tiles or
# both slabs of the same translation), and (b) some neighbour n has offset(n) - offset(c) = t_j,
# the step's rank translation. Mappings where (b) cannot hold for any step (the usual case) are
# screened out cheaply; the rest are evaluated exactly per mapping.


def spatial_loops(P: np.ndarray, sx: np.ndarray, sy: np.ndarray, Eb: np.ndarray, pos: np.ndarray):
    """One level's spatial loops as 2D slots (X loop of each dimension, then Y loop), rows = mappings.

    sx, sy, Eb, pos [b, D]: X and Y bounds, child tile extents, and each dimension's position in
    the level's spatial permutation. Returns (n [b, 2D], step [b, 2D, R], key [b, 2D]): bound,
    rank-space offset of one step (a Y loop of a dimension that is also split on X strides over
    the X loop), and Timeloop's loop order key (X loops innermost, then Y; smaller = inner).
    """
    D = sx.shape[1]
    n = np.concatenate([sx, sy], axis=1)
    stride = np.concatenate([Eb, Eb * sx], axis=1)
    step = stride[:, :, None] * np.concatenate([P.T, P.T], axis=0)[None, :, :]
    key = np.concatenate([pos, pos + D], axis=1)
    return n, step, key


def _spatial_pos(spatial_perm, rows, l, D):
    """[b, D] position of each dimension in level l's spatial permutation (default: dim order,
    the order `from_arrays` writes: X dimensions, then Y dimensions, each in dimension order)."""
    if spatial_perm is None:
        return np.broadcast_to(np.arange(D), (len(rows), D))
    return np.argsort(spatial_perm[rows, l], axis=1)


def _child_offsets(n, step, key, Fm):
    """Offsets function: child numbers i [b, m] -> rank offsets [b, m, R], numbered as Timeloop
    does (X loops innermost, inner loops fastest)."""
    b, S = n.shape
    big = n > 1
    order = np.argsort(np.where(big, key, 10 * S), axis=1)
    m = max(1, int(big.sum(axis=1).max()))
    order = order[:, :m]
    nn = np.take_along_axis(n, order, 1)
    st = np.take_along_axis(step, order[:, :, None], 1)                 # [b, m, R]
    radix = np.cumprod(np.concatenate([np.ones((b, 1), np.int64), nn[:, :-1]], axis=1), axis=1)

    stf = st.astype(np.float64)

    def offsets(i):
        dig = (i[:, :, None] // radix[:, None, :]) % nn[:, None, :]      # [b, Fm, m]
        return np.rint(dig.astype(np.float64) @ stf).astype(np.int64)   # [b, Fm, R] (exact: small ints)
    return offsets


def _link_table(n: np.ndarray, step: np.ndarray, key: np.ndarray, h_size: int, v_size: int, T: np.ndarray):
    """For one mapping's fan-out (one row of `spatial_loops`): (G, F, Gb [K], Lk [K]).

    G: distinct child offsets (multicast groups); F: children; Lk[j]: children with a mesh
    neighbour whose offset differs by T[j]; Gb[j]: groups left among the other children.
    """
    F = int(np.prod(n))
    idx = np.arange(F)
    off = _child_offsets(n[None], step[None], key[None], F)(idx[None])[0]   # [F, R]
    lo = off.min(axis=0)
    width = off.max(axis=0) - lo + 1
    mult = np.cumprod(np.concatenate([[1], 2 * width[:-1] + 1]))           # codes for |diff| < width
    code = (off - lo) @ mult
    _, gid = np.unique(code, return_inverse=True)
    G = int(gid.max()) + 1
    K = T.shape[0]
    h, v = idx % h_size, idx // h_size
    inmesh = v < v_size
    cs, ns = [], []
    for ok, dn in (((h > 0), -1), ((h < h_size - 1), 1), ((v > 0), -h_size), ((v < v_size - 1), h_size)):
        c = idx[ok & inmesh]
        nb = c + dn
        keep = (nb >= 0) & (nb < F)
        cs.append(c[keep])
        ns.append(nb[keep])
    c = np.concatenate(cs)
    nb = np.concatenate(ns)
    if len(c) == 0 or K == 0:
        return G, F, np.full(K, G, np.int64), np.zeros(K, np.int64)
    dcode = (off[nb] - off[c] + width - 1) @ mult                           # [Np]
    inside = np.all(np.abs(T) < width[None, :], axis=1)
    tcode = np.where(inside, (T + width - 1) @ mult, -1)                    # [K]
    match = dcode[None, :] == tcode[:, None]                                # [K, Np]
    linked = np.zeros((K, F), bool)
    kk, pp = np.nonzero(match)
    linked[kk, c[pp]] = True
    Lk = linked.sum(axis=1)
    grp = np.zeros((F, G))
    grp[idx, gid] = 1.0
    Gb = ((~linked).astype(np.float64) @ grp > 0).sum(axis=1)
    return G, F, Gb.astype(np.int64), Lk.astype(np.int64)


def _link_dp(child_full, loop_n, valid, partial, zero, canon, use, Gb, Lk, G, F, zero_is_stride=False):
    """Multicast/link accounting of one fan-out over the whole call sequence (rows = mappings).

    Like `_temporal_accesses`, with the state extended by the kind of the last delta (0 empty,
    1 whole tile, 2 slab). Returns (total, weighted, link) per row: parent accesses summed over
    the histogram, the same weighted by multicast factor, and link transfers.
    """
    B, K = loop_n.shape
    S = 3 * (K + 1)
    acc = np.zeros((3, B, S), np.int64)
    Fo = np.arange(S)[None, :].repeat(B, 0)
    rows = np.arange(B)[:, None]
    Gc, Fc = G[:, None], F[:, None]
    for j in range(K):
        s1 = Fo
        st1, ty1 = s1 // 3, s1 % 3
        cj = canon[:, j:j + 1]
        z = zero[:, j:j + 1]
        is_null = st1 == 0
        is_same = st1 == cj
        ok = is_null | is_same
        pj = partial[:, j:j + 1]
        size = np.where(z, 0, np.where(ok, pj, child_full[:, None]))
        ptype = np.where(pj < child_full[:, None], 2, 1)
        ty2 = np.where(z, 0, np.where(ok, ptype, 1))
        st2 = np.where(z, cj if zero_is_stride else st1, np.where(is_null, cj, np.where(is_same, st1, 0)))
        link = (ty2 != 0) & (ty2 == ty1) & use[:, j:j + 1]
        d = np.stack([size * np.where(link, Gb[:, j:j + 1], Gc),
                      size * np.where(link, Fc - Lk[:, j:j + 1], Fc),
                      size * np.where(link, Lk[:, j:j + 1], 0)])
        s2 = st2 * 3 + ty2
        a2 = acc[:, rows, s2]
        s3 = Fo[rows, s2]
        v = valid[:, j:j + 1]
        nm1 = loop_n[:, j:j + 1] - 1
        acc = np.where(v[None], acc + nm1[None] * (d + a2), acc)
        Fo = np.where(v, s3, s1)
    start = 1                                                  # stride state 0, last delta = whole tile
    return (G * child_full + acc[0, :, start], F * child_full + acc[1, :, start], acc[2, :, start])


def _level_links(P, l, rows, steps, spatial_x, spatial_y, E_below, h_size, v_size, spatial_perm,
                 zero_is_stride=False):
    """Exact (total, weighted, link) of level l's fan-out for the given rows (one dataspace).

    steps: `_op_steps` of the temporal loops above the fan-out, for these rows only."""
    loop_n, valid, delta = steps
    Eb = E_below[rows, l]
    nb, K = loop_n.shape
    t = delta @ P.T                                            # [b, K, R]
    n2, step2, key2 = spatial_loops(P, spatial_x[rows, l], spatial_y[rows, l], Eb,
                                    _spatial_pos(spatial_perm, rows, l, Eb.shape[1]))
    G = np.zeros(nb, np.int64)
    F = np.zeros(nb, np.int64)
    Gb = np.zeros((nb, K), np.int64)
    Lk = np.zeros((nb, K), np.int64)
    for i, b in enumerate(rows):
        G[i], F[i], Gb[i], Lk[i] = _link_table(n2[i], step2[i], key2[i], int(h_size[b, l]), int(v_size[b, l]), t[i])
    use = valid & (Gb < G[:, None])
    if l == 0:
        # children are compute units: every call delivers one fresh point per child
        w = np.where(valid, loop_n - 1, 0)
        outer = np.cumprod(np.where(valid, loop_n, 1)[:, ::-1], axis=1)[:, ::-1]
        outer = np.concatenate([outer[:, 1:], np.ones((nb, 1), np.int64)], axis=1)   # prod over i > j
        W = w * outer
        tot = G + (W * np.where(use, Gb, G[:, None])).sum(axis=1)
        wsum = F + (W * np.where(use, F[:, None] - Lk, F[:, None])).sum(axis=1)
        link = (W * np.where(use, Lk, 0)).sum(axis=1)
        return tot, wsum, link
    full, _, partial, zero, canon = _step_table(P, Eb, delta)
    return _link_dp(full, loop_n, valid, partial, zero, canon, use, Gb, Lk, G, F, zero_is_stride)


def _carry_steps(n, step, key, member):
    """Rank-space offset differences of children whose numbers differ by one, per loop [b, S, R].

    Numbering the children by the loops flagged in `member` ([b, S], ordered by `key`), going
    from child i to i+1 steps one loop and resets the loops inside it (one pattern per loop).
    """
    inner = member[:, None, :] & member[:, :, None] & (key[:, None, :] < key[:, :, None])   # [b, k, k']
    return step - (inner * (n - 1)[:, None, :]) @ step


def _link_candidates(P, l, rows, steps, spatial_x, spatial_y, E_below, G, fanout, h_size, v_size, spatial_perm):
    """Screen: mask over `rows` of the level-l fan-outs that could use a link (one dataspace).

    Necessary condition: some step's rank translation t_j is nonzero (except at the compute
    fan-out, where equal points also link) and equals +-(offset difference of two mesh
    neighbours). Horizontal neighbours are consecutive children (a carry step over all loops);
    vertical ones are h_size apart, which is a carry step over the Y loops when the X fan-out
    fills the mesh width, and is enumerated otherwise. steps: `_op_steps` for these rows.
    """
    loop_n, valid, delta = steps
    out = np.zeros(len(rows), bool)
    if loop_n.shape[1] == 0:
        return out
    t = delta @ P.T                                                         # [b, K, R]
    sx, sy, Eb = spatial_x[rows, l], spatial_y[rows, l], E_below[rows, l]
    span = ((sx * sy - 1) * Eb) @ np.abs(P).T                              # [b, R]
    moving = np.any(t != 0, axis=2)
    if l == 0:
        moving = moving | (G[rows, 0] < fanout[rows, 0])[:, None]
    live = valid & moving & np.all(np.abs(t) <= span[:, None, :], axis=2)
    pre = np.any(live, axis=1)
    rows, t, live, sx, sy, Eb = rows[pre], t[pre], live[pre], sx[pre], sy[pre], Eb[pre]
    if len(rows) == 0:
        return out
    D = sx.shape[1]
    n, step, key = spatial_loops(P, sx, sy, Eb, _spatial_pos(spatial_perm, rows, l, D))
    member = n > 1
    isx = member & (np.arange(2 * D) < D)[None, :]
    hs = h_size[rows, l]
    hit = np.zeros(live.shape, bool)
    # rank vectors within the spread are compared through one integer code per vector
    radix = 2 * span[pre] + 1                                               # [b, R]
    if np.all(np.sum(np.log2(radix.astype(np.float64)), axis=1) < 62):
        mult = np.cumprod(np.concatenate([np.ones((len(rows), 1), np.int64), radix[:, :-1]], axis=1), axis=1)

        def code(v):                                                        # [b, m, R] -> [b, m]
            return np.einsum("bmr,br->bm", v, mult)
    else:
        def code(v):                                                        # fall back: no coding
            return v
    tc = code(t)

    def same(a, c):                                                         # a [b, K(, R)], c [b, m(, R)]
        if a.ndim == 2:
            return (a[:, :, None] == c[:, None, :]) | (a[:, :, None] == -c[:, None, :])
        return (np.all(a[:, :, None, :] == c[:, None, :, :], axis=3)
                | np.all(a[:, :, None, :] == -c[:, None, :, :], axis=3))

    def match(pr, ok):                                                      # pr [b, m, R], ok [b, m]
        return np.any(same(tc, code(pr)) & ok[:, None, :], axis=2)

    hit |= match(_carry_steps(n, step, key, member), member)
    xfill = np.prod(sx, axis=1) == hs
    hit |= match(_carry_steps(n, step, key, member & ~isx), member & ~isx) & xfill[:, None]
    other = np.nonzero(~xfill & (hs > 1) & np.any(live & ~hit, axis=1))[0]
    if len(other):
        # enumerate the vertical neighbour pairs (i, i + h_size) of these fan-outs
        F = np.prod(sx[other] * sy[other], axis=1)
        Fm = int(F.max())
        i = np.arange(Fm)[None, :]
        h2 = hs[other, None]
        off = _child_offsets(n[other], step[other], key[other], Fm)(np.broadcast_to(i, (len(other), Fm)))
        diff = np.take_along_axis(off, np.minimum(i + h2, Fm - 1)[:, :, None], 1) - off
        ok = (i + h2 < F[:, None]) & (i // h2 < v_size[rows[other], l][:, None] - 1)
        if tc.ndim == 2:
            dcode = np.einsum("bmr,br->bm", diff, mult[other])
            eq = same(tc[other], dcode)                                  # [bo, K, Fm]
        else:
            eq = same(t[other], diff)
        hit[other] |= np.any(eq & ok[:, None, :], axis=2) & live[other]
    out[np.nonzero(pre)[0]] = np.any(live & hit, axis=1)
    return out


def _prescreen(P, ldim, ln):
    """[b] rows whose temporal loops above a fan-out (ldim, ln [b, L', D]) admit a link (not at
    the compute fan-out).

    A step's rank translation must be nonzero and lie within the children's spread. On a rank of
    one dimension every step that moves it moves it by more than the spread (strides of nested
    loops of one dimension grow geometrically, and the smallest is the whole fan-out's extent), so
    the stepping loop and every nontrivial loop inside it must avoid dimensions of such ranks, and
    one of them must move a mixed rank (two or more dimensions: sliding windows).
    """
    nz = P != 0
    single = nz.sum(axis=1) == 1
    avoid = nz[single].any(axis=0)                          # [D] dims of single-dimension ranks
    mixed = nz[~single].any(axis=0) & ~avoid                # dims moving only mixed ranks
    if not mixed.any():
        return np.zeros(ldim.shape[0], bool)
    b = ldim.shape[0]
    dims = ldim.reshape(b, ldim.shape[1] * ldim.shape[2])
    big = ln.reshape(b, dims.shape[1]) >= 2
    bad = big & avoid[dims]
    first_bad = np.where(bad.any(axis=1), np.argmax(bad, axis=1), dims.shape[1])
    good = big & mixed[dims] & (np.arange(dims.shape[1])[None, :] < first_bad[:, None])
    return good.any(axis=1)


def tile_extents(temporal: np.ndarray, spatial_x: np.ndarray, spatial_y: np.ndarray) -> np.ndarray:
    """Op-space extents of every level's tile [B, L, D] (cumulative loop bounds, innermost first);
    the outermost row is the product of all factors, i.e. the problem bounds when valid."""
    return np.cumprod(temporal * spatial_x * spatial_y, axis=1)


def tile_sizes(problem: Problem, E: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Words each instance of each level holds per dataspace [B, L, DS] (0 where bypassed), from
    the tile extents E: the capacity check needs only these, so invalid mappings are rejected
    before the access analysis."""
    out = np.zeros(keep.shape, np.int64)
    Em1 = [np.ascontiguousarray(E[..., d]) - 1 for d in range(E.shape[-1])]   # contiguous per dim
    for s, P in enumerate(projection_matrices(problem)):
        size = None
        for r in range(P.shape[0]):
            ext = np.ones(E.shape[:-1], np.int64)
            for d in np.nonzero(P[r])[0]:
                ext += int(P[r, d]) * Em1[d] if P[r, d] != 1 else Em1[d]
            size = ext if size is None else size * ext
        out[..., s] = size
    out[~keep] = 0
    return out


def take_rows(res: NestResult, idx: np.ndarray, B: int) -> NestResult:
    """A NestResult of B rows holding `res` at rows idx (zeros elsewhere)."""
    def put(a):
        out = np.zeros((B,) + a.shape[1:], a.dtype)
        out[idx] = a
        return out
    return NestResult(*(put(getattr(res, f)) for f in
                        ("reads", "fills", "updates", "size", "instances", "compute_cycles", "compute_instances")))


def analyse(problem: Problem, temporal: np.ndarray, spatial_x: np.ndarray, spatial_y: np.ndarray,
            perm: np.ndarray, keep: np.ndarray, mesh_x: np.ndarray | None = None,
            mesh_y: np.ndarray | None = None, spatial_perm: np.ndarray | None = None,
            links: bool = True, stride_rule: str = "current") -> NestResult:
    """Reads, fills, updates (per instance), tile sizes and utilized instances for a batch.

    mesh_x, mesh_y [L]: the architecture's X/Y fan-out below each level (inner mesh / own mesh),
    which places a fan-out's children on the link mesh, widened to the mapping's own X/Y fan-out
    where that is larger (nest-analysis.cpp: h_size = max(physical, logical)); default: the
    mapping's own X/Y fan-out.
    spatial_perm [B, L, D]: each level's spatial loop order (innermost first), which numbers the
    children on that mesh; default: see `_spatial_pos`. Both matter only for link transfers.
    links=False skips link transfers (as TIMELOOP_DISABLE_LINK_TRANSFERS=1 does).
    stride_rule: "current" (Timeloop since PR #297, 2025: zero translations are ignored),
    "pre2025" (a zero translation resets sliding-window reuse too; the 2024 exercise references) or
    "v0.3" (as pre2025, and a read-write tensor's fills count every tile it receives, first reads
    included, while the level above elides those reads: the Timeloop of 2020-21).
    """
    check_stride_rule(stride_rule)
    legacy = stride_rule != "current"
    elide = stride_rule != "v0.3"          # a read-write tensor's first fills are not counted
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
    compute_cycles = np.prod(temporal.reshape(B, L * D), axis=1)
    compute_instances = rep[:, 0] * fanout[:, 0]
    if mesh_x is None:
        h_size = np.prod(spatial_x, axis=2)
        v_size = np.prod(spatial_y, axis=2)
    else:    # Timeloop lays children out on max(physical, mapped) X and Y (a lenient fan-out widens it)
        h_size = np.maximum(np.asarray(mesh_x, np.int64)[None, :], np.prod(spatial_x, axis=2))
        v_size = np.maximum(np.asarray(mesh_y, np.int64)[None, :], np.prod(spatial_y, axis=2))

    # temporal loops of each level, innermost first: dims, bounds, strides
    ldim = perm                                                          # [B, L, D]
    ln = np.take_along_axis(temporal, perm, axis=2)
    lstride = np.take_along_axis(Esp, perm, axis=2)
    step_cache: dict[int, tuple] = {}

    def steps_above(k: int):
        """`_op_steps` of the temporal loops of levels > k (k = -1: all levels)."""
        if k not in step_cache:
            step_cache[k] = _op_steps(ldim[:, k + 1:].reshape(B, -1), ln[:, k + 1:].reshape(B, -1),
                                      lstride[:, k + 1:].reshape(B, -1), D)
        return step_cache[k]

    spatial_levels = [l for l in range(L) if (fanout[:, l] > 1).any()] if links else []

    fans = (spatial != 1).any(axis=(0, 2))                             # [L]: a spatial loop in the batch
    ones_B = np.ones(B, np.int64)
    reads = np.zeros((B, L, DS), np.int64)
    fills = np.zeros((B, L, DS), np.int64)
    updates = np.zeros((B, L, DS), np.int64)
    sizes = np.zeros((B, L, DS), np.int64)

    for s, ds in enumerate(problem.dataspaces):
        P = mats[s]
        size = np.prod(_rank_extents(P, E), axis=2)                  # [B, L]
        spsize = np.prod(_rank_extents(P, Esp), axis=2)
        # G[l]: distinct child tiles across level l's fan-out
        # (a level whose spatial bounds are all 1 in the batch: one child tile, as _distinct_offsets gives)
        G = np.stack([_distinct_offsets(P, spatial[:, l], E_below[:, l]) if fans[l] else ones_B
                      for l in range(L)], axis=1)
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
            if kp[:, k].any():
                A[:, k] = _temporal_accesses(P, E[:, k], steps_above(k), legacy)
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
                fill_next = A[:, l] - (part[:, l] if ds.read_write and elide else 0)
                fills[:, l, s] = np.where(k, fill_next, 0)
                # content at level l+1: from level l's tile if kept, else promoted
                content = np.where(k, A[:, l] * G[:, l + 1], content * G[:, l + 1])
            outer_kept = np.where(k, l, outer_kept)
        # the outermost kept level (backing store) has no fills
        rows = np.arange(B)
        has = outer_kept >= 0
        fills[rows[has], outer_kept[has], s] = 0

        # link transfers: screen, then evaluate the few candidate rows exactly
        linked = np.zeros((B, L), bool)
        tot = np.zeros((B, L), np.int64)
        wsum = np.zeros((B, L), np.int64)
        lnk = np.zeros((B, L), np.int64)
        for l in spatial_levels:
            cand_rows = np.nonzero(fanout[:, l] > 1)[0]
            if l > 0:
                cand_rows = cand_rows[_prescreen(P, ldim[cand_rows, l:], ln[cand_rows, l:])]
            if len(cand_rows) == 0:
                continue
            nr, nl = len(cand_rows), (L - l) * D
            if l - 1 in step_cache:
                st = tuple(x[cand_rows] for x in step_cache[l - 1])
            else:
                st = _op_steps(ldim[cand_rows, l:].reshape(nr, nl), ln[cand_rows, l:].reshape(nr, nl),
                               lstride[cand_rows, l:].reshape(nr, nl), D)
            keep_c = _link_candidates(P, l, cand_rows, st, spatial_x, spatial_y, E_below, G, fanout, h_size, v_size,
                                      spatial_perm)
            if not keep_c.any():
                continue
            cand_rows = cand_rows[keep_c]
            t_, w_, k_ = _level_links(P, l, cand_rows, tuple(x[keep_c] for x in st), spatial_x, spatial_y, E_below,
                                      h_size, v_size, spatial_perm, legacy)
            used = k_ > 0
            r = cand_rows[used]
            linked[r, l] = True
            tot[r, l], wsum[r, l], lnk[r, l] = t_[used], w_[used], k_[used]
        if linked.any():
            r = np.nonzero(linked.any(axis=1))[0]
            _collapse_with_links(r, s, ds.read_write and elide, ds.read_write, kp[r], G[r], fanout[r], A[r],
                                 compute_cycles[r], part[r],
                                 rep[r], outer_kept[r], linked[r], tot[r], wsum[r], lnk[r], reads, fills, updates)
    return NestResult(reads, fills, updates, sizes, rep, compute_cycles, compute_instances)


def _collapse_with_links(r, s, elide_fills, read_write, kp, G, F, A, cc, part, rep, outer_kept, linked, tot, wsum, lnk,
                         reads, fills, updates):
    """Timeloop's tile collapse for rows whose fan-outs use links (one dataspace), in place
    (`elide_fills`: a read-write tensor's fills less its partition, as today's Timeloop counts them).

    Follows tiling.cpp literally, in floating point as Timeloop does: a level's content is the
    total of its access histogram; masking a level scales the next level's histogram so that its
    weighted accesses equal the masked level's content times the fan-out (and voids that level's
    link transfers); the parent share is weighted accesses / fan-out; link transfers of level l+1
    become peer reads and fills of a kept level l, divided by all of level l's instances.
    """
    nb, L = kp.shape
    ok_w = np.where(linked, wsum, 1).astype(np.float64)
    content = np.where(linked[:, 0], tot[:, 0], cc * G[:, 0]).astype(np.float64)
    for l in range(L):
        k = kp[:, l]
        peer = np.zeros(nb)
        if l < L - 1:
            live = k & linked[:, l + 1] & (l + 1 <= outer_kept)
            peer = np.where(live, lnk[:, l + 1] / np.maximum(rep[:, l], 1), 0.0)
        if read_write:
            updates[r, l, s] = np.where(k, np.round(content), 0)
            reads[r, l, s] = np.where(k, np.round(content + peer - part[:, l]), 0)
        else:
            reads[r, l, s] = np.where(k, np.round(content + peer), 0)
        if l < L - 1:
            share = np.where(linked[:, l + 1], wsum[:, l + 1] / F[:, l + 1], A[:, l])
            f = share + peer - (part[:, l] if elide_fills else 0)
            # read-write fills are rounded; read-only fills are a double stored in an unsigned
            # integer (tiling.cpp), i.e. truncated
            f = np.round(f) if read_write else np.trunc(f)
            fills[r, l, s] = np.where(k & (l != outer_kept), f, 0)
            own = np.where(linked[:, l + 1], tot[:, l + 1], A[:, l] * G[:, l + 1]).astype(np.float64)
            promoted = np.where(linked[:, l + 1], tot[:, l + 1] * (content * F[:, l + 1] / ok_w[:, l + 1]),
                                content * G[:, l + 1])
            content = np.where(k, own, promoted)
    rows_ok = outer_kept >= 0
    fills[r[rows_ok], outer_kept[rows_ok], s] = 0
