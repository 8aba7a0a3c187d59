"""Helper for the benchmarks, not a benchmark: finding their reference data (the project's
../shared folders, not in a user's clone) and their --help layout."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path


def require(path: str | Path, option: str, what: str) -> Path:
    """`path` if it exists; else one line saying what is missing and how to point at it, exit 2."""
    p = Path(path)
    if not p.exists():
        print(f"{Path(sys.argv[0]).name}: needs {what} at {p} (the project's ../shared data, not part "
              f"of a clone); pass {option} PATH", file=sys.stderr)
        raise SystemExit(2)
    return p


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """--help shows the module docstring as written and each option's default (unless None/False)."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)

    def _split_lines(self, text, width):      # keep paths and comma lists whole
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)


def comma_list(ap: argparse.ArgumentParser, text: str, allowed, option: str) -> list[str]:
    """The names of a comma-separated option, each one of `allowed` (else the parser's error, exit 2)."""
    names = [n for n in text.split(",") if n]
    bad = [n for n in names if n not in allowed]
    if bad:
        ap.error(f"{option}: unknown {', '.join(bad)} (choose from {', '.join(allowed)})")
    return names


# argparse types of counts and budgets: the command line's own (one message for a bad value everywhere)
from coexplore.cli.paths import nonnegative as non_negative, positive  # noqa: E402,F401

def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0 (a load, a bandwidth)."""
    import math
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(x) and x > 0):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number > 0")
    return x
