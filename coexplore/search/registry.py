"""Searcher names -> (class, config dataclass), and mapper configs in YAML (`mappers/<name>.yaml`).

A mapper file:
    searcher: marl          # a registered name
    objective: edp          # edp | energy | latency, or an expression such as energy * cycles**2
    batch_size: 100         # asks per ask/tell round
    config: {lr: 0.1, ...}  # fields of the searcher's config dataclass (missing ones: defaults)
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from coexplore.bundled import resolve
from coexplore.errors import CoexploreError, check_type
from coexplore.search.annealing import SAConfig, SimulatedAnnealing
from coexplore.search.base import Searcher, check_options, plugins_code, with_tie
from coexplore.search.exhaustive import ExhaustiveConfig, ExhaustiveSearch
from coexplore.search.ga import GAConfig, GeneticAlgorithm
from coexplore.search.marl import MARL, MARLConfig, MARLNoClustering, MARLNoClusteringConfig
from coexplore.search.objective_expr import compile_objective
from coexplore.search.ppo import PPO, PPOConfig
from coexplore.search.pruned import LinearPruned, LinearPrunedConfig, RandomPruned, RandomPrunedConfig
from coexplore.search.random_search import RandomConfig, RandomSearch
from coexplore.search.rl import RLConfig, SingleAgentRL
from coexplore.search.space import DiscreteSpace
from coexplore.spec.yamlio import load_yaml

SEARCHERS: dict[str, tuple[type, type]] = {
    "random": (RandomSearch, RandomConfig),
    "ga": (GeneticAlgorithm, GAConfig),
    "sa": (SimulatedAnnealing, SAConfig),
    "rl": (SingleAgentRL, RLConfig),
    "marl": (MARL, MARLConfig),
    "marl_noclust": (MARLNoClustering, MARLNoClusteringConfig),
    "ppo": (PPO, PPOConfig),             # the MARL paper's single-agent baseline (MLP policy)
    "exhaustive": (ExhaustiveSearch, ExhaustiveConfig),
    # Timeloop's own algorithms; they need the mapspace (not just a DiscreteSpace), see layer.py
    "random_pruned": (RandomPruned, RandomPrunedConfig),
    "linear_pruned": (LinearPruned, LinearPrunedConfig),
}

OBJECTIVES = ("edp", "energy", "latency")   # by name; any other objective is an expression (objective_expr)
MAX_BATCH = 100_000   # candidates evaluated at once (a batch of mappings holds ~5 kB per mapping in the model)


def _lookup(name: str, file=None) -> tuple[type, type]:
    if not isinstance(name, str) or name not in SEARCHERS:
        raise CoexploreError(f"unknown searcher '{name}'", file=file, key="searcher",
                             option=None if file else "--searcher",
                             expected=" | ".join(sorted(SEARCHERS)))
    entry = SEARCHERS[name]
    if not (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], type)
            and issubclass(entry[0], Searcher) and dataclasses.is_dataclass(entry[1]) and isinstance(entry[1], type)):
        raise CoexploreError(f"searcher '{name}' is registered as {entry!r:.80}", key=f"SEARCHERS['{name}']",
                             expected="(a Searcher subclass, its config dataclass), e.g. SEARCHERS['hill'] = "
                                      "(Hill, HillConfig) (a dataclass without fields when it takes no options)")
    return entry


# options that must be >= 1 (sizes, counts) and options that are probabilities or fractions
AT_LEAST_ONE = {"bins", "chains", "critic_window", "epochs", "horizon", "max_agent_size", "max_draw_factor",
                "max_permutations_per_if_visit", "max_size", "max_table", "population", "tournament",
                "pop_size", "islands", "hidden", "layers", "minibatches"}
FRACTIONS = {"alpha", "local", "extra_change", "merge_at", "clip"}
# options that multiply the time of every batch: capped, so a typo (1000000000 epochs) is an error, not a run
# that never ends
AT_MOST = {"epochs": 1000, "minibatches": 1000, "hidden": 4096, "layers": 32,
           "max_size": 1_000_000_000}     # exhaustive: counting 1e9 distinct mappings takes ~10 minutes
# fixed value sets are the config classes' CHOICES (checked here too, so the error names the file)


def _is_fraction(key: str) -> bool:
    return key in FRACTIONS or key.startswith("p_") or key.endswith(("_ratio", "_rate", "_fraction", "_ratio_start"))


POSITIVE = ("lr", "critic_shrink")   # a zero learning rate learns nothing; the critic divides by its shrinkage


def _is_positive(key: str) -> bool:
    """Options that must be > 0: start values of geometric schedules (temperatures, rates: the
    schedule divides by them), learning rates and the critic's shrinkage."""
    return key == "t_start" or key.endswith("_start") or key in POSITIVE


def config_from_dict(config_cls: type, data: Mapping[str, Any] | None, file=None):
    """A config dataclass from a mapping; unknown keys and wrong types are errors."""
    if data is not None and not isinstance(data, Mapping):
        raise CoexploreError(f"got {data!r}", file=file, key="config",
                             expected=f"a mapping of {config_cls.__name__} fields")
    data = dict(data or {})
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    with plugins_code(config_cls, "config"):
        defaults = config_cls()
    try:
        hints = typing.get_type_hints(config_cls)
    except Exception:                 # (an annotation that cannot be resolved: any value then)
        hints = {}
    kwargs = {}
    for key, value in data.items():
        if key not in fields:
            raise CoexploreError(f"unknown option '{key}' for {config_cls.__name__}", file=file,
                                 key=f"config.{key}", expected=" | ".join(fields))
        if not _builtin_option(config_cls, key):      # a plugin's own option: its annotation is the rule
            ok, kwargs[key] = _as_annotated(value, hints.get(key))
            if not ok:
                raise CoexploreError(f"bad value {value!r}", file=file, key=f"config.{key}",
                                     expected=f"a value of the option's type, {_type_name(hints.get(key))}")
            continue
        default = getattr(defaults, key)
        optional = default is None or "None" in str(fields[key].type)
        want = float if default is None else type(default)   # optional options here are numbers
        if value is None and optional:
            kwargs[key] = None
            continue
        low = 1 if key in AT_LEAST_ONE else 0
        high = 1 if _is_fraction(key) else AT_MOST.get(key, float("inf"))
        if want is bool:
            ok = isinstance(value, bool)
        elif want is int:
            ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        elif want is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and low <= value <= high \
                and math.isfinite(value) and (value > 0 or not _is_positive(key))
            value = float(value) if ok else value
        else:
            ok = isinstance(value, want)
        if not ok:
            positive = _is_positive(key)
            bound = (("in (0, 1]" if positive else f"between {low} and {high}") if high == 1
                     else f"between {low} and {high:,}" if key in AT_MOST
                     else "> 0" if positive else f">= {low}")
            what = {int: f"an integer {bound}", float: f"a number {bound}"}.get(want, f"a {want.__name__}")
            raise CoexploreError(f"bad value {value!r}", file=file, key=f"config.{key}",
                                 expected=what + (" or null" if optional else ""))
        kwargs[key] = value
    with plugins_code(config_cls, "config"):
        config = config_cls(**kwargs)
    check_options(config, file)
    t_start, t_end = getattr(config, "t_start", None), getattr(config, "t_end", None)
    if t_start is not None and t_end is not None and t_start < t_end \
            and _builtin_option(config_cls, "t_start"):           # annealing cools, never heats
        raise CoexploreError(f"t_start {t_start:g} is below t_end {t_end:g}", file=file, key="config.t_start",
                             expected="a start temperature >= the end temperature")
    return config


def _builtin_option(config_cls: type, key: str) -> bool:
    """Whether a config option is one of coexplore's own searchers' (its class is defined in
    coexplore): only those follow the rules by name (`_is_fraction`, AT_MOST, ...) and take their
    type from the default; a plugin's option follows its own annotation."""
    for klass in config_cls.__mro__:
        if key in getattr(klass, "__annotations__", {}):
            return klass.__module__.startswith("coexplore.")
    return False


def _as_annotated(value, hint) -> tuple[bool, Any]:
    """(whether `value` fits the type annotation `hint`, the value as that type): ints are floats
    where a float is asked, YAML lists are tuples where a tuple is; an annotation it cannot check
    takes any value."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is None or hint is Any:
        return True, value
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return type(None) in args, None
        for arg in args:
            if arg is not type(None) and (fit := _as_annotated(value, arg))[0]:
                return fit
        return False, value
    if hint is bool:
        return isinstance(value, bool), value
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        return ok, float(value) if ok else value
    if hint in (tuple, list) or origin in (tuple, list):
        ok = isinstance(value, (list, tuple))
        return ok, (tuple(value) if tuple in (hint, origin) else list(value)) if ok else value
    try:
        return isinstance(value, origin or hint), value
    except TypeError:
        return True, value


def _type_name(hint) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def config_to_dict(config) -> dict:
    return dataclasses.asdict(config)


@dataclass
class MapperSpec:
    """A layer mapper: searcher name, objective (edp | energy | latency, or an expression of the
    metrics: `objective_expr`), batch size and the searcher's config (`mappers/<name>.yaml`;
    `load_mapper`, `mapper_spec`)."""

    searcher: str
    objective: str = "edp"
    batch_size: int = 100
    config: Any = None
    # what a translated timeloop-mapper section left out (shown to the user; not part of the spec)
    notes: list = field(default_factory=list, compare=False, repr=False)
    # the mapper file that set the objective (None: the default, --objective or a Python caller), for errors
    objective_file: str | None = field(default=None, compare=False, repr=False)
    # the mapper file that gave `config` (None: the defaults or a Python caller), for errors found in the search
    config_file: str | None = field(default=None, compare=False, repr=False)
    # for a translated timeloop-mapper section: which of coexplore's searchers to try instead (said once)
    advice: str | None = field(default=None, compare=False, repr=False)

    def objective_blame(self) -> dict:
        """Where an error about the objective points: the mapper file's `objective`, else --objective."""
        if self.objective_file:
            return {"file": self.objective_file, "key": "objective"}
        return {"key": "objective", "option": "--objective"}

    def to_dict(self) -> dict:
        return {"searcher": self.searcher, "objective": self.objective,
                "batch_size": self.batch_size, "config": config_to_dict(self.config)}


def mapper_spec(name: str, config=None, objective: str = "edp", batch_size: int = 100) -> MapperSpec:
    """A mapper: `config` is the searcher's config dataclass, or a dict of its fields (checked)."""
    _, config_cls = _lookup(name)
    if config is None or isinstance(config, Mapping):
        config = config_from_dict(config_cls, config)
    elif not isinstance(config, config_cls):
        raise CoexploreError(f"a {type(config).__name__} is not a config of '{name}'", key="config",
                             expected=f"a {config_cls.__name__} or a dict of its fields")
    objective, batch_size = _checked_run_options(objective, batch_size)
    return MapperSpec(name, objective, batch_size, config)


# timeloop-mapper's `mapper:` section: algorithm -> searcher, optimization-metrics -> objective
_TIMELOOP_ALGORITHMS = {"random_pruned": "random_pruned", "linear_pruned": "linear_pruned",
                        "exhaustive": "exhaustive", "hybrid": "random_pruned", "random": "random"}
_TIMELOOP_METRICS = {("delay", "energy"): "latency", ("delay",): "latency", ("cycles",): "latency",
                     ("energy",): "energy", ("energy", "delay"): "energy", ("edp",): "edp",
                     ("energy-delay-product",): "edp"}
_KNOWN_METRICS = {m for ms in _TIMELOOP_METRICS for m in ms} | {"last_level_accesses", "last-level-accesses"}


def timeloop_mapper_spec(section: Mapping[str, Any], file=None) -> MapperSpec:
    """A coexplore mapper from a timeloop-mapper `mapper:` section (v0.3 dashes or v0.4
    underscores): `algorithm` picks the searcher (hybrid -> random_pruned), `optimization_metric(s)`
    the objective ([delay, energy] is `latency`: cycles, ties broken by energy; timeloop-mapper also
    treats cycle counts within 0.1% as tied, coexplore only equal ones); the search budget
    is coexplore's --budget, so timeout / victory_condition / search_size / num_threads are noted
    as not used."""
    spelled = {}                    # canonical (underscore) key -> the key as the user wrote it
    sec = {}
    for k, v in dict(section or {}).items():
        canon = str(k).replace("-", "_")
        if canon in spelled:
            raise CoexploreError(f"'{k}' and '{spelled[canon]}' are the same setting, given twice", file=file,
                                 key=f"mapper.{k}", expected="each setting once (dashes or underscores)")
        spelled[canon], sec[canon] = str(k), v
    alg = str(sec.pop("algorithm", "hybrid")).lower().replace("-", "_")      # (timeloop-mapper's default)
    if alg not in _TIMELOOP_ALGORITHMS:
        raise CoexploreError(f"timeloop-mapper algorithm '{alg}' has no coexplore searcher", file=file,
                             key="mapper.algorithm", expected=" | ".join(sorted(_TIMELOOP_ALGORITHMS)))
    metrics = sec.pop("optimization_metric", None)              # Timeloop reads the singular first
    plural = sec.pop("optimization_metrics", None)
    used = "optimization_metric" if metrics not in (None, []) else "optimization_metrics"
    metrics_key = f"mapper.{spelled.get(used, used)}"            # as the file spells it
    metrics = metrics if metrics not in (None, []) else plural
    metrics = ["edp"] if metrics in (None, []) else metrics     # Timeloop's default
    metrics = tuple(str(m).lower() for m in (metrics if isinstance(metrics, list) else [metrics]))
    unknown = [m for m in metrics if m not in _KNOWN_METRICS]
    if unknown:   # timeloop-mapper stops on an unrecognised metric too
        raise CoexploreError(f"unknown metric '{unknown[0]}'", file=file, key=metrics_key,
                             expected="delay, energy or edp (timeloop-mapper's last_level_accesses has no "
                                      "coexplore objective)")
    objective = _TIMELOOP_METRICS.get(metrics) or _TIMELOOP_METRICS.get(metrics[:1])
    if objective is None:
        raise CoexploreError(f"optimization_metrics {list(metrics)} have no coexplore objective", file=file,
                             key=metrics_key,
                             expected="[delay, energy] (latency), [energy] or [edp]")
    name = _TIMELOOP_ALGORITHMS[alg]
    config_cls = _lookup(name)[1]
    fields = {f.name for f in dataclasses.fields(config_cls)}
    config = {k: sec.pop(k) for k in list(sec) if k in fields}       # max_permutations_per_if_visit
    try:
        config = config_from_dict(config_cls, config, file)
    except CoexploreError as exc:      # name the setting as written in the file, not the config field
        raise _as_timeloop_key(exc, spelled, file) from None
    spec = mapper_spec(name, config=config, objective=objective)
    quiet = {"version", "live_status", "diagnostics", "log_stats", "log_suboptimal", "log_all", "out_prefix",
             "log_interval", "log_oaves", "log_oaves_mappings"}
    known = {*quiet, *fields, "algorithm", "optimization_metric", "optimization_metrics", *_TIMELOOP_NOT_USED}
    for k, least in _TIMELOOP_COUNTS.items():      # read by Timeloop as integers: refused otherwise, as it does
        v = sec.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < least):
            raise CoexploreError(f"bad value {v!r}", file=file, key=f"mapper.{spelled[k]}",
                                 expected=f"an integer >= {least} (timeloop-mapper reads it as one)")
    used_not = sorted(spelled[k] for k in sec if k not in quiet and k in known and k not in _PER_ALGORITHM)
    spec.notes = [f"timeloop-mapper settings not used: {', '.join(used_not)} (coexplore stops after --budget "
                  "samples, valid or not, single-threaded: the budget is --budget's, not these)"] if used_not else []
    if name != "exhaustive":                       # (what a migrant expects to be the fastest path is not)
        spec.advice = (f"timeloop-mapper's {alg} runs as coexplore's copy of it; coexplore's own searchers usually "
                       f"find better mappings in the same samples: --searcher marl (or ga) --objective {objective} "
                       "(README, \"Against timeloop-mapper\")")
    for k in (k for k in sec if k in _PER_ALGORITHM):      # a setting of another algorithm's
        spec.notes.append(f"timeloop-mapper setting {spelled[k]} is not used: algorithm {alg} does not read it "
                          f"({_PER_ALGORITHM[k]} does)")
    if alg == "hybrid":
        spec.notes.append("timeloop-mapper's hybrid algorithm runs as random_pruned (coexplore has no hybrid)")
    if len(metrics) > 1 and objective != "latency":
        spec.notes.append(f"optimization metrics {list(metrics)}: the objective is {objective}, without a "
                          f"tie-break by {metrics[1]}")
    elif objective == "latency" and metrics[1:2] != ("energy",):    # coexplore's latency breaks ties by energy
        spec.notes.append(f"optimization metrics {list(metrics)}: the objective is latency, ties broken by energy"
                          + (f", not by {metrics[1]}" if len(metrics) > 1 else " (timeloop-mapper breaks none)"))
    for k in sorted(sec):                 # a misspelt key: Timeloop ignores it too, and its default applies
        if k in known:
            continue
        close = difflib.get_close_matches(k, sorted(known - {k}), n=1, cutoff=0.8)
        spec.notes.append(f"'{spelled[k]}' is not a timeloop-mapper setting" +
                          (f"; did you mean '{close[0]}'? (its default applies, as in Timeloop)" if close else
                           " (ignored, as Timeloop ignores it)"))
    return spec


# timeloop-mapper settings coexplore reads but does not use (the search stops after --budget)
# settings only some algorithms read (given with another, noted as that algorithm's)
_PER_ALGORITHM = {"max_permutations_per_if_visit": "random_pruned or hybrid"}
_TIMELOOP_NOT_USED = ("timeout", "victory_condition", "search_size", "num_threads", "sync_interval",
                      "max_permutations_per_if_visit",           # (linear-pruned's: random-pruned reads it)
                      "min_utilization", "filter_revisits", "penalize_consecutive_bypass_fails",
                      "emit_whoop_nest", "max_temporal_loops_in_a_mapping",
                      "heartbeat")                               # (mapper.cpp: an older name of timeout)


# timeloop-mapper settings it reads as integers, with their least value
_TIMELOOP_COUNTS = {"timeout": 0, "victory_condition": 0, "search_size": 0, "num_threads": 1, "sync_interval": 0,
                    "heartbeat": 0}


def _as_timeloop_key(exc: CoexploreError, spelled: Mapping[str, str], file) -> CoexploreError:
    """A config error of a translated timeloop-mapper section, keyed `mapper.<key as written>`."""
    field_name = (exc.key or "").removeprefix("config.")
    if exc.key and exc.key.startswith("config.") and field_name in spelled:
        exc.key = f"mapper.{spelled[field_name]}"
    if exc.file is None and file is not None:
        exc.file = str(file)
    return exc


def mapper_from_dict(data: Mapping[str, Any], file=None) -> MapperSpec:
    if isinstance(data, Mapping) and "searcher" not in data and isinstance(data.get("mapper"), Mapping):
        return timeloop_mapper_spec(data["mapper"], file)
    if isinstance(data, Mapping) and (data.get("searcher") == "magma" or "budget" in data):
        magma = data.get("searcher") == "magma"
        raise CoexploreError("a system-level mapper (it has " + ("searcher: magma" if magma else "a budget")
                             + "), not a layer mapper", file=file, key="searcher" if magma else "budget",
                             expected="a layer mapper YAML (searcher, objective, batch_size, config; the budget is "
                                      "--budget); system mappers go to `coexplore schedule --searcher`")
    if not isinstance(data, Mapping):
        held = "nothing (empty)" if data is None else f"a {'list' if isinstance(data, list) else type(data).__name__}"
        raise CoexploreError(f"holds {held}, not a mapping of keys", file=file, key="searcher",
                             expected="searcher: NAME at the top (with objective, batch_size, config), or a "
                                      "timeloop-mapper 'mapper:' section")
    if "searcher" not in data:
        raise CoexploreError("a mapper config needs a 'searcher' key (or a timeloop-mapper 'mapper:' section)",
                             file=file, key="searcher", expected=" | ".join(sorted(SEARCHERS)))
    unknown = set(data) - {"searcher", "objective", "batch_size", "config"}
    if unknown:
        raise CoexploreError(f"unknown key '{sorted(unknown)[0]}'", file=file, key=sorted(unknown)[0],
                             expected="searcher | objective | batch_size | config")
    name = data["searcher"]
    _, config_cls = _lookup(name, file)
    objective, batch = _checked_run_options(data.get("objective", "edp"), data.get("batch_size", 100), file)
    config, notes = data.get("config"), []
    retired = _RETIRED.get(name, {})
    if isinstance(config, dict) and set(config) & set(retired):
        config = dict(config)
        for key in sorted(set(config) & set(retired)):
            del config[key]
            notes.append(f"{file}: config.{key} is not used: {retired[key]}")
    spec = MapperSpec(name, objective, batch, config_from_dict(config_cls, config, file))
    spec.notes = notes
    if "objective" in data and file is not None:
        spec.objective_file = str(file)
    if "config" in data and file is not None:
        spec.config_file = str(file)
    return spec


# settings a searcher no longer has (a mapper file written for an earlier version): dropped, with why
_RETIRED = {"linear_pruned": {"max_permutations_per_if_visit": "linear_pruned walks every loop order, as Timeloop's "
                                                                "linear-pruned (the setting is random_pruned's)"}}


def checked_objective(objective, file=None, option: str | None = None) -> str:
    """An objective's name (OBJECTIVES), or an expression of the metrics in its canonical spelling
    (`objective_expr`: 'energy*cycles**2' -> 'energy * cycles ** 2', the form cache keys hold)."""
    if isinstance(objective, str) and objective in OBJECTIVES:
        return objective
    return compile_objective(objective, file=file, option=option).text


def is_expression(objective) -> bool:
    """True for an objective written as an expression (not one of OBJECTIVES)."""
    return isinstance(objective, str) and objective not in OBJECTIVES


def may_refuse(objective) -> bool:
    """Whether the objective can give a mapping the model finds valid an infinite loss (a cap, a
    division, ...: `ObjectiveExpression.may_refuse`); never for a name."""
    return is_expression(objective) and compile_objective(objective).may_refuse


def _checked_run_options(objective, batch, file=None) -> tuple[str, int]:
    if isinstance(batch, numbers.Integral) and not isinstance(batch, bool):
        batch = int(batch)                 # (numpy's too)
    objective = checked_objective(objective, file)
    if not isinstance(batch, int) or isinstance(batch, bool) or not 1 <= batch <= MAX_BATCH:
        raise CoexploreError(f"bad batch_size {batch!r}", file=file, key="batch_size",
                             expected=f"an integer in 1..{MAX_BATCH:,} (a batch of mappings holds ~5 kB each)")
    return objective, batch


DEFAULT_SEARCHER = "marl"


def default_mapper() -> MapperSpec:
    """The layer mapper when no command option or system file names one: the bundled
    mappers/marl.yaml, read the same way by `map`, `schedule`, `online` and `sweep`."""
    return load_mapper(DEFAULT_SEARCHER)


def load_mapper(path) -> MapperSpec:
    """A mapper YAML, or a searcher by name: its bundled mappers/<name>.yaml (`marl` ->
    mappers/marl.yaml), else its default settings. The one place a mapper name is resolved.
    Timeloop's spelling of a name (`random-pruned`, `linear-pruned`) is the searcher's."""
    if isinstance(path, str) and "-" in path and not Path(path).suffix and path.replace("-", "_") in SEARCHERS \
            and not Path(path).exists():
        path = path.replace("-", "_")
    found = resolve("mappers", path)
    if found.is_dir():
        raise CoexploreError("a folder, not a mapper file", file=str(found),
                             expected="a mapper YAML or a searcher name: " + " | ".join(SEARCHERS))
    if not found.is_file() and isinstance(path, str) and not found.suffix:
        return mapper_spec(path)      # a searcher without a bundled file (or the 'unknown searcher' error)
    return mapper_from_dict(load_yaml(found), file=found)


def save_mapper(spec: MapperSpec, path) -> None:
    import yaml
    from coexplore.spec.yamlio import write_text
    write_text(path, yaml.safe_dump(spec.to_dict(), sort_keys=False))


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:                  # (a cell not yet assigned)
        return False
    return True


def _plain(value):
    """A value's part in a searcher's code digest: plain data (numbers, text, their lists and
    dicts) as itself, anything else (a module, a function, an object) by its type only."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return type(value).__qualname__


def searcher_code(name: str) -> dict:
    """A searcher registered from outside coexplore (`SEARCHERS[name] = (cls, Config)`): its class's
    qualified name and a digest of its methods' compiled code, the plain values (numbers, text) they
    read from closures and module globals, and its class attributes' values (its own and its bases'
    outside coexplore; found in a file, a notebook cell or an exec alike), part of a cached result's
    key: its code may change between runs (coexplore's own is covered by the package version).
    Objects it reads (arrays, instances) count by type only: give such settings through the config
    dataclass, which the key holds whole. Empty for coexplore's."""
    import hashlib
    import marshal
    cls, _ = _lookup(name)
    if cls.__module__.split(".")[0] == "coexplore":
        return {}
    h = hashlib.sha256()
    for klass in cls.__mro__:
        if klass is object or klass.__module__.split(".")[0] == "coexplore":
            continue
        for attr, value in sorted(vars(klass).items()):
            func = getattr(value, "__func__", value)
            while hasattr(func, "__wrapped__"):          # (ask/tell are wrapped by the base class's checks)
                func = func.__wrapped__
            code = getattr(func, "__code__", None)
            if code is not None:
                h.update(attr.encode() + marshal.dumps(code.replace(co_filename="", co_firstlineno=1)))
                # the plain values it reads from a closure or its module's globals (a class made per
                # setting in a loop, a constant edited between runs): other values, another result
                cells = [c.cell_contents for c in (func.__closure__ or ()) if _filled(c)]
                names = [func.__globals__[n] for n in code.co_names if n in getattr(func, "__globals__", {})]
                h.update(repr([_plain(v) for v in cells + names]).encode())
            elif not attr.startswith("__"):
                h.update(attr.encode() + repr(_plain(value)).encode())     # a class attribute's value
    module = "__main__" if cls.__module__ == "__mp_main__" else cls.__module__    # (a spawned worker's name)
    out = {"class": f"{module}.{cls.__qualname__}", "code_sha256": h.hexdigest()}
    source = getattr(sys.modules.get(cls.__module__), "__file__", None)
    if source and Path(source).is_file():      # its module's helpers and constants count too
        out["module_sha256"] = hashlib.sha256(Path(source).read_bytes()).hexdigest()
    return out


def make_searcher(spec: MapperSpec | str, space: DiscreteSpace, seed: int | None = 0) -> Searcher:
    """A fresh searcher for one (space, seed); nothing runs until the first ask. A name means
    its bundled mapper file's settings, as everywhere (`load_mapper`)."""
    if isinstance(spec, str):
        spec = load_mapper(spec)
    check_type(spec, MapperSpec, "spec", "a MapperSpec (mapper_spec, load_mapper) or a searcher name")
    if not isinstance(getattr(space, "space", space), DiscreteSpace):
        check_type(space, DiscreteSpace, "space", "a DiscreteSpace or a layer's coexplore.mapspace.MapSpace")
    cls, _ = _lookup(spec.searcher)
    needs_mapspace = getattr(cls, "needs_mapspace", False)
    if not needs_mapspace and isinstance(getattr(space, "space", None), DiscreteSpace):
        space = space.space          # a layer's MapSpace: its parameters are what searchers see
    if needs_mapspace and isinstance(space, DiscreteSpace) and spec.searcher in ("random_pruned", "linear_pruned"):
        raise CoexploreError(f"'{spec.searcher}' searches a layer's mapspace (loop orders are pruned per "
                             "factorisation)", key="space",
                             expected="a coexplore.mapspace.MapSpace, e.g. via coexplore map")
    with plugins_code(cls, "__init__"):    # a plugin's __init__: its errors its own, its prints on stderr
        return cls(space, spec.config, seed)


def objective_loss(metrics: Mapping[str, np.ndarray], objective: str = "edp") -> np.ndarray:
    """The loss the searchers minimise, from the cost model's metrics.

    metrics: arrays of the batch keyed 'energy', 'latency' (or 'cycles'), optionally 'edp'
    (else energy x latency) and 'utilization'; invalid mappings carry inf (or NaN). `objective`: a
    name (OBJECTIVES) or an expression of those metrics (`objective_expr`, e.g. 'energy * cycles**2';
    inf where the energy is not finite). 'latency' is cycles, with the
    energy as the tie key (`TiedLosses`): the searchers learn from cycles alone (a tie-break in the
    loss itself made the learners settle on low energy within a plateau of equal cycles instead of
    finding fewer cycles), and the best kept is timeloop-mapper's [delay, energy] choice. The name
    'edp' is metrics['edp'] where given, else energy x latency in the metrics' own units (pJ x cycles
    from the model); in an expression `edp` is J x cycles (`objective_expr.METRICS`): the same order.
    """
    objective = checked_objective(objective)          # ('(latency)' is the name, with its tie-break)
    expression = None if objective in OBJECTIVES else compile_objective(objective)
    shapes: dict[str, tuple] = {}

    def get(*names):
        for k in names:
            if k in metrics:
                try:
                    v = np.asarray(metrics[k], dtype=float)
                except (TypeError, ValueError):
                    raise CoexploreError(f"metric '{k}' is not numbers", key=f"metrics.{k}",
                                         expected="one number per candidate") from None
                if v.ndim > 1:
                    raise CoexploreError(f"metric '{k}' has shape {v.shape}", key=f"metrics.{k}",
                                         expected="one number per candidate, shape [n]")
                other = next(iter(shapes.items()), None)
                if other is not None and v.shape != other[1]:
                    raise CoexploreError(f"metric '{k}' has {v.size} values, '{other[0]}' {other[1][0] if other[1] else 1}",
                                         key=f"metrics.{k}", expected="the same number of values in every metric")
                if np.any(v < 0):
                    raise CoexploreError(f"metric '{k}' has a negative value ({float(v[v < 0].flat[0]):g})",
                                         key=f"metrics.{k}", expected="values >= 0 (inf or NaN for an invalid candidate)")
                shapes[k] = v.shape
                return v
        raise CoexploreError(f"metrics lack '{names[0]}'", key="metrics", expected=" or ".join(names))
    if expression is not None:
        alias = {"latency": "cycles", "cycles": "latency"}          # either name, whichever the metrics have
        given = {k: get(k, alias[k]) if k in alias else get(k) for k in sorted(expression.names - {"edp"})}
        if "edp" in expression.names:                                # J x cycles, from the two when not given
            given["edp"] = get("edp") if "edp" in metrics else get("energy") * 1e-12 * get("latency", "cycles")
        energy = get("energy")
        out = np.broadcast_to(expression(given), energy.shape)
        out = np.where(np.isfinite(energy), out, np.inf)        # an invalid mapping stays invalid
        if np.any(out == -np.inf):
            i = int(np.flatnonzero(out == -np.inf)[0])
            raise CoexploreError(f"the objective {objective!r} gave -inf for a valid mapping (energy "
                                 f"{float(energy[i]):g} pJ)", key="objective",
                                 expected="an objective that is finite, or inf to refuse a mapping, for every valid mapping")
    elif objective == "energy":
        out = get("energy")
    elif objective == "latency":
        out = get("latency", "cycles")
        if "energy" in metrics:   # ties (equal cycles) go to the lower energy: Timeloop's [delay, energy]
            e = get("energy")
            out = np.where(np.isnan(e), np.inf, out)
            out[np.isnan(out)] = np.inf
            return with_tie(out, np.where(np.isnan(e), np.inf, e))
    elif "edp" in metrics:
        out = get("edp")
    else:
        out = get("energy") * get("latency", "cycles")
    out = np.array(out, dtype=float, copy=True)
    out[np.isnan(out)] = np.inf
    return out
