"""Edges of Timeloop-input handling and of the result files (added after a mutation review):
Timeloop's built-in energy estimate, messages that name what a Timeloop user wrote, extra
constraints that contradict a v0.4 node, held stops, the schedule's units and summary."""

import os
import signal
import time

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.spec.architecture import Level

from conftest import CORPUS


# ----------------------------------------------------------------- Timeloop's pat estimate
def _sram(height, width):          # pat::SRAMEnergy, from Timeloop's src/pat/pat.cpp
    kb = width * height / (8 * 1024)
    return ((6.0 - 1.0) / (100.0 - 0.5) * (kb - 0.5) + 1.0) * width / 16


@pytest.mark.parametrize("kw, want", [
    (dict(cls="regfile", size=64, word_bits=8, block_size=1, cluster_size=1), _sram(64, 8)),
    (dict(cls="regfile", size=64, word_bits=8, block_size=2, cluster_size=2), _sram(32, 32) / 2),
    (dict(cls="SRAM", size=0, word_bits=8), 0.0),
    (dict(cls="DRAM", word_bits=8, block_size=8), 200.0 * 64 / 16),
    (dict(cls="SRAM", size=64, word_bits=16, attributes={"technology": "DRAM"}), 200.0),
    (dict(cls="SRAM", size=64, attributes={"vector-access-energy": 3.5}), 3.5),
    (dict(cls="SRAM", size=64, attributes={"vector_access_energy": 2.25}), 2.25),
    (dict(cls="SRAM"), None),                      # no size: Timeloop cannot estimate it either
])
def test_timeloops_own_access_energy(kw, want):
    from coexplore.energy.timeloop_pat import vector_access_energy
    attrs = kw.pop("attributes", {})
    lv = Level(name="b", attributes=attrs, **kw)
    got = vector_access_energy(lv)
    assert got == want if want is None else got == pytest.approx(want, rel=1e-12)


# ----------------------------------------------------------------- messages naming what was written
def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_a_missing_included_file_is_named_with_file_and_line(tmp_path):
    from coexplore.spec.yamlio import load_yaml
    f = _write(tmp_path, "a.yaml", "architecture:\n  nodes: !Include rf_node.yaml\n")
    with pytest.raises(CoexploreError) as e:
        load_yaml(f)
    assert e.value.file == str(f) and "line 2" in str(e.value) and "rf_node.yaml" in str(e.value)


def test_jinja_templates_need_their_names(tmp_path):
    from coexplore.spec import template
    from coexplore.spec.yamlio import load_yaml
    f = _write(tmp_path, "t.yaml", "architecture:\n  depth: {{ depth }}\n")
    with pytest.raises(CoexploreError, match="'depth' is undefined.*--var"):
        load_yaml(f)
    template.set_data({"depth": 64})
    try:
        assert load_yaml(f) == {"architecture": {"depth": 64}}
    finally:
        template.set_data({})
    g = _write(tmp_path, "bad.yaml", "architecture:\n  depth: [1, 2\n")       # malformed, not a template
    with pytest.raises(CoexploreError) as e:
        load_yaml(g)
    assert "as the template renders it" not in str(e.value) and "malformed YAML at line 3" in str(e.value)


@pytest.mark.parametrize("value, hinted", [("2*1024", True), ("DEPTH", True), ("12x", True), ("", False)])
def test_expressions_outside_v4_nodes_are_said_not_to_be_evaluated(value, hinted):
    """(in a v0.4 node's attributes they are: tests/test_templates.py)"""
    from coexplore.spec.architecture import _positive
    with pytest.raises(CoexploreError) as e:
        _positive(value, file="a.yaml", key="buf.attributes.depth")
    assert ("evaluated in a v0.4 node's attributes, mesh and split only" in str(e.value)) == hinted


@pytest.mark.parametrize("factors, residual", [("K=3,2 C=1", True), ("C4 @", False)])
def test_residual_factors_are_named(factors, residual):
    from coexplore.spec.mapping import _parse_factors
    with pytest.raises(CoexploreError) as e:
        _parse_factors(factors, file="m.yaml", key="mapping[0].factors", dims=["C", "K"])
    assert ("residual factor" in str(e.value)) == residual


def test_sparse_optimizations_of_a_nested_node_are_refused():
    from coexplore.errors import CoexploreError
    from coexplore.spec.architecture import _refuse_sparse_nodes
    nodes = [{"name": "top", "nodes": [{"name": "PE", "nodes": [{"name": "buf", "sparse_optimizations": {"x": 1}}]}]},
             {"name": "dram", "sparse_optimizations": {}}]
    with pytest.raises(CoexploreError) as err:
        _refuse_sparse_nodes(nodes, "architecture.nodes", "a.yaml")
    assert err.value.key == "architecture.nodes[0].nodes[0].nodes[0].sparse_optimizations"
    _refuse_sparse_nodes(nodes[1:], "architecture.nodes", "a.yaml")      # an empty section asks for nothing


def test_differences_name_settings_and_files():
    from coexplore.cli.paths import differences
    a = {"seed": 0, "budget": 10, "content_key": "k1", "inputs_sha256": {"/x/arch.yaml": "1"}}
    b = {"seed": 5, "budget": 10, "content_key": "k2", "inputs_sha256": {"/x/arch.yaml": "2", "/x/c.yaml": "3"}}
    text = differences(a, b)
    assert "settings seed" in text and "arch.yaml" in text and "c.yaml" in text and "content_key" not in text
    assert "beside the architecture" in differences({"content_key": "k1"}, {"content_key": "k2"})
    assert differences(a, dict(a)) == ""


# ----------------------------------------------------------------- extra constraints against v0.4 nodes
@pytest.mark.parametrize("directive, what", [
    ("{target: weights_spad, type: temporal, factors: M=2}", "factor for dimension M"),
    ("{target: PE, type: spatial, split: 3}", "spatial split"),
    ("{target: weights_spad, type: temporal, permutation: [C, R, N, M, P, Q, S]}", "temporal permutation"),
])
def test_extra_constraints_that_contradict_a_node_are_refused(tmp_path, directive, what):
    from coexplore.spec.architecture import load_architecture
    from coexplore.spec.constraints import load_constraints
    arch = load_architecture(CORPUS / "arches" / "eyeriss_like" / "arch.yaml")
    extra = _write(tmp_path, "extra.yaml", f"targets:\n- {directive}\n")
    with pytest.raises(CoexploreError, match=what):
        load_constraints(arch, extra)


def test_a_nodes_min_utilization_applies_and_an_extra_one_must_agree(tmp_path):
    """`utilization: {min: 0.5}` in a v0.4 node's constraints bounds the mapspace (it was accepted
    and not applied before); an extra file may repeat it, not change it."""
    from coexplore.mapspace.space import MapSpace
    from coexplore.spec.architecture import load_architecture
    from coexplore.spec.constraints import load_constraints
    from coexplore.spec.problem import load_problem
    text = (CORPUS / "arches" / "eyeriss_like" / "arch.yaml").read_text()
    old = "        dataspace: {keep: [Outputs]}\n"
    assert old in text
    arch_file = _write(tmp_path, "arch.yaml", text.replace(old, old + "        utilization: {min: 0.5}\n"))
    arch = load_architecture(arch_file)
    problem = load_problem(CORPUS / "layers" / "tiny_conv.yaml")
    own = load_constraints(arch, None, problem)
    assert own["psum_spad"].min_parallelism == 0.5
    ms = MapSpace(arch, problem, own)
    sp = ms.decode(ms.sample(np.random.default_rng(0), 400))
    used = (sp.spatial_x * sp.spatial_y).reshape(400, -1).prod(axis=1)
    assert (ms.satisfies(sp) == (used >= 0.5 * arch.compute.instances)).all()
    same = _write(tmp_path, "same.yaml", "targets:\n- {target: psum_spad, type: utilization, min: 0.5}\n")
    assert load_constraints(arch, same, problem)["psum_spad"].min_parallelism == 0.5
    other = _write(tmp_path, "other.yaml", "targets:\n- {target: psum_spad, type: utilization, min: 0.8}\n")
    with pytest.raises(CoexploreError, match="min parallelism"):
        load_constraints(arch, other, problem)


# ----------------------------------------------------------------- held stops, real handlers
@pytest.fixture
def handlers():
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def test_a_hold_restores_the_handlers_and_holds_sigterm_too(handlers):
    from coexplore.stops import holding_stops

    def term(signum, frame):
        raise AssertionError("SIGTERM reached its handler inside the block")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, term)
    with holding_stops() as hold:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        finished = True
    assert finished and hold.stop_now                     # no search to ask: a stop-at-once
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) is term


def test_an_ignored_ctrl_c_stays_ignored_in_a_hold(handlers):
    from coexplore.stops import holding_stops
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with holding_stops() as hold:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
    assert not hold.stop_now and signal.getsignal(signal.SIGINT) is signal.SIG_IGN


# ----------------------------------------------------------------- the schedule's times
@pytest.mark.parametrize("seconds, text", [(4.2e-7, "420 ns"), (3.5e-6, "3.5 us"), (0.0125, "12.5 ms"),
                                           (2.0, "2 s")])
def test_times_are_printed_in_a_fitting_unit(seconds, text):
    from coexplore.system.schedule import _time
    assert _time(seconds) == text


def test_the_dnns_are_listed_by_when_they_finish():
    """Two DNNs, the first listed finishing last: the summary names the second first, at the end
    times the trace gives (units: cycles)."""
    from coexplore.system.jobs import Job, build_job_table
    from coexplore.system.schedule import ScheduleResult, dnn_ends, schedule_trace, summary_lines
    jobs = [Job("big.a", dnn="big", layer="a"), Job("small.a", dnn="small", layer="a")]
    table = build_job_table(jobs, ["c0", "c1"], lambda job, core: (1000.0 if job.dnn == "big" else 10.0, 1.0, 0.0))
    res = ScheduleResult("fcfs-greedy", 0, 16.0, 1, np.array([0, 1]), np.array([0.0, 1.0]), 1000.0, 2.0,
                         np.array([1000.0, 10.0]))
    ends = dnn_ends(table, schedule_trace(table, res).job_end)
    assert ends == {"big": 1000.0, "small": 10.0}
    line = next(x for x in summary_lines(table, res) if x.startswith("DNNs done"))
    assert line.index("small 10") < line.index("big 1000")
    data = res.to_json(table)
    assert all(data["units"][k] == "cycles" for k in ("start", "end", "dnn_end", "makespan"))
    assert "clock_GHz" not in data["units"] and data["units"] is not res.to_json(table)["units"]


def test_a_quoted_whole_number_is_a_bound_as_in_timeloop(tmp_path):
    """`P: '112'` reads as 112 (Timeloop's YAML reader converts it), as a quoted buffer depth does;
    `P: '1e2'` or `'two'` are still refused."""
    import yaml
    from coexplore.spec.problem import parse_problem
    doc = yaml.safe_load((CORPUS / "layers" / "tiny_conv.yaml").read_text())
    plain = parse_problem(doc, "l.yaml")
    doc["problem"]["instance"]["P"] = str(doc["problem"]["instance"]["P"])
    doc["problem"]["instance"]["Wstride"] = "1"
    quoted = parse_problem(doc, "l.yaml")
    assert quoted.bounds == plain.bounds and quoted.coefficients["Wstride"] == 1
    for bad in ("two", "1e2", "-3"):
        doc["problem"]["instance"]["P"] = bad
        with pytest.raises(CoexploreError, match="problem.instance.P"):
            parse_problem(doc, "l.yaml")


@pytest.mark.parametrize("attributes, want", [({}, 1.0), ({"datawidth": 8}, 0.25), ({"word-bits": 32}, 4.0),
                                              ({"energy": 0.7, "datawidth": 8}, 0.7)])
def test_timeloops_own_compute_energy(attributes, want):
    """pat::MultiplierEnergy(word bits, word bits) = (bits / 16)^2, word bits 16 by default; an
    `energy` attribute overrides it (ArithmeticUnits::ParseSpecs)."""
    from coexplore.energy.timeloop_pat import compute_energy
    assert compute_energy(Level(name="mac", cls="intmac", attributes=attributes, is_compute=True)) == \
        pytest.approx(want, rel=1e-12)


def test_an_ert_without_a_compute_action_gets_timeloops_estimate(tmp_path):
    """The MAC's table with its `compute` action renamed: the estimate for its datawidth stands in,
    with a warning naming the level; the buffers keep the ERT's numbers."""
    import shutil
    import warnings
    from coexplore.errors import CoexploreWarning
    from coexplore.model.inputs import load_context
    d = tmp_path / "eyeriss_like"
    shutil.copytree(CORPUS / "arches" / "eyeriss_like", d)
    ert = d / "ERT.yaml"
    assert ert.read_text().count("name: compute") == 1
    ert.write_text(ert.read_text().replace("name: compute", "name: compte"))
    layer = CORPUS / "layers" / "tiny_conv.yaml"
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        ctx = load_context(d / "processed.yaml", layer)
    ref = load_context(CORPUS / "arches" / "eyeriss_like" / "processed.yaml", layer)
    bits = ctx.arch.compute.attributes.get("datawidth", ctx.arch.compute.attributes.get("word-bits", 16))
    assert ctx.costs.compute == pytest.approx((bits / 16) ** 2) and ctx.costs.compute != ref.costs.compute
    assert np.array_equal(ctx.costs.read, ref.costs.read)
    assert any("prices no compute" in str(w.message) and "mac" in str(w.message) for w in said
               if issubclass(w.category, CoexploreWarning))


def _eyeriss_with_ert(tmp_path, edit):
    import shutil
    import yaml
    d = tmp_path / "eyeriss_like"
    shutil.copytree(CORPUS / "arches" / "eyeriss_like", d)
    doc = yaml.safe_load((d / "ERT.yaml").read_text())
    edit(doc["ERT"]["tables"])
    (d / "ERT.yaml").write_text(yaml.safe_dump(doc))
    return d / "processed.yaml"


def test_a_level_the_ert_does_not_name_gets_timeloops_estimate(tmp_path):
    """timeloop-model replaces the energies of the levels its ERT names and keeps its `pat`
    estimates for the others (Topology::Specs::ParseAccelergyERT): a buffer and the MAC whose
    tables are removed get them, with a warning each; the other levels keep the ERT's numbers."""
    import warnings
    from coexplore.energy.timeloop_pat import compute_energy, vector_access_energy
    from coexplore.errors import CoexploreWarning
    from coexplore.model.inputs import load_context
    layer = CORPUS / "layers" / "tiny_conv.yaml"
    ref = load_context(CORPUS / "arches" / "eyeriss_like" / "processed.yaml", layer)
    names = [lv.name for lv in reversed(ref.arch.levels)]          # model order, innermost first
    gone = "shared_glb" if "shared_glb" in names else names[1]

    def drop(tables):
        tables[:] = [x for x in tables if x["name"].split("[")[0].split(".")[-1] not in (gone, ref.arch.compute.name)]
    arch = _eyeriss_with_ert(tmp_path, drop)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        ctx = load_context(arch, layer)
    i = names.index(gone)
    lv = next(lv for lv in ref.arch.levels if lv.name == gone)
    want = vector_access_energy(lv)
    assert want is not None and want != ref.costs.read[i]
    assert ctx.costs.read[i] == ctx.costs.fill[i] == ctx.costs.update[i] == pytest.approx(want, rel=1e-12)
    assert ctx.costs.leak[i] == 0.0
    assert ctx.costs.compute == pytest.approx(compute_energy(ref.arch.compute), rel=1e-12)
    others = [j for j in range(len(names)) if j != i]
    assert np.array_equal(ctx.costs.read[others], ref.costs.read[others])
    texts = [str(w.message) for w in said if issubclass(w.category, CoexploreWarning)]
    assert any(gone in t and "no table" in t for t in texts)
    assert any(ref.arch.compute.name in t and "no table" in t for t in texts)


def test_an_ert_naming_no_level_is_refused(tmp_path):
    from coexplore.model.inputs import load_context

    def rename(tables):
        for k, x in enumerate(tables):
            x["name"] = f"other.thing{k}"
    arch = _eyeriss_with_ert(tmp_path, rename)
    with pytest.raises(CoexploreError, match="none of the architecture's levels"):
        load_context(arch, CORPUS / "layers" / "tiny_conv.yaml")
