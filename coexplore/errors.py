"""The one project exception: bad input named by file, key and what was expected."""

from __future__ import annotations


class CoexploreError(Exception):
    """User-facing error. The CLI turns it into one message and exit code 2.

    file: the input file at fault (or None); key: the YAML key / field path (or None);
    expected: what would have been accepted (or None); message: what went wrong.
    """

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None,
                 expected: str | None = None):
        self.message = message
        self.file = None if file is None else str(file)
        self.key = key
        self.expected = expected
        super().__init__(self.format())

    def format(self) -> str:
        where = ""
        if self.file:
            where = self.file
        if self.key:
            where = f"{where}: key '{self.key}'" if where else f"key '{self.key}'"
        text = f"{where}: {self.message}" if where else self.message
        if self.expected:
            text += f" (expected {self.expected})"
        return text

    def with_file(self, file) -> "CoexploreError":
        """Return the same error attributed to `file` if it names none yet."""
        if self.file is None:
            self.file = str(file)
            self.args = (self.format(),)
        return self


class CoexploreWarning(UserWarning):
    """What Timeloop accepts silently but is most likely a typo (an unknown problem instance key, a
    misspelt buffer attribute), raised by the library loaders; the CLI prints them as
    `coexplore: warning: ...` lines."""


class CoexploreNote(CoexploreWarning):
    """Information on a choice made for the user (no ERT given: the built-in estimator prices the
    file), not a problem; the CLI prints it as a `coexplore: note: ...` line."""
