"""`coexplore` entry point: dispatches to one module per sub-command.

Each module in COMMANDS defines `register(subparsers)`, which adds its parser and sets
`func=run` (a function of the parsed args returning an exit code). Only this file turns
a CoexploreError into a message and exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import re
import signal
import sys
import threading
import warnings

from coexplore.cli.paths import CLAIMED, CREATED, release_held, remove_empty_created
from coexplore.errors import CoexploreError, CoexploreWarning, MachineLimit
from coexplore.workers.processes import WorkerDied

# sub-command modules under coexplore.cli, in the order `--help` lists them
COMMANDS = (
    "evaluate",
    "validate",
    "map",
    "cache",
    "arch",
    "energy",
    "schedule",
    "sweep",
    "online",
)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (like every other coexplore error), exit code 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):
        """A sub-command's positionals may sit on both sides of its options (`evaluate ARCH PROBLEM
        --layer L MAPPING`), as argparse's intermixed parsing reads them."""
        if self._intermixing or any(isinstance(a, argparse._SubParsersAction) for a in self._actions):
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False

    def parse_args(self, args=None, namespace=None):
        """An option the sub-command does not know is said by the sub-command (argparse says it
        at the top level: `coexplore: error`, pointing at the wrong --help)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            parser = self                  # the deepest sub-command chosen (`cache stats`)
            while True:
                action = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
                chosen = action.choices.get(getattr(parsed, action.dest, None)) if action is not None else None
                if chosen is None:
                    break
                parser = chosen
            files = [e for e in extras if not e.startswith("-")]
            if files and parser.prog.split()[-1] in ("evaluate", "map") and len(files) == len(extras):
                from coexplore.cli.inputs import refuse_variables_file
                for f in [getattr(parsed, d, None) for d in ("arch", "problem", "mapping")] + files:
                    try:
                        refuse_variables_file(f)
                    except CoexploreError as exc:
                        parser.error(str(exc))
                takes = "ARCH [PROBLEM] MAPPING" if parser.prog.endswith("evaluate") else "ARCH [PROBLEM]"
                parser.error(f"more files than it takes ({takes}): {' '.join(extras)} left over. A Timeloop "
                             "file list is given by role: constraints with --constraints F (repeatable), "
                             "the energy table with "
                             "--ert F, mapper settings with --searcher F; Accelergy components/*.yaml are not "
                             "read (give the ERT Accelergy wrote, or `coexplore energy tables`)")
            known = [e for e in extras if e.split("=")[0] in parser._option_string_actions]
            if known and parser is not self:       # `coexplore --json evaluate ...`: its own option, too early
                parser.error(f"{' '.join(known)} is an option of `{parser.prog}`: give it after the command "
                             f"(`{parser.prog} ... {known[0]}`); before it only --plugin and --version are read")
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


class _VersionAction(argparse.Action):
    """`--version`, the installed version looked up only when asked (importlib.metadata and the
    scan of the installed packages cost ~0.1 s at every start)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0,
                         help="show program's version number and exit" if help is None else help)

    def __call__(self, parser, namespace, values, option_string=None):
        from coexplore.provenance import source_digest     # (the `coexplore_source` of run records)
        parser._print_message(f"coexplore {_version()} (source {source_digest()})\n", sys.stdout)   # (as argparse's)
        parser.exit()


def _chosen_command(argv: list[str] | None) -> str | None:
    """The sub-command `argv` names (its first word that is neither an option nor --plugin's
    value), when it is one of COMMANDS; else None (all are registered, for help and errors)."""
    args = iter(sys.argv[1:] if argv is None else argv)
    for a in args:
        if len(a) > 2 and "--plugin".startswith(a):      # (argparse takes an abbreviation)
            next(args, None)
        elif a in ("-h", "--help", "--version", "--"):
            return None
        elif not a.startswith("-"):
            return a if a in COMMANDS else None
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the arguments to parse, only the sub-command they name is registered (each
    command's module imports what it runs, ~0.3 s for all of them), else every one."""
    parser = _Parser(
        prog="coexplore",
        description="DNN-accelerator co-exploration with Timeloop-compatible numbers.")
    parser.add_argument("--version", action=_VersionAction)
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE|FILE.py",
                        help="import a module of your own first, which registers searchers or schedulers "
                             "(repeatable; also $COEXPLORE_PLUGINS, comma-separated); see the README")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    chosen = _chosen_command(argv) if argv is not None else None
    for name in (chosen,) if chosen else COMMANDS:
        importlib.import_module(f"coexplore.cli.{name}").register(sub)
    for command in sub.choices.values():     # (listed in each command's --help: it may come after the command)
        command.add_argument("--plugin", action="append", default=argparse.SUPPRESS, metavar="MODULE|FILE.py",
                             help="import a module of your own first (as before the command; repeatable)")
    return parser

def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("coexplore")
    except PackageNotFoundError:        # run from a checkout without installing
        return "(not installed)"


def _is_built_in(entry) -> bool:
    """Whether a registry entry (a class, a (class, config) pair) is coexplore's own, not a plugin's
    registered earlier in this process."""
    first = entry[0] if isinstance(entry, tuple) else entry
    return getattr(first, "__module__", "").startswith("coexplore.")


def _built_in_name(what: str, name: str, how: str = "") -> CoexploreError:
    return CoexploreError(f"a plugin registers the {what} '{name}', a built-in name{how}", key="--plugin",
                          expected="its own name for it (a built-in searcher or scheduler is not replaced)")


def _terminate(signum, frame):
    """SIGTERM (a job scheduler's or `timeout`'s stop) is handled like Ctrl-C: a running search
    stops after its batch (its state saved), a second SIGTERM or one outside a search at once."""
    from coexplore.stops import request_stop
    if not request_stop():
        raise KeyboardInterrupt


_SAID: set[str] = set()        # the lines said by this command (each once)
_LAYER_NOTE = re.compile(r"^coexplore: note: .* for layer (\S+?): ")   # a note about one layer of many


class NoteGroups:
    """Notes that differ only in the layer they name (`... idles for layer conv1: ...`): said for
    the first layer, the others counted and listed once at the end (`summary`)."""

    def __init__(self):
        self.first: dict[str, str] = {}
        self.others: dict[str, list[str]] = {}

    def admit(self, line: str) -> bool:
        """Whether to say `line` (False: the same note for another layer, now counted)."""
        m = _LAYER_NOTE.match(line)
        if m is None:
            return True
        key, layer = line[:m.start(1)] + "*" + line[m.end(1):], m.group(1)
        if key not in self.first:
            self.first[key] = layer
            return True
        if layer != self.first[key] and layer not in self.others.setdefault(key, []):
            self.others[key].append(layer)
        return False

    def is_first(self, line: str) -> bool:
        """`line` is the note its group admitted first (an admit that printed it elsewhere, e.g. into a
        layer's captured output, leaves it to be said again where that output is shown)."""
        m = _LAYER_NOTE.match(line)
        return m is not None and self.first.get(line[:m.start(1)] + "*" + line[m.end(1):]) == m.group(1)

    def summary(self) -> list[str]:
        """One line per set of other layers, naming the notes (by their words before the layer)
        that hold for them (notes on the same layers are said together, not in identical lines)."""
        together: dict[tuple, list[str]] = {}
        for key, layers in self.others.items():
            if layers:
                subject = key[len("coexplore: note: "):key.index(" for layer *")]
                together.setdefault((self.first[key], tuple(layers)), []).append(f'"{subject}"')
        out = []
        for (first, layers), subjects in together.items():
            shown = ", ".join(layers[:8]) + (f", ... ({len(layers) - 8} more)" if len(layers) > 8 else "")
            which = (f"note {subjects[0]} on layer {first} above holds" if len(subjects) == 1 else
                     f"notes {', '.join(subjects[:-1])} and {subjects[-1]} on layer {first} above hold")
            out.append(f"coexplore: note: the {which} for {len(layers)} more layer{'s' if len(layers) > 1 else ''} "
                       f"too: {shown}")
        return out


_GROUPS = NoteGroups()


def note_groups() -> NoteGroups:
    """This command's notes grouped by layer (`map --all-layers` passes its layers' notes through it)."""
    return _GROUPS


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """The library's CoexploreWarnings as the CLI's one-line `coexplore: warning:` / `note:` lines,
    each said once per command (the same mapspace is built more than once in a run)."""
    from coexplore.errors import CoexploreNote
    if issubclass(category, CoexploreWarning):
        kind = "note" if issubclass(category, CoexploreNote) else "warning"
        text = f"coexplore: {kind}: {message}"
        if text not in _SAID:
            _SAID.add(text)              # (said, or counted in a layer note's summary)
            if _GROUPS.admit(text):
                print(text, file=sys.stderr)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


def said_before(message: str) -> bool:
    """Whether this command already said `message` as a note or a warning (a sweep's points repeat
    what its layer-mapping phase said)."""
    return any(f"coexplore: {kind}: {message}" in _SAID for kind in ("note", "warning"))


_python_show_warning = warnings.showwarning


@contextlib.contextmanager
def command_settings(args, say_unused: bool = True):
    """What every command runs under (also in a worker process of one): the template names of
    --var, and the library's warnings shown as the CLI's lines; at the end, --var names no
    template asked for (`say_unused`: not in a worker, whose command says it once)."""
    from coexplore.cli.inputs import template_names
    from coexplore.spec import template
    template.set_data(template_names(getattr(args, "var", None)))
    _SAID.clear()
    _GROUPS.__init__()
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            warnings.simplefilter("always", CoexploreWarning)
            try:
                yield
            finally:
                for line in _GROUPS.summary():
                    print(line, file=sys.stderr)
            unused = template.unused_names()
            if unused and say_unused:
                warnings.warn(f"--var {', '.join(unused)}: no template among the inputs asks for "
                              f"{'it' if len(unused) == 1 else 'them'} (misspelt? --var sets names of the Jinja "
                              "templates, {{ NAME }}, not a spec's `variables:`, as timeloopfe's jinja_parse_data)",
                              CoexploreWarning)
    finally:
        template.set_data({})          # (a library caller after main() starts without them)


_COMMAND: list[str] = []       # this command's arguments, for the run records


def command_line() -> str | None:
    """The command being run, shell-quoted (`coexplore map simba resnet50 --layer conv1`), for a run
    record to say how to run it again; None outside `main` (a Python caller)."""
    import shlex
    return shlex.join(["coexplore", *_COMMAND]) if _COMMAND else None


def main(argv: list[str] | None = None) -> int:
    args_given = _plugins_first(sys.argv[1:] if argv is None else list(argv))
    _COMMAND[:] = args_given
    named = next((a for a in args_given if not a.startswith("-")), None)
    command = f"coexplore {named}" if named in COMMANDS else "coexplore"   # named before parsing: a Ctrl-C there
    CREATED.clear()
    CLAIMED.clear()
    streams = _printable_streams()
    plugins_env = os.environ.get("COEXPLORE_PLUGINS")     # (--plugin adds to it for the workers)
    try:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _terminate)
        args = build_parser(args_given).parse_args(args_given)
        action = getattr(args, f"{args.command}_command", None)      # (arch generate, energy check, cache clear)
        command = f"coexplore {args.command}" + (f" {action}" if isinstance(action, str) else "")
        _check_given(args)
        with command_settings(args):
            _load_plugins(args.plugin)
            return int(args.func(args) or 0)
    except WorkerDied as exc:        # a failed run, not bad input
        print(f"{command}: {exc.message}; {exc.expected}", file=sys.stderr)
        remove_empty_created()
        return 1
    except MachineLimit as exc:      # a full disk, a read-only file system: the machine, not the input
        print(f"{command}: error: {exc.format(cli=True)}", file=sys.stderr)
        remove_empty_created()
        return 1
    except CoexploreError as exc:
        print(f"{command}: error: {exc.format(cli=True)}", file=sys.stderr)
        remove_empty_created()
        return 2
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        remove_empty_created()
        return 130
    except BrokenPipeError:          # standard output closed early (`| head`): as a process SIGPIPE ends,
        with contextlib.suppress(OSError, ValueError):       # not a success a pipeline could take for one
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())            # (nothing more to flush at exit)
        remove_empty_created()
        return 141
    except OSError as exc:
        if exc.errno in _SYSTEM_ERRORS:        # the machine's limits (a full disk, a name too long), not a bug
            where = f"{exc.filename}: " if exc.filename else ""
            print(f"{command}: error: {where}{exc.strerror or exc}"
                  + ("" if exc.filename else " (writing a result file or standard output)"), file=sys.stderr)
            remove_empty_created()
            return 2 if exc.errno in (errno.ENAMETOOLONG, errno.EACCES, errno.EPERM) else 1
        _internal(command)
        return 3
    except MemoryError as exc:       # the machine's limit, as a full disk: one line, what to make smaller
        said = f" ({exc})" if str(exc) else ""
        print(f"{command}: error: out of memory{said}: the run needs more memory than this machine gives it "
              "(a smaller population or batch_size, budget, or input)", file=sys.stderr)
        remove_empty_created()
        return 1
    except Exception:      # a bug, not bad input: keep the traceback, and an exit code of its own
        _internal(command)
        return 3
    finally:
        release_held()
        if plugins_env is None:                          # (a library caller's environment as it was)
            os.environ.pop("COEXPLORE_PLUGINS", None)
        else:
            os.environ["COEXPLORE_PLUGINS"] = plugins_env
        for stream, errors in streams:                # (a library caller's streams as they were)
            with contextlib.suppress(AttributeError, ValueError, OSError):
                stream.reconfigure(errors=errors)


_NAME = re.compile(r"[A-Za-z0-9_.+-]+")       # a plugin's searcher or scheduler name


def _plugins_first(argv: list[str]) -> list[str]:
    """`--plugin X` (or `--plugin=X`) given after the command, as options may come anywhere: moved
    before it, where the main parser reads it (arguments after `--` are left alone)."""
    front, rest, it = [], [], iter(argv)
    for a in it:
        if a == "--":
            rest += [a, *it]
            break
        if a == "--plugin":
            front += [a, next(it, "")]
        elif a.startswith("--plugin="):
            front.append(a)
        else:
            rest.append(a)
    return front + rest


def _load_plugins(given: list[str]) -> None:
    """Import the plugins (`--plugin`, $COEXPLORE_PLUGINS) and say which built-in names they replaced
    (a layer searcher or an online policy) or could not (a system scheduler: the built-in wins)."""
    from coexplore import plugins
    if not given and not os.environ.get(plugins.ENV, "").strip():
        return
    from coexplore.online.schedulers import HEURISTICS
    from coexplore.search.registry import SEARCHERS
    from coexplore.system import schedule
    registries = {"layer searcher": SEARCHERS, "online policy": HEURISTICS, "system scheduler": schedule.CUSTOM}
    before = {what: dict(reg) for what, reg in registries.items()}
    loaded = plugins.load_all(given)
    for what, reg in registries.items():
        for name in sorted(k for k in reg if before[what].get(k) is not reg[k]):
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise CoexploreError(f"a plugin registers the {what} name {name!r}", key="--plugin",
                                     expected="a name of letters, digits and _ . + - (it is typed as an option "
                                              "and names result folders)")
    # a built-in name taken by a plugin is refused, for every kind alike: replacing one would change
    # what that name runs for every command, and its bundled mapper file would set another class's options
    taken = [(what, name, "") for what in ("layer searcher", "online policy")
             for name in sorted(k for k in before[what] if registries[what].get(k) is not before[what][k]
                                and _is_built_in(before[what][k]))]
    taken += [("system scheduler", name, " (names are read case-blind)")
              for name in sorted(k for k in schedule.CUSTOM if k.lower() in schedule.SEARCHERS)]
    if taken:
        for what, reg in registries.items():          # (the registries as they were, for a caller that goes on)
            reg.clear()
            reg.update(before[what])
        raise _built_in_name(*taken[0])
    if loaded and all(dict(reg) == before[what] for what, reg in registries.items()):   # ("," names none)
        warnings.warn(f"the plugin{'s' if len(loaded) > 1 else ''} {', '.join(loaded)} registered no searcher or "
                      "scheduler (see the README's \"Your own searchers and schedulers (--plugin)\": SEARCHERS, "
                      "schedule.CUSTOM, HEURISTICS)",
                      CoexploreWarning)


def _printable_streams() -> list:
    """Standard output and error print what is not UTF-8 (a file name's bytes) as \udcff escapes
    for this command; returns what to restore."""
    changed = []
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):
            errors = stream.errors
            stream.reconfigure(errors="backslashreplace")
            changed.append((stream, errors))
    return changed


# options and arguments that name a file or folder: given empty ('') they name nothing (the current
# folder, or the default, would be used silently)
_PATH_ARGS = {"out": "--out", "cache": "--cache", "arch": "ARCH", "problem": "PROBLEM", "mapping": "MAPPING",
              "system": "SYSTEM.yaml", "ert": "--ert", "table": "--table", "trace": "--trace", "policy": "--policy",
              "workload": "--workload", "constraints": "--constraints", "timeloop_dir": "--timeloop-dir"}


_NAME_ARGS = {"searcher": ("--searcher", "a searcher name or a mapper YAML"),
              "layer_searcher": ("--layer-searcher", "a searcher name or a mapper YAML"),
              "schedulers": ("--schedulers", "comma-separated scheduler names"),
              "objective": ("--objective", "an objective (edp, energy, latency) or an expression"),
              "loads": ("--loads", "comma-separated loads, e.g. 0.5,0.8")}


def _check_given(args) -> None:
    """Refuse an empty path and options that contradict each other (`--cache` with `--no-cache`)."""
    for attr, name in _PATH_ARGS.items():
        given = getattr(args, attr, None)
        if given == "" or (isinstance(given, list) and "" in given):
            raise CoexploreError("an empty path", key=name, expected="a file or folder name")
    for attr, (name, expected) in _NAME_ARGS.items():     # given empty, the default would run silently
        if getattr(args, attr, None) == "":
            raise CoexploreError("an empty value", key=name, expected=expected)
    if getattr(args, "no_cache", False) and getattr(args, "cache", None):
        raise CoexploreError(f"--cache {args.cache} with --no-cache", key="--cache",
                             expected="one of them: --no-cache reads and writes no cache")


# OSErrors that are the machine's or the input's, said in one line: a name too long (exit 2), no
# space or quota left, a read-only file system, an I/O error (exit 1)
# the machine's limits (exit 1) and paths this user may not write or name (exit 2): one line, no traceback
_SYSTEM_ERRORS = {errno.ENAMETOOLONG, errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EACCES, errno.EPERM}


def _internal(command: str) -> None:
    """A bug: the traceback, a request to report it."""
    import traceback
    traceback.print_exc()
    print(f"{command}: internal error (a bug in coexplore; please report it with the command and its "
          "input files)", file=sys.stderr)
    remove_empty_created()


def entry() -> None:
    """The `coexplore` console script: `main`, then exit with its code. Once `main` has returned,
    its results are written: a Ctrl-C or SIGTERM that lands while the interpreter shuts down
    (~0.1 s) no longer kills the process by that signal, which would hide the exit code."""
    code = main()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(code)


if __name__ == "__main__":
    entry()
