"""Temporal reuse in closed form: accesses of a child tile to its parent over the loops above it.

Timeloop simulates iterations 0 and 1 of every loop and scales iteration 1 by (n-1). The child
tile thus visits positions in the order of a binary counter over the nontrivial (n >= 2) temporal
loops above it, innermost first: a step of type j moves loop j from 0 to 1 and every inner
nontrivial loop from 1 back to 0, and occurs W_j = (n_j - 1) * prod(n_i, i outer to j) times.
A step's delta is the new tile minus the resident one (hyper-rectangle subtraction: reuse only if
the two tiles differ along exactly one rank and overlap), and Timeloop's stride rule discards the
resident tile when the translation differs from the previous non-zero one.

In that order every step of type j > m is directly preceded (ignoring zero-translation steps,
which leave the stride state alone) by a step of type m, the innermost loop whose translation is
non-zero; so a step m always keeps its reuse, and a step j > m keeps it only if its translation
equals step m's. That gives the sum in O(loops), with no simulation:
    accesses = |tile| + sum_j W_j * delta_j.
"""

from __future__ import annotations

import numpy as np


def rank_extents(P: np.ndarray, E: np.ndarray) -> np.ndarray:
    """Extents per rank of the projection of an op-space box with extents E [..., D]."""
    return (E - 1) @ P.T + 1


def temporal_accesses(P: np.ndarray, child_E: np.ndarray, loop_dim: np.ndarray, loop_n: np.ndarray,
                      loop_stride: np.ndarray) -> np.ndarray:
    """Per-instance accesses of a child tile over the temporal loops above it.

    P [R, D]: the dataspace's projection; child_E [B, D]: op-space extents of the child tile;
    loop_dim, loop_n, loop_stride [B, K]: the temporal loops above the child, innermost first.
    Returns [B] int64.
    """
    B, K = loop_n.shape
    D = child_E.shape[1]
    ext = rank_extents(P, child_E)                               # [B, R]
    full = np.prod(ext, axis=1)                                  # [B]
    if K == 0:
        return full
    nontrivial = loop_n >= 2
    # op-space translation of each step: +stride on its own dim, minus the strides of every inner
    # nontrivial loop (which fall back from 1 to 0)
    step = np.zeros((B, K, D), np.int64)
    np.put_along_axis(step, loop_dim[:, :, None], (loop_stride * nontrivial)[:, :, None], axis=2)
    delta = step - (np.cumsum(step, axis=1) - step)
    t = delta @ P.T                                              # [B, K, R] projected translations
    nz = t != 0
    cnt = nz.sum(axis=2)
    moving = cnt > 0
    r_star = np.argmax(nz, axis=2)
    t_star = np.abs(np.take_along_axis(t, r_star[:, :, None], 2)[:, :, 0])
    e_star = np.take_along_axis(ext, r_star, 1)
    partial = np.where((cnt == 1) & (t_star < e_star), t_star * (full[:, None] // e_star), full[:, None])
    # m: innermost nontrivial loop with a non-zero translation
    active = nontrivial & moving
    has_m = active.any(axis=1)
    m = np.argmax(active, axis=1)
    t_m = t[np.arange(B), m]                                     # [B, R]
    same_as_m = np.all(t == t_m[:, None, :], axis=2)
    d = np.where(~active, 0, np.where(same_as_m, partial, full[:, None]))
    # weights: (n_j - 1) * product of all outer bounds
    outer = np.cumprod(loop_n[:, ::-1], axis=1)[:, ::-1]         # prod over i >= j
    outer = np.concatenate([outer[:, 1:], np.ones((B, 1), np.int64)], axis=1)
    w = (loop_n - 1) * outer
    return full + np.where(has_m, (w * d).sum(axis=1), 0)
