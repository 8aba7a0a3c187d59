"""Technology nodes: parsing `technology` attributes and CMOS node-to-node scaling.

The scaling factors are the published Stillmaker & Baas tables (A. Stillmaker, B. Baas,
"Scaling equations for the accurate prediction of CMOS device performance from 180nm to
7nm", Integration 58, 2017), which Accelergy's Library plug-in also uses. Energy scales
with a per-node polynomial in Vdd (evaluated at Vdd = 0.8 V, the plug-in's default); area
with a node-to-node matrix, linearly interpolated between tabulated nodes.

`library=True` reproduces how Accelergy's Library plug-in interpolates the node index: it
gives the *smaller* node the weight (t - small)/(large - small) (the reverse of linear
interpolation), so that 40nm data scaled to 45nm gives x1.2652 energy and x1.7385 area,
exactly the factors in the Accelergy reference grid. Only the Library primitives use it;
our own extrapolations (SRAM outside CACTI's fitted nodes, Aladdin parts off 40/45nm) use
plain linear interpolation.
"""

from __future__ import annotations

import math

from coexplore.errors import CoexploreError
from coexplore.spec.technology import NODES_NM

# AREA_FACTOR[i][j]: multiply area at NODES_NM[i] by this to get area at NODES_NM[j]
AREA_FACTOR = (
    (1, 0.44, 0.23, 0.16, 0.072, 0.033, 0.03, 0.027, 0.016, 0.0092),
    (2.3, 1, 0.53, 0.35, 0.16, 0.075, 0.067, 0.061, 0.036, 0.021),
    (4.3, 1.9, 1, 0.66, 0.31, 0.14, 0.13, 0.12, 0.068, 0.039),
    (6.4, 2.8, 1.5, 1, 0.46, 0.21, 0.19, 0.17, 0.1, 0.059),
    (14, 6.1, 3.3, 2.2, 1, 0.46, 0.41, 0.38, 0.22, 0.13),
    (30, 13, 7.1, 4.7, 2.2, 1, 0.89, 0.82, 0.48, 0.28),
    (34, 15, 7.9, 5.3, 2.4, 1.1, 1, 0.91, 0.54, 0.31),
    (37, 16, 8.7, 5.8, 2.7, 1.2, 1.1, 1, 0.59, 0.34),
    (63, 28, 15, 9.8, 4.5, 2.1, 1.9, 1.7, 1, 0.58),
    (110, 48, 25, 17, 7.8, 3.6, 3.2, 2.9, 1.7, 1),
)

# ENERGY_POLY[i] = (a, b, c): relative switching energy a*Vdd^2 + b*Vdd + c at NODES_NM[i]
ENERGY_POLY = (
    (7.171, -6.709, 2.904),
    (4.762, -4.781, 2.092),
    (3.755, -4.398, 1.975),
    (1.103, -0.362, 0.2767),
    (0.9559, -0.7823, 0.471),
    (0.373, -0.1582, 0.04104),
    (0.2958, -0.1241, 0.03024),
    (0.2363, -0.09675, 0.02239),
    (0.2068, -0.09311, 0.02375),
    (0.1776, -0.09097, 0.02447),
)

VDD = 0.8


def node_index(nm: float, library: bool = False) -> float:
    """Fractional index into NODES_NM (library=True: the Library plug-in's convention)."""
    for i, node in enumerate(NODES_NM):
        if nm == node:
            return float(i)
        if nm > node:  # NODES_NM[i-1] > nm > node
            large, small = NODES_NM[i - 1], node
            toward_small = (large - nm) / (large - small)
            return (i - 1) + (1 - toward_small if library else toward_small)
    raise CoexploreError(f"technology {nm:g}nm is outside the supported range",
                         expected=f"{NODES_NM[-1]:g}..{NODES_NM[0]:g} nm")


def _energy_level(idx: float) -> float:
    lo, hi = math.floor(idx), math.ceil(idx)
    frac = idx - lo

    def poly(i):
        a, b, c = ENERGY_POLY[i]
        return a * VDD * VDD + b * VDD + c

    return poly(lo) * (1 - frac) + poly(hi) * frac


def energy_scale(from_nm: float, to_nm: float, library: bool = False) -> float:
    """Factor that takes a (dynamic or leakage) energy at `from_nm` to `to_nm`."""
    return (_energy_level(node_index(to_nm, library))
            / _energy_level(node_index(from_nm, library)))


def area_scale(from_nm: float, to_nm: float, library: bool = False) -> float:
    """Factor that takes an area at `from_nm` to `to_nm` (bilinear in the node indices)."""
    x, y = node_index(from_nm, library), node_index(to_nm, library)
    x0, x1, fx = math.floor(x), math.ceil(x), x - math.floor(x)
    y0, y1, fy = math.floor(y), math.ceil(y), y - math.floor(y)
    return (AREA_FACTOR[x0][y0] * (1 - fx) * (1 - fy) + AREA_FACTOR[x0][y1] * (1 - fx) * fy
            + AREA_FACTOR[x1][y0] * fx * (1 - fy) + AREA_FACTOR[x1][y1] * fx * fy)
