"""Timeloop inputs the reader must take as Timeloop/timeloopfe do, and API misuse that must give
a CoexploreError rather than a Python error (found by a user review)."""

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

from coexplore.errors import CoexploreError, CoexploreWarning
from coexplore.mapspace.space import MapSpace
from coexplore.model.inputs import Context, load_context
from coexplore.model.evaluate import level_costs
from coexplore.search.registry import make_searcher, mapper_spec
from coexplore.spec.architecture import load_architecture
from coexplore.spec.constraints import LevelConstraints, load_constraints
from coexplore.spec.ert import parse_ert

from conftest import CORPUS

ADIR = CORPUS / "arches" / "simba_like"
LAYER = CORPUS / "layers" / "alexnet_conv1.yaml"
CASE = CORPUS / "public" / "simba_like" / "alexnet_conv1" / "019"   # a valid case


def test_ert_without_leak_actions_means_no_leakage():
    """Accelergy 0.3 tables have no leak action: the result is Timeloop's minus its leakage."""
    data = yaml.safe_load((ADIR / "ERT.yaml").read_text())
    for table in data["ERT"]["tables"]:
        table["actions"] = [a for a in table["actions"] if a["name"] != "leak"]
    ctx = load_context(ADIR / "processed.yaml", LAYER)
    ert = parse_ert(data, "no-leak ERT")
    ctx = Context(ctx.arch, ctx.problem, ert, level_costs(ctx.arch, ert))
    rec = ctx.record(ctx.evaluate_mappings(str(CASE / "mapping.yaml")), 0)
    exp = json.loads((CASE / "expected.json").read_text())
    leakage = sum(v.get("leakage_pJ") or 0.0 for v in exp["levels"].values())
    assert leakage > 0
    assert rec["cycles"] == exp["cycles"]
    assert rec["energy_pJ"] == pytest.approx(exp["energy_pJ"] - leakage, rel=1e-12)


def _v4_variant(tmp_path, edit):
    text = edit((ADIR / "arch.yaml").read_text())
    f = tmp_path / "arch.yaml"
    f.write_text(text)
    return f


def test_bare_nothing_and_disabled_components_are_skipped(tmp_path):
    base = load_architecture(ADIR / "arch.yaml").level_names()
    nothing = _v4_variant(tmp_path, lambda t: t.replace("  - !Container # Each PE works",
                                                        "  - !Nothing\n  - !Container # Each PE works", 1))
    assert load_architecture(nothing).level_names() == base
    disabled = _v4_variant(tmp_path, lambda t: t.replace(
        "  - !Container # Each PE works",
        "  - !Component\n    name: spare\n    class: SRAM\n    enabled: false\n    attributes: {depth: 8, width: 8}\n"
        "  - !Container # Each PE works", 1))
    assert load_architecture(disabled).level_names() == base


@pytest.mark.parametrize("cls", ["aladdin_register", "dram", "Compute"])
def test_components_of_classes_timeloop_ignores_are_dropped_with_a_warning(tmp_path, cls):
    """Timeloop's topology keeps a component only when its class contains a buffer name (DRAM,
    SRAM, regfile, smartbuffer, storage) or a compute name (mac, compute), case-sensitive; it
    ignores any other, so the numbers are those of the architecture without it."""
    text = (ADIR / "processed.yaml").read_text().replace(
        "    local:\n    - name: DRAM[1..1]",
        f"    local:\n    - name: pipe_reg[1..1]\n      class: {cls}\n      attributes: {{depth: 4, width: 8}}\n"
        "    - name: DRAM[1..1]", 1)
    f = tmp_path / "processed.yaml"
    f.write_text(text)
    with pytest.warns(CoexploreWarning, match=f"pipe_reg: class '{cls}'.*Timeloop ignores"):
        ctx = load_context(f, LAYER, ADIR / "ERT.yaml")
    assert ctx.arch.level_names() == load_architecture(ADIR / "processed.yaml").level_names()
    rec = ctx.record(ctx.evaluate_mappings(str(CASE / "mapping.yaml")), 0)
    exp = json.loads((CASE / "expected.json").read_text())
    assert rec["cycles"] == exp["cycles"]
    assert rec["energy_pJ"] == pytest.approx(exp["energy_pJ"], rel=1e-12)
    v4 = _v4_variant(tmp_path, lambda t: t.replace(
        "  - !Container # Each PE works",
        f"  - !Component\n    name: pipe_reg\n    class: {cls}\n    attributes: {{depth: 8, width: 8}}\n"
        "  - !Container # Each PE works", 1))
    arch = load_architecture(v4)
    assert arch.level_names() == load_architecture(ADIR / "arch.yaml").level_names()
    assert any("pipe_reg" in w for w in arch.warnings)


def test_network_classes_as_timeloop_tells_them(tmp_path):
    """Timeloop's isNetworkClass: a class containing XY_NoC, Legacy, ReductionTree or
    SimpleMulticast (case matters) is a network, which coexplore refuses; `legacy` is no class
    Timeloop knows, so it is dropped with a warning like any other."""
    def variant(cls):
        text = (ADIR / "processed.yaml").read_text().replace(
            "    local:\n    - name: DRAM[1..1]",
            f"    local:\n    - name: noc[1..1]\n      class: {cls}\n    - name: DRAM[1..1]", 1)
        f = tmp_path / f"{cls}.yaml"
        f.write_text(text)
        return f
    with pytest.raises(CoexploreError, match="is a network"):
        load_architecture(variant("XY_NoC_mesh"))
    arch = load_architecture(variant("legacy"))
    assert any("noc: class 'legacy'" in w for w in arch.warnings)


def test_the_compute_unit_may_be_listed_before_buffers_of_its_subtree(tmp_path):
    """Timeloop's topology makes the compute unit level 0 wherever its `local` list has it (the
    official v3 simple weight-stationary design lists the MAC before the PE's registers): the
    same levels and Timeloop's numbers as with the MAC listed last."""
    wdir = CORPUS / "arches" / "simple_weight_stationary"
    text = (wdir / "processed.yaml").read_text()
    head, mac = text.split("    - name: mac[1..256]")
    moved = head.replace("    - name: weight_reg[1..256]", "    - name: mac[1..256]" + mac.rstrip("\n") +
                         "\n    - name: weight_reg[1..256]", 1)
    f = tmp_path / "processed.yaml"
    f.write_text(moved)
    assert load_architecture(f).level_names() == load_architecture(wdir / "processed.yaml").level_names()
    case = CORPUS / "public" / "simple_weight_stationary" / "alexnet_conv3"
    case = next(c for c in sorted(case.iterdir()) if json.loads((c / "expected.json").read_text())["valid"])
    ctx = load_context(f, CORPUS / "layers" / "alexnet_conv3.yaml", wdir / "ERT.yaml")
    rec = ctx.record(ctx.evaluate_mappings(str(case / "mapping.yaml")), 0)
    exp = json.loads((case / "expected.json").read_text())
    assert rec["cycles"] == exp["cycles"] and rec["energy_pJ"] == pytest.approx(exp["energy_pJ"], rel=1e-12)


def test_a_dropped_mac_is_named_where_the_compute_unit_is_missing(tmp_path):
    text = (ADIR / "processed.yaml").read_text().replace("class: intmac", "class: MAC")
    f = tmp_path / "processed.yaml"
    f.write_text(text)
    with pytest.raises(CoexploreError, match="not a compute unit.*mac: class 'MAC'.*Timeloop ignores"):
        load_architecture(f)


def test_spatial_mesh_on_a_component_replicates_it_below_a_dummy_level(tmp_path):
    """timeloopfe's transpile: a component's own mesh places `inter_<name>_spatial`, then the copies."""
    base = load_architecture(ADIR / "arch.yaml")
    f = _v4_variant(tmp_path, lambda t: t.replace("    name: GlobalBuffer\n",
                                                  "    name: GlobalBuffer\n    spatial: {meshX: 4}\n", 1))
    arch = load_architecture(f)
    names = base.level_names()
    i = names.index("GlobalBuffer")
    assert arch.level_names() == names[:i] + ["inter_GlobalBuffer_spatial"] + names[i:]
    assert [lv.instances for lv in arch.levels[i + 1:]] == [4 * lv.instances for lv in base.levels[i:]]


def test_api_misuse_gives_coexplore_errors():
    ctx = load_context(ADIR / "processed.yaml", LAYER)
    ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch, ADIR / "constraints.yaml"))
    # a dict config is checked and converted
    spec = mapper_spec("ga", {"population": 10})
    assert spec.config.population == 10
    with pytest.raises(CoexploreError, match="populaton"):
        mapper_spec("ga", {"populaton": 10})
    # a layer's MapSpace is accepted where a DiscreteSpace is expected
    s = make_searcher("ga", ms, seed=0)
    x = s.ask(8)
    assert x.shape == (8, ms.n_params)
    with pytest.raises(CoexploreError, match="losses for a batch of 8"):
        s.tell(x, np.zeros(3))
    # constraints naming a level the architecture does not have
    with pytest.raises(CoexploreError, match="unknown level 'GlobalBufer'"):
        MapSpace(ctx.arch, ctx.problem, {"GlobalBufer": LevelConstraints()})
    # mapping paths are accepted by evaluate_mappings
    res = ctx.evaluate_mappings([str(CASE / "mapping.yaml")])
    assert res.cycles[0] == json.loads((CASE / "expected.json").read_text())["cycles"]
    # out-of-range or misshapen parameter vectors are refused by decode
    x = s.ask(2)
    for bad in (x[:, :-1], x[0], np.where(np.arange(ms.n_params) == 0, ms.space.cardinalities, x)):
        with pytest.raises(CoexploreError):
            ms.decode(bad)
    # hand-built arrays: a loop order that is no permutation, a factor 0, a 2-D array
    arrays = ms.decode(x)
    for field, value in (("perm", np.zeros_like(arrays.perm)), ("temporal", np.zeros_like(arrays.temporal)),
                         ("spatial_x", arrays.spatial_x[0])):
        broken = ms.decode(x)
        setattr(broken, field, value)
        with pytest.raises(CoexploreError, match=f"MappingArrays.{field}"):
            ctx.evaluate(broken)
    # 0/1 keep and integral floats are the same mapping
    alt = ms.decode(x)
    alt.keep, alt.temporal = alt.keep.astype(int), alt.temporal.astype(float)
    assert ctx.record(ctx.evaluate(alt)) == ctx.record(ctx.evaluate(arrays))
    # a mapping read for another architecture
    other = CORPUS / "arches" / "eyeriss_like"
    octx = load_context(other / "processed.yaml", LAYER, other / "ERT.yaml")
    with pytest.raises(CoexploreError, match="level.* this architecture does not have"):
        octx.evaluate_mappings([ctx.load_mapping(CASE / "mapping.yaml")])


def test_bundled_names_in_the_python_api():
    from coexplore.arch.system import load_system_arch
    from coexplore.search.registry import load_mapper
    assert load_mapper("marl") == load_mapper(CORPUS.parents[2] / "mappers" / "marl.yaml")
    assert list(load_system_arch("hetero_2simba_2eyeriss").cores) == ["simba", "eyeriss"]


def test_constraints_inside_a_parsed_processed_input_apply():
    """timeloopfe's parsed-processed-input.yaml carries `architecture_constraints` in the same
    file; they constrain the mapspace as timeloop-mapper applies them (the 'baked' exercise fixes
    every factor, so one mapping is left; the 'null' one leaves a real space)."""
    from coexplore.spec.problem import load_problem
    ex = Path(__file__).parent / "data" / "exercises_v4"
    sizes = {}
    for case in ("v4_ex05_mapper_conv1d_oc_3level_baked", "v4_ex05_mapper_conv1d_oc_3level_null"):
        inp = ex / case / "parsed-processed-input.yaml"
        arch = load_architecture(inp)
        cons = load_constraints(arch)
        assert cons == load_constraints(arch, inp)
        sizes[case] = MapSpace(arch, load_problem(inp), cons).log10_size()
        if case.endswith("baked"):
            assert cons["RegisterFile"].temporal_factors["R"][1] == 3
            assert cons["RegisterFile"].temporal_permutation[:2] == ["R", "P"]
    assert sizes["v4_ex05_mapper_conv1d_oc_3level_baked"] == 0.0
    assert sizes["v4_ex05_mapper_conv1d_oc_3level_null"] > 3


# a GEMM whose dimension names are longer than one letter
GEMM_LONG_NAMES = {"problem": {"version": 0.4, "shape": {
    "name": "GEMM", "dimensions": ["Mm", "Nn", "Kk"],
    "data_spaces": [{"name": "A", "projection": [[["Mm"]], [["Kk"]]]},
                    {"name": "B", "projection": [[["Kk"]], [["Nn"]]]},
                    {"name": "Z", "projection": [[["Mm"]], [["Nn"]]], "read_write": True}]},
    "instance": {"Mm": 8, "Nn": 12, "Kk": 6}}}


def test_map_notes_that_timeloop_cannot_read_multi_letter_permutations(tmp_path, capsys):
    """Timeloop reads a permutation one letter per dimension: `coexplore map` says so when the layer
    has longer dimension names (the mapping is still written, and coexplore reads it)."""
    from coexplore.cli.main import main
    (tmp_path / "gemm.yaml").write_text(yaml.safe_dump(GEMM_LONG_NAMES))
    adir = CORPUS / "arches" / "simple_weight_stationary"
    (tmp_path / "none.yaml").write_text("architecture_constraints: {targets: []}\n")
    rc = main(["map", str(adir / "processed.yaml"), str(tmp_path / "gemm.yaml"), "--constraints",
               str(tmp_path / "none.yaml"), "--searcher", "random", "--budget", "300", "--no-cache",
               "--no-progress", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "Mm, Nn, Kk space-separated" in err and "timeloop-model cannot" in err


def test_multi_letter_dimensions_round_trip_through_a_written_mapping(tmp_path):
    """Dimension names longer than one letter: the written mapping (space-separated loop order)
    reads back to the same mapping and the same numbers."""
    from coexplore.spec.mapping import save_mapping, to_arrays
    (tmp_path / "gemm.yaml").write_text(yaml.safe_dump(GEMM_LONG_NAMES))
    adir = CORPUS / "arches" / "simple_weight_stationary"
    ctx = load_context(adir / "processed.yaml", tmp_path / "gemm.yaml", adir / "ERT.yaml")
    ms = MapSpace(ctx.arch, ctx.problem, {})
    arrays = ms.decode(ms.sample(np.random.default_rng(0), 300))
    res = ctx.evaluate(arrays)
    checked = 0
    for b in np.flatnonzero(res.valid)[:5]:
        save_mapping(tmp_path / "m.yaml", arrays, int(b), ctx.arch, ctx.problem)
        back = to_arrays([ctx.load_mapping(tmp_path / "m.yaml")], ctx.arch, ctx.problem)
        assert np.array_equal(back.perm[0], arrays.perm[b]) and np.array_equal(back.temporal[0], arrays.temporal[b])
        assert ctx.record(ctx.evaluate(back)) == ctx.record(res, int(b))
        checked += 1
    assert checked


@pytest.mark.parametrize("name", ["v4_ex06_mapper_eyeriss_vgg02_layer5", "v4_ed_eyeriss_like", "v4_ed_simba_like"])
def test_loop_nest_reads_like_timeloops_map_txt(name):
    """The loop nest of official exercise mappings, line for line as Timeloop printed it in map.txt:
    headers with `Inputs:24 (24)`, dash lines, loops, and the dash line under an innermost level
    that holds only the compute (simba_like's PEWeightRegs)."""
    from coexplore.model.inputs import load_context
    from coexplore.spec.loopnest import format_loop_nest
    from coexplore.spec.mapping import to_arrays
    case = Path(__file__).parent / "data" / "exercises_v4" / name
    ppi = case / "parsed-processed-input.yaml"
    with warnings.catch_warnings():          # timeloopfe's H, W, Hpad, Wpad instance keys are not typos
        warnings.simplefilter("error", CoexploreWarning)
        ctx = load_context(ppi, ppi, case / "timeloop-mapper.ERT.yaml")
    m = to_arrays([ctx.load_mapping(case / "timeloop-mapper.map.yaml")], ctx.arch, ctx.problem)
    got = format_loop_nest(m, 0, ctx.arch, ctx.problem, ctx.record(ctx.evaluate(m), 0))
    ref = (case / "timeloop-mapper.map.txt").read_text()

    def lines(text):
        return [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    assert lines(got) == lines(ref)


@pytest.mark.parametrize("name", ["v4_ed_simba_like", "v4_ed_eyeriss_like", "v4_ed_simple_weight_stationary"])
def test_written_mappings_have_a_spatial_directive_at_every_fan_out(name):
    """Timeloop before 2022 exits on a spatial level without its directive ("ERROR: parsing
    mapping: permutation not found for level"; today's warns and fills in 1s), and timeloop-mapper
    writes none at an unused fan-out (simba_like's inter_reg_mac_spatial, fan-out 4). coexplore
    writes one at every level with a fan-out, all 1s where unused, and the same factors as
    timeloop-mapper's where it writes one; none at a level without a fan-out."""
    from coexplore.spec.mapping import from_arrays, to_arrays
    case = Path(__file__).parent / "data" / "exercises_v4" / name
    ppi = case / "parsed-processed-input.yaml"
    ctx = load_context(ppi, ppi, case / "timeloop-mapper.ERT.yaml")
    ref = yaml.safe_load((case / "timeloop-mapper.map.yaml").read_text())["mapping"]
    arrays = to_arrays([ctx.load_mapping(case / "timeloop-mapper.map.yaml")], ctx.arch, ctx.problem)
    ours = {e["target"]: e for e in from_arrays(arrays, 0, ctx.arch, ctx.problem) if e["type"] == "spatial"}
    fanning = {lv.name for i, lv in enumerate(ctx.arch.levels) if np.prod(ctx.arch.fanout(i)) > 1}
    assert set(ours) == fanning
    factors = {}
    for e in ref:
        if e["type"] == "spatial":
            text = " ".join(e["factors"]) if isinstance(e["factors"], list) else e["factors"]
            factors[e["target"]] = {d: int(n) for d, n in re.findall(r"([A-Za-z]+)\s*=?\s*(\d+)", text)}
    assert factors and set(factors) <= set(ours)
    for target, entry in ours.items():
        written = {d: int(n) for d, n in re.findall(r"([A-Za-z]+)(\d+)", entry["factors"])}
        assert written == {d: factors.get(target, {}).get(d, 1) for d in ctx.problem.dims}
        assert sorted(entry["permutation"]) == sorted(ctx.problem.dims)      # every dimension, as v0.3 asks


def test_a_compute_unit_outside_the_fan_out_of_the_buffers_below_it_is_refused(tmp_path):
    """Listed before the 16x16 PE container, the MAC has 1 instance under 256 registers: Timeloop's
    FloorPlan asserts on it; coexplore names the levels (listed inside the PE, it is fine)."""
    src = (CORPUS / "arches" / "simple_weight_stationary" / "arch.yaml").read_text()
    mac = src[src.index("  - !Component # MAC unit"):]
    base = src[:src.index("  - !Component # MAC unit")]
    i = base.index("  - !Container # Array of PEs")
    f = tmp_path / "arch.yaml"
    f.write_text(base[:i] + mac.rstrip("\n") + "\n\n" + base[i:])
    with pytest.raises(CoexploreError, match="not a multiple of the 256"):
        load_architecture(f)
    i = base.index("  - !Component # PE Scratchpad")
    f.write_text(base[:i] + mac.rstrip("\n") + "\n\n" + base[i:])
    arch = load_architecture(f)
    assert arch.compute.name == "mac" and arch.compute.instances == 256
