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


def test_forced_redraws_in_a_short_run_write_nothing_either(monkeypatch):
    """A new total (an exhaustive space smaller than the budget) or a new postfix (the layer a
    network's run maps) redraws a terminal bar at once; in a log it waits for the next due line."""
    monkeypatch.delenv("TQDM_MININTERVAL", raising=False)
    out = io.StringIO()
    bar = progress_bar(total=100, file=out, leave=False)
    bar.total = 50
    bar.refresh()
    for layer in ("conv1", "conv2"):
        bar.set_postfix_str(layer)
        bar.update(25)
    bar.close()
    assert out.getvalue() == ""
    monkeypatch.setenv("TQDM_MININTERVAL", "0")
    bar = progress_bar(total=10, file=out, desc="map", leave=False)
    bar.set_postfix_str("conv1")
    bar.close()
    assert "conv1" in out.getvalue()      # once due, a forced redraw is written
    off = progress_bar(total=3, file=io.StringIO(), disable=True)      # TQDM_DISABLE=1: no clock, no crash
    off.set_postfix_str("conv1")
    off.refresh()
    off.close()


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


def test_an_exhaustive_search_bar_counts_to_the_end_of_its_space(monkeypatch):
    """The bar's total is the space's size when that ends before the budget (its ETA is then
    the real one), for a searcher that knows it (exhaustive)."""
    import numpy as np
    import coexplore.progress as progress
    from coexplore.search.base import run_search
    from coexplore.search.exhaustive import ExhaustiveSearch
    from coexplore.search.space import DiscreteSpace
    bars = []

    def keep(*a, **k):
        bars.append(progress_bar(*a, file=io.StringIO(), **{x: v for x, v in k.items() if x != "file"}))
        return bars[-1]
    monkeypatch.setattr(progress, "progress_bar", keep)
    space = DiscreteSpace(np.array([5, 6, 7]), ["a", "b", "c"])
    res = run_search(ExhaustiveSearch(space), lambda X: X.sum(axis=1).astype(float), budget=1000,
                     batch_size=50, progress=True)
    assert res.samples == 5 * 6 * 7 and bars[0].total == 5 * 6 * 7 and bars[0].n == 5 * 6 * 7


def test_nested_bars_in_a_log_leave_no_cursor_moves(monkeypatch):
    """schedule's layer searches show a bar under its layers' bar: in a log, whole lines only."""
    monkeypatch.setenv("TQDM_MININTERVAL", "0")
    out = io.StringIO()
    outer = progress_bar(total=2, file=out, desc="map layers", leave=False)
    for _ in range(2):
        inner = progress_bar(total=3, file=out, desc="map conv1", leave=False)
        for _ in range(3):
            inner.update(1)
        inner.close()
        outer.update(1)
    outer.close()
    text = out.getvalue()
    assert "\x1b" not in text and "\r" not in text and "map conv1" in text and "map layers" in text
    assert all(line.startswith(("map layers", "map conv1")) for line in text.splitlines()), text


def test_every_command_decides_on_bars_alike(monkeypatch):
    """--no-progress always wins; --json off a terminal writes no bar lines (into the same log as the
    JSON's consumer would read), on a terminal it does; a command without --json just shows them."""
    import argparse
    import sys
    from coexplore.cli.paths import show_progress
    for tty in (True, False):
        monkeypatch.setattr(sys.stderr, "isatty", lambda tty=tty: tty)
        assert not show_progress(argparse.Namespace(no_progress=True, json=False))
        assert show_progress(argparse.Namespace(no_progress=False, json=True)) is tty
        assert show_progress(argparse.Namespace(no_progress=False, json=False))
        assert show_progress(argparse.Namespace(no_progress=False))


def test_a_logged_bar_ends_with_its_final_state(monkeypatch):
    """User study: `sweep ... 2> log` showed the layers' bar (leave=False) at 49% and never again,
    though the layers were all mapped: a bar that wrote lines writes its last state too."""
    monkeypatch.setenv("TQDM_MININTERVAL", "0.05")
    out = io.StringIO()
    bar = progress_bar(total=20, file=out, desc="map layers", leave=False)
    for _ in range(10):
        time.sleep(0.02)
        bar.update(1)
    bar.update(10)
    bar.close()
    assert out.getvalue().splitlines()[-1].startswith("map layers: 100%")
