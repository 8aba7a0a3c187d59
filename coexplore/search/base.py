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

import functools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.plugins import plugins_code as _plugins_code
from coexplore.search.losses import check_log_losses
from coexplore.search.space import DiscreteSpace
from coexplore.stops import DeferredInterrupt, holding_stops


def checked_losses(batch, losses) -> np.ndarray:
    """Losses as a flat float array with NaN read as inf (invalid); one per candidate or a
    CoexploreError."""
    if batch is None or not hasattr(batch, "__len__"):
        raise CoexploreError(f"got the batch {batch!r:.80}", key="tell",
                             expected="tell(batch, losses) with the batch ask(n) returned")
    if np.iscomplexobj(losses):
        raise CoexploreError("complex losses", key="tell", expected="one real loss per candidate")
    try:
        out = np.array(losses, dtype=float, copy=True)
    except (TypeError, ValueError):
        raise CoexploreError(f"losses are not numbers: {losses!r:.80}", key="tell",
                             expected="one loss per candidate, shape [n]") from None
    if out.size != len(batch) or (out.ndim != 1 and out.shape != (len(batch), 1)):
        raise CoexploreError(f"{out.shape} losses for a batch of {len(batch)} candidates",
                             key="tell", expected="one loss per candidate, shape [n] (or a column, [n, 1])")
    out = out.reshape(-1)
    out[np.isnan(out)] = np.inf
    if np.any(out == -np.inf):
        raise CoexploreError(f"a loss of -inf (candidate {int(np.argmax(out == -np.inf))})", key="tell",
                             expected="losses > -inf (inf, or NaN, marks an invalid candidate)")
    tie = getattr(losses, "tie", None)
    if tie is not None:
        _check_tie(tie, out.size)
    return out


def _check_tie(tie, n: int) -> np.ndarray:
    """The secondary key of n losses as n floats (NaN read as inf), else a CoexploreError."""
    try:
        t = np.asarray(tie, dtype=float)
    except (TypeError, ValueError):
        raise CoexploreError(f"tie keys are not numbers: {tie!r:.80}", key="tie",
                             expected="one tie key per loss, shape [n]") from None
    if t.size != n or (t.ndim != 1 and t.shape != (n, 1)):
        raise CoexploreError(f"{t.shape} tie keys for {n} losses", key="tie",
                             expected="one tie key per loss, shape [n]")
    return t


class TiedLosses(np.ndarray):
    """Losses with a secondary key `tie` (same shape), e.g. latency's energy: the searchers learn
    from the losses alone; `run_search` keeps as its best the lowest loss, and among equal losses
    the lowest tie, and passes the ties on to `tell` (MARL's best-response rounds use them)."""

    tie: np.ndarray

    def __array_finalize__(self, obj):
        self.tie = getattr(obj, "tie", None)


def with_tie(losses: np.ndarray, tie: np.ndarray) -> TiedLosses:
    """Losses carrying a tie key per loss (same length, else a CoexploreError)."""
    out = np.asarray(losses, dtype=float).view(TiedLosses)
    t = _check_tie(tie, out.size)
    out.tie = t if t.ndim == 1 else t.reshape(-1)
    return out


NONZERO = "not 0"   # an `ONLY_WITH` condition: the other option is not 0 (or False)


def check_options(config, file=None) -> None:
    """Options with a fixed set of values (the config class's `CHOICES`) hold one of them, and an
    option that acts only with another option's value (`ONLY_WITH`) is left at its default otherwise
    (an option that would do nothing is refused)."""
    cls = type(config)
    for key, allowed in getattr(cls, "CHOICES", {}).items():
        value = getattr(config, key)
        if value not in allowed:
            raise CoexploreError(f"unknown {key} {value!r}", file=file, key=f"config.{key}",
                                 expected=" | ".join(allowed))
    only = getattr(cls, "ONLY_WITH", {})
    if only:
        defaults = cls()
        for key, (other, needed) in only.items():
            value = getattr(config, other)
            acts = value != 0 if needed is NONZERO else value == needed
            if not acts and getattr(config, key) != getattr(defaults, key):
                wanted = f"{other} other than 0" if needed is NONZERO else f"{other}: {needed}"
                raise CoexploreError(f"option '{key}' acts only with {wanted} (here {value})", file=file,
                                     key=f"config.{key}", expected=f"{wanted}, or '{key}' left at its default")


def plugins_code(searcher, what: str):
    """A block in which what a plugin's searcher (an instance, its class or config class) raises in
    `what` (ask, tell, __init__, config) is said as the plugin's (`plugins.plugins_code`)."""
    return _plugins_code(searcher, what, _PLUGIN_CONTRACT.get(what, _PLUGIN_CONTRACT["ask"]), "searcher")


_PLUGIN_CONTRACT = {
    "ask": "a Searcher whose ask(n) returns at most n candidates of the space and whose tell(batch, "
           "losses) takes them",
    "__init__": "a Searcher class built as cls(space, config, seed) (config: its config dataclass, seed: an "
                "int or None)",
    "config": "a config dataclass whose every field has a default (coexplore builds it from the mapper "
              "file's options)"}


def _asked(searcher, n: int):
    """searcher.ask(n), refused naming the searcher when it is no batch of candidates (None, a
    number): a plugin's ask is told so, not a TypeError inside the loop."""
    with plugins_code(searcher, "ask"):
        batch = searcher.ask(n)
    if isinstance(batch, (str, bytes, dict)) or not hasattr(batch, "__len__") \
            or (isinstance(batch, np.ndarray) and batch.ndim == 0):
        raise CoexploreError(f"searcher '{searcher.name}' answered ask({n}) with {type(batch).__name__} "
                             f"{batch!r:.60}", key="searcher",
                             expected="ask(n) returning an array of at most n candidates, one row each")
    if len(batch):
        try:
            a = np.asarray(batch)
        except ValueError:                # ragged rows
            a = None
        if a is None or a.ndim != 2 or a.dtype.kind not in "iuf":
            raise CoexploreError(f"searcher '{searcher.name}' answered ask({n}) with "
                                 + (f"an array of shape {a.shape} and type {a.dtype}" if a is not None else "ragged rows"),
                                 key="searcher", expected="ask(n) returning numbers, one row of the space's "
                                                          "parameters per candidate: shape [m <= n, parameters]")
        space = getattr(searcher, "space", None)
        if isinstance(space, DiscreteSpace):      # before the objective sees them (a user's may not check)
            try:
                space.check(a)
            except CoexploreError as exc:
                raise _refused_by_space(searcher, exc) from None
    return batch


def _refused_by_space(searcher, exc: CoexploreError) -> CoexploreError:
    """The space's refusal of asked candidates, said as the searcher's."""
    return CoexploreError(f"searcher '{searcher.name}' proposed candidates the space refuses: {exc.message}",
                          key="searcher", expected=f"ask(n) within the space: {exc.expected}")


def best_of(losses: np.ndarray) -> tuple[int, float]:
    """Index and value of the lowest loss (inf when there is none or none is valid)."""
    if not len(losses):
        return 0, np.inf
    i = int(np.argmin(losses))
    return i, float(losses[i])


def positive_int(value, key: str, option: str | None = None) -> int:
    """An integer from 1 to 2^53 given as an int (or an integral float), else a CoexploreError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, float, np.floating)) \
            or (isinstance(value, (float, np.floating)) and not (np.isfinite(value) and value == int(value))) \
            or not 1 <= value <= 2 ** 53:
        raise CoexploreError(f"got {value!r}", key=key, option=option, expected="an integer >= 1 (at most 2^53)")
    return int(value)


def _checked_ask(ask):
    """Wrap a searcher's ask so that n is checked once for all searchers."""
    @functools.wraps(ask)
    def checked(self, n):
        return ask(self, positive_int(n, "ask(n)"))
    checked._checked = True
    return checked


_TELLING: set[int] = set()   # searchers inside a checked tell (a subclass's super().tell is not re-checked)


def _checked_tell(tell):
    """Wrap a searcher's tell so that the whole batch is checked (`check_tell`) before anything
    in the searcher changes: a refused tell leaves the searcher as it was."""
    @functools.wraps(tell)
    def checked(self, batch, losses):
        key = id(self)
        if key in _TELLING:
            return tell(self, batch, losses)
        self.check_tell(batch, losses)
        before = self.samples
        _TELLING.add(key)
        try:
            out = tell(self, batch, losses)
        finally:
            _TELLING.discard(key)
        if self.samples != before + len(batch):     # the budget loop would never end
            raise CoexploreError(f"searcher '{self.name}' counted {self.samples - before} samples for a told batch "
                                 f"of {len(batch)}", key=f"{type(self).__name__}.tell",
                                 expected="a tell that starts with `losses = super().tell(batch, losses)` (it counts "
                                          "the samples and keeps the best)")
        return out
    checked._checked = True
    return checked


class Searcher:
    """Base class: tracks the budget and the best candidate seen so far.

    Subclasses define `ask(n)` (n is checked to be an integer >= 1 before it runs) and a `tell`
    that starts with `losses = super().tell(batch, losses)` (losses checked and flattened, NaN
    read as inf, the batch checked against `self.space` when the space has a `check`).
    Every tell runs `check_tell` on the whole batch first (subclasses extend it with their own
    needs), so a refused tell raises a CoexploreError and changes nothing. Points asked and never
    told are not lost: a searcher that tracks what it asked (the learners, exhaustive) asks them
    again once nothing new is left, and its `done` waits for them.
    """

    name = "searcher"
    learns_between_batches = False   # True: what a batch told shapes the next ask (a batch near the budget learns nothing)
    seeded = True                    # False: an in-order walk the seed does not change
    size: int | None = None          # distinct candidates it proposes in all, when known (exhaustive: from its first ask)
    done: bool | None = None         # True: every distinct point told (the best is the optimum); False: an
                                     # in-order walk not finished yet; None: not tracked (most searchers)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        ask = cls.__dict__.get("ask")
        if ask is not None and not getattr(ask, "_checked", False):
            cls.ask = _checked_ask(ask)
        tell = cls.__dict__.get("tell")
        if tell is not None and not getattr(tell, "_checked", False):
            cls.tell = _checked_tell(tell)

    def __init__(self, seed: int | None = 0):
        if seed is not None and not isinstance(seed, np.random.SeedSequence) and (
                isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise CoexploreError(f"got {seed!r}", key="seed", expected="an integer >= 0, a SeedSequence or None")
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.samples = 0
        self.best_x: np.ndarray | None = None
        self.best_loss = np.inf
        self.budget: int | None = None  # planned samples; run_search sets it, schedules may read it

    def __repr__(self) -> str:       # what a notebook shows: the run so far, not an address
        best = "none yet" if self.best_x is None else f"{float(self.best_loss):.6g}"
        return f"{type(self).__name__}(samples={self.samples}, best_loss={best}, seed={self.seed!r})"

    def ask(self, n: int) -> np.ndarray:
        """Return n candidates as an array of shape [n, ...]."""
        raise NotImplementedError  # abstract

    def check_tell(self, batch, losses) -> None:
        """Refuse a told batch (CoexploreError) before anything changes: losses not one number per
        candidate or -inf, candidates outside `self.space` (when it has a `check`); losses <= 0 for
        a searcher whose config has `log_loss`; subclasses add their own needs and call this first."""
        checked = checked_losses(batch, losses)
        check = getattr(getattr(self, "space", None), "check", None)
        if check is not None:
            check(batch)
        if getattr(getattr(self, "config", None), "log_loss", False):   # a log-scaled learner
            check_log_losses(checked)

    def tell(self, batch: np.ndarray, losses: np.ndarray) -> np.ndarray:
        """Report the losses of a batch from `ask`; returns them checked (flat floats, NaN read
        as inf) for the subclass's own use: subclasses start with `losses = super().tell(...)`.
        Every tell first runs `check_tell` (the whole batch), so a refused one changes nothing."""
        losses = checked_losses(batch, losses)
        self.samples += len(losses)
        i, loss = best_of(losses)
        if loss < self.best_loss:
            self.best_loss = loss
            self.best_x = np.array(batch[i], copy=True)
        return losses

    def state_dict(self) -> dict:
        """Everything the searcher's next asks depend on, picklable (`search.checkpoint`); a
        searcher holding something that is not (a generator) overrides this and `load_state_dict`."""
        return self.__dict__

    def load_state_dict(self, state: dict) -> None:
        """Become the searcher whose `state_dict()` this was."""
        self.__dict__.clear()
        self.__dict__.update(state)

    def recommend(self) -> tuple[np.ndarray | None, float]:
        """The best candidate seen and its loss."""
        return self.best_x, self.best_loss


Searcher.tell = _checked_tell(Searcher.tell)


@dataclass
class SearchResult:
    """What `run_search` returns: the best point and loss, samples used, and the history of
    (samples, best loss so far)."""

    best_x: np.ndarray | None
    best_loss: float
    samples: int
    # (samples, best loss so far): a step function, each change and the end of each flat stretch
    history: list[tuple[int, float]] = field(default_factory=list)
    interrupted: bool = False   # stopped by Ctrl-C before the budget: best of the batches told
    invalid: int | None = None  # samples with an infinite loss (invalid), of those this run evaluated


class SearchInterrupted(KeyboardInterrupt):
    """Ctrl-C during `run_search`, carrying the result so far (`.result`, interrupted=True).

    A KeyboardInterrupt, so callers that do not look for it stop as before; callers that can
    save a best-so-far (`coexplore map`, `coexplore schedule`) catch it.
    """

    def __init__(self, result):
        super().__init__()
        self.result = result


def run_search(searcher: Searcher, objective: Callable[[np.ndarray], np.ndarray], budget: int,
               batch_size: int = 100, progress: bool = False, desc: str | None = None,
               best_label: str = "best", checkpoint=None, target: float = -np.inf) -> SearchResult:
    """Drive ask/tell until the searcher has used `budget` samples in all (a searcher that ran
    before continues: its samples count); the driver, not the searcher, owns progress.

    objective maps a batch [n, ...] to losses [n] (inf = invalid). Ctrl-C raises
    SearchInterrupted with the best of the batches evaluated so far: in the main thread the first
    Ctrl-C lets the batch being evaluated finish (it is counted), so the interrupt never lands
    inside the progress bar or the model; a second Ctrl-C stops at once (that batch is dropped).
    Losses carrying a `tie` key (`TiedLosses`) keep, among equal losses, the lowest tie
    as the best. `best_label` names the best loss on the progress bar (e.g. with its unit).
    A `checkpoint` (`search.checkpoint.Checkpoint`) is restored first, when it holds a snapshot of
    this run, and saved at batch boundaries (periodically and on Ctrl-C): a run resumed from it ends
    exactly as an uninterrupted run would. The caller discards it once the result is stored.
    `target`: a loss no candidate can beat (a proven lower bound): the search ends when it is reached.
    """
    if not isinstance(searcher, Searcher):
        raise CoexploreError(f"got {searcher!r:.80}", key="searcher",
                             expected="a Searcher object (search.registry.make_searcher(name, space, seed))")
    if not callable(objective):
        raise CoexploreError(f"got {objective!r:.80}", key="objective",
                             expected="a function of a batch [n, params] returning n losses")
    if not all(hasattr(searcher, a) for a in ("budget", "samples", "best_x", "best_loss", "rng")):
        raise CoexploreError(f"searcher '{getattr(searcher, 'name', type(searcher).__name__)}' was not set up as a "
                             "Searcher", key="searcher",
                             expected="its __init__ calling super().__init__(seed) (coexplore.search.base.Searcher)")
    budget = positive_int(budget, "budget")
    batch_size = positive_int(batch_size, "batch_size")
    history: list[tuple[int, float]] = []
    restored = checkpoint.restore(searcher) if checkpoint is not None else None
    if checkpoint is not None:
        checkpoint.probe(searcher)        # a state that cannot be saved is said now, not at a stop
    bar = None
    if progress:
        from coexplore.progress import progress_bar
        bar = progress_bar(total=budget, initial=min(searcher.samples, budget), desc=desc or searcher.name, unit="sample",
                   leave=False, mininterval=0.5)
    if searcher.budget is None or searcher.budget < budget:
        searcher.budget = budget          # a searcher run again with a larger budget plans for it
    # the driver's own incumbent: consistent even if Ctrl-C lands inside the searcher's tell;
    # samples count from the searcher's own total (a searcher run again continues its count)
    best_x, best_loss, samples = searcher.best_x, searcher.best_loss, searcher.samples
    best_tie, lexicographic = np.inf, False
    # invalid samples: counted from a fresh searcher (one run before, or a snapshot without the count: unknown)
    invalid = 0 if searcher.samples == 0 else None
    if restored is not None:
        best_x, best_loss, best_tie = restored["best_x"], restored["best_loss"], restored["best_tie"]
        lexicographic, history = restored["lexicographic"], list(restored["history"])
        invalid = restored.get("invalid")
        if hasattr(objective, "model_valid"):     # an objective's own count goes on too (None: unknown)
            objective.model_valid = restored.get("model_valid")

    def save():
        with holding_stops():       # a Ctrl-C while the snapshot is written waits for it (then stops)
            checkpoint.save(searcher, {"best_x": best_x, "best_loss": best_loss, "best_tie": best_tie,
                                       "lexicographic": lexicographic, "history": history, "invalid": invalid,
                                       "model_valid": getattr(objective, "model_valid", None)})
    stop = DeferredInterrupt(say=bar is not None,
                              lost="the search state since its last save is lost" if checkpoint is not None else "")
    try:
        stop.__enter__()
        while searcher.samples < budget and not DeferredInterrupt.requested and not best_loss <= target:
            n = min(batch_size, budget - searcher.samples)
            batch = _asked(searcher, n)
            if len(batch) > n:
                raise CoexploreError(f"searcher '{searcher.name}' proposed {len(batch)} candidates when asked for "
                                     f"{n}", key="searcher", expected="ask(n) returning at most n candidates "
                                                                      "(the budget counts every one)")
            if len(batch) == 0:  # the searcher has nothing left to propose (exhausted space)
                if searcher.samples == 0:
                    raise CoexploreError(f"searcher '{searcher.name}' proposed no candidates before any "
                                         "was evaluated", key="searcher",
                                         expected="a searcher with candidates left to propose")
                break
            if bar is not None and searcher.size is not None and max(searcher.size, searcher.samples) < bar.total:
                bar.total = max(searcher.size, searcher.samples)    # the space ends before the budget
                bar.refresh()
            try:
                raw = objective(batch)
            except CoexploreError as exc:
                if exc.key != "batch":
                    raise
                raise _refused_by_space(searcher, exc) from None
            tie = getattr(raw, "tie", None)          # a secondary key for the incumbent (TiedLosses)
            losses = checked_losses(batch, raw)
            samples += len(losses)
            if invalid is not None:
                invalid += int(np.count_nonzero(losses == np.inf))
            i, loss = best_of(losses)
            if tie is not None and np.isfinite(loss):
                tied = np.flatnonzero(losses == loss)
                i = int(tied[np.argmin(np.asarray(tie, float)[tied])])
                if loss < best_loss or (loss == best_loss and tie[i] < best_tie):
                    best_x, best_loss, best_tie = np.array(batch[i], copy=True), loss, float(tie[i])
                    lexicographic = True
            elif loss < best_loss:
                best_x, best_loss = np.array(batch[i], copy=True), loss
            if len(history) >= 2 and history[-1][1] == history[-2][1] == best_loss:
                history[-1] = (samples, best_loss)     # a flat stretch keeps its two ends only
            else:
                history.append((samples, best_loss))
            with plugins_code(searcher, "tell"):
                searcher.tell(batch, losses if tie is None else with_tie(losses, tie))
            if bar is not None:
                bar.set_postfix({best_label: f"{best_loss:.4g}"}, refresh=False)   # shown by update
                bar.update(len(losses))
            if DeferredInterrupt.requested and searcher.samples < budget:
                DeferredInterrupt.hold_rest()     # the search ends here: what follows writes its best
            if checkpoint is not None and (DeferredInterrupt.requested or checkpoint.due()) \
                    and searcher.samples < budget:
                save()           # a batch boundary: searcher and driver agree (a finished run needs none)
    except KeyboardInterrupt as exc:
        DeferredInterrupt.hold_rest()             # (a stop at once: the best so far is still written)
        if isinstance(exc, SearchInterrupted):
            raise
        raise SearchInterrupted(SearchResult(best_x, best_loss, samples, history, interrupted=True,
                                             invalid=invalid)) from None
    finally:
        asked_to_stop = DeferredInterrupt.requested
        stop.__exit__()
        if bar is not None:
            bar.close()
    if asked_to_stop and searcher.samples < budget and not best_loss <= target:   # finished anyway: complete
        raise SearchInterrupted(SearchResult(best_x, best_loss, samples, history, interrupted=True, invalid=invalid))
    # the best the driver saw evaluated (ties decided by the secondary key, if any), not the searcher's
    # own idea of it: a searcher (a plugin's) may keep another `best_x` than the losses it was told say
    return SearchResult(best_x, best_loss, searcher.samples, history, invalid=invalid)
