"""`coexplore online --trace`: a recorded request trace served instead of Poisson streams. A run's own
requests.csv, replayed, is served exactly as the run served it; a hand trace as the library serves it;
the trace's load is measured; bad traces are one clear message."""

import csv
import json

import numpy as np
import pytest

from coexplore.cli.main import main
from coexplore.errors import CoexploreError
from coexplore.online.models import served_system
from coexplore.online.schedulers import heuristic
from coexplore.online.simulator import simulate
from coexplore.online.stream import RequestStream, Scenario, offered_load, poisson_stream, request_rates
from coexplore.online.trace import read_trace, trace_rates
from coexplore.system.tables import load_table

from test_online_cli import FAST, _table

QUIET = ["--no-progress", "--no-plot"]


def _finishes(path):
    rows = list(csv.DictReader(open(path)))
    return rows, {k for k in rows[0] if k.startswith("finish_")}


def test_a_runs_requests_replayed_as_a_trace_are_served_as_the_run_served_them(tmp_path):
    table = _table(tmp_path / "jobs.csv")
    first = tmp_path / "first"
    assert main(["online", "--table", str(table), "--bandwidth", "10", "--load", "1.1", *FAST, "--out", str(first)]) == 0
    again = tmp_path / "again"
    assert main(["online", "--table", str(table), "--bandwidth", "10", "--trace", str(first / "requests.csv"),
                 "--policy", str(first / "policy.json"), *QUIET, "--out", str(again)]) == 0
    was, cols = _finishes(first / "requests.csv")
    now, _ = _finishes(again / "requests.csv")
    assert len(now) == len(was) == 80 and {r["seed"] for r in now} == {"0", "1"}
    dynamic = cols - {"finish_static", "finish_magma"}        # (the static plans follow the measured rates)
    assert len(dynamic) == 7
    for a, b in zip(was, now):
        assert [a[k] for k in ("seed", "dnn", "arrival_cycle", "deadline_cycle")] == \
               [b[k] for k in ("seed", "dnn", "arrival_cycle", "deadline_cycle")]
        assert all(a[c] == b[c] for c in dynamic)


def test_a_hand_trace_is_served_as_the_library_serves_it(tmp_path, capsys):
    table = _table(tmp_path / "jobs.csv")
    trace = tmp_path / "trace.csv"            # out of order on purpose: served by arrival
    trace.write_text("dnn,arrival_cycle,deadline_cycle,note\ngemm,50,5000,x\ncnn,0,900,y\ncnn,400,4000,z\n")
    out = tmp_path / "o"
    assert main(["online", "--table", str(table), "--bandwidth", "10", "--trace", str(trace), "--schedulers",
                 "edf,fcfs", *QUIET, "--out", str(out)]) == 0
    system = served_system(load_table(table), 10.0)
    stream = RequestStream(np.array([0.0, 50.0, 400.0]), np.array([900.0, 5000.0, 4000.0]), np.array([0, 1, 0]))
    rows = list(csv.DictReader(open(out / "requests.csv")))
    assert [r["dnn"] for r in rows] == ["cnn", "gemm", "cnn"]
    for name in ("edf", "fcfs"):
        want = simulate(system, stream, heuristic(name)).finish
        got = [float(r[f"finish_{name}"]) if r[f"finish_{name}"] else np.nan for r in rows]
        np.testing.assert_array_equal(got, want)
    assert "3 requests in 1 stream" in capsys.readouterr().err


def test_the_trace_load_is_measured_on_the_chosen_basis(tmp_path):
    system = served_system(load_table(_table(tmp_path / "jobs.csv")), 10.0)
    for basis in ("fastest", "capacity"):
        sc = Scenario(load=0.7, requests=4000, mix=(1.0, 3.0), basis=basis)
        streams = {s: poisson_stream(system, sc, s) for s in (0, 1)}
        rates = trace_rates(streams, 2)
        assert offered_load(system, rates, basis) == pytest.approx(0.7, rel=0.05)
        assert rates[1] / rates[0] == pytest.approx(3.0, rel=0.1)
        assert offered_load(system, request_rates(system, sc), basis) == pytest.approx(0.7)   # the inverse


@pytest.mark.parametrize("text, key", [
    ("dnn,arrival_cycle\ncnn,0\n", "deadline_cycle"),
    ("arrival_cycle,deadline_cycle\n0,5\n", "dnn"),
    ("dnn,arrival_cycle,deadline_cycle\nvgg,0,5\n", "dnn"),
    ("dnn,arrival_cycle,deadline_cycle\ncnn,10,5\n", "deadline_cycle"),
    ("dnn,arrival_cycle,deadline_cycle\ncnn,-1,5\n", "arrival_cycle"),
    ("dnn,arrival_cycle,deadline_cycle\ncnn,,5\n", "arrival_cycle"),
    ("model,arrival_cycle,deadline_cycle\n2,0,5\n", "model"),
    ("dnn,arrival_cycle,deadline_cycle,seed\ncnn,0,5,x\n", "seed"),
    ("dnn,arrival_cycle,deadline_cycle\n", None),
])
def test_a_bad_trace_names_its_file_line_and_column(tmp_path, text, key):
    trace = tmp_path / "t.csv"
    trace.write_text(text)
    with pytest.raises(CoexploreError) as err:
        read_trace(trace, ["cnn", "gemm"])
    assert err.value.file == str(trace) and err.value.key == key


def test_options_the_trace_replaces_are_refused_and_an_instant_needs_a_load(tmp_path, capsys):
    table = _table(tmp_path / "jobs.csv")
    trace = tmp_path / "t.csv"
    trace.write_text("dnn,arrival_cycle,deadline_cycle\ncnn,0,5000\ngemm,0,5000\n")
    base = ["online", "--table", str(table), "--bandwidth", "10", "--trace", str(trace), *QUIET]
    for extra, key in ((["--seeds", "3"], "--seeds"), (["--loads", "0.5"], "--loads"), (["--mix", "1", "2"], "--mix")):
        assert main([*base, *extra]) == 2
        assert f"key '{key}'" in capsys.readouterr().err
    assert main([*base, "--schedulers", "edf", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err                  # (no relmas here: the load is only the results' label)
    assert "its arrivals span no time" in err and "the load its results are labelled with" in err
    assert "relmas" not in err
    assert main([*base, "--schedulers", "edf", "--load", "0.5", "--out", str(tmp_path / "b")]) == 0
    rows = list(csv.DictReader(open(tmp_path / "b" / "requests.csv")))
    system = served_system(load_table(table), 10.0)
    want = simulate(system, RequestStream(np.zeros(2), np.full(2, 5000.0), np.array([0, 1])), heuristic("edf")).finish
    assert [float(r["finish_edf"]) for r in rows] == want.tolist() and np.isfinite(want).all()


def test_a_trace_saved_by_excel_with_a_byte_order_mark_is_read(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_bytes("\ufeffdnn,arrival_cycle,deadline_cycle\ncnn,0,5\ngemm,1,9\n".encode("utf-8"))
    (s,) = read_trace(trace, ["cnn", "gemm"]).values()
    assert s.model.tolist() == [0, 1] and s.deadline.tolist() == [5.0, 9.0]


def test_log_timestamps_of_1e18_cycles_are_served_as_their_differences(tmp_path, capsys):
    """A user study: times shifted by 1.7e18 (epoch nanoseconds at 1 GHz) changed every result, as
    floats there are 256 cycles apart. Read exactly and counted from the stream's first arrival."""
    rows = "dnn,arrival_cycle,deadline_cycle\ncnn,0,900\ngemm,50,5000\ncnn,400,4000\n"
    shift = 1_700_000_000_000_000_000
    shifted = "dnn,arrival_cycle,deadline_cycle\n" + "".join(
        f"{d},{int(a) + shift},{int(dl) + shift}\n" for d, a, dl in (r.split(",") for r in rows.splitlines()[1:]))
    names = ["cnn", "gemm"]
    (tmp_path / "a.csv").write_text(rows)
    (tmp_path / "b.csv").write_text(shifted)
    (a,), (b,) = read_trace(tmp_path / "a.csv", names).values(), read_trace(tmp_path / "b.csv", names).values()
    assert b.arrival.tolist() == [0.0, 50.0, 400.0] and b.deadline.tolist() == [900.0, 5000.0, 4000.0]
    assert a.arrival.tolist() == [0.0, 50.0, 400.0]
    assert (a.origin, b.origin) == ("0", str(shift))          # (where the shifted one's cycle 0 is, exactly)
    (tmp_path / "t.csv").write_text("job,dnn,lat_c0,bw_c0\nc.l,cnn,100,1\ng.l,gemm,100,1\n")
    assert main(["online", "--table", str(tmp_path / "t.csv"), "--bandwidth", "10", "--trace", str(tmp_path / "b.csv"),
                 "--schedulers", "fcfs", "--no-plot", "--json", "--no-progress", "--out", str(tmp_path / "o")]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["run"]["trace_origin_cycles"] == {"0": str(shift)} and str(shift) in err


@pytest.mark.parametrize("extra", [["--load", "0.5"], ["--slack", "2", "3"], ["--requests", "50"]])
def test_training_options_with_a_trace_and_nothing_trained_are_refused(tmp_path, capsys, extra):
    """User study: with --trace these shape relmas's training streams only; with no relmas (or
    --policy) they did nothing, and the summary said relmas was trained at --load."""
    (tmp_path / "t.csv").write_text("job,dnn,lat_c0,bw_c0\na.l,a,100,1\n")
    (tmp_path / "r.csv").write_text("arrival_cycle,deadline_cycle,dnn\n0,1000,a\n10,500,a\n")
    args = ["online", "--table", str(tmp_path / "t.csv"), "--bandwidth", "10", "--trace", str(tmp_path / "r.csv"),
            "--no-plot", "--no-progress", "--out", str(tmp_path / "o")]
    assert main([*args, "--schedulers", "fcfs", *extra]) == 2
    err = capsys.readouterr().err
    assert f"{extra[0]} with --trace, and nothing is trained (no relmas among the schedulers)" in err
    assert not (tmp_path / "o").exists()
    assert main([*args, "--schedulers", "fcfs,relmas", "--train-generations", "1", "--train-streams", "1",
                 *extra]) == 0                          # (trained: they act)


@pytest.mark.parametrize("text, key", [
    ("dnn,arrival_cycle,deadline_cycle,arrival_cycle\ncnn,0,5,9\n", "arrival_cycle"),
    ("dnn,model,arrival_cycle,deadline_cycle\ncnn,0,0,5\n", "model"),
    ("dnn,arrival_cycle,deadline_cycle\ncnn,0,5,extra\n", None),
    ("dnn,arrival_cycle,deadline_cycle\ncnn,1_000,5000\n", "arrival_cycle"),
])
def test_ambiguous_traces_are_refused(tmp_path, text, key):
    trace = tmp_path / "t.csv"
    trace.write_text(text)
    with pytest.raises(CoexploreError) as err:
        read_trace(trace, ["cnn", "gemm"])
    assert err.value.key == key


def test_stream_ids_beyond_float_precision_stay_apart(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("dnn,arrival_cycle,deadline_cycle,stream\ncnn,0,5,9007199254740992\ncnn,1,5,9007199254740993\n")
    assert sorted(read_trace(trace, ["cnn"])) == [9007199254740992, 9007199254740993]


def test_a_given_load_trains_relmas_but_the_trace_is_labelled_with_its_own(tmp_path, capsys):
    table = _table(tmp_path / "jobs.csv")
    system = served_system(load_table(table), 10.0)
    sc = Scenario(load=0.9, requests=300)
    trace = tmp_path / "t.csv"
    s = poisson_stream(system, sc, 0)
    trace.write_text("model,arrival_cycle,deadline_cycle\n" + "".join(
        f"{m},{float(a)!r},{float(d)!r}\n" for m, a, d in zip(s.model, s.arrival, s.deadline)))
    out = tmp_path / "o"
    assert main(["online", "--table", str(table), "--bandwidth", "10", "--trace", str(trace), "--load", "0.5",
                 "--schedulers", "fcfs,relmas", "--train-generations", "1", "--train-streams", "1", "--requests", "20",
                 *QUIET, "--out", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    measured = offered_load(system, trace_rates(read_trace(trace, ["cnn", "gemm"]), 2))
    assert data["run"]["scenario"]["load"] == pytest.approx(measured) and data["run"]["train_load"] == 0.5


def _strict(text):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_online_json_has_no_nan_without_energies(tmp_path, capsys):
    """A job table without energy columns: energies are null in online.json and --json (they were
    bare NaN, which JSON parsers refuse)."""
    table = tmp_path / "t.csv"
    table.write_text("job,dnn,layer,lat_a,bw_a\n0,cnn,c1,400,3\n1,gemm,g1,600,2\n")
    trace = tmp_path / "tr.csv"
    trace.write_text("dnn,arrival_cycle,deadline_cycle\ncnn,0,900\ngemm,50,5000\ncnn,400,4000\n")
    out = tmp_path / "o"
    assert main(["online", "--table", str(table), "--bandwidth", "10", "--trace", str(trace), "--schedulers",
                 "fcfs", *QUIET, "--out", str(out), "--json"]) == 0
    data = _strict(capsys.readouterr().out)
    assert data["schedulers"]["fcfs"]["energy_pJ"] is None
    assert _strict((out / "online.json").read_text())["schedulers"]["fcfs"]["sla_rate"] == 1.0


def test_an_empty_path_is_no_file(tmp_path, capsys):
    table = _table(tmp_path / "jobs.csv")
    for option in ("--trace", "--policy"):
        assert main(["online", "--table", str(table), "--bandwidth", "10", option, "", *QUIET]) == 2
        assert f"key '{option}': an empty path" in capsys.readouterr().err


def test_trace_deadlines_shorter_than_the_isolated_latency_are_warned(tmp_path, capsys):
    """As a --slack below 1 is: such a request cannot be met even alone (cnn alone takes 520 cycles on
    this table's fast core with its bandwidth)."""
    table = _table(tmp_path / "jobs.csv")
    system = served_system(load_table(table), 10.0)
    iso = system.models[0].isolated_latency
    trace = tmp_path / "t.csv"
    trace.write_text(f"dnn,arrival_cycle,deadline_cycle\ncnn,0,{iso - 1}\ncnn,5000,{5000 + iso}\ngemm,9000,99999\n")
    assert main(["online", "--table", str(table), "--bandwidth", "10", "--trace", str(trace), "--schedulers", "fcfs",
                 *QUIET, "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "warning: 1 of 3 requests of the trace have a deadline shorter than their DNN's isolated latency" in err


def test_a_trace_in_the_out_folder_under_an_output_name_is_not_written_over(tmp_path, capsys):
    """`--trace out/requests.csv --out out`: the run would replace its own input; refused, the trace kept."""
    table = _table(tmp_path / "jobs.csv")
    out = tmp_path / "o"
    out.mkdir()
    trace = out / "requests.csv"
    text = "dnn,arrival_cycle,deadline_cycle\ncnn,0,900\ngemm,50,5000\n"
    trace.write_text(text)
    rc = main(["online", "--table", str(table), "--bandwidth", "10", "--trace", str(trace), "--schedulers", "edf",
               *QUIET, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "an input of this run" in err and "--out" in err, err
    assert trace.read_text() == text and sorted(p.name for p in out.iterdir()) == ["requests.csv"]


def test_a_deadline_met_at_its_cycle_stays_met_whatever_rounding_the_events_bring(tmp_path, capsys):
    """User study (hand computed): two requests of a 100-cycle layer needing 11 bytes/cycle each on a
    10 bytes/cycle system share it and end at exactly 220, their deadline; a third arrival at cycle 3
    split the run and they ended at 220.00000000000003: late, SLA rate 1/3 instead of 1."""
    (tmp_path / "t.csv").write_text("job,dnn,lat_c0,lat_c1,bw_c0,bw_c1\na.l,a,100,100,11,11\n")
    (tmp_path / "r.csv").write_text("arrival_cycle,deadline_cycle,dnn\n0,220,a\n0,220,a\n3,1000,a\n")
    assert main(["online", "--table", str(tmp_path / "t.csv"), "--bandwidth", "10", "--trace", str(tmp_path / "r.csv"),
                 "--schedulers", "fcfs,edf", "--no-plot", "--json", "--no-progress",
                 "--out", str(tmp_path / "o")]) == 0
    got = json.loads(capsys.readouterr().out)["schedulers"]
    assert got["fcfs"]["sla_rate"] == 1.0 and got["edf"]["sla_rate"] == 1.0


def test_scheduler_names_are_case_blind_and_named_once(tmp_path, capsys):
    """User study: `--schedulers fcfs,RELMAS` was refused with Python-API advice, `fcfs,FCFS` ran
    fcfs twice (columns finish_fcfs and finish_FCFS)."""
    (tmp_path / "t.csv").write_text("job,dnn,lat_c0,bw_c0\na.l,a,100,1\n")
    (tmp_path / "r.csv").write_text("arrival_cycle,deadline_cycle,dnn\n0,220,a\n5,300,a\n")
    base = ["online", "--table", str(tmp_path / "t.csv"), "--bandwidth", "10", "--trace", str(tmp_path / "r.csv"),
            "--load", "1", "--no-plot", "--no-progress", "--json"]
    assert main([*base, "--schedulers", "fcfs,FCFS", "--out", str(tmp_path / "a")]) == 2
    assert "distinct scheduler names" in capsys.readouterr().err
    assert main([*base, "--schedulers", "EDF,RELMAS", "--train-generations", "1", "--out", str(tmp_path / "b")]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["schedulers"]) == ["edf", "relmas"]


def test_a_trace_of_one_instant_keeps_its_mix(tmp_path, capsys):
    """User study: two m1 requests and one m2, all at cycle 0: the trace's 2:1 mix was dropped
    (equal rates), so the load against capacity said 1.33 for the hand-computed 1.6."""
    (tmp_path / "t.csv").write_text("job,dnn,lat_c0,lat_c1,bw_c0,bw_c1,en_c0,en_c1\n"
                                    "m1.l1,m1,100,inf,0,0,1000,0\nm2.l1,m2,50,80,0,0,500,800\n")
    (tmp_path / "r.csv").write_text("arrival_cycle,deadline_cycle,dnn\n0,100,m1\n0,100,m1\n0,80,m2\n")
    assert main(["online", "--table", str(tmp_path / "t.csv"), "--bandwidth", "10", "--trace", str(tmp_path / "r.csv"),
                 "--load", "1", "--schedulers", "fcfs", "--no-plot", "--json", "--no-progress",
                 "--out", str(tmp_path / "o")]) == 0
    # (the study's hand computation of the offered load at the 2:1 mix)
    assert json.loads(capsys.readouterr().out)["load_of_capacity"] == pytest.approx(1.6)


def test_a_load_far_beyond_the_cores_is_warned_of(tmp_path, capsys):
    """Online study: --load 1e6 (a mistyped 1.0) ran with only a DRAM warning; a load more than 10x the
    cores' capacity is said, a load near 1 is not."""
    table = _table(tmp_path / "jobs.csv")
    base = ["online", "--table", str(table), "--bandwidth", "1e4", "--requests", "10", "--seeds", "1",
            "--schedulers", "fcfs", *QUIET]
    assert main([*base, "--load", "1e6", "--out", str(tmp_path / "a")]) == 0
    assert "--load 1e+06: more than 10 times what the cores can serve" in capsys.readouterr().err
    assert main([*base, "--load", "0.9", "--out", str(tmp_path / "b")]) == 0
    assert "times what the cores can serve" not in capsys.readouterr().err
