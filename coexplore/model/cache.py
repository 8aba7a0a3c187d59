"""Persistent result cache: per-(core, layer, searcher, seed, backend) results in SQLite.

A mapping search of one (core, layer) costs seconds to hours; a sweep asks for the same pairs
again and again (other sweep points that leave a core unchanged, resumed runs, repeated layers).
This module stores each result under a content hash of everything that determines it, so a
result is reused exactly when its inputs are unchanged and editing one buffer size invalidates
exactly the entries of the cores that contain that buffer.

THE KEY RULE: every input that can change a result must be part of the key. `cache_key` demands
the six parts below and accepts more (an objective, constraints, an ERT file's contents, ...):

    core             the core spec as a dict (architecture incl. every buffer size, ERT/ART)
    layer            the layer as a dict (the Timeloop problem instance)
    searcher         the searcher/mapper configuration as a dict (None for a fixed mapping)
    seed             the search seed (None if the computation is deterministic without one)
    backend          the cost-model backend's name ("builtin", "timeloop", ...)
    backend_version  its version (bump it whenever the model's numbers change)

Records are JSON objects; by convention: `energy` (pJ), `cycles`, `levels` (the per-level
breakdown) and `mapping` (a Timeloop mapping as a dict).

Storage: one SQLite file (standard library sqlite3) in WAL mode, so several processes read and
write at once (readers never wait); every write is one transaction (BEGIN IMMEDIATE ... COMMIT),
so a process killed at any point leaves the file consistent with all committed entries.
Hit/miss counters live in the file (saved every 64 lookups, with each write and on close), so
the hit rate spans runs. A corrupt file, or one that is not a coexplore cache, raises
CoexploreError telling the user to run `coexplore cache clear`. SQLite's WAL needs a local
file system (not NFS).
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import math
import os
import sqlite3
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from coexplore.errors import CoexploreError, CoexploreWarning, MachineLimit

SCHEMA_VERSION = 1
APPLICATION_ID = 0x436F4558          # "CoEX": marks the file as a coexplore cache
KEY_FORMAT = "coexplore-cache-key/1"  # part of every hash: bump to invalidate all keys
REQUIRED_PARTS = ("core", "layer", "searcher", "seed", "backend", "backend_version")
DEFAULT_PATH = Path("results") / "cache.sqlite"
ENV_VAR = "COEXPLORE_CACHE"
BUSY_TIMEOUT_S = 60.0
COUNTER_FLUSH_EVERY = 64   # lookups between writes of the hit/miss counters (reads take no lock)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS results ("
    " key TEXT PRIMARY KEY,"
    " record TEXT NOT NULL,"
    " meta TEXT,"
    " backend TEXT,"
    " created REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
)


NO_CACHE = ", or --no-cache to run without one"     # said of the commands that have the option (not `cache`)


class CacheUnreadableError(CoexploreError):
    """The file is corrupt, foreign or of another schema: `coexplore cache clear` replaces it."""


CLEAR_HINT = ("run `coexplore cache clear --cache {path}` to move it aside (kept as "
               "{path}.unreadable-N) and start an empty cache")
SQLITE_HEADER = b"SQLite format 3\x00"


def is_sqlite_file(path: str | os.PathLike) -> bool:
    """True for an empty or missing file or an SQLite database; False for anything else (a YAML, a
    CSV...), which the cache never touches."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return head == b"" or head == SQLITE_HEADER


def _cache_option(path: str | os.PathLike) -> dict:
    """Where a cache path came from, to name in errors (CoexploreError's key and option):
    $COEXPLORE_CACHE, else the argument `cache` (the CLI's --cache)."""
    env = os.environ.get(ENV_VAR)
    if env and Path(env) == Path(path):
        return {"key": f"${ENV_VAR}", "option": None}
    return {"key": "cache", "option": "--cache"}


def not_a_cache_error(path: str | os.PathLike) -> CoexploreError:
    return CoexploreError("not a coexplore result cache: the file is not an SQLite database, and it "
                          "is left untouched", file=str(path), **_cache_option(path),
                          expected="a cache file or a new path: --cache FILE or $COEXPLORE_CACHE "
                                   "(map, schedule, sweep and online also run without one: --no-cache); a cache "
                                   "whose first bytes were overwritten is lost: move the file away by hand")


def take_over(cache, delta: tuple[list, int, int] | None) -> None:
    """What a task's `MemoryCache` did (its `delta()`), done to the driver's `cache`: its new entries
    stored (`store`) and its lookups counted, so a Ray run's `cache stats` are those of one process."""
    if delta is None or cache is None:
        return
    added, hits, misses = delta
    if added:
        store(cache, many=added)
    cache.count_lookups(hits=hits, misses=misses)


def store(cache, key: str | None = None, value=None, meta=None, *, many=None) -> None:
    """Put one result (or `many` entries) into `cache`; a cache another process holds locked past
    the timeout (or that fails otherwise) is warned of and the run goes on: the search that made
    the result is not thrown away for it."""
    try:
        if many is not None:
            cache.put_many(many)
        else:
            cache.put(key, value, meta)
    except CoexploreError as exc:
        warnings.warn(f"a result is not in the cache ({exc.format(cli=True)}); it is kept all the same, and a rerun "
                      "searches again", CoexploreWarning, stacklevel=2)


def default_cache_path() -> Path:
    """$COEXPLORE_CACHE if set, else results/cache.sqlite under the current directory."""
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else DEFAULT_PATH


def resolve_cache_path(path: str | os.PathLike | None) -> Path:
    """An explicit path (a `--cache` option) wins over $COEXPLORE_CACHE and the default."""
    return Path(path) if path else default_cache_path()


# ----------------------------------------------------------------------------------- keys

def _canonical(value: Any, where: str) -> Any:
    """Plain JSON value for hashing: dicts with str keys, lists, str, int, finite float,
    bool, None. Integral floats become ints (1024.0 and 1024 are the same buffer size)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cache key part {where} is {value!r}; only finite numbers hash")
        return int(value) if value.is_integer() else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _canonical(dataclasses.asdict(value), where)
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return _canonical(value.to_dict(), where)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            ks = str(k)
            if ks in out:
                raise ValueError(f"cache key part {where} has keys that collide as strings: {ks!r}")
            out[ks] = _canonical(v, f"{where}.{ks}")
        return out
    if isinstance(value, (list, tuple)):
        return [_canonical(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v, where) for v in value), key=lambda v: json.dumps(v))
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "tolist"):                 # numpy arrays and scalars
        return _canonical(value.tolist(), where)
    raise TypeError(f"cache key part {where}: cannot hash a {type(value).__name__}; "
                    "pass plain data (dicts, lists, numbers, strings) or a dataclass")


def canonical_json(parts: Mapping[str, Any]) -> str:
    """The exact text that is hashed: sorted keys, no whitespace, integral floats as ints."""
    return json.dumps(_canonical(dict(parts), "parts"), sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def cache_key(**parts: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of `parts`; the six REQUIRED_PARTS must be given
    (use None where one does not apply), further parts are hashed too."""
    missing = [p for p in REQUIRED_PARTS if p not in parts]
    if missing:
        raise ValueError(f"cache_key needs the parts {', '.join(missing)} "
                         "(use None where one does not apply)")
    text = KEY_FORMAT + "\n" + canonical_json(parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------- cache

@dataclasses.dataclass(frozen=True)
class CacheStats:
    """What `coexplore cache stats` shows; counts span every run since the last clear."""

    path: str
    exists: bool
    entries: int
    hits: int
    misses: int
    size_bytes: int
    by_backend: dict[str, int]
    oldest: float | None
    newest: float | None

    @property
    def hit_rate(self) -> float | None:
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else None

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["hit_rate"] = self.hit_rate
        return d


def file_size(path: str | os.PathLike) -> int:
    """Bytes of the database and its -wal journal (not the -shm index, which any open makes)."""
    total = 0
    for suffix in ("", "-wal"):
        try:
            total += os.path.getsize(f"{os.fspath(path)}{suffix}")
        except OSError:
            pass
    return total


def move_cache_aside(path: str | os.PathLike) -> Path:
    """Rename an unreadable SQLite cache (and its -wal/-shm companions) to `<path>.unreadable-N`,
    the first free N, so that an empty cache can take its place; nothing is deleted. Files that
    are not SQLite databases are refused."""
    p = Path(path)
    if p.is_dir():
        raise CoexploreError("is a directory, not a cache file", file=str(p),
                             expected="a file path such as results/cache.sqlite")
    if not is_sqlite_file(p):
        raise not_a_cache_error(p)
    n = 1
    while any(Path(f"{p}.unreadable-{n}{suffix}").exists() for suffix in ("", "-wal", "-shm", "-journal")):
        n += 1
    target = Path(f"{p}.unreadable-{n}")
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.replace(f"{p}{suffix}", f"{target}{suffix}")
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise CoexploreError(f"cannot move aside: {exc.strerror}", file=f"{p}{suffix}") from exc
    return target


class ResultCache:
    """A result cache in one SQLite file; open one per process (it reconnects after fork).

    Lookups take no lock; writes are short BEGIN IMMEDIATE transactions. `hits` / `misses`
    count this object's lookups; the persistent totals (all runs) are in `stats()`.
    """

    def __repr__(self) -> str:
        return f"ResultCache({str(self.path)!r}, hits={self.hits}, misses={self.misses})"

    def __init__(self, path: str | os.PathLike | None = None, *, create: bool = True,
                 timeout: float = BUSY_TIMEOUT_S):
        self.path = resolve_cache_path(path)
        self.timeout = timeout
        self.hits = 0
        self.misses = 0
        self._unsaved = {"hits": 0, "misses": 0}   # counted, not yet added to the file
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self.read_only = False      # an existing file we may not write: lookups only, stores skipped
        if self.path.is_dir():
            raise CoexploreError("is a directory, not a cache file", file=str(self.path),
                                 expected="a file path such as results/cache.sqlite")
        if self.path.exists() and not self.path.is_file():      # /dev/null, a pipe: SQLite would write beside it
            raise CoexploreError("is not a regular file (a device or a pipe)", file=str(self.path), key="cache",
                                 option="--cache", expected=f"a file path such as results/cache.sqlite{NO_CACHE}")
        if not create and not self.path.exists():
            raise CoexploreError("no result cache here", file=str(self.path))
        self._connect()

    # -- connection ------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        folder = self.path.parent
        companions = [Path(f"{self.path}{s}") for s in ("-wal", "-shm")]   # SQLite writes beside the file
        if self.path.exists() and not (all(os.access(f, os.W_OK) for f in (self.path, *companions) if f.exists())
                                       and os.access(folder, os.W_OK)):
            return self._connect_read_only()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            why = "a file of that name is in the way" if exc.errno == errno.EEXIST or folder.is_file() else exc.strerror
            raise CoexploreError(f"cannot create the result cache's folder {folder}: {why}",
                                 file=str(self.path), **_cache_option(self.path),
                                 expected=f"a path in a writable folder (--cache PATH or ${ENV_VAR}){NO_CACHE}") from None
        if not self.path.exists() and not os.access(folder, os.W_OK):
            raise CoexploreError("cannot create the result cache: its folder is not writable",
                                 file=str(self.path), **_cache_option(self.path),
                                 expected=f"a path in a writable folder (--cache PATH or ${ENV_VAR}){NO_CACHE}")
        with self._errors():
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
                self._check_identity(conn)
                self._set_wal(conn)
                conn.execute("PRAGMA synchronous = NORMAL")  # WAL: safe against process death
                self._init_schema(conn)
            except BaseException:
                conn.close()
                raise
        self._conn, self._pid = conn, os.getpid()
        return conn

    def unwritable(self) -> str | None:
        """What keeps this process from writing the cache: the file, its -wal/-shm companion (a
        reader without write access leaves a -shm only it may write) or its folder; None if nothing."""
        for f in (self.path, *(Path(f"{self.path}{s}") for s in ("-wal", "-shm"))):
            if f.exists() and not os.access(f, os.W_OK):
                return str(f)
        return None if os.access(self.path.parent, os.W_OK) else f"its folder {self.path.parent}"

    def _connect_read_only(self) -> sqlite3.Connection:
        """A cache file this process may not write, or in a folder it may not write (a shared,
        read-only copy): opened read-only; `get` works, `put` and the hit/miss counters are skipped
        (`read_only` tells the caller). In a read-only folder SQLite cannot make the WAL index
        beside the file; nobody can then write the file, so it is read as immutable (entries
        still in a leftover -wal file are not seen: they are computed again, not stored)."""
        from urllib.parse import quote
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        with self._errors():
            try:
                conn = sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None)
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.OperationalError as exc:
                # (SQLite says "unable to open", or, some versions for a WAL file, "readonly database")
                if not any(t in str(exc) for t in ("unable to open", "readonly database")) \
                        or os.access(self.path.parent, os.W_OK):
                    raise
                conn = sqlite3.connect(uri + "&immutable=1", uri=True, timeout=self.timeout,
                                       isolation_level=None)
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
                self._check_identity(conn)
                conn.execute("SELECT count(*) FROM results").fetchone()   # readable, with our table
            except BaseException:
                conn.close()
                raise
        self.read_only = True
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _db(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():
            if self._pid not in (-1, os.getpid()):   # a forked child: the parent's connection
                self._unsaved = {"hits": 0, "misses": 0}  # and unsaved counts are not ours
            self._conn = None
            return self._connect()
        return self._conn

    def close(self) -> None:
        """Save the hit/miss counts and close the connection."""
        if self._conn is not None and self._pid == os.getpid():
            try:
                self.flush_counters()
            finally:
                self._conn.close()
        self._conn = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> "ResultCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _errors(self):
        return _DatabaseErrors(self.path)

    def _check_identity(self, conn: sqlite3.Connection) -> None:
        """Refuse files that are not (or not yet) coexplore caches of a known schema."""
        conn.execute("BEGIN")                        # one snapshot: another process may be creating the schema
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            if conn.in_transaction:                  # (SQLite ends it itself on a failed read: a full disk)
                conn.execute("COMMIT")
        if app_id == 0 and not tables:
            return                                   # empty or new file: ours to initialise
        hint = CLEAR_HINT.format(path=self.path)
        if app_id != APPLICATION_ID:
            raise CacheUnreadableError(
                f"not a coexplore result cache (an SQLite database of something else, "
                f"tables: {', '.join(sorted(tables)) or 'none'}); {hint}", file=str(self.path))
        if "schema_version" in tables:
            row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
            version = row[0] if row else None
            if version is not None and version != SCHEMA_VERSION:
                newer = isinstance(version, int) and version > SCHEMA_VERSION     # a colleague's newer coexplore
                raise CacheUnreadableError(
                    f"result cache has schema version {version}, this coexplore reads version {SCHEMA_VERSION}; "
                    + (f"a newer coexplore wrote it: upgrade coexplore to use it, or give another file (--cache "
                       f"PATH); `coexplore cache clear --cache {self.path}` would move it aside" if newer else hint),
                    file=str(self.path))

    def _set_wal(self, conn: sqlite3.Connection) -> None:
        """Switch to WAL (persistent in the file); retried because it needs a brief lock."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        if str(mode).lower() != "wal":
            raise CoexploreError(f"SQLite refused WAL mode (journal mode is {mode!r}); "
                                 "the cache needs a local file system", file=str(self.path))

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        """Create the tables once; an initialised file is only read (no lock taken)."""
        tables = {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        if app_id == APPLICATION_ID and {"schema_version", "results", "counters"} <= tables:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            for stmt in _SCHEMA:
                conn.execute(stmt)
            if conn.execute("SELECT count(*) FROM schema_version").fetchone()[0] == 0:
                conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            conn.execute("INSERT OR IGNORE INTO counters VALUES ('hits', 0), ('misses', 0)")
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    # -- reading and writing -----------------------------------------------------------
    def get(self, key: str, *, count: bool = True) -> dict | None:
        """The record stored under `key`, or None; counts a hit or a miss unless count=False."""
        with self._errors():
            row = self._db().execute("SELECT record FROM results WHERE key = ?",
                                     (key,)).fetchone()
        if count:
            self.count_lookups(hits=int(row is not None), misses=int(row is None))
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except ValueError as exc:       # one damaged entry is a miss (searched again, then replaced), not
            warnings.warn(f"{self.path}: the entry {key[:12]}... is damaged (not valid JSON: {exc}): "   # a stop
                          "searched again, and replaced", CoexploreWarning, stacklevel=2)
            return None

    def __contains__(self, key: str) -> bool:
        return self.get(key, count=False) is not None

    def count_lookups(self, *, hits: int = 0, misses: int = 0) -> None:
        """Count lookups as hits and misses (this object's, or a Ray task's `MemoryCache`'s); the
        file's totals take them at the next flush."""
        for name, n in (("hits", hits), ("misses", misses)):
            setattr(self, name, getattr(self, name) + n)
            self._unsaved[name] += n
        if sum(self._unsaved.values()) >= COUNTER_FLUSH_EVERY:
            self.flush_counters()

    def put(self, key: str, record: Mapping[str, Any], meta: Mapping[str, Any] | None = None
            ) -> None:
        """Store (or replace) `record` under `key`, in one transaction. `meta` is kept for
        people inspecting the file (e.g. the key's parts); a `backend` entry is indexed."""
        self.put_many([(key, record, meta)])

    def put_many(self, items: Iterable[tuple[str, Mapping[str, Any], Mapping[str, Any] | None]]
                 ) -> int:
        """Store many (key, record, meta) in ONE transaction: all or none survive a crash.
        A read-only cache stores nothing (returns 0)."""
        if self.read_only:
            return 0
        with self._errors():
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            n = 0
            try:
                for item in items:
                    if not isinstance(item, (tuple, list)) or len(item) != 3:
                        raise CoexploreError(f"put_many item {n} is {item!r:.80}", key="put_many",
                                             expected="(key, record, meta) triples (meta may be None)")
                    key, record, meta = item
                    db.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?)",
                               _row(key, record, meta))
                    n += 1
                unsaved = self._save_counters(db)
                db.execute("COMMIT")
                self._forget(unsaved)
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        return n

    def get_or_compute(self, parts: Mapping[str, Any], compute_fn: Callable[[], Mapping]) -> dict:
        """The cached record for `parts` (see cache_key), else compute_fn()'s, stored."""
        key = cache_key(**parts)
        record = self.get(key)
        if record is None:
            computed = compute_fn()
            if not isinstance(computed, Mapping):
                raise CoexploreError(f"compute_fn returned {type(computed).__name__}, not a record",
                                     key="compute_fn", expected="a mapping of names to values (a dict)")
            record = dict(computed)
            self.put(key, record, meta=_summary(parts))
            record = json.loads(_record_json(record))   # same value a later hit returns
        return record

    def flush_counters(self) -> None:
        """Add this object's unsaved hit/miss counts to the file's totals (one transaction)."""
        if not any(self._unsaved.values()) or self.read_only:
            return
        with self._errors():
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                unsaved = self._save_counters(db)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        self._forget(unsaved)

    def _save_counters(self, db: sqlite3.Connection) -> dict[str, int]:
        unsaved = dict(self._unsaved)
        for name, n in unsaved.items():
            if n:
                db.execute("UPDATE counters SET value = value + ? WHERE name = ?", (n, name))
        return unsaved

    def _forget(self, saved: dict[str, int]) -> None:
        for name, n in saved.items():
            self._unsaved[name] -= n

    def keys(self) -> list[str]:
        with self._errors():
            return [r[0] for r in self._db().execute("SELECT key FROM results ORDER BY key")]

    def __len__(self) -> int:
        with self._errors():
            return self._db().execute("SELECT count(*) FROM results").fetchone()[0]

    # -- maintenance ---------------------------------------------------------------------
    def stats(self) -> CacheStats:
        self.flush_counters()
        with self._errors():
            db = self._db()
            when = "CASE WHEN typeof(created) IN ('integer', 'real') THEN created END"   # (an edited row: skipped)
            entries, oldest, newest = db.execute(
                f"SELECT count(*), min({when}), max({when}) FROM results").fetchone()
            counters = dict(db.execute("SELECT name, value FROM counters"))
            by_backend = {(b if b is not None else "unknown"): n for b, n in db.execute(
                "SELECT backend, count(*) FROM results GROUP BY backend ORDER BY backend")}
        return CacheStats(path=str(self.path), exists=True, entries=entries,
                          hits=counters.get("hits", 0), misses=counters.get("misses", 0),
                          size_bytes=file_size(self.path), by_backend=by_backend,
                          oldest=oldest, newest=newest)

    def check(self) -> str:
        """SQLite's quick_check, then every entry read as a record ('ok', or the first problems
        found): the pages can be sound while an entry's text is not (written over, truncated)."""
        with self._errors():
            db = self._db()
            rows = db.execute("PRAGMA quick_check").fetchall()
            if rows != [("ok",)]:
                return "; ".join(str(r[0]) for r in rows[:5])
            bad = []
            for key, *texts in db.execute("SELECT key, CAST(record AS BLOB), CAST(meta AS BLOB), "
                                          "CAST(backend AS BLOB) FROM results"):
                try:
                    record = texts[0].decode("utf-8") if texts[0] is not None else ""
                    for t in texts[1:]:
                        if t is not None:
                            t.decode("utf-8")
                    if not isinstance(json.loads(record), dict):
                        raise ValueError("not a record")
                except (UnicodeDecodeError, ValueError):
                    bad.append(str(key)[:12])
        if bad:
            return (f"{len(bad)} entr{'y' if len(bad) == 1 else 'ies'} unreadable (not UTF-8 text or not a JSON "
                    f"record: {', '.join(k + '...' for k in bad[:3])})")
        return "ok"

    def clear(self) -> int:
        """Delete every entry and reset the counters (safe while others use the file);
        returns the number of entries removed."""
        with self._errors():
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                n = db.execute("DELETE FROM results").rowcount
                db.execute("UPDATE counters SET value = 0")
                db.execute("COMMIT")
                self._unsaved = {"hits": 0, "misses": 0}
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            # give the space back; skipped (not an error) while other processes are busy
            db.execute("PRAGMA busy_timeout = 1000")
            try:
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                db.execute("VACUUM")
            except sqlite3.OperationalError:
                pass
            finally:
                db.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        return n


class MemoryCache:
    """A result cache held in memory, for a task on another machine (a Ray worker) that cannot reach
    the SQLite file: seeded with the records it may read, it keeps what the task stores (`added`:
    (key, record, meta) triples) for the driver to write into its `ResultCache` with `put_many`.
    Records go through JSON as in the file, so a hit reads the same values either way."""

    path = None

    def __init__(self, records: Mapping[str, Mapping[str, Any]] | None = None):
        self._records = {k: _record_json(v) for k, v in (records or {}).items()}
        self.added: list[tuple[str, dict, dict | None]] = []
        self.hits = 0
        self.misses = 0

    def get(self, key: str, *, count: bool = True) -> dict | None:
        text = self._records.get(key)
        if count:
            if text is None:
                self.misses += 1
            else:
                self.hits += 1
        return None if text is None else json.loads(text)

    def __contains__(self, key: str) -> bool:
        return key in self._records

    def put(self, key: str, record: Mapping[str, Any], meta: Mapping[str, Any] | None = None) -> None:
        self.put_many([(key, record, meta)])

    def put_many(self, items: Iterable[tuple[str, Mapping[str, Any], Mapping[str, Any] | None]]) -> int:
        n = 0
        for key, record, meta in items:
            _row(key, record, meta)                      # (the file's checks)
            self._records[key] = _record_json(record)
            self.added.append((key, json.loads(self._records[key]), None if meta is None else _plain(meta)))
            n += 1
        return n

    def delta(self) -> tuple[list, int, int]:
        """What the driver's cache takes over (`take_over`): the entries added here, and the hits and
        misses of the lookups made here."""
        return self.added, self.hits, self.misses

    def close(self) -> None:
        pass


def _record_json(record: Mapping[str, Any]) -> str:
    if not isinstance(record, Mapping):
        raise TypeError(f"a cache record is a dict, got {type(record).__name__}")
    return json.dumps(_plain(record), sort_keys=True, separators=(",", ":"))


def _plain(value: Any) -> Any:
    """JSON-ready copy of a record (numpy values become Python ones; inf/nan are kept)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return _plain(value.tolist())
    return value


def _row(key: str, record: Mapping[str, Any], meta: Mapping[str, Any] | None) -> tuple:
    if not isinstance(key, str) or not key:
        raise TypeError("a cache key is a non-empty string (see cache_key)")
    meta_json = None if meta is None else json.dumps(_plain(meta), sort_keys=True, default=str)
    backend = None
    if meta is not None and meta.get("backend") is not None:
        backend = str(meta["backend"])
        if meta.get("backend_version") is not None:
            backend += f" {meta['backend_version']}"
    return key, _record_json(record), meta_json, backend, time.time()


def _summary(parts: Mapping[str, Any]) -> dict[str, Any]:
    """What get_or_compute keeps beside a record: the parts themselves (they are small)."""
    return {k: _plain(v) for k, v in parts.items()}


def _free_bytes(path: Path) -> int | None:
    """The bytes free on the disk of `path`'s folder (None where the system cannot say)."""
    try:
        st = os.statvfs(path.parent if path.parent.exists() else ".")
    except (OSError, AttributeError):
        return None
    return st.f_bavail * st.f_frsize


class _DatabaseErrors:
    """Turn sqlite3 failures into one clear CoexploreError naming the file."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None or not issubclass(exc_type, sqlite3.Error):
            return False
        text = str(exc).encode("ascii", "backslashreplace").decode()     # (a damaged file's bytes: escaped)
        text = text if len(text) <= 160 else text[:157] + "..."
        hint = CLEAR_HINT.format(path=self.path)
        if "disk is full" in text or ("disk I/O error" in text and _free_bytes(self.path) == 0):
            raise MachineLimit(f"the result cache cannot be used: no space left on the disk ({text})",
                               file=str(self.path), expected="free space on its disk, --cache PATH on another "
                               f"disk{NO_CACHE}") from exc
        if "locked" in text or "busy" in text:
            raise CoexploreError(f"result cache stayed locked by another process for longer "
                                 f"than the timeout ({text})", file=str(self.path)) from exc
        unreadable = (type(exc) is sqlite3.DatabaseError or "malformed" in text or "not a database" in text
                      or "Could not decode" in text)
        if unreadable and not is_sqlite_file(self.path):
            raise not_a_cache_error(self.path) from exc
        if unreadable:
            raise CacheUnreadableError(f"not a readable coexplore result cache ({text}); {hint}",
                                       file=str(self.path)) from exc
        if "unable to open" in text:
            raise CoexploreError(f"the result cache cannot be opened or created there ({text})", file=str(self.path),
                                 key="cache", option="--cache",
                                 expected=f"a file path in a folder this user can write (--cache PATH "
                                          f"or ${ENV_VAR}){NO_CACHE}") from exc
        if "readonly" in text or "read-only" in text:
            raise CoexploreError(f"the result cache cannot be written ({text})", file=str(self.path),
                                 key="cache", option="--cache", expected="a writable cache file (--cache PATH or "
                                 f"${ENV_VAR}){NO_CACHE}") from exc
        raise CoexploreError(f"result cache error: {text}", file=str(self.path)) from exc
