"""Factor bounds of one dimension at several levels that no mapping can keep together are refused
up front (naming the file and the bounds), and a failed search counts every reason a mapping breaks."""

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.mapspace.space import MapSpace
from coexplore.model.inputs import load_context
from coexplore.search.layer import why_invalid
from coexplore.spec.constraints import load_constraints

from conftest import CORPUS

SIMBA = CORPUS / "arches" / "simba_like"
LAYER = CORPUS / "layers" / "resnet50_res3a_2b.yaml"      # C = M = 128


@pytest.fixture(scope="module")
def ctx():
    return load_context(SIMBA / "arch.yaml", LAYER, SIMBA / "ERT.yaml")


def _space(ctx, tmp_path, *entries):
    f = tmp_path / "c.yaml"
    f.write_text("mapspace_constraints:\n  targets:\n" + "".join(f"  - {e}\n" for e in entries))
    return f, MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch, [f], ctx.problem))


def test_min_bounds_whose_product_exceeds_the_dimension_are_refused(ctx, tmp_path):
    with pytest.raises(CoexploreError, match="need at least 256 in all, and the layer's M is 128") as e:
        _space(ctx, tmp_path, "{target: GlobalBuffer, type: temporal, factors: M>=16}",
               "{target: DRAM, type: temporal, factors: M>=16}")
    assert e.value.file.endswith("c.yaml") and e.value.key == "mapspace_constraints.targets[0].factors"


def test_min_bounds_that_fit_are_kept(ctx, tmp_path):
    _space(ctx, tmp_path, "{target: GlobalBuffer, type: temporal, factors: M>=16}",
           "{target: DRAM, type: temporal, factors: M>=8}")           # 16 x 8 = 128: refused not
    _, ms = _space(ctx, tmp_path, "{target: GlobalBuffer, type: temporal, factors: M>=2}",
                   "{target: DRAM, type: temporal, factors: M>=2}")
    m = ms.decode(ms.sample(np.random.default_rng(0), 2000))
    assert ms.satisfies(m).any()


def test_max_bounds_everywhere_count_each_level_s_fan_out(ctx, tmp_path):
    """C<=1 at every level the file names leaves C only the places it does not name, spatial loops
    whose own fan-out (4 here) is far below C = 128."""
    levels = ["DRAM", "GlobalBuffer", "PEInputBuffer", "PEWeightBuffer", "PEAccuBuffer", "PEWeightRegs"]
    entries = [f"{{target: {lv}, type: temporal, factors: C<=1}}" for lv in levels]
    entries += ["{target: PE, type: spatial, factors: C<=1}", "{target: distributed_buffers, type: spatial, factors: C<=1}"]
    with pytest.raises(CoexploreError, match=r"C<=4 \(its fan-out\).*need at most 4 in all, and the layer's C is 128"):
        _space(ctx, tmp_path, *entries)
    _space(ctx, tmp_path, *entries[1:])            # DRAM left unbounded: C can go there


def test_a_reason_every_mapping_breaks_counts_every_mapping(ctx, tmp_path):
    """Full use of the MACs while M and C stay temporal: every mapping breaks the minimum
    parallelism, however many also overflow a buffer first."""
    _, ms = _space(ctx, tmp_path, "{target: PEWeightRegs, type: utilization, min: 1.0}",
                   "{target: DRAM, type: temporal, factors: M>=128}",
                   "{target: GlobalBuffer, type: temporal, factors: C>=128}")
    reasons = dict(why_invalid(ctx, ms, n=300))
    assert reasons["the constraints' factor bounds or minimum parallelism"] == 300
    assert sum(reasons.values()) > 300                  # the other reasons are counted too
