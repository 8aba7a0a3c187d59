"""The built-in model against real Timeloop results (bundled subset of the reference corpus)."""


import pytest

from coexplore.model.validation import validate
from coexplore.model.compare import compare_records
from coexplore.model.corpus import discover
from coexplore.model.inputs import load_context

from conftest import CORPUS


@pytest.fixture(scope="module")
def summary():
    return validate(CORPUS, progress=False)


def test_validity_agrees_on_every_case(summary):
    assert summary["cases"] >= 300
    assert summary["validity_agrees"] == summary["cases"]
    assert summary["invalid_messages_exact"] == summary["invalid_cases"] > 0     # Timeloop's text


def test_cycles_exact_on_every_valid_case(summary):
    assert summary["cycles_exact"] == summary["valid_cases"]


def test_counts_exact_on_every_valid_case(summary):
    assert summary["counts_exact"] == summary["valid_cases"]


def test_energy_matches_on_every_valid_case(summary):
    assert summary["energy_within_1e-4"] == summary["valid_cases"]
    assert summary["energy_median_rel_err"] < 1e-9


@pytest.mark.parametrize("arch", sorted(p.name for p in (CORPUS / "arches").iterdir() if p.is_dir()))
def test_every_architecture_exact(summary, arch):
    st = summary["per_arch"][arch]
    assert st["valid_cases"] > 0
    assert st["counts_exact"] == st["valid_cases"]
    assert st["energy_max_rel_err"] < 1e-9


def test_the_comparator_sees_one_count_off():
    """validate's verdicts come from compare_records: one count off, or a dataspace missing, is a
    mismatch (checked on a corpus record against itself, edited)."""
    import copy
    import json
    case = next(c for c in discover(CORPUS) if json.loads((c.path / "expected.json").read_text())["valid"])
    ref = json.loads((case.path / "expected.json").read_text())
    assert compare_records(copy.deepcopy(ref), ref)["counts_exact"]
    lv, d = next((lv, d) for lv, d in ref["levels"].items() if d.get("dataspaces"))
    ds = next(iter(d["dataspaces"]))
    off = copy.deepcopy(ref)
    off["levels"][lv]["dataspaces"][ds]["reads"] += 1
    assert not compare_records(off, ref)["counts_exact"]
    gone = copy.deepcopy(ref)
    del gone["levels"][lv]["dataspaces"][ds]
    assert not compare_records(gone, ref)["counts_exact"]
    assert compare_records(copy.deepcopy(ref), ref)["cycles_exact"]


def test_batch_equals_single_evaluations():
    cases = [c for c in discover(CORPUS) if c.arch == "eyeriss_like" and c.layer == "resnet50_res3a_2b"]
    ctx = load_context(cases[0].arch_file, cases[0].layer_file, cases[0].ert_file)
    maps = [ctx.load_mapping(c.path / "mapping.yaml") for c in cases]
    batch = ctx.evaluate_mappings(maps)
    for i, m in enumerate(maps):
        single = ctx.evaluate_mappings([m])
        a, b = ctx.record(batch, i), ctx.record(single, 0)
        assert a == b


def test_invalid_messages_name_the_level():
    for c in discover(CORPUS):
        ref = c.expected
        if ref["valid"]:
            continue
        ctx = load_context(c.arch_file, c.layer_file, c.ert_file)
        rec = ctx.record(ctx.evaluate_mappings([ctx.load_mapping(c.path / "mapping.yaml")]))
        assert not rec["valid"]
        # same failing level as Timeloop reports
        ref_level = ref["error"].split("couldn't map level ")[1].split(":")[0]
        assert f"level {ref_level}:" in rec["error"], (c.path, rec["error"], ref["error"])
