"""Tests from a mutation review of the spec parsers (problem, architecture, mapping, constraints, ERT,
expressions, workload files, model inputs). Each pins a fact of Timeloop's (or timeloopfe's /
Accelergy's) documented reading of its inputs, checked by hand or against reference data bundled in
tests/data; none asserts on a number the model printed."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from coexplore.errors import CoexploreError
from coexplore.spec.architecture import parse_architecture
from coexplore.spec.mapping import parse_mapping, to_arrays
from coexplore.spec.problem import parse_problem
from coexplore.spec.yamlio import load_yaml

from conftest import CORPUS, DATA

LAYER = CORPUS / "layers" / "tiny_conv.yaml"          # C4 M8 R3 S3 N2 P6 Q6, stride 1


def _layer(**instance):
    data = copy.deepcopy(load_yaml(LAYER))
    data["problem"]["instance"].update(instance)
    return data


# ----------------------------------------------------------------------------- problems

def test_a_boolean_bound_is_refused_not_read_as_1():
    """A bound is a positive integer (Timeloop reads it as one; YAML's `true` is no number): `N: true`
    is refused naming the key, not taken as Python's True == 1."""
    with pytest.raises(CoexploreError) as err:
        parse_problem(_layer(N=True), "p.yaml")
    assert err.value.key == "problem.instance.N"


def test_a_data_space_listed_twice_is_refused():
    """Two data spaces of one name: mappings and results name data spaces, so the second would be
    unreachable (Timeloop's name -> id table keeps one); refused naming the second's name."""
    data = _layer()
    spaces = data["problem"]["shape"]["data_spaces"]
    spaces.append(copy.deepcopy(spaces[0]))
    with pytest.raises(CoexploreError) as err:
        parse_problem(data, "p.yaml")
    assert err.value.key == "problem.shape.data_spaces[3].name" and "Weights" in err.value.message


def test_spec_variables_are_computed_in_order_over_the_earlier_ones():
    """timeloopfe computes `variables:` top to bottom, each over those before it, then the problem
    instance over them: BATCH: 2, N_ALL: BATCH * 3 makes `N: N_ALL` a bound of 6."""
    data = _layer(N="N_ALL")
    data["variables"] = {"BATCH": 2, "N_ALL": "BATCH * 3"}
    prob = parse_problem(data, "spec.yaml")
    assert dict(zip(prob.dims, prob.bounds))["N"] == 6


# ----------------------------------------------------------------------------- v0.4 expressions

@pytest.mark.parametrize("text, value", [
    ("0 or 5", 5), ("2 and 3", 3), ("0 and 5", 0), ("4 or 0", 4),        # the deciding operand, as Python
    ("1 < 3 < 2", False), ("1 < 2 < 3", True),                            # a chain compares neighbours
    ("64 if 1 > 2 else 32", 32), ("64 if 2 > 1 else 32", 64),
    ("7 // 2", 3), ("7 % 3", 1), ("min(4, 9)", 4), ("max(4, 9)", 9),
    ("pi", math.pi),                                                      # a constant Python names
])
def test_expressions_compute_as_python_does(text, value):
    """timeloopfe and Accelergy evaluate v0.4 attribute and variable expressions as Python: `and`/`or`
    give the deciding operand, comparisons chain pairwise, `//` floors, `%` is the remainder."""
    from coexplore.spec.expressions import resolve
    got, why = resolve(text, {})
    assert why is None and got == value and type(got) is type(value)


def test_a_quoted_negative_number_keeps_its_sign():
    """A quoted number is text for Accelergy but Timeloop reads "-3" as the number -3."""
    from coexplore.spec.expressions import resolve
    from coexplore.spec.yamlio import Quoted
    assert resolve(Quoted("-3"), {}) == (-3, None)


def test_attributes_are_read_only_from_the_spec_namespace():
    """`spec.problem.instance.C` reads the spec; a variable holding a mapping has no attributes in
    Python (`X.a` on a dict fails), so such an expression is not computed."""
    from coexplore.spec.expressions import Namespace, resolve
    got, why = resolve("X.a", {"X": {"a": 1}})
    assert got == "X.a" and why is not None
    assert resolve("spec.a", {"spec": Namespace({"a": 7})}) == (7, None)


# ----------------------------------------------------------------------------- buffer specs

def _buffer(attrs: dict, cls: str = "SRAM"):
    """The one buffer of a flattened (v0.3) architecture with exactly these attributes."""
    doc = {"architecture": {"version": 0.3, "subtree": [{"name": "s", "local": [
        {"name": "Buf", "class": cls, "attributes": dict(attrs)},
        {"name": "mac", "class": "intmac", "attributes": {"datawidth": 8}}]}]}}
    return parse_architecture(doc, "a.yaml").levels[0]


def test_word_bits_is_read_before_word_width_and_datawidth():
    """BufferLevel::ParseSpecs looks up word-bits, then word_width, then datawidth: with word_bits 8
    and datawidth 16 a 64-bit width holds blocks of 8 words."""
    lv = _buffer({"depth": 16, "width": 64, "word_bits": 8, "datawidth": 16})
    assert (lv.word_bits, lv.block_size, lv.size) == (8, 8, 16 * 8)
    lv = _buffer({"depth": 16, "width": 64, "word_width": 16, "datawidth": 8})
    assert (lv.word_bits, lv.block_size) == (16, 4)


def test_n_words_is_the_block_size():
    """`n_words` is Timeloop's other name of block-size: the width then sets the cluster size
    (64 / (8 x 4) = 2) and the capacity is depth x block size."""
    lv = _buffer({"depth": 16, "width": 64, "datawidth": 8, "n_words": 4})
    assert (lv.block_size, lv.cluster_size, lv.size) == (4, 2, 64)


def test_memory_depth_is_the_depth():
    """`memory_depth` is read as depth (capacity = depth x block size, block = width / datawidth)."""
    lv = _buffer({"memory_depth": 100, "width": 32, "datawidth": 8})
    assert lv.size == 100 * 4


def test_entries_give_the_capacity_before_depth():
    """ParseSpecs takes `entries` first (words, not blocks), `depth` only without it."""
    lv = _buffer({"entries": 100, "depth": 64, "width": 32, "datawidth": 8})
    assert lv.size == 100


def test_size_kb_counts_binary_kilobytes_of_words():
    """sizeKB: size = sizeKB x 1024 x 8 / word_bits (2 KB of 16-bit words = 1024 words)."""
    lv = _buffer({"sizeKB": 2, "datawidth": 16})
    assert lv.size == 1024 and lv.effective_size == 1024


def test_multiple_buffering_divides_the_capacity_rounding_down():
    """effective_size = floor(size / multiple_buffering): 100 words double-buffered hold 50, at 3x 33."""
    assert _buffer({"entries": 100, "datawidth": 8, "multiple_buffering": 2}).effective_size == 50
    assert _buffer({"entries": 100, "datawidth": 8, "multiple_buffering": 3}).effective_size == 33


def test_bandwidth_is_split_half_read_half_write_and_shared_bandwidth_is_read():
    """The deprecated `bandwidth` sets read_bandwidth = write_bandwidth = bandwidth / 2 (Timeloop
    warns so); an explicit read/write/shared bandwidth is taken as given."""
    lv = _buffer({"entries": 64, "datawidth": 8, "bandwidth": 8})
    assert (lv.read_bandwidth, lv.write_bandwidth) == (4, 4)
    lv = _buffer({"entries": 64, "datawidth": 8, "bandwidth": 8, "read_bandwidth": 6, "shared_bandwidth": 5})
    assert (lv.read_bandwidth, lv.write_bandwidth, lv.shared_bandwidth) == (6, 4, 5)


@pytest.mark.parametrize("attr", ["bandwidth", "read_bandwidth", "write_bandwidth", "shared_bandwidth"])
def test_a_zero_bandwidth_is_refused(attr):
    """Timeloop divides by a bandwidth: 0 gives infinite cycles; refused naming the key."""
    with pytest.raises(CoexploreError) as err:
        _buffer({"entries": 64, "datawidth": 8, attr: 0})
    assert err.value.key == f"Buf.attributes.{attr}"


# ----------------------------------------------------------------------------- mappings

SIMBA = CORPUS / "arches" / "simba_like"
SIMBA_CASE = CORPUS / "public" / "simba_like" / "tiny_conv" / "011"        # random_greedy, valid


@pytest.fixture(scope="module")
def simba():
    from coexplore.model.inputs import load_context
    return load_context(SIMBA / "processed.yaml", LAYER, SIMBA / "ERT.yaml")


def _entries():
    return copy.deepcopy(load_yaml(SIMBA_CASE / "mapping.yaml")["mapping"])


def _directive(entries, target, kind):
    return next(e for e in entries if e["target"] == target and e["type"] == kind)


def _arrays(ctx, entries):
    return to_arrays([parse_mapping({"mapping": entries}, ctx.arch, ctx.problem, "m.yaml")], ctx.arch, ctx.problem)


def _same_as_timeloop(ctx, entries):
    """The mapping evaluates to the numbers timeloop-model gave for the case's own mapping.yaml."""
    ref = json.loads((SIMBA_CASE / "expected.json").read_text())
    rec = ctx.record(ctx.evaluate(_arrays(ctx, entries)))
    assert rec["valid"] is True and ref["valid"] is True
    assert rec["cycles"] == ref["cycles"]
    assert rec["energy_pJ"] == pytest.approx(ref["energy_pJ"], rel=1e-9)


def test_the_case_itself_gives_timeloops_numbers(simba):
    _same_as_timeloop(simba, _entries())


def test_a_spatial_directive_without_split_puts_every_dimension_on_x(simba):
    """Timeloop: "split not found for spatial level ..., setting to all-X". inter_PE_spatial's C4 M4
    are both X loops (split 2 of MCSQRNP): without the split they still are, and the numbers are
    Timeloop's."""
    entries = _entries()
    del _directive(entries, "inter_PE_spatial", "spatial")["split"]
    _same_as_timeloop(simba, entries)
    a = _arrays(simba, entries)
    li = len(simba.arch.levels) - 1 - simba.arch.level_names().index("inter_PE_spatial")
    assert a.spatial_x[0, li].prod() == 16 and a.spatial_y[0, li].prod() == 1


def test_dimensions_a_permutation_leaves_out_are_the_outermost_loops(simba):
    """Timeloop pads a short permutation with the missing dimensions after the given ones (listed
    innermost first: the padding goes outside). PEAccuBuffer's RPNMCQS orders its P2 inside its Q2:
    written `P` alone, Q is padded outside P, the same nest, with Timeloop's numbers."""
    entries = _entries()
    _directive(entries, "PEAccuBuffer", "temporal")["permutation"] = "P"
    _same_as_timeloop(simba, entries)
    li = len(simba.arch.levels) - 1 - simba.arch.level_names().index("PEAccuBuffer")
    dims = simba.problem.dims
    order = [dims[i] for i in _arrays(simba, entries).perm[0, li]]
    assert order[0] == "P" and order.index("Q") > 0


def test_spatial_dimensions_left_out_of_the_permutation_come_after_the_split(simba):
    """The spatial permutation is padded the same way: `permutation: M, split: 1` with factors
    C4 M4 puts M (position 0) on X and C (padded after it) on Y."""
    entries = _entries()
    d = _directive(entries, "inter_PE_spatial", "spatial")
    d.update(permutation="M", split=1)
    a = _arrays(simba, entries)
    li = len(simba.arch.levels) - 1 - simba.arch.level_names().index("inter_PE_spatial")
    dims = simba.problem.dims
    assert a.spatial_x[0, li, dims.index("M")] == 4 and a.spatial_y[0, li, dims.index("C")] == 4
    assert a.spatial_y[0, li, dims.index("M")] == 1 and a.spatial_x[0, li, dims.index("C")] == 1


def test_a_numeric_target_is_a_name_as_timeloops_yaml_reader_gives_it(simba):
    """FindTargetStorageLevel tries `target` as a name first, and CompoundConfigNode::lookupValue
    gives any YAML scalar as text: `target: 0` is the name "0", not found (a user study)."""
    from coexplore.errors import CoexploreError
    entries = _entries()
    for e in entries:
        if e["target"] == "PEWeightRegs":
            e["target"] = 0
    with pytest.raises(CoexploreError, match="target storage level not found: 0"):
        _same_as_timeloop(simba, entries)


@pytest.mark.parametrize("factors", ["C1 M1 R1 S1 N1 P2 Q2 # Q9", "C==1 M1 R1 S1 N1 P==2 Q2", "C0 M1 R1 S1 N1 P2 Q2"])
def test_factor_spellings_timeloop_reads(simba, factors):
    """ParseUserFactors: text after '#' is dropped, `=*` takes any number of '=', and a factor 0 is
    the whole dimension (tiny_conv: C0 is C 4)."""
    entries = _entries()
    _directive(entries, "PEAccuBuffer", "temporal")["factors"] = factors
    lm = parse_mapping({"mapping": entries}, simba.arch, simba.problem, "m.yaml").levels["PEAccuBuffer"]
    want = {"C": 1, "M": 1, "R": 1, "S": 1, "N": 1, "P": 2, "Q": 2}
    if "C0" in factors:
        want["C"] = 4
    assert lm.temporal == want


@pytest.mark.parametrize("split", [-1, True, 1.5])
def test_a_split_that_is_not_a_count_of_dimensions_is_refused(simba, split):
    entries = _entries()
    _directive(entries, "inter_PE_spatial", "spatial")["split"] = split
    with pytest.raises(CoexploreError) as err:
        parse_mapping({"mapping": entries}, simba.arch, simba.problem, "m.yaml")
    assert err.value.key.endswith(".split")


def test_a_dimension_given_twice_and_a_residual_factor_are_refused(simba):
    entries = _entries()
    _directive(entries, "PEAccuBuffer", "temporal")["factors"] = "C1 M1 R1 S1 N1 P2 Q2 R1"
    with pytest.raises(CoexploreError, match="given twice"):
        parse_mapping({"mapping": entries}, simba.arch, simba.problem, "m.yaml")
    _directive(entries, "PEAccuBuffer", "temporal")["factors"] = "C1 M1 R1 S1 N1 P2 Q=3,1"
    with pytest.raises(CoexploreError, match="residual"):
        parse_mapping({"mapping": entries}, simba.arch, simba.problem, "m.yaml")


# ----------------------------------------------------------------------------- energy tables

def _ert(*actions):
    from coexplore.spec.ert import parse_ert
    return parse_ert({"ERT": {"version": 0.4, "tables": [
        {"name": "system.Buf[1..4]", "actions": [{"name": n, "arguments": None, "energy": e} for n, e in actions]}]}},
        "ERT.yaml")


@pytest.mark.parametrize("op, actions, want", [
    ("read", [("read", 1.0), ("random_read", 2.0)], 2.0),
    ("fill", [("write", 1.0), ("fill", 2.0), ("random_write", 3.0), ("random_fill", 4.0)], 4.0),
    ("fill", [("write", 1.0), ("fill", 2.0), ("random_write", 3.0)], 3.0),
    ("fill", [("write", 1.0), ("fill", 2.0)], 2.0),
    ("update", [("write", 1.0), ("update", 2.0), ("random_write", 3.0), ("random_update", 4.0)], 4.0),
    ("update", [("write", 1.0), ("update", 2.0), ("random_write", 3.0)], 3.0),
    ("compute", [("compute", 1.0), ("mult", 2.0), ("mac", 3.0), ("mult_random", 4.0), ("mac_random", 5.0)], 5.0),
    ("compute", [("compute", 1.0), ("mult", 2.0), ("mac", 3.0), ("mult_random", 4.0)], 4.0),
    ("compute", [("compute", 1.0), ("mult", 2.0), ("mac", 3.0)], 3.0),
])
def test_ert_actions_are_taken_in_timeloops_order_of_preference(op, actions, want):
    """storageOperationMappings / arithmeticOperationMappings (topology.hpp): random_read before read;
    random_fill, random_write, fill, write; random_update, random_write, update, write; mac_random,
    mult_random, mac, mult, compute. The first one the table has prices the operation."""
    assert _ert(*actions).energy("Buf", op) == want


def test_leak_is_priced_by_the_leak_action_only():
    """Timeloop's leakage comes from the ERT's `leak` action; an Accelergy `idle` action is no leak."""
    assert _ert(("read", 1.0), ("idle", 0.5)).energy("Buf", "leak") is None
    assert _ert(("read", 1.0), ("leak", 0.25)).energy("Buf", "leak") == 0.25


def test_a_negative_action_energy_is_refused():
    with pytest.raises(CoexploreError) as err:
        _ert(("read", -1.0))
    assert err.value.key == "ERT.tables[0].actions[0].energy"


def test_a_tables_name_range_counts_its_instances():
    """`system.Buf[1..4]` names 4 instances (hi - lo + 1), `PE[0..15].MAC[0..3]` 64."""
    from coexplore.spec.ert import named_instances
    assert named_instances("system.Buf[1..4]") == 4
    assert named_instances("system.PE[0..15].MAC[0..3]") == 64
    assert named_instances("system.Buf") is None


# ----------------------------------------------------------------------------- component classes

@pytest.mark.parametrize("cls, kind", [
    ("regfile", "storage"), ("smartbuffer_RF", "storage"), ("SRAM", "storage"), ("DRAM", "storage"),
    ("storage", "storage"), ("intmac", "compute"), ("fpmac", "compute"),
    ("sram", None), ("Regfile", None), ("dram", None), ("wire", None),     # case matters in Timeloop
])
def test_component_kinds_follow_timeloops_case_sensitive_class_names(cls, kind):
    """topology.hpp: bufferClasses DRAM, SRAM, regfile, smartbuffer, storage and computeClasses
    (mac, ...) are matched as case-sensitive substrings; any other class is not modelled."""
    from coexplore.spec.architecture import timeloop_kind
    assert timeloop_kind(cls) == kind


def test_only_timeloopfes_inter_spatial_levels_are_fan_out_levels():
    """timeloopfe's fan-out level is `inter_<node>_spatial` of class dummy_storage; a component of
    one's own with class dummy_storage is a buffer like any other."""
    from coexplore.spec.architecture import is_fanout_level
    assert is_fanout_level("inter_PE_spatial", "dummy_storage")
    assert not is_fanout_level("my_buffer", "dummy_storage")


@pytest.fixture(scope="module")
def simba_nodes():
    """The same design read from its v0.4 node list (timeloopfe's input)."""
    from coexplore.model.inputs import load_context
    return load_context(SIMBA / "arch.yaml", LAYER, SIMBA / "ERT.yaml")


def test_a_v04_container_is_a_mapping_target_by_its_own_name(simba_nodes):
    """timeloopfe names a container's fan-out level inter_<container>_spatial; a mapping written for
    the node list may target the container itself (PE, distributed_buffers, reg_mac)."""
    entries = _entries()
    for e in entries:
        if e["target"].startswith("inter_"):
            e["target"] = e["target"][len("inter_"):-len("_spatial")]
    _same_as_timeloop(simba_nodes, entries)


def test_a_v04_containers_fan_out_level_keeps_nothing_unless_told(simba_nodes):
    """timeloopfe bypasses every dataspace at the dummy inter_*_spatial levels it adds: a mapping of
    the node list need not say so (the case's own mapping does, explicitly) and gives the same numbers."""
    entries = [e for e in _entries() if not (e["target"].startswith("inter_") and e["type"] == "datatype")]
    _same_as_timeloop(simba_nodes, entries)


def test_a_mapping_that_keeps_what_a_node_bypasses_is_refused(simba_nodes):
    """GlobalBuffer's node constraint bypasses Weights; a mapping keeping Weights there is the
    re-specification timeloopfe refuses."""
    entries = _entries()
    entries.append({"target": "GlobalBuffer", "type": "datatype", "keep": ["Weights"]})
    with pytest.raises(CoexploreError, match="keeps Weights at GlobalBuffer"):
        parse_mapping({"mapping": entries}, simba_nodes.arch, simba_nodes.problem, "m.yaml")


def test_a_later_keep_undoes_an_earlier_bypass(simba):
    """ParseUserDatatypeBypassSettings writes '0' or '1' per dataspace and level as the directives
    come: bypass Outputs, then keep Outputs, is keep."""
    entries = _entries()
    gb = _directive(entries, "GlobalBuffer", "datatype")
    assert gb["keep"] == ["Inputs", "Outputs"]
    entries.insert(entries.index(gb), {"target": "GlobalBuffer", "type": "datatype", "bypass": ["Outputs"]})
    _same_as_timeloop(simba, entries)


def test_a_spatial_directive_at_a_level_without_fan_out_is_refused(simba):
    """FindTargetTilingLevel: "cannot find spatial tiling level associated with storage level
    GlobalBuffer": its next-inner level has as many instances (1)."""
    entries = _entries() + [{"target": "GlobalBuffer", "type": "spatial", "factors": "C1", "permutation": "C"}]
    with pytest.raises(CoexploreError, match="cannot find spatial tiling level associated with storage level "
                                             "GlobalBuffer"):
        parse_mapping({"mapping": entries}, simba.arch, simba.problem, "m.yaml")


def _v04(buf_attrs: str):
    from coexplore.spec.yamlio import loads_yaml
    return parse_architecture(loads_yaml(
        "architecture:\n  version: 0.4\n  nodes:\n  - !Container {name: system}\n"
        "  - !Component {name: DRAM, class: DRAM, attributes: {width: 64, datawidth: 8}}\n"
        f"  - !Component {{name: buf, class: SRAM, attributes: {{{buf_attrs}}}}}\n"
        "  - !Component {name: mac, class: intmac, attributes: {datawidth: 8}}\n"), "arch.yaml")


def test_a_v04_buffer_gets_timeloopfes_cluster_size_1():
    """timeloopfe writes cluster_size: 1 into every storage component that gives none, so Timeloop
    sees block_size and cluster_size both: their product with datawidth must be the width (it stops
    otherwise). Block 8 x 8 bits = 64 is fine; block 2 of a 64-bit width is refused, where a v0.3
    file (no cluster_size written) makes it cluster 4. (simba_like's processed.yaml, timeloopfe's
    output, has cluster_size: 1 on every storage level whose node gives none.)"""
    processed = (SIMBA / "processed.yaml").read_text()
    assert (SIMBA / "arch.yaml").read_text().count("cluster_size") == 1           # PEWeightRegs' 64
    assert processed.count("cluster_size: 1\n") == 8 and processed.count("cluster_size: 64") == 1
    assert _v04("depth: 16, width: 64, datawidth: 8, block_size: 8").levels[1].cluster_size == 1
    with pytest.raises(CoexploreError, match="cluster_size"):
        _v04("depth: 16, width: 64, datawidth: 8, block_size: 2")
    assert _buffer({"depth": 16, "width": 64, "datawidth": 8, "block_size": 2}).cluster_size == 4


# ----------------------------------------------------------------------------- constraints

@pytest.fixture(scope="module")
def ex5():
    """v4 exercise 05's flattened design: MainMemory > GlobalBuffer > RegisterFile, K32 R3 P16."""
    from coexplore.model.inputs import load_context
    ex = DATA / "exercises_v4" / "v4_ex05_mapper_conv1d_oc_3level_null"
    ppi = ex / "parsed-processed-input.yaml"
    return load_context(ppi, ppi, ex / "timeloop-mapper.ERT.yaml")


def _cons(ctx, *targets):
    from coexplore.spec.constraints import constraints_from_targets
    return constraints_from_targets(list(targets), ctx.arch, "c.yaml")


@pytest.mark.parametrize("body, key", [
    ({"type": "spatial", "split": -1}, "split"), ({"type": "spatial", "split": True}, "split"),
    ({"type": "utilization", "min": 1.5}, "min"), ({"type": "utilization", "min": -0.1}, "min"),
])
def test_constraint_values_timeloop_cannot_take_are_refused(ex5, body, key):
    """A split counts dimensions (>= 0, not a boolean); a min utilization is a fraction in [0, 1].
    (A spatial constraint needs a level that fans out: the small design's GLB; ex5 has none.)"""
    from coexplore.spec.architecture import load_architecture
    from coexplore.spec.constraints import constraints_from_targets
    with pytest.raises(CoexploreError) as err:
        if body["type"] == "spatial":
            small = Path(__file__).parent / "data" / "mapspace_small" / "arch.yaml"
            constraints_from_targets([{"target": "GLB", **body}], load_architecture(small), "c.yaml")
        else:
            _cons(ex5, {"target": "RegisterFile", **body})
    assert err.value.key.endswith(f".{key}")


def test_the_backing_store_may_say_keep_twice_other_levels_may_not(ex5):
    """constraints.cpp: a keep flag given again is "re-specification of dataspace keep flag" at
    every level but the last storage level (the backing store, which keeps everything anyway)."""
    twice = [{"type": "bypass", "keep": ["Weights"]}, {"type": "bypass", "keep": ["Weights"]}]
    assert _cons(ex5, *({"target": "MainMemory", **t} for t in twice))["MainMemory"].keep == {"Weights"}
    with pytest.raises(CoexploreError, match="re-specification of dataspace keep flag"):
        _cons(ex5, *({"target": "GlobalBuffer", **t} for t in twice))


def test_min_parallelism_at_the_compute_level_is_refused_not_dropped(ex5):
    """Timeloop applies `type: utilization` at the innermost storage level only; at the compute
    level it is an error naming that level (other directives there constrain nothing: skipped)."""
    assert _cons(ex5, {"target": ex5.arch.compute.name, "type": "temporal", "factors": "K1"})
    with pytest.raises(CoexploreError, match="innermost storage level"):
        _cons(ex5, {"target": ex5.arch.compute.name, "type": "utilization", "min": 0.5})


def test_keep_only_and_bypass_only_are_remembered(ex5):
    """timeloopfe's keep_only keeps the listed dataspaces and bypasses the others; bypass_only the
    converse: the flags travel with the lists."""
    c = _cons(ex5, {"target": "GlobalBuffer", "type": "bypass", "keep_only": ["Weights"]})["GlobalBuffer"]
    assert c.keep == {"Weights"} and c.keep_only and not c.bypass_only
    c = _cons(ex5, {"target": "GlobalBuffer", "type": "bypass", "bypass_only": ["Inputs"]})["GlobalBuffer"]
    assert c.bypass == {"Inputs"} and c.bypass_only and not c.keep_only


def test_constraint_permutations_are_read_by_words_or_letters(ex5):
    """A permutation of multi-letter names is space-separated; one of one-letter names is read letter
    by letter (Timeloop), spaces skipped."""
    from coexplore.spec.constraints import _perm, resolve_permutation
    assert _perm("KR P") == ["KR", "P"] and resolve_permutation(_perm("KR P"), ["K", "R", "P"]) == ["K", "R", "P"]
    assert _perm("IC OC") == ["IC", "OC"]
    assert _perm("PRK") == ["P", "R", "K"]


def test_a_constraint_factor_with_doubled_equals_is_an_exact_factor(ex5):
    """constraints.cpp's regex takes any run of '=' (`K==4` is K=4) and `<=`/`>=` as bounds."""
    c = _cons(ex5, {"target": "GlobalBuffer", "type": "temporal", "factors": "K==4 R<=3 P>=2"})["GlobalBuffer"]
    assert c.temporal_factors == {"K": ("=", 4)} and c.temporal_max == {"R": 3} and c.temporal_min == {"P": 2}


def test_node_permutations_are_completed_with_the_unit_loops_first_as_timeloopfe_flattens_them():
    """simple_weight_stationary's PE array says `permutation: [C, M], split: 1` with R, S, P, Q fixed
    to 1; timeloopfe's flattened constraints.yaml (bundled beside it) has NQPSRCM: the five unit
    loops first (N is 1 in the layer), then C, M, so split 1 leaves C and M on Y."""
    from coexplore.spec.architecture import load_architecture
    from coexplore.spec.constraints import constraints_from_nodes
    from coexplore.spec.problem import load_problem
    ws = CORPUS / "arches" / "simple_weight_stationary"
    ref = next(t for t in load_yaml(ws / "constraints.yaml")["architecture_constraints"]["targets"]
               if t["target"] == "inter_PE_spatial" and t["type"] == "spatial")
    assert (ref["permutation"], ref["split"]) == ("NQPSRCM", 1)
    c = constraints_from_nodes(load_architecture(ws / "arch.yaml"),
                               load_problem(CORPUS / "layers" / "alexnet_conv3.yaml"))["inter_PE_spatial"]
    assert c.split == 1 and sorted(c.spatial_permutation) == sorted(ref["permutation"])
    assert c.spatial_permutation[-2:] == ["C", "M"]


def test_a_containers_fan_out_level_keeps_nothing_in_the_mapspace():
    """timeloopfe's flattened constraints bypass Weights, Inputs and Outputs at inter_PE_spatial
    (simple_weight_stationary's constraints.yaml): read from the node list, that level keeps nothing."""
    from coexplore.spec.architecture import load_architecture
    from coexplore.spec.constraints import constraints_from_nodes
    ws = CORPUS / "arches" / "simple_weight_stationary"
    ref = next(t for t in load_yaml(ws / "constraints.yaml")["architecture_constraints"]["targets"]
               if t["target"] == "inter_PE_spatial" and t["type"] == "bypass")
    assert sorted(ref["bypass"]) == ["Inputs", "Outputs", "Weights"]
    c = constraints_from_nodes(load_architecture(ws / "arch.yaml"))["inter_PE_spatial"]
    assert not c.keep and c.keep_only


def test_the_energy_table_beside_an_architecture_is_found_in_the_documented_order(tmp_path):
    """ert_file_beside: Accelergy's ERT.yaml first, then timeloop-model's, then timeloop-mapper's
    copy (the names of the same table in the three tools' output folders)."""
    from coexplore.spec.ert import ert_file_beside
    arch = tmp_path / "arch.yaml"
    arch.write_text("")
    for name in ("timeloop-mapper.ERT.yaml", "timeloop-model.ERT.yaml", "ERT.yaml"):
        (tmp_path / name).write_text("")
        assert ert_file_beside(arch).name == name


def test_a_v03_components_mesh_is_its_own_not_its_subtrees():
    """Topology::ParseTreeSpecs hands BufferLevel::ParseSpecs the local component alone: a meshX in
    the enclosing subtree's attributes (Accelergy's business) is not read, so PE[0..3]'s buffer is
    4 instances on meshX 4, meshY 1."""
    doc = {"architecture": {"version": 0.3, "subtree": [{"name": "system", "local": [
        {"name": "DRAM", "class": "DRAM", "attributes": {"width": 64, "datawidth": 8}}],
        "subtree": [{"name": "PE[0..3]", "attributes": {"meshX": 2}, "local": [
            {"name": "Buf", "class": "SRAM", "attributes": {"depth": 16, "width": 8, "datawidth": 8}},
            {"name": "mac", "class": "intmac", "attributes": {"datawidth": 8}}]}]}]}}
    buf = parse_architecture(doc, "a.yaml").levels[1]
    assert (buf.instances, buf.mesh_x, buf.mesh_y) == (4, 4, 1)


def test_a_permutation_naming_a_dimension_twice_is_refused(simba):
    """A permutation orders each dimension once (Timeloop builds one loop per dimension from it: a
    repeated name would leave another dimension without its loop)."""
    entries = _entries()
    _directive(entries, "PEAccuBuffer", "temporal")["permutation"] = "PPQ"
    with pytest.raises(CoexploreError, match="listed twice"):
        parse_mapping({"mapping": entries}, simba.arch, simba.problem, "m.yaml")


# ----------------------------------------------------------------------------- workload files

def test_a_layer_read_from_a_problem_file_keeps_its_strides_and_sizes():
    """alexnet_conv1 (C3 M96 R11 S11 P55 Q55, stride 4): its input window is (55 - 1) x 4 + 11 = 227
    wide, so Inputs hold 3 x 227 x 227 elements; the MACs are the product of the bounds only."""
    from coexplore.spec.workload import read_problem
    layer = read_problem(CORPUS / "layers" / "alexnet_conv1.yaml")
    assert layer.instance["Wstride"] == 4 and layer.instance["Hstride"] == 4
    assert layer.dataspace_sizes() == {"Weights": 3 * 96 * 11 * 11, "Inputs": 3 * 227 * 227, "Outputs": 96 * 55 * 55}
    assert layer.macs == 105_415_200                       # the corpus README's MACs


def test_a_workload_layer_takes_the_shapes_coefficient_defaults(tmp_path):
    """Coefficients a layer leaves out take the shape's `default` (Timeloop's rule)."""
    from coexplore.spec.workload import load_workload
    shape = copy.deepcopy(load_yaml(LAYER)["problem"]["shape"])
    shape["coefficients"][0]["default"] = 2                      # Wstride
    path = tmp_path / "net.yaml"
    from coexplore.spec.yamlio import dump_yaml
    path.write_text(dump_yaml({"version": 0.4, "shape": shape, "workload": {"name": "net", "layers": [
        {"name": "a", "instance": {"C": 4, "M": 8, "R": 3, "S": 3, "N": 1, "P": 6, "Q": 6}}]}}))
    layer = load_workload(path).layers[0]
    assert layer.instance["Wstride"] == 2 and layer.instance["Hstride"] == 1
    assert layer.dataspace_sizes()["Inputs"] == 4 * ((6 - 1) * 2 + 3) * ((6 - 1) * 1 + 3)


def test_layers_whose_outputs_differ_only_in_read_write_are_different_problems():
    """read_write decides whether a tensor is read back (updates vs. fills): two layers whose shapes
    differ in it alone are not the same problem to map once."""
    from coexplore.spec.workload import CNN_LAYER_SHAPE, Layer
    inst = {"C": 4, "M": 8, "R": 3, "S": 3, "N": 1, "P": 6, "Q": 6, "Wstride": 1, "Hstride": 1,
            "Wdilation": 1, "Hdilation": 1}
    other = copy.deepcopy(CNN_LAYER_SHAPE)
    other["data_spaces"][2]["read_write"] = False
    assert Layer("a", inst).key() != Layer("b", inst, shape=other).key()
    assert Layer("a", inst).key() == Layer("b", dict(inst)).key()


# ----------------------------------------------------------------------------- model inputs

def test_an_energy_table_given_wins_over_the_one_beside_the_architecture():
    """`--ert` / ert_path: the table given prices the design, not the ERT.yaml that sits beside the
    architecture (as timeloop-model takes the ERT named on its command line)."""
    from coexplore.model.inputs import load_context
    from coexplore.errors import CoexploreWarning
    other = CORPUS / "arches" / "simba_like_pe8_glb4k" / "ERT.yaml"        # (its tables name 8 PEs, not 16)
    with pytest.warns(CoexploreWarning, match="another design or array size"):
        ctx = load_context(SIMBA / "processed.yaml", LAYER, other)
    assert ctx.ert.source == str(other)


def test_an_erts_file_beside_comes_before_an_ert_key_inside(tmp_path):
    """locate_ert's documented order: an ERT.yaml beside the architecture, else its `ERT:` key."""
    from coexplore.model.inputs import locate_ert
    from coexplore.spec.yamlio import dump_yaml
    table = {"version": 0.4, "tables": [{"name": "s.Buf", "actions": [{"name": "read", "energy": 1.0}]}]}
    arch = tmp_path / "arch.yaml"
    arch.write_text(dump_yaml({"architecture": {"version": 0.4}, "ERT": table}))
    assert locate_ert(arch).energy("Buf", "read") == 1.0
    beside = copy.deepcopy(table)
    beside["tables"][0]["actions"][0]["energy"] = 2.0
    (tmp_path / "ERT.yaml").write_text(dump_yaml({"ERT": beside}))
    assert locate_ert(arch).energy("Buf", "read") == 2.0


@pytest.mark.parametrize("key, kind", [("no_link_transfer", "spatial"), ("no_multicast_no_reduction", "spatial"),
                                       ("no_temporal_reuse", "temporal"), ("rmw_on_first_writeback", "temporal")])
def test_directives_that_change_timeloops_analysis_are_refused_not_ignored(simba, key, kind):
    """mapping/parser.cpp reads no_link_transfer / no_multicast_no_reduction (spatial) and
    no_temporal_reuse / rmw_on_first_writeback (temporal) per dataspace and they change the counts;
    the model does not reproduce them, so a mapping that uses one is refused; an empty list says nothing."""
    target = "inter_PE_spatial" if kind == "spatial" else "PEAccuBuffer"
    entries = _entries()
    _directive(entries, target, kind)[key] = []
    parse_mapping({"mapping": entries}, simba.arch, simba.problem, "m.yaml")
    _directive(entries, target, kind)[key] = ["Inputs"]
    with pytest.raises(CoexploreError) as err:
        parse_mapping({"mapping": entries}, simba.arch, simba.problem, "m.yaml")
    assert err.value.key.endswith(f".{key}")


def test_a_root_constraints_block_is_not_read_beside_a_mapspace_block():
    """timeloop-mapper reads the mapspace constraints from `mapspace` (else `mapspace_constraints`)
    and never a root-level `constraints:` beside it: with both, only `mapspace`'s targets count."""
    from coexplore.spec.constraints import constraint_targets
    a = {"target": "GlobalBuffer", "type": "temporal", "factors": "K1"}
    b = {"target": "GlobalBuffer", "type": "temporal", "factors": "K2"}
    assert list(constraint_targets({"mapspace": {"targets": [a]}, "constraints": {"targets": [b]}})) == [a]


def test_a_dimension_name_with_a_digit_is_refused():
    """Timeloop's factor regex reads a name as letters then the factor's digits (`K12` is K = 12), so
    a dimension named K1 could never be given a factor: refused naming the entry."""
    data = _layer()
    data["problem"]["shape"]["dimensions"][1] = "M1"
    with pytest.raises(CoexploreError) as err:
        parse_problem(data, "p.yaml")
    assert err.value.key == "problem.shape.dimensions[1]"


def test_a_layer_of_more_than_2_to_53_operations_is_refused():
    """Counts stay exact only up to 2^53 (float64 energies): R = S = 2^13 and P = Q = 2^14 make 2^54
    MACs with every tensor small; refused naming problem.instance."""
    with pytest.raises(CoexploreError) as err:
        parse_problem(_layer(C=1, M=1, N=1, R=2 ** 13, S=2 ** 13, P=2 ** 14, Q=2 ** 14), "p.yaml")
    assert err.value.key == "problem.instance" and "operations" in err.value.message
    prob = parse_problem(_layer(C=1, M=1, N=1, R=2 ** 13, S=2 ** 13, P=2 ** 13, Q=2 ** 14), "p.yaml")
    assert prob.macs == 2 ** 53


def test_a_flattened_shape_and_a_coefficient_without_default_are_refused():
    """Timeloop requires each coefficient's `default`; `flatten` renames the dimensions a mapping may
    name, which is not modelled: both refused naming the key."""
    data = _layer()
    data["problem"]["shape"]["coefficients"][0] = {"name": "Wstride"}
    with pytest.raises(CoexploreError) as err:
        parse_problem(data, "p.yaml")
    assert err.value.key == "problem.shape.coefficients[0]"
    data = _layer()
    data["problem"]["shape"]["flatten"] = [["P", "Q"]]
    with pytest.raises(CoexploreError) as err:
        parse_problem(data, "p.yaml")
    assert err.value.key == "problem.shape.flatten"


def test_a_huge_power_is_not_computed():
    """`2 ** 100000` (a 100,000-bit integer) is refused as too large rather than computed."""
    from coexplore.spec.expressions import resolve
    got, why = resolve("2 ** 100000", {})
    assert got == "2 ** 100000" and "too large" in why


def test_a_variable_naming_something_undefined_is_refused():
    """Accelergy refuses a variable whose expression names nothing defined (not kept as text)."""
    from coexplore.spec.yamlio import loads_yaml
    doc = loads_yaml("variables: {X: UNDEFINED_NAME + 1}\narchitecture:\n  version: 0.4\n  nodes:\n"
                     "  - !Component {name: DRAM, class: DRAM, attributes: {width: 64, datawidth: 8}}\n"
                     "  - !Component {name: mac, class: intmac, attributes: {datawidth: 8}}\n")
    with pytest.raises(CoexploreError) as err:
        parse_architecture(doc, "arch.yaml")
    assert err.value.key == "variables.X" and "UNDEFINED_NAME" in err.value.message


def test_two_levels_of_one_name_are_refused():
    """Mapping directives and ERT tables find a level by its name (FindTargetStorageLevel takes the
    first match): two components named Buf would make the second unreachable; refused."""
    doc = {"architecture": {"version": 0.3, "subtree": [{"name": "s", "local": [
        {"name": "Buf", "class": "DRAM", "attributes": {"width": 64, "datawidth": 8}},
        {"name": "Buf", "class": "SRAM", "attributes": {"depth": 16, "width": 8, "datawidth": 8}},
        {"name": "mac", "class": "intmac", "attributes": {"datawidth": 8}}]}]}}
    with pytest.raises(CoexploreError, match="duplicate level names"):
        parse_architecture(doc, "a.yaml")


def test_min_utilization_on_a_buffer_without_a_size_is_refused():
    """BufferLevel::ParseSpecs asserts an effective size wherever min_utilization is not 0."""
    with pytest.raises(CoexploreError) as err:
        _buffer({"datawidth": 8, "min_utilization": 0.5})
    assert err.value.key == "Buf.attributes.min_utilization"
    assert _buffer({"datawidth": 8, "min_utilization": 0}).min_utilization == 0


def test_a_workload_coefficient_named_like_a_dimension_is_refused(tmp_path):
    """A projection term [P, Wstride] names a dimension then a coefficient: one name cannot be both."""
    from coexplore.spec.workload import load_workload
    from coexplore.spec.yamlio import dump_yaml
    shape = copy.deepcopy(load_yaml(LAYER)["problem"]["shape"])
    shape["coefficients"].append({"name": "P", "default": 1})
    path = tmp_path / "net.yaml"
    path.write_text(dump_yaml({"version": 0.4, "shape": shape, "workload": {"name": "net", "layers": [
        {"name": "a", "instance": {"C": 4}}]}}))
    with pytest.raises(CoexploreError) as err:
        load_workload(path)
    assert err.value.key == "shape.coefficients[4]"


def test_densities_in_a_problem_are_warned_of_as_not_modelled():
    """A Sparseloop `densities` instance key changes Timeloop's (Sparseloop's) numbers; the model is
    dense, so loading says it ignores them."""
    from coexplore.model.inputs import problem_warnings
    prob = parse_problem(_layer(densities={"Inputs": 0.5}), "p.yaml")
    [said] = problem_warnings(prob, "p.yaml")
    assert "densities" in said and "dense" in said
    assert problem_warnings(parse_problem(_layer(), "p.yaml"), "p.yaml") == []


@pytest.mark.parametrize("doc, key, words", [
    ({"ERT": {"version": "0.4", "tables": {}}}, "ERT.tables", "got {}"),
    ({"ERT": {"version": "0.4"}}, "ERT.tables", "missing key"),
    ({"ERT": {"tables": [{"name": "Buf", "actions": "read"}]}}, "ERT.tables[0].actions", "got 'read'"),
    ({"ART": {"version": "0.4", "tables": []}}, "ERT", "area reference table"),
])
def test_an_ert_of_the_wrong_shape_says_what_it_holds(doc, key, words):
    """User study: `tables: {}` was 'missing key', `actions: read` 'an action without a name', an
    ART.yaml given as --ert 'missing key ERT.tables'."""
    from coexplore.spec.ert import parse_ert
    with pytest.raises(CoexploreError) as err:
        parse_ert(doc, "e.yaml")
    assert (err.value.key, err.value.file) == (key, "e.yaml") and words in err.value.message, err.value.message
