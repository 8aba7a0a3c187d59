"""Tests written by a mutation review (2026-12-03): sweep metrics, Pareto front, sweep store/resume, run keys, tables, HTML report.
Values are hand-derived or properties; no sweep point is actually mapped (fast)."""

import csv
import io
import shutil
from pathlib import Path

import numpy as np
import pytest

from coexplore.sweep.metrics import OBJECTIVES, point_metrics
from coexplore.sweep.pareto import pareto_front

DATA = Path(__file__).resolve().parent / "data" / "sweep"


# ------------------------------------------------------------------ metrics (units, EDP, throughput)

def test_point_metrics_hand_derived_units():
    m = point_metrics(makespan_cycles=2e6, energy_pJ=5e9, clock_GHz=2.0, area_mm2=7.5, inferences=3,
                      cores=4, macs=1000, jobs=12, offchip_bytes_per_cycle=16.0, operations=10**9)
    assert m["latency_cycles"] == 2e6
    assert m["latency_s"] == pytest.approx(1e-3)            # 2e6 cycles at 2 GHz
    assert m["energy_J"] == pytest.approx(5e-3)             # 5e9 pJ
    assert m["edp_J_s"] == pytest.approx(5e-6)              # J x s
    assert m["throughput_per_s"] == pytest.approx(3000.0)   # 3 inferences (not 12 jobs) per ms
    assert m["mac_utilization"] == pytest.approx(0.5)       # 1e9 / (2e6 cycles x 1000 MACs)
    assert (m["cores"], m["macs"], m["jobs"], m["area_mm2"]) == (4, 1000, 12, 7.5)


def test_objectives_columns_and_senses():
    want = {"latency": ("latency_s", "min"), "energy": ("energy_J", "min"), "edp": ("edp_J_s", "min"),
            "area": ("area_mm2", "min"), "throughput": ("throughput_per_s", "max")}
    assert {n: (o.column, o.sense) for n, o in OBJECTIVES.items()} == want


# ------------------------------------------------------------------ Pareto front (properties)

def _dominates(a, b, objs):
    a = [x if o.sense == "min" else -x for x, o in zip(a, objs)]
    b = [x if o.sense == "min" else -x for x, o in zip(b, objs)]
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


@pytest.mark.parametrize("names", [("latency", "energy"), ("area", "throughput"),
                                   ("latency", "energy", "area"), ("throughput",)])
@pytest.mark.parametrize("seed", range(6))
def test_front_is_exactly_the_non_dominated_finite_rows(names, seed):
    objs = [OBJECTIVES[n] for n in names]
    rng = np.random.default_rng(seed)
    v = rng.integers(0, 4, size=(25, len(objs))).astype(float)     # many ties and duplicates
    v[3] = np.nan
    v[5, 0] = np.inf if objs[0].sense == "min" else -np.inf         # infinitely bad: never on the front
    v[7, 0] = -np.inf if objs[0].sense == "min" else np.inf         # "infinitely good": never on it either
    front = pareto_front(v, objs)
    finite = [i for i in range(len(v)) if np.isfinite(v[i]).all()]
    for i in range(len(v)):
        if i not in finite:
            assert not front[i], i
            continue
        dominated = any(_dominates(v[j], v[i], objs) for j in finite if j != i)
        assert bool(front[i]) == (not dominated), (i, v[i])


def test_equal_rows_are_all_on_the_front_and_a_tie_in_one_objective_still_dominates():
    objs = [OBJECTIVES["latency"], OBJECTIVES["energy"]]
    front = pareto_front([[1, 2], [1, 2], [1, 3], [2, 2]], objs)
    assert list(front) == [True, True, False, False]


def test_throughput_is_maximised_on_the_front():
    objs = [OBJECTIVES["area"], OBJECTIVES["throughput"]]
    # same area: more throughput dominates
    assert list(pareto_front([[1.0, 10.0], [1.0, 20.0]], objs)) == [False, True]


def test_the_cli_front_leaves_out_failed_points_whatever_they_measured():
    from coexplore.cli.sweep import _front
    ok = {"status": "ok", "area_mm2": 5.0, "latency_s": 1.0}
    failed = {"status": "failed", "area_mm2": 1.0}          # a failed point knows its area
    assert _front([ok, failed], [OBJECTIVES["area"]]) == [True, False]


# ------------------------------------------------------------------ store: resume, cut lines, other runs

def test_store_keeps_only_its_runs_lines_and_survives_a_cut_line(tmp_path):
    from coexplore.sweep.store import POINTS, SweepStore
    s = SweepStore(tmp_path, "A")
    s.add({"index": 0, "point": "p0"})
    s.add({"index": 1, "point": "p1"})
    with open(tmp_path / POINTS, "a") as f:
        f.write('{"index": 2, "point": "p2", "ru')        # killed mid-line
    s2 = SweepStore(tmp_path, "A")
    assert sorted(s2.records) == [0, 1]
    s2.add({"index": 2, "point": "p2"})
    s2.add({"index": 3, "point": "p3"})
    again = SweepStore(tmp_path, "A")
    assert sorted(again.records) == [0, 1, 2, 3]             # lines after the cut one are all read
    other = SweepStore(tmp_path, "B")
    assert other.records == {} and other.others == 4
    other.drop_others()
    assert SweepStore(tmp_path, "A").records == {}           # rewritten without run A's lines


def _tiny(tmp_path):
    for f in DATA.glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    from coexplore.spec.system import load_system
    return load_system(tmp_path / "tiny_sweep.yaml")


@pytest.fixture
def stub_points(monkeypatch):
    import coexplore.sweep.run as run
    ran = []

    def fake(spec, index, pid, values, settings, out, cache=None, progress=False):
        ran.append(index)
        folder = Path(out) / "points" / pid          # what a finished point leaves (a resume checks it is there)
        folder.mkdir(parents=True, exist_ok=True)
        for f in ("schedule.json", "jobs.csv"):
            (folder / f).write_text("")
        return {"point": pid, "index": index, "values": values, "dir": f"points/{pid}", "status": "ok",
                "error": None, "warnings": []}
    monkeypatch.setattr(run, "run_point", fake)
    return ran


def test_resume_runs_exactly_the_points_not_stored(tmp_path, stub_points):
    from coexplore.sweep.run import SweepSettings, run_sweep
    from coexplore.sweep.store import SweepStore
    spec = _tiny(tmp_path)
    (tmp_path / "out").mkdir()
    store = SweepStore(tmp_path / "out", "K")
    values = spec.sweep_points()
    store.add({"index": 1, "point": "p1", "values": values[1], "status": "ok"})    # points end out of order (--jobs)
    store.add({"index": 3, "point": "p3", "values": values[3], "status": "ok"})
    records = run_sweep(spec, SweepSettings(layer_budget=10, budget=10), store)
    assert sorted(stub_points) == [0, 2]
    assert [r["index"] for r in records] == [0, 1, 2, 3]
    stub_points.clear()
    run_sweep(spec, SweepSettings(layer_budget=10, budget=10), SweepStore(tmp_path / "out", "K"))
    assert stub_points == []                                  # a finished sweep runs nothing again


def test_run_sweep_refuses_a_store_holding_another_runs_points(tmp_path, stub_points):
    from coexplore.errors import CoexploreError
    from coexplore.sweep.run import SweepSettings, run_sweep
    from coexplore.sweep.store import SweepStore
    spec = _tiny(tmp_path)
    (tmp_path / "out").mkdir()
    SweepStore(tmp_path / "out", "old").add({"index": 0, "point": "p0", "values": {}, "status": "ok"})
    with pytest.raises(CoexploreError):
        run_sweep(spec, SweepSettings(layer_budget=10, budget=10), SweepStore(tmp_path / "out", "new"))
    assert stub_points == []


# ------------------------------------------------------------------ run key: every setting that changes points

def _run_desc(tmp_path, monkeypatch, *extra):
    import coexplore.cli.sweep as cs
    from coexplore.cli.main import main
    got = {}
    monkeypatch.setattr(cs, "_sweep_into", lambda args, spec, settings, run_desc, objectives, cache:
                        got.setdefault("run", run_desc) and 0)
    system = tmp_path / "tiny_sweep.yaml"
    if not system.exists():
        _tiny(tmp_path)
    main(["sweep", str(system), "--no-cache", "--no-progress", "--layer-budget", "50", "--budget", "50", *extra])
    return got["run"]


@pytest.mark.parametrize("before,after", [
    ([], ["--layer-budget", "51"]), ([], ["--budget", "51"]), ([], ["--seed", "3"]), ([], ["--layer-seed", "2"]),
    (["--searcher", "random"], ["--searcher", "fcfs-greedy"])])      # (neither has a config or a mapper file)
def test_a_changed_setting_is_another_run(tmp_path, monkeypatch, before, after):
    from coexplore.cli.paths import run_key
    base = _run_desc(tmp_path, monkeypatch, *before)
    changed = _run_desc(tmp_path, monkeypatch, *after)
    assert run_key(changed) != run_key(base)
    assert _run_desc(tmp_path, monkeypatch, *before, "--objectives", "latency") == base     # objectives: same run


# ------------------------------------------------------------------ tables

def _records():
    recs = []
    for i, (lat, area, thr) in enumerate([(3.0, 1.0, 10.0), (1.0, 3.0, 30.0), (2.0, 2.0, 20.0),
                                          (3.0, 3.0, 5.0), (0.1 + 0.2, 9.0, 1.0)]):
        recs.append({"point": f"p{i}", "index": i, "values": {"x": i}, "status": "ok", "error": None,
                     "latency_s": lat, "area_mm2": area, "throughput_per_s": thr})
    recs.append({"point": "p5", "index": 5, "values": {"x": 5}, "status": "failed", "error": "no mapping",
                 "area_mm2": 0.5})
    return recs


@pytest.mark.parametrize("names", [("latency", "area"), ("throughput", "area")])
def test_pareto_csv_is_the_front_best_first_and_points_csv_round_trips(tmp_path, names):
    from coexplore.cli.sweep import _front
    from coexplore.sweep.store import write_tables
    objs = [OBJECTIVES[n] for n in names]
    recs = _records()
    front = _front(recs, objs)
    write_tables(tmp_path, recs, ["x"], objs, front)
    rows = list(csv.DictReader(io.StringIO((tmp_path / "points.csv").read_text())))
    assert [r["point"] for r in rows] == [r["point"] for r in recs]
    for r, rec, on in zip(rows, recs, front):
        assert r["pareto"] == str(int(on)) and r["status"] == rec["status"]
        if rec["status"] == "ok":
            assert float(r["latency_s"]) == rec["latency_s"]          # exact (0.1 + 0.2 too)
    # the front by hand: latency/area -> p0 (3,1), p1 (1,3), p2 (2,2), p4 (0.3, 9); throughput/area: p0, p1, p2
    want = {("latency", "area"): ["p4", "p1", "p2", "p0"], ("throughput", "area"): ["p1", "p2", "p0"]}[names]
    pareto = [r["point"] for r in csv.DictReader(io.StringIO((tmp_path / "pareto.csv").read_text()))]
    assert pareto == want


# ------------------------------------------------------------------ HTML report

def test_fmt_number_never_hides_small_or_negative_infinite_values():
    from coexplore.report.html import fmt_number
    assert fmt_number(1.234e-5) == "1.234e-05"
    assert fmt_number(float("-inf")) == "-inf"
    assert fmt_number(float("inf")) == "inf"


def _tables(html):
    from html.parser import HTMLParser

    class P(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tables, self.row, self.cell = [], None, None

        def handle_starttag(self, tag, attrs):
            if tag == "table":
                self.tables.append([])
            elif tag == "tr":
                self.row = []
                self.tables[-1].append(self.row)
            elif tag in ("td", "th"):
                self.cell = []

        def handle_endtag(self, tag):
            if tag in ("td", "th") and self.cell is not None:
                self.row.append("".join(self.cell).strip())
                self.cell = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell.append(data)
    p = P()
    p.feed(html)
    return p.tables


def test_report_front_table_order_values_and_marks():
    from coexplore.cli.sweep import _front
    from coexplore.report.html import render_report
    objs = [OBJECTIVES["throughput"], OBJECTIVES["area"]]
    recs = _records()
    front = _front(recs, objs)
    html = render_report({"name": "t"}, recs, objs, front, total=10)
    assert "Stopped: 6 of 10 points done" in html
    tables = _tables(html)
    front_table = tables[1]
    head = front_table[0]
    rows = front_table[1:]
    assert [r[0] for r in rows] == ["p1", "p2", "p0"]                 # most throughput first
    thr, area = head.index("throughput (inferences/s), max"), head.index("area (mm^2), min")
    assert [(float(r[thr]), float(r[area])) for r in rows] == [(30.0, 3.0), (20.0, 2.0), (10.0, 1.0)]
    every = tables[2]
    fcol = every[0].index("front")
    marked = [r[0] for r in every[1:] if r[fcol]]
    assert marked == ["p0", "p1", "p2"]                               # the failed p5 unmarked


def test_write_report_is_whole_or_not_at_all(tmp_path, monkeypatch):
    from coexplore.report.html import write_report
    objs = [OBJECTIVES["latency"]]
    recs = _records()[:1]
    path = tmp_path / "report.html"
    path.write_text("OLD REPORT")
    real = Path.write_text

    def cut(self, text, *a, **k):
        real(self, text[:10], *a, **k)
        raise KeyboardInterrupt
    monkeypatch.setattr(Path, "write_text", cut)
    with pytest.raises(KeyboardInterrupt):
        write_report(path, {"name": "t"}, recs, objs, [True])
    monkeypatch.undo()
    assert path.read_text() == "OLD REPORT"


def test_run_sweep_refuses_another_sweeps_points_under_the_same_key(tmp_path, stub_points):
    """User study: the key is the caller's; a second system's sweep under the first one's key got
    the first one's points back as its own (values that are not in its axes)."""
    from coexplore.errors import CoexploreError
    from coexplore.sweep.run import SweepSettings, run_sweep
    from coexplore.sweep.store import SweepStore
    spec = _tiny(tmp_path)
    (tmp_path / "out").mkdir()
    values = dict(spec.sweep_points()[0])
    other = {k: (v * 2 if isinstance(v, (int, float)) else v) for k, v in values.items()}
    SweepStore(tmp_path / "out", "k").add({"index": 0, "point": "p0", "values": other, "status": "ok"})
    with pytest.raises(CoexploreError, match="another sweep's points under the same key"):
        run_sweep(spec, SweepSettings(layer_budget=10, budget=10), SweepStore(tmp_path / "out", "k"))
    assert stub_points == []


@pytest.mark.parametrize("field, value", [("estimator", "acelergy"), ("gantt", True)])
def test_sweep_settings_every_point_would_refuse_are_refused_at_once(field, value):
    """User study: estimator='acelergy' stored every point as failed (and a corrected rerun under the
    key got those failures back); gantt=True failed inside the run."""
    from coexplore.errors import CoexploreError
    from coexplore.sweep.run import SweepSettings
    with pytest.raises(CoexploreError) as e:
        SweepSettings(**{field: value})
    assert e.value.key == field
