"""System and workload YAMLs found by a user review: core copies whose names collide, a core count
beyond any job table, template parameters whose generated core Timeloop would refuse, and job names
made twice by two workloads: one line naming the file and key, exit 2, before any work."""

import pytest

from coexplore.cli.main import main

CORE_ENTRIES = {
    "colliding copies": ("[{name: simba, template: simba, count: 2}, {name: simba_0, template: eyeriss}]",
                         "system.cores[1].name", "simba_0"),
    "colliding grid copy": ("[{name: pe, template: simba, grid: [1, 2]}, {name: pe_0_1, template: simba}]",
                            "system.cores[1].name", "pe_0_1"),
    "too many cores": ("[{template: simba, count: 100000000}]", "system.cores", "100,000,000"),
    "too many in a grid": ("[{template: simba, grid: [200, 200]}]", "system.cores", "40,000"),
    "ports beyond Timeloop's": ("[{template: simba, params: {weight_regs_num_ports: 3}}]",
                                "system.cores[0].params", "num_ports"),
}


def system(tmp_path, cores: str):
    f = tmp_path / "sys.yaml"
    f.write_text(f"system:\n  dram: {{bandwidth_GBps: 25.6}}\n  cores: {cores}\n")
    return f


@pytest.mark.parametrize("case", sorted(CORE_ENTRIES))
@pytest.mark.parametrize("command", ["arch", "schedule"])
def test_a_bad_core_list_is_refused_before_any_work(case, command, tmp_path, capsys):
    cores, key, needle = CORE_ENTRIES[case]
    f = system(tmp_path, cores)
    argv = (["arch", "generate", str(f), "--out", str(tmp_path / "o")] if command == "arch" else
            ["schedule", str(f), "--workload", "alexnet", "--layer-budget", "10", "--budget", "10",
             "--no-cache", "--no-plot", "--out", str(tmp_path / "o")])
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert str(f) in err and f"key '{key}'" in err and needle in err, err
    assert not (tmp_path / "o").exists()


def test_two_workloads_that_make_the_same_job_name(tmp_path, capsys):
    f = system(tmp_path, "[{template: simba}]")
    (tmp_path / "w1.yaml").write_text("workload:\n  name: a\n  layers:\n"
                                      "  - {name: b.c, instance: {C: 16, M: 16, P: 8, Q: 8}}\n")
    (tmp_path / "w2.yaml").write_text("workload:\n  name: a.b\n  layers:\n"
                                      "  - {name: c, instance: {C: 32, M: 32, P: 8, Q: 8}}\n")
    rc = main(["schedule", str(f), "--workload", str(tmp_path / "w1.yaml"), "--workload", str(tmp_path / "w2.yaml"),
               "--layer-budget", "10", "--budget", "10", "--no-cache", "--no-plot", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and "'a.b.c'" in err and "workload.name" in err, err


def test_distinct_copies_and_a_legal_core_are_still_accepted(tmp_path, capsys):
    f = system(tmp_path, "[{name: simba, template: simba, count: 2}, {name: ey, template: eyeriss, grid: [1, 2]}]")
    assert main(["arch", "generate", str(f), "--out", str(tmp_path / "o"), "--json"]) == 0
    assert '"cores_total": 4' in capsys.readouterr().out


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_layer_search_the_layer_refuses_names_the_layer(jobs, tmp_path, capsys):
    """A per-layer refusal (here exhaustive search of a space too large to enumerate) says which
    layer and core, as a failed layer search does, also when worker processes map the layers."""
    rc = main(["schedule", "simba", "--workload", "alexnet", "--layer-searcher", "exhaustive", "--no-cache",
               "--no-progress", "--out", str(tmp_path / "s"), "--jobs", jobs])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    assert "layer conv1 on core simba" in err and "too many for exhaustive search" in err, err


@pytest.mark.parametrize("jobs", ["0", "257", "-1", "two"])
def test_jobs_out_of_range_is_refused(jobs, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["schedule", "simba", "--workload", "alexnet", "--no-cache", "--out", str(tmp_path / "s"),
              "--jobs", jobs])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--jobs" in err and "Traceback" not in err
    assert ("not an integer" if jobs == "two" else "must be 1 to 256") in err    # the range it takes


@pytest.mark.parametrize("field, value, says", [("clock_GHz", 1000, "MHz"), ("clock_GHz", 0.001, "MHz"),
                                                ("dram", {"bandwidth_GBps": 25600}, "MB/s"),
                                                ("dram", {"bandwidth_GBps": 1e-300}, "TB/s")])
def test_values_in_another_unit_are_warned_about(tmp_path, field, value, says):
    import warnings
    import yaml
    from coexplore.errors import CoexploreWarning
    from coexplore.spec.system import load_system
    doc = {"system": {"name": "s", "clock_GHz": 1.0, "dram": {"bandwidth_GBps": 25.6},
                      "cores": [{"name": "e", "template": "eyeriss", "params": {}}]}}
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(doc))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoexploreWarning)
        load_system(f)                                   # plausible: nothing said
    doc["system"][field] = value
    f.write_text(yaml.safe_dump(doc))
    with pytest.warns(CoexploreWarning, match=says):
        load_system(f)


def test_a_misspelt_sweep_parameter_and_an_odd_word_are_blamed_on_what_was_written(tmp_path):
    """User study: 'value 2048 makes ...glb_dpth invalid' blamed the value; word_bits 12 was blamed on
    the shared DRAM width nobody changed."""
    from coexplore.arch.system import load_system_arch
    from coexplore.errors import CoexploreError
    f = tmp_path / "s.yaml"
    f.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {template: simba}\nsweep:\n  axes:\n    cores.simba.params.glb_dpth: [1024, 2048]\n"
                 "    system.clock_GHz: [1.0, 2.0]\n")
    with pytest.raises(CoexploreError) as info:
        load_system_arch(f)
    assert info.value.key == "sweep.axes.cores.simba.params.glb_dpth"
    assert info.value.message.startswith("the axis names an unknown parameter 'glb_dpth'")
    assert "glb_depth" in info.value.expected
    f.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {template: simba, params: {word_bits: 12}}\n")
    with pytest.raises(CoexploreError) as info:
        load_system_arch(f)
    assert info.value.key == "system.cores[0].params.word_bits" and "system.dram.width" in info.value.expected
    f.write_text("system:\n  dram: {width: 60, bandwidth_GBps: 8}\n  cores:\n  - {template: simba}\n")       # the DRAM width's own fault
    with pytest.raises(CoexploreError) as info:
        load_system_arch(f)
    assert info.value.key == "system.dram.width"


@pytest.mark.parametrize("command", ["schedule", "sweep"])
def test_a_folder_given_as_the_system_is_said_to_be_one(tmp_path, capsys, command):
    rc = main([command, str(tmp_path), "--budget", "10", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{tmp_path}: is a directory, not a file" in err and "Traceback" not in err


def test_a_repeated_objective_is_said_and_counted_once(tmp_path):
    import warnings

    from coexplore.errors import CoexploreWarning
    from coexplore.spec.system import load_system
    f = tmp_path / "s.yaml"
    f.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {template: simba}\n"
                 "objectives: [latency, energy, latency]\n")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        spec = load_system(f)
    assert spec.objectives == ("latency", "energy")
    lines = [str(w.message) for w in said if issubclass(w.category, CoexploreWarning)]
    assert len(lines) == 1 and str(f) in lines[0] and "objectives[2]" in lines[0] and "'latency'" in lines[0]
    import argparse

    from coexplore.cli.sweep import _objectives
    with pytest.warns(CoexploreWarning, match="--objectives repeats the objective 'edp'"):
        chosen = _objectives(argparse.Namespace(objectives="edp, area,edp"), spec)
    assert [o.name for o in chosen] == ["edp", "area"]


@pytest.mark.parametrize("where", ["file", "option"])
def test_a_bandwidth_no_schedule_can_pass_names_where_it_was_given(where, tmp_path, capsys):
    """User study: 1e-320 GB/s ended in 'no schedule with a finite makespan in 0 samples', no file."""
    import shutil
    from pathlib import Path
    data = Path(__file__).resolve().parent / "data" / "sweep"
    shutil.copy(data / "small_net.yaml", tmp_path)
    text = (data / "tiny_sweep.yaml").read_text()
    assert "bandwidth_GBps: 25.6}" in text
    f = tmp_path / "sys.yaml"
    f.write_text(text.replace("bandwidth_GBps: 25.6}", "bandwidth_GBps: 1e-320}" if where == "file" else
                              "bandwidth_GBps: 25.6}"))
    rc = main(["schedule", str(f), "--layer-budget", "60", "--budget", "60", "--no-cache", "--no-plot",
               "--no-progress", "--out", str(tmp_path / "o"), *(["--bandwidth", "1e-320"] if where == "option" else [])])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert rc == 2 and "no schedule has a finite makespan" in err and "job small_net." in err, err
    assert (f"{f}: key 'system.dram.bandwidth_GBps'" if where == "file" else "key '--bandwidth'") in err, err


def test_a_bundled_file_of_another_kind_in_the_wrong_slot_is_said_outside_a_checkout(tmp_path, monkeypatch, capsys):
    """README audit: outside a checkout `schedule problems/resnet50.yaml` said "file not found", while
    in one it said the workload goes with --workload: the README's relative paths name bundled files
    of any kind, so the wrong slot is said wherever it runs."""
    from coexplore.cli.main import main
    monkeypatch.chdir(tmp_path)                           # no problems/ or arch/ folder here
    assert main(["schedule", "problems/resnet50.yaml"]) == 2
    err = capsys.readouterr().err
    assert "not a system YAML: a workload" in err and "--workload" in err and "not found" not in err
