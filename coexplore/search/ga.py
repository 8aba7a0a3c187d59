"""Genetic algorithm over a discrete space: (mu + lambda) with tournaments, crossover, mutation.

Losses are compared after the log / invalid-penalty transform, so selection is by rank and an
invalid candidate loses every tournament against a valid one. With `space.groups` given and
`crossover: groups`, crossover swaps whole groups (keeps interacting parameters together).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from coexplore.search.base import NONZERO, Searcher, check_options
from coexplore.search.losses import LossTransform
from coexplore.search.memo import DoneWhenCovered, Memo
from coexplore.search.mutation import mutate
from coexplore.search.space import DiscreteSpace


@dataclass
class GAConfig:
    """Settings of `ga` (a mapper YAML's `config:`): a (mu + lambda) genetic algorithm."""

    population: int = 100          # mu: survivors kept between generations
    tournament: int = 3            # tournament size for parent selection
    crossover_rate: float = 0.9    # probability a child is a crossover of two parents
    crossover: str = "uniform"     # "uniform" | "groups" (needs space.groups)
    mutation_rate: float = 0.0     # per-parameter probability; 0 means 1 / n_params
    local: float = 0.5             # probability an ordinal mutation is a +-1/2 step
    log_loss: bool = True

    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"crossover": ("uniform", "groups")}
    ONLY_WITH: ClassVar[dict[str, tuple[str, object]]] = {"crossover": ("crossover_rate", NONZERO)}


class GeneticAlgorithm(DoneWhenCovered, Searcher):
    name = "ga"
    learns_between_batches = True

    def __init__(self, space: DiscreteSpace, config: GAConfig | None = None, seed: int | None = 0):
        super().__init__(seed)
        self.space = space
        self.config = config if config is not None else GAConfig()
        self.pop_x: np.ndarray | None = None
        self.pop_raw: np.ndarray | None = None
        self._memo: Memo | None = None
        self._transform: LossTransform | None = None

    def _start(self) -> None:
        check_options(self.config)
        self._memo = Memo(self.space)
        self._transform = LossTransform(self.config.log_loss)

    def ask(self, n: int) -> np.ndarray:
        if self.done:                 # every mapping evaluated: nothing new to ask (the search stops)
            return np.zeros((0, self.space.n_params), np.int64)
        if self._memo is None:
            self._start()
        if self.pop_x is None or len(self.pop_x) < min(self.config.population, 2):
            x = self.space.sample(self.rng, n)
        else:
            x = self._children(n)
        return self._novel(x)

    def _novel(self, x: np.ndarray) -> np.ndarray:
        """Replace points already asked by mutants of themselves (a few tries)."""
        d = self.space.n_params
        for attempt in range(30):
            keys, _, new = self._memo.lookup(x)
            if new.all():
                break
            bad = np.flatnonzero(~new)
            if attempt < 20:
                mask = np.zeros(x.shape, dtype=bool)
                mask[bad, self.rng.integers(0, d, len(bad))] = True
                x = mutate(self.space, self.rng, x, mask, self.config.local)
            else:  # crowded neighbourhood (tiny spaces): random immigrants
                x[bad] = self.space.sample(self.rng, len(bad))
        self._memo.mark_pending(self._memo.keys(x))
        return x

    def _children(self, n: int) -> np.ndarray:
        cfg = self.config
        d = self.space.n_params
        fit = self._transform(self.pop_raw)      # lower is better
        m = len(fit)
        t = max(1, cfg.tournament)

        def select(k: int) -> np.ndarray:
            cand = self.rng.integers(0, m, (k, t))
            return cand[np.arange(k), np.argmin(fit[cand], axis=1)]

        a = self.pop_x[select(n)]
        b = self.pop_x[select(n)]
        if cfg.crossover == "groups" and self.space.groups:
            groups = self.space.groups + [[i] for i in sorted(set(range(d)) - {i for g in self.space.groups for i in g})]
            gid = np.zeros(d, dtype=np.int64)
            for k, g in enumerate(groups):
                gid[g] = k
            take = (self.rng.random((n, len(groups))) < 0.5)[:, gid]
        else:
            take = self.rng.random((n, d)) < 0.5
        cross = self.rng.random(n) < cfg.crossover_rate
        child = np.where(take & cross[:, None], b, a)
        rate = cfg.mutation_rate if cfg.mutation_rate > 0 else 1.0 / d
        mask = self.rng.random((n, d)) < rate
        same = (child == a).all(axis=1) & ~mask.any(axis=1)
        mask[np.flatnonzero(same), self.rng.integers(0, d, int(same.sum()))] = True  # always move
        return mutate(self.space, self.rng, child, mask, cfg.local)

    def check_tell(self, batch, losses) -> None:
        super().check_tell(batch, losses)
        if self._memo is None:
            check_options(self.config)

    def tell(self, batch: np.ndarray, losses: np.ndarray) -> None:
        losses = super().tell(batch, losses)
        if self._memo is None:
            self._start()
        batch = np.asarray(batch, dtype=np.int64)
        self._memo.store(batch, losses)
        self._transform(losses)
        if self.pop_x is None:
            px, pl = batch, losses
        else:
            px, pl = np.concatenate([self.pop_x, batch]), np.concatenate([self.pop_raw, losses])
        order = np.argsort(self._transform(pl), kind="stable")[:self.config.population]
        self.pop_x, self.pop_raw = px[order], pl[order]
