"""`coexplore online`: the files it writes agree with each other and with the library, training resumes
and is reused, a given policy is used as given, and bad input is one clear message (exit 2)."""

import csv
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from coexplore.cli.main import main
from coexplore.online.models import served_system
from coexplore.online.policy import FEATURES, LearnedScheduler, Policy, load_policy
from coexplore.online.simulator import simulate
from coexplore.online.stream import Scenario, poisson_stream
from coexplore.system.jobs import Job, JobTable
from coexplore.system.tables import load_table, save_table

FAST = ["--requests", "40", "--seeds", "2", "--train-generations", "2", "--train-streams", "1", "--no-progress",
        "--no-plot"]
UNTRAINED = ["--requests", "40", "--seeds", "2", "--no-progress", "--no-plot"]    # FAST with --policy (no training)


def _table(path):
    rows = [("cnn", "c1", [400, 900], [3, 1], [50, 40]), ("cnn", "c2", [300, 500], [9, 4], [40, 30]),
            ("cnn", "fc", [100, 120], [12, 10], [10, 9]), ("gemm", "g1", [600, 700], [2, 2], [80, 60])]
    t = JobTable([Job(name=f"{d}.{l}", dnn=d, layer=l) for d, l, *_ in rows], ["fast", "slow"],
                 np.array([r[2] for r in rows], float), np.array([r[3] for r in rows], float),
                 np.array([r[4] for r in rows], float))
    save_table(t, path)
    return path


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("online")
    table = _table(tmp / "jobs.csv")
    rc = main(["online", "--table", str(table), "--bandwidth", "10", "--load", "1.1", *FAST, "--out",
               str(tmp / "out"), "--json"])
    assert rc == 0
    return tmp, table, json.loads((tmp / "out" / "online.json").read_text())


def test_results_agree_with_the_library(done):
    tmp, table, data = done
    assert data["command"].startswith("coexplore online --table ")     # how to run it again
    assert os.path.isabs(data["cwd"])                                   # where its relative paths start
    system = served_system(load_table(table), 10.0)
    sc = Scenario(load=1.1, requests=40)
    policy = Policy([data["policy"]["weights"][f] for f in FEATURES])
    for name, sched in (("edf", None), ("relmas", LearnedScheduler(policy))):
        from coexplore.online.schedulers import heuristic
        sched = sched or heuristic(name)
        rates = [simulate(system, poisson_stream(system, sc, s), sched).sla_rate for s in (0, 1)]
        assert data["schedulers"][name]["sla_rate_per_seed"] == pytest.approx(rates)
        assert data["schedulers"][name]["sla_rate"] == pytest.approx(np.mean(rates))


def test_magma_plan_recorded_is_the_one_run(done):
    """online.json names the MAGMA plan's settings; a plan made with them gives the recorded rates,
    and one made with another seed or budget is a different placement."""
    from coexplore.online.schedulers import MagmaPlanned
    from coexplore.online.stream import request_rates
    tmp, table, data = done
    plan = data["run"]["magma_plan"]
    system = served_system(load_table(table), 10.0)
    sc = Scenario(load=1.1, requests=40)
    rates = request_rates(system, sc)
    sched = MagmaPlanned(rates, budget=plan["budget"], seed=plan["seed"], batch=plan["batch"])
    got = [simulate(system, poisson_stream(system, sc, s), sched).sla_rate for s in (0, 1)]
    assert data["schedulers"]["magma"]["sla_rate_per_seed"] == pytest.approx(got)
    recorded = sched.owner
    other = MagmaPlanned(rates, budget=50, seed=plan["seed"] + 1, batch=plan["batch"])
    simulate(system, poisson_stream(system, sc, 0), other)
    assert other.owner != recorded


def test_files_agree_with_each_other(done):
    tmp, _, data = done
    out = tmp / "out"
    rows = list(csv.DictReader((out / "results.csv").open()))
    names = data["run"]["schedulers"]
    assert sorted(names) == sorted(["fcfs", "edf", "lsf", "sjf", "prema", "static", "magma", "random", "relmas"])
    assert len(rows) == len(names) * 2
    every = list(csv.DictReader((out / "requests.csv").open()))
    assert len(every) == 80 and {q["seed"] for q in every} == {"0", "1"}       # both streams
    reqs = [q for q in every if q["seed"] == "0"]
    assert len(reqs) == 40
    for name in names:             # the documented means include the decisions (user study: missing)
        mine = [float(r["decisions"]) for r in rows if r["scheduler"] == name]
        assert data["schedulers"][name]["decisions"] == pytest.approx(sum(mine) / len(mine), rel=1e-12)
        seed1 = next(r for r in rows if r["scheduler"] == name and r["seed"] == "1")
        assert int(seed1["met"]) == sum(1 for q in every if q["seed"] == "1" and q[f"finish_{name}"]
                                        and float(q[f"finish_{name}"]) <= float(q["deadline_cycle"]))
        seed0 = next(r for r in rows if r["scheduler"] == name and r["seed"] == "0")
        met = sum(1 for q in reqs if q[f"finish_{name}"] and float(q[f"finish_{name}"]) <= float(q["deadline_cycle"]))
        dropped = sum(1 for q in reqs if q[f"finish_{name}"] == "")
        assert int(seed0["met"]) == met and int(seed0["dropped"]) == dropped
        assert float(seed0["sla_rate"]) == pytest.approx(met / 40)
        assert data["schedulers"][name]["sla_rate_per_seed"][0] == pytest.approx(met / 40)
    best = data["best_heuristic"]
    assert all(data["schedulers"][best]["sla_rate"] >= m["sla_rate"] for n, m in data["schedulers"].items()
               if n != "relmas")
    g = data["relmas_gains"][best]["sla_gain"]
    assert g == pytest.approx(data["schedulers"]["relmas"]["sla_rate"] / data["schedulers"][best]["sla_rate"] - 1)
    rates = {m["name"]: m["requests_per_cycle"] for m in data["models"]}
    work = {m["name"]: m["work_cycles"] for m in data["models"]}
    assert sum(rates[n] * work[n] for n in rates) / 2 == pytest.approx(1.1)      # the offered load, 2 cores
    assert work == {"cnn": 800.0, "gemm": 600.0}
    assert len(data["policy"]["training_history"]) == 2
    assert not (out / ".train_state.json").exists()


def test_rerun_reuses_the_trained_policy_and_a_given_policy_is_used(done, tmp_path, capsys):
    tmp, table, data = done
    argv = ["online", "--table", str(table), "--bandwidth", "10", "--load", "1.1", *FAST, "--out", str(tmp / "out"),
            "--json"]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "using the policy this run already trained" in out.err
    timeless = lambda d: {n: {k: v for k, v in m.items() if k != "decision_us"} for n, m in d.items()}  # noqa: E731
    assert timeless(json.loads(out.out)["schedulers"]) == timeless(data["schedulers"])
    w = np.zeros(len(FEATURES))
    w[0], w[FEATURES.index("hopeless")] = 1.0, -3.0
    Policy(w).save(tmp_path / "mine.json")
    assert main(["online", "--table", str(table), "--bandwidth", "10", "--load", "1.1", *UNTRAINED, "--schedulers",
                 "relmas,fcfs", "--policy", str(tmp_path / "mine.json"), "--out", str(tmp_path / "o"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [got["policy"]["weights"][f] for f in FEATURES] == w.tolist()
    system = served_system(load_table(table), 10.0)
    ref = simulate(system, poisson_stream(system, Scenario(load=1.1, requests=40), 0), LearnedScheduler(Policy(w)))
    assert got["schedulers"]["relmas"]["sla_rate_per_seed"][0] == ref.sla_rate
    assert not (tmp_path / "o" / "policy.json").exists()


def test_interrupted_training_resumes_to_the_same_policy(tmp_path, monkeypatch, capsys):
    import coexplore.online.train as train
    table = _table(tmp_path / "jobs.csv")
    argv = ["online", "--table", str(table), "--bandwidth", "10", "--schedulers", "relmas", "--requests", "30",
            "--seeds", "1", "--train-generations", "3", "--train-streams", "1", "--no-progress", "--no-plot"]
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    whole = json.loads((tmp_path / "whole" / "policy.json").read_text())
    real = train.policy_return
    calls = {"n": 0}

    def stop_in_generation_two(*a, **k):
        calls["n"] += 1
        if calls["n"] > 13:             # generation 1 = 12 candidates (6 pairs); stop inside generation 2
            raise KeyboardInterrupt
        return real(*a, **k)
    monkeypatch.setattr(train, "policy_return", stop_in_generation_two)
    assert main([*argv, "--out", str(tmp_path / "cut")]) == 130
    err = capsys.readouterr().err
    assert "training state is saved" in err and (tmp_path / "cut" / ".train_state.json").exists()
    monkeypatch.setattr(train, "policy_return", real)
    assert main([*argv, "--out", str(tmp_path / "cut")]) == 0
    assert "resuming the training after 1 generations" in capsys.readouterr().err
    assert json.loads((tmp_path / "cut" / "policy.json").read_text())["weights"] == whole["weights"]


def test_chart_is_drawn(tmp_path):
    table = _table(tmp_path / "jobs.csv")
    assert main(["online", "--table", str(table), "--bandwidth", "10", "--schedulers", "edf,sjf", "--requests", "20",
                 "--seeds", "1", "--no-progress", "--out", str(tmp_path / "o")]) == 0
    png = (tmp_path / "o" / "sla.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


@pytest.mark.parametrize("extra, key", [
    (["--schedulers", "edf,edff"], "unknown scheduler 'edff'"),
    (["--schedulers", "edf,edf"], "distinct"),
    (["--mix", "1", "2", "3"], "3 mix weights for 2 served models"),
    (["--slack", "3", "1"], "--slack"),
    (["--load", "-1"], "--load"),
    (["--bandwidth", "0"], "--bandwidth"),
    (["--policy", "nowhere.json"], "nowhere.json: key '--policy': file not found"),
    (["--seeds", "0"], "key '--seeds'"),
    (["--seeds", "-2"], "key '--seeds'"),
    (["--workload", "resnet50"], "--workload"),
    # user study: these gave a traceback (NaN probabilities) or blamed 'scheduler' / 'arrival'
    (["--load", "1e308"], "key '--load'"),
    (["--load", "1e-320"], "key '--load'"),
    (["--load", "1e-300"], "key '--load'"),
    (["--loads", "1e308"], "key '--loads'"),
    (["--slack", "1", "1e308"], "key '--slack'"),
    (["--bandwidth", "1e-300"], "key '--bandwidth'"),
])
def test_bad_input_is_one_message(extra, key, tmp_path, capsys):
    table = _table(tmp_path / "jobs.csv")
    argv = ["online", "--table", str(table), "--no-progress", "--out", str(tmp_path / "o")]
    if "--bandwidth" not in extra:
        argv += ["--bandwidth", "10"]
    rc = main([*argv, *extra])
    err = capsys.readouterr().err
    assert rc == 2 and key in err and "Traceback" not in err
    assert not (tmp_path / "o" / "online.json").exists()


def test_table_without_dnn_column_and_missing_inputs(tmp_path, capsys):
    (tmp_path / "t.csv").write_text("job,lat_a,bw_a\nj0,10,1\nj1,20,1\n")
    assert main(["online", "--table", str(tmp_path / "t.csv"), "--bandwidth", "4", "--no-progress"]) == 2
    assert "dnn column" in capsys.readouterr().err
    assert main(["online", "--no-progress"]) == 2
    assert "no system or job table given" in capsys.readouterr().err
    assert main(["online", "--table", str(tmp_path / "t.csv"), "--no-progress"]) == 2
    assert "--bandwidth" in capsys.readouterr().err


def test_keep_late_changes_the_outcome(tmp_path, capsys):
    table = _table(tmp_path / "jobs.csv")
    base = ["online", "--table", str(table), "--bandwidth", "10", "--schedulers", "fcfs", "--requests", "40",
            "--seeds", "1", "--load", "1.5", "--no-progress", "--no-plot", "--json"]
    assert main([*base, "--out", str(tmp_path / "a")]) == 0
    drop = json.loads(capsys.readouterr().out)["schedulers"]["fcfs"]
    assert main([*base, "--keep-late", "--out", str(tmp_path / "b")]) == 0
    keep = json.loads(capsys.readouterr().out)["schedulers"]["fcfs"]
    assert keep["dropped"] == 0 and drop["dropped"] > 0
    assert not math.isclose(keep["energy_pJ"], drop["energy_pJ"])


def test_missing_table_is_named(tmp_path, capsys):
    assert main(["online", "--table", str(tmp_path / "none.csv"), "--bandwidth", "4", "--no-progress"]) == 2
    assert "none.csv: key '--table': file not found" in capsys.readouterr().err


def test_keep_late_trains_for_late_requests_too(tmp_path):
    from coexplore.online.train import TrainSettings, train_policy
    table = _table(tmp_path / "jobs.csv")
    assert main(["online", "--table", str(table), "--bandwidth", "10", "--schedulers", "relmas", "--requests", "30",
                 "--seeds", "1", "--train-generations", "2", "--train-streams", "1", "--keep-late", "--load", "1.4",
                 "--no-progress", "--no-plot", "--out", str(tmp_path / "o")]) == 0
    got = json.loads((tmp_path / "o" / "policy.json").read_text())["weights"]
    system = served_system(load_table(table), 10.0)
    sc = Scenario(load=1.4, requests=30)
    keep, _ = train_policy(system, sc, TrainSettings(generations=2, streams=1), drop_late=False)
    drop, _ = train_policy(system, sc, TrainSettings(generations=2, streams=1), drop_late=True)
    assert got == keep.weights.tolist() and got != drop.weights.tolist()


def test_seed_column_and_policy_reused_when_only_the_evaluation_changes(tmp_path, capsys):
    table = _table(tmp_path / "jobs.csv")
    base = ["online", "--table", str(table), "--bandwidth", "10", "--requests", "30", "--train-generations", "2",
            "--train-streams", "1", "--seed", "3", "--no-progress", "--no-plot", "--out", str(tmp_path / "o")]
    assert main([*base, "--seeds", "2"]) == 0
    rows = list(csv.DictReader((tmp_path / "o" / "results.csv").open()))
    assert sorted({(r["scheduler"], r["seed"]) for r in rows if r["scheduler"] == "edf"}) == [("edf", "3"), ("edf", "4")]
    capsys.readouterr()
    assert main([*base, "--seeds", "3", "--schedulers", "relmas,edf"]) == 0
    assert "using the policy this run already trained" in capsys.readouterr().err
    assert main([*base, "--seeds", "3", "--load", "0.5"]) == 0        # another training: trained again
    assert "using the policy" not in capsys.readouterr().err


def test_another_runs_interrupted_training_is_not_overwritten(tmp_path, monkeypatch, capsys):
    import coexplore.online.train as train
    table = _table(tmp_path / "jobs.csv")
    base = ["online", "--table", str(table), "--bandwidth", "10", "--schedulers", "relmas", "--requests", "30",
            "--seeds", "1", "--train-generations", "3", "--train-streams", "1", "--no-progress", "--no-plot",
            "--out", str(tmp_path / "o")]
    real, calls = train.policy_return, {"n": 0}

    def stop_in_generation_two(*a, **k):
        calls["n"] += 1
        if calls["n"] > 13:
            raise KeyboardInterrupt
        return real(*a, **k)
    monkeypatch.setattr(train, "policy_return", stop_in_generation_two)
    assert main(base) == 130
    monkeypatch.setattr(train, "policy_return", real)
    state = (tmp_path / "o" / ".train_state.json").read_text()
    capsys.readouterr()
    assert main([*base, "--load", "0.5"]) == 2
    assert "saved training state of another run" in capsys.readouterr().err
    assert (tmp_path / "o" / ".train_state.json").read_text() == state
    assert main(base) == 0
    assert "resuming the training after 1 generations" in capsys.readouterr().err


def test_more_generations_continue_the_trained_policy(tmp_path, capsys):
    table = _table(tmp_path / "jobs.csv")
    base = ["online", "--table", str(table), "--bandwidth", "10", "--schedulers", "relmas", "--requests", "30",
            "--seeds", "1", "--train-streams", "1", "--no-progress", "--no-plot"]
    assert main([*base, "--train-generations", "3", "--out", str(tmp_path / "whole")]) == 0
    assert main([*base, "--train-generations", "2", "--out", str(tmp_path / "grown")]) == 0
    capsys.readouterr()
    assert main([*base, "--train-generations", "3", "--out", str(tmp_path / "grown")]) == 0
    assert "continuing the training" in capsys.readouterr().err
    whole = json.loads((tmp_path / "whole" / "policy.json").read_text())
    grown = json.loads((tmp_path / "grown" / "policy.json").read_text())
    assert grown["weights"] == whole["weights"] and grown["history"] == whole["history"]


def test_summary_lines_agree_with_the_record(tmp_path, capsys):
    table = _table(tmp_path / "jobs.csv")
    assert main(["online", "--table", str(table), "--bandwidth", "10", "--schedulers", "edf,sjf,relmas", "--requests",
                 "30", "--seeds", "3", "--train-generations", "1", "--train-streams", "1", "--no-progress", "--no-plot",
                 "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    data = json.loads((tmp_path / "o" / "online.json").read_text())
    assert data["name"] == tmp_path.name                 # a table named jobs.csv: its folder's name
    for name, m in data["schedulers"].items():
        row = next(line.split() for line in text.splitlines() if line.startswith(name + " "))
        assert float(row[1]) == pytest.approx(m["sla_rate"], abs=5e-4)
        per = m["per_model_sla_rate"].values()
        assert float(row[3]) == pytest.approx(min(per), abs=5e-4)
        jain = sum(per) ** 2 / (len(per) * sum(x * x for x in per))
        assert m["fairness_jain"] == pytest.approx(jain)
    g = data["relmas_gains"][data["best_heuristic"]]
    a = data["schedulers"]["relmas"]["sla_rate_per_seed"]
    b = data["schedulers"][data["best_heuristic"]]["sla_rate_per_seed"]
    assert g["streams_better"] == sum(x > y for x, y in zip(a, b)) and g["streams"] == 3
    assert f"more met on {g['streams_better']} of 3 streams" in text


def test_best_heuristic_tie_goes_to_less_energy(tmp_path):
    t = _table(tmp_path / "t.csv")
    assert main(["online", "--table", str(t), "--bandwidth", "10", "--load", "0.1", "--slack", "100", "200",
                 "--schedulers", "fcfs,random", *FAST, "--out", str(tmp_path / "o"), "--json"]) == 0
    d = json.loads((tmp_path / "o" / "online.json").read_text())
    s = d["schedulers"]
    assert s["fcfs"]["sla_rate"] == s["random"]["sla_rate"] == 1.0 and s["fcfs"]["energy_pJ"] != s["random"]["energy_pJ"]
    assert d["best_heuristic"] == min(s, key=lambda n: s[n]["energy_pJ"])


def test_fewer_generations_than_the_kept_policy_do_not_replace_it_unless_restarted(tmp_path, capsys):
    t = _table(tmp_path / "t.csv")
    args = ["online", "--table", str(t), "--bandwidth", "10", "--schedulers", "fcfs,relmas", *FAST, "--out",
            str(tmp_path / "o"), "--json"]
    assert main(args) == 0
    kept = (tmp_path / "o" / "policy.json").read_text()
    trained = len(json.loads(kept)["history"])
    assert trained > 1
    capsys.readouterr()
    assert main([*args, "--train-generations", "1"]) == 2             # (last one wins in argparse)
    err = capsys.readouterr().err
    assert f"after {trained} generations" in err and "--restart" in err
    assert (tmp_path / "o" / "policy.json").read_text() == kept       # the longer training is kept
    assert main([*args, "--train-generations", "1", "--restart"]) == 0
    d = json.loads((tmp_path / "o" / "online.json").read_text())
    assert len(d["policy"]["training_history"]) == 1


def test_summary_names_the_worst_heuristic_and_energy_in_joules(tmp_path, capsys):
    t = _table(tmp_path / "t.csv")
    assert main(["online", "--table", str(t), "--bandwidth", "10", "--load", "1.5", "--schedulers",
                 "sjf,static,relmas", *FAST, "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    d = json.loads((tmp_path / "o" / "online.json").read_text())
    h = {n: m["sla_rate"] for n, m in d["schedulers"].items() if n != "relmas"}
    assert len(set(h.values())) == len(h)
    assert f"vs the worst ({min(h, key=h.get)})" in text
    for name, m in d["schedulers"].items():
        row = next(line.split() for line in text.splitlines() if line.startswith(name + " "))
        assert float(row[4]) == pytest.approx(m["energy_pJ"] * 1e-12, rel=1e-3)


def test_no_plot_removes_an_earlier_chart(tmp_path):
    t = _table(tmp_path / "t.csv")
    args = ["online", "--table", str(t), "--bandwidth", "10", "--schedulers", "fcfs", "--requests", "20", "--seeds", "1",
            "--no-progress", "--out", str(tmp_path / "o"), "--json"]
    assert main(args) == 0 and (tmp_path / "o" / "sla.png").is_file()
    assert main([*args, "--no-plot"]) == 0
    assert not (tmp_path / "o" / "sla.png").exists()


def test_keep_late_is_recorded(tmp_path):
    t = _table(tmp_path / "t.csv")
    assert main(["online", "--table", str(t), "--bandwidth", "10", "--schedulers", "fcfs", "--requests", "20",
                 "--seeds", "1", "--no-progress", "--no-plot", "--keep-late", "--out", str(tmp_path / "o"), "--json"]) == 0
    assert json.loads((tmp_path / "o" / "online.json").read_text())["run"]["drop_late"] is False


def test_a_layer_no_core_maps_is_a_failed_run_not_bad_input(tmp_path, capsys):
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    system = tmp_path / "dlrm.yaml"       # DLRM's fc layers find no valid mapping on either core in 10 samples
    system.write_text(f"""system:
  name: dlrm_tiny_budget
  dram: {{type: LPDDR4, width: 64, bandwidth_GBps: 25.6}}
  cores:
  - {{name: simba, template: simba, params: {{}}}}
  - {{name: eyeriss, template: eyeriss, params: {{}}}}
workloads: [{root / 'problems' / 'dlrm_mlp.yaml'}]
""")
    rc = main(["online", str(system), "--layer-budget", "10", "--no-cache", "--no-progress", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 1 and "coexplore online: " in err and "(nor on eyeriss)" in err and "error:" not in err, err
    assert not (tmp_path / "o").exists()


def test_a_stream_of_very_many_layers_is_said():
    from coexplore.cli.online import LARGE_STREAM, stream_size_note
    rows = [("big", f"l{i}", [10, 20], [0, 0], [1, 1]) for i in range(1200)] + [("small", "l", [10, 20], [0, 0], [1, 1])]
    t = JobTable([Job(name=f"{d}.{l}", dnn=d, layer=l) for d, l, *_ in rows], ["a", "b"],
                 np.array([r[2] for r in rows], float), np.zeros((len(rows), 2)), np.ones((len(rows), 2)))
    system = served_system(t, 1.0)
    # equal rates: a request runs (1200 + 1) / 2 = 600.5 layers on average
    note = stream_size_note(system, [1.0, 1.0], 400, 123)
    assert note.startswith("a stream runs ~240,200 layers (layers per request: big 1,200)") and "123 streams" in note
    assert stream_size_note(system, [1.0, 1.0], int(LARGE_STREAM / 600.5) - 1, 123) is None
    assert stream_size_note(system, [0.0, 1.0], 400, 123) is None        # only the 1-layer DNN is requested


def test_load_of_capacity_in_both_bases(done, tmp_path, capsys):
    """The default basis keeps the run's key (no basis in it) and says what its load is of the cores'
    capacity; --load-basis capacity offers that load of the capacity itself."""
    _, table, data = done
    assert "basis" not in data["run"]["scenario"]
    rates = sum(m["requests_per_cycle"] for m in data["models"])
    assert data["load_of_capacity"] == pytest.approx(rates / data["capacity_requests_per_cycle"])
    assert data["load_of_capacity"] >= 1.1 - 1e-9          # capacity <= the fastest-core bound
    rc = main(["online", "--table", str(table), "--bandwidth", "10", "--load", "0.7", "--load-basis", "capacity",
               *FAST, "--schedulers", "fcfs,edf", "--out", str(tmp_path / "o"), "--json"])
    assert rc == 0
    cap = json.loads(capsys.readouterr().out)
    assert cap["run"]["scenario"]["basis"] == "capacity"
    assert cap["load_of_capacity"] == pytest.approx(0.7)
    assert cap["capacity_requests_per_cycle"] == pytest.approx(data["capacity_requests_per_cycle"])
    share = [m["requests_per_cycle"] for m in cap["models"]]
    assert share[0] == pytest.approx(share[1])             # the mix: equal


def _untimed(means: dict) -> dict:
    """Per scheduler its means without the wall-clock time per decision."""
    return {n: {k: v for k, v in m.items() if k != "decision_us"} for n, m in means.items()}


def test_several_loads_one_training(done, tmp_path, capsys):
    """--loads serves the evaluation streams at each load with the policy trained at --load: each
    load's numbers are those of a run at that load alone (heuristics), or given that policy (relmas)."""
    tmp, table, data = done
    base = ["online", "--table", str(table), "--bandwidth", "10", *FAST]
    import shutil
    shutil.copytree(tmp / "out", tmp_path / "out")          # (the shared run's folder stays as it is)
    rc = main([*base, "--load", "1.1", "--loads", "0.6,1.1,1.5", "--out", str(tmp_path / "out"), "--json"])
    assert rc == 0
    captured = capsys.readouterr()
    assert "using the policy this run already trained" in captured.err      # the training is the same run's
    many = json.loads(captured.out)
    assert [e["load"] for e in many["loads"]] == [0.6, 1.1, 1.5]
    assert _untimed(many["schedulers"]) == _untimed(data["schedulers"]) == _untimed(many["loads"][1]["schedulers"])
    policy = tmp_path / "out" / "policy.json"
    rc = main(["online", "--table", str(table), "--bandwidth", "10", *UNTRAINED, "--load", "0.6", "--policy", str(policy),
               "--out", str(tmp_path / "low"), "--json"])
    assert rc == 0
    low = json.loads(capsys.readouterr().out)
    assert _untimed(low["schedulers"]) == _untimed(many["loads"][0]["schedulers"])     # relmas and every heuristic
    assert low["relmas_gains"] == many["loads"][0]["relmas_gains"]
    assert many["loads"][2]["load_of_capacity"] == pytest.approx(1.5 / 1.1 * many["loads"][1]["load_of_capacity"])
    rows = list(csv.DictReader((tmp_path / "out" / "results.csv").open()))
    assert sorted({float(r["load"]) for r in rows}) == [0.6, 1.1, 1.5]
    assert len(rows) == 3 * len(many["schedulers"]) * 2
    first = [r for r in rows if float(r["load"]) == 0.6 and r["scheduler"] == "edf"]
    assert [float(r["sla_rate"]) for r in first] == low["schedulers"]["edf"]["sla_rate_per_seed"]
    assert not (tmp_path / "out" / "sla_load.png").exists()                  # (FAST: --no-plot)


def test_loads_chart_and_bad_loads(tmp_path, capsys):
    table = _table(tmp_path / "jobs.csv")
    base = ["online", "--table", str(table), "--bandwidth", "10", "--requests", "20", "--seeds", "1",
            "--schedulers", "fcfs,sjf", "--no-progress", "--out", str(tmp_path / "o")]
    assert main([*base, "--loads", "0.5,1.5"]) == 0
    assert (tmp_path / "o" / "sla_load.png").is_file() and (tmp_path / "o" / "sla.png").is_file()
    assert "SLA rate by load" in capsys.readouterr().out
    assert main(base) == 0                                  # one load: no load chart left from before
    assert not (tmp_path / "o" / "sla_load.png").exists()
    for bad in ("0.5,x", "0,1", "inf", ",", "0.5,,1", "nan", "-1"):
        rc = main([*base, "--loads", bad])
        err = capsys.readouterr().err
        assert rc == 2 and "--loads" in err and "Traceback" not in err, (bad, err)


def test_load_chart_and_table_say_relmas_trained_only_when_this_run_trained_it(tmp_path, monkeypatch, capsys):
    from pathlib import Path

    import coexplore.report.online_plot as op
    titles = []
    monkeypatch.setattr(op, "draw_sla_by_load", lambda data, path, title="": titles.append(title) or Path(path))
    table = _table(tmp_path / "jobs.csv")
    base = ["online", "--table", str(table), "--bandwidth", "10", "--requests", "20", "--seeds", "1",
            "--no-progress", "--loads", "0.5,1.5"]
    assert main([*base, "--schedulers", "fcfs,sjf", "--out", str(tmp_path / "h")]) == 0
    assert "relmas" not in titles[-1] and "loads 0.5, 0.8, 1.5" in titles[-1]
    assert main([*base, "--schedulers", "fcfs,relmas", "--train-generations", "1", "--train-streams", "1",
                 "--out", str(tmp_path / "r")]) == 0
    assert "relmas trained at load 0.8" in titles[-1]
    capsys.readouterr()
    policy = tmp_path / "r" / "policy.json"
    assert main([*base, "--schedulers", "fcfs,relmas", "--load", "1.2", "--policy", str(policy),
                 "--out", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert "trained at load 1.2" not in out and "trained at load 1.2" not in titles[-1]   # trained at 0.8
    assert "relmas's policy from" in out


def test_capacity_rate_refuses_a_layer_no_core_runs_unless_its_weight_is_0():
    from coexplore.errors import CoexploreError
    from coexplore.online.models import ServedModel, ServedSystem
    from coexplore.online.stream import capacity_rate

    def model(name, lat):
        lat = np.array(lat, float)
        return ServedModel(name, tuple(f"l{i}" for i in range(len(lat))), lat, np.zeros_like(lat), np.zeros_like(lat), lat)
    system = ServedSystem((model("x", [[1, 2]]), model("y", [[1, 2], [np.inf, np.inf]])), ("p", "q"), 10.0)
    assert capacity_rate(system, [1.0, 0.0]) == pytest.approx(1.5)
    with pytest.raises(CoexploreError, match="capacity"):
        capacity_rate(system, [1.0, 1.0])


def test_capacity_basis_has_its_own_default_folder(tmp_path, monkeypatch, capsys):
    table = _table(tmp_path / "jobs.csv")
    monkeypatch.chdir(tmp_path)
    base = ["online", "--table", str(table), "--bandwidth", "10", "--requests", "20", "--seeds", "1",
            "--schedulers", "fcfs", "--no-progress", "--no-plot", "--load", "0.7"]
    assert main(base) == 0 and main([*base, "--load-basis", "capacity"]) == 0
    names = sorted(p.name for p in (tmp_path / "results" / "online").iterdir())
    assert len(names) == 2 and [n.endswith("load0.7cap-s0") for n in names].count(True) == 1, names


def test_loads_summary_record_csv_and_key(tmp_path, capsys):
    table = _table(tmp_path / "jobs.csv")
    base = ["online", "--table", str(table), "--bandwidth", "10", "--requests", "30", "--seeds", "2",
            "--schedulers", "fcfs,sjf,edf,static", "--no-progress", "--no-plot"]
    assert main([*base, "--load", "0.8", "--out", str(tmp_path / "one"), "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert "loads" not in one["run"] and "loads" not in one
    assert main([*base, "--load", "0.8", "--loads", "1.4,0.5", "--out", str(tmp_path / "many")]) == 0
    out = capsys.readouterr().out.splitlines()
    data = json.loads((tmp_path / "many" / "online.json").read_text())
    assert "of the cores' capacity" in out[0] and "of capacity" not in out[0]
    row = next(line for line in out if line.startswith("capacity "))
    assert [float(x) for x in row.split()[1:]] == pytest.approx([e["load_of_capacity"] for e in data["loads"]], abs=1e-3)
    assert [e["load_of_capacity"] for e in data["loads"]] != pytest.approx([0.5, 0.8, 1.4])
    for e in data["loads"]:
        h = e["schedulers"]
        assert e["best_heuristic"] == max(h, key=lambda n: (h[n]["sla_rate"], -h[n]["energy_pJ"]))
    rows = list(csv.DictReader((tmp_path / "many" / "results.csv").open()))
    assert [float(r["load"]) for r in rows] == sorted(float(r["load"]) for r in rows)
    assert main([*base, "--load", "0.8", "--load-basis", "capacity", "--out", str(tmp_path / "cap")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.split("; DRAM traffic")[0].endswith("load 0.8 of capacity") and "DRAM traffic" in first
    assert main([*base, "--load", "0.8", "--loads", "0.80", "--out", str(tmp_path / "same")]) == 0
    captured = capsys.readouterr()
    assert "one load is served" in captured.err and "SLA rate by load" not in captured.out


@pytest.mark.parametrize("basis, word", [("capacity", "capacity"), ("fastest", "fastest-core")])
def test_sla_by_load_chart_axes(monkeypatch, tmp_path, basis, word):
    from pathlib import Path

    import coexplore.report.schedule_plot as plot
    from coexplore.report import online_plot
    figs = []
    monkeypatch.setattr(plot, "save_png", lambda fig, path: figs.append(fig) or Path(path))
    data = {"run": {"scenario": {"load": 0.8, "basis": basis}}, "schedulers": {"a": {"sla_rate": 0.5}},
            "loads": [{"load": x, "schedulers": {"a": {"sla_rate": s, "sla_rate_per_seed": p}}}
                      for x, s, p in [(0.5, 0.8, [0.7, 0.9]), (1.0, 0.5, [0.4, 0.6])]]}
    online_plot.draw_sla_by_load(data, tmp_path / "x.png")
    ax = figs[0].axes[0]
    assert word in ax.get_xlabel() and (basis == "capacity") == ("capacity" in ax.get_xlabel())
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(0.4) and band.max() == pytest.approx(0.9)


def test_an_interrupted_longer_training_is_not_replaced_by_a_shorter_one(tmp_path, capsys):
    """The saved state of this training after more generations than asked: refused, as a policy.json is."""
    from coexplore.cli.online import TRAIN_STATE
    t = _table(tmp_path / "t.csv")
    out = tmp_path / "o"
    args = ["online", "--table", str(t), "--bandwidth", "10", "--schedulers", "fcfs,relmas", *FAST, "--out",
            str(out), "--json"]
    assert main([*args, "--train-generations", "3"]) == 0
    policy = json.loads((out / "policy.json").read_text())
    state = {"run": policy["run"], "state": {"strategy": policy["strategy"], "history": policy["history"]}}
    (out / "policy.json").unlink()                  # as a training stopped after 3 generations leaves it
    (out / TRAIN_STATE).write_text(json.dumps(state))
    capsys.readouterr()
    assert main([*args, "--train-generations", "2"]) == 2
    err = capsys.readouterr().err
    assert "interrupted after 3 generations" in err
    assert "replaces it once there is one" not in err           # (the folder's note said it would, before the refusal)
    assert json.loads((out / TRAIN_STATE).read_text()) == state          # kept


def test_a_finished_longer_training_is_refused_before_any_note_on_the_folder(tmp_path, capsys):
    t = _table(tmp_path / "t.csv")
    out = tmp_path / "o"
    args = ["online", "--table", str(t), "--bandwidth", "10", "--schedulers", "fcfs,relmas", *FAST, "--out",
            str(out)]
    assert main([*args, "--train-generations", "3"]) == 0
    before = (out / "policy.json").read_text()
    capsys.readouterr()
    assert main([*args, "--train-generations", "2"]) == 2
    err = capsys.readouterr().err
    assert "policy.json holds this training, after 3 generations; --train-generations 2 would replace it" in err
    assert "replaces it once there is one" not in err and (out / "policy.json").read_text() == before


def test_an_interrupted_longer_training_beside_a_shorter_policy_is_not_replaced(tmp_path, capsys):
    from coexplore.cli.online import TRAIN_STATE
    t = _table(tmp_path / "t.csv")
    args = ["online", "--table", str(t), "--bandwidth", "10", "--schedulers", "fcfs,relmas", *FAST, "--json"]
    assert main([*args, "--train-generations", "2", "--out", str(tmp_path / "o")]) == 0
    assert main([*args, "--train-generations", "5", "--out", str(tmp_path / "long")]) == 0
    longer = json.loads((tmp_path / "long" / "policy.json").read_text())
    state = {"run": longer["run"], "state": {"strategy": longer["strategy"], "history": longer["history"]}}
    (tmp_path / "o" / TRAIN_STATE).write_text(json.dumps(state))   # as an 8-generation run stopped after 5 leaves it
    capsys.readouterr()
    assert main([*args, "--train-generations", "3", "--out", str(tmp_path / "o")]) == 2
    assert "interrupted after 5 generations" in capsys.readouterr().err
    assert json.loads((tmp_path / "o" / TRAIN_STATE).read_text()) == state


def test_two_heuristics_that_tie_are_not_both_best_and_worst(tmp_path, capsys):
    """Equal SLA rates: the best is the one of less energy, the worst the other, never one name for
    both (a user study's trace gave 'vs the best (fcfs) ... vs the worst (fcfs)')."""
    from coexplore.cli.online import _summary
    t = _table(tmp_path / "t.csv")
    assert main(["online", "--table", str(t), "--bandwidth", "10", "--load", "1.5", "--schedulers",
                 "sjf,static,relmas", *FAST, "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    d = json.loads((tmp_path / "o" / "online.json").read_text())
    tied = dict(d["schedulers"]["sjf"], energy_pJ=d["schedulers"]["sjf"]["energy_pJ"] * 2)
    d["schedulers"]["static"] = tied                 # static: sjf's SLA rate at twice its energy
    d["relmas_gains"]["static"] = d["relmas_gains"]["sjf"]
    d["best_heuristic"] = "sjf"
    line = next(x for x in _summary(d) if x.startswith("relmas vs the best"))
    assert "vs the best heuristic (sjf)" in line and "vs the worst (static)" in line
    d["schedulers"]["static"] = dict(d["schedulers"]["sjf"])     # alike in SLA rate and energy: no best, no worst
    line = next(x for x in _summary(d) if x.startswith("relmas vs the"))
    assert "vs the heuristics, all alike in SLA rate and energy, e.g. (sjf)" in line and "worst" not in line
    del d["schedulers"]["static"], d["relmas_gains"]["static"]     # one heuristic: it is named, no more
    line = next(x for x in _summary(d) if x.startswith("relmas vs"))
    assert line.startswith("relmas vs sjf: SLA") and "alike" not in line and "worst" not in line, line


@pytest.mark.parametrize("option", ["--requests", "--seeds", "--train-streams"])
def test_counts_beyond_what_memory_holds_are_refused(option, tmp_path, capsys):
    """User study: 1e11 requests (or streams) ended in a MemoryError traceback."""
    table = _table(tmp_path / "jobs.csv")
    with pytest.raises(SystemExit) as e:
        main(["online", "--table", str(table), "--bandwidth", "10", option, "1e11", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and option in err and "too large" in err and "Traceback" not in err


def test_extreme_mix_weights_are_their_ratios(tmp_path, capsys):
    """Weights of 1e308 (whose sum overflows) or 5e-324 serve the DNNs as 1:1 does."""
    table = _table(tmp_path / "jobs.csv")
    out = {}
    for mix in (["1", "1"], ["1e308", "1e308"], ["5e-324", "5e-324"]):
        rc = main(["online", "--table", str(table), "--bandwidth", "10", "--schedulers", "fcfs", *FAST, "--mix", *mix,
                   "--out", str(tmp_path / mix[0]), "--json"])
        assert rc == 0
        out[mix[0]] = (tmp_path / mix[0] / "requests.csv").read_text()
    capsys.readouterr()
    assert out["1"] == out["1e308"] == out["5e-324"]


def test_training_options_with_a_given_policy_are_refused(tmp_path, capsys):
    """User study: --policy with --train-generations 50 ran with no training and no word."""
    table = _table(tmp_path / "jobs.csv")
    base = ["online", "--table", str(table), "--bandwidth", "10", "--requests", "20", "--seeds", "1", "--no-progress",
            "--no-plot"]
    assert main([*base, "--train-generations", "1", "--train-streams", "1", "--out", str(tmp_path / "a")]) == 0
    policy = tmp_path / "a" / "policy.json"
    for option in ("--train-generations", "--train-streams"):
        rc = main([*base, "--policy", str(policy), option, "7", "--out", str(tmp_path / "b")])
        err = capsys.readouterr().err
        assert rc == 2 and f"key '{option}'" in err and "--policy" in err and "Traceback" not in err, err
    assert main([*base, "--policy", str(policy), "--out", str(tmp_path / "b")]) == 0
    assert main([*base, "--schedulers", "fcfs", "--train-streams", "2", "--out", str(tmp_path / "c")]) == 0
    assert "--train-streams 2: no relmas among the schedulers, nothing is trained" in capsys.readouterr().err
    for cache in (["--no-cache"], ["--cache", str(tmp_path / "c.sqlite")]):    # no layers mapped from a table
        assert main([*base, "--policy", str(policy), *cache, "--out", str(tmp_path / "d")]) == 2
        assert f"key '{cache[0]}': only used to build the job table" in capsys.readouterr().err


def test_a_policy_scaled_by_any_factor_decides_alike(done, tmp_path):
    """User study: every weight 1e308 (finite, accepted) overflowed relmas's scores: every request
    dropped, latency NaN. Scaling the weights changes no decision (only signs and order count)."""
    tmp, table, _ = done
    w = load_policy(tmp / "out" / "policy.json").weights
    system = served_system(load_table(table), 10.0)
    stream = poisson_stream(system, Scenario(load=1.1, requests=40), 0)
    base = simulate(system, stream, LearnedScheduler(Policy(w)))
    for factor in (2.0 ** 900, 1e300 / np.max(np.abs(w)), 1e308 / np.max(np.abs(w))):
        scaled = simulate(system, stream, LearnedScheduler(Policy(w * factor)))
        assert np.array_equal(scaled.finish, base.finish, equal_nan=True) and scaled.sla_rate == base.sla_rate
    ones = simulate(system, stream, LearnedScheduler(Policy(np.ones(len(FEATURES)))))
    huge = simulate(system, stream, LearnedScheduler(Policy(np.full(len(FEATURES), 1e308))))   # the study's file
    assert np.array_equal(huge.finish, ones.finish, equal_nan=True) and huge.sla_rate == ones.sla_rate > 0


def test_the_record_names_the_system_by_its_name_key(tmp_path):
    """User study: `system.name: mini` in base.yaml was recorded as 'base' (schedule and sweep say 'mini')."""
    import argparse

    from coexplore.cli.online import _system_name
    root = Path(__file__).resolve().parent.parent
    f = tmp_path / "base.yaml"
    f.write_text((root / "arch" / "simba_2x2.yaml").read_text().replace("  name: simba_2x2", "  name: mini"))
    assert _system_name(argparse.Namespace(table=None, system=str(f))) == "mini"
    g = tmp_path / "unnamed.yaml"
    g.write_text((root / "arch" / "simba_2x2.yaml").read_text().replace("  name: simba_2x2\n", ""))
    assert _system_name(argparse.Namespace(table=None, system=str(g))) == "unnamed"


def test_an_empty_scheduler_name_is_refused(tmp_path, capsys):
    table = _table(tmp_path / "jobs.csv")
    for given in ("edf,", "edf,,fcfs", " , "):
        assert main(["online", "--table", str(table), "--bandwidth", "10", "--schedulers", given, "--no-progress",
                     "--out", str(tmp_path / "o")]) == 2
        assert "key '--schedulers'" in capsys.readouterr().err


def test_a_policy_trained_on_other_cores_or_dnns_is_noted_when_given(done, tmp_path, capsys):
    """User study: a policy trained on another system was used without a word. policy.json records the
    cores and DNNs it was trained to serve; given on the same ones no note, on others a note."""
    tmp, table, _ = done
    policy = json.loads((tmp / "out" / "policy.json").read_text())
    assert policy["trained_on"] == {"cores": ["fast", "slow"], "dnns": ["cnn", "gemm"]}
    argv = ["online", "--bandwidth", "10", "--load", "1.1", *UNTRAINED, "--schedulers", "relmas",
            "--policy", str(tmp / "out" / "policy.json")]
    assert main([*argv, "--table", str(table), "--out", str(tmp_path / "same")]) == 0
    assert "was trained on other" not in capsys.readouterr().err
    rows = [r for r in table.read_text().splitlines()]
    other = tmp_path / "other.csv"
    other.write_text("\n".join([rows[0]] + [r for r in rows[1:] if r.split(",")[1] == "cnn"]) + "\n")
    assert main([*argv, "--table", str(other), "--out", str(tmp_path / "other")]) == 0
    err = capsys.readouterr().err
    assert "was trained on other dnns (dnns cnn, gemm)" in err
