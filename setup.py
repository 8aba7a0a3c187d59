"""Build hook only (the project is described in pyproject.toml): copy the example folders arch/,
problems/ and mappers/ into the built package as coexplore/_bundled/, so that a regular
`pip install` finds bundled workloads and mapper settings (coexplore.bundled)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithExamples(build_py):
    def run(self):
        super().run()
        for kind in ("arch", "problems", "mappers"):
            target = Path(self.build_lib) / "coexplore" / "_bundled" / kind
            target.mkdir(parents=True, exist_ok=True)
            for f in sorted((ROOT / kind).glob("*.yaml")):
                shutil.copy2(f, target / f.name)


setup(cmdclass={"build_py": BuildWithExamples})
