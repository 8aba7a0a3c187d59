"""Problem shapes as Timeloop reads them (src/workload/shape-models/problem-shape.cpp): the short
projection form, an optional shape name, required coefficient defaults, terms of one or two items,
a data space's `ranks`; and layers of one shape name with other projections kept apart."""

from __future__ import annotations

import csv
import math

import pytest
import yaml

from coexplore.cli.main import main
from coexplore.errors import CoexploreError
from coexplore.spec.problem import parse_problem
from coexplore.spec.workload import CNN_LAYER_SHAPE, Layer, Workload, load_workload, problem_yaml, read_problem

MV = {"name": "MV", "dimensions": ["M", "K"],
      "data_spaces": [{"name": "W", "projection": [[["M"]], [["K"]]]},
                      {"name": "X", "projection": [[["K"]]]},
                      {"name": "Y", "projection": [[["M"]]], "read_write": True}]}


def _problem(shape: dict, instance: dict | None = None) -> dict:
    return {"problem": {"shape": shape, "instance": instance or {"M": 6, "K": 10}}}


def _flat(shape: dict) -> dict:
    """The same shape with every projection in Timeloop's short form (a list of dimension names)."""
    return {**shape, "data_spaces": [{**ds, "projection": [axis[0][0] for axis in ds["projection"]]}
                                     for ds in shape["data_spaces"]]}


def test_short_projection_form_is_the_long_one():
    long, short = parse_problem(_problem(MV)), parse_problem(_problem(_flat(MV)))
    assert [(d.name, d.ranks, d.read_write) for d in short.dataspaces] == \
           [(d.name, d.ranks, d.read_write) for d in long.dataspaces]
    assert [short.tensor_size(d) for d in short.dataspaces] == [6 * 10, 10, 6]


def test_short_projection_form_in_a_workload_file(tmp_path):
    f = tmp_path / "mv.yaml"
    f.write_text(yaml.safe_dump({"shape": _flat(MV), "workload": {"layers": [
        {"name": "a", "instance": {"M": 6, "K": 10}}]}}))
    layer = load_workload(f).layers[0]
    assert layer.shape["data_spaces"] == MV["data_spaces"]         # read as the long form
    assert layer.dataspace_sizes() == {"W": 60, "X": 10, "Y": 6}


def test_a_shape_without_a_name(tmp_path):
    """Timeloop reads the name if there is one (the exercises' problem_base.yaml has none): a
    folder of such problem files is a workload, and a layer is written back without a name."""
    shape = {k: v for k, v in MV.items() if k != "name"}
    folder = tmp_path / "net"
    folder.mkdir()
    for i, (m, k) in enumerate([(6, 10), (4, 4)]):
        (folder / f"{i}.yaml").write_text(yaml.safe_dump(_problem(shape, {"M": m, "K": k})))
    wl = load_workload(folder)
    assert [layer.macs for layer in wl] == [60, 16]
    text = problem_yaml(wl.layers[0])
    assert "name:" not in text.split("dimensions:")[0]
    back = tmp_path / "back.yaml"
    back.write_text(text)
    assert read_problem(back).shape == wl.layers[0].shape


def test_same_shape_name_other_projections_are_other_problems():
    """Two workloads may both call their shape CNN_Layer; with other projections their layers are
    other problems (a schedule of both kept the first one's numbers for the second's layer)."""
    no_stride = {**CNN_LAYER_SHAPE, "data_spaces": [
        ds if ds["name"] != "Inputs" else {**ds, "projection": [[["N"]], [["C"]], [["R"], ["P"]],
                                                                 [["S"], ["Q"]]]}
        for ds in CNN_LAYER_SHAPE["data_spaces"]]}
    inst = {"C": 3, "M": 16, "R": 3, "S": 3, "N": 1, "P": 16, "Q": 16,
            "Wstride": 2, "Hstride": 2, "Wdilation": 1, "Hdilation": 1}
    a = Layer("conv1", dict(inst), shape=CNN_LAYER_SHAPE)
    b = Layer("conv1", dict(inst), shape=no_stride)
    assert a.dataspace_sizes()["Inputs"] == 3 * 33 * 33 and b.dataspace_sizes()["Inputs"] == 3 * 18 * 18
    assert a.key() != b.key()
    assert len(Workload("two", (a, b)).unique_layers()) == 2
    assert len(Workload("two", (a, Layer("again", dict(inst), shape=CNN_LAYER_SHAPE))).unique_layers()) == 1
    # what the model does not read does not part two layers: the name, rank names, read_write: false
    same = {k: v for k, v in CNN_LAYER_SHAPE.items() if k != "name"}
    same["data_spaces"] = [{**ds, "read_write": ds.get("read_write", False), "ranks": ["A"] * len(ds["projection"])}
                           for ds in same["data_spaces"]]
    assert Layer("x", dict(inst), shape=same).key() == a.key()


def _net(path, name: str, inputs_projection: str) -> None:
    path.write_text(f"""
shape:
  name: CNN_Layer
  dimensions: [C, M, R, S, N, P, Q]
  coefficients: [{{name: Wstride, default: 1}}, {{name: Hstride, default: 1}},
                 {{name: Wdilation, default: 1}}, {{name: Hdilation, default: 1}}]
  data_spaces:
  - {{name: Weights, projection: [[[C]], [[M]], [[R]], [[S]]]}}
  - {{name: Inputs, projection: {inputs_projection}}}
  - {{name: Outputs, projection: [[[N]], [[M]], [[Q]], [[P]]], read_write: true}}
workload:
  name: {name}
  layers:
  - {{name: conv1, instance: {{C: 3, M: 16, R: 3, S: 3, P: 8, Q: 8, Wstride: 2, Hstride: 2}}}}
""")


def _jobs(folder) -> dict[str, dict]:
    with open(folder / "jobs.csv") as fh:
        return {row["job"]: row for row in csv.DictReader(fh)}


def test_a_schedule_of_two_workloads_keeps_each_layers_own_numbers(tmp_path):
    strided, plain = tmp_path / "strided.yaml", tmp_path / "plain.yaml"
    _net(strided, "strided", "[[[N]], [[C]], [[R, Wdilation], [P, Wstride]], [[S, Hdilation], [Q, Hstride]]]")
    _net(plain, "plain", "[[[N]], [[C]], [[R], [P]], [[S], [Q]]]")
    run = ["schedule", "simba", "--layer-budget", "100", "--budget", "20", "--no-cache", "--no-progress"]
    assert main([*run, "--workload", str(strided), "--workload", str(plain), "--out", str(tmp_path / "both")]) == 0
    assert main([*run, "--workload", str(plain), "--out", str(tmp_path / "alone")]) == 0
    both, alone = _jobs(tmp_path / "both"), _jobs(tmp_path / "alone")
    columns = [c for c in alone["plain.conv1"] if c.startswith(("lat_", "bw_", "en_"))]
    assert columns
    assert {c: both["plain.conv1"][c] for c in columns} == {c: alone["plain.conv1"][c] for c in columns}
    assert both["plain.conv1"] != {**both["strided.conv1"], "job": "plain.conv1", "dnn": "plain"}


@pytest.mark.parametrize("change, key, says", [
    (lambda s: s["data_spaces"][0].update(projection=[[["M", "K", "K"]], [["K"]]]),
     "problem.shape.data_spaces[0].projection[0]", "at most one coefficient"),
    (lambda s: s.update(coefficients=[{"name": "Stride"}]), "problem.shape.coefficients[0]", "default"),
    (lambda s: s["data_spaces"][0].update(ranks=["M"]), "problem.shape.data_spaces[0].ranks",
     "one rank name (text) per projection axis (2)"),
    (lambda s: s["data_spaces"][0].update(ranks=[{"a": 1}, "K"]), "problem.shape.data_spaces[0].ranks",
     "one rank name (text) per projection axis (2)"),
])
def test_what_timeloop_refuses_is_refused(tmp_path, capsys, change, key, says):
    shape = yaml.safe_load(yaml.safe_dump(MV))
    change(shape)
    f = tmp_path / "p.yaml"
    f.write_text(yaml.safe_dump(_problem(shape)))
    assert main(["evaluate", "simba", str(f), str(tmp_path / "m.yaml")]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and key in err and says in err and "Traceback" not in err


def test_ranks_naming_each_axis_are_accepted(tmp_path):
    shape = yaml.safe_load(yaml.safe_dump(MV))
    shape["data_spaces"][0]["ranks"] = ["M", "K"]
    assert parse_problem(_problem(shape)).tensor_size(parse_problem(_problem(shape)).dataspaces[0]) == 60
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump({"shape": shape, "workload": {"layers": [{"name": "a", "instance": {"M": 2, "K": 3}}]}}))
    assert load_workload(f).layers[0].dataspace_sizes()["W"] == 6
    shape["data_spaces"][0]["ranks"] = ["M"]
    f.write_text(yaml.safe_dump({"shape": shape, "workload": {"layers": [{"name": "a", "instance": {"M": 2, "K": 3}}]}}))
    with pytest.raises(CoexploreError, match="one rank name"):
        load_workload(f)
    shape["data_spaces"][0]["ranks"] = [{1: "a"}, "K"]          # rank names are text, as in Timeloop
    f.write_text(yaml.safe_dump({"shape": shape, "workload": {"layers": [{"name": "a", "instance": {"M": 2, "K": 3}}]}}))
    with pytest.raises(CoexploreError, match="one rank name"):
        load_workload(f)


def test_a_coefficient_without_default_in_a_workload_shape_is_refused(tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump({"shape": {**MV, "coefficients": [{"name": "S"}]},
                                 "workload": {"layers": [{"name": "a", "instance": {"M": 2, "K": 3}}]}}))
    with pytest.raises(CoexploreError) as exc:
        load_workload(f)
    assert exc.value.key == "shape.coefficients[0]" and "default" in exc.value.expected


def _three_layers(path) -> None:
    path.write_text("workload:\n  name: net\n  layers:\n"
                    "  - {name: a, instance: {C: 8, M: 8, P: 4, Q: 4}}\n"
                    "  - {name: b, count: 2, instance: {C: 8, M: 8, P: 4, Q: 4}}\n"
                    "  - {name: c, instance: {C: 4, M: 8, P: 4, Q: 4}}\n")


def test_map_all_layers_names_the_layers_mapped_once(tmp_path, capsys):
    net = tmp_path / "net.yaml"
    _three_layers(net)
    assert main(["map", "simba", str(net), "--all-layers", "--budget", "50", "--no-cache", "--no-progress",
                 "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    with open(tmp_path / "o" / "layers.csv") as fh:
        rows = {r["layer"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {"a", "c"}
    assert (rows["a"]["count"], rows["a"]["also"]) == ("3", "b") and rows["c"]["also"] == ""
    assert "a (also b)" in out
    assert int(rows["a"]["macs"]) == math.prod([8, 8, 4, 4])


def test_layers_named_with_spaces_are_listed_whole(tmp_path, capsys):
    """A folder workload names its layers by their files, spaces included."""
    folder = tmp_path / "net"
    folder.mkdir()
    for name in ("conv 1", "conv 2", "conv 3"):
        (folder / f"{name}.yaml").write_text(yaml.safe_dump({"problem": {
            "shape": CNN_LAYER_SHAPE, "instance": {"C": 8, "M": 8, "P": 4, "Q": 4, "R": 1, "S": 1, "N": 1}}}))
    assert main(["map", "simba", str(folder), "--all-layers", "--budget", "30", "--no-cache", "--no-progress",
                 "--out", str(tmp_path / "o")]) == 0
    assert "conv 1 (also conv 2, conv 3)" in capsys.readouterr().out
    with open(tmp_path / "o" / "layers.csv") as fh:
        assert [(r["layer"], r["also"]) for r in csv.DictReader(fh)] == [("conv 1", "conv 2; conv 3")]


def test_evaluate_of_a_layer_that_runs_several_times_says_so(tmp_path, capsys):
    net = tmp_path / "net.yaml"
    _three_layers(net)
    assert main(["map", "simba", str(net), "--layer", "b", "--budget", "30", "--no-cache", "--no-progress",
                 "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    assert main(["evaluate", "simba", str(net), str(tmp_path / "o" / "mapping.yaml"), "--layer", "b"]) == 0
    assert "net runs layer b 2 times" in capsys.readouterr().err
    assert main(["evaluate", "simba", str(net), str(tmp_path / "o" / "mapping.yaml"), "--layer", "a"]) == 0
    assert "times" not in capsys.readouterr().err


# ------------------------------------------------ problem files as Timeloop's ParseWorkload reads them
def _gemm(shape, **extra):
    from coexplore.spec.problem import parse_problem
    return parse_problem({"problem": {"shape": shape, "instance": {"M": 4, "N": 6, "K": 8}, **extra}}, "g.yaml")


@pytest.mark.parametrize("name", ["gemm_ABZ", "gemm-ABZ", "gemm_ABZ.yaml"])
def test_a_named_shape_is_the_one_timeloop_ships(name):
    """User study: `shape: gemm_ABZ` was read as a CNN layer (24 MACs), not Timeloop's GEMM (192)."""
    p = _gemm(name)
    assert p.dims == ["M", "N", "K"] and p.macs == 4 * 6 * 8
    assert [d.name for d in p.dataspaces] == ["A", "B", "Z"] and p.dataspaces[2].read_write
    assert [p.tensor_size(d) for d in p.dataspaces] == [4 * 8, 6 * 8, 4 * 6]


def test_a_named_shape_is_found_in_timeloops_shape_folders_or_refused(tmp_path, monkeypatch):
    from coexplore.errors import CoexploreError
    with pytest.raises(CoexploreError) as err:
        _gemm("totally-made-up-shape")
    assert err.value.key == "problem.shape" and "totally-made-up-shape.yaml" in err.value.message
    (tmp_path / "mine.yaml").write_text("shape: {name: mine, dimensions: [M, N, K], data_spaces: ["
                                        "{name: X, projection: [[[M]], [[K]]]}, {name: Y, projection: [[[K]]]}, "
                                        "{name: Z, projection: [[[M]], [[N]]], read_write: true}]}\n")
    monkeypatch.setenv("TIMELOOP_PROBLEM_SHAPE_DIRS", f"/nonexistent:{tmp_path}")
    assert [d.name for d in _gemm("mine").dataspaces] == ["X", "Y", "Z"]


def test_no_shape_is_timeloops_cnn_layer_whose_output_channels_are_k():
    """Timeloop's problem-shapes/cnn-layer.yaml: dimensions R, S, P, Q, C, K, N (K, not M); every
    bound given (Timeloop asserts one for each dimension), here directly under problem:, which
    Timeloop reads when there is no instance: (its backwards-compatible form)."""
    from coexplore.errors import CoexploreError
    from coexplore.spec.problem import parse_problem
    bounds = {"R": 3, "S": 3, "P": 4, "Q": 4, "C": 2, "K": 5, "N": 1}
    p = parse_problem({"problem": dict(bounds)}, "c.yaml")
    assert p.dims == list(bounds) and p.bounds == list(bounds.values()) and p.default_shape
    assert p.tensor_size(p.dataspaces[1]) == 1 * 2 * 6 * 6          # Inputs: (P-1) + (R-1) + 1 = 6
    with pytest.raises(CoexploreError, match="no bound for K; M is no dimension of the shape"):
        parse_problem({"problem": {"instance": {**{k: v for k, v in bounds.items() if k != "K"}, "M": 5}}}, "c.yaml")


@pytest.mark.parametrize("projection", [[], [[]]])
def test_a_scalar_tensor_is_refused_not_a_traceback(projection):
    """User study: `projection: []` ended in a TypeError inside the model (exit 3)."""
    from coexplore.errors import CoexploreError
    with pytest.raises(CoexploreError) as err:
        _gemm({"name": "s", "dimensions": ["M", "N", "K"], "data_spaces": [
            {"name": "A", "projection": [[["M"]], [["K"]]]}, {"name": "B", "projection": projection},
            {"name": "Z", "projection": [[["M"]], [["N"]]], "read_write": True}]})
    assert err.value.key == "problem.shape.data_spaces[1].projection"


def test_a_quoted_read_write_is_read_as_timeloops_yaml_reader_reads_it():
    shape = {"name": "s", "dimensions": ["M", "N", "K"], "data_spaces": [
        {"name": "A", "projection": [[["M"]], [["K"]]], "read_write": "false"},
        {"name": "B", "projection": [[["N"]], [["K"]]]},
        {"name": "Z", "projection": [[["M"]], [["N"]]], "read_write": "True"}]}
    assert [d.read_write for d in _gemm(shape).dataspaces] == [False, False, True]


def test_a_folder_workloads_files_are_warned_of_as_one_file_is(tmp_path, capsys):
    """User study: the exercises' `HStride: 4` (for Hstride) was warned of for one file, not when its
    folder was read as a workload (map --all-layers, schedule --workload)."""
    folder = tmp_path / "net"
    folder.mkdir()
    (folder / "l1.yaml").write_text(yaml.safe_dump({"problem": {
        "shape": CNN_LAYER_SHAPE, "instance": {"C": 8, "M": 8, "P": 4, "Q": 4, "R": 1, "S": 1, "N": 1,
                                               "WStride": 2}}}))
    assert main(["map", "simba", str(folder), "--all-layers", "--budget", "30", "--no-cache", "--no-progress",
                 "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "l1.yaml: problem.instance key(s) WStride ignored" in err and err.count("WStride") == 1
