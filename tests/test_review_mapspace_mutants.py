"""Tests written by a mutation review of the mapspace (2026-12-03): properties checked against the
constraints and by brute force, each killing mutants the rest of the suite let through."""

from __future__ import annotations


import numpy as np
import pytest

from coexplore.mapspace.sampling import fanouts
from coexplore.mapspace.space import MapSpace
from coexplore.model.inputs import load_context
from coexplore.search.layer import make_objective
from coexplore.spec.constraints import LevelConstraints
from conftest import CORPUS



@pytest.fixture(scope="module")
def ctx():
    return load_context(CORPUS / "arches" / "eyeriss_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml")


def _x_level(ctx):
    fx, _ = fanouts(ctx.arch)
    inner = [lv.name for lv in reversed(ctx.arch.levels)]
    li = next(i for i in range(len(inner)) if fx[i] > 1)
    return li, inner[li]


def test_a_spatial_maximum_bounds_the_mappings(ctx):
    """`M<=2` on a fan-out level: no mapping with a larger spatial M there satisfies the space, and the
    objective refuses it (kills: spatial_max not applied)."""
    li, name = _x_level(ctx)
    d = ctx.problem.dims.index("M")
    ms = MapSpace(ctx.arch, ctx.problem, {name: LevelConstraints(spatial_max={"M": 2})})
    X = ms.sample(np.random.default_rng(0), 3000)
    m = ms.decode(X)
    fan = m.spatial_x[:, li, d] * m.spatial_y[:, li, d]
    ok = ms.satisfies(m)
    assert (fan > 2).any() and (fan <= 2).any()
    assert np.array_equal(ok, fan <= 2) or (not ok[fan > 2].any() and ok[fan <= 2].any())
    loss = make_objective(ctx, ms, "energy")(X)
    assert np.isinf(loss[fan > 2]).all()


def test_random_mappings_factorise_exactly_with_one_spatial_axis_per_dimension_and_level():
    """random_mappings on a 16 x 16 array: products equal the layer's bounds, and a dimension's spatial
    factor at a level sits on X or on Y, never both (a Timeloop mapping has one per dimension and level)."""
    from coexplore.mapspace.sampling import random_mappings
    ctx = load_context(CORPUS / "arches" / "simple_output_stationary" / "processed.yaml",
                       CORPUS / "layers" / "tiny_conv.yaml")
    fx, fy = fanouts(ctx.arch)
    assert ((fx > 1) & (fy > 1)).any()
    m = random_mappings(ctx.arch, ctx.problem, 2000, np.random.default_rng(0))
    prod = np.prod(m.temporal * m.spatial_x * m.spatial_y, axis=1)
    assert (prod == np.array(ctx.problem.bounds)[None, :]).all()
    assert not ((m.spatial_x > 1) & (m.spatial_y > 1)).any()
