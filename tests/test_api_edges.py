"""The Python API as a library user drives it (a user study): bad arguments raise CoexploreError
naming them, a searcher of one's own is counted and cached as its code, not only its name."""

import warnings
from dataclasses import dataclass

import numpy as np
import pytest

from conftest import CORPUS

from coexplore.errors import CoexploreError
from coexplore.mapspace.space import MapSpace
from coexplore.model.inputs import load_context
from coexplore.search import registry
from coexplore.search.base import Searcher, run_search
from coexplore.search.space import DiscreteSpace
from coexplore.spec.mapping import save_mapping


def _ctx(arch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_context(CORPUS / "arches" / arch / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml",
                            CORPUS / "arches" / arch / "ERT.yaml")


def test_save_mapping_refuses_arrays_of_another_architecture_and_an_index_out_of_the_batch(tmp_path):
    simba, eyeriss = _ctx("simba_like"), _ctx("eyeriss_like")
    assert len(simba.arch.levels) != len(eyeriss.arch.levels)
    ms = MapSpace(simba.arch, simba.problem)
    arrays = ms.decode(ms.sample(np.random.default_rng(0), 4))
    with pytest.raises(CoexploreError):
        save_mapping(tmp_path / "x.yaml", arrays, 0, eyeriss.arch, eyeriss.problem)
    with pytest.raises(CoexploreError) as err:
        save_mapping(tmp_path / "x.yaml", arrays, 99, simba.arch, simba.problem)
    assert err.value.key == "index"
    assert not (tmp_path / "x.yaml").exists()
    save_mapping(tmp_path / "x.yaml", arrays, 3, simba.arch, simba.problem)


@pytest.mark.parametrize("args, key", [((0, 5), "rng"), ((np.random.default_rng(0), -1), "n")])
def test_mapspace_sample_says_what_it_takes(args, key):
    ctx = _ctx("eyeriss_like")
    with pytest.raises(CoexploreError) as err:
        MapSpace(ctx.arch, ctx.problem).sample(*args)
    assert err.value.key == key


def test_build_job_table_refuses_a_string_of_cores_twice_named_cores_and_a_bad_cost():
    from coexplore.system.jobs import Job, build_job_table
    jobs = [Job("a"), Job("b")]
    with pytest.raises(CoexploreError, match="string"):
        build_job_table(jobs, "big", lambda j, c: (1, 1, 1))
    with pytest.raises(CoexploreError, match="twice"):
        build_job_table(jobs, ["big", "big"], lambda j, c: (1, 1, 1))
    for bad in (None, (1, 2), {"lat": 1}):
        with pytest.raises(CoexploreError) as err:
            build_job_table(jobs, ["big"], lambda j, c, bad=bad: bad)
        assert err.value.key == "cost"
    t = build_job_table(jobs, ("big",), lambda j, c: (100, 5, 200))
    assert t.cores == ["big"] and t.bandwidth[0, 0] == 2.0


def test_unknown_core_design_and_layer_are_coexplore_errors():
    from pathlib import Path

    from coexplore.arch.system import load_system_arch
    from coexplore.spec.workload import find_workload, load_workload
    from coexplore.system.from_system import core_model
    repo = Path(__file__).resolve().parents[1]
    with pytest.raises(CoexploreError) as err:
        core_model(load_system_arch(repo / "arch" / "simba_2x2.yaml"), "eyeriss")
    assert "simba" in err.value.expected
    wl = load_workload(find_workload("resnet50"))
    with pytest.raises(CoexploreError) as err:
        wl.layer("nosuch")
    assert isinstance(err.value, KeyError) and "conv1" in err.value.expected      # (still a KeyError)


@dataclass
class _Cfg:
    pass


class _One(Searcher):
    name = "one"

    def __init__(self, space, config=None, seed=0):
        super().__init__(seed)
        self.space = space

    def ask(self, n):
        return self.space.sample(self.rng, n)

    def tell(self, batch, losses):
        super().tell(batch, losses)


def test_a_searcher_asking_more_than_asked_is_refused():
    class Greedy(_One):
        def ask(self, n):
            return self.space.sample(self.rng, n + 5)

    space = DiscreteSpace(np.array([5, 5]), ["a", "b"])
    with pytest.raises(CoexploreError, match="proposed 15 candidates when asked for 10"):
        run_search(Greedy(space), lambda b: b.sum(axis=1).astype(float) + 1, budget=50, batch_size=10)


class _Other(_One):
    def ask(self, n):
        return np.zeros((n, len(self.space.cardinalities)), dtype=np.int64)


def test_a_searcher_of_ones_own_is_keyed_by_its_code_in_the_cache(monkeypatch):
    from coexplore.search.layer import cache_parts
    monkeypatch.setattr(registry, "SEARCHERS", dict(registry.SEARCHERS))
    ctx = _ctx("eyeriss_like")
    keys = []
    for cls in (_One, _Other):
        registry.SEARCHERS["mine"] = (cls, _Cfg)
        spec = registry.MapperSpec(searcher="mine", config=_Cfg())
        keys.append(cache_parts(ctx, {}, spec, budget=100, seed=0)["searcher"])
    assert keys[0] != keys[1] and keys[0]["class"].endswith("_One") and keys[0]["code_sha256"]
    bundled = cache_parts(ctx, {}, registry.load_mapper("marl"), budget=100, seed=0)["searcher"]
    assert "class" not in bundled and "code_sha256" not in bundled        # (earlier keys hold)


def test_build_tables_given_an_architecture_document_says_to_take_its_components():
    from coexplore.arch import build_core
    from coexplore.energy.tables import build_tables
    with pytest.raises(CoexploreError) as err:
        build_tables(build_core("simba", {}).flattened().processed)
    assert "components_from_processed" in err.value.expected


def test_a_fractional_budget_is_said_as_such():
    from coexplore.search.layer import map_layer
    ctx = _ctx("eyeriss_like")
    with pytest.raises(CoexploreError, match="got 100.5") as err:
        map_layer(ctx, {}, "random", budget=100.5, seed=0)
    assert err.value.key == "budget" and "integer" in err.value.expected     # the argument, not --budget
    assert map_layer(ctx, {}, "random", budget=100.0, seed=0).samples == 100   # as run_search takes it


def test_a_searcher_defined_in_an_exec_is_keyed_by_its_code(monkeypatch):
    """As in a notebook cell: no source file; the same class name with another body is another key."""
    monkeypatch.setattr(registry, "SEARCHERS", dict(registry.SEARCHERS))
    body = ("from coexplore.search.base import Searcher\n"
            "class Cell(Searcher):\n"
            "    def __init__(self, space, config=None, seed=0):\n"
            "        super().__init__(seed)\n"
            "        self.space = space\n"
            "    def ask(self, n):\n"
            "        return self.space.sample(self.rng, n){}\n")
    keys = []
    for tail in ("", " * 0"):
        ns: dict = {"__name__": "cell"}
        exec(body.format(tail), ns)
        registry.SEARCHERS["cell"] = (ns["Cell"], _Cfg)
        keys.append(registry.searcher_code("cell"))
    assert keys[0]["class"] == keys[1]["class"] and keys[0]["code_sha256"] != keys[1]["code_sha256"]
    ns = {"__name__": "cell"}
    exec(body.format(""), ns)
    registry.SEARCHERS["cell"] = (ns["Cell"], _Cfg)
    assert registry.searcher_code("cell") == keys[0]                # the same code: the same key


def test_a_searcher_is_keyed_by_the_plain_values_it_reads_too(monkeypatch):
    """User study: two classes made by one factory with another closure value, or one class
    reading a module global changed between runs, shared a cache entry (the first run's result)."""
    monkeypatch.setattr(registry, "SEARCHERS", dict(registry.SEARCHERS))
    from coexplore.search.base import Searcher

    def make(bias):
        class Closed(Searcher):
            step = 0.5

            def ask(self, n):
                return self.space.sample(self.rng, n) * 0 + bias
        return Closed

    def key(cls):
        registry.SEARCHERS["closed"] = (cls, _Cfg)
        return registry.searcher_code("closed")["code_sha256"]
    assert key(make(0)) == key(make(0)) != key(make(1))
    a, b = make(0), make(0)
    b.step = 0.25                                               # a class attribute's value
    assert key(a) != key(b)
    ns: dict = {"__name__": "cellg", "G": 0}
    exec("from coexplore.search.base import Searcher\n"
         "class Glob(Searcher):\n"
         "    def ask(self, n):\n"
         "        return self.space.sample(self.rng, n) * 0 + G\n", ns)
    first = key(ns["Glob"])
    ns["G"] = 1
    assert key(ns["Glob"]) != first
    ns["G"] = 0
    assert key(ns["Glob"]) == first
