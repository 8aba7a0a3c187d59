"""A folder of Timeloop problem files is a workload: one layer per file, in natural order (a v0.3
lab keeps its networks so: _layer_shapes/CONV/AlexNet/AlexNet_layer1.yaml ...)."""

import shutil
from pathlib import Path

import pytest

from coexplore.cli.main import main
from coexplore.errors import CoexploreError
from coexplore.spec.problem import load_problem
from coexplore.spec.workload import load_workload

V3 = Path(__file__).parent / "data" / "exercises_v3"
PROBLEMS = [V3 / "v3_ex01_conv1d_2level_os" / "problem.yaml", V3 / "v3_bd_simba_like_alexnet1" / "problem.yaml",
            V3 / "v3_ex04_conv1d_oc_ic_3levelspatial_cp" / "problem.yaml"]


@pytest.fixture()
def folder(tmp_path):
    net = tmp_path / "net"
    net.mkdir()
    for name, src in zip(("layer10", "layer2", "layer1"), PROBLEMS):
        shutil.copy(src, net / f"{name}.yaml")
    (net / "README.txt").write_text("not a problem\n")
    return net


def test_a_folder_of_problem_files_is_a_workload_in_natural_order(folder):
    wl = load_workload(folder)
    assert wl.name == "net" and [ly.name for ly in wl.layers] == ["layer1", "layer2", "layer10"]
    for layer, src in zip(wl.layers, (PROBLEMS[2], PROBLEMS[1], PROBLEMS[0])):
        p = load_problem(src)
        assert {d: layer.instance[d] for d in p.dims} == dict(zip(p.dims, p.bounds))
        assert layer.total_macs == p.macs


def test_a_folder_without_problem_files_is_refused(tmp_path):
    with pytest.raises(CoexploreError) as info:
        load_workload(tmp_path)
    assert "without problem files" in info.value.message and info.value.file == str(tmp_path)


def test_map_takes_a_layer_of_the_folder_as_of_a_workload(folder, tmp_path, capsys):
    d = V3 / "v3_ex01_conv1d_2level_os"
    assert main(["map", str(d / "arch.yaml"), str(folder), "--layer", "layer10", "--ert", str(d / "ERT.yaml"),
                 "--searcher", "exhaustive", "--budget", "2000", "--no-cache", "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 0
    assert "layer10" in capsys.readouterr().out
    # the layer is ex01's problem: the same best as mapping that file itself
    assert main(["map", str(d / "arch.yaml"), str(d / "problem.yaml"), "--ert", str(d / "ERT.yaml"),
                 "--searcher", "exhaustive", "--budget", "2000", "--no-cache", "--out", str(tmp_path / "p"),
                 "--no-progress"]) == 0
    a = (tmp_path / "o" / "mapping.yaml").read_text().split("mapping:", 1)[1]
    b = (tmp_path / "p" / "mapping.yaml").read_text().split("mapping:", 1)[1]
    assert a == b
