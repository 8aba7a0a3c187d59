"""Timeloop's built-in energy estimates (its `pat` model), used where an ERT prices no read, fill or
update of a buffer, or no compute of the arithmetic units.

timeloop-model starts every buffer's read, fill and update energy at its "vector access energy"
and lets ERT actions named `random_read`/`read`, `random_fill`/`write`, `random_update`/`write`
replace them (`BufferLevel::ParseSpecs`, `UpdateOpEnergyViaERT`). That default is the
`vector-access-energy` attribute when given, else `pat::DRAMEnergy` for a DRAM (200 pJ per 16 bits
of the vector) or `pat::SRAMEnergy` (a straight line through Eyeriss' 0.5 KB = 1 and 100 KB = 6
units per 16-bit access, scaled by the access width) divided over the cluster, and 0 for a buffer
of size 0. An ERT action such as `access` is none of those names, so such a table leaves a buffer
at this estimate in Timeloop too. The arithmetic units likewise start at their `energy` attribute,
else `pat::MultiplierEnergy` of their word bits (`word-bits` / `datawidth`, default 16), which an
ERT action `mac_random` / `mac` (or `compute`) replaces (`ArithmeticUnits::ParseSpecs`).
"""

from __future__ import annotations

import math

from coexplore.spec.architecture import Level


def sram_energy(height: int, width: int) -> float:
    """pJ per access of a height x width-bit SRAM (Timeloop's `pat::SRAMEnergy`)."""
    x0, y0, x1, y1 = 0.5, 1.0, 100.0, 6.0          # KB -> units of a 16-bit access
    kb = width * height / (8 * 1024)
    return ((y1 - y0) / (x1 - x0) * (kb - x0) + y0) * width / 16


def dram_energy(width: int) -> float:
    """pJ per access of `width` bits of DRAM (Timeloop's `pat::DRAMEnergy`)."""
    return 200.0 * width / 16


def user_access_energy(level: Level) -> float | None:
    """The level's own `vector_access_energy` (pJ per vector access), if its attributes give one."""
    a = level.timeloop_attributes
    given = a.get("vector-access-energy", a.get("vector_access_energy"))
    if isinstance(given, (int, float)) and not isinstance(given, bool):
        return float(given)
    return None


def vector_access_energy(level: Level) -> float | None:
    """Timeloop's default energy of one vector access of `level` (pJ), or None where Timeloop
    has none (a buffer of no stated size, which it cannot estimate)."""
    a = level.timeloop_attributes
    if (given := user_access_energy(level)) is not None:
        return given
    if "DRAM" in level.cls or str(a.get("technology", "")) == "DRAM":
        return dram_energy(level.word_bits * level.block_size)
    if not math.isfinite(level.size):
        return None
    if level.size == 0:
        return 0.0
    height = math.ceil(level.size / level.block_size)
    width = level.word_bits * level.block_size * level.cluster_size
    return sram_energy(height, width) / level.cluster_size


def multiplier_energy(bits_a: int, bits_b: int) -> float:
    """pJ per multiply of bits_a x bits_b (Timeloop's `pat::MultiplierEnergy`)."""
    return (bits_a / 16.0) * (bits_b / 16.0)


def compute_energy(level: Level) -> float:
    """Timeloop's default energy of one compute of the arithmetic level (pJ)."""
    a = level.timeloop_attributes
    given = a.get("energy")
    if isinstance(given, (int, float)) and not isinstance(given, bool):
        return float(given)
    bits = next((a[k] for k in ("word-bits", "word_bits", "datawidth") if a.get(k) is not None), 16)
    bits = int(bits) if isinstance(bits, (int, float)) and not isinstance(bits, bool) else 16
    return multiplier_energy(bits, bits)
