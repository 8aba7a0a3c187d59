"""Job tables: CSV loading, bad input, the cost-callable builder."""

from pathlib import Path

import numpy as np
import pytest

from coexplore.errors import CoexploreError
from coexplore.system.jobs import Job, JobTable, build_job_table
from coexplore.system.tables import load_table, save_table

DATA = Path(__file__).parent / "data" / "magma"
TABLE = DATA / "tables" / "batch_conv" / "S3" / "insts0.csv"


def test_magma_table_loads_in_file_order():
    t = load_table(TABLE)
    assert t.cores == ["0", "1", "2", "3"]
    assert t.num_jobs == 100
    first = TABLE.read_text().splitlines()[1].split(",")
    assert t.latency[0, 0] == float(first[8]) and t.bandwidth[0, 3] == float(first[15])
    assert t.jobs[0].kind in {"CONV", "DSCONV"}
    assert not t.has_energy()


def _write(tmp_path, text):
    p = tmp_path / "t.csv"
    p.write_text(text)
    return p


def test_missing_core_column_is_a_clear_error(tmp_path):
    p = _write(tmp_path, "job,lat_a,lat_b,bw_a\n0,10,20,1\n")
    with pytest.raises(CoexploreError) as e:
        load_table(p)
    assert "bw_b" in str(e.value) and str(p) in str(e.value)


def test_a_misspelt_core_column_is_named_beside_the_one_missing(tmp_path):
    """User study: bw_3 renamed bw_5 said only that bw_3 is missing; the stray column is named too."""
    with pytest.raises(CoexploreError, match=r"bw_3.*the table has bw_5, with no lat_5: misspelt"):
        load_table(_write(tmp_path, "job,lat_1,lat_3,bw_1,bw_5\n0,10,20,1,2\n"))
    with pytest.raises(CoexploreError, match=r"bw_c.*the table has bw_b, with no lat_b: misspelt"):
        load_table(_write(tmp_path, "job,lat_a,lat_c,bw_a,bw_b\n0,10,20,1,2\n"))


def test_negative_bandwidth_need_and_bad_latency_are_errors(tmp_path):
    with pytest.raises(CoexploreError, match="bw_a"):
        load_table(_write(tmp_path, "job,lat_a,bw_a\n0,10,-1\n"))
    with pytest.raises(CoexploreError, match="lat_a"):
        load_table(_write(tmp_path, "job,lat_a,bw_a\n0,0,1\n"))
    with pytest.raises(CoexploreError, match="not a number"):
        load_table(_write(tmp_path, "job,lat_a,bw_a\n0,x,1\n"))


def test_empty_workload_is_an_error(tmp_path):
    with pytest.raises(CoexploreError, match="empty workload"):
        load_table(_write(tmp_path, "job,lat_a,bw_a\n"))
    with pytest.raises(CoexploreError, match="empty"):
        load_table(_write(tmp_path, ""))
    with pytest.raises(CoexploreError, match="empty workload"):
        build_job_table([], ["a"], lambda j, c: (1, 1, 1))


def test_builder_uses_the_cost_callable_and_derives_bandwidth(tmp_path):
    jobs = [Job("conv1", dnn="net", dims=(("K", 64),)), Job("fc", dnn="net", dims=(("K", 10),))]
    calls = []

    def cost(job, core):
        calls.append((job.name, core))
        k = dict(job.dims)["K"]
        speed = {"big": 2.0, "little": 1.0}[core]
        return k * 100 / speed, k * 3.0, k * 50.0   # cycles, pJ, DRAM bytes

    t = build_job_table(jobs, ["big", "little"], cost)
    assert sorted(calls) == sorted((j.name, c) for j in jobs for c in ("big", "little"))
    np.testing.assert_allclose(t.latency, [[3200, 6400], [500, 1000]])
    np.testing.assert_allclose(t.bandwidth, [[64 * 50 / 3200, 64 * 50 / 6400],
                                             [10 * 50 / 500, 10 * 50 / 1000]])
    np.testing.assert_allclose(t.dram_bytes, [[3200, 3200], [500, 500]])
    assert t.has_energy()
    save_table(t, tmp_path / "built.csv")
    back = load_table(tmp_path / "built.csv")
    np.testing.assert_array_equal(back.latency, t.latency)
    np.testing.assert_array_equal(back.bandwidth, t.bandwidth)
    np.testing.assert_array_equal(back.energy, t.energy)
    assert back.cores == ["big", "little"] and [j.name for j in back.jobs] == ["conv1", "fc"]
    assert [(j.dnn, j.dims) for j in back.jobs] == [("net", (("K", 64),)), ("net", (("K", 10),))]


def test_builder_rejects_negative_traffic_and_zero_latency():
    with pytest.raises(CoexploreError, match="DRAM bytes"):
        build_job_table([Job("a")], ["c"], lambda j, c: (10, 1, -5))
    with pytest.raises(CoexploreError, match="latency"):
        build_job_table([Job("a")], ["c"], lambda j, c: (0, 1, 5))


def test_jobtable_shape_mismatch():
    with pytest.raises(CoexploreError, match="shape"):
        JobTable([Job("a")], ["c"], np.ones((1, 1)), np.ones((1, 2)))


def test_errors_name_the_file_line_blank_lines_counted_and_huge_cells_or_sums_are_refused(tmp_path):
    with pytest.raises(CoexploreError, match="line 4: 'x' is not a number"):
        load_table(_write(tmp_path, "job,lat_a,bw_a\n\n0,10,1\nj,x,1\n"))
    with pytest.raises(CoexploreError, match="field larger than field limit"):
        load_table(_write(tmp_path, "job,lat_a,bw_a\n0,1" + "0" * 200_000 + ",1\n"))
    with pytest.raises(CoexploreError, match="latencies too large to add up") as e:
        load_table(_write(tmp_path, "job,lat_a,bw_a\n0,1e308,1\n1,1e308,1\n"))
    assert e.value.key == "lat_a"
    with pytest.raises(CoexploreError, match="line 2: '1e400' is too large for a number"):    # not a silent inf
        load_table(_write(tmp_path, "job,lat_a,lat_b,bw_a,bw_b\n0,1e400,5,1,1\n"))
    assert np.isinf(load_table(_write(tmp_path, "job,lat_a,lat_b,bw_a,bw_b\n0,inf,5,1,1\n")).latency[0, 0])


def test_repeated_job_names_are_refused_and_blank_names_numbered(tmp_path):
    with pytest.raises(CoexploreError, match="line 4: job 'conv1' is already on line 2") as e:
        load_table(_write(tmp_path, "job,lat_a,bw_a\nconv1,10,1\nfc,5,1\nconv1,10,1\n"))
    assert e.value.key == "job" and str(tmp_path / "t.csv") in str(e.value)
    t = load_table(_write(tmp_path, "job,lat_a,bw_a\nconv1,10,1\n ,5,1\n"))
    assert [j.name for j in t.jobs] == ["conv1", "1"]
    with pytest.raises(CoexploreError, match=r"job '0' is already on line 2 \(a row without a job name is named"):
        load_table(_write(tmp_path, "job,lat_a,bw_a\n,100,1\n0,50,1\n"))     # (user study: line 2 looked empty)


@pytest.mark.parametrize("cell", ["-5", "0", "nan"])
def test_a_value_out_of_range_names_the_line_of_its_job(tmp_path, cell):
    with pytest.raises(CoexploreError, match="line 4: latency of job j2 on core a is"):
        load_table(_write(tmp_path, f"job,lat_a,bw_a\nj0,100,1\nj1,10,1\nj2,{cell},1\n"))


def test_a_large_job_table_prints_as_one_short_line():
    from coexplore.system.jobs import Job, JobTable
    n = 20_000
    t = JobTable([Job(name=f"j{i}", dnn="d", layer=f"l{i}") for i in range(n)], [f"c{k}" for k in range(12)],
                 np.ones((n, 12)), np.zeros((n, 12)))
    assert repr(t).startswith("JobTable(20000 jobs x 12 cores: c0, c1") and len(repr(t)) < 200


def test_a_saved_job_table_reads_back_with_its_jobs(tmp_path):
    """save_table -> load_table: the same jobs (name, DNN, layer, kind, integer dimensions) and numbers."""
    jobs = [Job(name="r.conv1", dnn="r", layer="conv1", kind="CONV", dims=(("C", 3), ("M", 64), ("R", 7))),
            Job(name="b.qkv", dnn="b", layer="qkv", kind="GEMM", dims=(("C", 768), ("M", 2304), ("R", 1)))]
    t = JobTable(jobs, ["a", "b"], np.array([[10.0, 20.0], [30.0, 40.0]]), np.array([[1.0, 2.0], [3.0, 4.5]]),
                 np.array([[5.0, 6.0], [7.0, 8.0]]))
    save_table(t, tmp_path / "jobs.csv")
    back = load_table(tmp_path / "jobs.csv")
    assert back.jobs == jobs and back.cores == ["a", "b"]
    for x, y in ((t.latency, back.latency), (t.bandwidth, back.bandwidth), (t.energy, back.energy)):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("jobs, cores, energy, key", [
    (["a", "b"], ["x"], None, "jobs"),                         # names, not Jobs: failed later in summaries
    ([Job("a"), Job("b")], ["x", "x"], None, "cores"),
    ([Job("a"), Job("b")], "xy", None, "cores"),
    ([Job("a"), Job("b")], ["x"], [[-5.0], [-5.0]], "en_x"),    # a negative energy was summed into -10 pJ
])
def test_a_job_table_made_in_python_is_checked_as_a_file_is(jobs, cores, energy, key):
    """User study: these were accepted and failed (or gave negative energies) later."""
    lat = [[100.0] * (2 if cores == "xy" else len(cores))] * 2
    with pytest.raises(CoexploreError) as e:
        JobTable(jobs, cores, lat, [[1.0] * len(lat[0])] * 2, energy=energy)
    assert e.value.key == key


def test_a_searcher_object_s_own_seed_is_recorded():
    from coexplore.system.baselines import RandomSearcher
    from coexplore.system.encoding import space_of
    from coexplore.system.schedule import search_schedule
    t = JobTable([Job("a"), Job("b"), Job("c")], ["x", "y"], [[100.0, 90.0], [200.0, 50.0], [70.0, 80.0]],
                 [[1.0, 1.0]] * 3)
    res = search_schedule(t, 16, searcher=RandomSearcher(space_of(t), seed=5), budget=50, seed=7)
    again = search_schedule(t, 16, searcher=RandomSearcher(space_of(t), seed=5), budget=50, seed=0)
    assert res.seed == 5 == res.to_json(t)["seed"] and res.makespan == again.makespan
