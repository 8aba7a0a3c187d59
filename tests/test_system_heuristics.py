"""Heuristics reproduce the original code's makespans (golden_heuristics.json)."""

import json
from pathlib import Path

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.system.evaluator import evaluate
from coexplore.system.heuristics import HEURISTICS, HeuristicSearcher, heuristic_schedule, sjf_order
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
    assert HeuristicSearcher(t.latency, "sjf-heft").max_samples == 1
    # three identical cores -> MET has ties and can keep proposing tie-breaks
    met = HeuristicSearcher(t.latency, "fcfs-met", seed=0)
    assert met.max_samples is None
    x = met.ask(3)
    assert x.shape == (3, 2 * t.num_jobs) and not np.array_equal(x[0], x[1])
