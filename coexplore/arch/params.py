"""Core template parameters: the fields every template shares and the dict -> dataclass check.

A template's parameters are a frozen dataclass whose defaults reproduce the corresponding
design of the Timeloop exercises. `params_from_dict` builds one from YAML data, naming the
file and key of anything it cannot accept.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
import types
import typing
from dataclasses import dataclass
from typing import Any

from coexplore.errors import CoexploreError

MAX_COUNT = 2 ** 40     # the largest size or count a core parameter may take

@dataclass(frozen=True)
class CommonParams:
    """Fields of every core template (DRAM, word size, MAC, technology, clock).

    Bandwidths are Timeloop's: words per cycle per instance; None leaves the attribute out
    (Timeloop then assumes unlimited bandwidth).
    """
    word_bits: int = 8                 # datawidth of weights/inputs (and outputs unless overridden)
    mac_multiplier_width: int = 8
    mac_adder_width: int = 16
    dram_type: str = "LPDDR4"          # Accelergy's CactiDRAM types: LPDDR4, LPDDR, DDR3, GDDR5, HBM2, HMC
    dram_width: int = 64               # bits per DRAM access
    dram_read_bandwidth: float | None = None
    dram_write_bandwidth: float | None = None
    technology: str = "45nm"
    clock_GHz: float = 1.0

    def check(self) -> list[tuple[str, str, str]]:
        """Problems as (field, message, expected); empty when the parameters are consistent."""
        problems: list[tuple[str, str, str]] = []
        from coexplore.energy.primitives import DRAM_PJ_PER_BIT
        from coexplore.spec.technology import NODES_NM
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and \
                    not (math.isfinite(value) and value > 0):
                problems.append((f.name, f"must be a finite positive number, got {value}", "a number > 0"))
            elif isinstance(value, int) and not isinstance(value, bool) and value > MAX_COUNT:
                # sizes and counts multiply into capacities and instance counts held in 64-bit integers
                problems.append((f.name, f"{value:.3g} is too large", f"at most {MAX_COUNT:,} (2^40)"))
        m = re.fullmatch(r"(\d+(?:\.\d+)?)nm", str(self.technology))
        if not m or not NODES_NM[-1] <= float(m.group(1)) <= NODES_NM[0]:
            problems.append(("technology", f"got {self.technology!r}",
                             f"a node such as '45nm', {NODES_NM[-1]:g}..{NODES_NM[0]:g} nm"))
        if self.dram_type not in DRAM_PJ_PER_BIT:
            problems.append(("dram_type", f"got {self.dram_type!r}", " | ".join(DRAM_PJ_PER_BIT)))
        if not problems and self.dram_width % self.word_bits:
            problems.append(("dram_width", f"{self.dram_width} bits is not a multiple of "
                             f"word_bits={self.word_bits}", "a multiple of word_bits"))
        return problems

    @staticmethod
    def widths_of_words(pairs) -> list[tuple[str, str, str]]:
        """Problems for the (field, width, word bits) whose width is not a whole number of words."""
        return [(name, f"{width} bits is not a multiple of the {bits}-bit word",
                 f"a multiple of {bits}, e.g. {name}: {-(-width // bits) * bits} (each parameter sets only its own "
                 "attribute: a wider word needs the widths that hold it given too)")
                for name, width, bits in pairs if width % bits]


# parameters that belong to the whole system (its clock and DRAM), not to one core: where a system sets them
SYSTEM_OWNED = {"dram_type": "system.dram.type", "dram_width": "system.dram.width",
                "clock_GHz": "system.clock_GHz"}

def _accepts(hint: Any, value: Any) -> bool:
    """Whether `value` fits the field type `hint` (int, float, str, bool, X | None)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(h, value) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if hint is int:
        return isinstance(value, int)
    if hint is float:
        return isinstance(value, (int, float))
    if hint is str:
        return isinstance(value, str)
    return True


def _type_name(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(h) for h in typing.get_args(hint))
    if hint is type(None):
        return "null"
    return {int: "an integer", float: "a number", str: "a string", bool: "true/false"}.get(
        hint, getattr(hint, "__name__", str(hint)))


def field_names(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def params_from_dict(cls, data: Any, *, file: str | None = None, key: str = "params"):
    """Build the parameter dataclass `cls` from a YAML mapping (missing keys keep defaults).

    Raises CoexploreError naming `file`, the offending key under `key`, and what was expected.
    """
    if data is None:
        data = {}
    if isinstance(data, cls):
        params = data
    else:
        if not isinstance(data, dict):
            raise CoexploreError(f"must be a mapping, got {type(data).__name__}", file=file,
                                 key=key, expected=f"parameter: value pairs of {cls.__name__}")
        hints = typing.get_type_hints(cls)
        names = field_names(cls)
        # numpy's integers (a sweep over np.arange) as Python's: the YAML a system writes takes only those
        data = {k: int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v for k, v in data.items()}
        if data.get("technology") is not None and "technology" in hints:
            # read as system.technology and an architecture's are (45, '45 nm', '0.045um' -> '45nm')
            from coexplore.spec.technology import parse_technology
            try:
                nm = parse_technology(data["technology"], key=f"{key}.technology")
            except CoexploreError as exc:
                raise exc.with_file(file) from None
            data = {**data, "technology": "-1" if nm == -1 else f"{nm:g}nm"}
        if isinstance(data.get("word_bits"), int) and "mac_multiplier_width" in hints:
            # the MAC follows the word size unless given: 16-bit words, 16 x 16-bit multiplier
            data = {"mac_multiplier_width": data["word_bits"], "mac_adder_width": 2 * data["word_bits"], **data}
        for name, value in data.items():
            if name not in hints:
                own = [n for n in names if n not in SYSTEM_OWNED]
                raise CoexploreError(f"unknown parameter '{name}'", file=file, key=f"{key}.{name}",
                                     expected="one of " + ", ".join(own) + (
                                         f" ({', '.join(n for n in names if n in SYSTEM_OWNED)} come from the "
                                         "system: system.clock_GHz, system.dram)" if len(own) < len(names) else ""))
            if not _accepts(hints[name], value):
                kind = "text" if isinstance(value, str) else type(value).__name__    # (str subclasses: quoted YAML)
                raise CoexploreError(f"wrong type {kind} ({str(value)!r})" if isinstance(value, str) else
                                     f"wrong type {kind} ({value!r})", file=file,
                                     key=f"{key}.{name}", expected=_type_name(hints[name]))
        params = cls(**data)
    problems = params.check()
    if problems:
        name, message, expected = problems[0]
        raise CoexploreError(message, file=file, key=f"{key}.{name}", expected=expected)
    return params


def as_dict(params) -> dict:
    """The parameters as a plain dict, in field order."""
    return dataclasses.asdict(params)


def drop_none(attrs: dict) -> dict:
    """`attrs` without the keys whose value is None (optional Timeloop attributes)."""
    return {k: v for k, v in attrs.items() if v is not None}


# The Timeloop reference corpus designs as (corpus folder, template, parameters that differ from
# the template defaults): what the templates must reproduce (tests and bench/arch_corpus_equivalence.py).
CORPUS_DESIGNS = [
    ("simba_like", "simba", {}),
    ("eyeriss_like", "eyeriss", {}),
    ("simba_like_pe8_glb4k", "simba", {"pe_mesh_x": 8, "glb_depth": 4096}),
    ("simba_like_pe32_glb1k", "simba", {"pe_mesh_x": 32, "glb_depth": 1024}),
    ("eyeriss_like_45nm_pe16x8_glb32k", "eyeriss",
     {"technology": "45nm", "pe_mesh_x": 16, "pe_mesh_y": 8, "glb_depth": 32768}),
    ("eyeriss_like_45nm_pe8x16_glb8k", "eyeriss",
     {"technology": "45nm", "pe_mesh_x": 8, "pe_mesh_y": 16, "glb_depth": 8192}),
]
