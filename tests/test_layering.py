"""Data flows one way (spec -> model -> mapspace/search -> system -> online -> sweep -> report -> CLI): a package never imports
one above it. Checked on the source, so a late (function-level) import counts too."""

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "coexplore"

# package -> the coexplore packages (and plotting) it must never import
FORBIDDEN = {
    "spec": {"model", "mapspace", "search", "system", "arch", "cli", "online", "energy", "sweep", "report", "matplotlib"},
    "model": {"mapspace", "search", "system", "arch", "cli", "online", "sweep", "report", "matplotlib"},
    "energy": {"model", "arch", "mapspace", "search", "system", "cli", "online", "sweep", "report", "matplotlib"},
    "mapspace": {"search", "system", "cli", "online", "sweep", "report", "matplotlib"},
    "search": {"system", "cli", "online", "sweep", "report", "matplotlib"},
    "arch": {"model", "mapspace", "search", "system", "cli", "online", "sweep", "report", "matplotlib"},
    "system": {"cli", "online", "sweep", "report", "matplotlib"},
    # a sweep runs the layers below and records numbers; drawing them is the report's job
    "sweep": {"cli", "report", "matplotlib"},
    # the online simulator and its schedulers use the job tables and the contention model below; no plots
    "online": {"cli", "sweep", "report", "matplotlib", "search", "mapspace"},
    # the report draws records (coexplore.sweep's objectives and front) and a point's schedule (its
    # Gantt chart, from the system layer's trace); it never runs a search
    "report": {"cli", "search", "mapspace", "model"},
}
SUBPACKAGES = {"spec", "model", "energy", "mapspace", "search", "arch", "system", "online", "sweep", "report", "cli",
               "workers"}
# worker processes and Ray tasks run any layer's functions, handed to them; they import none of the layers
FORBIDDEN["workers"] = (SUBPACKAGES - {"workers"}) | {"matplotlib"}
# the package's top-level modules serve every layer, so they import none of the sub-packages
TOP_LEVEL = ("errors.py", "progress.py", "bundled.py", "plugins.py", "provenance.py", "seeds.py", "ranks.py", "stops.py",
             "__init__.py")
# modules that are interfaces, not implementations: the searchers' parameter-space type is what a
# mapspace encodes into (as an environment imports gymnasium.spaces)
ALLOWED = {"mapspace": {"coexplore.search.space"}}


def imported(path: Path, allowed: set[str] = frozenset()) -> set[str]:
    """Top-level coexplore sub-packages (or third-party roots) that a module imports."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.ImportFrom):      # relative: resolved against the module's package
            pkg = path.resolve().parent.relative_to(PKG.parent).parts
            base = ".".join(pkg[:len(pkg) - node.level + 1])
            names = [f"{base}.{node.module}" if node.module else base]
        if isinstance(node, ast.ImportFrom) and names == ["coexplore"]:   # `from coexplore import system`
            names = [f"coexplore.{a.name}" for a in node.names]
        for n in names:
            if n in allowed:
                continue
            parts = n.split(".")
            out.add(parts[1] if parts[0] == "coexplore" and len(parts) > 1 else parts[0])
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_upward_imports(package):
    bad = {}
    for path in sorted((PKG / package).rglob("*.py")):
        hits = imported(path, ALLOWED.get(package, set())) & FORBIDDEN[package]
        if hits:
            bad[str(path.relative_to(PKG))] = sorted(hits)
    assert not bad, f"upward imports: {bad}"


@pytest.mark.parametrize("module", TOP_LEVEL)
def test_top_level_modules_import_no_subpackage(module):
    assert not imported(PKG / module) & SUBPACKAGES


def test_the_checker_sees_relative_imports():
    f = PKG / "search" / "_layering_probe.py"      # resolved against coexplore/search, never written
    tree = "from ..system import schedule\nfrom . import base\nfrom .. import cli\nfrom coexplore import model\n"
    import unittest.mock
    with unittest.mock.patch.object(Path, "read_text", return_value=tree):
        assert imported(f) == {"system", "search", "cli", "model"}


def test_the_checker_sees_late_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def g():\n    from coexplore.search.marl import MARL\n    import matplotlib.pyplot\n")
    assert imported(f) == {"search", "matplotlib"}
