"""Tests written by a mutation review of the searchers and the search driver (2026-12-03):
properties, no printed values, each killing mutants the rest of the suite let through."""

from __future__ import annotations

import math

import numpy as np
import pytest

from coexplore.mapspace.space import MapSpace
from coexplore.model.evaluate import level_costs
from coexplore.model.inputs import Context
from coexplore.search.base import run_search, with_tie
from coexplore.search.pruned import RandomPruned, RandomPrunedConfig
from coexplore.search.registry import make_searcher
from coexplore.search.space import DiscreteSpace
from coexplore.search.synthetic import make_small
from coexplore.spec.architecture import load_architecture
from coexplore.spec.constraints import load_constraints
from coexplore.spec.ert import load_ert
from coexplore.spec.problem import DEFAULT_CNN_SHAPE, parse_problem

from conftest import CORPUS
from test_mapspace_enumerate import _small     # (a corpus architecture with a tiny layer)


@pytest.fixture(scope="module")
def small_ms():
    return _small("simple_weight_stationary", C=4, M=2, P=4)[1]


def _distinct_orders(ms, x):
    """Distinct pruned loop orders of x's index factorisation: per level with a free order, k! for its
    k non-unit loops (Timeloop prunes orders that differ only in unit loops)."""
    t = ms.decode(x[None, :]).temporal[0]
    return math.prod(math.factorial(sum(1 for d in free if t[li, d] > 1)) for li, free in enumerate(ms.perm_free))


def _visits(ms, X):
    """Consecutive runs of candidates sharing their index factorisation (every non-order column)."""
    order_cols = {pi for pi, _, _ in ms.perm_index}
    rest = [c for c in range(ms.n_params) if c not in order_cols]
    runs: list[list[np.ndarray]] = []
    for x in X:
        if runs and np.array_equal(runs[-1][0][rest], x[rest]):
            runs[-1].append(x)
        else:
            runs.append([x])
    return runs


def test_random_pruned_visits_each_index_factorisation_with_every_distinct_pruned_order_once(small_ms):
    """random-pruned with max_permutations_per_if_visit above the count: each IF visit proposes every
    distinct pruned loop order (prod of k! over levels, k its non-unit loops) exactly once, then moves on
    (kills: distinct-order count off by one; repeats not remembered)."""
    ms = small_ms
    s = RandomPruned(ms, RandomPrunedConfig(max_permutations_per_if_visit=1000), seed=0)
    X = np.concatenate([s.ask(50) for _ in range(8)])
    runs = _visits(ms, X)[:-1]                     # the last visit may be cut by the asks
    assert len(runs) > 5
    assert any(_distinct_orders(ms, r[0]) >= 2 for r in runs)
    for r in runs:
        want = _distinct_orders(ms, r[0])
        assert len(r) % want == 0                  # (the same IF drawn twice in a row: whole visits)
        for k in range(0, len(r), want):
            canon = ms.canonical(np.array(r[k:k + want]))
            assert len({row.tobytes() for row in canon}) == want


def test_random_pruned_is_reproducible_from_its_seed(small_ms):
    a = RandomPruned(small_ms, seed=7).ask(200)
    b = RandomPruned(small_ms, seed=7).ask(200)
    c = RandomPruned(small_ms, seed=8).ask(200)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_an_equal_loss_does_not_replace_the_best():
    """Timeloop's mapper keeps a new best only when it is strictly better: among equal losses the first
    evaluated stays (the mapping written does not depend on the batch layout)."""
    space = DiscreteSpace(np.array([4, 4]), ["a", "b"])
    seen = []

    def f(x):
        seen.append(np.array(x))
        return np.ones(len(x))
    res = run_search(make_searcher("random", space, seed=0), f, budget=16, batch_size=4)
    assert list(res.best_x) == list(seen[0][0])


def test_ties_go_to_the_lowest_secondary_key():
    """latency's [delay, energy]: among equal losses the lowest tie key is the best, in any batch."""
    space = DiscreteSpace(np.array([8, 8]), ["a", "b"])

    def f(x):
        tie = 10.0 + x[:, 0] * 8 + x[:, 1]
        return with_tie(np.full(len(x), 3.0), tie)
    res = run_search(make_searcher("exhaustive", space, seed=0), f, budget=64, batch_size=7)
    assert list(res.best_x) == [0, 0] and res.best_loss == 3.0


def test_marl_warm_up_is_at_most_its_share_of_the_budget():
    """warm-up samples count in the budget and are capped at warmup_fraction of it: a 200-sample run
    learns (its learner exists), it is not 200 uniform samples."""
    problem = make_small(0)
    s = make_searcher("marl", problem.space, seed=0)
    res = run_search(s, problem, budget=200, batch_size=20)
    assert res.samples == 200
    assert s.learner is not None


def test_bonferroni_cut_is_the_family_wise_z():
    """cut_z: z at which a link is significant at family-wise rate alpha over 4 kinds of evidence per
    pair (Bonferroni): norm.isf(alpha / (4 * C(d, 2))); the docstring's 3.3 for 8 and 4.1 for 36."""
    from scipy.stats import norm
    from coexplore.search.marl import cut_z
    for d, approx in ((8, 3.3), (36, 4.1)):
        assert cut_z(d, 0.05) == pytest.approx(norm.isf(0.05 / (4 * math.comb(d, 2))), rel=1e-9)
        assert cut_z(d, 0.05) == pytest.approx(approx, abs=0.05)


def test_clustering_joins_exactly_the_significant_links():
    """The dendrogram is cut at 1 - z/sqrt(n): a pair whose |rho| is above z/sqrt(n) joins, one below stays
    apart."""
    from coexplore.search.marl import Correlations, cluster_parameters, cut_z
    n, d = 1000, 4
    z = cut_z(d)
    se = z / math.sqrt(n)
    pairs = np.eye(d)
    pairs[0, 1] = pairs[1, 0] = 2 * se          # significant
    pairs[2, 3] = pairs[3, 2] = 0.5 * se        # not
    corr = Correlations(objective=np.array([0.4, 0.3, 0.2, 0.1]), pairs=pairs, n_samples=n)
    clusters = sorted(sorted(c) for c in cluster_parameters(corr))
    assert clusters == [[0, 1], [2], [3]]


@pytest.mark.parametrize("how", ["rank", "zscore", "shared"])
def test_advantages_are_centred_per_agent_and_scaled(how):
    from coexplore.search.rl import _normalise
    rng = np.random.default_rng(0)
    adv = rng.normal(size=(50, 3)) * np.array([1.0, 10.0, 100.0]) + np.array([5.0, -3.0, 50.0])
    out = _normalise(adv.copy(), how)
    assert np.allclose(out.mean(axis=0), 0.0, atol=1e-9)
    if how == "shared":
        assert np.sqrt((out * out).mean()) == pytest.approx(1.0)
    else:
        assert np.allclose(out.std(axis=0), 1.0)
    # order within each agent is kept
    for j in range(3):
        assert np.array_equal(np.argsort(out[:, j], kind="stable"), np.argsort(adv[:, j], kind="stable"))


def test_exhaustive_map_of_a_small_layer_is_the_brute_force_optimum_and_says_so():
    """map_layer with exhaustive over a small layer: every distinct mapping evaluated once, the best is
    the brute-force minimum over the canonical enumeration, and the result says it is exhausted."""
    from coexplore.mapspace.enumerate import canonical_points, count_canonical
    from coexplore.search.layer import make_objective, map_layer
    ctx, ms = _small("simple_weight_stationary", C=4, M=2, P=2)
    size = count_canonical(ms)
    f = make_objective(ctx, ms, "edp")
    brute = min(float(np.min(f(X))) for X in canonical_points(ms))
    res = map_layer(ctx, ms.constraints, "exhaustive", budget=10 * size, seed=0)
    assert res.samples == size and res.exhausted is True
    assert res.history[-1][1] == brute
    s = make_searcher("exhaustive", ms, seed=0)
    run_search(s, f, budget=10 * size, batch_size=333)
    assert s.done is True and s.samples == size


def test_ga_tournament_picks_the_fitter_parents():
    """A tournament of 100 draws from a population of 30 picks one of its best few: with no crossover,
    every child is a small mutation of one of the 5 best (kills: tournament picks the worst)."""
    from coexplore.search.ga import GAConfig, GeneticAlgorithm
    from coexplore.search.synthetic import make_synthetic
    problem = make_synthetic(n_groups=5, seed=3)
    space = problem.space
    s = GeneticAlgorithm(space, GAConfig(population=30, tournament=100, crossover_rate=0.0,
                                         mutation_rate=1e-9), seed=0)
    first = s.ask(30)
    losses = problem(first)
    s.tell(first, losses)
    top = first[np.argsort(losses, kind="stable")[:5]]       # a tournament of 100 draws from 30 picks among these
    children = s.ask(30)
    dist = np.array([min(int((c != t).sum()) for t in top) for c in children])
    assert (dist <= 3).all(), dist


def test_annealing_accepts_improvements_and_rejects_worse_moves_when_cold():
    """Metropolis: a proposal with a lower loss always replaces its chain's point; near T = 0 a worse one
    never does (kills: acceptance test inverted)."""
    from coexplore.search.annealing import SAConfig, SimulatedAnnealing
    space = DiscreteSpace(np.array([10, 10, 10]), ["a", "b", "c"])
    s = SimulatedAnnealing(space, SAConfig(chains=4, t_start=1e-9, t_end=1e-10, extra_change=0.0,
                                           restart_every=0), seed=0)
    s.budget = 1000
    x0 = s.ask(4)
    s.tell(x0, np.full(4, 100.0))
    start = s.cur_x.copy()
    worse = s.ask(4)
    s.tell(worse, np.full(4, 1000.0))
    assert np.array_equal(s.cur_x, start)             # cold: every worse move rejected
    better = s.ask(4)
    s.tell(better, np.full(4, 1.0))
    assert np.array_equal(np.sort(space.keys(s.cur_x)), np.sort(space.keys(better)))


def test_annealing_cools_geometrically_over_the_budget():
    from coexplore.search.annealing import SAConfig, SimulatedAnnealing
    space = DiscreteSpace(np.array([10, 10]), ["a", "b"])
    cfg = SAConfig(t_start=0.05, t_end=0.002)
    s = SimulatedAnnealing(space, cfg, seed=0)
    s.budget = 1000
    temps = []
    for n in (0, 500, 1000):
        s.samples = n
        temps.append(s._temperature() / s._scale)
    assert temps == pytest.approx([0.05, math.sqrt(0.05 * 0.002), 0.002])


@pytest.mark.parametrize("ordinal", [False, True])
def test_mutate_changes_every_masked_entry(ordinal):
    """mutate: every entry in the mask gets a different value, in range (kills: the uniform redraw
    allowed to keep the value)."""
    from coexplore.search.mutation import mutate
    cards = np.array([2, 3, 5, 9, 1])
    space = DiscreteSpace(cards, list("abcde"), np.full(5, ordinal))
    rng = np.random.default_rng(0)
    x = space.sample(rng, 2000)
    mask = np.ones(x.shape, bool)
    out = mutate(space, rng, x, mask, local=0.5)
    assert ((out >= 0) & (out < cards)).all()
    assert (out[:, :4] != x[:, :4]).all() and (out[:, 4] == 0).all()


def test_random_search_does_not_repeat_points_asked_but_not_yet_told():
    """Several asks may come before their tells: random search with dedupe never asks a pending point
    again while new ones are left (kills: asked points not marked pending)."""
    space = DiscreteSpace(np.array([3, 4]), ["a", "b"])
    s = make_searcher("random", space, seed=0)
    a, b = s.ask(6), s.ask(6)
    keys = list(space.keys(a)) + list(space.keys(b))
    assert len(set(keys)) == 12


def test_a_log_loss_learner_refuses_a_zero_loss():
    """log(0) is -inf: a learner on log(loss) refuses a loss of 0 as it refuses negative ones."""
    from coexplore.errors import CoexploreError
    space = DiscreteSpace(np.array([3, 4]), ["a", "b"])
    s = make_searcher("ga", space, seed=0)
    batch = s.ask(4)
    with pytest.raises(CoexploreError) as err:
        s.tell(batch, np.array([1.0, 0.0, 2.0, 3.0]))
    assert err.value.key == "log_loss" and s.samples == 0


def test_a_custom_objective_never_makes_an_invalid_mapping_the_best():
    """A user's objective that gives invalid mappings (metrics inf) the lowest loss (1 / energy = 0): the
    best map_layer returns is still a valid mapping (the model's verdict), since an invalid mapping stays
    invalid whatever the function says."""
    from coexplore.model.inputs import load_context
    from coexplore.search.layer import map_layer
    ctx = load_context(CORPUS / "arches" / "eyeriss_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml",
                       CORPUS / "arches" / "eyeriss_like" / "ERT.yaml")
    cons = load_constraints(ctx.arch)
    ms = MapSpace(ctx.arch, ctx.problem, cons)
    X = ms.sample(np.random.default_rng(0), 200)
    assert not ctx.evaluate(ms.decode(X)).valid.all()              # some random mappings are invalid
    res = map_layer(ctx, cons, "random", 200, seed=0, objective=lambda m: 1.0 / m["energy"])
    assert ctx.evaluate(ms.decode(np.array([res.x]))).valid[0]


def test_linear_pruned_probes_every_bypass_choice_before_skipping_a_factorisation():
    """linear-pruned skips a factorisation only when every bypass choice fails under its first loop order:
    with an objective under which only the all-bypass choice fails, no factorisation is skipped and the
    walk covers every distinct mapping (kills: the probe tries one bypass choice only)."""
    from coexplore.mapspace.enumerate import count_canonical
    from coexplore.search.pruned import LinearPruned
    _, ms = _small("simple_weight_stationary", C=2, M=2)
    keep_cols = [pi for pi, _, _ in ms.keep_index]
    assert keep_cols

    def f(X):
        return np.where((X[:, keep_cols] == 0).all(axis=1), np.inf, 1.0 + X.sum(axis=1))
    s = LinearPruned(ms, seed=0)
    res = run_search(s, f, budget=10 ** 6, batch_size=50)
    assert res.samples == count_canonical(ms) and s.done is True


def _strided(stride: int):
    d = CORPUS / "arches" / "simple_weight_stationary"
    a = load_architecture(d / "processed.yaml")
    inst = {k: 1 for k in "CMRSNPQ"}
    inst.update(C=2, M=2, R=3, P=4, Wstride=stride)
    prob = parse_problem({"problem": {"shape": DEFAULT_CNN_SHAPE, "version": 0.4, "instance": inst}}, name="small")
    ert = load_ert(d / "ERT.yaml")
    return Context(a, prob, ert, level_costs(a, ert)), load_constraints(a, d / "constraints.yaml")


def test_the_cache_tells_apart_layers_that_differ_only_in_stride_and_a_hit_is_laid_out_as_a_fresh_run(tmp_path):
    """Two layers of the same dimensions and strides 1 / 2 have different input tiles, so different
    results: the second is no cache hit. A hit gives the same mapping entries (key order too) as the run
    that stored it."""
    from coexplore.model.cache import ResultCache
    from coexplore.search.layer import map_layer
    (c1, k1), (c2, k2) = _strided(1), _strided(2)
    with ResultCache(tmp_path / "c.sqlite") as cache:
        a = map_layer(c1, k1, "random", 60, seed=0, cache=cache)
        b = map_layer(c2, k2, "random", 60, seed=0, cache=cache)
        again = map_layer(c1, k1, "random", 60, seed=0, cache=cache)
    assert not a.cached and not b.cached and again.cached
    assert [list(e.items()) for e in again.mapping] == [list(e.items()) for e in a.mapping]
    assert list(again.best) == list(a.best) and again.best == a.best


def test_a_searcher_run_again_with_a_larger_budget_plans_for_it():
    """run_search sets the searcher's planned budget (SA's cooling, MARL's warm-up) to the larger total."""
    problem = make_small(0)
    s = make_searcher("sa", problem.space, seed=0)
    run_search(s, problem, budget=100, batch_size=50)
    assert s.budget == 100
    run_search(s, problem, budget=300, batch_size=50)
    assert s.budget == 300 and s.samples == 300


def test_a_stopped_search_keeps_the_first_of_equal_losses_as_an_uninterrupted_one_does():
    """The result of a search stopped after a batch (Ctrl-C / SIGTERM) names the same best as the
    searcher: among equal losses the first evaluated."""
    from coexplore.search.base import SearchInterrupted
    from coexplore.stops import request_stop
    space = DiscreteSpace(np.array([4, 4]), ["a", "b"])
    seen = []

    def f(x):
        seen.append(np.array(x))
        if len(seen) == 2:
            request_stop()
        return np.ones(len(x))
    s = make_searcher("random", space, seed=0)
    with pytest.raises(SearchInterrupted) as stop:
        run_search(s, f, budget=16, batch_size=4)
    res = stop.value.result
    assert res.interrupted and res.samples == 8
    assert list(res.best_x) == list(seen[0][0]) == list(s.best_x)


def test_exhaustive_refuses_a_space_one_point_above_max_size():
    from coexplore.errors import CoexploreError
    from coexplore.search.exhaustive import ExhaustiveConfig, ExhaustiveSearch
    space = DiscreteSpace(np.array([3, 4]), ["a", "b"])
    assert len(ExhaustiveSearch(space, ExhaustiveConfig(max_size=12)).ask(12)) == 12
    with pytest.raises(CoexploreError):
        ExhaustiveSearch(space, ExhaustiveConfig(max_size=11)).ask(1)


def test_reaching_the_target_loss_ends_the_search():
    """target: a loss no candidate can beat: a batch that reaches it (equal counts) ends the search."""
    space = DiscreteSpace(np.array([8, 8]), ["a", "b"])
    res = run_search(make_searcher("random", space, seed=0), lambda x: np.ones(len(x)), budget=64,
                     batch_size=4, target=1.0)
    assert res.samples == 4 and res.best_loss == 1.0


def test_an_unseeded_map_is_never_served_from_the_cache(tmp_path):
    from coexplore.model.cache import ResultCache
    from coexplore.search.layer import map_layer
    c1, k1 = _strided(1)
    with ResultCache(tmp_path / "c.sqlite") as cache:
        a = map_layer(c1, k1, "random", 40, seed=None, cache=cache)
        b = map_layer(c1, k1, "random", 40, seed=None, cache=cache)
    assert not a.cached and not b.cached
