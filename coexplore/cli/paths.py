"""Command-line values shared by the sub-commands: output folders (created up front, so a bad
--out fails before the work), sample counts and seeds."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from coexplore.bundled import record_name
from coexplore.errors import CoexploreError, write_error


CREATED: list[Path] = []     # folders output_dir made in this process (removed again if left empty)


CLAIM = ".run.json"          # written first into a default result folder: which run it belongs to


CLAIMED: list[Path] = []     # folders default_run_dir claimed in this process


HELD: dict[Path, int] = {}   # result folders this command writes: their locked descriptors (`hold`)


def hold(folder: Path, given: bool = True, same_run: bool = False) -> Path:
    """Hold the result folder `folder` until the command ends (`release_held`): an advisory lock on
    the folder itself, which the system also drops however the process ends. A second coexplore
    run choosing the same folder meanwhile is refused, instead of both writing it. Where there are
    no POSIX locks (Windows), nothing is held. `given`: the user named it (--out), else it is the
    command's default folder; `same_run`: a default folder recording this very run."""
    try:
        import fcntl
    except ImportError:
        return folder
    key = Path(folder).resolve()
    if key in HELD:
        return folder
    try:
        fd = os.open(key, os.O_RDONLY)
    except OSError:                               # (a folder that can be written but not read: not held)
        return folder
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        CREATED[:] = [p for p in CREATED if p.resolve() != key]     # (its holder's: not to be removed)
        if given:
            raise CoexploreError("another coexplore run is writing this folder now", file=str(folder), key="--out",
                                 expected="that run's end (run the command again then: it resumes, or finds the "
                                          "result written), or another --out folder") from None
        if same_run:
            raise CoexploreError("the same run (same inputs and settings) is running now and writing its default "
                                 "result folder", file=str(folder),
                                 expected="that run's end (run the command again then: it finds the result written), "
                                          "or --out another folder") from None
        raise CoexploreError("another coexplore run is writing this default result folder now", file=str(folder),
                             expected="that run's end, or --out another folder") from None
    except OSError:                               # no locks there (NFS without lockd, ...): not held
        os.close(fd)
        return folder
    HELD[key] = fd
    return folder


def release_held() -> None:
    """Let go of the folders `hold` holds (when a command ends)."""
    for fd in HELD.values():
        os.close(fd)
    HELD.clear()


def add_cache_option(parser: argparse.ArgumentParser, no_cache: bool = False) -> None:
    """The `--cache PATH` option of every command that uses the result cache (and `--no-cache`)."""
    from coexplore.model.cache import ENV_VAR
    parser.add_argument("--cache", metavar="PATH", default=None,
                        help=f"result cache file (default: ${ENV_VAR}, else results/cache.sqlite)")
    if no_cache:
        parser.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")


def open_cache(path, command: str):
    """The result cache of a run (`--cache` / $COEXPLORE_CACHE / default); a note when it can only
    be read (its hits are used, new results are not stored)."""
    from coexplore.model.cache import ResultCache
    cache = ResultCache(path)
    if cache.read_only:
        what = cache.unwritable()
        left = what is not None and what.endswith(("-wal", "-shm")) and os.access(cache.path, os.W_OK)
        print(f"coexplore {command}: note: the result cache {cache.path} is read-only"
              + (f" ({what} is not writable" + ("; left by a run without write access? remove it when no coexplore "
                                               "run uses the cache" if left else "") + ")" if what else "")
              + ": its results are used, new ones are not stored (--cache PATH for a writable one)", file=sys.stderr)
    return cache


def remove_if_unused(folder: Path) -> None:
    """Remove `folder` if it holds nothing but (at most) a run's claim: a layer folder a worker
    process made for a search that never wrote anything (the worker's own records are gone with it)."""
    try:
        names = [q.name for q in folder.iterdir()]
        if set(names) <= {CLAIM}:
            for name in names:
                (folder / name).unlink()
            folder.rmdir()
    except OSError:
        pass


def remove_empty_created() -> None:
    """After a failed run: drop this run's claims on folders that hold nothing else, and remove the
    folders output_dir created that are then empty (no empty result folder is left behind)."""
    def rmdir_created():
        for p in reversed(CREATED):
            try:
                p.rmdir()            # only succeeds on an empty folder
            except OSError:
                pass
    rmdir_created()                  # first the empty sub-folders (a network's layer folders) ...
    for p in CLAIMED:
        try:
            if [q.name for q in p.iterdir()] == [CLAIM]:
                (p / CLAIM).unlink()
        except OSError:
            pass
    rmdir_created()                  # ... then the folders they leave holding nothing
    CREATED.clear()
    CLAIMED.clear()


def output_dir(path: str | Path) -> Path:
    """Create `path` (and parents) if needed and check it can be written; an unusable path is a
    one-line error before any work, not a traceback after it."""
    import tempfile
    p = Path(path)
    missing = [q for q in (p, *p.parents) if not q.exists()]
    try:
        p.mkdir(parents=True, exist_ok=True)
        CREATED.extend(reversed(missing))
        with tempfile.TemporaryFile(dir=p):
            pass
    except FileExistsError:
        raise CoexploreError("exists and is not a folder", file=str(p), key="--out",
                             expected="a folder path (created if missing)") from None
    except NotADirectoryError:
        raise CoexploreError("a parent is a file, not a folder", file=str(p), key="--out",
                             expected="a folder path (created if missing)") from None
    except OSError as exc:
        raise _unwritable(p, exc) from None
    return p


def digests(*paths) -> dict[str, str]:
    """SHA-256 of each input file given, a folder workload's problem files for the folder (None and
    other paths skipped): part of a run record, so an edited input is another run, not a rerun of
    the same one."""
    import hashlib

    from coexplore.spec.workload import problem_files
    out = {}
    for p in paths:
        if p is None:
            continue
        for f in problem_files(Path(p)) if Path(p).is_dir() else [Path(p)] if Path(p).is_file() else []:
            out[record_name(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def chosen_dir(path: str | Path, result_file: str, run: dict, command: str, writes: tuple[str, ...] = (),
               inputs: tuple = (), also_writes: tuple[str, ...] = ()) -> Path:
    """An explicit --out folder (see `output_dir`); its result is replaced as asked, with a note
    when it records another run (the default folders are numbered instead); a folder holding, with
    no run's record, the result file or files of the names the command `writes` (e.g. a
    hand-written mapping.yaml) is refused: they are the user's.
    The saved search state of another run (also of this command before an input was edited) is
    never overwritten, nor one of the run's own `inputs` that sits there under a name it writes
    (`writes`, or `also_writes`: files it writes whatever the folder holds)."""
    out = Path(path)
    for name in (result_file, *writes, *also_writes):
        clash = next((f for f in inputs if f and Path(f).is_file() and (out / name).is_file()
                      and os.path.samefile(f, out / name)), None)
        if clash is not None:
            raise CoexploreError(f"holds {name}, an input of this run ({clash}), which the run would write over",
                                 file=str(out), key="--out", expected="another --out folder (or the input elsewhere)")
    out = hold(output_dir(path))
    for other, who in RESULT_FILES.items():      # another command's result: two commands' files would mix
        if other != result_file and (out / other).is_file():
            clash = sorted(f for f in (result_file, *writes, *also_writes) if (out / f).exists())
            raise CoexploreError(f"holds the result of `coexplore {who}` ({other}), "
                                 + (f"whose {', '.join(clash)} this run would replace" if clash else
                                    f"beside which this `coexplore {command}` run would write its own files"),
                                 file=str(out), key="--out", expected="another --out folder for this command")
    want = json.loads(json.dumps(run, sort_keys=True))
    claim = _owner(out / CLAIM)
    owner = _owner(out / result_file, key="run") if (out / result_file).exists() else None
    if (out / CHECKPOINT).is_file() and (claim is not None and claim != want or _other_runs_snapshot(out, run)):
        other = claim if claim is not None else owner
        raise CoexploreError("holds the saved search state of another run, interrupted (its .checkpoint.pkl)"
                             + (f" {differences(other, want)}" if isinstance(other, dict) else "")
                             + ": writing here would lose it", file=str(out), key="--out",
                             expected=f"another --out folder, or delete {out / CHECKPOINT} to discard that state "
                                      "(the command of that run, with its inputs as they were, resumes it)")
    if claim is None and owner is None and not _a_runs_traces(out):
        # files no coexplore run wrote (the user's own mapping.yaml): the names this run writes at its end
        theirs = [n for n in (result_file, *writes, *also_writes) if (out / n).is_file()]
        if theirs:
            raise CoexploreError(f"holds {', '.join(theirs)}, which no coexplore run wrote (no run record), and "
                                 f"this run writes {'that name' if len(theirs) == 1 else 'those names'}",
                                 file=str(out), key="--out",
                                 expected="another --out folder, or those files moved away (a folder of an earlier "
                                          "coexplore run is replaced, with a note)")
    if (out / result_file).exists() and owner != want:
        print(f"coexplore {command}: note: {out / result_file} holds the result of another run; this run's "
              "result replaces it once there is one (--out is written as given)", file=sys.stderr)
    if claim is not None and claim != want:    # the folder is this run's now: a rerun of the other goes elsewhere
        try:
            (out / CLAIM).write_text(json.dumps(want, sort_keys=True), encoding="utf-8")
        except OSError as exc:
            raise _unwritable(out, exc) from None
    return out


CHECKPOINT = ".checkpoint.pkl"   # in a result folder: the search state of an interrupted run
# each command's result file in its --out folder (`chosen_dir` keeps two commands' results apart)
RESULT_FILES = {"result.json": "map", "summary.json": "map --all-layers", "schedule.json": "schedule",
                "online.json": "online", "sweep.json": "sweep"}


def differences(other: dict, this: dict) -> str:
    """What sets two run records apart, in words: the settings that differ and the input files
    edited since (their digests differ)."""
    derived = ("inputs_sha256", "content_key")       # what the settings and files make, not set by hand
    code = ("coexplore_version", "coexplore_source", "versions", "plugins_sha256")    # the code, not settings
    keys = sorted(k for k in set(other) | set(this) if other.get(k) != this.get(k) and k not in derived + code)
    a, b = other.get("inputs_sha256") or {}, this.get("inputs_sha256") or {}
    files = sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))
    changed = [k for k in code if other.get(k) != this.get(k)]
    said = {"coexplore_version": "coexplore's version ({} then, {} now)", "coexplore_source": "coexplore's code "
            "(installed or edited since: results may differ)", "versions": "the libraries' versions (numpy, ...)",
            "plugins_sha256": "the plugins loaded or their code"}
    parts = [said[k].format(other.get(k), this.get(k)) for k in changed] + \
        ([f"settings {', '.join(keys)}"] if keys else []) + \
        ([f"input files {', '.join(Path(f).name for f in files)} (edited since, or other files)"] if files else [])
    if not parts and other.get("content_key") != this.get("content_key"):
        parts = ["files found beside the architecture (ERT, constraints) or the model version"]
    return f"(it differs from this run in {'; '.join(parts)})" if parts else ""


def add_restart_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--restart", action="store_true",
                        help="start the search from sample 0 even when an interrupted run of this same "
                             "command left a checkpoint in the result folder (by default it resumes)")


def run_key(run: dict) -> str:
    """The key a run's checkpoint is saved under: a hash of its run record."""
    import hashlib
    return hashlib.sha256(json.dumps(run, sort_keys=True).encode()).hexdigest()


def _other_runs_snapshot(out: Path, run: dict) -> bool:
    """`out` holds a resumable checkpoint of another run (a folder given with --out has no claim
    file: the snapshot itself says whose it is)."""
    from coexplore.search.checkpoint import snapshot_key
    key = snapshot_key(out / CHECKPOINT)
    return key is not None and key != run_key(run)


def run_checkpoint(out: Path, run: dict, command: str, restart: bool):
    """The checkpoint of this run in its result folder (`search.checkpoint`): a rerun of an
    interrupted run resumes from it; `restart` discards it first. Notes go to stderr."""
    from coexplore.search.checkpoint import Checkpoint
    key = run_key(run)
    if (out / CHECKPOINT).exists() and not (out / CHECKPOINT).is_file():   # checked before the search
        raise CoexploreError("is not a file: it is where this run keeps its search state", file=out / CHECKPOINT,
                             expected="no such folder there (remove it, or choose another --out)")
    ck = Checkpoint(out / CHECKPOINT, key, say=lambda msg: print(f"coexplore {command}: {msg}", file=sys.stderr))
    if restart:
        ck.discard()
    return ck


def interrupted_note(command: str, checkpoint) -> None:
    """After Ctrl-C: how to continue."""
    if checkpoint is not None and checkpoint.saved_samples and checkpoint.path.is_file():
        print(f"coexplore {command}: the search state after {checkpoint.saved_samples:,} samples is saved in "
              f"{checkpoint.path}; run the same command again to continue from there (--restart starts over)",
              file=sys.stderr)


def keeps_earlier(result: Path, run: dict, samples: int, command: str, checkpoint=None) -> bool:
    """An interrupted run does not replace a result of the same run that got at least as far (the
    search is deterministic, so that result is at least as good): True, with a note, when
    `result` holds such a one. When that result is complete, this run's checkpoint is dropped:
    continuing it would only repeat the search that result already finished."""
    try:
        data = json.loads(result.read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or data.get("run") != json.loads(json.dumps(run, sort_keys=True)):
        return False
    earlier = data.get("samples")
    if not isinstance(earlier, int) or earlier < samples:
        return False
    print(f"coexplore {command}: interrupted after {samples:,} samples; kept {result}, the same run's result "
          f"after {earlier:,} samples{' (also interrupted)' if data.get('interrupted') else ''}, which this "
          "one would not improve on", file=sys.stderr)
    if checkpoint is not None and not data.get("interrupted"):
        checkpoint.discard()
    else:
        interrupted_note(command, checkpoint)
    return True


def table_run_name(table: str | Path) -> str:
    """A job table's (or trace's) name in a default run folder: its file name, but a run's `jobs.csv`
    or `requests.csv` by its folder and MAGMA's `tables/<mix>/<setting>/insts<N>.csv` by mix and
    setting, so that runs of different inputs do not share one name (and numbered folders)."""
    path = Path(table).resolve()
    if path.stem in ("jobs", "requests") and path.parent.name:
        return path.parent.name
    if re.fullmatch(r"insts\d+", path.stem) and path.parent.parent.name:
        return f"{path.parent.parent.name}-{path.parent.name}-{path.stem}"
    return path.stem


def default_run_dir(base: str | Path, result_file: str, run: dict) -> Path:
    """`base`, unless it belongs to another run: then the first of base-2, base-3, ... that is free
    or belongs to this run. A folder is claimed by creating its `.run.json` (the run record), so
    runs with different settings started at the same time never share one; a folder without a claim
    belongs to the run its `result_file` records (any other run, if that records none), and a folder
    holding anything else to no run (it is left alone, as is a file of that name). A default output
    folder is thus never overwritten by a different run; rerunning reuses its folder."""
    base = Path(base)
    want = json.loads(json.dumps(run, sort_keys=True))
    first = None                                    # who holds `base`, when another run does
    for k in range(1, 10_000):
        path = base if k == 1 else base.with_name(f"{base.name}-{k}")
        if path.exists() and not path.is_dir():     # a file of that name: not ours to replace
            first = first or "a file of that name"
            continue
        cand = output_dir(path)
        claim = cand / CLAIM
        owner = _owner(claim)
        if owner is None and (cand / result_file).exists():
            owner = _owner(cand / result_file, key="run") or "an unrecorded earlier run"
        if owner is None and not claim.exists() and any(cand.iterdir()):
            owner = "files of no run"               # e.g. the user's own: left alone
        if k == 1 and owner is not None and owner != want:
            first = owner
        if owner is None and _claim(claim, want):
            CLAIMED.append(cand)
            if first is not None:                   # a rerun with other settings: say where it goes, and why
                why = (differences(first, want) if isinstance(first, dict) else f"({first})")
                print(f"coexplore: note: {base} holds another run{' ' + why if why else ''}; this run writes "
                      f"{cand}", file=sys.stderr)
            return hold(cand, given=False)
        if (owner or _owner(claim)) == want:
            return hold(cand, given=False, same_run=True)
    raise CoexploreError("no free default result folder", file=str(base), key="--out",
                         expected="an --out folder")


def _claim(claim: Path, run: dict) -> bool:
    """Create the claim file holding `run` (exclusive create: of runs racing for a folder, one
    wins); False if another run made it first. A run that reads a claim not yet written sees no
    owner and moves on to the next folder, so it never shares one with a different run."""
    try:
        with open(claim, "x", encoding="utf-8") as fh:
            fh.write(json.dumps(run, sort_keys=True))
        return True
    except FileExistsError:
        return False
    except OSError as exc:
        raise _unwritable(claim.parent, exc) from None


def _a_runs_traces(out: Path) -> bool:
    """What a coexplore run leaves before its result file (a stop, a kill): its saved search or
    training state, a sweep's points.jsonl (each point as it ends), a mapping.yaml with map's header."""
    if any((out / f).is_file() for f in (CHECKPOINT, ".train_state.json", "points.jsonl")):
        return True
    try:
        with open(out / "mapping.yaml", encoding="utf-8", errors="replace") as fh:
            return fh.readline().startswith("# coexplore map:")
    except OSError:
        return False


def _unwritable(folder: Path, exc: OSError) -> CoexploreError:
    return write_error(exc, f"cannot create or write the output folder: {exc.strerror or exc}", file=str(folder),
                       key="--out", expected="a writable folder path")


def _owner(path: Path, key: str | None = None):
    """The run record in a claim file (or under `key` in a result file); None if absent/unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if key is not None:
        data = data.get(key) if isinstance(data, dict) else None
    return json.loads(json.dumps(data, sort_keys=True)) if data is not None else None


def show_progress(args) -> bool:
    """Progress bars on stderr unless --no-progress, and with --json only on a terminal (a pipe or
    log file collecting the JSON gets no bar lines)."""
    return not args.no_progress and (sys.stderr.isatty() or not getattr(args, "json", False))


MAX_COUNT = 1e15   # samples: years of evaluation, and exact as a float (counts are also written 1e5)


def count(text: str) -> int:
    """argparse type for sample counts: an integer, also written 1e5 or 100_000."""
    try:
        value = float(str(text).replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value.is_integer():
        raise argparse.ArgumentTypeError(f"not a whole number of samples: {text!r}")
    if abs(value) > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"too large: {text!r} (at most {MAX_COUNT:.0e})")
    return int(value)


def count_at_most(limit: int, why: str):
    """argparse type: a `count` no larger than `limit` (`why`: what a larger one would take)."""
    def checked(text: str) -> int:
        value = count(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"too large: {text!r} (at most {limit:,}: {why})")
        return value
    checked.__name__ = "count"             # (argparse names the type in its messages)
    return checked


def seed(text: str) -> int:
    """argparse type for --seed: an integer >= 0 (numpy's generators refuse negative seeds)."""
    return nonnegative(text)


def processes(text: str) -> int:
    """argparse type for --jobs: 1 to 256 processes."""
    value = _integer(text)
    if not 1 <= value <= 256:
        raise argparse.ArgumentTypeError(f"must be 1 to 256, got {value}")
    return value


def positive(text: str) -> int:
    """argparse type: an integer >= 1 (a budget, a count)."""
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def nonnegative(text: str) -> int:
    """argparse type: an integer >= 0."""
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def seconds(text: str) -> float:
    """argparse type for time limits: a number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def command_record() -> dict:
    """{"command": the command line, "cwd": the folder it ran in} for a run record (how to run it
    again: its relative paths are the folder's), when it runs from the command line; {} for a
    Python caller."""
    from coexplore.cli.main import command_line
    line = command_line()
    return {"command": line, "cwd": os.getcwd()} if line else {}
