"""Review tests for four commits: own template cores with `var:` (a67de1b), own-core ERT/ART fit
(c017b0e), the fixed spatial fan-out check (724beb6) and the sweep report's Warnings (bee1a9f).
Each test pins a property the commits' own tests leave open (found by mutation testing)."""

import argparse
import shutil

import numpy as np
import pytest

from conftest import CORPUS
from coexplore.arch.file_core import FileCore
from coexplore.errors import CoexploreError
from coexplore.spec import template
from coexplore.spec.architecture import load_architecture

ARCH = CORPUS / "arches" / "eyeriss_like"


@pytest.fixture()
def tpl(tmp_path):
    """The corpus' eyeriss_like with its global buffer depth a template name {{ glb_depth }}."""
    (tmp_path / "mine").mkdir()
    text = (ARCH / "arch.yaml").read_text()
    assert text.count("depth: 16384") == 1
    path = tmp_path / "mine" / "core.yaml.jinja2"
    path.write_text(text.replace("depth: 16384", "depth: {{ glb_depth }}"))
    template.set_data({})
    yield path
    template.set_data({})


def _glb_depth(arch) -> int:
    return next(lv for lv in arch.all_levels if lv.name == "shared_glb").attributes["depth"]


# --- a67de1b: with_names / var ------------------------------------------------------------------

def test_a_cores_var_wins_over_a_command_var_which_then_counts_as_unused(tpl):
    """`var:` is "over any --var": the core renders with its own value, and a --var of the same
    name that no template took is still reported as unused (a shadowed --var did nothing)."""
    template.set_data({"glb_depth": 99})
    assert _glb_depth(FileCore("m", tpl, var={"glb_depth": 2048}).architecture) == 2048
    assert template.data() == {"glb_depth": 99}
    assert template.unused_names() == ["glb_depth"]


def test_names_a_template_used_before_a_core_block_stay_used(tpl):
    """A --var a plain render used before a core's block is not forgotten by the block."""
    template.set_data({"glb_depth": 512})
    assert _glb_depth(load_architecture(tpl)) == 512
    assert template.unused_names() == []
    assert _glb_depth(FileCore("m", tpl, var={"glb_depth": 2048}).architecture) == 2048
    assert template.unused_names() == []
    assert _glb_depth(load_architecture(tpl)) == 512          # the --var value again after the block


def test_a_block_reports_only_the_names_asked_inside_it(tpl):
    template.set_data({"glb_depth": 512})
    load_architecture(tpl)                                   # glb_depth asked for before the block
    with template.with_names({"x": 1}) as asked:
        pass
    assert asked == set()
    # hence a misspelt var: is refused even when another render asked for the right name before
    with pytest.raises(CoexploreError, match="does not ask for glb_deph"):
        FileCore("m", tpl, var={"glb_depth": 64, "glb_deph": 1}).architecture


def test_with_names_restores_the_names_after_an_exception(tpl):
    template.set_data({"a": 1})
    with pytest.raises(RuntimeError):
        with template.with_names({"a": 2, "b": 3}):
            assert template.data() == {"a": 2, "b": 3}
            raise RuntimeError
    assert template.data() == {"a": 1}


def _two_core_system(tmp_path):
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n"
                    "  - {name: big, arch: mine/core.yaml.jinja2, var: {glb_depth: 16384}}\n"
                    "  - {name: small, arch: mine/core.yaml.jinja2, var: {glb_depth: 64}}\n")
    return path


def test_map_and_evaluate_render_with_the_var_of_the_core_chosen(tpl, tmp_path):
    from coexplore.cli.inputs import own_core_names
    path = _two_core_system(tmp_path)
    for core, depth in (("small", 64), ("big", 16384)):
        with own_core_names(argparse.Namespace(arch=str(path), core=core)):
            assert template.data() == {"glb_depth": depth}
            assert _glb_depth(load_architecture(tpl)) == depth
    with own_core_names(argparse.Namespace(arch=str(path), core=None)):      # two designs, none chosen
        assert template.data() == {}
    assert template.data() == {}


def test_an_empty_var_on_a_plain_file_is_not_refused(tmp_path):
    """`var: {}` gives no names, so nothing goes unused: only names on a non-template are refused."""
    from coexplore.spec.system import load_system
    (tmp_path / "mine").mkdir()
    shutil.copy(ARCH / "arch.yaml", tmp_path / "mine" / "plain.yaml")
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {arch: mine/plain.yaml, var: {}}\n")
    assert load_system(path).cores[0].var == {}


# --- c017b0e: check_own_table ------------------------------------------------------------------

def test_a_table_missing_a_single_level_is_refused():
    from coexplore.arch.tables import check_own_table
    from coexplore.spec.yamlio import load_yaml
    arch = load_architecture(ARCH / "arch.yaml")
    ert = load_yaml(ARCH / "ERT.yaml")
    check_own_table("e", arch, ert, "ERT", ARCH / "ERT.yaml")                 # its own table fits
    tables = ert["ERT"]["tables"]
    glb = [t for t in tables if t["name"] == "system_top_level.shared_glb[1..1]"]
    assert len(glb) == 1
    short = {"ERT": {**ert["ERT"], "tables": [t for t in tables if t is not glb[0]]}}
    with pytest.raises(CoexploreError, match=r"no entry for shared_glb\[1\.\.1\] \(expected"):
        check_own_table("e", arch, short, "ERT", ARCH / "ERT.yaml")


def test_nested_v03_ranges_multiply_in_the_instance_count(tmp_path):
    """`sys.G[0..3].PE[0..3].buf`: 16 bufs (4 x 4), as the architecture has."""
    from coexplore.arch.tables import check_own_table
    (tmp_path / "arch.yaml").write_text(_NESTED)
    arch = load_architecture(tmp_path / "arch.yaml")
    assert {lv.name: lv.instances for lv in arch.all_levels if not lv.is_dummy}["buf"] == 16
    names = {"DRAM": "sys.DRAM", "glb": "sys.G[0..3].glb", "buf": "sys.G[0..3].PE[0..3].buf",
             "mac": "sys.G[0..3].PE[0..3].mac"}
    table = {"ERT": {"version": 0.3, "tables": [{"name": n, "actions": []} for n in names.values()]}}
    check_own_table("n", arch, table, "ERT", tmp_path / "ERT.yaml")


_NESTED = """architecture:
  version: 0.3
  subtree:
  - name: sys
    attributes: {technology: 45nm}
    local:
    - name: DRAM
      class: DRAM
      attributes: {type: LPDDR4, width: 64, word-bits: 8, datawidth: 8}
    subtree:
    - name: G[0..3]
      local:
      - name: glb
        class: smartbuffer_SRAM
        attributes: {depth: 256, width: 8, word-bits: 8, datawidth: 8, meshX: 4}
      subtree:
      - name: PE[0..3]
        local:
        - name: buf
          class: regfile
          attributes: {depth: 64, width: 8, word-bits: 8, datawidth: 8, meshX: 16}
        - name: mac
          class: intmac
          attributes: {datawidth: 8, meshX: 16}
"""


# --- 724beb6: _check_fixed_fanout -----------------------------------------------------------------

def _fixed(tmp_path, mesh_x, directive):
    from test_mapspace import _fixed_spatial
    return _fixed_spatial(tmp_path, mesh_x, directive)


def test_fixed_factors_that_just_fit_are_kept(tmp_path):
    ms = _fixed(tmp_path / "a", 4, "factors: C=4 M=4 P=1")          # 16 of 4 x 4: fits
    a = ms.decode(ms.sample(np.random.default_rng(0), 20))
    assert ((a.spatial_x[:, 1] * a.spatial_y[:, 1]).prod(axis=1) == 16).all()


def test_fixed_factors_over_the_whole_fan_out_are_refused(tmp_path):
    """C=4 M=4 P=2 (32) on a 4 x 4 level: every X/Y placement overflows."""
    with pytest.raises(CoexploreError, match=r"\(DRAM: C=4 M=4 P=2\) need 32 instances at buf, which has 4 x 4 "
                                             r"\(X x Y\), 16 instances"):
        _fixed(tmp_path / "a", 4, "factors: C=4 M=4 P=2")
    # M on X, C on Y by the split; P (unlisted) may go either way, but neither axis has room
    with pytest.raises(CoexploreError, match=r"need 32 instances at buf, which has 4 x 4"):
        _fixed(tmp_path / "b", 4, "factors: C=4 M=4 P=2, permutation: [M, C], split: 1")


def test_fixed_factors_over_a_y_only_fan_out_name_the_y_axis_and_every_factor(tmp_path):
    with pytest.raises(CoexploreError, match=r"the fixed spatial factors \(DRAM: C=4 M=4 P=2\) need a Y mesh of 32 "
                                             r"at buf, which has 1 x 16 \(X x Y\)"):
        _fixed(tmp_path / "a", 1, "factors: C=4 M=4 P=2")


def test_the_model_accepts_a_factor_above_its_levels_own_fan_out_when_the_level_above_idles(tmp_path, monkeypatch):
    """Timeloop (and coexplore's validity) checks the cumulative X expansion against each level's
    meshX, not each level's own fan-out: glb (4 instances) fans out 4 each to 16 bufs, yet C=16 at
    glb with DRAM's fan-out unused is a valid mapping (the 16 MACs all busy). timeloop-mapper's
    mapspace limits each level to its own fan-out (uber.cpp), so `map` refuses these constraints
    up front, naming them."""
    from coexplore.errors import CoexploreError
    from coexplore.mapspace.space import MapSpace
    from coexplore.model.evaluate import evaluate_batch, level_costs
    from coexplore.spec.constraints import load_constraints
    from coexplore.spec.problem import load_problem
    from coexplore.energy.pricing import builtin_ert
    (tmp_path / "arch.yaml").write_text(_NESTED)
    (tmp_path / "prob.yaml").write_text(_GEMM16)
    (tmp_path / "c.yaml").write_text("mapspace_constraints:\n  targets:\n"
                                     "  - {target: DRAM, type: spatial, factors: C=1 M=1 P=1}\n"
                                     "  - {target: glb, type: spatial, factors: C=16 M=1 P=1}\n")
    arch = load_architecture(tmp_path / "arch.yaml")
    problem = load_problem(tmp_path / "prob.yaml")
    cons = load_constraints(arch, tmp_path / "c.yaml")
    costs = level_costs(arch, builtin_ert(tmp_path / "arch.yaml", "primitives"))
    monkeypatch.setattr(MapSpace, "_check_fixed_fanout", lambda *a, **k: None)
    monkeypatch.setattr(MapSpace, "_fanout_rules", lambda self, *a: setattr(self, "caps_fanout", False))
    ms = MapSpace(arch, problem, cons)
    m = ms.decode(ms.sample(np.random.default_rng(0), 200))
    res = evaluate_batch(arch, problem, costs, m)
    assert res.valid.any() and (res.utilization[res.valid] == 1.0).any()
    monkeypatch.undo()
    with pytest.raises(CoexploreError, match="glb fans out 4 x 1") as e:
        MapSpace(arch, problem, cons)
    assert e.value.key == "mapspace_constraints.targets[1].factors"


_GEMM16 = """problem:
  shape: {name: GEMM, dimensions: [C, M, P], data-spaces: [{name: A, projection: [[[C]], [[P]]]},
          {name: B, projection: [[[C]], [[M]]]}, {name: Z, projection: [[[M]], [[P]]], read-write: true}]}
  instance: {C: 16, M: 4, P: 2}
"""


# --- bee1a9f: the report's Warnings ----------------------------------------------------------------

def _report(pts):
    from test_report import RUN, front_of, objectives, render_report
    objs = objectives("latency", "energy")
    return render_report(RUN, pts, objs, front_of(pts, objs))


def test_a_one_point_sweep_names_its_point_not_every_point():
    from test_report import parse, sweep
    pts = sweep(n_failed=0)[:1]
    pts[0]["warnings"] = ["w"]
    assert parse(_report(pts)).tables[-1] == [["points", "warning"], [pts[0]["point"], "w"]]


def test_points_without_a_warnings_key_render():
    """points.json of a run before the warnings were recorded, or a failed point: no key at all."""
    from test_report import parse, sweep
    pts = sweep(n_failed=1)[:3]
    for p in pts:
        p.pop("warnings", None)
    pts[2]["warnings"] = ["late"]
    assert parse(_report(pts)).tables[-1] == [["points", "warning"], [pts[2]["point"], "late"]]
