"""Arguments as a notebook passes them (a user study of the Python API): errors name the Python
argument (the CLI its option), numpy integers are taken as integers (seeds from np.arange, core
parameters from a sweep grid) and results stay JSON-able, sweep settings are refused before any
point runs, and errors survive a trip through a worker process whole."""

import json
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

from conftest import CORPUS

from coexplore.errors import CoexploreError
from coexplore.model.inputs import load_context


def _ctx():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_context(CORPUS / "arches" / "eyeriss_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml",
                            CORPUS / "arches" / "eyeriss_like" / "ERT.yaml")


def _jobs():
    from coexplore.system.jobs import Job, JobTable
    jobs = [Job(name=f"d{i}.l", dnn=f"d{i}", layer="l") for i in range(4)]
    lat = np.array([[100.0, 150.0], [80.0, 60.0], [50.0, 70.0], [30.0, 40.0]])
    return JobTable(jobs, ["a", "b"], lat, np.ones_like(lat), np.ones_like(lat))


def test_a_library_error_names_the_argument_and_the_cli_its_option():
    from coexplore.search.layer import map_layer
    with pytest.raises(CoexploreError) as err:
        map_layer(_ctx(), {}, "random", budget=0, seed=0)
    assert err.value.key == "budget" and "key 'budget'" in str(err.value) and "--budget" not in str(err.value)
    assert "key '--budget'" in err.value.format(cli=True)
    from coexplore.online.stream import Scenario
    with pytest.raises(CoexploreError) as err:
        Scenario(load=0)
    assert (err.value.key, err.value.option) == ("load", "--load")


def test_the_cli_still_names_its_option(capsys):
    from coexplore.cli.main import main
    rc = main(["map", str(CORPUS / "arches" / "eyeriss_like" / "processed.yaml"), str(CORPUS / "layers" / "tiny_conv.yaml"),
               "--budget", "0", "--no-cache", "--no-progress"])
    assert rc == 2 and "'--budget'" in capsys.readouterr().err


def test_an_error_reads_as_its_fields_are_when_a_caller_adds_to_them(tmp_path):
    """Callers re-key and add to an error on its way up (a system file's core, a layer, a pricing
    step); str() (what a Python caller sees) follows its fields as they are when it is read."""
    e = CoexploreError("bad value 7", key="params.dram_width", expected="a multiple")
    e.key, e.expected = "cores[0].params.word_bits", "word_bits dividing the DRAM width"
    e.with_file(tmp_path / "s.yaml")
    assert str(e) == f"{tmp_path / 's.yaml'}: key 'cores[0].params.word_bits': bad value 7 " \
                     "(expected word_bits dividing the DRAM width)"
    from coexplore.arch.system import load_system_arch      # one such caller, end to end
    import yaml
    doc = yaml.safe_load((Path(__file__).parent / "data" / "sweep" / "tiny_sweep.yaml").read_text())
    doc.pop("sweep", None)
    doc["workloads"] = []
    doc["system"]["cores"][0]["params"]["word_bits"] = 7          # 64-bit DRAM words: 7 does not divide them
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(CoexploreError) as err:
        load_system_arch(tmp_path / "s.yaml")
    assert err.value.key.endswith(".params.word_bits") and f"key '{err.value.key}'" in str(err.value)


def test_errors_pickle_whole_with_their_subclass_fields():
    from coexplore.search.layer import NoValidMapping
    e = NoValidMapping(7, [("capacity of X", 3)])
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is NoValidMapping and back.samples == 7 and back.reasons == [("capacity of X", 3)]
    assert str(back) == str(e) and back.format(cli=True) == e.format(cli=True)
    plain = CoexploreError("m", file="f.yaml", key="budget", expected="x", option="--budget")
    assert CoexploreError.from_parts(plain.parts()).format(cli=True) == "f.yaml: key '--budget': m (expected x)"


def test_a_numpy_seed_runs_as_its_int_with_a_cache_and_json(tmp_path):
    from coexplore.model.cache import ResultCache
    from coexplore.search.layer import map_layer
    from coexplore.system.schedule import search_schedule
    ctx = _ctx()
    with ResultCache(tmp_path / "c.sqlite") as cache:
        a = map_layer(ctx, {}, "random", budget=100, seed=np.int64(3), cache=cache)
        b = map_layer(ctx, {}, "random", budget=100, seed=3, cache=cache)
    assert b.cached and b.x == a.x and type(a.seed) is int
    json.dumps(a.to_dict())
    table = _jobs()
    s = search_schedule(table, 16.0, budget=100, seed=np.int64(2))
    assert s.makespan == search_schedule(table, 16.0, budget=100, seed=2).makespan
    json.dumps(s.to_json(table))


@pytest.mark.parametrize("seed", [-1, 1.5, "0", True])
def test_bad_seeds_are_named(seed):
    from coexplore.search.layer import map_layer
    with pytest.raises(CoexploreError, match="seed"):
        map_layer(_ctx(), {}, "random", budget=10, seed=seed)


def test_online_seeds_are_checked():
    from coexplore.online.models import served_system
    from coexplore.online.stream import Scenario, poisson_stream
    from coexplore.online.train import TrainSettings
    system = served_system(_jobs(), 16.0)
    a = poisson_stream(system, Scenario(requests=10), np.int64(4))
    assert np.array_equal(a.arrival, poisson_stream(system, Scenario(requests=10), 4).arrival)
    for bad in (None, -1, 2.5):
        if bad is not None:                 # (None: an unseeded stream, as map_layer and search_schedule take it)
            with pytest.raises(CoexploreError, match="seed"):
                poisson_stream(system, Scenario(requests=10), bad)
        with pytest.raises(CoexploreError, match="seed"):
            TrainSettings(seed=bad)


@pytest.mark.parametrize("field, value", [("budget", 0), ("layer_budget", -1), ("seed", -1), ("layer_seed", 1.5),
                                          ("searcher", "nope"), ("layer_mapper", "nope"), ("workers", -1)])
def test_sweep_settings_are_refused_before_any_point_runs(field, value):
    from coexplore.sweep.run import SweepSettings
    with pytest.raises(CoexploreError) as err:
        SweepSettings(**{field: value})
    assert err.value.key in (field, "searcher")


def test_sweep_settings_take_numpy_integers_and_mapper_names():
    from coexplore.search.registry import MapperSpec
    from coexplore.sweep.run import SweepSettings
    s = SweepSettings(layer_budget=np.int64(50), budget=200.0, seed=np.int64(1), layer_mapper="random")
    assert (s.layer_budget, s.budget, s.seed) == (50, 200, 1) and type(s.budget) is int
    assert isinstance(s.layer_mapper, MapperSpec) and s.layer_mapper.searcher == "random"


def test_numpy_integers_as_core_parameters_and_batch_sizes():
    from coexplore.arch.core import build_core
    from coexplore.search.registry import mapper_spec
    assert build_core("simba", {"pe_mesh_x": np.int64(4)}).params.pe_mesh_x == 4 == \
        build_core("simba", {"pe_mesh_x": 4}).params.pe_mesh_x
    with pytest.raises(CoexploreError, match="wrong type"):
        build_core("simba", {"pe_mesh_x": 4.0})
    assert type(mapper_spec("random", batch_size=np.int64(10)).batch_size) is int


def test_paths_and_names_where_objects_are_expected(tmp_path):
    """A file's path (or a bundled name) is read as the object it holds: constraints files and a
    cache file for map_layer, a system YAML for run_sweep and core_model, a workload name, a
    heuristic's name for simulate; the wrong kind of object is named, not a Python error."""
    from coexplore.model.cache import ResultCache
    from coexplore.search.layer import map_layer
    from coexplore.spec.constraints import load_constraints
    from coexplore.spec.workload import load_workload
    ctx = _ctx()
    files = CORPUS / "arches" / "eyeriss_like" / "constraints.yaml"
    by_path = map_layer(ctx, str(files), "random", budget=60, seed=1, cache=tmp_path / "c.sqlite")
    with ResultCache(tmp_path / "c.sqlite") as cache:
        by_dict = map_layer(ctx, load_constraints(ctx.arch, files, ctx.problem), "random", budget=60, seed=1, cache=cache)
    assert by_dict.cached and by_dict.x == by_path.x                 # the same run, the same cache entry
    with pytest.raises(CoexploreError, match="Architecture"):
        load_constraints(str(files))
    assert load_workload("resnet50").name == "resnet50"
    from coexplore.arch.system import load_system_arch
    from coexplore.bundled import resolve
    from coexplore.system.from_system import core_model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        named = core_model("simba", "simba")
        given = core_model(load_system_arch(resolve("arch", "simba")), "simba")
    assert named.context_arch.level_names() == given.context_arch.level_names() and named.name == given.name
    from coexplore.online.models import served_system
    from coexplore.online.schedulers import heuristic
    from coexplore.online.simulator import simulate
    from coexplore.online.stream import Scenario, poisson_stream
    system = served_system(_jobs(), 16.0)
    stream = poisson_stream(system, Scenario(requests=20), 0)
    assert simulate(system, stream, "edf").sla_rate == simulate(system, stream, heuristic("edf")).sla_rate
    with pytest.raises(CoexploreError, match="learned policy"):
        heuristic("relmas")
    with pytest.raises(CoexploreError, match="scheduler"):
        simulate(system, stream, 3)


def test_run_sweep_reads_a_system_path_and_names_a_wrong_store(tmp_path):
    from coexplore.sweep.run import SweepSettings, run_sweep
    with pytest.raises(CoexploreError) as err:
        run_sweep(Path(__file__).parent / "data" / "sweep" / "tiny_sweep.yaml", SweepSettings(), str(tmp_path))
    assert err.value.key == "store" and "SweepStore" in err.value.expected
    assert not any(tmp_path.iterdir())


def test_what_a_notebook_shows_of_searchers_caches_and_stores(tmp_path):
    from coexplore.model.cache import ResultCache
    from coexplore.search.registry import make_searcher, mapper_spec
    from coexplore.search.space import DiscreteSpace
    from coexplore.sweep.store import SweepStore
    s = make_searcher(mapper_spec("random"), DiscreteSpace(np.array([3, 4]), ["a", "b"]), 5)
    x = s.ask(4)
    s.tell(x, np.array([4.0, 2.0, 3.0, 5.0]))
    assert repr(s).endswith("(samples=4, best_loss=2, seed=5)") and " at 0x" not in repr(s)
    with ResultCache(tmp_path / "c.sqlite") as cache:
        assert repr(cache) == f"ResultCache({str(tmp_path / 'c.sqlite')!r}, hits=0, misses=0)"
    assert repr(SweepStore(tmp_path / "s", "k")) == f"SweepStore({str(tmp_path / 's')!r}, 'k', 0 points)"


def test_a_wrong_kind_of_argument_is_named_not_an_attribute_error(tmp_path):
    """A second user study: a string where a Context goes, raw YAML where parsed constraints go, a
    number where a path goes: each a CoexploreError naming the argument."""
    from coexplore.arch.system import load_system_arch
    from coexplore.mapspace import MapSpace
    from coexplore.search import registry
    from coexplore.search.layer import map_layer
    from coexplore.spec.workload import write_problem
    ctx = _ctx()
    calls = [(lambda: map_layer("ctx", {}, "random", 10), "ctx"),
             (lambda: map_layer(ctx, {"DRAM": {"factors": "K=1"}}, "random", 10), "constraints"),
             (lambda: MapSpace(ctx.arch, ctx.problem, "constraints.yaml"), "constraints"),
             (lambda: load_context(123, 456), "arch_path"),
             (lambda: load_context(CORPUS / "layers" / "tiny_conv.yaml", 456), "problem_path"),
             (lambda: load_system_arch({"system": {}}), "path"),
             (lambda: write_problem({"name": "l"}, tmp_path / "p.yaml"), "layer"),
             (lambda: registry.make_searcher("random", np.zeros(3)), "space")]
    for call, key in calls:
        with pytest.raises(CoexploreError) as err:
            call()
        assert err.value.key == key, (key, str(err.value))
    assert not (tmp_path / "p.yaml").exists()
    space = MapSpace(ctx.arch, ctx.problem, None)          # None and a MapSpace stay accepted
    assert registry.make_searcher("random", space).name == "random"


def test_a_plugin_searcher_of_the_wrong_shape_is_told_what_is_wrong():
    """A registration that is no (Searcher, config dataclass) pair, an ask answering None or out of
    the space: one error naming the registration or the searcher, not a traceback from inside."""
    from dataclasses import dataclass

    from coexplore.search import registry
    from coexplore.search.base import Searcher
    from coexplore.search.layer import map_layer

    @dataclass
    class NoOptions:
        pass

    class Bad(Searcher):
        name = "bad"

        def __init__(self, space, config=None, seed=0):
            super().__init__(seed)
            self.space = space

        def ask(self, n):
            return None

    class Far(Bad):
        def ask(self, n):
            return np.full((n, len(self.space.cardinalities)), 10 ** 6)

    ctx = _ctx()
    entries = {"t_pair_none": (Bad, None), "t_alone": Bad, "t_none": (Bad, NoOptions), "t_far": (Far, NoOptions)}
    try:
        registry.SEARCHERS.update(entries)
        for name in ("t_pair_none", "t_alone"):
            with pytest.raises(CoexploreError, match=r"\(a Searcher subclass, its config dataclass\)") as err:
                map_layer(ctx, None, name, 20)
            assert err.value.key == f"SEARCHERS['{name}']"
        with pytest.raises(CoexploreError, match=r"searcher 'bad' answered ask\(20\) with NoneType") as err:
            map_layer(ctx, None, "t_none", 20)
        with pytest.raises(CoexploreError, match="searcher 'bad' proposed candidates the space refuses: .*out of range"):
            map_layer(ctx, None, "t_far", 20)
    finally:
        for name in entries:
            registry.SEARCHERS.pop(name, None)


def test_schedule_arguments_of_the_wrong_kind_are_named():
    """A bandwidth given as text is refused like every other number (it was read as one); a 1-D
    latency array is said to be 1-D (not an empty workload); mismatched tables name the one at fault."""
    from coexplore.system.jobs import Job, JobTable
    from coexplore.system.schedule import search_schedule
    jobs = [Job(name=f"d{i}.l", dnn=f"d{i}", layer="l") for i in range(4)]
    with pytest.raises(CoexploreError, match="got str '16'") as err:
        search_schedule(_jobs(), "16", "magma", 50, 0)
    assert err.value.key == "bandwidth"
    assert search_schedule(_jobs(), np.float32(16), "random", 50, 0).makespan > 0
    with pytest.raises(CoexploreError, match=r"1 dimension\(s\)") as err:
        JobTable(jobs, ["a"], np.array([1.0, 2, 3, 4]), np.ones(4))
    assert err.value.key == "latency" and "[jobs, 1]" in str(err.value)
    with pytest.raises(CoexploreError, match="differ in shape") as err:
        JobTable(jobs, ["a", "b"], np.ones((4, 2)), np.ones((3, 2)))
    assert err.value.key == "bandwidth"


def test_a_schedule_space_samples_as_a_layer_space_does():
    """ScheduleSpace.sample is its random: one searcher's code draws from either kind of space."""
    from coexplore.system.encoding import space_of
    space = space_of(_jobs())
    a, b = space.sample(np.random.default_rng(3), 5), space.random(np.random.default_rng(3), 5)
    assert np.array_equal(a, b) and space.check(a).shape == (5, 8)
