"""The benchmarks' reference data: the project's ../shared folders (not in a user's clone)."""

from __future__ import annotations

import sys
from pathlib import Path


def require(path: str | Path, option: str, what: str) -> Path:
    """`path` if it exists; else one line saying what is missing and how to point at it, exit 2."""
    p = Path(path)
    if not p.exists():
        print(f"{Path(sys.argv[0]).name}: needs {what} at {p} (the project's ../shared data, not part "
              f"of a clone); pass {option} PATH", file=sys.stderr)
        raise SystemExit(2)
    return p
