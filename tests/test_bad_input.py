"""Bad input found by a user review: one line naming the file and key, exit 2, no traceback; and
output folders checked before the work is done."""

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CORPUS

from coexplore.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
ARCH_DIR = CORPUS / "arches" / "eyeriss_like"
LAYER = CORPUS / "layers" / "tiny_conv.yaml"
TABLE = ROOT / "tests" / "data" / "magma" / "tables" / "batch_mix" / "S3" / "insts0.csv"


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "coexplore.cli.main", *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


def one_line_error(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    errors = [line for line in r.stderr.splitlines() if "error" in line.lower()]
    assert "Traceback" not in r.stderr and len(errors) == 1, r.stderr
    for n in needles:
        assert n in r.stderr, r.stderr


def arch_copy(tmp_path, old: str, new: str) -> Path:
    text = (ARCH_DIR / "processed.yaml").read_text()
    assert old in text
    d = tmp_path / "arch"
    d.mkdir(exist_ok=True)
    (d / "ERT.yaml").write_text((ARCH_DIR / "ERT.yaml").read_text())
    (d / "processed.yaml").write_text(text.replace(old, new, 1))
    return d / "processed.yaml"


def test_non_utf8_files(tmp_path):
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("problem: {instance: {C: 3}}  # caf\xe9\n".encode("latin-1"))
    one_line_error(cli("map", ARCH_DIR / "processed.yaml", bad, "--budget", "10", "--no-cache"),
                   str(bad), "not UTF-8")
    csv = tmp_path / "t.csv"
    csv.write_bytes(b"lat_0,bw_0\n1,\xff\n")
    one_line_error(cli("schedule", "--table", csv, "--bandwidth", "1"), str(csv), "not UTF-8")


@pytest.mark.parametrize("old, new, key", [
    ("depth: 16384", "depth: 0", "depth"),
    ("depth: 16384", "depth: -8", "depth"),
    ("meshX: 14", "meshX: sixteen", "meshX"),
    ("meshX: 14", "meshX: -14", "meshX"),
])
def test_impossible_hardware_values_are_named(tmp_path, old, new, key):
    arch = arch_copy(tmp_path, old, new)
    one_line_error(cli("map", arch, LAYER, "--budget", "10", "--no-cache"), str(arch), key, "positive")


def test_constraint_on_an_unknown_dimension(tmp_path):
    cons = tmp_path / "constraints.yaml"
    cons.write_text((ARCH_DIR / "constraints.yaml").read_text() + "\n")
    text = cons.read_text()
    assert "factors:" in text
    cons.write_text(text.replace("factors: ", "factors: Z=3 ", 1))
    one_line_error(cli("map", ARCH_DIR / "processed.yaml", LAYER, "--constraints", cons, "--budget", "10",
                       "--no-cache"), "unknown dimension(s) Z")


def test_constraint_on_an_unknown_dataspace(tmp_path):
    """Timeloop stops on a keep/bypass name the problem does not have; a typo must not widen the mapspace."""
    cons = tmp_path / "constraints.yaml"
    text = (ARCH_DIR / "constraints.yaml").read_text()
    assert "- Weights" in text
    cons.write_text(text.replace("- Weights", "- Weight", 1))
    one_line_error(cli("map", ARCH_DIR / "processed.yaml", LAYER, "--constraints", cons, "--budget", "10",
                       "--no-cache"), "unknown dataspace(s) Weight", str(cons))


def test_misspelt_instance_key_is_named_with_the_bound_it_leaves_out(tmp_path):
    """A misspelt dimension leaves its bound out, which Timeloop asserts on (ParseWorkloadInstance):
    refused, naming both (it was taken as 1 with a warning)."""
    typo = tmp_path / "typo.yaml"
    text = LAYER.read_text()
    assert "{C: 4," in text
    typo.write_text(text.replace("{C: 4,", "{X: 4,"))
    r = cli("map", ARCH_DIR / "processed.yaml", typo, "--budget", "50", "--no-cache", "--no-progress",
            "--out", tmp_path / "o")
    one_line_error(r, "no bound for C; X is no dimension of the shape")
    assert not (tmp_path / "o").exists()


def test_bad_seed_and_unusable_out_fail_before_the_search(tmp_path):
    one_line_error(cli("map", ARCH_DIR / "processed.yaml", LAYER, "--seed", "-1", "--no-cache"), "--seed")
    one_line_error(cli("schedule", "--table", TABLE, "--bandwidth", "1", "--seed", "-3"), "--seed")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    one_line_error(cli("map", ARCH_DIR / "processed.yaml", LAYER, "--budget", "10", "--no-cache",
                       "--out", blocker), "--out", "not a folder")
    one_line_error(cli("schedule", "--table", TABLE, "--bandwidth", "1", "--budget", "10",
                       "--out", blocker / "sub"), "--out")


def test_broken_expected_json_in_validate(tmp_path):
    import shutil
    root = tmp_path / "corpus"
    shutil.copytree(CORPUS / "arches" / "eyeriss_like", root / "arches" / "eyeriss_like")
    (root / "layers").mkdir()
    case = next(p for p in sorted((CORPUS / "public" / "eyeriss_like").glob("*/*")) if p.is_dir())
    shutil.copy(CORPUS / "layers" / f"{case.parent.name}.yaml", root / "layers")
    dst = root / "public" / "eyeriss_like" / case.parent.name / case.name
    shutil.copytree(case, dst)
    (dst / "expected.json").write_text('{"valid": tru')
    one_line_error(cli("validate", root), "expected.json", "not valid JSON")
    (dst / "expected.json").write_text('{}')
    one_line_error(cli("validate", root), "expected.json", "valid")
    (dst / "expected.json").write_text('{"valid": true, "cycles": 10}')
    one_line_error(cli("validate", root), "expected.json", "energy_pJ")


def test_workload_layers_get_their_own_default_folder(tmp_path):
    """Also: bundled names (system `simba`, workload `alexnet`) work outside the checkout."""
    import json
    r = cli("map", "simba", "alexnet", "--layer", "fc8", "--budget", "30", "--no-cache", "--no-progress",
            "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "results" / "map" / "simba-alexnet-fc8-marl-seed0" / "mapping.yaml").exists()
    explicit = cli("map", ROOT / "arch" / "simba.yaml", ROOT / "problems" / "alexnet.yaml", "--layer", "fc8",
                   "--budget", "30", "--no-cache", "--json", "--out", tmp_path / "x")
    assert json.loads(r.stdout)["best"] == json.loads(explicit.stdout)["best"]


def test_schedule_takes_bundled_workload_names(tmp_path):
    r = cli("schedule", ROOT / "arch" / "simba.yaml", "--workload", "dlrm_mlp", "--layer-budget", "10",
            "--budget", "50", "--no-plot", "--cache", tmp_path / "c.sqlite", "--out", tmp_path / "s")
    # a failed layer search is a failed run (exit 1, as `coexplore map`), naming the flag the user set
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert all(n in r.stderr for n in ("--layer-budget", "on core simba", "no valid mapping")), r.stderr
    assert not (tmp_path / "s").exists()           # nothing left behind
    r = cli("schedule", ROOT / "arch" / "simba.yaml", "--workload", "dlrm_mlp", "--layer-budget", "400",
            "--budget", "50", "--no-plot", "--cache", tmp_path / "c.sqlite", "--out", tmp_path / "s")
    assert r.returncode == 0, r.stderr
    assert "dlrm" in (tmp_path / "s" / "schedule.json").read_text()


def test_sigterm_keeps_the_best_mapping_so_far(tmp_path):
    import json
    import os
    import signal
    import time
    out = tmp_path / "o"
    p = subprocess.Popen([sys.executable, "-m", "coexplore.cli.main", "map", str(ARCH_DIR / "processed.yaml"),
                          str(LAYER), "--searcher", "random", "--budget", "100000000", "--out", str(out),
                          "--no-cache"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        buf, t0 = "", time.time()
        while "EDP[J*cycle]=" not in buf and time.time() - t0 < 120:
            buf += os.read(p.stderr.fileno(), 4096).decode(errors="replace")
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130
    assert json.loads((out / "result.json").read_text())["interrupted"] is True


def test_unknown_v04_tag_is_named(tmp_path):
    text = (ARCH_DIR / "arch.yaml").read_text()
    assert "!Container" in text
    bad = tmp_path / "arch.yaml"
    bad.write_text(text.replace("!Container", "!Contaner", 1))
    (tmp_path / "ERT.yaml").write_text((ARCH_DIR / "ERT.yaml").read_text())
    one_line_error(cli("map", bad, LAYER, "--budget", "10", "--no-cache"), str(bad), "unknown tag !Contaner")


def test_argument_errors_are_one_line():
    r = cli("map", LAYER, LAYER, "--budget", "abc")
    one_line_error(r, "--budget", "see coexplore map --help")
    assert "usage:" not in r.stderr


def test_misspelt_buffer_attribute_warns(tmp_path):
    arch = arch_copy(tmp_path, "depth: 16384", "dpeth: 16384")
    r = cli("map", arch, LAYER, "--budget", "30", "--searcher", "random", "--no-cache", "--no-progress", "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert "attribute 'dpeth'" in r.stderr and "did you mean 'depth'" in r.stderr
    assert "capacity is unlimited" in r.stderr
    clean = cli("map", ARCH_DIR / "processed.yaml", LAYER, "--budget", "30", "--searcher", "random", "--no-cache", "--no-progress",
                "--out", tmp_path / "o2")
    assert clean.returncode == 0 and "warning" not in clean.stderr


def test_budgets_may_be_written_1e3_or_1_000(tmp_path):
    import json
    for text in ("2e2", "2_00"):
        r = cli("map", ARCH_DIR / "processed.yaml", LAYER, "--budget", text, "--no-cache", "--json",
                "--out", tmp_path / "o")
        assert r.returncode == 0 and json.loads(r.stdout)["samples"] == 200, r.stderr
    one_line_error(cli("map", ARCH_DIR / "processed.yaml", LAYER, "--budget", "1.5"), "whole number")


@pytest.mark.parametrize("old, new, msg", [("type: LPDDR4", "type: LPDDR9", "LPDDR9"),
                                           ("technology: 45nm", "technology: 3nm", "3nm")])
def test_estimator_refusals_name_the_system_file(tmp_path, old, new, msg):
    text = (ROOT / "arch" / "simba.yaml").read_text()
    assert old in text
    bad = tmp_path / "sys.yaml"
    bad.write_text(text.replace(old, new).replace("../problems", str(ROOT / "problems"))
                   .replace("../mappers", str(ROOT / "mappers")))
    one_line_error(cli("arch", "generate", bad, "--out", tmp_path / "g"), str(bad), msg)
    one_line_error(cli("map", bad, "alexnet", "--layer", "fc8", "--budget", "10", "--no-cache"), str(bad), msg)


@pytest.mark.parametrize("old,new,key", [
    ("- name: read\n", "- nme: read\n", ".name"),                   # an action without a name
    ("energy: ", "energy: .nan #", ".energy"),                      # energies must be finite numbers >= 0
])
def test_bad_ert_actions_are_named(tmp_path, old, new, key):
    text = (ARCH_DIR / "ERT.yaml").read_text()
    assert old in text
    (tmp_path / "ERT.yaml").write_text(text.replace(old, new, 1))
    mapping = next(p for p in sorted((CORPUS / "public" / "eyeriss_like" / "tiny_conv").glob("*/mapping.yaml")))
    r = cli("evaluate", ARCH_DIR / "processed.yaml", LAYER, mapping, "--ert", tmp_path / "ERT.yaml")
    one_line_error(r, "ERT.yaml", key)


def test_an_internal_error_has_an_exit_code_of_its_own(monkeypatch, capsys):
    """A bug (not bad input) keeps its traceback and exits 3, so scripts can tell it from exit 1
    (an invalid mapping) and 2 (bad input)."""
    from coexplore.cli import main as cli_main, evaluate
    def boom(args):
        raise RuntimeError("a bug")
    monkeypatch.setattr(evaluate, "run", boom)
    assert cli_main.main(["evaluate", "a", "b", "c"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error" in err


def test_ert_without_a_write_action_gets_timeloops_own_estimate(tmp_path):
    """A buffer table with no write action (renamed here) prices fills and updates as timeloop-model
    does: its built-in estimate (pat::SRAMEnergy / DRAMEnergy, from Timeloop's source), with a
    warning naming the level; the reads keep the ERT's numbers."""
    import math
    import shutil
    import warnings
    from coexplore.errors import CoexploreWarning
    from coexplore.model.inputs import load_context
    d = tmp_path / "eyeriss_like"
    shutil.copytree(ARCH_DIR, d)
    ert = d / "ERT.yaml"
    ert.write_text(ert.read_text().replace("name: write", "name: wrte").replace("name: random_write", "name: rnd_wrte")
                   .replace("name: update", "name: updte"))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        ctx = load_context(d / "processed.yaml", LAYER)
        ref = load_context(ARCH_DIR / "processed.yaml", LAYER)
    text = " ".join(str(w.message) for w in said if issubclass(w.category, CoexploreWarning))
    for li, lv in enumerate(reversed(ctx.arch.levels)):
        if lv.is_dummy:
            continue
        assert ctx.costs.read[li] == ref.costs.read[li]
        if "DRAM" in lv.cls:
            want = 200.0 * lv.word_bits * lv.block_size / 16
        else:
            width = lv.word_bits * lv.block_size * lv.cluster_size
            kb = width * math.ceil(lv.size / lv.block_size) / 8192
            want = (5 / 99.5 * (kb - 0.5) + 1) * width / 16 / lv.cluster_size
        if ctx.costs.fill[li] != ref.costs.fill[li]:
            assert ctx.costs.fill[li] == pytest.approx(want, rel=1e-12) and f"{lv.name}: the ERT prices no" in text
    assert "the ERT prices no fill, update" in text                # both missing operations named
    checked = [lv.name for li, lv in enumerate(reversed(ctx.arch.levels)) if ctx.costs.fill[li] != ref.costs.fill[li]]
    assert "DRAM" in checked and "shared_glb" in checked         # the estimate stood in for both kinds
    r = cli("evaluate", d / "processed.yaml", LAYER, CORPUS / "public" / "eyeriss_like" / "tiny_conv" / "007" /
            "mapping.yaml")
    assert r.returncode in (0, 1) and "Timeloop's built-in estimate" in r.stderr and "Traceback" not in r.stderr


def test_an_unknown_option_is_said_by_its_sub_command(capsys):
    with pytest.raises(SystemExit) as e:
        main(["evaluate", "arch.yaml", "mapping.yaml", "--no-progres"])
    assert e.value.code == 2
    assert "coexplore evaluate: error: unrecognized arguments: --no-progres (see coexplore evaluate --help)" \
        in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["cache", "stats", "--bogus"])
    assert "coexplore cache stats: error: unrecognized arguments: --bogus" in capsys.readouterr().err


def test_a_mistyped_architecture_name_lists_the_bundled_systems(tmp_path):
    """As `arch generate` and a mistyped workload do: the names that would have worked."""
    bundled = sorted(p.stem for p in (ROOT / "arch").glob("*.yaml"))
    for cmd in (("map", "simbaa", "resnet50", "--layer", "res3a_branch2b"), ("evaluate", "simbaa", LAYER, "m.yaml"),
                ("map", "simbaa"), ("evaluate", "simbaa", "m.yaml")):      # no PROBLEM: the missing ARCH first
        one_line_error(cli(*cmd, cwd=tmp_path), "simbaa: file not found", ", ".join(bundled))


def test_a_width_that_is_not_whole_words_is_refused(tmp_path):
    """Timeloop's BufferLevel::ParseSpecs asserts width % (word bits x block size) == 0 (with a block
    size of 1 when none is given); a 60-bit row of 8-bit words is not floored to 7 words."""
    text = (ARCH_DIR / "processed.yaml").read_text()
    start = text.index("name: shared_glb")
    at = text.index("width: 64", start)
    d = tmp_path / "arch"
    d.mkdir()
    (d / "ERT.yaml").write_text((ARCH_DIR / "ERT.yaml").read_text())
    (d / "processed.yaml").write_text(text[:at] + "width: 60" + text[at + len("width: 64"):])
    one_line_error(cli("evaluate", d / "processed.yaml", LAYER, "m.yaml"), "shared_glb.attributes.width",
                   "width 60 is not a multiple of datawidth = 8")


def test_a_typo_in_a_spaced_permutation_names_the_letter(tmp_path):
    """'RSP CMNQZ' is read letter by letter, as Timeloop reads it: the Z is the typo, not 'CMNQZ'."""
    cons = tmp_path / "constraints.yaml"
    text = (ARCH_DIR / "constraints.yaml").read_text()
    line = next(ln for ln in text.splitlines() if "permutation:" in ln and len(ln.split(":")[1].strip()) >= 3)
    perm = line.split(":")[1].strip()
    cons.write_text(text.replace(line, line.replace(perm, perm[:2] + " " + perm[2:] + "Z"), 1))
    r = cli("map", ARCH_DIR / "processed.yaml", LAYER, "--constraints", cons, "--budget", "10", "--no-cache")
    one_line_error(r, "unknown dimension(s) Z (")
    assert perm[2:] + "Z" not in r.stderr


@pytest.mark.parametrize("command", ["evaluate", "map"])
def test_a_timeloop_style_file_list_is_answered_with_the_options_that_take_each_role(command, tmp_path):
    extra = tmp_path / "constraints.yaml"
    extra.write_text("constraints: []\n")
    files = [ARCH_DIR / "processed.yaml", LAYER] + ([CORPUS / "public/eyeriss_like/tiny_conv/017/mapping.yaml"]
                                                    if command == "evaluate" else [])
    r = cli(command, *files, extra)
    one_line_error(r, "more files than it takes", str(extra), "--constraints F", "--ert F", "--searcher F")


def test_a_misspelt_data_spaces_key_is_named(tmp_path):
    d = Path(__file__).parent / "data" / "exercises_v3" / "v3_ex01_conv1d_2level_os"
    text = (d / "problem.yaml").read_text()
    assert "data-spaces:" in text
    prob = tmp_path / "p.yaml"
    prob.write_text(text.replace("data-spaces:", "dataspaces:"))
    r = cli("evaluate", d / "arch.yaml", prob, d / "mapping.yaml", "--ert", d / "ERT.yaml")
    one_line_error(r, "problem.shape.dataspaces", "data-spaces")


def test_a_bad_word_bits_is_named_as_written(tmp_path):
    """A v0.3 file's `word-bits: 8.5` was blamed on `datawidth`, a key the file does not have."""
    d = Path(__file__).parent / "data" / "exercises_v3" / "v3_ex01_conv1d_2level_os"
    text = (d / "arch.yaml").read_text()
    arch = tmp_path / "a.yaml"
    arch.write_text(text.replace("word-bits: 8", "word-bits: 8.5"))
    r = cli("evaluate", arch, d / "problem.yaml", d / "mapping.yaml", "--ert", d / "ERT.yaml")
    one_line_error(r, "attributes.word_bits", "8.5")
    assert "datawidth" not in r.stderr


def test_standard_output_closed_early_is_not_a_success(tmp_path):
    """User study: `coexplore validate ... --json | head -c1` exited 0 although cases disagreed: a
    closed pipe is exit 141 (as SIGPIPE ends a process), with no traceback."""
    p = subprocess.Popen([sys.executable, "-m", "coexplore.cli.main", "validate", str(CORPUS), "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()                                  # the reader goes away before anything is written
    err = p.stderr.read().decode()
    assert p.wait() == 141 and "Traceback" not in err and "Exception ignored" not in err, err
