"""`coexplore validate` on folders a Timeloop v0.3 ran in: only its outputs (stats.txt, ERT, the
printed loop nest map.txt), the inputs found near them. The reference is what that Timeloop
printed (tests/data/exercises_v3/v3_ex02_conv1d_oc_2level_tiled/timeloop-model.stats.txt)."""

import shutil
from pathlib import Path

import pytest

from coexplore.cli.main import main
from coexplore.model.corpus import discover
from coexplore.model.validation import validate

CASE = Path(__file__).parent / "data" / "exercises_v3" / "v3_ex02_conv1d_oc_2level_tiled"
OTHER = Path(__file__).parent / "data" / "exercises_v3" / "v3_ex04_conv1d_oc_ic_3levelspatial_cp"
TOOL = "timeloop-model"


def _lab(root: Path, run_name: str = "output") -> Path:
    """A v0.3 lab folder: the inputs, another exercise's inputs beside them, and the run's outputs
    in a folder of their own (as `timeloop-model arch.yaml prob.yaml map.yaml -o output`)."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("arch.yaml", "problem.yaml"):
        shutil.copy(CASE / name, root / name)
    (root / "other").mkdir()
    for name in ("arch.yaml", "problem.yaml"):                 # decoys: other levels, other loop bounds
        shutil.copy(OTHER / name, root / "other" / name)
    run = root / run_name
    run.mkdir()
    for name in ("stats.txt", "map.txt"):
        shutil.copy(CASE / f"{TOOL}.{name}", run / f"{TOOL}.{name}")
    shutil.copy(CASE / "ERT.yaml", run / f"{TOOL}.ERT.yaml")
    return run


def test_a_v03_run_folder_is_a_case_with_its_own_inputs(tmp_path):
    run = _lab(tmp_path / "lab")
    (case,) = discover(tmp_path)
    assert (case.arch_file, case.layer_file) == (tmp_path / "lab" / "arch.yaml", tmp_path / "lab" / "problem.yaml")
    assert case.mapping == run / f"{TOOL}.map.txt" and case.reference == run / f"{TOOL}.stats.txt"
    assert case.rules == "v0.3"


def test_under_the_v03_rules_it_agrees_with_what_that_timeloop_printed(tmp_path):
    _lab(tmp_path / "lab")
    s = validate(tmp_path, progress=False, stride_rule="v0.3")
    assert s["cases"] == 1 and not s["failures"] and s["counts_exact"] == 1 and s["cycles_exact"] == 1
    assert s["timeloop_v03_runs"] == {"cases": 1, "failing": 0}


def test_under_todays_rules_it_disagrees_and_the_report_says_which_rules_apply(tmp_path, capsys):
    _lab(tmp_path / "lab")
    assert main(["validate", str(tmp_path), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "1 of the 1 Timeloop v0.3 run folders" in out and "--timeloop-rules v0.3" in out
    assert main(["validate", str(tmp_path), "--no-progress", "--timeloop-rules", "v0.3"]) == 0
    assert "v0.3 runs" not in capsys.readouterr().out


def test_the_run_folder_own_inputs_come_first_and_copies_count_once(tmp_path):
    run = _lab(tmp_path / "lab", run_name="run")
    for name in ("arch.yaml", "problem.yaml"):                  # ran in place: inputs beside the outputs
        shutil.copy(CASE / name, run / name)
    (case,) = discover(tmp_path)
    assert case.arch_file == run / "arch.yaml" and case.layer_file == run / "problem.yaml"
    (run / "problem.yaml").unlink()
    (case,) = discover(tmp_path)
    assert case.layer_file == tmp_path / "lab" / "problem.yaml"


def test_a_run_whose_problem_cannot_be_told_is_skipped_with_the_reason(tmp_path):
    run = _lab(tmp_path / "lab")
    (tmp_path / "lab" / "problem.yaml").unlink()
    skipped: list = []
    with pytest.raises(Exception, match="no cases found"):
        discover(tmp_path, skipped)
    assert len(skipped) == 1 and skipped[0][0] == run
    assert "no problem files" in skipped[0][1] and "K=32" in skipped[0][1]
    # two different problems of the printed loop bounds: ambiguous, also said
    shutil.copy(CASE / "problem.yaml", tmp_path / "lab" / "a.yaml")
    text = (CASE / "problem.yaml").read_text().replace("name: Conv1D_OC", "name: Conv1D_OC_copy")
    (tmp_path / "lab" / "other" / "b.yaml").write_text(text)
    skipped.clear()
    with pytest.raises(Exception, match="no cases found"):
        discover(tmp_path, skipped)
    assert "2 problem files" in skipped[0][1]


def test_a_dangling_link_near_a_run_is_no_input(tmp_path):
    _lab(tmp_path / "lab")
    (tmp_path / "lab" / "old.arch.yaml").symlink_to(tmp_path / "nowhere.yaml")
    (case,) = discover(tmp_path)
    assert case.arch_file == tmp_path / "lab" / "arch.yaml"


def test_only_a_v03_stats_txt_marks_the_v03_rules_and_a_sparseloop_run_is_skipped(tmp_path):
    run = _lab(tmp_path / "lab")
    stats = run / f"{TOOL}.stats.txt"
    text = stats.read_text()
    assert "Energy-per-op" in text
    stats.write_text(text.replace("Energy-per-op", "Energy per op"))    # (another Timeloop's printout)
    (case,) = discover(tmp_path)
    assert case.rules is None
    stats.write_text(text + "\n    Actual scalar reads (per-instance) : 0\n")
    skipped: list = []
    with pytest.raises(Exception, match="no cases found"):
        discover(tmp_path, skipped)
    assert skipped == [(run, "Sparseloop run (coexplore models dense tensors)")]


def test_a_timeloopfe_run_folder_is_not_taken_for_a_v03_run(tmp_path):
    run = _lab(tmp_path / "lab")
    shutil.copy(CASE / "arch.yaml", run / "parsed-processed-input.yaml")
    cases = discover(tmp_path, [])
    assert all(c.rules is None for c in cases)


def test_runs_of_variants_in_ref_output_find_the_inputs_beside_it(tmp_path):
    """User study: the original exercises' layout, `<exercise>/{arch,prob,map}/` with the runs in
    `<exercise>/ref-output/<variant>/`, found no case ("no cases found"): the inputs are two levels
    above the run folder."""
    ex = tmp_path / "01-model-conv1d-2level"
    for sub, name in (("arch", "arch.yaml"), ("prob", "problem.yaml")):
        (ex / sub).mkdir(parents=True)
        shutil.copy(CASE / name, ex / sub / name)
    run = ex / "ref-output" / "os"
    run.mkdir(parents=True)
    for name in ("stats.txt", "map.txt"):
        shutil.copy(CASE / f"{TOOL}.{name}", run / f"{TOOL}.{name}")
    shutil.copy(CASE / "ERT.yaml", run / f"{TOOL}.ERT.yaml")
    (case,) = discover(tmp_path)
    assert (case.arch_file, case.layer_file) == (ex / "arch" / "arch.yaml", ex / "prob" / "problem.yaml")
    s = validate(tmp_path, progress=False, stride_rule="v0.3")
    assert s["cases"] == 1 and not s["failures"] and s["counts_exact"] == 1


def test_folders_of_outputs_that_make_no_case_are_said_with_why(tmp_path):
    """User study: a stats.txt without its map.txt, a map+stats.xml alone and outputs renamed without
    the tool's prefix were passed over without a word (the case count just lower)."""
    run = _lab(tmp_path / "lab")
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(run / f"{TOOL}.stats.txt", lone / f"{TOOL}.stats.txt")
    xml = tmp_path / "xml"
    xml.mkdir()
    (xml / f"{TOOL}.map+stats.xml").write_text("<xml/>")
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(run / f"{TOOL}.stats.txt", bare / "stats.txt")
    skipped: list = []
    assert len(discover(tmp_path, skipped)) == 1
    why = {f.name: w for f, w in skipped}
    assert "without the loop nest its run printed" in why["lone"]
    assert "which coexplore does not read" in why["xml"] and "without the tool's prefix" in why["bare"]
    shutil.rmtree(tmp_path / "lab")
    with pytest.raises(Exception, match=r"no cases found \(skipped: .*lone"):      # the reasons, not just 'none'
        discover(tmp_path)
