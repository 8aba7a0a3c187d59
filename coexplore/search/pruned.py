"""Timeloop's own mapper algorithms over a `MapSpace`: random-pruned and linear-pruned.

Timeloop splits a mapping into an index factorisation (IF: which factor goes to which level and
fan-out, plus bypass here) and loop orders, and prunes loop orders that differ only in the
position of unit loops (they give the same mapping).
* random-pruned: draw a random IF, visit up to `max_permutations_per_if_visit` distinct pruned
  loop orders of it (random ones), then draw the next IF.
* linear-pruned: walk the IFs in index order from the first and, for each, every pruned loop order
  and bypass choice (`LinearPruned`).
Both count every proposal as a sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coexplore.search.base import Searcher


@dataclass
class RandomPrunedConfig:
    max_permutations_per_if_visit: int = 16


@dataclass
class LinearPrunedConfig:
    """No settings: Timeloop's linear-pruned walks every loop order (its max-permutations-per-if-visit
    is random-pruned's)."""


class _PrunedBase(Searcher):
    needs_mapspace = True

    def __init__(self, mapspace, config=None, seed: int | None = 0):
        super().__init__(seed)
        self.mapspace = mapspace
        self.space = mapspace.space          # the parameter space: told batches are checked against it
        self.config = config

    # parameters that define the IF (everything but loop-order keys)
    def _if_mask(self) -> np.ndarray:
        mask = np.ones(self.mapspace.n_params, bool)
        for pi, _, _ in self.mapspace.perm_index:
            mask[pi] = False
        return mask

    def _orders_for_if(self, x_if: np.ndarray):
        """Per level, the order parameters of one IF: (their indices, positions of the non-unit
        dimensions among them, number of dimensions); only the non-unit loops' order matters."""
        ms = self.mapspace
        arrays = ms.decode(x_if[None, :])
        per_level = []
        for li, free in enumerate(ms.perm_free):
            idx = [pi for pi, l2, _ in ms.perm_index if l2 == li]
            dims = [d for _, l2, d in ms.perm_index if l2 == li]
            nonunit = [k for k, d in enumerate(dims) if arrays.temporal[0, li, d] > 1]
            per_level.append((idx, nonunit, len(dims)))
        return per_level



class RandomPruned(_PrunedBase):
    name = "random_pruned"

    def __init__(self, mapspace, config: RandomPrunedConfig | None = None, seed: int | None = 0):
        super().__init__(mapspace, config or RandomPrunedConfig(), seed)
        self._current = None
        self._left = 0
        self._seen: set = set()

    def _new_if(self):
        self._current = self.mapspace.sample(self.rng, 1)[0]
        self._levels = self._orders_for_if(self._current)
        self._left = self.config.max_permutations_per_if_visit
        self._seen = set()
        # number of distinct pruned orders of this IF
        total = 1
        for _, nonunit, _ in self._levels:
            for k in range(2, len(nonunit) + 1):
                total *= k
        self._distinct = total

    def ask(self, n: int) -> np.ndarray:
        out = []
        while len(out) < n:
            if self._current is None or self._left <= 0 or len(self._seen) >= self._distinct:
                self._new_if()
            x = self._current.copy()
            key = []
            for idx, nonunit, k in self._levels:
                if not idx:
                    continue
                order = self.rng.permutation(len(nonunit)) if nonunit else []
                keys = np.zeros(k, np.int64)
                for rank, j in enumerate(order):
                    keys[nonunit[j]] = rank
                x[idx] = keys
                key.append(tuple(keys[nonunit]))
            key = tuple(key)
            if key in self._seen:
                self._left -= 1      # a repeat costs patience but no sample
                continue
            self._seen.add(key)
            self._left -= 1
            out.append(x)
        return np.array(out, np.int64)


class LinearPruned(_PrunedBase):
    """timeloop-mapper's linear-pruned: one in-order walk of the distinct mappings from the first
    (`coexplore.mapspace.enumerate.canonical_points`: factorisations in index order outermost,
    then every pruned loop order of each, then keep/bypass fastest), as Timeloop's odometer over
    (index factorisation, loop permutation, spatial, datatype bypass) from 0. Deterministic: the
    seed does not change it. Timeloop skips the rest of a factorisation whose every bypass choice
    overflowed a buffer; this walk evaluates those mappings (invalid, counted), so it visits the
    same valid mappings in more samples. Ends (`done`) when the walk has covered the space."""

    name = "linear_pruned"

    def __init__(self, mapspace, config: LinearPrunedConfig | None = None, seed: int | None = 0):
        super().__init__(mapspace, config or LinearPrunedConfig(), seed)
        self._walk = None
        self._pending = np.zeros((0, mapspace.n_params), np.int64)
        self._taken = 0                  # blocks taken from the walk (a checkpoint stores this)
        self._ended = False

    @property
    def done(self) -> bool:
        """The walk covered every distinct mapping (the best told is then the optimum)."""
        return self._ended and not len(self._pending)

    def _blocks(self):
        from coexplore.mapspace.enumerate import canonical_points
        return canonical_points(self.mapspace, chunk=4096, max_factor_points=None)

    def ask(self, n: int) -> np.ndarray:
        if self._walk is None:
            self._walk = self._blocks()
        while len(self._pending) < n and not self._ended:
            block = next(self._walk, None)
            if block is None:
                self._ended = True
                break
            self._taken += 1
            self._pending = np.concatenate([self._pending, block])
        out, self._pending = self._pending[:n], self._pending[n:]
        return out

    def state_dict(self) -> dict:
        return {**self.__dict__, "_walk": None}

    def load_state_dict(self, state: dict) -> None:
        """The walk is deterministic: a restored search re-walks it to where it was."""
        super().load_state_dict(state)
        self._walk = self._blocks()
        for _ in range(self._taken):
            next(self._walk)
