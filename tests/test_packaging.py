"""What a built package carries: setup.py's build hook bundles exactly the example folders' files
(a file since renamed is not shipped from an old build folder), and MANIFEST.in puts those folders
in the sdist, from which the wheel is built (without them every bundled name failed)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("arch", "problems", "mappers")


def test_the_sdist_manifest_holds_the_bundled_folders_and_the_licence():
    lines = {tuple(line.split()) for line in (ROOT / "MANIFEST.in").read_text().splitlines()
             if line.strip() and not line.startswith("#")}
    for kind in KINDS:
        assert ("graft", kind) in lines
    assert any(parts[0] == "include" and "LICENSE" in parts for parts in lines)
    assert "MIT" in (ROOT / "LICENSE").read_text()


def test_the_build_hook_bundles_the_folders_files_and_nothing_stale(tmp_path, monkeypatch):
    import runpy

    import setuptools
    monkeypatch.setattr(setuptools, "setup", lambda **kw: None)      # the hook's code, not a build
    hook = runpy.run_path(str(ROOT / "setup.py"))["bundle_examples"]
    stale = tmp_path / "coexplore" / "_bundled" / "mappers" / "renamed_since.yaml"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}\n")
    hook(tmp_path)
    for kind in KINDS:
        shipped = sorted(p.name for p in (tmp_path / "coexplore" / "_bundled" / kind).iterdir())
        assert shipped == sorted(p.name for p in (ROOT / kind).glob("*.yaml")) and shipped
