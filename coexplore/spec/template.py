"""Jinja2 templates as timeloopfe renders them (`top.yaml.jinja2` of the official exercises).

timeloopfe hands every input file to Accelergy's YAML reader, which renders it with Jinja2 (the
file's folder as the loader's, undefined names an error unless `| default(...)` gives one) and
these functions:
- `cwd()`: the template's folder; `add_to_path(p)`: more folders where relative paths are
  looked up (after the template's own); `find_path(p)`, `find_paths(p)`, `path_exists(p)`;
- `include(p, key)`: the YAML file `p` (itself rendered), or its subtree at the dotted `key`,
  pasted in as the object it is (its `!Component` / `!Container` tags kept), not as text;
- `include_all(glob, key)`: that for every matching file, as a list (one file: its subtree);
- `include_text(p)`: the rendered text of `p`, pasted in as it is.

`render` returns the document; `yamlio.load_yaml` calls it for a `.jinja` / `.jinja2` / `.j2`
file or one with `{{ }}` / `{% %}` in it, with the names set by `set_data` (`--var NAME=VALUE`).
"""

from __future__ import annotations

import copy
import glob
import itertools
import contextlib
import os
from pathlib import Path
from typing import Any

from coexplore.errors import CoexploreError, misspelt

SUFFIXES = (".jinja", ".jinja2", ".j2")
_DATA: dict[str, Any] = {}
_READ: set[str] = set()          # the files templates have read since set_data
_USED: set[str] = set()          # the names templates have asked for since set_data


def set_data(data: dict[str, Any]) -> None:
    """The names templates are rendered with (timeloopfe's `jinja_parse_data`)."""
    _DATA.clear()
    _DATA.update(data)
    _READ.clear()
    _USED.clear()


@contextlib.contextmanager
def with_names(extra: dict[str, Any]):
    """Render with `extra` over the names `set_data` gave (a system core's `var:`); yields the set
    of names the templates rendered meanwhile asked for (filled when the block ends)."""
    saved, used = dict(_DATA), set(_USED)
    _DATA.update(extra)
    _USED.clear()
    asked: set[str] = set()
    try:
        yield asked
    finally:
        asked |= _USED
        _DATA.clear()
        _DATA.update(saved)
        _USED.clear()
        _USED.update(used | (asked - set(extra)))     # a --var a core's template used counts as used


def unused_names() -> list[str]:
    """The names given that no template rendered since `set_data` refers to (a misspelt --var)."""
    return sorted(set(_DATA) - _USED)


def files_read() -> list[str]:
    """Every file a template pulled in since `set_data` (a run's result depends on them too)."""
    return sorted(_READ)


def data() -> dict[str, Any]:
    return dict(_DATA)


def is_template(path: str | Path, text: str) -> bool:
    """A `.jinja`/`.jinja2`/`.j2` file, or one with `{{ }}` / `{% %}` outside its `#` comments (a
    generated file's comment may quote a template)."""
    if Path(path).suffix in SUFFIXES:
        return True
    if "{{" not in text and "{%" not in text:
        return False
    return any("{{" in line.split("#", 1)[0] or "{%" in line.split("#", 1)[0] for line in text.splitlines())


def _sandbox():
    """Jinja2's sandbox (no access to Python's internals), with `**` and `*` bounded as in
    `expressions` (no `9**9**9`, no `'a' * 10**9`)."""
    from jinja2.sandbox import SandboxedEnvironment

    from coexplore.spec.expressions import bounded_power, bounded_product

    class Bounded(SandboxedEnvironment):
        intercepted_binops = frozenset(["**", "*"])

        def call_binop(self, context, operator, left, right):
            if operator == "**":
                return bounded_power(left, right)
            seq, n = (left, right) if isinstance(left, (str, list, tuple)) else (right, left)
            if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and n * len(seq) > 10 ** 6:
                raise OverflowError("a repeated text or list of more than 10^6 items")
            return bounded_product(left, right)

    return Bounded


class _Files:
    """Path lookup of one template: relative paths against its folder, then the added ones;
    absolute ones as they are; glob patterns expanded (regular files and folders alike)."""

    def __init__(self, path: Path, extra: list[str]):
        self.here = path.parent.resolve()
        self.extra = list(extra)

    def find_all(self, p: str) -> list[str]:
        p = str(p)
        roots = [""] if os.path.isabs(p) else [str(self.here), *self.extra]
        seen, out = set(), []
        for root in roots:
            for m in sorted(glob.glob(os.path.join(root, p) if root else p)):
                real = os.path.realpath(m)
                if real not in seen:
                    seen.add(real)
                    out.append(real)
        return out

    def find(self, p: str) -> list[str]:
        found = self.find_all(p)
        if not found:
            tried = f" (looked in {', '.join([str(self.here), *self.extra])})" if not os.path.isabs(str(p)) else ""
            raise _Failure(f"no file '{p}'{tried}")
        return found


def _loader(folder: Path):
    """Jinja's own `{% include %}` / `{% import %}` / `{% extends %}` loader (the template's folder),
    recording the files it reads as `include()` does (a run's record lists their digests)."""
    import jinja2

    class Recording(jinja2.FileSystemLoader):
        def get_source(self, environment, template):
            source, filename, uptodate = super().get_source(environment, template)
            _READ.add(os.path.realpath(filename))
            return source, filename, uptodate

    return Recording(str(folder))


class _Failure(Exception):
    """A template function's failure, reported with the template's file and line."""


_ORIGINS: dict[tuple[str, str], str] = {}   # (template, top-level key) -> the file include() took it from
_SOURCES: dict[str, str] = {}                # pasted object's name -> its file
_PASTED = itertools.count()


def with_origin(exc: CoexploreError, path: str | Path, key: str) -> CoexploreError:
    """`exc` about the template at `path`, saying which included file its top-level `key` came from."""
    top = str(exc.key or "").split(".")[0].split("[")[0]
    if top in _SPEC_KEYS and top != key:        # (an error in the spec's `variables:`: not the architecture's file)
        key = top
    source = _ORIGINS.get((os.path.realpath(path), key)) if exc.file == str(path) else None
    if source:
        exc.message += f" (its {key} comes from {source}, which the template includes)"
    return exc


_SPEC_KEYS = {"architecture", "problem", "mapping", "variables", "constraints", "mapspace", "components", "globals",
              "mapper", "sparse_optimizations"}   # a timeloopfe spec's top-level keys


def render(path: str | Path, text: str, names: dict[str, Any] | None = None,
           extra: list[str] | None = None) -> Any:
    """The document the template at `path` (whose text is `text`) renders to."""
    import re
    objects: dict[str, Any] = {}
    rendered = render_text(path, text, names, extra, objects)
    for key, name in re.findall(r"^([A-Za-z_][\w-]*):[ \t]*!included (\w+)", rendered, flags=re.M):
        if name in _SOURCES:
            _ORIGINS[(os.path.realpath(path), key)] = _SOURCES[name]
    from coexplore.spec.yamlio import loads_yaml_with
    return loads_yaml_with(rendered, path, objects)


def render_text(path: str | Path, text: str, names: dict[str, Any] | None, extra: list[str] | None,
                objects: dict[str, Any]) -> str:
    """The template's text with its Jinja evaluated; what `include` pastes in is put in `objects`
    and referred to in the text by a `!included NAME` tag."""
    import jinja2

    path = Path(path)
    names = dict(_DATA if names is None else names)
    files = _Files(path, extra or [])

    def add_to_path(p):
        # (this template's own folder too: `add_to_path(cwd())` makes it a search folder of the files
        # it includes, as Accelergy's loader passes the list down)
        files.extra.extend(m for m in files.find(p) if m not in files.extra)
        return ""

    def load(p: str) -> Any:
        from coexplore.spec.yamlio import load_yaml, loading, loads_yaml_with, read_text
        _READ.add(p)
        t = read_text(p)
        if not is_template(p, t):
            return load_yaml(p)
        with loading(p):                    # (a file that includes itself is refused)
            inner: dict[str, Any] = {}
            body = render_text(p, t, names, files.extra, inner)
            return loads_yaml_with(body, p, inner)

    def subtree(doc: Any, key: str, p: str) -> Any:
        for part in [k for k in str(key).split(".") if k]:
            if not isinstance(doc, dict) or part not in doc:
                raise _Failure(f"'{p}' has no key '{key}'")
            doc = doc[part]
        return doc

    def paste(value: Any, source: str) -> str:
        name = f"o{next(_PASTED)}"                # (unique across nested templates)
        objects[name] = value
        _SOURCES[name] = source
        return f"!included {name}"

    def include(p, key=""):
        found = files.find(p)
        if len(found) > 1:
            raise _Failure(f"'{p}' matches {len(found)} files; include takes one (include_all takes several)")
        return paste(subtree(load(found[0]), key, found[0]), found[0])

    def include_all(p, key=""):
        found = files.find(p)
        parts = [subtree(load(f), key, f) for f in found]
        return paste(parts[0] if len(parts) == 1 else parts, found[0] if len(found) == 1 else p)

    def include_text(p):
        from coexplore.spec.yamlio import loading, read_text
        out = []
        for f in files.find(p):
            _READ.add(f)
            t = read_text(f)
            with loading(f):
                out.append(render_text(f, t, names, files.extra, objects) if is_template(f, t) else t)
        return "\n".join(out)

    # sandboxed: a template reads files through the functions below and cannot reach Python's
    # internals (`cycler.__init__.__globals__.os`) or build huge ranges
    env = _sandbox()(loader=_loader(path.parent), undefined=jinja2.StrictUndefined)
    env.globals.update(cwd=lambda: str(files.here), add_to_path=add_to_path,
                       find_path=lambda p: files.find(p)[0], find_paths=files.find_all,
                       path_exists=lambda p: bool(files.find_all(p)), include=include,
                       include_all=include_all, include_text=include_text)
    try:
        from jinja2 import meta
        tree = env.parse(text)                       # parsed once: the names it asks for, then rendered
        _USED.update(meta.find_undeclared_variables(tree))
        return env.from_string(tree).render(**names)
    except jinja2.UndefinedError as exc:
        where, line = _template_frame(exc, path)
        import re
        missing = re.search(r"'([^']+)' is undefined", exc.message or "")
        typo = misspelt([missing[1]], names, have="the names given have", cutoff=0.75) if missing else ""
        raise CoexploreError(f"template{f' line {line}' if line else ''}: {exc.message}{typo}", file=where,
                             expected="its value, given with --var NAME=VALUE (evaluate, map, energy tables; "
                                      "var: {NAME: VALUE} in a system's core entry; template.set_data in Python; "
                                      "timeloopfe's jinja_parse_data), or a | default(...) in the template"
                             ) from None
    except jinja2.TemplateSyntaxError as exc:           # (in an {% include %}d file: that file's name and line)
        raise CoexploreError(f"template syntax at line {exc.lineno}: {exc.message}",
                             file=exc.filename or str(path)) from None
    except _Failure as exc:
        raise CoexploreError(f"template: {exc}", file=str(path)) from None
    except jinja2.exceptions.SecurityError as exc:
        raise CoexploreError(f"template: not allowed: {exc}", file=str(path)) from None
    except jinja2.TemplateNotFound as exc:
        raise CoexploreError(f"template: no file '{exc.name}' for {{% include %}} / {{% import %}} (looked in "
                             f"{files.here})", file=str(path)) from None
    except RecursionError as exc:
        raise CoexploreError("template: an {% include %} / {% import %} loop (a template that includes "
                             f"itself, directly or through others: {_loop(exc, path)})", file=str(path)) from None
    except CoexploreError:
        raise
    except Exception as exc:          # an error inside the template's own expressions
        raise CoexploreError(f"template: {type(exc).__name__}: {exc}", file=str(path)) from None


def _loop(exc: BaseException, path) -> str:
    """The files of an include loop, from its traceback's template frames: `top -> a -> b -> a`."""
    chain: list[str] = []
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        name = str(path) if name == "<template>" else name
        if tb.tb_frame.f_code.co_name in ("root", "top-level template code"):   # (a template's entry in Jinja)
            if name in chain:
                return " -> ".join(os.path.basename(n) for n in chain[chain.index(name):] + [name])
            chain.append(name)
        tb = tb.tb_next
    return " -> ".join(os.path.basename(n) for n in chain) or os.path.basename(str(path))


def _template_frame(exc: BaseException, path) -> tuple[str, int | None]:
    """The template file and line an error was raised at: Jinja gives its traceback frames the
    template's name and line (the top template's is '<template>'; an {% include %}d one's its path)."""
    where, line = str(path), None
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name == "<template>" or (name.endswith((".jinja", ".jinja2", ".j2", ".yaml", ".yml"))
                                    and os.path.isfile(name)):
            where, line = (str(path) if name == "<template>" else name), tb.tb_lineno
        tb = tb.tb_next
    return where, line


def included(objects: dict[str, Any], name: str) -> Any:
    """The object an `!included NAME` tag stands for (a copy: one object may be pasted twice)."""
    return copy.deepcopy(objects[name])
