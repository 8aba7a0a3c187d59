"""What coexplore writes as Timeloop input (problems, mappings, timeloop-model's run folder) reads
back, in coexplore and in Timeloop, as what was meant (found by a round-trip review): what would
not is refused before anything is written."""

import copy
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import CORPUS

from coexplore.errors import CoexploreError
from coexplore.model.inputs import load_context
from coexplore.spec.problem import parse_problem
from coexplore.spec.workload import Layer, read_problem, write_problem

V3 = Path(__file__).parent / "data" / "exercises_v3" / "v3_ex01_conv1d_2level_os"
GEMM = {"problem": {"version": 0.4, "shape": {
    "name": "GEMM", "dimensions": ["M", "N", "K"],
    "data_spaces": [{"name": "A", "projection": [[["M"]], [["K"]]]},
                    {"name": "B", "projection": [[["K"]], [["N"]]]},
                    {"name": "Z", "projection": [[["M"]], [["N"]]], "read_write": True}]},
    "instance": {"M": 8, "N": 12, "K": 6}}}


@pytest.mark.parametrize("name", ["K1", "K-2", "k.x"])
def test_dimension_names_a_mapping_could_not_name_are_refused(name):
    """`K12` in a mapping's factors is K = 12 (Timeloop's and coexplore's factor syntax), so a
    dimension K1 could be written but never read back."""
    data = copy.deepcopy(GEMM)
    data["problem"]["shape"]["dimensions"][2] = name
    with pytest.raises(CoexploreError) as err:
        parse_problem(data, "p.yaml")
    assert err.value.key == "problem.shape.dimensions[2]" and "letters" in err.value.expected


def test_flattened_dimensions_are_refused():
    """Timeloop's `flatten` renames the dimensions a mapping names; not modelled, so refused
    rather than read as if absent."""
    data = copy.deepcopy(GEMM)
    data["problem"]["shape"]["flatten"] = [{"name": "F", "dimensions": ["M", "N"]}]
    with pytest.raises(CoexploreError) as err:
        parse_problem(data, "p.yaml")
    assert err.value.key == "problem.shape.flatten"


def test_write_problem_writes_only_what_reads_back(tmp_path):
    layer = Layer("g", {"C": np.int64(64), "M": 32, "R": 3, "S": 3, "N": 1, "P": 8, "Q": 8})
    back = read_problem(write_problem(layer, tmp_path / "a.yaml"))
    assert back.instance["C"] == 64 and type(back.instance["C"]) is int and back.instance["Wstride"] == 1
    for bad, key in ((Layer("g", {"C": 64.0}), "C"), (Layer("g", {"Wstride": 0}), "Wstride"), (Layer("g", {"K": 5}), "K")):
        with pytest.raises(CoexploreError) as err:
            write_problem(bad, tmp_path / "b.yaml")
        assert err.value.key.endswith(f"instance.{key}")
    with pytest.raises(CoexploreError, match="is a folder"):
        write_problem(layer, tmp_path)
    with pytest.raises(CoexploreError, match="cannot write"):
        write_problem(layer, tmp_path / "a.yaml" / "under_a_file.yaml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml"]      # nothing else, no temporary left


def _eyeriss():
    adir = CORPUS / "arches" / "eyeriss_like"
    return load_context(adir / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml", adir / "ERT.yaml")


def test_a_spatial_factor_at_a_level_without_a_fan_out_is_refused_when_written(tmp_path):
    """No Timeloop mapping can express it (its parser cannot find the level's spatial tiling level):
    refused at the write, not written as a file nothing reads."""
    from coexplore.mapspace.space import MapSpace
    from coexplore.spec.mapping import save_mapping
    ctx = _eyeriss()
    ms = MapSpace(ctx.arch, ctx.problem, {})
    arrays = ms.decode(ms.sample(np.random.default_rng(0), 1))
    lone = [len(ctx.arch.levels) - 1 - i for i in range(len(ctx.arch.levels)) if np.prod(ctx.arch.fanout(i)) == 1]
    assert lone
    arrays.spatial_x[0, lone[0], 0] = 2
    with pytest.raises(CoexploreError, match="no fan-out"):
        save_mapping(tmp_path / "m.yaml", arrays, 0, ctx.arch, ctx.problem)
    assert not (tmp_path / "m.yaml").exists()


def test_an_unused_fan_out_gets_its_directive_and_reads_back_the_same(tmp_path):
    from coexplore.mapspace.space import MapSpace
    from coexplore.spec.mapping import save_mapping, to_arrays
    ctx = _eyeriss()
    ms = MapSpace(ctx.arch, ctx.problem, {})
    arrays = ms.decode(ms.sample(np.random.default_rng(1), 200))
    res = ctx.evaluate(arrays)
    b = int(np.flatnonzero(res.valid)[0])
    for li in range(arrays.spatial_x.shape[1]):               # every fan-out unused: all loops temporal
        arrays.temporal[b, li] *= arrays.spatial_x[b, li] * arrays.spatial_y[b, li]
    arrays.spatial_x[b] = 1
    arrays.spatial_y[b] = 1
    save_mapping(tmp_path / "m.yaml", arrays, b, ctx.arch, ctx.problem)
    written = yaml.safe_load((tmp_path / "m.yaml").read_text())["mapping"]
    spatial = [e for e in written if e["type"] == "spatial"]
    fanning = [lv.name for i, lv in enumerate(ctx.arch.levels) if np.prod(ctx.arch.fanout(i)) > 1]
    assert sorted(e["target"] for e in spatial) == sorted(fanning)
    assert all(set(re.findall(r"[A-Z](\d+)", e["factors"])) == {"1"} for e in spatial)
    back = to_arrays([ctx.load_mapping(tmp_path / "m.yaml")], ctx.arch, ctx.problem)
    assert ctx.record(ctx.evaluate(back)) == ctx.record(ctx.evaluate(arrays), b)


def test_timeloop_model_gets_a_v03_problem_in_the_spelling_it_reads(tmp_path):
    """Today's Timeloop looks up `data_spaces` and `read_write` only: a v0.3 file's `data-spaces`
    / `read-write` are written as those."""
    from coexplore.model.timeloop_run import write_inputs
    from coexplore.spec.mapping import to_arrays
    ctx = load_context(V3 / "arch.yaml", V3 / "problem.yaml", V3 / "ERT.yaml")
    assert "data-spaces" in (V3 / "problem.yaml").read_text()
    arrays = to_arrays([ctx.load_mapping(V3 / "mapping.yaml")], ctx.arch, ctx.problem)
    write_inputs(ctx, arrays, 0, tmp_path)
    shape = yaml.safe_load((tmp_path / "problem.yaml").read_text())["problem"]["shape"]
    assert "data-spaces" not in shape and [d.get("read_write", False) for d in shape["data_spaces"]] == \
        [d.read_write for d in ctx.problem.dataspaces]
    assert any(d.read_write for d in ctx.problem.dataspaces)


def test_densities_read_into_a_layer_are_said_to_be_dropped(tmp_path):
    data = copy.deepcopy(GEMM)
    data["problem"]["instance"]["densities"] = {"A": 0.5}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(data))
    from coexplore.errors import CoexploreWarning
    with pytest.warns(CoexploreWarning, match="densities ignored: coexplore models dense tensors"):
        layer = read_problem(tmp_path / "p.yaml")
    assert "densities" not in layer.instance


def test_a_workload_file_names_its_dimensions_by_letters_too(tmp_path):
    from coexplore.spec.workload import load_workload
    text = ("version: 0.4\nshape:\n  dimensions: [M1, K, N]\n  data_spaces:\n"
            "  - {name: A, projection: [[[M1]], [[K]]]}\n  - {name: B, projection: [[[K]], [[N]]]}\n"
            "  - {name: Z, projection: [[[M1]], [[N]]], read_write: true}\n"
            "workload:\n  name: w\n  layers:\n  - {name: l, instance: {M1: 4, K: 4, N: 4}}\n")
    (tmp_path / "w.yaml").write_text(text)
    with pytest.raises(CoexploreError) as err:
        load_workload(tmp_path / "w.yaml")
    assert err.value.key.endswith("shape.dimensions[0]") and err.value.file == str(tmp_path / "w.yaml")


def test_an_edited_copy_of_decoded_arrays_is_checked():
    """User study: a loop order edited into no permutation gave numbers. The README's way to edit
    decoded arrays (assign a copy, then edit it) has them checked."""
    from coexplore.mapspace.space import MapSpace
    ctx = _eyeriss()
    ms = MapSpace(ctx.arch, ctx.problem, {})
    arrays = ms.decode(ms.sample(np.random.default_rng(0), 2))
    arrays.perm = arrays.perm.copy()
    arrays.perm[0, -1, :] = 1
    with pytest.raises(CoexploreError, match="not a permutation"):
        ctx.evaluate(arrays)
