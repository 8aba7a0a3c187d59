"""Exhaustive search of a small space: the optimum reference.

On a plain `DiscreteSpace` every point is asked once, in mixed-radix order. On a layer's
`MapSpace` every distinct mapping is asked once (`coexplore.mapspace.enumerate`): the encoded
space repeats each mapping many times, the canonical enumeration does not, so layers of a few
million mappings can be solved exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.search.base import Searcher


@dataclass
class ExhaustiveConfig:
    max_size: int = 50_000_000   # refuse larger spaces (they cannot be enumerated in useful time)


class ExhaustiveSearch(Searcher):
    """Asks every point (or every distinct mapping) once; then the points asked and never told
    again (a dropped batch is not lost); then nothing (`done`)."""

    name = "exhaustive"
    seeded = False
    needs_mapspace = True        # given a MapSpace by `coexplore map`, a DiscreteSpace elsewhere

    def __init__(self, space, config: ExhaustiveConfig | None = None, seed: int | None = 0):
        super().__init__(seed)
        self.space = space
        self.config = config if config is not None else ExhaustiveConfig()
        self.next_index = 0
        self._points = None       # MapSpace: iterator over canonical batches
        self._pending = np.zeros((0, 0), np.int64)
        self.size: int | None = None    # points (distinct mappings) to enumerate, known at the first ask
        self._taken = 0           # batches taken from `_points` (a checkpoint stores this, not the iterator)
        self._untold: dict[bytes, np.ndarray] = {}   # asked, not yet told (asked again at the end)

    @property
    def done(self) -> bool:
        """Every point has been asked and told (the best told loss is then the optimum)."""
        return self.size is not None and self.next_index >= self.size and not getattr(self, "_untold", None)

    def _asked(self, x: np.ndarray) -> np.ndarray:
        untold = self.__dict__.setdefault("_untold", {})
        for row in np.ascontiguousarray(x, dtype=np.int64):
            untold[row.tobytes()] = row
        return x

    def _reask(self, n: int) -> np.ndarray:
        """The enumeration is over: up to n points asked before and not told yet."""
        rows = list(getattr(self, "_untold", {}).values())[:n]
        return np.array(rows, np.int64).reshape(len(rows), -1) if rows else \
            np.zeros((0, self.space.n_params), np.int64)

    def tell(self, batch: np.ndarray, losses: np.ndarray) -> np.ndarray:
        losses = super().tell(batch, losses)
        untold = getattr(self, "_untold", None)
        if untold:
            for row in np.ascontiguousarray(batch, dtype=np.int64):
                untold.pop(row.tobytes(), None)
        return losses

    def _too_large(self, size: float, lower_bound: bool = False):
        what = "distinct mappings" if hasattr(self.space, "perm_index") else "points"
        size = f"{size:.3e}" if size < 1e300 else f"10^{len(str(int(size))) - 1}"
        return CoexploreError(f"{'more than ' if lower_bound else ''}{size} {what}: too many for exhaustive "
                              "search", key="config.max_size",
                              expected=f"at most {self.config.max_size:.1e} (a smaller layer, or another searcher)")

    def ask(self, n: int) -> np.ndarray:
        if hasattr(self.space, "perm_index"):     # a layer's MapSpace
            return self._ask_mappings(n)
        size = self.size = self.space.size
        if size > self.config.max_size:
            raise self._too_large(size)
        if self.next_index >= size:
            return self._reask(n)
        hi = min(self.next_index + n, size)
        x = self.space.unravel(np.arange(self.next_index, hi))
        self.next_index = hi
        return self._asked(x)

    def state_dict(self) -> dict:
        return {**self.__dict__, "_points": self._points is not None}

    def load_state_dict(self, state: dict) -> None:
        """The enumeration is deterministic: a restored search re-walks it to where it was."""
        super().load_state_dict(state)
        if self._points:
            from coexplore.mapspace.enumerate import canonical_points
            self._points = canonical_points(self.space, max_factor_points=self.config.max_size)
            for _ in range(self._taken):
                next(self._points)
        else:
            self._points = None

    def _ask_mappings(self, n: int) -> np.ndarray:
        from coexplore.mapspace.enumerate import canonical_points, count_canonical
        if self._points is None:
            try:
                size = self.size = count_canonical(self.space, self.config.max_size,
                                                   stop_above=self.config.max_size)
            except CoexploreError:          # more factorisations alone than max_size
                raise self._too_large(self.config.max_size, lower_bound=True) from None
            if size > self.config.max_size:
                raise self._too_large(self.config.max_size, lower_bound=True)
            self._points = canonical_points(self.space, max_factor_points=self.config.max_size)
            self._pending = np.zeros((0, self.space.n_params), np.int64)
        while len(self._pending) < n:
            nxt = next(self._points, None)
            if nxt is None:
                break
            self._taken += 1
            self._pending = np.concatenate([self._pending, nxt])
        out, self._pending = self._pending[:n], self._pending[n:]
        self.next_index += len(out)
        if not len(out):
            return self._reask(n)
        return self._asked(out)
