"""The result cache: keys independent of set order, counters, records, schema versions, moving a cache aside."""

from __future__ import annotations


import pytest

from coexplore.model.cache import COUNTER_FLUSH_EVERY, ResultCache, cache_key


def _parts(**extra):
    return dict(core={"name": "a", "depth": 1024}, layer={"C": 8, "M": 8}, searcher={"name": "random"},
                seed=0, backend="builtin", backend_version="0.1.0", **extra)


def test_set_valued_parts_hash_the_same_whatever_their_iteration_order():
    # 1 and 9 share a slot of a small set's hash table: insertion order decides iteration order
    a, b = set(), set()
    a.add(1); a.add(9)
    b.add(9); b.add(1)
    assert a == b
    if list(a) == list(b):
        pytest.skip("this Python iterates both sets alike")
    assert cache_key(**_parts(keep=a)) == cache_key(**_parts(keep=b))
    assert cache_key(**_parts(keep=frozenset(a))) == cache_key(**_parts(keep=frozenset(b)))


def test_counters_reach_the_file_every_64_lookups_without_close(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = ResultCache(path)
    cache.put("k", {"energy": 1.0})
    for _ in range(COUNTER_FLUSH_EVERY):
        cache.get("k")                       # hits, never closed or flushed by hand
    with ResultCache(path) as other:         # another process's view of the file
        s = other.stats()
        assert (s.hits, s.misses) == (COUNTER_FLUSH_EVERY, 0)
    cache.close()


def test_a_computed_record_equals_what_a_later_hit_returns(tmp_path):
    np = pytest.importorskip("numpy")
    rec = {"energy": np.float64(2.5), "cycles": np.int64(7), "levels": (1, 2), "tile": np.array([1, 2])}
    with ResultCache(tmp_path / "c.sqlite") as cache:
        first = cache.get_or_compute(_parts(), lambda: rec)
        second = cache.get_or_compute(_parts(), lambda: pytest.fail("recomputed"))
    assert first == second == {"energy": 2.5, "cycles": 7, "levels": [1, 2], "tile": [1, 2]}
    assert type(first["levels"]) is list and type(first["tile"]) is list


def test_clear_also_forgets_the_lookups_not_yet_saved(tmp_path):
    with ResultCache(tmp_path / "c.sqlite") as cache:
        cache.put("k", {"energy": 1.0})
        cache.get("k"); cache.get("k"); cache.get("nope")    # 2 hits, 1 miss, unsaved (< 64)
        assert cache.clear() == 1
        s = cache.stats()
        assert (s.entries, s.hits, s.misses) == (0, 0, 0)


def test_a_cache_of_another_schema_version_is_refused(tmp_path):
    import sqlite3
    from coexplore.model.cache import CacheUnreadableError, SCHEMA_VERSION
    path = tmp_path / "c.sqlite"
    with ResultCache(path) as cache:
        cache.put("k", {"energy": 1.0})
    con = sqlite3.connect(path)
    con.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    con.commit()
    con.close()
    with pytest.raises(CacheUnreadableError, match="schema version") as err:
        ResultCache(path)
    assert "upgrade coexplore" in err.value.message           # a newer one's: not "clear it" first
    con = sqlite3.connect(path)
    con.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION - 1,))
    con.commit()
    con.close()
    with pytest.raises(CacheUnreadableError, match="schema version") as err:
        ResultCache(path)
    assert "upgrade" not in err.value.message and "coexplore cache clear" in err.value.message


def test_moving_a_cache_aside_takes_its_wal_and_shm_files_and_an_empty_file_too(tmp_path):
    from coexplore.model.cache import move_cache_aside
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\0" * 100)
    (tmp_path / "c.sqlite-wal").write_bytes(b"w")
    (tmp_path / "c.sqlite-shm").write_bytes(b"s")
    target = move_cache_aside(path)
    assert target == tmp_path / "c.sqlite.unreadable-1"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "c.sqlite.unreadable-1", "c.sqlite.unreadable-1-shm", "c.sqlite.unreadable-1-wal"]
    assert (tmp_path / "c.sqlite.unreadable-1-wal").read_bytes() == b"w"
    path.write_bytes(b"")                     # an empty file is a (new) SQLite database, movable
    assert move_cache_aside(path) == tmp_path / "c.sqlite.unreadable-2"


def _damaged_cache(tmp_path, how: str):
    """A cache of 5 entries, one of them damaged: its text not UTF-8, or its JSON cut short."""
    import sqlite3
    path = tmp_path / "c.sqlite"
    with ResultCache(path) as c:
        for i in range(5):
            c.put(f"k{i}", {"energy_pJ": float(i), "cycles": i})
    db = sqlite3.connect(path)
    if how == "bytes":
        db.execute("UPDATE results SET record = CAST(X'7b22fffe22' AS TEXT) WHERE key = 'k2'")
    else:
        db.execute("UPDATE results SET record = substr(record, 1, 5) WHERE key = 'k2'")
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize("how", ["bytes", "cut"])
def test_a_damaged_entry_is_said_and_clear_moves_the_file_aside_whole(tmp_path, capsys, how):
    """User study: one damaged entry gave `cache stats` "integrity ok" (and raw bytes in the error of
    the run that met it); `cache clear` then deleted the 4 good entries instead of moving the file aside."""
    from coexplore.cli.main import main
    path = _damaged_cache(tmp_path, how)
    assert main(["cache", "stats", "--cache", str(path)]) == 2
    err = capsys.readouterr().err
    assert "1 entry unreadable" in err and "cache clear" in err and "\\xff" not in err.encode().decode("ascii", "replace")
    assert main(["cache", "clear", "--cache", str(path)]) == 0
    assert "moved unreadable file" in capsys.readouterr().out
    kept = tmp_path / "c.sqlite.unreadable-1"
    import sqlite3
    assert sqlite3.connect(kept).execute("SELECT count(*) FROM results").fetchone()[0] == 5
    with ResultCache(path) as c:
        assert len(c) == 0 and c.check() == "ok"


def test_reading_a_damaged_entry_names_the_cache_and_the_remedy(tmp_path):
    from coexplore.model.cache import CacheUnreadableError
    path = _damaged_cache(tmp_path, "bytes")
    with ResultCache(path) as c, pytest.raises(CacheUnreadableError) as err:
        c.get("k2")
    assert "cache clear" in err.value.message and err.value.message.isascii()


def test_a_full_disk_is_said_as_the_machines_limit(tmp_path, monkeypatch):
    """User study: a cache on a full disk failed with "cannot commit - no transaction is active"."""
    import sqlite3

    from coexplore.errors import MachineLimit
    from coexplore.model import cache as C
    monkeypatch.setattr(C, "_free_bytes", lambda path: 0)
    with pytest.raises(MachineLimit, match="no space left on the disk"):
        with C._DatabaseErrors(tmp_path / "c.sqlite"):
            raise sqlite3.OperationalError("disk I/O error")


def test_a_machine_limit_exits_1_and_a_permission_error_2(tmp_path, capsys, monkeypatch):
    """README: no space left, a read-only file system exit 1 (the machine); a folder this user may not
    write is exit 2, one line, and a PermissionError met mid-run is one line too, not a traceback."""
    import errno

    from coexplore.cli import cache as cache_cli
    from coexplore.cli.main import main
    from coexplore.errors import MachineLimit, write_error
    assert isinstance(write_error(OSError(errno.ENOSPC, "full"), "x"), MachineLimit)
    assert not isinstance(write_error(OSError(errno.EACCES, "no"), "x"), MachineLimit)
    for exc, code in ((MachineLimit("cannot write: No space left on device", file="f"), 1),
                      (PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "o" / "x.tmp")), 2)):
        def boom(*a, exc=exc):
            raise exc
        monkeypatch.setattr(cache_cli, "_stats", boom)
        assert main(["cache", "stats", "--cache", str(tmp_path / "c.sqlite")]) == code
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
