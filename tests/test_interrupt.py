"""Ctrl-C keeps the work done: `run_search` hands back the best so far, `coexplore map` and
`coexplore schedule` write it (marked interrupted, never cached) and exit 130."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import coexplore.search.layer as layer_mod
from coexplore.cli.main import main
from coexplore.search.base import SearchInterrupted, run_search
from coexplore.search.random_search import RandomSearch
from coexplore.search.space import DiscreteSpace
from coexplore.system.encoding import MakespanObjective
from coexplore.system.tables import load_table

from conftest import CORPUS

ARCH = CORPUS / "arches" / "eyeriss_like" / "processed.yaml"
LAYER = CORPUS / "layers" / "tiny_conv.yaml"
TABLE = Path(__file__).parent / "data" / "magma" / "tables" / "batch_mix" / "S3" / "insts0.csv"


def interrupting(objective, calls: int, seen: list):
    """objective that records what it returned and raises KeyboardInterrupt on call `calls + 1`."""
    def f(batch):
        if len(seen) == calls:
            raise KeyboardInterrupt
        out = np.asarray(objective(batch), dtype=float)
        seen.append((np.array(batch, copy=True), out))
        return out
    return f


def test_run_search_returns_the_best_of_the_batches_evaluated():
    space = DiscreteSpace(np.array([7, 5, 9, 4]), ["a", "b", "c", "d"])
    w = np.array([3.0, -1.0, 2.0, 0.5])

    def loss(X):
        out = (X * w).sum(axis=1) % 11
        return np.where(X[:, 0] == 6, np.inf, out)  # some invalid candidates too
    seen = []
    with pytest.raises(SearchInterrupted) as info:
        run_search(RandomSearch(space, seed=1), interrupting(loss, 3, seen), budget=10_000, batch_size=40)
    res = info.value.result
    assert res.interrupted and res.samples == 3 * 40 and res.history[-1][0] == 3 * 40
    X = np.concatenate([b for b, _ in seen])
    L = np.concatenate([v for _, v in seen])
    assert res.best_loss == L.min()
    assert loss(res.best_x[None])[0] == L.min()
    # the history is the best so far, read as a step function, at every batch evaluated
    def best_at(s):
        return [b for n, b in res.history if n <= s][-1]
    cummin = np.minimum.accumulate([v.min() for _, v in seen])
    assert [best_at(40 * (k + 1)) for k in range(3)] == list(cummin)
    assert res.history[-1][1] == L.min() and np.all(np.isin(res.best_x, X))
    # a KeyboardInterrupt that nobody catches still stops the caller as before
    assert isinstance(info.value, KeyboardInterrupt)


def test_map_writes_the_best_so_far_and_exits_130(tmp_path, monkeypatch, capsys):
    seen = []
    real = layer_mod.make_objective
    monkeypatch.setattr(layer_mod, "make_objective", lambda *a: interrupting(real(*a), 4, seen))
    out, cache = tmp_path / "o", tmp_path / "c.sqlite"
    rc = main(["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "100000",
               "--batch-size", "50", "--out", str(out), "--cache", str(cache), "--json"])
    assert rc == 130
    res = json.loads(capsys.readouterr().out)
    assert res["interrupted"] is True and res["samples"] == 4 * 50
    best = min(float(v.min()) for _, v in seen)   # EDP of the best candidate evaluated
    assert res["best"]["edp_J_cycle"] == pytest.approx(best, rel=1e-12)
    assert json.loads((out / "result.json").read_text())["interrupted"] is True
    # the written mapping is valid and `coexplore evaluate` gives the reported numbers
    monkeypatch.undo()
    rc = main(["evaluate", str(ARCH), str(LAYER), res["mapping_file"], "--json"])
    assert rc == 0
    got = json.loads(capsys.readouterr().out)
    assert got["valid"] and got["edp_J_cycle"] == res["best"]["edp_J_cycle"]
    # a partial search is never cached: the same command now runs the whole budget
    rc = main(["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "300",
               "--batch-size", "50", "--out", str(out), "--cache", str(cache), "--json"])
    again = json.loads(capsys.readouterr().out)
    assert rc == 0 and again["samples"] == 300 and not again["cached"] and "interrupted" not in again


def test_map_interrupted_by_sigint(tmp_path):
    """A real Ctrl-C (SIGINT) in the middle of a long search."""
    out = tmp_path / "o"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TQDM_MININTERVAL": "0.5"}   # a bar line every 0.5 s
    p = subprocess.Popen([sys.executable, "-m", "coexplore.cli.main", "map", str(ARCH), str(LAYER),
                          "--searcher", "random", "--budget", "100000000", "--out", str(out), "--no-cache"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))   # (as a terminal's)
    try:
        # wait for the progress bar to show a best value (the search loop is running)
        buf = ""
        t0 = time.time()
        while "EDP[J*cycle]=" not in buf and time.time() - t0 < 120:
            buf += os.read(p.stderr.fileno(), 4096).decode(errors="replace")
        assert "EDP[J*cycle]=" in buf, buf
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, stderr
    assert "interrupted after" in stdout
    res = json.loads((out / "result.json").read_text())
    assert res["interrupted"] is True and 0 < res["samples"] < 100_000_000
    assert (out / "mapping.yaml").exists()


def test_schedule_writes_the_best_so_far_and_exits_130(tmp_path, monkeypatch, capsys):
    seen = []
    real_call = MakespanObjective.__call__

    def call(self, X):
        if len(seen) == 5:
            raise KeyboardInterrupt
        out = real_call(self, X)
        seen.append(out)
        return out
    monkeypatch.setattr(MakespanObjective, "__call__", call)
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--budget", "100000", "--json",
               "--out", str(tmp_path / "o"), "--no-plot"])
    assert rc == 130
    data = json.loads(capsys.readouterr().out)
    assert data["interrupted"] is True and data["samples"] == sum(len(v) for v in seen) < 100_000
    assert data["makespan"] == pytest.approx(min(float(v.min()) for v in seen), rel=1e-12)
    monkeypatch.undo()
    t = load_table(TABLE)
    x = np.concatenate([[t.cores.index(c) for c in data["core"]], data["priority"]])[None]
    assert MakespanObjective(t, 16)(x)[0] == pytest.approx(data["makespan"], rel=1e-12)
    assert json.loads((tmp_path / "o" / "schedule.json").read_text())["interrupted"] is True


def test_validate_interrupted_prints_the_summary_of_the_cases_done(monkeypatch, capsys):
    from coexplore.model.inputs import Context
    real = Context.evaluate_mappings
    calls = []

    def stop_at_third(self, mappings):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, mappings)

    monkeypatch.setattr(Context, "evaluate_mappings", stop_at_third)
    rc = main(["validate", str(CORPUS), "--no-progress", "--json"])
    out, err = capsys.readouterr()
    s = json.loads(out)
    assert rc == 130 and "interrupted after" in err
    assert 0 < s["cases"] == int(s["interrupted_after"].split()[0]) < 343
    assert s["validity_agrees"] == s["cases"]


def test_first_ctrl_c_lets_the_running_batch_finish(monkeypatch):
    """The first SIGINT stops the search after the batch being evaluated (counted, kept); a second
    one stops at once (that batch dropped); the usual handler is back afterwards."""
    import signal
    from coexplore.search.base import SearchInterrupted, run_search
    from coexplore.search.registry import make_searcher
    from coexplore.search.space import DiscreteSpace
    monkeypatch.setattr(signal, "getsignal", lambda s: signal.default_int_handler)   # as in a plain CLI run
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        space = DiscreteSpace(np.full(6, 10), [f"p{i}" for i in range(6)])
        for presses, kept in ((1, 300), (2, 200)):
            calls = []

            def objective(x):
                calls.append(len(x))
                if len(calls) == 3:
                    for _ in range(presses):
                        os.kill(os.getpid(), signal.SIGINT)
                        time.sleep(0.05)
                return np.asarray(x, float).sum(axis=1) + 1.0
            with pytest.raises(SearchInterrupted) as info:
                run_search(make_searcher("random", space, seed=0), objective, budget=10_000, batch_size=100)
            res = info.value.result
            assert res.interrupted and res.samples == kept and len(res.history) == kept // 100
            assert signal.signal(signal.SIGINT, signal.default_int_handler) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_an_interrupted_rerun_keeps_the_same_runs_further_result(tmp_path, monkeypatch, capsys):
    """Re-running a command from sample 0 (--restart, or after a stop that left no checkpoint) and
    stopping it sooner must not replace what the earlier run got."""
    out = tmp_path / "o"
    args = ["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "100000", "--batch-size", "50",
            "--out", str(out), "--no-cache", "--json", "--restart"]
    real = layer_mod.make_objective
    for calls in (6, 2):
        monkeypatch.setattr(layer_mod, "make_objective", lambda *a, n=calls: interrupting(real(*a), n, []))
        assert main(args) == 130
        capsys.readouterr()
    kept = json.loads((out / "result.json").read_text())
    assert kept["samples"] == 6 * 50 and kept["interrupted"] is True

    seen = []
    real_call = MakespanObjective.__call__

    def call(self, X):
        if len(seen) == limit[0]:
            raise KeyboardInterrupt
        seen.append(1)
        return real_call(self, X)
    monkeypatch.setattr(MakespanObjective, "__call__", call)
    sargs = ["schedule", "--table", str(TABLE), "--bandwidth", "16", "--budget", "100000", "--json",
             "--out", str(tmp_path / "s"), "--no-plot", "--restart"]
    limit = [6]
    assert main(sargs) == 130
    first = json.loads((tmp_path / "s" / "schedule.json").read_text())
    seen.clear()
    limit[0] = 2
    assert main(sargs) == 130
    assert "kept" in capsys.readouterr().err
    assert json.loads((tmp_path / "s" / "schedule.json").read_text()) == first


def test_ctrl_c_in_the_job_table_step_says_the_mapped_layers_are_kept(tmp_path, monkeypatch, capsys):
    import coexplore.system.from_system as from_system

    def stop(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(from_system, "system_job_table", stop)
    root = Path(__file__).resolve().parent.parent
    args = ["schedule", str(root / "arch" / "simba_2x2.yaml"), "--out", str(tmp_path / "o"), "--no-plot"]
    assert main([*args, "--cache", str(tmp_path / "c.sqlite")]) == 130
    err = capsys.readouterr().err
    assert "interrupted while mapping the layers for the job table" in err
    assert f"in the cache ({tmp_path / 'c.sqlite'}) and a rerun reuses them" in err
    assert main([*args, "--no-cache"]) == 130
    assert "with --no-cache a rerun maps every layer again" in capsys.readouterr().err


def _sigint_during(monkeypatch, module, name, presses: int = 1):
    """Replace module.name by a wrapper that sends SIGINT `presses` times, then calls the original
    (with the usual Ctrl-C handler installed, as in a plain CLI run)."""
    real = getattr(module, name)

    def wrapped(*a, **k):
        for _ in range(presses):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        return real(*a, **k)
    monkeypatch.setattr(module, name, wrapped)
    monkeypatch.setattr(signal, "getsignal", lambda s: signal.default_int_handler)


@pytest.fixture
def default_sigint():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_after_the_schedule_search_still_writes_the_complete_schedule(tmp_path, monkeypatch, capsys,
                                                                             default_sigint):
    """A Ctrl-C landing on the lower bound (after the search) waits for schedule.json and the summary."""
    import coexplore.system.schedule as sched
    _sigint_during(monkeypatch, sched, "lower_bound")
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--budget", "500", "--no-plot",
               "--no-progress", "--out", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    assert rc == 0 and "the complete schedule" in err and "makespan" in out
    data = json.loads((tmp_path / "o" / "schedule.json").read_text())
    assert data["samples"] == 500 and "interrupted" not in data
    assert not (tmp_path / "o" / ".checkpoint.pkl").exists()


@pytest.mark.parametrize("budget, interrupted", [(500, False), (100_000, True)])
def test_second_ctrl_c_while_the_schedule_is_made_writes_it_and_stops(tmp_path, monkeypatch, capsys,
                                                                      default_sigint, budget, interrupted):
    """Two Ctrl-C on the lower bound (the second would stop at once): the schedule the search ended
    with is still written (complete after a finished search; the best so far when the first Ctrl-C
    had stopped it), then the command stops (exit 130) without drawing the chart."""
    import coexplore.system.schedule as sched
    _sigint_during(monkeypatch, sched, "lower_bound", presses=2)
    if interrupted:                 # the first Ctrl-C stops the search after a few batches
        real = sched.run_search

        def stopped_early(searcher, objective, budget, **kw):
            def obj(batch, n=[0]):
                n[0] += 1
                if n[0] == 3:
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(0.05)
                return objective(batch)
            return real(searcher, obj, budget, **kw)
        monkeypatch.setattr(sched, "run_search", stopped_early)
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--budget", str(budget),
               "--no-progress", "--out", str(tmp_path / "o")])
    assert rc == 130
    data = json.loads((tmp_path / "o" / "schedule.json").read_text())
    table = load_table(TABLE)
    assert sorted(data["jobs"]) == sorted(j.name for j in table.jobs)
    assert (data["samples"] < budget) == interrupted and data.get("interrupted", False) == interrupted
    assert (tmp_path / "o" / "timeline.csv").exists() and not (tmp_path / "o" / "gantt.png").exists()


def test_ctrl_c_after_the_map_search_still_writes_the_complete_result(tmp_path, monkeypatch, capsys,
                                                                     default_sigint):
    import coexplore.cli.map as map_cli
    _sigint_during(monkeypatch, map_cli, "format_loop_nest")
    rc = main(["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "300", "--no-progress",
               "--no-cache", "--out", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    assert rc == 0 and "the complete result" in err
    data = json.loads((tmp_path / "o" / "result.json").read_text())
    assert data["samples"] == 300 and "interrupted" not in data
    assert (tmp_path / "o" / "mapping.yaml").exists() and (tmp_path / "o" / "map.txt").exists()


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_during_shutdown_keeps_the_exit_code(sig):
    """After `main` returned (its results written), a Ctrl-C or SIGTERM landing while the
    interpreter shuts down must not turn the exit code into death by that signal."""
    code = ("import atexit, os, signal, coexplore.cli.main as m\n"
            f"atexit.register(lambda: os.kill(os.getpid(), signal.{sig}))\n"
            "m.main = lambda argv=None: 0\n"
            "m.entry()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr)


def test_a_ctrl_c_while_starting_names_the_command(monkeypatch, capsys):
    import coexplore.cli.main as cli_main

    def stop(*args):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli_main, "build_parser", stop)
    assert cli_main.main(["map", "simba", "resnet50"]) == 130
    assert capsys.readouterr().err.strip() == "coexplore map: interrupted"


def test_second_ctrl_c_while_the_map_result_is_written_keeps_it(tmp_path, monkeypatch, capsys, default_sigint):
    """Two Ctrl-C while the loop nest is formatted: the complete result's files are written all the
    same, then the command stops (exit 130)."""
    import coexplore.cli.map as map_cli
    _sigint_during(monkeypatch, map_cli, "format_loop_nest", presses=2)
    rc = main(["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "300", "--no-progress",
               "--no-cache", "--out", str(tmp_path / "o")])
    assert rc == 130 and "the complete result" in capsys.readouterr().err
    data = json.loads((tmp_path / "o" / "result.json").read_text())
    assert data["samples"] == 300 and "interrupted" not in data
    assert (tmp_path / "o" / "mapping.yaml").exists() and (tmp_path / "o" / "map.txt").exists()


def test_second_ctrl_c_while_the_map_result_is_made_keeps_and_caches_it(tmp_path, monkeypatch, capsys,
                                                                        default_sigint):
    """Two Ctrl-C while map_layer re-evaluates the best mapping: the complete result is cached and
    written all the same, then the command stops (exit 130); a rerun takes it from the cache."""
    _sigint_during(monkeypatch, layer_mod, "_map_result", presses=2)
    args = ["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "300", "--no-progress",
            "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "o")]
    assert main(args) == 130 and "the complete result" in capsys.readouterr().err
    data = json.loads((tmp_path / "o" / "result.json").read_text())
    assert data["samples"] == 300 and "interrupted" not in data and not data["cached"]
    monkeypatch.undo()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    assert main(args) == 0
    again = json.loads((tmp_path / "o" / "result.json").read_text())
    assert again["cached"] and again["best"] == data["best"]


def test_holding_stops_nested_leaves_the_holding_to_the_outer_block(default_sigint):
    """A Ctrl-C inside a nested block is held until the outer block ends, which then reports it."""
    from coexplore.stops import holding_stops
    with holding_stops() as outer:
        with holding_stops() as inner:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        assert not inner.stop_now and signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    assert outer.stop_now and signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _first_press_in_the_search(monkeypatch, on_call: int = 2):
    """The first Ctrl-C during batch `on_call` of the search (it finishes, then the search stops)."""
    real = layer_mod.make_objective

    def make(*a, **k):
        f, calls = real(*a, **k), []

        def g(batch):
            calls.append(1)
            if len(calls) == on_call:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
            return f(batch)
        return g
    monkeypatch.setattr(layer_mod, "make_objective", make)


@pytest.mark.parametrize("module, name", [("coexplore.search.layer", "_map_result"),
                                          ("coexplore.cli.map", "keeps_earlier"),
                                          ("coexplore.search.base", "SearchResult")])
def test_second_ctrl_c_after_the_search_keeps_the_best_so_far(tmp_path, monkeypatch, capsys, default_sigint,
                                                             module, name):
    """Ctrl-C in the search, then again while the interrupted run's best mapping is re-evaluated
    (`_map_result`), or between the held blocks after the search ended (a user study's second SIGTERM
    10-30 ms after the first, 2 in 20 tries: in map before its writing block, in the search driver as
    it raises the interrupted result): its files are written (marked interrupted), exit 130 (user
    studies lost them: exit 130, no files or only the checkpoint)."""
    import importlib
    _first_press_in_the_search(monkeypatch)
    _sigint_during(monkeypatch, importlib.import_module(module), name, presses=1)
    rc = main(["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "1000", "--no-progress",
               "--no-cache", "--out", str(tmp_path / "o")])
    assert rc == 130
    data = json.loads((tmp_path / "o" / "result.json").read_text())
    assert data["interrupted"] and data["samples"] == 200
    assert (tmp_path / "o" / "mapping.yaml").exists() and (tmp_path / "o" / "map.txt").exists()


def test_second_ctrl_c_while_the_checkpoint_is_saved_leaves_a_whole_one(tmp_path, monkeypatch, capsys,
                                                                         default_sigint):
    """Ctrl-C in the search, then again while its state is saved: the snapshot is written whole (no
    stray .tmp) and a rerun resumes from it."""
    from coexplore.search.checkpoint import Checkpoint
    _first_press_in_the_search(monkeypatch)
    _sigint_during(monkeypatch, Checkpoint, "save", presses=1)
    args = ["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "1000", "--no-progress",
            "--no-cache", "--out", str(tmp_path / "o")]
    assert main(args) == 130
    files = sorted(p.name for p in (tmp_path / "o").iterdir())
    assert ".checkpoint.pkl" in files and not any(n.endswith(".tmp") for n in files)
    monkeypatch.undo()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    assert main(args) == 0
    assert "resum" in capsys.readouterr().err
    assert json.loads((tmp_path / "o" / "result.json").read_text())["samples"] == 1000


def test_a_stop_in_the_last_layer_searchs_batch_still_stops_schedule(tmp_path, monkeypatch, capsys):
    """A SIGTERM that lands as the job table's last layer search evaluates its last batch: that search
    ends complete, and the stop is acted on (it was forgotten, and the schedule search ran on)."""
    import shutil

    import coexplore.system.from_system as from_system
    from coexplore.stops import request_stop
    real, asked = from_system.system_job_table, []

    def then_stop(*a, **k):
        out = real(*a, **k)
        asked.append(request_stop("SIGTERM"))
        return out
    monkeypatch.setattr(from_system, "system_job_table", then_stop)
    for f in (Path(__file__).resolve().parent / "data" / "sweep").glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    rc = main(["schedule", str(tmp_path / "tiny_sweep.yaml"), "--out", str(tmp_path / "o"), "--no-plot",
               "--layer-budget", "60", "--budget", "60", "--no-progress", "--cache", str(tmp_path / "c.sqlite")])
    assert (rc, asked) == (130, [True])
    assert "interrupted while mapping the layers for the job table" in capsys.readouterr().err
    assert not (tmp_path / "o" / "schedule.json").exists()


def test_map_stopped_before_any_valid_mapping_still_prints_its_json(tmp_path, monkeypatch, capsys):
    """User study: a stop before the first batch ended left stdout empty under --json (exit 130)."""
    seen = []
    real = layer_mod.make_objective
    monkeypatch.setattr(layer_mod, "make_objective", lambda *a: interrupting(real(*a), 0, seen))
    rc = main(["map", str(ARCH), str(LAYER), "--searcher", "random", "--budget", "1000", "--batch-size", "50",
               "--out", str(tmp_path / "o"), "--no-cache", "--json"])
    res = json.loads(capsys.readouterr().out)
    assert rc == 130 and (res["interrupted"], res["best"], res["mapping_file"]) == (True, None, None)
    assert res["searcher"] == "random"


def test_interrupted_schedule_summary_says_so_on_stdout(tmp_path, monkeypatch, capsys):
    """The text summary (stdout, what a script keeps) marks a stopped search's schedule as the best so
    far, with the samples of the budget, not only stderr."""
    seen = []
    real_call = MakespanObjective.__call__

    def call(self, X):
        if len(seen) == 3:
            raise KeyboardInterrupt
        seen.append(real_call(self, X))
        return seen[-1]
    monkeypatch.setattr(MakespanObjective, "__call__", call)
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--budget", "100000",
               "--out", str(tmp_path / "o"), "--no-plot"])
    out = capsys.readouterr().out
    assert rc == 130
    done = sum(len(v) for v in seen)
    assert f"interrupted after {done:,} of 100,000 samples: this is the best schedule so far" in out
