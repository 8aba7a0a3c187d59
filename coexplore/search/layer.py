"""Mapping one layer onto one core: mapspace + batched model + a searcher, with caching.

`map_layer` is the whole `coexplore map` pipeline as a function: it builds the mapspace under
the architecture's constraints, drives a searcher through ask/tell on the batched model (every
proposal, valid or not, is a sample), and returns the best mapping with its full result record.
Results are cached in SQLite under a content hash of everything that changes them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from coexplore.errors import CoexploreError, check_type
from coexplore.model.cache import store
from coexplore.mapspace.space import MapSpace
from coexplore.model.inputs import Context
from coexplore.provenance import code_version
from coexplore.search import registry
from coexplore.search.base import SearchInterrupted, SearchResult, positive_int, run_search
from coexplore.stops import holding_stops
from coexplore.seeds import check_seed
from coexplore.spec.architecture import architecture_to_v3
from coexplore.spec.constraints import LevelConstraints
from coexplore.spec.mapping import from_arrays

# the built-in model's version in cache entries: the code's (source digest too) and numpy's (its generators)
MODEL_VERSION = f"builtin-{code_version()}-numpy{'.'.join(np.__version__.split('.')[:2])}"
BEST_LABELS = {"edp": "EDP[J*cycle]", "energy": "energy[pJ]", "latency": "cycles"}


@dataclass
class MapResult:
    """The best mapping `map_layer` found: its record (the `evaluate --json` schema), Timeloop mapping
    list, encoded point, history of (samples, best loss) and the run's facts."""

    searcher: str
    samples: int
    best: dict                  # result record (evaluate --json schema)
    mapping: list               # Timeloop mapping entries
    history: list               # [[samples, best objective value], ...]
    objective: str
    seed: int | None
    wall_s: float = 0.0
    cached: bool = False
    x: list = field(default_factory=list)
    mapspace_log10: float = 0.0
    mapspace_size: int | None = None   # the exact number of distinct mappings, when counted
    exhausted: bool | None = None   # exhaustive search: did it see every distinct mapping (= optimum)?
    interrupted: bool = False       # Ctrl-C before the budget: the best of the samples evaluated
    invalid_samples: int | None = None   # of `samples`, the invalid mappings (None: not known, a resumed older run)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


WHY_SAMPLES = 1000     # random mappings `why_invalid` tries


class NoValidMapping(CoexploreError):
    """A search whose samples were all invalid mappings: not bad input, a failed run.
    `reasons`: the commonest failures among random mappings of the space, with counts."""

    def __init__(self, samples: int, reasons: list[tuple[str, int]], custom: bool | str = False, walked: str = ""):
        why = "; ".join(f"{r} ({n})" for r, n in reasons)
        if custom:           # the model's mappings may be valid: the function (or expression) refused them all
            what, penalty = ((f"the objective {custom!r}", "energy * max(1, cycles / CAP) ** 8")
                             if isinstance(custom, str) else
                             ("the objective function", "energy * np.maximum(1, cycles / cap) ** 8"))
            super().__init__(f"{what} gave no finite loss to any of the {samples:,} mappings "
                             "it was given" + (f"; of 1,000 random mappings of this space the model refuses: {why}"
                                               if why else ""),
                             key="objective",
                             expected="an objective that gives some mappings a finite loss: a "
                             "limit written as inf leaves the searcher nothing to learn from until a sample meets "
                             f"it; a penalty growing with the excess steers it there (e.g. {penalty}), or a larger "
                             "budget")
        else:
            every = reasons[0][0] if reasons and reasons[0][1] >= WHY_SAMPLES else None
            super().__init__(f"no valid mapping found in {samples:,} samples"
                             + (f" ({walked})" if walked else "")
                             + ("; of 1,000 random mappings of this space, the commonest failures (one "
                                f"mapping may fail several): {why}" if why else ""),
                             key="budget", option="--budget",
                             expected=(f"an architecture or layer in which mappings can pass the {every} (all 1,000 "
                                       "random mappings failed it: a larger budget is unlikely to help), or "
                                       "another searcher" if every else
                                       "a larger budget, another searcher, or a layer/architecture pair whose "
                                       "tiles fit"))
        self.samples, self.reasons = samples, reasons
        self.objective = custom if isinstance(custom, str) else None    # an expression that refused them all
        self.invalid_samples = samples                   # of them, the mappings the model itself refused
        self.wall_s: float | None = None                 # the search's seconds and the space's size, when known
        self.mapspace_log10: float | None = None
        self.mapspace_size: int | None = None


def why_invalid(ctx: Context, ms: MapSpace, n: int = WHY_SAMPLES, seed: int = 0) -> list[tuple[str, int]]:
    """The three commonest reasons random mappings of `ms` fail: a level's own fan-out (timeloop-mapper's
    check), Timeloop's model check and level, or the constraints' factor bounds. A mapping counts
    once for each of these it breaks, so a reason every mapping breaks shows as n."""
    from collections import Counter
    from coexplore.model import validity as v
    arrays = ms.decode(ms.sample(np.random.default_rng(seed), n))
    res = ctx.evaluate(arrays)
    ok = ms.satisfies(arrays)
    fits = ms.fits_fanouts(arrays)
    names = {v.FACTORS: "factors", v.X_EXPANSION: "X fan-out", v.Y_EXPANSION: "Y fan-out",
             v.INSTANCES: "instances", v.CAPACITY: "capacity", v.UNDERUSED: "minimum utilization",
             v.NO_FANOUT: "spatial loops without a fan-out", v.OVERFLOW: "64-bit counts"}
    inner = list(reversed(ctx.arch.levels))
    levels = [lv.name for lv in inner]
    # every buffer's capacity, not only the model's first failing check: a capacity no mapping of the
    # space can meet then shows as n, whatever else a mapping breaks first
    size = np.array([lv.effective_size for lv in inner], float)
    overfull = res.nest.size.sum(axis=2) > size[None, :]               # [n, L]
    tally: Counter = Counter()
    for b in range(n):
        said = set()
        over = None if fits[b] else ms.fanout_broken(arrays, b)
        if over:                                 # timeloop-mapper fails these before it evaluates them
            said.add(f"{over[0]} fan-out of {over[1]} (the level's own, as timeloop-mapper checks it)")
        if not res.valid[b]:                     # (the model's first failing check)
            kind, where = int(res.validity.kind[b]), int(res.validity.where[b])
            place = ctx.arch.compute.name if where < 0 else levels[where]
            said.add(f"{names.get(kind, 'check')} of {place}")
        said.update(f"capacity of {levels[li]}" for li in np.flatnonzero(overfull[b]))
        if not ok[b]:
            said.add("the constraints' factor bounds or minimum parallelism")
        tally.update(said)
    return tally.most_common(3)


class MapInterrupted(KeyboardInterrupt):
    """Ctrl-C during `map_layer`; `.result` is the best mapping so far (None if none was valid),
    or the complete result when a stop-at-once came while it was made (`.stop_now`)."""

    def __init__(self, result: MapResult | None, stop_now: bool = False):
        super().__init__()
        self.result = result
        self.stop_now = stop_now


def metric_arrays(res) -> dict:
    """The metrics an objective reads (names, expressions and functions alike), as arrays of the batch."""
    return {"energy": res.energy_pJ, "latency": res.cycles, "cycles": res.cycles, "edp": res.edp,
            "utilization": res.utilization}


def make_objective(ctx: Context, ms: MapSpace, objective):
    """Batch of parameter vectors -> losses (inf for invalid mappings and for mappings that break
    the constraints' factor bounds). `objective`: a name (registry.OBJECTIVES), an expression of the
    metrics (`objective_expr`, e.g. 'energy * cycles**2') or a function of
    the batch's metrics {'energy' (pJ), 'cycles', 'latency' (= cycles), 'edp' (J*cycle),
    'utilization'}, numpy arrays with inf for invalid mappings, giving one loss per mapping."""
    def f(X: np.ndarray) -> np.ndarray:
        arrays = ms.decode(X)
        res = ctx.evaluate(arrays)
        metrics = metric_arrays(res)
        valid = np.isfinite(np.asarray(metrics["energy"], float))
        allowed = valid & ms.fits_fanouts(arrays)        # (timeloop-mapper: each level's own fan-out)
        if ms.has_bounds:                                # (bounds, min parallelism)
            allowed &= ms.satisfies(arrays)
        if f.model_valid is not None:
            f.model_valid += int(allowed.sum())
        if callable(objective):
            given = {k: np.where(valid, np.asarray(v, float), np.inf)             # inf where invalid
                     for k, v in metrics.items()}
            loss = _custom_losses(objective, given, len(X))
            loss[~valid] = np.inf                                       # an invalid mapping stays invalid
        else:
            loss = registry.objective_loss(metrics, objective)
        loss[~allowed] = np.inf
        return loss
    # samples valid and inside the constraints, whatever their loss (None: not known, a run resumed from an
    # older snapshot): what `invalid_samples` is counted from (kept in the search's checkpoint)
    f.model_valid = 0
    return f


def invalid_samples(result: SearchResult, objective_fn) -> int | None:
    """Of a search's samples, the mappings the model refused (invalid, or outside the constraints):
    not those an objective of the user's refused (None: not known, a run resumed from an older
    snapshot or a searcher run before)."""
    if result.invalid is None:
        return None
    valid = getattr(objective_fn, "model_valid", None)
    if valid is None:
        return result.invalid                 # (the infinite losses: the model's verdict for a named objective)
    return max(0, result.samples - valid)


def _custom_losses(objective, metrics: dict, n: int) -> np.ndarray:
    out = objective(metrics)
    try:
        loss = np.array(out, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise CoexploreError(f"the objective returned {type(out).__name__}", key="objective",
                             expected="one number per mapping (a numpy array of shape [n])") from None
    if loss.shape != (n,):
        raise CoexploreError(f"the objective returned {loss.size} losses for {n} mappings", key="objective",
                             expected="one number per mapping (a numpy array of shape [n])")
    if np.any(loss == -np.inf):
        raise CoexploreError(f"the objective returned -inf (mapping {int(np.argmax(loss == -np.inf))} of the batch)",
                             key="objective", expected="losses > -inf, lower is better (inf, or NaN, marks a "
                                                       "mapping to avoid)")
    return np.where(np.isnan(loss), np.inf, loss)


def cache_parts(ctx: Context, constraints: dict, spec: registry.MapperSpec, *, budget: int, seed,
                ms: MapSpace | None = None) -> dict:
    """What a cached search result depends on; the mapspace's parameter layout included, since
    the cache stores the encoded best point."""
    ms = ms if ms is not None else MapSpace(ctx.arch, ctx.problem, constraints)
    cons = {k: dataclasses.asdict(v) for k, v in sorted(constraints.items())}
    for v in cons.values():
        v.pop("source", None)            # where the file sits is no part of what the result depends on
        v.pop("min_parallelism_from", None)
        v.pop("origin", None)
        for k in ("keep", "bypass"):
            if v[k] is not None:
                v[k] = sorted(v[k])
    return {"core": {"arch": architecture_to_v3(ctx.arch), "ert": ctx.ert.actions, "constraints": cons},
            "layer": {"dims": ctx.problem.dims, "bounds": ctx.problem.bounds,
                      "coefficients": ctx.problem.coefficients,
                      "dataspaces": [dataclasses.asdict(d) for d in ctx.problem.dataspaces]},
            "searcher": {**spec.to_dict(), "budget": budget, **registry.searcher_code(spec.searcher)}, "seed": seed,
            "encoding": {"names": list(ms.space.names), "cardinalities": [int(c) for c in ms.space.cardinalities]},
            "backend": "builtin", "backend_version": MODEL_VERSION,
            # the stride rule changes counts; named only when not the default, so earlier keys hold
            **({"stride_rule": ctx.stride_rule} if ctx.stride_rule != "current" else {}),
            # X/Y choices of fixed spatial factors and split rules (2026-12-01): spaces with them are
            # other spaces than before; named only where they exist, so other keys hold
            **({"axis_rules": ms.axis_rules()} if ms.axis_rules() else {})}


def map_layer(ctx: Context, constraints: dict[str, LevelConstraints], spec: registry.MapperSpec | str, budget: int,
              seed: int | None = 0, progress: bool = False, cache=None, objective=None,
              batch_size: int | None = None, checkpoint=None) -> MapResult:
    """Search the best mapping of ctx's layer; spec is a MapperSpec or a name / mapper YAML
    (`registry.load_mapper`); `objective` / `batch_size` override the spec's. `objective` may also
    be a function of the metrics (see `make_objective`; e.g. energy under a cycle cap), which the
    result's `history` then records (`objective` "custom"; not cached). An unseeded run (seed None)
    is not cached. A `checkpoint` (`search.checkpoint`) resumes an interrupted search of this run
    and is saved as it goes (`run_search`). `constraints`: `load_constraints`' dict, or constraints
    files' paths, or None (none); `cache`: a ResultCache, or its file's path."""
    check_type(ctx, Context, "ctx", "a Context (coexplore.model.inputs.load_context(arch, problem))")
    if isinstance(cache, (str, Path)):          # a cache file's path: opened for this call
        from coexplore.model.cache import ResultCache
        with ResultCache(cache) as opened:
            return map_layer(ctx, constraints, spec, budget, seed, progress, opened, objective, batch_size, checkpoint)
    if constraints is None or isinstance(constraints, (str, Path, list, tuple)):   # none, or constraints files
        from coexplore.spec.constraints import load_constraints
        constraints = {} if constraints is None else load_constraints(ctx.arch, constraints, ctx.problem)
    if cache is not None and not all(callable(getattr(cache, m, None)) for m in ("get", "put")):
        raise CoexploreError(f"got {cache!r:.60}", key="cache",
                             expected="None, a ResultCache or its file's path")
    if objective == "":
        raise CoexploreError("an empty objective", key="objective",
                             expected="None (the mapper's), edp, energy, latency, an expression or a function")
    custom = objective if callable(objective) else None
    if custom is not None:
        objective, cache = None, None        # a function has no cache key
    if isinstance(spec, (str, Path)):
        spec = registry.load_mapper(spec)
    if not isinstance(spec, registry.MapperSpec):
        raise CoexploreError(f"got {spec!r}", key="spec",
                             expected="a MapperSpec (registry.mapper_spec, registry.load_mapper), a searcher name "
                                      "or a mapper YAML")
    if registry.is_expression(spec.objective) and objective is None:     # (a MapperSpec built by hand)
        spec = dataclasses.replace(spec, objective=registry.checked_objective(spec.objective))
    if objective is not None or batch_size is not None:
        given = spec
        spec = registry.mapper_spec(spec.searcher, spec.config, objective or spec.objective,
                                    spec.batch_size if batch_size is None else batch_size)
        spec.objective_file = given.objective_file if objective is None else None
    budget = positive_int(budget, "budget", "--budget")
    key = None
    seed = check_seed(seed)
    if seed is None:
        cache = None                # an unseeded run is not reproducible: never cached, never a hit
    ms = MapSpace(ctx.arch, ctx.problem, constraints)
    if ms.log10_size() == float("-inf"):       # (counted exactly: no factorisation meets the constraints)
        files = sorted({c.source for c in (constraints or {}).values() if getattr(c, "source", None)})
        raise CoexploreError("the constraints leave no mapping of this layer (no split of its factors over "
                             "the levels meets them: fixed factors, splits and fan-outs together)",
                             file=", ".join(files) or None, key="constraints",
                             expected="constraints some mapping can meet (fixed factors, splits, minimum "
                                      "utilization and the fan-outs together)")
    if cache is not None:
        key, hit = _cache_entry(ctx, constraints, spec, ms, cache, budget=budget, seed=seed)
        if hit is not None:
            out = MapResult(**{k: v for k, v in hit.items() if k in MapResult.__dataclass_fields__})
            out.cached = True
            # the record and mapping rebuilt from the stored point: same numbers, and the same
            # layout as a fresh run (the cache stores JSON with sorted keys)
            arrays = ms.decode(np.array([out.x], dtype=np.int64))
            out.best = ctx.record(ctx.evaluate(arrays), 0)
            out.mapping = from_arrays(arrays, 0, ctx.arch, ctx.problem)
            return out
    searcher = registry.make_searcher(spec, ms, seed)
    _say_unused_with_budget(spec, budget)
    if (custom is not None or registry.may_refuse(spec.objective)) \
            and getattr(getattr(searcher, "config", None), "skip_failed", False):
        # a function or a cap of the user's may give a valid mapping an infinite loss: walk every mapping
        searcher.config = dataclasses.replace(searcher.config, skip_failed=False)
    t0 = time.perf_counter()

    def wall():                 # search seconds, those before a resumed checkpoint included
        return checkpoint.elapsed() if checkpoint is not None else time.perf_counter() - t0
    objective_fn = make_objective(ctx, ms, custom or spec.objective)
    try:
        result = run_search(searcher, objective_fn, budget, spec.batch_size,
                            progress=progress, desc=f"map {ctx.problem.name} ({spec.searcher})",
                            best_label=BEST_LABELS.get("custom" if custom else spec.objective, "loss"),
                            checkpoint=checkpoint)
    except CoexploreError as exc:
        if registry.is_expression(spec.objective) and exc.key in ("log_loss", "objective"):
            raise _blamed_on_the_objective(exc, spec) from None
        raise exc.of_mapper_file(spec.config_file)     # (exhaustive's max_size this layer exceeds)
    except SearchInterrupted as exc:   # keep the best so far; never cache a partial search
        part = exc.result
        found = part.best_x is not None and math.isfinite(part.best_loss)
        with holding_stops() as hold:  # a second Ctrl-C while the best so far is made keeps it
            made = _map_result(ctx, ms, spec, seed, part, wall(), None, searcher.size, custom) if found else None
            if made is not None:
                made.invalid_samples = invalid_samples(part, objective_fn)
        raise MapInterrupted(made, stop_now=hold.stop_now) from None
    if result.best_x is None or not math.isfinite(result.best_loss):
        walked = ""
        if searcher.done is False:     # an in-order walk cut short by the budget
            total = getattr(searcher, "size", None)
            walked = (f"{searcher.name} walks the mappings in order and stopped after {result.samples:,}"
                      + (f" of {total:,}" if total else "") + ": raise --budget to walk further")
        # valid mappings were sampled and a function or an expression of the user's refused them all
        refused = (getattr(objective_fn, "model_valid", None) or 0) > 0 and (custom is not None or registry.is_expression(spec.objective))
        failed = NoValidMapping(result.samples, why_invalid(ctx, ms), walked=walked,
                                custom=False if not refused else True if custom is not None else spec.objective)
        if refused and custom is None:          # an expression: said where it was written
            blame = spec.objective_blame()
            failed.file, failed.option = blame.get("file"), blame.get("option")
        log10 = ms.log10_size()
        size = ms.size_exact if ms.size_exact is not None else getattr(searcher, "size", None)
        failed.wall_s, failed.mapspace_size = wall(), size
        failed.invalid_samples = invalid_samples(result, objective_fn)
        failed.mapspace_log10 = (math.log10(size) if size else None) if size is not None else log10
        raise failed
    with holding_stops() as hold:      # a second Ctrl-C while the result is made keeps it (and caches it)
        out = _map_result(ctx, ms, spec, seed, result, wall(), searcher.done, searcher.size,
                          custom)
        out.invalid_samples = invalid_samples(result, objective_fn)
        if out.samples < budget and out.exhausted is not True and (out.mapspace_size is None
                                                                   or out.samples < out.mapspace_size):
            import warnings
            from coexplore.errors import CoexploreNote
            warnings.warn(f"searcher '{spec.searcher}' proposed nothing new after {out.samples:,} of {budget:,} "
                          "samples: the search ended early (a searcher that runs dry before the budget)", CoexploreNote)
        if cache is not None:          # (a cache held locked too long: warned, the finished search kept)
            store(cache, key, json.loads(json.dumps(out.to_dict())),
                  {"kind": "map_layer", "backend": "builtin", "backend_version": MODEL_VERSION})
    if hold.stop_now:
        raise MapInterrupted(out, stop_now=True)
    return out


def _blamed_on_the_objective(exc: CoexploreError, spec: registry.MapperSpec) -> CoexploreError:
    """An expression's losses the search cannot take (0 or below for a learner of log-scaled losses,
    -inf), said as the objective's fault, where it was written (the mapper file, or --objective)."""
    if exc.key == "log_loss":
        message = (f"the objective {spec.objective!r} gave {exc.message.split(':')[0].removeprefix('a loss of ')} "
                   f"for a valid mapping; {spec.searcher} learns from log(loss), which needs losses > 0")
        expected = ("an objective above 0 for every valid mapping (e.g. a constant added, or inf to refuse a "
                    "mapping), or a searcher that takes any loss (random, random_pruned, linear_pruned, "
                    "exhaustive), or config: {log_loss: false}")
    else:
        message, expected = exc.message, exc.expected
    return CoexploreError(message, expected=expected, **spec.objective_blame())


def _cache_entry(ctx: Context, constraints, spec: registry.MapperSpec, ms: MapSpace, cache, *, budget: int,
                 seed: int, count: bool = True) -> tuple[str, dict | None]:
    """The cache key of a search and its stored result (None: none, or one of another mapspace)."""
    from coexplore.model.cache import cache_key
    key = cache_key(**cache_parts(ctx, constraints, spec, budget=budget, seed=seed, ms=ms))
    hit = cache.get(key, count=count)
    return key, None if hit is None else _usable(hit, ms, cache, key)


def _say_unused_with_budget(spec: registry.MapperSpec, budget: int) -> None:
    """A note for a config option set off its default that a search with a budget never reads
    (simulated annealing's `horizon`: its schedule then spans the budget)."""
    config = spec.config
    for name in getattr(config, "UNUSED_WITH_BUDGET", ()):
        default = type(config).__dataclass_fields__[name].default
        if getattr(config, name) != default:
            import warnings
            from coexplore.errors import CoexploreNote
            warnings.warn(f"searcher '{spec.searcher}': config.{name} {getattr(config, name)} is not used: it applies "
                          f"when the budget is unknown (ask/tell without run_search); here the budget, {budget:,}, "
                          "sets it", CoexploreNote, stacklevel=3)


def _usable(hit, ms: MapSpace, cache, key: str) -> dict | None:
    """A stored search result this search can take: its point lies in this mapspace and its facts
    have their types. One of another mapspace (a point of another length) is a miss; a damaged one
    (edited, or written by other code) is warned of and searched again (the new result replaces it)."""
    x = hit.get("x") if isinstance(hit, dict) else None
    if isinstance(x, list) and x and len(x) != ms.n_params:
        return None
    whole = lambda v: isinstance(v, int) and not isinstance(v, bool)    # noqa: E731
    fine = (isinstance(x, list) and len(x) == ms.n_params and all(whole(v) for v in x)
            and all(0 <= v < c for v, c in zip(x, ms.space.cardinalities.tolist()))
            and whole(hit.get("samples")) and hit["samples"] >= 0 and isinstance(hit.get("history"), list)
            and all(isinstance(h, list) and len(h) == 2 and all(isinstance(v, (int, float)) for v in h)
                    for h in hit["history"])
            and isinstance(hit.get("searcher"), str) and isinstance(hit.get("objective"), str))
    if not fine:
        import warnings
        from coexplore.errors import CoexploreWarning
        warnings.warn(f"{cache.path}: the entry {key[:12]}... is damaged (not a search result of this mapspace): "
                      "searched again, and replaced", CoexploreWarning, stacklevel=3)
        return None
    return hit


def cached_entry(ctx: Context, constraints, spec: registry.MapperSpec, *, budget: int, seed: int | None,
                 cache) -> tuple[str | None, dict | None]:
    """The cache key `map_layer` with these arguments uses (None: it would not cache) and the record
    `cache` holds under it (None: none; a lookup not counted as a hit)."""
    if cache is None or seed is None:
        return None, None
    ms = MapSpace(ctx.arch, ctx.problem, constraints)
    return _cache_entry(ctx, constraints, spec, ms, cache, budget=budget, seed=seed, count=False)


def _map_result(ctx: Context, ms: MapSpace, spec: registry.MapperSpec, seed, result: SearchResult,
                wall: float, exhausted: bool | None, counted: int | None = None, custom=None) -> MapResult:
    """The best candidate of a search, re-evaluated into a full result record and mapping;
    `counted`: the distinct mappings the searcher counted (exhaustive), when the mapspace's own
    size estimate did not count them."""
    arrays = ms.decode(result.best_x[None, :])
    log10 = ms.log10_size()                  # counts small spaces exactly (size_exact), else a bound
    size = ms.size_exact if ms.size_exact is not None else counted
    if size is not None:
        log10 = math.log10(size) if size else float("-inf")
    res = ctx.evaluate(arrays)
    return MapResult(searcher=spec.searcher, samples=result.samples, best=ctx.record(res, 0),
                     mapping=from_arrays(arrays, 0, ctx.arch, ctx.problem),
                     # from the first valid sample on (before it the best is infinite, which JSON cannot hold)
                     history=[[int(s), float(v)] for s, v in result.history if math.isfinite(v)],
                     objective="custom" if custom is not None else spec.objective,
                     seed=seed, wall_s=wall, x=[int(v) for v in result.best_x], mapspace_log10=log10,
                     mapspace_size=size,
                     exhausted=exhausted, interrupted=result.interrupted, invalid_samples=result.invalid)
