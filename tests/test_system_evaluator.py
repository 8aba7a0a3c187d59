"""Evaluator: MAGMA's golden makespans, hand-checkable cases, trace consistency."""

import json
from pathlib import Path

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.system.evaluator import evaluate, trace
from coexplore.system.tables import load_table

DATA = Path(__file__).parent / "data" / "magma"


def _golden_cases():
    return json.loads((DATA / "golden_genomes.json").read_text())["cases"]


@pytest.mark.parametrize("case", _golden_cases(),
                         ids=lambda c: f"{c['batch']}-S{c['setting']}-bw{c['bw']}")
def test_golden_genomes_reproduced(case):
    t = load_table(DATA / "tables" / case["batch"] / f"S{case['setting']}" / f"{case['inst']}.csv")
    g = np.array(case["genomes"], dtype=float)
    ev = evaluate(t.latency, t.bandwidth, case["bw"], g[:, 0], g[:, 1])
    np.testing.assert_allclose(ev.makespan, case["makespans"], rtol=1e-9, atol=0)


def test_golden_cover_bandwidth_regimes():
    # the fixture must exercise both the throttled and the unthrottled regime
    bws = {c["bw"] for c in _golden_cases()}
    assert {1, 16, 256} <= bws


def _ev(lat, bw, B, core, prio, energy=None):
    return evaluate(np.array(lat, float), np.array(bw, float), B, np.array([core]),
                    np.array([prio], float), energy=None if energy is None else np.array(energy, float))


def test_one_core_runs_jobs_back_to_back_and_stretches_alone():
    # job 0 needs 2 B/cycle on a 1 B/cycle system: its 10 cycles stretch to 20; job 1 fits
    ev = _ev([[10.0], [20.0]], [[2.0], [0.5]], 1.0, [0, 0], [0.3, 0.1])
    assert ev.makespan[0] == pytest.approx(40.0)
    assert ev.busy[0, 0] == pytest.approx(40.0)


def test_two_cores_under_bandwidth_run_at_no_stall_speed():
    ev = _ev([[10, 99], [99, 30]], [[0.4, 9], [9, 0.5]], 1.0, [0, 1], [0.5, 0.5])
    assert ev.makespan[0] == pytest.approx(30.0)
    np.testing.assert_allclose(ev.busy[0], [10.0, 30.0])


def test_two_cores_over_bandwidth_share_proportionally():
    # both need 1 B/cycle on a 1 B/cycle system: half speed each until job 0 is done at 20
    # (10 no-stall cycles at rate 1/2); job 1 then has 20 no-stall cycles left at full speed
    ev = _ev([[10, 10], [30, 30]], [[1, 1], [1, 1]], 1.0, [0, 1], [0, 0])
    np.testing.assert_allclose(ev.busy[0], [20.0, 40.0])
    assert ev.makespan[0] == pytest.approx(40.0)
    # unequal needs 3 + 1 on B = 2: both at rate 1/2 -> job 0 (10) ends at 20, job 1 at 40
    ev = _ev([[10, 10], [30, 30]], [[3, 3], [1, 1]], 2.0, [0, 1], [0, 0])
    np.testing.assert_allclose(ev.busy[0], [20.0, 40.0])


def test_zero_bandwidth_jobs_are_never_slowed():
    ev = _ev([[10, 10], [10, 10]], [[0, 0], [5, 5]], 1.0, [0, 1], [0, 0])
    np.testing.assert_allclose(ev.busy[0], [10.0, 50.0])
    ev = _ev([[7, 7], [12, 12]], [[0, 0], [0, 0]], 1e-3, [0, 1], [0, 0])
    assert ev.makespan[0] == pytest.approx(12.0)


def test_priority_order_and_ties_follow_row_order():
    lat = [[10], [20], [5]]
    bw = [[1], [0], [0]]
    # job 0 alone would stretch only while it overlaps; on one core nothing overlaps
    a = _ev(lat, bw, 0.5, [0, 0, 0], [0.9, 0.1, 0.5])
    b = _ev(lat, bw, 0.5, [0, 0, 0], [0.0, 0.0, 0.0])
    assert a.makespan[0] == pytest.approx(20 + 5 + 20) == b.makespan[0]
    # on two cores the order decides the overlap: job 0 (bw 1 on B 0.5) first vs last
    lat2 = [[10, 10], [10, 10], [10, 10]]
    bw2 = [[1, 1], [1, 1], [0, 0]]
    first = _ev(lat2, bw2, 1.0, [0, 0, 1], [0.1, 0.2, 0.0])
    np.testing.assert_allclose(first.busy[0], [20.0, 10.0])


def test_energy_is_the_sum_over_assigned_cores():
    ev = _ev([[1, 1], [1, 1]], [[0, 0], [0, 0]], 1.0, [1, 0], [0, 0], energy=[[1, 2], [30, 40]])
    assert ev.energy[0] == pytest.approx(32.0)
    assert np.isnan(_ev([[1.0]], [[0.0]], 1.0, [0], [0]).energy[0])


def test_population_equals_one_by_one_and_trace_is_consistent():
    t = load_table(DATA / "tables" / "batch_mix" / "S8" / "insts0.csv")
    rng = np.random.default_rng(3)
    core = rng.integers(0, t.num_cores, (40, t.num_jobs))
    prio = rng.random((40, t.num_jobs))
    pop = evaluate(t.latency, t.bandwidth, 16, core, prio)
    one = [evaluate(t.latency, t.bandwidth, 16, core[i:i + 1], prio[i:i + 1]).makespan[0]
           for i in range(40)]
    np.testing.assert_allclose(pop.makespan, one, rtol=1e-12)
    np.testing.assert_allclose(pop.makespan, pop.busy.max(axis=1), rtol=1e-12)
    tr = trace(t.latency, t.bandwidth, 16, core[0], prio[0])
    assert tr.makespan == pytest.approx(pop.makespan[0], rel=1e-12)
    assert np.all(tr.seg_bw.sum(axis=1) <= 16 * (1 + 1e-9))
    # a job never runs faster than its no-stall latency
    lat_on_core = t.latency[np.arange(t.num_jobs), core[0]]
    assert np.all(tr.job_end - tr.job_start >= lat_on_core * (1 - 1e-9))
    # one job at a time per core
    for c in range(t.num_cores):
        js = np.flatnonzero(core[0] == c)
        s = np.sort(tr.job_start[js])
        e = np.sort(tr.job_end[js])
        assert np.all(s[1:] >= e[:-1] - 1e-6)


def test_bad_candidates_and_bandwidth_are_rejected():
    lat = np.ones((2, 2))
    with pytest.raises(CoexploreError, match="bandwidth"):
        evaluate(lat, lat, -1.0, [[0, 1]], [[0, 0]])
    with pytest.raises(CoexploreError, match=r"core ids out of range: 0..2 given \(expected 0..1\)"):
        evaluate(lat, lat, 1.0, [[0, 2]], [[0, 0]])
    with pytest.raises(CoexploreError):
        evaluate(lat, lat, 1.0, [[0, 1, 1]], [[0, 0, 0]])


def test_lower_bound_holds_for_golden_makespans_and_is_tight_by_hand():
    from coexplore.system.bounds import lower_bound
    for case in _golden_cases():
        t = load_table(DATA / "tables" / case["batch"] / f"S{case['setting']}" / f"{case['inst']}.csv")
        lb = lower_bound(t.latency, t.bandwidth, case["bw"])
        assert lb > 0 and min(case["makespans"]) >= lb * (1 - 1e-12)
    # hand case: 2 jobs, 2 cores; job 0 takes 10 on core 0, job 1 takes 4 on core 1: optimum 10
    lat = np.array([[10.0, 30.0], [8.0, 4.0]])
    need = np.array([[1.0, 1.0], [1.0, 1.0]])
    assert lower_bound(lat, need, 100.0) == pytest.approx(10.0, rel=1e-6)
    assert _ev(lat, need, 100.0, [0, 1], [0, 1]).makespan[0] == 10.0
    # bandwidth-bound: both jobs move 10 + 4 = 14 bytes at best through 0.5 bytes/cycle -> 28
    assert lower_bound(lat, need, 0.5) == pytest.approx(28.0, rel=1e-6)
    assert _ev(lat, need, 0.5, [0, 1], [0, 1]).makespan[0] >= 28.0


def test_assignment_lp_bound_on_heterogeneous_cores():
    """Two jobs, a fast and a 10x slower core: the simple bounds give 1 (total fastest work / 2
    cores); moving a share y of the work to the slow core balances 2 - y = 10 y, so no schedule
    (not even a fractional one) beats 20/11; the best real schedule takes 2."""
    from coexplore.system.bounds import lower_bound
    lat = np.array([[1.0, 10.0], [1.0, 10.0]])
    need = np.ones((2, 2))
    lb = lower_bound(lat, need, 1e9)
    assert abs(lb - 20 / 11) <= 1e-6 and lb <= 20 / 11
    assert min(_ev(lat, need, 1e9, c, [0, 1]).makespan[0] for c in ([0, 0], [0, 1], [1, 0], [1, 1])) == 2.0


def test_lower_bound_is_below_the_optimum_of_every_tiny_table():
    """Every schedule of tiny tables enumerated (each core assignment x each priority order): the
    bound is never above the optimum, and at least each simple bound (less its slack). Tables
    include jobs without traffic and jobs that need more than the whole bandwidth."""
    import itertools
    from coexplore.system.bounds import LP_SLACK, lower_bound
    rng = np.random.default_rng(1)
    tight = 0
    for _ in range(60):
        jobs, cores = int(rng.integers(1, 5)), int(rng.integers(1, 4))
        lat = rng.uniform(1, 100, (jobs, cores)) * rng.uniform(0.2, 5, cores)[None, :]
        need = rng.uniform(0, 4, (jobs, cores)) * (rng.random((jobs, 1)) > 0.2)   # some move nothing
        bw = float(rng.uniform(0.5, 3))
        assign = np.array(list(itertools.product(range(cores), repeat=jobs)))
        orders = np.array(list(itertools.permutations(range(jobs))), dtype=float)
        core = np.repeat(assign, len(orders), axis=0)
        prio = np.tile(orders, (len(assign), 1))
        best = float(evaluate(lat, need, bw, core, prio).makespan.min())
        lb = lower_bound(lat, need, bw)
        assert lb <= best, (lb, best)
        simple = max(lat.min(axis=1).max(), lat.min(axis=1).sum() / cores, (lat * need).min(axis=1).sum() / bw)
        assert lb >= simple * (1 - 2 * LP_SLACK)
        tight += best <= lb * (1 + 2 * LP_SLACK)
    assert tight >= 10          # on many tiny tables the bound is the optimum itself


def test_a_longer_job_never_lowers_the_bound_even_at_extreme_latencies():
    """The LP is solved in scaled cycles: a latency of 1e15-1e18 cycles (beyond HiGHS's coefficient
    range unscaled) must not make it fall back to the weaker simple bounds."""
    from coexplore.system.bounds import lower_bound
    t = load_table(DATA / "tables" / "batch_mix" / "S3" / "insts0.csv")
    base = lower_bound(t.latency, t.bandwidth, 8.0)
    for value in (1e9, 1e12, 1e15, 1e18):
        lat = t.latency.copy()
        lat[5, 1] = max(lat[5, 1], value)
        assert lower_bound(lat, t.bandwidth, 8.0) >= base * (1 - 1e-12), value
