"""Space validation, mapper YAML round trips, objective selection, error reporting."""

from pathlib import Path

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.search.losses import LossTransform
from coexplore.search.marl import MARLConfig
from coexplore.search.registry import (SEARCHERS, load_mapper, make_searcher, mapper_from_dict,
                                       mapper_spec, objective_loss, save_mapper)
from coexplore.search.space import DiscreteSpace

ROOT = Path(__file__).resolve().parents[1]


def test_space_sampling_in_range_and_uniform():
    space = DiscreteSpace(np.array([2, 5, 7]), ["a", "b", "c"])
    x = space.sample(np.random.default_rng(0), 70_000)
    assert x.min() == 0 and np.all(x.max(axis=0) == space.cardinalities - 1)
    counts = np.bincount(x[:, 2], minlength=7)
    assert np.all(np.abs(counts / 70_000 - 1 / 7) < 0.01)
    assert space.size == 70


def test_space_ravel_roundtrip_and_big_space_keys():
    space = DiscreteSpace(np.array([3, 4, 5]), ["a", "b", "c"])
    idx = np.arange(space.size)
    assert np.array_equal(space.ravel(space.unravel(idx)), idx)
    big = DiscreteSpace(np.full(40, 20), [f"p{i}" for i in range(40)])
    assert big.size == 20 ** 40
    x = big.sample(np.random.default_rng(1), 3)
    assert len(set(big.keys(np.concatenate([x, x])))) == 3


@pytest.mark.parametrize("kwargs,key", [
    (dict(cardinalities=np.array([2, 0]), names=["a", "b"]), "cardinalities"),
    (dict(cardinalities=np.array([2, 3]), names=["a"]), "names"),
    (dict(cardinalities=np.array([2, 3]), names=["a", "b"], groups=[[0, 0]]), "groups"),
    (dict(cardinalities=np.array([2.5, 3]), names=["a", "b"]), "cardinalities"),
])
def test_space_rejects_bad_input(kwargs, key):
    with pytest.raises(CoexploreError) as e:
        DiscreteSpace(**kwargs)
    assert e.value.key == key


def test_space_check_rejects_out_of_range():
    space = DiscreteSpace(np.array([2, 3]), ["a", "b"])
    with pytest.raises(CoexploreError):
        space.check(np.array([[0, 3]]))


MINE = ["random", "ga", "sa", "rl", "ppo", "marl", "marl_noclust", "exhaustive"]


@pytest.mark.parametrize("name", MINE)
def test_shipped_mapper_yaml_loads_and_matches_defaults(name):
    spec = load_mapper(ROOT / "mappers" / f"{name}.yaml")
    assert spec.searcher == name and spec.objective == "edp"
    assert spec.config == SEARCHERS[name][1]()


def test_mapper_roundtrip_with_changed_values(tmp_path):
    spec = mapper_spec("marl", MARLConfig(lr=0.05, warmup=321, leftovers="joint", critic=False),
                       objective="latency", batch_size=250)
    save_mapper(spec, tmp_path / "m.yaml")
    back = load_mapper(tmp_path / "m.yaml")
    assert back.config == spec.config and back.objective == "latency" and back.batch_size == 250


@pytest.mark.parametrize("data,key", [
    ({"searcher": "nope"}, "searcher"),
    ({"searcher": "marl", "config": {"lrr": 0.1}}, "config.lrr"),
    ({"searcher": "marl", "config": {"warmup": "many"}}, "config.warmup"),
    ({"searcher": "marl", "config": {"conditional": 1}}, "config.conditional"),
    ({"searcher": "marl", "objective": "area"}, "objective"),
    ({"searcher": "marl", "batch_size": 0}, "batch_size"),
    ({"searcher": "marl", "batch_size": 10_000_000}, "batch_size"),
    ({"searcher": "ga", "colour": "red"}, "colour"),
    ({"objective": "edp"}, "searcher"),
])
def test_bad_mapper_configs_name_the_key(data, key):
    with pytest.raises(CoexploreError) as e:
        mapper_from_dict(data, file="m.yaml")
    assert e.value.key == key and e.value.file == "m.yaml"


def test_missing_and_broken_yaml(tmp_path):
    with pytest.raises(CoexploreError):
        load_mapper(tmp_path / "missing.yaml")
    p = tmp_path / "bad.yaml"
    p.write_text("searcher: [marl\n")
    with pytest.raises(CoexploreError) as e:
        load_mapper(p)
    assert e.value.file == str(p)


def test_unknown_clustering_and_crossover_raise_at_first_ask():
    space = DiscreteSpace(np.array([3, 3]), ["a", "b"])
    s = make_searcher(mapper_spec("marl", MARLConfig(clustering="kmeans")), space)
    with pytest.raises(CoexploreError):
        s.ask(4)
    spec = mapper_spec("ga")
    spec.config.crossover = "two-point"
    with pytest.raises(CoexploreError):
        make_searcher(spec, space).ask(4)


def test_exhaustive_refuses_huge_space():
    space = DiscreteSpace(np.full(30, 10), [f"p{i}" for i in range(30)])
    s = make_searcher("exhaustive", space)  # construction does nothing
    with pytest.raises(CoexploreError):
        s.ask(10)


def test_objective_loss_selects_metric():
    m = {"energy": np.array([2.0, 3.0, np.nan]), "cycles": np.array([10.0, 1.0, 5.0])}
    assert np.array_equal(objective_loss(m, "edp"), [20.0, 3.0, np.inf])
    assert np.array_equal(objective_loss(m, "energy"), [2.0, 3.0, np.inf])
    lat = objective_loss(m, "latency")
    assert np.array_equal(np.floor(lat[:2]), [10.0, 1.0]) and lat[2] == np.inf   # NaN energy: invalid
    assert np.array_equal(objective_loss({"cycles": m["cycles"]}, "latency"), [10.0, 1.0, 5.0])
    with pytest.raises(CoexploreError):
        objective_loss(m, "area")


def test_latency_ties_go_to_lower_energy():
    """timeloop-mapper's [delay, energy]: the searchers learn from cycles alone, and the best kept
    is the fewest cycles and, among equal cycles, the least energy."""
    from coexplore.search.base import run_search
    from coexplore.search.registry import make_searcher
    m = {"energy": np.array([5.0, 2.0, 3.0, np.nan]), "cycles": np.array([10.0, 10.0, 7.0, 1.0])}
    lat = objective_loss(m, "latency")
    assert np.array_equal(np.asarray(lat), [10.0, 10.0, 7.0, np.inf]) and np.array_equal(lat.tie[:3], [5.0, 2.0, 3.0])
    space = DiscreteSpace(np.array([4, 4]), ["a", "b"])
    cycles = np.array([[3, 2, 2, 9], [2, 5, 9, 9], [9, 9, 9, 9], [9, 9, 9, 9]], float)   # 2 cycles: 4 points
    energy = np.array([[1, 8, 7, 1], [6, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]], float)  # least energy: (1, 0)

    def objective(x):
        return objective_loss({"cycles": cycles[x[:, 0], x[:, 1]], "energy": energy[x[:, 0], x[:, 1]]}, "latency")
    for name in ("exhaustive", "random", "ga"):
        res = run_search(make_searcher(name, space, seed=0), objective, budget=16, batch_size=5)
        assert res.best_loss == 2.0 and tuple(res.best_x) == (1, 0), name

def test_loss_transform_penalises_invalid_below_every_valid():
    t = LossTransform(log=True, margin=0.5)
    out = t(np.array([1.0, np.e ** 2, np.inf, np.nan]))
    assert out[0] == 0.0 and out[1] == pytest.approx(2.0)
    assert out[2] == out[3] == pytest.approx(3.0)   # worst (2) + 0.5 x spread (2)
    with pytest.raises(CoexploreError):
        t(np.array([-1.0]))


@pytest.mark.parametrize("name, option, value", [
    ("ga", "population", 0), ("sa", "chains", 0), ("marl", "warmup_fraction", 5.0),
    ("ga", "crossover_rate", 1.5), ("marl", "epochs", 0), ("marl", "alpha", 2.0),
    ("marl", "critic_shrink", 0.0), ("rl", "lr", 0.0), ("marl", "epochs", 1_000_000_000),
    ("ppo", "epochs", 1001), ("ppo", "hidden", 100_000), ("exhaustive", "max_size", 10 ** 12)])
def test_out_of_range_options_are_refused(name, option, value):
    from coexplore.search.registry import mapper_spec
    with pytest.raises(CoexploreError, match=option):
        mapper_spec(name, {option: value})


def test_mapper_spec_checks_objective_batch_and_seed():
    from coexplore.search.registry import make_searcher, mapper_spec
    from coexplore.search.synthetic import make_small
    with pytest.raises(CoexploreError, match="objective"):
        mapper_spec("ga", objective="edpp")
    with pytest.raises(CoexploreError, match="batch_size"):
        mapper_spec("ga", batch_size=0)
    for seed in (3.0, -1, "1"):
        with pytest.raises(CoexploreError, match="seed"):
            make_searcher("ga", make_small(0).space, seed=seed)


def test_option_choices_are_checked_where_the_file_is_read(tmp_path):
    from coexplore.search import registry
    from coexplore.search.ga import GAConfig
    f = tmp_path / "m.yaml"
    for text, key in (("searcher: marl\nconfig: {clustering: kmeans}\n", "config.clustering"),
                      ("searcher: ga\nconfig: {crossover: banana}\n", "config.crossover"),
                      ("searcher: sa\nconfig: {t_start: 0.001, t_end: 0.01}\n", "config.t_start"),
                      # options that would do nothing, or values a schedule cannot use
                      ("searcher: marl_noclust\nconfig: {clustering: correlation}\n", "config.clustering"),
                      ("searcher: marl\nconfig: {clustering: single, bins: 8}\n", "config.bins"),
                      ("searcher: rl\nconfig: {critic: false}\n", "config.critic"),
                      ("searcher: rl\nconfig: {lr: .inf}\n", "config.lr"),
                      ("searcher: sa\nconfig: {t_start: 0, t_end: 0}\n", "config.t_start"),
                      ("searcher: [marl]\n", "searcher"),
                      # (user study: these did nothing silently)
                      ("searcher: marl\nconfig: {critic: false, critic_window: 500}\n", "config.critic_window"),
                      ("searcher: marl\nconfig: {restart: false, restart_fresh: false}\n", "config.restart_fresh"),
                      ("searcher: marl\nconfig: {imitation: 0.0, imitation_top: 100}\n", "config.imitation_top"),
                      ("searcher: marl\nconfig: {stall: 0, polish: false}\n", "config.polish"),
                      ("searcher: rl\nconfig: {conditional: false, max_table: 1000}\n", "config.max_table"),
                      ("searcher: ga\nconfig: {crossover: groups, crossover_rate: 0.0}\n", "config.crossover"),
                      ("searcher: sa\nconfig: {restart_every: 0, restart_fraction: 0.5}\n", "config.restart_fraction")):
        f.write_text(text)
        with pytest.raises(CoexploreError) as err:
            registry.load_mapper(f)
        assert err.value.key == key and err.value.file == str(f)
    f.write_text("searcher: marl\nconfig: {critic: false, imitation: 0.0, restart: false}\n")
    registry.load_mapper(f)                           # (the options themselves, without the ones they silence)
    for value in GAConfig.CHOICES["crossover"]:      # every listed value is one the searcher runs with
        s = registry.make_searcher(registry.mapper_spec("ga", {"crossover": value}),
                                   DiscreteSpace(np.array([3, 4]), ["a", "b"], groups=[[0], [1]]))
        s.tell(s.ask(10), np.arange(1.0, 11.0))


def test_options_that_would_do_nothing_are_refused_in_code_too():
    """A config built in Python is checked when the searcher starts, as a mapper file is when read."""
    from coexplore.search.marl import MARLConfig
    from coexplore.search.registry import make_searcher, mapper_spec
    from coexplore.search.synthetic import make_small
    s = make_searcher(mapper_spec("marl", MARLConfig(clustering="single", bins=8)), make_small(0).space)
    with pytest.raises(CoexploreError, match="bins"):
        s.ask(10)


def test_an_option_a_budgeted_search_never_reads_is_noted(tmp_path):
    """User study: SA's horizon (its schedule's length when the budget is unknown) did nothing under
    `coexplore map` without a word."""
    import warnings

    from coexplore.errors import CoexploreNote
    from coexplore.model.inputs import load_context
    from coexplore.search.layer import map_layer
    from coexplore.search.registry import mapper_spec
    from conftest import CORPUS
    ctx = load_context(CORPUS / "arches" / "simba_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml")
    for config, noted in (({"horizon": 1}, True), ({}, False)):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            map_layer(ctx, None, mapper_spec("sa", config), budget=100, seed=0)
        said = [w for w in seen if issubclass(w.category, CoexploreNote) and "config.horizon" in str(w.message)]
        assert bool(said) is noted
