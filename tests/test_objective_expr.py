"""Objectives written as expressions of the metrics (`--objective 'energy * cycles**2'`, a mapper
YAML's `objective:`): evaluated as arithmetic says, the same search as the equivalent name or
function, cached under one spelling, and anything else refused with the option named."""

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import CORPUS
from coexplore.cli.main import main
from coexplore.errors import CoexploreError
from coexplore.model.inputs import load_context
from coexplore.search import registry
from coexplore.search.layer import NoValidMapping, map_layer
from coexplore.search.objective_expr import compile_objective
from coexplore.spec.constraints import load_constraints

ARCH = CORPUS / "arches" / "eyeriss_like" / "processed.yaml"
LAYER = CORPUS / "layers" / "tiny_conv.yaml"
M = {"energy": np.array([2.0, 3.0, 8.0]), "cycles": np.array([4.0, 5.0, 1.0]), "latency": np.array([4.0, 5.0, 1.0]),
     "edp": np.array([8e-12, 15e-12, 8e-12]), "utilization": np.array([0.5, 1.0, 0.25])}


@pytest.fixture(scope="module")
def tiny():
    ctx = load_context(ARCH, LAYER)
    return ctx, load_constraints(ctx.arch)


@pytest.mark.parametrize("text, want", [
    ("energy * cycles**2", [32, 75, 8]),                       # ED^2P
    ("energy if cycles <= 4 else inf", [2, np.inf, 8]),        # a cap
    ("where(cycles > 4, energy, 0) + 1", [1, 4, 1]),
    ("min(energy, cycles, 3)", [2, 3, 1]),
    ("max(energy, 2 * cycles)", [8, 10, 8]),
    ("edp / utilization * 1e12", [16, 15, 32]),
    ("energy * (1 < cycles <= 4 or utilization == 1)", [2, 3, 0]),
    ("2 ** log2(energy) - sqrt(abs(-cycles)) ** 2", [-2, -2, 7]),
    ("latency - cycles + energy / 2", [1, 1.5, 4]),
    ("9 ** 9 ** 9 * energy", [np.inf] * 3),                    # overflows to inf, never a giant integer
    ("energy * ((cycles > 4) - (energy > 2) + 2)", [4, 6, 8]),  # a comparison is 1 or 0, arithmetic takes it
    ("energy * (2 - -(cycles > 4)) + +(cycles > 4) - (not energy)", [4, 10, 16]),
    ("energy or cycles", [2, 3, 8]), ("energy and cycles", [4, 5, 1]),   # Python's and/or
    ("(cycles > 4) or energy", [2, 1, 8]), ("cycles > 4 and energy", [0, 3, 0]),
    ("where(cycles - 4, 1, 2)", [2, 1, 1]), ("energy if cycles - 4 else 0", [0, 3, 8]),   # non-zero is true
    ("min(cycles > 4, energy > 2)", [0, 1, 0]), ("e * pi * energy / energy", [np.e * np.pi] * 3),
])
def test_an_expression_is_the_arithmetic_it_says(text, want):
    assert compile_objective(text)(M) == pytest.approx(np.array(want, dtype=float))


@pytest.mark.parametrize("text, why", [
    ("energy.__class__", "not allowed"), ("__import__('os')", "not a function"), ("open('x')", "not a function"),
    ("foo * 2", "unknown name 'foo'"), ("min(energy)", "min() takes 2 or more"), ("log(energy, 2)", "log() takes 1"),
    ("where(energy)", "where() takes 3"), ("abs(x=energy)", "abs() takes 1"), ("energy[0]", "not allowed"),
    ("lambda: energy", "not allowed"), ("energy @ cycles", "not allowed"), ("'energy'", "not a number"),
    ("2 * 3", "reads no metric"), ("min", "is a function"), ("energy if", "not an expression"),
    ("energy; 1", "not an expression"), ("[energy][0]", "not allowed"), ("energy " + "+ 1 " * 600, "characters long"),
    ("energy is cycles", "not allowed"), ("energy in cycles", "not allowed"), ("True * energy", "not a number"),
    ("energy * 1" + "0" * 400, "too large"),                       # (float() of it overflows)
    ("-" * 400 + "energy", "nested more than"), ("e+" * 400 + "energy", "nested more than"),
    ("energy" + "**1" * 330, "nested more than"),
])
def test_anything_else_is_refused_by_name(text, why):
    with pytest.raises(CoexploreError) as err:
        compile_objective(text)
    assert err.value.key == "objective" and why in err.value.message, err.value.message


def test_the_same_search_as_the_named_objective_and_the_function(tiny):
    """The learners rank their losses (log-scaled): energy x cycles orders mappings as EDP does, so
    the same seed asks the same mappings and ends at the same best; a cap written as an expression
    is the cap written as a function."""
    ctx, cons = tiny
    edp = map_layer(ctx, cons, "marl", 600, seed=1, objective="edp")
    expr = map_layer(ctx, cons, "marl", 600, seed=1, objective="energy * cycles")
    assert expr.x == edp.x and expr.objective == "energy * cycles"
    assert [s for s, _ in expr.history] == [s for s, _ in edp.history]
    assert [v for _, v in expr.history] == pytest.approx([v * 1e12 for _, v in edp.history], rel=1e-9)
    cap = int(map_layer(ctx, cons, "ga", 800, seed=2, objective="energy").best["cycles"] * 0.5)
    fn = map_layer(ctx, cons, "ga", 800, seed=2, objective=lambda m: np.where(m["cycles"] <= cap, m["energy"], np.inf))
    text = map_layer(ctx, cons, "ga", 800, seed=2, objective=f"energy if cycles <= {cap} else inf")
    assert text.x == fn.x and text.best["cycles"] <= cap
    assert [h[1] for h in text.history] == [h[1] for h in fn.history]


def test_an_expression_is_cached_under_its_canonical_spelling(tiny, tmp_path):
    from coexplore.model.cache import ResultCache
    ctx, cons = tiny
    with ResultCache(tmp_path / "c.sqlite") as cache:
        first = map_layer(ctx, cons, "random", 300, seed=0, cache=cache, objective="energy*cycles**2")
        again = map_layer(ctx, cons, "random", 300, seed=0, cache=cache, objective="energy * cycles ** 2")
        other = map_layer(ctx, cons, "random", 300, seed=0, cache=cache, objective="energy * cycles ** 3")
        assert not first.cached and again.cached and again.x == first.x and not other.cached
        assert len(cache) == 2


def test_a_cap_no_mapping_meets_names_the_expression(tiny):
    ctx, cons = tiny
    with pytest.raises(NoValidMapping) as err:
        map_layer(ctx, cons, "random", 200, seed=0, objective="energy if cycles < 1 else inf")
    e = err.value
    assert e.key == "objective" and e.option == "--objective" and "'energy if cycles < 1 else inf'" in e.message
    assert "max(1, cycles / CAP)" in e.expected


def test_linear_pruned_walks_every_mapping_under_an_expression(tiny):
    """A cap may give valid mappings an infinite loss, so linear_pruned does not skip what looks
    failed (as for a function of the user's): the same walk as the function's."""
    ctx, cons = tiny
    cap = 3000                      # the walk's first valid mappings take more cycles: the cap refuses them
    fn = map_layer(ctx, cons, "linear_pruned", 3000, seed=0, objective=lambda m: np.where(m["cycles"] <= cap, m["energy"], np.inf))
    text = map_layer(ctx, cons, "linear_pruned", 3000, seed=0, objective=f"energy if cycles <= {cap} else inf")
    assert text.x == fn.x and text.history == fn.history and text.best["cycles"] <= cap
    # the first batch held no mapping under the cap (the history starts at the first that did), so the
    # walk went past capped-out valid mappings
    assert text.history[0][0] > registry.load_mapper("linear_pruned").batch_size


def test_a_mapper_yaml_takes_an_expression_and_names_a_bad_one(tmp_path):
    good = tmp_path / "ed2p.yaml"
    good.write_text("searcher: ga\nobjective: energy*cycles**2\n")
    assert registry.load_mapper(good).objective == "energy * cycles ** 2"
    bad = tmp_path / "bad.yaml"
    bad.write_text("searcher: ga\nobjective: energy*speed\n")
    with pytest.raises(CoexploreError) as err:
        registry.load_mapper(bad)
    assert err.value.file == str(bad) and err.value.key == "objective" and "unknown name 'speed'" in err.value.message


def test_the_cli_maps_with_an_expression_and_refuses_a_bad_one(tmp_path, capsys):
    out = tmp_path / "o"
    rc = main(["map", str(ARCH), str(LAYER), "--objective", "energy*cycles**2", "--budget", "300", "--no-cache",
               "--no-progress", "--json", "--out", str(out)])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    b = res["best"]
    assert res["objective"] == "energy * cycles ** 2"
    assert res["history"][-1][1] == pytest.approx(b["energy_pJ"] * b["cycles"] ** 2, rel=1e-9)
    rc = main(["map", str(ARCH), str(LAYER), "--objective", "energy*os.getpid()", "--no-cache",
               "--out", str(tmp_path / "bad")])
    err = capsys.readouterr().err
    assert rc == 2 and "key '--objective'" in err and "Traceback" not in err
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("text, refuses", [
    ("energy * cycles", False), ("energy * cycles**2", False), ("max(energy, cycles) + 3 * edp", False),
    ("energy if cycles <= 3e5 else inf", True), ("edp / utilization", True), ("log(energy)", True),
    ("energy ** -1", True), ("exp(energy)", True), ("where(cycles > 1, energy, 0)", True), ("energy * inf", True),
])
def test_which_expressions_may_refuse_a_valid_mapping(text, refuses):
    """What decides whether linear_pruned may skip a factorisation whose mappings all failed."""
    assert compile_objective(text).may_refuse is refuses


def test_linear_pruned_under_a_product_walks_as_under_edp(monkeypatch):
    """`energy * cycles` can refuse no valid mapping: linear_pruned keeps skipping failed
    factorisations and asks exactly what the EDP walk asks (here: nothing valid in 3,000 samples,
    said as the EDP run says it, not blamed on the objective)."""
    from coexplore.search import layer as L
    ctx = load_context(CORPUS / "arches" / "eyeriss_like" / "processed.yaml", CORPUS / "layers" / "alexnet_conv3.yaml")
    cons = load_constraints(ctx.arch)
    real, asked, errors = L.make_objective, {}, {}

    def run(objective):
        batches = asked.setdefault(objective, [])

        def spy(c, ms, obj):
            f = real(c, ms, obj)

            def g(X):
                batches.append(np.array(X))
                return f(X)
            g.__dict__ = f.__dict__             # (the count of model-valid samples lives on f)
            return g
        monkeypatch.setattr(L, "make_objective", spy)
        with pytest.raises(NoValidMapping) as err:
            map_layer(ctx, cons, "linear_pruned", 3000, seed=0, objective=objective)
        errors[objective] = err.value
        return np.concatenate(batches)
    assert np.array_equal(run("edp"), run("energy * cycles"))
    edp, expr = errors["edp"], errors["energy * cycles"]
    assert expr.key == edp.key == "budget" and "no valid mapping found" in expr.message


@pytest.mark.parametrize("searcher, text, said", [
    ("marl", "energy - 1e30", "-1e+30"), ("marl", "energy * (cycles > 1e9)", "0"),
    ("random", "log(energy - energy)", "-inf")])
def test_a_loss_at_or_below_zero_is_blamed_on_the_objective(tiny, tmp_path, searcher, text, said):
    """A learner needs losses > 0 (log-scaled), and -inf is no loss: said as the objective's fault,
    naming --objective (or the mapper file's objective key), not the searcher's internals."""
    ctx, cons = tiny
    with pytest.raises(CoexploreError) as err:
        map_layer(ctx, cons, searcher, 200, seed=0, objective=text)
    e = err.value
    assert (e.key, e.option, e.file) == ("objective", "--objective", None) and said in e.message, e
    f = tmp_path / "m.yaml"
    f.write_text(f"searcher: {searcher}\nobjective: {text}\n")
    with pytest.raises(CoexploreError) as err:
        map_layer(ctx, cons, f, 200, seed=0)
    assert (err.value.key, err.value.option, err.value.file) == ("objective", None, str(f))


def test_a_job_table_names_the_mapper_file_of_a_cap_no_layer_meets(tmp_path, capsys):
    """`coexplore schedule` with a system whose mappers.layer caps the cycles below any mapping:
    exit 1, naming that mapper file's objective, not --layer-budget."""
    import shutil
    import yaml
    data = Path(__file__).parent / "data" / "sweep"
    for f in data.glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "cap.yaml").write_text("searcher: random\nobjective: energy if cycles < 1 else inf\n")
    doc = yaml.safe_load((tmp_path / "tiny_sweep.yaml").read_text())
    doc.pop("sweep")
    doc["mappers"] = {"layer": "cap.yaml"}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc))
    rc = main(["schedule", str(tmp_path / "s.yaml"), "--layer-budget", "60", "--budget", "10", "--no-cache",
               "--no-progress", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 1 and f"{tmp_path / 'cap.yaml'}: key 'objective'" in err and "--layer-budget" not in err, err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_bad_losses_in_a_network_leave_no_folder(tmp_path, capsys, jobs):
    """Losses no learner can take, found in the layers' searches: exit 2 naming --objective, and no
    layer folder left behind, with worker processes too (they cannot remove their own)."""
    out = tmp_path / "o"
    rc = main(["map", str(ARCH), "alexnet", "--all-layers", "--jobs", jobs, "--searcher", "ga",
               "--objective=energy - 1e30", "--budget", "200", "--no-cache", "--no-progress", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "key '--objective'" in err and "mappers/ga.yaml" not in err, err
    assert not out.exists(), sorted(p.name for p in out.rglob("*"))


def test_a_function_giving_minus_infinity_is_the_objectives_error(tiny):
    """User study: this was an error of 'tell', which the user never called."""
    ctx, cons = tiny
    with pytest.raises(CoexploreError, match="the objective returned -inf") as err:
        map_layer(ctx, cons, "random", 200, seed=0, objective=lambda m: np.where(m["cycles"] > 0, -np.inf, m["energy"]))
    assert err.value.key == "objective"
