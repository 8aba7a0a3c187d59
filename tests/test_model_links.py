"""Link transfers (neighbour-to-neighbour reuse across a fan-out).

Reference numbers: the four bundled corpus cases in which Timeloop uses link transfers. (The
pre-2025 stride rule is tested against the 2024 exercise references in test_model_exercises.py.)
"""

import json

import numpy as np
import pytest

import coexplore.model.nest as nest
from coexplore.mapspace.sampling import random_mappings
from coexplore.model.evaluate import evaluate_batch, link_mesh
from coexplore.model.inputs import load_context
from coexplore.spec.mapping import to_arrays

from conftest import CORPUS, DATA

LINK_CASES = ["eyeriss_like/resnet50_res3a_2b/003", "eyeriss_like/tiny_conv/010",
              "eyeriss_like_45nm_pe8x16_glb8k/alexnet_conv3/004",
              "eyeriss_like_45nm_pe8x16_glb8k/resnet50_res3a_2b/014"]


def spatial_perm(mappings, arch, problem):
    """[B, L, D] spatial loop order of each level, from the mappings' spatial permutations."""
    D, L = len(problem.dims), len(arch.levels)
    out = np.tile(np.arange(D), (len(mappings), L, 1))
    for b, m in enumerate(mappings):
        for li, lv in enumerate(reversed(arch.levels)):
            sp = [problem.dims.index(d) for d in m.levels[lv.name].spatial_permutation]
            out[b, li] = sp + [i for i in range(D) if i not in sp]
    return out


def evaluate_case(case: str, links: bool = True):
    arch_name, layer, _ = case.split("/")
    ctx = load_context(CORPUS / "arches" / arch_name / "processed.yaml", CORPUS / "layers" / f"{layer}.yaml",
                       CORPUS / "arches" / arch_name / "ERT.yaml")
    m = ctx.load_mapping(CORPUS / "public" / case / "mapping.yaml")
    arrays = to_arrays([m], ctx.arch, ctx.problem)
    arrays.spatial_perm = spatial_perm([m], ctx.arch, ctx.problem)
    if not links:
        n = nest.analyse(ctx.problem, arrays.temporal, arrays.spatial_x, arrays.spatial_y, arrays.perm,
                         arrays.keep, *link_mesh(ctx.arch), arrays.spatial_perm, links=False)
        return ctx, n
    return ctx, ctx.record(evaluate_batch(ctx.arch, ctx.problem, ctx.costs, arrays))


@pytest.mark.parametrize("case", LINK_CASES)
def test_link_cases_exact(case):
    _, got = evaluate_case(case)
    exp = json.loads((CORPUS / "public" / case / "expected.json").read_text())
    for lv, ed in exp["levels"].items():
        for ds, dd in ed["dataspaces"].items():
            g = got["levels"][lv]["dataspaces"][ds]
            for k in ("reads", "fills", "updates", "utilized_instances"):
                assert g[k] == dd[k], (lv, ds, k)
    assert abs(got["energy_pJ"] - exp["energy_pJ"]) <= 1e-9 * exp["energy_pJ"]


def test_links_cut_parent_reads():
    """Without links the buffer above the fan-out serves every child itself (Timeloop's
    TIMELOOP_DISABLE_LINK_TRANSFERS); the reference shared_glb Inputs reads are far lower."""
    ctx, n = evaluate_case(LINK_CASES[1], links=False)
    exp = json.loads((CORPUS / "public" / LINK_CASES[1] / "expected.json").read_text())
    names = [lv.name for lv in ctx.arch.levels]
    li = len(names) - 1 - names.index("shared_glb")
    s = ctx.problem.dataspace_index("Inputs")
    assert n.reads[0, li, s] > exp["levels"]["shared_glb"]["dataspaces"]["Inputs"]["reads"]


@pytest.mark.parametrize("arch_name,layer", [("eyeriss_like", "tiny_conv"), ("simba_like", "tiny_conv"),
                                             ("simple_weight_stationary", "tiny_conv")])
def test_screen_never_misses_a_link(monkeypatch, arch_name, layer):
    """The cheap screen only skips fan-outs where no link is possible: switching it off (every
    fan-out evaluated exactly) changes no count, on random mappings and random keep/bypass."""
    ctx = load_context(CORPUS / "arches" / arch_name / "processed.yaml", CORPUS / "layers" / f"{layer}.yaml",
                       CORPUS / "arches" / arch_name / "ERT.yaml")
    rng = np.random.default_rng(3)
    maps = random_mappings(ctx.arch, ctx.problem, 400, rng, None)
    maps.keep[:, :-1, :] = rng.random(maps.keep[:, :-1, :].shape) < 0.6
    screened = ctx.evaluate(maps).nest
    monkeypatch.setattr(nest, "_prescreen", lambda P, ldim, ln: np.ones(ldim.shape[0], bool))
    monkeypatch.setattr(nest, "_link_candidates", lambda P, l, rows, *a: np.ones(len(rows), bool))
    full = ctx.evaluate(maps).nest
    for f in ("reads", "fills", "updates"):
        assert np.array_equal(getattr(screened, f), getattr(full, f))
    monkeypatch.undo()
    mx, my = link_mesh(ctx.arch)
    plain = nest.analyse(ctx.problem, maps.temporal, maps.spatial_x, maps.spatial_y, maps.perm, maps.keep,
                         mx, my, links=False)
    linked_rows = int(np.any((plain.reads != full.reads).reshape(len(maps), -1), axis=1).sum())
    if arch_name == "eyeriss_like":
        assert linked_rows > 0          # the test exercises the link path at all



def evaluate_file(mapping_file):
    ctx = load_context(CORPUS / "arches" / "eyeriss_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml",
                       CORPUS / "arches" / "eyeriss_like" / "ERT.yaml")
    return ctx.record(ctx.evaluate_mappings([ctx.load_mapping(mapping_file)]), 0)


def test_lenient_x_fanout_widens_the_link_mesh():
    """A lenient Spatial-X P2 where the physical X fan-out is 1: Timeloop lays the children out on
    max(physical, mapped) = 2 columns of 12, so each column repeats reference case 010's vertical
    links over half of its P steps (P is outside Q and N at DRAM: every P step brings a new tile in
    both), and the spad Inputs counts and the buffer's Inputs reads are the reference's. Laid out
    on the physical 1 x 12 column instead, the two P halves sit side by side and no link is found."""
    got = evaluate_file(DATA / "model_links" / "lenient_x_case010.yaml")
    exp = json.loads((CORPUS / "public" / LINK_CASES[1] / "expected.json").read_text())
    assert got["valid"]
    for lv, keys in (("ifmap_spad", ("reads", "fills")), ("shared_glb", ("reads",))):
        for k in keys:
            assert got["levels"][lv]["dataspaces"]["Inputs"][k] == exp["levels"][lv]["dataspaces"]["Inputs"][k], (lv, k)
    assert (got["levels"]["ifmap_spad"]["dataspaces"]["Inputs"]["utilized_instances"]
            == 2 * exp["levels"]["ifmap_spad"]["dataspaces"]["Inputs"]["utilized_instances"])


def test_read_only_fills_with_links_are_truncated():
    """Each of the 6 ifmap_spads gets a parent share of 1024/3 Inputs plus 1280/6 from its
    neighbour: 554.67 fills, which tiling.cpp stores truncated (554; reads and read-write fills are
    rounded). The shares are those of the link model the corpus cases check."""
    got = evaluate_file(DATA / "model_links" / "fractional_share.yaml")
    spad = got["levels"]["ifmap_spad"]["dataspaces"]["Inputs"]
    assert spad["utilized_instances"] == 6
    assert spad["fills"] == 6 * int(1024 / 3 + 1280 / 6) == 3324

