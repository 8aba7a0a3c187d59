"""Average ranks (tied values share the mean of their ranks) along one axis, the numbers
`scipy.stats.rankdata(a, axis=axis)` gives, in numpy alone: importing scipy.stats takes about a
second, more than a short search. A slice holding a NaN ranks as all NaN (scipy's default)."""

from __future__ import annotations

import numpy as np


def rankdata(a, axis: int = 0) -> np.ndarray:
    """1-based average ranks of `a` along `axis` (floats: half-integers where ties are even)."""
    x = np.moveaxis(np.asarray(a), axis, -1)
    out = np.empty(x.shape, dtype=np.float64)
    n = x.shape[-1] if x.ndim else 0
    if x.size == 0:
        return np.moveaxis(out, -1, axis)
    order = np.argsort(x, axis=-1, kind="stable")
    ranked = np.take_along_axis(x, order, axis=-1)
    starts = np.ones(x.shape, dtype=bool)                  # where a run of equal sorted values begins
    starts[..., 1:] = ranked[..., 1:] != ranked[..., :-1]
    ends = np.ones(x.shape, dtype=bool)                    # ... and where it ends
    ends[..., :-1] = starts[..., 1:]
    pos = np.broadcast_to(np.arange(n), x.shape)
    first = np.maximum.accumulate(np.where(starts, pos, 0), axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends, pos, n), axis=-1), axis=-1), axis=-1)
    np.put_along_axis(out, order, (first + last) / 2 + 1, axis=-1)
    if x.dtype.kind in "fc":
        nan = np.isnan(x).any(axis=-1)
        if nan.any():
            out[nan] = np.nan
    return np.moveaxis(out, -1, axis)
