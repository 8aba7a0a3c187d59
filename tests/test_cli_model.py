"""`coexplore evaluate` / `validate` from the command line, including bad-input messages."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CORPUS

ARCH = CORPUS / "arches" / "simba_like"
LAYER = CORPUS / "layers" / "alexnet_conv3.yaml"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "coexplore.cli.main", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def _valid_case():
    for case in sorted((CORPUS / "public" / "simba_like" / "alexnet_conv3").iterdir()):
        exp = json.loads((case / "expected.json").read_text())
        if exp["valid"]:
            return case, exp
    raise AssertionError("no valid case")


def test_evaluate_json_matches_timeloop():
    case, exp = _valid_case()
    r = cli("evaluate", ARCH / "processed.yaml", LAYER, case / "mapping.yaml", "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    for k in ("valid", "error", "energy_pJ", "cycles", "computes", "utilization", "edp_J_cycle", "levels"):
        assert k in got
    assert got["cycles"] == exp["cycles"]
    assert got["energy_pJ"] == pytest.approx(exp["energy_pJ"], rel=1e-9)
    for lv, d in exp["levels"].items():
        for ds, v in d["dataspaces"].items():
            for k in ("reads", "fills", "updates", "utilized_capacity", "utilized_instances"):
                assert got["levels"][lv]["dataspaces"][ds][k] == v[k]


def test_options_may_sit_between_the_positionals():
    """`evaluate ARCH PROBLEM --json MAPPING` reads MAPPING as the mapping (not an unknown argument)."""
    case, exp = _valid_case()
    r = cli("evaluate", ARCH / "processed.yaml", LAYER, "--json", case / "mapping.yaml")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["cycles"] == exp["cycles"]
    r = cli("evaluate", ARCH / "processed.yaml", "--json", LAYER, case / "mapping.yaml", "extra.yaml")
    assert r.returncode == 2 and "coexplore evaluate: error: more files than it takes (ARCH [PROBLEM] MAPPING): extra.yaml" in r.stderr


def test_a_file_of_only_variables_is_named_as_such(tmp_path):
    """timeloopfe merges a `variables:`-only file into the spec; given here (as an extra file or in
    PROBLEM's place) it is the file named, not the mapping it pushed out of place."""
    case, _ = _valid_case()
    v = tmp_path / "vars.yaml"
    v.write_text("variables: {version: 0.4, RFDEPTH: 64}\n")
    for args in ((ARCH / "arch.yaml", v, LAYER, case / "mapping.yaml"), (ARCH / "arch.yaml", v, case / "mapping.yaml")):
        r = cli("evaluate", *args)
        assert r.returncode == 2 and f"{v}: key 'variables': this file holds only variables:" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and "mapping.yaml" not in r.stderr


def test_evaluate_v04_arch_with_explicit_ert_and_table():
    case, exp = _valid_case()
    r = cli("evaluate", ARCH / "arch.yaml", LAYER, case / "mapping.yaml", "--ert", ARCH / "ERT.yaml")
    assert r.returncode == 0, r.stderr
    assert f"{exp['cycles']:,}" in r.stdout and "PEWeightRegs" in r.stdout


def test_evaluate_invalid_mapping_reports_error():
    for case in sorted((CORPUS / "public" / "simba_like").glob("*/*")):
        exp = json.loads((case / "expected.json").read_text())
        if not exp["valid"]:
            break
    layer = CORPUS / "layers" / f"{case.parent.name}.yaml"
    r = cli("evaluate", ARCH / "processed.yaml", layer, case / "mapping.yaml", "--json")
    assert r.returncode == 1          # a failed run, as for timeloop-model; the JSON still comes
    assert json.loads(r.stdout)["valid"] is False


def test_factor_mismatch_reported_as_timeloop_parser(tmp_path):
    """Timeloop's mapping parser (parser.cpp) prints one ERROR line per dimension whose factors do
    not multiply to the workload's bound, in dimension order, and fails."""
    case, _ = _valid_case()
    text = (case / "mapping.yaml").read_text()
    assert "factors: C2" in text and "M1" in text
    bad = tmp_path / "mapping.yaml"
    bad.write_text(text.replace("factors: C2", "factors: C6", 1).replace("M1", "M5", 1))
    r = cli("evaluate", ARCH / "processed.yaml", LAYER, bad, "--json")
    assert r.returncode == 1
    got = json.loads(r.stdout)
    lines = got["error"].splitlines()
    assert [ln.split(" is ")[0] for ln in lines] == [
        f"ERROR: parsing mapping: product of all factors of dimension {d}" for d in "CM"]
    for ln in lines:
        assert ln.endswith(".") and "which is not equal to the dimension size of the workload" in ln
    assert lines[0].endswith(" 256.") and lines[1].endswith(" 384.")   # alexnet_conv3: C256, M384


@pytest.mark.parametrize("mutate,expect", [
    (lambda t: t.replace("factors: C2", "factors: C3", 1), "product of all factors of dimension C is"),
    (lambda t: t.replace("target: DRAM", "target: DRAMM", 1), "unknown level 'DRAMM'"),
    (lambda t: t.replace("M1", "X1", 1), "unknown dimension 'X'"),
    (lambda t: t.replace("factors: C2", "factors: C2 C1", 1), "dimension 'C' given twice"),
    (lambda t: t.replace("permutation: ", "permutation: NN", 1), "listed twice"),
    (lambda t: t.replace("target: DRAM", "tgt: DRAM", 1), "target"),
    (lambda t: t + "\n  - [unclosed", "malformed YAML"),
])
def test_bad_mapping_gives_message_and_exit_2(tmp_path, mutate, expect):
    case, _ = _valid_case()
    bad = tmp_path / "mapping.yaml"
    bad.write_text(mutate((case / "mapping.yaml").read_text()))
    r = cli("evaluate", ARCH / "processed.yaml", LAYER, bad)
    if "product of all factors" in expect:
        # a factor mismatch is an invalid mapping, reported as such (exit 1), never a traceback
        assert r.returncode == 1 and "INVALID" in r.stdout and expect in r.stdout
        return
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert expect in r.stderr and str(bad) in r.stderr


def test_missing_ert_entry(tmp_path):
    case, _ = _valid_case()
    ert = tmp_path / "ERT.yaml"
    ert.write_text((ARCH / "ERT.yaml").read_text().replace("PEWeightRegs", "SomethingElse"))
    r = cli("evaluate", ARCH / "processed.yaml", LAYER, case / "mapping.yaml", "--ert", ert)
    # as timeloop-model: the level keeps Timeloop's own estimate, said in a warning naming it
    assert r.returncode == 0 and "warning" in r.stderr and "PEWeightRegs: the ERT has no table" in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_file():
    r = cli("evaluate", "no/such/arch.yaml", LAYER, "m.yaml")
    assert r.returncode == 2 and "no/such/arch.yaml" in r.stderr and "not found" in r.stderr


def test_validate_json(tmp_path):
    r = cli("validate", CORPUS / "public" / "simba_like" / "tiny_conv", "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    for k in ("cases", "valid_cases", "validity_agrees", "cycles_exact", "counts_exact",
              "energy_max_rel_err", "energy_median_rel_err"):
        assert k in s
    assert s["validity_agrees"] == s["cases"] and s["counts_exact"] == s["valid_cases"]


def test_validate_bad_dir(tmp_path):
    r = cli("validate", tmp_path)
    assert r.returncode == 2 and "no cases found" in r.stderr


@pytest.mark.parametrize("old, new", [
    # Timeloop: a dataspace a datatype directive does not name is kept ('X' means keep)
    ("  keep: [Weights, Inputs, Outputs]\n  bypass: []\n", "  keep: [Weights]\n"),
    # ... and `bypass` is applied after `keep`, so it wins when both name a dataspace
    ("  keep: [Inputs]\n  bypass: [Weights, Outputs]\n", "  keep: [Inputs, Weights]\n  bypass: [Weights, Outputs]\n"),
    # a level without any datatype directive keeps everything
    ("- target: DRAM\n  type: datatype\n  keep: [Weights, Inputs, Outputs]\n  bypass: []\n", ""),
])
def test_datatype_directives_follow_timeloop(tmp_path, old, new):
    _edited_case_matches_timeloop(tmp_path, old, new)


EDIT_CASE = CORPUS / "public" / "simba_like" / "alexnet_conv1" / "019"   # a valid case


def _edited_case_matches_timeloop(tmp_path, old, new):
    """The corpus mapping with `old` replaced by `new` still gives Timeloop's numbers."""
    text = (EDIT_CASE / "mapping.yaml").read_text()
    assert old in text
    m = tmp_path / "mapping.yaml"
    m.write_text(text.replace(old, new, 1))
    r = cli("evaluate", ARCH / "processed.yaml", CORPUS / "layers" / "alexnet_conv1.yaml", m, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    got, exp = json.loads(r.stdout), json.loads((EDIT_CASE / "expected.json").read_text())
    assert got["cycles"] == exp["cycles"]
    assert got["energy_pJ"] == pytest.approx(exp["energy_pJ"], rel=1e-12)
    return r


@pytest.mark.parametrize("old, new", [
    ("factors: C3 M48 R11 S1 N1 P55 Q5", "factors: 'C=3,M=48,R=11,S=1,N=1,P=55,Q=5'"),
    ("factors: C3 M48 R11 S1 N1 P55 Q5", "factors: C = 3 M = 48 R = 11 S = 1 N = 1 P = 55 Q = 5"),
    ("factors: C3 M48 R11 S1 N1 P55 Q5", "factors: C3M48R11S1N1P55Q5"),
    ("factors: C3 M48 R11 S1 N1 P55 Q5", "factors: C0 M48 R0 S1 N1 P0 Q5"),       # 0 = the whole dimension
    ("factors: C3 M48 R11 S1 N1 P55 Q5", "factors: [C3, M48, R11, S1, N1, P55, Q5]"),
    ("factors: C3 M48 R11 S1 N1 P55 Q5", "factors: 'C3 M48 R11 S1 N1 P55 Q5 # a note'"),   # text after '#'
    ("permutation: QPSRNMC}", "permutation: 'QPS RNMC'}"),      # read letter by letter, blanks skipped
    ("factors: C3 M48 R11 S1 N1 P55 Q5", "factors: 'C=3; M=48; R=11; S=1; N=1; P=55; Q=5'"),  # any separator
])
def test_timeloop_mapping_syntax_variants(tmp_path, old, new):
    """Forms Timeloop's mapping parser accepts give the same numbers as the corpus mapping."""
    r = _edited_case_matches_timeloop(tmp_path, old, new)
    if "C0" in new:
        assert "whole dimension C=3" in r.stderr


def test_a_directive_on_the_compute_level_is_refused_as_timeloop_model_refuses_it(tmp_path):
    """Timeloop's mapping parser: 'ERROR: target storage level not found' (the compute level holds no
    tile); it was skipped with a warning."""
    m = tmp_path / "mapping.yaml"
    m.write_text((EDIT_CASE / "mapping.yaml").read_text().replace(
        "mapping:\n", "mapping:\n- {target: mac, type: temporal, factors: C1 M1 R1 S1 N1 P1 Q1}\n", 1))
    r = cli("evaluate", ARCH / "processed.yaml", CORPUS / "layers" / "alexnet_conv1.yaml", m)
    assert r.returncode == 2 and "mapping[0].target" in r.stderr and "compute level" in r.stderr, r.stderr


def test_bad_split_is_one_line(tmp_path):
    m = tmp_path / "mapping.yaml"
    m.write_text((EDIT_CASE / "mapping.yaml").read_text().replace("split: 0}", "split: x}", 1))
    r = cli("evaluate", ARCH / "processed.yaml", CORPUS / "layers" / "alexnet_conv1.yaml", m)
    assert r.returncode == 2 and "split" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("extra, ok", [
    ("no_multicast_no_reduction: [Weights]", False), ("no_temporal_reuse: [Inputs]", False),
    ("rmw_on_first_writeback: [Outputs]", False), ("no_link_transfer: [Inputs]", False),
    ("no_multicast_no_reduction: []", True), ("facotrs: C1", True)])
def test_unmodelled_mapping_directives_are_refused(tmp_path, extra, ok):
    """Directives that change Timeloop's analysis are refused, not silently dropped; an unknown key
    is a warning."""
    text = (EDIT_CASE / "mapping.yaml").read_text()
    old = "- {target: DRAM, type: temporal,"
    assert old in text
    m = tmp_path / "mapping.yaml"
    m.write_text(text.replace(old, old + f" {extra},", 1))
    r = cli("evaluate", ARCH / "processed.yaml", CORPUS / "layers" / "alexnet_conv1.yaml", m, "--json")
    if ok:
        assert r.returncode == 0
        assert ("not read" in r.stderr) == ("facotrs" in extra)
        exp = json.loads((EDIT_CASE / "expected.json").read_text())
        assert json.loads(r.stdout)["cycles"] == exp["cycles"]
    else:
        assert r.returncode == 2 and extra.split(":")[0] in r.stderr and "Traceback" not in r.stderr


def test_min_utilization_rejects_underused_buffers_as_timeloop(tmp_path):
    """Timeloop (buffer.cpp): a tile below effective size x min_utilization is an invalid mapping."""
    import yaml
    src = yaml.safe_load((ARCH / "processed.yaml").read_text())
    case = EDIT_CASE
    exp = json.loads((case / "expected.json").read_text())
    used = sum(d["utilized_capacity"] for d in exp["levels"]["GlobalBuffer"]["dataspaces"].values())

    def with_min(frac):
        def walk(node):
            if isinstance(node, dict):
                if str(node.get("name", "")).startswith("GlobalBuffer"):
                    node["attributes"]["min_utilization"] = frac
                for v in node.values():
                    walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)
        import copy
        d = copy.deepcopy(src)
        walk(d)
        (tmp_path / "processed.yaml").write_text(yaml.safe_dump(d))
        (tmp_path / "ERT.yaml").write_text((ARCH / "ERT.yaml").read_text())
        return cli("evaluate", tmp_path / "processed.yaml", CORPUS / "layers" / "alexnet_conv1.yaml",
                   case / "mapping.yaml", "--json")
    from coexplore.spec.architecture import load_architecture
    size = next(lv for lv in load_architecture(ARCH / "processed.yaml").levels if lv.name == "GlobalBuffer").effective_size
    low, high = with_min(used / size * 0.99), with_min(min(1.0, used / size * 1.01))
    assert low.returncode == 0 and json.loads(low.stdout)["cycles"] == exp["cycles"]
    assert high.returncode == 1 and "minimum utilization" in json.loads(high.stdout)["error"]
    frac = used / size
    assert size * frac == used               # the boundary itself is representable here ...
    exact = with_min(frac)                   # ... and valid: Timeloop refuses only tile < size x min
    assert exact.returncode == 0 and json.loads(exact.stdout)["cycles"] == exp["cycles"]


def test_summary_columns_never_run_together():
    from coexplore.cli.evaluate import format_summary
    big = 10 ** 18
    rec = {"valid": True, "computes": big, "cycles": big, "utilization": 1.0, "energy_pJ": 1e20,
           "edp_J_cycle": 1e26, "levels": {"DRAM": {"energy_pJ": 1e20, "leakage_pJ": 0, "dataspaces": {
               "Weights": {"reads": big, "fills": big, "updates": big, "utilized_capacity": big,
                           "utilized_instances": 123456789, "energy_pJ": 1e20}}}}}
    row = next(line for line in format_summary(rec, "a", "l").splitlines() if line.startswith("DRAM"))
    assert row.split() == ["DRAM", "Weights", *[f"{big:,}"] * 4, "123456789", f"{1e20:,.0f}"]


def test_evaluate_checks_a_mapping_against_constraints_on_request():
    """timeloop-model does not check constraints; `--constraints` reports what a mapping breaks
    (the number are unchanged), here a corpus mapping whose weights_spad loop order goes against
    eyeriss_like's permutation constraint, and a timeloop-mapper result that keeps them."""
    arch = CORPUS / "arches" / "eyeriss_like"
    bad = CORPUS / "public" / "eyeriss_like" / "alexnet_conv3" / "013"
    r = cli("evaluate", arch / "processed.yaml", CORPUS / "layers" / "alexnet_conv3.yaml", bad / "mapping.yaml",
            "--constraints", arch / "constraints.yaml", "--json")
    got = json.loads(r.stdout)
    assert got["constraints_kept"] is False and "weights_spad" in got["constraints_error"]
    assert "warning" in r.stderr and got["cycles"] == json.loads((bad / "expected.json").read_text())["cycles"]
    for case in sorted((CORPUS / "public" / "eyeriss_like").glob("*/*")):
        if json.loads((case / "expected.json").read_text()).get("source") == "mapper_best":
            r = cli("evaluate", arch / "processed.yaml", CORPUS / "layers" / f"{case.parent.name}.yaml",
                    case / "mapping.yaml", "--check-constraints", "--json")
            assert json.loads(r.stdout)["constraints_kept"] is True, r.stderr
            break
    else:
        raise AssertionError("no mapper case")


def test_evaluate_names_the_energy_table_it_used(tmp_path):
    """An ERT.yaml found beside the architecture is named (text and JSON), so a stale one is seen;
    energies below 1 uJ keep their digits."""
    case = next(p for p in sorted((CORPUS / "public" / "simba_like" / "alexnet_conv3").iterdir())
                if json.loads((p / "expected.json").read_text())["valid"])
    r = cli("evaluate", ARCH / "processed.yaml", LAYER, case / "mapping.yaml", "--json")
    assert json.loads(r.stdout)["ert"] == str(ARCH / "ERT.yaml")
    r = cli("evaluate", ARCH / "processed.yaml", LAYER, case / "mapping.yaml")
    assert f"energy table: {ARCH / 'ERT.yaml'}" in r.stdout
    from coexplore.cli.evaluate import _uj
    assert _uj(115.5) == "0.0001155" and _uj(2.5e6) == "2.500" and _uj(1e300) == "1e+294"


def test_validate_fails_when_a_case_disagrees(tmp_path):
    """A tampered expected.json makes `validate` exit 1 (a CI gate), naming the case."""
    import shutil
    root = tmp_path / "corpus"
    shutil.copytree(CORPUS / "arches" / "simba_like", root / "arches" / "simba_like")
    shutil.copytree(CORPUS / "layers", root / "layers")
    src = CORPUS / "public" / "simba_like" / "tiny_conv"
    shutil.copytree(src, root / "public" / "simba_like" / "tiny_conv")
    case = next(p for p in sorted((root / "public" / "simba_like" / "tiny_conv").iterdir())
                if json.loads((p / "expected.json").read_text())["valid"])
    exp = json.loads((case / "expected.json").read_text())
    exp["cycles"] += 1
    tampered = [(lv, ds) for lv, d in exp["levels"].items() for ds in d["dataspaces"]][:5]
    for lv, ds in tampered:
        exp["levels"][lv]["dataspaces"][ds]["reads"] += 1
    (case / "expected.json").write_text(json.dumps(exp))
    r = cli("validate", root / "public", "--no-progress")
    assert r.returncode == 1 and case.name in r.stdout, r.stdout + r.stderr
    # both values, which is which, not just 'differ'; what is not listed, counted
    assert f"cycles model {exp['cycles'] - 1} vs reference {exp['cycles']}" in r.stdout
    lv, ds = tampered[0]
    got = exp["levels"][lv]["dataspaces"][ds]["reads"]
    assert f"{lv}.{ds}.reads model {got - 1} vs reference {got}" in r.stdout
    assert "and 2 more (--json lists them)" in r.stdout
    assert cli("validate", root / "public", "--failures", "-3").returncode == 2


def test_validate_stride_rule_pre2025_only_loses_halo_reuse():
    """The corpus was made with current Timeloop; under the pre-2025 stride rule the model must
    disagree only by reading more Inputs (no halo credit), with validity and cycles unchanged."""
    r = cli("validate", CORPUS, "--json", "--stride-rule", "pre2025")
    assert r.returncode == 1, r.stderr
    s = json.loads(r.stdout)
    assert s["stride_rule"] == "pre2025"
    assert s["validity_agrees"] == s["cases"] and s["cycles_exact"] == s["valid_cases"]
    assert s["failures"]
    for f in s["failures"]:
        assert f["mismatches"], f["case"]
        for m in f["mismatches"]:
            assert m["dataspace"] == "Inputs" and m["key"] in ("reads", "fills") and m["got"] > m["ref"], m


EX04 = CORPUS.parent / "exercises_v4" / "v4_ex04_conv1d_oc_ic_3levelspatial_kp"


def test_evaluate_prices_a_v04_node_list_without_ert(tmp_path):
    """timeloop-model runs Accelergy on a v0.4 file; coexplore prices it with its built-in estimator:
    the same table `energy tables` writes, Timeloop's cycles, energy near the reference's (its ERT
    came from CACTI/Aladdin)."""
    inp = EX04 / "inputs"
    arch, prob, mapping = next(inp.glob("*.arch.yaml")), inp / "conv1d+oc+ic.prob.yaml", next(inp.glob("*.map.yaml"))
    ref = json.loads((EX04 / "reference.json").read_text())["summary"]
    r = cli("evaluate", arch, prob, mapping, "--json", "--classes", "primitives")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert "no ERT given" in got["ert"] and "no ERT given" in r.stderr
    assert got["cycles"] == ref["cycles"]
    assert abs(got["energy_pJ"] / ref["energy_pJ_from_per_compute"] - 1) < 0.05
    assert cli("energy", "tables", arch, "--out", tmp_path, "--classes", "primitives").returncode == 0
    r2 = cli("evaluate", arch, prob, mapping, "--json", "--ert", tmp_path / "ERT.yaml")
    assert json.loads(r2.stdout)["energy_pJ"] == got["energy_pJ"]
    # the file's intmac lacks the example designs' multiplier_width: one line naming --classes
    bad = cli("evaluate", arch, prob, mapping)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "--classes primitives" in bad.stderr
    # --classes where coexplore does not price the architecture is refused, not ignored
    given = cli("evaluate", arch, prob, mapping, "--ert", tmp_path / "ERT.yaml", "--classes", "primitives")
    assert given.returncode == 2 and "--classes" in given.stderr


def test_a_directive_without_a_type_is_refused(tmp_path):
    """Timeloop asserts a directive's type (it used to be read as temporal here)."""
    m = tmp_path / "mapping.yaml"
    m.write_text((EDIT_CASE / "mapping.yaml").read_text().replace("{target: DRAM, type: temporal,", "{target: DRAM,", 1))
    r = cli("evaluate", ARCH / "processed.yaml", CORPUS / "layers" / "alexnet_conv1.yaml", m)
    assert r.returncode == 2 and "without a type" in r.stderr and "mapping[" in r.stderr


def test_a_kept_dataspace_at_a_containers_level_is_kept_there():
    """The dummy level a v0.4 container adds keeps nothing unless the mapping keeps it there."""
    from coexplore.spec.architecture import load_architecture
    from coexplore.spec.mapping import parse_mapping, to_arrays
    from coexplore.spec.problem import load_problem
    arch, problem = load_architecture(ARCH / "arch.yaml"), load_problem(CORPUS / "layers" / "alexnet_conv1.yaml")
    li = [lv.name for lv in reversed(arch.levels)].index("inter_PE_spatial")
    w = [ds.name for ds in problem.dataspaces].index("Weights")
    kept = []
    for extra in ([], [{"target": "PE", "type": "datatype", "keep": ["Weights"]}]):
        m = parse_mapping({"mapping": extra}, arch, problem)
        kept.append(to_arrays([m], arch, problem).keep[0, li])
    assert not kept[0].any()
    assert kept[1][w] and kept[1].sum() == 1


def test_a_spatial_directive_where_nothing_fans_out_is_refused(tmp_path):
    """timeloop-model's parser: a `type: spatial` entry at a level whose next-inner level has as many
    instances (simba_like's PEInputBuffer over inter_distributed_buffers_spatial, 16 each) has no
    spatial tiling level and stops, even with every factor 1."""
    case, _ = _valid_case()
    text = (case / "mapping.yaml").read_text()
    bad = tmp_path / "m.yaml"
    bad.write_text(text + "- target: PEInputBuffer\n  type: spatial\n  factors: C1 M1 R1 S1 N1 P1 Q1\n")
    r = cli("evaluate", ARCH / "processed.yaml", LAYER, bad)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert ("cannot find spatial tiling level associated with storage level PEInputBuffer. This is because the "
            "number of instances of the next-inner level (inter_distributed_buffers_spatial) is the same as this "
            "level") in r.stderr


def test_check_constraints_without_any_says_there_is_nothing_to_check():
    """User study: --check-constraints on an architecture with no constraints anywhere reported
    constraints_kept: true, as if they had been checked."""
    d = Path(__file__).parent / "data" / "exercises_v3" / "v3_ex01_conv1d_2level_os"
    r = cli("evaluate", d / "arch.yaml", d / "problem.yaml", d / "mapping.yaml", "--ert", d / "ERT.yaml",
            "--check-constraints", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["constraints_kept"] is None and "nothing to check" in r.stderr


@pytest.mark.parametrize("factors, says", [
    ("P=5", "has temporal P=11 at DRAM, where the constraints fix P=5"),
    ("P<=5", "has temporal P=11 at DRAM, against the constraints' bound P<=5 there"),
])
def test_check_constraints_names_the_constraint_a_mapping_breaks(tmp_path, factors, says):
    """A user study: a fixed factor the mapping does not have was reported at another level, a bound
    without naming it. This corpus mapping has P=11 at DRAM."""
    arch = CORPUS / "arches" / "eyeriss_like"
    case = CORPUS / "public" / "eyeriss_like" / "alexnet_conv1" / "001"
    cons = tmp_path / "c.yaml"
    cons.write_text(f"mapspace_constraints:\n  targets:\n  - {{target: DRAM, type: temporal, factors: {factors}}}\n")
    r = cli("evaluate", arch / "processed.yaml", CORPUS / "layers" / "alexnet_conv1.yaml", case / "mapping.yaml",
            "--constraints", cons, "--json")
    got = json.loads(r.stdout)
    assert got["constraints_kept"] is False and says in got["constraints_error"], got["constraints_error"]


def test_check_constraints_says_in_text_that_they_are_kept():
    arch = CORPUS / "arches" / "eyeriss_like"
    for case in sorted((CORPUS / "public" / "eyeriss_like").glob("*/*")):
        if json.loads((case / "expected.json").read_text()).get("source") == "mapper_best":
            r = cli("evaluate", arch / "processed.yaml", CORPUS / "layers" / f"{case.parent.name}.yaml",
                    case / "mapping.yaml", "--check-constraints")
            assert "Constraints   : kept" in r.stdout, r.stderr
            r = cli("evaluate", arch / "processed.yaml", CORPUS / "layers" / f"{case.parent.name}.yaml",
                    case / "mapping.yaml")
            assert "Constraints" not in r.stdout
            break


def test_check_constraints_says_in_text_that_they_are_broken():
    """The verdict is on stdout either way (a script reading it sees the break, not only stderr)."""
    arch = CORPUS / "arches" / "eyeriss_like"
    bad = CORPUS / "public" / "eyeriss_like" / "alexnet_conv3" / "013"
    r = cli("evaluate", arch / "processed.yaml", CORPUS / "layers" / "alexnet_conv3.yaml", bad / "mapping.yaml",
            "--constraints", arch / "constraints.yaml")
    verdict = next(line for line in r.stdout.splitlines() if line.startswith("Constraints"))
    assert verdict.startswith("Constraints   : broken (") and "weights_spad" in verdict, r.stdout


def test_a_sub_command_option_given_before_the_command_is_said_so(tmp_path):
    r = cli("--json", "evaluate", ARCH / "processed.yaml", CORPUS / "layers" / "alexnet_conv1.yaml",
            EDIT_CASE / "mapping.yaml")
    assert r.returncode == 2 and "--json is an option of `coexplore evaluate`: give it after the command" in r.stderr


def test_an_empty_mapping_dict_is_said_plainly(tmp_path):
    m = tmp_path / "mapping.yaml"
    m.write_text("mapping: {}\n")
    r = cli("evaluate", ARCH / "processed.yaml", CORPUS / "layers" / "alexnet_conv1.yaml", m)
    assert r.returncode == 2 and "got an empty mapping ({}), not a list" in r.stderr, r.stderr


def test_no_case_compared_is_no_energy_error_not_zero():
    """User study: with every timeloop-model run failed, validate printed `E err max 0.00e+00` and
    --json `energy_max_rel_err: 0.0`, which a script's threshold check passes."""
    from coexplore.cli.validate import format_table
    from coexplore.model.validation import summarise
    failed = {"arch": "a", "case": "a/l/000", "valid_ref": True, "valid_got": False, "valid_agree": False,
              "run_error": "timeloop-model failed", "mismatches": [], "others": [], "cycles_exact": None,
              "counts_exact": None, "energy_rel_err": None}
    s = summarise([failed], 0.1, 0.1, "timeloop")
    assert s["energy_max_rel_err"] is None and s["energy_median_rel_err"] is None and s["cycles_max_rel_err"] is None
    assert "n/a" in format_table(s) and "0.00e+00" not in format_table(s)


def test_a_v03_architecture_without_an_energy_table_is_priced_as_energy_tables_prices_it(tmp_path):
    """User study: `evaluate` refused a v0.3 architecture with no ERT ("no energy table found") while
    `energy tables` priced it and a node list is priced by itself. Now it is priced as timeloop-model
    runs Accelergy on it, with a note, and gives what the table `energy tables` writes gives."""
    import shutil
    src = Path(__file__).parent / "data" / "exercises_v3" / "v3_ex02_conv1d_oc_2level_tiled"
    for name in ("arch.yaml", "problem.yaml", "mapping.yaml"):
        shutil.copy(src / name, tmp_path / name)
    files = [tmp_path / "arch.yaml", tmp_path / "problem.yaml", tmp_path / "mapping.yaml"]
    r = cli("evaluate", *files, "--classes", "primitives", "--json")
    assert r.returncode == 0, r.stderr
    assert "no ERT given or beside it: energies from the built-in estimator (primitives classes)" in r.stderr
    tables = cli("energy", "tables", files[0], "--classes", "primitives", "--out", tmp_path / "t")
    assert tables.returncode == 0, tables.stderr
    given = cli("evaluate", *files, "--ert", tmp_path / "t" / "ERT.yaml", "--json")
    assert given.returncode == 0, given.stderr
    assert json.loads(r.stdout)["energy_pJ"] == json.loads(given.stdout)["energy_pJ"] > 0
