"""Edges of the ask/tell contract: a refused call changes nothing, asked-but-untold points are not
lost, huge spaces are refused up front, helpers refuse bad input with a CoexploreError.

"Changes nothing" is checked against a twin searcher (same space, seed and calls) that never saw
the refused call: its samples, recommendation and next asks must be the refused one's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.search.base import Searcher, run_search, with_tie
from coexplore.search.registry import make_searcher, objective_loss
from coexplore.search.rl import MAX_POLICY_VALUES
from coexplore.search.space import DiscreteSpace

DATA = Path(__file__).parent / "data"
SPACE = DiscreteSpace(np.array([4, 6, 24, 3]), list("abcd"), ordinal=np.array([True, True, False, False]))
TINY = DiscreteSpace(np.array([3, 2, 2]), list("abc"))          # 12 points
LAYER = ("random", "ga", "sa", "rl", "marl", "marl_noclust", "ppo", "exhaustive")
LOG_LEARNERS = ("ga", "sa", "rl", "marl", "marl_noclust", "ppo")


def f(x):
    x = np.asarray(x, dtype=float)
    return 1.0 + (x[:, 0] - 2.0) ** 2 + (x[:, 1] - 3.0) ** 2 + 0.01 * x[:, 2] + x[:, -1]


def same_state(a, b, space, n=7):
    """a and b agree on what a caller sees: samples, recommendation, the next asks."""
    assert a.samples == b.samples
    (xa, la), (xb, lb) = a.recommend(), b.recommend()
    assert la == lb
    assert (xa is None and xb is None) or np.array_equal(xa, xb)
    for _ in range(2):
        ya, yb = a.ask(n), b.ask(n)
        assert np.array_equal(ya, yb)
        if len(ya):
            a.tell(ya, f(ya))
            b.tell(yb, f(yb))
    assert a.recommend()[1] == b.recommend()[1] and a.samples == b.samples


def bad_tells(x, log_learner: bool):
    """(label, batch, losses) a searcher must refuse."""
    good = f(x)
    out = [("short losses", x, good[:-1]), ("2-wide losses", x, np.stack([good, good], 1)),
           ("transposed batch", x.T, good), ("out of range", x + 100, good), ("fractional", x + 0.5, good),
           ("string losses", x, ["a"] * len(x)), ("-inf", x, np.where(np.arange(len(x)) == 1, -np.inf, good))]
    if log_learner:
        out += [("negative", x, -good), ("zero", x, np.where(np.arange(len(x)) == 0, 0.0, good))]
    return out


@pytest.mark.parametrize("name", LAYER)
def test_refused_tell_changes_nothing(name):
    space = TINY if name == "exhaustive" else SPACE
    s, twin = make_searcher(name, space, seed=3), make_searcher(name, space, seed=3)
    s.budget = twin.budget = 400
    x, xt = s.ask(10), twin.ask(10)
    assert np.array_equal(x, xt)
    s.tell(x[:5], f(x[:5]))
    twin.tell(xt[:5], f(xt[:5]))
    for label, batch, losses in bad_tells(x[5:], name in LOG_LEARNERS):
        with pytest.raises(CoexploreError):
            s.tell(batch, losses)
    s.tell(x[5:], f(x[5:]))
    twin.tell(xt[5:], f(xt[5:]))
    same_state(s, twin, space)


@pytest.mark.parametrize("name", LOG_LEARNERS)
def test_first_tell_refused_leaves_fresh_searcher(name):
    """The audit's case: tell(x, -f(x)) used to count the samples and keep the refused best."""
    s, twin = make_searcher(name, SPACE, seed=1), make_searcher(name, SPACE, seed=1)
    s.budget = twin.budget = 200
    x = s.ask(5)
    twin.ask(5)
    with pytest.raises(CoexploreError) as err:
        s.tell(x, -f(x))
    assert err.value.key == "log_loss"
    assert s.samples == 0 and s.recommend() == (None, np.inf)
    s.tell(x, f(x))
    twin.tell(x, f(x))
    same_state(s, twin, SPACE)
    res = run_search(s, f, budget=60, batch_size=10)
    assert res.best_loss > 0 and res.samples == 60


def test_minus_inf_refused_inf_accepted():
    for name in ("random", "ga", "rl"):
        s = make_searcher(name, SPACE, seed=0)
        s.budget = 100
        x = s.ask(4)
        with pytest.raises(CoexploreError):
            s.tell(x, [1.0, -np.inf, 2.0, 3.0])
        s.tell(x, [np.inf, np.nan, 2.0, np.inf])       # inf / NaN: invalid candidates, still samples
        assert s.samples == 4 and s.recommend()[1] == 2.0
    with pytest.raises(CoexploreError):                 # an objective giving -inf is refused by run_search
        run_search(make_searcher("random", SPACE, 0), lambda x: np.full(len(x), -np.inf), budget=20)


@pytest.mark.parametrize("name", LAYER)
def test_every_searcher_says_whether_it_is_done(name):
    """`done` is part of every searcher (True, False or None), and True only once the whole tiny
    space has been told, where the best is the optimum."""
    s = make_searcher(name, TINY, seed=0)
    assert s.done in (True, False, None)
    run_search(s, f, budget=200, batch_size=6)
    assert s.done in (True, False, None)
    if s.done:
        every = np.array(np.meshgrid(*[np.arange(c) for c in TINY.cardinalities], indexing="ij")).reshape(3, -1).T
        assert s.best_loss == f(every).min()


# -- asked but never told -----------------------------------------------------------------------

@pytest.mark.parametrize("name", ("rl", "marl", "marl_noclust", "ppo", "exhaustive"))
def test_untold_points_are_asked_again(name):
    s = make_searcher(name, TINY, seed=1)
    s.budget = 40
    dropped = s.ask(12)                                  # the whole space, never told
    assert len({tuple(r) for r in dropped}) == 12
    again = s.ask(5)
    assert len(again) == 5 and {tuple(r) for r in again} <= {tuple(r) for r in dropped}
    assert not s.done
    seen, rounds = set(), 0
    while not s.done:                                    # ends: every point gets told
        x = s.ask(5)
        assert len(x), "asks nothing while not done"
        s.tell(x, f(x))
        seen |= {tuple(r) for r in x}
        rounds += 1
        assert rounds < 20
    assert len(seen) == 12 and s.recommend()[1] == f(TINY.unravel(np.arange(12))).min()
    assert len(s.ask(3)) == 0                            # done: nothing more


@pytest.mark.parametrize("name", ("rl", "marl", "ppo", "exhaustive"))
def test_run_search_after_dropped_batch(name):
    s = make_searcher(name, TINY, seed=1)
    s.budget = 40
    s.ask(12)
    res = run_search(s, f, budget=40, batch_size=5)
    assert res.samples == 12
    assert res.best_loss == f(TINY.unravel(np.arange(12))).min()


def test_run_search_refuses_a_searcher_proposing_nothing():
    class Empty(Searcher):
        name = "empty"

        def ask(self, n):
            return np.zeros((0, 3), np.int64)
    with pytest.raises(CoexploreError) as err:
        run_search(Empty(), f, budget=10)
    assert err.value.key == "searcher"


def test_a_tell_that_skips_the_base_class_is_refused_not_run_for_ever():
    """The base class's tell counts the samples the budget loop stops on: a tell without
    `super().tell(...)` used to leave the count at 0 and run_search never ended."""
    class Forgetful(Searcher):
        name = "forgetful"

        def ask(self, n):
            return self.rng.integers(0, 3, size=(n, 3))

        def tell(self, batch, losses):
            self.last = losses
    with pytest.raises(CoexploreError) as err:
        run_search(Forgetful(), f, budget=100, batch_size=10)
    assert "super().tell" in err.value.expected and err.value.key == "Forgetful.tell"


# -- size guard ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ("rl", "marl", "marl_noclust", "ppo"))
def test_learners_refuse_huge_cardinalities_up_front(name):
    big = DiscreteSpace(np.array([10 ** 6] * 30), [f"p{i}" for i in range(30)])
    s = make_searcher(name, big, seed=0)
    with pytest.raises(CoexploreError) as err:
        s.ask(10)
    assert err.value.key == "space.cardinalities" and "p0" in str(err.value)
    t = make_searcher(name, big, seed=0)
    x = big.sample(np.random.default_rng(0), 3)
    with pytest.raises(CoexploreError):                  # a tell before any ask: the same refusal
        t.tell(x, np.ones(3))
    assert t.samples == 0
    # just inside the limit works
    ok = DiscreteSpace(np.array([MAX_POLICY_VALUES // 30] * 30), [f"p{i}" for i in range(30)])
    r = run_search(make_searcher(name, ok, seed=0), lambda x: 1.0 + x.sum(1), budget=200, batch_size=100)
    assert r.samples == 200


def test_real_mapspaces_well_inside_policy_limit():
    from coexplore.mapspace.space import MapSpace
    from coexplore.model.inputs import load_context
    from coexplore.spec.constraints import load_constraints
    corpus = str(DATA / "timeloop_corpus") + "/"
    for arch in ("simba_like", "eyeriss_like"):
        ctx = load_context(corpus + f"arches/{arch}/processed.yaml", corpus + "layers/bert_qkv.yaml")
        cons = load_constraints(ctx.arch, corpus + f"arches/{arch}/constraints.yaml")
        total = int(MapSpace(ctx.arch, ctx.problem, cons).space.cardinalities.sum())
        assert 0 < total < MAX_POLICY_VALUES / 10


# -- schedulers -----------------------------------------------------------------------------------

SCHEDULERS = ("magma", "magma-original", "random", "stdga", "pso", "cma", "de", "tbpsa", "oneplusone",
              "fcfs-greedy", "heft-met")


@pytest.fixture(scope="module")
def table():
    from coexplore.system.tables import load_table
    return load_table(DATA / "magma/tables/batch_mix/S3/insts0.csv")


@pytest.mark.parametrize("name", SCHEDULERS)
def test_scheduler_refused_tell_changes_nothing(name, table):
    from coexplore.system.encoding import MakespanObjective
    from coexplore.system.schedule import make_searcher as make_scheduler
    obj = MakespanObjective(table, 16.0)
    s, twin = make_scheduler(name, table, budget=200, seed=0), make_scheduler(name, table, budget=200, seed=0)
    x, xt = s.ask(8), twin.ask(8)
    assert np.array_equal(x, xt)
    n = len(x)                # 8, or 1 for a deterministic heuristic (its one schedule: `size`)
    assert n == (8 if s.size is None else min(8, s.size))
    J = table.num_jobs
    out_of_range = x.copy()
    out_of_range[0, 0] = table.num_cores + 1
    nan_row = x.copy()
    nan_row[n - 1, J] = np.nan
    for batch, losses in ((x[:, :5], obj(x)), (x, np.ones(n + 1)), (out_of_range, obj(x)), (nan_row, obj(x)),
                          (x, np.full(n, -np.inf))):
        with pytest.raises(CoexploreError):
            s.tell(batch, losses)
    assert s.samples == 0 and s.recommend() == (None, np.inf)
    s.tell(x, obj(x))
    twin.tell(xt, obj(xt))
    assert s.samples == twin.samples == n and s.best_x.shape == (2 * J,)
    assert s.recommend()[1] == twin.recommend()[1]
    y, yt = s.ask(8), twin.ask(8)
    assert np.array_equal(y, yt)


@pytest.mark.parametrize("name", ("pso", "de", "tbpsa", "oneplusone"))
def test_nevergrad_matches_told_rows_by_content(name, table):
    """Batches told out of order give each loss to its own candidate (they used to go to the pending
    asks in order); a batch told twice, or never asked, is refused."""
    from coexplore.system.schedule import make_searcher as make_scheduler
    s = make_scheduler(name, table, budget=200, seed=0)
    a, b = s.ask(10), s.ask(10)
    lb = np.full(10, 100.0)
    lb[3] = 1.0
    s.tell(b[::-1], lb[::-1])                    # the second batch first, its rows reversed
    s.tell(a, np.full(10, 100.0))
    rec = s._lo + s._span * np.clip(np.asarray(s._opt.recommend().value), 0.0, 1.0)
    assert np.array_equal(rec, b[3]) and s.recommend()[1] == 1.0
    samples = s.samples
    with pytest.raises(CoexploreError):
        s.tell(a, np.ones(10))                   # told twice
    with pytest.raises(CoexploreError):
        s.tell(a + 1e-3, np.ones(10))            # never asked
    assert s.samples == samples
    c = s.ask(10)
    s.tell(c, np.ones(10))                       # the searcher still works
    assert s.samples == samples + 10


# -- helpers ---------------------------------------------------------------------------------------

def test_with_tie_length_checked():
    with pytest.raises(CoexploreError) as err:
        with_tie(np.ones(5), np.ones(3))
    assert err.value.key == "tie"
    for name in ("random", "sa", "marl"):
        with pytest.raises(CoexploreError):
            run_search(make_searcher(name, SPACE, 0), lambda x: with_tie(f(x), np.ones(3)), budget=100,
                       batch_size=50)
    t = with_tie([1.0, 2.0], [3.0, 4.0])
    assert np.array_equal(t.tie, [3.0, 4.0])


def test_objective_loss_checks_metrics():
    with pytest.raises(CoexploreError):
        objective_loss({"energy": np.ones(3), "cycles": np.ones(2)}, "edp")
    with pytest.raises(CoexploreError):
        objective_loss({"energy": np.ones(3), "cycles": np.ones(2)}, "latency")
    with pytest.raises(CoexploreError) as err:
        objective_loss({"energy": -np.ones(3), "cycles": np.ones(3)}, "edp")
    assert err.value.key == "metrics.energy"
    got = objective_loss({"energy": np.array([2.0, np.nan, 3.0]), "cycles": np.array([5.0, 1.0, np.inf])}, "edp")
    assert np.array_equal(got, [10.0, np.inf, np.inf])


def test_cache_refusals_store_nothing(tmp_path):
    from coexplore.model.cache import ResultCache, cache_key
    c = ResultCache(tmp_path / "c.sqlite")
    parts = dict(core={"a": 1}, layer={"C": 3}, searcher={"name": "random"}, seed=0, backend="b",
                 backend_version="1")
    with pytest.raises(CoexploreError):
        c.get_or_compute(parts, lambda: None)
    assert c.get(cache_key(**parts)) is None and len(c) == 0
    k = cache_key(**parts)
    with pytest.raises(CoexploreError):
        c.put_many([(k, {"x": 1}, None), ("other", {"x": 2})])   # the second is a 2-tuple: none stored
    assert len(c) == 0
    assert c.get_or_compute(parts, lambda: {"x": 1.5}) == {"x": 1.5}
    assert c.get(k) == {"x": 1.5}
    c.close()


def test_cma_in_more_than_299_dimensions_takes_batches():
    """nevergrad's bounded CMA switches cma to two-point step-size adaptation above 299 dimensions,
    which fails on several asks before their tells (a schedule of 150+ jobs); coexplore's does not."""
    from coexplore.search.base import run_search
    from coexplore.search.nevergrad_adapter import NevergradSearcher
    d = 320
    s = NevergradSearcher("cma", np.zeros(d), np.ones(d), budget=200, seed=0, num_workers=10)
    res = run_search(s, lambda x: ((x - 0.3) ** 2).sum(axis=1), budget=200, batch_size=10)
    assert res.samples == 200 and res.best_loss < d * 0.3 ** 2    # better than the box's corner at 0


@pytest.mark.parametrize("top", [7, 300, 70_000])
def test_point_keys_of_a_huge_space_are_narrow_distinct_and_sort_as_the_rows(top):
    """Keys of a space too large to index are bytes, 1-4 per parameter: distinct rows, distinct
    keys, ordered as the rows' int64 bytes were (learners merge duplicate draws in key order, so
    the narrow keys leave every seeded run as it was)."""
    from coexplore.search.space import DiscreteSpace
    space = DiscreteSpace(np.full(40, top), [f"p{i}" for i in range(40)])
    assert space.size >= 2 ** 63
    rng = np.random.default_rng(0)
    x = rng.integers(0, top, (500, 40))
    x[1] = x[0]
    x[2, :] = top - 1
    keys = space.keys(x)
    assert all(len(k) <= 40 * (1 if top <= 256 else 2 if top <= 65536 else 4) for k in keys)
    rows = [tuple(r) for r in x.tolist()]
    assert len(set(keys)) == len(set(rows))
    wide = [r.astype("<i8").tobytes() for r in x]
    assert sorted(range(500), key=lambda i: keys[i]) == sorted(range(500), key=lambda i: wide[i])


def _library_calls():
    from coexplore.search.exhaustive import ExhaustiveSearch
    from coexplore.search.space import DiscreteSpace
    from coexplore.system.schedule import MagmaConfig, search_schedule
    from coexplore.system.tables import load_table
    table = Path(__file__).parent / "data" / "magma" / "tables" / "batch_mix" / "S3" / "insts0.csv"
    t = load_table(table)
    return {
        "schedule budget 2.7": (lambda: search_schedule(t, 16, budget=2.7), "budget"),
        "schedule budget text": (lambda: search_schedule(t, 16, budget="100"), "budget"),
        "schedule budget None": (lambda: search_schedule(t, 16, budget=None), "budget"),
        "schedule searcher None": (lambda: search_schedule(t, 16, searcher=None, budget=10), "searcher"),
        "magma config to random": (lambda: search_schedule(t, 16, "random", 10, config=MagmaConfig()), "config"),
        "space names None": (lambda: DiscreteSpace(np.array([3, 4]), None), "names"),
        "exhaustive of 10^481 points": (lambda: ExhaustiveSearch(
            DiscreteSpace(np.full(40, 2 ** 40), [str(i) for i in range(40)])).ask(3), "config.max_size"),
    }


@pytest.mark.parametrize("case", list(_library_calls()))
def test_library_calls_with_bad_arguments_raise_coexplore_errors(case):
    call, key = _library_calls()[case]
    with pytest.raises(CoexploreError) as err:
        call()
    assert err.value.key == key


def test_map_layer_and_context_refuse_bad_arguments_clearly():
    from coexplore.model.inputs import load_context
    from coexplore.search.layer import map_layer
    from conftest import CORPUS
    ctx = load_context(CORPUS / "arches" / "simba_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml")
    for spec, budget, key in (("random", "100", "budget"), (None, 100, "spec"), ("random", 2.5, "budget")):
        with pytest.raises(CoexploreError) as err:
            map_layer(ctx, {}, spec, budget)
        assert err.value.key == key
    ctx.stride_rule = "bogus"
    with pytest.raises(CoexploreError, match="stride rule"):
        ctx.evaluate_mappings(sorted((CORPUS / "public" / "simba_like" / "tiny_conv").glob("*/mapping.yaml"))[0])
