"""Tests from a mutation review of the map.txt reader and the v0.3 rules (with link transfers on a
read-write tensor). Each asserts on reference data (a map.txt and the map.yaml Timeloop wrote with
it) or on a property derivable by hand, never on numbers the model printed."""

import warnings
from pathlib import Path

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.model import nest
from coexplore.spec.map_txt import parse_map_txt

DATA = Path(__file__).parent / "data"
V4_PAIRS = ["v4_ed_eyeriss_like", "v4_ed_simba_like", "v4_ex06_mapper_eyeriss_vgg02_layer5"]


def _nonunit_order(perm_row, bounds_row):
    """Dimensions of one level's loop order (innermost first) that have a bound > 1."""
    return [int(d) for d in perm_row if bounds_row[int(d)] > 1]


@pytest.mark.parametrize("name", V4_PAIRS)
def test_timeloops_printout_reads_as_the_mapping_yaml_it_wrote_with_it(name):
    """timeloop-mapper wrote map.txt and map.yaml for the same mapping: read back, the two give the
    same factors, keep/bypass, temporal order and spatial order (the `<< Compute >>` line, headers
    with `(N)` sizes and a header with no dash line under it included)."""
    from coexplore.model.reference import load_reference_run
    from coexplore.spec.mapping import to_arrays
    case = DATA / "exercises_v4" / name
    run = load_reference_run(case)
    ctx = run.context
    a = to_arrays([ctx.load_mapping(case / "timeloop-mapper.map.yaml")], ctx.arch, ctx.problem)
    b = to_arrays([ctx.load_mapping(case / "timeloop-mapper.map.txt")], ctx.arch, ctx.problem)
    for f in ("temporal", "spatial_x", "spatial_y", "keep"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    L = a.temporal.shape[1]
    for li in range(L):
        assert _nonunit_order(a.perm[0, li], a.temporal[0, li]) == _nonunit_order(b.perm[0, li], b.temporal[0, li]), li
        if a.spatial_perm is not None and b.spatial_perm is not None:
            sp = a.spatial_x[0, li] * a.spatial_y[0, li]
            assert _nonunit_order(a.spatial_perm[0, li], sp) == _nonunit_order(b.spatial_perm[0, li], sp), li


def test_two_x_loops_of_a_level_keep_their_printed_order():
    # simba_like's inter_PE_spatial prints C then M, both Spatial-X: M is innermost, as its map.yaml
    # says (permutation MCRSNPQ, split 2)
    text = (DATA / "exercises_v4" / "v4_ed_simba_like" / "timeloop-mapper.map.txt").read_text()
    sp = next(x for x in parse_map_txt(text, ["Weights", "Inputs", "Outputs"])
              if x["target"] == "inter_PE_spatial" and x["type"] == "spatial")
    assert sp["permutation"] == "MC" and sp["split"] == 2 and sorted(sp["factors"].split()) == ["C=3", "M=4"]


def test_the_compute_line_is_no_loop():
    text = "Buf [ Weights:3 (3) ]\n-----\n|   for R in [0:3)\n|     << Compute >>\n"
    [t, k] = parse_map_txt(text, ["Weights"])
    assert t["factors"] == "R=3" and k["keep"] == ["Weights"]


def test_a_loop_before_any_level_header_is_refused():
    text = "| for P in [0:4)\nBuf [ Weights:4 ]\n-----\n| for C in [0:2)\n"
    with pytest.raises(CoexploreError) as info:
        parse_map_txt(text, ["Weights"])
    assert "line 1" in info.value.message


def test_a_loop_not_from_zero_and_a_text_without_levels_are_refused():
    with pytest.raises(CoexploreError) as info:
        parse_map_txt("Buf [ Weights:4 ]\n-----\n| for C in [1:4)\n", ["Weights"])
    assert "line 3" in info.value.message
    with pytest.raises(CoexploreError):
        parse_map_txt("\n-----\n", ["Weights"])


def test_multi_letter_dimension_names_are_spaced_in_the_permutation():
    text = "Buf [ Weights:6 ]\n-----\n| for OC in [0:2)\n|   for IC in [0:3)\n"
    [t, _] = parse_map_txt(text, ["Weights"])
    assert t["permutation"].split() == ["IC", "OC"] and t["factors"] == "OC=2 IC=3"
    from coexplore.spec.mapping import _parse_perm                 # and the mapping reader takes it so
    assert _parse_perm(t["permutation"], file=None, key="p", dims=["OC", "IC"]) == ["IC", "OC"]


# --- v0.3 rules with link transfers on Outputs ------------------------------------------------------
#
# ex04's conv1d (C32 K32 R3 P16) on two levels: the inner one keeps one output at a time and fans out
# over C (4 MACs in a row, a spatial reduction) below a temporal C2; the outer one loops C4 K32 R3 P16
# (innermost first). The MACs pass partial sums along the row (link transfers at the compute fan-out).
# By hand: the inner level receives one output tile per step of K, R or P: 32 * 3 * 16 = 1536 tiles
# (R, outside K, brings every output back), of 512 distinct outputs (its partition).

def _ex04_links(rule, links=True):
    from coexplore.model.inputs import load_context
    d = DATA / "exercises_v3" / "v3_ex04_conv1d_oc_ic_3levelspatial_cp"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = load_context(d / "arch.yaml", d / "problem.yaml", d / "ERT.yaml")
    prob = ctx.problem
    assert [str(x) for x in prob.dims] == ["C", "K", "R", "P"]

    def arr(x):
        return np.array(x, np.int64)[None]
    temporal = arr([[2, 1, 1, 1], [4, 32, 3, 16]])
    sx = arr([[4, 1, 1, 1], [1, 1, 1, 1]])
    perm = arr([[0, 1, 2, 3], [0, 1, 2, 3]])
    keep = np.ones((1, 2, 3), bool)
    res = nest.analyse(prob, temporal, sx, np.ones_like(sx), perm, keep, np.array([4, 1]), np.array([1, 1]),
                       links=links, stride_rule=rule)
    return res, [ds.name for ds in prob.dataspaces].index("Outputs")


def test_v03_links_use_them_on_outputs_here():
    # the scenario exercises what it is meant to: with links the inner level sees fewer updates
    on, o = _ex04_links("v0.3")
    off, _ = _ex04_links("v0.3", links=False)
    assert on.updates[0, 0, o] < off.updates[0, 0, o]


@pytest.mark.parametrize("links", [True, False])
def test_v03_output_fills_are_every_tile_received_with_or_without_links(links):
    res, o = _ex04_links("v0.3", links)
    cur, _ = _ex04_links("current", links)
    assert res.fills[0, 0, o] == 32 * 3 * 16            # every tile it receives (v0.3: first fills counted)
    assert cur.fills[0, 0, o] == 32 * 3 * 16 - 32 * 16  # today: less the first fill of each of its 512 outputs
    assert res.fills[0, 1, o] == cur.fills[0, 1, o] == 0  # the backing store is not filled


@pytest.mark.parametrize("links", [True, False])
def test_v03_counts_are_pre2025_counts_but_for_read_write_fills(links):
    """The rule's definition (nest.RULE_NOTES): v0.3 counts = pre2025's sliding-window reuse, with a
    read-write tensor's first fills counted; nothing else changes, links or not."""
    v03, o = _ex04_links("v0.3", links)
    old, _ = _ex04_links("pre2025", links)
    np.testing.assert_array_equal(v03.reads, old.reads)
    np.testing.assert_array_equal(v03.updates, old.updates)
    others = [s for s in range(v03.fills.shape[2]) if s != o]
    np.testing.assert_array_equal(v03.fills[..., others], old.fills[..., others])


@pytest.mark.parametrize("rule", ["v0.3", "current"])
def test_a_link_that_saves_no_parent_access_is_not_used(rule):
    """Timeloop takes data over a link only when that leaves fewer parent accesses than multicast.
    ex04's conv1d: a row of 9 children (K3 inner, R3 outer, mesh 9x1) each holding P2 of Inputs; above
    them R3 then P4 (innermost first). A P step moves each child's window by -1 (P +2, R back -3), which
    child k=0 of filter row r >= 1 could take from its left neighbour (k=2 of row r-1). But each filter
    row's group of 3 keeps members with no such neighbour, so the parent still serves every group:
    the link saves nothing, and the counts are those without links."""
    from coexplore.model.inputs import load_context
    d = DATA / "exercises_v3" / "v3_ex04_conv1d_oc_ic_3levelspatial_cp"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = load_context(d / "arch.yaml", d / "problem.yaml", d / "ERT.yaml")

    def arr(x):
        return np.array(x, np.int64)[None]
    args = (ctx.problem, arr([[1, 1, 1, 2], [1, 1, 3, 4]]), np.ones((1, 2, 4), np.int64),
            arr([[1, 1, 1, 1], [1, 3, 3, 1]]), arr([[0, 1, 2, 3], [1, 2, 0, 3]]), np.ones((1, 2, 3), bool),
            np.array([1, 9]), np.array([1, 1]))
    on = nest.analyse(*args, stride_rule=rule)
    off = nest.analyse(*args, links=False, stride_rule=rule)
    for f in ("reads", "fills", "updates"):
        np.testing.assert_array_equal(getattr(on, f), getattr(off, f), err_msg=f)


LINK_NESTS = {
    # middle level (one instance) fans out over P2 on a 3x1 mesh, a backing store above it
    "three_levels": ([[2, 1, 3, 3], [1, 2, 3, 2], [1, 1, 3, 2]], [[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]],
                     [[1, 1, 1, 1], [1, 1, 1, 2], [1, 1, 1, 1]], [[1, 3, 0, 2], [2, 3, 1, 0], [1, 2, 0, 3]],
                     [1, 3, 1], [1, 1, 1]),
    # the backing store itself fans out over R2 on a 2x1 mesh
    "two_levels": ([[1, 1, 2, 2], [1, 1, 2, 2]], [[1, 1, 1, 1], [1, 1, 2, 1]], [[1, 1, 1, 1], [1, 1, 1, 1]],
                   [[0, 1, 2, 3], [0, 3, 2, 1]], [1, 2], [1, 1]),
}


@pytest.mark.parametrize("case", sorted(LINK_NESTS))
@pytest.mark.parametrize("rule", ["v0.3", "pre2025", "current"])
def test_links_change_where_a_child_gets_its_inputs_not_how_many_it_gets(rule, case):
    """ex04's conv1d with a level of one instance, nothing bypassed, fanning out to children that see
    a sliding window over R and P, so that a child can take Inputs from its neighbour. Links move fills
    from the parent to the neighbour, so the parent reads fewer, but a child receives what it needs
    either way: its fills are those without links, under each rule (the v0.3 and pre2025 rules
    included, whose stride state the link accounting must follow too)."""
    from coexplore.model.inputs import load_context
    d = DATA / "exercises_v3" / "v3_ex04_conv1d_oc_ic_3levelspatial_cp"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = load_context(d / "arch.yaml", d / "problem.yaml", d / "ERT.yaml")
    inputs = [ds.name for ds in ctx.problem.dataspaces].index("Inputs")
    temporal, sx, sy, perm, mx, my = (np.array(x, np.int64) for x in LINK_NESTS[case])
    fan = int(np.nonzero((sx * sy).prod(axis=1) > 1)[0][0])          # the level that fans out
    args = (ctx.problem, temporal[None], sx[None], sy[None], perm[None], np.ones((1, len(temporal), 3), bool), mx, my)
    on = nest.analyse(*args, stride_rule=rule)
    off = nest.analyse(*args, links=False, stride_rule=rule)
    assert on.reads[0, fan, inputs] < off.reads[0, fan, inputs]      # the links are used
    assert on.fills[0, fan - 1, inputs] == off.fills[0, fan - 1, inputs]
