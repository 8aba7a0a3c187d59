"""`coexplore cache stats | clear`: inspect or empty the SQLite result cache."""

from __future__ import annotations

import datetime as _dt
import json

from coexplore.cli.paths import add_cache_option
from coexplore.errors import CoexploreError
from coexplore.model.cache import (CLEAR_HINT, NO_CACHE, CacheStats, CacheUnreadableError, ResultCache,
                                   file_size, move_cache_aside, resolve_cache_path)


def register(subparsers) -> None:
    p = subparsers.add_parser("cache", help="inspect or clear the result cache",
                              description="Inspect or clear the SQLite result cache.")
    sub = p.add_subparsers(dest="cache_command", metavar="ACTION")
    sub.required = True
    s = sub.add_parser("stats", help="entries, hit rate and size of the cache")
    add_cache_option(s)
    s.add_argument("--json", action="store_true", help="print the numbers as JSON")
    c = sub.add_parser("clear", help="delete every entry (an unreadable cache is moved aside, never deleted)")
    add_cache_option(c)
    p.set_defaults(func=run)


def run(args) -> int:
    path = resolve_cache_path(args.cache)
    try:
        if args.cache_command == "stats":
            return _stats(path, args.json)
        return _clear(path)
    except CoexploreError as exc:        # (these commands have no --no-cache to suggest)
        if exc.expected:
            exc.expected = exc.expected.replace(NO_CACHE, "")
        raise


def _empty(path) -> bool:
    """No cache yet: no file, or an empty one (which stats and clear leave as it is)."""
    return not path.exists() or (path.is_file() and path.stat().st_size == 0)


def _stats(path, as_json: bool) -> int:
    if _empty(path):
        stats = CacheStats(path=str(path), exists=path.exists(), entries=0, hits=0, misses=0,
                           size_bytes=0, by_backend={}, oldest=None, newest=None)
        integrity = None
    else:
        with ResultCache(path, create=False) as cache:
            integrity = cache.check()        # first: a damaged entry would fail the statistics' reads
            if integrity != "ok":            # a damaged file: said as every other command says it
                raise _damaged(path, integrity)
            stats = cache.stats()
    if as_json:
        print(json.dumps({**stats.to_dict(), "integrity": integrity}, indent=2))
        return 0
    if _empty(path):
        print(f"cache      {stats.path} ({'an empty file' if path.exists() else 'does not exist yet'}: 0 entries)")
        return 0
    print(f"cache      {stats.path}")
    print(f"entries    {stats.entries}")
    if stats.hit_rate is None:
        print("hit rate   n/a (no lookups since created/cleared)")
    else:
        print(f"hit rate   {100 * stats.hit_rate:.1f} % ({stats.hits} hits, {stats.misses} misses "
              "since created/cleared)")
    print(f"size       {_human(stats.size_bytes)}")
    if stats.by_backend:
        print("backends   " + ", ".join(f"{b}: {n}" for b, n in stats.by_backend.items()))
    if stats.oldest is not None:
        print(f"written    {_when(stats.oldest)} .. {_when(stats.newest)}")
    print(f"integrity  {integrity}")
    return 0


def _clear(path) -> int:
    if _empty(path):                       # nothing to clear: create nothing either
        print(f"cache {path} {'is empty' if path.exists() else 'does not exist'}: nothing to clear")
        return 0
    try:
        with ResultCache(path) as cache:
            integrity = cache.check()        # a damaged file is moved aside whole, never emptied
            if integrity != "ok":
                raise _damaged(path, integrity)
            n = cache.clear()
        print(f"cleared {path}: removed {n} entries")
    except CacheUnreadableError as exc:
        size = file_size(path)
        kept = move_cache_aside(path)
        ResultCache(path).close()
        reason = exc.message.split("; run `coexplore cache clear")[0]
        print(f"moved unreadable file {path} ({_human(size)}: {reason}) to {kept}; started an empty cache")
    return 0


def _damaged(path, integrity: str) -> CacheUnreadableError:
    first = " ".join(integrity.replace("*** in database main ***", "").split())
    return CacheUnreadableError(f"not a readable coexplore result cache (integrity check: {first}); "
                                + CLEAR_HINT.format(path=path), file=str(path))


def _human(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"


def _when(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
