"""Snapshots of a running search, so that an interrupted run continues where it stopped.

`run_search` given a `Checkpoint` saves the searcher's whole state (its random generator,
policies, populations, memory of asked points) and the driver's (best so far, history) at batch
boundaries: every `every_s` seconds and when Ctrl-C stops the search. Started again with the same
checkpoint, it restores that state and goes on; since every searcher is deterministic given its
state, the resumed run ends with exactly the result of an uninterrupted one.

The snapshot is a pickle written atomically (temporary file, then rename): a kill during a save
leaves the previous snapshot. Objects the caller rebuilds from the inputs (the searcher's space or
mapspace, a job table) are stored by name, not by value, and re-linked to the new run's objects.
A snapshot records the run it belongs to (`key`) and the coexplore version; one of another run or
version, or one that cannot be read, is ignored with a note (the search starts from sample 0).
Pickles run code when loaded: resume only snapshots your own runs wrote.
"""

from __future__ import annotations

import io
import os
import pickle
import time
from pathlib import Path
from typing import Callable

from coexplore.provenance import code_version

FORMAT = 3   # 2: the memory of evaluated points keys rows by their narrow bytes (search.space.keys);
             # 3: a header pickle (format, version, key, ...) before the state, readable on its own
SHARED_ATTRIBUTES = ("space", "mapspace", "table")   # rebuilt by the caller: stored by name


class Checkpoint:
    """Where and how often a search is saved. `key` names the run (e.g. a hash of its run
    record); `say` receives one-line notes (resuming, ignoring a snapshot)."""

    def __init__(self, path: str | Path, key: str, every_s: float = 30.0,
                 say: Callable[[str], None] | None = None):
        self.path = Path(path)
        self.key = key
        self.every_s = float(every_s)
        self.say = say or (lambda msg: None)
        self.resumed_from = 0          # samples of the snapshot restored (0: started afresh)
        self.elapsed_before = 0.0      # search seconds spent before the restored snapshot
        self.saved_samples = 0         # samples of the newest snapshot on disk (0: none)
        self._started = time.perf_counter()
        self._last_save = self._started
        self._gap = self.every_s       # seconds between saves: every_s, more if a save is slow
        self.unsaveable = ""           # why the searcher's state cannot be pickled (then never saved)

    # -- saving ---------------------------------------------------------------------------
    def due(self) -> bool:
        return not self.unsaveable and time.perf_counter() - self._last_save >= self._gap

    def save(self, searcher, driver: dict) -> None:
        """Write the searcher's and the driver's state (atomically replacing the last snapshot).
        Saving stays under ~5% of the run: after a save of t seconds the next is due after 20 t
        at the earliest (every_s = 0: at every batch)."""
        if self.unsaveable:
            return
        t0 = time.perf_counter()
        buf = io.BytesIO()
        pickle.dump({"format": FORMAT, "coexplore": code_version(), "key": self.key,   # the header: whose
                     "searcher_class": _class_name(searcher), "samples": int(searcher.samples),
                     "elapsed_s": self.elapsed()}, buf, protocol=pickle.HIGHEST_PROTOCOL)
        if not self._pickled(searcher, driver, buf):
            return
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")   # per process: two runs never share one
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(tmp, "wb") as fh:
                fh.write(buf.getvalue())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:             # (a full disk, a stop at once): no half-written file left
            tmp.unlink(missing_ok=True)
            raise
        self._last_save = time.perf_counter()
        self._gap = max(self.every_s, 20 * (self._last_save - t0)) if self.every_s > 0 else 0.0
        self.saved_samples = int(searcher.samples)

    def probe(self, searcher) -> None:
        """Find out at the start of a run, not at its first save (30 s in, or at a stop), whether
        the searcher's state can be saved (said once if not)."""
        if not self.unsaveable:
            self._pickled(searcher, {}, io.BytesIO())

    def _pickled(self, searcher, driver: dict, buf: io.BytesIO) -> bool:
        """Pickle the driver's and the searcher's state into buf (the objects the searcher shares with
        the run, its space, by name only); False, said once, when the searcher's state cannot be."""
        ids = {id(obj): name for name, obj in _shared(searcher).items()}
        pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.persistent_id = lambda obj: ids.get(id(obj))
        try:
            pickler.dump({"driver": driver, "searcher": searcher.state_dict()})
            return True
        except (pickle.PicklingError, TypeError, AttributeError) as exc:   # a plugin's lambda, lock, generator
            self.unsaveable = f"{type(exc).__name__}: {exc}"
            from coexplore.plugins import label
            self.say(f"the state of searcher {label(searcher)} cannot be saved ({self.unsaveable}): "
                     "no checkpoint (a stop keeps the best so far; a rerun starts over)")
            return False

    def elapsed(self) -> float:
        """Search seconds of this run so far, the restored part included."""
        return self.elapsed_before + time.perf_counter() - self._started

    # -- restoring ------------------------------------------------------------------------
    def restore(self, searcher) -> dict | None:
        """Load the snapshot into `searcher` (a fresh one built as the interrupted run built its
        own) and return the driver's state; None (searcher untouched) when there is no usable one."""
        self._started = self._last_save = time.perf_counter()     # the search starts now
        if not self.path.is_file():
            return None
        shared = _shared(searcher)
        try:
            with open(self.path, "rb") as fh:
                data = _header(fh)
                if _mismatch(data, self.key, searcher) is None:
                    unpickler = pickle.Unpickler(fh)
                    unpickler.persistent_load = lambda name: shared[name]
                    data = {**data, **unpickler.load()}
        except Exception as exc:          # truncated, another version's classes, a missing link
            self.say(f"ignored the checkpoint {self.path} (unreadable: {type(exc).__name__}); starting from sample 0")
            return None
        why = _mismatch(data, self.key, searcher)
        if why:
            self.say(f"ignored the checkpoint {self.path} ({why}); starting from sample 0")
            return None
        searcher.load_state_dict(data["searcher"])
        self.resumed_from = self.saved_samples = int(searcher.samples)
        self.elapsed_before = float(data.get("elapsed_s", 0.0))
        self._started = self._last_save = time.perf_counter()
        self.say(f"resuming the interrupted run from its checkpoint at {self.resumed_from:,} samples "
                 f"({self.path})")
        return data["driver"]

    def discard(self) -> None:
        """Remove the snapshot (after the run's result is stored, or to start over)."""
        for p in (self.path, *self.path.parent.glob(f"{self.path.name}.*.tmp")):   # a killed save's too
            p.unlink(missing_ok=True)
        self.saved_samples = 0


def snapshot_key(path: str | Path) -> str | None:
    """The run key of the snapshot at `path`, if it is one this coexplore could resume (readable,
    of this format and version); None otherwise (no file, unreadable, another version's)."""
    try:
        with open(path, "rb") as fh:
            data = _header(fh)                 # (the state after it is not needed: nor rebuilt)
    except Exception:
        return None
    if _unusable(data):
        return None
    key = data.get("key")
    return key if isinstance(key, str) else None


def _header(fh) -> dict:
    """The snapshot's header (format, version, run key, searcher class, samples), read alone: plain
    data, whatever the state after it needs to be rebuilt. A snapshot of format 2 (one pickle of
    everything, linking the shared objects) is said as such."""
    unpickler = pickle.Unpickler(fh)

    def links(name):
        raise _OneObject
    unpickler.persistent_load = links                   # a header links to nothing
    try:
        return unpickler.load()
    except _OneObject:
        return {"format": 2}


class _OneObject(Exception):
    """A pickle that links shared objects: not a header."""


def _class_name(obj) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _shared(searcher) -> dict:
    return {name: getattr(searcher, name) for name in SHARED_ATTRIBUTES if hasattr(searcher, name)}


def _unusable(data) -> str | None:
    """Why no run of this coexplore can resume the snapshot `data` (None: it can)."""
    if not isinstance(data, dict) or "format" not in data:
        return "not a coexplore checkpoint"
    if data.get("format") != FORMAT:
        return f"checkpoint format {data.get('format')}, this coexplore writes {FORMAT}"
    if data.get("coexplore") != code_version():
        return f"written by coexplore {data.get('coexplore')}, this is {code_version()}"
    return None


def _mismatch(data, key: str, searcher) -> str | None:
    why = _unusable(data)
    if why:
        return why
    if data.get("key") != key:
        return "it belongs to another run"
    if data.get("searcher_class") != _class_name(searcher):
        return f"a {data.get('searcher_class')} searcher's"
    return None
