"""Any nevergrad optimizer over a continuous box, behind coexplore's ask/tell contract.

The box [lower, upper] (one bound pair per coordinate) is given to nevergrad as [0, 1]^d and
scaled back, so every optimizer sees the same well-conditioned space whatever the units.
`ask(n)` asks nevergrad n times (nevergrad allows several outstanding asks; `num_workers`
tells it how many to expect) and `tell` gives each told row's loss to the pending ask with that
content (batches may be told in any order; a row not pending is refused). Infinite
losses (invalid candidates) are passed on as a large finite penalty because several
optimizers (CMA-ES) cannot rank inf. The nevergrad optimizer is built at the first `ask`.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.search.base import Searcher

# short names accepted by coexplore -> nevergrad registry names
OPTIMIZERS = {
    "pso": "PSO",
    "cma": "CMA",
    "de": "DE",
    "tbpsa": "NaiveTBPSA",
    "oneplusone": "OnePlusOne",
}


class NevergradSearcher(Searcher):
    """nevergrad optimizer `optimizer` (short name above or any registry name) on a box."""

    def __init__(self, optimizer: str, lower, upper, budget: int, seed: int | None = 0,
                 num_workers: int = 1):
        super().__init__(seed)
        self.optimizer = optimizer
        self.lower = lower
        self.upper = upper
        self.budget = budget
        self.num_workers = num_workers
        self.name = optimizer.lower()

    def _build(self):
        import nevergrad as ng

        key = OPTIMIZERS.get(self.optimizer.lower(), self.optimizer)
        if key not in ng.optimizers.registry:
            raise CoexploreError(f"unknown nevergrad optimizer '{self.optimizer}'", key="searcher",
                                 expected=", ".join(OPTIMIZERS))
        lo = np.asarray(self.lower, dtype=float).ravel()
        hi = np.asarray(self.upper, dtype=float).ravel()
        if lo.shape != hi.shape or lo.size == 0 or np.any(~(hi > lo)):
            raise CoexploreError("the search box needs lower < upper in every coordinate")
        self._lo, self._span = lo, hi - lo
        param = ng.p.Array(shape=(lo.size,), lower=0.0, upper=1.0)
        param.random_state = np.random.RandomState(int(self.rng.integers(2**31)))
        make = _bounded_cma(ng, lo.size) if key == "CMA" else ng.optimizers.registry[key]
        self._opt = make(parametrization=param, budget=int(self.budget), num_workers=max(1, int(self.num_workers)))
        self._pending: list = []
        self._penalty = 1e15

    def load_state_dict(self, state: dict) -> None:
        """A restored optimizer: cma keys its archive of solutions by Python's hash(), which is salted
        per process, so a CMA restored in another process recomputes its elitist's genotype from the
        phenotype (the same vector here: cma works on nevergrad's [0, 1] box without a transform of its
        own) and warns each time; the warning says nothing to a user and is silenced (in this
        searcher's asks and tells only: no process-wide filter)."""
        super().load_state_dict(state)

    def ask(self, n: int) -> np.ndarray:
        if not hasattr(self, "_opt"):
            self._build()
        with _quiet_elitist():
            cands = [self._opt.ask() for _ in range(n)]
        self._pending.extend(cands)
        unit = np.array([c.value for c in cands]).reshape(n, -1)
        return self._lo + self._span * np.clip(unit, 0.0, 1.0)

    def _match(self, batch) -> list[int]:
        """Index in `_pending` of the ask each told row is (the earliest unused one with exactly that
        content), or a CoexploreError: nevergrad must learn each loss on the candidate it belongs to."""
        pending = getattr(self, "_pending", [])
        x = np.asarray(batch)
        d = np.asarray(self.lower, dtype=float).size
        if x.ndim != 2 or x.shape[1] != d or not np.issubdtype(x.dtype, np.number):
            raise CoexploreError(f"candidates of shape {x.shape}", key="batch", expected=f"shape [n, {d}]")
        free: dict[bytes, list[int]] = {}
        for i, c in enumerate(pending):
            row = self._lo + self._span * np.clip(np.asarray(c.value, dtype=float).reshape(-1), 0.0, 1.0)
            free.setdefault(row.tobytes(), []).append(i)
        out = []
        for r, row in enumerate(np.ascontiguousarray(x, dtype=float)):
            slots = free.get(row.tobytes())
            if not slots:
                raise CoexploreError(f"row {r} of the told batch is not a pending ask ({len(pending)} pending): "
                                     "told twice, changed, or never asked", key="tell",
                                     expected="rows exactly as returned by ask, each told once")
            out.append(slots.pop(0))
        return out

    def check_tell(self, batch, losses) -> None:
        super().check_tell(batch, losses)
        self._match(batch)

    def tell(self, batch: np.ndarray, losses: np.ndarray) -> None:
        idx = self._match(batch)
        losses = super().tell(batch, losses)
        finite = losses[np.isfinite(losses)]
        if finite.size:
            self._penalty = min(1e20, max(self._penalty, 10.0 * float(np.max(np.abs(finite)))))
        cands = [self._pending[i] for i in idx]
        for i in sorted(idx, reverse=True):
            del self._pending[i]
        with _quiet_elitist():
            for cand, loss in zip(cands, losses):
                self._opt.tell(cand, float(loss) if np.isfinite(loss) else self._penalty)


@contextlib.contextmanager
def _quiet_elitist():
    """A context without cma's "genotype for elitist not found" warning (see load_state_dict)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="genotype for elitist not found")
        yield


CMA_STEP = 0.25   # CMA-ES's first step size, as a fraction of each coordinate's range


def _bounded_cma(ng, dim: int):
    """nevergrad's "CMA" on a bounded box is its `CMAbounded` (diagonal, elitist), with two changes.
    - Its first step: nevergrad's is 0.08 of the range below 18 coordinates and 0.04 from 18 on, so
      on a schedule (a core gene per job, floor of value x cores) every job stayed on the middle
      core of 3 or more and the search never left that cell (worse than random search). It starts
      here at `CMA_STEP` of the range (cma's advice: the optimum within about 3 steps of the
      start), whatever nevergrad's scaling.
    - Above 299 dimensions the cma package adapts the step size by two-point adaptation (TPA),
      which fails when several candidates are asked before their tells ("Mean shift samples are
      expected but missing"). Cumulative step-size adaptation, cma's choice at 299 dimensions and
      below (so identical there), works at any size."""
    from cma.sigma_adaptation import CMAAdaptSigmaCSA          # cma: a dependency of nevergrad
    from nevergrad.optimization.optimizerlib import CMAbounded
    config = {**CMAbounded._config, "inopts": {"AdaptSigma": CMAAdaptSigmaCSA}}
    unit = ng.p.Array(shape=(dim,), lower=0.0, upper=1.0)
    unit.random_state = np.random.RandomState(0)          # (not numpy's global state)
    probe = ng.optimizers.ParametrizedCMA(**{**config, "scale": 1.0})(parametrization=unit, budget=1)
    per_scale = float(probe.es.sigma0) * float(unit.sigma.value)   # the step in the box of scale 1
    return ng.optimizers.ParametrizedCMA(**{**config, "scale": CMA_STEP / per_scale})
