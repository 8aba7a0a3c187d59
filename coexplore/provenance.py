"""Which code made a result: the package version and a digest of its source and data files.

Two checkouts of one version number can differ (a `git pull`, a local edit), so cached results,
search checkpoints and run records carry the digest too: results of other code are recomputed,
not reused."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path


def source_digest(root: Path | None = None) -> str:
    """16 hex digits of SHA-256 over the package's (or `root`'s) Python sources and data files,
    paths included; the package's is computed once per process. The example files a regular
    install copies into `_bundled/` are left out (a clone has none there), so an installed package
    and its clone's source give one digest: they run the same code."""
    return _package_digest() if root is None else _digest(Path(root))


@functools.lru_cache(maxsize=1)
def _package_digest() -> str:
    return _digest(Path(__file__).resolve().parent)


def _digest(root: Path) -> str:
    digest = hashlib.sha256()
    for f in sorted(root.rglob("*")):
        parts = f.relative_to(root).parts
        if f.is_file() and "__pycache__" not in parts and parts[0] != "_bundled" and f.suffix not in (".pyc", ".pyo"):
            digest.update(f.relative_to(root).as_posix().encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()[:16]


def code_version() -> str:
    """`<version>+<source digest>`, e.g. `0.1.0+3f2a...`: what a cached result or checkpoint must match."""
    import coexplore
    return f"{coexplore.__version__}+{source_digest()}"


# the installed libraries a result's numbers can depend on (the search's random draws, the fitted
# energy models, the RL environment), named in every run record beside the source digest
LIBRARIES = ("numpy", "scipy", "nevergrad", "cma", "gymnasium", "pyyaml", "jinja2")


@functools.lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    """Python's and the libraries' versions, for a run record (a library not installed is left out)."""
    import platform
    from importlib import metadata
    out = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def run_header() -> dict:
    """What every run record starts with: coexplore's version and source digest, the libraries'
    versions and, when plugins are loaded, their files' digests (a plugin's searcher or scheduler
    decides results too: an edited plugin makes another run, never a resumed one)."""
    import coexplore
    from coexplore import plugins
    own = plugins.digests()
    return {**({"plugins_sha256": own} if own else {}), "coexplore_version": coexplore.__version__,
            "coexplore_source": source_digest(), "versions": versions()}
