"""The SQLite result cache: keys, hits, concurrency, crash safety, unreadable files, CLI."""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from coexplore.cli import cache as cache_cli
from coexplore.errors import CoexploreError
from coexplore.model.cache import (CacheUnreadableError, ResultCache, cache_key,
                                   default_cache_path)

REPO = Path(__file__).resolve().parents[1]


def _core(name: str, glb_kib: int = 64) -> dict:
    return {"name": name, "levels": [
        {"name": "DRAM", "class": "DRAM", "width": 64},
        {"name": "GlobalBuffer", "class": "SRAM", "depth": glb_kib * 1024 // 8, "width": 64},
        {"name": "PE", "mesh": [4, 4], "macs": 1}]}


def _layer(c: int, m: int) -> dict:
    return {"C": c, "M": m, "R": 3, "S": 3, "N": 1, "P": 14, "Q": 14,
            "Wstride": 1, "Hstride": 1, "Wdilation": 1, "Hdilation": 1}


def _parts(core: dict, layer: dict, seed: int = 0) -> dict:
    return dict(core=core, layer=layer, searcher={"name": "random", "budget": 100}, seed=seed,
                backend="builtin", backend_version="0.1.0")


def _evaluate(core: dict, layer: dict) -> dict:
    """A deterministic stand-in evaluation with a record of the documented shape."""
    macs = 1
    for d in "CMRSNPQ":
        macs *= layer[d]
    glb = core["levels"][1]["depth"]
    return {"energy": macs * 2.5 + glb, "cycles": macs // 16,
            "levels": [{"name": lv["name"], "energy": float(i + 1)}
                       for i, lv in enumerate(core["levels"])],
            "mapping": {"mapping": [{"target": "DRAM", "type": "temporal", "factors": "C1"}]}}


# ------------------------------------------------------------------------------- keys

def test_key_is_canonical_and_covers_every_part():
    core, layer = _core("a"), _layer(64, 64)
    k = cache_key(**_parts(core, layer))
    assert len(k) == 64 and int(k, 16) >= 0
    reordered = dict(reversed(list(_parts(core, layer).items())))
    reordered["layer"] = dict(reversed(list(layer.items())))
    assert cache_key(**reordered) == k
    as_float = _parts(core, layer)
    as_float["layer"] = {**layer, "C": 64.0}
    assert cache_key(**as_float) == k                     # 64.0 and 64 are the same size
    changed = [
        _parts(core, layer, seed=1),
        _parts(core, _layer(64, 65)),
        _parts(_core("a", glb_kib=128), layer),
        {**_parts(core, layer), "backend_version": "0.1.1"},
        {**_parts(core, layer), "backend": "timeloop"},
        {**_parts(core, layer), "searcher": {"name": "random", "budget": 101}},
        {**_parts(core, layer), "objective": "edp"},    # extra parts are hashed too
    ]
    keys = {cache_key(**p) for p in changed}
    assert len(keys) == len(changed) and k not in keys


def test_key_requires_the_six_parts():
    parts = _parts(_core("a"), _layer(8, 8))
    del parts["seed"]
    with pytest.raises(ValueError, match="seed"):
        cache_key(**parts)
    with pytest.raises(ValueError, match="finite"):
        cache_key(**{**_parts(_core("a"), _layer(8, 8)), "seed": float("nan")})


# ------------------------------------------------------------------------------- hits

def test_second_identical_evaluation_is_served_from_cache(tmp_path):
    core, layer = _core("a"), _layer(32, 64)
    calls = []

    def compute():
        calls.append(1)
        return _evaluate(core, layer)

    with ResultCache(tmp_path / "c.sqlite") as cache:
        first = cache.get_or_compute(_parts(core, layer), compute)
        second = cache.get_or_compute(_parts(core, layer), compute)
        assert len(calls) == 1
        assert second == first == json.loads(json.dumps(_evaluate(core, layer)))
        assert (cache.hits, cache.misses) == (1, 1)
    # a new process (new object) is served too, and the counters persisted
    with ResultCache(tmp_path / "c.sqlite") as cache:
        assert cache.get_or_compute(_parts(core, layer), compute) == first
        assert len(calls) == 1
        s = cache.stats()
        assert (s.entries, s.hits, s.misses) == (1, 2, 1)
        assert s.hit_rate == pytest.approx(2 / 3)
        assert s.by_backend == {"builtin 0.1.0": 1}
        assert s.size_bytes > 0


def test_editing_one_buffer_invalidates_exactly_that_cores_entries(tmp_path):
    cores = {"a": _core("a", 64), "b": _core("b", 64)}
    layers = [_layer(16, 32), _layer(32, 32), _layer(64, 16)]
    computed = []
    with ResultCache(tmp_path / "c.sqlite") as cache:
        def run_all():
            for cname, core in cores.items():
                for i, layer in enumerate(layers):
                    cache.get_or_compute(_parts(core, layer),
                                         lambda: computed.append((cname, i)) or
                                         _evaluate(core, layer))
        run_all()
        assert len(computed) == 6
        computed.clear()
        cores["a"] = _core("a", 128)                   # edit one buffer size of core a
        run_all()
        assert sorted(computed) == [("a", 0), ("a", 1), ("a", 2)]
        assert len(cache) == 9


def test_put_get_roundtrip_and_replace(tmp_path):
    with ResultCache(tmp_path / "c.sqlite") as cache:
        assert cache.get("k" * 64) is None
        rec = {"energy": float("inf"), "cycles": 7, "levels": {"DRAM": [1, 2]}, "valid": False}
        cache.put("k" * 64, rec, meta={"backend": "builtin"})
        got = cache.get("k" * 64)
        assert got["energy"] == float("inf") and got["levels"] == {"DRAM": [1, 2]}
        cache.put("k" * 64, {"energy": 3.0})
        assert cache.get("k" * 64) == {"energy": 3.0} and len(cache) == 1
        with pytest.raises(TypeError):
            cache.put("x", [1, 2])                       # records are dicts
        assert len(cache) == 1


def test_default_path_env_var_and_explicit_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COEXPLORE_CACHE", raising=False)
    assert default_cache_path() == Path("results/cache.sqlite")
    ResultCache().close()
    assert (tmp_path / "results" / "cache.sqlite").is_file()
    monkeypatch.setenv("COEXPLORE_CACHE", str(tmp_path / "env.sqlite"))
    ResultCache().close()
    assert (tmp_path / "env.sqlite").is_file()
    ResultCache(tmp_path / "explicit.sqlite").close()
    assert (tmp_path / "explicit.sqlite").is_file()


# ------------------------------------------------------------------------ concurrency

def _writer(path: str, tag: str, n: int, barrier) -> None:
    cache = ResultCache(path)
    barrier.wait()
    for i in range(n):
        key = cache_key(core={"w": tag}, layer={"i": i}, searcher=None, seed=0,
                        backend="test", backend_version="1")
        cache.put(key, {"energy": float(i), "cycles": i, "writer": tag}, meta={"backend": "test"})
        if i % 50 == 0:
            cache.get(key)                               # interleave reads and counter writes
    cache.close()


def test_two_processes_writing_1000_entries_each_lose_none(tmp_path):
    path = str(tmp_path / "c.sqlite")
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2, timeout=60)     # a writer that never starts fails the test, never hangs it
    procs = [ctx.Process(target=_writer, args=(path, tag, 1000, barrier), daemon=True) for tag in "ab"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with ResultCache(path) as cache:
        assert len(cache) == 2000
        for tag in "ab":
            for i in (0, 1, 500, 999):
                key = cache_key(core={"w": tag}, layer={"i": i}, searcher=None, seed=0,
                                backend="test", backend_version="1")
                assert cache.get(key, count=False) == {"energy": float(i), "cycles": i,
                                                       "writer": tag}
        assert cache.stats().hits == 2 * 20                 # 20 counted reads per writer
        assert cache.check() == "ok"


KILLED_WRITER = textwrap.dedent("""
    import sys, time
    from coexplore.model.cache import ResultCache
    cache = ResultCache(sys.argv[1])
    for i in range(50):
        cache.put(f"committed-{i}", {"energy": float(i), "cycles": i})
    def pending():
        for i in range(3000):                          # ~12 MB: spills into the WAL file
            yield f"pending-{i}", {"energy": 1.0, "cycles": 1, "blob": "x" * 4000}, None
        print("ready", flush=True)                     # all inserted, not committed
        time.sleep(120)
        yield "never", {"energy": 0.0}, None
    cache.put_many(pending())
""")


def test_writer_killed_mid_transaction_leaves_committed_entries(tmp_path):
    path = tmp_path / "c.sqlite"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(path)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "ready", proc.stderr.read()
        assert Path(f"{path}-wal").stat().st_size > 1_000_000   # uncommitted frames on disk
        with ResultCache(path) as reader:          # readers are not blocked by the writer
            assert len(reader) == 50
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    with ResultCache(path) as cache:
        assert cache.check() == "ok"
        keys = cache.keys()
        assert sorted(keys) == sorted(f"committed-{i}" for i in range(50))
        assert cache.get("committed-49") == {"energy": 49.0, "cycles": 49}
        cache.put("after", {"energy": 1.0})               # and it is writable again
        assert len(cache) == 51
    con = sqlite3.connect(path)                            # plain sqlite agrees
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()


# ---------------------------------------------------------------- unreadable files, CLI

def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    cache_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_foreign_sqlite_file_gives_clear_error_and_clear_moves_it_aside(tmp_path, capsys):
    foreign = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE results (key TEXT, record TEXT)")
    con.commit()
    con.close()
    original = foreign.read_bytes()
    with pytest.raises(CacheUnreadableError) as err:
        ResultCache(foreign)
    assert isinstance(err.value, CoexploreError)
    assert err.value.file == str(foreign)
    assert "coexplore cache clear" in err.value.message
    assert _cli(["cache", "clear", "--cache", str(foreign)]) == 0
    assert "moved unreadable file" in capsys.readouterr().out
    assert (tmp_path / "foreign.sqlite.unreadable-1").read_bytes() == original   # nothing lost
    with ResultCache(foreign) as cache:
        assert len(cache) == 0
        cache.put("k", {"energy": 1.0})


def test_a_file_that_is_not_sqlite_is_never_touched(tmp_path):
    for name, data in (("garbage.sqlite", b"this is not sqlite\n" * 500),
                       ("layer.yaml", b"problem:\n  instance: {C: 3}\n")):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(CoexploreError) as err:
            ResultCache(path).get("k")
        assert "not an SQLite database" in err.value.message and "cache clear" not in err.value.message
        with pytest.raises(CoexploreError):
            _cli(["cache", "clear", "--cache", str(path)])
        assert path.read_bytes() == data
        assert not list(tmp_path.glob(name + ".unreadable*"))


def test_damaged_pages_are_reported(tmp_path):
    path = tmp_path / "c.sqlite"
    with ResultCache(path) as cache:
        cache.put_many((f"k{i}", {"energy": float(i), "pad": "y" * 3000}, None)
                       for i in range(200))
        con = sqlite3.connect(path)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
    data = bytearray(path.read_bytes())
    page = 4096
    for off in range(2 * page, len(data), 3 * page):      # scribble over many b-tree pages
        data[off:off + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    with pytest.raises(CacheUnreadableError):
        with ResultCache(path) as cache:
            for i in range(200):
                cache.get(f"k{i}")
            assert cache.check() == "ok"
            raise AssertionError("damage not detected")
    assert _cli(["cache", "clear", "--cache", str(path)]) == 0
    assert len(ResultCache(path)) == 0


def test_cli_stats_and_clear(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    assert _cli(["cache", "stats", "--cache", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exists"] is False
    with ResultCache(path) as cache:
        for i in range(5):
            cache.put(f"k{i}", {"energy": float(i)}, meta={"backend": "builtin",
                                                           "backend_version": "0.1.0"})
        for i in range(8):                                   # 5 hits, 3 misses
            cache.get(f"k{i}")
    assert _cli(["cache", "stats", "--cache", str(path), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["entries"], s["hits"], s["misses"]) == (5, 5, 3)
    assert s["hit_rate"] == pytest.approx(5 / 8)
    assert s["integrity"] == "ok" and s["size_bytes"] > 0
    assert _cli(["cache", "stats", "--cache", str(path)]) == 0
    text = capsys.readouterr().out
    assert "entries    5" in text and "62.5 %" in text
    assert _cli(["cache", "clear", "--cache", str(path)]) == 0
    assert "removed 5 entries" in capsys.readouterr().out
    with ResultCache(path) as cache:
        s2 = cache.stats()
        assert (s2.entries, s2.hits, s2.misses) == (0, 0, 0)


def test_cache_command_is_registered():
    from coexplore.cli import main
    assert "cache" in main.COMMANDS


def _use_inherited(cache: ResultCache, q) -> None:
    cache.put("from-child", {"energy": 2.0})
    q.put((cache.get("from-parent"), cache.hits))
    cache.close()


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs fork")
def test_forked_child_reconnects_and_does_not_double_count(tmp_path):
    with ResultCache(tmp_path / "c.sqlite") as cache:
        cache.put("from-parent", {"energy": 1.0})
        cache.get("from-parent")                          # 1 unsaved hit in the parent
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=_use_inherited, args=(cache, q))
        p.start()
        got, _ = q.get(timeout=60)
        p.join(60)
        assert p.exitcode == 0 and got == {"energy": 1.0}
        assert cache.get("from-child", count=False) == {"energy": 2.0}
        s = cache.stats()
        assert (s.hits, s.misses) == (2, 0)               # parent's 1 + child's 1


def test_clear_while_another_connection_reads(tmp_path):
    path = tmp_path / "c.sqlite"
    with ResultCache(path) as writer, ResultCache(path) as reader:
        writer.put_many((f"k{i}", {"energy": float(i)}, None) for i in range(100))
        db = reader._db()
        db.execute("BEGIN")                                  # a reader holding a snapshot
        assert reader.get("k7") == {"energy": 7.0}
        t0 = time.perf_counter()
        assert writer.clear() == 100                         # not blocked by the reader
        assert time.perf_counter() - t0 < 10
        assert reader.get("k7") == {"energy": 7.0}           # its snapshot is unchanged
        db.execute("COMMIT")
        assert reader.get("k7") is None and len(reader) == 0


@pytest.mark.parametrize("sqlite_says, said", [
    ("attempt to write a readonly database", "cannot be written"),
    ("unable to open database file", "cannot be opened"),      # e.g. under /proc, where even root creates nothing
])
def test_a_cache_sqlite_cannot_use_names_the_option(tmp_path, sqlite_says, said):
    import sqlite3
    from coexplore.errors import CoexploreError
    from coexplore.model.cache import ResultCache
    cache = ResultCache(tmp_path / "c.sqlite")
    with pytest.raises(CoexploreError) as e:
        with cache._errors():
            raise sqlite3.OperationalError(sqlite_says)
    assert (e.value.key, e.value.option) == ("cache", "--cache") and "--no-cache" in str(e.value) and said in str(e.value)
    cache.close()


def test_clear_of_a_missing_cache_creates_nothing(tmp_path, capsys):
    path = tmp_path / "sub" / "none.sqlite"
    assert _cli(["cache", "clear", "--cache", str(path)]) == 0
    assert "nothing to clear" in capsys.readouterr().out
    assert not path.exists() and not path.parent.exists()


def test_a_cache_file_we_may_not_write_is_read_only(tmp_path, monkeypatch, capsys):
    """A shared read-only cache: its hits are used, new results are skipped (the run does not fail).
    Permissions are simulated (tests may run as root, who may write anything)."""
    from coexplore.cli.main import main
    root = Path(__file__).parent / "data" / "timeloop_corpus"
    path = tmp_path / "shared.sqlite"
    args = ["map", str(root / "arches" / "eyeriss_like" / "processed.yaml"), str(root / "layers" / "tiny_conv.yaml"),
            "--budget", "300", "--cache", str(path), "--json"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    first = json.loads(capsys.readouterr().out)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **k: False if Path(p) == path and mode == os.W_OK
                        else real_access(p, mode, **k))
    with ResultCache(path) as cache:
        assert cache.read_only and len(cache) == 1
        cache.put("new", {"energy": 1.0})                 # skipped, no error
        assert cache.get("new") is None
    assert main([*args, "--out", str(tmp_path / "b")]) == 0    # the stored result is a hit
    out = capsys.readouterr()
    again = json.loads(out.out)
    assert again["cached"] and again["best"] == first["best"] and "is read-only" in out.err
    assert main([*args[:-3], "--seed", "1", "--cache", str(path), "--json", "--out", str(tmp_path / "c")]) == 0
    capsys.readouterr()
    monkeypatch.undo()
    with ResultCache(path) as cache:
        assert len(cache) == 1                              # the seed-1 run was not stored


def _lock_folder(folder: Path):
    """Make `folder` unwritable for this process, for real (SQLite must fail to create files in it):
    chmod for a normal user, the immutable attribute for root; returns the undo, or skips."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return lambda: folder.chmod(0o755)
    done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True)
    if done.returncode != 0 or os.access(folder, os.W_OK):
        pytest.skip("cannot make a folder unwritable for root here (no chattr)")
    return lambda: subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_cache_in_a_folder_we_may_not_write_is_read_only(tmp_path):
    """SQLite's WAL needs files beside the database: in a read-only folder the cache is read (as
    immutable), stores are skipped, and a new cache there is a one-line error naming --cache."""
    folder = tmp_path / "shared"
    folder.mkdir()
    with ResultCache(folder / "c.sqlite") as cache:
        cache.put("k", {"energy": 2.5})
    undo = _lock_folder(folder)
    try:
        with ResultCache(folder / "c.sqlite") as cache:
            assert cache.read_only and len(cache) == 1 and cache.get("k") == {"energy": 2.5}
            assert cache.put_many([("k2", {"energy": 1.0}, None)]) == 0 and cache.get("k2") is None
        with pytest.raises(CoexploreError) as e:
            ResultCache(folder / "new.sqlite")
        assert (e.value.key, e.value.option) == ("cache", "--cache") and "--no-cache" in str(e.value) and "not writable" in str(e.value)
        assert not (folder / "new.sqlite").exists()
    finally:
        undo()


def test_a_read_only_wal_cache_in_a_read_only_folder_sqlite_calls_readonly_is_read(tmp_path, monkeypatch):
    """Some SQLite versions open a WAL file of a read-only folder `mode=ro` with "attempt to write a
    readonly database" (not "unable to open"): read as immutable all the same (as docs/readme_cache.md says)."""
    import coexplore.model.cache as cache_mod
    folder = tmp_path / "shared"
    folder.mkdir()
    with ResultCache(folder / "c.sqlite") as cache:
        cache.put("k", {"energy": 2.5})
    real_connect, tried = sqlite3.connect, []

    def connect(database, *args, **kwargs):
        tried.append(str(database))
        if "mode=ro" in str(database) and "immutable" not in str(database):
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return real_connect(database, *args, **kwargs)
    undo = _lock_folder(folder)
    try:
        monkeypatch.setattr(cache_mod.os, "access", lambda p, mode, **k: False if mode == os.W_OK else True)
        monkeypatch.setattr(cache_mod.sqlite3, "connect", connect)
        with ResultCache(folder / "c.sqlite") as cache:
            assert cache.read_only and cache.get("k") == {"energy": 2.5}
        assert any("immutable=1" in u for u in tried)
    finally:
        monkeypatch.undo()
        undo()


def test_a_cache_whose_wal_files_we_may_not_write_is_read_only(tmp_path, monkeypatch):
    """Another user's -wal/-shm beside a writable file: SQLite could not write them, so read-only
    (permissions simulated, as tests may run as root)."""
    path = tmp_path / "c.sqlite"
    with ResultCache(path) as cache:
        cache.put("k", {"energy": 1.0})
        assert Path(f"{path}-wal").exists()           # WAL mode keeps the companions while open
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **k: False if str(p).endswith("-wal") and mode == os.W_OK
                            else real_access(p, mode, **k))
        with ResultCache(path) as other:
            assert other.read_only and other.get("k") == {"energy": 1.0}
            assert other.unwritable() == f"{path}-wal"


def test_the_read_only_note_names_a_companion_left_unwritable(tmp_path, monkeypatch, capsys):
    """User study: a reader without write access left c.sqlite-shm only it could write; once the file
    was writable again, writers were still read-only, and the note did not say why. It names the file,
    and a companion beside a writable database as one to remove when no run uses the cache."""
    from coexplore.cli.paths import open_cache
    path = tmp_path / "c.sqlite"
    with ResultCache(path) as cache:
        cache.put("k", {"energy": 1.0})
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **k: False if str(p).endswith("-shm") and mode == os.W_OK
                            else real_access(p, mode, **k))
        other = open_cache(path, "map")
        err = capsys.readouterr().err
        assert other.read_only and f"({path}-shm is not writable; left by a run without write access? remove it" in err
        other.close()
        monkeypatch.setattr(os, "access", lambda p, mode, **k: False if str(p) == str(path) and mode == os.W_OK
                            else real_access(p, mode, **k))
        other = open_cache(path, "map")
        err = capsys.readouterr().err
        assert f"({path} is not writable)" in err and "remove it" not in err
        other.close()


def _open_at_once(path: str, barrier, results) -> None:
    barrier.wait()
    try:
        ResultCache(path).close()
        results.put("ok")
    except Exception as exc:                          # noqa: BLE001 (what a process met is the test's result)
        results.put(repr(exc)[:200])


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs fork")
def test_processes_opening_a_new_cache_at_once_all_open_it(tmp_path):
    """A process that read the file between another's schema tables and its header saw tables
    without coexplore's id and refused the file as another program's (about 1 open in 9, 4 at once);
    the two are now read as one snapshot."""
    ctx = mp.get_context("fork")
    said = []
    for i in range(40):
        path = str(tmp_path / f"c{i}.sqlite")
        barrier, results = ctx.Barrier(4, timeout=60), ctx.Queue()
        procs = [ctx.Process(target=_open_at_once, args=(path, barrier, results)) for _ in range(4)]
        for p in procs:
            p.start()
        said += [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(60)
    assert said == ["ok"] * 160, [s for s in said if s != "ok"][:3]


def test_a_cache_locked_when_the_result_is_stored_keeps_the_finished_search(tmp_path):
    """Another process holding the cache locked past the timeout just as the search ends: the
    result is returned (with a warning that it is not cached), not thrown away."""
    import sqlite3
    import warnings

    from coexplore.errors import CoexploreWarning
    from coexplore.model.cache import ResultCache
    from coexplore.model.inputs import load_context
    from coexplore.search.layer import map_layer
    from conftest import CORPUS
    ctx = load_context(CORPUS / "arches" / "simba_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml")
    cache = ResultCache(tmp_path / "c.sqlite", timeout=0.3)
    real, held = cache.put, []

    def put(*args, **kwargs):
        other = sqlite3.connect(tmp_path / "c.sqlite", isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        held.append(other)
        try:
            return real(*args, **kwargs)
        finally:
            other.execute("ROLLBACK")
            other.close()
    cache.put = put
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        res = map_layer(ctx, {}, "random", 60, seed=0, cache=cache)
    assert held and res.best is not None and res.samples == 60
    assert any(issubclass(w.category, CoexploreWarning) and "not in the cache" in str(w.message) for w in said)
    assert len(list(cache.keys())) == 0
    cache.close()


def test_store_warns_instead_of_failing_for_one_entry_or_many(tmp_path):
    """The parallel paths (schedule/sweep --jobs, --ray) store through the same `store`."""
    import warnings

    from coexplore.errors import CoexploreWarning
    from coexplore.model.cache import store

    class Locked:
        def put(self, *a, **k):
            raise CoexploreError("result cache stayed locked by another process")
        put_many = put
    for kwargs in ({"key": "k", "value": {"x": 1}}, {"many": [("k", {"x": 1}, None)]}):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            store(Locked(), **kwargs)
        assert [issubclass(w.category, CoexploreWarning) and "stayed locked" in str(w.message) for w in said] == [True]
    with ResultCache(tmp_path / "c.sqlite") as cache:
        store(cache, many=[("a", {"x": 2}, None)])
        store(cache, "b", {"x": 3})
        assert cache.get("a") == {"x": 2} and cache.get("b") == {"x": 3}


def _damaged_copy(tmp_path) -> Path:
    """A cache whose file opens (header and schema fine) but one of whose pages is scribbled over."""
    path = tmp_path / "c.sqlite"
    with ResultCache(path) as cache:
        cache.put_many((f"k{i}", {"energy": float(i), "pad": "y" * 3000}, None) for i in range(40))
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(path.read_bytes())
    data[3 * 4096:4 * 4096] = b"\xff" * 4096
    path.write_bytes(bytes(data))
    return path


def test_stats_of_a_damaged_cache_is_an_error_as_for_every_command(tmp_path, capsys):
    """User study: `cache stats` printed SQLite's multi-line report under 'integrity' and exited 0
    on a file `map` refuses."""
    path = _damaged_copy(tmp_path)
    with pytest.raises(CacheUnreadableError) as err:
        _cli(["cache", "stats", "--cache", str(path)])
    assert err.value.file == str(path) and "coexplore cache clear" in err.value.message
    assert "\n" not in err.value.format()


def test_a_device_or_pipe_is_no_cache_and_nothing_is_written_beside_it(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for argv in (["cache", "stats", "--cache", str(fifo)], ["cache", "clear", "--cache", str(fifo)]):
        with pytest.raises(CoexploreError) as err:
            _cli(argv)
        assert "not a regular file" in err.value.message and "--no-cache" not in (err.value.expected or "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_stats_reads_edited_rows_and_counts_no_index_file(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    with ResultCache(path) as cache:
        cache.put("k", {"energy": 1.0})
    con = sqlite3.connect(path)
    con.execute("UPDATE results SET created = 'abc'")
    con.commit()
    con.close()
    assert _cli(["cache", "stats", "--cache", str(path), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["entries"] == 1 and s["oldest"] is None
    wal = Path(f"{path}-wal")
    assert s["size_bytes"] == path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    path.write_bytes(b"")                                    # an empty file: it exists, 0 entries
    assert _cli(["cache", "stats", "--cache", str(path), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["exists"], s["entries"]) == (True, 0)


def test_a_damaged_layer_entry_is_searched_again_and_replaced(tmp_path, capsys):
    """User study: a record edited into another shape (a list; a point out of the space; no
    history) gave a traceback (exit 3), or an error naming no cache file; one cut short (not JSON)
    stopped every run that looked it up, naming `cache clear` for the whole shared cache."""
    from coexplore.cli.main import main
    ex = REPO / "examples" / "first_design"
    path = tmp_path / "c.sqlite"
    argv = ["map", str(ex / "two_level.yaml"), str(ex / "conv1d.yaml"), "--searcher", "random", "--budget", "200",
            "--cache", str(path), "--no-progress", "--json"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    first = json.loads(capsys.readouterr().out)["best"]
    for edit in ("record = 'not JSON {'", "record = '[1, 2]'", "record = json_set(record, '$.x[0]', 99999)",
                 "record = json_remove(record, '$.history')", "record = json_set(record, '$.x[0]', 'a')"):
        con = sqlite3.connect(path)
        con.execute(f"UPDATE results SET {edit}")
        con.commit()
        con.close()
        assert main([*argv, "--out", str(tmp_path / "b")]) == 0
        out = capsys.readouterr()
        assert json.loads(out.out)["best"] == first and f"{path}: the entry" in out.err and "damaged" in out.err
        assert main([*argv, "--out", str(tmp_path / "c")]) == 0          # replaced: a plain hit now
        assert "damaged" not in capsys.readouterr().err
