"""Build hook only (the project is described in pyproject.toml): copy the example folders arch/,
problems/ and mappers/ into the built package as coexplore/_bundled/, so that a regular
`pip install` finds bundled workloads and mapper settings (coexplore.bundled)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def bundle_examples(build_lib: str | Path) -> None:
    """Copy arch/, problems/ and mappers/ (their *.yaml) to <build_lib>/coexplore/_bundled/."""
    for kind in ("arch", "problems", "mappers"):
        files = sorted((ROOT / kind).glob("*.yaml"))
        if not files:          # a package without them would fail on every bundled name
            raise RuntimeError(f"{ROOT / kind}: no *.yaml files to bundle (a source tree without the "
                               "example folders? MANIFEST.in lists them for the sdist)")
        target = Path(build_lib) / "coexplore" / "_bundled" / kind
        shutil.rmtree(target, ignore_errors=True)      # a file since deleted or renamed is not shipped
        target.mkdir(parents=True)
        for f in files:
            shutil.copy2(f, target / f.name)


class BuildWithExamples(build_py):
    def run(self):
        super().run()
        bundle_examples(self.build_lib)


setup(cmdclass={"build_py": BuildWithExamples})
