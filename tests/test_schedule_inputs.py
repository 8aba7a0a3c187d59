"""What `coexplore schedule` takes as its inputs (a user study of a MAGMA user): workload folders and
single problem files, wherever a workload is named, and in the run's identity; inputs of another
kind given as SYSTEM or --table said as such; an implausible --bandwidth; a copy's name as --core;
a schedule at its lower bound ends the search."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import CORPUS

from coexplore.cli.main import build_parser, main

LAYERS = CORPUS / "layers"
REPO = Path(__file__).resolve().parents[1]


def _system(tmp_path, workloads: str) -> Path:
    (tmp_path / "layers").mkdir(exist_ok=True)
    shutil.copy(LAYERS / "tiny_conv.yaml", tmp_path / "layers" / "1_tiny.yaml")
    shutil.copy(LAYERS / "tiny_conv.yaml", tmp_path / "one.yaml")
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 16}\n  cores:\n  - {template: simba, count: 2}\n"
                    f"workloads: {workloads}\n")
    return path


def test_a_folder_and_a_problem_file_are_workloads_of_a_system_yaml(tmp_path):
    from coexplore.arch.system import load_system_arch
    from coexplore.spec.problem import load_problem
    from coexplore.system.from_system import system_workloads
    path = _system(tmp_path, "[layers, one.yaml]")
    folder, single = system_workloads(load_system_arch(path))
    want = load_problem(LAYERS / "tiny_conv.yaml")
    for wl in (folder, single):
        (layer,) = wl.layers
        assert [layer.instance[d] for d in want.dims] == list(want.bounds)


def test_editing_a_problem_file_of_a_workload_folder_makes_another_run(tmp_path):
    """A rerun after the edit must not resume (or reuse) the run of the file as it was."""
    from coexplore.cli.schedule import _run_description, system_mapper_option
    path = _system(tmp_path, "[layers]")
    args = build_parser().parse_args(["schedule", str(path)])
    before = _run_description(args, system_mapper_option(args), 1000)["inputs_sha256"]
    assert str((tmp_path / "layers" / "1_tiny.yaml").resolve()) in before
    f = tmp_path / "layers" / "1_tiny.yaml"
    f.write_text(f.read_text().replace("M: 8,", "M: 16,"))
    assert _run_description(args, system_mapper_option(args), 1000)["inputs_sha256"] != before
    # --workload FOLDER too
    args = build_parser().parse_args(["schedule", str(path), "--workload", str(tmp_path / "layers")])
    before = _run_description(args, system_mapper_option(args), 1000)["inputs_sha256"]
    f.write_text(f.read_text().replace("M: 16,", "M: 32,"))
    assert _run_description(args, system_mapper_option(args), 1000)["inputs_sha256"] != before


@pytest.mark.parametrize("given, says", [
    ("problems/resnet50.yaml", "a workload goes with --workload"),
    (str(LAYERS / "tiny_conv.yaml"), "a problem file goes with --workload"),
    (str(CORPUS / "arches" / "eyeriss_like" / "arch.yaml"), "cores: [{arch: FILE}]"),
])
def test_another_input_given_as_system_is_said_as_such(given, says, capsys):
    assert main(["schedule", str(REPO / given) if not Path(given).is_absolute() else given]) == 2
    err = capsys.readouterr().err
    assert "not a system YAML" in err and says in err and "Traceback" not in err


def test_a_csv_as_system_and_a_layer_list_as_table_are_said_as_such(tmp_path, capsys):
    layers = tmp_path / "insts0.csv"          # MAGMA's traffic_insts form: K,C,Y,X,R,S,T rows, no header
    layers.write_text("1,1,20,512,128,1,1,1,3\n1,1,20,8192,2048,1,1,1,3\n")
    assert main(["schedule", str(layers)]) == 2
    assert "goes with --table" in capsys.readouterr().err
    assert main(["schedule", "--table", str(layers), "--bandwidth", "1"]) == 2
    err = capsys.readouterr().err
    assert "no header row" in err and "lat_<core>" in err


def test_an_implausible_bandwidth_is_warned(tmp_path, capsys):
    table = tmp_path / "t.csv"
    table.write_text("job,dnn,layer,lat_a,bw_a\n0,x,l0,1000,0.5\n")
    assert main(["schedule", "--table", str(table), "--bandwidth", "25.6e9", "--budget", "10", "--no-progress",
                 "--no-plot", "--out", str(tmp_path / "o")]) == 0
    assert "is it in another unit" in capsys.readouterr().err
    assert main(["schedule", "--table", str(table), "--bandwidth", "25.6", "--budget", "10", "--no-progress",
                 "--no-plot", "--out", str(tmp_path / "o")]) == 0
    assert "another unit" not in capsys.readouterr().err


def test_a_copys_name_as_core_is_its_design(tmp_path):
    from coexplore.cli.inputs import design_name
    from coexplore.spec.system import load_system
    cores = load_system(REPO / "arch" / "hetero_2simba_2eyeriss.yaml").cores
    copies = {c.name: c.instance_names() for c in cores}
    for design, names in copies.items():
        assert design_name(cores, design) == design
        for n in names:
            assert design_name(cores, n) == design
    assert design_name(cores, "nope_7") == "nope_7"         # (refused later, listing the designs)


def test_a_schedule_at_the_lower_bound_ends_the_search(tmp_path):
    """One job on two cores: the best schedule puts it on its faster core, alone; the bound is that
    latency, so nothing more can be found and the search stops early."""
    from coexplore.system.schedule import search_schedule
    from coexplore.system.tables import load_table
    table = tmp_path / "t.csv"
    table.write_text("job,dnn,layer,lat_a,bw_a,lat_b,bw_b\n0,x,l0,1000,0.5,2000,0.5\n")
    r = search_schedule(load_table(table), 4.0, "magma", 100_000, 0)
    assert r.makespan == 1000.0 and r.samples < 100_000 and not r.interrupted
    # a table whose bound no schedule reaches (two equal jobs, one core faster) runs the budget
    table.write_text("job,dnn,layer,lat_a,bw_a,lat_b,bw_b\n0,x,l0,1000,0.5,3000,0.5\n1,x,l1,1000,0.5,3000,0.5\n")
    r = search_schedule(load_table(table), 4.0, "random", 500, 0)
    assert r.makespan == 2000.0 and r.samples == 500 and r.lower_bound < 2000.0 * (1 - 1e-6) and not r.optimal


def test_a_schedule_near_but_above_the_lp_bound_does_not_end_the_search(tmp_path):
    """8 equal jobs of ~1e9 cycles on 2 equal cores: the optimum is half the total (4 jobs per core);
    a split 1e-8 above it is not optimal, though within the LP's tolerance of the bound."""
    from coexplore.system.schedule import search_schedule
    from coexplore.system.tables import load_table
    lat = [1e9 + 10 * i for i in range(8)]
    table = tmp_path / "t.csv"
    table.write_text("job,dnn,layer,lat_a,bw_a,lat_b,bw_b\n" + "".join(
        f"{i},x,l{i},{v:.0f},0.001,{v:.0f},0.001\n" for i, v in enumerate(lat)))
    r = search_schedule(load_table(table), 4.0, "magma", 3_000, 0)
    assert r.samples == 3_000 and not r.optimal
    assert r.makespan >= sum(lat) / 2


def test_the_summary_says_when_the_schedule_is_optimal(tmp_path, capsys):
    table = tmp_path / "t.csv"
    table.write_text("job,dnn,layer,lat_a,bw_a,lat_b,bw_b\n0,x,l0,1000,0.5,2000,0.5\n")
    assert main(["schedule", "--table", str(table), "--bandwidth", "4", "--budget", "50000", "--no-progress",
                 "--no-plot", "--json", "--out", str(tmp_path / "o")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["makespan"] == 1000.0 and data["samples"] < 50_000 and data["optimal"] is True
    assert main(["schedule", "--table", str(table), "--bandwidth", "4", "--budget", "50000", "--no-progress",
                 "--no-plot", "--out", str(tmp_path / "o2")]) == 0
    assert "as long as its longest job alone: optimal" in capsys.readouterr().out
    assert np.isfinite(data["lower_bound"])


def test_a_layers_mapspace_note_is_said_when_worker_processes_map_the_layers():
    """simba's inter-PE Y fan-out may take only M; DLRM's top_fc5 has M = 1: with --jobs 2 too."""
    import warnings

    from coexplore.errors import CoexploreNote
    from coexplore.system.from_system import system_job_table
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        system_job_table(REPO / "arch" / "simba_2x2.yaml", ["dlrm_mlp"], layer_budget=200, workers=2)
    notes = [str(w.message) for w in said if issubclass(w.category, CoexploreNote)]
    assert any("idles for layer top_fc5" in n for n in notes)


def test_magma_tables_and_run_tables_get_default_folders_of_their_own(tmp_path, monkeypatch, capsys):
    """Every MAGMA setting's table is an `insts0.csv`: their runs are named by mix and setting."""
    monkeypatch.chdir(tmp_path)
    for setting in ("S1", "S2"):
        table = tmp_path / "tables" / "batch_conv" / setting / "insts0.csv"
        table.parent.mkdir(parents=True)
        table.write_text("job,dnn,layer,lat_a,bw_a\n0,x,l0,1000,0.5\n")
        assert main(["schedule", "--table", str(table), "--bandwidth", "1", "--budget", "10", "--no-progress"]) == 0
    run = tmp_path / "results" / "schedule" / "batch_conv-S1-insts0-magma-s0"
    assert run.is_dir() and (run.parent / "batch_conv-S2-insts0-magma-s0").is_dir()
    jobs = run / "jobs.csv"
    jobs.write_text((tmp_path / "tables" / "batch_conv" / "S1" / "insts0.csv").read_text())
    assert main(["schedule", "--table", str(jobs), "--bandwidth", "1", "--budget", "10", "--no-progress"]) == 0
    assert (run.parent / "batch_conv-S1-insts0-magma-s0-magma-s0").is_dir()
