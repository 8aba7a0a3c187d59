"""Timeloop's own mapper algorithms over a `MapSpace`: random-pruned and linear-pruned.

Timeloop splits a mapping into an index factorisation (IF: which factor goes to which level and
fan-out, plus bypass here) and loop orders, and prunes loop orders that differ only in the
position of unit loops (they give the same mapping).
* random-pruned: draw a random IF, visit up to `max_permutations_per_if_visit` distinct pruned
  loop orders of it (random ones), then draw the next IF.
* linear-pruned: walk the IFs in index order (from a seeded random start) and, for each, its pruned
  loop orders in order, up to `max_permutations_per_if_visit` per IF.
Both see each (IF, pruned order) at most once per visit and count every proposal as a sample.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from coexplore.search.base import Searcher


@dataclass
class RandomPrunedConfig:
    max_permutations_per_if_visit: int = 16


@dataclass
class LinearPrunedConfig:
    max_permutations_per_if_visit: int = 16


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
    name = "linear_pruned"

    def __init__(self, mapspace, config: LinearPrunedConfig | None = None, seed: int | None = 0):
        super().__init__(mapspace, config or LinearPrunedConfig(), seed)
        self._gen = None
        self._start: int | None = None   # the walk's first IF index, drawn at the first ask
        self._taken = 0                  # candidates taken from the walk (a checkpoint stores this)

    def _if_radix(self):
        if_params = np.nonzero(self._if_mask())[0]
        radix = self.mapspace.space.cardinalities[if_params]
        return if_params, radix, (int(np.prod(radix.astype(object))) if len(radix) else 1)

    def _candidates(self, start: int):
        ms = self.mapspace
        if_params, radix, total = self._if_radix()
        base = np.zeros(ms.n_params, np.int64)
        for step in range(total):
            index = (start + step) % total
            x = base.copy()
            for p, r in zip(if_params, radix):
                x[p] = index % int(r)
                index //= int(r)
            levels = self._orders_for_if(x)
            choices = [itertools.permutations(range(len(nonunit))) for _, nonunit, _ in levels]
            for count, combo in enumerate(itertools.product(*choices)):
                if count >= self.config.max_permutations_per_if_visit:
                    break
                y = x.copy()
                for (idx, nonunit, k), order in zip(levels, combo):
                    if not idx:
                        continue
                    keys = np.zeros(k, np.int64)
                    for rank, j in enumerate(order):
                        keys[nonunit[j]] = rank
                    y[idx] = keys
                yield y

    def ask(self, n: int) -> np.ndarray:
        if self._gen is None:
            self._start = int(self.rng.integers(0, min(self._if_radix()[2], 2 ** 62)))
            self._gen = self._candidates(self._start)
        out = list(itertools.islice(self._gen, n))
        self._taken += len(out)
        return np.array(out, np.int64).reshape(len(out), self.mapspace.n_params)

    def state_dict(self) -> dict:
        return {**self.__dict__, "_gen": None}

    def load_state_dict(self, state: dict) -> None:
        """The walk is deterministic from its start: a restored search re-walks it to where it was."""
        super().load_state_dict(state)
        if self._start is not None:
            self._gen = self._candidates(self._start)
            for _ in itertools.islice(self._gen, self._taken):
                pass
