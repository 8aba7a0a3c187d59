"""Mapspace rules: bypass_except, the size bound, splits, factor minimums, idle fan-outs, canonical orders."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

import coexplore
from coexplore.mapspace import space as space_mod
from coexplore.mapspace.space import MapSpace
from coexplore.model.inputs import load_context
from coexplore.spec.constraints import LevelConstraints

CORPUS = Path(coexplore.__file__).resolve().parents[1] / "tests" / "data" / "timeloop_corpus"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="needs the coexplore checkout's test corpus")


@pytest.fixture(scope="module")
def ctx():
    return load_context(CORPUS / "arches" / "eyeriss_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml")


def test_bypass_except_bypasses_every_other_dataspace_and_leaves_the_listed_one_free(ctx):
    level = "shared_glb"
    ms = MapSpace(ctx.arch, ctx.problem, {level: LevelConstraints(bypass_except={"Weights"})})
    li = [lv.name for lv in reversed(ctx.arch.levels)].index(level)
    names = [d.name for d in ctx.problem.dataspaces]
    m = ms.decode(ms.sample(np.random.default_rng(0), 400))
    for s, name in enumerate(names):
        kept = m.keep[:, li, s]
        if name == "Weights":
            assert kept.any() and not kept.all()          # the mapper's choice (Timeloop's 'X')
        else:
            assert not kept.any(), name                   # bypassed


def test_the_size_bound_counts_factorisations_exactly(ctx, monkeypatch):
    """Above the exact limit, log10_size = log10(#factorisations) + orders + keeps; with no order or
    keep parameters left it is the number of distinct prime-to-slot assignments, counted here by
    brute force per dimension."""
    ms = MapSpace(ctx.arch, ctx.problem, {})
    brute = 0.0
    for d in range(ms.D):
        fps = [fp for fp in ms.factor_params if fp.dim == d]
        if not fps:
            continue
        distinct = set()
        for choice in itertools.product(*(range(len(fp.slots)) for fp in fps)):
            key = tuple(sorted((fp.prime, fp.slots[c]) for fp, c in zip(fps, choice)))
            distinct.add(key)
        brute += math.log10(len(distinct))
    ms.perm_free = [[] for _ in ms.perm_free]
    ms.keep_params, ms.axis_index = [], []
    monkeypatch.setattr(space_mod, "EXACT_SIZE_LIMIT", 0)
    assert ms.log10_size() == pytest.approx(brute, abs=1e-9) and ms.size_exact is None


def test_a_split_puts_the_permutations_dimension_at_the_split_position_on_y(ctx):
    inner = [lv.name for lv in reversed(ctx.arch.levels)]
    from coexplore.mapspace.sampling import fanouts
    fx, fy = fanouts(ctx.arch)
    li = next(i for i in range(len(inner)) if fy[i] > 1 and fx[i] == 1)     # a level fanning out in Y only
    dims = ctx.problem.dims
    a, b = "Q", "P"                                                         # perm [Q, P], split 1: Q on X, P on Y
    ms = MapSpace(ctx.arch, ctx.problem, {inner[li]: LevelConstraints(spatial_permutation=[a, b], split=1)})
    m = ms.decode(ms.sample(np.random.default_rng(0), 2000))
    assert (m.spatial_y[:, li, dims.index(b)] > 1).any()
    assert (m.spatial_x[:, li] == 1).all() and (m.spatial_y[:, li, dims.index(a)] == 1).all()


def test_a_minimum_factor_above_the_dimension_is_refused(ctx):
    from coexplore.errors import CoexploreError
    c = ctx.problem.bounds[ctx.problem.dims.index("C")]
    with pytest.raises(CoexploreError, match="C>="):
        MapSpace(ctx.arch, ctx.problem, {"shared_glb": LevelConstraints(temporal_min={"C": c + 1})})


def _x_level(ctx):
    from coexplore.mapspace.sampling import fanouts
    fx, fy = fanouts(ctx.arch)
    inner = [lv.name for lv in reversed(ctx.arch.levels)]
    li = next(i for i in range(len(inner)) if fx[i] > 1)
    return li, inner[li]


def test_a_spatial_minimum_bounds_the_mappings(ctx):
    li, name = _x_level(ctx)
    d = ctx.problem.dims.index("M")
    ms = MapSpace(ctx.arch, ctx.problem, {name: LevelConstraints(spatial_min={"M": 4})})
    m = ms.decode(ms.sample(np.random.default_rng(0), 3000))
    fan = m.spatial_x[:, li, d] * m.spatial_y[:, li, d]
    ok = ms.satisfies(m)
    assert (fan < 4).any() and not ok[fan < 4].any() and ok.any()


def test_a_fan_out_filled_by_a_fixed_factor_is_not_called_idle(ctx):
    import warnings
    li, name = _x_level(ctx)
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # a CoexploreNote would be raised here
        ms = MapSpace(ctx.arch, ctx.problem, {name: LevelConstraints(spatial_factors={"M": ("=", 2)},
                                                                      spatial_factors_only=True)})
    assert ms.notes == []
    m = ms.decode(ms.sample(np.random.default_rng(0), 10))
    assert (m.spatial_x[:, li] * m.spatial_y[:, li])[:, ctx.problem.dims.index("M")].tolist() == [2] * 10


def test_a_y_only_fan_out_below_the_innermost_level_frees_its_loop_order(ctx):
    """The innermost level keeps the canonical order only when no fan-out lies below it (X or Y)."""
    import dataclasses
    from coexplore.mapspace.sampling import fanouts
    arch = ctx.arch
    innermost = arch.levels[-1]
    comp = dataclasses.replace(arch.compute, mesh_x=innermost.mesh_x, mesh_y=innermost.mesh_y * 4,
                               instances=arch.compute.instances * 4)
    arch_y = dataclasses.replace(arch, compute=comp)
    fx, fy = fanouts(arch_y)
    assert fx[0] == 1 and fy[0] == 4
    ms = MapSpace(arch_y, ctx.problem, {})
    assert not ms.canonical_innermost
    assert any(li == 0 for _, li, _ in ms.perm_index)
    assert MapSpace(arch, ctx.problem, {}).canonical_innermost          # the unchanged array: canonical


def test_the_innermost_level_keeps_the_dimension_order_with_a_fixed_factor_there_too(ctx):
    """No fan-out below the innermost level: its loops keep the problem's dimension order, as in
    timeloop-mapper, fixed factors included."""
    inner = [lv.name for lv in reversed(ctx.arch.levels)]
    c = ctx.problem.bounds[ctx.problem.dims.index("C")]
    ms = MapSpace(ctx.arch, ctx.problem, {inner[0]: LevelConstraints(temporal_factors={"C": ("=", c)})})
    assert ms.canonical_innermost
    m = ms.decode(ms.sample(np.random.default_rng(0), 200))
    assert (m.temporal[:, 0, ctx.problem.dims.index("C")] == c).all()
    assert (m.perm[:, 0] == np.arange(ms.D)).all()


FIRST = Path(coexplore.__file__).resolve().parents[1] / "examples" / "first_design"


@pytest.mark.parametrize("dram,buffer,count", [
    ({}, {}, 520),                                          # the README's count of the whole space
    ({"K": ("=", 4)}, {}, 27 * 8),                         # K fixed at DRAM: still ordered freely
    ({"K": ("=", 4), "R": ("=", 1), "P": ("=", 8)}, {"R": ("=", 3), "K": ("=", 1), "P": ("=", 1)}, 2 * 8),
])
def test_a_fixed_temporal_factor_leaves_its_loop_order_free(dram, buffer, count):
    """User study: a factor fixed above 1 pinned its loop outermost, so `k_outer.yaml` (within the
    constraints) was outside the space and exhaustive's 'optimum' was 1.6x its energy. By hand: with
    K = 4 fixed at DRAM, P (8 = 2^3) and R (3) split over DRAM and the buffer: 4 x 2 = 8 tilings
    x DRAM orders of its non-unit loops (K and the rest) x 2^3 keep/bypass choices; every factor
    fixed: the 2 DRAM orders of K and P."""
    ctx = load_context(FIRST / "two_level.yaml", FIRST / "conv1d.yaml")
    names = [lv.name for lv in reversed(ctx.arch.levels)]          # innermost first
    cons = {names[-1]: LevelConstraints(temporal_factors=dram)} if dram else {}
    if buffer:
        cons[names[0]] = LevelConstraints(temporal_factors=buffer)
    ms = MapSpace(ctx.arch, ctx.problem, cons)
    from coexplore.mapspace.enumerate import count_canonical
    assert count_canonical(ms) == count
    if dram:                                  # both DRAM orders of K and P lie in the space (encode refused one)
        from coexplore.spec.mapping import load_mapping
        k, p = ctx.problem.dims.index("K"), ctx.problem.dims.index("P")
        firsts = set()
        for f in ("k_outer.yaml", "p_outer.yaml"):
            perm = list(ms.decode(ms.encode(load_mapping(FIRST / f, ctx.arch, ctx.problem))).perm[0, -1])
            firsts.add(perm.index(k) < perm.index(p))
        assert firsts == {True, False}
