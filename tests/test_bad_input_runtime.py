"""Bad environment and output paths found by a user review: a cache folder that cannot be made, a
result folder blocked by a directory, budgets beyond a 64-bit count, a bad TQDM_* variable, read-only
cache commands on an empty file, a schedule whose table is bad: one line, exit 2, nothing lost."""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from coexplore.cli.main import main
from conftest import CORPUS

ROOT = Path(__file__).resolve().parents[1]
ARCH = CORPUS / "arches" / "eyeriss_like" / "processed.yaml"
LAYER = CORPUS / "layers" / "tiny_conv.yaml"
TABLE = ROOT / "tests" / "data" / "magma" / "tables" / "batch_mix" / "S3" / "insts0.csv"


def one_error(capsys, rc, *needles):
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    assert len([line for line in err.splitlines() if "error" in line]) == 1, err
    for n in needles:
        assert n in err, err
    return err


def test_a_bad_tqdm_variable_is_named_not_a_traceback():
    r = subprocess.run([sys.executable, "-m", "coexplore.cli.main", "--version"], capture_output=True, text=True,
                       env={**os.environ, "TQDM_MININTERVAL": "abc"}, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "TQDM_MININTERVAL" in r.stderr, r.stderr


@pytest.mark.parametrize("budget", ["99999999999999999999", "1e20"])
def test_a_budget_beyond_any_run_is_refused(budget, capsys):
    for argv in (["map", str(ARCH), str(LAYER), "--no-cache"], ["schedule", "--table", str(TABLE), "--bandwidth", "16"]):
        with pytest.raises(SystemExit) as info:
            main(argv + ["--budget", budget])
        err = capsys.readouterr().err
        assert info.value.code == 2 and "--budget" in err and "too large" in err, err


def test_positive_int_refuses_what_numpy_cannot_count():
    from coexplore.errors import CoexploreError
    from coexplore.search.base import positive_int
    assert positive_int(2 ** 53, "k") == 2 ** 53 and positive_int(7.0, "k") == 7
    for bad in (10 ** 20, 1e20, float("nan"), float("inf"), 0, True, 2.5):
        with pytest.raises(CoexploreError):
            positive_int(bad, "k")


@pytest.mark.parametrize("folder", ["/proc/coexplore-no/c.sqlite", "/proc/self/no/c.sqlite"])
def test_a_cache_folder_that_cannot_be_made(folder, tmp_path, capsys):
    rc = main(["map", str(ARCH), str(LAYER), "--budget", "10", "--cache", folder, "--out", str(tmp_path / "o")])
    one_error(capsys, rc, "--cache", folder)
    assert not (tmp_path / "o").exists()          # nothing left behind


def test_a_directory_where_the_checkpoint_goes_is_refused_before_the_search(tmp_path, capsys, monkeypatch):
    import coexplore.cli.map as map_cli
    (tmp_path / "o" / ".checkpoint.pkl").mkdir(parents=True)
    monkeypatch.setattr(map_cli, "map_layer", lambda *a, **k: pytest.fail("searched first"))
    rc = main(["map", str(ARCH), str(LAYER), "--budget", "10", "--no-cache", "--out", str(tmp_path / "o")])
    one_error(capsys, rc, ".checkpoint.pkl")


@pytest.mark.parametrize("action", ["stats", "clear"])
def test_cache_commands_leave_an_empty_file_alone(action, tmp_path, capsys):
    f = tmp_path / "notes.txt"
    f.write_bytes(b"")
    assert main(["cache", action, "--cache", str(f)]) == 0
    assert ("0 entries" if action == "stats" else "nothing to clear") in capsys.readouterr().out
    assert f.read_bytes() == b""


def test_a_bad_table_replaces_nothing_and_announces_nothing(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--budget", "50", "--no-plot",
                 "--no-progress", "--json", "--out", str(out)]) == 0
    before = (out / "schedule.json").read_text()
    capsys.readouterr()
    bad = tmp_path / "bad.csv"
    bad.write_text(TABLE.read_text().replace("\n", "\nx,", 1))        # a short first data row
    rc = main(["schedule", "--table", str(bad), "--bandwidth", "16", "--budget", "50", "--out", str(out)])
    err = one_error(capsys, rc, str(bad))
    assert "replaces it once there is one" not in err and (out / "schedule.json").read_text() == before


@pytest.mark.parametrize("argv", [["schedule", "--table", "{d}", "--bandwidth", "16"],
                                  ["schedule", "--table", str(TABLE), "--bandwidth", "16", "--searcher", "{d}"]])
def test_a_directory_given_as_a_schedule_file(argv, tmp_path, capsys):
    d = tmp_path / "dir"
    d.mkdir()
    rc = main([a.format(d=d) for a in argv] + ["--no-plot", "--out", str(tmp_path / "o")])
    one_error(capsys, rc, str(d), "is a directory")


def test_the_lower_bound_of_a_table_with_huge_values_warns_nothing():
    from coexplore.system.bounds import lower_bound
    lat = np.array([[1000.0, 2000.0], [3000.0, 500.0]])
    need = np.array([[1e305, 100.0], [100.0, 100.0]])   # traffic up to 1e308: finite, but the product of
    # the extreme LP coefficients (500 cycles x 6.25e306 cycles of transfer) is not
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lb = lower_bound(lat, need, 16.0)
    assert np.isfinite(lb) and lb >= 1000.0      # job 0 runs somewhere


# ----------------------------------------------------------------------------- output folders

def _map(tmp_path, *extra, seed="0"):
    return main(["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "40", "--seed", seed,
                 "--no-cache", "--no-progress", *extra])


def test_a_default_folder_holding_the_users_files_is_left_alone(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert _map(tmp_path) == 0
    first = next((tmp_path / "results" / "map").iterdir())
    mine = tmp_path / "results" / "map" / (first.name.replace("seed0", "seed1"))
    mine.mkdir()
    (mine / "mapping.yaml").write_text("my own notes\n")
    blocked = tmp_path / "results" / "map" / first.name.replace("seed0", "seed2")
    blocked.write_text("a file, not a folder\n")
    assert _map(tmp_path, seed="1") == 0 and _map(tmp_path, seed="2") == 0
    assert (mine / "mapping.yaml").read_text() == "my own notes\n" and len(list(mine.iterdir())) == 1
    assert blocked.read_text() == "a file, not a folder\n"
    for s in ("1", "2"):
        moved = tmp_path / "results" / "map" / (first.name.replace("seed0", f"seed{s}") + "-2")
        assert json.loads((moved / "result.json").read_text())["seed"] == int(s)


def test_out_never_discards_another_runs_saved_search_state(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / ".run.json").write_text(json.dumps({"another": "run"}))
    (out / ".checkpoint.pkl").write_bytes(b"its state")
    rc = _map(tmp_path, "--out", str(out))
    one_error(capsys, rc, str(out), "saved search state")
    assert (out / ".checkpoint.pkl").read_bytes() == b"its state"


def _stopped_after_3_batches(args, monkeypatch, capsys):
    """Run `coexplore map` with a stop request (as a first Ctrl-C) in its third batch: exit 130,
    the search state saved."""
    import coexplore.search.layer as layer_mod
    from coexplore.stops import request_stop
    real = layer_mod.make_objective

    def stopping(*a):
        objective, calls = real(*a), []

        def f(batch):
            calls.append(1)
            if len(calls) == 3:
                request_stop()             # as a first Ctrl-C: the batch finishes, the state is saved
            return objective(batch)
        return f
    monkeypatch.setattr(layer_mod, "make_objective", stopping)
    assert main(args) == 130
    monkeypatch.undo()
    capsys.readouterr()


def test_a_refused_folder_names_the_input_edited_since(tmp_path, monkeypatch, capsys):
    """The same command after its layer file was edited is another run: the refusal says which
    file changed and how to discard the old state."""
    layer = tmp_path / "layer.yaml"
    layer.write_text(LAYER.read_text())
    out = tmp_path / "o"
    args = ["map", str(ARCH), str(layer), "--searcher", "random", "--budget", "2000", "--batch-size", "50",
            "--out", str(out), "--no-cache", "--no-progress"]
    _stopped_after_3_batches(args, monkeypatch, capsys)
    layer.write_text(LAYER.read_text() + "# edited\n")
    err = one_error(capsys, main(args), str(out), "saved search state")
    assert "input files layer.yaml" in err and "settings" not in err.split("differs")[1].split(")")[0] \
        and f"delete {out / '.checkpoint.pkl'}" in err


def test_out_refuses_a_folder_whose_checkpoint_is_another_runs(tmp_path, monkeypatch, capsys):
    """A folder given with --out has no claim file: the checkpoint itself says whose it is. Another
    seed or budget into that folder is refused (the state is kept); the same command resumes it."""
    out = tmp_path / "o"
    args = ["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "2000", "--batch-size", "50",
            "--out", str(out), "--no-cache", "--no-progress"]
    _stopped_after_3_batches(args, monkeypatch, capsys)
    saved = (out / ".checkpoint.pkl").read_bytes()
    assert not (out / ".run.json").exists()
    for other, differs in ((["--seed", "5"], "settings seed)"), (["--budget", "3000"], "budget"),
                           (["--restart", "--seed", "5"], "seed")):
        err = one_error(capsys, main(args + other), str(out), "saved search state")
        assert "differs from this run in settings" in err and differs in err     # says what is not the same
        assert (out / ".checkpoint.pkl").read_bytes() == saved
    assert main(args) == 0
    assert "resuming the interrupted run from its checkpoint at 150 samples" in capsys.readouterr().err
    assert json.loads((out / "result.json").read_text())["samples"] == 2000


def test_out_takes_over_a_finished_runs_folder_and_its_claim(tmp_path, monkeypatch, capsys):
    """--out into another run's (finished) folder: replaced with a note, and the folder's claim names
    this run, so the other run's rerun numbers a folder of its own instead of overwriting this."""
    monkeypatch.chdir(tmp_path)
    assert _map(tmp_path) == 0
    default = next((tmp_path / "results" / "map").iterdir())
    assert _map(tmp_path, "--out", str(default), seed="4") == 0
    assert "replaces it once there is one" in capsys.readouterr().err
    assert _map(tmp_path) == 0                      # the first run again: not into the seed-4 result
    assert json.loads((default / "result.json").read_text())["seed"] == 4
    assert json.loads((default.with_name(default.name + "-2") / "result.json").read_text())["seed"] == 0


def test_a_folder_named_like_a_bundled_input_does_not_hide_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "simba").mkdir()                    # e.g. `coexplore arch generate simba --out simba`
    (tmp_path / "marl").mkdir()
    rc = main(["map", "simba", "alexnet", "--layer", "fc8", "--budget", "200", "--no-cache", "--no-progress",
               "--json", "--out", "o"])
    assert rc == 0, capsys.readouterr().err
    data = json.loads(capsys.readouterr().out)
    assert data["searcher"] == "marl" and data["run"]["arch"].endswith("arch/simba.yaml")


def test_the_readmes_relative_paths_work_outside_a_checkout(tmp_path, monkeypatch, capsys):
    """`arch/simba.yaml`, `problems/alexnet.yaml`, `mappers/ga.yaml` where no such folders are: the
    bundled files, as their bare names are (a user of a pip install follows the README)."""
    monkeypatch.chdir(tmp_path)
    runs = []
    for argv in (["arch/simba.yaml", "problems/alexnet.yaml", "--searcher", "mappers/ga.yaml"],
                 ["simba", "alexnet", "--searcher", "ga"]):
        rc = main(["map", *argv, "--layer", "fc8", "--budget", "200", "--no-cache", "--no-progress", "--json",
                   "--out", f"o{len(runs)}"])
        assert rc == 0, capsys.readouterr().err
        runs.append(json.loads(capsys.readouterr().out))
    assert runs[0]["searcher"] == "ga" and runs[0]["best"] == runs[1]["best"]
    from coexplore.search.registry import load_mapper
    assert load_mapper("mappers/marl.yaml") == load_mapper("marl")
    # a folder of that name here is the user's: a file missing from it is not replaced by a bundled one
    (tmp_path / "arch").mkdir()
    rc = main(["map", "arch/simba.yaml", "alexnet", "--layer", "fc8", "--budget", "100", "--no-cache", "--out", "o3"])
    err = capsys.readouterr().err
    assert rc == 2 and "arch/simba.yaml" in err and "Traceback" not in err


def test_json_of_an_interrupted_rerun_that_keeps_the_earlier_result(tmp_path, monkeypatch, capsys):
    out = tmp_path / "o"
    argv = ["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "300", "--no-cache", "--no-progress",
            "--json", "--out", str(out)]
    assert main(argv) == 0
    done = json.loads(capsys.readouterr().out)
    import coexplore.search.layer as layer_mod
    from coexplore.search.layer import MapInterrupted
    real = layer_mod.map_layer

    def stop_early(*a, **k):        # a rerun stopped after 100 samples: the earlier 300-sample result is kept
        res = real(*a[:3], 100, *a[4:], **k)
        res.interrupted = True
        raise MapInterrupted(res)
    import coexplore.cli.map as map_cli
    monkeypatch.setattr(map_cli, "map_layer", stop_early)
    assert main(argv + ["--restart"]) == 130
    assert json.loads(capsys.readouterr().out)["samples"] == done["samples"] == 300


def test_an_uncounted_mapspace_size_is_said_to_be_an_upper_bound(tmp_path, capsys):
    rc = main(["map", str(CORPUS / "arches" / "simba_like" / "processed.yaml"),
               str(CORPUS / "layers" / "resnet50_res3a_2b.yaml"), "--searcher", "random", "--budget", "50",
               "--no-cache", "--no-progress", "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert rc == 0 and "mapspace at most 10^" in out
    assert json.loads((tmp_path / "o" / "result.json").read_text())["mapspace_size"] is None


def test_a_vanishing_bandwidth_gives_infinite_edp_without_numpy_warnings(tmp_path, capsys):
    """1e-300 words/cycle is legal (Timeloop divides by it); the cycles overflow to huge and the
    EDP to inf, quietly: no RuntimeWarning reaches the user."""
    arch_dir = CORPUS / "arches" / "eyeriss_like"
    text = (arch_dir / "processed.yaml").read_text()
    (tmp_path / "processed.yaml").write_text(text.replace("read_bandwidth: 16", "read_bandwidth: 1e-300", 1))
    (tmp_path / "ERT.yaml").write_text((arch_dir / "ERT.yaml").read_text())
    case = next((CORPUS / "public" / "eyeriss_like" / "alexnet_conv3").iterdir())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rc = main(["evaluate", str(tmp_path / "processed.yaml"), str(CORPUS / "layers" / "alexnet_conv3.yaml"),
                   str(case / "mapping.yaml"), "--json"])
    out, err = capsys.readouterr()
    assert rc == 0 and "Warning" not in err, err
    assert json.loads(out)["cycles"] > 1e290        # the buffer's reads at 1e-300 words per cycle


def test_a_file_name_too_long_is_one_line_not_a_bug(tmp_path, capsys):
    from coexplore.cli.main import main
    rc = main(["evaluate", str(tmp_path / ("a" * 300 + ".yaml")), "p.yaml", "m.yaml"])
    err = capsys.readouterr().err
    assert rc == 2 and "File name too long" in err and "Traceback" not in err and "internal error" not in err, err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_standard_output_on_a_full_disk_is_said_not_a_bug(tmp_path):
    import subprocess
    import sys
    ex = Path(__file__).parents[1] / "examples" / "first_design"
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "coexplore", "evaluate", str(ex / "two_level.yaml"),
                               str(ex / "conv1d.yaml"), str(ex / "k_outer.yaml"), "--json"],
                              stdout=full, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert done.returncode == 1 and "No space left on device" in done.stderr and "standard output" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_a_problem_file_named_in_bytes_that_are_not_utf8_is_mapped(tmp_path, capsys):
    """Its name (surrogates once decoded) reaches the written files: the search is not lost to an
    encoding error after it ran."""
    import shutil
    from coexplore.cli.main import main
    ex = Path(__file__).parents[1] / "examples" / "first_design"
    odd = tmp_path / os.fsdecode(b"\xff\xfe.yaml")
    try:
        shutil.copy(ex / "conv1d.yaml", odd)
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system takes UTF-8 names only")
    rc = main(["map", str(ex / "two_level.yaml"), str(odd), "--budget", "50", "--no-cache", "--no-progress",
               "--out", str(tmp_path / "o")])
    assert rc == 0, capsys.readouterr().err
    assert (tmp_path / "o" / "mapping.yaml").is_file() and (tmp_path / "o" / "result.json").is_file()
    assert main(["evaluate", str(ex / "two_level.yaml"), str(odd), str(tmp_path / "o" / "mapping.yaml")]) == 0


@pytest.mark.parametrize("argv, key", [
    (["map", "simba", "", "--budget", "10"], "PROBLEM"),
    (["map", "simba", "resnet50", "--layer", "conv1", "--out", ""], "--out"),
    (["map", "simba", "resnet50", "--layer", "conv1", "--cache", ""], "--cache"),
    (["map", "simba", "resnet50", "--layer", "conv1", "--cache", "x.sqlite", "--no-cache"], "--cache"),
    (["schedule", "simba_2x2", "--workload", ""], "--workload"),
    (["map", "simba", "resnet50", "--layer", "conv1", "--constraints", ""], "--constraints"),
    # user study: `--searcher=` ran marl without a word (an unset shell variable)
    (["map", "simba", "resnet50", "--layer", "conv1", "--searcher", ""], "--searcher"),
    (["schedule", "simba_2x2", "--layer-searcher", ""], "--layer-searcher"),
    (["online", "simba_2x2", "--loads", ""], "--loads"),
])
def test_empty_paths_and_contradicting_cache_options_are_refused(tmp_path, monkeypatch, capsys, argv, key):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"key '{key}'" in err and "Traceback" not in err, err
    assert not list(tmp_path.iterdir())                  # nothing made


def test_a_cache_path_under_a_file_from_the_environment_names_the_variable(tmp_path, monkeypatch, capsys):
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("COEXPLORE_CACHE", str(tmp_path / "afile" / "c.sqlite"))
    rc = main(["map", "simba", "resnet50", "--layer", "conv1", "--budget", "10", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "$COEXPLORE_CACHE" in err and "a file of that name is in the way" in err, err


def test_validate_of_a_missing_folder_says_it_does_not_exist(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nosuch")]) == 2
    assert "no such folder" in capsys.readouterr().err


@pytest.mark.parametrize("option", [["--layer-budget", "0"], ["--layer-searcher", "nope"]])
def test_bad_layer_options_are_refused_before_the_output_folder_is_announced(tmp_path, capsys, option):
    import shutil
    for f in (Path(__file__).parent / "data" / "sweep").glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    out = tmp_path / "s"
    out.mkdir()
    (out / "schedule.json").write_text('{"run": {"another": 1}}\n')
    rc = main(["schedule", str(tmp_path / "tiny_sweep.yaml"), *option, "--budget", "50", "--no-progress",
               "--out", str(out)])
    err = one_error(capsys, rc, option[0])
    assert "replaces it once there is one" not in err and (out / "schedule.json").read_text() == '{"run": {"another": 1}}\n'
