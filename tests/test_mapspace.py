"""Mapspace: encode/decode round trips, constraint handling, sizes, canonical form."""

import math

import numpy as np
import pytest

from coexplore.mapspace.space import MapSpace
from coexplore.model.inputs import load_context
from coexplore.spec.constraints import load_constraints
from coexplore.spec.mapping import to_arrays

from conftest import CORPUS


def _ctx(arch, layer):
    d = CORPUS / "arches" / arch
    return load_context(d / "processed.yaml", CORPUS / "layers" / f"{layer}.yaml", d / "ERT.yaml")


@pytest.fixture(scope="module")
def eyeriss():
    ctx = _ctx("eyeriss_like", "resnet50_res3a_2b")
    return ctx, MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch))


def test_decoded_mappings_factorise_exactly(eyeriss):
    ctx, ms = eyeriss
    m = ms.decode(ms.sample(np.random.default_rng(0), 2000))
    prod = np.prod(m.temporal * m.spatial_x * m.spatial_y, axis=1)
    assert (prod == np.array(ctx.problem.bounds)[None, :]).all()
    # every loop order is a permutation of the dims
    assert (np.sort(m.perm, axis=2) == np.arange(len(ctx.problem.dims))).all()


def test_constraints_respected(eyeriss):
    ctx, ms = eyeriss
    cons = load_constraints(ctx.arch)
    m = ms.decode(ms.sample(np.random.default_rng(1), 3000))
    inner = list(reversed(ctx.arch.levels))
    dims = ctx.problem.dims
    for li, lv in enumerate(inner):
        c = cons[lv.name]
        for name, (op, n) in c.temporal_factors.items():
            if op == "=":
                assert (m.temporal[:, li, dims.index(name)] == n).all(), (lv.name, name)
        for name, (op, n) in c.spatial_factors.items():
            if op == "=":
                d = dims.index(name)
                assert (m.spatial_x[:, li, d] * m.spatial_y[:, li, d] == n).all(), (lv.name, name)
        if c.keep is not None:
            for s, ds in enumerate(ctx.problem.dataspaces):
                assert (m.keep[:, li, s] == (ds.name in c.keep)).all()
        prefix = [dims.index(x) for x in c.temporal_permutation]
        if li == 0:      # timeloop-mapper keeps the dimension order at the innermost temporal level
            nonunit = [[int(d) for d in m.perm[b, 0] if m.temporal[b, 0, d] > 1] for b in range(len(m))]
            assert all(o == sorted(o) for o in nonunit)
        elif prefix:
            assert (m.perm[:, li, :len(prefix)] == prefix).all()
    # eyeriss' PE columns only fan out on X, the rows only on Y
    col = inner.index(next(lv for lv in inner if lv.name == "inter_PE_column_spatial"))
    row = inner.index(next(lv for lv in inner if lv.name == "inter_PE_spatial"))
    assert (m.spatial_y[:, col] == 1).all() and (m.spatial_x[:, row] == 1).all()
    # a fair share of random points are valid mappings
    res = ctx.evaluate(m)
    assert res.valid.mean() > 0.05


def test_encode_decode_round_trip(eyeriss):
    _, ms = eyeriss
    X = ms.sample(np.random.default_rng(2), 500)
    m = ms.decode(X)
    m2 = ms.decode(ms.encode(m))
    for f in ("temporal", "spatial_x", "spatial_y", "perm", "keep"):
        assert np.array_equal(getattr(m, f), getattr(m2, f)), f


def test_corpus_mapper_mappings_are_in_the_mapspace():
    """Timeloop's own mapper output (made under the same constraints) encodes and decodes back,
    spatial loop order included (decode orders spatial loops as the constraints' permutation), to
    a mapping with Timeloop's numbers."""
    import json
    found = 0
    for case in sorted((CORPUS / "public").glob("*/*/*")):
        exp = json.loads((case / "expected.json").read_text())
        if exp.get("source") != "mapper_best" or case.parts[-3].startswith("simple"):
            continue
        ctx = _ctx(case.parts[-3], case.parts[-2])
        ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch))
        m = to_arrays([ctx.load_mapping(case / "mapping.yaml")], ctx.arch, ctx.problem)
        back = ms.decode(ms.encode(m))
        res = ctx.evaluate(back)
        assert res.valid[0]
        assert int(res.cycles[0]) == exp["cycles"]
        assert float(res.energy_pJ[0]) == pytest.approx(exp["energy_pJ"], rel=1e-9)
        found += 1
    assert found >= 3


def test_encode_refuses_what_breaks_the_constraints(eyeriss):
    """A loop order against a constraint's permutation prefix, or a keep where the constraints
    bypass, is refused by encode (it used to be silently replaced by an allowed mapping)."""
    from coexplore.errors import CoexploreError
    ctx, ms = eyeriss
    names = ctx.arch.level_names()[::-1]                    # arrays: innermost level first
    x = ms.sample(np.random.default_rng(5), 200)
    m = ms.decode(x)
    ms.encode(m)                                            # decoded mappings are in the space
    # a level whose constraints fix the order of (at least) two of the sample's non-unit loops
    hits = [(r, li) for r in range(len(m)) for li in range(ms.L)
            if sum(m.temporal[r, li, d] > 1 for d in ms.perm_prefix[li]) >= 2]
    assert hits, "no sample with two constrained non-unit loops at one level"
    r, li = hits[0]
    bad = m.take([r])
    order = [int(d) for d in bad.perm[0, li]]
    nonunit = [d for d in order if bad.temporal[0, li, d] > 1]
    swapped = iter(nonunit[::-1])                           # reverse the non-unit loops
    bad.perm[0, li] = [next(swapped) if bad.temporal[0, li, d] > 1 else d for d in order]
    with pytest.raises(CoexploreError, match=f"orders the loops at {names[li]}") as e:
        ms.encode(bad)
    dims = ctx.problem.dims
    allowed = "".join(dims[d] for d in order if bad.temporal[0, li, d] > 1)   # the decoded order: what they allow
    assert e.value.message.endswith(f"which order them {allowed}")
    assert f"(permutation {''.join(dims[d] for d in ms.perm_prefix[li])})" in e.value.message
    forced = [(l, s) for l in range(ms.L) for s in range(ms.S)
              if (l, s) not in {(l2, s2) for _, l2, s2 in ms.keep_index} and not m.keep[0, l, s]]
    assert forced
    l, s = forced[0]
    bad = m.take([0])
    bad.keep[0, l, s] = True
    with pytest.raises(CoexploreError, match=f"keeps {ctx.problem.dataspaces[s].name} at {names[l]}"):
        ms.encode(bad)


def test_log10_size_counts_distinct_mappings():
    ctx = _ctx("simple_weight_stationary", "tiny_conv")
    ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch))
    assert 0 < ms.log10_size() <= math.log10(ms.space.size) + 1e-9


def test_canonical_folds_unit_loop_orders(eyeriss):
    _, ms = eyeriss
    X = ms.sample(np.random.default_rng(3), 200)
    C = ms.canonical(X)
    a, b = ms.decode(X), ms.decode(C)
    # same factors and bypass, and the same relative order of every non-unit loop
    assert np.array_equal(a.temporal, b.temporal) and np.array_equal(a.keep, b.keep)
    for i in range(len(X)):
        for li in range(a.temporal.shape[1]):
            na = [d for d in a.perm[i, li] if a.temporal[i, li, d] > 1]
            nb = [d for d in b.perm[i, li] if b.temporal[i, li, d] > 1]
            assert na == nb
    assert np.array_equal(ms.canonical(C), C)


def _simba_res3a():
    """simba_like's folder, architecture, the res3a_2b layer and its constraints file's text."""
    from coexplore.spec.architecture import load_architecture
    from coexplore.spec.problem import load_problem
    adir = CORPUS / "arches" / "simba_like"
    return (adir, load_architecture(adir / "processed.yaml"),
            load_problem(CORPUS / "layers" / "resnet50_res3a_2b.yaml"), (adir / "constraints.yaml").read_text())


def test_keep_without_bypass_leaves_the_rest_to_the_mapper_as_in_timeloop(tmp_path):
    """constraints.yaml (Timeloop's semantics): a dataspace in neither `keep` nor `bypass` is left
    free ('X'); v0.4 node constraints (timeloopfe) and `keep_only` bypass the rest."""
    adir, arch, prob, text = _simba_res3a()
    full = "  - keep:\n    - Inputs\n    bypass:\n    - Weights\n    - Outputs\n    type: bypass\n    target: PEInputBuffer\n"
    assert full in text
    base = MapSpace(arch, prob, load_constraints(arch, adir / "constraints.yaml"))
    names = [ds.name for ds in prob.dataspaces]
    level = [lv.name for lv in reversed(arch.levels)].index("PEInputBuffer")

    def free_at_level(kind):
        f = tmp_path / f"{kind}.yaml"
        f.write_text(text.replace(full, f"  - {kind}:\n    - Inputs\n    type: bypass\n    target: PEInputBuffer\n"))
        ms = MapSpace(arch, prob, load_constraints(arch, f))
        return ms, sorted(names[s] for li, s in ms.keep_params if li == level)

    ms, free = free_at_level("keep")
    assert free == ["Outputs", "Weights"] and ms.base_keep[level, names.index("Inputs")]
    assert len(ms.keep_params) == len(base.keep_params) + 2
    ms, free = free_at_level("keep_only")
    assert free == [] and np.array_equal(ms.base_keep, base.base_keep)
    # v0.4 nodes with keep only: the complement is bypassed (timeloopfe), i.e. the corpus' space
    from coexplore.spec.architecture import load_architecture
    v4 = load_architecture(adir / "arch.yaml")
    assert np.array_equal(MapSpace(v4, prob, load_constraints(v4)).base_keep, base.base_keep)


def test_factors_only_pins_the_other_dimensions_to_1(tmp_path):
    adir, arch, prob, text = _simba_res3a()
    old = "  - type: temporal\n    permutation: N\n    target: GlobalBuffer\n"
    assert old in text
    f = tmp_path / "c.yaml"
    f.write_text(text.replace(old, "  - type: temporal\n    permutation: N\n    factors_only: M=4\n    target: GlobalBuffer\n"))
    ms = MapSpace(arch, prob, load_constraints(arch, f))
    x = ms.sample(np.random.default_rng(0), 200)
    t = ms.decode(x).temporal
    li = [lv.name for lv in reversed(arch.levels)].index("GlobalBuffer")
    m = prob.dims.index("M")
    assert np.all(t[:, li, m] == 4)
    assert np.all(np.delete(t[:, li, :], m, axis=1) == 1)


def test_unapplied_and_unreadable_constraints_are_reported(tmp_path):
    import subprocess
    import sys
    adir = CORPUS / "arches" / "simba_like"
    text = (adir / "constraints.yaml").read_text()
    old = "    permutation: MCRSPQN\n    target: inter_PE_spatial\n"
    assert old in text
    for extra, rc, msg in (("    maximize_dims: [[M, C]]\n", 0, "not applied by the mapspace"),
                           ("    split: len(spec.problem.instance)\n", 2, "split")):
        f = tmp_path / "c.yaml"
        f.write_text(text.replace(old, old + extra))
        r = subprocess.run([sys.executable, "-m", "coexplore.cli.main", "map", str(adir / "processed.yaml"),
                            str(CORPUS / "layers" / "tiny_conv.yaml"), "--constraints", str(f), "--budget", "30",
                            "--no-cache", "--no-progress", "--out", str(tmp_path / "o")],
                           capture_output=True, text=True)
        assert r.returncode == rc and msg in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("arch,layer", [("simba_like", "resnet50_res3a_2b"), ("eyeriss_like", "alexnet_conv1"),
                                        ("simba_like_pe8_glb4k", "bert_qkv")])
def test_innermost_loop_order_changes_no_count(arch, layer):
    """Why the mapspace has no order parameters at an innermost level without fan-out (Timeloop's
    mapper keeps the dimension order there): shuffling those loops changes no metric, while
    shuffling the next level's does for some mappings."""
    import dataclasses
    ctx = _ctx(arch, layer)
    ms = MapSpace(ctx.arch, ctx.problem, {})
    assert ms.canonical_innermost
    rng = np.random.default_rng(3)
    m = ms.decode(ms.sample(rng, 3000))
    ref = ctx.evaluate(m)
    v = ref.valid
    assert v.sum() > 20
    changed = []
    for li in (0, 1):
        m2 = dataclasses.replace(m, perm=m.perm.copy())
        for b in range(len(m)):
            m2.perm[b, li] = rng.permutation(m2.perm[b, li])
        got = ctx.evaluate(m2)
        changed.append(not (np.array_equal(got.cycles[v], ref.cycles[v])
                            and np.array_equal(got.energy_pJ[v], ref.energy_pJ[v])))
    multi = [(m.temporal[b, 0] > 1).sum() > 1 for b in np.flatnonzero(v)]
    assert any(multi)              # some valid mappings have several loops to reorder there
    assert changed[0] is False
    inner = list(reversed(ctx.arch.levels))
    if not inner[1].is_dummy:
        assert changed[1] is True


def test_innermost_order_follows_timeloop_mapper_not_the_constraint():
    """Official exercise 05 ('baked'): the constraints fix every factor and give RegisterFile the
    permutation RPK, yet timeloop-mapper's result orders K innermost (KRP: the problem's dimension
    order); the one mapping of the mapspace is Timeloop's, loop for loop, and the reference
    mappings of 'baked' and 'freebypass' lie in their mapspaces."""
    from coexplore.spec.problem import load_problem
    from coexplore.spec.architecture import load_architecture
    ex = CORPUS.parent / "exercises_v4"
    for case in ("v4_ex05_mapper_conv1d_oc_3level_baked", "v4_ex05_mapper_conv1d_oc_3level_freebypass"):
        inp = ex / case / "parsed-processed-input.yaml"
        arch, prob = load_architecture(inp), load_problem(inp)
        ms = MapSpace(arch, prob, load_constraints(arch, inp))
        from coexplore.spec.mapping import load_mapping
        ref = to_arrays([load_mapping(ex / case / "timeloop-mapper.map.yaml", arch, prob)], arch, prob)
        X = ms.encode(ref)
        got = ms.decode(X)
        assert np.array_equal(got.temporal, ref.temporal) and np.array_equal(got.keep, ref.keep)
        for li in range(ms.L):
            order = [[prob.dims[d] for d in a.perm[0, li] if a.temporal[0, li, d] > 1] for a in (got, ref)]
            assert order[0] == order[1]
        if case.endswith("baked"):
            assert ms.log10_size() == 0.0
            assert [prob.dims[d] for d in got.perm[0, 0] if got.temporal[0, 0, d] > 1] == ["K", "R"]
            assert list(got.perm[0, 0]) == list(range(len(prob.dims)))     # Timeloop's written KRP


def test_encoding_a_corpus_mapping_keeps_its_numbers_or_refuses_it():
    """Every valid mapping of the bundled corpus, in its architecture's constrained mapspace: encode
    refuses it (it breaks a constraint: a factor, a loop order, the spatial loop order, a bypass) or
    decode(encode(m)) evaluates to Timeloop's numbers. Eyeriss-like 8x16's tiny_conv case 019 orders
    S before C spatially against the constraints' NPQRSCM (216 cycles instead of 234 after a
    round trip, before the spatial order was checked)."""
    import json
    from coexplore.errors import CoexploreError
    from coexplore.model.inputs import load_context
    from coexplore.spec.constraints import load_constraints
    from coexplore.spec.mapping import to_arrays
    refused, kept = [], 0
    for exp in sorted(CORPUS.glob("public/*/*/*/expected.json")):
        e = json.loads(exp.read_text())
        if not e["valid"]:
            continue
        arch, layer = exp.parts[-4], exp.parts[-3]
        ctx = load_context(CORPUS / "arches" / arch / "processed.yaml", CORPUS / "layers" / f"{layer}.yaml")
        arrays = to_arrays([ctx.load_mapping(exp.parent / "mapping.yaml")], ctx.arch, ctx.problem)
        ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch))
        try:
            x = ms.encode(arrays)
        except CoexploreError as exc:
            refused.append((exp.parent, exc.message))
            continue
        r = ctx.evaluate(ms.decode(x))
        assert r.cycles[0] == e["cycles"] and r.energy_pJ[0] == pytest.approx(e["energy_pJ"], rel=1e-9), exp.parent
        kept += 1
    assert kept > 100
    case = CORPUS / "public" / "eyeriss_like_45nm_pe8x16_glb8k" / "tiny_conv" / "019"
    assert any(f == case and "spatial loops at inter_PE_spatial as CS" in m for f, m in refused), refused


@pytest.mark.parametrize("arch", ["simple_weight_stationary", "eyeriss_like"])
def test_a_dimension_is_split_over_x_or_y_never_both(arch):
    """Timeloop's mapping has one spatial factor per (level, dimension), on X or on Y: decoded
    points of the unconstrained space (whose primes may land on either axis) merge them so."""
    ctx = load_context(CORPUS / "arches" / arch / "processed.yaml", CORPUS / "layers" / "alexnet_conv3.yaml")
    ms = MapSpace(ctx.arch, ctx.problem)
    m = ms.decode(ms.sample(np.random.default_rng(0), 2000))
    assert ((m.spatial_x > 1) | (m.spatial_y > 1)).any()
    assert not ((m.spatial_x > 1) & (m.spatial_y > 1)).any()
    t, sx, sy = ms.decode_factors(ms.sample(np.random.default_rng(0), 2000))
    assert np.array_equal(sx, m.spatial_x) and np.array_equal(sy, m.spatial_y)


_ARCH_2D = """architecture:
  version: 0.3
  subtree:
  - name: sys
    local:
    - name: DRAM
      class: DRAM
      attributes: {width: 64, word-bits: 8}
    subtree:
    - name: PE[0..15]
      local:
      - name: buf
        class: regfile
        attributes: {depth: 64, width: 8, word-bits: 8, meshX: MESHX}
      - name: mac
        class: intmac
        attributes: {datawidth: 8, meshX: MESHX}
"""
_GEMM = """problem:
  shape: {name: GEMM, dimensions: [C, M, P], data-spaces: [{name: A, projection: [[[C]], [[P]]]},
          {name: B, projection: [[[C]], [[M]]]}, {name: Z, projection: [[[M]], [[P]]], read-write: true}]}
  instance: {C: 4, M: 4, P: 2}
"""


def _fixed_spatial(tmp_path, mesh_x: int, directive: str = "factors: C=4 M=4"):
    from coexplore.spec.architecture import load_architecture
    from coexplore.spec.problem import load_problem
    tmp_path.mkdir()
    (tmp_path / "arch.yaml").write_text(_ARCH_2D.replace("MESHX", str(mesh_x)))
    (tmp_path / "prob.yaml").write_text(_GEMM)
    (tmp_path / "c.yaml").write_text("mapspace_constraints:\n  targets:\n"
                                     f"  - {{target: DRAM, type: spatial, {directive}}}\n")
    arch = load_architecture(tmp_path / "arch.yaml")
    return MapSpace(arch, load_problem(tmp_path / "prob.yaml"), load_constraints(arch, tmp_path / "c.yaml"))


def test_fixed_spatial_factors_without_a_split_go_on_either_axis_as_timeloop_tries(tmp_path):
    """Spatial factors C=4 M=4 with no permutation/split on a 4x4 fan-out: Timeloop's mapper tries
    every split, so C on X with M on Y (the only way both fit) is in the mapspace, and such a
    mapping encodes and decodes to itself. With only a Y fan-out the factor goes on Y."""
    from coexplore.mapspace.enumerate import canonical_points, count_canonical
    from coexplore.mapspace.sampling import fanouts
    ms = _fixed_spatial(tmp_path / "a", 4)
    fx, fy = fanouts(ms.arch)
    li = 1                                                   # DRAM (innermost first: buf, DRAM)
    assert fx[li] == 4 and fy[li] == 4
    pts = np.concatenate(list(canonical_points(ms)))
    a = ms.decode(pts)
    C, M = ms.problem.dims.index("C"), ms.problem.dims.index("M")
    fits = (a.spatial_x[:, li].prod(axis=1) <= 4) & (a.spatial_y[:, li].prod(axis=1) <= 4)
    assert fits.any() and len(pts) == count_canonical(ms)
    split = (a.spatial_x[:, li, C] == 4) & (a.spatial_y[:, li, M] == 4)
    assert split.any() and ((a.spatial_y[:, li, C] == 4) & (a.spatial_x[:, li, M] == 4)).any()
    assert np.array_equal(ms.canonical(ms.encode(a.take(np.flatnonzero(fits)))), ms.canonical(pts[fits]))
    only_y = _fixed_spatial(tmp_path / "b", 1)
    fx, fy = fanouts(only_y.arch)
    assert fx[li] == 1 and fy[li] == 16 and not only_y.axis_index
    b = only_y.decode(only_y.sample(np.random.default_rng(0), 20))
    assert (b.spatial_y[:, li, C] == 4).all() and (b.spatial_x[:, li, C] == 1).all()


@pytest.mark.parametrize("directive, allowed", [
    # the permutation fixed, the split enumerated: C (listed first) on X before M on Y, never M on X with C on Y
    ("factors: C=2 M=2, permutation: [C, M]", {("X", "X"), ("X", "Y"), ("Y", "Y")}),
    # the split fixed, the permutation enumerated: one loop on X at most
    ("factors: C=2 M=2, split: 1", {("X", "Y"), ("Y", "X"), ("Y", "Y")}),
    ("factors: C=2 M=2", {("X", "X"), ("X", "Y"), ("Y", "X"), ("Y", "Y")}),
    # a split with a partial permutation: C listed at position 0 (< split: X); M unlisted, after it (Y)
    ("factors: C=2 M=2, permutation: [C], split: 1", {("X", "Y")}),
])
def test_a_given_permutation_or_split_limits_the_axes_as_timeloop_mapper_does(tmp_path, directive, allowed):
    """On a 4x4 fan-out with fixed C=2 M=2, the mapspace (its enumeration, counted and listed)
    holds exactly the X/Y placements timeloop-mapper can make from the constraint."""
    from coexplore.mapspace.enumerate import canonical_points, count_canonical
    ms = _fixed_spatial(tmp_path / "s", 4, directive)
    pts = np.concatenate(list(canonical_points(ms)))
    assert len(pts) == count_canonical(ms)
    a = ms.decode(pts)
    li, C, M = 1, ms.problem.dims.index("C"), ms.problem.dims.index("M")
    got = {("X" if a.spatial_x[i, li, C] > 1 else "Y", "X" if a.spatial_x[i, li, M] > 1 else "Y")
           for i in range(len(pts))}
    assert got == allowed


def test_the_size_bound_holds_with_axis_choices(tmp_path, monkeypatch):
    """Above the exact-count limit, log10_size is an upper bound: it counts the X/Y choices too."""
    import coexplore.mapspace.space as space_mod
    from coexplore.mapspace.enumerate import count_canonical
    ms = _fixed_spatial(tmp_path / "s", 4)
    exact = count_canonical(ms)
    monkeypatch.setattr(space_mod, "EXACT_SIZE_LIMIT", 0)
    assert ms.log10_size() >= math.log10(exact) - 1e-9 and ms.size_exact is None


def test_a_split_on_a_one_axis_array_still_counts(tmp_path):
    """`split: 1` on a 16-wide X-only array: the loops after the first position go to Y, which
    does not fan out, so at most one loop of factor > 1 is spread over X."""
    ms = _fixed_spatial(tmp_path / "s", 16, "split: 1")
    a = ms.decode(ms.sample(np.random.default_rng(0), 3000))
    ok = ms.satisfies(a)
    on_x = (a.spatial_x[:, 1] > 1).sum(axis=1)
    assert ok.any() and (on_x[ok] <= 1).all() and (on_x > 1).any() and not ok[on_x > 1].any()


def test_a_split_without_a_permutation_on_a_one_axis_array_keeps_the_canonical_order(tmp_path):
    """timeloop-mapper gives a 1-D level without a permutation the canonical order, so `split: 2`
    puts exactly the first two dimensions (C, M) on X: a factor of P > 1 cannot spread there."""
    ms = _fixed_spatial(tmp_path / "s", 16, "split: 2")
    a = ms.decode(ms.sample(np.random.default_rng(1), 3000))
    ok = ms.satisfies(a)
    P = ms.problem.dims.index("P")
    assert ok.any() and (a.spatial_x[ok, 1, P] == 1).all() and (a.spatial_x[:, 1, P] > 1).any()


def test_fixed_spatial_factors_beyond_the_fan_out_are_refused_up_front(tmp_path):
    """eyeriss_like's PE columns fan out 14 (X): M=8 fits, M=8 with Q=6 (48) leaves no valid mapping
    (a search would spend its whole budget and find none): refused naming the factors and the level."""
    from coexplore.errors import CoexploreError
    ctx = load_context(CORPUS / "arches" / "eyeriss_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml")
    text = (CORPUS / "arches" / "eyeriss_like" / "constraints.yaml").read_text()
    old = "    factors: N=1,C=1,P=1,R=1,S=1\n    permutation: NCPRSQM\n    split: 999\n    target: inter_PE_column_spatial\n"
    assert old in text
    f = tmp_path / "c.yaml"
    f.write_text(text.replace(old, old.replace("S=1\n", "S=1,M=8\n")))
    ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch, f))          # fits: 8 of 14
    x = ms.sample(np.random.default_rng(0), 50)
    li = [lv.name for lv in reversed(ctx.arch.levels)].index("inter_PE_column_spatial")
    assert np.all(ms.decode(x).spatial_x[:, li, ctx.problem.dims.index("M")] == 8)
    f.write_text(text.replace(old, old.replace("S=1\n", "S=1,M=8,Q=6\n")))
    with pytest.raises(CoexploreError, match=r"the fixed spatial factors \(inter_PE_column_spatial: M=8 Q=6\) need an X "
                                             r"mesh of 48 at inter_PE_spatial, which has 14 x 1 \(X x Y\)") as info:
        MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch, f))
    assert info.value.key.startswith("architecture_constraints.targets[") and info.value.key.endswith("].factors") and info.value.file == str(f)


def test_a_first_stop_ends_a_count_or_walk_of_the_enumeration(tmp_path, monkeypatch):
    """User study: exhaustive search with a large max_size counted for minutes through a first
    Ctrl-C ('stopping after the batch') and a SIGTERM: the enumeration now stops at the next chunk."""
    from coexplore.mapspace.enumerate import canonical_points, count_canonical
    from coexplore.stops import DeferredInterrupt
    ms = _fixed_spatial(tmp_path / "s", 4)
    assert count_canonical(ms) > 0
    monkeypatch.setattr(DeferredInterrupt, "requested", True)
    with pytest.raises(KeyboardInterrupt):
        count_canonical(ms)
    with pytest.raises(KeyboardInterrupt):
        next(canonical_points(ms))
