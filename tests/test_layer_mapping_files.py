"""The layer mappings behind a system's job table: `schedule SYSTEM` and every sweep point write
`mappings/<core design>/<workload>/<layer>.yaml`, and `evaluate` on one reproduces the job table's
latency and energy for its jobs (a user study found no way to the mapping but searching again)."""

import csv
import json
import shutil

import pytest

from coexplore.cli.main import main

from conftest import CORPUS

QUIET = ["--no-progress", "--no-plot", "--layer-budget", "60"]


def _system(tmp_path):
    (tmp_path / "net").mkdir()
    shutil.copy(CORPUS / "layers" / "tiny_conv.yaml", tmp_path / "net" / "1_tiny.yaml")
    shutil.copy(CORPUS / "layers" / "alexnet_conv3.yaml", tmp_path / "net" / "2_conv3.yaml")
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 16}\n  cores:\n  - {template: simba, count: 1}\n"
                    "  - {template: eyeriss, count: 1}\nworkloads: [net]\n")
    return path


def _jobs(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_schedule_writes_each_layer_mapping_and_evaluate_reproduces_the_job_table(tmp_path, capsys):
    system, out = _system(tmp_path), tmp_path / "o"
    assert main(["schedule", str(system), *QUIET, "--budget", "50", "--out", str(out)]) == 0
    rows = _jobs(out / "jobs.csv")
    files = sorted(p.relative_to(out / "mappings").as_posix() for p in (out / "mappings").rglob("*.yaml"))
    layers = sorted({r["layer"] for r in rows})
    assert files == sorted(f"{d}/net/{layer}.yaml" for d in ("eyeriss", "simba") for layer in layers)
    assert json.loads((out / "schedule.json").read_text())["mappings"] == str(out / "mappings")
    capsys.readouterr()
    checked = 0
    for row in rows:
        for design, instance in (("simba", "simba"), ("eyeriss", "eyeriss")):
            lat, en = float(row[f"lat_{instance}"]), float(row[f"en_{instance}"])
            if lat == float("inf"):
                continue
            assert main(["evaluate", str(system), "--core", design, str(tmp_path / "net"), "--layer", row["layer"],
                         str(out / "mappings" / design / "net" / f"{row['layer']}.yaml"), "--json"]) == 0
            got = json.loads(capsys.readouterr().out)
            assert got["cycles"] == lat and got["energy_pJ"] == pytest.approx(en, rel=1e-12)
            checked += 1
    assert checked >= 3


def test_a_rerun_with_another_workload_leaves_no_stale_mapping(tmp_path):
    system, out = _system(tmp_path), tmp_path / "o"
    assert main(["schedule", str(system), *QUIET, "--budget", "50", "--out", str(out)]) == 0
    (tmp_path / "net" / "2_conv3.yaml").unlink()
    assert main(["schedule", str(system), *QUIET, "--budget", "50", "--out", str(out)]) == 0
    rows = _jobs(out / "jobs.csv")
    assert {p.stem for p in (out / "mappings").rglob("*.yaml")} == {r["layer"] for r in rows}


def test_each_sweep_point_holds_its_layer_mappings(tmp_path):
    system = _system(tmp_path)
    text = system.read_text().replace("workloads: [net]\n", "workloads: [net]\nsweep:\n  axes:\n"
                                      "    dram.bandwidth_GBps: [8, 16]\n")
    system.write_text(text)
    out = tmp_path / "s"
    assert main(["sweep", str(system), *QUIET, "--budget", "30", "--out", str(out)]) == 0
    for point in (out / "points").iterdir():
        rows = _jobs(point / "jobs.csv")
        found = {(p.parent.parent.name, p.stem) for p in (point / "mappings").rglob("*.yaml")}
        assert found == {(d, r["layer"]) for d in ("simba", "eyeriss") for r in rows}


def test_schedule_and_map_all_layers_say_how_many_searches_the_cache_answered(tmp_path, capsys):
    """User study: a rerun of `schedule` never said its layers came from the cache (only `cache stats`
    showed it), and `map --all-layers` said "21 of 21 mapped" with 19 cache hits."""
    system, cache = _system(tmp_path), tmp_path / "c.sqlite"
    args = ["schedule", str(system), *QUIET, "--budget", "50", "--cache", str(cache)]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    first = capsys.readouterr().err
    assert "job table from 4 (layer, core design) searches: 0 read from the cache" in first and ", 4 run" in first
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    assert f"4 read from the cache {cache}, 0 run" in capsys.readouterr().err
    assert main(["map", str(system), str(tmp_path / "net"), "--core", "simba", "--all-layers", "--budget", "60",
                 "--cache", str(cache), "--no-progress", "--out", str(tmp_path / "m")]) == 0
    assert "2 of 2 distinct layers mapped (2 from the cache)" in capsys.readouterr().out


def test_searches_that_found_nothing_are_counted_as_run(tmp_path, capsys, monkeypatch):
    """User study: the count left out the searches that found no valid mapping (never cached, so run
    again on every rerun). They are counted as run, and said apart."""
    import coexplore.system.from_system as fs
    from coexplore.search.layer import NoValidMapping
    real = fs.map_layer

    def no_eyeriss(ctx, *a, **k):
        if "eyeriss" in ctx.arch.name:
            raise NoValidMapping(60, [])
        return real(ctx, *a, **k)
    monkeypatch.setattr(fs, "map_layer", no_eyeriss)
    system, cache = _system(tmp_path), tmp_path / "c.sqlite"
    args = ["schedule", str(system), *QUIET, "--budget", "50", "--cache", str(cache)]
    for out in ("a", "b"):
        assert main([*args, "--out", str(tmp_path / out)]) == 0
        err = capsys.readouterr().err
        hits = 0 if out == "a" else 2
        assert (f"job table from 4 (layer, core design) searches: {hits} read from the cache {cache}, {4 - hits} run, "
                "of which 2 found no valid mapping (not cached: searched on every run)") in err, err


def test_a_layer_no_design_fits_blames_the_core_design_not_the_budget(tmp_path, capsys):
    """Carried finding (a sweep point with glb_depth 1 said key '--layer-budget' and "a larger budget"):
    when (nearly) every random mapping fails one check, the error names the core's entry in the system
    file, with the failing check, the budget last."""
    (tmp_path / "net").mkdir()
    shutil.copy(CORPUS / "layers" / "tiny_conv.yaml", tmp_path / "net" / "1_tiny.yaml")
    system = tmp_path / "sys.yaml"
    system.write_text("system:\n  dram: {bandwidth_GBps: 16}\n  cores:\n  - {template: simba, params: {glb_depth: 1}}\n"
                      "workloads: [net]\n")
    assert main(["schedule", str(system), *QUIET, "--budget", "20", "--no-cache", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "key 'system.cores[0].params'" in err and "a core design whose capacity of GlobalBuffer fits" in err
    assert "key '--layer-budget'" not in err
