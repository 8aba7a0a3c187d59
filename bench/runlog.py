"""Helper for the benchmarks, not a benchmark: an append-only JSONL log of benchmark runs,
so an interrupted benchmark resumes where it stopped.

Each finished run is one line, flushed at once. A run is identified by its key fields plus a
version: a hash of the source files the run's result depends on (the searcher's own module),
so changing a searcher reruns only that searcher's runs and keeps everything else.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def source_version(*relpaths: str) -> str:
    """Short hash of the given repository files (paths relative to the repo root)."""
    h = hashlib.sha256()
    for p in relpaths:
        h.update(p.encode())
        h.update((ROOT / p).read_bytes())
    return h.hexdigest()[:12]


class RunLog:
    """Finished runs keyed by `key_fields` (+ "version"), read from and appended to `path`."""

    def __init__(self, path: Path, key_fields: tuple[str, ...]):
        self.path = Path(path)
        self.key_fields = tuple(key_fields) + ("version",)
        self.done: dict[tuple, dict] = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                if line.strip():
                    try:
                        r = json.loads(line)
                    except json.JSONDecodeError:      # a line cut by a kill: that run reruns
                        continue
                    self.done[self.key(r)] = r
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a")

    def key(self, record: dict) -> tuple:
        return tuple(_hashable(record.get(f)) for f in self.key_fields)

    def __contains__(self, record: dict) -> bool:
        return self.key(record) in self.done

    def get(self, record: dict) -> dict | None:
        return self.done.get(self.key(record))

    def append(self, record: dict) -> None:
        self._fh.write(json.dumps(record) + "\n")
        self._fh.flush()
        self.done[self.key(record)] = record

    def close(self) -> None:
        self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _hashable(v):
    return tuple(v) if isinstance(v, list) else v
