"""Bad input to `coexplore validate` (a CI gate: a malformed corpus must never pass), to the
file arguments of `arch generate` / `energy check`, and to timeloop-mapper YAMLs given to `map`:
one line naming the file and key, exit 2, no traceback."""

import contextlib
import io
import json
import shutil
import subprocess
import sys

import pytest

from conftest import CORPUS

from coexplore.cli.main import main
from coexplore.model.compare import COUNT_KEYS

ARCH = "simba_like"
LAYER = "tiny_conv"
SRC_CASES = CORPUS / "public" / ARCH / LAYER


def run(*args):
    """`coexplore ARGS` in this process (fast): (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


def cli(*args):
    return subprocess.run([sys.executable, "-m", "coexplore.cli.main", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def one_line_error(rc, err, *needles):
    assert rc == 2, (rc, err)
    errors = [line for line in err.splitlines() if "error" in line.lower()]
    assert "Traceback" not in err and len(errors) == 1, err
    for n in needles:
        assert n in err, err


@pytest.fixture
def corpus_copy(tmp_path):
    """A small corpus laid out like the bundled one: one architecture, one layer, its 5 cases."""
    root = tmp_path / "corpus"
    shutil.copytree(CORPUS / "arches" / ARCH, root / "arches" / ARCH)
    (root / "layers").mkdir()
    shutil.copyfile(CORPUS / "layers" / f"{LAYER}.yaml", root / "layers" / f"{LAYER}.yaml")
    shutil.copytree(SRC_CASES, root / "public" / ARCH / LAYER)
    return root


def cases(root, valid):
    found = [p for p in sorted((root / "public" / ARCH / LAYER).iterdir())
             if json.loads((p / "expected.json").read_text())["valid"] is valid]
    assert found
    return found


def edit(case, change):
    f = case / "expected.json"
    data = json.loads(f.read_text())
    change(data)
    f.write_text(json.dumps(data))
    return f


def test_an_intact_copy_passes(corpus_copy):
    """The control for every test below: unchanged, the small corpus passes with every case counted."""
    rc, out, err = run("validate", corpus_copy, "--no-progress", "--json")
    assert rc == 0, err
    s = json.loads(out)
    n_valid = len(cases(corpus_copy, True))
    assert s["cases"] == len(list(SRC_CASES.iterdir())) == n_valid + len(cases(corpus_copy, False))
    assert s["counts_exact"] == s["valid_cases"] == n_valid


def _first_count(d):
    for lv, level in d["levels"].items():
        for ds in level["dataspaces"]:
            return lv, ds
    raise AssertionError("no counts")


def _drop_counts(d):
    for level in d["levels"].values():
        level["dataspaces"] = {}


def _set_count(d, value, key="reads"):
    lv, ds = _first_count(d)
    d["levels"][lv]["dataspaces"][ds][key] = value
    return f"levels.{lv}.dataspaces.{ds}.{key}"


def _del_count(d, key="utilized_instances"):
    lv, ds = _first_count(d)
    del d["levels"][lv]["dataspaces"][ds][key]
    return f"levels.{lv}.dataspaces.{ds}.{key}"


@pytest.mark.parametrize("change, key, words", [
    (lambda d: d.pop("cycles"), "'cycles'", "missing key"),
    (lambda d: d.pop("energy_pJ"), "'energy_pJ'", "missing key"),
    (lambda d: d.update(cycles="abc"), "'cycles'", "'abc'"),
    (lambda d: d.update(cycles=12.5), "'cycles'", "12.5"),
    (lambda d: d.update(cycles=True), "'cycles'", "True"),
    (lambda d: d.update(valid="yes"), "'valid'", "'yes'"),
    (lambda d: d.update(valid=1), "'valid'", "true or false"),
    (lambda d: d.update(energy_pJ="1e9"), "'energy_pJ'", "'1e9'"),
    (lambda d: d.update(energy_pJ=float("nan")), "'energy_pJ'", "nan"),
    (lambda d: d.update(edp_J_cycle=-1.0), "'edp_J_cycle'", "-1.0"),
    (lambda d: d.pop("levels"), "'levels'", "missing"),
    (lambda d: d.update(levels={}), "'levels'", "no per-level counts"),
    (lambda d: d.update(levels=[1, 2]), "'levels'", "no per-level counts"),
    (_drop_counts, "'levels'", "nothing to compare"),
    (lambda d: d["levels"].update(DRAM=5), "'levels.DRAM'", "dataspaces"),
    (lambda d: d.update(computes=-1), "'computes'", "-1"),
    (lambda d: d.update(utilization="high"), "'utilization'", "'high'"),
    (lambda d: d["levels"]["DRAM"].update(leakage_pJ="0"), "'levels.DRAM.leakage_pJ'", "'0'"),
    (lambda d: d["levels"]["DRAM"]["dataspaces"]["Weights"].update(energy_pJ=[1]),
     "'levels.DRAM.dataspaces.Weights.energy_pJ'", "[1]"),
])
def test_malformed_expected_json_is_named(corpus_copy, change, key, words):
    """A valid case's expected.json off its schema: exit 2 naming the file and key, never a
    traceback, never `counts exact 100%` over cases without counts."""
    f = edit(cases(corpus_copy, True)[0], change)
    rc, out, err = run("validate", corpus_copy, "--no-progress")
    one_line_error(rc, err, str(f), f"key {key}", words)
    assert "counts exact" not in out


@pytest.mark.parametrize("change, words", [
    (lambda d: _set_count(d, -3), "-3"),
    (lambda d: _set_count(d, "12", "fills"), "'12'"),
    (lambda d: _set_count(d, 1.5, "utilized_capacity"), "1.5"),
    (_del_count, "missing key"),
])
def test_bad_per_level_count_is_named(corpus_copy, change, words):
    box = {}
    f = edit(cases(corpus_copy, True)[-1], lambda d: box.setdefault("key", change(d)))
    rc, _, err = run("validate", corpus_copy, "--no-progress")
    one_line_error(rc, err, str(f), f"key '{box['key']}'", words)
    assert box["key"].rsplit(".", 1)[1] in COUNT_KEYS


def test_error_text_of_an_invalid_case_must_be_text(corpus_copy):
    f = edit(cases(corpus_copy, False)[0], lambda d: d.update(error=5))
    rc, _, err = run("validate", corpus_copy, "--no-progress")
    one_line_error(rc, err, str(f), "key 'error'", "5")


def test_invalid_cases_need_no_counts(corpus_copy):
    """The corpus' invalid cases have `levels: {}`, cycles/energy null: that stays accepted."""
    case = cases(corpus_copy, False)[0]
    data = json.loads((case / "expected.json").read_text())
    assert data["levels"] == {} and data["cycles"] is None
    edit(case, lambda d: d.pop("levels"))
    rc, _, err = run("validate", corpus_copy, "--no-progress")
    assert rc == 0, err


@pytest.mark.parametrize("missing", ["expected.json", "mapping.yaml"])
def test_incomplete_case_folder_is_an_error_not_a_dropped_case(corpus_copy, missing):
    a, b = cases(corpus_copy, True)[:2]
    (a / missing).unlink()
    rc, out, err = run("validate", corpus_copy, "--no-progress")
    other = "mapping.yaml" if missing == "expected.json" else "expected.json"
    one_line_error(rc, err, str(a), f"has {other} but no {missing}")
    assert out == ""                             # no table over the remaining cases
    (b / "expected.json").unlink()               # two incomplete folders: both named, counted
    rc, _, err = run("validate", corpus_copy, "--no-progress")
    one_line_error(rc, err, str(a), str(b), "1 more incomplete case folder")


def test_a_corpus_of_incomplete_folders_only_names_one(corpus_copy):
    """Not 'no cases found': the folder and the file it lacks."""
    for case in (corpus_copy / "public" / ARCH / LAYER).iterdir():
        (case / "expected.json").unlink()
    rc, out, err = run("validate", corpus_copy, "--no-progress")
    first = sorted((corpus_copy / "public" / ARCH / LAYER).iterdir())[0]
    one_line_error(rc, err, str(first), "has mapping.yaml but no expected.json")


def test_level_left_out_of_the_reference_is_a_mismatch(corpus_copy):
    """compare_records walks the reference's levels; a level the reference omits must not pass."""
    case = cases(corpus_copy, True)[0]
    levels = list(json.loads((case / "expected.json").read_text())["levels"])
    assert "PEWeightRegs" in levels
    edit(case, lambda d: d["levels"].pop("PEWeightRegs"))
    rc, out, err = run("validate", corpus_copy, "--no-progress")
    assert rc == 1 and "Traceback" not in err, err
    assert f"{case.name}:" in out and "level PEWeightRegs in the model only" in out, out
    rc, out, _ = run("validate", corpus_copy, "--no-progress", "--json")
    s = json.loads(out)
    assert s["counts_exact"] == s["valid_cases"] - 1


def test_missing_energy_table_says_what_validate_needs(corpus_copy):
    (corpus_copy / "arches" / ARCH / "ERT.yaml").unlink()
    rc, _, err = run("validate", corpus_copy, "--no-progress")
    one_line_error(rc, err, str(corpus_copy / "arches" / ARCH), "ERT.yaml", "processed.yaml")
    assert "--ert" not in err                    # validate has no such option


def test_missing_architecture_file_is_named(corpus_copy):
    for name in ("processed.yaml", "arch.yaml"):
        (corpus_copy / "arches" / ARCH / name).unlink()
    rc, _, err = run("validate", corpus_copy, "--no-progress")
    one_line_error(rc, err, str(corpus_copy / "arches" / ARCH), "processed.yaml or arch.yaml")


def test_malformed_corpus_via_the_real_cli(corpus_copy):
    """The same through a separate process (exit code and stderr as a CI job sees them)."""
    f = edit(cases(corpus_copy, True)[0], lambda d: d.update(cycles="abc"))
    r = cli("validate", corpus_copy, "--no-progress")
    one_line_error(r.returncode, r.stderr, str(f), "key 'cycles'")


# --- a directory where a file is expected -------------------------------------------------------

def test_arch_generate_names_a_directory(tmp_path):
    d = tmp_path / "adir"
    d.mkdir()
    rc, _, err = run("arch", "generate", d, "--out", tmp_path / "o")
    one_line_error(rc, err, str(d), "is a directory")
    assert not (tmp_path / "o").exists()


def test_arch_generate_ert_from_a_file(tmp_path):
    f = CORPUS / "arches" / ARCH / "ERT.yaml"
    rc, _, err = run("arch", "generate", "simba_2x2", "--out", tmp_path / "o", "--ert-from", f)
    one_line_error(rc, err, str(f), "--ert-from", "not a folder")


def test_energy_check_names_a_directory(tmp_path):
    d = tmp_path / "gdir"
    d.mkdir()
    rc, _, err = run("energy", "check", d, "--no-progress")
    one_line_error(rc, err, str(d), "is a directory")
    rc, _, err = run("energy", "check", tmp_path / "none.csv", "--no-progress")
    one_line_error(rc, err, str(tmp_path / "none.csv"), "not found")


# --- timeloop-mapper YAMLs: the key as the user wrote it, and the file ---------------------------

MAP_ARCH = CORPUS / "arches" / ARCH / "processed.yaml"
MAP_LAYER = CORPUS / "layers" / f"{LAYER}.yaml"


@pytest.mark.parametrize("text, key, words", [
    ("mapper: {algorithm: random-pruned, max-permutations-per-if-visit: -1}\n",
     "mapper.max-permutations-per-if-visit", "-1"),
    ("mapper: {algorithm: random_pruned, max_permutations_per_if_visit: 0}\n",
     "mapper.max_permutations_per_if_visit", "0"),
    ("mapper: {algorithm: random-pruned, max-permutations-per-if-visit: many}\n",
     "mapper.max-permutations-per-if-visit", "'many'"),
    ("mapper: {algorithm: random-pruned, optimization-metrics: [foo]}\n",
     "mapper.optimization-metrics", "foo"),
    ("mapper: {algorithm: random-pruned, optimization-metric: [delay, foo]}\n",
     "mapper.optimization-metric", "foo"),
    ("mapper: {max-permutations-per-if-visit: 4, max_permutations_per_if_visit: 5}\n",
     "mapper.max_permutations_per_if_visit", "given twice"),
])
def test_timeloop_mapper_yaml_errors_name_file_and_key(tmp_path, text, key, words):
    f = tmp_path / "tm.yaml"
    f.write_text(text)
    rc, _, err = run("map", MAP_ARCH, MAP_LAYER, "--searcher", f, "--budget", "10", "--no-cache",
                     "--no-progress", "--out", tmp_path / "o")
    one_line_error(rc, err, str(f), f"key '{key}'", words)
    assert "config." not in err                  # not coexplore's internal config field


def test_timeloop_mapper_good_settings_still_translate(tmp_path):
    """The control: the same section with good values is accepted in either spelling."""
    from coexplore.search.registry import load_mapper
    f = tmp_path / "tm.yaml"
    f.write_text("mapper: {algorithm: hybrid, num-threads: 8, optimization-metric: [delay, energy], "
                 "max-permutations-per-if-visit: 4}\n")
    spec = load_mapper(f)
    assert (spec.searcher, spec.objective) == ("random_pruned", "latency")
    assert spec.config.max_permutations_per_if_visit == 4
    assert len(spec.notes) == 2 and "num-threads" in spec.notes[0]      # as the file spells it
    assert "hybrid algorithm runs as random_pruned" in spec.notes[1]
    f.write_text("mapper: {algorithm: random-pruned, optimization-metrics: [energy, delay]}\n")
    assert load_mapper(f).notes == ["optimization metrics ['energy', 'delay']: the objective is energy, without "
                                    "a tie-break by delay"]
    # timeloop-mapper's default algorithm is hybrid; heartbeat is an older name of timeout; [delay]
    # alone breaks no ties in Timeloop, and [delay, last_level_accesses] breaks them by DRAM accesses
    f.write_text("mapper: {heartbeat: 100, optimization-metrics: [delay, last_level_accesses]}\n")
    notes = load_mapper(f).notes
    assert "heartbeat" in notes[0] and "not used" in notes[0]
    assert any("hybrid algorithm runs as random_pruned" in n for n in notes)
    assert any("ties broken by energy, not by last_level_accesses" in n for n in notes)
    f.write_text("mapper: {algorithm: random-pruned, optimization-metrics: [delay]}\n")
    assert load_mapper(f).notes == ["optimization metrics ['delay']: the objective is latency, ties broken by "
                                    "energy (timeloop-mapper breaks none)"]


def test_an_architecture_given_only_as_arch_yaml_is_read(corpus_copy):
    """A corpus whose arches/<arch>/ holds the user's v0.4 arch.yaml alone (no processed.yaml):
    the same Timeloop numbers."""
    (corpus_copy / "arches" / ARCH / "processed.yaml").unlink()
    rc, out, err = run("validate", corpus_copy, "--no-progress", "--json")
    assert rc == 0, err
    s = json.loads(out)
    assert s["cases"] == len(list(SRC_CASES.iterdir())) and s["counts_exact"] == s["valid_cases"] > 0


def test_mismatches_are_listed_as_asked_and_the_json_is_strict(corpus_copy):
    """Three valid cases off (two by a cycle, one with a count the reference has as 0): exit 1; `--failures 1` lists one of the three; --json
    lists all three, in strict JSON (inf written as text), with the counts the table shows."""
    tampered = cases(corpus_copy, True)[:3]
    assert len(tampered) == 3
    for case in tampered[:2]:
        edit(case, lambda d: d.update(cycles=d["cycles"] + 1))
    edit(tampered[2], lambda d: _set_count(d, 0))       # a count the model gives, 0 in the reference: error inf
    rc, out, err = run("validate", corpus_copy, "--no-progress", "--failures", "1")
    assert rc == 1, err
    names = [str(c.relative_to(corpus_copy)) for c in tampered]
    listed = [line for line in out.splitlines() if line.startswith("  public/")]
    assert "mismatching cases (3, first 1)" in out and len(listed) == 1
    assert any(listed[0].startswith(f"  {n}:") for n in names)
    rc, js, _ = run("validate", corpus_copy, "--no-progress", "--json")

    def strict(name):
        raise AssertionError(f"{name} in --json output")
    s = json.loads(js, parse_constant=strict)
    assert rc == 1 and sorted(f["case"] for f in s["failures"]) == sorted(names)
    n_cases = len(list(SRC_CASES.iterdir()))
    assert s["per_arch"][ARCH]["cases"] == s["cases"] == n_cases
    valid = s["valid_cases"]
    assert s["cycles_exact"] == valid - 2 and s["counts_exact"] == valid - 1
    assert [f["count_max_rel_err"] for f in s["failures"] if f["case"] == names[2]] == ["inf"]
    pct = f"cycles exact    : {valid - 2}/{valid} ({100.0 * (valid - 2) / valid:.1f}%) of valid cases"
    assert pct in out
    assert any(line.startswith(ARCH) and f" {n_cases} " in line for line in out.splitlines())


def test_a_mapping_timeloop_cannot_parse_is_that_case_s_verdict_not_the_end_of_the_run(corpus_copy):
    """A case whose mapping has a spatial directive at a level without a fan-out (GlobalBuffer: its
    fan-out is inter_PE_spatial's), which Timeloop's parser refuses with the message below (recorded
    as such in the reference): validate compares that case like any refused mapping and goes on with
    the others, instead of stopping before the summary."""
    src = cases(corpus_copy, True)[0]
    bad = src.with_name("900")
    shutil.copytree(src, bad)
    text = (bad / "mapping.yaml").read_text()
    (bad / "mapping.yaml").write_text(text + "- {target: GlobalBuffer, type: spatial, factors: C1 M1 R1 S1 N1 P1 Q1, "
                                             "permutation: CMRSNPQ, split: 0}\n")
    timeloop = ("ERROR: cannot find spatial tiling level associated with storage level GlobalBuffer. This is because "
                "the number of instances of the next-inner level (inter_PE_spatial) is the same as this level, which "
                "means there cannot be a spatial fanout.")
    edit(bad, lambda d: d.update(valid=False, error=timeloop, energy_pJ=None, cycles=None, utilization=None,
                                 edp_J_cycle=None, levels={}))
    rc, out, err = run("validate", corpus_copy, "--no-progress", "--json")
    assert rc == 0, err
    s = json.loads(out)
    assert s["cases"] == len(list(SRC_CASES.iterdir())) + 1
    assert s["validity_agrees"] == s["cases"]
    assert s["invalid_messages_exact"] == s["invalid_cases"] == len(cases(corpus_copy, False))


@pytest.mark.parametrize("change, says", [
    (lambda d: d.update(computes=d["computes"] + 1), "computes"),
    (lambda d: d.update(utilization=d["utilization"] * 0.999), "utilization"),
    (lambda d: d.update(edp_J_cycle=d["edp_J_cycle"] * 3), "edp_J_cycle"),
    (lambda d: d["levels"]["DRAM"].update(energy_pJ=d["levels"]["DRAM"]["energy_pJ"] * 1.01 + 1), "DRAM.energy_pJ"),
    (lambda d: d["levels"]["GlobalBuffer"].update(leakage_pJ=999.0), "GlobalBuffer.leakage_pJ"),
    (lambda d: d["levels"]["DRAM"]["dataspaces"]["Weights"].update(energy_pJ=1.0), "DRAM.Weights.energy_pJ"),
])
def test_every_number_of_a_valid_case_is_compared(corpus_copy, change, says):
    """User study: a wrong split of energy over levels (or a wrong utilization, EDP, compute count)
    passed whenever the total energy was right."""
    rc, out, _ = run("validate", corpus_copy, "--no-progress")
    assert rc == 0 and "others agree    : 4/4" in out, out
    case = cases(corpus_copy, True)[0]
    data = json.loads((case / "expected.json").read_text())
    change(data)
    (case / "expected.json").write_text(json.dumps(data))
    rc, out, _ = run("validate", corpus_copy, "--no-progress")
    assert rc == 1 and "others agree    : 3/4" in out, out
    line = next(ln for ln in out.splitlines() if f"/{case.name}: energy err" in ln)
    assert f" {says} " in line, line


@pytest.mark.parametrize("text, words", [(b"mapping: [ {target: X\n", "malformed YAML"),
                                         (b"hello: world\n", "holds no 'mapping:' list"),
                                         (b"", "empty file"), (b"mapping: [\xff\xfe]\n", "not UTF-8")])
def test_a_mapping_file_that_is_no_mapping_is_a_malformed_corpus(corpus_copy, text, words):
    """User study: a broken mapping.yaml was counted as the model refusing a valid case ('validity
    differs', exit 1, the file not named)."""
    case = cases(corpus_copy, True)[0]
    (case / "mapping.yaml").write_bytes(text)
    rc, out, err = run("validate", corpus_copy, "--no-progress")
    one_line_error(rc, err, str(case / "mapping.yaml"), words)
    assert "validity differs" not in out
