"""Schedule settings and summaries: MAGMA config checks, seeds, batches, bounds, units, lines."""

from __future__ import annotations

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.system.jobs import Job, build_job_table
from coexplore.system.magma import MagmaConfig
from coexplore.system.schedule import (ScheduleResult, check_magma_config, search_schedule, summary_lines, _time)


def _table(num_jobs=12, num_cores=3, dnns=("a", "b")):
    jobs = [Job(f"{dnns[j % len(dnns)]}.l{j}", dnn=dnns[j % len(dnns)], layer=f"l{j}") for j in range(num_jobs)]
    lat = lambda job, core: (100.0 + 37.0 * (int(job.layer[1:]) % 5) + 11.0 * (int(core[1:]) % 3), 2.0, 1.0)  # noqa: E731
    return build_job_table(jobs, [f"c{i}" for i in range(num_cores)], lat)


def test_a_population_just_above_the_cap_is_refused():
    from coexplore.system.schedule import MAX_POP
    check_magma_config(MagmaConfig(pop_size=MAX_POP))
    with pytest.raises(CoexploreError, match="too large"):
        check_magma_config(MagmaConfig(pop_size=MAX_POP + 1))


def test_mutation_floor_is_checked_against_the_annealing_start_and_must_lie_below_it():
    check_magma_config(MagmaConfig(p_mutation=0.01, p_mutation_start=0.05, p_mutation_min=0.03))
    with pytest.raises(CoexploreError, match="p_mutation_min"):
        check_magma_config(MagmaConfig(p_mutation=0.01, p_mutation_start=0.05, p_mutation_min=0.05))


@pytest.mark.parametrize("name", ["random", "stdga", "magma-original"])
def test_the_seed_reaches_every_searcher(name):
    t = _table()
    runs = [search_schedule(t, 8.0, name, budget=30, seed=s) for s in (1, 1, 2, 3)]
    assert runs[0].history == runs[1].history and np.array_equal(runs[0].priority, runs[1].priority)
    assert any(not np.array_equal(runs[0].priority, r.priority) for r in runs[2:])


def test_nevergrad_searchers_are_asked_in_rounds_of_ten():
    res = search_schedule(_table(), 8.0, "oneplusone", budget=30, seed=0)
    assert res.history[0][0] == 10 and res.samples == 30


def test_the_lower_bound_is_a_real_bound():
    t = _table()
    res = search_schedule(t, 1e6, "random", budget=20, seed=0)
    longest_fastest = t.latency.min(axis=1).max()            # no job runs faster than on its fastest core
    work = t.latency.min(axis=1).sum() / t.num_cores          # nor can the cores share out less work
    assert res.lower_bound >= max(longest_fastest, work) * (1 - 1e-6)
    assert res.lower_bound <= res.makespan


def test_json_rates_follow_their_units():
    t = _table()
    res = search_schedule(t, 8.0, "random", budget=20, seed=0)
    d = res.to_json(t, clock_GHz=2.0)
    assert d["throughput_jobs_per_cycle"] == pytest.approx(t.num_jobs / d["makespan"])
    assert d["makespan_s"] == pytest.approx(d["makespan"] / 2e9)
    np.testing.assert_allclose(d["compute_utilization"], np.array(d["compute_cycles"]) / d["makespan"])
    np.testing.assert_allclose(d["utilization"], np.array(d["busy_cycles"]) / d["makespan"])


def test_a_dnn_ends_with_its_last_job_whatever_the_job_order():
    jobs = [Job("n.late", dnn="n", layer="a"), Job("n.early", dnn="n", layer="b"), Job("m.x", dnn="m", layer="x")]
    t = build_job_table(jobs, ["c0", "c1"], lambda job, core: ({"a": 500.0, "b": 10.0, "x": 50.0}[job.layer], 0.0, 0.0))
    res = ScheduleResult("x", 0, 16.0, 1, np.array([0, 1, 1]), np.array([0.0, 0.0, 1.0]), 500.0, 0.0,
                         np.array([500.0, 60.0]))
    assert res.to_json(t)["dnn_end"] == {"n": 500.0, "m": 60.0}


def test_one_dnn_gets_no_dnns_done_line():
    t = _table(dnns=("only",))
    res = search_schedule(t, 8.0, "random", budget=10, seed=0)
    assert not any(line.startswith("DNNs done") for line in summary_lines(t, res))


def test_a_summary_of_exactly_the_core_limit_lists_every_core():
    from coexplore.system.schedule import SUMMARY_CORES
    t = _table(num_jobs=4, num_cores=SUMMARY_CORES)
    res = search_schedule(t, 8.0, "random", budget=5, seed=0)
    text = "\n".join(summary_lines(t, res))
    assert "more cores" not in text
    assert all(f"  {c} " in text for c in t.cores)


@pytest.mark.parametrize("seconds, text", [(1.0, "1 s"), (1e-3, "1 ms"), (1e-6, "1 us")])
def test_times_at_a_unit_boundary_use_that_unit(seconds, text):
    assert _time(seconds) == text


def test_a_mapper_yaml_budget_is_kept_and_zero_is_refused(tmp_path):
    from coexplore.system.schedule import load_system_mapper
    f = tmp_path / "m.yaml"
    f.write_text("searcher: random\nbudget: 123\n")
    assert load_system_mapper(f).budget == 123
    f.write_text("searcher: random\nbudget: 0\n")
    with pytest.raises(CoexploreError, match="budget"):
        load_system_mapper(f)


# ------------------------------------------------------------------ annealing from a start of 0
@pytest.mark.parametrize("option", ["p_mutation_start", "parent_ratio_start"])
def test_an_annealing_start_of_zero_is_refused_or_runs(option):
    """MAGMA anneals geometrically from the start rate, so a start of 0 is refused (it once passed
    the [0, 1] check and the search died dividing by it); either refusal or a run is fine."""
    cfg = MagmaConfig(**{option: 0.0})
    try:
        check_magma_config(cfg)
    except CoexploreError:
        return
    res = search_schedule(_table(), 8.0, "magma", budget=300, seed=0, config=cfg)
    assert np.isfinite(res.makespan)


def test_a_stop_before_any_schedule_was_evaluated_is_a_plain_interrupt(monkeypatch):
    from coexplore.search.base import SearchInterrupted, SearchResult
    from coexplore.system import schedule as sched

    def stopped(*a, **k):
        raise SearchInterrupted(SearchResult(None, np.inf, 0, [], interrupted=True))
    monkeypatch.setattr(sched, "run_search", stopped)
    with pytest.raises(KeyboardInterrupt) as e:
        search_schedule(_table(), 8.0, "random", budget=10)
    assert not isinstance(e.value, sched.ScheduleInterrupted)


def test_a_generation_too_large_for_the_table_is_refused_before_the_search():
    """User study: pop_size 100,000 on a 3,000-job table allocated 11.7 GB and died with a traceback
    where memory was short. The cap counts pop_size x 2 genes per job."""
    from coexplore.system.schedule import MAX_GENERATION_CELLS, make_searcher
    table = _table(num_jobs=3000, num_cores=2)
    fits = MAX_GENERATION_CELLS // 6000
    make_searcher("magma", table, 1000, 0, MagmaConfig(pop_size=fits))
    with pytest.raises(CoexploreError, match="pop_size") as e:
        make_searcher("magma", table, 1000, 0, MagmaConfig(pop_size=fits + 1))
    assert e.value.key == "config.pop_size" and f"pop_size <= {fits:,}" in e.value.expected


def test_running_out_of_memory_is_one_line_not_a_bug_report(monkeypatch, capsys, tmp_path):
    from coexplore.cli import main as cli_main
    from coexplore.cli import schedule as cli_schedule

    def short(*a, **k):
        raise MemoryError("Unable to allocate 2.24 GiB")
    monkeypatch.setattr(cli_schedule, "_search_and_write", short)
    from conftest import CORPUS
    rc = cli_main.main(["schedule", "--table", str(CORPUS.parent / "magma" / "tables" / "batch_mix" / "S3" /
                                                 "insts0.csv"), "--bandwidth", "1", "--no-plot",
                                                 "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 1 and "out of memory (Unable to allocate 2.24 GiB)" in err and "Traceback" not in err, err


def test_magma_original_records_the_settings_it_runs_with(capsys, tmp_path):
    """User study: its schedule.json had `config: null`, though it runs MagmaConfig.original()."""
    import dataclasses
    import json

    from coexplore.cli.main import main
    from conftest import CORPUS
    table = CORPUS.parent / "magma" / "tables" / "batch_mix" / "S3" / "insts0.csv"
    assert main(["schedule", "--table", str(table), "--bandwidth", "8", "--searcher", "magma-original", "--budget",
                 "200", "--json", "--no-plot", "--out", str(tmp_path / "o")]) == 0
    run = json.loads(capsys.readouterr().out)["run"]
    assert run["config"] == dataclasses.asdict(MagmaConfig.original())
