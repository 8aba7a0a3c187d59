"""Edges of the result-folder lock, the snapshot header, v0.3 key warnings and evaluate's missing
MAPPING (from a review with mutation testing: each test kills a mutant that survived the others)."""
import errno
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import coexplore
from conftest import CORPUS
from coexplore.cli import paths
from coexplore.cli.main import main
from coexplore.cli.paths import HELD, default_run_dir, hold, release_held

fcntl = pytest.importorskip("fcntl")
ARCH = CORPUS / "arches" / "eyeriss_like" / "processed.yaml"
LAYER = CORPUS / "layers" / "tiny_conv.yaml"
HOLDER = "import sys, time\nfrom pathlib import Path\nfrom coexplore.cli.paths import hold\nhold(Path(sys.argv[1]))\n" \
         "print('held', flush=True)\ntime.sleep(60)\n"


def _holder(folder):
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    line = p.stdout.readline().strip()
    return p, line


def _map_args(out):
    return ["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "20", "--no-progress", "--no-cache",
            "--out", str(out)]


# --- defects ------------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [errno.EBADF, errno.ENOLCK, errno.EOPNOTSUPP])
def test_a_folder_that_cannot_be_locked_is_not_said_to_be_another_runs(tmp_path, monkeypatch, capsys, code):
    """NFS emulates flock with POSIX locks: LOCK_EX on a descriptor not open for writing (a folder's)
    fails with EBADF (flock(2), 'NFS details'); ENOLCK without lockd. No other run holds the folder."""
    def flock(fd, op):
        raise OSError(code, os.strerror(code))
    monkeypatch.setattr(fcntl, "flock", flock)
    rc = main(_map_args(tmp_path / "o"))
    assert "another coexplore run is writing" not in capsys.readouterr().err
    assert rc == 0 and (tmp_path / "o" / "result.json").is_file()


def test_a_folder_that_can_be_written_but_not_listed_is_no_internal_error(tmp_path, monkeypatch, capsys):
    """--out of mode -wx (a drop folder): output_dir accepts it; opening it to lock it is EACCES."""
    out = tmp_path / "o"
    out.mkdir()
    real = os.open

    def fake_open(path, flags, *a, **k):
        if Path(path) == out.resolve() and flags == os.O_RDONLY:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, flags, *a, **k)
    monkeypatch.setattr(os, "open", fake_open)
    rc = main(_map_args(out))
    assert rc != 3 and "internal error" not in capsys.readouterr().err


def test_a_run_refused_a_fresh_folder_does_not_remove_it_under_its_holder(tmp_path, monkeypatch):
    """Two runs into a new --out that both saw it missing: the refused one must not rmdir the folder
    the other holds (the holder would go on writing into a re-created, unheld folder)."""
    out = tmp_path / "new"
    out.mkdir()
    holder, line = _holder(out)
    try:
        assert line == "held"
        real = paths.output_dir

        def saw_it_missing(p):               # as if this run checked just before the holder's mkdir
            r = real(p)
            paths.CREATED.append(Path(p))
            return r
        monkeypatch.setattr(paths, "output_dir", saw_it_missing)
        assert main(_map_args(out)) == 2
        assert out.is_dir()
    finally:
        holder.kill()
        holder.wait()


def _old_format_snapshot(path, searcher, key):
    """A snapshot as coexplore wrote it before format 3: one pickle of header and state."""
    import io
    from coexplore.search.checkpoint import _class_name, _shared
    shared = _shared(searcher)
    ids = {id(obj): name for name, obj in shared.items()}
    buf = io.BytesIO()
    p = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    p.persistent_id = lambda obj: ids.get(id(obj))
    p.dump({"format": 2, "coexplore": coexplore.__version__, "key": key, "searcher_class": _class_name(searcher),
            "samples": int(searcher.samples), "elapsed_s": 1.0,
            "driver": {"best_x": searcher.best_x, "history": []}, "searcher": searcher.state_dict()})
    path.write_bytes(buf.getvalue())


@pytest.mark.parametrize("searcher", ["random", "marl"])
def test_an_earlier_format_snapshot_is_said_as_such(searcher, tmp_path):
    """(kills FORMAT 3->2; the real layer: 'unreadable: AttributeError' said before)"""
    from coexplore.mapspace.space import MapSpace
    from coexplore.model.inputs import load_context
    from coexplore.search import registry
    from coexplore.search.base import run_search
    from coexplore.search.checkpoint import Checkpoint, snapshot_key
    from coexplore.spec.constraints import load_constraints
    ctx = load_context(CORPUS / "arches" / "simba_like" / "processed.yaml", CORPUS / "layers" / "resnet50_res3a_2b.yaml")
    ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch))
    s = registry.make_searcher(searcher, ms, seed=0)
    run_search(s, lambda x: np.ones(len(x)), 100, 100)
    _old_format_snapshot(tmp_path / "ck.pkl", s, "k")
    assert snapshot_key(tmp_path / "ck.pkl") is None
    said = []
    again = registry.make_searcher(searcher, ms, seed=0)
    assert Checkpoint(tmp_path / "ck.pkl", key="k", say=said.append).restore(again) is None and again.samples == 0
    assert "format 2" in said[0], said


# --- surviving mutants ------------------------------------------------------------------------------

def test_a_fresh_default_folder_is_held_from_its_claim(tmp_path, monkeypatch):
    """(kills: default_run_dir's claim branch returning the folder unheld)"""
    monkeypatch.chdir(tmp_path)
    out = default_run_dir(Path("results") / "x", "result.json", {"run": 1})
    try:
        assert out.resolve() in HELD
        holder, line = _holder(out)
        holder.kill()
        holder.wait()
        assert line != "held" and "another coexplore run is writing this folder now" in holder.stderr.read()
    finally:
        release_held()


def test_one_folder_spelt_two_ways_is_held_once(tmp_path, monkeypatch):
    """(kills: hold keyed by the path as spelt) a relative and a symlinked spelling are the same folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "o").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "o")
    try:
        hold(tmp_path / "o")
        hold(Path("o"))
        hold(Path("link"))
        assert len(HELD) == 1
    finally:
        release_held()


def test_another_run_s_snapshot_with_a_damaged_state_is_said_as_another_run_s(tmp_path):
    """(kills: restore reading the state of a snapshot whose header is another run's)"""
    from coexplore.mapspace.space import MapSpace
    from coexplore.model.inputs import load_context
    from coexplore.search import registry
    from coexplore.search.base import run_search
    from coexplore.search.checkpoint import Checkpoint
    from coexplore.spec.constraints import load_constraints
    ctx = load_context(ARCH, LAYER)
    ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch))
    s = registry.make_searcher("random", ms, seed=0)
    run_search(s, lambda x: np.ones(len(x)), 100, 100)
    p = tmp_path / "ck.pkl"
    Checkpoint(p, key="a", every_s=0).save(s, {"best_x": s.best_x, "history": []})
    p.write_bytes(p.read_bytes()[:-20])
    said = []
    assert Checkpoint(p, key="b", say=said.append).restore(registry.make_searcher("random", ms, seed=0)) is None
    assert "belongs to another run" in said[0], said


V3 = CORPUS / "arches" / "simba_like" / "processed.yaml"


def _v3_with(tmp_path, extra: str):
    f = tmp_path / "a.yaml"
    f.write_text(V3.read_text().replace("      attributes:", extra + "      attributes:", 1))
    from coexplore.spec.architecture import load_architecture
    return [w for w in load_architecture(f).warnings if "unknown key" in w]


def test_keys_timeloop_reads_are_not_warned(tmp_path):
    """(kills: 'description' etc. dropped from the known keys)"""
    assert _v3_with(tmp_path, "      description: off-chip\n      area_share: 1\n") == []


def test_a_bound_written_beside_the_attributes_is_not_taken_for_another_key(tmp_path):
    """(kills: a low similarity cutoff) `depth:` next to `attributes:` resembles no key Timeloop reads."""
    said = _v3_with(tmp_path, "      depth: 1024\n")
    assert len(said) == 1 and "did you mean" not in said[0] and "'depth'" in said[0]


def _arch_with_problem(tmp_path):
    from coexplore.spec.yamlio import dump_yaml, load_yaml
    spec = {**load_yaml(V3), **load_yaml(CORPUS / "layers" / "alexnet_conv3.yaml")}
    f = tmp_path / "spec.yaml"
    f.write_text(dump_yaml(spec))
    shutil.copy(CORPUS / "arches" / "simba_like" / "ERT.yaml", tmp_path / "ERT.yaml")
    return f


def test_a_mapping_file_named_like_a_bundled_workload_is_read(tmp_path, monkeypatch, capsys):
    """(kills: _names_a_workload without its exists() check)"""
    spec = _arch_with_problem(tmp_path)
    monkeypatch.chdir(tmp_path)
    shutil.copy(CORPUS / "public" / "simba_like" / "alexnet_conv3" / "003" / "mapping.yaml", tmp_path / "resnet50")
    rc = main(["evaluate", str(spec), "resnet50", "--json"])
    out = capsys.readouterr()
    expected = json.loads((CORPUS / "public" / "simba_like" / "alexnet_conv3" / "003" / "expected.json").read_text())
    assert rc == 0, out.err
    assert json.loads(out.out)["cycles"] == expected["cycles"]


def test_a_workload_name_given_as_a_third_argument_is_no_missing_mapping(tmp_path, monkeypatch, capsys):
    """(kills: _names_a_workload asked with PROBLEM given) a MAPPING was given: it is no file."""
    monkeypatch.chdir(tmp_path)
    rc = main(["evaluate", str(V3), str(CORPUS / "layers" / "alexnet_conv3.yaml"), "resnet50"])
    err = capsys.readouterr().err
    assert rc == 2 and "no MAPPING given" not in err


def test_a_snapshot_in_the_one_pickle_layout_is_not_resumed_nor_anyone_s(tmp_path):
    """(kills FORMAT 3->2) the layout before format 3: header and state in one pickle."""
    from coexplore.search.checkpoint import Checkpoint, snapshot_key
    p = tmp_path / "ck.pkl"
    p.write_bytes(pickle.dumps({"format": 2, "coexplore": coexplore.__version__, "key": "k",
                                "searcher_class": "coexplore.search.random.RandomSearch", "samples": 7,
                                "elapsed_s": 1.0, "driver": {}, "searcher": {}}))
    assert snapshot_key(p) is None
    said = []

    class S:
        samples = 0
    assert Checkpoint(p, key="k", say=said.append).restore(S()) is None
    assert "format 2" in said[0], said


def test_a_run_with_other_settings_is_told_which_default_folder_it_writes(tmp_path, monkeypatch, capsys):
    """User study: a sweep rerun with another --layer-budget went to results/sweep/x-s0-2 silently, and
    the old report was opened. The numbered folder is said on stderr with what differs; a rerun of
    the first run finds its own folder with no note."""
    monkeypatch.chdir(tmp_path)
    base = Path("results") / "x"
    try:
        first = default_run_dir(base, "result.json", {"layer_budget": 200, "seed": 0})
        assert capsys.readouterr().err == ""
        release_held()
        other = default_run_dir(base, "result.json", {"layer_budget": 250, "seed": 0})
        err = capsys.readouterr().err
        assert other.name == "x-2" and f"{base} holds another run" in err and "layer_budget" in err
        assert f"this run writes {other}" in err and "seed" not in err
        release_held()
        assert default_run_dir(base, "result.json", {"layer_budget": 200, "seed": 0}) == first
        assert capsys.readouterr().err == ""
    finally:
        release_held()
