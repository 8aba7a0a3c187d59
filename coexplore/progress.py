"""Progress bars (tqdm on stderr) that do not flood a log: when stderr is not a terminal (a
batch job, CI, `2> log`), a bar refreshes at most every 30 s instead of ten times a second."""

from __future__ import annotations

import sys

from tqdm import tqdm


def progress_bar(iterable=None, **kwargs) -> tqdm:
    kwargs.setdefault("file", sys.stderr)
    if not getattr(kwargs["file"], "isatty", lambda: False)():
        kwargs["mininterval"] = max(30.0, kwargs.get("mininterval", 0.0))
    return tqdm(iterable, **kwargs)
