"""MAGMA (Kao & Krishna, HPCA 2022): a GA over (core, priority) per job with domain operators.

Per generation, from the P best candidates seen (elites kept without re-evaluation):
* parents = the best max(2, parent_ratio*P); each pair is drawn without replacement with
  fitness-proportional weights w_i ~ max(makespan of parents) - makespan_i + 1 (MAGMA's);
* crossover-gen (p_gen per pair): one gene row (cores or priorities) is cut at a random
  point and the shorter side is swapped between the two parents;
* crossover-rg (p_rg per pair, fresh parents): one cut point across both rows (whole jobs);
* crossover-accel (p_accel per child, fresh parents): pick a core a; the child is dad with
  mom's jobs of core a (core + priority) copied in, and dad's other jobs of core a moved to
  a random other core -- it transplants mom's whole queue on a;
* mutation (p_mut per gene of every child): core -> uniform core, priority -> U[0, 1).
P children per generation are asked (evaluated); the population for the next generation is
the best P of elites + children.

Quirks of the original code (maestro-project/magma `SchedulerGA`) and what is kept:
* changed (measured better at 10K samples; `MagmaConfig.original()` restores the original):
  the mutation rate anneals 0.05 -> 0.01 per gene and the parent pool 30% -> 10% of the
  population over the budget (exploration first, refinement last), and generation 0
  includes the 12 list-scheduling heuristics' schedules (warm start, 12 of its samples).
* added (default; `islands=1, dedup=False` turns them off): two islands -- the population
  is split into two halves of 50 that breed apart (each with MAGMA's operators, 2 elites
  and its own parent pool), the warm start going into island 0 only, and are merged into
  one population of 100 after 70% of the budget. The heuristics' schedules otherwise
  take over the population in a few generations and pin it to their basin (e.g. the
  longest job on the core the heuristics chose); the cold island keeps a second basin.
  Duplicates: a child equal to one asked before gets random one-move changes (`neighbour`:
  swap the priorities of two adjacent jobs of one core, move a job to another core, or
  swap the cores of two jobs) until it is new, so no sample re-evaluates a known schedule.
  Measured at 10K samples, 64 golden cases x 5 seeds (median): MAGMA <= the original
  code's GA in 58/64 cases (55/64 before), geomean ours/original 0.9867 (0.9872 before).
* kept: 2 parents without replacement and MAGMA's weight formula, the parent/elite counts,
  operator order and probabilities, the half-genome rule of crossover-gen (swap [:point] if
  point < J/2 else [point:]), P children per generation, elites = copies of the best.
* fixed by default (set `original_quirks=True` to keep them): the numpy-view tuple swaps
  that make crossover-gen return (dad with mom's segment, unchanged mom) and crossover-rg
  return two identical children -- we do the intended two-way swaps; crossover-accel may
  move dad's jobs back onto core a -- we move them to another core; generation 0 is not
  evaluated and is bred blind with uniform weights -- we evaluate the random population
  first (it counts in the budget); elites are re-evaluated every generation (5 wasted
  samples/gen) -- we keep their losses.
"""

from __future__ import annotations

import hashlib

from dataclasses import dataclass

import numpy as np

from coexplore.search.base import Searcher
from coexplore.system.encoding import ScheduleSpace


@dataclass
class MagmaConfig:
    pop_size: int = 100
    elite_ratio: float = 0.05
    parent_ratio: float = 0.1
    p_crossover_gen: float = 0.9
    p_crossover_rg: float = 0.1
    p_crossover_accel: float = 0.1
    p_mutation: float = 0.01
    # annealing over the budget (needs the searcher's `budget`): the rates move geometrically
    # from these start values to p_mutation / parent_ratio as samples are spent
    p_mutation_start: float | None = 0.05
    parent_ratio_start: float | None = 0.3
    p_mutation_min: float | None = None   # if set: per-child rate log-uniform in [min, rate]
    warm_start: bool = True               # gen 0 includes the 12 heuristics' schedules
    dedup: bool = True                    # children already asked get local moves until new
    islands: int = 2                      # sub-populations bred apart (warm start in island 0 only)
    merge_at: float = 0.7                 # ... merged into one population after this budget fraction
    original_quirks: bool = False

    @classmethod
    def original(cls) -> "MagmaConfig":
        """The original code's settings and quirks (fixed rates, blind gen 0, ...)."""
        return cls(p_mutation=0.05, p_mutation_start=None, parent_ratio_start=None,
                   warm_start=False, dedup=False, islands=1, original_quirks=True)


def parent_weights(losses: np.ndarray) -> np.ndarray:
    """MAGMA's fitness-proportional weights over parents: (max - loss + 1), normalised.

    Infinite (invalid) losses get weight 0; if every parent is invalid, uniform weights."""
    losses = np.asarray(losses, dtype=float)
    ok = np.isfinite(losses)
    if not ok.any():
        return np.full(len(losses), 1.0 / len(losses))
    w = np.where(ok, losses[ok].max() - np.where(ok, losses, 0.0) + 1.0, 0.0)
    return w / w.sum()


def _pick2(rng, n, w):
    i, j = rng.choice(n, 2, replace=False, p=w)
    return i, j


def crossover_gen(dad, mom, row, point, J, original_quirks=False):
    """Swap one row's [:point] (point < J/2) or [point:] segment; returns two children."""
    a, b = dad.copy(), mom.copy()
    sl = slice(row * J, row * J + point) if point < J // 2 else slice(row * J + point, (row + 1) * J)
    a[sl] = mom[sl]
    if not original_quirks:
        b[sl] = dad[sl]
    return a, b


def crossover_rg(dad, mom, point, J, original_quirks=False):
    """Cut both rows at job `point`: children [mom[:p] | dad[p:]] and [dad[:p] | mom[p:]]."""
    head = np.zeros(2 * J, dtype=bool)
    head[:point] = True
    head[J:J + point] = True
    a = np.where(head, mom, dad)
    b = a.copy() if original_quirks else np.where(head, dad, mom)
    return a, b


def crossover_accel(dad, mom, accel, J, N, rng, original_quirks=False):
    """dad with mom's jobs of core `accel` copied in; dad's other `accel` jobs re-assigned."""
    child = dad.copy()
    on_m = mom[:J] == accel
    on_d = dad[:J] == accel
    take = on_m & ~on_d
    child[:J][take] = mom[:J][take]
    child[J:][take] = mom[J:][take]
    move = np.flatnonzero(on_d & ~on_m)
    if len(move):
        if original_quirks or N == 1:
            child[move] = rng.integers(0, N, len(move))
        else:
            new = rng.integers(0, N - 1, len(move))
            child[move] = new + (new >= accel)
    return child


def neighbour(x, J, N, move, rng):
    """One local move on candidate x (a copy is returned).

    move 0: swap the priorities of a random job and its successor on the same core;
    move 1: move a random job to another core (its priority is kept);
    move 2: swap the cores of two random jobs on different cores (priorities kept)."""
    y = x.copy()
    core, prio = y[:J], y[J:]
    j = int(rng.integers(0, J))
    if move == 0:
        same = np.flatnonzero(core == core[j])
        if len(same) > 1:
            order = same[np.argsort(prio[same], kind="stable")]
            pos = int(np.flatnonzero(order == j)[0])
            k = order[pos + 1] if pos + 1 < len(order) else order[pos - 1]
            prio[j], prio[k] = prio[k], prio[j]
            return y
        move = 1
    if move == 1 or N == 1:
        if N > 1:
            c = int(rng.integers(0, N - 1))
            core[j] = c + (c >= core[j])
        return y
    other = np.flatnonzero(core != core[j])
    if len(other):
        k = int(rng.choice(other))
        core[j], core[k] = core[k], core[j]
    return y


def mutate(children, J, N, p, rng, p_min=None):
    """Each gene with probability p: core -> U{0..N-1}, priority -> U[0, 1). In place.

    With p_min, each child draws its own rate log-uniformly from [p_min, p]."""
    n = len(children)
    if p_min is not None and 0 < p_min < p:
        p = np.exp(rng.uniform(np.log(p_min), np.log(p), (n, 1)))
    mc = rng.random((n, J)) < p
    mp = rng.random((n, J)) < p
    children[:, :J][mc] = rng.integers(0, N, int(mc.sum()))
    children[:, J:][mp] = rng.random(int(mp.sum()))
    return children


class MagmaSearcher(Searcher):
    """MAGMA's GA behind ask/tell (candidates as in `coexplore.system.encoding`)."""

    name = "magma"

    def __init__(self, space: ScheduleSpace, config: MagmaConfig | None = None,
                 seed: int | None = 0, initial: np.ndarray | None = None,
                 budget: int | None = None):
        super().__init__(seed)
        self.budget = budget
        self.space = space
        self.config = config
        self.initial = initial

    def _cfg(self) -> MagmaConfig:
        return self.config or MagmaConfig()

    def _init_state(self):
        self._queue = np.empty((0, self.space.dim))
        self._queue_isl = np.empty(0, dtype=np.int64)
        self._last_isl = np.empty(0, dtype=np.int64)
        self._pool_x = np.empty((0, self.space.dim))
        self._pool_loss = np.empty(0)
        self._pool_isl = np.empty(0, dtype=np.int64)
        self.generation = 0

    def ask(self, n: int) -> np.ndarray:
        if not hasattr(self, "_queue"):
            self._init_state()
        while len(self._queue) < n:
            kids, isl = self._next_generation()
            self._queue = np.concatenate([self._queue, kids])
            self._queue_isl = np.concatenate([self._queue_isl, isl])
        out, self._queue = self._queue[:n], self._queue[n:]
        self._last_isl, self._queue_isl = self._queue_isl[:n], self._queue_isl[n:]
        return out

    def tell(self, batch: np.ndarray, losses: np.ndarray) -> None:
        losses = super().tell(batch, losses)
        if not hasattr(self, "_queue"):           # told before any ask
            self._init_state()
        isl = self._last_isl if len(self._last_isl) == len(losses) else np.zeros(len(losses), np.int64)
        self._pool_x = np.concatenate([self._pool_x, np.asarray(batch, dtype=float)])
        self._pool_loss = np.concatenate([self._pool_loss, np.asarray(losses, dtype=float)])
        self._pool_isl = np.concatenate([self._pool_isl, isl])

    def _rate(self, start, end):
        if start is None or not self.budget:
            return end
        f = min(1.0, self.samples / self.budget)
        return float(start * (end / start) ** f)

    def _inject(self, pop):
        """Warm start: the given candidates replace the first ones of generation 0."""
        if self.initial is not None:
            init = np.atleast_2d(np.asarray(self.initial, dtype=float))[:len(pop)]
            pop[:len(init)] = init
        return pop

    def _dedup(self, kids, J, N, rng):
        """Children equal to a child asked before get random local moves (`neighbour`)
        until they are new (at most 20 tries), so no sample re-evaluates a known schedule."""
        if not hasattr(self, "_seen"):
            self._seen = set()
        seen = self._seen
        for k in range(len(kids)):
            for _ in range(20):
                if _digest(kids[k]) not in seen:
                    break
                kids[k] = neighbour(kids[k], J, N, int(rng.integers(0, 3)), rng)
            seen.add(_digest(kids[k]))
        return kids

    def _islands(self) -> int:
        cfg = self._cfg()
        if cfg.original_quirks or cfg.islands <= 1:
            return 1
        if self.budget and self.samples >= cfg.merge_at * self.budget:
            return 1
        return cfg.islands

    def _next_generation(self) -> tuple[np.ndarray, np.ndarray]:
        cfg, sp, rng = self._cfg(), self.space, self.rng
        P = cfg.pop_size
        self.generation += 1
        n_isl = self._islands()
        if n_isl == 1:
            self._pool_isl = np.zeros(len(self._pool_loss), np.int64)
        sizes = [P // n_isl + (i < P % n_isl) for i in range(n_isl)]
        if self.generation == 1 or len(self._pool_loss) < 2:
            if not cfg.original_quirks:           # generation 0: evaluate a random population
                pop = sp.random(rng, P)           # warm start into island 0 only
                isl = np.repeat(np.arange(n_isl), sizes)
                return self._inject(pop), isl
        kids, labels, keep_x, keep_l, keep_i = [], [], [], [], []
        for i, Pi in enumerate(sizes):
            m = self._pool_isl == i
            k, kx, kl = self._breed(self._pool_x[m], self._pool_loss[m], Pi)
            kids.append(k)
            labels.append(np.full(len(k), i, np.int64))
            keep_x.append(kx)
            keep_l.append(kl)
            keep_i.append(np.full(len(kl), i, np.int64))
        self._pool_x, self._pool_loss = np.concatenate(keep_x), np.concatenate(keep_l)
        self._pool_isl = np.concatenate(keep_i)
        return np.concatenate(kids), np.concatenate(labels)

    def _breed(self, pool_x, pool_loss, P):
        """One MAGMA generation of P children from a population; returns (children, the
        population members kept for the next generation and their losses)."""
        cfg, sp, rng = self._cfg(), self.space, self.rng
        J, N = sp.num_jobs, sp.num_cores
        p_mut = self._rate(cfg.p_mutation_start, cfg.p_mutation)
        par_ratio = self._rate(cfg.parent_ratio_start, cfg.parent_ratio)
        if len(pool_loss) < 2:                    # original: breed blind from random parents
            parents = sp.random(rng, P)
            w = np.full(P, 1.0 / P)
            elites = np.empty((0, sp.dim))
            keep_x, keep_l = pool_x[:0], pool_loss[:0]
        else:
            order = np.argsort(pool_loss, kind="stable")[:P]
            pool_x, pool_loss = pool_x[order], pool_loss[order]
            n_par = max(2, int(P * par_ratio))
            parents = pool_x[:n_par]
            w = parent_weights(pool_loss[:n_par])
            if np.count_nonzero(w) < 2:
                w = np.full(len(parents), 1.0 / len(parents))
            n_el = max(1, int(P * cfg.elite_ratio))
            elites = pool_x[:n_el]
            # next population = elites + this generation's children (the rest is dropped)
            keep = 0 if cfg.original_quirks else n_el   # the original re-evaluates elites
            keep_x, keep_l = pool_x[:keep], pool_loss[:keep]
        n_par = len(parents)
        q = cfg.original_quirks
        kids = np.empty((P + (P % 2), sp.dim))
        for k in range(0, P, 2):                  # crossover-gen
            i, j = _pick2(rng, n_par, w)
            dad, mom = parents[i], parents[j]
            if rng.random() < cfg.p_crossover_gen:
                row = int(rng.random() >= 0.5)
                point = int(rng.integers(0, J))
                kids[k], kids[k + 1] = crossover_gen(dad, mom, row, point, J, q)
            else:
                kids[k], kids[k + 1] = dad, mom
        for k in range(0, P, 2):                  # crossover-rg
            if rng.random() < cfg.p_crossover_rg:
                i, j = _pick2(rng, n_par, w)
                point = int(rng.integers(0, J))
                kids[k], kids[k + 1] = crossover_rg(parents[i], parents[j], point, J, q)
        for k in range(P):                        # crossover-accel
            if rng.random() < cfg.p_crossover_accel:
                i, j = _pick2(rng, n_par, w)
                accel = int(rng.integers(0, N))
                kids[k] = crossover_accel(parents[i], parents[j], accel, J, N, rng, q)
        kids = mutate(kids[:P], J, N, p_mut, rng, cfg.p_mutation_min)
        if cfg.dedup and not q:
            kids = self._dedup(kids, J, N, rng)
        if q and len(elites):                     # original re-evaluates its elites
            kids = np.concatenate([elites, kids])
        return kids, keep_x, keep_l


def _digest(x: np.ndarray) -> int:
    """A 64-bit digest of a candidate that is the same in every process (Python's hash() of bytes is
    salted per process, so a set of those could not be restored from a checkpoint)."""
    return int.from_bytes(hashlib.blake2b(x.tobytes(), digest_size=8).digest(), "little")
