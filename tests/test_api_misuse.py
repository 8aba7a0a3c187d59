"""Plausible misuse of the Python API (found by a user study) is one CoexploreError naming the
argument, never an AttributeError/TypeError from deep inside; and a path is taken where the CLI
takes one."""

from pathlib import Path

import numpy as np
import pytest

from coexplore.errors import CoexploreError

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "timeloop_corpus"


@pytest.fixture(scope="module")
def ctx():
    from coexplore.model.inputs import load_context
    return load_context(CORPUS / "arches" / "simba_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml")


def _table():
    from coexplore.system.jobs import Job, JobTable
    return JobTable([Job("a.l1", dnn="a", layer="l1"), Job("b.l1", dnn="b", layer="l1")], ["x", "y"],
                    [[100.0, 90.0], [200.0, 50.0]], [[1.0, 1.0], [1.0, 2.0]])


def test_search_driver_and_tell(ctx):
    from coexplore.search.base import run_search
    from coexplore.search.registry import make_searcher
    from coexplore.search.space import DiscreteSpace
    space = DiscreteSpace(np.array([3, 4]), ["a", "b"])
    for bad in (None, "ga"):
        with pytest.raises(CoexploreError, match="searcher"):
            run_search(bad, lambda x: np.ones(len(x)), budget=10)
    s = make_searcher("random", space, 0)
    with pytest.raises(CoexploreError, match="objective"):
        run_search(s, 5, budget=10)
    with pytest.raises(CoexploreError, match="batch"):
        s.tell(None, [1.0])
    x = s.ask(2)
    with pytest.raises(CoexploreError, match="complex"):
        s.tell(x, np.array([1 + 2j, 1.0]))


def test_model_calls(ctx):
    from coexplore.search.layer import map_layer
    for bad in (None, 3, [{"mapping": []}]):
        with pytest.raises(CoexploreError, match="mappings"):
            ctx.evaluate_mappings(bad)
    with pytest.raises(CoexploreError, match="res"):
        ctx.record(None)
    with pytest.raises(CoexploreError, match="cache"):
        map_layer(ctx, None, "random", budget=100, cache=True)
    with pytest.raises(CoexploreError, match="objective"):
        map_layer(ctx, None, "random", budget=100, objective="")


def test_pareto_front_takes_objective_names_and_refuses_ragged_rows():
    from coexplore.sweep.pareto import pareto_front
    assert pareto_front([[1, 2], [2, 1], [3, 3]], ["latency", "area"]).tolist() == [True, True, False]
    for bad in ([[1, 2, 3]], [[1], [2, 3]], [["a", "b"]]):
        with pytest.raises(CoexploreError, match="values"):
            pareto_front(bad, ["latency", "area"])
    with pytest.raises(CoexploreError, match="objectives"):
        pareto_front([[1, 2]], ["latency", "speed"])


def test_online_entry_points(tmp_path):
    from coexplore.online.models import served_system
    from coexplore.online.policy import FEATURES, LearnedScheduler, Policy, load_policy
    from coexplore.online.stream import Scenario
    from coexplore.system.tables import save_table
    save_table(_table(), tmp_path / "jobs.csv")
    assert [m.name for m in served_system(tmp_path / "jobs.csv", 10).models] == ["a", "b"]   # a path, as schedule
    with pytest.raises(CoexploreError, match="table"):
        served_system(None, 10)
    Policy(np.ones(len(FEATURES))).save(tmp_path / "p.json")
    assert LearnedScheduler(tmp_path / "p.json").policy.weights.tolist() == [1.0] * len(FEATURES)
    for bad, where in ((lambda: LearnedScheduler(None), "policy"), (lambda: load_policy(None), "path"),
                       (lambda: Scenario(load=1.2, requests=50, slack=2), "slack"),
                       (lambda: Scenario(load="1"), "load")):
        with pytest.raises(CoexploreError) as e:
            bad()
        assert e.value.key == where


def test_estimate_component_attributes_must_be_a_mapping():
    from coexplore.energy import estimate_component
    with pytest.raises(CoexploreError, match="attributes"):
        estimate_component("SRAM", [64, 128])


def test_threads_may_read_one_file_at_once():
    """User study: the files being read were one list for every thread, so two threads reading one
    file were refused as an include loop ('mappers/ga.yaml includes itself'), 190 of 200 calls."""
    from concurrent.futures import ThreadPoolExecutor

    from coexplore.bundled import bundled_dir
    from coexplore.spec.yamlio import load_yaml
    path = bundled_dir("mappers") / "ga.yaml"
    with ThreadPoolExecutor(8) as pool:
        docs = list(pool.map(lambda _: load_yaml(path), range(400)))
    assert all(d == docs[0] for d in docs) and docs[0]["searcher"] == "ga"


def test_a_job_table_names_each_job_once():
    """User study: JobTable took two jobs named 'a'; save_table then wrote a file load_table refuses."""
    import numpy as np

    from coexplore.errors import CoexploreError
    from coexplore.system.jobs import Job, JobTable
    with pytest.raises(CoexploreError, match="job 'a' is named twice") as e:
        JobTable([Job("a"), Job("a"), Job("c")], ["x"], np.ones((3, 1)), np.ones((3, 1)))
    assert e.value.key == "jobs"


def test_swapped_arguments_and_out_of_range_schedules_are_named(ctx, tmp_path):
    """User study: MapSpace(problem, arch) and simulate(stream, system, ...) gave AttributeErrors from
    deep inside; MakespanObjective scored a genome outside the space by clamping it."""
    from coexplore.mapspace.space import MapSpace
    from coexplore.online.models import served_system
    from coexplore.online.simulator import simulate
    from coexplore.online.stream import Scenario, poisson_stream
    from coexplore.system.encoding import MakespanObjective
    with pytest.raises(CoexploreError) as e:
        MapSpace(ctx.problem, ctx.arch)
    assert e.value.key == "arch" and "Problem" in str(e.value)
    system = served_system(_table(), 10)
    stream = poisson_stream(system, Scenario(load=0.5, requests=20), 0)
    with pytest.raises(CoexploreError) as e:
        simulate(stream, system, "fcfs")
    assert e.value.key == "system"
    assert len(simulate(system, stream, "fcfs").finish) == 20
    obj = MakespanObjective(_table(), 10)
    ok = np.array([[0, 1, 0.5, 0.5]])
    assert np.isfinite(obj(ok)).all()
    for bad in ([[5, 1, 0.5, 0.5]], [[0, 1, 1.5, 0.5]], [[0, 1, 0.5]]):
        with pytest.raises(CoexploreError, match="batch"):
            obj(np.array(bad))
    with pytest.raises(CoexploreError, match="bandwidth"):
        MakespanObjective(_table(), 0)


def test_an_unseeded_stream_is_another_each_call():
    from coexplore.online.models import served_system
    from coexplore.online.stream import Scenario, poisson_stream
    system = served_system(_table(), 10)
    a, b = (poisson_stream(system, Scenario(load=0.5, requests=50), None) for _ in range(2))
    assert not np.array_equal(a.arrival, b.arrival)


def test_a_plain_spaces_candidates_are_checked_before_the_objective_sees_them():
    """User study: with a plain DiscreteSpace, out-of-range or too-narrow candidates reached the
    user's objective (wrong numbers, or its own IndexError) before `tell` refused them."""
    from coexplore.search.base import Searcher, run_search
    from coexplore.search.space import DiscreteSpace
    space, seen = DiscreteSpace(np.array([4, 6]), ["a", "b"]), []

    class Mine(Searcher):
        name = "mine"

        def __init__(self, sp, cut=None):
            super().__init__(0)
            self.space, self.cut = sp, cut

        def ask(self, n):
            x = self.space.sample(self.rng, n)
            if self.cut is None:
                x[:, 1] = 6                          # one past the last value
            return x if self.cut is None else x[:, :self.cut]

    for s in (Mine(space), Mine(space, cut=1)):
        with pytest.raises(CoexploreError, match="searcher 'mine' proposed candidates the space refuses"):
            run_search(s, lambda b: seen.append(b) or np.ones(len(b)), budget=10)
    assert seen == []


def test_online_numbers_are_checked_where_they_are_given():
    """User study: simulate's seed went to random.Random unchecked (-3 repeated seed 3), a whole
    float request count failed inside numpy, TrainSettings leaked ValueError/TypeError or took lr=inf."""
    from coexplore.online.simulator import simulate
    from coexplore.online.stream import Scenario
    from coexplore.online.train import TrainSettings
    assert Scenario(requests=2.0).requests == 2 and isinstance(Scenario(requests=np.int64(3)).requests, int)
    for bad in (float("nan"), 2.5):
        with pytest.raises(CoexploreError, match="requests"):
            Scenario(requests=bad)
    for kw in ({"generations": np.nan}, {"generations": None}, {"sigma": "x"}, {"lr": np.inf}, {"streams": True}):
        with pytest.raises(CoexploreError) as err:
            TrainSettings(**kw)
        assert err.value.key == next(iter(kw))
    assert TrainSettings(generations=3.0).generations == 3
    with pytest.raises(CoexploreError, match="seed"):
        simulate(None, None, "fcfs", seed=-3)      # (checked first: before the system and the stream)


def test_the_system_evaluator_checks_its_tables_against_each_other():
    """User study: a bandwidth table of 3 jobs beside a latency table of 4 gave an IndexError, and a
    boolean core array was read as cores 1 and 0."""
    from coexplore.system.evaluator import evaluate, trace
    lat, bw = np.full((4, 2), 10.0), np.ones((4, 2))
    assert np.isfinite(evaluate(lat, bw, 2, [0, 1, 0, 1], [0, 0, 0, 0]).makespan).all()
    for args, key in (((lat, bw[:3], 2, [0, 1, 0, 1], [0, 0, 0, 0]), "bandwidth_need"),
                      ((lat, bw, 2, [True, False, True, False], [0, 0, 0, 0]), "core"),
                      ((lat[0], bw, 2, [0, 1, 0, 1], [0, 0, 0, 0]), "latency")):
        with pytest.raises(CoexploreError) as err:
            evaluate(*args)
        assert err.value.key == key
    with pytest.raises(CoexploreError, match="energy"):
        evaluate(lat, bw, 2, [0, 1, 0, 1], [0, 0, 0, 0], energy=np.ones((3, 2)))
    with pytest.raises(CoexploreError, match="bandwidth_need"):
        trace(lat, bw[:, :1], 2, [0, 1, 0, 1], [0, 0, 0, 0])
