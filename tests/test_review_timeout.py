"""Review tests for `validate --model timeloop`'s failed runs, the first-5 rule, --timeloop-timeout and
the `energy in tol.` statistics. A stand-in timeloop-model answers its n-th run with the n-th word of
$FAKE_SEQ ("ok": the refusal Timeloop printed for eyeriss_like tiny_conv 007, the corpus' answer for
every case here; "crash": exit 134; "stats": the stats.txt of eyeriss_like tiny_conv 017) and counts
its runs in $FAKE_COUNT."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CORPUS, DATA, stand_in_timeloop

CASE = "eyeriss_like/tiny_conv/007"         # a mapping Timeloop refuses (the stand-in's "ok" answer)
LOG = DATA / "timeloop_stats" / CASE / "timeloop-model.log"
STATS_GZ = DATA / "timeloop_stats" / "eyeriss_like/tiny_conv/017" / "timeloop-model.stats.txt.gz"

SEQ = """\
    import os, sys
    count = os.environ["FAKE_COUNT"]
    n = int(open(count).read()) if os.path.exists(count) else 0
    open(count, "w").write(str(n + 1))
    seq = os.environ["FAKE_SEQ"].split(",")
    answer = seq[min(n, len(seq) - 1)]
    if answer == "stats":
        import gzip
        open("timeloop-model.stats.txt", "wb").write(gzip.decompress(open(os.environ["FAKE_STATS"], "rb").read()))
        sys.exit(0)
    if answer == "ok":
        print(open(os.environ["FAKE_LOG"]).read())
        sys.exit(1)
    if answer == "sleep":
        __import__("time").sleep(60)
    print("terminate called after throwing an instance of 'std::out_of_range'", file=sys.stderr)
    sys.exit(134)
"""


@pytest.fixture
def seq_timeloop(tmp_path, monkeypatch):
    return stand_in_timeloop(tmp_path, monkeypatch, SEQ)


def _corpus(tmp_path, groups):
    """eyeriss_like cases, copies of CASE, in layer groups: `groups` = cases per layer (layers
    l0, l1, ... copies of tiny_conv), ids 000, 001, ..."""
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS / "arches" / "eyeriss_like", corpus / "arches" / "eyeriss_like")
    (corpus / "layers").mkdir()
    names = []
    for g, n in enumerate(groups):
        shutil.copy(CORPUS / "layers" / "tiny_conv.yaml", corpus / "layers" / f"l{g}.yaml")
        for i in range(n):
            shutil.copytree(CORPUS / "public" / CASE, corpus / "public" / "eyeriss_like" / f"l{g}" / f"{i:03d}")
            names.append(f"public/eyeriss_like/l{g}/{i:03d}")
    return corpus, names


def _validate(tmp_path, corpus, seq, *extra):
    env = {**os.environ, "FAKE_SEQ": ",".join(seq), "FAKE_COUNT": str(tmp_path / "count"), "FAKE_LOG": str(LOG),
           "FAKE_STATS": str(STATS_GZ)}
    (tmp_path / "count").unlink(missing_ok=True)
    r = subprocess.run([sys.executable, "-m", "coexplore.cli.main", "validate", str(corpus), "--model", "timeloop",
                        "--no-progress", *extra], capture_output=True, text=True, timeout=120, env=env)
    runs = int((tmp_path / "count").read_text()) if (tmp_path / "count").exists() else 0
    return r, runs


def test_the_first_five_failing_across_layer_groups_stop_naming_the_first_case(seq_timeloop, tmp_path):
    corpus, names = _corpus(tmp_path, [2, 4])        # no group holds 5 cases
    r, runs = _validate(tmp_path, corpus, ["crash"])
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert runs == 5                                  # the 6th case is not run
    assert f"timeloop-model failed on each of the first 5 cases; the first: {names[0]}: " in r.stderr
    assert "Traceback" not in r.stderr


def test_the_first_five_failing_in_one_group_name_its_first_case(seq_timeloop, tmp_path):
    corpus, names = _corpus(tmp_path, [6])
    r, runs = _validate(tmp_path, corpus, ["crash"])
    assert r.returncode == 2 and runs == 5, (r.stdout, r.stderr)
    assert f"the first: {names[0]}: timeloop-model failed (exit code 134)" in r.stderr


@pytest.mark.parametrize("seq", [["ok", "crash"], ["crash", "crash", "crash", "crash", "ok", "crash"]],
                         ids=["a success first", "a success fifth"])
def test_a_success_among_the_first_five_lets_every_case_run(seq_timeloop, tmp_path, seq):
    corpus, names = _corpus(tmp_path, [2, 5])        # the success in the first group, or in the second
    r, runs = _validate(tmp_path, corpus, seq, "--json")
    assert r.returncode == 1, r.stderr
    s = json.loads(r.stdout)
    assert runs == 7 and s["cases"] == 7
    assert s["runs_failed"] == 6 and s["validity_agrees"] == 1 and s["invalid_messages_exact"] == 1
    assert sorted(f["case"] for f in s["failures"]) == sorted(
        n for n, a in zip(names, seq + [seq[-1]] * 7) if a == "crash")
    assert all(f["run_error"] == "timeloop-model failed (exit code 134): terminate called after throwing an "
                                 "instance of 'std::out_of_range'" for f in s["failures"])
    assert s["per_arch"]["eyeriss_like"]["runs_failed"] == 6


@pytest.mark.parametrize("n", [1, 4])
def test_fewer_than_five_cases_all_failing_are_failing_cases(seq_timeloop, tmp_path, n):
    corpus, names = _corpus(tmp_path, [n])
    r, runs = _validate(tmp_path, corpus, ["crash"], "--json")
    assert r.returncode == 1 and runs == n, r.stderr
    s = json.loads(r.stdout)
    assert (s["cases"], s["runs_failed"], s["validity_agrees"]) == (n, n, 0)


def test_exactly_five_cases_all_failing_is_the_error(seq_timeloop, tmp_path):
    corpus, names = _corpus(tmp_path, [3, 2])
    r, runs = _validate(tmp_path, corpus, ["crash"])
    assert r.returncode == 2 and runs == 5 and "first 5 cases" in r.stderr


def test_the_text_output_lists_each_failed_run_and_says_how_many(seq_timeloop, tmp_path):
    corpus, names = _corpus(tmp_path, [3])
    r, _ = _validate(tmp_path, corpus, ["ok", "crash", "ok"])
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert "runs failed     : 1 timeloop-model run (crashed, timed out or unreadable; failing cases, each with " \
           "its reason)" in lines
    assert f"  {names[1]}: timeloop-model failed (exit code 134): terminate called after " \
           "throwing an instance of 'std::out_of_range'" in lines
    r, _ = _validate(tmp_path, corpus, ["crash", "crash", "ok"])
    assert "runs failed     : 2 timeloop-model runs (crashed, timed out or unreadable; failing cases, each with " \
           "its reason)" in r.stdout.splitlines()
    r, _ = _validate(tmp_path, corpus, ["ok"])
    assert r.returncode == 0 and "runs failed" not in r.stdout, r.stdout


@pytest.mark.parametrize("command", ["validate", "evaluate"])
@pytest.mark.parametrize("bad", ["nan", "-inf", "1e999", ""])
def test_a_timeout_that_is_no_positive_finite_number_is_refused(command, bad):
    inputs = [str(CORPUS)] if command == "validate" else [
        str(CORPUS / "arches/eyeriss_like/processed.yaml"), str(CORPUS / "layers/tiny_conv.yaml"),
        str(CORPUS / "public" / CASE / "mapping.yaml")]
    r = subprocess.run([sys.executable, "-m", "coexplore.cli.main", command, *inputs, "--model", "timeloop",
                        "--timeloop-timeout", bad], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "argument --timeloop-timeout" in r.stderr, r.stderr


def test_energy_within_tolerance_at_the_tolerance_and_only_for_cases_both_find_valid():
    from coexplore.model.validation import summarise

    def row(err, tol=None, got=True):
        r = {"case": "c", "arch": "a", "layer": "l", "valid_ref": True, "valid_got": got, "valid_agree": got,
             "cycles_exact": True, "counts_exact": True, "energy_rel_err": err, "cycles_rel_err": 0.0}
        return r if tol is None else {**r, "energy_tol": tol}
    s = summarise([row(1e-4), row(2.5e-4, 2.5e-4), row(0.5, 2.5e-4, got=False)], 0.0, 0.0)
    assert (s["energy_within_tolerance"], s["energy_tolerance_from_stats"]) == (2, 1)
    assert [r["valid_got"] for r in s["failures"]] == [False]


def test_a_clean_builtin_validation_says_no_failed_runs():
    r = subprocess.run([sys.executable, "-m", "coexplore.cli.main", "validate", str(CORPUS / "public" / "eyeriss_like"
                                                                                     / "tiny_conv"), "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    assert "runs failed" not in r.stdout, r.stdout



def test_a_disagreeing_run_is_no_failed_run(seq_timeloop, tmp_path):
    """A run that answers (here: a valid result for a mapping the reference refuses) disagrees without
    failing: it is a failing case, not one of `runs_failed`."""
    corpus, names = _corpus(tmp_path, [3])
    r, runs = _validate(tmp_path, corpus, ["stats", "crash", "ok"], "--json")
    s = json.loads(r.stdout)
    assert r.returncode == 1 and runs == 3, r.stderr
    assert (s["cases"], s["runs_failed"], s["validity_agrees"]) == (3, 1, 1)
    assert [f.get("run_error") is not None for f in s["failures"]] == [False, True]


def test_a_default_folder_held_by_another_process_names_no_out():
    """The default folder, emptied and held by another process (no claim in it): this run claims it,
    cannot hold it, and is refused without naming an --out the user did not give."""
    from test_out_folder_held import _held_elsewhere, _map
    first = _map("--json")
    assert first.returncode == 0
    run_dir = Path.cwd() / Path(json.loads(first.stdout)["mapping_file"]).parent
    shutil.rmtree(run_dir)
    holder = _held_elsewhere(run_dir)
    try:
        r = _map()
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert "--out:" not in r.stderr and "key '--out'" not in r.stderr, r.stderr
        assert "another coexplore run is writing this default result folder now" in r.stderr   # not "the same run"
    finally:
        holder.kill()
        holder.wait()


WRAPPER = """#!/bin/sh
# a wrapper (as a docker or conda launcher is): the real work is a child process
echo $$ > "$WRAPPER_PIDS"
sleep 30 &
echo $! >> "$WRAPPER_PIDS"
wait
"""


def test_a_timeout_stops_the_whole_process_group_of_a_wrapper(tmp_path, monkeypatch):
    """Review: at the limit only the wrapper was killed and its child ran on; every validated case
    left one behind."""
    import time
    exe = tmp_path / "bin" / "timeloop-model"
    exe.parent.mkdir()
    exe.write_text(WRAPPER)
    exe.chmod(0o755)
    pids = tmp_path / "pids"
    env = {**os.environ, "PATH": f"{exe.parent}{os.pathsep}{os.environ['PATH']}", "WRAPPER_PIDS": str(pids)}
    r = subprocess.run([sys.executable, "-m", "coexplore.cli.main", "evaluate",
                        CORPUS / "arches/eyeriss_like/processed.yaml", CORPUS / "layers/tiny_conv.yaml",
                        CORPUS / "public" / CASE / "mapping.yaml", "--model", "timeloop", "--timeloop-timeout", "1"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2 and "ran longer than 1 s" in r.stderr
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 2
    time.sleep(0.5)
    for pid in started:
        alive = os.path.exists(f"/proc/{pid}") and "Z" not in (open(f"/proc/{pid}/stat").read().split()[2]
                                                               if os.path.exists(f"/proc/{pid}/stat") else "Z")
        assert not alive, f"process {pid} still running"


def test_ctrl_c_keeps_the_runs_finished_in_the_current_group(seq_timeloop, tmp_path):
    """Review: rows were made when a whole (architecture, layer) group ended, so a Ctrl-C in a group's
    third run lost its first two from the summary (hours of runs, at up to 600 s each)."""
    import signal
    import time
    corpus, _ = _corpus(tmp_path, [3])
    env = {**os.environ, "FAKE_SEQ": "ok,ok,sleep", "FAKE_COUNT": str(tmp_path / "count"), "FAKE_LOG": str(LOG),
           "FAKE_STATS": str(STATS_GZ)}
    p = subprocess.Popen([sys.executable, "-m", "coexplore.cli.main", "validate", str(corpus), "--model", "timeloop",
                          "--no-progress", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not ((tmp_path / "count").exists() and (tmp_path / "count").read_text() == "3"):
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.1)
    time.sleep(0.5)                                   # the third run is sleeping
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    s = json.loads(out)
    assert s["interrupted_after"] == "2 of 3 cases" and s["cases"] == 2 and s["validity_agrees"] == 2


def test_a_stats_file_or_output_that_is_not_utf8_is_said_not_a_bug(tmp_path, monkeypatch, capsys):
    """A timeloop-model that writes bytes that are not UTF-8 (to its stats.txt and its output):
    a one-line error that its stats.txt cannot be read, exit 2, no traceback."""
    from coexplore.cli.main import main
    stand_in_timeloop(tmp_path, monkeypatch, """
        import sys
        sys.stdout.buffer.write(bytes(range(128, 256)))
        open("timeloop-model.stats.txt", "wb").write(bytes(range(128, 256)) * 20)
        """)
    rc = main(["evaluate", str(CORPUS / "arches/eyeriss_like/processed.yaml"), str(CORPUS / "layers/tiny_conv.yaml"),
               str(CORPUS / "public" / CASE / "mapping.yaml"), "--model", "both"])
    err = capsys.readouterr().err
    assert rc == 2 and "stats.txt coexplore cannot read" in err and "Traceback" not in err, err
