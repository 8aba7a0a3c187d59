"""Tests from a second review of objectives as expressions: each pinned a defect the review found
(now fixed): errors naming --objective or the mapper file, named objectives never blamed, the
searchers that rank their losses asking the same mappings, what may refuse a valid mapping, job-table
warnings, a sweep's bad input, canonical spellings from Python."""

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import CORPUS
from coexplore.cli.main import main
from coexplore.model.inputs import load_context
from coexplore.search import registry
from coexplore.search import layer as L
from coexplore.search.layer import NoValidMapping, map_layer
from coexplore.search.objective_expr import compile_objective
from coexplore.spec.constraints import load_constraints

ARCH = CORPUS / "arches" / "eyeriss_like" / "processed.yaml"
CONS = CORPUS / "arches" / "eyeriss_like" / "constraints.yaml"
LAYER = CORPUS / "layers" / "tiny_conv.yaml"
SWEEP = Path(__file__).parent / "data" / "sweep"


def test_1_cli_objective_error_names_objective_option_not_the_bundled_mapper(tmp_path, capsys):
    """--objective 'energy - 1e30' with the default mapper: the error must name --objective; it
    names mappers/marl.yaml's key 'objective' (the bundled file's objective_file survives the
    --objective override in cli/map.py resolve_spec_overrides)."""
    rc = main(["map", str(ARCH), str(LAYER), "--objective", "energy - 1e30", "--budget", "300", "--no-cache",
               "--no-progress", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "marl.yaml" not in err, err
    assert "--objective" in err, err


def test_2_a_named_objective_is_not_blamed_when_the_constraints_refuse_every_sample(tmp_path):
    """A min-utilization constraint no sampled mapping meets: the model finds the samples valid
    but the mapspace's bounds refuse them. make_objective counts them as `model_valid`, so the
    failure says "the objective 'edp' gave no finite loss ..." (key objective, proposing a cap
    penalty) instead of "no valid mapping found" (--budget)."""
    util = tmp_path / "util.yaml"
    util.write_text("mapspace_constraints:\n  targets:\n  - type: utilization\n    target: psum_spad\n    min: 1.0\n")
    ctx = load_context(ARCH, LAYER)
    cons = load_constraints(ctx.arch, [CONS, util], ctx.problem)
    with pytest.raises(NoValidMapping) as err:
        map_layer(ctx, cons, "random", 300, seed=0, objective="edp")
    assert err.value.key == "budget" and "the objective" not in err.value.message, err.value.message


def _asked(ctx, cons, searcher, objective, budget, seed, monkeypatch):
    real, batches = L.make_objective, []

    def spy(c, ms, obj):
        f = real(c, ms, obj)

        def g(X):
            batches.append(np.array(X))
            return f(X)
        g.__dict__ = f.__dict__
        return g
    monkeypatch.setattr(L, "make_objective", spy)
    map_layer(ctx, cons, searcher, budget, seed=seed, objective=objective)
    monkeypatch.setattr(L, "make_objective", real)
    return np.concatenate(batches)


@pytest.mark.parametrize("searcher", ["rl", "ga", "sa", "random_pruned"])
def test_3_energy_times_cycles_asks_what_edp_asks(searcher, monkeypatch):
    """README: `energy * cycles` is the EDP search itself for the searchers that use only the order
    of their losses (the same seed asks the same mappings). (MARL's critic fits the log-losses'
    values, offset by log(1e12): rounding can part its asks after ~2,000-3,700 samples on this layer,
    as the README says.)"""
    ctx = load_context(ARCH, CORPUS / "layers" / "resnet50_res3a_2b.yaml")
    cons = load_constraints(ctx.arch)
    a = _asked(ctx, cons, searcher, "edp", 3000, 0, monkeypatch)
    b = _asked(ctx, cons, searcher, "energy * cycles", 3000, 0, monkeypatch)
    assert a.shape == b.shape and np.array_equal(a, b)


@pytest.mark.parametrize("text", ["energy + 0 * sqrt(3000 - cycles)", "energy + 0 * (3000 - cycles) ** 0.5",
                                  "energy * cycles ** 400", "energy * 1e999"])
def test_4_may_refuse_sees_every_way_to_refuse_a_valid_mapping(text):
    """sqrt / a fractional power of a difference give NaN (= refused), a big power or literal
    overflows to inf, for model-valid mappings; may_refuse says False, so linear_pruned keeps
    skipping 'failed' factorisations (README: an expression that can refuse a valid mapping makes
    linear_pruned walk every mapping). The first is the cap `energy if cycles <= 3000 else inf`,
    loss for loss."""
    assert compile_objective(text).may_refuse


def test_5_job_table_warning_for_a_core_the_objective_refuses_does_not_blame_the_budget(tmp_path, capsys):
    """A cap the big core meets and the small one does not: the warning says "no valid mapping on
    core small ... a core too small for its tiles, or valid mappings too rare for this budget: a
    larger --layer-budget may find one"; it should say the objective refused that core's mappings."""
    for f in SWEEP.glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    doc = yaml.safe_load((tmp_path / "tiny_sweep.yaml").read_text())
    doc.pop("sweep")
    doc["system"]["cores"][0]["count"] = 1
    doc["system"]["cores"].append({"name": "small", "template": "eyeriss", "count": 1,
                                   "params": {"pe_mesh_x": 2, "pe_mesh_y": 2}})
    doc["mappers"] = {"layer": "cap.yaml"}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc))
    (tmp_path / "cap.yaml").write_text("searcher: random\nobjective: energy if cycles <= 1000 else inf\n")
    rc = main(["schedule", str(tmp_path / "s.yaml"), "--layer-budget", "300", "--budget", "10", "--no-cache",
               "--no-progress", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 0
    warned = [line for line in err.splitlines() if "no valid mapping on core small" in line]
    assert warned and all("--layer-budget" not in w and "objective" in w for w in warned), warned


def test_6_sweep_treats_a_bad_objective_as_bad_input(tmp_path, capsys):
    """A layer mapper whose objective gives a learner a loss <= 0: `schedule` and `online` exit 2
    and write nothing; `sweep` records every point as failed, exits 1 and writes pareto.csv,
    report.html, points/."""
    for f in SWEEP.glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "neg.yaml").write_text("searcher: ga\nobjective: energy - 1e30\n")
    out = tmp_path / "o"
    rc = main(["sweep", str(tmp_path / "tiny_sweep.yaml"), "--layer-searcher", str(tmp_path / "neg.yaml"),
               "--layer-budget", "200", "--budget", "10", "--no-cache", "--no-progress", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert not out.exists() or not any(out.iterdir())


def test_7_a_mapper_spec_made_directly_is_cached_under_the_canonical_spelling(tmp_path):
    """MapperSpec is public; one made directly keeps 'energy*cycles' as written: another cache entry
    than 'energy * cycles' and result.objective not the canonical spelling (README: the canonical
    spelling is the cache key)."""
    from coexplore.model.cache import ResultCache
    ctx = load_context(ARCH, LAYER)
    cons = load_constraints(ctx.arch)
    cfg = registry.config_from_dict(registry.SEARCHERS["random"][1], None)
    with ResultCache(tmp_path / "c.sqlite") as cache:
        a = map_layer(ctx, cons, registry.MapperSpec("random", "energy*cycles", 100, cfg), 200, seed=0, cache=cache)
        b = map_layer(ctx, cons, registry.MapperSpec("random", "energy * cycles", 100, cfg), 200, seed=0, cache=cache)
    assert a.objective == "energy * cycles" and b.cached


def test_8_objective_loss_reads_a_parenthesised_name_as_map_layer_does():
    """checked_objective('(latency)') is the named latency (ties broken by energy), as map_layer
    runs it; objective_loss('(latency)') evaluates the expression (no tie-break)."""
    M = {"energy": np.array([2.0, 3.0]), "cycles": np.array([4.0, 4.0]), "latency": np.array([4.0, 4.0]),
         "edp": np.array([8e-12, 12e-12]), "utilization": np.array([.5, .5])}
    assert registry.checked_objective("(latency)") == "latency"
    assert type(registry.objective_loss(M, "(latency)")) is type(registry.objective_loss(M, "latency"))
