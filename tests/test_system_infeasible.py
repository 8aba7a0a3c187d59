"""A layer some core cannot run (no valid mapping there): its latency on that core is inf and
every scheduler keeps its jobs off that core, instead of the whole schedule failing."""

import warnings

import numpy as np
import pytest

from coexplore.errors import CoexploreError, CoexploreWarning
from coexplore.system.encoding import space_of
from coexplore.system.heuristics import heuristic_schedule
from coexplore.system.jobs import Job, JobTable
from coexplore.system.schedule import search_schedule
from coexplore.system.tables import load_table, save_table

INF = np.inf
LAT = np.array([[10.0, INF, 30.0], [5.0, 6.0, INF], [INF, INF, 7.0], [4.0, 4.0, 4.0]])


def _table(lat=LAT):
    jobs = [Job(name=f"j{i}", dnn="d", layer=f"l{i}") for i in range(len(lat))]
    return JobTable(jobs, ["a", "b", "c"], lat, np.where(np.isfinite(lat), 1.0, 0.0))


def test_every_candidate_runs_each_job_where_it_can():
    space = space_of(_table())
    x = space.random(np.random.default_rng(0), 500)
    core, _ = space.split(x)
    assert np.isfinite(LAT[np.arange(4)[None, :], core]).all()
    # a core the job can run on is kept as chosen; the others go to the job's fastest core
    assert set(core[:, 3]) == {0, 1, 2} and set(core[:, 2]) == {2}
    assert space_of(_table(np.ones((2, 3)))).remap is None        # (nothing to remap: as before)


@pytest.mark.parametrize("name", ["fcfs-met", "sjf-met", "fcfs-rr", "fcfs-greedy", "heft-heft", "sjf-rr",
                                  "heft-greedy", "fcfs-heft"])
def test_heuristics_put_no_job_where_it_cannot_run(name):
    core, _ = heuristic_schedule(LAT, name)
    assert np.isfinite(LAT[np.arange(4), core]).all()


@pytest.mark.parametrize("searcher", ["magma", "random", "stdga", "cma", "fcfs-rr"])
def test_schedules_are_finite_and_no_shorter_than_the_bound(searcher):
    t = _table()
    res = search_schedule(t, 100.0, searcher, 300, 0)
    assert np.isfinite(res.makespan) and res.makespan >= res.lower_bound
    assert np.isfinite(t.latency[np.arange(4), res.core]).all()
    assert res.makespan >= 10                     # j0 on a (10) or c (30)


def test_a_job_no_core_can_run_is_refused_and_inf_reads_back(tmp_path):
    with pytest.raises(CoexploreError, match="can run on no core"):
        _table(np.array([[INF, INF, INF], [1.0, 1.0, 1.0]]))
    save_table(_table(), tmp_path / "t.csv")
    assert np.array_equal(load_table(tmp_path / "t.csv").latency, LAT)
    # energies: where a job cannot run it has none (nan); the others' are kept and read back
    t = _table()
    t = JobTable(t.jobs, t.cores, t.latency, t.bandwidth, np.where(np.isfinite(LAT), 2.0 * LAT, np.nan))
    save_table(t, tmp_path / "e.csv")
    back = load_table(tmp_path / "e.csv")
    assert back.has_energy() and np.array_equal(np.isnan(back.energy), np.isinf(LAT))
    assert np.array_equal(back.energy[np.isfinite(LAT)], 2.0 * LAT[np.isfinite(LAT)])


def _two_layer_system(tmp_path):
    (tmp_path / "sys.yaml").write_text(
        "system:\n  name: tiny2\n  technology: 45nm\n  dram: {bandwidth_GBps: 25.6}\n  cores:\n"
        "  - {name: eyeriss, template: eyeriss, params: {}}\n"
        "  - {name: tiny, template: simba, params: {glb_depth: 8, input_buffer_depth: 2, weight_buffer_depth: 2,"
        " accu_buffer_depth: 1}}\n")
    (tmp_path / "wl.yaml").write_text(
        "workload:\n  name: two\n  layers:\n  - {name: small, instance: {C: 16, M: 16, R: 1, S: 1, P: 4, Q: 4}}\n"
        "  - {name: big, instance: {C: 64, M: 64, R: 3, S: 3, P: 28, Q: 28}}\n")
    return tmp_path / "sys.yaml", tmp_path / "wl.yaml"


def test_a_core_too_small_for_a_layer_keeps_it_off(tmp_path):
    """A heterogeneous system whose tiny Simba-like core fits only the small layer: the job table
    has inf there, the schedule puts the large layer on the Eyeriss-like core (a warning says so)."""
    from coexplore.system.from_system import system_job_table
    sys_file, wl = _two_layer_system(tmp_path)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        table, _ = system_job_table(sys_file, [wl], layer_budget=200)
    assert any("layer big has no valid mapping on core tiny" in str(w.message) for w in said
               if issubclass(w.category, CoexploreWarning))
    lat = dict(zip([j.layer for j in table.jobs], table.latency))
    assert np.isfinite(lat["big"][0]) and lat["big"][1] == INF and np.isfinite(lat["small"]).all()
    res = search_schedule(table, 25.6, "magma", 200, 0)
    assert table.cores[res.core[[j.layer for j in table.jobs].index("big")]] == "eyeriss"


LAT2 = np.array([[np.inf, 2.0, 3.0], [1.0, np.inf, 1.0], [2.0, 2.0, np.inf], [1.0, 1.0, 1.0]])


@pytest.mark.parametrize("name", ["fcfs-greedy", "sjf-greedy", "heft-greedy", "fcfs-rr", "fcfs-heft", "fcfs-met"])
def test_heuristics_keep_a_job_off_a_core_it_cannot_run_on_even_when_that_core_is_idle(name):
    """Mutant H2 (GREEDY picks the least busy core whatever the job): the first job cannot run on
    core 0, which is idle when it is placed."""
    from coexplore.system.heuristics import heuristic_schedule
    core, _ = heuristic_schedule(LAT2, name)
    assert np.isfinite(LAT2[np.arange(len(LAT2)), core]).all()


def test_heft_ranks_jobs_by_their_mean_over_the_cores_they_can_run_on():
    """Mutant H1 (mean over every core: inf for a job that cannot run somewhere): LAT2's means over
    runnable cores are 2.5, 1, 2, 1 -> priorities in that order (ties in job order)."""
    from coexplore.system.heuristics import heuristic_schedule
    _, priority = heuristic_schedule(LAT2, "heft-heft")
    assert list(np.argsort(priority, kind="stable")) == [1, 3, 2, 0]


def test_a_nan_latency_is_refused():
    """Mutant J1 (NaN no longer refused): inf now means 'cannot run there', NaN means nothing."""
    from coexplore.system.jobs import Job, JobTable
    jobs = [Job(name=f"j{i}", dnn="d", layer=f"l{i}") for i in range(2)]
    with pytest.raises(CoexploreError, match="latency of job j0"):
        JobTable(jobs, ["a", "b"], np.array([[np.nan, 1.0], [1.0, 1.0]]), np.zeros((2, 2)))


def test_a_layer_no_core_can_map_is_named_not_one_another_core_runs(tmp_path, monkeypatch):
    """Mutant F2 (`any` for `all`): `small` fails on core tiny only and runs on eyeriss; `big`
    fails everywhere. The error names big, the layer no core can run, not small."""
    from coexplore.search.layer import NoValidMapping
    from coexplore.system import from_system
    real = from_system.map_layer

    def fake(ctx, *args, **kwargs):
        name, core = ctx.problem.name, ctx.arch.name
        if "big" in name or ("small" in name and "tiny" in core):
            raise NoValidMapping(7, [])
        return real(ctx, *args, **kwargs)
    monkeypatch.setattr(from_system, "map_layer", fake)
    sys_file, wl = _two_layer_system(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(NoValidMapping) as err:
            from_system.system_job_table(sys_file, [wl], layer_budget=50)
    assert "layer big" in str(err.value) and "layer small" not in str(err.value)
