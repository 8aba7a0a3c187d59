"""Progress bars (tqdm on stderr) that do not flood a log.

On a terminal: a live bar. Elsewhere (a batch job, CI, `2> log`) a bar is a log line: it first
appears after 30 s (a short run writes none), then at most every 30 s, each state on a line of its
own (no carriage returns, no blanked line left behind, so a message printed after it starts on a
fresh line). `TQDM_MININTERVAL=5` in the environment makes that 5 s.
"""

from __future__ import annotations

import os
import re
import sys

from coexplore.errors import CoexploreError

try:
    from tqdm import tqdm
except ValueError as exc:    # tqdm reads the TQDM_* variables when imported and stops on a bad value
    raise CoexploreError(f"tqdm cannot read the environment ({exc})",
                         key=", ".join(sorted(k for k in os.environ if k.startswith("TQDM_"))) or "TQDM_*",
                         expected="TQDM_* variables of the right type, e.g. TQDM_MININTERVAL=5") from None

LOG_INTERVAL_S = 30.0
_CURSOR_MOVES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class _LogLines:
    """A non-terminal stream as tqdm sees it: each refresh becomes one line; clearing writes vanish."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        # a nested bar (schedule's layer searches under its layers' bar) moves the cursor: no place in a log
        for line in _CURSOR_MOVES.sub("", text).replace("\r", "\n").split("\n"):
            if line.strip():
                self.stream.write(line.rstrip() + "\n")

    def flush(self) -> None:
        self.stream.flush()


class _LogBar(tqdm):
    """A bar written as log lines: a forced redraw (a new total, a new postfix) waits for the next
    due line like an update does, so a short run still writes none."""

    def refresh(self, nolock=False, lock_args=None):
        if self.disable:                  # (a disabled bar, TQDM_DISABLE=1, has no clock)
            return super().refresh(nolock=nolock, lock_args=lock_args)
        now, start = self._time(), getattr(self, "start_t", None)    # none yet: tqdm's first draw (delay 0)
        if start is not None and (now < start + self.delay or now - self.last_print_t < self.mininterval):
            return False
        self.logged = True
        return super().refresh(nolock=nolock, lock_args=lock_args)

    def close(self):
        """A bar that wrote lines ends with its final state, also one a terminal would clear
        (`leave=False`): a log would otherwise stop at its last periodic line (49%)."""
        if not self.disable and getattr(self, "logged", False) and not self.leave:
            self.leave = True
        super().close()


def _log_interval() -> float:
    try:
        return max(0.0, float(os.environ.get("TQDM_MININTERVAL", LOG_INTERVAL_S)))
    except ValueError:
        return LOG_INTERVAL_S


def progress_bar(iterable=None, **kwargs) -> tqdm:
    kwargs.setdefault("file", sys.stderr)
    if getattr(kwargs["file"], "isatty", lambda: False)():
        return tqdm(iterable, **kwargs)
    every = _log_interval()
    kwargs.update(file=_LogLines(kwargs["file"]), mininterval=max(every, kwargs.get("mininterval", 0.0)),
                  delay=every, dynamic_ncols=False, ncols=kwargs.get("ncols", 100))
    return _LogBar(iterable, **kwargs)
