"""Loading one (architecture, problem, ERT) evaluation context, as `coexplore evaluate` finds it.

`Context` bundles everything the batched model needs for one (architecture, layer); build it once
and evaluate any number of mappings with `evaluate(arrays)` or `evaluate_mappings([...])`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.energy.pricing import builtin_ert, is_priceable
from coexplore.model.evaluate import BatchResult, LevelCosts, evaluate_batch, level_costs, result_record
from coexplore.spec.architecture import Architecture, load_architecture
from coexplore.spec.ert import EnergyTable, ert_file_beside, load_ert, parse_ert, stale_ert
from coexplore.spec.mapping import Mapping, MappingArrays, load_mapping, to_arrays
from coexplore.spec.problem import Problem, load_problem, problem_warnings
from coexplore.spec.yamlio import load_yaml


@dataclass
class Context:
    """One (architecture, problem, energy table): evaluate any number of mappings of that layer."""

    arch: Architecture
    problem: Problem
    ert: EnergyTable
    costs: LevelCosts
    stride_rule: str = "current"   # "pre2025": Timeloop before PR #297 (see model.nest.analyse)

    def evaluate(self, arrays: MappingArrays | Mapping | list[Mapping]) -> BatchResult:
        """The batched model on mapping arrays (`spec.mapping.to_arrays`, `MapSpace.decode`); a
        Mapping, or a list of them, is converted first."""
        if isinstance(arrays, Mapping) or (isinstance(arrays, (list, tuple)) and arrays
                                           and all(isinstance(m, Mapping) for m in arrays)):
            arrays = to_arrays([arrays] if isinstance(arrays, Mapping) else list(arrays), self.arch, self.problem)
        if not isinstance(arrays, MappingArrays):
            raise CoexploreError(f"got a {type(arrays).__name__}", key="arrays",
                                 expected="MappingArrays (spec.mapping.to_arrays, MapSpace.decode) or Mapping objects")
        return evaluate_batch(self.arch, self.problem, self.costs, arrays, stride_rule=self.stride_rule)

    def evaluate_mappings(self, mappings: list[Mapping | str | Path]) -> BatchResult:
        """Evaluate Mapping objects or mapping YAML paths (a single one is a batch of one)."""
        if isinstance(mappings, (Mapping, str, Path)):
            mappings = [mappings]
        if not isinstance(mappings, (list, tuple)) or not all(isinstance(m, (Mapping, str, Path)) for m in mappings):
            raise CoexploreError(f"got {mappings!r:.80}", key="mappings",
                                 expected="a list of Mapping objects (ctx.load_mapping) or mapping YAML paths")
        mappings = [m if isinstance(m, Mapping) else self.load_mapping(m) for m in mappings]
        return self.evaluate(to_arrays(mappings, self.arch, self.problem))

    def record(self, res: BatchResult, index: int = 0) -> dict:
        """The expected.json-schema dict of mapping `index` of a batch result."""
        if not isinstance(res, BatchResult):
            raise CoexploreError(f"got {res!r:.60}", key="res", expected="the BatchResult of ctx.evaluate")
        n = len(res.valid)
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not -n <= index < n:
            raise CoexploreError(f"index {index!r} of a batch of {n}", key="index",
                                 expected=f"an integer in [-{n}, {n})")
        return result_record(self.arch, self.problem, res, int(index) % n)

    def load_mapping(self, path: str | Path) -> Mapping:
        """A Timeloop mapping YAML of this architecture and problem."""
        return load_mapping(path, self.arch, self.problem)

    def __repr__(self) -> str:          # the tables it holds are kilobytes
        return (f"Context(arch={self.arch.name!r}, {len(self.arch.levels)} levels; problem={self.problem.name!r}, "
                f"{dict(zip(self.problem.dims, self.problem.bounds))}; stride_rule={self.stride_rule!r})")


def locate_ert(arch_path: str | Path) -> EnergyTable | None:
    """An ERT.yaml (or timeloop-model/-mapper.ERT.yaml) beside the architecture, else an `ERT:` key
    inside it; None if neither."""
    beside = ert_file_beside(arch_path)
    if beside is not None:
        return load_ert(beside)
    data = load_yaml(arch_path)
    if isinstance(data, dict) and "ERT" in data:
        return parse_ert(data["ERT"], str(arch_path))
    return None


def find_ert(arch_path: str | Path, ert_path: str | Path | None = None) -> EnergyTable:
    """The ERT given, else an ERT.yaml beside the architecture, else an `ERT:` key inside it."""
    if ert_path is not None:
        return load_ert(ert_path)
    found = locate_ert(arch_path)
    if found is not None:
        return found
    raise CoexploreError("no energy table found", file=str(arch_path), key="ert_path", option="--ert",
                         expected="an ERT.yaml given (--ert, or ert_path= from Python: Accelergy's / timeloopfe's, or "
                                  "the built-in estimator's: "
                                  "`coexplore energy tables ARCH.yaml --out DIR`), or an ERT.yaml beside the "
                                  "architecture file")


def load_context(arch_path: str | Path, problem_path: str | Path, ert_path: str | Path | None = None,
                 stride_rule: str = "current") -> Context:
    """The evaluation context of a Timeloop architecture file and a problem file (the ERT given,
    else found as `find_ert` does, else for a node list or v0.3 tree the built-in estimator's, as
    `coexplore energy tables` writes it: timeloop-model runs Accelergy on such a file); `stride_rule`
    as `--stride-rule` (`model.nest.STRIDE_RULES`). What Timeloop would accept silently but is most likely a typo
    (a misspelt buffer attribute, an unknown problem instance key) is a `CoexploreWarning`."""
    import warnings
    from coexplore.errors import PATH_TYPES, CoexploreWarning, check_type
    check_type(arch_path, PATH_TYPES, "arch_path", "an architecture file's path")
    check_type(problem_path, PATH_TYPES, "problem_path", "a problem file's path")
    if ert_path is not None:
        check_type(ert_path, PATH_TYPES, "ert_path", "an ERT file's path or None")
    from coexplore.model.nest import check_stride_rule
    check_stride_rule(stride_rule)
    arch = load_architecture(arch_path)
    problem = load_problem(problem_path)
    for w in [f"{arch_path}: {w}" for w in arch.warnings] + problem_warnings(problem, problem_path):
        warnings.warn(w, CoexploreWarning, stacklevel=2)
    ert = None if ert_path is not None else locate_ert(arch_path)
    if ert is None and ert_path is None and is_priceable(arch_path):
        ert = builtin_ert(Path(arch_path))          # as timeloop-model runs Accelergy on such a file
    elif ert is None:
        ert = find_ert(arch_path, ert_path)
    costs = level_costs(arch, ert)
    for w in [f"{ert.source}: {w}" for w in costs.notes] + [w for w in [stale_ert(ert, arch_path)] if w]:
        warnings.warn(w, CoexploreWarning, stacklevel=2)
    return Context(arch, problem, ert, costs, stride_rule)
