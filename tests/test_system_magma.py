"""MAGMA's operators (invariants), the searchers behind ask/tell, determinism, quality."""

import json
from pathlib import Path

import numpy as np
import pytest

from coexplore.search.base import run_search
from coexplore.search.nevergrad_adapter import NevergradSearcher
from coexplore.system.encoding import MakespanObjective, ScheduleSpace, space_of
from coexplore.system.magma import (MagmaConfig, MagmaSearcher, crossover_accel, crossover_gen,
                                    crossover_rg, mutate, neighbour, parent_weights)
from coexplore.system.schedule import SEARCHERS, search_schedule
from coexplore.system.tables import load_table

DATA = Path(__file__).parent / "data" / "magma"
J, N = 20, 4


def _pair(seed=0):
    sp = ScheduleSpace(J, N)
    rng = np.random.default_rng(seed)
    return sp.random(rng, 1)[0], sp.random(rng, 1)[0]


@pytest.mark.parametrize("row", [0, 1])
@pytest.mark.parametrize("point", [0, 3, 9, 10, 15, 19])
def test_crossover_gen_swaps_one_segment_of_one_row(row, point):
    dad, mom = _pair(point)
    a, b = crossover_gen(dad, mom, row, point, J)
    seg = np.zeros(2 * J, bool)
    lo = row * J
    if point < J // 2:
        seg[lo:lo + point] = True
    else:
        seg[lo + point:lo + J] = True
    np.testing.assert_array_equal(a, np.where(seg, mom, dad))
    np.testing.assert_array_equal(b, np.where(seg, dad, mom))
    # the original code's view quirk: second child is an unchanged copy of mom
    a2, b2 = crossover_gen(dad, mom, row, point, J, original_quirks=True)
    np.testing.assert_array_equal(a2, a)
    np.testing.assert_array_equal(b2, mom)


@pytest.mark.parametrize("point", [0, 1, 7, 19])
def test_crossover_rg_keeps_jobs_whole(point):
    dad, mom = _pair(10 + point)
    a, b = crossover_rg(dad, mom, point, J)
    for child, first, second in ((a, mom, dad), (b, dad, mom)):
        for j in range(J):
            src = first if j < point else second
            assert child[j] == src[j] and child[J + j] == src[J + j]
    qa, qb = crossover_rg(dad, mom, point, J, original_quirks=True)
    np.testing.assert_array_equal(qa, qb)
    np.testing.assert_array_equal(qa, a)


@pytest.mark.parametrize("accel", range(N))
def test_crossover_accel_transplants_one_core_queue(accel):
    dad, mom = _pair(20 + accel)
    rng = np.random.default_rng(accel)
    child = crossover_accel(dad, mom, accel, J, N, rng)
    on_m, on_d = mom[:J] == accel, dad[:J] == accel
    # the child's queue on `accel` is exactly mom's (cores and priorities)
    np.testing.assert_array_equal(child[:J] == accel, on_m)
    np.testing.assert_array_equal(child[J:][on_m & ~on_d], mom[J:][on_m & ~on_d])
    # jobs on `accel` in both parents keep dad's priority; the rest of dad is untouched
    np.testing.assert_array_equal(child[J:][on_m & on_d], dad[J:][on_m & on_d])
    keep = ~on_m & ~on_d
    np.testing.assert_array_equal(child[:J][keep], dad[:J][keep])
    np.testing.assert_array_equal(child[J:][keep | (on_d & ~on_m)], dad[J:][keep | (on_d & ~on_m)])
    assert np.all((child[:J] >= 0) & (child[:J] < N))


def test_mutation_rates_and_ranges():
    rng = np.random.default_rng(0)
    sp = ScheduleSpace(200, 7)
    x = sp.random(rng, 50)
    same = mutate(x.copy(), 200, 7, 0.0, rng)
    np.testing.assert_array_equal(same, x)
    y = mutate(x.copy(), 200, 7, 0.05, rng)
    changed = np.mean(y[:, 200:] != x[:, 200:])
    assert 0.035 < changed < 0.065
    assert set(np.unique(y[:, :200])) <= set(range(7))
    assert np.all((y[:, 200:] >= 0) & (y[:, 200:] < 1))


def test_parent_weights():
    w = parent_weights(np.array([100.0, 150.0, 120.0, np.inf]))
    assert w.sum() == pytest.approx(1.0)
    assert w[0] > w[2] > w[1] > 0 and w[3] == 0
    np.testing.assert_allclose(parent_weights(np.full(3, np.inf)), 1 / 3)


def _table(name="batch_lang/S3"):
    return load_table(DATA / "tables" / name / "insts0.csv")


def test_magma_is_deterministic_under_a_seed_and_counts_samples():
    t = _table()
    obj = MakespanObjective(t, 1.0)
    runs = [run_search(MagmaSearcher(space_of(t), seed=s), obj, 700, batch_size=64)
            for s in (5, 5, 6)]
    assert runs[0].samples == 700
    np.testing.assert_array_equal(runs[0].best_x, runs[1].best_x)
    assert runs[0].best_loss == runs[1].best_loss
    assert not np.array_equal(runs[0].best_x, runs[2].best_x)
    # every candidate asked is a valid schedule
    s = MagmaSearcher(space_of(t), seed=1)
    for _ in range(4):
        x = s.ask(100)
        s.tell(x, obj(x))
        core = x[:, :t.num_jobs]
        assert np.all(core == np.floor(core)) and core.min() >= 0 and core.max() < t.num_cores
        assert np.all((x[:, t.num_jobs:] >= 0) & (x[:, t.num_jobs:] < 1))


def test_original_quirks_mode_re_asks_elites():
    t = _table()
    obj = MakespanObjective(t, 1.0)
    s = MagmaSearcher(space_of(t), MagmaConfig.original(), seed=0)
    gen1 = s.ask(100)
    s.tell(gen1, obj(gen1))
    gen2 = s.ask(105)   # 5 elites + 100 children, as the original evaluates per generation
    best = gen1[np.argsort(obj(gen1), kind="stable")[:5]]
    np.testing.assert_array_equal(gen2[:5], best)


@pytest.mark.parametrize("name", SEARCHERS)
def test_every_searcher_runs_and_is_deterministic(name):
    t = _table("batch_recom/S3")
    a = search_schedule(t, 16, name, budget=120, seed=3)
    b = search_schedule(t, 16, name, budget=120, seed=3)
    assert a.makespan == b.makespan
    np.testing.assert_array_equal(a.core, b.core)
    assert 1 <= a.samples <= 120
    ev = MakespanObjective(t, 16)(np.concatenate([a.core, a.priority])[None])
    assert ev[0] == pytest.approx(a.makespan, rel=1e-12)


def test_magma_beats_random_search_and_the_original_random_search():
    golden = {(c["batch"], c["setting"], c["bw"]): c
              for c in json.loads((DATA / "golden_eval.json").read_text())["cases"]}
    for batch, setting, bw in (("batch_lang", 3, 1), ("batch_mix", 8, 1), ("batch_recom", 6, 16)):
        t = _table(f"{batch}/S{setting}")
        m = search_schedule(t, bw, "magma", 10_000, seed=0).makespan
        r = search_schedule(t, bw, "random", 10_000, seed=0).makespan
        assert m < r
        assert m < golden[(batch, setting, bw)]["random_search_10k_best"]


@pytest.mark.slow
def test_magma_matches_or_beats_the_original_ga_on_most_fixture_cases():
    cases = json.loads((DATA / "golden_eval.json").read_text())["cases"]
    ok = 0
    for c in cases:
        t = _table(f"{c['batch']}/S{c['setting']}")
        ms = [search_schedule(t, c["bw"], "magma", 10_000, seed=s).makespan for s in range(3)]
        ok += np.median(ms) <= c["magma_ga_100x100_best"] * (1 + 1e-12)
    assert ok >= 0.8 * len(cases)


@pytest.mark.parametrize("move", [0, 1, 2])
def test_neighbour_moves_change_one_thing(move):
    sp = ScheduleSpace(J, N)
    rng = np.random.default_rng(move)
    for x in sp.random(rng, 20):
        y = neighbour(x, J, N, move, rng)
        dc, dp = np.flatnonzero(y[:J] != x[:J]), np.flatnonzero(y[J:] != x[J:])
        assert np.all((y[:J] >= 0) & (y[:J] < N))
        np.testing.assert_array_equal(np.sort(y[J:]), np.sort(x[J:]))   # priorities permuted
        if move == 0 and len(dp):      # two jobs of one core, adjacent in its order, swap
            assert len(dp) == 2 and len(dc) == 0 and x[dp[0]] == x[dp[1]]
            same = np.flatnonzero(x[:J] == x[dp[0]])
            order = same[np.argsort(x[J:][same])]
            pos = sorted(np.flatnonzero(np.isin(order, dp)))
            assert pos[1] - pos[0] == 1
        elif move == 1 or len(dc) == 1:
            assert len(dc) == 1 and len(dp) == 0
        else:
            assert len(dc) == 2 and len(dp) == 0 and y[dc[0]] == x[dc[1]] and y[dc[1]] == x[dc[0]]


def test_default_magma_never_asks_a_child_twice_and_keeps_islands_apart():
    t = _table("batch_mix/S8")
    obj = MakespanObjective(t, 16.0)
    s = MagmaSearcher(space_of(t), seed=2, budget=3000)
    seen, gens = set(), []
    while s.samples < 3000:
        x = s.ask(100)
        s.tell(x, obj(x))
        gens.append(x)
        if len(gens) > 1:              # children (generation 0 is random + warm start)
            rows = {r.tobytes() for r in x}
            assert len(rows) == 100 and not rows & seen
            seen |= rows
    assert s.samples == 3000
    cfg = MagmaConfig()
    assert cfg.islands == 2 and 0 < cfg.merge_at < 1
    assert len(np.unique(s._pool_isl)) == 1   # merged after merge_at x budget
    # before the merge each island breeds half the children from its own population only
    s2 = MagmaSearcher(space_of(t), seed=2, budget=3000)
    for g in range(3):
        x = s2.ask(100)
        np.testing.assert_array_equal(s2._last_isl, np.repeat([0, 1], 50))
        s2.tell(x, obj(x))
        if g:
            assert len(s2._pool_isl) == 100 + 2 * 2   # 2 elites per island of 50 + children
            assert set(np.unique(s2._pool_isl)) == {0, 1}


def test_islands_one_and_no_dedup_is_the_single_population_ga():
    t = _table()
    obj = MakespanObjective(t, 1.0)
    a = run_search(MagmaSearcher(space_of(t), MagmaConfig(islands=1, dedup=False), seed=4), obj, 600)
    s = MagmaSearcher(space_of(t), MagmaConfig(islands=1, dedup=False), seed=4)
    b = run_search(s, obj, 600)
    assert a.history == b.history and np.all(s._pool_isl == 0)


def test_nevergrad_adapter_minimises_a_box_function():
    lo, hi = np.array([-5.0, 0.0, 10.0]), np.array([5.0, 1.0, 20.0])
    target = np.array([1.0, 0.25, 12.0])
    f = lambda x: np.sum(((x - target) / (hi - lo)) ** 2, axis=1)  # noqa: E731
    s = NevergradSearcher("oneplusone", lo, hi, budget=300, seed=0)
    res = run_search(s, f, 300, batch_size=1)
    assert res.samples == 300
    assert res.best_loss < 1e-3
    first = f(NevergradSearcher("oneplusone", lo, hi, budget=300, seed=0).ask(1))[0]
    assert res.best_loss < first
    x = NevergradSearcher("cma", lo, hi, budget=50, seed=1).ask(20)
    assert np.all((x >= lo) & (x <= hi))
    s2 = NevergradSearcher("pso", lo, hi, budget=40, seed=2)
    xb = s2.ask(4)
    s2.tell(xb, np.array([np.inf, 1.0, 2.0, np.inf]))   # invalid candidates do not crash
    assert s2.best_loss == 1.0


@pytest.mark.parametrize("jobs", [3, 40])
def test_cma_first_asks_spread_over_the_box(jobs):
    """CMA-ES starts in the box's middle with a step of a quarter of each range (nevergrad's own
    was 0.08, and 0.04 from 18 coordinates on): the core genes of a schedule on 4 cores reach
    every core, not only the middle ones."""
    lo = np.zeros(2 * jobs)
    hi = np.concatenate([np.full(jobs, 4.0), np.ones(jobs)])
    x = NevergradSearcher("cma", lo, hi, budget=1000, seed=0, num_workers=50).ask(50)
    spread = (x / hi).std(axis=0).mean()
    assert 0.18 < spread < 0.32
    assert set(np.floor(x[:, :jobs]).astype(int).ravel()) == {0, 1, 2, 3}


def test_cma_schedules_beat_random_search_on_three_or_more_cores():
    """On 3 or more cores CMA-ES used to keep every job on one core (its step too small to leave the
    middle core's cell) and ended behind random search (2.0x its makespan on batch_conv/S3)."""
    for name in ("batch_conv/S3", "batch_lang/S3", "batch_recom/S6"):     # (4, 4, 16 cores)
        t = _table(name)
        assert t.num_cores >= 3
        c = search_schedule(t, 16, "cma", 3_000, seed=0)
        r = search_schedule(t, 16, "random", 3_000, seed=0)
        assert c.makespan < r.makespan, name
        assert len(set(c.core.tolist())) == t.num_cores


def test_warm_start_and_annealing():
    from coexplore.system.schedule import heuristic_candidates, make_searcher

    t = _table("batch_conv/S3")
    s = make_searcher("magma", t, budget=1000, seed=0)
    first = s.ask(100)
    np.testing.assert_array_equal(first[:12], heuristic_candidates(t))
    cfg = MagmaConfig()
    assert s._rate(cfg.p_mutation_start, cfg.p_mutation) == pytest.approx(0.05)
    s.samples = 1000
    assert s._rate(cfg.p_mutation_start, cfg.p_mutation) == pytest.approx(0.01)
    s.samples = 500
    assert s._rate(0.05, 0.01) == pytest.approx(np.sqrt(0.05 * 0.01))
    # the best of MAGMA's first generation is at least as good as the best heuristic
    obj = MakespanObjective(t, 1.0)
    assert obj(first).min() <= obj(first[:12]).min()
    assert make_searcher("magma-original", t, 100).initial is None


@pytest.mark.parametrize("option, value, says", [("pop_size", 10_000_000, "too large"),
                                                 ("p_mutation", 1.5, "[0, 1]"),
                                                 ("p_mutation_min", 0.5, "would do nothing")])
def test_magma_config_out_of_range_is_refused(option, value, says):
    from coexplore.errors import CoexploreError
    from coexplore.system.magma import MagmaConfig
    from coexplore.system.schedule import check_magma_config
    with pytest.raises(CoexploreError, match=option) as e:
        check_magma_config(MagmaConfig(**{option: value}))
    assert says in str(e.value)


def test_magma_options_that_would_do_nothing_are_refused():
    from coexplore.errors import CoexploreError
    from coexplore.system.magma import MagmaConfig
    from coexplore.system.schedule import check_magma_config
    for cfg, key in ((MagmaConfig(original_quirks=True, islands=3), "islands"),
                     (MagmaConfig(original_quirks=True, merge_at=0.5), "merge_at"),
                     (MagmaConfig(islands=1, merge_at=0.5), "merge_at")):
        with pytest.raises(CoexploreError, match=key):
            check_magma_config(cfg)
    check_magma_config(MagmaConfig.original())          # its islands / dedup ask for nothing
    check_magma_config(MagmaConfig(original_quirks=True))
