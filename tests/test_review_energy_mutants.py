"""Tests written during a mutation review of coexplore/energy: each pins a number or property that
the other energy tests left free. Reference numbers are rows of the Accelergy reference grid
(`accelergy-ert-grid/ert_grid.csv`, real Accelergy 0.4 + plug-ins, generated 2026-11-30, MIT; the
component id and row are named where a number is copied) or statements of that grid's README (the
CACTI plug-in's rounding, the DRAM constants, the nodes CACTI runs at); the rest are properties.
"""

from pathlib import Path

import pytest
import yaml

from coexplore.energy import build_tables, components_from_processed, estimate_component
from coexplore.energy.check import check_rows, rel_err, summarize
from coexplore.energy.grid import read_grid
from coexplore.energy.technology import area_scale, energy_scale
from coexplore.spec.technology import parse_technology

DATA = Path(__file__).parent / "data" / "energy"
LIB_40_TO_45 = 0.0113869 / 0.009     # the grid's Library 40nm -> 45nm energy factor (breakdowns)


def E(cls, classes="example_designs", **attrs):
    return estimate_component(cls, attrs, classes=classes)


@pytest.fixture(scope="module")
def grid():
    return read_grid(DATA / "grid_subset.csv")


# ------------------------------------------------------------------ CACTI plug-in rounding (grid README)
def test_sram_n_banks_rounds_up_to_a_power_of_two():
    """Grid README: the CACTI plug-in 'rounds n_banks up to a power of 2' (so 3 banks = 4 banks)."""
    three = E("SRAM", width=64, depth=1024, n_banks=3, technology="45nm")
    four = E("SRAM", width=64, depth=1024, n_banks=4, technology="45nm")
    two = E("SRAM", width=64, depth=1024, n_banks=2, technology="45nm")
    assert three.actions == four.actions and three.area_um2 == four.area_um2
    assert three.actions["read"] != two.actions["read"]


def test_sram_width_rounds_up_to_a_multiple_of_8_and_scales_back():
    """Grid README: width rounded up to a multiple of 8 (at least 32), then dynamic energy scaled by
    (0.7*w_scale + 0.3) and leak/area linearly: a 36-bit SRAM is the 40-bit one scaled by 36/40."""
    w36 = E("SRAM", width=36, depth=4096, n_banks=1, technology="45nm")
    w40 = E("SRAM", width=40, depth=4096, n_banks=1, technology="45nm")
    ws = 36 / 40
    assert w36.actions["read"] == pytest.approx(w40.actions["read"] * (0.7 * ws + 0.3), rel=1e-9)
    assert w36.actions["write"] == pytest.approx(w40.actions["write"] * (0.7 * ws + 0.3), rel=1e-9)
    assert w36.actions["leak"] == pytest.approx(w40.actions["leak"] * ws, rel=1e-9)
    assert w36.area_um2 == pytest.approx(w40.area_um2 * ws, rel=1e-9)


def test_sram_depth_rounds_up_to_64_per_bank():
    """Grid README: depth rounded up to at least 64 x n_banks: 1024 deep with 32 banks is CACTI's
    2048-deep run scaled by (1024/2048)^0.78 (dynamic) and 1/2 (leak, area)."""
    d1k = E("SRAM", width=64, depth=1024, n_banks=32, technology="45nm")
    d2k = E("SRAM", width=64, depth=2048, n_banks=32, technology="45nm")
    assert d1k.actions["read"] == pytest.approx(d2k.actions["read"] * 0.5 ** 0.78, rel=1e-9)
    assert d1k.actions["leak"] == pytest.approx(d2k.actions["leak"] * 0.5, rel=1e-9)
    assert d1k.area_um2 == pytest.approx(d2k.area_um2 * 0.5, rel=1e-9)


@pytest.mark.parametrize("tech, read, write, leak, area", [
    # c027 (grid rows of SRAM_banks 64 x 1024, 32 banks, 45nm) and c058 (the same at 65nm)
    ("45nm", 6.628731787309277, 7.133760270401998, 0.0004926672, 45444.35),
    ("65nm", 12.659489351325648, 13.59279037416282, 0.004304208000000001, 94798.99999999999),
])
def test_banked_sram_matches_the_grid(tech, read, write, leak, area):
    est = E("SRAM", width=64, depth=1024, n_banks=32, technology=tech)
    for q, ref in (("read", read), ("write", write), ("leak", leak)):
        assert est.actions[q] == pytest.approx(ref, rel=0.10), q
    assert est.area_um2 == pytest.approx(area, rel=0.10)


# ------------------------------------------------------------------ CACTI nodes
def test_40nm_sram_is_interpolated_from_32_and_45nm(grid):
    """c062 (SRAM 64 x 32768 at 40nm): the plug-in interpolates CACTI's 32 and 45nm runs."""
    rows = [r for r in grid if r.component_id == "c062"]
    assert rows
    for r in rows:
        est = estimate_component(r.cls, r.attributes, classes=r.classes)
        assert est.actions[r.action] == pytest.approx(r.energy_pJ, rel=0.05), r.action
        assert not est.warnings and est.accelergy_compatible


def test_22nm_sram_is_accelergy_compatible():
    """Grid README: CACTI runs at the real node for 22/32/45/65/90nm, so Accelergy prices a 22nm SRAM."""
    for tech in ("22nm", "32nm", "90nm"):
        assert E("SRAM", width=64, depth=4096, technology=tech).accelergy_compatible, tech
    assert not E("SRAM", width=64, depth=4096, technology="20nm").accelergy_compatible


def test_22nm_sram_derives_from_32nm_by_cmos_scaling():
    """The estimate's own claim (warning text): below 32nm the SRAM comes from the nearest fitted
    node, 32nm, with Stillmaker-Baas factors; so 22nm/32nm is the CMOS energy ratio for any size."""
    for w, d in ((64, 4096), (256, 16384)):
        e22 = E("SRAM", width=w, depth=d, technology="22nm")
        e32 = E("SRAM", width=w, depth=d, technology="32nm")
        assert e22.actions["read"] / e32.actions["read"] == pytest.approx(energy_scale(32, 22), rel=1e-9)
        assert e22.area_um2 / e32.area_um2 == pytest.approx(area_scale(32, 22), rel=1e-9)   # once, not x1.09 again
        assert "32 or 65nm" in " ".join(e22.warnings)
    for w, d in ((64, 4096), (256, 16384)):              # 90nm from 65nm the same way
        e90 = E("SRAM", width=w, depth=d, technology="90nm")
        e65 = E("SRAM", width=w, depth=d, technology="65nm")
        assert e90.area_um2 / e65.area_um2 == pytest.approx(area_scale(65, 90), rel=1e-9)


def test_a_grid_error_names_the_file_line(tmp_path):
    lines = (DATA / "grid_subset.csv").read_text().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    assert "energy_pJ" in header
    bad = list(lines)
    import csv as _csv
    rec = next(_csv.reader([bad[5]]))
    rec[header.index("energy_pJ")] = "abc"
    import io
    out = io.StringIO()
    _csv.writer(out, lineterminator="\n").writerow(rec)
    bad[5] = out.getvalue()
    (tmp_path / "g.csv").write_text("".join(bad))
    with pytest.raises(Exception, match=r"line 6: not a number: 'abc'"):
        read_grid(tmp_path / "g.csv")


def test_sram_energy_decreases_from_130_to_7nm():
    """Property: a smaller node never costs more dynamic energy or area for the same SRAM (leak is
    not monotonic in CACTI itself: the grid's 65nm SRAMs leak ~9x their 45nm twins)."""
    nodes = (130, 90, 80, 65, 55, 45, 40, 32, 28, 22, 20, 16, 10, 7)
    est = [E("SRAM", width=64, depth=4096, technology=f"{t}nm") for t in nodes]
    for q in ("read", "write"):
        vals = [e.actions[q] for e in est]
        assert all(a > b for a, b in zip(vals, vals[1:])), q
    areas = [e.area_um2 for e in est]
    assert all(a > b for a, b in zip(areas, areas[1:]))


def test_technology_range_includes_its_ends():
    """README: technology scaling 7-130 nm."""
    assert parse_technology("7nm") == 7 and parse_technology("130nm") == 130
    assert E("SRAM", width=64, depth=1024, technology="130nm").actions["read"] > 0
    assert E("SRAM", width=64, depth=1024, technology="7nm").actions["read"] > 0


# ------------------------------------------------------------------ DRAM constants (grid README)
@pytest.mark.parametrize("typ, pj_per_bit", [("HMC", 4.2), ("LPDDR", 40.0), ("DDR3", 70.0), ("GDDR5", 14.0)])
def test_dram_pj_per_bit(typ, pj_per_bit):
    """c178 (HMC, 64 bits): read = write = update 268.8 pJ; the README lists every type's pJ/bit."""
    est = E("DRAM", type=typ, width=64, technology="45nm")
    for a in ("read", "write", "update"):
        assert est.actions[a] == pytest.approx(pj_per_bit * 64, rel=1e-12)


# ------------------------------------------------------------------ Library / Aladdin parts
def test_library_parts_at_40nm_are_the_table_itself():
    """At 40nm the Library plug-in uses its table unscaled: c121 (compound regfile 8x1 at 45nm) is
    the 40nm value x the grid's 40->45nm factor, and nothing is flagged at 40nm."""
    est = E("regfile", width=8, depth=1, technology="40nm")
    assert est.actions["read"] * LIB_40_TO_45 == pytest.approx(0.12838400595568794, rel=1e-4)   # c121 row 467
    assert est.warnings == ()
    assert E("intmac", multiplier_width=8, adder_width=16, technology="40nm").warnings == ()


def test_primitive_regfile_comparators_address_every_entry():
    """Primitive (Aladdin) regfile = reg + depth x comparators of the address bits: from the grid,
    c141 (depth 1) 0.009 pJ and c146 (depth 16, 4 address bits) 0.06794 pJ give the energy per
    entry and address bit; a 12-deep file needs 4 address bits (2^3 < 12)."""
    per_bit = (0.06794 - 0.009) / (16 * 4)
    e12 = E("regfile", classes="primitives", width=16, depth=12, technology="45nm").actions["read"]
    bits = (e12 - 0.009) / (12 * per_bit)
    assert 2 ** round(bits) >= 12 and bits == pytest.approx(round(bits), abs=1e-6)


@pytest.mark.parametrize("depth, read, write, leak, area", [
    # c115 / c116: smartbuffer_RF 16 x 12 and 16 x 192 at 45nm (grid rows, full precision)
    (12, 0.39895033218734816, 0.34957878391407565, 0.0007655452971018686, 2806.1166153846157),
    (192, 3.814213371311471, 3.632018664919246, 0.004198724753629897, 43924.86584615385),
])
def test_smartbuffer_rf_of_a_depth_that_is_not_a_power_of_two(depth, read, write, leak, area):
    est = E("smartbuffer_RF", width=16, depth=depth, technology="45nm")
    for q, ref in (("read", read), ("write", write), ("update", write), ("leak", leak)):
        assert est.actions[q] == pytest.approx(ref, rel=1e-6), q
    assert est.area_um2 == pytest.approx(area, rel=1e-6)


def test_smartbuffer_rf_24_bits_wide():
    """c113 (smartbuffer_RF 24 x 128, 45nm): the class rounds the width up to 32 and scales back."""
    est = E("smartbuffer_RF", width=24, depth=128, technology="45nm")
    assert est.actions["read"] == pytest.approx(3.898748224507583, rel=1e-6)
    assert est.actions["leak"] == pytest.approx(0.004054974753629897, rel=1e-6)
    assert est.area_um2 == pytest.approx(43907.49084615385, rel=1e-6)


# ------------------------------------------------------------------ attributes
def test_fractional_or_zero_counts_are_refused():
    from coexplore.errors import CoexploreError
    with pytest.raises(CoexploreError, match="depth"):
        E("SRAM", width=64, depth=100.5, technology="45nm")
    with pytest.raises(CoexploreError, match="width"):
        E("SRAM", width=0, depth=1024, technology="45nm")


def test_float_minus_one_technology_is_the_dummy():
    """`technology: -1.0` is Accelergy's dummy technology as much as -1."""
    a = E("SRAM", width=64, depth=1024, technology=-1.0)
    b = E("SRAM", width=64, depth=1024, technology=-1)
    assert a.actions == b.actions and a.area_um2 == b.area_um2 == 1.0


def test_register_width_falls_back_to_datawidth_and_memory_aliases():
    """A register with only `datawidth`, and an SRAM written with Timeloop's memory_width/memory_depth,
    price as with width/depth."""
    assert E("aladdin_register", datawidth=8, technology="45nm").actions == \
        E("aladdin_register", width=8, technology="45nm").actions
    assert E("SRAM", memory_width=64, memory_depth=1024, technology="45nm").actions == \
        E("SRAM", width=64, depth=1024, technology="45nm").actions


# ------------------------------------------------------------------ Stillmaker-Baas tables
# Stillmaker & Baas (Integration 58, 2017) as Accelergy's Library plug-in tabulates them (MIT,
# Accelergy-Project; the same numbers in its hwcomponents scaling module): node -> (a, b, c) of the
# relative energy a*Vdd^2 + b*Vdd + c at Vdd = 0.8 V, and the area factor from 45nm to each node.
SB_ENERGY = {130: (7.171, -6.709, 2.904), 90: (4.762, -4.781, 2.092), 65: (3.755, -4.398, 1.975),
             45: (1.103, -0.362, 0.2767), 32: (0.9559, -0.7823, 0.471), 20: (0.373, -0.1582, 0.04104),
             16: (0.2958, -0.1241, 0.03024), 14: (0.2363, -0.09675, 0.02239),
             10: (0.2068, -0.09311, 0.02375), 7: (0.1776, -0.09097, 0.02447)}
SB_AREA_FROM = {45: {130: 6.4, 90: 2.8, 65: 1.5, 45: 1, 32: 0.46, 20: 0.21, 16: 0.19, 14: 0.17, 10: 0.1, 7: 0.059},
                90: {130: 2.3, 90: 1, 65: 0.53, 45: 0.35, 32: 0.16, 20: 0.075, 16: 0.067, 14: 0.061,
                     10: 0.036, 7: 0.021}}


def _sb_energy(node):
    a, b, c = SB_ENERGY[node]
    return a * 0.64 + b * 0.8 + c


@pytest.mark.parametrize("node", sorted(SB_ENERGY))
def test_node_scaling_is_the_published_table(node):
    from coexplore.energy.technology import area_scale
    assert energy_scale(45, node) == pytest.approx(_sb_energy(node) / _sb_energy(45), rel=1e-12)
    assert energy_scale(45, node, library=True) == pytest.approx(_sb_energy(node) / _sb_energy(45), rel=1e-12)
    for src, row in SB_AREA_FROM.items():
        assert area_scale(src, node) == pytest.approx(row[node], rel=1e-12), (src, node)


# ------------------------------------------------------------------ fitting the CACTI surfaces
def test_smartbuffer_sram_rows_give_cacti_points_of_their_storage(grid):
    """c063 (smartbuffer_SRAM 32 x 256, 45nm): its CactiSRAM part (energy/area breakdown
    `storage.read=1.32373`, `storage.write=2.06548`, `storage.leak=3.5316e-05`,
    `storage=3431.89um2`) is the only CACTI run of that size in the grid; the dataset holds it."""
    from coexplore.energy.fit import build_sram_dataset
    pts = {(p["tech_nm"], p["width"], p["depth"], p["n_banks"]): p for p in build_sram_dataset(grid)}
    p = pts[(45.0, 32, 256.0, 1)]
    assert p["sources"] == ["c063"]
    assert p["read"] == pytest.approx(1.32373, rel=1e-5) and p["write"] == pytest.approx(2.06548, rel=1e-5)
    assert p["leak"] == pytest.approx(3.5316e-05, rel=1e-5) and p["area"] == pytest.approx(3431.89, rel=1e-5)


def test_dataset_leak_is_per_ns_whatever_the_cycle_time(grid):
    """Property: a grid priced at global_cycle_seconds 2 ns (leak per cycle doubled) gives the same
    CACTI points as the 1 ns grid."""
    import dataclasses
    from coexplore.energy.fit import build_sram_dataset
    rows = [r for r in grid if r.cls == "SRAM" and r.status == "ok"]
    slow = [dataclasses.replace(r, attributes={**r.attributes, "global_cycle_seconds": 2e-9},
                                energy_pJ=r.energy_pJ * (2 if r.action == "leak" else 1)) for r in rows]
    a, b = build_sram_dataset(rows), build_sram_dataset(slow)
    assert len(a) == len(b) > 3
    for p, q in zip(a, b):
        for k in ("read", "write", "leak", "area"):
            assert q[k] == pytest.approx(p[k], rel=1e-12), k


def test_refitted_model_reproduces_the_40nm_grid_point(grid):
    """Refitting from the packaged points (as `python -m coexplore.energy.fit` does) calibrates the
    32nm ratio so that the 40nm interpolation gives c062, the grid's 40nm SRAM."""
    import json
    from coexplore.energy.fit import fit_model, packaged_hypers
    from coexplore.energy.sram_model import DATA_FILE
    model = fit_model(json.loads(DATA_FILE.read_text())["points"], packaged_hypers())
    rows = [r for r in grid if r.component_id == "c062"]
    for r in rows:
        est = estimate_component(r.cls, r.attributes, sram_model=model)
        assert est.actions[r.action] == pytest.approx(r.energy_pJ, rel=0.02), r.action


def test_sram_fit_accuracy_on_the_grid_subset(grid):
    """README: on the grid it was fitted on, CACTI SRAMs median 0.5-1.3% per action, p95 3.2%."""
    import numpy as np
    errs = []
    for r in grid:
        if r.status == "ok" and r.cls == "SRAM":
            est = estimate_component(r.cls, r.attributes, classes=r.classes)
            errs.append(abs(est.actions[r.action] / r.energy_pJ - 1))
    assert np.median(errs) <= 0.015 and np.percentile(errs, 95) <= 0.05


# ------------------------------------------------------------------ grid reading and the comparison
def test_grid_errors_name_the_file_line_of_the_first_row(tmp_path):
    """The first row after the header is the file's line 2 in a message about it."""
    from coexplore.errors import CoexploreError
    f = tmp_path / "g.csv"
    f.write_text("component_id,class,definition,technology,attributes_json,action,energy_pJ,area_um2,status\n"
                 "c1,DRAM,primitive,45nm,{},read,abc,0,ok\n")
    with pytest.raises(CoexploreError, match=r"line 2\b"):
        read_grid(f)


def test_relative_error_is_relative_to_the_reference():
    assert rel_err(3.0, 2.0) == pytest.approx(0.5)
    assert rel_err(1.0, 2.0) == pytest.approx(0.5)
    assert rel_err(0.0, 0.0) == 0.0 and rel_err(1.0, 0.0) == 1.0


def test_summary_percentile_and_class_rows():
    s = summarize([0.0] * 90 + [1.0] * 10)
    assert s["p95_rel_err"] == pytest.approx(1.0) and s["median_rel_err"] == 0.0 and s["rows"] == 100
    s = summarize(list(range(101)))
    assert s["p95_rel_err"] == pytest.approx(95.0)


def test_check_counts_area_apart_from_the_actions(grid):
    """A class's `rows` counts its action rows; areas are listed under the pseudo-action `area`."""
    dram = [r for r in grid if r.cls == "DRAM" and r.status == "ok"]
    summary = check_rows(dram).to_json()
    n_comp = len({r.component_id for r in dram})
    assert summary["classes"]["DRAM"]["rows"] == len(dram)
    assert summary["classes"]["DRAM"]["actions"]["area"]["rows"] == n_comp


def test_reference_failures_are_flagged_not_priced_silently(grid):
    """c118-c120 (65nm smartbuffer_RF, refused by Accelergy: no 65nm intadder) are priced by us
    with a warning: 'flagged'; c180 (DDR4) is refused."""
    ours = {f["component_id"]: f["ours"] for f in check_rows(grid).to_json()["reference_failed"]}
    assert ours["c118"] == ours["c119"] == ours["c120"] == "flagged"
    assert ours["c180"] == "refused"


# ------------------------------------------------------------------ tables of an architecture
def test_nested_subtree_attributes_override_the_outer_ones():
    """Accelergy/timeloopfe: a subtree's own attributes override those it inherits, and a component's
    its subtree's (v0.3 exercise trees set `technology` on the system and again lower down)."""
    arch = {"architecture": {"subtree": [{
        "name": "system", "attributes": {"technology": "65nm", "global_cycle_seconds": 1e-9},
        "local": [{"name": "DRAM", "class": "DRAM", "attributes": {"type": "LPDDR4", "width": 64}}],
        "subtree": [{"name": "chip", "attributes": {"technology": "45nm"},
                     "local": [{"name": "buf", "class": "SRAM", "attributes": {"width": 64, "depth": 1024}},
                               {"name": "rf", "class": "SRAM",
                                "attributes": {"width": 64, "depth": 1024, "technology": "40nm"}}]}]}]}}
    comps = {c["name"]: c["attributes"] for c in components_from_processed(arch)}
    assert comps["system.chip.buf"]["technology"] == "45nm"
    assert comps["system.chip.rf"]["technology"] == "40nm"
    ert, _ = build_tables(components_from_processed(arch))
    energy = {t["name"]: {a["name"]: a["energy"] for a in t["actions"]} for t in ert["ERT"]["tables"]}
    assert energy["system.chip.buf"]["read"] == pytest.approx(
        E("SRAM", width=64, depth=1024, technology="45nm").actions["read"], rel=1e-5)


# ------------------------------------------------------------------ Timeloop's own estimates (pat)
def _pat_sram(height, width):
    """timeloop src/model/pat.cpp SRAMEnergy: Eyeriss 0.5 KB = 1, 100 KB = 6 units per 16-bit access."""
    x = width * height / (8 * 1024)
    return ((6.0 - 1.0) / (100.0 - 0.5) * (x - 0.5) + 1.0) * width / 16


def test_pat_buffer_height_rounds_up_a_partial_block():
    """timeloop buffer.cpp: height = entries / block_size, + 1 when it does not divide."""
    from coexplore.energy.timeloop_pat import vector_access_energy
    from coexplore.spec.architecture import Level
    lv = Level(name="b", cls="SRAM", size=65, word_bits=8, block_size=2, cluster_size=1, attributes={})
    assert vector_access_energy(lv) == pytest.approx(_pat_sram(33, 16), rel=1e-12)


def test_pat_dram_ignores_the_cluster_size():
    """timeloop buffer.cpp: a DRAM's access energy is pat::DRAMEnergy(word_bits * block_size)."""
    from coexplore.energy.timeloop_pat import vector_access_energy
    from coexplore.spec.architecture import Level
    lv = Level(name="d", cls="DRAM", word_bits=8, block_size=4, cluster_size=2, attributes={})
    assert vector_access_energy(lv) == pytest.approx(200.0 * 32 / 16, rel=1e-12)


@pytest.mark.parametrize("design", ("simba_like_pe8_glb4k", "eyeriss_like_45nm_pe8x16_glb8k"))
def test_ert_tables_in_accelergys_order(design):
    """Live Accelergy ERT.yaml (tests/data/energy/<design>): plug-in priced (primitive) components
    first, then the compound ones, each group in architecture order."""
    from coexplore.energy import read_ert
    arch = yaml.safe_load((DATA / design / "processed.yaml").read_text())
    ert, _ = build_tables(components_from_processed(arch))
    ref = read_ert(DATA / design / "ERT.yaml")
    assert [t["name"] for t in ert["ERT"]["tables"]] == [t["name"] for t in ref["ERT"]["tables"]]


def test_srams_at_the_fitted_cacti_nodes_carry_no_warning():
    """Grid rows c037 (SRAM 64 x 1024, 65nm) and c007-like 45nm SRAMs: Accelergy prices them with
    CACTI at the node itself, so the estimate says nothing about extrapolation there."""
    for tech in ("45nm", "65nm"):
        est = E("SRAM", width=64, depth=1024, technology=tech)
        assert est.warnings == () and est.accelergy_compatible, tech


def test_ert_lists_components_in_the_order_of_the_art():
    """Accelergy writes ERT and ART from one component list (the live files above agree), and the
    ART puts plug-in priced (primitive) components first (the live ART moves the dummy_storage
    levels ahead of GlobalBuffer): so a primitive SRAM listed after a compound buffer comes first
    in both."""
    comps = [("top.glb[1..1]", "smartbuffer_SRAM", {"width": 64, "depth": 1024, "technology": "45nm"}),
             ("top.sram[1..1]", "SRAM", {"width": 64, "depth": 1024, "technology": "45nm"}),
             ("top.mac[1..4]", "intmac", {"multiplier_width": 8, "adder_width": 16, "technology": "45nm"}),
             ("top.dram[1..1]", "DRAM", {"type": "LPDDR4", "width": 64})]
    ert, art = build_tables(comps)
    ert_names = [t["name"] for t in ert["ERT"]["tables"]]
    art_names = [t["name"] for t in art["ART"]["tables"]]
    assert art_names[:2] == ["top.sram[1..1]", "top.dram[1..1]"]
    assert ert_names == [n for n in art_names if n in ert_names]


def test_an_extrapolated_sram_is_said_with_the_size_as_written():
    """depth 16 is priced as the plug-in's 64 words per bank; the warning names both (user study)."""
    [said] = E("SRAM", width=64, depth=16, technology="45nm").warnings
    assert said.startswith("SRAM: depth 16 (priced as 64, the CACTI plug-in's rounding) is outside the fitted")
    [said] = E("SRAM", width=64, depth=10**8, technology="45nm").warnings
    assert said.startswith("SRAM: depth 1e+08 is outside the fitted")
