"""Properties of the model's building blocks, checked against brute force or the documented
rules, for inputs the reference corpus does not reach (from a mutation review)."""

import itertools

import numpy as np
import pytest

from coexplore.model.nest import _distinct_offsets
from coexplore.system.bounds import LP_SLACK, lower_bound
from coexplore.system.evaluator import evaluate


def _brute(P, n, stride):
    total = 1
    for r in range(P.shape[0]):
        dims = [d for d in range(P.shape[1]) if P[r, d]]
        vals = {sum(P[r, d] * stride[d] * i for d, i in zip(dims, combo))
                for combo in itertools.product(*(range(n[d]) for d in dims))}
        total *= len(vals)
    return total


def test_distinct_offsets_of_a_fan_out_match_enumeration():
    """The multicast groups of a fan-out: distinct a*i + b*j (+ ...) per tensor rank, closed form
    for two terms, enumerated for more; ranks use disjoint dimensions (CNN-like shapes)."""
    rng = np.random.default_rng(0)
    for _ in range(600):
        D = 5
        order = rng.permutation(D)
        cut = sorted(rng.choice(np.arange(1, D), size=1, replace=False))
        groups = [order[:cut[0]], order[cut[0]:]]
        P = np.zeros((2, D), np.int64)
        for r, g in enumerate(groups):
            for d in g[:3]:
                P[r, d] = rng.integers(1, 4)
        n = rng.integers(1, 6, size=D)
        stride = rng.integers(1, 5, size=D)
        got = _distinct_offsets(P, n[None, :], stride[None, :])[0]
        assert got == _brute(P, n, stride), (P.tolist(), n.tolist(), stride.tolist())
    # the example the closed form must get right: 1*i + 2*j, i < 3, j < 2 -> {0, 1, 2, 3, 4}
    assert _distinct_offsets(np.array([[1, 2]]), np.array([[3, 2]]), np.ones((1, 2), np.int64))[0] == 5


def _brute_joint(P, n, stride):
    """Distinct points of a fan-out, every rank's coordinate together (Timeloop's delta classes)."""
    return len({tuple(int(sum(P[r, d] * stride[d] * i[d] for d in range(P.shape[1]))) for r in range(P.shape[0]))
                for i in itertools.product(*(range(k) for k in n))})


def test_distinct_offsets_of_ranks_sharing_a_dimension_are_counted_jointly():
    """A[m+k][k]: a dimension in two ranks ties them; the points are counted together, not per
    rank (8 children at distinct (m+k, k) are 8 points, not 5 x 4). Random shapes, vs enumeration."""
    P = np.array([[1, 1], [0, 1]])
    assert _distinct_offsets(P, np.array([[2, 4]]), np.ones((1, 2), np.int64))[0] == 8
    rng = np.random.default_rng(1)
    for _ in range(300):
        D, R = 4, int(rng.integers(2, 4))
        P = rng.integers(0, 3, size=(R, D)) * (rng.random((R, D)) < 0.6)
        n = rng.integers(1, 4, size=D)
        stride = rng.integers(1, 4, size=D)
        got = _distinct_offsets(P, n[None, :], stride[None, :])[0]
        assert got == _brute_joint(P, n, stride), (P.tolist(), n.tolist(), stride.tolist())


def test_a_job_needing_more_than_the_whole_bandwidth_is_stretched_in_the_bound_too():
    """One core, two jobs of 100 cycles; the first needs 20 bytes/cycle of a 10 bytes/cycle DRAM,
    so it takes 200 cycles: the makespan is 300, and so is the bound (less its documented slack)."""
    lat, need = np.array([[100.0], [100.0]]), np.array([[20.0], [0.0]])
    ev = evaluate(lat, need, 10.0, np.zeros((1, 2), np.int64), np.array([[0.0, 0.5]]))
    assert ev.makespan[0] == pytest.approx(300.0)
    assert lower_bound(lat, need, 10.0) == pytest.approx(300.0 * (1 - LP_SLACK), rel=1e-12)


def test_mesh_links_join_neighbours_only_without_wrap_around():
    """A 2x2 mesh whose children hold offsets (x, y) = their mesh position: a translation by one
    column or row is served by the two neighbours that differ so; the end of a row and the start
    of the next are not neighbours (Timeloop's mesh has no toroidal links by default)."""
    from coexplore.model.nest import _link_table
    n, step, key = np.array([2, 2]), np.array([[1, 0], [0, 1]]), np.array([0, 1])
    for t, linked in (([1, 0], 2), ([0, 1], 2), ([-1, 1], 0), ([1, 1], 0)):
        G, F, _, Lk = _link_table(n, step, key, 2, 2, np.array([t]))
        assert (G, F, int(Lk[0])) == (4, 4, linked), t
