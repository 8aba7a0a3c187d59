"""Uniform random search: the reference every learner must beat."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coexplore.search.base import Searcher
from coexplore.search.memo import DoneWhenCovered, Memo
from coexplore.search.space import DiscreteSpace


@dataclass
class RandomConfig:
    dedupe: bool = True   # never ask for a point twice (redraw repeats; matters in small spaces)


class RandomSearch(DoneWhenCovered, Searcher):
    name = "random"

    def __init__(self, space: DiscreteSpace, config: RandomConfig | None = None, seed: int | None = 0):
        super().__init__(seed)
        self.space = space
        self.config = config if config is not None else RandomConfig()
        self._memo: Memo | None = None

    def ask(self, n: int) -> np.ndarray:
        if self.done:                 # every mapping evaluated: nothing new to ask (the search stops)
            return np.zeros((0, self.space.n_params), np.int64)
        x = self.space.sample(self.rng, n)
        if not self.config.dedupe:
            return x
        if self._memo is None:
            self._memo = Memo(self.space)
        keys, _, new = self._memo.lookup(x)
        for _ in range(50):
            if new.all():
                break
            x = np.concatenate([x[new], self.space.sample(self.rng, n - int(new.sum()))])
            keys, _, new = self._memo.lookup(x)
        self._memo.mark_pending(keys)
        return x

    def tell(self, batch: np.ndarray, losses: np.ndarray) -> None:
        losses = super().tell(batch, losses)
        if self._memo is not None:
            self._memo.store(np.asarray(batch, dtype=np.int64), losses)
