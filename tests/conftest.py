"""Shared fixtures: paths to the bundled reference data."""

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "timeloop_corpus"


@pytest.fixture(scope="session")
def corpus() -> Path:
    return CORPUS


@pytest.fixture(autouse=True)
def _outputs_stay_in_tmp(tmp_path_factory, monkeypatch):
    """Every test (and every CLI it starts) runs in a scratch folder with a scratch result cache,
    so default output folders (results/...) and the cache never land in the checkout."""
    scratch = tmp_path_factory.mktemp("cwd")
    monkeypatch.chdir(scratch)
    monkeypatch.setenv("COEXPLORE_CACHE", str(scratch / "cache.sqlite"))


def stand_in_timeloop(folder: Path, monkeypatch, script: str) -> Path:
    """A stand-in `timeloop-model` on PATH: `script` (Python, dedented) run as folder/bin/timeloop-model."""
    import os
    import sys
    import textwrap
    exe = folder / "bin" / "timeloop-model"
    exe.parent.mkdir()
    exe.write_text(f"#!{sys.executable}\n" + textwrap.dedent(script))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    return exe
