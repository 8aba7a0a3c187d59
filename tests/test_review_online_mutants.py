"""Tests written by a mutation review of coexplore.online (2026-12-03): each kills mutants the rest
of the suite let through (hand-derived values and properties)."""

import pytest

from coexplore.online.models import served_system
from coexplore.online.schedulers import MagmaPlanned, ShortestRemaining, StaticAssignment
from coexplore.online.simulator import Simulation, simulate
from coexplore.online.schedulers import FCFS
from test_online import stream, table     # (the online tests' table and stream builders)


def test_sjf_ranks_by_the_work_left_not_the_whole_dnn():
    # kills C5. One core; DNN t = two layers of 30, DNN u = one layer of 50. r0 (t) starts at 0;
    # r1 (u) arrives at 1. At 30 r0 has 30 left < r1's 50: r0's last layer runs 30-60, r1 60-110.
    ss = served_system(table([("t", "l0", [30], [0], [1]), ("t", "l1", [30], [0], [1]),
                              ("u", "l", [50], [0], [1])], cores=("a",)), 1.0)
    r = simulate(ss, stream([0.0, 1.0], [1e9, 1e9], [0, 1]), ShortestRemaining())
    assert r.finish.tolist() == [60.0, 110.0]


def test_static_placement_accumulates_rate_weighted_load():
    # kills C10. Two equal cores; A (rate 9) one layer of 100, B (rate 1) two layers of 100. Expected
    # loads: A 90 -> core a; B.l0: a 90+10 vs b 0+10 -> b (load 10); B.l1: a 100 vs b 20 -> b.
    ss = served_system(table([("A", "l", [100, 100], [0, 0], [1, 1]), ("B", "l0", [100, 100], [0, 0], [1, 1]),
                              ("B", "l1", [100, 100], [0, 0], [1, 1])]), 1.0)
    sched = StaticAssignment([9.0, 1.0])
    sched.reset(Simulation(ss, stream([0.0], [1e9], [0])), 0)
    assert sched.owner == [[0], [1, 1]]


def test_bandwidth_utilisation_is_a_fraction_of_the_system_bandwidth():
    # kills O14. One layer of 100 cycles needing 2 B/cycle on a 4 B/cycle system: 200 bytes in 100
    # cycles = half of the bandwidth.
    ss = served_system(table([("p", "l", [100], [2], [1])], cores=("a",)), 4.0)
    r = simulate(ss, stream([0.0], [1e9], [0]), FCFS())
    assert r.summary()["bandwidth_utilization"] == pytest.approx(0.5)


def test_utilisation_is_averaged_over_every_core():
    # kills O13 (equivalent on the 2-core fixtures). Three cores, one request of 100 cycles: 1/3.
    ss = served_system(table([("p", "l", [100, 100, 100], [0, 0, 0], [1, 1, 1])], cores=("a", "b", "c")), 1.0)
    r = simulate(ss, stream([0.0], [1e9], [0]), FCFS())
    assert r.summary()["utilization"] == pytest.approx(1 / 3)


def test_magma_plan_batch_follows_the_request_rates(monkeypatch):
    # kills C12: "as many of each DNN as its share of the request rates asks": rates 5:1, batch 6 -> 5 + 1
    import coexplore.system.schedule as schedule
    seen = {}
    real = schedule.search_schedule

    def spy(table, *a, **k):
        seen["dnns"] = [j.dnn for j in table.jobs]
        return real(table, *a, **k)

    monkeypatch.setattr(schedule, "search_schedule", spy)
    ss = served_system(table([("A", "l", [100, 150], [1, 1], [1, 1]), ("B", "l", [100, 300], [1, 1], [1, 1])]), 10.0)
    MagmaPlanned([5.0, 1.0], budget=50, batch=6).reset(Simulation(ss, stream([0.0], [1e9], [0])), 0)
    assert seen["dnns"].count("A") == 5 and seen["dnns"].count("B") == 1


def test_magma_plan_seed_reaches_the_planner(monkeypatch):
    # kills C14: the planner's seed must be the one given to MagmaPlanned
    import coexplore.system.schedule as schedule
    seeds = []
    real = schedule.search_schedule

    def spy(table, bandwidth, searcher, budget, seed, *a, **k):
        seeds.append(seed)
        return real(table, bandwidth, searcher, budget, seed, *a, **k)

    monkeypatch.setattr(schedule, "search_schedule", spy)
    ss = served_system(table([("A", "l", [100, 150], [1, 1], [1, 1])]), 10.0)
    MagmaPlanned(budget=20, seed=7).reset(Simulation(ss, stream([0.0], [1e9], [0])), 0)
    assert seeds == [7]
