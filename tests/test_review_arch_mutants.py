"""Tests written by a mutation review of coexplore.arch, coexplore.spec.system and the bundled
workloads (2026-12-03): each kills mutants the rest of the suite let through. Expected values are
the documented parameter tables (docs/readme_arch.md), the corpus designs (tests/data/arches),
published network shapes, or hand-derived facts; never values the code printed."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from coexplore.arch.core import build_core
from coexplore.arch.system import build_system, check_sweep
from coexplore.errors import CoexploreError
from coexplore.spec.system import parse_system
from coexplore.spec.workload import find_workload, load_workload

ROOT = Path(__file__).resolve().parent.parent
ARCHES = Path(__file__).parent / "data" / "arches"


def _levels(core) -> dict[str, dict]:
    """Flattened level name (no instance range) -> its attributes."""
    local = core.flattened().processed["architecture"]["subtree"][0]["local"]
    return {e["name"].split("[")[0]: e["attributes"] for e in local}


# (template, parameter, a legal non-default value, the level and the attribute it must set, per
# docs/readme_arch.md's parameter tables); every other attribute of every level must stay as with
# the defaults (a parameter wired to the wrong level or attribute, or not wired, fails)
WIRING = [
    ("simba", "dram_read_bandwidth", 8, "DRAM", "read_bandwidth"),
    ("simba", "dram_write_bandwidth", 8, "DRAM", "write_bandwidth"),
    ("simba", "glb_depth", 4096, "GlobalBuffer", "depth"),
    ("simba", "glb_width", 128, "GlobalBuffer", "width"),
    ("simba", "glb_n_banks", 2, "GlobalBuffer", "n_banks"),
    ("simba", "glb_nports", 1, "GlobalBuffer", "nports"),
    ("simba", "glb_read_bandwidth", 8, "GlobalBuffer", "read_bandwidth"),
    ("simba", "glb_write_bandwidth", 8, "GlobalBuffer", "write_bandwidth"),
    ("simba", "input_buffer_depth", 1024, "PEInputBuffer", "depth"),
    ("simba", "input_buffer_width", 128, "PEInputBuffer", "width"),
    ("simba", "weight_buffer_depth", 1024, "PEWeightBuffer", "depth"),
    ("simba", "weight_buffer_width", 128, "PEWeightBuffer", "width"),
    ("simba", "weight_buffer_n_banks", 4, "PEWeightBuffer", "n_banks"),
    ("simba", "accu_buffer_depth", 64, "PEAccuBuffer", "depth"),
    ("simba", "accu_buffer_width", 48, "PEAccuBuffer", "width"),
    ("simba", "accu_bits", 12, "PEAccuBuffer", "datawidth"),
    ("simba", "weight_regs_depth", 2, "PEWeightRegs", "depth"),
    ("simba", "weight_regs_width", 1024, "PEWeightRegs", "width"),
    ("simba", "weight_regs_cluster_size", 32, "PEWeightRegs", "cluster_size"),
    ("simba", "weight_regs_num_ports", 1, "PEWeightRegs", "num_ports"),
    ("simba", "mac_multiplier_width", 16, "mac", "multiplier_width"),
    ("simba", "mac_adder_width", 32, "mac", "adder_width"),
    ("eyeriss", "dram_read_bandwidth", 8, "DRAM", "read_bandwidth"),
    ("eyeriss", "dram_write_bandwidth", 8, "DRAM", "write_bandwidth"),
    ("eyeriss", "glb_depth", 8192, "shared_glb", "depth"),
    ("eyeriss", "glb_width", 128, "shared_glb", "width"),
    ("eyeriss", "glb_n_banks", 16, "shared_glb", "n_banks"),
    ("eyeriss", "glb_read_bandwidth", 8, "shared_glb", "read_bandwidth"),
    ("eyeriss", "glb_write_bandwidth", 8, "shared_glb", "write_bandwidth"),
    ("eyeriss", "ifmap_spad_depth", 24, "ifmap_spad", "depth"),
    ("eyeriss", "ifmap_spad_width", 32, "ifmap_spad", "width"),
    ("eyeriss", "ifmap_spad_read_bandwidth", 4, "ifmap_spad", "read_bandwidth"),
    ("eyeriss", "ifmap_spad_write_bandwidth", 4, "ifmap_spad", "write_bandwidth"),
    ("eyeriss", "weights_spad_depth", 96, "weights_spad", "depth"),
    ("eyeriss", "weights_spad_width", 32, "weights_spad", "width"),
    ("eyeriss", "weights_spad_read_bandwidth", 4, "weights_spad", "read_bandwidth"),
    ("eyeriss", "weights_spad_write_bandwidth", 4, "weights_spad", "write_bandwidth"),
    ("eyeriss", "psum_spad_depth", 32, "psum_spad", "depth"),
    ("eyeriss", "psum_spad_width", 32, "psum_spad", "width"),
    ("eyeriss", "psum_spad_update_fifo_depth", 4, "psum_spad", "update_fifo_depth"),
    ("eyeriss", "psum_bits", 8, "psum_spad", "datawidth"),
    ("eyeriss", "psum_spad_read_bandwidth", 4, "psum_spad", "read_bandwidth"),
    ("eyeriss", "psum_spad_write_bandwidth", 4, "psum_spad", "write_bandwidth"),
    ("eyeriss", "mac_multiplier_width", 16, "mac", "multiplier_width"),
    ("eyeriss", "mac_adder_width", 32, "mac", "adder_width"),
]


@pytest.mark.parametrize("template,param,value,level,attr", WIRING,
                         ids=[f"{w[0]}-{w[1]}" for w in WIRING])
def test_each_documented_parameter_sets_its_own_attribute_and_nothing_else(template, param, value, level, attr):
    """docs/readme_arch.md's parameter tables: each parameter sets the named attribute of the named
    level (a bandwidth left at null is absent and appears when given) and no other attribute
    of any level changes."""
    base = _levels(build_core(template))
    got = _levels(build_core(template, {param: value}))
    assert list(got) == list(base)
    assert got[level][attr] == value
    expected = copy.deepcopy(base)
    expected[level][attr] = value
    assert got == expected


@pytest.mark.parametrize("template", ["simba", "eyeriss"])
def test_word_bits_is_the_datawidth_of_every_word_level(template):
    """word_bits is the datawidth of weights/inputs (DRAM, global buffer, the word buffers); only the
    partial-sum buffer keeps its own width (accu_bits / psum_bits). 16-bit words need 16-bit-multiple
    widths: the defaults already are (eyeriss) or are set here (simba's register row 1024 bits)."""
    params = {"word_bits": 16}
    if template == "simba":
        params["weight_regs_width"] = 1024          # 64 words of 16 bits: the cluster of 64 still divides
    levels = _levels(build_core(template, params))
    partial = {"simba": "PEAccuBuffer", "eyeriss": "psum_spad"}[template]
    for name, attrs in levels.items():
        if name.startswith("inter_") or name == "mac":
            continue
        assert attrs["datawidth"] == (16 if name != partial else {"simba": 24, "eyeriss": 16}[template]), name


def test_pe_mesh_y_multiplies_the_simba_pes():
    """simba's pe_mesh_y is the PE container's meshY: PEs = pe_mesh_x x pe_mesh_y (2 x 3 = 6 PEs of
    4 lanes x 4 MACs = 96 MACs)."""
    p = build_core("simba", {"pe_mesh_x": 2, "pe_mesh_y": 3}).params
    assert (p.pes, p.macs) == (6, 96)


def test_eyeriss_macs_are_its_pe_count():
    """Each Eyeriss PE holds one MAC: MACs = pe_mesh_x x pe_mesh_y (14 x 12 = 168 by default, as the
    docs' template table says; 16 x 8 = 128)."""
    assert build_core("eyeriss").params.macs == 168
    assert build_core("eyeriss", {"pe_mesh_x": 16, "pe_mesh_y": 8}).params.macs == 128


@pytest.mark.parametrize("template,params,key", [
    ("simba", {"accu_buffer_width": 30}, "params.accu_buffer_width"),       # 30 bits: not a whole 24-bit psum
    ("simba", {"input_buffer_width": 60}, "params.input_buffer_width"),     # 60 bits: not a whole 8-bit word
    ("simba", {"weight_regs_cluster_size": 128}, "params.weight_regs_cluster_size"),   # 64 words a row
    ("eyeriss", {"psum_spad_width": 24}, "params.psum_spad_width"),          # 24 bits: not a whole 16-bit psum
    ("eyeriss", {"ifmap_spad_width": 12}, "params.ifmap_spad_width"),
    ("simba", {"technology": "450nm"}, "params.technology"),                # outside the scaling tables' nodes
    ("simba", {"glb_depth": 2 ** 40 + 1}, "params.glb_depth"),            # above 2^40
    ("simba", {"dram_read_bandwidth": float("inf")}, "params.dram_read_bandwidth"),
])
def test_parameters_outside_the_rules_are_refused_by_name(template, params, key):
    """docs/readme_arch.md: widths are whole multiples of their datawidth, a register row's words are
    whole clusters (512 bits / 8 = 64 words: a cluster of 128 does not divide them), a technology is
    a node such as '45nm', sizes are at most 2^40 and numbers finite."""
    with pytest.raises(CoexploreError) as info:
        build_core(template, params, file="s.yaml")
    assert info.value.key == key and info.value.file == "s.yaml"


def test_the_largest_allowed_size_is_accepted():
    """2^40 itself is within the limit (`at most 2^40`)."""
    assert build_core("simba", {"glb_depth": 2 ** 40}).params.glb_depth == 2 ** 40


# ------------------------------------------------------------------ arch.yaml and processed.yaml agree
def _level_signature(arch) -> list[tuple]:
    return [(lv.name, lv.instances, lv.mesh_x, lv.mesh_y, lv.size, lv.word_bits, lv.read_bandwidth,
             lv.write_bandwidth, lv.cluster_size, lv.block_size) for lv in arch.all_levels if not lv.is_dummy]


def _constraint_signature(cons: dict) -> dict:
    """keep/bypass with the missing half as the complement (a keep-only level bypasses the rest)."""
    every = {"Weights", "Inputs", "Outputs"}
    out = {}
    for name, c in cons.items():
        keep = set(c.keep) if c.keep is not None else every - set(c.bypass or ())
        bypass = set(c.bypass) if c.bypass is not None else every - keep
        out[name] = (keep, bypass, c.spatial_factors, c.spatial_permutation, c.split, c.temporal_factors)
    return out


@pytest.mark.parametrize("template,params", [
    ("simba", {}), ("eyeriss", {}),
    ("simba", {"pe_mesh_x": 1, "pe_mesh_y": 4, "vector_lanes": 2, "macs_per_lane": 8,
               "dram_read_bandwidth": 4, "glb_write_bandwidth": 16, "word_bits": 16, "weight_regs_width": 1024}),
    ("simba", {"pe_mesh_x": 1, "pe_mesh_y": 1, "vector_lanes": 1, "macs_per_lane": 1}),
    ("eyeriss", {"pe_mesh_x": 3, "pe_mesh_y": 5, "psum_bits": 8, "ifmap_spad_write_bandwidth": 4,
                 "glb_read_bandwidth": None, "technology": "65nm"}),
], ids=["simba", "eyeriss", "simba-mesh-y", "simba-ones", "eyeriss-3x5"])
def test_the_v04_and_the_flattened_form_describe_the_same_core(template, params):
    """README: a core evaluates alike from its generated arch.yaml (v0.4 nodes) and its processed.yaml
    (v0.3): read back by the model, both give the same storage and compute levels (instances, meshes,
    sizes, word bits, bandwidths) and the same keep/bypass, spatial and temporal-factor constraints."""
    from coexplore.arch import timeloop_yaml
    from coexplore.spec.architecture import parse_architecture
    from coexplore.spec.constraints import constraints_from_nodes, constraints_from_targets
    core = build_core(template, params)
    v4 = parse_architecture(timeloop_yaml.load(core.arch_yaml()))
    v3 = parse_architecture(core.flattened().processed)
    assert _level_signature(v4) == _level_signature(v3)
    targets = core.flattened().constraints["architecture_constraints"]["targets"]
    c4, c3 = constraints_from_nodes(v4), constraints_from_targets(targets, v3)
    named = [lv.name for lv in v4.all_levels if not lv.is_dummy]
    assert {n: v for n, v in _constraint_signature(c4).items() if n in named} == \
        {n: v for n, v in _constraint_signature(c3).items() if n in named}


def test_a_mesh_of_one_keeps_its_spatial_level():
    """docs/readme_arch.md: a !Container with a spatial key always gets its inter_<name>_spatial level,
    also when its mesh is 1, so level names stay the same along a sweep (vector_lanes 4 -> 1)."""
    ones = build_core("simba", {"pe_mesh_x": 1, "vector_lanes": 1, "macs_per_lane": 1}).flattened()
    assert ones.levels == build_core("simba").flattened().levels
    assert "inter_distributed_buffers_spatial" in ones.levels and set(ones.instances) == {1}


# ------------------------------------------------------------------ flatten on node lists of its own
def _nodes(buffer_constraints: dict) -> list:
    from coexplore.arch.timeloop_yaml import Component, Container
    return [Container(name="sys", attributes={"datawidth": 8}),
            Component(name="DRAM", **{"class": "DRAM"}, attributes={"type": "LPDDR4", "width": 64}),
            Component(name="buf", **{"class": "smartbuffer_RF"}, attributes={"depth": 64, "width": 8},
                      constraints=buffer_constraints),
            Component(name="mac", **{"class": "intmac"}, attributes={"multiplier_width": 8, "adder_width": 16})]


def _target(flat, target: str, kind: str) -> dict:
    (t,) = [t for t in flat.constraints["architecture_constraints"]["targets"]
            if t["target"] == target and t["type"] == kind]
    return t


def test_a_bypass_only_dataspace_constraint_keeps_the_rest():
    """Module docstring of flatten: a storage level's keep/bypass gets its missing half as the
    complement: bypass [Weights] keeps Inputs and Outputs."""
    from coexplore.arch.flatten import flatten
    flat = flatten(_nodes({"dataspace": {"bypass": ["Weights"]}}), {"version": 0.4})
    t = _target(flat, "buf", "bypass")
    assert sorted(t["keep"]) == ["Inputs", "Outputs"] and t["bypass"] == ["Weights"]


def test_factor_text_with_commas_and_spaces_becomes_timeloops_flat_string():
    """Factors written as text with ', ' separators are Timeloop's comma-joined string (R=1,S=1), as a
    list of them would be; a permutation list joins without separator."""
    from coexplore.arch.flatten import flatten
    flat = flatten(_nodes({"temporal": {"factors": "R=1, S=1", "permutation": ["S", "R"]}}), {"version": 0.4})
    t = _target(flat, "buf", "temporal")
    assert t["factors"] == "R=1,S=1" and t["permutation"] == "SR"


@pytest.mark.parametrize("first", ["component", "spatial"])
def test_the_first_node_must_be_a_non_spatial_container(first):
    """flatten: the top node is a !Container without a spatial mesh (timeloopfe's top level)."""
    from coexplore.arch.flatten import flatten
    from coexplore.arch.timeloop_yaml import Container
    nodes = _nodes({})
    if first == "component":
        nodes = nodes[1:]
    else:
        nodes[0] = Container(name="sys", spatial={"meshX": 2})
    with pytest.raises(CoexploreError) as info:
        flatten(nodes, {"version": 0.4})
    assert info.value.key == "architecture.nodes[0]"


# ------------------------------------------------------------------ bundled workloads vs the papers
def _wl(name: str):
    return load_workload(find_workload(name))


# layers with a stride above 1 (all others stride 1): He et al. 2016 (v1: on branch2a and branch1 of
# each stage's first block; torchvision's v1.5 on branch2b), Sandler et al. 2018 Table 2 (s = 2 on
# the first block of the 24-, 32-, 64- and 160-channel stages: blocks 2, 3, 4, 6), Krizhevsky et al.
# 2012 (conv1 stride 4), Simonyan and Zisserman 2015 (every conv stride 1)
STRIDED = {
    "resnet50": {"conv1": 2, **{f"res{s}a_branch{b}": 2 for s in "345" for b in ("1", "2a")}},
    "resnet50_v1_5": {"conv1": 2, **{f"res{s}a_branch{b}": 2 for s in "345" for b in ("1", "2b")}},
    "mobilenet_v2": {"conv1": 2, **{f"block{b}_1_dw": 2 for b in (2, 3, 4, 6)}},
    "mobilenet_v2_grouped": {"conv1": 2, **{f"block{b}_1_dw": 2 for b in (2, 3, 4, 6)}},
    "alexnet": {"conv1": 4},
    "vgg16": {},
    "bert_base": {},
    "dlrm_mlp": {},
}


@pytest.mark.parametrize("name", sorted(STRIDED))
def test_strides_are_the_published_ones_and_square(name):
    """Each bundled network's strided layers are the paper's (see STRIDED); images are square, so
    Hstride = Wstride and P = Q for every convolution; no layer is dilated."""
    wl = _wl(name)
    strided = {lay.name: lay.instance["Wstride"] for lay in wl if lay.instance["Wstride"] != 1}
    assert strided == STRIDED[name]
    for lay in wl:
        i = lay.instance
        assert i["Hstride"] == i["Wstride"] and i["Wdilation"] == i["Hdilation"] == 1, lay.name
        if i["R"] > 1:
            assert i["P"] == i["Q"] and i["R"] == i["S"], lay.name


def test_vgg16_is_configuration_d_layer_for_layer():
    """Simonyan and Zisserman 2015, configuration D: 3x3 convolutions 64,64 | 128,128 | 256 x3 | 512 x3 |
    512 x3 on 224, 112, 56, 28, 14 maps, then FC 7*7*512 -> 4096 -> 4096 -> 1000; MACs summed from that
    (15,470,264,320: the 15.5 G of Sze et al.)."""
    blocks = [(224, [64, 64]), (112, [128, 128]), (56, [256] * 3), (28, [512] * 3), (14, [512] * 3)]
    want, c = [], 3
    for size, widths in blocks:
        for m in widths:
            want.append((c, m, 3, 3, size, size, 1))
            c = m
    want += [(7 * 7 * 512, 4096, 1, 1, 1, 1, 1), (4096, 4096, 1, 1, 1, 1, 1), (4096, 1000, 1, 1, 1, 1, 1)]
    wl = _wl("vgg16")
    got = [(lay.instance["C"], lay.instance["M"], lay.instance["R"], lay.instance["S"], lay.instance["P"],
            lay.instance["Q"], lay.count) for lay in wl]
    assert got == want
    assert wl.total_macs == sum(c * m * r * s * p * q for c, m, r, s, p, q, _ in want) == 15_470_264_320


def test_alexnet_is_the_two_tower_network_layer_for_layer():
    """Krizhevsky et al. 2012 (two GPU towers): conv1 96 11x11/4 -> 55x55; conv2 256 5x5 in 2 groups of
    48 -> 128 on 27x27; conv3 384 3x3 over all 256 channels; conv4 384 and conv5 256 3x3 in 2 groups
    (192 -> 192, 192 -> 128) on 13x13; FC 6*6*256 -> 4096 -> 4096 -> 1000."""
    want = [(3, 96, 11, 55, 1), (48, 128, 5, 27, 2), (256, 384, 3, 13, 1), (192, 192, 3, 13, 2),
            (192, 128, 3, 13, 2), (9216, 4096, 1, 1, 1), (4096, 4096, 1, 1, 1), (4096, 1000, 1, 1, 1)]
    got = [(lay.instance["C"], lay.instance["M"], lay.instance["R"], lay.instance["P"], lay.count)
           for lay in _wl("alexnet")]
    assert got == want


def test_layers_differing_only_in_stride_are_different_problems(tmp_path):
    """Layer.key: a stride changes the input tile (a different problem for the mapper), so two layers
    that differ only in Wstride/Hstride are two unique layers, while an identical copy is one."""
    text = ("workload:\n  layers:\n"
            "  - {name: a, instance: {C: 8, M: 8, R: 3, S: 3, P: 7, Q: 7}}\n"
            "  - {name: b, instance: {C: 8, M: 8, R: 3, S: 3, P: 7, Q: 7, Wstride: 2, Hstride: 2}}\n"
            "  - {name: c, count: 2, instance: {C: 8, M: 8, R: 3, S: 3, P: 7, Q: 7}}\n")
    (tmp_path / "w.yaml").write_text(text)
    wl = load_workload(tmp_path / "w.yaml")
    assert [(lay.name, n) for lay, n in wl.unique_layers()] == [("a", 3), ("b", 1)]


# ------------------------------------------------------------------ system YAMLs
def _system(**over) -> dict:
    doc = {"system": {"dram": {"bandwidth_GBps": 25.6}, "cores": [{"name": "a", "template": "simba"}]}}
    doc["system"].update(over)
    return doc


def _refused(doc: dict, key: str, expected_part: str = "") -> CoexploreError:
    with pytest.raises(CoexploreError) as info:
        spec = parse_system(doc, file="sys.yaml")
        build_system(spec)
        check_sweep(spec)
    assert info.value.file == "sys.yaml" and info.value.key == key, info.value.format()
    assert expected_part in (info.value.expected or ""), info.value.format()
    return info.value


def test_system_defaults_are_the_documented_ones():
    """Module docstring of spec.system: clock 1 GHz, DRAM LPDDR4 x64 unless given; they reach every
    core's DRAM level and cycle time."""
    spec = parse_system(_system())
    assert (spec.clock_GHz, spec.dram.type, spec.dram.width) == (1.0, "LPDDR4", 64)
    core = build_system(spec).cores["a"]
    dram = _levels(core)["DRAM"]
    assert (dram["type"], dram["width"]) == ("LPDDR4", 64)
    assert core.variables["global_cycle_seconds"] == pytest.approx(1e-9)


def test_no_offchip_bandwidth_is_refused():
    """The shared bandwidth is given exactly once: neither bandwidth_GBps nor bytes_per_cycle is an error
    naming system.dram.bandwidth_GBps (not a crash later)."""
    _refused(_system(dram={"type": "LPDDR4"}), "system.dram.bandwidth_GBps", "exactly one")


@pytest.mark.parametrize("over,key", [
    ({"clock_GHz": float("inf")}, "system.clock_GHz"),
    ({"dram": {"bandwidth_GBps": float("inf")}}, "system.dram.bandwidth_GBps"),
    ({"cores": [{"name": "a", "template": "simba", "grid": [2, 0]}]}, "system.cores[0].grid"),
    ({"cores": [{"name": "a", "template": "simba", "grid": [True, 2]}]}, "system.cores[0].grid"),
    ({"cores": [{"name": "a", "template": "simba", "count": 10_001}]}, "system.cores"),
])
def test_values_outside_the_schema_are_refused(over, key):
    """Numbers are finite and positive, a grid is two positive integers (not booleans), and a system has
    at most 10,000 cores (docs/readme_arch.md)."""
    _refused(_system(**over), key)


def test_ten_thousand_cores_are_allowed():
    """At most 10,000 cores: exactly 10,000 is accepted."""
    assert parse_system(_system(cores=[{"name": "a", "template": "simba", "count": 10_000}])).n_cores == 10_000


@pytest.mark.parametrize("param,value,system_key", [
    ("clock_GHz", 2.0, "system.clock_GHz"), ("dram_type", "HBM2", "system.dram.type"),
    ("dram_width", 128, "system.dram.width")])
def test_system_wide_settings_are_not_core_parameters(param, value, system_key):
    """arch.system: the clock and the shared DRAM's type and width belong to the system: a core giving
    them in params is refused, naming the core's key and where to set them."""
    doc = _system(cores=[{"name": "a", "template": "simba", "params": {param: value}}])
    _refused(doc, f"system.cores[0].params.{param}", system_key)


def test_a_word_size_the_shared_dram_width_does_not_hold_names_the_cores_word_bits():
    """64-bit DRAM accesses hold no whole 24-bit word: the error names the core's word_bits (what the
    core's author wrote) and the shared width."""
    doc = _system(cores=[{"name": "a", "template": "eyeriss",
                          "params": {"word_bits": 24, "glb_width": 48, "ifmap_spad_width": 24,
                                     "weights_spad_width": 24}}])
    _refused(doc, "system.cores[0].params.word_bits", "system.dram.width")


def test_a_shared_dram_width_no_core_word_divides_names_the_system_key():
    """A system DRAM width of 60 bits holds no whole 8-bit word of the template default: the error
    names system.dram.width, where the value was written (not the core's params)."""
    _refused(_system(dram={"bandwidth_GBps": 25.6, "width": 60}), "system.dram.width")


def test_a_sweep_axis_may_set_a_parameter_of_a_core_without_params():
    """A sweep path cores.<name>.params.<p> works for a template core written without params:."""
    doc = _system(cores=[{"name": "a", "template": "eyeriss"}])
    doc["sweep"] = {"axes": {"cores.a.params.glb_depth": [4096, 8192]}}
    spec = parse_system(doc)
    check_sweep(spec)
    point = spec.at_point({"cores.a.params.glb_depth": 4096})
    assert _levels(build_system(point).cores["a"])["shared_glb"]["depth"] == 4096


# ------------------------------------------------------------------ headers and tables
def test_the_written_files_name_the_changed_parameters_only():
    """The files' header lists the parameters changed from the template defaults (and only those);
    a core at its defaults says none."""
    changed = build_core("simba", {"glb_depth": 4096, "pe_mesh_x": 8})
    head = [line for line in changed.arch_yaml().splitlines() if line.startswith("#")]
    said = next(line for line in head if "parameters changed" in line)
    assert "glb_depth=4096" in said and "pe_mesh_x=8" in said and "glb_width" not in said
    assert "parameters changed from the template defaults: none" in build_core("eyeriss").processed_yaml()


def test_given_tables_of_the_core_folder_come_before_the_shared_ones(tmp_path):
    """docs/readme_arch.md (--ert-from DIR): DIR/<core>/ERT.yaml is used before DIR/ERT.yaml; here DIR
    holds eyeriss_like's corpus tables and DIR/simba simba_like's, and the simba core gets its own."""
    import shutil
    from coexplore.arch.tables import find_given_tables
    corpus = Path(__file__).parent / "data" / "timeloop_corpus" / "arches"
    (tmp_path / "simba").mkdir()
    for name in ("ERT.yaml", "ART.yaml"):
        shutil.copy(corpus / "eyeriss_like" / name, tmp_path / name)
        shutil.copy(corpus / "simba_like" / name, tmp_path / "simba" / name)
    ert, art = find_given_tables(build_core("simba"), tmp_path)
    assert (ert, art) == (tmp_path / "simba" / "ERT.yaml", tmp_path / "simba" / "ART.yaml")
    ert, art = find_given_tables(build_core("eyeriss"), tmp_path)      # no eyeriss/ folder: DIR's
    assert ert == tmp_path / "ERT.yaml"


def test_given_tables_need_both_the_ert_and_the_art(tmp_path):
    """A folder with an ERT but no ART beside it is not a given table (both files are required)."""
    import shutil
    from coexplore.arch.tables import find_given_tables
    corpus = Path(__file__).parent / "data" / "timeloop_corpus" / "arches" / "simba_like"
    shutil.copy(corpus / "ERT.yaml", tmp_path / "ERT.yaml")
    with pytest.raises(CoexploreError) as info:
        find_given_tables(build_core("simba"), tmp_path)
    assert "ART.yaml" in info.value.expected


def test_core_area_counts_every_instance():
    """art_area_mm2: one copy's area is the sum over entries of instances x area per instance:
    4 x 100 um^2 + 16 x 10 um^2 = 560 um^2 = 0.00056 mm^2."""
    from coexplore.arch.tables import art_area_mm2
    art = {"ART": {"tables": [{"name": "sys_top_level.buf[1..4]", "area": 100.0},
                              {"name": "sys_top_level.mac[1..16]", "area": 10.0}]}}
    assert art_area_mm2(art) == pytest.approx(560e-6)


def test_a_coefficient_left_out_takes_the_shapes_default(tmp_path):
    """Workloads: coefficients left out take the shape's defaults, as in Timeloop: a shape whose
    Wstride defaults to 2 gives a 7-wide output of a 3-wide filter a (7-1)*2 + 3 = 15-wide input."""
    text = ("shape:\n  dimensions: [C, R, P]\n  coefficients: [{name: Wstride, default: 2}]\n"
            "  data_spaces:\n  - {name: Weights, projection: [[[C]], [[R]]]}\n"
            "  - {name: Inputs, projection: [[[C]], [[R], [P, Wstride]]]}\n"
            "  - {name: Outputs, projection: [[[P]]], read_write: true}\n"
            "workload:\n  layers:\n  - {name: a, instance: {C: 2, R: 3, P: 7}}\n")
    (tmp_path / "w.yaml").write_text(text)
    layer = load_workload(tmp_path / "w.yaml").layers[0]
    assert layer.instance["Wstride"] == 2
    assert layer.dataspace_sizes()["Inputs"] == 2 * 15


def test_read_write_counts_in_the_problem_key_only_when_true():
    """Layer.key: a shape's read_write: true (a data space the model updates) makes another problem;
    an explicit read_write: false is the same as leaving it out."""
    from coexplore.spec.workload import CNN_LAYER_SHAPE, Layer
    inst = {"C": 2, "M": 2, "R": 1, "S": 1, "N": 1, "P": 2, "Q": 2,
            "Wstride": 1, "Hstride": 1, "Wdilation": 1, "Hdilation": 1}
    shape = copy.deepcopy(CNN_LAYER_SHAPE)
    out = next(ds for ds in shape["data_spaces"] if ds["name"] == "Outputs")
    assert out["read_write"] is True
    absent, false = copy.deepcopy(shape), copy.deepcopy(shape)
    next(ds for ds in absent["data_spaces"] if ds["name"] == "Outputs").pop("read_write")
    next(ds for ds in false["data_spaces"] if ds["name"] == "Outputs")["read_write"] = False
    key = {n: Layer("x", dict(inst), shape=s).key() for n, s in (("true", shape), ("absent", absent), ("false", false))}
    assert key["absent"] == key["false"] != key["true"]


def test_the_batch_dimension_multiplies_the_macs():
    """Layer.macs is the product of every dimension's bound, N (the batch) included: C 2 x M 3 x N 4 x
    P 5 = 120 (the bundled networks are all batch 1, so their totals do not show it)."""
    from coexplore.spec.workload import Layer
    inst = {"C": 2, "M": 3, "R": 1, "S": 1, "N": 4, "P": 5, "Q": 1,
            "Wstride": 1, "Hstride": 1, "Wdilation": 1, "Hdilation": 1}
    layer = Layer("x", inst, count=2)
    assert (layer.macs, layer.total_macs) == (120, 240)


def test_a_component_timeloop_does_not_model_is_left_out():
    """flatten, as timeloopfe/Timeloop: a component whose class names no buffer and no compute unit
    (here a 'wire') gets no level and no constraint."""
    from coexplore.arch.flatten import flatten
    from coexplore.arch.timeloop_yaml import Component
    nodes = _nodes({})
    nodes.insert(2, Component(name="link", **{"class": "wire"}, attributes={"width": 8}))
    flat = flatten(nodes, {"version": 0.4})
    assert flat.levels == ("DRAM", "buf", "mac")
    assert all(t["target"] != "link" for t in flat.constraints["architecture_constraints"]["targets"])


def test_keep_and_bypass_both_given_are_written_as_given():
    """flatten: only a missing half is completed; keep [Inputs] with bypass [Weights] leaves Outputs to
    the mapper (neither kept nor bypassed), as timeloopfe writes it."""
    from coexplore.arch.flatten import flatten
    flat = flatten(_nodes({"dataspace": {"keep": ["Inputs"], "bypass": ["Weights"]}}), {"version": 0.4})
    t = _target(flat, "buf", "bypass")
    assert (t["keep"], t["bypass"]) == (["Inputs"], ["Weights"])


@pytest.mark.parametrize("ref,template", [("simba_like", "simba"), ("eyeriss_like", "eyeriss")])
def test_top_level_attributes_are_in_the_corpus_order(ref, template):
    """processed.yaml file for file: the top subtree's attributes come in the order timeloopfe writes
    them (version, technology, global_cycle_seconds, then the top container's, then the defaults)."""
    expected = yaml.safe_load((ARCHES / ref / "processed.yaml").read_text())
    got = build_core(template).flattened().processed
    assert list(got["architecture"]["subtree"][0]["attributes"]) == \
        list(expected["architecture"]["subtree"][0]["attributes"])


def test_a_top_container_attribute_wins_over_the_global_variable():
    """flatten: the top subtree's attributes are the global variables overlaid with the top container's
    own (a container that says technology 65nm is at 65nm whatever the variable says)."""
    from coexplore.arch.flatten import flatten
    nodes = _nodes({})
    nodes[0]["attributes"]["technology"] = "65nm"
    flat = flatten(nodes, {"version": 0.4, "technology": "45nm"})
    assert flat.processed["architecture"]["subtree"][0]["attributes"]["technology"] == "65nm"


def test_components_count_the_instances_of_each_level():
    """CoreArch.components: simba_like's instances, as the corpus ART names them: 1 DRAM and global
    buffer, 16 PEInputBuffers, 64 weight/accumulator buffers, 256 weight registers and MACs."""
    comps = {c["name"]: c for c in build_core("simba").components()}
    assert {n: comps[n]["instances"] for n in ("DRAM", "GlobalBuffer", "PEInputBuffer", "PEWeightBuffer",
                                                "PEAccuBuffer", "PEWeightRegs", "mac")} == \
        {"DRAM": 1, "GlobalBuffer": 1, "PEInputBuffer": 16, "PEWeightBuffer": 64, "PEAccuBuffer": 64,
         "PEWeightRegs": 256, "mac": 256}
    assert comps["mac"]["full_name"] == "System_top_level.mac[1..256]"


def test_a_system_core_is_named_after_its_entry_and_finds_its_tables_by_that_name(tmp_path):
    """A system core keeps the name its entry gives (`left`, not the template's), and --ert-from finds
    DIR/<core name>/ERT.yaml for it."""
    import shutil
    from coexplore.arch.tables import find_given_tables
    doc = _system(cores=[{"name": "left", "template": "simba"}])
    core = build_system(parse_system(doc)).cores["left"]
    assert core.name == "left" and build_core("simba", name="right").name == "right"
    corpus = Path(__file__).parent / "data" / "timeloop_corpus" / "arches"
    (tmp_path / "left").mkdir()
    for name in ("ERT.yaml", "ART.yaml"):
        shutil.copy(corpus / "eyeriss_like" / name, tmp_path / name)
        shutil.copy(corpus / "simba_like" / name, tmp_path / "left" / name)
    assert find_given_tables(core, tmp_path)[0] == tmp_path / "left" / "ERT.yaml"


def test_a_given_art_must_list_the_spatial_levels_too(tmp_path):
    """tables.required_names: the ERT prices real components only, but the ART lists every level,
    the inter_*_spatial ones included (as the corpus' ART does): an ART without one is refused."""
    import shutil
    from coexplore.arch.tables import find_given_tables
    corpus = Path(__file__).parent / "data" / "timeloop_corpus" / "arches" / "simba_like"
    shutil.copy(corpus / "ERT.yaml", tmp_path / "ERT.yaml")
    art = yaml.safe_load((corpus / "ART.yaml").read_text())
    art["ART"]["tables"] = [t for t in art["ART"]["tables"] if "inter_reg_mac_spatial" not in t["name"]]
    (tmp_path / "ART.yaml").write_text(yaml.safe_dump(art))
    with pytest.raises(CoexploreError) as info:
        find_given_tables(build_core("simba"), tmp_path)
    assert "inter_reg_mac_spatial" in info.value.message


@pytest.mark.parametrize("layer,key", [("{name: a, count: true, instance: {C: 3}}", "workload.layers[0].count"),
                                       ("{name: a, instance: {C: true}}", "workload.layers[0].instance.C")])
def test_booleans_are_not_counts_or_bounds(tmp_path, layer, key):
    """YAML's true is not the integer 1: a count or a bound written true is refused by key."""
    (tmp_path / "w.yaml").write_text(f"workload: {{layers: [{layer}]}}\n")
    with pytest.raises(CoexploreError) as info:
        load_workload(tmp_path / "w.yaml")
    assert info.value.key == key and "positive integer" in info.value.expected


def test_a_missing_layer_lists_the_first_twenty_names_and_says_there_are_more():
    """Workload.layer: an unknown name lists the first 20 layer names, then ', ...' when there are more
    (bert_base has 72 layers; vgg16's 16 are all listed)."""
    from coexplore.spec.workload import LayerNotFound
    with pytest.raises(LayerNotFound) as info:
        _wl("bert_base").layer("nope")
    assert info.value.expected.endswith(", ...") and info.value.expected.count(",") == 20
    with pytest.raises(KeyError) as info:
        _wl("vgg16").layer("nope")
    assert info.value.expected.endswith("fc8")


def test_a_sweep_value_given_twice_is_refused():
    """README: a sweep axis gives no value twice (each point would run twice)."""
    doc = _system()
    doc["sweep"] = {"axes": {"cores.a.params.glb_depth": [1024, 2048, 1024]}}
    err = _refused(doc, "sweep.axes.cores.a.params.glb_depth", "distinct")
    assert "1024" in err.message


def test_arch_yaml_writes_scalar_lists_in_flow_style_as_the_exercises_do():
    """timeloop_yaml: lists of scalars are written in flow style, as the exercises' simba_like arch.yaml
    writes them (`keep: [Inputs, Outputs]`, `permutation: [M, C, R, S, P, Q, N]`)."""
    text = build_core("simba").arch_yaml()
    corpus = (ARCHES / "simba_like" / "arch.yaml").read_text()
    for flow in ("keep: [Inputs, Outputs]", "bypass: [Weights, Outputs]", "permutation: [M, C, R, S, P, Q, N]"):
        assert flow in corpus and flow in text


def test_a_bare_tag_reads_as_an_empty_node():
    """A tag with no body (`- !Nothing`, `- !Parallel`) reads as an empty node of that kind."""
    from coexplore.arch import timeloop_yaml
    doc = timeloop_yaml.load("nodes:\n- !Nothing\n- !Parallel\n")
    assert [type(n).__name__ for n in doc["nodes"]] == ["Nothing", "Parallel"]
    assert all(len(n) == 0 for n in doc["nodes"])


def _resnet50_layers(v1_5: bool) -> list[tuple]:
    """ResNet-50 from He et al. 2016 Table 1: conv1 7x7, 64 -> 112x112; stages conv2_x..conv5_x of 3, 4,
    6, 3 bottleneck blocks (1x1 w, 3x3 w, 1x1 4w; w = 64, 128, 256, 512) on 56, 28, 14, 7 maps, a
    projection shortcut (branch1, 1x1 4w) in each stage's first block; fc 2048 -> 1000. As (name, C,
    M, R, P), in the Caffe prototxt's order (branch1 first). v1.5 strides the 3x3 instead of the first
    1x1, so a stage's first branch2a still works on the previous stage's (twice as large) map."""
    out = [("conv1", 3, 64, 7, 112)]
    c_in = 64
    for stage, blocks, w, size in ((2, 3, 64, 56), (3, 4, 128, 28), (4, 6, 256, 14), (5, 3, 512, 7)):
        for b in "abcdef"[:blocks]:
            name = f"res{stage}{b}_branch"
            if b == "a":
                out.append((name + "1", c_in, 4 * w, 1, size))
            first = 2 * size if v1_5 and b == "a" and stage > 2 else size
            out += [(name + "2a", c_in, w, 1, first), (name + "2b", w, w, 3, size), (name + "2c", w, 4 * w, 1, size)]
            c_in = 4 * w
    return out + [("fc1000", 2048, 1000, 1, 1)]


@pytest.mark.parametrize("name", ["resnet50", "resnet50_v1_5"])
def test_resnet50_is_he_et_als_table_layer_for_layer(name):
    """Both ResNet-50 files hold He et al.'s 54 layers with their channels, filter sizes and output map
    sizes (P = Q); they differ only in where the stride sits (see STRIDED), hence in the map size of
    each stage's first branch2a."""
    got = [(lay.name, lay.instance["C"], lay.instance["M"], lay.instance["R"], lay.instance["P"])
           for lay in _wl(name)]
    assert got == _resnet50_layers(v1_5=name == "resnet50_v1_5")
    assert all(lay.instance["Q"] == lay.instance["P"] and lay.count == 1 for lay in _wl(name))


def test_two_problem_files_of_one_name_in_a_folder_are_refused(tmp_path):
    """A folder workload has one layer per file name: conv1.yaml beside conv1.yml is an error naming the
    folder, not two layers of one name."""
    src = Path(__file__).parent / "data" / "workloads" / "resnet50_conv1.yaml"
    (tmp_path / "conv1.yaml").write_text(src.read_text())
    (tmp_path / "conv1.yml").write_text(src.read_text())
    with pytest.raises(CoexploreError) as info:
        load_workload(tmp_path)
    assert info.value.file == str(tmp_path) and "conv1" in info.value.message


def test_empty_params_are_no_params():
    """A core's `params:` left empty (YAML null, e.g. every line under it commented out) means the
    template defaults, as leaving the key out does."""
    spec = parse_system(_system(cores=[{"name": "a", "template": "eyeriss", "params": None}]))
    assert spec.cores[0].params == {}
    assert build_system(spec).cores["a"].params.glb_depth == 16384


def test_every_combination_is_checked_up_to_256_points():
    """README: every combination of values is checked when a sweep has at most 256 points: 264-bit
    global-buffer rows are fine with 8-bit words and with 16-bit words on their own axis values checked
    alone, but not together; with a third axis of 64 values the sweep has exactly 256 points."""
    doc = _system(cores=[{"name": "a", "template": "eyeriss"}])
    doc["sweep"] = {"axes": {"cores.a.params.glb_width": [64, 264], "cores.a.params.word_bits": [8, 16],
                             "dram.bandwidth_GBps": [float(v) for v in range(1, 65)]}}
    _refused(doc, "sweep.axes", "multiple of 16")


def test_a_value_wrong_on_its_own_is_named_as_its_axis_in_any_place():
    """A sweep value that no combination could build is said as its own axis's (not as a point of
    two axes), wherever it stands in the axis' list (the review found only the first value checked)."""
    for values in ([8, 0], [0, 8]):
        doc = _system(cores=[{"name": "a", "template": "simba"}])
        doc["sweep"] = {"axes": {"cores.a.params.pe_mesh_x": values, "dram.bandwidth_GBps": [10.0, 20.0]}}
        err = _refused(doc, "sweep.axes.cores.a.params.pe_mesh_x")
        assert "value 0" in err.message
