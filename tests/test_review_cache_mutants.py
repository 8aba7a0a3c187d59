"""Tests written by a mutation review (2026-12-03): result cache keys/counters/atomicity, provenance digests, result-folder
and resume decisions (cli.paths). Hand-derived values and properties only."""

import json
import sqlite3
from pathlib import Path

import pytest

from coexplore.errors import CoexploreError

BASE = dict(core={"glb": 1024, "bw": 12.8}, layer={"K": 64, "C": 3}, searcher={"name": "random", "budget": 100},
            seed=0, backend="builtin", backend_version="1")


# ------------------------------------------------------------------ cache keys

@pytest.mark.parametrize("part,other", [("core", {"glb": 2048, "bw": 12.8}), ("layer", {"K": 64, "C": 4}),
                                        ("searcher", {"name": "random", "budget": 101}), ("seed", 1),
                                        ("backend", "timeloop"), ("backend_version", "2"),
                                        ("core", {"glb": 1024, "bw": 12.8001})])
def test_a_changed_part_is_another_key(part, other):
    from coexplore.model.cache import cache_key
    assert cache_key(**{**BASE, part: other}) != cache_key(**BASE)


# ------------------------------------------------------------------ hits, misses and their totals

def test_hits_and_misses_are_counted_and_add_up_over_sessions(tmp_path):
    from coexplore.model.cache import ResultCache
    path = tmp_path / "c.sqlite"
    with ResultCache(path) as c:
        assert c.get("a") is None                         # miss
        c.put("a", {"energy": 1.0})
        assert c.get("a") == {"energy": 1.0}             # hit
        got = c.get_or_compute(BASE, lambda: {"energy": 2.0})   # miss, computed
        assert got == {"energy": 2.0}
        assert c.get_or_compute(BASE, lambda: {"energy": 3.0}) == {"energy": 2.0}   # hit
        assert (c.hits, c.misses) == (2, 2)
    with ResultCache(path) as c:
        assert c.get("a") is not None                     # only a hit this session
    with ResultCache(path) as c:
        s = c.stats()
        assert (s.hits, s.misses, s.entries) == (3, 2, 2)
        c.clear()
        s = c.stats()
        assert (s.hits, s.misses, s.entries) == (0, 0, 0)


def test_memory_cache_counts_hits_and_misses():
    from coexplore.model.cache import MemoryCache
    m = MemoryCache({"a": {"x": 1}})
    m.get("a"), m.get("b"), m.get("a")
    assert (m.hits, m.misses) == (2, 1)


def test_put_many_is_all_or_nothing(tmp_path):
    from coexplore.model.cache import ResultCache
    with ResultCache(tmp_path / "c.sqlite") as c:
        with pytest.raises(CoexploreError):
            c.put_many([("a", {"x": 1}, None), "not a triple", ("b", {"x": 2}, None)])
        assert len(c) == 0


# ------------------------------------------------------------------ foreign and unreadable files

def test_a_foreign_sqlite_database_is_refused_and_left_as_it_was(tmp_path):
    from coexplore.model.cache import ResultCache
    path = tmp_path / "theirs.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE orders (id INTEGER)")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(CoexploreError):
        ResultCache(path)
    assert path.read_bytes() == before


def test_a_file_that_is_not_sqlite_is_refused_never_moved(tmp_path):
    from coexplore.model.cache import ResultCache, is_sqlite_file, move_cache_aside
    path = tmp_path / "system.yaml"
    path.write_text("system: {name: x}\n")
    assert not is_sqlite_file(path)
    with pytest.raises(CoexploreError):
        ResultCache(path)
    with pytest.raises(CoexploreError):
        move_cache_aside(path)
    assert path.read_text() == "system: {name: x}\n"


def test_moving_aside_twice_keeps_both_files(tmp_path):
    from coexplore.model.cache import ResultCache, move_cache_aside
    path = tmp_path / "c.sqlite"
    contents = []
    for value in (1, 2):
        with ResultCache(path) as c:
            c.put("k", {"v": value})
        move_cache_aside(path)
    for n, value in ((1, 1), (2, 2)):
        aside = Path(f"{path}.unreadable-{n}")
        assert aside.is_file()
        contents.append(sqlite3.connect(aside).execute("SELECT record FROM results").fetchone()[0])
    assert [json.loads(t)["v"] for t in contents] == [1, 2]


# ------------------------------------------------------------------ provenance

def test_the_digest_follows_data_files_and_names(tmp_path):
    from coexplore.provenance import source_digest
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "table.yaml").write_text("e: 1\n")
    d0 = source_digest(tmp_path)
    (tmp_path / "table.yaml").write_text("e: 2\n")
    d1 = source_digest(tmp_path)
    assert d1 != d0                                          # a data file edited
    (tmp_path / "table.yaml").rename(tmp_path / "other.yaml")
    assert source_digest(tmp_path) != d1                      # a file renamed


def test_run_header_and_code_version_carry_the_source_digest():
    import coexplore
    from coexplore.provenance import code_version, run_header, source_digest
    assert run_header()["coexplore_source"] == source_digest()
    assert code_version() == f"{coexplore.__version__}+{source_digest()}"


# ------------------------------------------------------------------ run keys, keeping and resuming

RUN = {"system": "/x/s.yaml", "budget": 100, "seed": 0, "layer_budget": 50, "inputs_sha256": {"/x/s.yaml": "aa"}}


@pytest.mark.parametrize("key,value", [("budget", 101), ("seed", 1), ("layer_budget", 51),
                                       ("inputs_sha256", {"/x/s.yaml": "bb"}), ("system", "/x/t.yaml")])
def test_run_key_follows_every_field(key, value):
    from coexplore.cli.paths import run_key
    assert run_key({**RUN, key: value}) != run_key(RUN)
    assert run_key(dict(reversed(list(RUN.items())))) == run_key(RUN)


def _result(path, run, samples, interrupted=False):
    path.write_text(json.dumps({"run": run, "samples": samples, "interrupted": interrupted}))


def test_keeps_earlier_only_a_same_run_result_that_got_at_least_as_far(tmp_path, capsys):
    from coexplore.cli.paths import keeps_earlier
    res = tmp_path / "result.json"
    _result(res, RUN, 500)
    assert keeps_earlier(res, RUN, 400, "map") is True
    assert keeps_earlier(res, RUN, 500, "map") is True
    assert keeps_earlier(res, RUN, 600, "map") is False           # this run got further: replace
    assert keeps_earlier(res, {**RUN, "seed": 1}, 400, "map") is False     # another run's result


class _Ck:
    def __init__(self, path):
        self.path, self.saved_samples, self.discarded = path, 0, False

    def discard(self):
        self.discarded = True


def test_an_interrupted_earlier_result_keeps_the_checkpoint(tmp_path, capsys):
    from coexplore.cli.paths import keeps_earlier
    res = tmp_path / "result.json"
    _result(res, RUN, 500, interrupted=True)
    ck = _Ck(tmp_path / ".checkpoint.pkl")
    assert keeps_earlier(res, RUN, 400, "map", ck) is True and not ck.discarded
    _result(res, RUN, 500, interrupted=False)
    assert keeps_earlier(res, RUN, 400, "map", ck) is True and ck.discarded


def test_restart_discards_the_saved_state(tmp_path, capsys):
    from coexplore.cli.paths import CHECKPOINT, run_checkpoint
    (tmp_path / CHECKPOINT).write_bytes(b"state")
    run_checkpoint(tmp_path, RUN, "map", restart=False)
    assert (tmp_path / CHECKPOINT).is_file()
    run_checkpoint(tmp_path, RUN, "map", restart=True)
    assert not (tmp_path / CHECKPOINT).exists()


def test_differences_names_only_the_edited_file():
    from coexplore.cli.paths import differences
    a = {"seed": 0, "inputs_sha256": {"/x/arch.yaml": "1", "/x/net.yaml": "2"}}
    b = {"seed": 0, "inputs_sha256": {"/x/arch.yaml": "1", "/x/net.yaml": "3"}}
    said = differences(a, b)
    assert "net.yaml" in said and "arch.yaml" not in said and "settings" not in said


@pytest.fixture
def released():
    from coexplore.cli import paths
    yield
    paths.release_held()
    paths.CREATED.clear()
    paths.CLAIMED.clear()


def test_default_folder_is_never_another_runs(tmp_path, released):
    from coexplore.cli.paths import default_run_dir
    base = tmp_path / "sweep" / "s-s0"
    base.mkdir(parents=True)
    (base / "sweep.json").write_text(json.dumps({"points": 3}))            # an earlier run that recorded none
    first = default_run_dir(base, "sweep.json", RUN)
    assert first != base
    other = default_run_dir(base, "sweep.json", {**RUN, "seed": 1})
    assert other not in (base, first)
    assert default_run_dir(base, "sweep.json", RUN) == first                 # a rerun: its own folder
