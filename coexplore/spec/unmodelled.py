"""Timeloop inputs that change Timeloop's numbers in ways coexplore does not model, refused by name.

Sparseloop's `sparse_optimizations` (a top-level section, as its v0.3 file merged in, or on a v0.4
node: formats, skipping, gating change counts, cycles and energy) and timeloop-model's
`auto_bypass_on_failure` (it bypasses a level that fails its checks and reports a valid result).
An empty section asks for nothing and is accepted.
"""

from __future__ import annotations

from typing import Any

from coexplore.errors import CoexploreError

SPARSE_EXPECTED = ("dense inputs: coexplore models dense tensors (Timeloop without Sparseloop); drop the "
                   "sparse_optimizations, or run Sparseloop (timeloop-model) for sparse designs")


NAMING = ("version", "name", "target")      # keys that name what a setting is for, not settings


def says_something(value: Any) -> bool:
    """Whether a section holds any setting (a `version`, targets named with nothing for them, empty
    lists and mappings hold none)."""
    if isinstance(value, dict):
        return any(says_something(v) for k, v in value.items() if k not in NAMING)
    if isinstance(value, (list, tuple)):
        return any(says_something(v) for v in value)
    return value is not None and value is not False


def check_document(data: Any, file: str | None = None) -> None:
    """Refuse a YAML document's top-level sections coexplore cannot reproduce (see the module doc)."""
    if not isinstance(data, dict):
        return
    if says_something(data.get("sparse_optimizations")):
        raise CoexploreError("Sparseloop's sparse_optimizations change Timeloop's counts, cycles and energy, which "
                             "coexplore does not model", file=file, key="sparse_optimizations",
                             expected=SPARSE_EXPECTED)
    for where, section in (("auto_bypass_on_failure", data), ("model.auto_bypass_on_failure", data.get("model"))):
        if isinstance(section, dict) and section.get("auto_bypass_on_failure") is True:
            raise CoexploreError("timeloop-model's auto_bypass_on_failure (bypassing a level whose checks fail) is "
                                 "not modelled", file=file, key=where,
                                 expected="auto_bypass_on_failure false or left out (a mapping that does not fit is "
                                          "then invalid, as it is for timeloop-model without it)")


def check_sparse_node(node: dict, key: str, file: str | None = None) -> None:
    """Refuse a v0.4 node's own sparse_optimizations (see the module doc)."""
    if says_something(node.get("sparse_optimizations")):
        raise CoexploreError(f"{node.get('name', '?')}: Sparseloop's sparse_optimizations change Timeloop's counts, "
                             "cycles and energy, which coexplore does not model", file=file,
                             key=f"{key}.sparse_optimizations", expected=SPARSE_EXPECTED)
