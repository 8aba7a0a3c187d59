"""Shared fixtures: paths to the bundled reference data."""

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "timeloop_corpus"


@pytest.fixture(scope="session")
def corpus() -> Path:
    return CORPUS
