"""coexplore.ranks.rankdata gives scipy.stats.rankdata's numbers (average ranks), layout too, so
the searchers that rank their samples learn exactly as before without importing scipy.stats."""

import numpy as np
import pytest
from scipy.stats import rankdata as scipy_rankdata

from coexplore.ranks import rankdata


@pytest.mark.parametrize("seed", range(6))
def test_the_same_ranks_as_scipy(seed):
    rng = np.random.default_rng(seed)
    cases = [rng.integers(0, 4, 40).astype(float), rng.normal(size=(30, 5)), rng.integers(-2, 3, (9, 4)),
             rng.choice([-0.0, 0.0, np.inf, -np.inf, 1.0], size=(12, 3)), np.array([3.0, np.nan, 1.0])]
    for x in cases:
        for axis in range(x.ndim):
            ours, theirs = rankdata(x, axis=axis), scipy_rankdata(x, axis=axis)
            assert ours.dtype == theirs.dtype and ours.strides == theirs.strides
            assert np.array_equal(ours, theirs, equal_nan=True)


def test_searching_does_not_import_scipy_stats():
    import subprocess
    import sys
    code = ("import sys, numpy as np\n"
            "from coexplore.search.registry import make_searcher, mapper_spec\n"
            "from coexplore.search.space import DiscreteSpace\n"
            "s = make_searcher(mapper_spec('marl'), DiscreteSpace(np.array([4] * 6), list('abcdef')), 0)\n"
            "s.budget = 600\n"
            "for _ in range(6):\n"
            "    x = s.ask(100); s.tell(x, 1.0 + x.sum(axis=1))\n"
            "print('scipy.stats' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
