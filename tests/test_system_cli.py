"""`coexplore schedule --table ... --bandwidth ...`: outputs and bad input (exit 2)."""

import json
from pathlib import Path

import numpy as np
import pytest

from coexplore.cli.main import main
from coexplore.system.encoding import MakespanObjective
from coexplore.system.tables import load_table

DATA = Path(__file__).parent / "data" / "magma"
TABLE = DATA / "tables" / "batch_mix" / "S3" / "insts0.csv"


def test_schedule_json_and_files(tmp_path, capsys):
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--budget", "500",
               "--seed", "2", "--json", "--out", str(tmp_path / "o")])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    t = load_table(TABLE)
    assert data["searcher"] == "magma" and data["samples"] == 500
    assert len(data["core"]) == len(data["priority"]) == t.num_jobs
    assert set(data["core"]) <= set(t.cores)
    # the reported makespan is what the evaluator gives the reported schedule (table row order)
    x = np.concatenate([[t.cores.index(c) for c in data["core"]], data["priority"]])[None]
    assert MakespanObjective(t, 16)(x)[0] == pytest.approx(data["makespan"], rel=1e-12)
    record = json.loads((tmp_path / "o" / "schedule.json").read_text())
    assert record["makespan"] == data["makespan"] and record["command"].startswith("coexplore schedule --table ")
    png = (tmp_path / "o" / "gantt.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    # timeline.csv: every job once, by start time, with the core and times of schedule.json
    import csv
    with open(tmp_path / "o" / "timeline.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["job"] for r in rows) == sorted(data["jobs"])
    starts = [float(r["start_cycle"]) for r in rows]
    assert starts == sorted(starts)
    for r in rows:
        j = data["jobs"].index(r["job"])
        assert (r["core"], float(r["start_cycle"]), float(r["end_cycle"])) == (data["core"][j], data["start"][j],
                                                                                data["end"][j])
    assert max(float(r["end_cycle"]) for r in rows) == pytest.approx(data["makespan"], rel=1e-12)


def test_schedule_summary_and_no_plot(tmp_path, capsys):
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "1", "--searcher", "heft-heft",
               "--out", str(tmp_path / "h"), "--no-plot"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "makespan" in out and "busy" in out and "computing" in out and "1 sample)" in out
    assert not (tmp_path / "h" / "gantt.png").exists()


def test_schedule_seed_note_for_deterministic_heuristic(tmp_path, capsys):
    """A heuristic with one schedule says --seed changes nothing, and indeed it does not."""
    found = []
    for seed in (0, 5):
        rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "1", "--searcher", "fcfs-greedy",
                   "--seed", str(seed), "--out", str(tmp_path / f"s{seed}"), "--no-plot", "--no-progress"])
        assert rc == 0
        err = capsys.readouterr().err
        assert ("--seed 5 changes nothing" in err) == (seed == 5)
        data = json.loads((tmp_path / f"s{seed}" / "schedule.json").read_text())
        found.append((data["core"], data["priority"], data["makespan"]))
    assert found[0] == found[1]


def _bad(tmp_path, capsys, argv):
    rc = main(["schedule", *argv, "--out", str(tmp_path / "x"), "--no-plot", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    return err


def test_bad_input_exits_2(tmp_path, capsys):
    missing = tmp_path / "missing_col.csv"
    missing.write_text("job,lat_0,lat_1,bw_0\n0,10,20,1\n")
    assert "bw_1" in _bad(tmp_path, capsys, ["--table", str(missing), "--bandwidth", "1"])
    empty = tmp_path / "empty.csv"
    empty.write_text("job,lat_0,bw_0\n")
    assert "empty workload" in _bad(tmp_path, capsys, ["--table", str(empty), "--bandwidth", "1"])
    assert "bandwidth" in _bad(tmp_path, capsys, ["--table", str(TABLE), "--bandwidth", "-4"])
    assert "searcher" in _bad(tmp_path, capsys, ["--table", str(TABLE), "--bandwidth", "1",
                                                 "--searcher", "nope"])
    assert "budget" in _bad(tmp_path, capsys, ["--table", str(TABLE), "--bandwidth", "1",
                                               "--budget", "0"])
    assert "table" in _bad(tmp_path, capsys, ["--bandwidth", "1"])
    assert "not found" in _bad(tmp_path, capsys, ["--table", str(tmp_path / "nope.csv"),
                                                "--bandwidth", "1"])


ROOT = Path(__file__).resolve().parents[1]


def test_bundled_magma_yaml_is_magma_with_its_defaults():
    from coexplore.system.magma import MagmaConfig
    from coexplore.system.schedule import load_system_mapper
    spec = load_system_mapper(ROOT / "mappers" / "magma.yaml")
    assert spec.searcher == "magma" and spec.budget == 10_000 and spec.config == MagmaConfig()


def test_a_searcher_name_reads_its_bundled_mapper_file(tmp_path, capsys, monkeypatch):
    """`--searcher magma` reads mappers/magma.yaml, as `map --searcher marl` reads mappers/marl.yaml
    (here a bundled folder whose magma.yaml asks for a small population and budget); a layer
    mapper's file of a system searcher's name (mappers/random.yaml) is not read."""
    import coexplore.bundled
    from coexplore.system.magma import MagmaConfig
    from coexplore.system.schedule import search_schedule
    folder = tmp_path / "mappers"
    folder.mkdir()
    (folder / "magma.yaml").write_text("searcher: magma\nbudget: 300\nconfig: {pop_size: 20, islands: 1}\n")
    (folder / "random.yaml").write_text((ROOT / "mappers" / "random.yaml").read_text())
    monkeypatch.setattr(coexplore.bundled, "bundled_dir", lambda kind: tmp_path / kind)
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--searcher", "magma", "--json",
               "--out", str(tmp_path / "o"), "--no-plot"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    want = search_schedule(load_table(TABLE), 16, "magma", 300, 0, config=MagmaConfig(pop_size=20, islands=1))
    assert data["samples"] == 300 and data["makespan"] == want.makespan
    assert data["history"] == [[int(s), float(b)] for s, b in want.history]
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--searcher", "random", "--json",
               "--out", str(tmp_path / "r"), "--no-plot", "--budget", "50"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["searcher"] == "random"


def test_the_bundled_magma_yaml_edited_to_the_original_quirks_is_accepted(tmp_path, capsys):
    """Its islands / dedup / merge_at are spelled out at their defaults: flipping original_quirks
    alone asks for nothing the run would ignore."""
    y = tmp_path / "m1.yaml"
    y.write_text((ROOT / "mappers" / "magma.yaml").read_text().replace("original_quirks: false",
                                                                     "original_quirks: true"))
    assert "original_quirks: true" in y.read_text()
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--searcher", str(y), "--budget", "200",
               "--json", "--out", str(tmp_path / "o"), "--no-plot"])
    assert rc == 0, capsys.readouterr().err
    # user study: the run record said islands 2, warm start and dedup on, none of which ran
    ran = json.loads((tmp_path / "o" / "schedule.json").read_text())["run"]["config"]
    assert (ran["islands"], ran["warm_start"], ran["dedup"], ran["original_quirks"]) == (1, False, False, True)
    same = tmp_path / "m2.yaml"              # what ran, spelled out: the same schedule
    same.write_text(y.read_text().replace("islands: 2", "islands: 1").replace("warm_start: true", "warm_start: false")
                    .replace("dedup: true", "dedup: false").replace("  merge_at: 0.7\n", ""))
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--searcher", str(same), "--budget", "200",
               "--json", "--out", str(tmp_path / "o2"), "--no-plot"])
    assert rc == 0, capsys.readouterr().err
    again = json.loads((tmp_path / "o2" / "schedule.json").read_text())
    assert again["makespan"] == json.loads((tmp_path / "o" / "schedule.json").read_text())["makespan"]


def test_schedule_takes_a_mapper_yaml_and_its_config_takes_effect(tmp_path, capsys):
    from coexplore.system.magma import MagmaConfig
    from coexplore.system.schedule import search_schedule
    y = tmp_path / "small.yaml"
    y.write_text("searcher: magma\nbudget: 300\nconfig: {pop_size: 20, islands: 1}\n")
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--searcher", str(y), "--json",
               "--out", str(tmp_path / "o"), "--no-plot"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert data["samples"] == 300
    t = load_table(TABLE)
    want = search_schedule(t, 16, "magma", 300, 0, config=MagmaConfig(pop_size=20, islands=1))
    default = search_schedule(t, 16, "magma", 300, 0)
    assert data["makespan"] == want.makespan
    assert data["history"] == [[int(s), float(b)] for s, b in want.history]
    assert [[int(s), float(b)] for s, b in default.history] != data["history"]  # the config changed the search
    # --budget on the command line wins over the file's
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--searcher", str(y), "--budget", "120",
               "--json", "--out", str(tmp_path / "o"), "--no-plot"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["samples"] == 120


def test_system_yaml_mappers_system_is_used(tmp_path, capsys):
    mapper = tmp_path / "m.yaml"
    mapper.write_text("searcher: sjf-greedy\n")
    system = tmp_path / "sys.yaml"
    text = (ROOT / "arch" / "simba.yaml").read_text()
    text = text.replace("- ../problems/resnet50.yaml\n- ../problems/vgg16.yaml\n", f"- {ROOT}/problems/dlrm_mlp.yaml\n")
    text = text.replace("layer: ../mappers/marl.yaml", f"layer: {ROOT}/mappers/marl.yaml\n  system: {mapper}")
    system.write_text(text)
    rc = main(["schedule", str(system), "--layer-budget", "300", "--json", "--no-plot",
               "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "o")])
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["searcher"] == "sjf-greedy"


@pytest.mark.parametrize("text, msg", [
    ("searcher: magma\npopulation: 5\n", "population"),
    ("searcher: stdga\nconfig: {pop_size: 5}\n", "takes no config"),
    ("searcher: magma\nconfig: {pop_size: -5}\n", "config.pop_size"),
    ("searcher: magma\nconfig: {p_mutation_min: 0.001}\nbudget: 0\n", "budget"),
    ("searcher: magmaa\n", "unknown searcher"),
    ("searcher: magma\nconfig: {pop_size: 3}\n", "too small for 2 island"),
    ("searcher: magma\nconfig: {p_mutation: 5}\n", "config.p_mutation"),
    ("searcher: magma\nconfig: {merge_at: 3}\n", "config.merge_at"),
    ("searcher: magma\nconfig: 3\n", "key 'config'"),
    ("searcher: marl\nconfig: {lr: 0.3}\n", "a layer mapper"),
    ("searcher: magma\nconfig: {p_mutation_start: 0}\n", "config.p_mutation_start"),
    # options the run would ignore
    ("searcher: magma\nconfig: {original_quirks: true, islands: 3}\n", "config.islands"),
    ("searcher: magma\nconfig: {original_quirks: true, merge_at: 0.5}\n", "config.merge_at"),
    ("searcher: magma\nconfig: {islands: 1, merge_at: 0.5}\n", "one island"),
])
def test_bad_system_mapper_yaml(tmp_path, capsys, text, msg):
    y = tmp_path / "m.yaml"
    y.write_text(text)
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--searcher", str(y), "--no-plot",
               "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and msg in err and str(y) in err


def test_default_output_folder_never_overwrites_another_run(tmp_path, capsys, monkeypatch):
    """Two tables with the same file name: the second run gets a numbered folder; the same run
    again reuses its own folder; schedule.json records the run."""
    monkeypatch.chdir(tmp_path)
    other = DATA / "tables" / "batch_conv" / "S6" / "insts0.csv"
    runs = [(TABLE, "16"), (other, "1"), (TABLE, "16")]
    outs = []
    for table, bw in runs:
        assert main(["schedule", "--table", str(table), "--bandwidth", bw, "--budget", "100", "--no-plot"]) == 0
        outs.append(next(line.split()[-1] for line in capsys.readouterr().out.splitlines()
                         if line.startswith("schedule ")))
    assert outs[0] == outs[2] != outs[1]
    first, second = (json.loads(Path(o).read_text()) for o in outs[:2])
    assert first["run"]["table"] == str(TABLE.resolve()) and first["run"]["bandwidth"] == 16
    assert second["run"]["table"] == str(other.resolve()) and second["run"]["budget"] == 100


def test_table_columns_are_checked(tmp_path, capsys):
    cases = {"job,lat_a,bw_a,lat_a,bw_a\n0,10,1,20,2\n": "appears 2 times",
             "job,lat_,bw_\n0,10,1\n": "names no core",
             "job,lat_a,bw_a,en_a\n0,10,1,nan\n": "energy",
             "job,lat_a,bw_a,en_a\n0,10,1,-5\n": "energy"}
    for text, msg in cases.items():
        f = tmp_path / "t.csv"
        f.write_text(text)
        assert msg in _bad(tmp_path, capsys, ["--table", str(f), "--bandwidth", "1"])
    f.write_text("job,LAT_a,BW_a\n0,10,1\n")                   # prefixes in any case
    assert load_table(f).cores == ["a"]


def test_overflowing_makespans_are_one_line_errors(tmp_path, capsys):
    f = tmp_path / "huge.csv"
    f.write_text("job,lat_a,bw_a\n0,1e308,1e308\n1,1e308,1e308\n")
    assert "latencies too large to add up" in _bad(tmp_path, capsys, ["--table", str(f), "--bandwidth", "1",
                                                                      "--budget", "50"])
    f.write_text("job,lat_a,bw_a\n0,1e3,1e308\n1,1e3,1e308\n")      # stretched by bandwidth beyond a float
    assert "finite makespan" in _bad(tmp_path, capsys, ["--table", str(f), "--bandwidth", "1e-300", "--budget", "50"])


def test_system_only_options_with_a_table_are_refused(tmp_path, capsys):
    assert "--workload" in _bad(tmp_path, capsys, ["--table", str(TABLE), "--bandwidth", "1",
                                                   "--workload", "x.yaml"])
    assert "--layer-budget" in _bad(tmp_path, capsys, ["--table", str(TABLE), "--bandwidth", "1",
                                                       "--layer-budget", "10"])


def test_system_run_checks_options_before_mapping_and_keeps_the_job_table(tmp_path, capsys):
    """A bad --bandwidth or --out fails before any layer is mapped; --seed changes the scheduler's
    seed only (the layer mapper keeps --layer-seed), and the job table is written beside."""
    from unittest import mock
    with mock.patch("coexplore.system.from_system.map_layer", side_effect=AssertionError("a layer was mapped")):
        assert "bandwidth" in _bad(tmp_path, capsys, ["hetero_2simba_2eyeriss", "--bandwidth", "0", "--no-cache"])
    system = tmp_path / "sys.yaml"
    text = (ROOT / "arch" / "simba.yaml").read_text()
    system.write_text(text.replace("- ../problems/resnet50.yaml\n- ../problems/vgg16.yaml\n",
                                   f"- {ROOT}/problems/dlrm_mlp.yaml\n")
                      .replace("layer: ../mappers/marl.yaml", f"layer: {ROOT}/mappers/marl.yaml"))
    tables = []
    for s in ("0", "1"):
        rc = main(["schedule", str(system), "--layer-budget", "200", "--seed", s, "--no-plot", "--json",
                   "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / f"o{s}")])
        assert rc == 0
        data = json.loads(capsys.readouterr().out)
        assert data["run"]["layer_seed"] == 0 and data["run"]["seed"] == int(s)
        tables.append(load_table(data["job_table"]))
    assert np.array_equal(tables[0].latency, tables[1].latency)


def test_a_failed_run_leaves_no_empty_result_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "t.csv"
    bad.write_text("job,lat_a,bw_a\n0,10,x\n")
    assert main(["schedule", "--table", str(bad), "--bandwidth", "1", "--no-progress"]) == 2
    assert not (tmp_path / "results").exists()


def test_schedule_says_when_each_job_and_dnn_runs(tmp_path, capsys):
    """Per-job start/end consistent with the schedule: every job takes at least its no-stall
    latency on its core, the last end is the makespan, no schedule beats the lower bound, and
    compute (no-stall) utilization never exceeds busy utilization."""
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--budget", "300", "--json",
               "--no-plot", "--out", str(tmp_path / "o")])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    t = load_table(TABLE)
    start, end = np.array(d["start"]), np.array(d["end"])
    lat = t.latency[np.arange(t.num_jobs), [t.cores.index(c) for c in d["core"]]]
    assert (end - start >= lat * (1 - 1e-9)).all() and end.max() == pytest.approx(d["makespan"], rel=1e-12)
    assert d["lower_bound"] <= d["makespan"]
    assert all(c <= b + 1e-12 for c, b in zip(d["compute_utilization"], d["utilization"]))
    np.testing.assert_allclose(d["compute_cycles"], np.bincount([t.cores.index(c) for c in d["core"]],
                                                                weights=lat, minlength=t.num_cores))


def test_a_table_run_into_another_runs_folder_drops_its_job_table(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / "jobs.csv").write_text("job,lat_a,bw_a\nx,1,1\n")
    (out / "schedule.json").write_text('{"run": {"searcher": "another"}}')     # another run's
    assert main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--budget", "100", "--no-plot",
                 "--out", str(out)]) == 0
    assert not (out / "jobs.csv").exists()


def test_a_missing_system_mapper_file_names_the_key(tmp_path, capsys):
    text = (ROOT / "arch" / "hetero_2simba_2eyeriss.yaml").read_text()
    text = text.replace("../problems/", f"{ROOT}/problems/").replace("layer: ../mappers/", f"layer: {ROOT}/mappers/")
    text = text.replace("system: ../mappers/magma.yaml", "system: cma")
    f = tmp_path / "sys.yaml"
    f.write_text(text)
    err = _bad(tmp_path, capsys, [str(f), "--no-cache"])
    assert "key 'mappers.system'" in err and str(f) in err and "no mapper file" in err


@pytest.mark.parametrize("value", [".inf", ".nan"])
def test_a_non_finite_system_bandwidth_names_the_key(tmp_path, capsys, value):
    text = (ROOT / "arch" / "hetero_2simba_2eyeriss.yaml").read_text().replace("../", f"{ROOT}/")
    f = tmp_path / "sys.yaml"
    f.write_text(text.replace("bandwidth_GBps: 25.6", f"bandwidth_GBps: {value}"))
    err = _bad(tmp_path, capsys, [str(f), "--no-cache"])
    assert "key 'system.dram.bandwidth_GBps'" in err and str(f) in err


def test_a_magma_budget_of_one_generation_is_said(tmp_path, capsys):
    """User study: pop_size 5000 with budget 500 never bred a generation, without a word."""
    for budget, said in (("100", True), ("101", False)):
        assert main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--budget", budget, "--no-plot",
                     "--no-progress", "--out", str(tmp_path / budget)]) == 0
        assert ("at most one MAGMA generation (pop_size 100)" in capsys.readouterr().err) is said
