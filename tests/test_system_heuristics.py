"""Heuristics reproduce the original code's makespans (golden_heuristics.json)."""

import json
from pathlib import Path

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.system.evaluator import evaluate
from coexplore.system.heuristics import HEURISTICS, HeuristicSearcher, heuristic_schedule, sjf_order
from coexplore.search.base import run_search
from coexplore.system.encoding import MakespanObjective
from coexplore.system.tables import load_table

DATA = Path(__file__).parent / "data" / "magma"
GOLDEN = json.loads((DATA / "golden_heuristics.json").read_text())


@pytest.mark.parametrize("case", GOLDEN, ids=lambda c: f"{c['batch']}-S{c['setting']}-bw{c['bw']}")
def test_golden_heuristics_reproduced(case):
    t = load_table(DATA / "tables" / case["batch"] / f"S{case['setting']}" / "insts0.csv")
    for name in HEURISTICS:
        core, prio = heuristic_schedule(t.latency, name)
        m = evaluate(t.latency, t.bandwidth, case["bw"], core[None], prio[None]).makespan[0]
        assert m == pytest.approx(case[name], rel=1e-9, abs=0), name


def test_heuristic_properties():
    t = load_table(DATA / "tables" / "batch_lang" / "S3" / "insts0.csv")
    lat = t.latency
    core, prio = heuristic_schedule(lat, "FCFS-RR")
    np.testing.assert_array_equal(core, np.arange(t.num_jobs) % t.num_cores)
    np.testing.assert_array_equal(np.argsort(prio), np.arange(t.num_jobs))
    core, _ = heuristic_schedule(lat, "FCFS-MET")
    assert np.all(lat[np.arange(t.num_jobs), core] == lat.min(axis=1))
    order = sjf_order(lat)
    assert np.all(np.diff(lat[order, -1]) >= 0)
    with pytest.raises(CoexploreError, match="unknown heuristic"):
        heuristic_schedule(lat, "LIFO-RR")


def test_heuristic_searcher_budget():
    t = load_table(DATA / "tables" / "batch_recom" / "S3" / "insts0.csv")
    det = HeuristicSearcher(t.latency, "sjf-heft")
    assert det.size == 1
    # run directly (not through search_schedule): one sample, then the searcher has nothing left
    res = run_search(det, MakespanObjective(t, 25.6), 50)
    assert res.samples == 1 and len(det.ask(5)) == 0
    # three identical cores -> MET has ties and can keep proposing tie-breaks
    met = HeuristicSearcher(t.latency, "fcfs-met", seed=0)
    assert met.size is None
    x = met.ask(3)
    assert x.shape == (3, 2 * t.num_jobs) and not np.array_equal(x[0], x[1])


@pytest.mark.parametrize("seed", [2**32 - 1, 2**32, 2**64 + 5])
def test_heuristic_searcher_takes_any_seed_the_cli_accepts(seed):
    """`--seed` is any integer >= 0; MET's tie-breaks still follow it (MAGMA's RandomState below 2^32)."""
    t = load_table(DATA / "tables" / "batch_recom" / "S3" / "insts0.csv")
    lat = t.latency
    runs = [HeuristicSearcher(lat, "fcfs-met", seed=seed).ask(4) for _ in range(2)]
    np.testing.assert_array_equal(runs[0], runs[1])
    jobs = np.arange(t.num_jobs)
    for x in runs[0]:
        assert np.all(lat[jobs, x[:t.num_jobs].astype(int)] == lat.min(axis=1))   # still MET
    assert not np.array_equal(runs[0], HeuristicSearcher(lat, "fcfs-met", seed=seed + 1).ask(4))


@pytest.mark.parametrize("rule", ["FCFS-MET", "SJF-MET", "HEFT-MET"])
def test_met_tie_breaks_are_magmas_draws_one_job_at_a_time(rule):
    """MET's tie-breaks are drawn for all jobs at once; they are the draws MAGMA's code makes with
    one rng.choice per job in job order (RandomState and Generator alike, several schedules in a row)."""
    t = load_table(DATA / "tables" / "batch_recom" / "S3" / "insts0.csv")
    lat = t.latency
    seq = sjf_order(lat) if rule.startswith("SJF") else np.arange(t.num_jobs)

    def one_at_a_time(rng):
        core = np.empty(t.num_jobs, dtype=np.int64)
        for j in seq:
            core[j] = int(np.ravel(rng.choice(np.flatnonzero(lat[j] == lat[j].min()), 1))[0])
        return core
    for make in (np.random.RandomState, np.random.default_rng):
        ref_rng, rng = make(5), make(5)
        for _ in range(3):
            assert np.array_equal(heuristic_schedule(lat, rule, rng)[0], one_at_a_time(ref_rng))
