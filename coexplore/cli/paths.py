"""Output folders of the sub-commands: created up front, so a bad --out fails before the work."""

from __future__ import annotations

from pathlib import Path

from coexplore.errors import CoexploreError


def output_dir(path: str | Path) -> Path:
    """Create `path` (and parents) if needed; an unusable path is a one-line error, not a traceback."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise CoexploreError("exists and is not a folder", file=str(p), key="--out",
                             expected="a folder path (created if missing)") from None
    except OSError as exc:
        raise CoexploreError(f"cannot create the output folder: {exc.strerror}", file=str(p), key="--out",
                             expected="a writable folder path") from None
    return p
