"""The real timeloop-model as an optional backend: its stats.txt and errors read against the corpus's
expected.json (real Timeloop outputs, tests/data/timeloop_stats), the inputs coexplore writes for
it, and `coexplore evaluate --model timeloop|both` with a stand-in executable (Timeloop itself is
not installable here) that answers with those real outputs."""

import gzip
import json
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import CORPUS, DATA, stand_in_timeloop
from coexplore.errors import CoexploreError
from coexplore.model.compare import compare_records
from coexplore.model.inputs import load_context
from coexplore.model.timeloop_run import write_inputs
from coexplore.model.timeloop_stats import energy_tolerance_pJ, failed_run, parse_stats
from coexplore.spec.mapping import to_arrays

STATS = DATA / "timeloop_stats"
VALID = ["eyeriss_like/tiny_conv/017", "simba_like/tiny_conv/017", "simple_output_stationary/tiny_conv/010",
         "simple_output_stationary/bert_qkv/001"]
INVALID = ["eyeriss_like/tiny_conv/007", "simple_output_stationary/tiny_conv/019"]


def _stats(case: str) -> str:
    return gzip.decompress((STATS / case / "timeloop-model.stats.txt.gz").read_bytes()).decode()


def _expected(case: str) -> dict:
    return json.loads((CORPUS / "public" / case / "expected.json").read_text())


def _context(case: str, arch_file: str = "processed.yaml"):
    arch, layer, _ = case.split("/")
    return load_context(CORPUS / "arches" / arch / arch_file, CORPUS / "layers" / f"{layer}.yaml",
                        CORPUS / "arches" / arch / "ERT.yaml")


@pytest.mark.parametrize("case", VALID)
def test_stats_txt_reads_as_timeloop_s_expected_json(case):
    exp = _expected(case)
    got = parse_stats(_stats(case), list(exp["levels"]))
    assert (got["valid"], got["cycles"], got["computes"]) == (True, exp["cycles"], exp["computes"])
    assert got["utilization"] == pytest.approx(exp["utilization"], rel=1e-12)
    assert list(got["levels"]) == list(exp["levels"])              # every level, in the architecture's order
    for name, lv in exp["levels"].items():
        g = got["levels"][name]
        assert g["energy_pJ"] == pytest.approx(lv["energy_pJ"], abs=0.005 * (2 + len(lv["dataspaces"])))
        assert g.get("leakage_pJ", 0) == pytest.approx(lv.get("leakage_pJ", 0), abs=0.005)
        for ds, v in lv["dataspaces"].items():
            assert {k: g["dataspaces"][ds][k] for k in v if k != "energy_pJ"} == \
                {k: x for k, x in v.items() if k != "energy_pJ"}
        assert set(g["dataspaces"]) == set(lv["dataspaces"])
    assert abs(got["energy_pJ"] - exp["energy_pJ"]) <= energy_tolerance_pJ(got)
    assert got["edp_J_cycle"] == pytest.approx(exp["edp_J_cycle"], rel=1e-6)
    cmp = compare_records(got, exp)
    assert cmp["cycles_exact"] and cmp["counts_exact"]


def test_the_slowest_level_sets_the_cycles_not_the_arithmetic():
    """eyeriss_like tiny_conv 017: the MACs take 432 cycles, bandwidth stretches the run to 468."""
    text = _stats(VALID[0])
    assert "Cycles                  : 432" in text
    assert parse_stats(text)["cycles"] == _expected(VALID[0])["cycles"] == 468


def test_a_garbled_number_in_a_stats_txt_names_the_file():
    """User study: a garbled count in one stats.txt of a tree of runs named no file."""
    import re
    text = re.sub(r"(Scalar reads \(per-instance\)\s*: )\d+", r"\1n/a", _stats(VALID[0]), count=1)
    with pytest.raises(CoexploreError, match="not a number: 'n/a'") as e:
        parse_stats(text, file="lab/run/timeloop-model.stats.txt")
    assert e.value.file == "lab/run/timeloop-model.stats.txt"


@pytest.mark.parametrize("case", INVALID)
def test_a_refused_run_reads_as_timeloop_s_error(case):
    exp = _expected(case)
    got = failed_run((STATS / case / "timeloop-model.log").read_text())
    assert got["valid"] is False and got["error"] == exp["error"]


def test_the_layout_of_timeloop_2020_and_sparseloop_s():
    """An exercise's output written by the Timeloop of 2020-21 (no leakage, `MACCs =`): its reference
    run's cycles, computes and total energy; a Sparseloop run's statistics are refused, not misread."""
    ex = STATS / "exercises"
    want = json.loads((ex / "summaries.json").read_text())["v3_ex02_conv1d_oc_2level_tiled"]
    got = parse_stats(gzip.decompress((ex / "v3_ex02_conv1d_oc_2level_tiled.stats.txt.gz").read_bytes()).decode())
    assert (got["cycles"], got["computes"]) == (want["cycles"], want["computes"])
    assert abs(got["energy_pJ"] - want["total_topology_energy_pJ"]) <= energy_tolerance_pJ(got)
    assert all(lv.get("leakage_pJ", 0) == 0 for lv in got["levels"].values())
    sparse = gzip.decompress((ex / "v4_sparseloop_0122_SUDU_dot_product.stats.txt.gz").read_bytes()).decode()
    with pytest.raises(CoexploreError, match="sparse-tensor statistics at Buffer.A"):
        parse_stats(sparse)


def test_a_missing_field_is_named():
    text = _stats(VALID[0]).replace("Scalar fills (per-instance)", "Scalar fill (per-instance)", 1)
    with pytest.raises(CoexploreError) as err:
        parse_stats(text)
    assert err.value.key == "psum_spad.Outputs.Scalar fills (per-instance)"


def test_levels_left_out_are_zero_and_foreign_ones_refused():
    exp = _expected(VALID[0])
    got = parse_stats(_stats(VALID[0]), list(exp["levels"]))
    assert got["levels"]["inter_PE_spatial"] == {"energy_pJ": 0.0, "leakage_pJ": 0.0, "dataspaces": {}}
    with pytest.raises(CoexploreError, match="levels the architecture does not have: .*DRAM"):
        parse_stats(_stats(VALID[0]), [n for n in exp["levels"] if n != "DRAM"])
    with pytest.raises(CoexploreError, match="no level statistics"):
        parse_stats("Summary Stats\n-------------\nCycles: 5\n")
    with pytest.raises(CoexploreError, match="Summary Stats"):
        parse_stats(_stats(VALID[0]).split("Summary Stats")[0])


@pytest.mark.parametrize("arch_file", ["processed.yaml", "arch.yaml"])
@pytest.mark.parametrize("case", VALID[:3] + INVALID[:1])
def test_the_inputs_written_for_timeloop_read_back_as_the_same_evaluation(case, arch_file, tmp_path):
    """What timeloop-model is given (architecture, problem, mapping, ERT) is the evaluation asked for:
    read back by coexplore, the same record, which is Timeloop's own for these cases; also from a
    v0.4 node list (arch.yaml), which coexplore flattens as timeloopfe does."""
    ctx = _context(case, arch_file)
    mapping = ctx.load_mapping(CORPUS / "public" / case / "mapping.yaml")
    arrays = to_arrays([mapping], ctx.arch, ctx.problem)
    files = write_inputs(ctx, arrays, 0, tmp_path)
    assert [f.name for f in files] == ["arch.yaml", "problem.yaml", "mapping.yaml", "ERT.yaml"]
    again = load_context(tmp_path / "arch.yaml", tmp_path / "problem.yaml", tmp_path / "ERT.yaml")
    rec = again.record(again.evaluate_mappings([tmp_path / "mapping.yaml"]))
    exp = _expected(case)
    assert rec["valid"] == exp["valid"]
    if exp["valid"]:
        cmp = compare_records(rec, exp)
        assert cmp["cycles_exact"] and cmp["counts_exact"] and cmp["energy_rel_err"] < 1e-9
    else:
        assert rec["error"] == exp["error"]


FAKE = """\
    import gzip, os, sys, yaml
    # a stand-in for timeloop-model: YAML files as arguments, outputs in the working folder
    keys = set()
    for f in sys.argv[1:]:
        keys |= set(yaml.safe_load(open(f)))
    open("seen.txt", "w").write(" ".join(sys.argv[1:]) + "\\n" + " ".join(sorted(keys)))
    answer = os.environ["FAKE_TIMELOOP"]
    if answer.endswith(".json"):          # answers by the mapping given
        answer = __import__("json").load(open(answer))[open("mapping.yaml").read()]
    if answer.endswith(".gz"):
        open("timeloop-model.stats.txt", "wb").write(gzip.decompress(open(answer, "rb").read()))
        print("Utilization = 0.26 | pJ/Compute =   21.421 | Cycles = 468")
    elif answer.endswith(".log"):
        print(open(answer).read())
        sys.exit(1)
    elif answer == "sleep":
        __import__("time").sleep(60)
    else:
        print("terminate called after throwing an instance of 'std::out_of_range'", file=sys.stderr)
        sys.exit(134)
"""


@pytest.fixture
def fake_timeloop(tmp_path, monkeypatch):
    return stand_in_timeloop(tmp_path, monkeypatch, FAKE)


def _evaluate(case, *extra, answer=None, env=None):
    arch, layer, _ = case.split("/")
    run_env = {**os.environ, **(env or {})}
    if answer is not None:
        run_env["FAKE_TIMELOOP"] = str(answer)
    return subprocess.run([sys.executable, "-m", "coexplore.cli.main", "evaluate",
                           str(CORPUS / "arches" / arch / "processed.yaml"), str(CORPUS / "layers" / f"{layer}.yaml"),
                           str(CORPUS / "public" / case / "mapping.yaml"), *map(str, extra)],
                          capture_output=True, text=True, timeout=120, env=run_env)


def test_both_models_side_by_side_agree_on_a_corpus_case(fake_timeloop, tmp_path):
    case = VALID[0]
    r = _evaluate(case, "--model", "both", "--timeloop-dir", tmp_path / "tl",
                  answer=STATS / case / "timeloop-model.stats.txt.gz")
    assert r.returncode == 0, r.stderr
    assert f"against the real timeloop-model ({fake_timeloop})" in r.stdout
    assert "cycles equal: built-in 468, timeloop-model 468" in r.stdout and r.stdout.rstrip().endswith("agree")
    seen = (tmp_path / "tl" / "seen.txt").read_text().splitlines()
    assert seen == ["arch.yaml problem.yaml mapping.yaml ERT.yaml", "ERT architecture mapping problem"]
    assert (tmp_path / "tl" / "timeloop-model.stats.txt").is_file()       # --timeloop-dir keeps what it wrote
    r = _evaluate(case, "--model", "timeloop", "--timeloop-dir", tmp_path / "tl", answer="crash")
    assert r.returncode == 2 and not (tmp_path / "tl" / "timeloop-model.stats.txt").exists()   # not the last run's
    r = _evaluate(case, "--model", "both", "--json", answer=STATS / case / "timeloop-model.stats.txt.gz")
    out = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
    assert out["model"] == "builtin" and out["agreement"]["agree"] is True
    assert out["timeloop"]["cycles"] == out["cycles"] == _expected(case)["cycles"]


def test_timeloop_s_numbers_are_printed_and_a_disagreement_is_exit_1(fake_timeloop):
    case = VALID[0]
    other = STATS / "eyeriss_like/tiny_conv/017/timeloop-model.stats.txt.gz"
    r = _evaluate(case, "--model", "timeloop", "--json", answer=other)
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["model"] == "timeloop-model" and out["timeloop_model"] == str(fake_timeloop)
    assert out["cycles"] == 468 and abs(out["energy_pJ"] - _expected(case)["energy_pJ"]) < 0.1
    wrong = STATS / "simple_output_stationary/tiny_conv/010/timeloop-model.stats.txt.gz"
    r = _evaluate("simple_output_stationary/tiny_conv/006", "--model", "both", answer=wrong)
    assert r.returncode == 1 and "DISAGREE" in r.stdout and "counts: " in r.stdout
    r = _evaluate("simple_output_stationary/tiny_conv/006", "--model", "both", "--json", answer=wrong)
    agreement = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))["agreement"]
    assert r.returncode == 1 and agreement["agree"] is False and agreement["mismatches"]


def test_a_mapping_timeloop_refuses_and_a_crash(fake_timeloop):
    case = INVALID[0]
    r = _evaluate(case, "--model", "both", answer=STATS / case / "timeloop-model.log")
    assert r.returncode == 1 and "both refuse the mapping, with the same message" in r.stdout
    assert r.stdout.rstrip().endswith("agree")
    r = _evaluate(VALID[0], "--model", "timeloop", answer="crash")
    assert r.returncode == 2 and "timeloop-model failed (exit code 134)" in r.stderr
    assert "std::out_of_range" in r.stderr and "Traceback" not in r.stderr


def test_without_timeloop_and_options_that_would_do_nothing(tmp_path):
    r = _evaluate(VALID[0], "--model", "timeloop", env={"PATH": str(tmp_path)})
    assert r.returncode == 2 and "timeloop-model is not installed here" in r.stderr
    r = _evaluate(VALID[0], "--model", "both", env={"COEXPLORE_TIMELOOP_MODEL": str(tmp_path / "nope")})
    assert r.returncode == 2 and "COEXPLORE_TIMELOOP_MODEL" in r.stderr
    r = _evaluate(VALID[0], "--timeloop-dir", tmp_path)
    assert r.returncode == 2 and "--timeloop-dir" in r.stderr
    r = _evaluate(VALID[0], "--model", "timeloop", "--stride-rule", "pre2025")
    assert r.returncode == 2 and "--stride-rule" in r.stderr


def test_validate_runs_each_case_through_timeloop_model(fake_timeloop, tmp_path):
    """A corpus of two cases (one valid, one refused); the stand-in answers each mapping it is given
    with that case's real output: all agree. Answers swapped: both cases fail, exit 1."""
    corpus, answers, run, env = _answered_corpus(tmp_path, [VALID[0], INVALID[0]])
    r = subprocess.run(run + ["--json"], capture_output=True, text=True, timeout=120, env=env)
    s = json.loads(r.stdout)
    assert r.returncode == 0, r.stderr
    assert (s["model"], s["cases"], s["validity_agrees"], s["invalid_messages_exact"]) == ("timeloop", 2, 2, 1)
    assert (s["cycles_exact"], s["counts_exact"], s["energy_within_1e-4"]) == (1, 1, 1)
    r = subprocess.run(run, capture_output=True, text=True, timeout=120, env=env)
    assert "model           : the real timeloop-model" in r.stdout
    swapped = dict(zip(answers, reversed(answers.values())))
    (tmp_path / "answers.json").write_text(json.dumps(swapped))
    r = subprocess.run(run + ["--json"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 1 and json.loads(r.stdout)["validity_agrees"] == 0
    r = subprocess.run(run + ["--stride-rule", "pre2025"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2 and "--stride-rule" in r.stderr


def _answered_corpus(tmp_path, cases):
    """A corpus of eyeriss_like `cases` and the stand-in's answers (its stats.txt or log) keyed by the
    mapping.yaml coexplore writes for each; the validate command through it and its environment."""
    import shutil
    corpus = tmp_path / "c"
    for sub in ["arches/eyeriss_like", "layers"]:
        shutil.copytree(CORPUS / sub, corpus / sub)
    answers = {}
    for case in cases:
        shutil.copytree(CORPUS / "public" / case, corpus / "public" / case)
        ctx = _context(case)
        arrays = to_arrays([ctx.load_mapping(CORPUS / "public" / case / "mapping.yaml")], ctx.arch, ctx.problem)
        write_inputs(ctx, arrays, 0, tmp_path / "w" / case)
        out = STATS / case
        answers[(tmp_path / "w" / case / "mapping.yaml").read_text()] = str(
            out / "timeloop-model.stats.txt.gz" if (out / "timeloop-model.stats.txt.gz").exists()
            else out / "timeloop-model.log")
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    run = [sys.executable, "-m", "coexplore.cli.main", "validate", str(corpus), "--model", "timeloop"]
    env = {**os.environ, "FAKE_TIMELOOP": str(tmp_path / "answers.json")}
    return corpus, answers, run, env


def _raw_corpus(tmp_path):
    """A corpus of the six cases as timeloop-model left them: mapping.yaml with stats.txt or the log of
    a refused run, no expected.json."""
    import shutil
    corpus = tmp_path / "raw"
    shutil.copytree(CORPUS / "layers", corpus / "layers")
    for case in VALID + INVALID:
        arch = case.split("/")[0]
        if not (corpus / "arches" / arch).exists():
            shutil.copytree(CORPUS / "arches" / arch, corpus / "arches" / arch)
        folder = corpus / "public" / case
        folder.mkdir(parents=True)
        shutil.copy(CORPUS / "public" / case / "mapping.yaml", folder)
        if case in VALID:
            (folder / "timeloop-model.stats.txt").write_text(_stats(case))
        else:
            shutil.copy(STATS / case / "timeloop-model.log", folder)
    return corpus


def _validate(corpus, *extra):
    return subprocess.run([sys.executable, "-m", "coexplore.cli.main", "validate", str(corpus), *extra],
                          capture_output=True, text=True, timeout=300)


def test_validate_takes_timeloop_s_own_outputs_as_references(tmp_path):
    corpus = _raw_corpus(tmp_path)
    r = _validate(corpus, "--json")
    s = json.loads(r.stdout)
    assert r.returncode == 0, r.stderr
    assert (s["cases"], s["validity_agrees"], s["invalid_messages_exact"]) == (6, 6, 2)
    assert (s["cycles_exact"], s["counts_exact"], s["energy_within_1e-4"]) == (4, 4, 4)
    assert (s["energy_within_tolerance"], s["energy_tolerance_from_stats"]) == (4, 4)
    assert "energy in tol.  : 4/4 (100.0%) (0.01%, or for the 4 stats.txt references" in _validate(corpus).stdout
    assert "energy in tol." not in _validate(CORPUS).stdout      # expected.json references: 1e-4 alone
    # another run's stats.txt (same architecture, another layer): that case disagrees
    (corpus / "public" / VALID[2] / "timeloop-model.stats.txt").write_text(_stats(VALID[3]))
    r = _validate(corpus, "--json")
    assert r.returncode == 1 and [f["case"] for f in json.loads(r.stdout)["failures"]] == [f"public/{VALID[2]}"]


def test_raw_outputs_that_cannot_be_references_are_said(tmp_path):
    corpus = _raw_corpus(tmp_path)
    log = corpus / "public" / INVALID[0] / "timeloop-model.log"
    log.write_text("Segmentation fault\n")
    r = _validate(corpus)
    assert r.returncode == 2 and "not the output of a run that refused the mapping" in r.stderr and str(log) in r.stderr
    log.write_text("input file: ERT.yaml\nERROR: could not open file ERT.yaml\n")    # an input error: no reference
    r = _validate(corpus)
    assert r.returncode == 2 and "not the output of a run that refused the mapping" in r.stderr
    log.write_text((STATS / INVALID[0] / "timeloop-model.log").read_text())
    (corpus / "public" / VALID[0] / "mapping.yaml").unlink()
    r = _validate(corpus)
    assert r.returncode == 2 and "has timeloop-model.stats.txt but no mapping.yaml" in r.stderr


# from the review of the backend (a stand-in that behaves as Timeloop can, and tampered real outputs)

def test_a_relative_timeloop_model_path_is_run(fake_timeloop, tmp_path):
    case = VALID[0]
    arch, layer, _ = case.split("/")
    env = {**os.environ, "COEXPLORE_TIMELOOP_MODEL": os.path.relpath(fake_timeloop, tmp_path),
           "FAKE_TIMELOOP": str(STATS / case / "timeloop-model.stats.txt.gz")}
    r = subprocess.run([sys.executable, "-m", "coexplore.cli.main", "evaluate",
                        str(CORPUS / "arches" / arch / "processed.yaml"), str(CORPUS / "layers" / f"{layer}.yaml"),
                        str(CORPUS / "public" / case / "mapping.yaml"), "--model", "timeloop", "--json"],
                       capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["cycles"] == _expected(case)["cycles"]


def test_a_timeloop_dir_that_is_a_file_is_one_line(fake_timeloop, tmp_path):
    (tmp_path / "f").touch()
    r = _evaluate(VALID[0], "--model", "timeloop", "--timeloop-dir", tmp_path / "f",
                  answer=STATS / VALID[0] / "timeloop-model.stats.txt.gz")
    assert r.returncode == 2 and "--timeloop-dir" in r.stderr and "Traceback" not in r.stderr


def test_energy_tolerance_is_half_a_hundredth_per_printed_energy():
    text = _stats(VALID[1])
    printed = len(re.findall(r"^\s+(?:Energy \(total\)|Leakage energy \(total\)|Temporal Reduction Energy \(total\)"
                             r"|Address Generation Energy \(total\))\s*:", text.split("\nNetworks")[0], re.M))
    assert printed > 10
    assert energy_tolerance_pJ(parse_stats(text)) == pytest.approx(0.005 * printed)


def test_reduction_and_address_generation_energies_count_in_their_level():
    text = _stats(VALID[0])
    old = "Temporal Reduction Energy (total)        : 0.00 pJ"
    assert old in text
    base = parse_stats(text)
    more = parse_stats(text.replace(old, "Temporal Reduction Energy (total)        : 7.50 pJ", 1))
    assert more["energy_pJ"] == pytest.approx(base["energy_pJ"] + 7.5)


ODD = """\
    import gzip, os, sys, time
    how = os.environ["ODD"]
    if how == "error-then-abort":
        print("ERROR: width: 64  block_size: 1  word_bits: 7", flush=True); os.abort()
    if how == "exit1-silent": sys.exit(1)
    if how == "exit1-input-error":
        print("ERROR: network X not found", file=sys.stderr); sys.exit(1)
    if how == "empty-stats": open("timeloop-model.stats.txt", "w").close(); sys.exit(0)
    if how == "stats-then-crash":
        open("timeloop-model.stats.txt", "wb").write(gzip.decompress(open(os.environ["STATS_GZ"], "rb").read()))
        os.abort()
    if how == "stdin":
        same = os.path.samestat(os.fstat(0), os.stat(os.devnull))
        print("ERROR: couldn't map level stdin: " + ("devnull" if same else "not devnull"), file=sys.stderr)
        sys.exit(1)
    if how == "sleep": time.sleep(30)
"""


@pytest.fixture
def odd_timeloop(tmp_path):
    exe = tmp_path / "odd" / "timeloop-model"
    exe.parent.mkdir()
    exe.write_text(f"#!{sys.executable}\n" + textwrap.dedent(ODD))
    exe.chmod(0o755)
    return exe


def _run(exe, how, monkeypatch, **kw):
    from coexplore.model.timeloop_run import run_timeloop_model
    ctx = _context(VALID[0])
    arrays = to_arrays([ctx.load_mapping(CORPUS / "public" / VALID[0] / "mapping.yaml")], ctx.arch, ctx.problem)
    monkeypatch.setenv("ODD", how)
    monkeypatch.setenv("STATS_GZ", str(STATS / VALID[0] / "timeloop-model.stats.txt.gz"))
    return run_timeloop_model(ctx, arrays, 0, str(exe), **kw)


@pytest.mark.parametrize("how, says", [("error-then-abort", "killed by signal 6 (SIGABRT)"),
                                       ("exit1-silent", "failed (exit code 1)"),
                                       ("exit1-input-error", "failed (exit code 1): ERROR: network X not found"),
                                       ("empty-stats", "ended (exit code 0) without writing timeloop-model.stats.txt"),
                                       ("stats-then-crash", "killed by signal 6 (SIGABRT)")])
def test_a_crash_or_an_input_error_is_not_a_refused_mapping_nor_a_result(odd_timeloop, monkeypatch, how, says):
    with pytest.raises(CoexploreError, match=re.escape(f"timeloop-model {says}")):
        _run(odd_timeloop, how, monkeypatch)


def test_a_timeloop_dir_of_the_user_s_own_files_is_refused(fake_timeloop, tmp_path):
    """Its mapping.yaml and ERT.yaml would be replaced, a real stats.txt deleted."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "mapping.yaml").write_text("# mine\n")
    r = _evaluate(VALID[0], "--model", "timeloop", "--timeloop-dir", mine,
                  answer=STATS / VALID[0] / "timeloop-model.stats.txt.gz")
    assert r.returncode == 2 and "holds files of its own (mapping.yaml)" in r.stderr
    assert (mine / "mapping.yaml").read_text() == "# mine\n"
    fresh = tmp_path / "fresh"
    for _ in range(2):                             # a new folder, then the one it wrote: both fine
        r = _evaluate(VALID[0], "--model", "timeloop", "--timeloop-dir", fresh,
                      answer=STATS / VALID[0] / "timeloop-model.stats.txt.gz")
        assert r.returncode == 0, r.stderr


def test_a_stats_txt_that_cannot_be_read_names_no_deleted_file(fake_timeloop, tmp_path):
    garbage = tmp_path / "g.stats.txt.gz"
    garbage.write_bytes(gzip.compress(b"Summary Stats\n-------------\nCycles: 5\n"))
    r = _evaluate(VALID[0], "--model", "timeloop", answer=garbage)
    assert r.returncode == 2 and "timeloop-model wrote a stats.txt coexplore cannot read" in r.stderr
    assert "coexplore-timeloop-" not in r.stderr and "--timeloop-dir DIR keeps" in r.stderr


def test_a_timeloop_model_on_path_but_not_executable_is_said(tmp_path):
    (tmp_path / "timeloop-model").write_text("#!/bin/sh\n")
    r = _evaluate(VALID[0], "--model", "timeloop", env={"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"})
    assert r.returncode == 2 and f"{tmp_path / 'timeloop-model'} is not executable" in r.stderr


def test_timeloop_model_reads_no_stdin_and_is_stopped_at_the_timeout(odd_timeloop, monkeypatch):
    r, w = os.pipe()
    saved = os.dup(0)
    os.dup2(r, 0)                                 # our stdin an open pipe
    try:
        assert _run(odd_timeloop, "stdin", monkeypatch, timeout=20)["error"].endswith("stdin: devnull")
    finally:
        os.dup2(saved, 0)
        for fd in (saved, r, w):
            os.close(fd)
    with pytest.raises(CoexploreError, match="ran longer than 1 s"):
        _run(odd_timeloop, "sleep", monkeypatch, timeout=1)


def test_the_first_error_line_is_timeloop_s_message():
    log = "Start Parsering Layout\nERROR: couldn't map level A: x\n\nERROR: couldn't map level B: y\n"
    assert failed_run(log)["error"] == "ERROR: couldn't map level A: x"


def test_timeloop_model_s_own_numbers_are_reported(fake_timeloop):
    other = "simple_output_stationary/tiny_conv/010"
    r = _evaluate("simple_output_stationary/tiny_conv/006", "--model", "timeloop", "--json",
                  answer=STATS / other / "timeloop-model.stats.txt.gz")
    out = json.loads(r.stdout)
    assert (out["cycles"], out["computes"]) == (_expected(other)["cycles"], _expected(other)["computes"])
    assert out["cycles"] != _expected("simple_output_stationary/tiny_conv/006")["cycles"]


def _tampered(tmp_path, case, old, new, name):
    text = _stats(case)
    assert old in text
    p = tmp_path / f"{name}.stats.txt.gz"
    p.write_bytes(gzip.compress(text.replace(old, new, 1).encode()))
    return p


@pytest.mark.parametrize("old, new, key", [
    ("Cycles: 468", "Cycles: 469", "cycles_exact"),
    ("Scalar reads (per-instance)              : 384",
     "Scalar reads (per-instance)              : 385", "counts_exact"),
    ("Energy (total)          : 4306.70 pJ", "Energy (total)          : 4307.70 pJ", "energy_close")])
def test_each_kind_of_difference_is_a_disagreement(fake_timeloop, tmp_path, old, new, key):
    r = _evaluate(VALID[0], "--model", "both", "--json", answer=_tampered(tmp_path, VALID[0], old, new, key))
    a = json.loads(r.stdout)["agreement"]
    assert r.returncode == 1 and a[key] is False and a["agree"] is False
    assert all(a[k] is True for k in {"cycles_exact", "counts_exact", "energy_close"} - {key})


def test_energy_moved_between_dataspaces_is_a_disagreement(fake_timeloop, tmp_path):
    """The total unchanged (one dataspace 10 pJ more, another 10 pJ less): the split is compared too."""
    text = _stats(VALID[0]).replace(": 13213.67 pJ", ": 13223.67 pJ", 1).replace(": 25370.66 pJ", ": 25360.66 pJ", 1)
    p = tmp_path / "moved.stats.txt.gz"
    p.write_bytes(gzip.compress(text.encode()))
    r = _evaluate(VALID[0], "--model", "both", "--json", answer=p)
    a = json.loads(r.stdout)["agreement"]
    assert r.returncode == 1 and a["agree"] is False and a["energy_close"] is True and a["counts_exact"] is True
    assert {m["key"] for m in a["others"]} == {"energy_pJ"} and len(a["others"]) == 4     # 2 dataspaces, their 2 levels


def test_a_difference_within_stats_txt_s_rounding_is_agreement(fake_timeloop, tmp_path):
    r = _evaluate(VALID[0], "--model", "both", "--json", answer=_tampered(
        tmp_path, VALID[0], "Energy (total)          : 4306.70 pJ", "Energy (total)          : 4306.71 pJ", "lsd"))
    assert r.returncode == 0 and json.loads(r.stdout)["agreement"]["agree"] is True


def test_both_refusing_with_different_messages_is_a_disagreement(fake_timeloop):
    r = _evaluate(INVALID[0], "--model", "both", "--json", answer=STATS / INVALID[1] / "timeloop-model.log")
    a = json.loads(r.stdout)["agreement"]
    assert r.returncode == 1 and a["message_exact"] is False and a["agree"] is False
    assert (a["error_got"], a["error_ref"]) == (_expected(INVALID[0])["error"], _expected(INVALID[1])["error"])
    r = _evaluate(INVALID[0], "--model", "both", answer=STATS / INVALID[1] / "timeloop-model.log")
    assert f"timeloop-model {_expected(INVALID[1])['error']!r}" in r.stdout


def test_a_case_with_stats_and_its_saved_output_is_read_from_its_stats(tmp_path):
    """stats.txt wins over a log saved beside it (the output of the same, successful run)."""
    corpus = _raw_corpus(tmp_path)
    for case in VALID:
        (corpus / "public" / case / "timeloop-model.log").write_text("Utilization = 0.26 | Cycles = 468\n")
    r = _validate(corpus, "--json")
    s = json.loads(r.stdout)
    assert r.returncode == 0 and (s["cases"], s["validity_agrees"], s["cycles_exact"]) == (6, 6, 4)


def test_references_without_a_mapping_are_an_incomplete_case_but_a_run_beside_an_arch_is_none(tmp_path):
    corpus = _raw_corpus(tmp_path)
    (corpus / "arches" / "eyeriss_like" / "timeloop-model.stats.txt").write_text(_stats(VALID[0]))
    assert _validate(corpus).returncode == 0
    case = corpus / "public" / INVALID[0]
    (case / "mapping.yaml").unlink()
    r = _validate(corpus)
    assert r.returncode == 2 and "has timeloop-model.log but no mapping.yaml" in r.stderr


def test_validate_finds_the_folders_timeloop_ran_in(tmp_path):
    """Two exercises' ref/ folders (a timeloop-model run and a timeloop-mapper run: the flattened input,
    the ERT, the mapper's map.yaml, the stats.txt) and a Sparseloop run: the two are cases, the third
    is skipped. The mapper run's references predate Timeloop's stride fix: its Input reads differ
    (475,136 here, 573,440 in its stats.txt) unless --stride-rule pre2025, which makes both exact."""
    import shutil
    root = tmp_path / "runs"
    ex = STATS / "exercises"
    for case, stats in (("v4_ex03_conv1d_oc_3level_bypass", "timeloop-model.stats.txt"),
                        ("v4_ex06_mapper_eyeriss_vgg02_layer5", "timeloop-mapper.stats.txt")):
        shutil.copytree(DATA / "exercises_v4" / case, root / case / "ref")
        (root / case / "ref" / stats).write_bytes(gzip.decompress((ex / f"{case}.stats.txt.gz").read_bytes()))
    sparse = root / "sparse" / "ref"
    shutil.copytree(DATA / "exercises_v4" / "v4_ex03_conv1d_oc_3level_bypass", sparse)
    (sparse / "timeloop-model.stats.txt").write_bytes(
        gzip.decompress((ex / "v4_sparseloop_0122_SUDU_dot_product.stats.txt.gz").read_bytes()))
    r = _validate(root, "--json")
    s = json.loads(r.stdout)
    assert r.returncode == 1, r.stderr
    assert (s["cases"], s["validity_agrees"], s["cycles_exact"], s["counts_exact"]) == (2, 2, 2, 1)
    [failure] = s["failures"]
    assert failure["case"] == "v4_ex06_mapper_eyeriss_vgg02_layer5/ref"
    assert {"level": "DRAM", "dataspace": "Inputs", "key": "reads", "got": 475136, "ref": 573440} \
        in failure["mismatches"]
    assert s["skipped"] == [{"folder": str(sparse), "why": "Sparseloop run (coexplore models dense tensors)"}]
    r = _validate(root, "--stride-rule", "pre2025")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "counts exact    : 2/2" in r.stdout and "skipped         : 1 folder: Sparseloop run" in r.stdout


def test_validate_through_a_timeloop_model_that_fails_on_every_case_stops_naming_the_first(fake_timeloop, tmp_path):
    corpus = _raw_corpus(tmp_path)                      # 6 cases: the first 5 runs fail, the 6th is not run
    r = subprocess.run([sys.executable, "-m", "coexplore.cli.main", "validate", str(corpus), "--model", "timeloop"],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "FAKE_TIMELOOP": "crash"})
    assert r.returncode == 2 and "timeloop-model failed on each of the first 5 cases; the first: public/" in r.stderr
    assert "killed" in r.stderr or "failed (exit code 134)" in r.stderr
    assert "coexplore evaluate ... --model timeloop --timeloop-dir DIR on one of them" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_failed_timeloop_model_run_fails_its_case_and_validate_goes_on(fake_timeloop, tmp_path):
    """One case's run times out (--timeloop-timeout), the other's answers: the first is a failing case
    with the reason, the second is compared; exit 1."""
    corpus, answers, run, env = _answered_corpus(tmp_path, [VALID[0], INVALID[0]])
    first = next(iter(answers))
    answers[first] = "sleep"
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    t0 = time.monotonic()
    r = subprocess.run(run + ["--json", "--timeloop-timeout", "1.5"], capture_output=True, text=True, timeout=120, env=env)
    assert time.monotonic() - t0 < 50                  # stopped at 1.5 s, not the stand-in's 60 s
    s = json.loads(r.stdout)
    assert r.returncode == 1, r.stderr
    assert (s["cases"], s["runs_failed"], s["validity_agrees"], s["invalid_messages_exact"]) == (2, 1, 1, 1)
    [failed] = s["failures"]
    assert failed["case"] == f"public/{VALID[0]}" and \
        failed["run_error"] == "timeloop-model ran longer than 1.5 s (--timeloop-timeout)"
    r = subprocess.run(run + ["--timeloop-timeout", "1.5"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 1
    assert "runs failed     : 1 timeloop-model run" in r.stdout
    assert f"public/{VALID[0]}: timeloop-model ran longer than 1.5 s (--timeloop-timeout)" in r.stdout


@pytest.mark.parametrize("command", ["validate", "evaluate"])
def test_timeloop_timeout_needs_timeloop_runs_and_a_positive_time(command, tmp_path):
    inputs = [str(CORPUS)] if command == "validate" else [
        str(CORPUS / "arches/eyeriss_like/processed.yaml"), str(CORPUS / "layers/tiny_conv.yaml"),
        str(CORPUS / "public" / VALID[0] / "mapping.yaml")]
    base = [sys.executable, "-m", "coexplore.cli.main", command, *inputs]
    r = subprocess.run(base + ["--timeloop-timeout", "5"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--timeloop-timeout without" in r.stderr
    for bad in ("0", "-1", "inf", "soon"):
        r = subprocess.run(base + ["--model", "timeloop", "--timeloop-timeout", bad], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 2 and "--timeloop-timeout" in r.stderr and "Traceback" not in r.stderr


def test_a_refusal_for_another_reason_fails_validate_and_is_shown(tmp_path):
    """Both refuse the mapping, Timeloop for another level: a disagreement a CI gate must see."""
    corpus = _raw_corpus(tmp_path)
    log = corpus / "public" / INVALID[0] / "timeloop-model.log"
    log.write_text(log.read_text().replace("couldn't map level psum_spad", "couldn't map level ifmap_spad"))
    r = _validate(corpus)
    assert r.returncode == 1 and "both refuse it, for other reasons" in r.stdout and "ifmap_spad" in r.stdout


def test_run_folders_through_symlinks_with_both_tools_and_without_outputs(tmp_path):
    """A symlinked run folder is found; timeloop-model's stats are checked with the input's mapping even
    where the mapper's map.yaml lies beside them (the mapper's own need its stats); a folder without
    Timeloop's outputs is counted as skipped; one with outputs but no ERT is refused, naming it."""
    import shutil
    ex = STATS / "exercises"
    store = tmp_path / "store"
    shutil.copytree(DATA / "exercises_v4" / "v4_ex03_conv1d_oc_3level_bypass", store / "ex03")
    (store / "ex03" / "timeloop-model.stats.txt").write_bytes(
        gzip.decompress((ex / "v4_ex03_conv1d_oc_3level_bypass.stats.txt.gz").read_bytes()))
    root = tmp_path / "runs"
    root.mkdir()
    (root / "linked").symlink_to(store / "ex03")
    both = root / "both"
    shutil.copytree(store / "ex03", both)
    six = DATA / "exercises_v4" / "v4_ex06_mapper_eyeriss_vgg02_layer5"
    for name in ("timeloop-mapper.map.yaml", "timeloop-mapper.ERT.yaml"):
        shutil.copy(six / name, both / name)
    shutil.copytree(DATA / "exercises_v4" / "v4_ex01_conv1d_2level_os", root / "empty")     # inputs only
    r = _validate(root, "--json")
    s = json.loads(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(f["folder"] for f in s["skipped"]) == [str(root / "empty")]
    assert s["cases"] == 2                          # linked + both (timeloop-model's); the mapper's needs its stats
    (both / "timeloop-model.ERT.yaml").unlink()
    r = _validate(root)
    assert r.returncode == 2 and "timeloop-model's outputs but not the energy table it used" in r.stderr


# from the mutation review of the run folders and the backend's failures

EX = DATA / "exercises_v4"
EX03 = "v4_ex03_conv1d_oc_3level_bypass"
TAMPER = ("Scalar reads (per-instance)              : 1024", "Scalar reads (per-instance)              : 1025")


def _ex03_run(folder):
    """ex03's ref/ as timeloop-model left it: the flattened input, its ERT and its stats.txt."""
    import shutil
    shutil.copytree(EX / EX03, folder)
    (folder / "timeloop-model.stats.txt").write_bytes(
        gzip.decompress((STATS / "exercises" / f"{EX03}.stats.txt.gz").read_bytes()))
    return folder


def _as_mapper_run(run):
    """timeloop-mapper's map.yaml (the input's own mapping) and ERT beside ex03's outputs."""
    import shutil
    text = (run / "parsed-processed-input.yaml").read_text()
    (run / "timeloop-mapper.map.yaml").write_text(text[text.index("\nmapping:") + 1:text.index("\nmapper:") + 1])
    shutil.copy(run / "timeloop-model.ERT.yaml", run / "timeloop-mapper.ERT.yaml")


def _validate_json(root, *extra):
    r = _validate(root, "--json", *extra)
    return r, (json.loads(r.stdout) if r.stdout.strip() else None)


def test_a_run_folder_with_the_mapper_s_outputs_beside_the_model_s_is_two_cases_each_named(tmp_path):
    """timeloop-mapper's outputs beside timeloop-model's (its map.yaml the input's mapping, its ERT the
    same): two cases, the mapper's labelled as such, also where it fails."""
    run = _ex03_run(tmp_path / "runs" / "x")
    _as_mapper_run(run)
    stats = (run / "timeloop-model.stats.txt").read_text()
    (run / "timeloop-mapper.stats.txt").write_text(stats)
    r, s = _validate_json(tmp_path / "runs")
    assert r.returncode == 0, r.stdout + r.stderr
    assert s["cases"] == 2 and sorted(s["per_arch"]) == ["x", "x (mapper)"]
    assert TAMPER[0] in stats
    (run / "timeloop-mapper.stats.txt").write_text(stats.replace(*TAMPER, 1))
    r, s = _validate_json(tmp_path / "runs")
    assert r.returncode == 1 and ("x (mapper)", "x (mapper)") in [(f["case"], f["arch"]) for f in s["failures"]]


def test_each_tool_s_case_is_compared_with_its_own_stats(tmp_path):
    run = _ex03_run(tmp_path / "runs" / "x")
    _as_mapper_run(run)
    stats = (run / "timeloop-model.stats.txt").read_text()
    (run / "timeloop-mapper.stats.txt").write_text(stats)
    (run / "timeloop-model.stats.txt").write_text(stats.replace(*TAMPER, 1))     # timeloop-model's is off
    r, s = _validate_json(tmp_path / "runs")
    assert r.returncode == 1 and [f["case"] for f in s["failures"]] == ["x"]


def test_a_run_folder_given_as_the_root_is_named_by_its_case(tmp_path):
    """<case>/ref given as the root, or its parent: the run is named <case>, a failure by its folder."""
    run = _ex03_run(tmp_path / EX03 / "ref")
    for root, case in ((tmp_path, f"{EX03}/ref"), (run, str(run))):
        r, s = _validate_json(root)
        assert r.returncode == 0 and list(s["per_arch"]) == [EX03], r.stderr
    (run / "timeloop-model.stats.txt").write_text((run / "timeloop-model.stats.txt").read_text().replace(*TAMPER, 1))
    for root, case in ((tmp_path, f"{EX03}/ref"), (run, str(run))):
        r, s = _validate_json(root)
        assert r.returncode == 1 and [f["case"] for f in s["failures"]] == [case]


def test_a_run_folder_reached_twice_through_a_symlink_is_one_case(tmp_path):
    root = tmp_path / "runs"
    _ex03_run(root / "real")
    (root / "alias").symlink_to(root / "real")
    r, s = _validate_json(root)
    assert r.returncode == 0 and s["cases"] == 1, r.stdout + r.stderr


def test_a_corpus_case_holding_a_flattened_input_is_not_also_a_run(tmp_path):
    import shutil
    corpus = _raw_corpus(tmp_path)
    shutil.copy(EX / EX03 / "parsed-processed-input.yaml", corpus / "public" / VALID[0])
    r, s = _validate_json(corpus)
    assert r.returncode == 0 and s["cases"] == 6, r.stderr


def test_a_run_folder_s_other_files_are_not_outputs_to_check(tmp_path):
    """A log of timeloop-mapper (no stats: it found nothing), a mapping.yaml beside the input and an
    ERT.yaml of another architecture beside timeloop-model's own ERT: still the one case, exact."""
    import shutil
    run = _ex03_run(tmp_path / "runs" / "x")
    (run / "timeloop-mapper.log").write_text("ERROR: no valid mappings found within the search criteria\n")
    text = (run / "parsed-processed-input.yaml").read_text()
    (run / "mapping.yaml").write_text(text[text.index("\nmapping:") + 1:text.index("\nmapper:") + 1])
    shutil.copy(EX / "v4_ex06_mapper_eyeriss_vgg02_layer5" / "timeloop-mapper.ERT.yaml", run / "ERT.yaml")
    r, s = _validate_json(tmp_path / "runs")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (s["cases"], s["counts_exact"], s["skipped"]) == (1, 1, [])


def test_expected_json_takes_precedence_over_the_stats_txt_beside_it(tmp_path):
    import shutil
    corpus = _raw_corpus(tmp_path)
    folder = corpus / "public" / VALID[2]
    (folder / "timeloop-model.stats.txt").write_text(_stats(VALID[3]))        # another layer's run
    shutil.copy(CORPUS / "public" / VALID[2] / "expected.json", folder)
    r, s = _validate_json(corpus)
    assert r.returncode == 0 and s["cases"] == 6, r.stdout + r.stderr


def test_each_reason_for_skipping_is_a_line(tmp_path):
    import shutil
    root = tmp_path / "runs"
    _ex03_run(root / "a")
    sparse = _ex03_run(root / "sparse")
    (sparse / "timeloop-model.stats.txt").write_bytes(
        gzip.decompress((STATS / "exercises" / "v4_sparseloop_0122_SUDU_dot_product.stats.txt.gz").read_bytes()))
    shutil.copytree(EX / "v4_ex01_conv1d_2level_os", root / "empty")
    r = _validate(root)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("skipped")]
    assert len(lines) == 2
    assert any("1 folder: Sparseloop run" in ln and str(sparse) in ln for ln in lines)
    assert any("1 folder: no Timeloop outputs" in ln and str(root / "empty") in ln for ln in lines)


def test_a_validity_difference_says_why_the_refusing_side_refused(tmp_path, fake_timeloop):
    import shutil
    corpus = _raw_corpus(tmp_path)
    folder = corpus / "public" / VALID[0]
    (folder / "timeloop-model.stats.txt").unlink()
    shutil.copy(STATS / INVALID[0] / "timeloop-model.log", folder)
    why = _expected(INVALID[0])["error"]
    r = _validate(corpus)
    assert r.returncode == 1 and f"validity differs (model True, reference False); {why}" in r.stdout
    r = _evaluate(VALID[0], "--model", "both", answer=STATS / INVALID[0] / "timeloop-model.log")
    assert r.returncode == 1 and f"validity DIFFERS: built-in valid, timeloop-model invalid: {why}" in r.stdout


def test_energy_within_stats_txt_s_printing_is_agreement_for_each_tool(tmp_path, monkeypatch):
    """A level's printed energy off by 0.01 pJ is within stats.txt's rounding, whatever ENERGY_TOL:
    for timeloop-model's stats.txt and timeloop-mapper's."""
    from coexplore.model import validation
    monkeypatch.setattr(validation, "ENERGY_TOL", 1e-9)
    for tool in ("timeloop-model", "timeloop-mapper"):
        run = _ex03_run(tmp_path / tool / "x")
        stats = (run / "timeloop-model.stats.txt").read_text()
        old = "Energy (total)                           : 1089.64 pJ"
        assert old in stats
        (run / "timeloop-model.stats.txt").unlink()
        (run / f"{tool}.stats.txt").write_text(stats.replace(old, old.replace("1089.64", "1089.65"), 1))
        if tool == "timeloop-mapper":
            _as_mapper_run(run)
        s = validation.validate(tmp_path / tool, progress=False)
        assert s["cases"] == 1 and 0 < s["energy_max_rel_err"] and s["failures"] == [], tool


def _script(tmp_path, body):
    exe = tmp_path / "say" / "timeloop-model"
    exe.parent.mkdir(exist_ok=True)
    exe.write_text(f"#!{sys.executable}\nimport os, sys\n" + textwrap.dedent(body))
    exe.chmod(0o755)
    return exe


@pytest.mark.parametrize("body, says", [
    ("print('one\\n\\ntwo\\nthree\\n\\nfour\\n five '); sys.exit(3)", "failed (exit code 3): three | four | five"),
    ("sys.exit(3)", "failed (exit code 3): no output")])
def test_a_failure_says_the_last_three_lines_timeloop_printed(tmp_path, monkeypatch, body, says):
    with pytest.raises(CoexploreError) as err:
        _run(_script(tmp_path, body), "-", monkeypatch)
    assert err.value.message == f"timeloop-model {says}"


@pytest.mark.parametrize("code", ["os.abort()", "sys.exit(2)"])
def test_a_refusal_then_a_crash_or_another_exit_code_is_no_refused_mapping(tmp_path, monkeypatch, code):
    log = (STATS / INVALID[0] / "timeloop-model.log").read_text()
    exe = _script(tmp_path, f"sys.stdout.write({log!r}); sys.stdout.flush(); {code}")
    with pytest.raises(CoexploreError, match=re.escape("killed by signal 6") if "abort" in code
                       else re.escape("failed (exit code 2)")):
        _run(exe, "-", monkeypatch)


def test_a_run_deep_below_an_architecture_is_no_incomplete_case(tmp_path):
    """Timeloop's outputs in a folder below arches/<arch>/ (whose third-last part names an arch): not a case."""
    corpus = _raw_corpus(tmp_path)
    run = corpus / "arches" / "eyeriss_like" / "runs" / "1"
    run.mkdir(parents=True)
    (run / "timeloop-model.stats.txt").write_text(_stats(VALID[0]))
    r, s = _validate_json(corpus)
    assert r.returncode == 0 and s["cases"] == 6, r.stderr


def test_energy_within_tolerance_counts_each_case_against_its_own_tolerance():
    """A stats.txt reference printed to 0.01 pJ may be off by more than 1e-4 on a tiny total: within its
    tolerance it passes and counts in `energy_within_tolerance`, not in `energy_within_1e-4`."""
    from coexplore.model.validation import summarise

    def row(err, tol=None):
        r = {"case": "c", "arch": "a", "layer": "l", "valid_ref": True, "valid_got": True, "valid_agree": True,
             "cycles_exact": True, "counts_exact": True, "energy_rel_err": err, "cycles_rel_err": 0.0}
        return r if tol is None else {**r, "energy_tol": tol}
    s = summarise([row(2e-4, 3e-4), row(2e-4), row(5e-5, 3e-4), row(4e-4, 3e-4)], 0.0, 0.0)
    assert (s["energy_within_1e-4"], s["energy_within_tolerance"], s["energy_tolerance_from_stats"]) == (1, 2, 3)
    assert [r["energy_rel_err"] for r in s["failures"]] == [2e-4, 4e-4]


def test_evaluate_stops_a_timeloop_model_run_at_its_timeout(fake_timeloop):
    t0 = time.monotonic()
    r = _evaluate(VALID[0], "--model", "both", "--timeloop-timeout", "1", answer="sleep")
    assert time.monotonic() - t0 < 50                  # the stand-in sleeps 60 s
    assert r.returncode == 2 and "timeloop-model ran longer than 1 s" in r.stderr and "Traceback" not in r.stderr
