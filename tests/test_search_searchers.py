"""Each searcher finds the optimum of a tiny grouped problem; seeds reproduce results."""

import numpy as np
import pytest

from coexplore.search.base import run_search
from coexplore.search.exhaustive import ExhaustiveSearch
from coexplore.search.registry import SEARCHERS, make_searcher
from coexplore.search.space import DiscreteSpace
from coexplore.search.synthetic import make_small

LEARNERS = ["random", "ga", "sa", "rl", "ppo", "marl", "marl_noclust"]


def brute_force(problem):
    space = problem.space
    x = space.unravel(np.arange(space.size))
    losses = problem(x)
    i = int(np.argmin(losses))
    return x[i], float(losses[i])


@pytest.mark.parametrize("seed", [0, 1])
def test_synthetic_optimum_matches_brute_force(seed):
    problem = make_small(seed)
    _, opt = problem.optimum()
    _, brute = brute_force(problem)
    assert opt == pytest.approx(brute, rel=1e-12)
    assert np.isinf(problem(problem.space.unravel(np.arange(problem.space.size)))).any()  # has invalids


def test_exhaustive_enumerates_every_point_once_and_finds_optimum():
    problem = make_small(0)
    seen = []
    s = ExhaustiveSearch(problem.space)

    def objective(x):
        seen.append(x)
        return problem(x)

    res = run_search(s, objective, budget=10 ** 9, batch_size=997)
    allx = np.concatenate(seen)
    assert res.samples == problem.space.size == len(allx)
    assert len(np.unique(problem.space.ravel(allx))) == problem.space.size
    _, brute = brute_force(problem)
    assert res.best_loss == brute


@pytest.mark.parametrize("name", LEARNERS)
@pytest.mark.parametrize("seed", [0, 1])
def test_searcher_finds_optimum_of_tiny_space(name, seed):
    problem = make_small(seed)
    _, opt = problem.optimum()
    # a third of the space: luck alone is not enough; random search (which never repeats a
    # point) gets the whole space, so it must find the optimum by enumeration
    budget = problem.space.size if name == "random" else problem.space.size // 3
    searcher = make_searcher(name, problem.space, seed=seed)
    if name == "marl":
        searcher.config.warmup = 300
    # PPO learns once per batch (rollout): a third of an 864-point space is 3 batches of 100
    res = run_search(searcher, problem, budget=budget, batch_size=20 if name == "ppo" else 100)
    assert res.samples == budget
    assert res.best_loss == pytest.approx(opt, rel=1e-9)
    assert problem(res.best_x[None, :])[0] == pytest.approx(res.best_loss)


@pytest.mark.parametrize("name", LEARNERS + ["exhaustive"])
def test_same_seed_same_result_and_different_seed_differs(name):
    problem = make_small(2)

    def trace(seed):
        s = make_searcher(name, problem.space, seed=seed)
        xs = []

        def objective(x):
            xs.append(x.copy())
            return problem(x)

        run_search(s, objective, budget=600, batch_size=64)
        return np.concatenate(xs)

    a, b = trace(5), trace(5)
    assert np.array_equal(a, b)
    if name != "exhaustive":
        assert not np.array_equal(a, trace(6))


@pytest.mark.parametrize("name", LEARNERS)
def test_budget_counts_invalid_samples_and_asks_are_in_range(name):
    problem = make_small(1)
    space = problem.space
    n_invalid = 0
    asked = 0

    def objective(x):
        nonlocal n_invalid, asked
        space.check(x)
        losses = problem(x)
        n_invalid += int(np.isinf(losses).sum())
        asked += len(x)
        return losses

    s = make_searcher(name, space, seed=0)
    res = run_search(s, objective, budget=777, batch_size=100)
    assert res.samples == asked == 777
    assert n_invalid > 0


@pytest.mark.parametrize("name", LEARNERS)
def test_learners_do_not_repeat_asks(name):
    problem = make_small(0)
    space = problem.space
    s = make_searcher(name, space, seed=3)
    keys = []

    def objective(x):
        keys.extend(space.keys(x))
        return problem(x)

    run_search(s, objective, budget=2000, batch_size=100)
    assert len(set(keys)) == len(keys)


def test_nan_losses_are_treated_as_invalid():
    problem = make_small(0)

    def objective(x):
        out = problem(x)
        out[::3] = np.nan
        return out

    for name in LEARNERS:
        res = run_search(make_searcher(name, problem.space, seed=0), objective, budget=500)
        assert np.isfinite(res.best_loss)
    # a NaN never hides a better candidate of its batch (exhaustive: one batch holds the optimum)
    _, brute = brute_force(problem)

    def nan_first(x):
        out = problem(x)
        out[0] = np.nan
        return out

    for name in ["exhaustive", *LEARNERS]:
        s = make_searcher(name, problem.space, seed=0)
        x = s.ask(50)
        s.tell(x, nan_first(x))
        assert s.recommend()[1] == problem(x)[1:].min()
    res = run_search(ExhaustiveSearch(problem.space), nan_first, budget=problem.space.size,
                     batch_size=problem.space.size)
    assert res.best_loss == brute or problem(res.best_x[None, :])[0] == brute


@pytest.mark.parametrize("name", LEARNERS + ["exhaustive"])
def test_ask_and_tell_check_their_arguments(name):
    from coexplore.errors import CoexploreError
    space = make_small(0).space
    s = make_searcher(name, space, seed=0)
    for n in (0, -1, 2.5, "3"):
        with pytest.raises(CoexploreError, match="ask"):
            s.ask(n)
    x = s.ask(4)
    with pytest.raises(CoexploreError, match="shape"):
        s.tell(x[:, :-1], np.ones(4))
    bad = x.copy()
    bad[0, 0] = space.cardinalities[0]
    if name != "exhaustive":         # exhaustive on a plain space reads no rows back
        with pytest.raises(CoexploreError, match=f"out of range: row 0 of the batch has {space.cardinalities[0]} "
                                                 f"for {space.names[0]} \\(column 0\\)"):
            s.tell(bad, np.ones(4))
    s.tell(x, np.ones((4, 1)))       # a column of losses is one loss per candidate
    assert s.samples == 4


def test_a_searcher_run_again_continues_its_count():
    problem = make_small(0)
    s = make_searcher("ga", problem.space, seed=0)
    first = run_search(s, problem, budget=300)
    again = run_search(s, problem, budget=500)
    assert first.samples == 300 and again.samples == 500
    assert [h[0] for h in again.history] == [400, 500]
    assert again.history[-1][1] == again.best_loss <= first.best_loss


def test_registry_names():
    # the mapspace adds random_pruned / linear_pruned when coexplore.search.layer is imported
    assert {"random", "ga", "sa", "rl", "ppo", "marl", "marl_noclust", "exhaustive"} <= set(SEARCHERS)


def test_learners_beat_random_on_a_larger_problem():
    from coexplore.search.synthetic import make_synthetic
    problem = make_synthetic(n_groups=5, seed=3)
    best = {}
    for name in ["random", "marl", "rl", "ga"]:
        s = make_searcher(name, problem.space, seed=0)
        if name == "marl":
            s.config.warmup = 500
        best[name] = run_search(s, problem, budget=4000).best_loss
    for name in ["marl", "rl", "ga"]:
        assert best[name] < best["random"], best


def test_group_aware_variants_use_the_given_groups():
    from coexplore.search.ga import GAConfig, GeneticAlgorithm
    from coexplore.search.marl import MARL, MARLConfig
    problem = make_small(0)
    sp = problem.space
    space = DiscreteSpace(sp.cardinalities, sp.names, sp.ordinal, problem.true_groups)
    _, opt = problem.optimum()
    ga = GeneticAlgorithm(space, GAConfig(crossover="groups", population=30), seed=0)
    assert run_search(ga, problem, budget=space.size // 3).best_loss == pytest.approx(opt)
    marl = MARL(space, MARLConfig(clustering="given"), seed=0)
    res = run_search(marl, problem, budget=space.size // 3)
    assert res.best_loss == pytest.approx(opt)
    assert sorted(map(sorted, marl.clusters)) == sorted(problem.true_groups)
    assert marl.correlations is None  # no warm-up analysis when the groups are given


@pytest.mark.parametrize("name,base,option,value", [
    ("rl", {}, "advantage", "shared"), ("rl", {}, "advantage", "zscore"), ("rl", {}, "entropy", 0.1),
    ("rl", {}, "epochs", 1), ("rl", {}, "imitation", 0.0), ("rl", {}, "imitation_top", 5),
    ("rl", {"advantage": "zscore"}, "log_loss", False),      # ranks ignore a monotone transform
    ("rl", {}, "conditional", False), ("rl", {}, "lr", 0.05),
    # one agent's critic baseline is a constant, so the critic options act in MARL
    ("marl", {"warmup": 200, "stall": 300}, "critic", False),
    ("marl", {"warmup": 200, "stall": 300}, "critic_shrink", 50.0),
    ("marl", {"warmup": 200, "stall": 100}, "stall", 0), ("marl", {"warmup": 200, "stall": 100}, "polish", False),
    ("marl", {"warmup": 200, "stall": 300}, "leftovers", "joint"), ("marl", {"warmup": 200}, "bins", 2),
    ("marl", {"warmup": 200, "stall": 300}, "warmup_update", False), ("marl", {"warmup": 200}, "z", 1.0),
    ("ppo", {}, "hidden", 16), ("ppo", {}, "layers", 1), ("ppo", {}, "lr", 0.001), ("ppo", {}, "clip", 0.05),
    ("ppo", {}, "entropy", 0.0), ("ppo", {}, "epochs", 1), ("ppo", {}, "minibatches", 1),
    ("ppo", {}, "max_grad_norm", 0.0), ("ppo", {}, "log_loss", False), ("ppo", {}, "invalid_margin", 2.0),
])
def test_every_learner_option_changes_the_search(name, base, option, value):
    """A documented option that does nothing is a defect: each one changes what is asked (or, for
    the clustering's `bins`, the measured correlations)."""
    from coexplore.search.registry import mapper_spec
    from coexplore.search.synthetic import make_synthetic
    problem = make_synthetic(n_groups=4, seed=1)
    asked, corr = [], []
    for opts in (base, {**base, option: value}):
        s = make_searcher(mapper_spec(name, opts), problem.space, seed=0)
        xs = []
        for _ in range(30):
            x = s.ask(50)
            s.tell(x, problem(x))
            xs.append(x)
        asked.append(np.concatenate(xs))
        corr.append(None if getattr(s, "correlations", None) is None else s.correlations.pairs)
    if option == "bins":
        assert not np.allclose(corr[0], corr[1])
    else:
        assert not np.array_equal(asked[0], asked[1])


@pytest.mark.parametrize("name", sorted(n for n in SEARCHERS if n not in ("random_pruned", "linear_pruned")))
def test_tell_refuses_losses_that_are_not_numbers(name):
    """Every searcher's tell goes through the base check first (a CoexploreError naming `tell`,
    not a numpy ValueError from the searcher's own arithmetic)."""
    from coexplore.errors import CoexploreError
    s = make_searcher(name, make_small(0).space, seed=0)
    batch = s.ask(4)
    with pytest.raises(CoexploreError) as err:
        s.tell(batch, ["a"] * len(batch))
    assert err.value.key == "tell"


def test_history_is_the_best_so_far_as_a_step_function():
    """History keeps each improvement and the end of each flat stretch: the best at any sample
    count is read off it exactly, and a long run's history stays short."""
    space = make_small(0).space
    calls = []

    def objective(batch):
        calls.append(len(batch))
        return np.full(len(batch), 10.0 if len(calls) < 3 else 5.0)   # improves once, at batch 3
    res = run_search(make_searcher("random", space, seed=0), objective, budget=1000, batch_size=100)
    assert res.history == [(100, 10.0), (200, 10.0), (300, 5.0), (1000, 5.0)]


@pytest.mark.parametrize("name", ["rl", "ppo", "marl", "marl_noclust"])
def test_learners_stop_once_a_tiny_space_is_exhausted(name):
    """A space smaller than the budget: once every point is evaluated the learner asks nothing more
    (the search stops instead of repeating known points) and says its best is the optimum."""
    space = DiscreteSpace(np.array([3, 4]), ["a", "b"])

    def f(x):
        return 1.0 + (x[:, 0] - 2) ** 2 + (x[:, 1] - 1) ** 2
    s = make_searcher(name, space, seed=0)
    assert s.done is None
    res = run_search(s, f, budget=1000, batch_size=5)
    assert res.samples == space.size == 12 and s.done is True     # each point once, then nothing
    assert res.best_loss == 1.0 and list(res.best_x) == [2, 1]
    assert len(s.ask(5)) == 0
