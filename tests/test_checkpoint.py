"""An interrupted search resumes from its checkpoint and ends exactly as an uninterrupted run
(every searcher, layer and system level), from `run_search` up to `coexplore map` / `schedule`."""

import json
import os
import signal
import time

import numpy as np
import pytest

import coexplore
import coexplore.search.layer as layer_mod
from coexplore.cli.main import main
from coexplore.mapspace.space import MapSpace
from coexplore.model.inputs import load_context
from coexplore.search import registry
from coexplore.search.base import SearchInterrupted, run_search
from coexplore.search.checkpoint import Checkpoint
from coexplore.spec.constraints import load_constraints
from coexplore.system.encoding import MakespanObjective
from coexplore.system.schedule import make_searcher as make_system_searcher
from coexplore.system.tables import load_table

from conftest import CORPUS, DATA

ARCH = CORPUS / "arches" / "eyeriss_like" / "processed.yaml"
LAYER = CORPUS / "layers" / "tiny_conv.yaml"
TABLE = DATA / "magma" / "tables" / "batch_mix" / "S3" / "insts0.csv"


@pytest.fixture
def ctrl_c(monkeypatch):
    """Ctrl-C as in a plain CLI run: SIGINT goes to the default handler, which run_search defers."""
    monkeypatch.setattr(signal, "getsignal", lambda s: signal.default_int_handler)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def pressing_ctrl_c(objective, at_call: int, presses: int = 1):
    """objective that sends `presses` SIGINTs while evaluating batch number `at_call` (1-based)."""
    calls = [0]

    def f(batch):
        calls[0] += 1
        if calls[0] == at_call:
            for _ in range(presses):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
        return objective(batch)
    return f


def recording(objective, asked: list):
    """objective that keeps a copy of every batch it evaluates."""
    def f(batch):
        asked.append(np.array(batch, copy=True))
        return objective(batch)
    return f


def same_result(a, b) -> bool:
    return (a.samples == b.samples and a.best_loss == b.best_loss and np.array_equal(a.best_x, b.best_x)
            and [tuple(h) for h in a.history] == [tuple(h) for h in b.history])


@pytest.fixture(scope="module")
def layer():
    ctx = load_context(str(ARCH), str(LAYER))
    ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch))
    return ms, layer_mod.make_objective(ctx, ms, "edp")


@pytest.mark.parametrize("name", sorted(registry.SEARCHERS))
def test_a_resumed_layer_search_ends_as_an_uninterrupted_one(name, layer, tmp_path, ctrl_c):
    ms, objective = layer
    spec = registry.load_mapper(name)
    budget = 2_400                                 # MARL: warm-up 480, then learning and polishing
    ref_asked, asked = [], []
    ref = run_search(registry.make_searcher(spec, ms, seed=3), recording(objective, ref_asked), budget, 100)
    path = tmp_path / "ck.pkl"
    # interrupted twice (during MARL's warm-up, then while it learns), resumed each time
    for at_call, done in ((3, 300), (9, 1_200)):
        ck = Checkpoint(path, key="run")
        with pytest.raises(SearchInterrupted) as info:
            run_search(registry.make_searcher(spec, ms, seed=3),
                       pressing_ctrl_c(recording(objective, asked), at_call), budget, 100, checkpoint=ck)
        assert info.value.result.samples == done and path.is_file()
        assert ck.saved_samples == done
    notes = []
    ck = Checkpoint(path, key="run", say=notes.append)
    res = run_search(registry.make_searcher(spec, ms, seed=3), recording(objective, asked), budget, 100,
                     checkpoint=ck)
    assert ck.resumed_from == 1_200 and "resuming" in notes[0]
    assert same_result(res, ref)
    # the pieces asked exactly the candidates the uninterrupted run asked, in its order
    assert np.array_equal(np.concatenate(asked), np.concatenate(ref_asked))


def test_a_resumed_exhaustive_search_walks_on_from_where_it_stopped(layer, tmp_path, ctrl_c, monkeypatch):
    """The enumeration in small chunks (several taken before the stop): the resumed run asks the
    rows the uninterrupted one asks, none twice."""
    import coexplore.mapspace.enumerate as enum
    real = enum.canonical_points
    monkeypatch.setattr(enum, "canonical_points", lambda ms, chunk=0, **k: real(ms, chunk=256, **k))
    ms, objective = layer
    spec = registry.load_mapper("exhaustive")
    spec.batch_size = 100
    ref_asked, asked = [], []
    ref = run_search(registry.make_searcher(spec, ms, seed=0), recording(objective, ref_asked), 2_000, 100)
    path = tmp_path / "ck.pkl"
    with pytest.raises(SearchInterrupted):
        run_search(registry.make_searcher(spec, ms, seed=0), pressing_ctrl_c(recording(objective, asked), 9),
                   2_000, 100, checkpoint=Checkpoint(path, key="run"))
    searcher = registry.make_searcher(spec, ms, seed=0)
    res = run_search(searcher, recording(objective, asked), 2_000, 100, checkpoint=Checkpoint(path, key="run"))
    assert searcher._taken > 3                      # several chunks of the enumeration were walked
    assert same_result(res, ref)
    rows = np.concatenate(asked)
    assert np.array_equal(rows, np.concatenate(ref_asked)) and len(np.unique(rows, axis=0)) == len(rows)


@pytest.mark.parametrize("name", ["magma", "stdga", "pso", "random", "sjf-met"])
def test_a_resumed_schedule_search_ends_as_an_uninterrupted_one(name, tmp_path, ctrl_c):
    table = load_table(TABLE)
    objective = MakespanObjective(table, 16.0)
    ref = run_search(make_system_searcher(name, table, 1_500, seed=2), objective, 1_500, 50)
    path = tmp_path / "ck.pkl"
    with pytest.raises(SearchInterrupted):
        run_search(make_system_searcher(name, table, 1_500, seed=2), pressing_ctrl_c(objective, 7), 1_500, 50,
                   checkpoint=Checkpoint(path, key="run"))
    ck = Checkpoint(path, key="run")
    res = run_search(make_system_searcher(name, table, 1_500, seed=2), objective, 1_500, 50, checkpoint=ck)
    assert ck.resumed_from == 350 and same_result(res, ref)


def test_an_immediate_stop_resumes_from_the_last_periodic_snapshot(layer, tmp_path, ctrl_c):
    """Ctrl-C twice stops inside a batch (dropped); the snapshot before it still resumes exactly."""
    ms, objective = layer
    spec = registry.load_mapper("marl")
    ref = run_search(registry.make_searcher(spec, ms, seed=1), objective, 1_500, 100)
    path = tmp_path / "ck.pkl"
    with pytest.raises(SearchInterrupted) as info:
        run_search(registry.make_searcher(spec, ms, seed=1), pressing_ctrl_c(objective, 8, presses=2), 1_500, 100,
                   checkpoint=Checkpoint(path, key="run", every_s=0))
    assert info.value.result.samples == 700          # the 8th batch was dropped
    ck = Checkpoint(path, key="run")
    res = run_search(registry.make_searcher(spec, ms, seed=1), objective, 1_500, 100, checkpoint=ck)
    assert ck.resumed_from == 700 and same_result(res, ref)


def test_a_snapshot_that_does_not_fit_is_ignored(layer, tmp_path, ctrl_c, monkeypatch):
    ms, objective = layer
    spec = registry.load_mapper("ga")
    path = tmp_path / "ck.pkl"
    with pytest.raises(SearchInterrupted):
        run_search(registry.make_searcher(spec, ms, seed=0), pressing_ctrl_c(objective, 4), 1_000, 100,
                   checkpoint=Checkpoint(path, key="run A"))
    saved = path.read_bytes()
    cases = {"it belongs to another run": ("run B", registry.load_mapper("ga"), saved),
             "searcher's": ("run A", registry.load_mapper("sa"), saved),
             "unreadable": ("run A", spec, saved[: len(saved) // 2])}
    for why, (key, other_spec, content) in cases.items():
        path.write_bytes(content)
        notes = []
        ck = Checkpoint(path, key=key, say=notes.append)
        res = run_search(registry.make_searcher(other_spec, ms, seed=0), objective, 1_000, 100, checkpoint=ck)
        assert ck.resumed_from == 0 and res.samples == 1_000 and res.history[0][0] == 100
        assert len(notes) == 1 and why in notes[0] and "sample 0" in notes[0], notes
    # another coexplore version's snapshot (its classes may differ): not loaded either
    path.write_bytes(saved)
    monkeypatch.setattr(coexplore, "__version__", "99.0")
    notes = []
    ck = Checkpoint(path, key="run A", say=notes.append)
    run_search(registry.make_searcher(spec, ms, seed=0), objective, 1_000, 100, checkpoint=ck)
    assert ck.resumed_from == 0 and "written by coexplore" in notes[0] and "this is 99.0" in notes[0]


def test_map_resumes_an_interrupted_run(tmp_path, monkeypatch, capsys, ctrl_c):
    """Rerunning an interrupted `coexplore map` continues its search: the result (history included)
    is the uninterrupted run's; the checkpoint goes once the result is stored; --restart starts over."""
    args = [str(ARCH), str(LAYER), "--searcher", "rl", "--budget", "2000", "--no-cache", "--json"]
    assert main(["map", *args, "--out", str(tmp_path / "ref")]) == 0
    ref = json.loads(capsys.readouterr().out)
    out = tmp_path / "o"
    real = layer_mod.make_objective
    monkeypatch.setattr(layer_mod, "make_objective", lambda *a: pressing_ctrl_c(real(*a), 6))
    assert main(["map", *args, "--out", str(out)]) == 130
    captured = capsys.readouterr()
    part = json.loads(captured.out)
    assert part["interrupted"] and part["samples"] == 600
    assert (out / ".checkpoint.pkl").is_file() and "run the same command again" in captured.err
    monkeypatch.setattr(layer_mod, "make_objective", real)
    assert main(["map", *args, "--out", str(out)]) == 0
    captured = capsys.readouterr()
    done = json.loads(captured.out)
    assert "resuming the interrupted run from its checkpoint at 600 samples" in captured.err
    assert done["samples"] == 2000 and "interrupted" not in done
    assert done["history"] == ref["history"] and done["best"] == ref["best"]
    assert not (out / ".checkpoint.pkl").exists()
    # --restart: the snapshot is dropped and the search starts from sample 0
    monkeypatch.setattr(layer_mod, "make_objective", lambda *a: pressing_ctrl_c(real(*a), 3))
    assert main(["map", *args, "--out", str(out)]) == 130
    capsys.readouterr()
    monkeypatch.setattr(layer_mod, "make_objective", real)
    assert main(["map", *args, "--out", str(out), "--restart"]) == 0
    captured = capsys.readouterr()
    assert "resuming" not in captured.err and json.loads(captured.out)["history"] == ref["history"]


def test_schedule_resumes_an_interrupted_run(tmp_path, monkeypatch, capsys, ctrl_c):
    args = ["schedule", "--table", str(TABLE), "--bandwidth", "16", "--budget", "3000", "--json", "--no-plot"]
    assert main([*args, "--out", str(tmp_path / "ref")]) == 0
    ref = json.loads(capsys.readouterr().out)
    real = MakespanObjective.__call__
    calls = [0]

    def call(self, X):
        calls[0] += 1
        if calls[0] == 10:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        return real(self, X)
    monkeypatch.setattr(MakespanObjective, "__call__", call)
    out = tmp_path / "o"
    assert main([*args, "--out", str(out)]) == 130
    assert json.loads(capsys.readouterr().out)["interrupted"] is True
    monkeypatch.setattr(MakespanObjective, "__call__", real)
    assert main([*args, "--out", str(out)]) == 0
    captured = capsys.readouterr()
    done = json.loads(captured.out)
    assert "resuming" in captured.err and not (out / ".checkpoint.pkl").exists()
    for key in ("makespan", "core", "priority", "history", "samples"):
        assert done[key] == ref[key], key


def test_sigterm_saves_the_search_and_a_rerun_continues(tmp_path):
    """A job scheduler's stop (SIGTERM) ends the batch, saves the state and exits 130; the same
    command then resumes from there."""
    import re
    import subprocess
    import sys
    out = tmp_path / "o"
    cmd = [sys.executable, "-m", "coexplore.cli.main", "map", str(ARCH), str(LAYER), "--searcher", "random",
           "--budget", "100000000", "--out", str(out), "--no-cache"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TQDM_MININTERVAL": "0.5"}   # a bar line every 0.5 s
    saved = []
    for attempt in range(2):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            buf, t0 = "", time.time()
            while "EDP[J*cycle]=" not in buf and time.time() - t0 < 120:   # the search loop runs
                buf += os.read(p.stderr.fileno(), 4096).decode(errors="replace")
            p.send_signal(signal.SIGTERM)
            _, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
        err = buf + err
        assert p.returncode == 130, err
        samples = json.loads((out / "result.json").read_text())["samples"]
        assert (out / ".checkpoint.pkl").is_file()
        assert f"the search state after {samples:,} samples is saved" in err
        if attempt:
            assert re.search(rf"resuming the interrupted run from its checkpoint at {saved[0]:,} samples", err)
        saved.append(samples)
    assert 0 < saved[0] < saved[1] < 100_000_000


def _run_until_bar(cmd, env, sig, marker="best=", second=None):
    """Start `cmd`, wait until its progress bar shows `marker` (the search loop runs), send `sig` (and
    `second` 0.3 s later if given); (returncode, stderr)."""
    import subprocess
    # as a Ctrl-C from a terminal finds it: SIGINT handled by default even when this test run was
    # started with SIGINT ignored (a background job of a script), which the child would inherit
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        buf, t0 = "", time.time()
        while marker not in buf and time.time() - t0 < 120 and p.poll() is None:
            buf += os.read(p.stderr.fileno(), 4096).decode(errors="replace")
        p.send_signal(sig)
        if second is not None:
            time.sleep(0.3)
            p.send_signal(second)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    return p.returncode, buf + err


@pytest.mark.parametrize("searcher, budget", [("magma", 30_000), ("cma", 6_000)])
def test_a_schedule_resumed_in_another_process_ends_as_an_uninterrupted_one(tmp_path, searcher, budget):
    """Nothing in a snapshot may depend on the process (Python salts hash() per process)."""
    import subprocess
    import sys
    table = tmp_path / "jobs.csv"           # 24 jobs: MAGMA's children often repeat a known schedule
    # (with 12, a schedule as long as the longest job comes at once: optimal, the search ends there)
    table.write_text("".join(TABLE.read_text().splitlines(keepends=True)[:25]))
    base = [sys.executable, "-m", "coexplore.cli.main", "schedule", "--table", str(table), "--bandwidth", "16",
            "--budget", str(budget), "--searcher", searcher, "--no-plot"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TQDM_MININTERVAL": "0.3"}
    ref = subprocess.run([*base, "--out", str(tmp_path / "ref")], capture_output=True, text=True,
                         env={**env, "PYTHONHASHSEED": "1"})
    assert ref.returncode == 0, ref.stderr
    out = str(tmp_path / "o")
    rc, err = _run_until_bar([*base, "--out", out], {**env, "PYTHONHASHSEED": "2"}, signal.SIGINT)
    assert rc == 130 and (tmp_path / "o" / ".checkpoint.pkl").is_file(), err
    done = subprocess.run([*base, "--out", out], capture_output=True, text=True, env={**env, "PYTHONHASHSEED": "3"})
    assert done.returncode == 0 and "resuming" in done.stderr, done.stderr
    assert "Warning" not in done.stderr, done.stderr
    a, b = (json.loads((tmp_path / d / "schedule.json").read_text()) for d in ("ref", "o"))
    for key in ("makespan", "core", "priority", "history", "samples"):
        assert a[key] == b[key], key


def test_sigterm_stops_after_the_batch_even_with_sigint_ignored(tmp_path):
    """A background job of a shell script starts with SIGINT ignored; a scheduler's SIGTERM must still
    finish the batch and save the search; Ctrl-C after a SIGTERM stops at once."""
    import sys
    out = tmp_path / "o"
    cmd = [sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
           "from coexplore.cli.main import main; sys.exit(main(sys.argv[1:]))",
           "map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "100000000", "--out", str(out),
           "--no-cache"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TQDM_MININTERVAL": "0.3"}
    rc, err = _run_until_bar(cmd, env, signal.SIGTERM, marker="EDP[J*cycle]=")
    assert rc == 130 and (out / ".checkpoint.pkl").is_file(), err
    assert "SIGTERM: stopping after the batch being evaluated" in err
    samples = json.loads((out / "result.json").read_text())["samples"]
    assert f"the search state after {samples:,} samples is saved" in err
    # SIGTERM then Ctrl-C (SIGINT handled as usual this time): the second request stops at once
    cmd2 = [sys.executable, "-m", "coexplore.cli.main", *cmd[3:]]
    (out / ".checkpoint.pkl").unlink()
    rc, err = _run_until_bar([*cmd2, "--restart", "--batch-size", "20000"], env, signal.SIGTERM,
                             marker="EDP[J*cycle]=", second=signal.SIGINT)
    # the batch running at the SIGTERM (the second, ~1.5 s long) was dropped by the Ctrl-C
    assert rc == 130 and json.loads((out / "result.json").read_text())["samples"] == 20_000, err


def test_an_interrupted_rerun_of_a_finished_run_leaves_no_checkpoint(tmp_path, monkeypatch, capsys, ctrl_c):
    """The folder holds the same run's complete result: the stopped rerun keeps it, and leaves no
    checkpoint whose continuation would only repeat the finished search."""
    args = ["map", str(ARCH), str(LAYER), "--searcher", "rl", "--budget", "1500", "--no-cache", "--json",
            "--out", str(tmp_path / "o")]
    assert main(args) == 0
    capsys.readouterr()
    real = layer_mod.make_objective
    monkeypatch.setattr(layer_mod, "make_objective", lambda *a: pressing_ctrl_c(real(*a), 4))
    assert main(args) == 130
    err = capsys.readouterr().err
    assert "kept" in err and "run the same command again" not in err
    assert not (tmp_path / "o" / ".checkpoint.pkl").exists()
    assert "interrupted" not in json.loads((tmp_path / "o" / "result.json").read_text())


def test_magma_remembers_asked_schedules_by_a_digest_every_process_agrees_on():
    """MAGMA's set of asked schedules is restored from a checkpoint in a new process: its keys must not
    be Python's hash(), which is salted per process."""
    import subprocess
    import sys
    code = ("import numpy as np; from coexplore.system.magma import _digest; "
            "print(_digest(np.array([3.0, 1.0, 0.25, 0.5])))")
    got = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(got) == 1 and got.pop().strip().isdigit()


def test_memory_of_a_space_too_large_to_index_survives_a_checkpoint():
    """The memory of evaluated points of a huge space (keys are narrow bytes) pickles and comes
    back with the same keys and losses, for 1- and 2-byte parameter values."""
    import pickle
    from coexplore.search.memo import Memo
    from coexplore.search.space import DiscreteSpace
    for top in (9, 300):
        space = DiscreteSpace(np.full(30, top), [f"p{i}" for i in range(30)])
        memo = Memo(space)
        x = np.random.default_rng(1).integers(0, top, (200, 30))
        memo.store(x, np.arange(200.0))
        memo.mark_pending(space.keys(x[:3] * 0 + 1))
        back = pickle.loads(pickle.dumps(memo))
        assert back.losses == memo.losses and back.pending == memo.pending
        assert list(back.losses) == list(memo.losses)            # same order: a resumed run re-walks it alike
        np.testing.assert_array_equal(space.points(space.keys(x)), x)


@pytest.fixture(scope="module")
def huge_layer():
    """A layer whose encoded space is too large to index (its points are remembered as bytes)."""
    ctx = load_context(str(CORPUS.parent / "arches" / "simba_like" / "processed.yaml"),
                       str(CORPUS.parent / "arches" / "layers" / "mobilenetv2_pw.yaml"))
    ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch))
    assert ms.space.size >= 2 ** 63
    return ms, layer_mod.make_objective(ctx, ms, "edp")


@pytest.mark.parametrize("name", ["marl", "rl", "ga", "sa"])
def test_a_resumed_search_of_a_space_too_large_to_index_ends_as_an_uninterrupted_one(name, huge_layer, tmp_path,
                                                                                   ctrl_c):
    ms, objective = huge_layer
    spec = registry.load_mapper(name)
    ref = run_search(registry.make_searcher(spec, ms, seed=3), objective, 1_500, 100)
    path = tmp_path / "ck.pkl"
    with pytest.raises(SearchInterrupted):
        run_search(registry.make_searcher(spec, ms, seed=3), pressing_ctrl_c(objective, 7), 1_500, 100,
                   checkpoint=Checkpoint(path, key="run"))
    ck = Checkpoint(path, key="run")
    res = run_search(registry.make_searcher(spec, ms, seed=3), objective, 1_500, 100, checkpoint=ck)
    assert ck.resumed_from == 700 and same_result(res, ref)


def test_a_stop_during_the_last_batch_leaves_a_complete_search(layer, ctrl_c):
    """Ctrl-C while the final batch is evaluated: the batch finishes and the budget is spent, so
    the result is complete, not interrupted."""
    ms, objective = layer
    ref = run_search(registry.make_searcher("ga", ms, seed=1), objective, 500, 100)
    res = run_search(registry.make_searcher("ga", ms, seed=1), pressing_ctrl_c(objective, 5), 500, 100)
    assert not res.interrupted and same_result(res, ref)


def test_a_searcher_run_again_with_a_larger_budget_plans_for_it(layer):
    ms, objective = layer
    s = registry.make_searcher("marl", ms, seed=0)
    run_search(s, objective, 300, 100)
    assert s.budget == 300
    run_search(s, objective, 900, 100)
    assert s.budget == 900 and s.samples == 900


def test_snapshot_bookkeeping(layer, tmp_path, monkeypatch):
    """The time spent before a resume counts in the resumed run; a snapshot of another coexplore
    version has no usable key (a folder holding one is not another run's); discarding removes
    what a killed save left too."""
    import coexplore
    from coexplore.search.checkpoint import snapshot_key
    ms, objective = layer
    path = tmp_path / "ck.pkl"
    ck = Checkpoint(path, key="run-a", every_s=0)
    s = registry.make_searcher("ga", ms, seed=0)
    run_search(s, objective, 200, 100)
    ck.elapsed_before = 12.5                   # as if 12.5 s were spent before this part of the run
    ck.save(s, {"best_x": s.best_x, "best_loss": s.best_loss, "best_tie": np.inf, "lexicographic": False,
                "history": []})
    assert snapshot_key(path) == "run-a"
    again = Checkpoint(path, key="run-a")
    assert again.restore(registry.make_searcher("ga", ms, seed=0)) is not None
    assert again.elapsed() >= 12.5 and again.resumed_from == 200
    monkeypatch.setattr(coexplore, "__version__", "0.0.0-other")
    assert snapshot_key(path) is None
    monkeypatch.undo()
    stray = path.with_name(f"{path.name}.4242.tmp")
    stray.write_bytes(b"half a snapshot")
    Checkpoint(path, key="run-a").discard()
    assert not path.exists() and not stray.exists()


@pytest.mark.parametrize("earlier_interrupted", [True, False])
def test_a_kept_earlier_result_keeps_the_search_state_only_while_it_can_still_improve(tmp_path, capsys,
                                                                                       earlier_interrupted):
    """A rerun stopped before the result already there: that result stays; the saved search state
    stays too when that result was itself interrupted (the run can still be finished), and goes when
    it was complete (continuing would repeat a finished search)."""
    import json as _json
    from coexplore.cli.paths import keeps_earlier
    run = {"budget": 2000, "seed": 0}
    result = tmp_path / "result.json"
    result.write_text(_json.dumps({"run": run, "samples": 1000, "interrupted": earlier_interrupted}))
    ck = Checkpoint(tmp_path / ".checkpoint.pkl", key="run")
    ck.path.write_bytes(b"state")
    assert keeps_earlier(result, run, 500, "map", ck)
    assert ck.path.exists() == earlier_interrupted
    assert "kept" in capsys.readouterr().err


@pytest.mark.parametrize("searcher", ["marl", "ga", "random"])
def test_a_snapshot_on_a_large_mapspace_says_whose_it_is(searcher, tmp_path):
    """On a real layer the memory of asked points is stored as rows of the space (too large to
    index), which only the space rebuilds: the run key is still read without it."""
    from coexplore.search.checkpoint import snapshot_key
    arch = CORPUS / "arches" / "simba_like" / "processed.yaml"
    ctx = load_context(arch, CORPUS / "layers" / "resnet50_res3a_2b.yaml")
    ms = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch))
    s = registry.make_searcher(searcher, ms, seed=0)
    run_search(s, lambda x: np.ones(len(x)), 100, 100)
    assert isinstance(next(iter(s._memo.losses)) if hasattr(s, "_memo") else b"", bytes)
    ck = Checkpoint(tmp_path / "ck.pkl", key="run-b", every_s=0)
    ck.save(s, {"best_x": s.best_x, "best_loss": s.best_loss, "best_tie": np.inf, "lexicographic": False,
                "history": []})
    assert snapshot_key(tmp_path / "ck.pkl") == "run-b"
    again = registry.make_searcher(searcher, ms, seed=0)
    assert Checkpoint(tmp_path / "ck.pkl", key="run-b").restore(again) is not None and again.samples == 100


def test_an_explicit_out_holding_another_map_run_s_interrupted_search_is_refused(tmp_path, monkeypatch, capsys,
                                                                                 ctrl_c):
    """The saved state of an interrupted `map` run (seed 11) on a real layer in --out is not lost to a
    run of other settings (seed 12): refused, naming what differs; the first run resumes from it."""
    arch = CORPUS / "arches" / "simba_like" / "processed.yaml"
    layer = CORPUS / "layers" / "resnet50_res3a_2b.yaml"
    out = tmp_path / "o"
    common = [str(arch), str(layer), "--searcher", "marl", "--budget", "3000", "--no-cache", "--out", str(out)]
    real = layer_mod.make_objective
    monkeypatch.setattr(layer_mod, "make_objective", lambda *a: pressing_ctrl_c(real(*a), 3))
    assert main(["map", *common, "--seed", "11"]) == 130
    monkeypatch.setattr(layer_mod, "make_objective", real)
    saved = (out / ".checkpoint.pkl").read_bytes()
    capsys.readouterr()
    assert main(["map", *common, "--seed", "12"]) == 2
    err = capsys.readouterr().err
    assert "holds the saved search state of another run" in err and "settings seed" in err
    assert (out / ".checkpoint.pkl").read_bytes() == saved
    assert main(["map", *common, "--seed", "11"]) == 0
    assert "resuming the interrupted run from its checkpoint at 300 samples" in capsys.readouterr().err
