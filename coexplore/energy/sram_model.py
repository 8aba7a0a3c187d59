"""Fitted model of CACTI 7 SRAM energy/area as Accelergy's CACTI plug-in reports it.

What is fitted: CACTI's per-access read and write energy (pJ), leakage energy per 1 ns
cycle (pJ) and area (um^2) at the sizes CACTI itself is run with (the plug-in's rounded
width, depth and bank count, see `primitives.cacti_sram`), at the 45nm and 65nm CACTI
nodes. Model, per quantity, in log space over
    z = (log2 width, log2 depth, log2 n_banks, node)   node = 0 for 45nm, 1 for 65nm:
a polynomial mean (degree 1 or 2, ridge-regularised least squares) plus a Gaussian-process
(RBF kernel) correction of the residuals. It is a smooth fitted surface, not a row lookup:
the kernel length scales and noise were chosen by leave-one-component-out cross-validation
over the reference grid (`bench/energy_fidelity.py` reports the held-out errors). CACTI's
choice of array organisation makes its output jump by up to 2x between neighbouring sizes;
the node axis has a long length scale because those jumps repeat at 45 and 65nm.

The training points and hyper-parameters live in `coexplore/data/energy/cacti_sram.json`
(built by `coexplore.energy.fit.build_sram_dataset` from the Accelergy reference grid, MIT).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

QUANTITIES = ("read", "write", "leak", "area")
CACTI_NODES = {45.0: 0.0, 65.0: 1.0}
DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "energy" / "cacti_sram.json"


def _features(width, depth, n_banks, node) -> np.ndarray:
    return np.stack([np.log2(np.asarray(width, float)), np.log2(np.asarray(depth, float)),
                     np.log2(np.asarray(n_banks, float)), np.asarray(node, float)], axis=-1)


def _design(z: np.ndarray, degree: int) -> np.ndarray:
    x, y, b, t = z.T
    cols = [np.ones_like(x), x, y, b, t]
    if degree >= 2:
        cols += [x * x, y * y, x * y, b * b, t * x, t * y, b * x, b * y]
    return np.stack(cols, axis=1)


@dataclass(frozen=True)
class Hyper:
    """Hyper-parameters of one quantity's surface."""
    degree: int
    length_scales: tuple[float, float, float, float]
    noise: float
    ridge: float = 1e-3


@dataclass
class Surface:
    """Fitted log-space surface for one quantity (polynomial mean + GP residual)."""
    hyper: Hyper
    z: np.ndarray
    coef: np.ndarray
    alpha: np.ndarray

    @classmethod
    def fit(cls, z: np.ndarray, log_y: np.ndarray, hyper: Hyper) -> "Surface":
        a = _design(z, hyper.degree)
        coef = np.linalg.solve(a.T @ a + hyper.ridge * np.eye(a.shape[1]), a.T @ log_y)
        resid = log_y - a @ coef
        k = _kernel(z, z, hyper.length_scales) + hyper.noise * np.eye(len(z))
        alpha = np.linalg.solve(k, resid)
        return cls(hyper, z, coef, alpha)

    def predict(self, z: np.ndarray) -> np.ndarray:
        z = np.atleast_2d(z)
        return _design(z, self.hyper.degree) @ self.coef + \
            _kernel(z, self.z, self.hyper.length_scales) @ self.alpha


def _kernel(a: np.ndarray, b: np.ndarray, scales) -> np.ndarray:
    d = (a[:, None, :] - b[None, :, :]) / np.asarray(scales, float)
    return np.exp(-0.5 * (d * d).sum(-1))


@dataclass
class SramModel:
    """CACTI SRAM surfaces for all quantities, plus the 32nm ratios."""
    surfaces: dict
    ratio_32nm: dict   # quantity -> CACTI(32nm) / CACTI(45nm), calibrated on the 40nm grid point

    @classmethod
    def fit(cls, points: list[dict], hypers: dict, ratio_32nm: dict) -> "SramModel":
        pts = [p for p in points if float(p["tech_nm"]) in CACTI_NODES]
        z = _features([p["width"] for p in pts], [p["depth"] for p in pts],
                      [p["n_banks"] for p in pts], [CACTI_NODES[float(p["tech_nm"])] for p in pts])
        surfaces = {}
        for q in QUANTITIES:
            y = np.log(np.array([float(p[q]) for p in pts]))
            surfaces[q] = Surface.fit(z, y, hypers[q])
        return cls(surfaces, dict(ratio_32nm))

    def at_node(self, width, depth, n_banks, node_nm: float) -> dict:
        """CACTI values at a CACTI node (45 or 65nm) for plug-in-rounded sizes."""
        z = _features(width, depth, n_banks, CACTI_NODES[node_nm])
        return {q: float(np.exp(self.surfaces[q].predict(z)[0])) for q in QUANTITIES}


def hypers_from_json(data: dict) -> dict:
    return {q: Hyper(int(h["degree"]), tuple(float(v) for v in h["length_scales"]),
                     float(h["noise"]), float(h.get("ridge", 1e-3)))
            for q, h in data.items()}


def hypers_to_json(hypers: dict) -> dict:
    return {q: {"degree": h.degree, "length_scales": list(h.length_scales), "noise": h.noise,
                "ridge": h.ridge} for q, h in hypers.items()}


@lru_cache(maxsize=1)
def default_model() -> SramModel:
    """The packaged model (fitted once per process from the packaged points; ~ms)."""
    data = json.loads(DATA_FILE.read_text())
    return SramModel.fit(data["points"], hypers_from_json(data["hyperparameters"]),
                         data["ratio_32nm"])
