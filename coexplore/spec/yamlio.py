"""YAML reading/writing with Timeloop's tags and file-named errors.

Timeloop v0.4 files use tags such as `!Container`, `!Component`, `!Parallel`. They are read into
plain dicts carrying the tag under the key `"!"`, so the rest of the code works on dicts and
lists only, and written back with the same tags.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from pathlib import Path
from typing import Any

import yaml

from coexplore.errors import CoexploreError, write_error

TAG_KEY = "!"


class Quoted(str):
    """A YAML string written in quotes (`type: "LPDDR4"`): Accelergy and timeloopfe take it as
    text, never as an expression (`is_quoted_string`), so a quoted word that names a variable
    stays the word."""


def _text(loader: yaml.Loader, node: yaml.ScalarNode):
    value = loader.construct_scalar(node)
    return Quoted(value) if node.style in ('"', "'") else value


def _represent_quoted(dumper: yaml.Dumper, data: Quoted):
    return dumper.represent_str(str(data))


for _dumper in (yaml.SafeDumper, yaml.Dumper):
    _dumper.add_representer(Quoted, _represent_quoted)


class _RefuseRepeatedKeys:
    """Loader mixin that refuses a key given twice in one mapping (PyYAML keeps the last silently,
    so a repeated `depth:` would quietly win over the first)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                try:
                    key = self.construct_object(key_node, deep=True)
                    hash(key)
                except (TypeError, yaml.YAMLError):
                    continue
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key '{key}' appears twice in one mapping (first at line "
                        f"{seen[key] + 1})", key_node.start_mark)
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


class _MergeFirstWins:
    """Loader mixin: YAML's `<<:` merge key as the YAML spec, Accelergy (ruamel) and Timeloop read
    it: of `<<: [*a, *b]` the first mapping that has a key gives it, the mapping's own keys win.
    (PyYAML 6.0.3-6.0.4 let the last one win for keys longer than a character: yaml/pyyaml#953.)"""

    def flatten_mapping(self, node):
        merged, seen, own = [], set(), []
        for key_node, value_node in node.value:
            if key_node.tag != "tag:yaml.org,2002:merge":
                if key_node.tag == "tag:yaml.org,2002:value":
                    key_node.tag = "tag:yaml.org,2002:str"
                own.append((key_node, value_node))
                continue
            sources = [value_node] if isinstance(value_node, yaml.MappingNode) else \
                value_node.value if isinstance(value_node, yaml.SequenceNode) else None
            if sources is None or not all(isinstance(n, yaml.MappingNode) for n in sources):
                raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                        "expected a mapping or list of mappings for merging",
                                                        value_node.start_mark)
            for source in sources:
                self.flatten_mapping(source)
                for k, v in source.value:
                    key = (k.tag, k.value) if isinstance(k, yaml.ScalarNode) else id(k)
                    if key not in seen:
                        seen.add(key)
                        merged.append((k, v))
        node.value = merged + own          # (later pairs win when the mapping is built)


class _PyLoader(_RefuseRepeatedKeys, _MergeFirstWins, yaml.SafeLoader):
    """The pure-Python parser: its messages on malformed text are the more precise ones; it also
    reads an anchor defined twice (`_redefinable`)."""


class _Loader(_RefuseRepeatedKeys, _MergeFirstWins, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """libyaml's parser where PyYAML has it (its wheels do): the same documents 5-10x faster (a
    corpus `validate` spent 90% of its time parsing YAML)."""


def _tagged(loader: yaml.Loader, tag_suffix: str, node: yaml.Node):
    if tag_suffix == "included" and isinstance(node, yaml.ScalarNode) and hasattr(loader, "objects"):
        from coexplore.spec.template import included     # what a template's include() pasted in
        return included(loader.objects, loader.construct_scalar(node))
    if tag_suffix.lower() in ("include", "includejinja", "includedir"):
        return _include(loader, tag_suffix.lower(), node)
    if isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
        value = dict(value)
        value[TAG_KEY] = tag_suffix
        return value
    if isinstance(node, yaml.SequenceNode):
        items = loader.construct_sequence(node, deep=True)
        return _NoMerge(items) if tag_suffix == "nomerge" else items
    value = loader.construct_scalar(node)
    return {TAG_KEY: tag_suffix} if value == "" else value   # a bare `- !Nothing`


for _loader in (_PyLoader, _Loader):
    _loader.add_multi_constructor("!", _tagged)
    _loader.add_constructor("tag:yaml.org,2002:str", _text)
    # dates stay text, as in YAML 1.2 and Timeloop's reader (PyYAML's dates break cache keys and JSON)
    _loader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))
    # YAML 1.2 floats: PyYAML (YAML 1.1) reads `5e1` or `1.5e3` (no dot, or no exponent sign) as
    # text, where Timeloop's YAML reader and a user see numbers
    _loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
        list("-+0123456789."))


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(Quoted, _represent_quoted)


def _represent_dict(dumper: yaml.Dumper, data: dict):
    if TAG_KEY in data:
        items = [(k, v) for k, v in data.items() if k != TAG_KEY]
        return dumper.represent_mapping("!" + str(data[TAG_KEY]), items)
    return dumper.represent_mapping("tag:yaml.org,2002:map", list(data.items()))


_Dumper.add_representer(dict, _represent_dict)


class _NoMerge(list):
    """A list tagged `!nomerge` (until `merge_keys` has used the mark)."""


def _include(loader: yaml.Loader, how: str, node: yaml.Node):
    """Accelergy's `!include FILE` (the file's content, rendered if a template) and `!includedir
    DIR` (a list of the contents of DIR/*.yaml); relative paths from the including file's folder."""
    source = getattr(loader, "source", None)
    name = str(loader.construct_scalar(node)).strip() if isinstance(node, yaml.ScalarNode) else ""
    target = Path(source or ".").parent / name

    def fail(what: str, expected: str):
        raise CoexploreError(f"line {node.start_mark.line + 1}: !{how} {name}: {what}", file=source,
                             expected=expected)
    if not name:
        fail("no file name", "a file name after the tag")
    if how == "includedir":
        if not target.is_dir():
            fail(f"no folder {target}", "a folder of .yaml files, relative to this file's folder")
        return [load_yaml(f) for f in sorted(target.glob("*.yaml"))]
    if not target.is_file():
        fail(f"no file {target}", "a YAML file, relative to this file's folder")
    return load_yaml(target)


def read_text(path: str | Path) -> str:
    """A user's text file; missing, unreadable or not UTF-8 -> a CoexploreError naming the file."""
    path = Path(path)
    try:
        refuse_special_file(path)
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CoexploreError("file not found", file=str(path)) from None
    except IsADirectoryError:
        raise CoexploreError("is a directory, not a file", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise CoexploreError(f"not UTF-8 text (byte {exc.start}: {exc.reason})", file=str(path),
                             expected="a UTF-8 text file") from None
    except OSError as exc:
        raise CoexploreError(f"cannot read file: {exc.strerror}", file=str(path)) from None


def refuse_special_file(path: str | Path) -> None:
    """A path that is a FIFO, a socket or a device, not a file: refused before it is opened (reading a
    FIFO waits for a writer forever)."""
    import stat
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return                      # (the read says what is wrong: missing, a symlink loop, no permission)
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise CoexploreError("not a regular file (a named pipe, socket or device)", file=str(path),
                             expected="a file")


MAX_DEPTH = 200       # nesting of lists and mappings a YAML input may have (Timeloop's files: ~20)


def _nested(path) -> CoexploreError:
    return CoexploreError(f"nested more than {MAX_DEPTH} lists or mappings deep", file=None if path is None
                          else str(path), expected="a Timeloop/coexplore input (at most a few dozen levels)")


def _too_deep(doc: Any, path) -> None:
    """Refuse a document nested deeper than MAX_DEPTH (the readers walk it recursively)."""
    stack = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _nested(path)
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def load_yaml(path: str | Path) -> Any:
    """Parse a YAML file; any failure becomes a CoexploreError naming the file. A Jinja2 template
    (`.jinja2`, or `{{ }}` / `{% %}` in it) is rendered first, as timeloopfe renders it
    (`coexplore.spec.template`)."""
    with loading(path):
        text = read_text(path)
        from coexplore.spec import template
        return template.render(path, text) if template.is_template(path, text) else loads_yaml(text, path)


_READING = threading.local()   # per thread: the files being read, outermost first (an include loop is refused)


@contextlib.contextmanager
def loading(path: str | Path):
    """Mark `path` as being read (in this thread: two threads may read one file at once) while its
    includes are read."""
    real = os.path.realpath(path)
    open_now = _READING.__dict__.setdefault("files", [])
    if real in open_now:
        chain = " -> ".join(open_now[open_now.index(real):] + [real])
        raise CoexploreError(f"includes itself ({chain})", file=str(path), expected="includes without a loop")
    open_now.append(real)
    try:
        yield
    finally:
        open_now.pop()


def merge_keys(doc: Any) -> Any:
    """Accelergy's `<<<:` merge key, as timeloopfe reads it: a mapping's `<<<` (a mapping or a list
    of them) is merged in recursively; keys the mapping has win, nested mappings merge, lists
    join (the mapping's own items first); a value tagged `!nomerge` is taken as it is."""
    return _untag_nomerge(_resolve_merges(doc))


def _resolve_merges(doc: Any) -> Any:
    if isinstance(doc, list):
        return type(doc)(_resolve_merges(v) for v in doc)
    if not isinstance(doc, dict):
        return doc
    out = {k: _resolve_merges(v) for k, v in doc.items() if k != "<<<"}
    if "<<<" in doc:
        for base in doc["<<<"] if isinstance(doc["<<<"], list) else [doc["<<<"]]:
            out = _merged(out, _resolve_merges(base))
    return out


def _merged(own: Any, base: Any) -> Any:
    if isinstance(own, _NoMerge) or (isinstance(own, dict) and own.get(TAG_KEY) == "nomerge"):
        return own
    if isinstance(own, dict) and isinstance(base, dict):
        out = dict(own)
        for k, v in base.items():
            out[k] = _merged(own[k], v) if k in own else v
        return out
    if isinstance(own, list) and isinstance(base, list):
        return own + base
    return own


def _untag_nomerge(doc: Any) -> Any:
    if isinstance(doc, list):                 # (a _NoMerge becomes a plain list)
        return [_untag_nomerge(v) for v in doc]
    if isinstance(doc, dict):
        return {k: _untag_nomerge(v) for k, v in doc.items() if not (k == TAG_KEY and v == "nomerge")}
    return doc


def loads_yaml_with(text: str, path: str | Path | None, objects: dict[str, Any]) -> Any:
    """`loads_yaml` of a rendered template whose `!included NAME` tags stand for `objects`."""
    return loads_yaml(text, path, type("_Rendered", (_Loader,), {"objects": objects}))


def _redefinable(loader: type) -> type:
    """The pure-Python counterpart of `loader` that reads an anchor defined a second time (YAML
    1.2 allows it: later aliases refer to the later definition; Accelergy reads such files),
    which libyaml refuses."""
    class Redefinable(_PyLoader):
        def compose_node(self, parent, index):
            event = self.peek_event()
            if not isinstance(event, yaml.AliasEvent) and getattr(event, "anchor", None) is not None:
                self.anchors.pop(event.anchor, None)
            return super().compose_node(parent, index)
    for attr in ("objects", "source"):
        if hasattr(loader, attr):
            setattr(Redefinable, attr, getattr(loader, attr))
    return Redefinable


def loads_yaml(text: str, path: str | Path | None = None, loader: type = _Loader) -> Any:
    if "!include" in text.lower():      # includes are found from the including file's folder
        loader = type("_Including", (loader,), {"source": None if path is None else str(path)})
    try:
        try:
            doc = yaml.load(text, Loader=loader)
        except yaml.composer.ComposerError as exc:
            if "duplicate anchor" not in str(exc.context):
                raise
            doc = yaml.load(text, Loader=_redefinable(loader))
        except RecursionError:
            raise _nested(path) from None
        _too_deep(doc, path)
        return merge_keys(doc) if "<<<" in text or "!nomerge" in text else doc
    except yaml.YAMLError as exc:
        try:                    # malformed: the Python parser says more precisely what is wrong
            yaml.load(text, Loader=_PyLoader)
        except yaml.YAMLError as py_exc:
            exc = py_exc
        except RecursionError:  # (libyaml refuses nesting past its limit; the Python parser recurses)
            raise _nested(path) from None
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        if context and not context.startswith("while "):      # ("while scanning ..." says nothing more)
            problem = f"{context}: {problem}"
        if "mapping values are not allowed" in problem or "expected <block end>" in problem:
            problem += " (check this line's indentation against the lines above it)"
        rendered = " (as the template renders it)" if hasattr(loader, "objects") else ""
        raise CoexploreError(f"malformed YAML{rendered}{where}: {problem}",
                             file=None if path is None else str(path)) from None


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)


def write_text(path: str | Path, text: str) -> None:
    """Write a result file atomically (a temporary file renamed into place: a full disk or a kill
    never leaves a half-written file); failures are one-line CoexploreErrors naming the file."""
    write_texts({path: text})


def write_texts(files: dict) -> None:
    """Write several result files of one run together: each to a temporary file first, then all
    renamed into place in the order given (the run's record last), so a kill leaves the old set or
    the new one (but for the microseconds of the renames), not a folder mixing two runs' files."""
    import os
    import tempfile
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in files.items():
            path = Path(path)
            if path.is_dir():                     # (checked before any file is replaced)
                raise CoexploreError("is a folder", file=str(path), expected="a file name free for the result")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
                staged.append((tmp, path))
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(fd, 0o666 & ~umask)         # as a plain open() would (mkstemp makes it private)
                # (a name from a file name that is not UTF-8 holds surrogates: written as \udcff, readable)
                with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
                    fh.write(text)
                    fh.flush()
                    os.fsync(fh.fileno())            # on disk before it replaces the old file (a power loss)
            except OSError as exc:
                raise write_error(exc, f"cannot write: {exc.strerror or exc}", file=str(path),
                                  expected="a writable file in a folder with free space") from None
        while staged:
            tmp, path = staged[0]
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise write_error(exc, f"cannot write: {exc.strerror or exc}", file=str(path),
                                  expected="a writable file in a folder with free space") from None
            staged.pop(0)
    finally:
        for tmp, _ in staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def yaml_text(data: Any, header: str | None = None) -> str:
    """`data` as YAML text, after `header` as comment lines."""
    text = dump_yaml(data)
    if header:
        text = "".join(f"# {line}\n" for line in header.splitlines()) + text
    return text


def write_yaml(path: str | Path, data: Any, header: str | None = None) -> None:
    write_text(path, yaml_text(data, header))


# file stems and folder names that say what a file is, not which design or layer it holds
_GENERIC = {"arch", "architecture", "processed", "parsed-processed-input", "flattened_architecture",
            "timeloop-mapper.flattened_architecture", "arch_dir", "inputs", "input", "ref", "outputs", "output",
            "problem", "prob", "layer", "workload", "mapping", "map", "design", "top"}


def _stem(file: str | Path) -> str:
    """A file's name without its YAML and template suffixes (top.yaml.jinja2 -> top)."""
    stem = Path(file).name
    for suffix in (".jinja2", ".jinja", ".j2", ".yaml", ".yml"):
        stem = stem[: -len(suffix)] if stem.endswith(suffix) else stem
    return stem


def is_generic_name(file: str | Path) -> bool:
    """Whether a file's name says nothing of what it holds (`problem.yaml`, `arch.yaml`)."""
    return _stem(file).lower() in _GENERIC


def name_from_path(file: str | Path, default: str) -> str:
    """A readable name for what a Timeloop input file holds: its stem without kind suffixes
    (`3level.arch.yaml` -> 3level, `conv1d+oc.prob.yaml` -> conv1d+oc), or, for generic stems
    (`arch.yaml`, `processed.yaml`, `parsed-processed-input.yaml`), the nearest folder whose name is
    not generic (`arches/simba_like/processed.yaml` -> simba_like, `<exercise>/inputs/arch_dir/arch.yaml`
    -> <exercise>); a number is named with its folder (`layer_shapes/alexnet/0.yaml` -> alexnet_0)."""
    p = Path(file)
    stem = _stem(p)
    for suffix in (".arch", ".architecture", ".prob", ".problem", ".layer", ".mapping", ".map"):
        stem = stem[: -len(suffix)] if stem.endswith(suffix) and len(stem) > len(suffix) else stem
    if stem.isdigit() and p.resolve().parent.name:       # layer_shapes/alexnet/0.yaml -> alexnet_0
        return f"{p.resolve().parent.name}_{stem}"
    if stem and stem.lower() not in _GENERIC:
        return stem
    for parent in p.resolve().parents:
        if parent.name and parent.name.lower() not in _GENERIC:
            return parent.name
    return default
