"""The ask/tell contract every searcher follows (layer mappers, MAGMA, baselines).

Modelled on nevergrad: a searcher proposes a batch of candidates with `ask(n)`, the caller
evaluates them (the searcher never calls the cost model itself) and reports losses with
`tell(batch, losses)`; lower is better, `inf` marks an invalid candidate (it still counts
as a sample). Configuration is given at construction and stored as given; no work happens
in `__init__` beyond that (scikit-learn style). Randomness comes only from the
`numpy.random.Generator` built from `seed`.

Candidates are rows of a 2-D numpy array whose meaning is the searcher's space's business
(discrete parameter indices for mappings, core ids + priorities for MAGMA).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


class Searcher:
    """Base class: tracks the budget and the best candidate seen so far."""

    name = "searcher"

    def __init__(self, seed: int | None = 0):
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.samples = 0
        self.best_x: np.ndarray | None = None
        self.best_loss = np.inf
        self.budget: int | None = None  # planned samples; run_search sets it, schedules may read it

    def ask(self, n: int) -> np.ndarray:
        """Return n candidates as an array of shape [n, ...]."""
        raise NotImplementedError  # abstract

    def tell(self, batch: np.ndarray, losses: np.ndarray) -> None:
        """Report the losses of a batch from `ask`; subclasses call super().tell first."""
        losses = np.asarray(losses, dtype=float)
        if losses.shape != (len(batch),):
            from coexplore.errors import CoexploreError
            raise CoexploreError(f"{losses.shape} losses for a batch of {len(batch)} candidates",
                                 key="tell", expected="one loss per candidate, shape [n]")
        self.samples += len(losses)
        if len(losses):
            i = int(np.argmin(losses))
            if losses[i] < self.best_loss:
                self.best_loss = float(losses[i])
                self.best_x = np.array(batch[i], copy=True)

    def recommend(self) -> tuple[np.ndarray | None, float]:
        """The best candidate seen and its loss."""
        return self.best_x, self.best_loss


@dataclass
class SearchResult:
    best_x: np.ndarray | None
    best_loss: float
    samples: int
    history: list[tuple[int, float]] = field(default_factory=list)  # (samples, best loss so far)
    interrupted: bool = False   # stopped by Ctrl-C before the budget: best of the batches told


class SearchInterrupted(KeyboardInterrupt):
    """Ctrl-C during `run_search`, carrying the result so far (`.result`, interrupted=True).

    A KeyboardInterrupt, so callers that do not look for it stop as before; callers that can
    save a best-so-far (`coexplore map`, `coexplore schedule`) catch it.
    """

    def __init__(self, result):
        super().__init__()
        self.result = result


def run_search(searcher: Searcher, objective: Callable[[np.ndarray], np.ndarray], budget: int,
               batch_size: int = 100, progress: bool = False, desc: str | None = None) -> SearchResult:
    """Drive ask/tell until `budget` samples; the driver, not the searcher, owns progress.

    objective maps a batch [n, ...] to losses [n] (inf = invalid). Ctrl-C raises
    SearchInterrupted with the best of the batches evaluated so far (a batch being evaluated
    when the interrupt came is dropped and not counted).
    """
    if budget <= 0:
        from coexplore.errors import CoexploreError
        raise CoexploreError(f"budget must be a positive number of samples, got {budget}",
                             key="budget", expected="an integer >= 1")
    history: list[tuple[int, float]] = []
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=budget, desc=desc or searcher.name, unit="sample", leave=False, mininterval=0.5)
    if searcher.budget is None:
        searcher.budget = budget
    # the driver's own incumbent: consistent even if Ctrl-C lands inside the searcher's tell
    best_x, best_loss, samples = None, np.inf, 0
    try:
        while searcher.samples < budget:
            n = min(batch_size, budget - searcher.samples)
            batch = searcher.ask(n)
            if len(batch) == 0:  # the searcher has nothing left to propose (exhausted space)
                break
            losses = np.asarray(objective(batch), dtype=float)
            samples += len(losses)
            if len(losses):
                i = int(np.argmin(losses))
                if losses[i] < best_loss:
                    best_x, best_loss = np.array(batch[i], copy=True), float(losses[i])
            history.append((samples, best_loss))
            searcher.tell(batch, losses)
            if bar is not None:
                bar.update(len(losses))
                bar.set_postfix(best=f"{best_loss:.4g}")
    except KeyboardInterrupt as exc:
        if isinstance(exc, SearchInterrupted):
            raise
        raise SearchInterrupted(SearchResult(best_x, best_loss, samples, history, interrupted=True)) from None
    finally:
        if bar is not None:
            bar.close()
    return SearchResult(searcher.best_x, searcher.best_loss, searcher.samples, history)
