"""A plugin of one's own (`coexplore --plugin examples/my_searchers.py ...`): a layer mapper, a system
scheduler and an online policy, each registered where coexplore's built-in ones live, so that every
command, its `--jobs` worker processes and `--ray` tasks know them by name. `tests/test_plugins.py`
runs this file."""

from dataclasses import dataclass

import numpy as np

from coexplore.online import schedulers
from coexplore.search import registry
from coexplore.search.base import Searcher
from coexplore.system import schedule
from coexplore.system.baselines import RandomSearcher


@dataclass
class HillConfig:
    """What a mapper YAML's `config:` sets (`searcher: hill` / `config: {moves: 2}`)."""
    moves: int = 1


class Hill(Searcher):
    """A layer mapper: random points until one is valid, then moves from the best, each redrawing
    `config.moves` parameters. The base class counts the samples and keeps the best point
    (`best_x`, `best_loss`) from `tell`."""
    name = "hill"

    def __init__(self, space, config=None, seed=0):
        super().__init__(seed)
        self.space, self.config = space, config or HillConfig()

    def ask(self, n):
        if self.best_x is None or not np.isfinite(self.best_loss):
            return self.space.sample(self.rng, n)
        x = np.repeat(self.best_x[None], n, axis=0)
        cards = np.asarray(self.space.cardinalities)
        for _ in range(self.config.moves):
            j = self.rng.integers(0, x.shape[1], n)
            x[np.arange(n), j] = self.rng.integers(0, cards[j])
        return x


registry.SEARCHERS["hill"] = (Hill, HillConfig)


def uniform(space, table, budget, seed):
    """A system scheduler: uniform random schedules (per job a core, then per job a priority)."""
    s = RandomSearcher(space, seed=seed)
    s.name = "uniform"
    return s


schedule.CUSTOM["uniform"] = uniform


class Patient(schedulers.FCFS):
    """An online policy: first come, first served, under another name."""
    name = "patient"


schedulers.HEURISTICS["patient"] = Patient
