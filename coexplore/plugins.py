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

import importlib
import importlib.util
import os
import sys
from pathlib import Path

from coexplore.errors import CoexploreError

ENV = "COEXPLORE_PLUGINS"
EXPECTED = "a Python module's import name (my_searchers) or a .py file that registers searchers or schedulers"
_LOADED: dict[str, object] = {}          # as given -> the module


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.replace(os.pathsep, ",").split(",") if p.strip()]


def load(name: str, key: str = "--plugin"):
    """Import one plugin (once per process); errors, its own included, as one CoexploreError."""
    if name in _LOADED:
        return _LOADED[name]
    is_file = name.endswith(".py") or os.sep in name or (os.altsep is not None and os.altsep in name)
    try:
        if is_file:
            path = Path(name).expanduser().resolve()
            if not path.is_file():
                raise CoexploreError("no such file", file=name, key=key, expected=EXPECTED)
            module_name = path.stem if path.stem.isidentifier() else "coexplore_plugin"
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module    # (pickled classes name it: workers import it the same way)
            try:
                spec.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(module_name, None)
                raise
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())    # a module beside the command (as `python -m` finds it)
            module = importlib.import_module(name)
    except CoexploreError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name and name.split(".")[0] == exc.name.split(".")[0]:
            raise CoexploreError(f"no module named '{name}'", key=key,
                                 expected=EXPECTED + " (on PYTHONPATH or in the current folder)") from None
        raise CoexploreError(f"plugin {name} failed to import: {type(exc).__name__}: {exc}", key=key,
                             expected=EXPECTED) from None
    except Exception as exc:                          # the plugin's own bug: said in one line, with where
        raise CoexploreError(f"plugin {name} failed to import: {type(exc).__name__}: {exc}", key=key,
                             expected=EXPECTED) from None
    _LOADED[name] = module
    return module


def load_all(names: list[str] | None = None) -> list[str]:
    """Import $COEXPLORE_PLUGINS and then `names`; record them all in $COEXPLORE_PLUGINS (for worker
    processes). Returns the plugins loaded."""
    from_env = _split(os.environ.get(ENV, ""))
    for n in from_env:
        load(n, key=f"${ENV}")
    given = []
    for n in names or []:
        if not n.strip():
            raise CoexploreError("an empty name", key="--plugin", expected=EXPECTED)
        # a file is recorded by its absolute path: a worker in another folder finds it
        n = str(Path(n).expanduser().resolve()) if n.endswith(".py") or os.sep in n else n
        load(n)
        given.append(n)
    everything = list(dict.fromkeys(from_env + given))
    if everything:
        os.environ[ENV] = ",".join(everything)
    return everything


def loaded() -> list[str]:
    """The plugins this process imported, as given."""
    return list(_LOADED)
