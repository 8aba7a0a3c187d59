"""Progress bars do not flood a log when stderr is not a terminal."""

import io
import time

from coexplore.progress import progress_bar


def test_a_bar_into_a_file_refreshes_rarely_and_a_short_run_writes_nothing(monkeypatch):
    monkeypatch.delenv("TQDM_MININTERVAL", raising=False)
    out = io.StringIO()
    bar = progress_bar(total=10_000, file=out, mininterval=0.5, leave=False)
    assert bar.mininterval >= 30
    for _ in range(10_000):
        bar.update(1)
    bar.close()
    assert out.getvalue() == ""          # no "0%" line, no blanked line


def test_log_lines_each_on_a_line_of_their_own(monkeypatch):
    """With TQDM_MININTERVAL set, a bar into a file writes whole lines: a message after it starts on
    a line of its own, and no carriage return or blanked line is left in the log."""
    monkeypatch.setenv("TQDM_MININTERVAL", "0.05")
    out = io.StringIO()
    bar = progress_bar(total=20, file=out, desc="map", unit="sample", leave=False)
    for _ in range(20):
        time.sleep(0.02)
        bar.update(1)
    bar.close()
    out.write("coexplore map: error: ...\n")
    text = out.getvalue()
    lines = text.splitlines()
    assert "\r" not in text and len(lines) >= 3
    assert all(line.startswith("map:") for line in lines[:-1]) and lines[-1].startswith("coexplore map: error")
    assert all(line == line.rstrip() and line for line in lines)
