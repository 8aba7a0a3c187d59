"""Specs: every architecture form parses to the same levels; problems, mappings, ERT; round trips."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.spec.architecture import architecture_to_v3, load_architecture, parse_architecture
from coexplore.spec.ert import load_ert, level_key
from coexplore.spec.mapping import from_arrays, load_mapping, parse_mapping, to_arrays
from coexplore.spec.problem import load_problem, parse_problem
from coexplore.spec.yamlio import dump_yaml, loads_yaml

from conftest import CORPUS

ARCHES = sorted(p.name for p in (CORPUS / "arches").iterdir())


def _key(arch):
    return [(lv.name, lv.cls, lv.instances, lv.mesh_x, lv.mesh_y, lv.size, lv.block_size, lv.read_bandwidth,
             lv.write_bandwidth, lv.is_dummy) for lv in arch.all_levels]


@pytest.mark.parametrize("name", ARCHES)
def test_v04_and_flattened_forms_agree(name):
    v4 = load_architecture(CORPUS / "arches" / name / "arch.yaml")
    v3 = load_architecture(CORPUS / "arches" / name / "processed.yaml")
    assert _key(v4) == _key(v3)
    # round trip through our own flattened writer
    again = parse_architecture(loads_yaml(dump_yaml(architecture_to_v3(v3))))
    assert _key(again) == _key(v3)


def test_simba_levels_match_corpus_readme():
    a = load_architecture(CORPUS / "arches" / "simba_like" / "processed.yaml")
    names = [(lv.name, lv.instances) for lv in a.levels] + [(a.compute.name, a.compute.instances)]
    assert names == [("DRAM", 1), ("GlobalBuffer", 1), ("inter_PE_spatial", 1), ("PEInputBuffer", 16),
                     ("inter_distributed_buffers_spatial", 16), ("PEWeightBuffer", 64), ("PEAccuBuffer", 64),
                     ("inter_reg_mac_spatial", 64), ("PEWeightRegs", 256), ("mac", 256)]
    regs = a.levels[-1]
    assert regs.size == 1   # depth 1 x 512 bits / (8 bits x cluster 64)


def test_problem_and_tensor_sizes():
    p = load_problem(CORPUS / "layers" / "alexnet_conv1.yaml")
    assert p.dims == ["C", "M", "R", "S", "N", "P", "Q"]
    assert p.macs == 105_415_200
    sizes = {ds.name: p.tensor_size(ds) for ds in p.dataspaces}
    assert sizes == {"Weights": 3 * 96 * 11 * 11, "Inputs": 3 * 227 * 227, "Outputs": 96 * 55 * 55}
    assert [ds.read_write for ds in p.dataspaces] == [False, False, True]


def test_ert_lookup_takes_max_and_maps_actions():
    ert = load_ert(CORPUS / "arches" / "simba_like" / "ERT.yaml")
    assert level_key("System_top_level.PEWeightRegs[1..256]") == "PEWeightRegs"
    assert ert.energy("GlobalBuffer", "read") == pytest.approx(51.870888)
    assert ert.energy("GlobalBuffer", "fill") == pytest.approx(66.310888)   # write
    assert ert.energy("mac", "compute") == pytest.approx(0.315)


def test_mapping_arrays_round_trip():
    arch = load_architecture(CORPUS / "arches" / "simba_like" / "processed.yaml")
    prob = load_problem(CORPUS / "layers" / "alexnet_conv3.yaml")
    case = next((CORPUS / "public" / "simba_like" / "alexnet_conv3").iterdir())
    m = load_mapping(case / "mapping.yaml", arch, prob)
    arr = to_arrays([m], arch, prob)
    back = to_arrays([parse_mapping(from_arrays(arr, 0, arch, prob), arch, prob)], arch, prob)
    for f in ("temporal", "spatial_x", "spatial_y", "perm", "keep"):
        assert np.array_equal(getattr(arr, f), getattr(back, f)), f
    # factor products equal the layer bounds
    assert np.array_equal(np.prod(arr.temporal * arr.spatial_x * arr.spatial_y, axis=1)[0], prob.bounds)


@pytest.mark.parametrize("text,key", [
    ("architecture: {version: 0.4}", "architecture.nodes"),
    ("nothing: 1", "architecture"),
    ("architecture:\n  version: 0.4\n  nodes:\n  - !Component {name: DRAM}\n", "class"),
])
def test_bad_architecture_names_key(text, key):
    with pytest.raises(CoexploreError) as e:
        parse_architecture(loads_yaml(text), "bad.yaml")
    assert "bad.yaml" in str(e.value) and key in str(e.value)


def test_malformed_yaml_names_file_and_line():
    with pytest.raises(CoexploreError) as e:
        loads_yaml("a: [1, 2\nb: 3", "x.yaml")
    assert "x.yaml" in str(e.value) and "line" in str(e.value)
    with pytest.raises(CoexploreError, match=r"line 2, column 1: found character '\\t'"):
        loads_yaml("a:\n\t- 1\n", "tab.yaml")     # the precise message, not libyaml's terser one


def test_fast_and_python_yaml_parsers_read_every_bundled_file_alike():
    """The files are parsed with libyaml where PyYAML has it; it must give exactly the documents
    (tags, YAML 1.2 floats, numbers vs text) the pure-Python reader gives."""
    import yaml
    from coexplore.spec import yamlio
    from coexplore.spec.template import is_template
    root = Path(__file__).resolve().parents[1]
    files = sorted(p for top in ("arch", "problems", "mappers", "tests/data")
                   for p in (root / top).rglob("*.yaml"))
    assert len(files) > 100
    for path in files:
        text = path.read_text(encoding="utf-8")
        if is_template(path, text) or "_cheatsheets" in path.parts:
            continue                   # Jinja2: YAML only once rendered; anchors defined twice: libyaml refuses
                                       # them, so the Python reader alone reads them (tests/test_templates.py)
        fast, slow = (yaml.load(text, Loader=loader) for loader in (yamlio._Loader, yamlio._PyLoader))
        assert fast == slow and repr(fast) == repr(slow), path


def test_bad_mapping_entries():
    arch = load_architecture(CORPUS / "arches" / "simba_like" / "processed.yaml")
    prob = load_problem(CORPUS / "layers" / "tiny_conv.yaml")
    for entry, msg in [({"target": "Nope", "type": "temporal", "factors": "C1"}, "unknown level 'Nope'"),
                       ({"target": "DRAM", "type": "temporal", "factors": "Z4"}, "unknown dimension 'Z'"),
                       ({"target": "DRAM", "type": "datatype", "keep": ["Psums"]}, "unknown dataspace 'Psums'")]:
        with pytest.raises(CoexploreError) as e:
            parse_mapping({"mapping": [entry]}, arch, prob, "m.yaml")
        assert msg in str(e.value) and "m.yaml" in str(e.value) and "mapping[0]" in str(e.value)


def test_bad_problem_bound():
    with pytest.raises(CoexploreError) as e:
        parse_problem({"problem": {"instance": {"C": 0, "K": 1, "R": 1, "S": 1, "N": 1, "P": 1, "Q": 1}}}, "p.yaml")
    assert "problem.instance.C" in str(e.value)


def _broken_problem(edit):
    import copy
    from coexplore.spec.yamlio import load_yaml
    data = copy.deepcopy(load_yaml(CORPUS / "layers" / "resnet50_res3a_2b.yaml"))
    edit(data["problem"])
    return data


@pytest.mark.parametrize("edit, key", [
    (lambda p: p["shape"]["data_spaces"][0].update(nme=p["shape"]["data_spaces"][0].pop("name")),
     "problem.shape.data_spaces[0]"),
    (lambda p: p["shape"]["data_spaces"][1].update(projecton=p["shape"]["data_spaces"][1].pop("projection")),
     "problem.shape.data_spaces[1]"),
    (lambda p: p["shape"]["data_spaces"][2].update(read_write="maybe"), "problem.shape.data_spaces[2].read_write"),
    (lambda p: p["shape"].update(data_spaces=5), "problem.shape.data_spaces"),
    (lambda p: p["shape"]["coefficients"][0].update(default="x"), "problem.shape.coefficients[0]"),
    (lambda p: p["shape"]["coefficients"][0].update(nam=p["shape"]["coefficients"][0].pop("name")),
     "problem.shape.coefficients[0]"),
    (lambda p: p.update(shape=5), "problem.shape"),
])
def test_malformed_problem_names_file_and_key(edit, key):
    with pytest.raises(CoexploreError) as e:
        parse_problem(_broken_problem(edit), "p.yaml")
    assert "p.yaml" in str(e.value) and key in str(e.value)


def test_nested_v03_tree_reads_as_timeloop_does():
    """Ranged components inside ranged subtrees multiply (PE[0..15] x PEWeightBuffer[0..3] = 64), and
    sizes, blocks and clusters are Timeloop's (its stats of the same exercise)."""
    import json
    from pathlib import Path
    d = Path(__file__).parent / "data" / "exercises_v3"
    ref = json.loads((d / "v3_bd_simba_like_alexnet1.specs.json").read_text())["levels"]
    arch = load_architecture(d / "v3_bd_simba_like_alexnet1.arch.yaml")
    assert arch.compute.instances == ref[arch.compute.name]["instances"]
    for lv in arch.levels:
        want = ref[lv.name]
        assert lv.instances == want["instances"], lv.name
        assert lv.mesh_x * lv.mesh_y == lv.instances
        for field in ("size", "block_size", "cluster_size", "word_bits"):
            if field in want:
                assert getattr(lv, field) == want[field], (lv.name, field)


def _one_buffer(attrs: str) -> str:
    return ("architecture:\n  version: 0.3\n  subtree:\n  - name: top\n    local:\n"
            "    - {name: DRAM, class: DRAM, attributes: {width: 64, datawidth: 8}}\n"
            f"    - {{name: buf, class: SRAM, attributes: {{{attrs}}}}}\n"
            "    - {name: mac, class: intmac, attributes: {datawidth: 8}}\n")


@pytest.mark.parametrize("attrs, block, cluster", [
    ("depth: 16, width: 64, datawidth: 8", 8, 1),                         # block from width
    ("depth: 16, width: 64, datawidth: 8, cluster_size: 2", 4, 2),
    ("depth: 16, width: 64, datawidth: 8, block_size: 2", 2, 4),          # cluster from width
    ("depth: 16, width: 64, datawidth: 8, block_size: 2, cluster_size: 4", 2, 4),
])
def test_width_block_and_cluster_follow_timeloop(attrs, block, cluster):
    arch = parse_architecture(loads_yaml(_one_buffer(attrs)), "t.yaml")
    buf = arch.levels[1]
    assert (buf.block_size, buf.cluster_size, buf.size) == (block, cluster, 16 * block)


@pytest.mark.parametrize("attrs, key", [
    ("depth: 16, width: 60, datawidth: 8, block_size: 2", "width"),       # Timeloop asserts divisibility
    ("depth: 16, width: 64, datawidth: 8, instances: 4", "instances"),    # one buffer, not 4
    ("depth: 16, width: 64, datawidth: 8, num_ports: 3", "num_ports"),
    ("depth: 16, width: 64, datawidth: 8, min_utilization: 2", "min_utilization"),
    ("depth: 16, width: 64, datawidth: 8, network_read: noc", "network_read"),
    ("depth: 16, width: 64, datawidth: 8, network_fill_latency: 1000", "network_fill_latency"),
    ("depth: 16, width: 64, datawidth: 8, network_drain_latency: 5", "network_drain_latency"),
    ("depth: 16, width: 64, datawidth: 8, per_dataspace_bandwidth_consumption_scale: {Inputs: 5}",
     "per_dataspace_bandwidth_consumption_scale"),
])
def test_unmodelled_or_inconsistent_attributes_are_refused(attrs, key):
    with pytest.raises(CoexploreError, match=key):
        parse_architecture(loads_yaml(_one_buffer(attrs)), "t.yaml")


def test_dram_depth_bounds_its_capacity_and_networks_are_refused():
    text = _one_buffer("depth: 16, width: 64, datawidth: 8").replace("{width: 64, datawidth: 8}",
                                                                     "{width: 64, datawidth: 8, depth: 1024}")
    assert parse_architecture(loads_yaml(text), "t.yaml").levels[0].size == 1024 * 8
    with pytest.raises(CoexploreError, match="cluster_size"):
        parse_architecture(loads_yaml(text.replace("depth: 1024", "cluster_size: 2")), "t.yaml")
    with pytest.raises(CoexploreError, match="network"):
        parse_architecture(loads_yaml(text.replace("class: SRAM", "class: SimpleMulticast")), "t.yaml")


def test_a_key_given_twice_is_refused_with_its_line():
    with pytest.raises(CoexploreError, match=r"line 4.*key 'depth' appears twice"):
        loads_yaml("buf:\n  attributes:\n    depth: 16\n    depth: 32\n", "a.yaml")


def test_problems_too_large_for_64_bit_counts_are_refused():
    from coexplore.spec.problem import DEFAULT_CNN_SHAPE
    big = {"C": 2 ** 20, "M": 2 ** 20, "R": 7, "S": 7, "N": 1024, "P": 1024, "Q": 1024}
    with pytest.raises(CoexploreError, match="too large"):
        parse_problem({"problem": {"shape": DEFAULT_CNN_SHAPE, "instance": big}}, "big.yaml")


def test_ert_tables_are_pooled_as_timeloop_reads_them():
    """Timeloop (topology.cpp, ParseAccelergyERT): repeated tables of one component pool their
    actions (largest energy); another component ending in the same level name replaces them."""
    from coexplore.spec.ert import parse_ert
    t = lambda name, e: {"name": name, "actions": [{"name": "read", "energy": e}]}
    same = parse_ert({"ERT": {"version": "0.4", "tables": [t("sys.PE[0..15].buf", 2.0), t("sys.PE[0..15].buf", 1.0)]}})
    assert same.energy("buf", "read") == 2.0
    other = parse_ert({"ERT": {"version": "0.4", "tables": [t("sys.PE[0..15].buf", 2.0), t("sys.PE[0..7].buf", 1.0)]}})
    assert other.energy("buf", "read") == 1.0


def test_ert_later_component_replaces_the_operations_it_prices():
    """A later table that prices `read` under another action name still replaces the earlier read;
    operations it does not price stay; an energy written `1e-3` (read by YAML as text) is a number."""
    from coexplore.spec.ert import parse_ert
    from coexplore.spec.yamlio import loads_yaml
    ert = parse_ert(loads_yaml("""
ERT:
  version: '0.4'
  tables:
  - name: sys.PE[0..15].buf
    actions: [{name: random_read, energy: 2.0}, {name: leak, energy: 1e-3}]
  - name: sys.PE[0..7].buf
    actions: [{name: read, energy: 1.0}]
"""))
    assert ert.energy("buf", "read") == 1.0 and ert.energy("buf", "leak") == 1e-3


@pytest.mark.parametrize("old, new, key", [("spatial:", "spatail:", "spatail"),
                                           ("constraints:", "constrants:", "constrants")])
def test_misspelt_v4_node_key_is_refused(tmp_path, old, new, key):
    """timeloopfe refuses keys it does not know; a silent drop would change the hardware or the mapspace."""
    text = (CORPUS / "arches" / "simba_like" / "arch.yaml").read_text()
    assert old in text
    f = tmp_path / "arch.yaml"
    f.write_text(text.replace(old, new, 1))
    with pytest.raises(CoexploreError) as e:
        load_architecture(f)
    assert f"unknown key '{key}'" in str(e.value) and str(f) in str(e.value)


@pytest.mark.parametrize("name, arch_file", [("GlobalBuffer[1..x]", "processed.yaml"),
                                             ("GlobalBuffer[3..1]", "processed.yaml"),
                                             ("PEInputBuffer[0..y]", "arch.yaml")])
def test_bad_instance_range_in_a_name_is_refused(tmp_path, name, arch_file):
    """A malformed `name[lo..hi]` is an error naming the key, not a level nobody can price."""
    src = CORPUS / "arches" / "simba_like" / arch_file
    text = src.read_text()
    base = name.split("[")[0]
    text, n = re.subn(rf"{base}(\[\d+\.\.\d+\])?$", name, text, count=1, flags=re.M)
    assert n == 1
    f = tmp_path / arch_file
    f.write_text(text)
    with pytest.raises(CoexploreError) as e:
        load_architecture(f)
    msg = str(e.value)
    assert f"bad instance range in name '{name}'" in msg and str(f) in msg and ".name" in msg


def test_yaml_numbers_in_exponent_notation_are_numbers():
    """PyYAML reads `5e1` and `1.5e3` as text (YAML 1.1); Timeloop and users read numbers."""
    from coexplore.spec.yamlio import loads_yaml
    got = loads_yaml("a: 5e1\nb: 1.5e3\nc: 1e-3\nd: 5\ne: name1e3\nf: 1e\n")
    assert got == {"a": 50.0, "b": 1500.0, "c": 0.001, "d": 5, "e": "name1e3", "f": "1e"}


def test_library_loading_warns_of_likely_typos(tmp_path):
    """What the CLI prints as a warning (Timeloop ignores it silently) is a CoexploreWarning from
    Python too: an unknown problem instance key; one that leaves a dimension without its bound is
    refused, as Timeloop asserts on it."""
    from coexplore.errors import CoexploreWarning
    from coexplore.model.inputs import load_context
    layer = CORPUS / "layers" / "tiny_conv.yaml"
    arch = CORPUS / "arches" / "simba_like" / "processed.yaml"
    typo = tmp_path / "typo.yaml"
    typo.write_text(re.sub(r"\bC: ", "C: 1, Cx: ", layer.read_text(), count=1))
    with pytest.warns(CoexploreWarning, match=r"Cx.*ignored"):
        ctx = load_context(arch, typo)
    assert ctx.problem.bounds[ctx.problem.dims.index("C")] == 1
    typo.write_text(re.sub(r"\bC: ", "Cx: ", layer.read_text(), count=1))
    with pytest.raises(CoexploreError, match="no bound for C; Cx is no dimension"):
        load_context(arch, typo)


def test_evaluate_and_encode_take_mapping_objects_or_refuse_clearly():
    from coexplore.mapspace.space import MapSpace
    from coexplore.model.inputs import load_context
    case = CORPUS / "public" / "simba_like" / "tiny_conv"
    exp = {p: json.loads((p / "expected.json").read_text()) for p in sorted(case.iterdir())}
    folder = next(p for p, e in exp.items() if e["valid"])
    ctx = load_context(CORPUS / "arches" / "simba_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml")
    m = ctx.load_mapping(folder / "mapping.yaml")
    assert ctx.evaluate(m).cycles[0] == exp[folder]["cycles"]
    assert list(ctx.evaluate([m, m]).cycles) == [exp[folder]["cycles"]] * 2
    ms = MapSpace(ctx.arch, ctx.problem, {})
    x = ms.sample(np.random.default_rng(0), 1)
    arrays = ms.decode(x)
    m2 = parse_mapping(from_arrays(arrays, 0, ctx.arch, ctx.problem), ctx.arch, ctx.problem, "m.yaml")
    assert np.array_equal(ms.encode(m2), ms.encode(arrays))
    for bad in (5, "mapping.yaml", [1, 2]):
        with pytest.raises(CoexploreError, match="MappingArrays"):
            ctx.evaluate(bad)
        with pytest.raises(CoexploreError, match="MappingArrays"):
            ms.encode(bad)


def test_result_files_are_written_with_the_users_umask(tmp_path):
    """Atomic writes go through a private temporary file: the result gets the mode a plain open()
    would give it (0644 under umask 022), not the temporary file's 0600."""
    import os
    import stat
    from coexplore.spec.yamlio import write_text
    old = os.umask(0o022)
    try:
        write_text(tmp_path / "r.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]          # no temporary file left


def _buffer_of(attrs: dict):
    from coexplore.spec.architecture import parse_architecture
    doc = {"architecture": {"version": 0.3, "subtree": [{"name": "s", "local": [
        {"name": "Buf", "class": "SRAM", "attributes": {"depth": 64, **attrs}},
        {"name": "mac", "class": "intmac", "attributes": {"datawidth": 8}}]}]}}
    return parse_architecture(doc, "a.yaml").levels[0]


@pytest.mark.parametrize("attrs, block, cluster", [
    ({"width": 64, "datawidth": 8}, 8, 1),                                   # width sets the block
    ({"memory_width": 64, "datawidth": 8}, 8, 1),
    ({"width": 48, "datawidth": 16, "cluster_size": 2}, 1, 2),              # width / cluster / datawidth, floored
    ({"width": 64, "datawidth": 8, "cluster_size": 1}, 8, 1),               # (timeloopfe's processed files)
    ({"width": 64, "datawidth": 8, "block_size": 4}, 4, 2),                 # width sets the cluster
    ({"memory_width": 64, "datawidth": 8, "block_size": 4}, 4, 2),          # under any of its names
    ({"width": 64, "datawidth": 8, "block_size": 2, "cluster_size": 4}, 2, 4),
    ({"datawidth": 8, "block_size": 2, "cluster_size": 3}, 2, 3)])         # no width: nothing to check
def test_widths_blocks_and_clusters_as_timeloop_derives_them(attrs, block, cluster):
    """Timeloop's BufferLevel::ParseSpecs (the version that reads memory_width / data_storage_width;
    block_size 1 when not given). With block_size and cluster_size both given their product must be
    the width: Timeloop stops otherwise (below)."""
    lv = _buffer_of(attrs)
    assert (lv.block_size, lv.cluster_size) == (block, cluster)


@pytest.mark.parametrize("attrs, key, says", [
    ({"width": 60, "datawidth": 8}, "Buf.attributes.width", "not a multiple of datawidth = 8"),
    ({"memory_width": 20, "datawidth": 8, "block_size": 2}, "Buf.attributes.memory_width",
     "not a multiple of datawidth x block_size = 16"),
    ({"width": 17, "datawidth": 8, "block_size": 1, "cluster_size": 1}, "Buf.attributes.width", "not a multiple"),
    ({"width": 64, "datawidth": 8, "block_size": 2, "cluster_size": 2}, "Buf.attributes.width",
     "block_size x datawidth x cluster_size = 32 is not width 64"),
    ({"width": 8, "datawidth": 8, "cluster_size": 2}, "Buf.attributes.width", "holds no 8-bit word")])
def test_widths_timeloop_stops_on_are_refused(attrs, key, says):
    with pytest.raises(CoexploreError) as err:
        _buffer_of(attrs)
    assert err.value.key == key and says in err.value.message and err.value.file == "a.yaml"


def test_a_v03_mesh_given_by_meshy_alone_has_meshx_the_quotient():
    """Timeloop's ValidateTopology: instances and meshY given, meshX = instances / meshY (must divide)."""
    from coexplore.spec.architecture import parse_architecture

    def arch(meshy):
        return {"architecture": {"version": 0.3, "subtree": [{"name": "s", "local": [
            {"name": "Buf[0..15]", "class": "SRAM", "attributes": {"depth": 64, "width": 8, "datawidth": 8,
                                                                   "meshY": meshy}},
            {"name": "mac[0..15]", "class": "intmac", "attributes": {"datawidth": 8, "meshY": meshy}}]}]}}
    buf = parse_architecture(arch(4), "a.yaml").levels[0]
    assert (buf.mesh_x, buf.mesh_y) == (4, 4)
    with pytest.raises(CoexploreError, match="not divisible by meshY 5"):
        parse_architecture(arch(5), "a.yaml")
