"""One mapping, one point: `MapSpace.canonical` and the searchers' memory keyed by it.

The encoding repeats mappings (equal primes of a dimension swap levels, unit loops take any order,
a dimension split over X and Y of one level is decoded onto one axis): a 2 x 2 PE array's space has
145.8 M points for 104,896 distinct mappings. Before the memory was keyed by the canonical vector,
40-67% of MARL's and 82-95% of single-agent RL's samples on the benchmark pairs re-evaluated a
mapping already evaluated under another encoding.
"""

from pathlib import Path

import numpy as np
import pytest

from coexplore.mapspace.enumerate import canonical_points, count_canonical
from coexplore.mapspace.space import KIND_X, KIND_Y, MapSpace
from coexplore.search import registry
from coexplore.search.base import run_search
from coexplore.search.layer import make_objective
from coexplore.spec.problem import load_problem

from test_mapspace_enumerate import _signature, _small, load_architecture_text

SMALL = Path(__file__).parent / "data" / "mapspace_small"


def _mesh2x2():
    """The 2 x 2 PE array of the enumeration test (104,896 mappings by Timeloop's rule, by hand)."""
    from coexplore.model.evaluate import level_costs
    from coexplore.model.inputs import Context
    from coexplore.spec.ert import load_ert
    a = load_architecture_text((SMALL / "arch.yaml").read_text().replace("meshX: 4", "meshX: 2"))
    prob = load_problem(SMALL / "conv1d_oc.yaml")
    ert = load_ert(SMALL / "ERT.yaml")
    return Context(a, prob, ert, level_costs(a, ert)), MapSpace(a, prob)


@pytest.fixture(scope="module")
def mesh():
    return _mesh2x2()


def _same_numbers(ctx, a, b):
    ra, rb = ctx.evaluate(a), ctx.evaluate(b)
    for name in ("energy_pJ", "cycles", "edp", "utilization"):
        x, y = np.asarray(getattr(ra, name)), np.asarray(getattr(rb, name))
        assert np.array_equal(x, y, equal_nan=True), name


@pytest.mark.parametrize("arch,bounds", [("simba_like", dict(C=16, M=32, P=8, Q=8, R=3, S=3)),
                                         ("eyeriss_like", dict(C=8, M=16, P=14, Q=14, R=3, S=3))])
def test_canonical_vectors_decode_to_the_same_mapping_and_numbers(arch, bounds):
    ctx, ms = _small(arch, **bounds)
    X = ms.sample(np.random.default_rng(3), 3000)
    C = ms.canonical(X)
    assert np.array_equal(ms.canonical(C), C)                       # a fixed point
    assert _signature(ms, X) == _signature(ms, C)                    # factors, bypass, non-unit loop orders
    _same_numbers(ctx, ms.decode(X), ms.decode(C))
    assert len(set(ms.space.keys(C))) == len(set(_signature(ms, X)))   # one vector per mapping


def test_points_of_one_mapping_share_their_canonical_vector(mesh):
    """Re-encode each random point by hand: equal primes of a dimension swapped, unit loops' order
    keys redrawn, a dimension's primes on X and Y of one level moved all onto the other axis."""
    ctx, ms = mesh
    rng = np.random.default_rng(5)
    X = ms.sample(rng, 4000)
    Y = X.copy()
    groups: dict = {}
    for i, fp in enumerate(ms.factor_params):
        groups.setdefault((fp.dim, fp.prime), []).append(i)
    for cols in groups.values():                                     # swap equal primes' choices
        Y[:, cols] = Y[np.arange(len(Y))[:, None], np.array(cols)[rng.permuted(np.tile(np.arange(len(cols)), (len(Y), 1)), axis=1)]]
    t = ms.decode(X).temporal
    for pi, li, d in ms.perm_index:                                  # unit loops: any key
        unit = t[:, li, d] == 1
        Y[unit, pi] = rng.integers(0, ms.space.cardinalities[pi], int(unit.sum()))
    assert _signature(ms, X) == _signature(ms, Y)
    assert np.array_equal(ms.canonical(X), ms.canonical(Y))
    # a split of one dimension over X and Y of a level decodes onto X: the same mapping as all on X
    t, sx, sy = ms.decode_factors(X, checked=True, merge=False)
    both = ((sx > 1) & (sy > 1)).any(axis=(1, 2))
    assert both.sum() > 100                                          # (the case occurs)
    Z, split = X[both].copy(), ((sx > 1) & (sy > 1))[both]
    for i, fp in enumerate(ms.factor_params):
        for c, (li, k) in enumerate(fp.slots):
            if k == KIND_Y and (li, KIND_X) in fp.slots:             # Y -> X of a level it is split at
                Z[(Z[:, i] == c) & split[:, li, fp.dim], i] = fp.slots.index((li, KIND_X))
    assert _signature(ms, Z) == _signature(ms, X[both])
    assert np.array_equal(ms.canonical(Z), ms.canonical(X[both]))


def test_canonical_vectors_are_the_exhaustive_walks_and_counted_exactly(mesh):
    _, ms = mesh
    walk = np.concatenate(list(canonical_points(ms)))
    assert np.array_equal(ms.canonical(walk), walk)
    listed = set(ms.space.keys(walk))
    R = ms.canonical(ms.sample(np.random.default_rng(0), 50_000))
    assert set(ms.space.keys(R)) <= listed
    assert ms.space.n_distinct == len(listed) == count_canonical(ms) == 104_896
    assert ms.space.size > 1000 * ms.space.n_distinct                # the encoding's redundancy


def test_every_point_of_an_encoding_maps_onto_the_walks_list():
    """All 1,166,400 points of a 2 x 2 array's space for K=2, P=2: canonicalised one by one, they
    give exactly the walk's 1,728 mappings (so its count is the memory's number of mappings)."""
    import yaml

    from coexplore.spec.problem import parse_problem
    a = load_architecture_text((SMALL / "arch.yaml").read_text().replace("meshX: 4", "meshX: 2"))
    data = yaml.safe_load((SMALL / "conv1d_oc.yaml").read_text())
    data["problem"]["instance"].update(K=2, P=2, R=1)
    ms = MapSpace(a, parse_problem(data, name="tiny"))
    size = ms.space.size
    brute = set()
    for start in range(0, size, 1 << 17):
        X = ms.space.unravel(np.arange(start, min(size, start + (1 << 17))))
        brute.update(ms.space.keys(ms.canonical(X)))
    walk = set(ms.space.keys(np.concatenate(list(canonical_points(ms)))))
    assert size == 1_166_400 and brute == walk
    assert ms.space.n_distinct == len(walk) == count_canonical(ms) == 1728


@pytest.mark.parametrize("name", ["random", "ga", "sa", "rl", "marl", "ppo"])
def test_searchers_never_have_a_mapping_evaluated_twice(mesh, name):
    ctx, ms = mesh
    f = make_objective(ctx, ms, "edp")
    asked = []

    def objective(X):
        asked.append(np.array(X))
        return f(X)
    run_search(registry.make_searcher(registry.mapper_spec(name), ms, 0), objective, budget=3000, batch_size=100)
    sig = _signature(ms, np.concatenate(asked))
    assert len(sig) == 3000 and len(set(sig)) == len(sig)


def test_rl_runs_out_of_mappings_not_of_encodings():
    """A space of fewer mappings than the budget: RL evaluates each mapping once, then stops with
    the exhaustive optimum (its memory counts mappings, not the 10^k encodings of them)."""
    ctx, ms = _small("simple_weight_stationary", C=4, M=2, P=4)
    n = count_canonical(ms)
    f = make_objective(ctx, ms, "edp")
    res = run_search(registry.make_searcher(registry.mapper_spec("rl"), ms, 0), f, budget=10 * n, batch_size=100)
    assert res.samples == n
    optimum = min(float(np.min(f(X))) for X in canonical_points(ms))
    assert res.best_loss == optimum


@pytest.mark.parametrize("name", ["random", "ga", "sa"])
def test_the_other_searchers_stop_once_every_mapping_is_told(name):
    """GA and SA spent the whole budget on a space of few mappings (their repeats cost samples)."""
    ctx, ms = _small("simple_weight_stationary", M=2, P=2)
    n = count_canonical(ms)
    f = make_objective(ctx, ms, "edp")
    s = registry.make_searcher(registry.mapper_spec(name), ms, 0)
    res = run_search(s, f, budget=100 * n, batch_size=100)
    assert s.done is True and res.samples < 10 * n
    assert res.best_loss == min(float(np.min(f(X))) for X in canonical_points(ms))


def test_learners_stop_at_the_mapping_count_under_a_fixed_spatial_factor(tmp_path):
    """Regression study: with a fixed spatial factor (an axis choice) the walk is not canonical's
    whole reach, so the mappings were not listed and rl/marl/ppo spent the whole budget repeating
    (8,000 samples for 2,176 mappings). They are listed from every point's canonical vector now."""
    import yaml

    from coexplore.spec.constraints import load_constraints
    from coexplore.spec.problem import parse_problem
    a = load_architecture_text((SMALL / "arch.yaml").read_text().replace("meshX: 4", "meshX: 2"))
    data = yaml.safe_load((SMALL / "conv1d_oc.yaml").read_text())
    data["problem"]["instance"].update(K=4, P=2, R=1)
    prob = parse_problem(data, name="k4p2")
    (tmp_path / "c.yaml").write_text("architecture_constraints:\n  targets:\n"
                                     "  - {type: spatial, target: GLB, factors: K=2}\n")
    ms = MapSpace(a, prob, load_constraints(a, tmp_path / "c.yaml"))
    assert not ms.enumeration_is_reach() and ms.space.size > 2 ** 20
    from coexplore.model.evaluate import level_costs
    from coexplore.model.inputs import Context
    from coexplore.spec.ert import load_ert
    ert = load_ert(SMALL / "ERT.yaml")
    ctx = Context(a, prob, ert, level_costs(a, ert))
    f = make_objective(ctx, ms, "edp")
    every = set()
    for start in range(0, ms.space.size, 1 << 17):                 # the mappings, point by point
        every.update(ms.space.keys(ms.canonical(ms.space.unravel(np.arange(start, min(ms.space.size, start + (1 << 17)))))))
    assert ms.space.n_distinct == len(every)
    for name in ("rl", "marl"):
        s = registry.make_searcher(registry.mapper_spec(name), ms, 0)
        res = run_search(s, f, budget=4 * len(every), batch_size=100)
        assert res.samples == len(every) and s.done is True, name
