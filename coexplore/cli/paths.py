"""Command-line values shared by the sub-commands: output folders (created up front, so a bad
--out fails before the work), sample counts and seeds."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from coexplore.errors import CoexploreError


CREATED: list[Path] = []     # folders output_dir made in this process (removed again if left empty)


def remove_empty_created() -> None:
    """Remove the folders output_dir created that are still empty (a run that failed before writing
    anything leaves no empty result folder behind); innermost first."""
    for p in reversed(CREATED):
        try:
            p.rmdir()                # only succeeds on an empty folder
        except OSError:
            pass
    CREATED.clear()


def output_dir(path: str | Path) -> Path:
    """Create `path` (and parents) if needed; an unusable path is a one-line error, not a traceback."""
    p = Path(path)
    missing = [q for q in (p, *p.parents) if not q.exists()]
    try:
        p.mkdir(parents=True, exist_ok=True)
        CREATED.extend(reversed(missing))
    except FileExistsError:
        raise CoexploreError("exists and is not a folder", file=str(p), key="--out",
                             expected="a folder path (created if missing)") from None
    except OSError as exc:
        raise CoexploreError(f"cannot create the output folder: {exc.strerror}", file=str(p), key="--out",
                             expected="a writable folder path") from None
    return p


def default_run_dir(base: str | Path, result_file: str, run: dict) -> Path:
    """`base`, unless it holds the result of another run (its `result_file` JSON has a different
    "run" record): then the first of base-2, base-3, ... that is free or holds this run. A default
    output folder is thus never overwritten by a different run; rerunning reuses its folder."""
    base = Path(base)
    cand, k = base, 1
    while (cand / result_file).exists():
        try:
            if json.loads((cand / result_file).read_text()).get("run") == run:
                break
        except (OSError, ValueError, AttributeError):
            pass
        k += 1
        cand = base.with_name(f"{base.name}-{k}")
    return output_dir(cand)


def count(text: str) -> int:
    """argparse type for sample counts: an integer, also written 1e5 or 100_000."""
    try:
        value = float(str(text).replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value.is_integer():
        raise argparse.ArgumentTypeError(f"not a whole number of samples: {text!r}")
    return int(value)


def seed(text: str) -> int:
    """argparse type for --seed: an integer >= 0 (numpy's generators refuse negative seeds)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value
