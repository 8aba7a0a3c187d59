"""`python -m coexplore ...`: the same as the `coexplore` command (an entry point, like the console script)."""

from coexplore.cli.main import entry

entry()
