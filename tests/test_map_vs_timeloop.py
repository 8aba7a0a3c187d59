"""The layer mapper against timeloop-mapper: on every dense mapper run of the official exercises
(tests/data/exercises_v4, Timeloop ~v3.0.3 references), MARL with 5,000 samples, the run's own
objective and constraints finds a mapping at least as good as the one timeloop-mapper found, by
Timeloop's own numbers for that mapping (reference.json). bench/mapper_vs_timeloop.py measures more
seeds and budgets."""

import json
from pathlib import Path

import pytest

from coexplore.model.reference import load_reference_run
from coexplore.search import registry
from coexplore.search.layer import map_layer
from coexplore.spec.constraints import load_constraints

EXERCISES = Path(__file__).parent / "data" / "exercises_v4"
CASES = sorted(d.name for d in EXERCISES.iterdir() if (d / "timeloop-mapper.map.yaml").exists())


def test_the_mapper_cases_are_there():
    assert len(CASES) == 11


@pytest.mark.parametrize("case", CASES)
def test_marl_matches_or_beats_timeloop_mapper(case):
    folder = EXERCISES / case
    # the run's optimization metrics as coexplore reads them ([delay, energy] -> latency)
    objective = registry.load_mapper(str(folder / "parsed-processed-input.yaml")).objective
    assert objective in ("edp", "latency")
    ref = json.loads((folder / "reference.json").read_text())["summary"]
    run = load_reference_run(folder)
    ctx = run.context
    ctx.stride_rule = "pre2025"          # the references predate Timeloop PR #297
    constraints = load_constraints(ctx.arch, None, ctx.problem)
    spec = registry.load_mapper("marl")
    spec.objective = objective
    res = map_layer(ctx, constraints, spec, 5000, seed=0)
    cycles, energy = res.best["cycles"], res.best["energy_pJ"]
    tl_cycles, tl_energy = ref["cycles"], ref["energy_pJ_from_per_compute"]
    rel = 1e-4                           # the reference energy is fJ/compute x computes (rounded)
    if objective == "edp":
        assert cycles * energy <= tl_cycles * tl_energy * (1 + rel), (cycles, energy, tl_cycles, tl_energy)
    else:                                # fewer cycles, or as few and no more energy
        assert cycles < tl_cycles or (cycles == tl_cycles and energy <= tl_energy * (1 + rel)), \
            (cycles, energy, tl_cycles, tl_energy)
