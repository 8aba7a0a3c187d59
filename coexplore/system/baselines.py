"""Baseline searchers on MAGMA's encoding: random search, a standard GA, nevergrad optimizers.

All use the candidates of `coexplore.system.encoding` and spend their budget as evaluated
candidates (samples), like MAGMA. The nevergrad ones (PSO, CMA-ES, DE, TBPSA, (1+1)-ES)
search the box [0, N)^J x [0, 1)^J; cores are floored when decoded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coexplore.search.base import Searcher
from coexplore.search.nevergrad_adapter import NevergradSearcher
from coexplore.system.encoding import ScheduleSpace


class RandomSearcher(Searcher):
    """Uniform candidates: core ~ U{0..N-1}, priority ~ U[0, 1)."""

    name = "random"

    def __init__(self, space: ScheduleSpace, seed: int | None = 0):
        super().__init__(seed)
        self.space = space

    def ask(self, n: int) -> np.ndarray:
        return self.space.random(self.rng, n)


@dataclass
class StdGAConfig:
    pop_size: int = 100
    elite: int = 5
    tournament: int = 2
    p_crossover: float = 0.9
    p_mutation: float = 0.05


class StandardGASearcher(Searcher):
    """A textbook GA on the flat 2J genome: tournament selection, one-point crossover over
    the whole vector (cores then priorities), per-gene uniform mutation, elitism.

    Unlike MAGMA its crossover does not respect jobs (a cut can separate a job's core from
    its priority) and it has no core-aware operator."""

    name = "stdga"

    def __init__(self, space: ScheduleSpace, config: StdGAConfig | None = None,
                 seed: int | None = 0):
        super().__init__(seed)
        self.space = space
        self.config = config

    def _init_state(self) -> None:
        self._queue = np.empty((0, self.space.dim))
        self._pop_x = np.empty((0, self.space.dim))
        self._pop_loss = np.empty(0)

    def ask(self, n: int) -> np.ndarray:
        if not hasattr(self, "_queue"):
            self._init_state()
        while len(self._queue) < n:
            self._queue = np.concatenate([self._queue, self._breed()])
        out, self._queue = self._queue[:n], self._queue[n:]
        return out

    def tell(self, batch: np.ndarray, losses: np.ndarray) -> None:
        losses = super().tell(batch, losses)
        if not hasattr(self, "_queue"):           # told before any ask
            self._init_state()
        self._pop_x = np.concatenate([self._pop_x, np.asarray(batch, dtype=float)])
        self._pop_loss = np.concatenate([self._pop_loss, np.asarray(losses, dtype=float)])

    def _breed(self) -> np.ndarray:
        cfg = self.config or StdGAConfig()
        sp, rng, P = self.space, self.rng, cfg.pop_size
        if len(self._pop_loss) < 2:
            return sp.random(rng, P)
        order = np.argsort(self._pop_loss, kind="stable")[:P]
        x, loss = self._pop_x[order], self._pop_loss[order]
        m = len(loss)
        n_kids = P - min(cfg.elite, m)
        # tournament: the best (lowest loss = lowest rank after sorting) of k random entrants
        t = rng.integers(0, m, (2 * n_kids, cfg.tournament)).min(axis=1)
        dads, moms = x[t[:n_kids]], x[t[n_kids:]]
        cut = rng.integers(1, sp.dim, n_kids)
        cross = rng.random(n_kids) < cfg.p_crossover
        head = np.arange(sp.dim)[None, :] < cut[:, None]
        kids = np.where(head & cross[:, None], moms, dads)
        J, N = sp.num_jobs, sp.num_cores
        mc = rng.random((n_kids, J)) < cfg.p_mutation
        mp = rng.random((n_kids, J)) < cfg.p_mutation
        kids[:, :J][mc] = rng.integers(0, N, int(mc.sum()))
        kids[:, J:][mp] = rng.random(int(mp.sum()))
        keep = min(cfg.elite, m)
        self._pop_x, self._pop_loss = x[:keep], loss[:keep]   # elites carry over, not re-asked
        return kids


def nevergrad_searcher(space: ScheduleSpace, optimizer: str, budget: int,
                       seed: int | None = 0, num_workers: int = 1) -> NevergradSearcher:
    """A nevergrad optimizer on the schedule box [0, N)^J x [0, 1)^J."""
    s = NevergradSearcher(optimizer, space.lower(), space.upper(), budget, seed=seed,
                          num_workers=num_workers)
    return s
