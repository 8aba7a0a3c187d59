"""ERT/ART building and writing in Accelergy's format, against live Accelergy outputs."""

import re
from pathlib import Path

import pytest
import yaml

from coexplore.energy import (build_tables, components_from_processed, read_art,
                              read_ert, write_art, write_ert)
from coexplore.errors import CoexploreError
from coexplore.spec.ert import parse_ert

DATA = Path(__file__).parent / "data" / "energy"
DESIGNS = ("simba_like_pe8_glb4k", "eyeriss_like_45nm_pe8x16_glb8k")
CACTI_LEVELS = {"GlobalBuffer", "shared_glb"}   # the only levels priced by the fitted model


def _tables(design):
    arch = yaml.safe_load((DATA / design / "processed.yaml").read_text())
    return build_tables(components_from_processed(arch))


@pytest.mark.parametrize("design", DESIGNS)
def test_tables_match_live_accelergy(design):
    ert, art = _tables(design)
    ref_ert = read_ert(DATA / design / "ERT.yaml")
    ref_art = read_art(DATA / design / "ART.yaml")
    ours, ref = parse_ert(ert).actions, parse_ert(ref_ert).actions
    assert set(ours) == set(ref)
    for level, actions in ref.items():
        assert set(ours[level]) == set(actions), level
        for action, energy in actions.items():
            tol = 0.10 if level in CACTI_LEVELS else 1e-5
            assert ours[level][action] == pytest.approx(energy, rel=tol, abs=1e-9), (level, action)
    ref_area = {t["name"]: t["area"] for t in ref_art["ART"]["tables"]}
    our_area = {t["name"]: t["area"] for t in art["ART"]["tables"]}
    assert set(our_area) == set(ref_area)
    for name, area in ref_area.items():
        tol = 0.10 if any(c in name for c in CACTI_LEVELS) else 1e-5
        assert our_area[name] == pytest.approx(area, rel=tol), name


@pytest.mark.parametrize("design", DESIGNS)
def test_written_files_have_accelergys_layout(design, tmp_path):
    ert, art = _tables(design)
    write_ert(tmp_path / "ERT.yaml", ert)
    write_art(art, tmp_path / "ART.yaml")          # either argument order
    for name in ("ERT.yaml", "ART.yaml"):
        ours = (tmp_path / name).read_text()
        ref = (DATA / design / name).read_text()
        assert ours.startswith("# ") and "coexplore-builtin" in ours.splitlines()[0]

        def shape(text):   # the layout with numbers blanked, comments dropped
            lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
            return [re.sub(r"(energy|area): .*", r"\1: N", ln) for ln in lines]
        assert shape(ours) == shape(ref) or sorted(shape(ours)) == sorted(shape(ref))
    back = read_ert(tmp_path / "ERT.yaml")
    assert [t["name"] for t in back["ERT"]["tables"]] == [t["name"] for t in ert["ERT"]["tables"]]
    for t_back, t in zip(back["ERT"]["tables"], ert["ERT"]["tables"]):
        for a_back, a in zip(t_back["actions"], t["actions"]):
            assert a_back["energy"] == pytest.approx(a["energy"], rel=1e-5, abs=1e-12)
            # PyYAML reads Accelergy's `1e-09` as a string (as it does for Accelergy's files)
            assert {k: float(v) for k, v in a_back["arguments"].items()} == a["arguments"]


def test_table_order_and_estimator_name():
    ert, art = _tables("simba_like_pe8_glb4k")
    names = [t["name"].split(".")[-1] for t in art["ART"]["tables"]]
    ref = [t["name"].split(".")[-1]
           for t in read_art(DATA / "simba_like_pe8_glb4k" / "ART.yaml")["ART"]["tables"]]
    assert names == ref
    assert "coexplore-builtin" in ert["estimator"] and "coexplore-builtin" in art["estimator"]
    # dummy levels: area only, no ERT entry (no actions required by timeloopfe)
    assert not any("spatial" in t["name"] for t in ert["ERT"]["tables"])


def test_tuple_components_and_errors():
    comps = [("system_top_level.buf[1..4]", "smartbuffer_SRAM",
              {"width": 64, "depth": 1024, "technology": "45nm"}),
             ("system_top_level.mac[1..4]", "intmac",
              {"multiplier_width": 8, "adder_width": 16, "technology": "45nm"}, ["compute"])]
    ert, art = build_tables(comps)
    acts = parse_ert(ert).actions
    assert set(acts["buf"]) == {"read", "write", "update", "leak"}
    assert set(acts["mac"]) == {"compute", "leak"}   # compound: every action of the class
    with pytest.raises(CoexploreError, match="bad"):
        build_tables([("system_top_level.bad[1..1]", "SRAM", {"technology": "45nm"})])
    with pytest.raises(CoexploreError, match="estimator"):
        build_tables(comps, estimator="mcpat")


def test_read_ert_rejects_non_tables(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("foo: 1\n")
    with pytest.raises(CoexploreError, match="ERT.tables"):
        read_ert(p)


def test_area_counts_every_range_in_a_components_full_name():
    """Accelergy names a v0.3 component inside a ranged subtree `system.PE[0..15].MAC[0..15]`:
    256 MACs; a range on the subtree only (`PE[0..255].MAC`) is 256 too."""
    from coexplore.energy.tables import area_breakdown
    art = {"ART": {"tables": [{"name": "system.DRAM", "area": 0.0},
                              {"name": "system.tpu.PE[0..15].MAC[0..15]", "area": 2.0},
                              {"name": "system.tpu.PE[0..255].WeightReg", "area": 3.0},
                              {"name": "system.pe_spad[0..167]", "area": 4.0}]}}
    assert area_breakdown(art) == [("DRAM", 1, 0.0), ("MAC", 256, 2.0), ("WeightReg", 256, 3.0),
                                   ("pe_spad", 168, 4.0)]
