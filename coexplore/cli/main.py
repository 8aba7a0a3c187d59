"""`coexplore` entry point: dispatches to one module per sub-command.

Each module in COMMANDS defines `register(subparsers)`, which adds its parser and sets
`func=run` (a function of the parsed args returning an exit code). Only this file turns
a CoexploreError into a message and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from coexplore.errors import CoexploreError

# sub-command modules under coexplore.cli, in the order `--help` lists them
COMMANDS = (
    "evaluate",
    "validate",
    "map",
    "cache",
    "arch",
    "energy",
    "schedule",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coexplore",
        description="DNN-accelerator co-exploration with Timeloop-compatible numbers.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"coexplore.cli.{name}").register(sub)
    return parser




def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CoexploreError as exc:
        print(f"coexplore {args.command}: error: {exc.format()}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"coexplore {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
