"""Simulated annealing with parallel chains (one proposal per chain per ask).

Metropolis acceptance on the transformed loss (log, invalid = worst seen + margin), a geometric
temperature schedule over the planned budget (`Searcher.budget`, set by run_search; else
`horizon`), neighbours that change one parameter (ordinal ones mostly by +-1/2 steps), and
periodic elitist restarts: the worst chains jump to the best point found.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from coexplore.search.base import NONZERO, Searcher
from coexplore.search.losses import LossTransform
from coexplore.search.memo import DoneWhenCovered, Memo
from coexplore.search.mutation import mutate, one_change_mask
from coexplore.search.space import DiscreteSpace


@dataclass
class SAConfig:
    """Settings of `sa` (a mapper YAML's `config:`): parallel Metropolis chains over the parameters."""

    chains: int = 16               # parallel chains
    t_start: float = 0.05          # start temperature, in units of the initial spread of log-losses
    t_end: float = 0.002           # end temperature, same units
    extra_change: float = 0.05     # probability of changing each further parameter in a move
    local: float = 0.7             # probability an ordinal move is a +-1/2 step
    restart_every: int = 20        # proposals per chain between elitist restarts (0 = never)
    restart_fraction: float = 0.2  # fraction of chains moved to the best point at a restart
    horizon: int = 10_000          # schedule length when the budget is unknown
    log_loss: bool = True

    ONLY_WITH: ClassVar[dict[str, tuple[str, object]]] = {"restart_fraction": ("restart_every", NONZERO)}
    # options a search run with a budget (`run_search`: `coexplore map`, `map_layer`) does not use
    UNUSED_WITH_BUDGET: ClassVar[tuple[str, ...]] = ("horizon",)


class SimulatedAnnealing(DoneWhenCovered, Searcher):
    name = "sa"
    learns_between_batches = True

    def __init__(self, space: DiscreteSpace, config: SAConfig | None = None, seed: int | None = 0):
        super().__init__(seed)
        self.space = space
        self.config = config if config is not None else SAConfig()
        self.cur_x: np.ndarray | None = None
        self.cur_raw: np.ndarray | None = None
        self._init_x: list[np.ndarray] = []
        self._init_raw: list[np.ndarray] = []
        self._chain_of: np.ndarray | None = None
        self._next_chain = 0
        self._scale = 1.0
        self._memo: Memo | None = None
        self._transform: LossTransform | None = None
        self._proposals = 0

    def _temperature(self) -> float:
        cfg = self.config
        horizon = self.budget if self.budget else cfg.horizon
        frac = min(1.0, self.samples / max(horizon, 1))
        return self._scale * cfg.t_start * (cfg.t_end / cfg.t_start) ** frac

    def ask(self, n: int) -> np.ndarray:
        if self.done:                 # every mapping evaluated: nothing new to ask (the search stops)
            return np.zeros((0, self.space.n_params), np.int64)
        cfg = self.config
        if self._memo is None:
            self._memo = Memo(self.space)
            self._transform = LossTransform(cfg.log_loss)
        if self.cur_x is None:  # initial states: random points
            x = self.space.sample(self.rng, n)
            self._chain_of = None
            self._memo.mark_pending(self._memo.keys(x))
            return x
        c = len(self.cur_x)
        chains = (self._next_chain + np.arange(n)) % c
        self._next_chain = int((self._next_chain + n) % c)
        x = self.cur_x[chains]
        d = self.space.n_params
        x = mutate(self.space, self.rng, x, one_change_mask(self.rng, n, d, cfg.extra_change), cfg.local)
        for attempt in range(30):  # avoid re-asking known points: move again, then jump
            keys, _, new = self._memo.lookup(x)
            if new.all():
                break
            bad = np.flatnonzero(~new)
            if attempt < 10:
                x[bad] = mutate(self.space, self.rng, x[bad], one_change_mask(self.rng, len(bad), d), cfg.local)
            else:
                x[bad] = self.space.sample(self.rng, len(bad))
        self._memo.mark_pending(self._memo.keys(x))
        self._chain_of = chains
        return x

    def tell(self, batch: np.ndarray, losses: np.ndarray) -> None:
        losses = super().tell(batch, losses)
        batch = np.asarray(batch, dtype=np.int64)
        if self._memo is None:
            self._memo = Memo(self.space)
            self._transform = LossTransform(self.config.log_loss)
        self._memo.store(batch, losses)
        self._transform(losses)
        cfg = self.config
        if self.cur_x is None:
            self._init_x.append(batch)
            self._init_raw.append(losses)
            xs, ls = np.concatenate(self._init_x), np.concatenate(self._init_raw)
            if len(xs) >= min(cfg.chains, self.budget or cfg.chains):
                order = np.argsort(self._transform(ls), kind="stable")[:cfg.chains]
                self.cur_x, self.cur_raw = xs[order], ls[order]
                t = self._transform(ls)
                spread = float(np.std(t[np.isfinite(ls)])) if np.isfinite(ls).sum() > 1 else 1.0
                self._scale = spread if spread > 0 else 1.0
            return
        if self._chain_of is None or len(self._chain_of) != len(batch):
            return
        T = self._temperature()
        new_t = self._transform(losses)
        cur_t = self._transform(self.cur_raw[self._chain_of])
        delta = new_t - cur_t
        accept = (delta <= 0) | (self.rng.random(len(delta)) < np.exp(-np.maximum(delta, 0) / max(T, 1e-12)))
        # several proposals for one chain in a batch: the last accepted wins (chains cycle)
        idx = self._chain_of[accept]
        self.cur_x[idx] = batch[accept]
        self.cur_raw[idx] = losses[accept]
        self._proposals += len(batch)
        per_chain = self._proposals / len(self.cur_x)
        if cfg.restart_every and per_chain >= cfg.restart_every and self.best_x is not None:
            self._proposals = 0
            k = int(cfg.restart_fraction * len(self.cur_x))
            if k > 0:
                worst = np.argsort(self._transform(self.cur_raw), kind="stable")[-k:]
                self.cur_x[worst] = self.best_x
                self.cur_raw[worst] = self.best_loss
