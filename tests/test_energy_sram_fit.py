"""The fitted CACTI-SRAM surfaces: provenance, dataset extraction, held-out accuracy."""

import json
from pathlib import Path

import numpy as np
import pytest

from coexplore.energy import estimate_component
from coexplore.energy.fit import build_sram_dataset, fit_model, packaged_hypers, point_key
from coexplore.energy.grid import read_grid
from coexplore.energy.sram_model import DATA_FILE, QUANTITIES

DATA = Path(__file__).parent / "data" / "energy"


@pytest.fixture(scope="module")
def packaged():
    return json.loads(DATA_FILE.read_text())


def test_data_file_states_provenance(packaged):
    assert "ert_grid.csv" in packaged["provenance"] and "MIT" in packaged["license"]
    assert len(packaged["points"]) >= 50
    assert set(packaged["hyperparameters"]) == set(QUANTITIES)


def test_dataset_extraction_reproduces_packaged_points(packaged):
    pts = build_sram_dataset(read_grid(DATA / "grid_subset.csv"))
    assert len(pts) >= 8
    by_key = {point_key(p): p for p in packaged["points"]}
    for p in pts:
        ref = by_key[point_key(p)]
        for q in QUANTITIES:
            assert p[q] == pytest.approx(ref[q], rel=0.02), (point_key(p), q)


def test_held_out_points_are_predicted(packaged):
    """Leave points out (every 3rd CACTI run), refit, and predict them."""
    points = packaged["points"]
    fitted = [p for p in points if p["tech_nm"] in (45.0, 65.0)]
    held = fitted[::3]
    keys = {point_key(p) for p in held}
    model = fit_model([p for p in points if point_key(p) not in keys], packaged_hypers())
    errs = []
    for p in held:
        pred = model.at_node(p["width"], p["depth"], p["n_banks"], p["tech_nm"])
        errs += [abs(pred[q] / p[q] - 1) for q in QUANTITIES]
    errs = np.array(errs)
    assert np.median(errs) <= 0.08
    assert np.percentile(errs, 90) <= 0.30


def test_plugin_rounding_scales_small_srams():
    base = estimate_component("SRAM", {"width": 32, "depth": 64, "n_banks": 1, "technology": "45nm"})
    small = estimate_component("SRAM", {"width": 16, "depth": 32, "n_banks": 1, "technology": "45nm"})
    dyn = (0.7 * 0.5 + 0.3) * 0.5 ** 0.78
    assert small.actions["read"] == pytest.approx(base.actions["read"] * dyn, rel=1e-9)
    assert small.actions["leak"] == pytest.approx(base.actions["leak"] * 0.25, rel=1e-9)
    assert small.area_um2 == pytest.approx(base.area_um2 * 0.25, rel=1e-9)


def test_smartbuffer_sram_ignores_n_banks():
    a = estimate_component("smartbuffer_SRAM", {"width": 256, "depth": 16384, "n_banks": 1,
                                                "technology": "45nm"})
    b = estimate_component("smartbuffer_SRAM", {"width": 256, "depth": 16384, "n_banks": 32,
                                                "technology": "45nm"})
    assert a.actions == b.actions


def test_leak_scales_with_cycle_time():
    a = estimate_component("SRAM", {"width": 64, "depth": 1024, "technology": "45nm"})
    b = estimate_component("SRAM", {"width": 64, "depth": 1024, "technology": "45nm",
                                    "global_cycle_seconds": 2e-9})
    assert b.actions["leak"] == pytest.approx(2 * a.actions["leak"])
    assert b.actions["read"] == a.actions["read"]
