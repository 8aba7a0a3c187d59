"""v0.4 node lists placed as timeloopfe's v4-to-v3 transpiler places them (timeloopfe's
`transpile`, `Dataspace2BranchProcessor`, `ConstraintMacroProcessor`): which levels exist, their
instances, and which dataspaces each level must keep or bypass."""

import math

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


def _container(name, mesh, spatial=""):
    """A container node with a mesh (`meshX: 4`) and, optionally, spatial constraints."""
    return (f"  - !Container\n    name: {name}\n    spatial: {{{mesh}}}\n"
            + (f"    constraints: {{spatial: {spatial}}}\n" if spatial else ""))


def _constraints(f, extra=None):
    """The constraints of the architecture file `f` (plus an extra constraints file) for LAYER."""
    arch = load_architecture(f)
    return load_constraints(arch, extra, load_problem(LAYER))


def _keeps(f, constraints=None):
    """Per storage level, per dataspace: True kept, False bypassed, None left to the mapper."""
    arch, problem = load_architecture(f), load_problem(LAYER)
    space = MapSpace(arch, problem, load_constraints(arch, constraints, problem))
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
    body = (DRAM + _container("PE", "meshX: MESH") + _buf("rf") + MAC)
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
    a = _priced(tmp_path, "a.yaml", "{memory_depth: 2048, memory_width: 64, datawidth: 8}", mac)
    b = _priced(tmp_path, "b.yaml", "{depth: 2048, width: 64, datawidth: 8}", mac)
    glb = [[t for t in ert["ERT"]["tables"] if t["name"].endswith("glb[1..1]")] for ert in (a, b)]
    assert glb[0] and glb[0] == glb[1]
    with pytest.raises(CoexploreError, match="or --classes primitives"):
        _priced(tmp_path, "c.yaml", "{depth: 2048, width: 64, datawidth: 8}")
    with pytest.raises(CoexploreError) as err:       # given already: no hint to give it
        _priced(tmp_path, "d.yaml", "{depth: 2048, width: 64, datawidth: 8}", "{datawidth: null}", classes="primitives")
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
            + _container("PE", "meshX: 4") + MAC)
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
            + _container("PE", "meshX: 4") + MAC)
    keeps = _keeps(_arch(tmp_path, body))
    assert keeps["glb"] == [None, True, None] and keeps["inter_PE_spatial"] == [False, False, False]


# ---- from a mutation review of the above: cases each kills a mutant the suite let through

def test_extra_constraints_on_a_container_of_fan_out_one_are_dropped_with_its_level(tmp_path):
    """Mutant A5 (meshless not recorded) / C8: timeloopfe places no level for a container of
    fan-out 1, so an extra constraint targeting it has nothing to constrain (not an unknown level)."""
    body = DRAM + _container("PE", "meshX: 1") + _buf("rf") + MAC
    f = _arch(tmp_path, body)
    extra = tmp_path / "cons.yaml"
    extra.write_text("constraints:\n  targets:\n  - {target: PE, type: spatial, factors: [M=1]}\n")
    arch = load_architecture(f)
    assert arch.level_names() == ["DRAM", "rf", "reg"]
    cons = load_constraints(arch, extra, load_problem(LAYER))
    assert "PE" not in cons and "inter_PE_spatial" not in cons


def test_a_branch_of_two_bypass_only_nodes_keeps_what_either_keeps(tmp_path):
    """Mutant A8 (union of the bypass_only lists): bypass_only [Weights] keeps Inputs and Outputs,
    bypass_only [Inputs] keeps Weights and Outputs; the branch keeps all three, so neither node
    is made to bypass more than its own list."""
    body = (DRAM + "  - !Parallel\n    nodes:\n    - !Hierarchical\n      nodes:\n"
            + _buf("a", "{bypass_only: [Weights]}", "      ") + _buf("b", "{bypass_only: [Inputs]}", "      ")
            + "    - !Nothing {}\n" + MAC)
    keeps = _keeps(_arch(tmp_path, body))
    assert keeps["a"] == [False, True, True] and keeps["b"] == [True, False, True]


def test_a_branch_keeps_what_its_keep_lists_even_beside_a_bypass_only(tmp_path):
    """Mutant A9 (what the branch keeps not taken out of the common bypass_only list): wbuf keeps
    Weights; the branch's bypass_only [Weights, Inputs] must not make wbuf bypass Weights."""
    body = (DRAM + "  - !Parallel\n    nodes:\n    - !Hierarchical\n      nodes:\n"
            + _buf("wbuf", "{keep: [Weights]}", "      ") + _buf("obuf", "{bypass_only: [Weights, Inputs]}", "      ")
            + "    - !Nothing {}\n" + MAC)
    keeps = _keeps(_arch(tmp_path, body))
    assert keeps["wbuf"][0] is True and keeps["wbuf"][1] is False
    assert keeps["obuf"] == [False, False, True]


def test_nested_parallel_branches_bypass_what_the_inner_branch_does_not_keep(tmp_path):
    """Mutant A10 (an outer branch's keeps united with, not intersected with, the inner one's):
    `a` sits in the inner branch keeping Weights only, inside an outer branch keeping Weights and
    Inputs: `a` bypasses Inputs and Outputs."""
    body = (DRAM + "  - !Parallel\n    nodes:\n    - !Hierarchical\n      nodes:\n"
            + "      - !Parallel\n        nodes:\n" + _buf("a", "{keep: [Weights]}", "        ")
            + _buf("b", "{keep: [Inputs]}", "        ") + _buf("c", "{keep: [Outputs]}", "    ") + MAC)
    keeps = _keeps(_arch(tmp_path, body))
    assert keeps["a"] == [True, False, False]
    assert keeps["b"] == [False, True, False] and keeps["c"] == [False, False, True]


def test_iteration_macros_are_expanded_when_extra_constraints_are_added(tmp_path):
    """Mutant C12b (no expand_macros after the extra constraints): timeloopfe expands its macros
    whether or not a constraints file is added to the nodes' own."""
    temporal = "    constraints:\n      temporal: {no_iteration_over_dataspaces: [Weights]}\n"
    f = _arch(tmp_path, DRAM + _buf("glb", extra=temporal) + MAC)
    extra = tmp_path / "cons.yaml"
    extra.write_text("constraints:\n  targets:\n  - {target: DRAM, type: temporal, factors: [N=1]}\n")
    arch, problem = load_architecture(f), load_problem(LAYER)
    c = load_constraints(arch, extra, problem)["glb"]
    assert c.temporal_factors == {d: ("=", 1) for d in "CMRS"}


def test_greedy_allocation_splits_a_prime_larger_than_the_capacity_unevenly():
    """Mutant C15 (parts floored): 17 over 16 units goes in ceil(17/16) = 2 rounds of at most
    ceil(17/2) = 9, so 8.5 units busy on average (the docstring's uneven split), not nothing."""
    from coexplore.spec.constraints import _greedy_allocation
    alloc, util = _greedy_allocation((("M", 17),), 16, {})
    assert util == pytest.approx(8.5) and [(d, high) for d, _, high in alloc] == [("M", 9)]


@pytest.mark.parametrize("sizes, capacity", [((5, 5), 4), ((2, 2), 2), ((3, 3), 3)])
def test_greedy_allocation_breaks_ties_for_the_dimension_listed_first(sizes, capacity):
    """Mutants C16/C17 (>= instead of >): 'a later candidate replaces the best only when strictly
    better', so of two equal dimensions the first listed gets the allocation."""
    from coexplore.spec.constraints import _greedy_allocation
    dims = (("A", sizes[0]), ("B", sizes[1]))
    alloc, _ = _greedy_allocation(dims, capacity, {})
    assert alloc and {d for d, _, _ in alloc} == {"A"}


def test_a_quoted_negative_number_is_that_number(tmp_path):
    """Mutants E5/E6 (the sign of a quoted '-n' dropped): Timeloop reads "-64" as -64."""
    from coexplore.spec import expressions
    from coexplore.spec.yamlio import Quoted
    assert expressions.resolve(Quoted("-64"), {}) == (-64, None)
    assert expressions.resolve(Quoted("-0.5"), {}) == (-0.5, None)


def test_factorial_is_bounded_as_documented():
    """factorial/comb/perm are refused when the result would pass MAX_BITS (4,096 bits), whatever
    the arguments' size: 650! (5,143 bits) is, comb(20000, 2) is not."""
    from coexplore.spec import expressions
    assert expressions.resolve("factorial(20)", {}) == (math.factorial(20), None)
    for expr in ("factorial(5000)", "factorial(650)"):
        value, err = expressions.resolve(expr, {})
        assert err is not None and "too large" in err
    assert expressions.resolve("comb(20000, 2)", {}) == (199_990_000, None)
    assert expressions.resolve("perm(10001, 1)", {}) == (10_001, None)
    assert expressions.resolve("prod([3, 4], 2)", {})[1] is not None      # (math.prod's start is keyword-only)


def test_a_quoted_boolean_stays_text():
    """Mutant E8 (a quoted 'True' read as a number): only quoted numbers are numbers for
    Timeloop's reader; 'True' is the text, as Accelergy keeps every quoted string."""
    from coexplore.spec import expressions
    from coexplore.spec.yamlio import Quoted
    value, _ = expressions.resolve(Quoted("True"), {})
    assert value == "True" and isinstance(value, str)


def test_keep_only_counts_as_a_branch_keep(tmp_path):
    """Mutant A14 (keep_only not counted in _branch_keeps): Weights kept by keep_only in one
    !Parallel branch and by keep in another is kept in two branches (timeloopfe refuses it)."""
    branches = _buf("a", "{keep_only: [Weights]}", "    ") + _buf("b", "{keep: [Weights, Outputs]}", "    ")
    with pytest.raises(CoexploreError, match="Weights kept in two branches"):
        load_architecture(_arch(tmp_path, DRAM + "  - !Parallel\n    nodes:\n" + branches + MAC))


@pytest.mark.parametrize("n", [4, 9, 12, 25, 49, 97, 360, 1001])
def test_primes_are_the_prime_factorization(n):
    """Mutant C20 (`p * p < n`: a square such as 4 or 9 counted as one prime): the factors are
    primes and multiply back to n."""
    from coexplore.spec.constraints import _primes
    ps = _primes(n)
    assert math.prod(ps) == n and all(p > 1 and all(p % q for q in range(2, math.isqrt(p) + 1)) for p in ps)


def test_greedy_allocation_fills_a_square_dimension():
    """Mutant C20 seen from maximize_dims: 4 over 2 units is 2 busy (4 = 2 * 2)."""
    from coexplore.spec.constraints import _greedy_allocation
    assert _greedy_allocation((("M", 4),), 2, {})[1] == 2
    assert _greedy_allocation((("M", 9),), 3, {})[1] == 3


@pytest.mark.parametrize("name", ["log1p", "expm1", "atan2", "hypot", "copysign", "isqrt", "gcd", "erf", "lgamma"])
def test_accelergys_math_functions_are_offered(name):
    """Mutant E11 (a function dropped): each of Accelergy's MATH_FUNCS (parsing_utils) is callable
    in an expression and gives math's value."""
    import math as m
    from coexplore.spec import expressions
    args = {"log1p": "(1.0)", "expm1": "(1.0)", "atan2": "(1.0, 2.0)", "hypot": "(3.0, 4.0)", "copysign": "(2.0, -1.0)",
            "isqrt": "(17)", "gcd": "(12, 18)", "erf": "(0.5)", "lgamma": "(4.5)"}[name]
    value, err = expressions.resolve(f"{name}{args}", {})
    assert err is None and value == getattr(m, name)(*eval(args.replace("(", "[").replace(")", "]")))


def test_comb_and_perm_of_huge_numbers_are_refused_fast():
    """Mutant E12 (comb unbounded): comb(10**6, 5*10**5) has ~10**6 bits (far above MAX_BITS) and
    takes seconds; it is refused, as documented for factorial/comb/perm."""
    import time
    from coexplore.spec import expressions
    t = time.perf_counter()
    for expr in ("comb(1000000, 500000)", "perm(1000000, 500000)"):
        value, err = expressions.resolve(expr, {})
        assert err is not None and "too large" in err
    assert time.perf_counter() - t < 1.0


def test_no_iteration_over_every_dataspace_with_a_star(tmp_path):
    """Mutant C22 ('*' taken for an unknown dataspace): `no_iteration_over_dataspaces: ['*']`
    names every dataspace, so every dimension is fixed to 1 at that level."""
    temporal = "    constraints:\n      temporal: {no_iteration_over_dataspaces: ['*']}\n"
    f = _arch(tmp_path, DRAM + _buf("glb", extra=temporal) + MAC)
    arch, problem = load_architecture(f), load_problem(LAYER)
    c = load_constraints(arch, None, problem)["glb"]
    assert c.temporal_factors == {d: ("=", 1) for d in problem.dims}


def test_a_components_own_mesh_takes_its_spatial_constraints_to_the_dummy_level(tmp_path):
    """Mutants A18/A19: the spatial constraints of a component with its own mesh go to the dummy
    level timeloopfe places for that mesh (inter_rf_spatial), not stay on the component."""
    extra = "    spatial: {meshX: 4}\n    constraints:\n      spatial: {factors: [M=4]}\n"
    f = _arch(tmp_path, DRAM + _buf("rf", extra=extra) + MAC)
    arch, problem = load_architecture(f), load_problem(LAYER)
    cons = load_constraints(arch, None, problem)
    assert cons["inter_rf_spatial"].spatial_factors.get("M") == ("=", 4)
    assert "M" not in cons["rf"].spatial_factors


def test_an_iteration_macro_against_a_factor_given_is_refused(tmp_path):
    """Mutant C23 (the conflict check dropped): no_iteration_over_dataspaces [Weights] fixes C to
    1, so C=3 at the same level says two things of one factor."""
    temporal = ("    constraints:\n      temporal: {factors: [C=3], no_iteration_over_dataspaces: [Weights]}\n")
    f = _arch(tmp_path, DRAM + _buf("glb", extra=temporal) + MAC)
    arch, problem = load_architecture(f), load_problem(LAYER)
    with pytest.raises(CoexploreError, match="no_iteration_over_dataspaces"):
        load_constraints(arch, None, problem)


def test_maximize_dims_spreads_what_a_non_dividing_factor_leaves_rounded_up(tmp_path):
    """Mutant C24 (what is left floored): alexnet_conv1's P is 55; a factor 4 above leaves
    ceil(55 / 4) = 14 iterations, which fill 14 of the 16-wide mesh (2 * 7); floored it would
    be 13."""
    body = (DRAM + _buf("glb", extra="    constraints: {temporal: {factors: [P=4]}}\n")
            + _container("PE", "meshX: 16", "{maximize_dims: [[P]]}")
            + MAC)
    arch, problem = load_architecture(_arch(tmp_path, body)), load_problem(LAYER)
    assert dict(zip(problem.dims, problem.bounds))["P"] == 55
    assert load_constraints(arch, None, problem)["inter_PE_spatial"].spatial_factors["P"] == ("=", 14)


def test_maximize_dims_serves_the_innermost_level_first(tmp_path):
    """Mutant C26 (levels outermost first): the inner 8-wide mesh takes 8 of alexnet_conv1's
    M = 96 first; the outer 16-wide mesh then gets all 12 left (outermost first would give the
    outer 16 and leave the inner 6)."""
    body = (DRAM + _buf("glb")
            + _container("CL", "meshX: 16", "{maximize_dims: [[M]]}")
            + _container("PE", "meshY: 8", "{maximize_dims: [[M]]}")
            + MAC)
    cons = _constraints(_arch(tmp_path, body))
    assert cons["inter_PE_spatial"].spatial_factors["M"] == ("=", 8)
    assert cons["inter_CL_spatial"].spatial_factors["M"] == ("=", 12)


def test_maximize_dims_serves_every_spatial_constraint_before_the_temporal_ones(tmp_path):
    """Mutant C27 (temporal first): the PE mesh's spatial maximize_dims takes 16 of M = 96 before
    the buffer's temporal one (capacity 16), which gets the 6 left."""
    body = (DRAM + _buf("glb", extra="    constraints: {temporal: {maximize_dims: [[M]], maximize_dims_capacity: 16}}\n")
            + _container("PE", "meshX: 16", "{maximize_dims: [[M]]}")
            + MAC)
    cons = _constraints(_arch(tmp_path, body))
    assert cons["inter_PE_spatial"].spatial_factors["M"] == ("=", 16)
    assert cons["glb"].temporal_factors["M"] == ("=", 6)


def test_an_iteration_macro_given_one_name_not_a_list_is_refused(tmp_path):
    """Mutant C3 (the list check dropped): `no_iteration_over_dataspaces: Weights` is refused as
    not a list of names (not read letter by letter as dataspace 'W')."""
    temporal = "    constraints:\n      temporal: {no_iteration_over_dataspaces: Weights}\n"
    f = _arch(tmp_path, DRAM + _buf("glb", extra=temporal) + MAC)
    arch, problem = load_architecture(f), load_problem(LAYER)
    with pytest.raises(CoexploreError) as err:
        load_constraints(arch, None, problem)
    assert "a list of dataspace names" in str(err.value)


def test_a_temporal_maximize_dims_without_a_capacity_is_refused(tmp_path):
    """Mutant C28 (the refusal dropped): a temporal maximize_dims has no fan-out to fill;
    timeloopfe asks for maximize_dims_capacity."""
    body = DRAM + _buf("glb", extra="    constraints: {temporal: {maximize_dims: [[M]]}}\n") + MAC
    arch, problem = load_architecture(_arch(tmp_path, body)), load_problem(LAYER)
    with pytest.raises(CoexploreError, match="maximize_dims_capacity"):
        load_constraints(arch, None, problem)


def test_bypass_only_given_one_name_not_a_list_is_refused(tmp_path):
    """Mutant C5 (bypass_only not checked): `bypass_only: Weights` is refused as keep/bypass are
    (not read as the letters W, e, i, ...)."""
    f = _arch(tmp_path, DRAM + _buf("glb", "{bypass_only: Weights}") + MAC)
    arch, problem = load_architecture(f), load_problem(LAYER)
    with pytest.raises(CoexploreError) as err:
        load_constraints(arch, None, problem)
    assert "a list of dataspace names" in str(err.value)


def test_a_maximize_dims_capacity_of_zero_is_refused(tmp_path):
    """Mutant C29 (`capacity < 0`): maximize_dims_capacity must be a positive integer."""
    body = DRAM + _buf("glb", extra="    constraints: {temporal: {maximize_dims: [[M]], maximize_dims_capacity: 0}}\n") + MAC
    arch, problem = load_architecture(_arch(tmp_path, body)), load_problem(LAYER)
    with pytest.raises(CoexploreError, match="positive integer"):
        load_constraints(arch, None, problem)


def test_an_extra_bypass_only_against_the_nodes_keep_is_refused(tmp_path):
    """Mutant C6 (only `bypass`, not `bypass_only`, checked against the nodes' keep): glb keeps
    Weights in the architecture; an extra file's bypass_only [Weights] says the opposite."""
    f = _arch(tmp_path, DRAM + _buf("glb", "{keep: [Weights]}") + _buf("buf2") + MAC)
    extra = tmp_path / "cons.yaml"
    extra.write_text("constraints:\n  targets:\n  - {target: glb, type: dataspace, bypass_only: [Weights]}\n")
    arch, problem = load_architecture(f), load_problem(LAYER)
    with pytest.raises(CoexploreError, match="Weights"):
        load_constraints(arch, extra, problem)


def test_maximize_dims_leaves_room_for_a_whole_dimension_factor_at_its_level(tmp_path):
    """Mutant C30 (a factor 0 at the same level counted as 1): C=0 spreads all of C (3) over the
    16-wide mesh, so M may take at most 16 // 3 = 5 of it."""
    body = (DRAM + _buf("glb") + _container("PE", "meshX: 16", "{factors: [C=0], maximize_dims: [[M]]}")
            + MAC)
    arch, problem = load_architecture(_arch(tmp_path, body)), load_problem(LAYER)
    m = load_constraints(arch, None, problem)["inter_PE_spatial"].spatial_factors["M"][1]
    assert 1 < m and m * 3 <= 16


def test_iteration_macros_in_an_extra_file_for_a_v04_architecture_are_applied(tmp_path):
    """Mutant C9 (extras read without timeloopfe's macros): an extra constraints file for a v0.4
    architecture is read as timeloopfe reads constraints, so its no_iteration_over_dataspaces
    fixes Weights' dimensions (C, M, R, S) to 1."""
    f = _arch(tmp_path, DRAM + _buf("glb") + MAC)
    extra = tmp_path / "cons.yaml"
    extra.write_text("constraints:\n  targets:\n"
                     "  - {target: glb, type: temporal, no_iteration_over_dataspaces: [Weights]}\n")
    arch, problem = load_architecture(f), load_problem(LAYER)
    c = load_constraints(arch, extra, problem)["glb"]
    assert c.temporal_factors == {d: ("=", 1) for d in "CMRS"}
    assert not any("no_iteration" in i for i in c.ignored)


def test_maximize_dims_leaves_room_for_a_minimum_factor_at_its_level(tmp_path):
    """Mutant C31 (a >= factor at the same level not counted): C>=3 takes at least 3 of the
    16-wide mesh, so M may take at most 16 // 3 = 5."""
    body = (DRAM + _buf("glb") + _container("PE", "meshX: 16", "{factors: [C>=3], maximize_dims: [[M]]}")
            + MAC)
    arch, problem = load_architecture(_arch(tmp_path, body)), load_problem(LAYER)
    m = load_constraints(arch, None, problem)["inter_PE_spatial"].spatial_factors["M"][1]
    assert 1 < m and m * 3 <= 16


def test_maximize_dims_lists_each_start_from_the_whole_capacity(tmp_path):
    """Mutant C35 (the capacity not reset per list): on a 64-wide mesh with M=2 fixed, [[C], [P]]
    gives C its 3, then P the greedy allocation of 55 within 64 // (2 * 3) = 10: 55 in
    ceil(55 / 10) = 6 rounds of ceil(55 / 6) = 10 (docstring's uneven split), so P = 10, not the
    5 a capacity divided twice by M would leave."""
    body = (DRAM + _buf("glb") + _container("PE", "meshX: 64", "{factors: [M=2], maximize_dims: [[C], [P]]}")
            + MAC)
    arch, problem = load_architecture(_arch(tmp_path, body)), load_problem(LAYER)
    f = load_constraints(arch, None, problem)["inter_PE_spatial"].spatial_factors
    assert (f["M"], f["C"], f["P"]) == (("=", 2), ("=", 3), ("=", 10))


def test_memory_depth_is_a_count_and_named_in_its_error():
    """Mutants CO1/CO3: memory_depth, read as the depth, must be a whole number, and an error
    names the attribute the file gave (memory_depth), not 'depth'."""
    from coexplore.energy.components import _num
    assert _num({"memory_depth": 2048}, "depth", "SRAM") == 2048
    with pytest.raises(CoexploreError) as err:
        _num({"memory_depth": 2048.5}, "depth", "SRAM")
    assert "memory_depth" in str(err.value) and "whole number" in str(err.value)
    assert _num({"data_storage_width": 64}, "width", "SRAM") == 64



def test_an_uneven_maximize_dims_split_is_refused_naming_where_it_came_from(tmp_path):
    """timeloopfe's greedy allocation may split a dimension unevenly (M=20 of 96 on a 20-wide mesh);
    coexplore models whole factors only, and says the factor came from maximize_dims."""
    body = (DRAM + _buf("glb") + _container("PE", "meshX: 20", "{maximize_dims: [[M]]}")
            + MAC)
    f = _arch(tmp_path, body)
    cons = _constraints(f)
    assert cons["inter_PE_spatial"].spatial_factors["M"] == ("=", 20)
    with pytest.raises(CoexploreError, match="M=20 at inter_PE_spatial does not divide 96.*maximize_dims chose it"):
        MapSpace(load_architecture(f), load_problem(LAYER), cons)


def test_spec_keys_are_matched_by_part_of_their_name_as_timeloopfe_does(tmp_path):
    """timeloopfe's Specification: a key naming `ignore` is ignored, then one naming `constraints`
    or `mapping` holds targets for the nodes; an error names the list it comes from."""
    body = DRAM + _buf("glb") + _container("PE", "meshX: 4") + MAC
    extra = ("extra_constraints: {targets: [{target: glb, type: temporal, factors: [N=1]}]}\n"
             "ignore_mapping: [{target: PE, type: spatial, factors: [M=1]}]\n")
    cons = _constraints(_arch(tmp_path, body, extra))
    assert cons["glb"].temporal_factors == {"N": ("=", 1)} and "M" not in cons["inter_PE_spatial"].spatial_factors
    clash = extra + "mapping: [{target: glb, type: temporal, factors: [N=2]}]\n"
    with pytest.raises(CoexploreError) as err:
        _constraints(_arch(tmp_path, body, clash))
    assert "key 'mapping[0].factors'" in str(err.value) and "N" in str(err.value)
    with pytest.raises(CoexploreError, match="key 'mapping'"):
        _constraints(_arch(tmp_path, body, "mapping: mymap.yaml\n"))


def test_a_dummy_storage_buffer_of_its_own_is_priced(tmp_path):
    """The built-in estimator gives a dummy_storage component of its own (a buffer for Timeloop) a
    table, at Accelergy's dummy energy; the fan-out placeholders get none."""
    from coexplore.energy.pricing import price_architecture
    f = tmp_path / "a.yaml"
    f.write_text("architecture:\n  version: 0.4\n  nodes:\n"
                 "  - !Container {name: system, attributes: {technology: 45nm, datawidth: 8}}\n"
                 "  - !Component {name: DRAM, class: DRAM, attributes: {width: 64, datawidth: 8}}\n"
                 "  - !Component {name: passthru, class: dummy_storage, attributes: {datawidth: 8}}\n"
                 "  - !Container {name: PE, spatial: {meshX: 4}}\n"
                 "  - !Component {name: mac, class: intmac, attributes: {multiplier_width: 8, adder_width: 16}}\n")
    names = [t["name"] for t in price_architecture(f)[0]["ERT"]["tables"]]
    assert any(n.endswith("passthru[1..1]") for n in names) and not any("inter_PE_spatial" in n for n in names)


def test_combinatorics_of_huge_numbers_with_small_results_are_computed():
    from coexplore.spec import expressions
    assert expressions.resolve("comb(10**400, 1)", {}) == (10 ** 400, None)
    for expr in ("comb(10**400, 20)", "factorial(10**400)"):
        assert "too large" in expressions.resolve(expr, {})[1]


def test_keeps_an_extra_file_adds_in_a_branch_change_what_the_branch_bypasses(tmp_path):
    """timeloopfe attaches extra constraints before it resolves the branches: an extra keep of
    Weights at w1 makes the branch [w1, w2] keep Weights, so w2 leaves it to the mapper."""
    body = (DRAM + "  - !Parallel\n    nodes:\n    - !Hierarchical\n      nodes:\n"
            + _buf("w1", indent="      ") + _buf("w2", indent="      ")
            + _buf("iobuf", "{keep: [Inputs, Outputs]}", "    ") + MAC)
    f = _arch(tmp_path, body)
    extra = tmp_path / "extra.yaml"
    extra.write_text("targets:\n- {target: w1, type: dataspace, keep: [Weights]}\n")
    keeps = _keeps(f, extra)
    assert keeps["w1"] == [True, False, False] and keeps["w2"] == [None, False, False]
    assert _keeps(f)["w2"] == [False, False, False]          # without it the branch keeps nothing


def test_a_star_in_keep_or_bypass_names_every_dataspace(tmp_path):
    """timeloopfe expands `*` in every dataspace list (ConstraintMacroProcessor)."""
    keeps = _keeps(_arch(tmp_path, DRAM + _buf("a", "{keep: ['*']}") + _buf("b", "{bypass: ['*']}") + MAC))
    assert keeps["a"] == [True, True, True] and keeps["b"] == [False, False, False]


def test_a_node_keep_of_an_unknown_dataspace_is_refused_by_evaluate_too(tmp_path):
    """A typo in a node's dataspace constraint (`Weight`) is refused when a mapping is read against
    the architecture (timeloop-model stops on an unknown data-space name), as map refuses it."""
    from coexplore.errors import CoexploreError
    from coexplore.spec.mapping import parse_mapping
    f = _arch(tmp_path, DRAM + _buf("glb", "{keep: [Weight, Inputs]}") + MAC)
    arch, problem = load_architecture(f), load_problem(LAYER)
    with pytest.raises(CoexploreError, match="unknown dataspace.*Weight") as err:
        parse_mapping({"mapping": [{"target": "glb", "type": "temporal", "factors": "C1"}]}, arch, problem)
    assert err.value.key == "glb.constraints.dataspace.keep"       # the node entry that names it


def test_an_expression_reads_another_node_by_name(tmp_path):
    """timeloopfe's symbol table holds every node by name (the exercises' cheatsheet writes
    `datawidth: buffer.attributes["datawidth"]`): a reference to a node made before is its computed
    attributes; a missing name or attribute is refused naming the key."""
    glb = _buf("glb").replace("depth: 4096", "depth: 2 * 2048")
    reg = ('  - !Component\n    name: reg\n    class: regfile\n    attributes:\n'
           '      depth: glb.attributes.depth // 64\n      width: 8\n      datawidth: glb.attributes["datawidth"]\n'
           "  - !Component\n    name: mac\n    class: intmac\n    attributes: {datawidth: 8}\n")
    lv = {x.name: x for x in load_architecture(_arch(tmp_path, DRAM + glb + reg)).levels}
    assert (lv["reg"].size, lv["reg"].word_bits) == (4096 // 64, 8)
    with pytest.raises(CoexploreError, match=r"reg\.attributes\.depth.*'nope' is not defined"):
        load_architecture(_arch(tmp_path, DRAM + glb + reg.replace("glb.attributes.depth", "nope.attributes.depth")))
    with pytest.raises(CoexploreError, match=r"reg\.attributes\.datawidth.*KeyError"):
        load_architecture(_arch(tmp_path, DRAM + glb + reg.replace('glb.attributes["datawidth"]',
                                                                    'mac.attributes["width"]')))
