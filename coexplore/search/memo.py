"""Memory of evaluated candidates, so a searcher need not ask the cost model twice.

Learners that sample from a concentrated policy draw the same point again and again; the
memory answers those draws from what was already evaluated, and the searcher asks only for
new points. Every asked point is a cost-model sample; remembered points cost nothing. Points are
keyed by their candidate (`DiscreteSpace.canonical`): a mapping drawn again with its unit loops in
another order, or with two equal primes of a dimension swapped, is the same mapping, not a new one.
"""

from __future__ import annotations

import numpy as np

from coexplore.search.space import DiscreteSpace


class Memo:
    """Losses of the points evaluated so far and the points asked but not yet told, by key."""

    def __init__(self, space: DiscreteSpace):
        self.space = space
        self.losses: dict = {}
        self.pending: set = set()  # asked, not yet told

    def keys(self, batch: np.ndarray) -> list:
        """The memory's keys of points: their candidates' (`space.canonical`) keys."""
        return self.space.keys(self.space.canonical(batch))

    def lookup(self, batch: np.ndarray) -> tuple[list, np.ndarray, np.ndarray]:
        """keys, known losses (nan where unknown) and a mask of rows not seen before.

        A row is 'new' if it is neither evaluated, nor pending, nor a repeat of an earlier
        row of the same batch.
        """
        keys = self.keys(batch)
        known = np.full(len(keys), np.nan)
        new = np.zeros(len(keys), dtype=bool)
        fresh: set = set()
        for i, k in enumerate(keys):
            v = self.losses.get(k)
            if v is not None:
                known[i] = v
            elif k not in self.pending and k not in fresh:
                new[i] = True
                fresh.add(k)
        return keys, known, new

    def mark_pending(self, keys) -> None:
        self.pending.update(keys)

    def store(self, batch: np.ndarray, losses: np.ndarray) -> None:
        for k, v in zip(self.keys(batch), np.asarray(losses, dtype=float).tolist()):
            self.losses[k] = v
            self.pending.discard(k)

    def __len__(self) -> int:
        return len(self.losses)

    def covers(self) -> bool | None:
        """True once every candidate of the space is evaluated (so the best is the optimum), else
        None (not known to be done): a searcher's `done`."""
        return True if len(self.losses) >= self.space.n_distinct else None

    # pickled compactly (a checkpoint holds every evaluated point): the points as one small-integer
    # array instead of a key object each, their keys rebuilt in the same order
    def __getstate__(self) -> dict:
        keys = list(self.losses)
        if keys and isinstance(keys[0], bytes):       # a space too large to index: rows
            points = self.space.points(keys)
            stored = points.astype(np.min_scalar_type(int(self.space.cardinalities.max())))
        else:                                         # indices into the space
            stored = np.array(keys, dtype=np.int64)
        return {"space": self.space, "keys": stored,
                "losses": np.array(list(self.losses.values()), dtype=float), "pending": list(self.pending)}

    def __setstate__(self, state: dict) -> None:
        self.space = state["space"]
        stored = state["keys"]
        keys = self.space.keys(stored) if stored.ndim == 2 else stored.tolist()
        self.losses = dict(zip(keys, state["losses"].tolist()))
        self.pending = set(state["pending"])


class DoneWhenCovered:
    """A searcher with a `Memo` in `_memo` that is `done` once every candidate of its space is
    evaluated (the best is then the optimum), for the searchers that do not track more."""

    _memo: "Memo | None" = None

    @property
    def done(self) -> bool | None:
        return self._memo.covers() if self._memo is not None else None
