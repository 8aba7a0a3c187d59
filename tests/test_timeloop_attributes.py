"""Inputs Timeloop reads in ways the corpus does not exercise: each is modelled as timeloop-model
does, or refused (never silently ignored)."""

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from coexplore.errors import CoexploreError, CoexploreWarning
from coexplore.model.inputs import load_context
from coexplore.spec.architecture import parse_architecture
from coexplore.spec.mapping import parse_mapping, to_arrays
from coexplore.spec.yamlio import dump_yaml, load_yaml, loads_yaml

from conftest import CORPUS

ARCH = CORPUS / "arches" / "simba_like"
CASE = CORPUS / "public" / "simba_like" / "alexnet_conv1" / "019"          # a valid case
LAYER = CORPUS / "layers" / "alexnet_conv1.yaml"


def _arch_with(tmp_path, level: str, **attrs):
    """simba_like's processed architecture with attributes added to one component."""
    data = load_yaml(ARCH / "processed.yaml")

    def walk(node):
        for comp in node.get("local", []):
            if comp["name"].split("[")[0] == level:
                comp["attributes"].update(attrs)
                return True
        return any(walk(sub) for sub in node.get("subtree", []))
    assert walk(data["architecture"])
    out = tmp_path / "arch.yaml"
    out.write_text(dump_yaml(data))
    return out


def _context(arch_file):
    return load_context(arch_file, LAYER, ARCH / "ERT.yaml")


def test_own_vector_access_energy_prices_the_level_instead_of_its_ert_table(tmp_path):
    """UpdateOpEnergyViaERT leaves a level's own vector_access_energy: every read, fill and update
    vector costs it, no leakage; the other levels keep the ERT's energies."""
    ref = json.loads((CASE / "expected.json").read_text())
    ctx = _context(_arch_with(tmp_path, "GlobalBuffer", vector_access_energy=1000.0))
    rec = ctx.record(ctx.evaluate_mappings(CASE / "mapping.yaml"))
    block = next(lv for lv in ctx.arch.levels if lv.name == "GlobalBuffer").block_size
    assert block == 256 // 8
    want = sum(math.ceil(d[op] / block) * 1000.0 for d in ref["levels"]["GlobalBuffer"]["dataspaces"].values()
               for op in ("reads", "fills", "updates"))
    assert rec["levels"]["GlobalBuffer"]["energy_pJ"] == pytest.approx(want, rel=1e-12)
    assert rec["levels"]["GlobalBuffer"]["leakage_pJ"] == 0
    for name, lv in ref["levels"].items():
        if name != "GlobalBuffer":
            assert rec["levels"][name]["energy_pJ"] == pytest.approx(lv["energy_pJ"], rel=1e-9), name
    assert rec["cycles"] == ref["cycles"]


def _mapping_arrays(ctx, entries):
    return to_arrays([parse_mapping(entries, ctx.arch, ctx.problem)], ctx.arch, ctx.problem)


def test_datatype_directives_of_one_level_add_up():
    """ParseUserDatatypeBypassSettings edits one keep/bypass string per level: a second directive
    changes only the dataspaces it names."""
    ctx = _context(ARCH / "processed.yaml")
    entries = load_yaml(CASE / "mapping.yaml")["mapping"]
    one = _mapping_arrays(ctx, entries)
    gb = next(i for i, e in enumerate(entries) if e["target"] == "GlobalBuffer" and e["type"] == "datatype")
    assert entries[gb]["keep"] == ["Inputs", "Outputs"] and entries[gb]["bypass"] == ["Weights"]
    split = [*entries[:gb], {"target": "GlobalBuffer", "type": "datatype", "keep": ["Inputs"], "bypass": ["Weights"]},
             {"target": "GlobalBuffer", "type": "datatype", "keep": ["Outputs"]}, *entries[gb + 1:]]
    assert np.array_equal(_mapping_arrays(ctx, split).keep, one.keep)
    # a later directive's bypass undoes an earlier keep of the same dataspace, and no more
    undo = [*entries, {"target": "GlobalBuffer", "type": "datatype", "bypass": ["Outputs"]}]
    got, want = _mapping_arrays(ctx, undo).keep, one.keep.copy()
    li = len(ctx.arch.levels) - 1 - ctx.arch.level_names().index("GlobalBuffer")
    want[0, li, [ds.name for ds in ctx.problem.dataspaces].index("Outputs")] = False
    assert np.array_equal(got, want) and not np.array_equal(got, one.keep)


def test_a_later_spatial_directive_without_split_puts_every_dimension_on_x():
    """Timeloop sets a level's split from each spatial directive, all-X when it gives none."""
    ctx = _context(ARCH / "processed.yaml")
    entries = load_yaml(CASE.with_name("009") / "mapping.yaml")["mapping"]     # X and Y used at one level
    i = next(i for i, e in enumerate(entries) if e["type"] == "spatial" and e.get("split") == 1
             and sum(int(t[1:]) > 1 for t in e["factors"].split()) >= 2)
    plain = {k: v for k, v in entries[i].items() if k != "split"}
    again = _mapping_arrays(ctx, [*entries, plain])
    alone = _mapping_arrays(ctx, [*entries[:i], plain, *entries[i + 1:]])
    first = _mapping_arrays(ctx, entries)
    assert np.array_equal(again.spatial_x, alone.spatial_x) and np.array_equal(again.spatial_y, alone.spatial_y)
    assert not np.array_equal(again.spatial_y, first.spatial_y)
    li = len(ctx.arch.levels) - 1 - ctx.arch.level_names().index(entries[i]["target"])
    assert np.all(again.spatial_y[0, li] == 1) and not np.all(first.spatial_y[0, li] == 1)   # all on X there


def _one_buffer(attrs: str, top: str = "") -> str:
    return ("architecture:\n  version: 0.3\n  subtree:\n  - name: top\n"
            + (f"    attributes: {{{top}}}\n" if top else "") + "    local:\n"
            "    - {name: DRAM, class: DRAM, attributes: {width: 64, datawidth: 8}}\n"
            f"    - {{name: buf, class: SRAM, attributes: {{{attrs}}}}}\n"
            "    - {name: mac, class: intmac, attributes: {datawidth: 8}}\n")


@pytest.mark.parametrize("attrs, key", [
    ("depth: 16, width: 64, datawidth: 8, addr_gen_energy: 10", "addr_gen_energy"),
    ("depth: 16, width: 64, datawidth: 8, power_gated_at: DRAM", "power_gated_at"),
    ("depth: 16, width: 64, datawidth: 8, has_power_gating: true", "has_power_gating"),
    ("depth: 16, width: 64, datawidth: 8, network_type: 'M:N'", "network_type"),
    ("depth: 16, width: 64, datawidth: 8, router_energy: 5", "router_energy"),
    ("depth: 16, width: 64, datawidth: 8, wire_energy: 0.5", "wire_energy"),
])
def test_attributes_that_change_timeloops_numbers_are_refused(attrs, key):
    with pytest.raises(CoexploreError, match=key):
        parse_architecture(loads_yaml(_one_buffer(attrs)), "t.yaml")


@pytest.mark.parametrize("attrs", ["addr_gen_energy: 0", "power_gated_at: null", "power_gated_at: buf",
                                   "router_energy: 0", "has_power_gating: false"])
def test_those_attributes_at_values_that_change_nothing_are_read(attrs):
    arch = parse_architecture(loads_yaml(_one_buffer("depth: 16, width: 64, datawidth: 8, " + attrs)), "t.yaml")
    assert arch.levels[1].size == 16 * 8


def test_a_v03_subtree_attribute_is_not_a_component_attribute_for_timeloop():
    """Topology::ParseTreeSpecs hands BufferLevel::ParseSpecs the component alone: a datawidth on
    the subtree does not reach it (Timeloop's default, 16 bits, stands), nor a meshX."""
    own = parse_architecture(loads_yaml(_one_buffer("depth: 16, width: 64, datawidth: 8")), "t.yaml")
    up = parse_architecture(loads_yaml(_one_buffer("depth: 16, width: 64", top="datawidth: 8")), "t.yaml")
    assert (own.levels[1].word_bits, own.levels[1].block_size) == (8, 8)
    assert (up.levels[1].word_bits, up.levels[1].block_size) == (16, 4)
    assert up.levels[1].attributes.get("datawidth") == 8        # (Accelergy's view keeps the subtree's)
    # nor do Timeloop's built-in energies see a subtree's vector_access_energy, technology or datawidth
    from coexplore.energy.timeloop_pat import compute_energy, vector_access_energy
    given = parse_architecture(loads_yaml(_one_buffer("depth: 16, width: 64", top="vector_access_energy: 5, "
                                                      "technology: DRAM, datawidth: 8")), "t.yaml")
    assert vector_access_energy(given.levels[1]) == vector_access_energy(up.levels[1]) != 5
    bare = _one_buffer("depth: 16, width: 64", top="datawidth: 8").replace(
        "{name: mac, class: intmac, attributes: {datawidth: 8}}", "{name: mac, class: intmac}")
    assert compute_energy(parse_architecture(loads_yaml(bare), "t.yaml").compute) == 1.0   # 16 bits: (16/16)^2
    assert compute_energy(own.compute) == 0.25                                             # its own 8: (8/16)^2


def _spec_with_env(tmp_path, env: dict):
    data = load_yaml(ARCH / "processed.yaml")
    data["globals"] = {"environment_variables": env}
    return parse_architecture(data, "spec.yaml")


@pytest.mark.parametrize("env", [{"TIMELOOP_ENABLE_FIRST_READ_ELISION": 0},
                                 {"TIMELOOP_ENABLE_FIRST_READ_ELISION": "0"},
                                 {"TIMELOOP_DISABLE_LINK_TRANSFERS": "1"},
                                 {"TIMELOOP_DISABLE_LINK_TRANSFERS": 0},          # (versions differ: any value)
                                 {"TIMELOOP_ENABLE_UPDATED_RMW": 1}, {"TIMELOOP_ENABLE_TOROIDAL_LINKS": "yes"}])
def test_environment_variables_that_change_the_counts_are_refused(tmp_path, env):
    with pytest.raises(CoexploreError, match=next(iter(env))):
        _spec_with_env(tmp_path, env)


def test_environment_variables_at_defaults_or_for_printing_are_read(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _spec_with_env(tmp_path, {"TIMELOOP_HIDE_INCONSEQUENTIAL_STATS": 1, "TIMELOOP_ENABLE_FIRST_READ_ELISION": 1})
        _spec_with_env(tmp_path, {"TIMELOOP_ENABLE_FIRST_READ_ELISION": True})     # not "0": elision stays on
        _spec_with_env(tmp_path, {"TIMELOOP_ENABLE_UPDATED_RMW": 0, "TIMELOOP_ENABLE_TOROIDAL_LINKS": "0"})  # off
    with pytest.warns(CoexploreWarning, match="TIMELOOP_SOMETHING_ELSE"):
        _spec_with_env(tmp_path, {"TIMELOOP_SOMETHING_ELSE": 1})


EX04 = Path(__file__).parent / "data" / "exercises_v4" / "v4_ex04_conv1d_oc_ic_3levelspatial_cp"


def test_a_v04_nodes_dataspace_constraints_join_the_mapping_as_timeloopfe_hands_it_over(tmp_path):
    """timeloopfe combines each node's constraints with the mapping's directives before
    timeloop-model runs: a GlobalBuffer constraint `bypass: [Weights]` and a mapping silent about
    it evaluate as the mapping with that bypass written out."""
    inputs = EX04 / "inputs"
    text = (inputs / "3levelspatial.arch.yaml").read_text()
    marked = text.replace("    name: GlobalBuffer\n    class: SRAM\n",
                          "    name: GlobalBuffer\n    class: SRAM\n    constraints: {dataspace: {bypass: [Weights]}}\n")
    assert marked != text
    (tmp_path / "arch.yaml").write_text(marked)
    mapping = load_yaml(inputs / "conv1d+oc+ic-3levelspatial-cp-ws.map.yaml")["mapping"]
    written = [*mapping, {"target": "GlobalBuffer", "type": "datatype", "bypass": ["Weights"]}]
    ert = EX04 / "timeloop-model.ERT.yaml"
    plain = load_context(inputs / "3levelspatial.arch.yaml", inputs / "conv1d+oc+ic.prob.yaml", ert)
    joined = load_context(tmp_path / "arch.yaml", inputs / "conv1d+oc+ic.prob.yaml", ert)
    as_written = plain.record(plain.evaluate(parse_mapping(written, plain.arch, plain.problem)))
    as_joined = joined.record(joined.evaluate(parse_mapping(mapping, joined.arch, joined.problem)))
    unchanged = plain.record(plain.evaluate(parse_mapping(mapping, plain.arch, plain.problem)))
    assert as_joined["energy_pJ"] == as_written["energy_pJ"] != unchanged["energy_pJ"]
    assert "Weights" not in as_joined["levels"]["GlobalBuffer"].get("dataspaces", {})


def _v4(nodes: str, variables: str = "") -> str:
    return ((f"variables: {{{variables}}}\n" if variables else "") + "architecture:\n  version: 0.4\n  nodes:\n"
            "  - !Container {name: top, attributes: {technology: 45nm, datawidth: 8}}\n"
            "  - !Component {name: DRAM, class: DRAM, attributes: {width: 64, datawidth: 8}}\n" + nodes +
            "  - !Component {name: mac, class: intmac, attributes: {}}\n")


def test_v04_top_level_variables_do_not_become_timeloops_attributes():
    """timeloopfe puts the spec's variables on the top level only; Timeloop reads each component
    alone, so a variable named `depth` does not bound DRAM (Accelergy's view still has it)."""
    arch = parse_architecture(loads_yaml(_v4("  - !Component {name: Buf, class: SRAM, attributes: "
                                             "{depth: depth, width: 64, datawidth: 8}}\n", "depth: 64")), "t.yaml")
    dram, buf = arch.levels[0], arch.levels[1]
    assert math.isinf(dram.size) and buf.size == 64 * 8
    assert dram.attributes.get("depth") == 64                    # (Accelergy's view)


def test_v04_storage_defaults_come_before_a_containers_attributes():
    """timeloopfe writes its storage defaults (multiple_buffering 1, ...) into a component before it
    copies a container's attributes in where absent: a container's multiple_buffering 2 does not
    halve the buffer; the component's own does."""
    inner = ("  - !Container {name: box, attributes: {multiple_buffering: 2}}\n"
             "  - !Component {name: Buf, class: SRAM, attributes: {depth: 64, width: 64, datawidth: 8%s}}\n")
    assert parse_architecture(loads_yaml(_v4(inner % "")), "t.yaml").levels[1].effective_size == 64 * 8
    own = parse_architecture(loads_yaml(_v4(inner % ", multiple_buffering: 2")), "t.yaml")
    assert own.levels[1].effective_size == 64 * 8 // 2
    # so does Accelergy's view: a container's n_banks comes after timeloopfe's default of 2
    banks = inner.replace("{multiple_buffering: 2}", "{n_banks: 8}")
    assert parse_architecture(loads_yaml(_v4(banks % "")), "t.yaml").levels[1].attributes["n_banks"] == 2


def test_comma_separated_permutations_read_as_timeloopfe_splits_them():
    from coexplore.spec.constraints import _perm
    assert _perm("P,R,C,K") == _perm("P, R, C, K") == ["P", "R", "C", "K"] == _perm("PRCK")
    ctx = _context(ARCH / "processed.yaml")
    entries = load_yaml(CASE / "mapping.yaml")["mapping"]
    i = next(i for i, e in enumerate(entries) if e["type"] == "temporal" and e["target"] == "DRAM")
    commas = dict(entries[i], permutation=", ".join(entries[i]["permutation"]))
    assert np.array_equal(_mapping_arrays(ctx, [*entries[:i], commas, *entries[i + 1:]]).perm,
                          _mapping_arrays(ctx, entries).perm)


@pytest.mark.parametrize("node, key", [
    ("  - !Component {name: Buf, class: SRAM, attributes: {depth: 64, width: 64}}\n", "datawidth"),
    ("  - !Component {name: 'Buf[0..3]', class: SRAM, attributes: {depth: 64, width: 64, datawidth: 8}}\n", "name"),
])
def test_v04_inputs_timeloopfe_refuses_are_refused(node, key):
    """A storage component with no datawidth anywhere (timeloopfe: missing required key) and a
    v0.4 name carrying an instance range (timeloopfe appends its own) are refused."""
    text = _v4(node)                         # (for datawidth: the container around it has one: not enough)
    with pytest.raises(CoexploreError, match=key):
        parse_architecture(loads_yaml(text), "t.yaml")


def test_custom_expression_functions_are_refused_not_ignored():
    data = loads_yaml(_v4("  - !Component {name: Buf, class: SRAM, attributes: {depth: 64, width: 64, datawidth: 8}}\n"))
    data["globals"] = {"expression_custom_functions": ["funcs.py"]}
    with pytest.raises(CoexploreError, match="expression_custom_functions"):
        parse_architecture(data, "t.yaml")
    data["globals"] = {"expression_custom_functions": []}
    parse_architecture(data, "t.yaml")


def test_a_mapping_that_contradicts_a_nodes_dataspace_constraint_is_refused(tmp_path):
    """timeloopfe refuses the re-specification (clear_respecification); it is not settled by a rule."""
    inputs = EX04 / "inputs"
    marked = (inputs / "3levelspatial.arch.yaml").read_text().replace(
        "    name: GlobalBuffer\n    class: SRAM\n",
        "    name: GlobalBuffer\n    class: SRAM\n    constraints: {dataspace: {bypass: [Weights]}}\n")
    (tmp_path / "arch.yaml").write_text(marked)
    ctx = load_context(tmp_path / "arch.yaml", inputs / "conv1d+oc+ic.prob.yaml", EX04 / "timeloop-model.ERT.yaml")
    mapping = load_yaml(inputs / "conv1d+oc+ic-3levelspatial-cp-ws.map.yaml")["mapping"]
    with pytest.raises(CoexploreError, match="keeps Weights at GlobalBuffer, which the architecture's constraints "
                                             "bypass") as e:
        parse_mapping([*mapping, {"target": "GlobalBuffer", "type": "datatype", "keep": ["Weights"]}],
                      ctx.arch, ctx.problem)
    assert e.value.key == f"mapping[{len(mapping)}].keep"           # the directive that keeps it
