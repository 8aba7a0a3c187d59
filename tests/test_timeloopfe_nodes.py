"""v0.4 node lists placed as timeloopfe's v4-to-v3 transpiler places them (timeloopfe's
`transpile`, `Dataspace2BranchProcessor`, `ConstraintMacroProcessor`): which levels exist, their
instances, and which dataspaces each level must keep or bypass."""

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.mapspace.space import MapSpace
from coexplore.spec.architecture import load_architecture
from coexplore.spec.constraints import load_constraints
from coexplore.spec.problem import load_problem

from conftest import CORPUS

LAYER = CORPUS / "layers" / "alexnet_conv1.yaml"
DS = ["Weights", "Inputs", "Outputs"]     # the CNN layer's dataspaces, in its order


def _arch(tmp_path, body: str, variables: str = ""):
    f = tmp_path / "arch.yaml"
    f.write_text("architecture:\n  version: 0.4\n  nodes:\n" + body + variables)
    return f


DRAM = ("  - !Component\n    name: DRAM\n    class: DRAM\n    attributes: {width: 64, datawidth: 8}\n")
MAC = "  - !Component\n    name: reg\n    class: regfile\n    attributes: {depth: 64, width: 8, datawidth: 8}\n" \
      "  - !Component\n    name: mac\n    class: intmac\n    attributes: {datawidth: 8}\n"


def _buf(name, cons="", indent="  ", extra=""):
    text = (f"{indent}- !Component\n{indent}  name: {name}\n{indent}  class: SRAM\n"
            f"{indent}  attributes: {{depth: 4096, width: 64, datawidth: 8}}\n")
    return text + (f"{indent}  constraints: {{dataspace: {cons}}}\n" if cons else "") + extra


def _keeps(f):
    """Per storage level, per dataspace: True kept, False bypassed, None left to the mapper."""
    arch, problem = load_architecture(f), load_problem(LAYER)
    space = MapSpace(arch, problem, load_constraints(arch, None, problem))
    free = set(space.keep_params)
    return {lv.name: [None if (li, s) in free else bool(space.base_keep[li, s]) for s in range(3)]
            for li, lv in enumerate(reversed(arch.levels))}      # (the mapspace counts from the innermost)


def test_a_lone_keep_leaves_the_other_dataspaces_to_the_mapper(tmp_path):
    f = _arch(tmp_path, DRAM + _buf("glb", "{keep: [Inputs]}") + MAC)
    assert _keeps(f)["glb"] == [None, True, None]


def test_a_parallel_branch_bypasses_what_it_does_not_keep(tmp_path):
    body = (DRAM + "  - !Parallel\n    nodes:\n" + _buf("wbuf", "{keep: [Weights]}", "    ")
            + _buf("obuf", "{keep: [Outputs]}", "    ") + "    - !Nothing {constraints: {dataspace: {keep: [Inputs]}}}\n"
            + MAC)
    keeps = _keeps(_arch(tmp_path, body))
    assert keeps["wbuf"] == [True, False, False] and keeps["obuf"] == [False, False, True]


def test_keep_only_and_bypass_only_macros(tmp_path):
    keeps = _keeps(_arch(tmp_path, DRAM + _buf("a", "{keep_only: [Inputs]}") + _buf("b", "{bypass_only: [Weights]}")
                         + MAC))
    assert keeps["a"] == [False, True, False]
    assert keeps["b"] == [False, True, True]


def test_a_container_of_fan_out_one_places_no_level(tmp_path):
    body = (DRAM + "  - !Container\n    name: PE\n    spatial: {meshX: MESH}\n" + _buf("rf") + MAC)
    names = load_architecture(_arch(tmp_path, body, "variables: {MESH: 1}\n")).level_names()
    assert names == ["DRAM", "rf", "reg"]
    arch = load_architecture(_arch(tmp_path, body, "variables: {MESH: 4}\n"))
    assert arch.level_names() == ["DRAM", "inter_PE_spatial", "rf", "reg"] and arch.levels[2].instances == 4


def test_a_components_own_mesh_is_a_dummy_level_then_the_copies(tmp_path):
    body = DRAM + _buf("rf", extra="    spatial: {meshX: 4, meshY: 2}\n") + MAC
    arch = load_architecture(_arch(tmp_path, body))
    assert arch.level_names() == ["DRAM", "inter_rf_spatial", "rf", "reg"]
    dummy, rf = arch.levels[1], arch.levels[2]
    assert dummy.instances == 1 and (rf.instances, rf.mesh_x, rf.mesh_y) == (8, 4, 2)
    assert arch.compute.instances == 8
    inside = DRAM + "  - !Parallel\n    nodes:\n" + _buf("rf", "{keep: [Weights]}", "    ",
                                                     "      spatial: {meshX: 4}\n") + MAC
    with pytest.raises(CoexploreError, match="inside a !Parallel"):
        load_architecture(_arch(tmp_path, inside))


def test_hierarchical_and_pipelined_branches_are_their_nodes_in_order(tmp_path):
    for tag in ("Hierarchical", "Pipelined"):
        body = DRAM + f"  - !{tag}\n    nodes:\n" + _buf("a", indent="    ") + _buf("b", indent="    ") + MAC
        assert load_architecture(_arch(tmp_path, body)).level_names() == ["DRAM", "a", "b", "reg"]


def test_enabled_is_an_expression_and_element_is_a_component(tmp_path):
    body = (DRAM + _buf("glb", extra="    enabled: USE_GLB\n").replace("!Component", "!Element") + MAC)
    assert load_architecture(_arch(tmp_path, body, "variables: {USE_GLB: false}\n")).level_names() == ["DRAM", "reg"]
    assert load_architecture(_arch(tmp_path, body, "variables: {USE_GLB: 1 == 1}\n")).level_names() == ["DRAM", "glb", "reg"]
    with pytest.raises(CoexploreError, match="enabled"):
        load_architecture(_arch(tmp_path, body, "variables: {USE_GLB: 0}\n"))


def _priced(tmp_path, name, glb_attrs, mac_attrs="{}", classes=None):
    from coexplore.energy.pricing import price_architecture
    f = tmp_path / name
    f.write_text("architecture:\n  version: 0.4\n  nodes:\n  - !Container\n    name: system\n"
                 "    attributes: {technology: 45nm, datawidth: 8}\n" + DRAM
                 + f"  - !Component\n    name: glb\n    class: smartbuffer_SRAM\n    attributes: {glb_attrs}\n"
                 + f"  - !Component\n    name: mac\n    class: intmac\n    attributes: {mac_attrs}\n")
    return price_architecture(f, classes)[0]


def test_memory_width_and_depth_price_as_width_and_depth(tmp_path):
    """timeloopfe's examples size their buffers with memory_width/memory_depth (Timeloop reads them
    as width and depth): the built-in estimator prices them the same."""
    mac = "{multiplier_width: 8, adder_width: 16}"
    a = _priced(tmp_path, "a.yaml", "{memory_depth: 2048, memory_width: 64}", mac)
    b = _priced(tmp_path, "b.yaml", "{depth: 2048, width: 64}", mac)
    glb = [[t for t in ert["ERT"]["tables"] if t["name"].endswith("glb[1..1]")] for ert in (a, b)]
    assert glb[0] and glb[0] == glb[1]
    with pytest.raises(CoexploreError, match="or --classes primitives"):
        _priced(tmp_path, "c.yaml", "{depth: 2048, width: 64}")
    with pytest.raises(CoexploreError) as err:       # given already: no hint to give it
        _priced(tmp_path, "d.yaml", "{depth: 2048, width: 64}", "{datawidth: null}", classes="primitives")
    assert "needs attribute" in str(err.value) and "--classes" not in str(err.value)


def test_iteration_macros_fix_the_dataspaces_dimensions(tmp_path):
    """no_iteration_over_dataspaces: [Weights] -> C, M, R, S = 1; must_iterate_over_dataspaces:
    [Outputs] -> every dimension Outputs does not use (C, R, S) = 1 (timeloopfe's macros)."""
    temporal = ("    constraints:\n      temporal: {no_iteration_over_dataspaces: [Weights]}\n"
                "      spatial: {must_iterate_over_dataspaces: [Outputs]}\n")
    f = _arch(tmp_path, DRAM + _buf("glb", extra=temporal) + MAC)
    arch, problem = load_architecture(f), load_problem(LAYER)
    c = load_constraints(arch, None, problem)["glb"]
    assert c.temporal_factors == {d: ("=", 1) for d in "CMRS"}
    assert c.spatial_factors == {d: ("=", 1) for d in "CRS"}
    assert not c.ignored


def test_a_branch_with_bypass_only_keeps_all_but_what_it_lists(tmp_path):
    """timeloopfe expands bypass_only before it resolves the branches: the branch keeps the rest."""
    body = (DRAM + "  - !Parallel\n    nodes:\n" + _buf("wbuf", "{keep: [Weights]}", "    ")
            + _buf("iobuf", "{bypass_only: [Weights]}", "    ") + MAC)
    keeps = _keeps(_arch(tmp_path, body))
    assert keeps["wbuf"] == [True, False, False] and keeps["iobuf"] == [False, True, True]


@pytest.mark.parametrize("branches, says", [
    (_buf("a", "{keep: [Weights, Inputs]}", "    ") + _buf("b", "{keep: [Outputs, Inputs]}", "    "),
     "Inputs kept in two branches"),
    ("    - !Container\n      name: PE\n" + _buf("b", "{keep: [Outputs]}", "    "), "inside a !Parallel"),
])
def test_parallel_nodes_timeloopfe_refuses_are_refused(tmp_path, branches, says):
    with pytest.raises(CoexploreError, match=says):
        load_architecture(_arch(tmp_path, DRAM + "  - !Parallel\n    nodes:\n" + branches + MAC))


def _maximized(tmp_path, glb_temporal, pe_spatial):
    body = (DRAM + _buf("glb", extra=f"    constraints: {{temporal: {glb_temporal}}}\n")
            + f"  - !Container\n    name: PE\n    spatial: {{meshX: 16}}\n    constraints: {{spatial: {pe_spatial}}}\n"
            + MAC)
    f = _arch(tmp_path, body)
    arch, problem = load_architecture(f), load_problem(LAYER)
    return load_constraints(arch, None, problem)["inter_PE_spatial"].spatial_factors


def test_maximize_dims_counts_a_factor_0_as_the_whole_dimension(tmp_path):
    """alexnet_conv1's M is 96: with M=0 (all of it) at the buffer above, nothing of M is left to
    spread; without it, 16 of M's 96 fill the 16-wide mesh."""
    assert _maximized(tmp_path, "{factors: [N=1]}", "{maximize_dims: [[M]]}")["M"] == ("=", 16)
    assert _maximized(tmp_path, "{factors: [M=0]}", "{maximize_dims: [[M]]}")["M"] == ("=", 1)
    with pytest.raises(CoexploreError, match="already has a factor"):
        _maximized(tmp_path, "{factors: [N=1]}", "{factors: [M<=4], maximize_dims: [[M]]}")


def test_a_specs_own_constraints_and_mapping_lists_add_to_the_nodes(tmp_path):
    """timeloopfe's ConstraintAttacherProcessor: `constraints: {targets: [...]}` and `mapping: [...]`
    beside the node list are attached to the named nodes, which keep their own constraints."""
    body = (DRAM + _buf("glb", "{keep: [Inputs], bypass: [Weights]}")
            + "  - !Container\n    name: PE\n    spatial: {meshX: 4}\n" + MAC)
    extra = ("constraints:\n  targets:\n  - {target: glb, type: temporal, factors: [N=1]}\n"
             "mapping:\n- {target: PE, type: spatial, factors: [M=1]}\n")
    f = _arch(tmp_path, body, extra)
    arch, problem = load_architecture(f), load_problem(LAYER)
    cons = load_constraints(arch, None, problem)
    assert cons["glb"].keep == {"Inputs"} and cons["glb"].bypass == {"Weights"}
    assert cons["glb"].temporal_factors == {"N": ("=", 1)}
    assert cons["inter_PE_spatial"].spatial_factors["M"] == ("=", 1)


def test_a_dummy_storage_component_of_its_own_is_a_buffer(tmp_path):
    """Only timeloopfe's fan-out placeholders (`inter_<node>_spatial`) keep nothing; a component
    whose class is dummy_storage (raella's buffers) keeps what its constraints say."""
    body = (DRAM + _buf("glb", "{keep: [Inputs]}").replace("class: SRAM", "class: dummy_storage")
            + "  - !Container\n    name: PE\n    spatial: {meshX: 4}\n" + MAC)
    keeps = _keeps(_arch(tmp_path, body))
    assert keeps["glb"] == [None, True, None] and keeps["inter_PE_spatial"] == [False, False, False]
