"""The one project exception: bad input named by file, key and what was expected."""

from __future__ import annotations

import errno
import os
from pathlib import Path


def shortened(text: str, most: int = 80) -> str:
    """Text said in a message, cut to a line (a long factor string, a YAML alias list expanded)."""
    return text if len(text) <= most else text[:most - 3] + "..."


class CoexploreError(Exception):
    """User-facing error. The CLI turns it into one message and exit code 2.

    file: the input file at fault (or None); key: the YAML key / field path, or the Python
    argument (or None); expected: what would have been accepted (or None); message: what went
    wrong; option: the command-line option that sets `key` (`--budget` for `budget`), which the
    CLI names in its place (`format(cli=True)`), so a library caller reads the argument it passed.
    """

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None,
                 expected: str | None = None, option: str | None = None):
        self.message = message
        self.file = None if file is None else str(file)
        self.key = key
        self.expected = expected
        self.option = option
        super().__init__(self.format())

    def __str__(self) -> str:
        return self.format()      # the fields as they are now (callers add a file or a key prefix on the way up)

    def format(self, cli: bool = False) -> str:
        where = ""
        if self.file:
            where = self.file
        key = self.option if cli and self.option else self.key
        if key:
            where = f"{where}: key '{key}'" if where else f"key '{key}'"
        text = f"{where}: {self.message}" if where else self.message
        if self.expected:
            text += f" (expected {self.expected})"
        return text

    def parts(self) -> tuple:
        """What rebuilds this error in another process (`from_parts`)."""
        return self.message, self.file, self.key, self.expected, self.option

    @classmethod
    def from_parts(cls, parts) -> "CoexploreError":
        message, file, key, expected, *option = parts
        return cls(message, file=file, key=key, expected=expected, option=option[0] if option else None)

    def __reduce__(self):          # pickled whole, subclasses' own fields too (their __init__ differs)
        return _rebuild, (type(self), dict(self.__dict__))

    def with_file(self, file) -> "CoexploreError":
        """Return the same error attributed to `file` if it names none yet."""
        if self.file is None:
            self.file = str(file)
        return self

    @property
    def is_setting(self) -> bool:
        """About a searcher's setting (`config.pop_size`), found wanting only once the search meets its
        input: the mapper file that set it is the place to point at."""
        return str(self.key or "").startswith("config.")

    def of_mapper_file(self, file) -> "CoexploreError":
        """The same error attributed to the mapper `file` (if given) when it is about a setting and names
        no file yet; for a bundled mapper file (read for a searcher's name), how to set it otherwise."""
        if not (file and self.is_setting):
            return self
        out = self.with_file(file)
        from coexplore.bundled import record_name
        if record_name(file).startswith("bundled:") and out.file == str(file):
            out.expected = (f"{out.expected}; " if out.expected else "") + \
                (f"{Path(file).name} is the bundled file a searcher's name reads: copy it, set the key there and "
                 "give the copy (--searcher FILE), not an edit of the installed one")
        return out


class MachineLimit(CoexploreError):
    """The machine stopped a write (no space or quota left, a read-only file system, an I/O error):
    not bad input; the CLI exits 1, as for a run that failed."""


MACHINE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})


def write_error(exc: OSError, message: str, **where) -> CoexploreError:
    """`message` about a failed write, as a MachineLimit when the machine is the cause."""
    return (MachineLimit if exc.errno in MACHINE_ERRNOS else CoexploreError)(message, **where)


def _rebuild(cls, state: dict) -> CoexploreError:
    exc = cls.__new__(cls)
    exc.__dict__.update(state)
    exc.args = (exc.format(),)
    return exc


def check_type(value, types, key: str, expected: str):
    """`value` when it is one of `types`, else a CoexploreError naming the argument `key` (a library
    call with a wrong argument is told what it passed and what is taken, not an AttributeError deep in)."""
    if isinstance(value, types) and not isinstance(value, bool):
        return value
    text = repr(value)
    shown = text if len(text) <= 60 else text[:57] + "..."
    raise CoexploreError(f"got {type(value).__name__} {shown}", key=key, expected=expected)


PATH_TYPES = (str, os.PathLike)     # what a file argument may be


class CoexploreWarning(UserWarning):
    """What Timeloop accepts silently but is most likely a typo (an unknown problem instance key, a
    misspelt buffer attribute), raised by the library loaders; the CLI prints them as
    `coexplore: warning: ...` lines."""


class CoexploreNote(CoexploreWarning):
    """Information on a choice made for the user (no ERT given: the built-in estimator prices the
    file), not a problem; the CLI prints it as a `coexplore: note: ...` line."""


def misspelt(missing, given, have: str = "the file has", cutoff: float = 0.8) -> str:
    """' (the file has 'dpeth': 'depth' misspelt?)' for each name `missing` that one of the names
    `given` is a letter or two from (the commonest cause of a missing name), else ''."""
    import difflib
    names = [str(g) for g in given]
    near = [(k, m) for m in missing for k in difflib.get_close_matches(str(m), [n for n in names if n != m],
                                                                      n=1, cutoff=cutoff)]
    return "".join(f" ({have} '{k}': '{m}' misspelt?)" for k, m in near)


def did_you_mean(word, names, cutoff: float = 0.75) -> str:
    """' (did you mean 'res3a_branch2b'?)' when `word` is a letter or two from one of `names`, else ''."""
    import difflib
    close = difflib.get_close_matches(str(word), [str(n) for n in names], n=1, cutoff=cutoff)
    return f" (did you mean '{close[0]}'?)" if close else ""
