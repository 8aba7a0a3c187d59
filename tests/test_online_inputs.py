"""What `coexplore online` and its Python API take (a user study of an SLA researcher): a request
stream built by hand (a trace) is checked, not served wrongly; the DRAM traffic a load asks for is
said next to the cores' load; deadlines no request can meet are warned; bad policy weights and a job
without its DNN are named."""

import json

import numpy as np
import pytest

from coexplore.cli.main import main
from coexplore.errors import CoexploreError
from coexplore.online.models import served_system
from coexplore.online.policy import FEATURES, Policy
from coexplore.online.schedulers import FCFS
from coexplore.online.simulator import simulate
from coexplore.online.stream import RequestStream, dram_demand
from coexplore.system.jobs import Job, JobTable


def _system(bandwidth=4.0):
    """Two DNNs on one core: x (one layer, 1000 cycles, 2 bytes/cycle) and y (two layers)."""
    jobs = [Job(name="x.l0", dnn="x", layer="l0"), Job(name="y.l0", dnn="y", layer="l0"),
            Job(name="y.l1", dnn="y", layer="l1")]
    t = JobTable(jobs, ["a"], np.array([[1000.0], [500.0], [300.0]]), np.array([[2.0], [1.0], [4.0]]),
                 np.zeros((3, 1)))
    return served_system(t, bandwidth)


@pytest.mark.parametrize("arrival, deadline, model, key", [
    ([2e6, 0.0, 1e6], [3e6, 1e6, 2e6], [0, 1, 0], "arrival"),      # out of order
    ([0.0, np.nan], [1e6, 1e6], [0, 0], "arrival"),
    ([0.0, 10.0], [1e6, 5.0], [0, 0], "deadline"),                 # before its arrival
    ([0.0, 10.0], [1e6, 1e6], [0, -1], "model"),
    ([0.0, 10.0], [1e6], [0, 0], "deadline"),                      # lengths differ
])
def test_a_hand_built_stream_is_checked(arrival, deadline, model, key):
    with pytest.raises(CoexploreError) as err:
        RequestStream(np.array(arrival), np.array(deadline), np.array(model))
    assert err.value.key == key


def test_a_model_index_beyond_the_served_models_is_named():
    s = RequestStream(np.array([0.0, 1.0]), np.array([1e6, 1e6]), np.array([0, 2]))
    with pytest.raises(CoexploreError) as err:
        simulate(_system(), s, FCFS())
    assert err.value.key == "model" and "request 1" in err.value.message and "x, y" in err.value.expected


def test_a_sorted_trace_is_served_as_it_arrives():
    """One core, x at 0 alone: it finishes at its isolated latency (1000 cycles, 2 <= 4 bytes/cycle)."""
    r = simulate(_system(), RequestStream(np.array([0.0, 5000.0]), np.array([1e6, 1e6]), np.array([0, 1])), FCFS())
    assert r.finish[0] == 1000.0 and r.finish[1] == 5000.0 + 500.0 + 300.0


def test_the_dram_demand_is_each_requests_bytes_at_its_rate_over_the_bandwidth():
    # x moves 1000 x 2 = 2000 bytes, y 500 x 1 + 300 x 4 = 1700; at 1e-3 and 2e-3 requests/cycle
    want = (1e-3 * 2000 + 2e-3 * 1700) / 4.0
    assert dram_demand(_system(4.0), [1e-3, 2e-3]) == pytest.approx(want)
    assert dram_demand(_system(8.0), [1e-3, 2e-3]) == pytest.approx(want / 2)


def test_a_nan_policy_weight_is_named():
    w = np.zeros(len(FEATURES))
    w[3] = np.nan
    with pytest.raises(CoexploreError) as err:
        Policy(w)
    assert FEATURES[3] in err.value.message


def _table(tmp_path, dnn_cell="x"):
    t = tmp_path / "jobs.csv"
    t.write_text("job,dnn,layer,lat_a,bw_a\n0,x,l0,1000,2\n1,x,l1,800,1\n"
                 f"2,{dnn_cell},l2,900,1\n")
    return t


def test_a_job_without_its_dnn_is_named_with_the_file(tmp_path, capsys):
    t = _table(tmp_path, dnn_cell="")
    assert main(["online", "--table", str(t), "--bandwidth", "4", "--requests", "5", "--seeds", "1",
                 "--schedulers", "fcfs", "--no-progress", "--no-plot", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert str(t) in err and "job '2'" in err


def test_dram_overload_and_unmeetable_deadlines_are_warned(tmp_path, capsys):
    t = _table(tmp_path)
    args = ["online", "--table", str(t), "--requests", "5", "--seeds", "1", "--schedulers", "fcfs",
            "--no-progress", "--no-plot", "--json"]
    # load 0.8 of one core: 0.8 / (2700 cycles of work) requests/cycle x 3700 bytes each = 1.096 bytes/cycle
    assert main(args + ["--bandwidth", "0.5", "--out", str(tmp_path / "a")]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["dram_demand_of_bandwidth"] == pytest.approx(0.8 / 2700 * 3700 / 0.5)
    assert "more DRAM traffic than the bandwidth" in err
    assert main(args + ["--bandwidth", "64", "--slack", "0.5", "2", "--out", str(tmp_path / "b")]) == 0
    err = capsys.readouterr().err
    assert "more DRAM traffic" not in err and "cannot be met" in err


def test_the_dram_demand_of_a_layer_that_cannot_run_on_a_core_is_its_traffic_elsewhere():
    import warnings
    jobs = [Job(name="x.l0", dnn="x", layer="l0")]
    t = JobTable(jobs, ["a", "b"], np.array([[1000.0, np.inf]]), np.array([[2.0, 0.0]]), np.zeros((1, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # (no numpy warning of inf x 0)
        assert dram_demand(served_system(t, 4.0), [1e-3]) == pytest.approx(1e-3 * 2000 / 4.0)


def test_an_empty_stream_is_a_stream():
    s = RequestStream(np.array([]), np.array([]), np.array([]))
    assert len(s) == 0 and s.model.dtype == np.int64


def test_a_trace_read_by_numpy_is_taken_and_scalars_or_text_are_refused():
    s = RequestStream(np.array([0.0, 1.0]), np.array([5.0, 5.0]), np.array([0.0, 1.0]))   # (np.loadtxt floats)
    assert s.model.dtype.kind == "i" and s.model.tolist() == [0, 1]
    for args, key in (((0.0, 1.0, 0), "arrival"), ((np.array(["a"]), np.array([1.0]), np.array([0])), "arrival"),
                      ((np.array([0.0]), np.array([1.0]), np.array([0.5])), "model")):
        with pytest.raises(CoexploreError) as err:
            RequestStream(*args)
        assert err.value.key == key


def test_an_empty_stream_is_served_without_numpy_warnings():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = simulate(_system(), RequestStream(np.array([]), np.array([]), np.array([])), FCFS())
        s = r.summary()
    assert s["requests"] == 0 and s["met"] == 0 and s["dropped"] == 0 and np.isnan(s["sla_rate"])
    assert r.decisions == 0 and r.end == 0.0
