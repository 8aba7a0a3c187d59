"""Bundled workloads (problems/*.yaml): they load, match published figures and the corpus layers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from coexplore.errors import CoexploreError, CoexploreNote
from coexplore.spec.workload import (CNN_LAYER_SHAPE, Layer, bundled_workloads, find_workload,
                                     layer_problem, load_workload, problem_yaml, read_problem,
                                     write_problem, write_problems)

DATA = Path(__file__).parent / "data" / "workloads"
NETWORKS = ("alexnet", "bert_base", "dlrm_mlp", "mobilenet_v2", "resnet50", "resnet50_v1_5",
            "vgg16")


def _wl(name: str):
    return load_workload(find_workload(name))


def _weights(layer: Layer) -> int:
    return layer.dataspace_sizes()["Weights"] * layer.count


def test_every_bundled_file_loads():
    names = {p.stem for p in bundled_workloads()}
    assert set(NETWORKS) <= names
    for path in bundled_workloads():
        wl = load_workload(path)
        assert wl.name == path.stem and len(wl) > 0 and wl.source
        assert len({layer.name for layer in wl}) == len(wl)
        grouped = wl.name.endswith("_grouped")          # the CNN shape with a G dimension (the exercises')
        for layer in wl:
            assert layer.shape == CNN_LAYER_SHAPE or grouped
            assert list(layer.instance) == ["C", "M", "R", "S", "N", "P", "Q", *(["G"] if grouped else []),
                                            "Wstride", "Hstride", "Wdilation", "Hdilation"]


# Published multiply-accumulate counts at 224x224, batch 1:
#   Sze, Chen, Yang, Emer, "Efficient Processing of Deep Neural Networks: A Tutorial and Survey",
#   Proc. IEEE 2017, Table (AlexNet 724M, VGG-16 15.5G, ResNet-50 3.9G MACs);
#   torchvision model docs (ResNet-50 v1.5: 4.09 GFLOPS, i.e. multiply-adds);
#   Sandler et al. 2018 (MobileNetV2: 300M multiply-adds).
@pytest.mark.parametrize("name,published,rel", [
    ("alexnet", 724e6, 0.01),
    ("vgg16", 15.5e9, 0.01),
    ("resnet50", 3.9e9, 0.02),
    ("resnet50_v1_5", 4.09e9, 0.01),
    ("mobilenet_v2", 300e6, 0.01),
    ("mobilenet_v2_grouped", 300e6, 0.01),
])
def test_macs_match_published_figures(name, published, rel):
    assert _wl(name).total_macs == pytest.approx(published, rel=rel)


# Published parameter counts (they include biases / batch-norm, which are not MAC weights,
# hence the 1.5 % tolerance; MobileNet-V2's 34,112 BN parameters are 1.0 %): torchvision
# resnet50 25,557,032; vgg16 138,357,544; mobilenet_v2 3,504,872; AlexNet (two towers, Caffe
# bvlc_alexnet) 60,965,224 (Sze et al.: 61M).
@pytest.mark.parametrize("name,published", [
    ("resnet50", 25_557_032), ("resnet50_v1_5", 25_557_032), ("vgg16", 138_357_544),
    ("mobilenet_v2", 3_504_872), ("mobilenet_v2_grouped", 3_504_872), ("alexnet", 60_965_224),
])
def test_weight_counts_match_published_parameter_counts(name, published):
    wl = _wl(name)
    total = sum(_weights(layer) for layer in wl)
    assert total == pytest.approx(published, rel=0.015)
    assert total < published                          # biases and BN are extra


def test_bert_base_gemms():
    wl = _wl("bert_base")
    seq, d, heads, ff, n_layers = 128, 768, 12, 3072, 12     # BERT-base, Devlin et al. 2019
    per_layer = 4 * seq * d * d + 2 * seq * seq * d + 2 * seq * d * ff
    assert wl.total_macs == n_layers * per_layer
    for layer in wl:                                        # GEMMs: R = S = Q = N = 1
        assert [layer.instance[k] for k in "RSQN"] == [1, 1, 1, 1]
        assert layer.instance["P"] == seq
    score = wl.layer("enc1_attn_score")
    assert (score.instance["C"], score.instance["M"], score.count) == (d // heads, seq, heads)
    # parameters of the projection/FFN GEMMs: BERT-base has 109,482,240 parameters, of which
    # embeddings 23,837,184 and pooler 590,592; the encoder's 85,054,464 include 119,808
    # biases and layer-norm parameters.
    params = sum(_weights(layer) for layer in wl if "attn_score" not in layer.name
                 and "attn_context" not in layer.name)
    assert params == pytest.approx(109_482_240 - 23_837_184 - 590_592, rel=0.002)


def test_dlrm_mlps():
    wl = _wl("dlrm_mlp")
    # MLPerf DLRM (Terabyte): bottom 13-512-256-128; top input = 128 dense + C(27, 2) dot
    # products of the 26 embeddings and the dense vector, then 1024-1024-512-256-1
    bottom = [13, 512, 256, 128]
    top = [128 + math.comb(27, 2), 1024, 1024, 512, 256, 1]
    chain = list(zip(bottom, bottom[1:])) + list(zip(top, top[1:]))
    assert [(lay.instance["C"], lay.instance["M"]) for lay in wl] == chain
    batch = wl.layers[0].instance["P"]
    assert wl.total_macs == batch * sum(a * b for a, b in chain)


def test_mobilenet_v2_depthwise_is_count_times_single_channel():
    wl = _wl("mobilenet_v2")
    layers = list(wl)
    dws = [i for i, lay in enumerate(layers) if lay.name.endswith("_dw")]
    assert len(dws) == 17                                   # one per inverted-residual block
    for i in dws:
        dw, prev, nxt = layers[i], layers[i - 1], layers[i + 1]
        assert (dw.instance["C"], dw.instance["M"], dw.instance["R"]) == (1, 1, 3)
        assert dw.count == prev.instance["M"] == nxt.instance["C"]
        assert dw.instance["P"] * dw.instance["Wstride"] == prev.instance["P"]
    # channel chain of the sequential network: each layer reads what the previous wrote
    for prev, cur in zip(layers, layers[1:]):
        produced = prev.instance["M"] * prev.count
        consumed = cur.instance["C"] * cur.count
        assert produced == consumed, (prev.name, cur.name)


@pytest.mark.parametrize("name", ["resnet50", "resnet50_v1_5"])
def test_resnet50_structure(name):
    wl = _wl(name)
    convs = [lay for lay in wl if lay.name != "fc1000"]
    assert len(convs) == 53 and sum(lay.name.endswith("branch1") for lay in convs) == 4
    conv1 = wl.layer("conv1").instance
    assert {k: conv1[k] for k in ("C", "M", "R", "S", "P", "Q", "Wstride")} == \
        {"C": 3, "M": 64, "R": 7, "S": 7, "P": 112, "Q": 112, "Wstride": 2}
    # every block's output (branch2c) has 4x the bottleneck width, stages halve the map size
    for stage, (width, size) in zip("2345", [(64, 56), (128, 28), (256, 14), (512, 7)]):
        for lay in convs:
            if lay.name.startswith(f"res{stage}") and lay.name.endswith("branch2c"):
                assert (lay.instance["C"], lay.instance["M"], lay.instance["P"]) == \
                    (width, 4 * width, size)
    fc = wl.layer("fc1000").instance
    assert (fc["C"], fc["M"]) == (2048, 1000)


def test_unique_layers_keep_total_counts():
    for name in NETWORKS:
        wl = _wl(name)
        uniq = wl.unique_layers()
        assert sum(n for _, n in uniq) == sum(lay.count for lay in wl)
        assert sum(lay.macs * n for lay, n in uniq) == wl.total_macs
        assert len({lay.key() for lay, _ in uniq}) == len(uniq)
    assert len(_wl("vgg16").unique_layers()) == 12        # conv3_2=3_3, 4_2=4_3, 5_1=5_2=5_3
    assert len(_wl("bert_base").unique_layers()) == 5     # qkv = attn_output shape


def test_input_tile_uses_sliding_window():
    conv1 = _wl("resnet50").layer("conv1")
    width = (112 - 1) * 2 + (7 - 1) * 1 + 1                 # (P-1)*Wstride + (R-1)*Wdil + 1
    assert conv1.dataspace_sizes() == {"Weights": 3 * 64 * 7 * 7, "Inputs": 3 * width * width,
                                       "Outputs": 64 * 112 * 112}


# the corpus layers (tests/data/workloads, copied from the Timeloop reference corpus)
CORPUS = {
    "alexnet_conv1": ("alexnet", "conv1"),
    "alexnet_conv3": ("alexnet", "conv3"),
    "bert_qkv": ("bert_base", "enc1_qkv"),
    "mobilenetv2_pw": ("mobilenet_v2", "block2_1_project"),
    "resnet50_conv1": ("resnet50", "conv1"),
    "resnet50_res2a_2a": ("resnet50", "res2a_branch2a"),
    "resnet50_res3a_2b": ("resnet50", "res3a_branch2b"),
    "vgg16_conv3_1": ("vgg16", "conv3_1"),
}


@pytest.mark.parametrize("corpus_name", sorted(CORPUS))
def test_corpus_layers_are_reproduced(corpus_name, tmp_path):
    ref_path = DATA / f"{corpus_name}.yaml"
    ref_text = ref_path.read_text()
    net, layer_name = CORPUS[corpus_name]
    layer = _wl(net).layer(layer_name)
    assert layer_problem(layer) == yaml.safe_load(ref_text)
    out = write_problem(layer, tmp_path / "p.yaml")
    assert out.read_text().splitlines()[1:] == ref_text.splitlines()[1:]   # header comment aside


@pytest.mark.parametrize("path", sorted(DATA.glob("*.yaml")), ids=lambda p: p.stem)
def test_corpus_problem_files_round_trip(path):
    text = path.read_text()
    layer = read_problem(path)
    header = text.splitlines()[0].removeprefix("# ")
    assert problem_yaml(layer, header=header) == text


def test_write_problems_writes_one_readable_file_per_layer(tmp_path):
    wl = _wl("alexnet")
    paths = write_problems(wl, tmp_path / "out")
    assert [p.name for p in paths] == [f"alexnet_{lay.name}.yaml" for lay in wl]
    for p, lay in zip(paths, wl):
        back = read_problem(p)
        assert back.instance == lay.instance and back.shape == lay.shape
    # the folder read back is the network: each layer as many times (a user study: AlexNet's grouped
    # layers, count 2, came back once, 28% of its MACs lost without a word)
    again = load_workload(tmp_path / "out")
    assert [lay.count for lay in again] == [lay.count for lay in wl] and again.total_macs == wl.total_macs
    assert any(lay.count > 1 for lay in wl)


# ----------------------------------------------------------------------------- bad input

GOOD_LAYER = "{name: a, count: 1, instance: {C: 3, M: 8, P: 4, Q: 4}}"


@pytest.mark.parametrize("text,key,expected_part", [
    ("- 1\n- 2\n", None, "top-level keys"),
    ("version: 0.4\n", "workload", "workload: {name, layers"),
    (f"workloads: {{layers: [{GOOD_LAYER}]}}\n", "workloads", "one of version, shape, workload"),
    (f"version: 0.3\nworkload: {{layers: [{GOOD_LAYER}]}}\n", "version", "0.4"),
    ("workload: {layers: []}\n", "workload.layers", "non-empty list"),
    (f"workload: {{name: 'a b', layers: [{GOOD_LAYER}]}}\n", "workload.name", "letters"),
    ("workload: {layers: [{name: a}]}\n", "workload.layers[0].instance",
     "bounds of the dimensions"),
    ("workload: {layers: [{name: a, instance: {C: 3, K: 8}}]}\n",
     "workload.layers[0].instance.K", "one of C, M, R, S, N, P, Q, Wstride"),
    ("workload: {layers: [{name: a, instance: {C: 0}}]}\n",
     "workload.layers[0].instance.C", "positive integer"),
    ("workload: {layers: [{name: a, instance: {C: '3'}}]}\n",
     "workload.layers[0].instance.C", "positive integer"),
    ("workload: {layers: [{name: a, instance: {C: 2.5}}]}\n",
     "workload.layers[0].instance.C", "positive integer"),
    ("workload: {layers: [{name: a, count: 0, instance: {C: 3}}]}\n",
     "workload.layers[0].count", "positive integer"),
    ("workload: {layers: [{name: a, instance: {C: 1000000000000000000000000000000, M: 9}}]}\n",
     "workload.layers[0].instance", "at most 2^53"),
    ("workload: {layers: [{name: a, repeat: 2, instance: {C: 3}}]}\n",
     "workload.layers[0].repeat", "one of name, count, instance"),
    (f"workload: {{layers: [{GOOD_LAYER}, {GOOD_LAYER}]}}\n", "workload.layers[1].name", "unique"),
    (f"workload: {{layers: [{GOOD_LAYER}]}}\nshape: {{name: X, dimensions: [C, M],"
     " data_spaces: [{name: W, projection: [[[C]], [[K]]]}]}\n",
     "shape.data_spaces[0].projection[1]", "dimension"),
])
def test_bad_workload_yaml_names_file_key_and_expectation(tmp_path, text, key, expected_part):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(CoexploreError) as err:
        load_workload(path)
    e = err.value
    assert e.file == str(path)
    assert e.key == key
    assert expected_part in (e.expected or "")


def test_malformed_or_missing_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("workload: {layers: [\n")
    with pytest.raises(CoexploreError) as err:
        load_workload(path)
    assert err.value.file == str(path) and "YAML" in err.value.message
    with pytest.raises(CoexploreError) as err:
        load_workload(tmp_path / "missing.yaml")
    assert "not found" in err.value.message
    with pytest.raises(CoexploreError, match="not found"):       # a path is never a bundled workload's name
        load_workload(tmp_path / "resnet50.yaml")
    with pytest.raises(CoexploreError) as err:
        find_workload("no_such_network")
    assert "resnet50" in err.value.expected


def test_find_workload_turns_only_names_into_bundled_files(tmp_path, monkeypatch):
    """A bare name, or problems/<file> where there is no problems/ folder, is the bundled file; a
    missing path anywhere else (a typo in a folder name) is an error, not the bundled network."""
    monkeypatch.chdir(tmp_path)
    bundled = find_workload("alexnet")
    assert bundled.is_file() and bundled.name == "alexnet.yaml"
    assert find_workload("problems/alexnet.yaml") == bundled
    for missing in ("nosuch/alexnet.yaml", "alexnet.yaml", str(tmp_path / "alexnet.yaml")):
        with pytest.raises(CoexploreError) as err:
            find_workload(missing)
        assert err.value.file == missing
    (tmp_path / "problems").mkdir()        # the user's own problems/ folder: a missing file there is theirs
    with pytest.raises(CoexploreError):
        find_workload("problems/alexnet.yaml")


def test_defaults_fill_dimensions_and_coefficients(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(f"workload: {{layers: [{GOOD_LAYER}]}}\n")
    wl = load_workload(path)
    assert wl.name == "w"
    assert wl.layers[0].instance == {"C": 3, "M": 8, "R": 1, "S": 1, "N": 1, "P": 4, "Q": 4,
                                     "Wstride": 1, "Hstride": 1, "Wdilation": 1, "Hdilation": 1}
    assert wl.total_macs == 3 * 8 * 4 * 4


def test_grouped_mobilenet_is_the_same_network_with_its_depthwise_channels_as_groups():
    """Each depthwise layer of `count` single-channel copies is one layer of G = count groups:
    the same layers, MACs and weights."""
    per_channel, grouped = _wl("mobilenet_v2"), _wl("mobilenet_v2_grouped")
    assert [lay.name for lay in per_channel] == [lay.name for lay in grouped]
    for a, b in zip(per_channel, grouped):
        if a.name.endswith("_dw"):
            assert (a.instance["C"], a.instance["M"], b.count, b.instance["G"]) == (1, 1, 1, a.count)
        else:
            assert (b.count, b.instance["G"]) == (a.count, 1)
        assert {k: v for k, v in b.instance.items() if k != "G"} == a.instance
        assert _weights(a) == _weights(b)
    assert grouped.total_macs == per_channel.total_macs


def test_a_grouped_depthwise_layer_spreads_its_channels_over_the_pe_array(tmp_path):
    """On the Simba-like core (whose constraints spread only C and M over the PEs) a single-channel
    copy can use one PE lane of 256; the grouped layer spreads its G channels."""
    import warnings
    from coexplore.model.inputs import load_context
    from coexplore.search.layer import map_layer
    from coexplore.spec.constraints import load_constraints
    from conftest import CORPUS
    arch = CORPUS / "arches" / "simba_like" / "processed.yaml"
    util = {}
    for name in ("mobilenet_v2", "mobilenet_v2_grouped"):
        layer = _wl(name).layer("block2_2_dw")
        f = tmp_path / f"{name}.yaml"
        write_problem(layer, f)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ctx = load_context(arch, f)
            util[name] = map_layer(ctx, load_constraints(ctx.arch), "random", 500, seed=0).best["utilization"]
    assert util["mobilenet_v2"] <= 1 / 256 + 1e-12 < 0.1 < util["mobilenet_v2_grouped"]


def test_a_bare_name_with_a_results_folder_of_that_name_here_is_the_bundled_workload(tmp_path, monkeypatch):
    """User study: `coexplore map simba alexnet --all-layers --out alexnet` made ./alexnet, then read
    the name alexnet as that empty folder ("a folder without problem files"); later commands naming
    alexnet there read the result folder's YAML files as problems."""
    monkeypatch.chdir(tmp_path)
    bundled = find_workload("alexnet")
    (tmp_path / "alexnet").mkdir()
    with pytest.warns(CoexploreNote, match="bundled workload alexnet is used"):
        assert find_workload("alexnet") == bundled
    write_problem(load_workload(bundled).layer("conv2"), tmp_path / "alexnet" / "problem.yaml")
    (tmp_path / "alexnet" / "result.json").write_text("{}")        # a map result folder
    with pytest.warns(CoexploreNote):
        assert find_workload("alexnet") == bundled
    (tmp_path / "alexnet" / "result.json").unlink()                 # a folder of problem files: that one
    assert find_workload("alexnet") == Path("alexnet")


def test_a_layer_written_as_problem_yaml_keeps_its_name(tmp_path):
    """User study: `map` writes a workload layer as <out>/problem.yaml, and `evaluate` on it reported
    the folder's name as the layer. The written header names the layer; a file named for what it
    holds keeps that name, and a hand-written problem.yaml is named from its path as before."""
    from coexplore.spec.problem import load_problem
    from coexplore.spec.workload import load_workload, write_problem
    layer = load_workload(Path(__file__).resolve().parents[1] / "problems" / "resnet50.yaml").layer("res3a_branch2b")
    (tmp_path / "runA").mkdir()
    write_problem(layer, tmp_path / "runA" / "problem.yaml")
    assert load_problem(tmp_path / "runA" / "problem.yaml").name == "res3a_branch2b"
    write_problem(layer, tmp_path / "runA" / "mine.yaml")
    assert load_problem(tmp_path / "runA" / "mine.yaml").name == "mine"
    text = (tmp_path / "runA" / "problem.yaml").read_text().split("\n", 1)[1]     # no header
    (tmp_path / "runA" / "problem.yaml").write_text(text)
    assert load_problem(tmp_path / "runA" / "problem.yaml").name == "runA"
