"""Timeloop's loop-nest printout (map.txt) read as a mapping: what a v0.3 timeloop-mapper run leaves
of its best mapping. Checked against the numbers Timeloop printed for the same run (expected.json)."""

import json
import warnings
from pathlib import Path

import pytest

from coexplore.cli.main import main
from coexplore.errors import CoexploreError
from coexplore.model.inputs import load_context
from coexplore.spec.map_txt import looks_like_map_txt, parse_map_txt

DATA = Path(__file__).parent / "data" / "exercises_v3"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "map.txt").is_file())


def _context(d: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = load_context(d / "arch.yaml", d / "problem.yaml", d / "ERT.yaml")
    ctx.stride_rule = "v0.3"
    return ctx


def test_the_bundled_printouts_are_there():
    assert len(CASES) == 3


@pytest.mark.parametrize("case", CASES)
def test_a_printout_evaluates_to_the_numbers_timeloop_printed_with_it(case):
    d = DATA / case
    ctx = _context(d)
    ref = json.loads((d / "expected.json").read_text())
    rec = ctx.record(ctx.evaluate_mappings(d / "map.txt"))
    assert rec["valid"] and rec["cycles"] == ref["cycles"]
    assert rec["energy_pJ"] == pytest.approx(ref["energy_pJ"], rel=1e-9, abs=0.02)
    for lv, spaces in ref["levels"].items():
        for ds, want in spaces.items():
            got = rec["levels"][lv]["dataspaces"][ds]
            assert (got["reads"], got["fills"], got["updates"]) == (want["reads"], want["fills"], want["updates"])
    same = ctx.record(ctx.evaluate_mappings(d / "mapping.yaml"))     # the same mapping written as YAML
    assert same["energy_pJ"] == rec["energy_pJ"] and same["cycles"] == rec["cycles"]


def test_spatial_loops_split_x_before_y_and_headers_give_keep_and_bypass():
    text = (DATA / "v3_bd_simba_like_alexnet1" / "map.txt").read_text()
    directives = parse_map_txt(text, ["Weights", "Inputs", "Outputs"])
    acc = [x for x in directives if x["target"] == "PEAccuBuffer"]
    temporal, spatial, bypass = (next(x for x in acc if x["type"] == t) for t in ("temporal", "spatial", "bypass"))
    assert temporal["factors"] == "M=2" and spatial["factors"] == "C=3" and spatial["split"] == 0   # C: Spatial-Y
    assert bypass == {"target": "PEAccuBuffer", "type": "bypass", "keep": ["Outputs"], "bypass": ["Weights", "Inputs"]}
    glb = next(x for x in directives if x["target"] == "GlobalBuffer" and x["type"] == "spatial")
    assert glb["factors"] == "M=12" and glb["split"] == 1                                          # M: Spatial-X
    dram = next(x for x in directives if x["target"] == "DRAM" and x["type"] == "temporal")
    assert dram["factors"] == "P=55"


def test_loops_print_outermost_first_so_the_permutation_is_reversed():
    text = "Buf [ Weights:4 ]\n-----\n| for C in [0:2)\n|   for K in [0:3)\n|     for P in [0:1)\n"
    assert looks_like_map_txt(text)
    [t, _] = parse_map_txt(text, ["Weights"])
    assert t["permutation"] == "KC" and t["factors"] == "C=2 K=3"


def test_a_line_that_is_no_loop_is_named(tmp_path):
    d = DATA / "v3_ex04_conv1d_oc_ic_3levelspatial_cp"
    bad = tmp_path / "map.txt"
    bad.write_text((d / "map.txt").read_text().replace("for P in [0:1)", "for P in [0:1)\nwhile true", 1))
    with pytest.raises(CoexploreError) as info:
        _context(d).evaluate_mappings(bad)
    assert "line" in info.value.message and "while true" in info.value.message and info.value.file == str(bad)


@pytest.mark.parametrize("old, new, said", [
    ("(Spatial-X)", "(Spatial-Z)", "unrecognised note '(Spatial-Z)'"),        # (was read as a temporal loop)
    ("for P in [0:1)", "for P in [0:1) junk", "unrecognised note 'junk'"),
    ("Weights:", "Weightz:", "unknown dataspace 'Weightz'")])                # (was a silent bypass)
def test_a_printout_line_timeloop_would_not_print_is_refused_at_its_line(tmp_path, old, new, said):
    """User study: a garbled loop note made the loop temporal (2,304 cycles for 192), a misspelt
    dataspace in a header bypassed it, both without a word."""
    d = DATA / "v3_ex04_conv1d_oc_ic_3levelspatial_cp"
    text = (d / "map.txt").read_text()
    assert old in text
    bad = tmp_path / "map.txt"
    bad.write_text(text.replace(old, new, 1))
    with pytest.raises(CoexploreError) as info:
        _context(d).evaluate_mappings(bad)
    assert said in info.value.message and info.value.message.startswith("line ")


def test_a_temporal_loop_inside_spatial_ones_and_a_bad_directive_are_said_by_line(tmp_path):
    d = DATA / "v3_ex04_conv1d_oc_ic_3levelspatial_cp"
    text = (d / "map.txt").read_text()
    bad = tmp_path / "map.txt"
    bad.write_text(text.replace("(Spatial-X)", "(Spatial-X)\n| for K in [0:1)", 1))     # (a unit loop: allowed)
    _context(d).evaluate_mappings(bad)
    bad.write_text(text.replace("(Spatial-X)", "(Spatial-X)\n| for K in [0:2)", 1))
    with pytest.raises(CoexploreError, match="temporal loop inside level"):
        _context(d).evaluate_mappings(bad)
    bad.write_text(text.replace("for K in", "for Z in", 1))           # parse_mapping's error, at the printout's line
    with pytest.raises(CoexploreError) as info:
        _context(d).load_mapping(bad)
    assert str(info.value.key).startswith("map.txt line ")


def test_evaluate_takes_a_printout_as_mapping(capsys):
    d = DATA / "v3_bd_simba_like_alexnet1"
    ref = json.loads((d / "expected.json").read_text())
    assert main(["evaluate", str(d / "arch.yaml"), str(d / "problem.yaml"), str(d / "map.txt"),
                 "--ert", str(d / "ERT.yaml"), "--timeloop-rules", "v0.3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cycles"] == ref["cycles"] and out["energy_pJ"] == pytest.approx(ref["energy_pJ"], abs=0.02)


@pytest.mark.parametrize("arch_name", ["eyeriss_like", "simba_like"])
def test_the_loop_nest_coexplore_prints_reads_back_as_the_same_mapping(arch_name):
    """`coexplore map` writes map.txt as Timeloop prints it; read back, every mapping of a random
    batch evaluates as it did (counts and energy), spatial splits and bypass included."""
    import numpy as np

    from conftest import CORPUS
    from coexplore.mapspace.space import MapSpace
    from coexplore.spec.constraints import load_constraints
    from coexplore.spec.loopnest import format_loop_nest
    from coexplore.spec.mapping import parse_mapping, to_arrays

    ctx = load_context(CORPUS / "arches" / arch_name / "arch.yaml", CORPUS / "layers" / "tiny_conv.yaml")
    ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch))
    arrays = ms.decode(ms.sample(np.random.default_rng(0), 40))
    res = ctx.evaluate(arrays)
    names = [ds.name for ds in ctx.problem.dataspaces]
    checked = 0
    for b in np.nonzero(res.valid)[0][:15]:
        text = format_loop_nest(arrays, int(b), ctx.arch, ctx.problem, ctx.record(res, int(b)))
        back = to_arrays([parse_mapping(parse_map_txt(text, names), ctx.arch, ctx.problem)], ctx.arch, ctx.problem)
        again = ctx.evaluate(back)
        assert again.valid[0] and again.cycles[0] == res.cycles[b] and again.energy_pJ[0] == res.energy_pJ[b]
        np.testing.assert_array_equal(again.nest.reads[0], res.nest.reads[b])
        np.testing.assert_array_equal(again.nest.fills[0], res.nest.fills[b])
        checked += 1
    assert checked >= 5


def test_a_lone_multi_letter_dimension_in_a_permutation_is_that_dimension():
    """`map` writes the permutation of a level with one loop over `KB` as 'KB' (its map.txt too):
    read back as KB, not as the letters K, B (a user study: the map.txt of a GEMM did not read back)."""
    from coexplore.spec.mapping import _parse_perm
    dims = ["M", "N", "KB"]
    assert _parse_perm("KB", file=None, key="p", dims=dims) == ["KB"]
    assert _parse_perm("KB M N", file=None, key="p", dims=dims) == ["KB", "M", "N"]
    assert _parse_perm("NM", file=None, key="p", dims=dims) == ["N", "M"]      # letters, as Timeloop reads them
    assert _parse_perm("NSP MQRC", file=None, key="p", dims=list("CMRSNPQ")) == list("NSPMQRC")
