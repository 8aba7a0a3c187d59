"""Timeloop mapspace constraints as timeloop-mapper reads them (src/mapping/constraints.cpp):
factor syntax, `X=0`, factor bounds, the backing store's factors, permutations written with
spaces, the layouts of constraint files, several files combined, re-specification refused."""

import subprocess
import sys

import numpy as np
import pytest
import yaml

from coexplore.errors import CoexploreError
from coexplore.mapspace.enumerate import canonical_points, count_canonical
from coexplore.mapspace.space import MapSpace
from coexplore.model.inputs import load_context
from coexplore.search.layer import make_objective, map_layer
from coexplore.spec.architecture import load_architecture
from coexplore.spec.constraints import constraints_from_nodes, constraints_from_targets, load_constraints

from conftest import CORPUS, DATA

EX5 = DATA / "exercises_v4" / "v4_ex05_mapper_conv1d_oc_3level_null"   # K32 R3 P16, no fan-out
PPI = EX5 / "parsed-processed-input.yaml"


@pytest.fixture(scope="module")
def ex5():
    return load_context(PPI, PPI, EX5 / "timeloop-mapper.ERT.yaml")


def _level(ctx, name):
    """Index of a level in the mapping arrays (innermost first)."""
    return [lv.name for lv in reversed(ctx.arch.levels)].index(name)


def _space(ctx, targets):
    return MapSpace(ctx.arch, ctx.problem, constraints_from_targets(targets, ctx.arch))


def _samples(ms, n=4000, seed=0):
    return ms.decode(ms.sample(np.random.default_rng(seed), n))


def test_factor_syntax_as_timeloop_reads_it(ex5):
    """Timeloop's regex search: '=' optional (`R3`), commas and stray characters skipped (the
    official v3 exercise 06 has `S=1#`), `<=` a max factor, `>=` a min factor."""
    c = constraints_from_targets([{"target": "GlobalBuffer", "type": "temporal",
                                   "factors": "R3, P<=4 K>=2 N=1#"}], ex5.arch)["GlobalBuffer"]
    assert c.temporal_factors == {"R": ("=", 3), "N": ("=", 1)}
    assert c.temporal_max == {"P": 4} and c.temporal_min == {"K": 2}
    c = constraints_from_targets([{"target": "GlobalBuffer", "type": "temporal", "factors": "R3P<=4 K2"}],
                                 ex5.arch)["GlobalBuffer"]      # names are letters, as in Timeloop's regex
    assert c.temporal_factors == {"R": ("=", 3), "K": ("=", 2)} and c.temporal_max == {"P": 4}
    c = constraints_from_targets([{"target": "GlobalBuffer", "type": "temporal", "factors": "K==4 R = 3"}],
                                 ex5.arch)["GlobalBuffer"]      # Timeloop's `=*`: any run of '='
    assert c.temporal_factors == {"K": ("=", 4), "R": ("=", 3)}
    c = constraints_from_targets([{"target": "GlobalBuffer", "type": "temporal", "factors": "K 4 R3"}],
                                 ex5.arch)["GlobalBuffer"]      # `=*` matches no '=' too
    assert c.temporal_factors == {"K": ("=", 4), "R": ("=", 3)}
    from coexplore.spec.constraints import constraint_targets
    assert constraint_targets({"arch_constraints": {"targets": [{"target": "X", "type": "bypass"}]}}) == \
        [{"target": "X", "type": "bypass"}]                        # mapper.cpp's other name
    with pytest.raises(CoexploreError, match="max factor"):
        constraints_from_targets([{"target": "GlobalBuffer", "type": "temporal", "factors": "P<=0"}], ex5.arch)
    with pytest.raises(CoexploreError, match="cannot read factor"):
        constraints_from_targets([{"target": "GlobalBuffer", "type": "temporal", "factors": "all"}], ex5.arch)


def test_factor_bounds_hold_for_every_mapping_the_searchers_can_return(ex5):
    ms = _space(ex5, [{"target": "GlobalBuffer", "type": "temporal", "factors": "P<=4 K>=4"}])
    gb, (k, p) = _level(ex5, "GlobalBuffer"), (ex5.problem.dims.index("K"), ex5.problem.dims.index("P"))
    m = _samples(ms)
    keeps = (m.temporal[:, gb, p] <= 4) & (m.temporal[:, gb, k] >= 4)
    assert 0 < keeps.sum() < len(keeps)              # decode can break them ...
    assert np.array_equal(ms.satisfies(m), keeps)
    loss = make_objective(ex5, ms, "energy")(ms.sample(np.random.default_rng(0), 4000))
    assert np.all(np.isinf(loss[~keeps]))            # ... so the objective refuses those
    res = map_layer(ex5, ms.constraints, "random", 500, seed=1)
    gb_entry = next(e for e in res.mapping if e["target"] == "GlobalBuffer" and e["type"] == "temporal")
    fac = dict((t[0], int(t[1:])) for t in gb_entry["factors"].split())
    assert fac["P"] <= 4 and fac["K"] >= 4


def test_encode_refuses_a_mapping_that_breaks_a_factor_bound(ex5):
    """Decoded points outside the bounds (which decode can give) are no mapping of the space: encode
    refuses them, and takes those inside."""
    ms = _space(ex5, [{"target": "GlobalBuffer", "type": "temporal", "factors": "P<=4 K>=4"}])
    m = _samples(ms, 400)
    ok = ms.satisfies(m)
    assert ok.any() and not ok.all()
    inside = np.flatnonzero(ok)[:20]
    assert np.array_equal(ms.decode(ms.encode(m.take(inside))).temporal, m.take(inside).temporal)
    for b in np.flatnonzero(~ok)[:20]:
        with pytest.raises(CoexploreError, match=r"at GlobalBuffer, against the constraints' bound (P<=4|K>=4) there"):
            ms.encode(m.take([b]))


def test_exhaustive_enumeration_and_size_respect_the_bounds(ex5):
    free = MapSpace(ex5.arch, ex5.problem, load_constraints(ex5.arch))
    ms = _space(ex5, [{"target": "GlobalBuffer", "type": "temporal", "factors": "P<=2"}])
    gb, p = _level(ex5, "GlobalBuffer"), ex5.problem.dims.index("P")
    # the count of the bounded space, from the free space's enumeration filtered here
    want = sum(int((free.decode(X).temporal[:, gb, p] <= 2).sum()) for X in canonical_points(free))
    assert count_canonical(ms) == want < count_canonical(free)
    got = np.concatenate([ms.decode(X).temporal[:, gb, p] for X in canonical_points(ms)])
    assert len(got) == want and got.max() <= 2


def test_backing_store_factor_constraints_apply(ex5):
    ms = _space(ex5, [{"target": "MainMemory", "type": "temporal", "factors": "K=1 R=1 P=1"}])
    assert (_samples(ms).temporal[:, _level(ex5, "MainMemory")] == 1).all()
    every = [{"target": lv.name, "type": "temporal", "factors": "K=1"} for lv in ex5.arch.levels]
    with pytest.raises(CoexploreError, match="no level for the factor 32 of dimension K"):
        _space(ex5, every)


@pytest.mark.parametrize("factors, read, said", [("K=2 K=4", {"K": ("=", 4)}, "the factor of K is given twice"),
                                                 ("K=2.5", {"K": ("=", 2)}, "'.5' in 'K=2.5' is not read"),
                                                 ("K=2, R=abc", {"K": ("=", 2)}, "'R=abc' in 'K=2, R=abc' is not read")])
def test_what_timeloop_reads_past_is_warned_about(ex5, factors, read, said):
    """Timeloop takes the last of a factor given twice and skips what its pattern does not match:
    read the same, with a warning, since such text is most likely a mistake."""
    from coexplore.errors import CoexploreWarning
    with pytest.warns(CoexploreWarning, match=said):
        c = constraints_from_targets([{"target": "GlobalBuffer", "type": "temporal", "factors": factors}],
                                     ex5.arch, "c.yaml")["GlobalBuffer"]
    assert c.temporal_factors == read


def test_zero_is_the_whole_dimension_and_large_factors_are_cut(ex5):
    gb, k = _level(ex5, "GlobalBuffer"), ex5.problem.dims.index("K")
    for written in ("K=0", "K=64"):            # Timeloop: 0 = full dimension; above the bound = bound
        ms = _space(ex5, [{"target": "GlobalBuffer", "type": "temporal", "factors": written}])
        assert (_samples(ms, 500).temporal[:, gb, k] == 32).all(), written


def test_spatial_zero_puts_the_whole_dimension_on_the_fan_out():
    d = CORPUS / "arches" / "eyeriss_like"
    ctx = load_context(d / "processed.yaml", CORPUS / "layers" / "resnet50_res3a_2b.yaml", d / "ERT.yaml")
    ms = _space(ctx, [{"target": "inter_PE_spatial", "type": "spatial", "factors": "S=0"}])
    li, s = _level(ctx, "inter_PE_spatial"), ctx.problem.dims.index("S")
    m = _samples(ms, 500)
    assert (m.spatial_x[:, li, s] * m.spatial_y[:, li, s] == 3).all()


def test_permutations_written_with_spaces_read_letter_by_letter(ex5):
    """v3 exercise 06 writes `QRSC PNM`: Timeloop reads a permutation one letter at a time."""
    ms = _space(ex5, [{"target": "GlobalBuffer", "type": "temporal", "permutation": "RK P"}])
    dims = ex5.problem.dims
    assert ms.perm_prefix[_level(ex5, "GlobalBuffer")] == [dims.index(x) for x in "RKP"]


def test_constraint_file_layouts(tmp_path, ex5):
    """A bare list under mapspace_constraints (v3 exercise 05), `name` for `target`, and a
    target with a `constraints:` list whose fields sit under `attributes:`."""
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump({"mapspace_constraints": [
        {"target": "GlobalBuffer", "type": "temporal", "factors": "K=2"},
        {"name": "RegisterFile", "constraints": [{"type": "temporal", "attributes": {"factors": "R=3"}},
                                                {"type": "bypass", "keep": ["Weights"]}]}]}))
    cons = load_constraints(ex5.arch, f)
    assert cons["GlobalBuffer"].temporal_factors == {"K": ("=", 2)}
    assert cons["RegisterFile"].temporal_factors == {"R": ("=", 3)} and cons["RegisterFile"].keep == {"Weights"}


def test_several_files_combine_and_respecification_is_refused(tmp_path, ex5):
    a, b, c = (tmp_path / n for n in ("arch.yaml", "map.yaml", "clash.yaml"))
    a.write_text("architecture_constraints:\n  targets:\n  - {target: GlobalBuffer, type: temporal, factors: K=2}\n")
    b.write_text("mapspace_constraints:\n  targets:\n  - {target: RegisterFile, type: temporal, factors: R=3}\n")
    c.write_text("mapspace_constraints:\n  targets:\n  - {target: GlobalBuffer, type: temporal, factors: K=4}\n")
    cons = load_constraints(ex5.arch, [a, b])
    assert cons["GlobalBuffer"].temporal_factors == {"K": ("=", 2)}
    assert cons["RegisterFile"].temporal_factors == {"R": ("=", 3)}
    with pytest.raises(CoexploreError, match="re-specification of factor for dimension K at level GlobalBuffer"):
        load_constraints(ex5.arch, [a, c])
    twice = [{"target": "GlobalBuffer", "type": "temporal", "permutation": p} for p in ("KRP", "PRK")]
    with pytest.raises(CoexploreError, match="re-specification of temporal permutation"):
        constraints_from_targets(twice, ex5.arch)


def test_a_misplaced_min_parallelism_names_the_file_that_gives_it(tmp_path, ex5):
    """Of two constraints files for one level, the error names the one with the utilization target
    (a review: the first file, which has none, was named)."""
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("mapspace_constraints:\n  targets:\n  - {target: GlobalBuffer, type: temporal, factors: K=2}\n")
    b.write_text("mapspace_constraints:\n  targets:\n  - {target: GlobalBuffer, type: utilization, min: 0.5}\n")
    cons = load_constraints(ex5.arch, [a, b])
    with pytest.raises(CoexploreError, match="innermost storage level") as err:
        MapSpace(ex5.arch, ex5.problem, cons)
    assert err.value.file == str(b) and err.value.key == "mapspace_constraints.targets[0]", err.value


def test_other_constraint_types(ex5):
    with pytest.raises(CoexploreError, match="unrecognized constraint type 'tempural'"):
        constraints_from_targets([{"target": "GlobalBuffer", "type": "tempural"}], ex5.arch)
    with pytest.raises(CoexploreError, match="innermost storage level"):
        _space(ex5, [{"target": "GlobalBuffer", "type": "utilization", "min": 0.5}])
    cons = constraints_from_targets([{"target": "GlobalBuffer", "type": "max_overbooked_proportion",
                                      "proportion": 0.1}], ex5.arch)
    assert cons["GlobalBuffer"].ignored          # sparse-only: reported as not applied
    for kind in ("no_multicast_no_reduction", "no_link_transfer"):
        c = constraints_from_targets([{"target": "GlobalBuffer", "type": kind, "keep": ["Inputs"]}], ex5.arch)
        assert any(kind in k for k in c["GlobalBuffer"].ignored)
    with pytest.raises(CoexploreError, match="without a type"):
        constraints_from_targets([{"target": "GlobalBuffer", "factors": "K=2"}], ex5.arch)
    with pytest.raises(CoexploreError, match="innermost storage level"):
        constraints_from_targets([{"target": ex5.arch.compute.name, "type": "utilization", "min": 0.5}], ex5.arch)


def test_min_parallelism_bounds_the_fan_out_used():
    d = CORPUS / "arches" / "eyeriss_like"
    ctx = load_context(d / "processed.yaml", CORPUS / "layers" / "resnet50_res3a_2b.yaml", d / "ERT.yaml")
    innermost = next(lv.name for lv in reversed(ctx.arch.levels) if not lv.is_dummy)
    ms = _space(ctx, [{"target": innermost, "type": "utilization", "min": 0.5}])
    m = _samples(ms, 2000)
    used = np.prod((m.spatial_x * m.spatial_y).reshape(len(m), -1), axis=1)
    want = used >= 0.5 * ctx.arch.compute.instances
    assert 0 < want.sum() < len(want)
    assert np.array_equal(ms.satisfies(m), want)


def test_map_cli_takes_several_constraint_files(tmp_path):
    a, b = tmp_path / "arch_c.yaml", tmp_path / "map_c.yaml"
    a.write_text("architecture_constraints:\n  targets:\n  - {target: GlobalBuffer, type: temporal, factors: K=4}\n")
    b.write_text("mapspace_constraints:\n  - {target: MainMemory, type: temporal, factors: R=1 P=1 K=1}\n")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "coexplore.cli.main", "map", str(PPI), str(PPI),
                        "--ert", str(EX5 / "timeloop-mapper.ERT.yaml"), "--constraints", str(a), "--constraints",
                        str(b), "--searcher", "random", "--budget", "300", "--no-cache", "--no-progress",
                        "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    entries = yaml.safe_load((out / "mapping.yaml").read_text())["mapping"]
    fac = {e["target"]: dict((t[0], int(t[1:])) for t in e["factors"].split())
           for e in entries if e["type"] == "temporal"}
    assert fac["GlobalBuffer"]["K"] == 4
    assert fac["MainMemory"] == {"K": 1, "R": 1, "P": 1}


def test_extra_constraints_add_to_a_v04_architectures_own(tmp_path):
    """--constraints with a v0.4 node list adds to the nodes' constraints (timeloopfe's extra
    mapping constraints): the Eyeriss-like scratchpads keep their dataspaces and the DRAM order is
    the file's; the design's own flattened constraints.yaml says the same again and is accepted; a
    file that contradicts a node is refused, naming the level."""
    d = CORPUS / "arches" / "eyeriss_like"
    arch = load_architecture(d / "arch.yaml")
    extra = tmp_path / "extra.yaml"
    extra.write_text("mapspace_constraints:\n  targets:\n"
                     "  - {target: DRAM, type: temporal, permutation: [R, S, P, Q, N, C, M]}\n")
    nodes = constraints_from_nodes(arch)
    both = load_constraints(arch, extra)
    assert both["DRAM"].temporal_permutation == list("RSPQNCM")
    for level in ("ifmap_spad", "weights_spad", "psum_spad", "shared_glb"):
        assert both[level].keep == nodes[level].keep and both[level].temporal_factors == nodes[level].temporal_factors
    assert both["weights_spad"].keep == {"Weights"}
    flat = load_constraints(arch, d / "constraints.yaml")
    assert flat["psum_spad"].keep == {"Outputs"} and flat["inter_PE_spatial"].split == 0
    clash = tmp_path / "clash.yaml"
    clash.write_text("mapspace_constraints:\n  targets:\n"
                     "  - {target: weights_spad, type: bypass, bypass: [Weights], keep: [Inputs]}\n")
    with pytest.raises(CoexploreError, match="weights_spad"):
        load_constraints(arch, clash)


def test_extra_constraints_complete_and_compare_as_timeloopfe_does(tmp_path):
    """simple_weight_stationary's PE container says `permutation: [C, M], split: 1`. Given instead
    through an extra file that names the container (`target: PE`), the completed constraint is the
    same; an extra permutation that only lists unit loops first says the same again, one that
    orders the loops of factor > 1 otherwise contradicts the node and is refused."""
    from coexplore.spec.problem import load_problem
    d = CORPUS / "arches" / "simple_weight_stationary"
    problem = load_problem(CORPUS / "layers" / "alexnet_conv3.yaml")      # N = 1, S = 3
    want = constraints_from_nodes(load_architecture(d / "arch.yaml"), problem)["inter_PE_spatial"]
    text = (d / "arch.yaml").read_text()
    assert "        permutation: [C, M]\n        split: 1\n" in text
    bare = tmp_path / "arch.yaml"
    bare.write_text(text.replace("        permutation: [C, M]\n        split: 1\n", ""))
    extra = tmp_path / "extra.yaml"
    extra.write_text("targets:\n- {target: PE, type: spatial, permutation: [C, M], split: 1}\n")
    got = load_constraints(load_architecture(bare), extra, problem)["inter_PE_spatial"]
    assert got.spatial_permutation == want.spatial_permutation and got.split == want.split == 1
    arch = load_architecture(d / "arch.yaml")
    extra.write_text("targets:\n- {target: PE, type: spatial, permutation: [N, C, M]}\n")
    same = load_constraints(arch, extra, problem)["inter_PE_spatial"].spatial_permutation
    assert sorted(same) == sorted(want.spatial_permutation) and same[-2:] == ["C", "M"]   # units first
    extra.write_text("targets:\n- {target: PE, type: spatial, permutation: [M, C]}\n")
    with pytest.raises(CoexploreError, match="spatial permutation at level inter_PE_spatial"):
        load_constraints(arch, extra, problem)
    extra.write_text("targets:\n- {target: PE, type: spatial, permutation: [N, C, M]}\n")
    with pytest.raises(CoexploreError, match="spatial permutation at level inter_PE_spatial"):
        load_constraints(arch, extra, load_problem(CORPUS / "layers" / "tiny_conv.yaml"))   # N = 2 there


def test_a_nodes_flattened_constraints_beside_it_replace_them(tmp_path):
    """arch.yaml with the design's flattened constraints.yaml beside it (the corpus layout): that
    file is the nodes' constraints flattened for one layer, so it is read instead of them, for
    any layer (tiny_conv's N = 2 would contradict the flattened order if both were merged)."""
    from coexplore.spec.problem import load_problem
    d = CORPUS / "arches" / "simple_weight_stationary"
    arch = load_architecture(d / "arch.yaml")
    flat = load_constraints(load_architecture(d / "processed.yaml"), d / "constraints.yaml")
    for layer in ("alexnet_conv3", "tiny_conv"):
        got = load_constraints(arch, None, load_problem(CORPUS / "layers" / f"{layer}.yaml"))
        assert got["inter_PE_spatial"].spatial_permutation == flat["inter_PE_spatial"].spatial_permutation
        assert got["inter_PE_spatial"].split == flat["inter_PE_spatial"].split == 1


def test_extra_permutations_are_read_letter_by_letter_before_completing(tmp_path):
    """`permutation: CM RSPQN` (Timeloop reads it letter by letter) in an extra file for a v0.4
    container completes like [C, M, R, S, P, Q, N]: C first, so `split: 1` puts C on X."""
    from coexplore.spec.problem import load_problem
    d = CORPUS / "arches" / "simple_weight_stationary"
    text = (d / "arch.yaml").read_text()
    bare = tmp_path / "arch.yaml"
    bare.write_text(text.replace("        permutation: [C, M]\n        split: 1\n", ""))
    problem = load_problem(CORPUS / "layers" / "alexnet_conv3.yaml")
    perms = []
    for written in ("CM RSPQN", "CMRSPQN", "[C, M, R, S, P, Q, N]"):
        extra = tmp_path / "extra.yaml"
        extra.write_text(f"targets:\n- {{target: PE, type: spatial, permutation: {written}, split: 1}}\n")
        c = load_constraints(load_architecture(bare), extra, problem)["inter_PE_spatial"]
        perms.append(c.spatial_permutation)
    assert perms[0] == perms[1] == perms[2] and perms[0][0] == "C" and len(perms[0]) == 7


def test_extra_constraints_on_a_node_list_without_its_own_are_completed(tmp_path):
    """A v0.4 node list whose nodes carry no constraints, with an extra file naming the container:
    accepted (timeloopfe's name) and completed with the layer as timeloopfe completes, so
    `permutation: [C, M], split: 1` with R, S, P, Q fixed to 1 puts C and M on Y."""
    import re
    from coexplore.spec.problem import load_problem
    d = CORPUS / "arches" / "simple_weight_stationary"
    text = re.sub(r"\n( *)constraints:\n(\1 .*\n)+", "\n", (d / "arch.yaml").read_text())
    assert "constraints" not in text
    bare = tmp_path / "arch.yaml"
    bare.write_text(text)
    extra = tmp_path / "extra.yaml"
    extra.write_text("targets:\n- {target: PE, type: spatial, permutation: [C, M], split: 1, "
                     "factors: [R=1, S=1, P=1, Q=1]}\n")
    problem = load_problem(CORPUS / "layers" / "alexnet_conv3.yaml")
    c = load_constraints(load_architecture(bare), extra, problem)["inter_PE_spatial"]
    assert c.spatial_permutation[-2:] == ["C", "M"] and c.spatial_permutation.index("C") >= c.split == 1


def test_a_bounded_factors_only_loop_is_not_a_unit_loop(tmp_path):
    """`factors_only: [C<=16, M<=16]` leaves M free up to 16: a permutation that lists M before the
    node's C is another order, refused; one listing a loop pinned to 1 by factors_only is the same."""
    from coexplore.spec.constraints import LevelConstraints, _apply, _same_order
    c = LevelConstraints()
    _apply(c, "temporal", {"factors_only": "C<=16 M<=16", "permutation": ["C"]}, "a.yaml", "t", "buf")
    assert not _same_order(["C"], ["M", "C"], c, "temporal")
    assert _same_order(["C"], ["K", "C"], c, "temporal")            # K: not listed, so pinned to 1
    from coexplore.spec.constraints import _is_unit
    d = LevelConstraints()
    _apply(d, "spatial", {"factors": "Q<=1 C>=1 M<=4"}, "a.yaml", "s", "PE")
    assert _is_unit(d, "spatial", "Q") and _is_unit(d, "spatial", "C") and not _is_unit(d, "spatial", "M")


def test_bounds_with_factors_only_and_conflicts(ex5):
    """factors_only fixes the unlisted dimensions to 1, not those it bounds; a bound on a dimension
    the layer lacks, or one no mapping can meet, is refused up front."""
    ms = _space(ex5, [{"target": "GlobalBuffer", "type": "temporal", "factors_only": "K<=4"}])
    gb, dims = _level(ex5, "GlobalBuffer"), ex5.problem.dims
    m = _samples(ms, 2000)
    ok = ms.satisfies(m)
    assert (m.temporal[:, gb, dims.index("R")] == 1).all() and (m.temporal[:, gb, dims.index("P")] == 1).all()
    assert set(m.temporal[ok, gb, dims.index("K")].tolist()) == {1, 2, 4}
    for factors, msg in (("Q<=4", "unknown dimension"), ("K=8 K<=2", "breaks its own bound"),
                         ("K>=64", "layer's K is 32"), ("K>=8 K<=4", "leave no factor")):
        with pytest.raises(CoexploreError, match=msg):
            _space(ex5, [{"target": "GlobalBuffer", "type": "temporal", "factors": factors}])
    with pytest.raises(CoexploreError, match="leave of 32"):
        _space(ex5, [{"target": "GlobalBuffer", "type": "temporal", "factors": "K=0"},
                     {"target": "RegisterFile", "type": "temporal", "factors": "K=2"}])


def test_node_permutations_are_completed_as_timeloopfe_does():
    """v0.4 node constraints `permutation: [C, M], split: 1` (simple_weight_stationary's PE array):
    timeloopfe puts the dimensions that are 1 there first (NQPSRCM), so the split leaves C and M on
    Y, where timeloop-mapper put them; every mapper result of the corpus keeps the completed
    constraints read from arch.yaml, as it keeps the flattened constraints.yaml."""
    import json
    from coexplore.spec.mapping import to_arrays
    d = CORPUS / "arches" / "simple_weight_stationary"
    arch = load_architecture(d / "arch.yaml")
    cases = [c for c in sorted((CORPUS / "public" / "simple_weight_stationary").glob("*/*"))
             if json.loads((c / "expected.json").read_text()).get("source") == "mapper_best"]
    assert cases
    for case in cases:
        ctx = load_context(d / "arch.yaml", CORPUS / "layers" / f"{case.parent.name}.yaml", d / "ERT.yaml")
        m = to_arrays([ctx.load_mapping(case / "mapping.yaml")], ctx.arch, ctx.problem)
        completed = constraints_from_nodes(arch, ctx.problem)
        assert completed["inter_PE_spatial"].spatial_permutation[-2:] == ["C", "M"]
        MapSpace(ctx.arch, ctx.problem, completed).encode(m)          # raises if a constraint is broken
        flat = load_architecture(d / "processed.yaml")                # the flattened design, same level names
        MapSpace(ctx.arch, ctx.problem, load_constraints(flat, d / "constraints.yaml")).encode(m)
    # the exercise's own mapper result (its default problem) has C and M on Y: only the completed
    # reading keeps it
    ex = DATA / "exercises_v4" / "v4_ed_simple_weight_stationary"
    ctx = load_context(d / "arch.yaml", ex / "parsed-processed-input.yaml", ex / "timeloop-mapper.ERT.yaml")
    m = to_arrays([ctx.load_mapping(ex / "timeloop-mapper.map.yaml")], ctx.arch, ctx.problem)
    li, c = _level(ctx, "inter_PE_spatial"), ctx.problem.dims.index("C")
    assert m.spatial_y[0, li, c] > 1
    MapSpace(ctx.arch, ctx.problem, constraints_from_nodes(arch, ctx.problem)).encode(m)
    with pytest.raises(CoexploreError, match="C=3 at inter_PE_spatial"):
        MapSpace(ctx.arch, ctx.problem, constraints_from_nodes(arch)).encode(m)     # the split over [C, M] alone


def test_encode_checks_the_loop_order_at_an_innermost_level_with_a_fan_out_below(tmp_path):
    """With MACs fanned out below the innermost buffer its loop order is a mapspace parameter (as
    in timeloop-mapper): encode refuses an order that breaks the level's permutation constraint."""
    src = (CORPUS / "arches" / "simple_weight_stationary" / "processed.yaml").read_text()
    head, tail = src.split("    - name: mac[1..256]")
    tail = tail.replace("meshX: 16", "meshX: 32", 1).replace("meshY: 16", "meshY: 32", 1)
    arch_file = tmp_path / "processed.yaml"
    arch_file.write_text(head + "    - name: mac[1..1024]" + tail)
    ctx = load_context(arch_file, CORPUS / "layers" / "alexnet_conv3.yaml",
                       CORPUS / "arches" / "simple_weight_stationary" / "ERT.yaml")
    ms = _space(ctx, [{"target": "output_activation_reg", "type": "temporal", "permutation": "MC"}])
    assert not ms.canonical_innermost
    m = _samples(ms, 2000)
    li = _level(ctx, "output_activation_reg")
    M, C = ctx.problem.dims.index("M"), ctx.problem.dims.index("C")
    both = np.flatnonzero((m.temporal[:, li, M] > 1) & (m.temporal[:, li, C] > 1))
    assert len(both)
    one = m.take(both[:1])
    ms.encode(one)                                   # decode's own order: M inside C, as constrained
    perm = list(one.perm[0, li])
    i, j = perm.index(M), perm.index(C)
    perm[i], perm[j] = perm[j], perm[i]
    one.perm[0, li] = perm
    with pytest.raises(CoexploreError, match="orders the loops"):
        ms.encode(one)


def test_a_constraint_key_one_letter_off_is_said_with_the_key_it_resembles():
    from coexplore.spec.constraints import LevelConstraints, _apply
    c = LevelConstraints()
    _apply(c, "temporal", {"factor": "C4", "permutaton": "CM", "no_reuse": ["Weights"]}, "f.yaml", "targets[0]")
    assert c.ignored == ["targets[0].factor (did you mean 'factors'?) in f.yaml",        # (the file: several combine)
                         "targets[0].permutaton (did you mean 'permutation'?) in f.yaml", "targets[0].no_reuse in f.yaml"]
    assert not c.temporal_factors and not c.temporal_permutation      # not applied (as Timeloop ignores them)


def test_a_bypass_at_the_backing_store_is_refused_not_dropped(ex5):
    """Timeloop would apply it; the mapspace keeps every tensor at the outermost level, so the
    constraint is refused (it was silently dropped, and --check-constraints then blamed mappings
    that did bypass there)."""
    for body in ({"bypass": ["Weights"]}, {"keep_only": ["Inputs", "Outputs"]}):
        with pytest.raises(CoexploreError, match="Weights bypassed at MainMemory, the outermost level"):
            _space(ex5, [{"target": "MainMemory", "type": "bypass", **body}])
    _space(ex5, [{"target": "MainMemory", "type": "bypass", "keep": ["Weights"]}])        # keeping is fine


def test_one_block_of_each_kind_is_read_as_timeloop_mapper_reads_it():
    """mapper.cpp: arch_constraints if the key exists, else architecture_constraints; mapspace if it
    exists, else mapspace_constraints; the hidden block is warned of (it would be silently lost)."""
    from coexplore.errors import CoexploreWarning
    from coexplore.spec.constraints import constraint_targets
    a, b = {"target": "A", "type": "temporal"}, {"target": "B", "type": "temporal"}
    for doc, read, hidden in (({"mapspace": {"targets": [a]}, "mapspace_constraints": {"targets": [b]}}, a,
                               "mapspace_constraints"),
                              ({"arch_constraints": [a], "architecture_constraints": {"targets": [b]}}, a,
                               "architecture_constraints")):
        with pytest.warns(CoexploreWarning, match=f"{hidden} is not read"):
            assert list(constraint_targets(doc, "f.yaml")) == [read]
    both = {"architecture_constraints": {"targets": [a]}, "mapspace_constraints": {"targets": [b]}}
    assert list(constraint_targets(both, "f.yaml")) == [a, b]            # one of each kind: both read
    template_only = {"architecture_constraints": {"targets": [a]}, "mapspace": {"template": "uber"}}
    assert list(constraint_targets(template_only, "f.yaml")) == [a]       # (timeloopfe's processed input)


def test_a_keep_list_of_lists_is_refused_by_name(ex5):
    with pytest.raises(CoexploreError) as err:
        constraints_from_targets([{"target": "GlobalBuffer", "type": "bypass", "keep": [["Weights"]]}], ex5.arch)
    assert err.value.key.endswith(".keep") and "dataspace names" in err.value.expected


def test_a_whole_specs_mapping_read_as_constraints_names_its_own_key(tmp_path, capsys):
    """User study: `map whole.yaml` (architecture, problem and mapping in one file) named key
    'targets[0].permutation' of a file 'whole.yaml: mapping' instead of the mapping's own key."""
    from pathlib import Path

    from coexplore.cli.main import main
    first = Path(__file__).resolve().parents[1] / "examples" / "first_design"
    mapping = (first / "k_outer.yaml").read_text() + \
        "- {target: DRAM, type: temporal, factors: [K=4, R=1, P=8], permutation: [K, P, R]}\n"
    whole = tmp_path / "whole.yaml"
    whole.write_text((first / "two_level.yaml").read_text() + (first / "conv1d.yaml").read_text() + mapping)
    assert main(["map", str(whole), "--budget", "50", "--no-cache", "--no-progress", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{whole}: key 'mapping[2].permutation': re-specification of temporal permutation at level DRAM" in err, err
