"""The Timeloop of 2020-21 (`stride_rule="v0.3"`, `--timeloop-rules v0.3`) against the v0.3 exercises'
references: what that Timeloop printed in its stats.txt (tests/data/exercises_v3/*/expected.json)."""

import json
import warnings
from pathlib import Path

import pytest

from coexplore.cli.main import main
from coexplore.model.inputs import load_context

DATA = Path(__file__).parent / "data" / "exercises_v3"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "expected.json").is_file())


def _run(case: str, rule: str) -> tuple[dict, dict]:
    d = DATA / case
    with warnings.catch_warnings():      # (the access-only tables are said; tested below)
        warnings.simplefilter("ignore")
        ctx = load_context(d / "arch.yaml", d / "problem.yaml", d / "ERT.yaml")
    ctx.stride_rule = rule
    return ctx.record(ctx.evaluate_mappings(d / "mapping.yaml")), json.loads((d / "expected.json").read_text())


def test_the_bundled_cases_are_there():
    assert len(CASES) == 6


@pytest.mark.parametrize("case", CASES)
def test_v03_rules_reproduce_every_count_and_energy_of_the_reference(case):
    rec, ref = _run(case, "v0.3")
    assert rec["valid"] and rec["cycles"] == ref["cycles"]
    assert rec["energy_pJ"] == pytest.approx(ref["energy_pJ"], rel=1e-6, abs=0.02)
    for lv, spaces in ref["levels"].items():
        for ds, want in spaces.items():
            got = rec["levels"][lv]["dataspaces"][ds]
            assert (got["reads"], got["fills"], got["updates"]) == (want["reads"], want["fills"], want["updates"]), \
                (lv, ds)
            assert got["energy_pJ"] == pytest.approx(want["energy_pJ"], abs=0.006 + 5e-7 * want["energy_pJ"]), (lv, ds)


@pytest.mark.parametrize("case", CASES)
def test_todays_rules_differ_from_that_timeloop_only_by_elided_fills_and_pricing(case):
    rec, ref = _run(case, "current")
    assert rec["cycles"] == ref["cycles"]
    for lv, spaces in ref["levels"].items():
        for ds, want in spaces.items():
            got = rec["levels"][lv]["dataspaces"][ds]
            assert (got["reads"], got["updates"]) == (want["reads"], want["updates"]), (lv, ds)
            assert got["fills"] <= want["fills"], (lv, ds)
            if ds != "Outputs":
                assert got["fills"] == want["fills"], (lv, ds)
    assert rec["energy_pJ"] != pytest.approx(ref["energy_pJ"], rel=1e-3)


def test_ex01_output_buffer_fills_are_the_tiles_it_receives():
    # v3_ex01 os: the Buffer holds one output at a time and receives all 16 (stats.txt: fills 16);
    # MainMemory's reads of them are elided (0), in both Timeloops
    rec, ref = _run("v3_ex01_conv1d_2level_os", "v0.3")
    got = rec["levels"]["Buffer"]["dataspaces"]["Outputs"]["fills"]
    assert ref["levels"]["Buffer"]["Outputs"]["fills"] == 16 == got
    assert ref["levels"]["MainMemory"]["Outputs"]["reads"] == 0
    cur, _ = _run("v3_ex01_conv1d_2level_os", "current")
    assert cur["levels"]["Buffer"]["dataspaces"]["Outputs"]["fills"] == 0


def test_an_access_only_register_table_is_priced_by_that_action_under_v03(capsys):
    # simple_weight_stationary's registers have one `access` action (0.009 pJ per its ERT); today's
    # Timeloop prices them with its built-in estimate instead: the total nearly doubles
    d = DATA / "v3_bd_simple_weight_stationary_alexnet1"
    ref = json.loads((d / "expected.json").read_text())
    args = ["evaluate", str(d / "arch.yaml"), str(d / "problem.yaml"), str(d / "mapping.yaml"),
            "--ert", str(d / "ERT.yaml"), "--json"]
    assert main(args + ["--timeloop-rules", "v0.3"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["energy_pJ"] == pytest.approx(ref["energy_pJ"], rel=1e-6)
    assert "weight_reg" not in cap.err          # its `access` prices it: nothing stands in
    assert main(args) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["energy_pJ"] > 1.5 * ref["energy_pJ"]
    assert "weight_reg" in cap.err and "--timeloop-rules v0.3" in cap.err


def test_the_rule_is_said_in_the_summary(capsys):
    d = DATA / "v3_ex01_conv1d_2level_os"
    assert main(["evaluate", str(d / "arch.yaml"), str(d / "problem.yaml"), str(d / "mapping.yaml"),
                 "--ert", str(d / "ERT.yaml"), "--stride-rule", "v0.3"]) == 0
    out = capsys.readouterr().out
    assert "stride rule: v0.3" in out and "2020-21" in out


def test_v03_rules_report_no_leakage_and_price_each_access_at_the_largest_action():
    # the corpus' eyeriss_like ERT has leak actions and reads cheaper than writes; that Timeloop
    # printed no leakage and one vector-access energy per buffer
    c = Path(__file__).parent / "data" / "timeloop_corpus"
    ctx = load_context(c / "arches/eyeriss_like/arch.yaml", c / "layers/tiny_conv.yaml")
    mapping = c / "public/eyeriss_like/tiny_conv/017/mapping.yaml"
    now = ctx.record(ctx.evaluate_mappings(mapping))
    ctx.stride_rule = "v0.3"
    old = ctx.record(ctx.evaluate_mappings(mapping))
    assert now["valid"] and old["valid"]
    assert any(lv.get("leakage_pJ", 0) > 0 for lv in now["levels"].values())
    assert all(lv.get("leakage_pJ", 0) == 0 for lv in old["levels"].values())
    v03 = ctx.costs.as_v03()
    names = [lv.name for lv in reversed(ctx.arch.levels)]          # the costs' order: innermost first
    priced = 0
    for li, name in enumerate(names):
        acts = ctx.ert.actions.get(name)
        if acts:
            priced += 1
            assert v03.read[li] == v03.fill[li] == v03.update[li] == max(acts.values()), name
    assert priced >= 4 and (ctx.costs.read != ctx.costs.update).any()
    assert v03.compute == max(ctx.ert.actions[ctx.arch.compute.name].values())
    assert old["energy_pJ"] > now["energy_pJ"] - sum(lv.get("leakage_pJ", 0) for lv in now["levels"].values())


def test_as_v03_prices_compute_at_its_largest_action_and_drops_leakage_without_tables():
    import numpy as np

    from coexplore.model.evaluate import LevelCosts
    base = dict(read=np.array([1.0, 2.0]), fill=np.array([1.5, 2.5]), update=np.array([1.5, 2.5]),
                leak=np.array([0.1, 0.2]), block=np.ones(2), clusters=np.ones(2), compute=1.0)
    one = LevelCosts(**base, largest=np.array([3.0, np.nan]), compute_largest=2.0, notes=("a", "b"), gaps=("b",))
    v = one.as_v03()
    assert v.compute == 2.0 and list(v.read) == [3.0, 2.0] and list(v.fill) == [3.0, 2.5] and v.notes == ("a",)
    assert not v.leak.any() and v.pooled
    none = LevelCosts(**base).as_v03()                  # no table anywhere: the estimates, no leakage
    assert none.compute == 1.0 and list(none.read) == [1.0, 2.0] and not none.leak.any() and none.pooled


def test_v03_counts_with_the_pre2025_sliding_window_rule():
    """The 2024 exercise references that need pre2025 (v4_ed_eyeriss_like: DRAM Input reads) get the
    same counts under v0.3, whose Timeloop predates the 2025 fix too."""
    import numpy as np

    from coexplore.model.reference import load_reference_run
    run = load_reference_run(Path(__file__).parent / "data" / "exercises_v4" / "v4_ed_eyeriss_like")
    old, cur, v03 = (run.evaluate(r).nest for r in ("pre2025", "current", "v0.3"))
    assert not np.array_equal(old.reads, cur.reads)
    inputs = [i for i, ds in enumerate(run.context.problem.dataspaces) if not ds.read_write]
    np.testing.assert_array_equal(v03.reads[..., inputs], old.reads[..., inputs])


def test_an_accelergy_03_table_under_todays_rules_is_noted(capsys):
    """User study: a v0.3 exercise's ERT priced by today's rules gave 7% less than its reference with no
    word; a note names --timeloop-rules v0.3, which reproduces the reference (and then says nothing)."""
    d = DATA / "v3_ex02_conv1d_oc_2level_tiled"
    ref = json.loads((d / "expected.json").read_text())
    args = ["evaluate", str(d / "arch.yaml"), str(d / "problem.yaml"), str(d / "mapping.yaml"),
            "--ert", str(d / "ERT.yaml"), "--json"]
    assert main(args) == 0
    cap = capsys.readouterr()
    assert "an Accelergy 0.3 table" in cap.err and "--timeloop-rules v0.3" in cap.err
    assert json.loads(cap.out)["energy_pJ"] < 0.97 * ref["energy_pJ"]
    assert main(args + ["--timeloop-rules", "v0.3"]) == 0
    cap = capsys.readouterr()
    assert "an Accelergy 0.3 table" not in cap.err
    assert json.loads(cap.out)["energy_pJ"] == pytest.approx(ref["energy_pJ"], rel=1e-6)
