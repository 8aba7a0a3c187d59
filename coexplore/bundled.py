"""Where the repository's example folders are: `arch/`, `problems/` and `mappers/`.

From a checkout (or an editable install) they are the checkout's own folders; a regular
`pip install` copies them into the package (`coexplore/_bundled/`, see setup.py), so bundled names
such as `resnet50` or `--searcher marl` resolve the same way wherever coexplore runs.
"""

from __future__ import annotations

from pathlib import Path

KINDS = ("arch", "problems", "mappers")
_HERE = Path(__file__).resolve().parent


def bundled_dir(kind: str) -> Path:
    """The `kind` folder (one of KINDS): the checkout's if there is one, else the installed copy."""
    if kind not in KINDS:
        raise ValueError(f"unknown bundled folder {kind!r}")
    checkout = _HERE.parent / kind
    if checkout.is_dir() and (_HERE.parent / "pyproject.toml").is_file():
        return checkout
    return _HERE / "_bundled" / kind


def resolve(kind: str, name_or_path: str | Path) -> Path:
    """A path as given if it is a file, else the bundled `<kind>/<name>.yaml` of that name if there
    is one (`simba` -> arch/simba.yaml; also when a folder of that name is in the way, e.g. the one
    `coexplore arch generate simba --out simba` writes: a folder is never an input file), else the
    path as given (its reader reports it missing, or a folder). A missing relative `<kind>/<file>`
    is the bundled file of that name too when the working directory has no `<kind>/` folder
    (`mappers/marl.yaml`, `arch/simba_2x2.yaml`: the README's paths work outside a checkout), also
    one of another bundled folder (its reader then says which argument it belongs to)."""
    p = Path(name_or_path)
    if p.is_file():
        return p
    # (not when the working directory has a folder of that name: a typo there is the user's file missing)
    if not p.is_absolute() and len(p.parts) == 2 and p.parts[0] in KINDS:
        # (also another kind's file: `problems/resnet50.yaml` given as a system is then read, and said to
        # belong in another argument, as in a checkout)
        folder = p.parts[0]
        cand = bundled_dir(folder) / p.parts[1]
        if cand.is_file() and not Path(folder).exists():
            return cand
        if cand.is_file() and folder == kind:   # the user's folder is read, and lacks the file: say where the bundled one is
            import warnings
            from coexplore.errors import CoexploreNote
            warnings.warn(f"'{p}' is not in this folder's {kind}/, so it is missing: the bundled {kind}/{cand.name} "
                          f"stands in only where the working directory has no {kind}/ folder (give "
                          f"'{cand.stem}' to read the bundled one)", CoexploreNote, stacklevel=2)
    if p.suffix:
        return p
    cand = bundled_dir(kind) / f"{p.name}.yaml"
    if not (cand.is_file() and len(p.parts) == 1):
        return p
    own = next((q for q in (p.with_suffix(".yaml"), p.with_suffix(".yml"), Path(kind) / f"{p.name}.yaml")
                if q.is_file()), None)           # (also ./mappers/sa.yaml: a copy of the bundled folder, edited)
    # the bundled file's name: the user's own is not read (said unless it is the same file, or a copy of
    # it as it is: a clone's own folders beside an installed coexplore)
    if own is not None and own.resolve() != cand.resolve() and own.read_bytes() != cand.read_bytes():
        import warnings
        from coexplore.errors import CoexploreNote
        warnings.warn(f"'{p}' is the bundled {kind}/{cand.name}, not {own} in this folder (give {own} to read "
                      "that one)", CoexploreNote, stacklevel=2)
    return cand


def record_name(path: str | Path) -> str:
    """How a run record names an input file: `bundled:<kind>/<file>` for a bundled one, wherever the
    running coexplore keeps them (a checkout's folders or the installed copy: `coexplore` and
    `python -m coexplore` in a clone then make one run), and for a copy of one in a `<kind>/` folder
    (a clone's `arch/simba.yaml` beside an installed coexplore: `simba` and `arch/simba.yaml` are then
    one run), else its absolute path."""
    p = Path(path).resolve()
    for kind in KINDS:
        roots = [_HERE / "_bundled" / kind]
        if (_HERE.parent / "pyproject.toml").is_file():
            roots.append(_HERE.parent / kind)
        if any(p.parent == r.resolve() for r in roots if r.is_dir()):
            return f"bundled:{kind}/{p.name}"
        if p.parent.name == kind and _same_bytes(p, bundled_dir(kind) / p.name):
            return f"bundled:{kind}/{p.name}"
    return str(p)


def _same_bytes(a: Path, b: Path) -> bool:
    try:
        return a.is_file() and b.is_file() and a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def bundled_names(kind: str) -> str:
    """The bundled `<kind>/` files' names, for a message about a name that is none of them."""
    return ", ".join(sorted(q.stem for q in bundled_dir(kind).glob("*.yaml"))) or "none found"
