"""`coexplore schedule SYSTEM.yaml`: job tables through the layer mapper, then MAGMA."""

import json
import subprocess
import sys

import numpy as np
import pytest

from coexplore.search import registry
from coexplore.system.from_system import system_job_table

SYSTEM = """
system:
  name: tiny
  dram: {type: LPDDR4, width: 64, bandwidth_GBps: 8}
  cores:
  - {name: simba, template: simba, count: 2}
  - {name: eyeriss, template: eyeriss, count: 1}
workloads: [wl.yaml]
"""
WORKLOAD = """
workload:
  name: mini
  layers:
  - {name: a, instance: {C: 16, M: 32, R: 3, S: 3, N: 1, P: 14, Q: 14}}
  - {name: b, count: 2, instance: {C: 32, M: 32, R: 1, S: 1, N: 1, P: 14, Q: 14}}
"""


@pytest.fixture()
def system(tmp_path):
    (tmp_path / "wl.yaml").write_text(WORKLOAD)
    path = tmp_path / "sys.yaml"
    path.write_text(SYSTEM)
    return path


def test_job_table_from_system(system):
    table, sysarch = system_job_table(system, layer_mapper=registry.mapper_spec("random"), layer_budget=300)
    assert table.cores == ["simba_0", "simba_1", "eyeriss"]
    assert [j.name for j in table.jobs] == ["mini.a", "mini.b#0", "mini.b#1"]
    # copies of one core design and repeated layers get identical rows / columns
    assert np.array_equal(table.latency[:, 0], table.latency[:, 1])
    assert np.array_equal(table.latency[1], table.latency[2])
    # latency is at least the layer's MACs over the core's MACs; bandwidth = DRAM bytes / latency >= 0
    macs = np.array([16 * 32 * 9 * 196, 32 * 32 * 196, 32 * 32 * 196])
    assert (table.latency[:, 0] >= macs / 256).all() and (table.latency[:, 2] >= macs / 168).all()
    assert (table.bandwidth > 0).all() and np.isfinite(table.energy).all()
    assert sysarch.offchip_bytes_per_cycle == pytest.approx(8.0)
    # each core design's column is that design's own mapping of the layer (not another design's)
    from coexplore.model.inputs import Context
    from coexplore.search.layer import map_layer
    from coexplore.spec.problem import DEFAULT_CNN_SHAPE, parse_problem
    from coexplore.system.from_system import core_model
    assert not np.array_equal(table.latency[:, 0], table.latency[:, 2])
    inst = {"C": 16, "M": 32, "R": 3, "S": 3, "N": 1, "P": 14, "Q": 14}
    prob = parse_problem({"problem": {"shape": DEFAULT_CNN_SHAPE, "instance": inst}}, name="a")
    for col, design in ((0, "simba"), (2, "eyeriss")):
        cm = core_model(sysarch, design)
        rec = map_layer(Context(cm.context_arch, prob, cm.ert, cm.costs), cm.constraints,
                        registry.mapper_spec("random"), 300, 0).best
        assert table.latency[0, col] == rec["cycles"] and table.energy[0, col] == pytest.approx(rec["energy_pJ"])
        # bandwidth: every word moved at the backing store (reads, fills and the outputs' updates) per cycle
        top = cm.context_arch.levels[0]
        moved = rec["levels"][top.name]["dataspaces"]
        assert moved["Outputs"]["updates"] > 0
        words = sum(d["reads"] + d["fills"] + d["updates"] for d in moved.values())
        assert table.bandwidth[0, col] == pytest.approx(words * top.word_bits / 8 / rec["cycles"], rel=1e-12)


def test_job_table_mapped_in_parallel_is_the_same(system, tmp_path):
    """Worker processes map the distinct (layer, core design) pairs; each search is seeded as it
    would be alone, so the table is the one-process table, and the cache holds every pair after."""
    from coexplore.model.cache import ResultCache
    spec = registry.mapper_spec("marl")
    one, _ = system_job_table(system, layer_mapper=spec, layer_budget=300)
    cache = ResultCache(tmp_path / "c.sqlite")
    two, _ = system_job_table(system, layer_mapper=spec, layer_budget=300, cache=cache, workers=2)
    for a, b in ((one.latency, two.latency), (one.bandwidth, two.bandwidth), (one.energy, two.energy)):
        assert np.array_equal(a, b)
    assert cache.stats().entries == 4                 # 2 distinct layers x 2 core designs, cached by the workers


def test_with_workers_the_searches_run_in_the_workers(system, monkeypatch):
    """workers=2: no layer search runs in this process (each pair is searched once, by a worker)."""
    import coexplore.system.from_system as fs

    def here(*a, **k):
        raise AssertionError("a layer search ran in the parent process")
    monkeypatch.setattr(fs, "map_layer", here)
    table, _ = system_job_table(system, layer_mapper=registry.mapper_spec("random"), layer_budget=200, workers=2)
    assert np.isfinite(table.latency).all()


def test_the_same_network_twice_is_two_tenants(tmp_path):
    (tmp_path / "wl.yaml").write_text(WORKLOAD)
    path = tmp_path / "sys.yaml"
    path.write_text(SYSTEM.replace("workloads: [wl.yaml]", "workloads: [wl.yaml, wl.yaml]"))
    table, _ = system_job_table(path, layer_mapper=registry.mapper_spec("random"), layer_budget=200)
    names = [j.name for j in table.jobs]
    assert len(set(names)) == len(names) == 6
    assert names[3:] == ["mini@2.a", "mini@2.b#0", "mini@2.b#1"]
    assert {j.dnn for j in table.jobs} == {"mini", "mini@2"}


def test_too_many_jobs_are_refused_before_any_search(tmp_path):
    from coexplore.errors import CoexploreError
    from coexplore.system.from_system import MAX_JOBS
    (tmp_path / "wl.yaml").write_text(WORKLOAD.replace("count: 2", f"count: {MAX_JOBS}"))
    path = tmp_path / "sys.yaml"
    path.write_text(SYSTEM)
    with pytest.raises(CoexploreError, match="jobs") as e:
        system_job_table(path, layer_mapper=registry.mapper_spec("random"), layer_budget=200)
    assert e.value.key == "layers[].count"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "coexplore.cli.main", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def test_schedule_system_cli(system, tmp_path):
    args = ["schedule", system, "--layer-searcher", "random", "--layer-budget", "300", "--budget", "400",
            "--json", "--out", tmp_path / "out", "--cache", tmp_path / "c.sqlite"]
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["samples"] == 400 and len(d["core"]) == 3 and len(d["priority"]) == 3
    assert set(d["core"]) <= {"simba_0", "simba_1", "eyeriss"}
    assert (tmp_path / "out" / "gantt.png").exists()
    again = json.loads(cli(*args).stdout)        # second run: job table from the cache, same schedule
    assert again["makespan"] == d["makespan"] and again["core"] == d["core"]


def test_schedule_system_without_workloads(tmp_path):
    path = tmp_path / "sys.yaml"
    path.write_text(SYSTEM.replace("workloads: [wl.yaml]", ""))
    r = cli("schedule", path, "--no-cache")
    assert r.returncode == 2 and "workload" in r.stderr and "Traceback" not in r.stderr


def test_schedule_needs_system_or_table():
    r = cli("schedule")
    assert r.returncode == 2 and "SYSTEM.yaml" in r.stderr


def test_schedule_says_how_many_jobs_a_large_table_has(system, tmp_path, monkeypatch, capsys):
    import coexplore.cli.schedule as schedule_cli
    from coexplore.cli.main import main
    monkeypatch.setattr(schedule_cli, "LARGE_TABLE", 3)
    rc = main(["schedule", str(system), "--layer-searcher", "random", "--layer-budget", "200", "--budget", "100",
               "--no-cache", "--no-progress", "--no-plot", "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert rc == 0 and "note: 3 jobs to schedule (mini 3)" in err, err


def test_the_gantt_chart_colours_jobs_by_dnn_with_a_legend(tmp_path, monkeypatch):
    """Two tenants of one network: their jobs get one colour per DNN, named in the chart's legend."""
    import matplotlib.pyplot as plt
    from coexplore.system.evaluator import trace
    from coexplore.report.schedule_plot import plot_schedule
    (tmp_path / "wl.yaml").write_text(WORKLOAD)
    path = tmp_path / "sys.yaml"
    path.write_text(SYSTEM.replace("workloads: [wl.yaml]", "workloads: [wl.yaml, wl.yaml]"))
    table, _ = system_job_table(path, layer_mapper=registry.mapper_spec("random"), layer_budget=200)
    figures = []
    monkeypatch.setattr(plt, "close", lambda fig=None: figures.append(fig))
    core = np.arange(table.num_jobs) % table.num_cores
    tr = trace(table.latency, table.bandwidth, 8.0, core, np.linspace(0, 1, table.num_jobs))
    plot_schedule(table, tr, tmp_path / "g.png")
    assert (tmp_path / "g.png").stat().st_size > 0
    legend = figures[0].axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["mini", "mini@2"]
    colours = {tuple(p.get_facecolor()) for p in legend.get_patches()}
    assert len(colours) == 2
    # the two DNNs in different hues (not a dark and a light shade of one), and back-to-back jobs
    # on a core alternate in shade, so each stays visible when borders are dropped
    import colorsys
    h1, h2 = (colorsys.rgb_to_hsv(*c[:3])[0] for c in colours)
    assert min(abs(h1 - h2), 1 - abs(h1 - h2)) > 0.1
    legend_rgb = {t.get_text(): tuple(p.get_facecolor()[:3]) for t, p in zip(legend.get_texts(), legend.get_patches())}
    bars = figures[0].axes[0].collections
    assert len(bars) == table.num_cores
    for c, coll in enumerate(bars):
        jobs = np.flatnonzero(tr.job_core == c)
        jobs = jobs[np.argsort(tr.job_start[jobs], kind="stable")]          # the bars, by start time
        faces = coll.get_facecolor()
        assert len(faces) == len(jobs)
        for j, face in zip(jobs, faces):              # each bar in its DNN's colour, as the legend says
            assert tuple(face[:3]) == pytest.approx(legend_rgb[table.jobs[j].dnn])
        alphas = [round(float(f[3]), 2) for f in faces]
        assert all(a != b for a, b in zip(alphas, alphas[1:])), alphas
    # the cores' bandwidth colours are none of the DNNs' (the legend's colours mean one thing)
    bands = {tuple(np.round(c.get_facecolor()[0][:3], 6)) for c in figures[0].axes[1].collections}
    assert not bands & {tuple(np.round(c, 6)) for c in legend_rgb.values()}


def test_an_idle_last_core_keeps_its_row_in_the_gantt_chart(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt
    from coexplore.system.evaluator import trace
    from coexplore.report.schedule_plot import plot_schedule
    (tmp_path / "wl.yaml").write_text(WORKLOAD)
    path = tmp_path / "sys.yaml"
    path.write_text(SYSTEM)
    table, _ = system_job_table(path, layer_mapper=registry.mapper_spec("random"), layer_budget=200)
    assert table.num_cores >= 2
    figures = []
    monkeypatch.setattr(plt, "close", lambda fig=None: figures.append(fig))
    tr = trace(table.latency, table.bandwidth, 8.0, np.zeros(table.num_jobs, int), np.linspace(0, 1, table.num_jobs))
    plot_schedule(table, tr, tmp_path / "g.png")
    ax = figures[0].axes[0]
    lo, hi = sorted(ax.get_ylim())
    assert lo <= -0.4 and hi >= table.num_cores - 1 + 0.4       # the last (idle) core's band is inside
    assert ax.get_ylim()[0] > ax.get_ylim()[1]                   # the first core on top


def test_schedule_gives_times_at_the_systems_clock_and_when_each_dnn_is_done(tmp_path, capsys):
    """At 0.5 GHz the makespan in seconds is cycles / 5e8; `units` names each number's unit; with
    two tenants the summary says when each finishes (the dnn_end of the timeline)."""
    import csv
    from coexplore.cli.main import main
    (tmp_path / "wl.yaml").write_text(WORKLOAD)
    path = tmp_path / "sys.yaml"
    path.write_text(SYSTEM.replace("workloads: [wl.yaml]", "workloads: [wl.yaml, wl.yaml]")
                    .replace("  name: tiny\n", "  name: tiny\n  clock_GHz: 0.5\n"))
    rc = main(["schedule", str(path), "--layer-searcher", "random", "--layer-budget", "200", "--budget", "100",
               "--no-cache", "--no-progress", "--no-plot", "--out", str(tmp_path / "s")])
    out = capsys.readouterr().out
    assert rc == 0
    data = json.loads((tmp_path / "s" / "schedule.json").read_text())
    assert data["clock_GHz"] == 0.5 and data["makespan_s"] == pytest.approx(data["makespan"] / 0.5e9, rel=1e-12)
    assert data["units"]["bandwidth"] == "bytes/cycle" and data["units"]["makespan"] == "cycles"
    assert set(data["units"]) >= {k for k, v in data.items() if isinstance(v, (int, float)) and k != "seed"
                                  and k != "samples"}
    ms = data["makespan"] / 0.5e9 * 1e3
    assert f"= {ms:.4g} ms at 0.5 GHz" in out or f"= {ms * 1e3:.4g} us at 0.5 GHz" in out
    with open(tmp_path / "s" / "timeline.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    ends = {d: max(float(r["end_cycle"]) for r in rows if r["dnn"] == d) for d in ("mini", "mini@2")}
    line = next(x for x in out.splitlines() if x.startswith("DNNs done"))
    first, second = sorted(ends, key=ends.get)
    assert line.index(first) < line.index(second)
    assert f"{first} {ends[first]:.6g}" in line and f"{second} {ends[second]:.6g}" in line


def test_a_table_run_has_no_clock(tmp_path, capsys):
    from coexplore.cli.main import main
    from conftest import DATA
    table = DATA / "magma" / "tables" / "batch_mix" / "S3" / "insts0.csv"
    assert main(["schedule", "--table", str(table), "--bandwidth", "1", "--budget", "100", "--no-progress",
                 "--no-plot", "--out", str(tmp_path / "s")]) == 0
    data = json.loads((tmp_path / "s" / "schedule.json").read_text())
    assert "clock_GHz" not in data and "makespan_s" not in data and " at " not in capsys.readouterr().out


def test_the_systems_layer_mapper_is_the_one_used(system):
    """`mappers: {layer: random.yaml}` in the system YAML maps the layers as passing that mapper
    does (and not as the default MARL)."""
    from coexplore.bundled import resolve
    random_yaml = resolve("mappers", "random")
    system.write_text(SYSTEM + f"mappers: {{layer: {random_yaml}}}\n")
    named, _ = system_job_table(system, layer_budget=120)
    given, _ = system_job_table(system, layer_mapper=registry.load_mapper(random_yaml), layer_budget=120)
    marl, _ = system_job_table(system, layer_mapper=registry.mapper_spec("marl"), layer_budget=120)
    assert np.array_equal(named.latency, given.latency) and np.array_equal(named.energy, given.energy)
    assert not np.array_equal(named.energy, marl.energy)
