"""The user's own modules that register searchers and schedulers (`coexplore --plugin`, $COEXPLORE_PLUGINS).

A plugin is a Python module (by import name) or a `.py` file; importing it is all that happens,
so it registers what it adds itself, where the built-in ones live:
    coexplore.search.registry.SEARCHERS[name] = (SearcherClass, ConfigDataclass)   # layer mappers
    coexplore.system.schedule.CUSTOM[name] = factory(space, table, budget, seed)    # system schedulers
    coexplore.online.schedulers.HEURISTICS[name] = SchedulerClass                   # online policies
The names given are kept in $COEXPLORE_PLUGINS, so the worker processes of `--jobs N` (spawned,
they start afresh) import them too.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path

from coexplore.errors import CoexploreError

ENV = "COEXPLORE_PLUGINS"
EXPECTED = "a Python module's import name (my_searchers) or a .py file that registers searchers or schedulers"
_LOADED: dict[str, object] = {}          # as given -> the module


def is_plugins(obj) -> bool:
    """Whether `obj` (an instance, a class or a function) comes from outside coexplore: a plugin's code."""
    owner = obj if isinstance(obj, type) or callable(obj) and hasattr(obj, "__code__") else type(obj)
    return str(getattr(owner, "__module__", None) or "").split(".")[0] != "coexplore"


def prints_to_stderr(obj):
    """A block in which what a plugin's `obj` prints goes to stderr (stdout may carry a command's
    --json); coexplore's own code is left as it is."""
    return contextlib.redirect_stdout(sys.stderr) if is_plugins(obj) else contextlib.nullcontext()


def label(obj) -> str:
    """How a message names a plugin's class or function: its file and name (`my_searchers.py's Hill`)
    for a plugin file, else its module and name."""
    owner = obj if isinstance(obj, type) or callable(obj) and hasattr(obj, "__code__") else type(obj)
    module = str(getattr(owner, "__module__", ""))
    path = getattr(sys.modules.get(module), "__file__", None)
    if module.startswith("_coexplore_plugin_") and path:
        return f"{Path(path).name}'s {owner.__qualname__}"
    return f"{module}.{owner.__qualname__}"


@contextlib.contextmanager
def plugins_code(obj, what: str, expected: str, key: str, option: str | None = None):
    """A block that says an exception a plugin's `obj` (an instance, class or function) raised in
    `what` as the plugin's: one CoexploreError naming it, not a bug of coexplore's (a traceback);
    what it prints goes to stderr (stdout may carry a command's --json). coexplore's own code is
    left as it is (its exceptions are bugs, shown as such)."""
    own = not is_plugins(obj)
    try:
        with prints_to_stderr(obj):
            yield
    except (CoexploreError, KeyboardInterrupt, MemoryError):
        raise
    except Exception as exc:
        if own:
            raise
        raise CoexploreError(f"{label(obj)} (a plugin's code) raised {type(exc).__name__} in {what}: {exc}",
                             key=key, option=option, expected=expected) from exc


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.replace(os.pathsep, ",").split(",") if p.strip()]


def module_name(path: Path) -> str:
    """The private module name of a plugin file: its stem and a digest of its resolved path (never a
    module of its own name, `random.py` or `numpy.py`, and two files of one stem stay apart); worker
    processes derive the same name, so pickled classes of the plugin find it there."""
    stem = "".join(c if c.isalnum() or c == "_" else "_" for c in path.stem)
    return f"_coexplore_plugin_{stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"


def load(name: str, key: str = "--plugin"):
    """Import one plugin (once per process); errors, its own included, as one CoexploreError. What it
    prints while importing goes to stderr (stdout may carry a command's --json)."""
    if name in _LOADED:
        return _LOADED[name]
    try:
        with contextlib.redirect_stdout(sys.stderr):
            module = _import_file(name, key) if _is_file(name) else _import_module(name)
    except CoexploreError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name and name.split(".")[0] == exc.name.split(".")[0]:
            raise CoexploreError(f"no module named '{name}'", key=key,
                                 expected=EXPECTED + " (on PYTHONPATH or in the current folder)") from None
        raise CoexploreError(f"plugin {name} failed to import: {type(exc).__name__}: {exc}", key=key,
                             expected=EXPECTED) from None
    except (Exception, SystemExit) as exc:            # the plugin's own bug (or exit): one line, with where
        raise CoexploreError(f"plugin {name} failed to import: {type(exc).__name__}: {exc}", key=key,
                             expected=EXPECTED) from None
    _LOADED[name] = module
    return module


def _import_file(name: str, key: str):
    path = Path(name).expanduser().resolve()
    if not path.is_file():
        raise CoexploreError("no such file", file=name, key=key, expected=EXPECTED)
    mod_name = module_name(path)
    if str(path.parent) not in sys.path:       # its sibling modules importable, after everything else
        sys.path.append(str(path.parent))
    spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module    # (pickled classes name it: workers import it the same way)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(mod_name, None)
        raise
    return module


def _import_module(name: str):
    """A module by import name, the current folder searched first (as `python -m` does) for this
    import, then last: a module the plugin imports later from it is found, and the folder's files do
    not shadow Python's or installed modules imported later."""
    added = "" not in sys.path and os.getcwd() not in sys.path
    if added:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(name)
    finally:
        if added:
            with contextlib.suppress(ValueError):
                sys.path.remove(os.getcwd())
            sys.path.append(os.getcwd())


def digests() -> dict[str, str]:
    """Each loaded plugin's source file -> SHA-256 of its bytes (for run records and keys: an edited
    plugin is another run)."""
    out = {}
    for name, module in _LOADED.items():
        f = getattr(module, "__file__", None)
        if f and Path(f).is_file():
            out[name] = hashlib.sha256(Path(f).read_bytes()).hexdigest()
    return out


def load_all(names: list[str] | None = None) -> list[str]:
    """Import $COEXPLORE_PLUGINS and then `names`; record them all in $COEXPLORE_PLUGINS (for worker
    processes). Returns the plugins loaded."""
    from_env = [_absolute(n) for n in _split(os.environ.get(ENV, ""))]
    for n in from_env:
        load(n, key=f"${ENV}")
    given = []
    for n in names or []:
        if not n.strip():
            raise CoexploreError("an empty name", key="plugins", option="--plugin", expected=EXPECTED)
        n = _absolute(n)
        load(n)
        given.append(n)
    everything = list(dict.fromkeys(from_env + given))
    if everything:
        os.environ[ENV] = ",".join(everything)
    return everything


def _is_file(name: str) -> bool:
    """A plugin named by a path (`x.py`, `dir/x`), not by an import name."""
    return name.endswith(".py") or os.sep in name or (os.altsep is not None and os.altsep in name)


def _absolute(name: str) -> str:
    """A file plugin by its absolute path (a worker in another folder finds it; one file given two
    ways is imported once); a module name as given."""
    return str(Path(name).expanduser().resolve()) if _is_file(name) else name


def loaded() -> list[str]:
    """The plugins this process imported, as given."""
    return list(_LOADED)
