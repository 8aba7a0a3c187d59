"""Pricing a Timeloop architecture file with the energy estimator: the compound-class set the file
asks for, and ERT/ART of a flattened architecture or a v0.4 node list (flattened as timeloopfe
does), as timeloop-model runs Accelergy on a node list without an ERT. Used by `coexplore energy
tables`, and by `model.inputs.load_context` (and so `evaluate`/`map`) on a node list without an ERT.
What the pricing has to say is a `CoexploreWarning` (a `CoexploreNote` when it is no problem)."""

from __future__ import annotations

import warnings
from pathlib import Path

from coexplore.errors import CoexploreError, CoexploreNote, CoexploreWarning
from coexplore.spec.ert import EnergyTable
from coexplore.spec.yamlio import TAG_KEY, load_yaml

CLASS_SETS = ("example_designs", "primitives")


def class_set(arch: dict, chosen: str | None, path: Path) -> str:
    """The compound-class set to price with. The file's own `compound_components` are not read
    (coexplore prices classes with its built-in set): say so; a file that empties them
    (`classes: []`, Accelergy then prices regfile/intmac as primitives) defaults to primitives."""
    cc = arch.get("compound_components", arch.get("components"))     # v0.3 / v0.4 names
    if cc is None and isinstance(arch.get("architecture"), dict):
        cc = arch["architecture"].get("compound_components")
    defined = cc.get("classes") if isinstance(cc, dict) else None
    if isinstance(defined, list):           # include_all() of several files gives a list per file
        defined = [c for item in defined for c in (item if isinstance(item, list) else [item])]
    if isinstance(defined, list) and defined:
        from coexplore.energy.components import CLASSES
        names = [str(c.get("name", "?")) for c in defined if isinstance(c, dict)]
        same = [n for n in names if n in CLASSES]
        other = [n for n in names if n not in CLASSES]
        warnings.warn(f"{path}: compound components define " + ", ".join(names) + "; coexplore does not read "
                      "compound classes" + (f": {', '.join(same)} {'is' if len(same) == 1 else 'are'} priced as "
                                            "coexplore's built-in class of that name, not as this file defines "
                                            "it (other energies and areas)" if same else "")
                      + (f"; {', '.join(other)} {'has' if len(other) == 1 else 'have'} no built-in estimator: a "
                         "component of that class is refused, or ignored where Timeloop ignores it (a v0.4 node "
                         "whose class names no buffer or compute unit), and given as a subclass is priced as its "
                         "class" if other else ""),
                      CoexploreWarning, stacklevel=2)
    sibling = Path(path).parent / "components"      # a v0.3 exercise's own compound classes, one file each
    own = sorted(q.stem for q in sibling.glob("*.y*ml")) if sibling.is_dir() else []
    if own:
        warnings.warn(f"{path}: the folder {sibling} beside it defines compound classes ({', '.join(own[:6])}"
                      f"{', ...' if len(own) > 6 else ''}), which coexplore does not read: components of those "
                      "classes are priced with its built-in estimators (another energy and area than that "
                      "folder gives)", CoexploreWarning, stacklevel=2)
    if chosen is not None:
        return chosen
    if isinstance(defined, list) and not defined:
        warnings.warn(f"{path}: compound_components has no classes, so regfile/intmac are priced as "
                      "primitives, as Accelergy does (--classes example_designs to override)", CoexploreNote,
                      stacklevel=2)
        return "primitives"
    return "example_designs"


def _is_nodes(data) -> bool:
    return isinstance(data, dict) and isinstance(data.get("architecture"), dict) and "nodes" in data["architecture"]


def is_node_list(path: str | Path) -> bool:
    """True for a v0.4 architecture written as a node list (`architecture: {nodes: [...]}`)."""
    return _is_nodes(load_yaml(path))


def is_priceable(path: str | Path) -> bool:
    """True for an architecture file `price_architecture` prices: a v0.4 node list, or a v0.3 / flattened
    tree (`architecture: {subtree: [...]}`), as timeloop-model runs Accelergy on either without an ERT."""
    data = load_yaml(path)
    arch = data.get("architecture") if isinstance(data, dict) else None
    return _is_nodes(data) or (isinstance(arch, dict) and isinstance(arch.get("subtree"), list))


def price_architecture(path: str | Path, classes: str | None = None, estimator: str = "builtin",
                       reader_warnings: bool = False) -> tuple[dict, dict, str]:
    """(ERT, ART, class set) of the architecture file at `path`; the pricing's warnings, and with
    `reader_warnings` those of reading a node list (components Timeloop ignores, typos), warned."""
    path = Path(path)
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise CoexploreError("not a mapping", file=str(path), expected="architecture: {subtree: ...}")
    from coexplore.energy.tables import build_tables, components_from_processed
    classes = class_set(data, classes, path)
    flat = data
    if _is_nodes(data):                  # a v0.4 node list: flattened as timeloopfe does
        _refuse_scales(data["architecture"].get("nodes"), "architecture.nodes", path)
        from coexplore.spec.architecture import architecture_to_v3, load_architecture
        first = data["architecture"]["nodes"][0] if data["architecture"].get("nodes") else {}
        top = first.get("name") if isinstance(first, dict) and first.get(TAG_KEY, "Container") == "Container" \
            and "class" not in first else None
        arch = load_architecture(path)
        for w in arch.warnings if reader_warnings else ():
            warnings.warn(f"{path}: {w}", CoexploreWarning, stacklevel=2)
        flat = architecture_to_v3(arch, top=str(top) if top else "system")
    try:
        ert, art = build_tables(components_from_processed(flat, file=str(path)), classes=classes,
                                estimator=estimator)
    except CoexploreError as exc:
        raise exc.with_file(path)
    for w in ert.get("warnings") or ():
        warnings.warn(str(w), CoexploreWarning, stacklevel=2)
    return ert, art, classes


def _refuse_scales(nodes, key: str, path: Path) -> None:
    """A node's `energy_scale` / `area_scale` other than 1 (Accelergy multiplies its actions' energies
    or its area by it) is refused: the built-in estimator does not apply it."""
    for i, node in enumerate(nodes if isinstance(nodes, list) else []):
        if not isinstance(node, dict):
            continue
        for scale in ("energy_scale", "area_scale"):
            value = node.get(scale, 1)
            try:
                one = value is None or float(value) == 1.0
            except (TypeError, ValueError):
                one = False
            if not one:
                raise CoexploreError(f"{node.get('name', '?')}: {scale} {value!r} is not applied by coexplore's "
                                     "built-in estimator", file=str(path), key=f"{key}[{i}].{scale}",
                                     expected="the ERT/ART Accelergy wrote for it (--ert ERT.yaml), or the scale "
                                              "left out")
        _refuse_scales(node.get("nodes"), f"{key}[{i}].nodes", path)


def builtin_ert(path: Path, classes: str | None = None, override: str = "--ert ERT.yaml") -> EnergyTable:
    """The energy table of an architecture file without one (`is_priceable`): priced with the built-in
    estimator as `coexplore energy tables` prices it (timeloop-model runs Accelergy on such a file)."""
    from coexplore.spec.ert import parse_ert
    try:
        ert, _, classes = price_architecture(path, classes)
    except CoexploreError as exc:       # say why coexplore was pricing the file at all
        exc.expected = (f"{exc.expected}; " if exc.expected else "") + \
            f"no ERT was given or found, so coexplore priced the file itself: {override} to use one"
        raise
    table = parse_ert(ert, str(path))
    table.source = f"{ert['estimator']}, no ERT given"
    warnings.warn(f"{path}: no ERT given or beside it: energies from the built-in estimator ({classes} "
                  f"classes), as `coexplore energy tables` writes them; {override} to use another", CoexploreNote,
                  stacklevel=2)
    return table
