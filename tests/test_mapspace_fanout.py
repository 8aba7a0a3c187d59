"""Each level's spatial loops fit that level's own fan-out, as timeloop-mapper requires
(src/mapspaces/uber.cpp: "mapped fanoutX N exceeds hardware fanoutX F", F = the inner mesh over
the level's mesh), while timeloop-model, and `evaluate`, check only the product across levels."""

import json
import subprocess
import sys

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.mapspace.enumerate import canonical_points
from coexplore.mapspace.space import MapSpace
from coexplore.model.inputs import load_context
from coexplore.search.layer import make_objective, map_layer, why_invalid
from coexplore.spec.constraints import load_constraints
from coexplore.spec.mapping import to_arrays

from conftest import CORPUS

# a GLB feeding 4 RFs, each feeding 4 MACs: 16 MACs in one row (timeloopfe multiplies the meshes)
ARCH = """architecture:
  version: 0.4
  nodes:
  - !Container
    name: sys
    attributes: {technology: "45nm"}
  - !Component
    name: DRAM
    class: DRAM
    attributes: {type: LPDDR4, width: 64, datawidth: 8}
  - !Component
    name: GLB
    class: SRAM
    attributes: {depth: 2048, width: 32, datawidth: 8}
  - !Component
    name: RF
    class: regfile
    spatial: {meshX: 4}
    attributes: {depth: 8, width: 8, datawidth: 8}
  - !Component
    name: MAC
    class: intmac
    spatial: {meshX: 4}
    attributes: {datawidth: 8, multiplier_width: 8, adder_width: 16}
"""
GEMM = """problem:
  version: 0.4
  shape:
    name: gemm
    dimensions: [M, N, K]
    data_spaces:
    - {name: A, projection: [[[M]], [[K]]]}
    - {name: B, projection: [[[K]], [[N]]]}
    - {name: Z, projection: [[[M]], [[N]]], read_write: true}
  instance: {M: 16, N: 2, K: 2}
"""
# a small space (2,194 distinct mappings) for the exhaustive search
SMALL = """constraints:
  targets:
  - {target: RF, type: datatype, keep: [Z], bypass: [A, B]}
  - {target: GLB, type: datatype, keep: [A, B, Z], bypass: []}
  - {target: DRAM, type: temporal, permutation: MNK}
"""
# 16-way M below the RFs (4 fan out 4 each), nothing across the RFs: timeloop-model accepts it
# (16 MACs in the row), timeloop-mapper's mapspace does not
OVER = """mapping:
- {target: DRAM, type: temporal, factors: M=1 N=1 K=1, permutation: MNK}
- {target: GLB, type: temporal, factors: M=1 N=2 K=2, permutation: MNK}
- {target: RF, type: temporal, factors: M=1 N=1 K=1, permutation: MNK}
- {target: inter_MAC_spatial, type: spatial, factors: M=16 N=1 K=1, permutation: MNK}
- {target: RF, type: datatype, keep: [], bypass: [A, B, Z]}
"""


@pytest.fixture(scope="module")
def row(tmp_path_factory):
    d = tmp_path_factory.mktemp("fanout")
    (d / "arch.yaml").write_text(ARCH)
    (d / "gemm.yaml").write_text(GEMM)
    (d / "over.yaml").write_text(OVER)
    (d / "small.yaml").write_text(SMALL)
    return d, load_context(d / "arch.yaml", d / "gemm.yaml")


def _per_level(m, fan_x, fan_y):
    return (np.prod(m.spatial_x, axis=2) <= fan_x).all(axis=1) & (np.prod(m.spatial_y, axis=2) <= fan_y).all(axis=1)


def test_the_model_accepts_a_level_over_its_own_fan_out_but_map_counts_it_invalid(row):
    d, ctx = row
    m = to_arrays([ctx.load_mapping(d / "over.yaml")], ctx.arch, ctx.problem)
    res = ctx.evaluate(m)
    assert res.valid[0] and int(res.cycles[0]) == 16 * 2 * 2 // 16     # as timeloop-model: 16 MACs busy
    ms = MapSpace(ctx.arch, ctx.problem, {})
    assert list(ms.fan_x) == [4, 1, 4, 1, 1]     # innermost first: inter_MAC_spatial, RF, inter_RF_spatial, ..
    assert not ms.fits_fanouts(m)[0]
    assert ms.fanout_broken(m, 0)[:2] == ("X", "inter_MAC_spatial")
    ms.encode(m)                                 # in timeloop-mapper's space, as an invalid mapping
    loss = make_objective(ctx, ms, "edp")(ms.encode(m))
    assert np.isinf(loss[0])


def test_evaluate_says_timeloop_mapper_would_not_propose_it(row):
    d, _ = row
    r = subprocess.run([sys.executable, "-m", "coexplore", "evaluate", str(d / "arch.yaml"), str(d / "gemm.yaml"),
                        str(d / "over.yaml")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "spreads 16-way in X at inter_MAC_spatial (M=16), which fans out 4 in X" in r.stderr
    assert "timeloop-mapper would not propose it" in r.stderr


def test_samples_over_a_level_s_fan_out_are_invalid_and_named(row):
    _, ctx = row
    ms = MapSpace(ctx.arch, ctx.problem, {})
    X = ms.sample(np.random.default_rng(0), 4000)
    m = ms.decode(X)
    fits = _per_level(m, np.array([4, 1, 4, 1, 1]), np.ones(5, np.int64))
    assert np.array_equal(ms.fits_fanouts(m), fits) and 0 < fits.sum() < len(fits)
    loss = make_objective(ctx, ms, "edp")(X)
    assert np.isinf(loss[~fits]).all()
    assert np.array_equal(np.isfinite(loss), fits & ctx.evaluate(m).valid)
    reasons = dict(why_invalid(ctx, ms, n=500))
    assert any(r.startswith("X fan-out of inter_MAC_spatial (the level's own") for r in reasons)


def test_map_finds_the_best_mapping_under_the_per_level_rule(row):
    """Exhaustive `map` walks the whole space (its count unchanged) and ends at the best mapping
    that fits each level, not at the slightly better one timeloop-model accepts (16-way below an RF)."""
    d, ctx = row
    cons = load_constraints(ctx.arch, [d / "small.yaml"])
    r = map_layer(ctx, cons, "exhaustive", budget=10 ** 5, seed=0)
    assert r.exhausted
    ms = MapSpace(ctx.arch, ctx.problem, cons)
    m = ms.decode(np.concatenate(list(canonical_points(ms))))
    assert r.samples == r.mapspace_size == len(m)
    res = ctx.evaluate(m)
    fits = _per_level(m, ms.fan_x, ms.fan_y)
    assert (res.valid & ~fits).any()
    best_fit, best_any = res.edp[res.valid & fits].min(), res.edp[res.valid].min()
    assert best_any < best_fit * (1 - 1e-7)
    assert r.best["edp_J_cycle"] == pytest.approx(best_fit, rel=1e-9)
    assert _per_level(ms.decode(np.array([r.x])), ms.fan_x, ms.fan_y).all()


def test_fixed_spatial_factors_over_a_level_s_fan_out_are_refused_up_front(row, tmp_path):
    d, ctx = row
    (tmp_path / "c.yaml").write_text("constraints:\n  targets:\n"
                                     "  - {target: inter_MAC_spatial, type: spatial, factors: M=8}\n")
    with pytest.raises(CoexploreError, match="fans out 4 x 1") as e:
        MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch, [tmp_path / "c.yaml"]))
    assert e.value.key == "constraints.targets[0].factors"
    assert e.value.file.endswith("c.yaml")


@pytest.mark.parametrize("factors, refused", [("M=8", True), ("M=16", True), ("M=4 N=2 K=2", False),
                                               ("M=4", False), ("M=4 N=2", False), ("M=2 N=2 K=2", False)])
def test_fixed_factors_whose_axis_is_a_choice_must_fit_one_axis_each(tmp_path, factors, refused):
    """Fixed spatial factors with no axis given go on X or Y as the split decides: at a level that
    fans out 4 x 4, an 8 or a 16 fits neither axis (though it fits the fan-out of 16), so no mapping
    fits; 4 x 2 x 2 does (4 on one axis, 2 x 2 on the other)."""
    head, tail = ARCH.rsplit("spatial: {meshX: 4}", 1)
    (tmp_path / "arch.yaml").write_text(head + "spatial: {meshX: 4, meshY: 4}" + tail)
    (tmp_path / "gemm.yaml").write_text(GEMM)
    (tmp_path / "c.yaml").write_text("constraints:\n  targets:\n"
                                     f"  - {{target: inter_MAC_spatial, type: spatial, factors: {factors}}}\n")
    ctx = load_context(tmp_path / "arch.yaml", tmp_path / "gemm.yaml")
    cons = load_constraints(ctx.arch, [tmp_path / "c.yaml"])
    if refused:
        with pytest.raises(CoexploreError, match="fans out 4 x 4") as e:
            MapSpace(ctx.arch, ctx.problem, cons)
        assert e.value.key == "constraints.targets[0].factors"
        assert e.value.file.endswith("c.yaml")        # the constraints file, not the architecture's
        return
    ms = MapSpace(ctx.arch, ctx.problem, cons)
    m = ms.decode(ms.sample(np.random.default_rng(0), 500))
    assert ms.fits_fanouts(m).any()


def test_timeloop_mapper_results_fit_each_level():
    """What real timeloop-mapper found (the corpus' mapper_best cases) keeps the per-level rule."""
    seen = 0
    for case in sorted((CORPUS / "public").glob("*/*/*")):
        if json.loads((case / "expected.json").read_text()).get("source") != "mapper_best":
            continue
        a = CORPUS / "arches" / case.parts[-3]
        ctx = load_context(a / "processed.yaml", CORPUS / "layers" / f"{case.parts[-2]}.yaml", a / "ERT.yaml")
        ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch))
        m = to_arrays([ctx.load_mapping(case / "mapping.yaml")], ctx.arch, ctx.problem)
        assert ms.fits_fanouts(m)[0], case
        seen += 1
    assert seen >= 5


def test_where_the_constraints_were_read_is_no_part_of_the_cache_key(row, tmp_path):
    """The same extra constraints read from two files give one cache key (errors name the file)."""
    from coexplore.model.cache import cache_key
    from coexplore.search import registry
    from coexplore.search.layer import cache_parts
    _, ctx = row
    keys = []
    for name in ("a.yaml", "sub/b.yaml"):
        f = tmp_path / name
        f.parent.mkdir(exist_ok=True)
        f.write_text("constraints:\n  targets:\n  - {target: GLB, type: temporal, factors: M=2}\n")
        cons = load_constraints(ctx.arch, [f])
        assert cons["GLB"].file_of("temporal", "M") == str(f)
        keys.append(cache_key(**cache_parts(ctx, cons, registry.load_mapper("random"), budget=100, seed=0)))
    assert keys[0] == keys[1]


def test_a_capacity_no_mapping_meets_counts_every_sample(tmp_path):
    """Timeloop-mapper study: with Outputs kept at psum_spad (16 words) and P=6 Q=6 fixed there, every
    mapping overflows it, but the count showed only those failing it first (930 of 1,000): a capacity
    is counted wherever it is broken, so one no mapping meets shows as n."""
    from coexplore.model.inputs import load_context
    from coexplore.spec.constraints import load_constraints
    arch_dir = CORPUS / "arches" / "eyeriss_like"
    ctx = load_context(arch_dir / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml")
    extra = tmp_path / "extra.yaml"
    extra.write_text("architecture_constraints:\n  targets:\n  - {target: psum_spad, type: temporal, factors: P=6 Q=6}\n"
                     "  - {target: psum_spad, type: bypass, keep: [Outputs]}\n")
    ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch, [extra], ctx.problem))
    reasons = dict(why_invalid(ctx, ms, n=400))
    assert reasons["capacity of psum_spad"] == 400
