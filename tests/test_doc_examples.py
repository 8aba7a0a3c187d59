"""The Python examples in README.md and docs/*.md run, and print what their comments say.

Each ```python block runs from the repository root (its paths are relative to it; /tmp/demo and
/tmp/best_mapping.yaml are redirected into the test's folder). For every `print(...)` line, its
trailing comment or the comment line right after it states the output: one of the two must match
the printed line (exactly, or as its start followed by a space, ':' or ';' and an explanation;
'...' in a comment stands for any text). A print without such a comment is only run.
"""

from __future__ import annotations

import builtins
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        for i, code in enumerate(re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)):
            out.append((f"{doc.relative_to(ROOT)}#{i}", code))
    return out


def _comment(line: str) -> str | None:
    """The comment of a source line (a '#' outside string literals), stripped."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[i + 1:].strip()
    return None


def matches(printed: str, comment: str) -> bool:
    if "..." in comment:
        pieces = comment.split("...")
        if not printed.startswith(pieces[0]):
            return False
        at = len(pieces[0])
        for piece in pieces[1:]:
            found = printed.find(piece, at)
            if found < 0:
                return False
            at = found + len(piece)
        return not pieces[-1] or printed.endswith(pieces[-1])
    return printed == comment or any(comment.startswith(printed + s) for s in (" ", ":", ";"))


def test_the_matcher_can_fail():
    assert matches("4", "4") and matches("None", "None: another seed") and matches("7 8", "7 8 (the optimum)")
    assert not matches("5", "4") and not matches("40", "4") and not matches("4", "40")
    assert matches("Layer(a=1, b=2, c=3)", "Layer(a=1, ..., c=3)") and not matches("Layer(a=2, c=3)", "Layer(a=1, ...)")


@pytest.mark.parametrize("name,code", _blocks(), ids=[n for n, _ in _blocks()])
def test_doc_example_runs_and_prints_what_it_says(name, code, tmp_path, monkeypatch):
    code = code.replace("/tmp/demo", str(tmp_path / "demo")).replace("/tmp/best_mapping.yaml",
                                                                     str(tmp_path / "best.yaml"))
    monkeypatch.chdir(ROOT)
    printed: dict[int, str] = {}

    def capture(*args, sep=" ", end="\n", file=None, flush=False):
        line = sys._getframe(1).f_lineno
        printed.setdefault(line, sep.join(str(a) for a in args))

    import types

    from coexplore.search import registry
    module = types.ModuleType("doc_example")      # a module of its own (dataclasses look it up)
    monkeypatch.setitem(sys.modules, "doc_example", module)
    monkeypatch.setattr(registry, "SEARCHERS", dict(registry.SEARCHERS))    # a searcher it registers stays there
    namespace = module.__dict__
    namespace["__builtins__"] = {**vars(builtins), "print": capture}
    exec(compile(code, name, "exec"), namespace)
    lines = code.splitlines()
    checked = 0
    for n, line in enumerate(lines, start=1):
        if not line.lstrip().startswith("print("):
            continue
        said = [c for c in (_comment(line),
                            _comment(lines[n]) if n < len(lines) and lines[n].lstrip().startswith("#") else None)
                if c]
        if not said:
            continue
        assert n in printed, f"{name} line {n} printed nothing"
        assert any(matches(printed[n], c) for c in said), f"{name} line {n} printed {printed[n]!r}, the doc says {said}"
        checked += 1
    assert checked or not any(l.lstrip().startswith("print(") for l in lines)


def test_python_dash_m_coexplore_is_the_command():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "coexplore", "map", "--searcher", "nosuch", "x.yaml"],
                       capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    assert r.returncode == 2 and r.stderr.startswith("coexplore map: error:") and "Traceback" not in r.stderr
