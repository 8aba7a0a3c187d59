"""Neighbourhood moves shared by GA and annealing: resample parameters of candidates."""

from __future__ import annotations

import numpy as np

from coexplore.search.space import DiscreteSpace


def mutate(space: DiscreteSpace, rng: np.random.Generator, x: np.ndarray, mask: np.ndarray,
           local: float = 0.5) -> np.ndarray:
    """Copy of x with the entries in `mask` changed to a different value.

    Ordinal parameters step to a neighbouring value (+-1, +-2) with probability `local`,
    otherwise (and for categorical parameters) a uniform different value is drawn.
    """
    out = np.array(x, dtype=np.int64, copy=True)
    rows, cols = np.nonzero(mask)
    if len(rows) == 0:
        return out
    card = space.cardinalities[cols]
    cur = out[rows, cols]
    # uniform different value: shift by 1..card-1 modulo card
    shift = 1 + (rng.random(len(rows)) * np.maximum(card - 1, 1)).astype(np.int64)
    new = np.where(card > 1, (cur + shift) % card, cur)
    step = rng.choice(np.array([-2, -1, 1, 2]), size=len(rows), p=[0.15, 0.35, 0.35, 0.15])
    local_ok = space.ordinal[cols] & (rng.random(len(rows)) < local) & (card > 2)
    stepped = np.clip(cur + step, 0, card - 1)
    stepped = np.where(stepped == cur, np.clip(cur - step, 0, card - 1), stepped)
    new = np.where(local_ok, stepped, new)
    out[rows, cols] = new
    return out


def one_change_mask(rng: np.random.Generator, n: int, d: int, extra: float = 0.0) -> np.ndarray:
    """Mask with one random parameter per row, plus each other parameter with probability extra."""
    m = rng.random((n, d)) < extra
    m[np.arange(n), rng.integers(0, d, n)] = True
    return m
