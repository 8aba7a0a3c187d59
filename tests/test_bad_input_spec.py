"""Bad values in Timeloop problems, architectures, mappings and constraints (found by an input audit):
each is refused where it is read (coexplore/spec), so every command says so in one line naming the
file and key, exits 2, and neither crashes (exit 3) nor prints numbers for an impossible design."""

import json
import re
import shutil

import pytest

from conftest import CORPUS
from coexplore.cli.main import main
from coexplore.spec.yamlio import dump_yaml, load_yaml

ARCH_DIR = CORPUS / "arches" / "simba_like"
LAYER = CORPUS / "layers" / "alexnet_conv3.yaml"
MAPPING = CORPUS / "public" / "simba_like" / "alexnet_conv3" / "003" / "mapping.yaml"
CONSTRAINTS = ARCH_DIR / "constraints.yaml"
BIG = 99999999999999999999999          # beyond int64


def run(capsys, *args):
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def refused(capsys, args, *needles):
    rc, out, err = run(capsys, *args)
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in err and "internal error" not in err, err
    errors = [line for line in err.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, err
    for n in needles:
        assert str(n) in errors[0], errors[0]
    return errors[0]


def mutated(src, dst, change):
    """A copy of the YAML file `src` at `dst` with only `change(data)` applied (Timeloop tags kept)."""
    data = load_yaml(src)
    change(data)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(dump_yaml(data))
    return dst


def arch_copy(tmp_path, change, name="processed.yaml"):
    """The simba_like architecture (flattened or v0.4) with its ERT, one value changed."""
    d = tmp_path / "arch"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(ARCH_DIR / "ERT.yaml", d / "ERT.yaml")
    return mutated(ARCH_DIR / name, d / name, change)


def glb(d):
    """The GlobalBuffer of the flattened simba_like architecture."""
    comp = d["architecture"]["subtree"][0]["local"][1]
    assert comp["name"] == "GlobalBuffer[1..1]"
    return comp["attributes"]


def v4_node(d, name):
    return next(n for n in d["architecture"]["nodes"] if n.get("name") == name)


def test_the_unmutated_inputs_are_accepted(capsys, tmp_path):
    """The mutations below are what is refused: the same files unchanged evaluate."""
    arch = arch_copy(tmp_path, lambda d: None)
    layer = mutated(LAYER, tmp_path / "layer.yaml", lambda d: None)
    rc, out, err = run(capsys, "evaluate", arch, layer, MAPPING, "--json")
    assert rc == 0, err
    v4 = arch_copy(tmp_path, lambda d: None, "arch.yaml")
    rc, out, err = run(capsys, "evaluate", v4, layer, MAPPING)
    assert rc == 0, err
    rc, out, err = run(capsys, "energy", "tables", arch, "--out", tmp_path / "et")
    assert rc == 0, err


def test_energy_tables_warns_of_a_node_timeloop_ignores(capsys, tmp_path):
    """A v0.4 component whose class names no buffer or compute unit is dropped, as Timeloop drops
    it; `energy tables` says so, as `evaluate` does."""
    def add(d):
        d["architecture"]["nodes"].insert(1, {"!": "Component", "name": "addr_gen", "class": "aladdin_adder",
                                              "attributes": {"width": 16}})
    v4 = arch_copy(tmp_path, add, "arch.yaml")
    for args in (["energy", "tables", v4, "--out", tmp_path / "et"], ["evaluate", v4, LAYER, MAPPING]):
        rc, out, err = run(capsys, *args)
        assert rc == 0, err
        assert "addr_gen: class 'aladdin_adder'" in err and "Timeloop ignores" in err, err


def test_an_energy_scale_the_built_in_estimator_would_not_apply_is_refused(capsys, tmp_path):
    """Accelergy multiplies a node's energies by its energy_scale: priced by the built-in estimator (no
    ERT) it used to change nothing; with the ERT Accelergy wrote, the table holds it."""
    def scaled(d):
        v4_node(d, "GlobalBuffer")["energy_scale"] = 2
    arch = arch_copy(tmp_path, scaled, "arch.yaml")
    (arch.parent / "ERT.yaml").unlink()
    rc, out, err = run(capsys, "evaluate", arch, LAYER, MAPPING)
    assert rc == 2 and "energy_scale" in err and "--ert" in err, err
    rc, out, err = run(capsys, "evaluate", arch, LAYER, MAPPING, "--ert", ARCH_DIR / "ERT.yaml")
    assert rc == 0, err


def test_sparse_optimizations_that_ask_for_something_are_refused(capsys, tmp_path):
    """Sparseloop's formats, skipping and gating change Timeloop's numbers: a node's or a top-level
    section that sets any is refused (exit 2, naming the key); one that names targets and sets nothing
    changes nothing and is read as dense. timeloop-model's auto_bypass_on_failure is refused too."""
    gating = {"targets": [{"name": "GlobalBuffer", "action_optimization": [
        {"type": "gating", "options": [{"target": "Weights", "condition_on": ["Inputs"]}]}]}]}

    def node(d):
        v4_node(d, "GlobalBuffer")["sparse_optimizations"] = gating
    rc, out, err = run(capsys, "evaluate", arch_copy(tmp_path / "n", node, "arch.yaml"), LAYER, MAPPING)
    assert rc == 2 and "sparse_optimizations" in err and "Traceback" not in err, err

    def top(d):
        d["sparse_optimizations"] = {"version": 0.4, **gating}
    rc, out, err = run(capsys, "evaluate", arch_copy(tmp_path / "t", top, "arch.yaml"), LAYER, MAPPING)
    assert rc == 2 and "key 'sparse_optimizations'" in err, err

    def bypass(d):
        d["model"] = {"auto_bypass_on_failure": True}
    rc, out, err = run(capsys, "evaluate", arch_copy(tmp_path / "b", bypass, "arch.yaml"), LAYER, MAPPING)
    assert rc == 2 and "model.auto_bypass_on_failure" in err, err

    def empty(d):
        v4_node(d, "GlobalBuffer")["sparse_optimizations"] = {"targets": [{"name": "GlobalBuffer"}]}
    rc, out, err = run(capsys, "evaluate", arch_copy(tmp_path / "e", empty, "arch.yaml"), LAYER, MAPPING)
    plain = run(capsys, "evaluate", arch_copy(tmp_path / "plain", lambda d: None, "arch.yaml"), LAYER, MAPPING)[1]
    assert rc == 0 and out.splitlines()[2:] == plain.splitlines()[2:]   # the same numbers as without it


# 1. every coefficient of a problem (strides, dilations) is a positive integer, like the bounds
@pytest.mark.parametrize("key, value", [("Wstride", -1), ("Hstride", 0), ("Wdilation", 0),
                                        ("Hdilation", -3), ("Wstride", 1.5), ("Wstride", "two")])
def test_problem_coefficients_are_positive_integers(capsys, tmp_path, key, value):
    layer = mutated(LAYER, tmp_path / "l.yaml", lambda d: d["problem"]["instance"].update({key: value}))
    refused(capsys, ["evaluate", ARCH_DIR / "processed.yaml", layer, MAPPING], layer,
            f"problem.instance.{key}", "positive integer")


def test_problem_coefficient_defaults_are_positive(capsys, tmp_path):
    def change(d):
        d["problem"]["shape"]["coefficients"][0]["default"] = 0
        del d["problem"]["instance"]["Wstride"]
    layer = mutated(LAYER, tmp_path / "l.yaml", change)
    refused(capsys, ["evaluate", ARCH_DIR / "processed.yaml", layer, MAPPING], layer,
            "problem.shape.coefficients[0].default", "positive integer")


def test_negative_stride_is_refused_by_map_too(capsys, tmp_path):
    layer = mutated(LAYER, tmp_path / "l.yaml", lambda d: d["problem"]["instance"].update(Wstride=-1, Hstride=-1))
    refused(capsys, ["map", ARCH_DIR / "processed.yaml", layer, "--budget", "10", "--no-cache",
                     "--out", tmp_path / "o"], "problem.instance.Wstride")
    assert not (tmp_path / "o").exists()


def test_a_stride_that_makes_a_tensor_uncountable(capsys, tmp_path):
    layer = mutated(LAYER, tmp_path / "l.yaml", lambda d: d["problem"]["instance"].update(Wstride=10 ** 15))
    refused(capsys, ["evaluate", ARCH_DIR / "processed.yaml", layer, MAPPING], "problem.instance",
            "tensor Inputs")


# 4. a reversed instance range: refused by the one range parser, for the model and the pricing
def test_reversed_instance_range(capsys, tmp_path):
    def change(d):
        comp = d["architecture"]["subtree"][0]["local"][3]
        assert comp["name"] == "PEInputBuffer[1..16]"
        comp["name"] = "PEInputBuffer[16..1]"
    arch = arch_copy(tmp_path, change)
    for args in (["energy", "tables", arch, "--out", tmp_path / "et"], ["evaluate", arch, LAYER, MAPPING]):
        refused(capsys, args, arch, "local[3].name", "bad instance range", "PEInputBuffer[16..1]")
    assert not (tmp_path / "et" / "ART.yaml").exists()


# 5, 6. a mapping's permutation that is no text, and factors too large for any bound
@pytest.mark.parametrize("field, value, needle", [
    ("permutation", 5, "got 5"),
    ("permutation", {"a": 1}, "got {"),
    ("factors", f"C1 M1 R1 S1 N1 P1 Q{BIG}", "too large"),
    ("target", ["PEWeightRegs"], "got ['PEWeightRegs']"),
])
def test_bad_mapping_values(capsys, tmp_path, field, value, needle):
    def change(d):
        entry = next(e for e in d["mapping"] if e["type"] == "temporal")
        entry[field] = value
    m = mutated(MAPPING, tmp_path / "m.yaml", change)
    index = next(i for i, e in enumerate(load_yaml(MAPPING)["mapping"]) if e["type"] == "temporal")
    refused(capsys, ["evaluate", ARCH_DIR / "processed.yaml", LAYER, m], m, f"mapping[{index}].{field}", needle)


def test_keep_list_that_is_no_list(capsys, tmp_path):
    m = mutated(MAPPING, tmp_path / "m.yaml", lambda d: d["mapping"][0].update(keep=5))
    refused(capsys, ["evaluate", ARCH_DIR / "processed.yaml", LAYER, m], "mapping[0].keep", "got 5")


# 7. a subtree or local list that is no list
@pytest.mark.parametrize("where, key", [("subtree", "architecture.subtree"),
                                        ("local", "architecture.subtree[0].local")])
def test_subtree_that_is_no_list(capsys, tmp_path, where, key):
    def change(d):
        if where == "subtree":
            d["architecture"]["subtree"] = 5
        else:
            d["architecture"]["subtree"][0]["local"] = 5
    arch = arch_copy(tmp_path, change)
    for args in (["evaluate", arch, LAYER, MAPPING], ["energy", "tables", arch, "--out", tmp_path / "et"]):
        refused(capsys, args, arch, key, "got 5", "a list")


# 8. sizes that are infinite or too large for the 64-bit counts
@pytest.mark.parametrize("attr, value, needle", [
    ("depth", float("inf"), "finite"),
    ("depth", float("-inf"), "positive"),
    ("width", float("inf"), "finite"),
    ("depth", 1e40, "too large"),
    ("depth", 2 ** 45, "too large"),
    ("cluster_size", 0, "positive"),
])
def test_infinite_or_huge_sizes(capsys, tmp_path, attr, value, needle):
    arch = arch_copy(tmp_path, lambda d: glb(d).update({attr: value}))
    refused(capsys, ["evaluate", arch, LAYER, MAPPING], arch, f"GlobalBuffer.attributes.{attr}", needle)


def test_capacity_too_large_for_counts(capsys, tmp_path):
    arch = arch_copy(tmp_path, lambda d: glb(d).update(depth=2 ** 40, width=2 ** 36))
    refused(capsys, ["evaluate", arch, LAYER, MAPPING], "GlobalBuffer.attributes.depth", "too large")


def test_huge_size_refused_by_the_pricing_too(capsys, tmp_path):
    arch = arch_copy(tmp_path, lambda d: glb(d).update(width=1e40))
    refused(capsys, ["energy", "tables", arch, "--out", tmp_path / "et"], arch, "attributes.width", "too large")


@pytest.mark.parametrize("text", ["1e400", ".inf", "1e40"])
def test_v04_depth_not_finite_or_too_large(capsys, tmp_path, text):
    d = tmp_path / "v4"
    d.mkdir()
    shutil.copy(ARCH_DIR / "ERT.yaml", d / "ERT.yaml")
    src = (ARCH_DIR / "arch.yaml").read_text()
    assert src.count("depth: 8192") == 1
    arch = d / "arch.yaml"
    arch.write_text(src.replace("depth: 8192", f"depth: {text}"))
    for args in (["evaluate", arch, LAYER, MAPPING], ["energy", "tables", arch, "--out", tmp_path / "et"]):
        refused(capsys, args, arch, "PEInputBuffer.attributes.depth")


# 9. bandwidths: Timeloop divides by them (0: infinite cycles, < 0: negative ones, NaN: unlimited)
@pytest.mark.parametrize("attr, value", [("read_bandwidth", 0), ("read_bandwidth", -1),
                                         ("read_bandwidth", float("nan")), ("write_bandwidth", 0),
                                         ("write_bandwidth", -2.5), ("bandwidth", 0)])
def test_bandwidth_not_positive(capsys, tmp_path, attr, value):
    arch = arch_copy(tmp_path, lambda d: glb(d).update({attr: value}))
    refused(capsys, ["evaluate", arch, LAYER, MAPPING], arch, f"GlobalBuffer.attributes.{attr}",
            "positive number of words per cycle")


def test_infinite_bandwidth_is_unlimited(capsys, tmp_path):
    """.inf means no limit, as leaving the bandwidth out: the same result."""
    plain = arch_copy(tmp_path, lambda d: None)
    rc, base, err = run(capsys, "evaluate", plain, LAYER, MAPPING, "--json")
    assert rc == 0, err
    inf = arch_copy(tmp_path / "inf", lambda d: glb(d).update(read_bandwidth=float("inf"),
                                                                write_bandwidth=float("inf")))
    rc, out, err = run(capsys, "evaluate", inf, LAYER, MAPPING, "--json")
    assert rc == 0, err
    import json
    a, b = json.loads(base), json.loads(out)
    assert (a["cycles"], a["energy_pJ"]) == (b["cycles"], b["energy_pJ"])


# 24. multiple buffering 0 (Timeloop divides the capacity by it) like -2
@pytest.mark.parametrize("value, needle", [(0, "positive"), (-2, "positive"), (1e-300, "too large")])
def test_multiple_buffering(capsys, tmp_path, value, needle):
    arch = arch_copy(tmp_path, lambda d: glb(d).update(multiple_buffering=value))
    refused(capsys, ["evaluate", arch, LAYER, MAPPING], arch, "GlobalBuffer.attributes.multiple_buffering", needle)


# 12. constraints files: targets that are no list, factors beyond any bound
@pytest.mark.parametrize("change, key, needle", [
    (lambda d: d["architecture_constraints"].update(targets=5), "architecture_constraints.targets", "got 5"),
    (lambda d: d["architecture_constraints"]["targets"][0].update(factors=f"M<={BIG}"), "factors", "too large"),
    (lambda d: d["architecture_constraints"]["targets"][0].update(factors=f"M={BIG}"), "factors", "too large"),
    (lambda d: d["architecture_constraints"]["targets"][0].update(target={"a": 1}),
     "key 'architecture_constraints.targets[0].target'", "got"),
    # a file with both blocks: the key says which block's entry (timeloop-mapper combines them)
    (lambda d: d.update(mapspace_constraints={"targets": [{"target": "NoSuchLevel", "type": "temporal"}]}),
     "key 'mapspace_constraints.targets[0].target'", "unknown level 'NoSuchLevel'"),
])
def test_bad_constraints(capsys, tmp_path, change, key, needle):
    cons = mutated(CONSTRAINTS, tmp_path / "c.yaml", change)
    refused(capsys, ["map", ARCH_DIR / "processed.yaml", LAYER, "--constraints", cons, "--budget", "10",
                     "--no-cache", "--out", tmp_path / "o"], cons, key, needle)


# 13, 18. v0.4 nodes: constraints that are no mappings, an unknown key under `spatial`
@pytest.mark.parametrize("old, new, key, needle", [
    ("dataspace: {keep: [Inputs, Outputs], bypass: [Weights]}", "dataspace: 5", "constraints.dataspace", "got 5"),
    ("spatial: {factors: R=1 S=1 P=1 Q=1 N=1, permutation: [M, C, R, S, P, Q, N]}", "spatial: [1]",
     "constraints.spatial", "got [1]"),
    ("spatial: {meshX: 16}", "spatial: {meshZ: 16}", "spatial.meshZ", "meshX, meshY"),
    ("spatial: {meshX: 16}", "spatial: {meshX: 16, meshy: 2}", "spatial.meshy", "meshX, meshY"),
])
def test_v04_node_values(capsys, tmp_path, old, new, key, needle):
    src = (ARCH_DIR / "arch.yaml").read_text()
    assert src.count(old) == 1
    arch = tmp_path / "arch.yaml"
    arch.write_text(src.replace(old, new))
    shutil.copy(ARCH_DIR / "ERT.yaml", tmp_path / "ERT.yaml")
    refused(capsys, ["map", arch, CORPUS / "layers" / "resnet50_res3a_2b.yaml", "--budget", "10", "--no-cache",
                     "--out", tmp_path / "o"], arch, key, needle)


def test_v04_constraints_that_are_no_mapping(capsys, tmp_path):
    src = (ARCH_DIR / "arch.yaml").read_text()
    old = "      dataspace: {keep: [Inputs, Outputs], bypass: [Weights]}"
    assert src.count(old) == 1
    arch = tmp_path / "arch.yaml"
    arch.write_text(src.replace(old, "      5"))
    refused(capsys, ["evaluate", arch, LAYER, MAPPING], arch, ".constraints'", "got 5")


def test_instance_count_too_large_for_counts(capsys, tmp_path):
    def change(d):
        dram = d["architecture"]["subtree"][0]["local"][0]
        assert dram["name"] == "DRAM[1..1]"
        dram["name"] = f"DRAM[1..{10 ** 21}]"
        del dram["attributes"]["meshX"], dram["attributes"]["meshY"]
    arch = arch_copy(tmp_path, change)
    refused(capsys, ["evaluate", arch, LAYER, MAPPING], arch, "DRAM.name", "too many")


def _pe_input_buffer(d):
    comp = d["architecture"]["subtree"][0]["local"][3]
    assert comp["name"] == "PEInputBuffer[1..16]"
    return comp["attributes"]


@pytest.mark.parametrize("change, says", [
    (lambda a: (a.update(meshX=5), a.pop("meshY")), "PEInputBuffer: its 16 instances are not divisible by meshX 5"),
    (lambda a: a.update(meshX=4, meshY=2), "PEInputBuffer: meshX 4 x meshY 2 is not its 16 instances")])
def test_a_mesh_that_does_not_fit_the_instances_says_what_was_written(capsys, tmp_path, change, says):
    """Timeloop's ValidateTopology: with meshY not written, the instances must divide by meshX (a
    message naming a meshY the user never wrote would mislead)."""
    arch = arch_copy(tmp_path, lambda d: change(_pe_input_buffer(d)))
    refused(capsys, ["evaluate", arch, LAYER, MAPPING], says, "meshX")


def test_unknown_keys_of_a_v03_tree_are_warned_and_named_when_nothing_is_left(tmp_path):
    """Timeloop ignores a v0.3 key it does not read; a typo (`atributes`) then silently drops every
    attribute of the component (simba_like's DRAM: 8x its energy). Warned, with the key it resembles;
    where nothing is left (`locals`), the error names the key."""
    from coexplore.errors import CoexploreError
    from coexplore.spec.architecture import load_architecture
    text = (CORPUS / "arches" / "simba_like" / "processed.yaml").read_text()
    good = load_architecture(CORPUS / "arches" / "simba_like" / "processed.yaml")
    assert not [x for x in good.warnings if "unknown key" in x]
    typo = tmp_path / "typo.yaml"
    typo.write_text(text.replace("      attributes:", "      atributes:", 1))
    arch = load_architecture(typo)
    assert any("local[0]: unknown key 'atributes'" in x and "did you mean 'attributes'" in x for x in arch.warnings)
    assert arch.levels[0].attributes != good.levels[0].attributes       # what Timeloop then reads
    odd = tmp_path / "odd.yaml"
    odd.write_text(text.replace("      attributes:", "      foo: bar\n      attributes:", 1))
    assert any("unknown key 'foo'" in x and "it reads name, class" in x for x in load_architecture(odd).warnings)
    gone = tmp_path / "gone.yaml"
    gone.write_text(text.replace("local:", "locals:"))
    with pytest.raises(CoexploreError, match="unknown key 'locals'.*did you mean 'local'"):
        load_architecture(gone)
    # (the study's `lokal:` in a subtree: the DRAM above stays, so the error is "not a compute unit")
    lost = tmp_path / "lost.yaml"
    lost.write_text("architecture:\n  version: 0.3\n  subtree:\n  - name: system\n    local:\n"
                    "    - {name: DRAM, class: DRAM, attributes: {width: 64, word-bits: 8}}\n    subtree:\n"
                    "    - name: PE\n      lokal:\n      - {name: MAC, class: intmac, attributes: {datawidth: 8}}\n")
    with pytest.raises(CoexploreError, match="not a compute unit.*unknown key 'lokal'.*did you mean 'local'"):
        load_architecture(lost)


def test_a_width_error_under_the_default_datawidth_names_the_misspelt_key(tmp_path):
    """`wordbits: 8` is not read: the width check then fails against Timeloop's default 16 bits, and
    the error says so (the typo warning is never reached)."""
    from coexplore.errors import CoexploreError
    from coexplore.spec.architecture import load_architecture
    text = (CORPUS / "arches" / "simba_like" / "processed.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("        width: 64\n        datawidth: 8", "        width: 24\n        wordbits: 8", 1))
    with pytest.raises(CoexploreError, match="width 24 is not a multiple of datawidth = 16; the datawidth is "
                       "Timeloop's default 16: no datawidth or word-bits was read \\('wordbits' is not one"):
        load_architecture(bad)


def test_a_dimension_listed_twice_in_a_problem_shape_is_refused(tmp_path, capsys):
    """(It gave a false 'product of the factors' error for a correct mapping.)"""
    text = (CORPUS / "layers" / "alexnet_conv3.yaml").read_text()
    assert "dimensions: [C, M, R, S, N, P, Q]" in text
    bad = tmp_path / "p.yaml"
    bad.write_text(text.replace("dimensions: [C, M, R, S, N, P, Q]", "dimensions: [C, M, R, S, N, P, Q, Q]"))
    case = next(p for p in sorted((CORPUS / "public" / "simba_like" / "alexnet_conv3").iterdir()))
    assert main(["evaluate", str(CORPUS / "arches" / "simba_like" / "processed.yaml"), str(bad),
                 str(case / "mapping.yaml")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: key 'problem.shape.dimensions': dimension Q listed twice" in err


def test_an_empty_instance_and_a_workload_given_as_mapping_are_said_as_such(tmp_path, capsys):
    text = (CORPUS / "layers" / "alexnet_conv3.yaml").read_text()
    bad = tmp_path / "p.yaml"
    bad.write_text(text.split("instance:")[0] + "instance: null\n")
    case = next(p for p in sorted((CORPUS / "public" / "simba_like" / "alexnet_conv3").iterdir()))
    arch = str(CORPUS / "arches" / "simba_like" / "processed.yaml")
    assert main(["evaluate", arch, str(bad), str(case / "mapping.yaml")]) == 2
    assert "key 'problem.instance': got None" in capsys.readouterr().err
    assert main(["evaluate", "simba", "resnet50", "--layer", "conv1"]) == 2     # the mapping left out
    assert "no MAPPING given: resnet50 is a workload" in capsys.readouterr().err


def test_a_fractional_factor_is_named_whole():
    from coexplore.errors import CoexploreError
    from coexplore.spec.mapping import _parse_factors
    with pytest.raises(CoexploreError) as err:
        _parse_factors("C4 Q1.5", file="m.yaml", key="mapping[0].factors", dims=["C", "Q"])
    assert "cannot read factor '.5' of 'C4 Q1.5'" in err.value.message and "whole-number" in err.value.expected


def test_a_misspelt_port_count_is_pointed_to_timeloops_name(tmp_path):
    """`ports:` is one letter from Accelergy's `nports` and three from Timeloop's `num_ports`;
    the hint names the one Timeloop reads."""
    from coexplore.spec.architecture import load_architecture
    text = (CORPUS / "arches" / "simba_like" / "processed.yaml").read_text()
    bad = tmp_path / "ports.yaml"
    bad.write_text(text.replace("        depth: 2048", "        depth: 2048\n        ports: 2", 1))
    warned = [x for x in load_architecture(bad).warnings if "'ports'" in x]
    assert warned and "did you mean 'num_ports'" in warned[0], warned


def _tiny_conv_with(tmp_path, old: str, new: str):
    """tests' tiny_conv layer with one text replaced, as p.yaml in tmp_path."""
    text = (CORPUS / "layers" / "tiny_conv.yaml").read_text()
    assert old in text
    (tmp_path / "p.yaml").write_text(text.replace(old, new, 1))
    return tmp_path / "p.yaml"


@pytest.mark.parametrize("old,new,key", [
    ("- name: Weights", "- name: [Weights, W2]", "problem.shape.data_spaces[0].name"),
    ("{name: Hstride, default: 1}", "{name: [Hstride], default: 1}", "problem.shape.coefficients[1].name"),
    ("- name: Inputs", "- name: {Inputs: 1}", "problem.shape.data_spaces[1].name")])
def test_a_name_that_is_a_list_or_mapping_is_refused(tmp_path, old, new, key):
    """Not read as the text "['Weights', 'W2']" (a mapping could never name it)."""
    from coexplore.errors import CoexploreError
    from coexplore.spec.problem import load_problem
    _tiny_conv_with(tmp_path, old, new)
    with pytest.raises(CoexploreError, match="expected a name") as err:
        load_problem(tmp_path / "p.yaml")
    assert err.value.key == key and err.value.file.endswith("p.yaml")


@pytest.mark.parametrize("old,new,says", [
    ("    name: CNN_Layer\n", "    nme: CNN_Layer\n", "problem.shape.nme: not a key Timeloop reads")])
def test_a_problem_key_timeloop_does_not_read_is_warned(tmp_path, old, new, says):
    """A misspelt key Timeloop passes over without a word is said here."""
    from coexplore.errors import CoexploreWarning
    from coexplore.model.inputs import load_context
    _tiny_conv_with(tmp_path, old, new)
    with pytest.warns(CoexploreWarning, match=re.escape(says)):
        load_context(CORPUS / "arches" / "eyeriss_like" / "processed.yaml", tmp_path / "p.yaml",
                     CORPUS / "arches" / "eyeriss_like" / "ERT.yaml")


def test_a_whole_spec_with_its_mapping_is_evaluated_from_one_file(tmp_path, capsys):
    """timeloopfe's single file (architecture, problem and mapping): `evaluate spec.yaml` reads all
    three from it (it needed the file named twice), with the numbers of the three files apart."""
    case = next(p for p in sorted((CORPUS / "public" / "simba_like" / "alexnet_conv3").iterdir())
                if json.loads((p / "expected.json").read_text())["valid"])
    arch = CORPUS / "arches" / "simba_like" / "processed.yaml"
    spec = {**load_yaml(arch), **load_yaml(CORPUS / "layers" / "alexnet_conv3.yaml"),
            "mapping": load_yaml(case / "mapping.yaml")["mapping"]}
    (tmp_path / "spec.yaml").write_text(dump_yaml(spec))
    shutil.copy(CORPUS / "arches" / "simba_like" / "ERT.yaml", tmp_path / "ERT.yaml")
    assert main(["evaluate", str(tmp_path / "spec.yaml"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    want = json.loads((case / "expected.json").read_text())
    assert got["cycles"] == want["cycles"] and got["energy_pJ"] == pytest.approx(want["energy_pJ"], rel=1e-4)
    del spec["mapping"]
    (tmp_path / "spec.yaml").write_text(dump_yaml(spec))
    assert main(["evaluate", str(tmp_path / "spec.yaml")]) == 2
    assert "key 'mapping': no MAPPING given, and ARCH holds no mapping" in capsys.readouterr().err


def test_n_ports_is_read_as_timeloop_reads_it(tmp_path):
    """User study: `n_ports: 3` was warned of as an attribute Timeloop does not read, and run;
    Timeloop's BufferLevel::ParseSpecs reads `num-ports`, else `n_ports`, and asserts 1 or 2."""
    from coexplore.errors import CoexploreError
    from coexplore.spec.architecture import load_architecture
    text = (CORPUS / "arches" / "simba_like" / "processed.yaml").read_text()
    for value, refused in (("3", True), ("1", False)):
        f = tmp_path / f"p{value}.yaml"
        f.write_text(text.replace("        depth: 2048", f"        depth: 2048\n        n_ports: {value}", 1))
        if refused:
            with pytest.raises(CoexploreError) as err:
                load_architecture(f)
            assert err.value.key.endswith(".n_ports") and "1 or 2" in err.value.expected
        else:
            assert not [w for w in load_architecture(f).warnings if "n_ports" in w]


@pytest.mark.parametrize("extra", ["", ", meshX: 3"])
def test_an_instances_attribute_is_named_before_the_mesh_it_breaks(tmp_path, extra):
    """User study: `instances: 3, meshX: 3` on a v0.3 buffer without a range was refused as "its 1
    instances are not divisible by meshX 3", although the user wrote 3: the attribute is the cause."""
    from coexplore.errors import CoexploreError
    from coexplore.spec.architecture import load_architecture
    f = tmp_path / "a.yaml"
    f.write_text(f"""architecture:
  version: 0.3
  subtree:
  - name: sys
    local:
    - {{name: DRAM, class: DRAM, attributes: {{width: 8, datawidth: 8}}}}
    - {{name: Buffer, class: SRAM, attributes: {{depth: 256, width: 8, datawidth: 8, instances: 3{extra}}}}}
    - {{name: MAC, class: intmac, attributes: {{datawidth: 8}}}}
""")
    with pytest.raises(CoexploreError) as err:
        load_architecture(f)
    assert err.value.key == "Buffer.attributes.instances" and "Buffer[0..2]" in err.value.expected
    f.write_text(f.read_text().replace(f"instances: 3{extra}", "instances: 1"))
    assert load_architecture(f).levels[1].instances == 1
