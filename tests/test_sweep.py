"""`coexplore sweep`: every point mapped, scheduled and measured; the records checked against the
files each point writes (schedule, job table, ART), the front against a dominance check written
here, resuming after a stop, and bad input."""

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from coexplore.cli.main import main

DATA = Path(__file__).parent / "data" / "sweep"
FAST = ["--layer-budget", "60", "--budget", "60", "--no-progress", "--no-cache"]


def _system(tmp_path) -> Path:
    for f in DATA.glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    return tmp_path / "tiny_sweep.yaml"


def _sweep(argv, capsys):
    rc = main(["sweep", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    """One finished sweep (4 points), shared by the checks that only read it."""
    tmp = tmp_path_factory.mktemp("sweep")
    system = _system(tmp)
    rc = main(["sweep", str(system), *FAST, "--out", str(tmp / "out"), "--json"])
    assert rc == 0
    return tmp / "out", json.loads((tmp / "out" / "sweep.json").read_text()), system


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_every_point_in_sweep_order(done):
    out, data, _ = done
    spec = yaml.safe_load((DATA / "tiny_sweep.yaml").read_text())
    axes = spec["sweep"]["axes"]
    recs = data["records"]
    assert data["points"] == data["done"] == 4 and data["complete"] and data["failed"] == 0
    assert data["command"].startswith("coexplore sweep ")          # how to run it again
    want = [{"cores.eyeriss.params.pe_mesh_x": x, "dram.bandwidth_GBps": b}
            for x in axes["cores.eyeriss.params.pe_mesh_x"] for b in axes["dram.bandwidth_GBps"]]
    assert [r["values"] for r in recs] == want                  # last axis fastest
    rows = _rows(out / "points.csv")
    assert [r["point"] for r in rows] == [r["point"] for r in recs] == ["p0", "p1", "p2", "p3"]
    assert [float(r["dram.bandwidth_GBps"]) for r in rows] == [0.5, 25.6, 0.5, 25.6]


def test_metrics_are_the_points_schedule_jobs_and_area(done):
    out, data, _ = done
    for rec in data["records"]:
        folder = out / rec["dir"]
        sched = json.loads((folder / "schedule.json").read_text())
        assert rec["latency_cycles"] == sched["makespan"]
        assert rec["latency_s"] == pytest.approx(sched["makespan"] / 1e9, rel=1e-12)     # 1 GHz
        # energy: each job's energy on the core it was given, from the point's job table
        jobs = {r["job"]: r for r in _rows(folder / "jobs.csv")}
        energy = sum(float(jobs[j][f"en_{c}"]) for j, c in zip(sched["jobs"], sched["core"]))
        assert rec["energy_J"] == pytest.approx(energy * 1e-12, rel=1e-9)
        assert rec["edp_J_s"] == pytest.approx(rec["energy_J"] * rec["latency_s"], rel=1e-12)
        assert rec["jobs"] == len(sched["jobs"]) == 4                # conv_b counts twice
        assert rec["throughput_per_s"] == pytest.approx(1 / rec["latency_s"], rel=1e-12)   # one DNN
        # area: 2 copies x (instances x area) over the ART written for the point
        art = yaml.safe_load((folder / "cores" / "eyeriss" / "ART.yaml").read_text())["ART"]["tables"]
        per_copy = 0.0
        for t in art:
            n = 1
            for lo, hi in re.findall(r"\[(\d+)\.\.(\d+)\]", t["name"]):
                n *= int(hi) - int(lo) + 1
            per_copy += n * float(t["area"])
        assert rec["area_mm2"] == pytest.approx(2 * per_copy / 1e6, rel=1e-9)
        pes = rec["values"]["cores.eyeriss.params.pe_mesh_x"] * 12
        assert rec["macs"] == 2 * pes and rec["cores"] == 2
        # the point's core files are Timeloop YAMLs with its PE columns
        arch = (folder / "cores" / "eyeriss" / "arch.yaml").read_text()
        assert f"meshX: {rec['values']['cores.eyeriss.params.pe_mesh_x']}" in arch


def test_bandwidth_moves_latency_not_mappings(done):
    """Points that differ only in the off-chip bandwidth share their mappings (same job energies);
    the scarcer bandwidth's schedule cannot beat the lower bound of its own table."""
    _, data, _ = done
    r = data["records"]
    for slow, fast in ((r[0], r[1]), (r[2], r[3])):
        assert slow["energy_J"] == pytest.approx(fast["energy_J"], rel=1e-12)
        assert slow["area_mm2"] == fast["area_mm2"]
        assert slow["latency_cycles"] >= slow["lower_bound_cycles"] > fast["lower_bound_cycles"]
    assert r[0]["area_mm2"] < r[2]["area_mm2"]                      # 4 PE columns are smaller than 14


def test_front_is_the_non_dominated_points(done):
    out, data, _ = done
    recs = data["records"]
    cols = [o["column"] for o in data["objectives"]]
    assert cols == ["latency_s", "energy_J", "area_mm2"]

    def dominates(a, b):
        return all(a[c] <= b[c] for c in cols) and any(a[c] < b[c] for c in cols)
    want = [r["point"] for r in recs if not any(dominates(o, r) for o in recs)]
    assert data["pareto"] == want and want
    assert sorted(r["point"] for r in _rows(out / "pareto.csv")) == sorted(want)
    assert [r["pareto"] for r in _rows(out / "points.csv")] == ["1" if r["point"] in want else "0" for r in recs]
    html = (out / "report.html").read_text()
    assert all(r["point"] in html for r in recs)
    assert (out / "pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / recs[0]["dir"] / "gantt.png").is_file()


def test_summary_and_objectives_option(tmp_path, capsys, done):
    out, data, system = done
    shutil.copytree(out, tmp_path / "o")
    # the objectives choose the front only: the same points, nothing run again
    rc, text, err = _sweep([str(system), *FAST, "--out", str(tmp_path / "o"), "--objectives",
                            "throughput,area"], capsys)
    assert rc == 0, err
    assert "all done in" in err
    recs = json.loads((tmp_path / "o" / "sweep.json").read_text())["records"]
    assert recs == data["records"]
    best_tp = max(recs, key=lambda r: r["throughput_per_s"])["point"]
    smallest = min(r["area_mm2"] for r in recs)
    front_lines = text.split("Pareto front")[1].splitlines()[2:]
    front = [line.split()[0] for line in front_lines if line.startswith("  p")]
    assert best_tp in front and any(r["area_mm2"] == smallest for r in recs if r["point"] in front)
    assert "throughput_per_s" in text


def test_objectives_edited_in_the_system_yaml_reuse_the_points(tmp_path, capsys, done):
    """User study: the README says the objectives only choose the front, but editing `objectives:`
    (or a comment) in the system YAML refused the folder as another run's points."""
    out, data, system = done
    shutil.copytree(out, tmp_path / "o")
    text = system.read_text()
    try:
        system.write_text("# a comment\n" + text.replace("objectives: [latency, energy, area]",
                                                         "objectives: [latency, area]"))
        rc, _, err = _sweep([str(system), *FAST, "--out", str(tmp_path / "o"), "--json"], capsys)
    finally:
        system.write_text(text)
    assert rc == 0 and "all done in" in err and "nothing to run" in err and "already done" not in err, err
    got = json.loads((tmp_path / "o" / "sweep.json").read_text())
    assert got["records"] == data["records"] and [o["name"] for o in got["objectives"]] == ["latency", "area"]


def test_resume_after_a_stop(tmp_path, capsys, monkeypatch, done):
    """A stop during the third point: the two finished are kept, a rerun runs the other two and ends
    with the records of an uninterrupted sweep."""
    _, data, system = done
    import coexplore.sweep.run as run_mod
    real = run_mod.run_point
    calls = []

    def stopping(spec, index, *a, **k):
        calls.append(index)
        if index == 2:
            raise KeyboardInterrupt
        return real(spec, index, *a, **k)
    monkeypatch.setattr(run_mod, "run_point", stopping)
    rc, _, err = _sweep([str(system), *FAST, "--out", str(tmp_path / "o")], capsys)
    assert rc == 130 and "2 of 4 points finished (in" in err
    kept = json.loads((tmp_path / "o" / "sweep.json").read_text())
    assert kept["done"] == 2 and not kept["complete"]
    report = (tmp_path / "o" / "report.html").read_text()
    assert "Stopped: 2 of 4 points done" in report and "2 points of 4:" in report
    # a line cut short by a kill is not a point
    with open(tmp_path / "o" / "points.jsonl", "a") as f:
        f.write('{"point": "p2", "index": 2, "val')
    monkeypatch.setattr(run_mod, "run_point", real)
    seen = []
    monkeypatch.setattr(run_mod, "run_point", lambda spec, index, *a, **k: seen.append(index) or real(spec, index, *a, **k))
    rc, _, err = _sweep([str(system), *FAST, "--out", str(tmp_path / "o")], capsys)
    assert rc == 0 and "2 already done" in err and seen == [2, 3]
    recs = json.loads((tmp_path / "o" / "sweep.json").read_text())["records"]
    strip = lambda rs: [{k: v for k, v in r.items() if k != "run"} for r in rs]   # noqa: E731
    assert strip(recs) == strip(data["records"])


def test_other_settings_do_not_reuse_points(tmp_path, capsys, monkeypatch, done):
    """An --out holding another sweep run's points is refused (naming what differs) and left as it
    was; --restart replaces them; none of them is resumed."""
    out, _, system = done
    shutil.copytree(out, tmp_path / "o")
    before = (tmp_path / "o" / "points.jsonl").read_text()
    import coexplore.sweep.run as run_mod
    real = run_mod.run_point
    seen = []
    monkeypatch.setattr(run_mod, "run_point", lambda spec, index, *a, **k: seen.append(index) or real(spec, index, *a, **k))
    other = [str(system), "--layer-budget", "60", "--budget", "61", "--no-progress", "--no-cache",
             "--out", str(tmp_path / "o"), "--no-plot"]
    rc, _, err = _sweep(other, capsys)
    assert rc == 2 and seen == [] and "4 points of another sweep run" in err and "budget" in err, err
    assert "--restart" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "o" / "points.jsonl").read_text() == before
    stale = tmp_path / "o" / "points" / "p17"          # a point folder of a larger earlier sweep
    stale.mkdir()
    (stale / "schedule.json").write_text("{}")
    rc, _, err = _sweep([*other, "--restart"], capsys)
    assert rc == 0 and seen == [0, 1, 2, 3] and "already done" not in err
    assert sorted(p.name for p in (tmp_path / "o" / "points").iterdir()) == ["p0", "p1", "p2", "p3"]
    lines = (tmp_path / "o" / "points.jsonl").read_text().splitlines()
    assert len(lines) == 4 and len({json.loads(x)["run"] for x in lines}) == 1
    assert not (tmp_path / "o" / "pareto.png").exists()          # the earlier run's chart, not this one's
    seen.clear()
    rc, _, err = _sweep(other[:-1], capsys)       # plots on: the points run without them get their charts
    assert rc == 0 and seen == [] and "all done in" in err
    assert all((tmp_path / "o" / "points" / f"p{i}" / "gantt.png").is_file() for i in range(4))
    assert (tmp_path / "o" / "pareto.png").is_file()


def test_bad_options_leave_the_folder_alone(tmp_path, capsys, done):
    """Bad budgets or workloads are refused before the output folder is touched."""
    out, _, system = done
    shutil.copytree(out, tmp_path / "o")
    before = {p: p.read_bytes() for p in (tmp_path / "o").rglob("*") if p.is_file()}
    for argv, key in ((["--budget", "0"], "--budget"), (["--layer-budget", "0"], "--layer-budget"),
                      (["--workload", str(tmp_path / "none.yaml")], "none.yaml")):
        rc, _, err = _sweep([str(system), *FAST, *argv, "--out", str(tmp_path / "o")], capsys)
        assert rc == 2 and key in err and "Traceback" not in err, err
    assert {p: p.read_bytes() for p in (tmp_path / "o").rglob("*") if p.is_file()} == before


def test_bad_input_is_one_line(tmp_path, capsys):
    system = _system(tmp_path)
    for argv, words in (([str(system), "--objectives", "speed"], ["--objectives", "speed"]),
                        ([str(system), "--objectives", "latency,,area"], ["--objectives", "an empty item"]),
                        ([str(system), "--objectives", " , "], ["--objectives", "no objective given"]),
                        ([str(tmp_path / "missing.yaml")], ["missing.yaml"]),
                        ([str(system), "--searcher", "nope"], ["--searcher", "nope"])):
        rc, _, err = _sweep([*argv, *FAST, "--out", str(tmp_path / "x")], capsys)
        assert rc == 2, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert all(w in err for w in words), err
    text = system.read_text().replace("pe_mesh_x: [4, 14]", "pe_mesh_x: [4, 0]")
    system.write_text(text)
    rc, _, err = _sweep([str(system), *FAST, "--out", str(tmp_path / "x")], capsys)
    assert rc == 2 and "key 'sweep.axes.cores.eyeriss.params.pe_mesh_x': value 0" in err and "Traceback" not in err, err
    system.write_text(text.replace("[4, 0]", "[4, 4]"))            # a point run twice: refused
    rc, _, err = _sweep([str(system), *FAST, "--out", str(tmp_path / "x")], capsys)
    assert rc == 2 and "given twice" in err and "sweep.axes.cores.eyeriss.params.pe_mesh_x" in err, err


def test_a_point_that_does_not_build_is_a_failed_point(tmp_path):
    """Sweeps of over 256 points are checked value by value, not every combination: a combination
    that gives an invalid core is found when its point runs, recorded as failed, naming it."""
    from coexplore.spec.system import load_system
    from coexplore.sweep.run import SweepSettings, run_point
    spec = load_system(_system(tmp_path))
    values = {"cores.eyeriss.params.pe_mesh_x": 4, "cores.eyeriss.params.glb_width": 60}
    rec = run_point(spec, 7, "p7", values, SweepSettings(layer_budget=30, budget=30), tmp_path / "o")
    assert rec["status"] == "failed" and rec["index"] == 7
    assert "glb_width=60" in rec["error"] and "pe_mesh_x=4" in rec["error"] and "glb_width" in rec["error"]


def test_the_default_layer_mapper_written_out_is_the_same_run(tmp_path, capsys, done):
    out, _, system = done
    shutil.copytree(out, tmp_path / "o")
    rc, _, err = _sweep([str(system), *FAST, "--layer-searcher", "marl", "--out", str(tmp_path / "o"),
                         "--no-plot"], capsys)
    assert rc == 0 and "all done in" in err and "nothing to run" in err and "already done" not in err, err


def test_no_valid_mapping_anywhere_fails_the_point(tmp_path, capsys):
    """A point whose layer no core can map within the budget is a failed point, not a crash; a sweep
    whose every point failed exits 1 (as a failed `coexplore map`)."""
    root = Path(__file__).resolve().parents[1]
    system = tmp_path / "dlrm.yaml"       # DLRM's fc layers find no valid Simba-like mapping in 10 samples
    system.write_text(f"""system:
  name: dlrm_on_simba
  dram: {{type: LPDDR4, width: 64, bandwidth_GBps: 25.6}}
  cores:
  - {{name: simba, template: simba, params: {{}}}}
  - {{name: eyeriss, template: eyeriss, params: {{}}}}
workloads: [{root / 'problems' / 'dlrm_mlp.yaml'}]
sweep:
  axes:
    dram.bandwidth_GBps: [12.8, 25.6]
""")
    rc, _, err = _sweep([str(system), "--layer-budget", "10", "--budget", "10", "--no-progress", "--no-cache",
                         "--out", str(tmp_path / "o"), "--no-plot"], capsys)
    data = json.loads((tmp_path / "o" / "sweep.json").read_text())
    assert rc == 1, err
    assert data["failed"] == data["done"] == 2 and data["pareto"] == []
    assert all("no valid mapping" in r["error"] for r in data["records"])
    assert all("on core simba (nor on eyeriss)" in r["error"] for r in data["records"])   # both were tried
    assert "no valid mapping" in (tmp_path / "o" / "report.html").read_text()
    assert "every point failed" in err
    rows = _rows(tmp_path / "o" / "points.csv")
    assert [r["status"] for r in rows] == ["failed", "failed"] and all("layer " in r["error"] for r in rows)
    # what is known without a mapping is in the table: the cores, their MAC units and area (the ART's sum)
    from coexplore.arch.tables import art_area_mm2
    from coexplore.energy.tables import read_art
    area = sum(art_area_mm2(read_art(tmp_path / "o" / "points" / "p0" / "cores" / c / "ART.yaml"))
               for c in ("simba", "eyeriss"))
    assert [r["cores"] for r in rows] == ["2", "2"] and all(int(r["macs"]) > 0 for r in rows)
    assert float(rows[0]["area_mm2"]) == pytest.approx(area, rel=1e-3)


def test_pareto_front_against_brute_force():
    """Random points (ties and NaN rows included), min and max senses: the front is exactly the rows
    no other valid row dominates."""
    import numpy as np

    from coexplore.sweep.metrics import OBJECTIVES
    from coexplore.sweep.pareto import pareto_front
    rng = np.random.default_rng(0)
    for trial in range(200):
        k = int(rng.integers(1, 4))
        objs = [OBJECTIVES[n] for n in rng.choice(list(OBJECTIVES), size=k, replace=False)]
        v = rng.integers(0, 5, size=(int(rng.integers(1, 12)), k)).astype(float)
        v[rng.random(len(v)) < 0.15, 0] = np.nan
        sign = np.array([1 if o.sense == "min" else -1 for o in objs])
        ok = ~np.isnan(v).any(axis=1)
        want = [bool(ok[i]) and not any(ok[j] and np.all(sign * v[j] <= sign * v[i]) and
                                        np.any(sign * v[j] < sign * v[i]) for j in range(len(v)))
                for i in range(len(v))]
        assert pareto_front(v, objs).tolist() == want, (trial, v, [o.name for o in objs])


def test_store_keeps_only_this_runs_points(tmp_path):
    from coexplore.sweep.store import SweepStore
    a = SweepStore(tmp_path, "run0")
    a.add({"point": "p0", "index": 0, "status": "ok"})
    a.add({"point": "p1", "index": 1, "status": "ok"})
    assert sorted(SweepStore(tmp_path, "run0").records) == [0, 1]
    b = SweepStore(tmp_path, "run1")             # another run: its lines are not points of this one
    assert b.records == {} and b.others == 2
    assert len((tmp_path / "points.jsonl").read_text().splitlines()) == 2     # reading changes nothing
    b.add({"point": "p0", "index": 0, "status": "ok"})
    b.drop_others()
    assert sorted(SweepStore(tmp_path, "run1").records) == [0]
    assert SweepStore(tmp_path, "run0").records == {}     # the other run's lines are gone
    b.clear()
    assert SweepStore(tmp_path, "run1").records == {}


def test_parallel_points_give_the_same_records(tmp_path, capsys, done):
    """--jobs 2: the layers of all points mapped first (each design once), the points in 2 processes:
    the records of one process."""
    _, data, system = done
    rc, _, err = _sweep([str(system), "--layer-budget", "60", "--budget", "60", "--no-progress", "--jobs", "2",
                         "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "p"), "--no-plot"], capsys)
    assert rc == 0, err
    assert json.loads((tmp_path / "p" / "sweep.json").read_text())["records"] == data["records"]


def test_map_layers_maps_each_design_once(tmp_path):
    """4 points, 2 core designs (the bandwidth axis leaves the core alone) x 3 distinct layers = 6
    searches; all cached afterwards."""
    from coexplore.arch.system import build_system
    from coexplore.model.cache import ResultCache
    from coexplore.spec.system import load_system
    from coexplore.system.from_system import map_layers
    spec = load_system(_system(tmp_path))
    systems = [build_system(spec.at_point(p)) for p in spec.sweep_points()]
    cache = ResultCache(tmp_path / "c.sqlite")
    try:
        assert map_layers(systems, layer_budget=30, cache=cache, workers=2) == 6
        assert map_layers(systems, layer_budget=30, cache=cache, workers=2) == 0
        assert map_layers(systems, layer_budget=31, cache=cache, workers=2) == 6     # another search
    finally:
        cache.close()


def test_point_ids_and_axis_labels():
    from coexplore.cli.sweep import axis_labels
    from coexplore.sweep.run import point_ids
    assert point_ids(10) == [f"p{i}" for i in range(10)]
    assert point_ids(11)[0] == "p00" and point_ids(18)[-1] == "p17" and point_ids(1) == ["p0"]
    assert axis_labels(["cores.a.params.glb_depth", "cores.b.params.glb_depth", "cores.a.count",
                        "dram.bandwidth_GBps", "system.clock_GHz"]) == \
        ["a.glb_depth", "b.glb_depth", "a.count", "dram.bandwidth_GBps", "clock_GHz"]


def test_tables_hold_the_records_exactly(done):
    out, data, _ = done
    recs = {r["point"]: r for r in data["records"]}
    for row in _rows(out / "points.csv"):
        rec = recs[row["point"]]
        for col in ("latency_s", "energy_J", "area_mm2", "edp_J_s"):    # named as in sweep.json and the README
            assert float(row[col]) == rec[col]              # written exactly
        assert row["status"] == "ok" and row["error"] == ""
    front = _rows(out / "pareto.csv")
    assert [float(r["latency_s"]) for r in front] == sorted(float(r["latency_s"]) for r in front)
    assert {r["pareto"] for r in front} == {"1"}
    from coexplore.sweep.store import points_csv
    text = points_csv([{"point": "p9", "values": {}, "status": "failed", "error": "x", "latency_s": float("nan")}],
                      [], [False])
    assert next(csv.DictReader(text.splitlines()))["latency_s"] == ""


def test_schedule_files_match_the_record(done):
    out, data, _ = done
    for rec in data["records"]:
        sched = json.loads((out / rec["dir"] / "schedule.json").read_text())
        assert sched["point"] == rec["point"] and sched["values"] == rec["values"]
        assert rec["lower_bound_cycles"] == sched["lower_bound"] <= rec["latency_cycles"]
        # the shared bandwidth of the point: its axis value (GB/s) at 1 GHz
        assert rec["offchip_bytes_per_cycle"] == pytest.approx(rec["values"]["dram.bandwidth_GBps"], rel=1e-12)
        assert any("32nm" in w for w in rec["warnings"])         # the estimator's node scaling, said per point


def test_clock_tenants_and_mapper_file(tmp_path, capsys):
    """At 2 GHz seconds are cycles / 2e9 and bytes per cycle halve; two copies of a workload are two
    tenants (twice the jobs, two inferences per makespan); a system mapper YAML's budget is used."""
    system = _system(tmp_path)
    system.write_text(system.read_text().replace("clock_GHz: 1.0", "clock_GHz: 2.0"))
    (tmp_path / "magma30.yaml").write_text("searcher: magma\nbudget: 30\n")
    rc, _, err = _sweep([str(system), "--layer-budget", "60", "--no-progress", "--no-cache", "--no-plot",
                         "--workload", str(tmp_path / "small_net.yaml"), "--workload", str(tmp_path / "small_net.yaml"),
                         "--searcher", str(tmp_path / "magma30.yaml"), "--out", str(tmp_path / "o")], capsys)
    assert rc == 0, err
    data = json.loads((tmp_path / "o" / "sweep.json").read_text())
    assert data["run"]["budget"] == 30
    for rec in data["records"]:
        sched = json.loads((tmp_path / "o" / rec["dir"] / "schedule.json").read_text())
        assert sched["samples"] == 30 and rec["jobs"] == 8
        assert rec["latency_s"] == pytest.approx(sched["makespan"] / 2e9, rel=1e-12)
        assert rec["throughput_per_s"] == pytest.approx(2 / rec["latency_s"], rel=1e-12)
        assert rec["offchip_bytes_per_cycle"] == pytest.approx(rec["values"]["dram.bandwidth_GBps"] / 2, rel=1e-12)


def test_objectives_from_the_yaml_or_the_defaults(tmp_path, capsys):
    system = _system(tmp_path)
    argv = [*FAST, "--no-plot", "--json"]
    system.write_text(system.read_text().replace("objectives: [latency, energy, area]", "objectives: [edp]"))
    rc, out, err = _sweep([str(system), *argv, "--out", str(tmp_path / "a")], capsys)
    assert rc == 0 and [o["column"] for o in json.loads(out)["objectives"]] == ["edp_J_s"], err
    system.write_text(system.read_text().replace("objectives: [edp]\n", ""))
    rc, out, err = _sweep([str(system), *argv, "--out", str(tmp_path / "b")], capsys)
    assert [o["column"] for o in json.loads(out)["objectives"]] == ["latency_s", "energy_J", "area_mm2"]
    system.write_text(system.read_text() + "objectives: []\n")
    rc, out, err = _sweep([str(system), *argv, "--out", str(tmp_path / "c")], capsys)
    assert rc == 2 and "objectives" in err and "empty" in err


def test_what_makes_another_run(tmp_path, capsys, done):
    """Another layer seed, scheduler seed or an edited workload is another run: refused in the same
    --out, naming what differs."""
    out, _, system = done
    shutil.copytree(out, tmp_path / "o")
    for extra, word in ((["--layer-seed", "1"], "layer_seed"), (["--seed", "1"], "seed")):
        rc, _, err = _sweep([str(system), *FAST, *extra, "--out", str(tmp_path / "o")], capsys)
        assert rc == 2 and "another sweep run" in err and word in err, err
    copy = _system(tmp_path / "o")         # the same files elsewhere: another system path, a new run
    sys2 = tmp_path / "s2"
    sys2.mkdir()
    for f in DATA.glob("*.yaml"):
        shutil.copy(f, sys2 / f.name)
    rc, _, err = _sweep([str(sys2 / "tiny_sweep.yaml"), *FAST, "--no-plot", "--out", str(tmp_path / "e")], capsys)
    assert rc == 0
    (sys2 / "small_net.yaml").write_text((sys2 / "small_net.yaml").read_text().replace("M: 10", "M: 12"))
    rc, _, err = _sweep([str(sys2 / "tiny_sweep.yaml"), *FAST, "--no-plot", "--out", str(tmp_path / "e")], capsys)
    assert rc == 2 and "small_net.yaml" in err, err
    assert copy.exists()


def test_default_folder_and_partial_failure(tmp_path, capsys, monkeypatch, done):
    """Without --out: results/sweep/<system>-s<seed>; a sweep with some failed points exits 0 and
    keeps them off the front; a crash after two points leaves their rows in points.csv."""
    _, data, system = done
    monkeypatch.chdir(tmp_path)
    import coexplore.sweep.run as run_mod
    real = run_mod.run_point

    def first_fails(spec, index, pid, values, *a, **k):
        rec = real(spec, index, pid, values, *a, **k)
        return {**rec, "status": "failed", "error": "made to fail"} if index == 0 else rec
    monkeypatch.setattr(run_mod, "run_point", first_fails)
    rc, _, err = _sweep([str(system), *FAST, "--no-plot", "--seed", "3"], capsys)
    assert rc == 0, err
    got = json.loads((tmp_path / "results" / "sweep" / "tiny_sweep-s3" / "sweep.json").read_text())
    assert got["failed"] == 1 and "p0" not in got["pareto"]
    assert _rows(tmp_path / "results" / "sweep" / "tiny_sweep-s3" / "points.csv")[0]["status"] == "failed"

    def crash(spec, index, *a, **k):
        if index == 2:
            raise RuntimeError("boom")
        return real(spec, index, *a, **k)
    monkeypatch.setattr(run_mod, "run_point", crash)
    rc, _, err = _sweep([str(system), *FAST, "--no-plot", "--out", str(tmp_path / "c")], capsys)
    assert rc == 3
    assert [r["point"] for r in _rows(tmp_path / "c" / "points.csv")] == ["p0", "p1"]


def _own_core_system(tmp_path, name: str, core: str) -> Path:
    """A system of one core of the user's own files (a copy of the corpus' simba_like), swept over
    two bandwidths, with small_net as its workload."""
    shutil.copytree(Path(__file__).parent / "data" / "timeloop_corpus" / "arches" / "simba_like",
                    tmp_path / "simba_like")
    shutil.copy(DATA / "small_net.yaml", tmp_path / "small_net.yaml")
    system = tmp_path / "own.yaml"
    system.write_text(f"""system:
  name: {name}
  dram: {{type: LPDDR4, width: 64, bandwidth_GBps: 25.6}}
  cores:
  - {{name: mine, {core}}}
workloads: [small_net.yaml]
sweep:
  axes:
    dram.bandwidth_GBps: [12.8, 25.6]
""")
    return system


def test_own_core_in_a_grid(tmp_path, capsys):
    """A core of the user's own files (the corpus' simba_like with its ERT and ART) in a 1 x 2 grid:
    twice its MACs (from its ART's instance ranges) and twice its ART area; editing its ART is
    another run."""
    corpus = Path(__file__).parent / "data" / "timeloop_corpus" / "arches" / "simba_like"
    system = _own_core_system(tmp_path, "own_grid", "arch: simba_like/arch.yaml, grid: [1, 2]")
    rc, _, err = _sweep([str(system), *FAST, "--no-plot", "--out", str(tmp_path / "o")], capsys)
    assert rc == 0, err
    art = yaml.safe_load((corpus / "ART.yaml").read_text())["ART"]["tables"]
    area = macs = 0
    for t in art:
        n = 1
        for lo, hi in re.findall(r"\[(\d+)\.\.(\d+)\]", t["name"]):
            n *= int(hi) - int(lo) + 1
        area += n * float(t["area"])
        macs += n if re.sub(r"\[[^]]*\]", "", t["name"]).split(".")[-1] == "mac" else 0
    recs = json.loads((tmp_path / "o" / "sweep.json").read_text())["records"]
    for rec in recs:
        assert rec["cores"] == 2 and rec["macs"] == 2 * macs == 512
        assert rec["area_mm2"] == pytest.approx(2 * area / 1e6, rel=1e-9)
    art_file = tmp_path / "simba_like" / "ART.yaml"
    art_file.write_text(art_file.read_text().replace("area: ", "area: 1"))
    rc, _, err = _sweep([str(system), *FAST, "--no-plot", "--out", str(tmp_path / "o")], capsys)
    assert rc == 2 and "another sweep run" in err and "ART.yaml" in err, err


def test_what_an_own_core_s_file_warns_of_is_said_by_a_sweep(tmp_path, capsys):
    """(A v0.3 key Timeloop ignores, e.g. a typo, was said by map and schedule, not by sweep.)"""
    system = _own_core_system(tmp_path, "own_v03", "arch: simba_like/processed.yaml")
    processed = tmp_path / "simba_like" / "processed.yaml"
    processed.write_text(processed.read_text().replace("      attributes:", "      foo: bar\n      attributes:", 1))
    rc, _, err = _sweep([str(system), *FAST, "--no-plot", "--out", str(tmp_path / "o")], capsys)
    assert rc == 0, err
    assert err.count("unknown key 'foo' ignored") == 1 and "core mine" in err, err


def test_parallel_sweep_with_a_point_that_does_not_build(tmp_path):
    """From Python a spec is not checked point by point: with --jobs 2 a point that does not build is
    left out of the layer mapping and recorded as failed, the others run."""
    from coexplore.model.cache import ResultCache
    from coexplore.spec.system import load_system
    from coexplore.sweep.run import SweepSettings, run_sweep
    from coexplore.sweep.store import SweepStore
    system = _system(tmp_path)
    system.write_text(system.read_text().replace("pe_mesh_x: [4, 14]", "pe_mesh_x: [4, 0]"))
    spec = load_system(system)
    cache = ResultCache(tmp_path / "c.sqlite")
    try:
        recs = run_sweep(spec, SweepSettings(layer_budget=30, budget=30, workers=2),
                         SweepStore(tmp_path / "o", "k"), cache=cache)
    finally:
        cache.close()
    assert [r["status"] for r in recs] == ["ok", "ok", "failed", "failed"]
    assert all("pe_mesh_x=0" in r["error"] for r in recs[2:])
    with pytest.raises(Exception, match="another sweep run"):       # the folder is this key's
        run_sweep(spec, SweepSettings(layer_budget=30, budget=30), SweepStore(tmp_path / "o", "other"))


def test_the_run_record_names_the_workloads(done):
    _, data, _ = done
    assert [Path(w).name for w in data["run"]["workloads"]] == ["small_net.yaml"]


def _die_on_two(x):
    """A task for in_processes: task 2's worker is killed; the others return their input."""
    import os
    import signal
    if x == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return x


def test_a_worker_that_dies_is_said_not_waited_for():
    from coexplore.workers.processes import WorkerDied, in_processes
    got = []
    with pytest.raises(WorkerDied, match="died"):
        for r in in_processes(_die_on_two, [0, 1, 2, 3, 4, 5], 2):
            got.append(r)
    assert 2 not in got
    assert sorted(in_processes(_die_on_two, [0, 1, 3], 2)) == [0, 1, 3]


def test_sweep_stops_with_exit_1_when_a_worker_dies(tmp_path, capsys, monkeypatch, done):
    _, _, system = done
    import coexplore.sweep.run as run_mod
    from coexplore.workers.processes import WorkerDied

    def one_then_death(spec, todo, settings, out, cache, done_fn):
        i, pid, values = todo[0]
        done_fn(run_mod.run_point(spec, i, pid, values, settings, out, cache=cache))
        raise WorkerDied("a worker process died before its task ended (killed, or out of memory)")
    monkeypatch.setattr(run_mod, "_points_in_parallel", one_then_death)
    rc, _, err = _sweep([str(system), *FAST, "--jobs", "2", "--no-plot", "--out", str(tmp_path / "o")], capsys)
    assert rc == 1 and "worker process died" in err and "1 of 4 points finished" in err, err
    assert [r["point"] for r in _rows(tmp_path / "o" / "points.csv")] == ["p0"]


def test_resume_reads_whole_lines_from_disk(tmp_path, capsys, monkeypatch, done):
    """After a line cut short by a kill, the next point's line is whole: a third run finds all 4."""
    _, _, system = done
    argv = [str(system), *FAST, "--no-plot", "--out", str(tmp_path / "o")]
    import coexplore.sweep.run as run_mod
    real = run_mod.run_point
    monkeypatch.setattr(run_mod, "run_point",
                        lambda spec, index, *a, **k: (_ for _ in ()).throw(KeyboardInterrupt) if index == 2
                        else real(spec, index, *a, **k))
    assert _sweep(argv, capsys)[0] == 130
    with open(tmp_path / "o" / "points.jsonl", "a") as f:
        f.write('{"point": "p2", "ind')
    monkeypatch.setattr(run_mod, "run_point", real)
    assert _sweep(argv, capsys)[0] == 0
    seen = []
    monkeypatch.setattr(run_mod, "run_point", lambda spec, index, *a, **k: seen.append(index) or real(spec, index, *a, **k))
    rc, _, err = _sweep(argv, capsys)
    assert rc == 0 and seen == [] and "all done in" in err
    lines = (tmp_path / "o" / "points.jsonl").read_text().splitlines()
    assert sum(1 for x in lines if x.startswith('{"point"') and x.endswith("}")) == 4
    rc, _, err = _sweep([*argv, "--restart"], capsys)               # --restart runs this run's points again
    assert rc == 0 and seen == [0, 1, 2, 3] and "already done" not in err


def test_rerun_from_another_folder_with_relative_paths(tmp_path, capsys, monkeypatch):
    """The same sweep named by relative paths from another working directory (system, --workload,
    --out) is the same run: it resumes."""
    system = _system(tmp_path)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    rc, _, err = _sweep(["tiny_sweep.yaml", "--workload", "small_net.yaml", *FAST, "--no-plot", "--out", "o"], capsys)
    assert rc == 0, err
    monkeypatch.chdir(tmp_path / "sub")
    rc, _, err = _sweep(["../tiny_sweep.yaml", "--workload", "../small_net.yaml", *FAST, "--no-plot", "--out", "../o"],
                        capsys)
    assert rc == 0 and "all done in" in err and "nothing to run" in err and "already done" not in err, err
    rc, _, err = _sweep([str(system), "--workload", str(tmp_path / "small_net.yaml"), *FAST, "--no-plot",
                         "--out", str(tmp_path / "o")], capsys)
    assert rc == 0 and "all done in" in err and "nothing to run" in err and "already done" not in err, err


def test_parallel_maps_layers_once_before_the_points(tmp_path, capsys, monkeypatch, done):
    _, data, system = done
    import coexplore.system.from_system as fs
    real = fs.map_layers
    calls = []
    monkeypatch.setattr(fs, "map_layers", lambda systems, *a, **k: calls.append(len(systems)) or real(systems, *a, **k))
    rc, _, err = _sweep([str(system), *FAST[:-1], "--cache", str(tmp_path / "c.sqlite"), "--jobs", "2", "--no-plot",
                         "--out", str(tmp_path / "o")], capsys)
    assert rc == 0 and calls == [4], err
    from coexplore.model.cache import ResultCache
    cache = ResultCache(tmp_path / "c.sqlite")
    try:
        assert cache.stats().entries == 6            # 2 core designs x 3 layers, each searched once
    finally:
        cache.close()


def test_map_layers_takes_the_workloads_given_and_a_cache_lookup_counts_nothing(tmp_path):
    from coexplore.arch.system import build_system
    from coexplore.model.cache import ResultCache
    from coexplore.search.layer import cached_entry
    from coexplore.search.registry import mapper_spec
    from coexplore.spec.system import load_system
    from coexplore.system.from_system import core_models, layer_context, map_layers, system_workloads
    spec = load_system(_system(tmp_path))
    (tmp_path / "one.yaml").write_text((tmp_path / "small_net.yaml").read_text().split("  - {name: conv_b")[0])
    systems = [build_system(spec.at_point(p)) for p in spec.sweep_points()]
    cache = ResultCache(tmp_path / "c.sqlite")
    try:
        assert map_layers(systems, [str(tmp_path / "one.yaml")], layer_budget=30, cache=cache, workers=2) == 2
        hits = cache.hits
        layer = system_workloads(systems[0], [str(tmp_path / "one.yaml")])[0].layers[0]
        cm = core_models(systems[0])["eyeriss"]
        ctx = layer_context(cm, layer)
        cons = cm.constraints_for(ctx.problem)
        assert cached_entry(ctx, cons, mapper_spec("marl"), budget=30, seed=0, cache=cache)[1] is not None
        assert cached_entry(ctx, cons, mapper_spec("marl"), budget=31, seed=0, cache=cache)[1] is None
        assert cache.hits == hits
    finally:
        cache.close()


def test_front_summary_order_and_odd_values(tmp_path, capsys, done):
    import numpy as np

    from coexplore.cli.sweep import summary_lines
    from coexplore.spec.system import load_system
    from coexplore.sweep.metrics import OBJECTIVES
    from coexplore.sweep.pareto import pareto_front
    lat, energy, tp = OBJECTIVES["latency"], OBJECTIVES["energy"], OBJECTIVES["throughput"]
    assert pareto_front([[np.inf, 1], [1, 2]], [lat, energy]).tolist() == [False, True]
    _, data, system = done
    recs = data["records"]
    front = pareto_front([[r["throughput_per_s"]] for r in recs], [tp]).tolist()
    lines = summary_lines(load_system(system), recs, [tp], [True] * len(recs), len(recs))
    shown = [line.split()[0] for line in lines if line.startswith("  p") and not line.startswith("  point")]
    assert shown == [r["point"] for r in sorted(recs, key=lambda r: -r["throughput_per_s"])]
    assert sum(front) == 1
    rc, out, err = _sweep([str(system), *FAST, "--objectives", "latency,latency", "--json", "--no-plot",
                           "--out", str(tmp_path / "o")], capsys)
    assert rc == 0 and [o["name"] for o in json.loads(out)["objectives"]] == ["latency"]


def test_a_points_folder_is_emptied_before_it_runs(tmp_path):
    from coexplore.spec.system import load_system
    from coexplore.sweep.run import SweepSettings, run_point
    spec = load_system(_system(tmp_path))
    stale = tmp_path / "o" / "points" / "p0" / "gantt.png"
    stale.parent.mkdir(parents=True)
    stale.write_text("an older run's chart")
    rec = run_point(spec, 0, "p0", spec.sweep_points()[0], SweepSettings(layer_budget=30, budget=30), tmp_path / "o")
    assert rec["status"] == "ok" and not stale.exists() and (tmp_path / "o" / "points" / "p0" / "schedule.json").is_file()


def _sleep_pid(task):
    """A task for in_processes: writes its worker's pid, sleeps, returns the pid."""
    import os
    import time
    secs, folder = task
    open(os.path.join(folder, f"{os.getpid()}.pid"), "w").close()
    time.sleep(secs)
    return os.getpid()


def _signal_self(x):
    """A task for in_processes that gets the signals a terminal or a job scheduler sends the group."""
    import os
    import signal
    import time
    os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.2)
    return x


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def test_in_processes_results_as_they_end_and_no_worker_outlives_the_loop(tmp_path):
    import time

    from coexplore.workers.processes import in_processes
    assert list(in_processes(abs, [], 2)) == []
    t0 = time.time()
    for _ in in_processes(_sleep_pid, [(3, str(tmp_path)), (60, str(tmp_path)), (60, str(tmp_path))], 2):
        first = time.time() - t0
        break
    closed = time.time() - t0
    pids = [int(p.stem) for p in tmp_path.glob("*.pid")]
    assert first < 20 and closed - first < 10          # the 60 s tasks are not waited for
    assert len(set(pids)) == 2 and not any(_alive(p) for p in pids)
    assert sorted(in_processes(_signal_self, [1, 2, 3], 2)) == [1, 2, 3]    # the parent handles signals


def test_a_dead_worker_is_a_failed_run_for_schedule_and_map(tmp_path, capsys, monkeypatch):
    """schedule and map --all-layers: exit 1 (not bad input), saying so; map keeps the layers that ended."""
    import coexplore.cli.map_workload as mw
    import coexplore.system.from_system as fs
    from coexplore.workers.processes import WorkerDied
    system = _system(tmp_path)

    def dies(*a, **k):
        raise WorkerDied("a worker process died before its task ended (killed, or out of memory)", key="--jobs",
                         expected="fewer --jobs if memory ran out")
    monkeypatch.setattr(fs, "_map_in_parallel", dies)
    rc = main(["schedule", str(system), "--layer-budget", "30", "--budget", "30", "--jobs", "2", "--no-cache",
               "--no-plot", "--no-progress", "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert rc == 1 and "worker process died" in err and "error:" not in err, err

    def one_then_death(fn, tasks, workers):
        yield fn(tasks[0])
        dies()
    monkeypatch.setattr(mw, "in_processes", one_then_death)
    corpus = Path(__file__).parent / "data" / "timeloop_corpus" / "arches" / "eyeriss_like" / "processed.yaml"
    rc = main(["map", str(corpus), str(tmp_path / "small_net.yaml"), "--all-layers", "--jobs", "2", "--budget", "30",
               "--no-cache", "--no-progress", "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert rc == 1 and "worker process died" in err and "1 of 3 layers done" in err, err
    assert len(_rows(tmp_path / "m" / "layers.csv")) == 1


def test_failure_texts_name_the_point_once(tmp_path):
    from coexplore.spec.system import load_system
    from coexplore.sweep.run import SweepSettings, run_point
    spec = load_system(_system(tmp_path))
    rec = run_point(spec, 0, "p0", {"dram.bandwidth_GBps": -1.0}, SweepSettings(layer_budget=30, budget=30),
                    tmp_path / "o")
    assert rec["status"] == "failed" and rec["error"].startswith("the point dram.bandwidth_GBps=-1.0: ")
    assert rec["error"].count("invalid") <= 1 and "(expected" in rec["error"], rec["error"]
    rec = run_point(spec, 1, "p1", {"cores.eyeriss.params.pe_mesh_x": 4}, SweepSettings(layer_budget=1, budget=30),
                    tmp_path / "o")       # a layer search that finds nothing: its own message, its key
    assert rec["status"] == "failed" and "layer " in rec["error"] and "--layer-budget" in rec["error"], rec["error"]


def test_map_layers_leaves_out_a_system_whose_cores_cannot_be_read(tmp_path, monkeypatch):
    from coexplore.arch.system import build_system
    from coexplore.errors import CoexploreError
    from coexplore.spec.system import load_system
    import coexplore.system.from_system as fs
    spec = load_system(_system(tmp_path))
    systems = [build_system(spec.at_point(p)) for p in spec.sweep_points()]
    real = fs.core_models
    bad = systems[0]

    def models(system):
        if system is bad:
            raise CoexploreError("cannot be priced")
        return real(system)
    monkeypatch.setattr(fs, "core_models", models)
    # points 0 and 1 share a design: the other design's 3 layers, and point 1's (the same as point 0's) 3
    assert fs.map_layers(systems, layer_budget=30, workers=1) == 6
    assert fs.map_layers([bad, systems[2]], layer_budget=30, workers=1) == 3


def test_points_are_handed_the_workloads_read_once_not_their_paths(tmp_path, monkeypatch):
    """A sweep reads its workload files where it runs and hands every point (a process, a Ray
    node) what they say: a node that cannot see the file, or sees the bundled workload of the same
    name, measures the same jobs. Here a local `alexnet.yaml` (small_net's layers) shadows the
    bundled AlexNet by name and is gone once the sweep has read it."""
    import shutil

    import coexplore.sweep.run as sweep_run
    from coexplore.search import registry
    from coexplore.spec.system import load_system
    from coexplore.spec.workload import Workload, find_workload, load_workload
    from coexplore.sweep.run import SweepSettings, run_sweep
    from coexplore.sweep.store import SweepStore
    for name in ("tiny_sweep.yaml", "small_net.yaml"):
        shutil.copy(DATA / name, tmp_path / name)
    shutil.copy(DATA / "small_net.yaml", tmp_path / "alexnet.yaml")
    net, bundled = load_workload(DATA / "small_net.yaml"), load_workload(find_workload("alexnet"))
    jobs = sum(layer.count for layer in net.layers)
    assert jobs != sum(layer.count for layer in bundled.layers)
    handed = []
    real = sweep_run.run_point

    def run_point(*args, **kwargs):
        handed.append(args[4].workloads)
        (tmp_path / "alexnet.yaml").unlink(missing_ok=True)        # gone from the "node" from now on
        return real(*args, **kwargs)
    monkeypatch.setattr(sweep_run, "run_point", run_point)
    settings = SweepSettings(workloads=[str(tmp_path / "alexnet.yaml")], layer_mapper=registry.mapper_spec("random"),
                             layer_budget=30, budget=30)
    recs = run_sweep(load_system(tmp_path / "tiny_sweep.yaml"), settings, SweepStore(tmp_path / "o", "k"))
    assert len(handed) == 4 and all(isinstance(w, Workload) for ws in handed for w in ws)
    assert [r["status"] for r in recs] == ["ok"] * 4
    assert all(r["jobs"] == jobs for r in recs)                      # not the bundled AlexNet's


def test_a_stopped_sweep_with_json_prints_the_points_done(tmp_path, capsys, monkeypatch, done):
    """As map and schedule do: a script reading --json gets the stopped sweep's record (exit 130)."""
    _, _, system = done
    import coexplore.sweep.run as run_mod
    real = run_mod.run_point

    def stopping(spec, index, *a, **k):
        if index == 2:
            raise KeyboardInterrupt
        return real(spec, index, *a, **k)
    monkeypatch.setattr(run_mod, "run_point", stopping)
    rc, out, _ = _sweep([str(system), *FAST, "--json", "--out", str(tmp_path / "o")], capsys)
    assert rc == 130
    printed = json.loads(out)
    assert printed == json.loads((tmp_path / "o" / "sweep.json").read_text())
    assert printed["done"] == 2 and not printed["complete"]


def test_mac_utilization_is_the_workloads_operations_over_what_the_macs_could_do(done):
    """points.csv's mac_utilization: the network's MACs (layer counts included) / (makespan x MAC
    units), in (0, 1]."""
    from coexplore.spec.workload import load_workload
    out, data, _ = done
    ops = load_workload(DATA / "small_net.yaml").total_macs
    rows = {r["point"]: r for r in _rows(out / "points.csv")}
    for rec in data["records"]:
        want = ops / (rec["latency_cycles"] * rec["macs"])
        assert 0 < want <= 1
        assert rec["mac_utilization"] == pytest.approx(want, rel=1e-12)
        assert float(rows[rec["point"]]["mac_utilization"]) == rec["mac_utilization"]


def test_every_objective_a_system_file_may_name_is_measured():
    """The names the system-file parser accepts are exactly those the sweep measures (one list each
    side would otherwise let an accepted name fail at the report), and the defaults among them."""
    from coexplore.spec import system
    from coexplore.sweep import metrics
    assert tuple(metrics.OBJECTIVES) == system.OBJECTIVES
    assert set(system.DEFAULT_OBJECTIVES) <= set(system.OBJECTIVES)
    assert all(metrics.OBJECTIVES[n].name == n for n in system.OBJECTIVES)


def test_a_long_axis_is_checked_value_by_value_without_copying_the_axes(tmp_path):
    """Each axis value is checked by parsing the system with it; the sweep block is shared by
    those copies, not copied (a 1,000-value axis took 15 s to load when it was), and a repeated
    value is still refused."""
    from coexplore.errors import CoexploreError
    from coexplore.spec.system import load_system
    doc = yaml.safe_load(_system(tmp_path).read_text())
    doc["sweep"] = {"axes": {"dram.bandwidth_GBps": [1.0 + i for i in range(300)]}}
    f = tmp_path / "long.yaml"
    f.write_text(yaml.safe_dump(doc))
    spec = load_system(f)
    assert len(spec.sweep_points()) == 300
    point = spec.at_point({"dram.bandwidth_GBps": 7.0})
    assert point.raw["sweep"] is spec.raw["sweep"] and point.dram.bandwidth_GBps == 7.0
    doc["sweep"]["axes"]["dram.bandwidth_GBps"].append(150.0)
    f.write_text(yaml.safe_dump(doc))
    with pytest.raises(CoexploreError, match="value 150.0 is given twice"):
        load_system(f)
    doc["sweep"]["axes"]["dram.bandwidth_GBps"] = [16, 16.0]       # one number: one point (user study)
    f.write_text(yaml.safe_dump(doc))
    with pytest.raises(CoexploreError, match="value 16.0 is given twice"):
        load_system(f)


@pytest.mark.parametrize("entry, said", [("../problemz/alexnet.yaml", "problemz/alexnet.yaml does not exist"),
                                         ("alexnet", "not alexnet.yaml beside it")])
def test_a_workload_taken_from_the_bundled_files_is_said(tmp_path, entry, said):
    """A mistyped folder, or a bare name while a file of that name lies beside the system file,
    falls back to the bundled workload: a note says so."""
    from coexplore.errors import CoexploreNote
    from coexplore.spec.system import load_system
    system = _system(tmp_path)
    (tmp_path / "alexnet.yaml").write_text((DATA / "small_net.yaml").read_text())
    system.write_text(system.read_text().replace("- small_net.yaml", f"- {entry}"))
    with pytest.warns(CoexploreNote, match=said):
        spec = load_system(system)
    assert spec.workloads[0].parent.name == "problems" and spec.workloads[0].name == "alexnet.yaml"
    system.write_text(system.read_text().replace(f"- {entry}", "- small_net.yaml"))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoexploreNote)
        load_system(system)                         # a file that exists: no note


def test_params_left_empty_take_a_sweep_axis_as_params_left_out_do(tmp_path):
    from coexplore.spec.system import load_system
    system = _system(tmp_path)
    system.write_text(system.read_text().replace("    params: {}\n", "    params:\n"))
    spec = load_system(system)
    point = spec.at_point({"cores.eyeriss.params.pe_mesh_x": 4})
    assert point.cores[0].params == {"pe_mesh_x": 4}


def test_a_stop_in_a_searchs_last_batch_ends_the_sweep(tmp_path, monkeypatch):
    """A stop (SIGTERM) that lands while a search evaluates its last batch: that search ends complete,
    and the stop is not forgotten (it was, when each search's own guard was the outermost one): the
    point's next search stops, and the sweep with it, no point recorded past the stop."""
    from coexplore.search import base
    from coexplore.spec.system import load_system
    from coexplore.stops import request_stop
    from coexplore.sweep.run import SweepSettings, run_sweep
    from coexplore.sweep.store import SweepStore
    real, asked = base.checked_losses, []

    def stop_in_first_batch(batch, raw):
        if not asked:
            asked.append(request_stop("SIGTERM"))
        return real(batch, raw)
    monkeypatch.setattr(base, "checked_losses", stop_in_first_batch)
    spec = load_system(_system(tmp_path))
    store = SweepStore(tmp_path / "o", "k")
    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, SweepSettings(layer_budget=60, budget=60), store)      # (one batch per layer search)
    assert asked == [True] and store.records == {}
    assert not list((tmp_path / "o" / "points").glob("*"))     # (user study: the stopped point's folder stayed)


def test_a_stop_as_a_point_ends_is_the_sweeps_end(tmp_path, monkeypatch):
    """A stop between a point's searches or as it writes its files: that point is recorded, the
    next one does not start."""
    from coexplore.spec.system import load_system
    from coexplore.stops import request_stop
    from coexplore.sweep import run
    from coexplore.sweep.store import SweepStore
    real = run.run_point

    def then_stop(*a, **k):
        rec = real(*a, **k)
        request_stop("SIGTERM")
        return rec
    monkeypatch.setattr(run, "run_point", then_stop)
    spec = load_system(_system(tmp_path))
    store = SweepStore(tmp_path / "o", "k")
    with pytest.raises(KeyboardInterrupt):
        run.run_sweep(spec, run.SweepSettings(layer_budget=60, budget=60), store)
    assert list(store.records) == [0] and len(spec.sweep_points()) > 1


@pytest.mark.parametrize("extra", [[], ["--no-plot"]])
def test_a_stop_before_the_first_point_still_writes_the_run_and_its_json(tmp_path, monkeypatch, capsys, extra):
    """User study: stopped before any point ended, `--json` printed nothing and no sweep.json or
    report.html was written (the README: written when the sweep ends or stops)."""
    from coexplore.sweep import run

    def stopped(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(run, "run_point", stopped)
    rc, out, err = _sweep([str(_system(tmp_path)), *FAST, "--out", str(tmp_path / "o"), "--json", *extra], capsys)
    data = json.loads(out)
    assert rc == 130 and (data["done"], data["complete"], data["records"]) == (0, False, [])
    assert json.loads((tmp_path / "o" / "sweep.json").read_text())["done"] == 0
    assert "0 of 4" in (tmp_path / "o" / "report.html").read_text() and "Traceback" not in err


def test_an_edited_line_or_a_deleted_point_folder_runs_that_point_again(tmp_path, capsys):
    """User study: a finished point whose folder was deleted stopped the resume ('jobs.csv: file not
    found'); a line edited by hand ('latency_s': 'fast') gave a traceback."""
    system = _system(tmp_path)
    argv = [str(system), *FAST, "--out", str(tmp_path / "o")]
    assert _sweep(argv, capsys)[0] == 0
    before = (tmp_path / "o" / "points.csv").read_text()
    shutil.rmtree(tmp_path / "o" / "points" / "p1")
    lines = (tmp_path / "o" / "points.jsonl").read_text().splitlines()
    rec = json.loads(lines[2])
    rec["latency_s"] = "fast"
    lines[2] = json.dumps(rec)
    (tmp_path / "o" / "points.jsonl").write_text("\n".join(lines) + "\n")
    rc, _, err = _sweep(argv, capsys)
    assert rc == 0 and "Traceback" not in err and f"the lines of p1, {rec['point']} were edited" in err, err
    assert "2 already done" in err
    assert (tmp_path / "o" / "points.csv").read_text() == before        # the same results, every point
    assert (tmp_path / "o" / "points" / "p1" / "jobs.csv").is_file()
    rc, _, err = _sweep(argv, capsys)
    assert rc == 0 and "were edited" not in err and "all done in" in err


def test_an_axis_value_is_spelled_as_the_sweep_file_spells_it():
    """User study: a null axis value was `None` in the summary, an empty cell in points.csv (as a
    missing number) and `none` in the report."""
    import csv
    import io

    from coexplore.cli.sweep import _shown
    from coexplore.report.html import fmt_value
    from coexplore.sweep.store import points_csv
    rec = {"point": "p0", "values": {"a": None, "b": True, "c": 12.8, "d": 4}, "status": "failed", "error": "x"}
    row = next(csv.DictReader(io.StringIO(points_csv([rec], ["a", "b", "c", "d"], [False]))))
    assert (row["a"], row["b"], row["c"], row["d"]) == ("null", "true", "12.8", "4")
    assert [_shown(v) for v in (None, True, 12.8)] == ["null", "true", "12.8"]
    assert fmt_value(None) == "null"
