"""timeloopfe's input conventions: Jinja2 templates (the exercises' top.yaml.jinja2), Accelergy's
`!include` / `!includedir` tags and `<<<` merge keys, a whole spec as ARCH (PROBLEM and extra
mapping constraints inside it)."""

import json
import math
import warnings
import shutil
from pathlib import Path

import pytest

from coexplore.cli.main import main
from coexplore.errors import CoexploreError
from coexplore.spec import template
from coexplore.spec.yamlio import load_yaml

from conftest import DATA

T = DATA / "timeloop_templates"
TOP = T / "v4_ed_eyeriss_like" / "top.yaml.jinja2"
REF = DATA / "exercises_v4" / "v4_ed_eyeriss_like"


@pytest.fixture(autouse=True)
def _no_names():
    yield
    template.set_data({})


def test_the_exercises_top_template_renders_the_files_it_includes():
    template.set_data({"architecture": "arch_dir"})
    doc = load_yaml(TOP)
    arch = load_yaml(T / "v4_ed_eyeriss_like" / "arch_dir" / "arch.yaml")
    problem = load_yaml(T / "v4_ed_eyeriss_like" / "_include" / "default_problem.yaml")
    mapper = load_yaml(T / "v4_ed_eyeriss_like" / "_include" / "mapper.yaml")
    assert doc["architecture"] == arch["architecture"]      # the nodes with their !Container tags
    assert doc["problem"] == problem["problem"] and doc["mapper"] == mapper["mapper"]
    assert doc["variables"]["global_cycle_seconds"] == 1e-9
    classes = doc["components"]["classes"]                     # include_all: one list per file
    names = sorted(c["name"] for per_file in classes for c in per_file)
    assert names == sorted(c["name"] for f in (T / "v4_ed_eyeriss_like" / "_components").glob("*.yaml")
                           for c in load_yaml(f)["compound_components"]["classes"])
    assert "extra_mapping_constraints" not in doc            # no arch_dir/mapping.yaml


def test_a_name_the_template_needs_is_asked_for():
    with pytest.raises(CoexploreError) as e:
        load_yaml(TOP)
    assert "'architecture' is undefined" in str(e.value) and "--var" in str(e.value)
    assert e.value.file == str(TOP)
    assert "misspelt" not in str(e.value)
    template.set_data({"architectur": "arch_dir"})             # a typo of the name asked for: named
    try:
        with pytest.raises(CoexploreError) as e:
            load_yaml(TOP)
        assert "'architecture' is undefined (the names given have 'architectur': 'architecture' misspelt?)" \
            in e.value.message
    finally:
        template.set_data({})


def test_an_optional_name_changes_what_is_included(tmp_path):
    """`problem` has a default in the template (`_include/default_problem.yaml`); given, it wins."""
    other = tmp_path / "p.yaml"
    other.write_text("problem:\n  shape: {name: x, dimensions: [K], data_spaces: [{name: A, projection: [[[K]]]}]}\n"
                     "  instance: {K: 7}\n")
    template.set_data({"architecture": "arch_dir", "problem": str(other)})
    assert load_yaml(TOP)["problem"]["instance"] == {"K": 7}


def test_a_template_reproduces_timeloops_result_for_the_mapping_it_found(capsys):
    """evaluate the exercise's timeloop-mapper mapping on the rendered spec (ARCH only: the problem is
    inside it) with the reference's ERT: Timeloop's cycles and energy."""
    ref = json.loads((REF / "reference.json").read_text())["summary"]
    rc = main(["evaluate", str(TOP), str(REF / "timeloop-mapper.map.yaml"), "--var", "architecture=arch_dir",
               "--ert", str(REF / "timeloop-mapper.ERT.yaml"), "--stride-rule", "pre2025", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["cycles"] == ref["cycles"]
    assert out["energy_pJ"] == pytest.approx(ref["energy_pJ_from_per_compute"], rel=1e-4)


def test_map_on_a_template_without_problem(tmp_path, capsys):
    rc = main(["map", str(TOP), "--var", "architecture=arch_dir", "--budget", "200", "--out", str(tmp_path / "o"),
               "--ert", str(REF / "timeloop-mapper.ERT.yaml"), "--json", "--no-progress"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["samples"] == 200 and out["best"]["computes"] == json.loads(
        (REF / "reference.json").read_text())["summary"]["computes"]


def test_no_problem_anywhere_is_a_clear_error(capsys):
    rc = main(["map", str(T / "v4_ed_eyeriss_like" / "arch_dir" / "arch.yaml"), "--budget", "10"])
    err = capsys.readouterr().err
    assert rc == 2 and "no PROBLEM given and ARCH holds no problem" in err and "Traceback" not in err


@pytest.mark.parametrize("bad", ["architecture", "=x", "1a=x"])
def test_bad_var_arguments(bad, capsys):
    rc = main(["evaluate", str(TOP), "m.yaml", "--var", bad])
    assert rc == 2 and "NAME=VALUE" in capsys.readouterr().err


def test_include_text_and_merge_keys_of_the_exercises_layer_shapes():
    doc = load_yaml(T / "_layer_shapes" / "alexnet" / "0.yaml")
    base = load_yaml(T / "_layer_shapes" / "problem_base.yaml")["problem_base_ignore"]
    inst = doc["problem"]["instance"]
    assert inst["C"] == 3 and inst["M"] == 64 and inst["R"] == 11             # the layer's own values win
    assert inst["N"] == base["instance"]["N"] and inst["Hstride"] == 1        # the rest from the base
    assert doc["problem"]["shape"] == base["shape"]


def test_merge_key_rules(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text("base: &b {a: 1, l: [x], d: {p: 1, q: 2}, keep: !nomerge {z: 1}}\n"
                 "got:\n  <<<: *b\n  a: 2\n  l: [y]\n  d: {q: 3}\n  keep: !nomerge {w: 2}\n")
    got = load_yaml(f)["got"]
    assert got == {"a": 2, "l": ["y", "x"], "d": {"q": 3, "p": 1}, "keep": {"w": 2}}


def test_include_tags(tmp_path):
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "a.yaml").write_text("- !Component\n  name: buf\n")
    (tmp_path / "parts" / "b.yaml").write_text("k: 1\n")
    f = tmp_path / "top.yaml"
    f.write_text("nodes: !include parts/a.yaml\nall: !includedir parts\n")
    doc = load_yaml(f)
    assert doc["nodes"] == [{"name": "buf", "!": "Component"}]
    assert doc["all"] == [[{"name": "buf", "!": "Component"}], {"k": 1}]
    g = tmp_path / "bad.yaml"
    g.write_text("x: 1\nnodes: !include parts/none.yaml\n")
    with pytest.raises(CoexploreError) as e:
        load_yaml(g)
    assert e.value.file == str(g) and "line 2" in str(e.value) and "none.yaml" in str(e.value)


def test_template_errors_name_the_file(tmp_path):
    f = tmp_path / "t.yaml.jinja2"
    f.write_text("a: {{ include('missing.yaml', 'a') }}\n")
    with pytest.raises(CoexploreError, match="no file 'missing.yaml'"):
        load_yaml(f)
    f.write_text("a: {% if %}\n")
    with pytest.raises(CoexploreError, match="template syntax at line 1"):
        load_yaml(f)
    (tmp_path / "x.yaml").write_text("a: {b: 1}\n")
    f.write_text("a: {{ include('x.yaml', 'a.c') }}\n")
    with pytest.raises(CoexploreError, match="has no key 'a.c'"):
        load_yaml(f)


def test_extra_mapping_constraints_of_a_spec_add_to_the_nodes(tmp_path):
    """A design folder with a mapping.yaml: the template adds it as extra_mapping_constraints, and
    the mapspace keeps them (fixed factors at the global buffer) with the nodes' own."""
    d = tmp_path / "v4_ed_eyeriss_like"
    shutil.copytree(T / "v4_ed_eyeriss_like", d)
    (d / "arch_dir" / "mapping.yaml").write_text(
        "mapping:\n- target: shared_glb\n  type: temporal\n  factors: [M=2]\n")
    template.set_data({"architecture": "arch_dir"})
    from coexplore.model.inputs import load_context
    from coexplore.spec.constraints import load_constraints
    top = d / "top.yaml.jinja2"
    ctx = load_context(top, top, REF / "timeloop-mapper.ERT.yaml")
    cons = load_constraints(ctx.arch, None, ctx.problem)
    assert cons["shared_glb"].temporal_factors.get("M") == ("=", 2)
    assert cons["inter_PE_column_spatial"].split == 999        # the nodes' own are kept


# ----------------------------------------------------------------- v0.4 expressions and variables
TUT = T / "v4_tut02_dse_matmul_like"
TUT_REF = DATA / "exercises_v4" / "v4_tut02_dse_matmul_like"


def test_the_tutorials_expressions_give_timeloops_result(capsys):
    """tut02's architecture writes `datawidth: DATAWIDTH` (a variable of variables.yaml, itself
    `{{datawidth_jinja|default(8)}}`), `width: datawidth * 3` and `split: len(spec.problem.instance)`;
    its reference run left the register out (`reg_enabled=False`)."""
    ref = json.loads((TUT_REF / "reference.json").read_text())["summary"]
    rc = main(["evaluate", str(TUT / "top.yaml.jinja"), str(TUT_REF / "timeloop-mapper.map.yaml"),
               "--var", "reg_enabled=false", "--ert", str(TUT_REF / "timeloop-mapper.ERT.yaml"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["cycles"] == ref["cycles"] and out["computes"] == ref["computes"]
    assert out["energy_pJ"] == pytest.approx(ref["energy_pJ_from_per_compute"], rel=1e-5)


def test_separate_input_files_through_a_three_line_template(tmp_path, capsys):
    """The README's recipe for timeloopfe's from_yaml_files(arch, problem, variables): the same
    result as the tutorial's own template."""
    for name in ("variables.yaml", "arch.yaml", "problem.yaml"):
        shutil.copy(TUT / "inputs" / name, tmp_path / name)
    top = tmp_path / "top.yaml.jinja2"
    top.write_text("variables: {{include('variables.yaml', 'variables')}}\n"
                   "architecture: {{include('arch.yaml', 'architecture')}}\n"
                   "problem: {{include('problem.yaml', 'problem')}}\n")
    ref = json.loads((TUT_REF / "reference.json").read_text())["summary"]
    rc = main(["evaluate", str(top), str(TUT_REF / "timeloop-mapper.map.yaml"), "--var", "reg_enabled=false",
               "--ert", str(TUT_REF / "timeloop-mapper.ERT.yaml"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["cycles"] == ref["cycles"]
    assert out["energy_pJ"] == pytest.approx(ref["energy_pJ_from_per_compute"], rel=1e-5)


def test_variables_reach_every_component_and_expressions_are_computed():
    from coexplore.spec.architecture import parse_architecture
    template.set_data({"datawidth_jinja": 16})
    doc = load_yaml(TUT / "top.yaml.jinja")
    arch = parse_architecture(doc, "top.yaml.jinja")
    reg = next(lv for lv in arch.levels if lv.name == "reg")
    mac = arch.compute
    assert reg.attributes["datawidth"] == 16 and reg.attributes["width"] == 48       # datawidth * 3
    assert mac.attributes["adder_width"] == 32 and mac.attributes["technology"] == "45nm"
    pe = next(lv for lv in arch.levels if lv.name == "inter_PE_spatial")
    assert pe.constraints["spatial"]["split"] == len(doc["problem"]["instance"]) + 1   # + timeloopfe's densities


@pytest.mark.parametrize("text, scope, want", [
    ("datawidth * 3", {"datawidth": 8}, 24),
    ("max(64, depth)", {"depth": 16}, 64),
    ("max(1, ceil(log2(depth))) if depth >= 1 else 1", {"depth": 1000}, 10),
    ("widthscale * (depthscale ** (1.56 / 2))", {"widthscale": 2, "depthscale": 4}, 2 * 4 ** 0.78),
    ("LPDDR4", {}, "LPDDR4"),          # a word naming nothing: text
    ("SET ME", {}, "SET ME"),
    ("32nm", {}, "32nm"),
    ("1e-9", {}, 1e-9),
    ("prod([2, 3, 4]) + gcd(12, 18)", {}, 30),          # Accelergy's math functions
    ("isqrt(depth) + comb(5, 2) + hypot(3, 4)", {"depth": 17}, 19.0),
    ("tau / pi", {}, 2.0),
])
def test_expressions(text, scope, want):
    from coexplore.spec.expressions import resolve
    got, why = resolve(text, scope)
    assert why is None and (got == pytest.approx(want) if isinstance(want, float) else got == want)


@pytest.mark.parametrize("text, says", [
    ("width * 2", "name 'width' is not defined"),
    ("__import__('os')", "function '__import__'"),
    ("__import__('os').system('true')", "not arithmetic"),
    ("(1).__class__", "names nothing in the spec"),
    ("depth / 0", "ZeroDivisionError"),
    ("[x for x in depth]", "not arithmetic"),
    ("9**9**9", "too large"),                 # would take minutes and gigabytes
    ("pow(2, 10**6)", "too large"),
    ("'a' * 10**9", "not numbers"),
    ("factorial(10**6)", "too large"),
    ("prod([2**4000, 2**100])", "too large"),
])
def test_expressions_that_cannot_be_computed(text, says):
    from coexplore.spec.expressions import resolve
    got, why = resolve(text, {"depth": 4})
    assert got == text and says in why


def test_an_uncomputable_size_is_refused_saying_why(tmp_path):
    from coexplore.spec.architecture import load_architecture
    f = tmp_path / "a.yaml"
    f.write_text("variables: {version: 0.4, DW: 8}\narchitecture:\n  version: 0.4\n  nodes:\n"
                 "  - !Container {name: system}\n"
                 "  - !Component {name: DRAM, class: DRAM, attributes: {width: 64, datawidth: DW}}\n"
                 "  - !Component {name: buf, class: SRAM, attributes: {depth: dpth * 2, width: 64, datawidth: DW}}\n"
                 "  - !Component {name: mac, class: intmac, attributes: {datawidth: DW}}\n")
    with pytest.raises(CoexploreError) as e:
        load_architecture(f)
    assert "name 'dpth' is not defined" in str(e.value) and "depth" in str(e.value)
    f.write_text(f.read_text().replace("dpth * 2", "DW * 2"))
    arch = load_architecture(f)
    assert next(lv for lv in arch.levels if lv.name == "buf").attributes["depth"] == 16
    f.write_text(f.read_text().replace("DW: 8}", "DW: 8, B: DW * nope}"))
    with pytest.raises(CoexploreError, match="variables.B.*'nope' is not defined"):
        load_architecture(f)


def test_python_route_prices_a_node_list_without_ert_as_the_cli_does(tmp_path):
    """load_context on the rendered spec (no ERT anywhere): the built-in estimator's table, said
    in a CoexploreNote; the same table `coexplore energy tables` writes for it."""
    import warnings
    from coexplore.errors import CoexploreNote
    from coexplore.model.inputs import load_context
    from coexplore.spec.ert import load_ert
    template.set_data({"architecture": "arch_dir"})
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        ctx = load_context(TOP, TOP)
    assert any(issubclass(w.category, CoexploreNote) and "built-in estimator" in str(w.message) for w in said)
    template.set_data({})
    assert main(["energy", "tables", str(TOP), "--var", "architecture=arch_dir", "--out", str(tmp_path / "t")]) == 0
    written = load_ert(tmp_path / "t" / "ERT.yaml")
    assert written.actions and all(ctx.ert.actions[k] == v for k, v in written.actions.items())


def test_a_template_in_worker_processes(tmp_path, capsys):
    """`map --all-layers --jobs 2` maps each layer in a fresh (spawned) process: the --var names go
    with it, and each warning is said once for the network."""
    import csv
    wl = tmp_path / "tiny.yaml"
    wl.write_text("workload:\n  layers:\n"
                  "  - {name: a, instance: {C: 2, M: 2, P: 2, Q: 1, R: 1, S: 1, N: 1}}\n"
                  "  - {name: b, instance: {C: 4, M: 2, P: 3, Q: 1, R: 1, S: 1, N: 1}}\n")
    rc = main(["map", str(TOP), str(wl), "--all-layers", "--jobs", "2", "--var", "architecture=arch_dir",
               "--budget", "40", "--batch-size", "20", "--out", str(tmp_path / "o"), "--no-cache", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 0, err
    with open(tmp_path / "o" / "layers.csv", newline="") as f:
        assert [r["layer"] for r in csv.DictReader(f)] == ["a", "b"]
    assert err.count("compound components define") == 1 and err.count("no ERT given or beside it") == 1


# ----------------------------------------------------------------- review findings
def test_merge_keys_in_a_file_a_template_includes():
    """--var problem= a layer-shape file (with `<<<: *problem_base`): merged as when read directly."""
    layer = T / "_layer_shapes" / "alexnet" / "0.yaml"
    template.set_data({"architecture": "arch_dir", "problem": str(layer)})
    assert load_yaml(TOP)["problem"] == load_yaml(layer)["problem"]
    assert "<<<" not in load_yaml(TOP)["problem"] and "G" in load_yaml(TOP)["problem"]["shape"]["dimensions"]


def test_include_loops_are_refused(tmp_path):
    (tmp_path / "a.yaml").write_text("x: !include b.yaml\n")
    (tmp_path / "b.yaml").write_text("y: !include a.yaml\n")
    with pytest.raises(CoexploreError, match="includes itself"):
        load_yaml(tmp_path / "a.yaml")
    (tmp_path / "t.yaml.jinja2").write_text("x: {{ include('t.yaml.jinja2', 'x') }}\n")
    with pytest.raises(CoexploreError, match="includes itself"):
        load_yaml(tmp_path / "t.yaml.jinja2")


def test_jinjas_own_include_is_recorded_and_its_loops_refused(tmp_path):
    d = _files(tmp_path, {"top.yaml.jinja2": "{% include 'part.yaml' %}\n", "part.yaml": "k: 1\n",
                          "self.yaml.j2": "{% include 'self.yaml.j2' %}\n",
                          "miss.yaml.j2": "{% include 'nope.yaml' %}\n",
                          "ring.yaml.j2": "{% include 'a.j2' %}\n", "a.j2": "{% include 'b.j2' %}\n",
                          "b.j2": "x: 1\n{% include 'a.j2' %}\n"})
    template.set_data({})
    assert load_yaml(d / "top.yaml.jinja2") == {"k": 1}
    assert str((d / "part.yaml").resolve()) in template.files_read()
    with pytest.raises(CoexploreError, match="loop"):
        load_yaml(d / "self.yaml.j2")
    with pytest.raises(CoexploreError, match="loop .*: a.j2 -> b.j2 -> a.j2"):     # the files of the loop
        load_yaml(d / "ring.yaml.j2")
    with pytest.raises(CoexploreError, match="no file 'nope.yaml'"):
        load_yaml(d / "miss.yaml.j2")


def test_templates_are_sandboxed(tmp_path):
    f = tmp_path / "pw.yaml"
    f.write_text("a: \"{{ cycler.__init__.__globals__.os.popen('echo PWNED').read() }}\"\n")
    with pytest.raises(CoexploreError, match="not allowed"):
        load_yaml(f)


def test_nomerge_lists_and_dates(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text("b: &b {l: [1, 2]}\nc: {<<<: *b, l: !nomerge [9]}\nd: 2024-01-01\n")
    doc = load_yaml(f)
    assert doc["c"] == {"l": [9]} and type(doc["c"]["l"]) is list
    assert doc["d"] == "2024-01-01"            # text, as in YAML 1.2 and Timeloop's reader


@pytest.mark.parametrize("text, scope, want", [("0 or 64", {}, 64), ("d and 10 / d", {"d": 0}, 0),
                                               ("d and 10 / d", {"d": 2}, 5.0), ("x > 1 and x", {"x": 3}, 3)])
def test_and_or_are_pythons(text, scope, want):
    from coexplore.spec.expressions import resolve
    assert resolve(text, scope) == (want, None)


def _tut_arch(tmp_path, edit):
    """tut02's architecture as its own file (variables pasted in), edited."""
    template.set_data({})
    text = (TUT / "inputs" / "arch.yaml").read_text()
    text = text.replace("    {% if reg_enabled|default(True) %}\n", "").replace("    {% endif %}\n", "")
    text = "variables: {version: 0.4, technology: 45nm, global_cycle_seconds: 1e-9, DATAWIDTH: 8}\n" + text
    f = tmp_path / "arch.yaml"
    f.write_text(edit(text))
    return f


def test_a_split_over_the_problem_needs_the_problem(tmp_path):
    from coexplore.spec.architecture import load_architecture
    with pytest.raises(CoexploreError, match="holds no problem"):
        load_architecture(_tut_arch(tmp_path, lambda t: t))


def test_a_split_naming_nothing_is_refused(tmp_path):
    from coexplore.spec.architecture import load_architecture
    with pytest.raises(CoexploreError, match="name 'nsplit' is not defined"):
        load_architecture(_tut_arch(tmp_path, lambda t: t.replace("len(spec.problem.instance)", "nsplit")))


def test_a_containers_split_sees_the_variables_not_the_spatial_levels_own(tmp_path):
    """(the spatial level coexplore makes of a container has datawidth 1: not a name for its split)"""
    from coexplore.spec.architecture import load_architecture
    arch = load_architecture(_tut_arch(tmp_path, lambda t: t.replace("len(spec.problem.instance)", "DATAWIDTH - 1")))
    pe = next(lv for lv in arch.levels if lv.name == "inter_PE_spatial")
    assert pe.constraints["spatial"]["split"] == 7
    with pytest.raises(CoexploreError, match="name 'datawidth' is not defined"):
        load_architecture(_tut_arch(tmp_path, lambda t: t.replace("len(spec.problem.instance)", "datawidth")))


def test_an_undefined_name_in_a_size_says_so(tmp_path):
    from coexplore.spec.architecture import load_architecture
    f = _tut_arch(tmp_path, lambda t: t.replace("depth: 512", "depth: DEPTH").replace("len(spec.problem.instance)", "3"))
    with pytest.raises(CoexploreError, match="name 'DEPTH' is not defined"):
        load_architecture(f)


def test_the_run_record_names_the_vars_and_the_files_the_template_read(tmp_path, capsys):
    rc = main(["map", str(TOP), "--var", "architecture=arch_dir", "--budget", "20", "--batch-size", "10",
               "--out", str(tmp_path / "o"), "--ert", str(REF / "timeloop-mapper.ERT.yaml"), "--no-cache", "--no-progress"])
    assert rc == 0
    rec = json.loads((tmp_path / "o" / "result.json").read_text())["run"]
    assert rec["var"] == ["architecture=arch_dir"]
    read = {Path(f).name for f in rec["inputs_sha256"]}
    assert {"top.yaml.jinja2", "arch.yaml", "default_problem.yaml", "mapper.yaml", "intmac.yaml"} <= read


# ----------------------------------------------------------------- mutation-test gaps
def _files(tmp_path, files: dict):
    for name, text in files.items():
        f = tmp_path / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return tmp_path


def test_include_functions(tmp_path):
    d = _files(tmp_path, {
        "parts/a.yaml": "a: {k: 1}\n", "parts/b.yaml": "a: {k: 2}\n", "one/c.yaml": "c: [3]\n",
        "parts/t.yaml.jinja2": "t: {{ n }}\n", "sub/x.yaml": "x: from-sub\n", "x.yaml": "x: from-here\n",
        "nested/inner.yaml.jinja2": "got: {{ include('deep.yaml', 'v') }}\n", "more/deep.yaml": "v: 5\n",
        "top.yaml.jinja2": (
            "{{ add_to_path(cwd() ~ '/more') }}{{ add_to_path(cwd() ~ '/sub') }}\n"
            "whole: {{ include('one/c.yaml') }}\n"                 # no key: the whole file
            "single: {{ include_all('one/*.yaml', 'c') }}\n"       # one match: its subtree, not a list of one
            "several: {{ include_all('parts/?.yaml', 'a.k') }}\n"
            "found: {{ find_path('x.yaml') }}\n"                   # the template's folder before added ones
            "nested: {{ include('nested/inner.yaml.jinja2', 'got') }}\n"   # added folders reach nested includes
            "text:\n{{ include_text('parts/t.yaml.jinja2') }}\n")})
    template.set_data({"n": 7})
    doc = load_yaml(d / "top.yaml.jinja2")
    assert doc["whole"] == {"c": [3]} and doc["single"] == [3] and doc["several"] == [1, 2]
    assert doc["found"] == str((d / "x.yaml").resolve())
    assert doc["nested"] == 5 and doc["text"] is None and doc["t"] == 7           # include_text renders
    _files(tmp_path, {"two.yaml.jinja2": "x: {{ include('parts/?.yaml', 'a') }}\n",
                      "both.yaml.jinja2": "{{ add_to_path(cwd() ~ '/sub') }}x: {{ include('x.yaml', 'x') }}\n",
                      "texts.yaml.jinja2": "{{ include_text('*/[cd]*.yaml') }}\n"})
    with pytest.raises(CoexploreError, match="matches 2 files; include takes one"):
        load_yaml(d / "two.yaml.jinja2")
    with pytest.raises(CoexploreError, match="matches 2 files"):      # here and in an added folder: as timeloopfe
        load_yaml(d / "both.yaml.jinja2")
    assert load_yaml(d / "texts.yaml.jinja2") == {"c": [3], "v": 5}   # several files, one per line


def test_add_to_path_of_the_templates_own_folder_reaches_the_files_it_includes(tmp_path):
    """User study: the exercises' top.yaml.jinja2 calls add_to_path(cwd()); Accelergy's loader then
    finds `_include/...` from a file in arch_dir/ too. coexplore left the top's folder out: an include
    was refused, and `path_exists` chose another depth without a word."""
    d = _files(tmp_path, {
        "_include/attrs.yaml": "spad: {depth: 64}\n",
        "arch_dir/arch.yaml.jinja2": ("a: {{ include('_include/attrs.yaml', 'spad') }}\n"
                                      "b: {{ 16384 if path_exists('_include/attrs.yaml') else 1024 }}\n"),
        "top.yaml.jinja2": "{{ add_to_path(cwd()) }}\nx: {{ include('arch_dir/arch.yaml.jinja2') }}\n"})
    template.set_data({})
    assert load_yaml(d / "top.yaml.jinja2") == {"x": {"a": {"depth": 64}, "b": 16384}}


def test_include_text_files_are_in_the_run_digest():
    template.set_data({})
    load_yaml(T / "_layer_shapes" / "alexnet" / "0.yaml")
    assert any(f.endswith("problem_base.yaml") for f in template.files_read())


def test_merge_key_lists_and_includedir_reads_yaml_only(tmp_path):
    d = _files(tmp_path, {"m.yaml": "a: &a {x: 1, l: [1]}\nb: &b {y: 2, l: [2]}\nc: {<<<: [*a, *b], l: [0]}\n",
                          "dir/p.yaml": "k: 1\n", "dir/notes.txt": "not yaml: [\n",
                          "i.yaml": "all: !includedir dir\n"})
    assert load_yaml(d / "m.yaml")["c"] == {"l": [0, 1, 2], "x": 1, "y": 2}
    assert load_yaml(d / "i.yaml") == {"all": [{"k": 1}]}
    assert load_yaml(_files(tmp_path, {"n.yaml": "a: !nomerge {x: 1}\n"}) / "n.yaml") == {"a": {"x": 1}}


def test_comments_quoting_jinja_do_not_make_a_template(tmp_path):
    f = _files(tmp_path, {"p.yaml": "# written by gen.py from {{ arch }}\nproblem: {instance: {K: 4}}\n"}) / "p.yaml"
    assert load_yaml(f) == {"problem": {"instance": {"K": 4}}}


@pytest.mark.parametrize("text, scope, want", [("1 < 3 < 2", {}, False), ("1 < 2 < 3", {}, True),
                                               ("e * 2", {"e": 4}, 8), ("pi", {}, 3.141592653589793)])
def test_chained_comparisons_and_names_over_constants(text, scope, want):
    from coexplore.spec.expressions import resolve
    assert resolve(text, scope) == (want, None)


@pytest.mark.parametrize("text", ["(9**4000)**4000", "2**60000", "(2**3000)*(2**3000)", "-" * 990 + "1"])
def test_expressions_stay_small(text):
    from coexplore.spec.expressions import resolve
    got, why = resolve(text, {})
    assert got == text or got == 1 or got == -1        # refused, or (the minus signs) computed


def test_templates_cannot_make_huge_values(tmp_path):
    for i, body in enumerate(["{{ 9**(9**9) > 1 }}", "{{ ('a' * 10**9)|length }}"]):
        f = _files(tmp_path, {f"h{i}.yaml": f"a: {body}\n"}) / f"h{i}.yaml"
        with pytest.raises(CoexploreError, match="too large|more than 10\\^6"):
            load_yaml(f)


def _v4(tmp_path, variables: str, nodes: str):
    return _files(tmp_path, {"a.yaml": f"{variables}architecture:\n  version: 0.4\n  nodes:\n{nodes}"}) / "a.yaml"


NODES = ("  - !Container {name: system, attributes: {dw: 8}}\n"
         "  - !Component {name: DRAM, class: DRAM, attributes: {width: 64, datawidth: dw}}\n"
         "  - !Container {name: PE, spatial: {meshX: N_PE}, attributes: {dw: dw * 2}}\n"
         "  - !Component {name: buf, class: SRAM, attributes: {depth: DEPTH, width: 64, dw: 4, datawidth: dw}}\n"
         "  - !Component {name: mac, class: intmac, attributes: {datawidth: dw}}\n")


def test_names_in_a_node_list(tmp_path):
    """Variables (top level or the architecture's), container attributes computed and inherited,
    a node's own earlier attributes before inherited ones, meshes as expressions."""
    from coexplore.spec.architecture import load_architecture
    arch = load_architecture(_v4(tmp_path, "variables: {version: 0.4, N_PE: 2 * 2}\n",
                                 NODES.replace("depth: DEPTH", "depth: N_PE * 16")))
    levels = {lv.name: lv for lv in arch.levels}
    assert levels["DRAM"].attributes["datawidth"] == 8
    assert levels["buf"].attributes["datawidth"] == 4 and levels["buf"].attributes["depth"] == 64
    assert arch.compute.attributes["datawidth"] == 16 and arch.compute.instances == 4
    inner = _v4(tmp_path, "", NODES.replace("depth: DEPTH", "depth: 64").replace(
        "architecture:\n", "") ).read_text().replace("architecture:\n  version: 0.4\n",
                                                    "architecture:\n  version: 0.4\n  variables: {N_PE: 3}\n")
    (tmp_path / "b.yaml").write_text(inner)
    assert load_architecture(tmp_path / "b.yaml").compute.instances == 3
    with pytest.raises(CoexploreError, match="hides timeloopfe's spec"):
        load_architecture(_v4(tmp_path, "variables: {spec: 1, N_PE: 1}\n", NODES.replace("depth: DEPTH", "depth: 4")))


def test_cli_details(tmp_path, capsys):
    # --var names: a Python identifier
    assert main(["evaluate", str(TOP), "m.yaml", "--var", "1a=x"]) == 2
    assert "--var" in (err := capsys.readouterr().err) and "'1a=x'" in err
    # a problem (or spec) given where the mapping goes
    assert main(["evaluate", str(TOP), str(T / "v4_ed_eyeriss_like" / "_include" / "default_problem.yaml"),
                 "--var", "architecture=arch_dir"]) == 2
    assert "MAPPING is a problem file, not a mapping" in capsys.readouterr().err
    # the built-in estimator's note is a note; the compound classes are named
    assert main(["map", str(TOP), "--var", "architecture=arch_dir", "--budget", "10", "--batch-size", "10",
                 "--out", str(tmp_path / "o"), "--no-cache", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "coexplore: note:" in err and "no ERT given" in err.split("coexplore: note:")[1].splitlines()[0]
    assert "compound components define intmac, regfile" in err
    # the names are not left behind for a library caller
    assert template.data() == {}


def test_a_template_is_named_after_its_design_folder(capsys):
    assert main(["evaluate", str(TOP), str(REF / "timeloop-mapper.map.yaml"), "--var", "architecture=arch_dir",
                 "--ert", str(REF / "timeloop-mapper.ERT.yaml"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["arch"] == "v4_ed_eyeriss_like" and out["layer"] == "v4_ed_eyeriss_like"


def test_a_layer_picked_with_var_problem_is_named_after_its_file(capsys):
    layer = T / "_layer_shapes" / "alexnet" / "0.yaml"
    assert main(["evaluate", str(TOP), str(REF / "timeloop-mapper.map.yaml"), "--var", "architecture=arch_dir",
                 "--var", f"problem={layer}", "--ert", str(REF / "timeloop-mapper.ERT.yaml"), "--json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["layer"] == "alexnet_0"


# ----------------------------------------------------------------- a user's study
def test_the_yaml_cheatsheet_reads_as_it_says():
    """Every `X` of the exercises' YAML cheatsheet reads as its `result_of_X` (its anchors defined
    twice are read, as Accelergy reads them; of `<<: [*a, *b]` the first anchor wins). The one
    exception is the cheatsheet's own slip: `merged_dict2` overrides `value2`, not `key2`."""
    doc = load_yaml(T / "_cheatsheets" / "1_yaml_syntax.yaml")
    pairs = [k[len("result_of_"):] for k in doc if k.startswith("result_of_")]
    assert len(pairs) == 6
    for k in pairs:
        if k == "merged_dict2":
            assert doc[k] == {**doc["result_of_merged_dict2"], "key2": "value2_dict1", "value2": "override_value2"}
        else:
            assert doc[k] == doc["result_of_" + k], k


def test_merge_key_first_mapping_wins(tmp_path):
    f = _files(tmp_path, {"m.yaml": "a: &a {key1: v1a, key2: v2a}\nb: &b {key2: v2b, key3: v3b}\n"
                                    "m:\n  <<: [*a, *b]\n  own: 1\n  key3: mine\n"}) / "m.yaml"
    assert load_yaml(f)["m"] == {"key1": "v1a", "key2": "v2a", "key3": "mine", "own": 1}


def test_an_expression_python_cannot_read_is_named_as_such(tmp_path):
    from coexplore.spec.architecture import load_architecture
    f = _v4(tmp_path, "variables: {version: 0.4, N_PE: 4}\n", NODES.replace("depth: DEPTH", "depth: N_PE * 16 //"))
    with pytest.raises(CoexploreError, match="neither a number nor an expression Python can read"):
        load_architecture(f)


def test_timeloopfes_input_size_keys_are_not_warned_about():
    from coexplore.model.inputs import problem_warnings
    from coexplore.spec.problem import parse_problem
    template.set_data({})
    doc = load_yaml(T / "_layer_shapes" / "alexnet" / "0.yaml")
    said = problem_warnings(parse_problem(doc, "0.yaml"), "0.yaml")
    assert len(said) == 1 and "HStride, WStride" in said[0] and " H," not in said[0]   # the real typos only


def test_a_mapping_outside_the_constraints_names_the_level(tmp_path):
    """Timeloop's mapping with a factor 2 of P moved to the PE columns, where the nodes allow P=1."""
    from coexplore.mapspace import MapSpace
    from coexplore.model.inputs import load_context
    from coexplore.spec.constraints import load_constraints
    template.set_data({"architecture": "arch_dir"})
    ctx = load_context(TOP, TOP, REF / "timeloop-mapper.ERT.yaml")
    space = MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch, None, ctx.problem))
    text = (REF / "timeloop-mapper.map.yaml").read_text()
    space.encode(ctx.load_mapping(REF / "timeloop-mapper.map.yaml"))      # Timeloop's own is in the space
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("factors: C1 M1 R1 S1 N1 P1 Q14", "factors: C1 M1 R1 S1 N1 P2 Q7")
                       .replace("factors: C1 M1 R1 S1 N1 P14 Q4", "factors: C1 M1 R1 S1 N1 P7 Q8"))
    with pytest.raises(CoexploreError) as err:
        space.encode(ctx.load_mapping(bad))
    assert "the mapping puts P=2 at inter_PE_column_spatial (spatial Y)" in str(err.value)   # (split 1: Q on X)
    bad.write_text(text.replace("factors: C1 M1 R1 S1 N1 P1 Q14", "factors: C1 M1 R1 S1 N1 P14 Q1")
                       .replace("factors: C1 M1 R1 S1 N1 P14 Q4", "factors: C1 M1 R1 S1 N1 P1 Q56"))
    with pytest.raises(CoexploreError) as err:
        space.encode(ctx.load_mapping(bad))
    assert "the mapping puts P=14 at inter_PE_column_spatial (spatial Y)" in str(err.value)   # the factor given


def test_a_var_no_template_asks_for_is_warned_about(capsys):
    args = ["evaluate", str(TOP), str(REF / "timeloop-mapper.map.yaml"), "--var", "architecture=arch_dir",
            "--ert", str(REF / "timeloop-mapper.ERT.yaml"), "--json"]
    assert main(args + ["--var", f"problem={T / 'v4_ed_eyeriss_like' / '_include' / 'default_problem.yaml'}"]) == 0
    assert "--var" not in capsys.readouterr().err                  # both asked for (problem has a default)
    assert main(args + ["--var", "desgin=x"]) == 0
    assert "--var desgin: no template among the inputs asks for it" in capsys.readouterr().err


@pytest.mark.parametrize("arch, idles", [("simple_weight_stationary", True), ("simple_output_stationary", True),
                                         ("eyeriss_like", False), ("simba_like", False)])
def test_a_fan_out_no_loop_may_use_is_noted(arch, idles):
    """The corpus' simple designs (their constraints as timeloopfe flattened them) let only N spread
    on the PE array's X axis: every batch-1 layer idles 15/16 of it, as in Timeloop (the exercise's
    reference utilization is 0.047 and 0.0625); said once as a note. The other designs use theirs."""
    import warnings
    from coexplore.errors import CoexploreNote
    from coexplore.mapspace import MapSpace
    from coexplore.model.inputs import load_context
    from coexplore.spec.constraints import load_constraints
    from conftest import CORPUS
    ctx = load_context(CORPUS / "arches" / arch / "processed.yaml", CORPUS / "layers" / "resnet50_res3a_2b.yaml")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        MapSpace(ctx.arch, ctx.problem, load_constraints(ctx.arch, None, ctx.problem))
    notes = [str(w.message) for w in said if issubclass(w.category, CoexploreNote)]
    assert bool(notes) == idles
    if idles:
        assert notes == ["inter_PE_spatial: its X fan-out of 16 idles for layer resnet50_res3a_2b: under the "
                         "constraints only N "
                         "may spread there, and this layer leaves it no factor (check the level's spatial "
                         "permutation, split and factors)"]


def test_an_error_in_an_included_file_names_that_file(tmp_path):
    d = tmp_path / "v4_ed_eyeriss_like"
    shutil.copytree(T / "v4_ed_eyeriss_like", d)
    arch = d / "arch_dir" / "arch.yaml"
    arch.write_text(arch.read_text().replace("depth: 16384", "depth: 16384x"))
    template.set_data({"architecture": "arch_dir"})
    from coexplore.spec.architecture import load_architecture
    with pytest.raises(CoexploreError) as e:
        load_architecture(d / "top.yaml.jinja2")
    assert e.value.key == "shared_glb.attributes.depth"
    assert f"its architecture comes from {arch.resolve()}, which the template includes" in str(e.value)
    prob = d / "_include" / "default_problem.yaml"
    prob.write_text(prob.read_text().replace("M: 32", "M: -32"))
    from coexplore.spec.problem import load_problem
    with pytest.raises(CoexploreError, match="its problem comes from .*default_problem.yaml"):
        load_problem(d / "top.yaml.jinja2")


def test_quoted_strings_are_text_as_accelergy_keeps_them(tmp_path):
    """Accelergy's `is_quoted_string`: a quoted value is never an expression (a quoted word naming
    a variable stays the word); a quoted number is still that number for Timeloop's reader."""
    from coexplore.spec.architecture import load_architecture
    body = ("variables: {{GLB: 4096, LPDDR4: 7}}\narchitecture:\n  version: 0.4\n  nodes:\n"
            "  - !Container {{name: system, attributes: {{datawidth: 8}}}}\n"
            "  - !Component {{name: DRAM, class: DRAM, attributes: {{type: {t}, width: '64', datawidth: 8}}}}\n"
            "  - !Component {{name: buf, class: SRAM, attributes: {{depth: {d}, width: 64, datawidth: 8}}}}\n"
            "  - !Component {{name: mac, class: intmac}}\n")
    f = tmp_path / "a.yaml"
    f.write_text(body.format(t='"LPDDR4"', d="GLB // 2"))
    arch = load_architecture(f)
    assert arch.levels[0].attributes["type"] == "LPDDR4" and arch.levels[0].attributes["width"] == 64
    assert arch.levels[1].attributes["depth"] == 2048
    f.write_text(body.format(t="LPDDR4", d="'GLB // 2'"))
    with pytest.raises(CoexploreError, match="quoted: text"):
        load_architecture(f)


@pytest.mark.parametrize("reg", [True, False])
def test_maximize_dims_gives_timeloopfes_factors(reg):
    """tutorial 02's `maximize_dims: [[M, C]]` on the 8-wide PE mesh: the factors, permutation and
    split timeloopfe wrote for Timeloop (its parsed-processed-input)."""
    from coexplore.model.inputs import load_context
    from coexplore.spec.constraints import _factors, constraint_targets, load_constraints
    top = T / "v4_tut02_dse_matmul_like" / "top.yaml.jinja"
    ref = load_yaml(T / "v4_tut02_dse_matmul_like" / "ref" / "inter_PE_spatial.yaml")
    [want] = constraint_targets(ref)
    template.set_data({"reg_enabled": reg})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = load_context(top, top)
    c = load_constraints(ctx.arch, None, ctx.problem)["inter_PE_spatial"]
    assert c.spatial_factors == {d: ("=", n) for d, n in _factors(want["factors"], file=None, key="")["="].items()}
    assert "".join(c.spatial_permutation) == want["permutation"] and c.split == want["split"]
    assert not any("maximize" in i for i in c.ignored)


@pytest.mark.parametrize("sizes, capacity", [((8, 4), 8), ((2, 16, 4), 32), ((64,), 16), ((4, 4), 64), ((1, 8), 4)])
def test_maximize_dims_fills_the_capacity_with_whole_factors(sizes, capacity):
    """With powers of two the greedy allocation fills min(capacity, sizes) exactly, each factor
    dividing its dimension."""
    from coexplore.spec.constraints import _greedy_allocation
    dims = tuple((f"D{i}", n) for i, n in enumerate(sizes))
    alloc, util = _greedy_allocation(dims, capacity, {})
    got = {d: 1 for d, _ in dims}
    for d, _, high in alloc:
        got[d] *= high
    assert math.prod(got.values()) == util == min(capacity, math.prod(sizes))
    assert all(n % got[d] == 0 for d, n in dims)


def test_notes_naming_a_layer_are_said_for_the_first_and_counted_for_the_others():
    from coexplore.cli.main import NoteGroups
    g = NoteGroups()
    line = "coexplore: note: X: its X fan-out of 16 idles for layer {}: under the constraints only N may spread"
    said = [g.admit(line.format(n)) for n in ("conv1", "res2a", "conv1", "res2b", "res2a")]
    assert said == [True, False, False, False, False]
    assert g.admit("coexplore: note: something else") and g.admit("coexplore: warning: for layer a: b")
    assert g.summary() == ['coexplore: note: the note "X: its X fan-out of 16 idles" on layer conv1 above holds '
                           'for 2 more layers too: res2a, res2b']


def test_variables_only_accelergy_computes_stay_text_unless_a_size_uses_them(tmp_path):
    """raella's variables (list arithmetic, comprehensions) feed plug-in attributes only: kept as text with
    a warning; a size that uses one is refused saying why."""
    from coexplore.errors import CoexploreWarning
    from coexplore.spec.architecture import load_architecture
    f = tmp_path / "a.yaml"
    body = ("variables:\n  BITS: 8\n  LIST: ([0.2] * BITS)\n  PICK: max([x for x in [BITS]])\n"
            "architecture:\n  version: 0.4\n  nodes:\n"
            "  - !Container {{name: system, attributes: {{datawidth: 8}}}}\n"
            "  - !Component {{name: DRAM, class: DRAM, attributes: {{width: 64, datawidth: 8}}}}\n"
            "  - !Component {{name: buf, class: SRAM, attributes: {{depth: {d}, width: 64, datawidth: 8}}}}\n"
            "  - !Component {{name: mac, class: intmac}}\n")
    f.write_text(body.format(d="1024"))                       # unquoted: expressions, as raella writes them
    with pytest.warns(CoexploreWarning, match="variables.LIST.*kept as text"):
        arch = load_architecture(f)
    assert arch.levels[1].attributes["depth"] == 1024
    f.write_text(body.format(d="LIST"))
    with pytest.raises(CoexploreError, match="depth.*not numbers"):
        load_architecture(f)


def test_a_whole_specs_problem_bounds_may_use_its_variables(tmp_path):
    """raella's problem writes `N: BATCH_SIZE`: timeloopfe computes the variables first."""
    from coexplore.spec.problem import load_problem
    f = tmp_path / "spec.yaml"
    f.write_text("variables: {BATCH: 4, BITS: 8, HALF: BITS // 2}\nproblem:\n  version: 0.4\n  shape:\n"
                 "    name: GEMM\n    dimensions: [M, N, K]\n    data_spaces:\n"
                 "    - {name: A, projection: [[[M]], [[K]]]}\n    - {name: B, projection: [[[N]], [[K]]]}\n"
                 "    - {name: Z, projection: [[[M]], [[N]]], read_write: true}\n"
                 "  instance: {M: BATCH, N: HALF, K: 16}\n")
    assert load_problem(f).bounds == [4, 4, 16]
    f.write_text(f.read_text().replace("N: HALF", "N: NOPE"))
    with pytest.raises(CoexploreError, match="problem.instance.N"):
        load_problem(f)


def test_errors_in_an_included_jinja_file_name_that_file_and_line(tmp_path):
    """User study: a syntax error or an undefined name in a {% include %}d file was said at the top
    file's name (and the line of the included one); an undefined name gave no line at all."""
    d = _files(tmp_path, {"extra.j2": "a: 1\nb: 2\nc: {{ scale | default(2) }\n",
                          "top.yaml.jinja2": "# top\n{% include 'extra.j2' %}\n",
                          "undef.j2": "a: 1\nb: {{ scalez }}\n",
                          "top2.yaml.jinja2": "x: 0\n{% include 'undef.j2' %}\n",
                          "top3.yaml.jinja2": "x: 0\ny: 1\nz: {{ mesh_xx }}\n"})
    template.set_data({})
    with pytest.raises(CoexploreError, match="template syntax at line 3") as e:
        load_yaml(d / "top.yaml.jinja2")
    assert e.value.file == str(d / "extra.j2")
    with pytest.raises(CoexploreError, match="template line 2: 'scalez' is undefined") as e:
        load_yaml(d / "top2.yaml.jinja2")
    assert e.value.file == str(d / "undef.j2")
    with pytest.raises(CoexploreError, match="template line 3: 'mesh_xx' is undefined") as e:
        load_yaml(d / "top3.yaml.jinja2")
    assert e.value.file == str(d / "top3.yaml.jinja2")


def test_an_error_in_the_specs_variables_is_not_said_to_come_from_the_included_architecture(tmp_path):
    """User study: a bad `variables:` entry was reported with '(its architecture comes from arch.yaml,
    which the template includes)'."""
    import os

    from coexplore.spec.template import _ORIGINS, with_origin
    top = tmp_path / "top.yaml.jinja2"
    _ORIGINS[(os.path.realpath(top), "architecture")] = str(tmp_path / "arch.yaml")
    err = with_origin(CoexploreError("bad", file=str(top), key="variables.DATAWIDTH"), top, "architecture")
    assert "architecture comes from" not in err.message
    err = with_origin(CoexploreError("bad", file=str(top), key="glb.attributes.width"), top, "architecture")
    assert "its architecture comes from" in err.message and "arch.yaml" in err.message
