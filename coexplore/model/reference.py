"""Loading one Timeloop reference run from its folder of outputs (a `ref/` folder of the v0.4
timeloop-accelergy-exercises, or a copy such as tests/data/exercises_v4/<case>/).

Such a folder holds `parsed-processed-input.yaml` (the flattened architecture and problem that
Timeloop consumed, and for timeloop-model runs the `mapping:`), the run's energy table
`timeloop-mapper.ERT.yaml` or `timeloop-model.ERT.yaml`, and for mapper runs
`timeloop-mapper.map.yaml` (the mapping the mapper found). Evaluating that mapping reproduces the run.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from coexplore.errors import CoexploreError, CoexploreWarning
from coexplore.model.evaluate import BatchResult, evaluate_batch
from coexplore.model.inputs import Context, load_context
from coexplore.spec.mapping import Mapping, MappingArrays, to_arrays

PROCESSED_INPUT = "parsed-processed-input.yaml"
ERT_FILES = ("timeloop-mapper.ERT.yaml", "timeloop-model.ERT.yaml")
MAPPER_MAP = "timeloop-mapper.map.yaml"


@dataclass
class ReferenceRun:
    folder: Path
    context: Context
    mapping: Mapping

    def arrays(self) -> MappingArrays:
        return to_arrays([self.mapping], self.context.arch, self.context.problem)

    def evaluate(self, stride_rule: str = "current") -> BatchResult:
        ctx = self.context
        return evaluate_batch(ctx.arch, ctx.problem, ctx.costs, self.arrays(), stride_rule=stride_rule)


def load_reference_run(folder: str | Path) -> ReferenceRun:
    """Architecture, problem and ERT of the run in `folder`, and its mapping (the mapper's
    map.yaml if present, else the `mapping:` of the processed input)."""
    folder = Path(folder)
    inp = folder / PROCESSED_INPUT
    if not inp.exists():
        raise CoexploreError("no processed input", file=str(folder), expected=f"{PROCESSED_INPUT} in the folder")
    ert = next((folder / n for n in ERT_FILES if (folder / n).exists()), None)
    if ert is None:
        raise CoexploreError("no energy table", file=str(folder), expected=f"one of {', '.join(ERT_FILES)}")
    with warnings.catch_warnings():      # timeloopfe's processed inputs keep H, W, Hpad, Wpad: not typos
        warnings.simplefilter("ignore", CoexploreWarning)
        ctx = load_context(inp, inp, ert)
    map_file = folder / MAPPER_MAP
    return ReferenceRun(folder, ctx, ctx.load_mapping(map_file if map_file.exists() else inp))
