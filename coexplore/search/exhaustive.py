"""Exhaustive search of a small space, in mixed-radix order: the optimum reference."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.search.base import Searcher
from coexplore.search.space import DiscreteSpace


@dataclass
class ExhaustiveConfig:
    max_size: int = 50_000_000   # refuse larger spaces (they cannot be enumerated in useful time)


class ExhaustiveSearch(Searcher):
    """Asks every point once (first parameter most significant); then asks nothing."""

    name = "exhaustive"

    def __init__(self, space: DiscreteSpace, config: ExhaustiveConfig | None = None, seed: int | None = 0):
        super().__init__(seed)
        self.space = space
        self.config = config if config is not None else ExhaustiveConfig()
        self.next_index = 0

    @property
    def done(self) -> bool:
        return self.next_index >= self.space.size

    def ask(self, n: int) -> np.ndarray:
        size = self.space.size
        if size > self.config.max_size:
            raise CoexploreError(f"space of {size:.3e} points is too large for exhaustive search",
                                 key="max_size", expected=f"at most {self.config.max_size} points")
        hi = min(self.next_index + n, size)
        x = self.space.unravel(np.arange(self.next_index, hi))
        self.next_index = hi
        return x
