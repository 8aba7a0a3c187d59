"""Canonical enumeration of a layer's mapspace: every distinct mapping exactly once."""

import math

import numpy as np
import pytest

from coexplore.mapspace.enumerate import canonical_points, count_canonical
from coexplore.mapspace.space import MapSpace
from coexplore.model.inputs import Context
from coexplore.model.evaluate import level_costs
from coexplore.search.base import run_search
from coexplore.search.exhaustive import ExhaustiveConfig, ExhaustiveSearch
from coexplore.search.layer import make_objective
from coexplore.spec.architecture import load_architecture
from coexplore.spec.constraints import load_constraints
from coexplore.spec.ert import load_ert
from coexplore.spec.problem import DEFAULT_CNN_SHAPE, parse_problem

from conftest import CORPUS


def _small(arch: str, **bounds):
    d = CORPUS / "arches" / arch
    a = load_architecture(d / "processed.yaml")
    inst = {k: 1 for k in "CMRSNPQ"}
    inst.update(bounds)
    prob = parse_problem({"problem": {"shape": DEFAULT_CNN_SHAPE, "version": 0.4, "instance": inst}}, name="small")
    ert = load_ert(d / "ERT.yaml")
    ctx = Context(a, prob, ert, level_costs(a, ert))
    return ctx, MapSpace(a, prob, load_constraints(a, d / "constraints.yaml"))


def _signature(ms, X):
    """What makes a mapping distinct: factors, bypass and the order of the non-unit loops."""
    m = ms.decode(X)
    out = []
    for i in range(len(X)):
        orders = tuple(tuple(int(d) for d in m.perm[i, li] if m.temporal[i, li, d] > 1)
                       for li in range(m.temporal.shape[1]))
        out.append((m.temporal[i].tobytes(), m.spatial_x[i].tobytes(), m.spatial_y[i].tobytes(),
                    m.keep[i].tobytes(), orders))
    return out


@pytest.fixture(scope="module")
def small():
    ctx, ms = _small("simple_weight_stationary", C=4, M=2, P=4)
    X = np.concatenate(list(canonical_points(ms, chunk=5000)))
    return ctx, ms, X


def test_each_distinct_mapping_once(small):
    _, ms, X = small
    sig = _signature(ms, X)
    assert len(set(sig)) == len(X) == count_canonical(ms)
    assert np.array_equal(ms.canonical(X), X)          # already in canonical form


def test_covers_random_mappings(small):
    _, ms, X = small
    known = set(_signature(ms, X))
    R = ms.sample(np.random.default_rng(0), 3000)
    assert all(s in known for s in _signature(ms, R))


def test_count_by_hand():
    # one prime factor (M=2): one mapping per slot it can take, times the bypass choices
    _, ms = _small("simple_weight_stationary", M=2)
    assert len(ms.factor_params) == 1
    expected = len(ms.factor_params[0].slots) * 2 ** len(ms.keep_index)
    assert count_canonical(ms) == expected
    assert sum(len(x) for x in canonical_points(ms)) == expected
    assert ms.log10_size() == pytest.approx(math.log10(expected))


def test_exhaustive_search_on_mapspace_is_the_optimum(small):
    ctx, ms, X = small
    f = make_objective(ctx, ms, "edp")
    s = ExhaustiveSearch(ms)
    res = run_search(s, f, budget=10 * len(X), batch_size=4096)
    assert res.samples == len(X)                      # stops when the space is exhausted
    assert res.best_loss == pytest.approx(float(np.min(f(X))), rel=0, abs=0)
    sampled = f(ms.sample(np.random.default_rng(1), 20_000))
    assert res.best_loss <= float(np.min(sampled))    # no sampled mapping beats the optimum


def test_exhaustive_refuses_large_layer():
    _, ms = _small("simba_like", C=64, M=64, P=8, Q=8)
    s = ExhaustiveSearch(ms, ExhaustiveConfig(max_size=1000))
    from coexplore.errors import CoexploreError
    with pytest.raises(CoexploreError, match="too"):
        s.ask(10)


def test_exhaustive_takes_a_space_of_exactly_its_limit_and_refuses_one_more():
    from coexplore.errors import CoexploreError
    from coexplore.search.space import DiscreteSpace
    _, ms = _small("eyeriss_like")
    n = count_canonical(ms)
    ExhaustiveSearch(ms, ExhaustiveConfig(max_size=n)).ask(10)
    with pytest.raises(CoexploreError, match="exhaustive"):
        ExhaustiveSearch(ms, ExhaustiveConfig(max_size=n - 1)).ask(10)
    space = DiscreteSpace(np.array([3, 4, 5]), ["a", "b", "c"])
    ExhaustiveSearch(space, ExhaustiveConfig(max_size=60)).ask(10)
    with pytest.raises(CoexploreError, match="exhaustive"):
        ExhaustiveSearch(space, ExhaustiveConfig(max_size=59)).ask(10)


def test_a_two_dimensional_fan_out_lists_each_mapping_once():
    """User study: on a 2 x 2 PE array a dimension's primes on X and on Y of one level decode to one
    axis, so 115,456 points were counted (and walked) for 104,896 distinct mappings, the count of
    Timeloop's rule (each dimension's spatial factor wholly on X or on Y) the study made by hand."""
    from pathlib import Path

    from coexplore.spec.problem import load_problem
    small = Path(__file__).parent / "data" / "mapspace_small"
    a = load_architecture_text((small / "arch.yaml").read_text().replace("meshX: 4", "meshX: 2"))
    prob = load_problem(small / "conv1d_oc.yaml")
    ms = MapSpace(a, prob)
    n = count_canonical(ms)
    assert n == 104_896
    seen, listed = set(), 0
    for X in canonical_points(ms):
        listed += len(X)
        m = ms.decode(X)
        for row in zip(m.temporal, m.spatial_x, m.spatial_y, m.perm, m.keep):
            seen.add(b"".join(np.ascontiguousarray(v).tobytes() for v in row))
    assert listed == n and len(seen) == n          # every point listed is another mapping


def load_architecture_text(text: str):
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "a.yaml").write_text(text)
        return load_architecture(Path(d) / "a.yaml")
