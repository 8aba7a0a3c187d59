"""A result folder holds one run's files: they are written together (a kill leaves the old set or the
new one), a job table is written atomically, and commands that write files of one name into a shared
--out are kept apart (a review found a schedule.json beside another run's jobs.csv)."""

import json
import os
import shutil

import numpy as np
import pytest

from coexplore.cli.main import main
from coexplore.errors import CoexploreError
from coexplore.spec.yamlio import write_texts
from coexplore.system.jobs import Job, JobTable
from coexplore.system.tables import load_table, save_table

from conftest import CORPUS

LAYERS = CORPUS / "layers"
QUIET = ["--no-progress", "--no-plot", "--layer-budget", "50"]


def _system(tmp_path):
    (tmp_path / "layers").mkdir(exist_ok=True)
    shutil.copy(LAYERS / "tiny_conv.yaml", tmp_path / "layers" / "1_tiny.yaml")
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 16}\n  cores:\n  - {template: simba, count: 2}\n"
                    "workloads: [layers]\n")
    return path


def test_files_written_together_are_all_replaced_or_none(tmp_path):
    (tmp_path / "a.txt").write_text("old")
    (tmp_path / "plain").write_text("a file, not a folder")
    with pytest.raises(CoexploreError):
        write_texts({tmp_path / "a.txt": "new", tmp_path / "plain" / "b.txt": "new"})
    assert (tmp_path / "a.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "plain"]     # no temporary file left


def test_a_failing_rename_leaves_no_temporary_files(tmp_path, monkeypatch):
    real = os.replace
    calls = []

    def replace(a, b):
        calls.append(b)
        if len(calls) == 2:
            raise KeyboardInterrupt          # a stop between the renames
        return real(a, b)
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        write_texts({tmp_path / "a.txt": "1", tmp_path / "b.txt": "2", tmp_path / "c.txt": "3"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_a_job_table_is_written_whole_and_reads_back(tmp_path):
    t = JobTable([Job("x.l0", dnn="x", layer="l0"), Job("x.l1", dnn="x", layer="l1")], ["a", "b"],
                 np.array([[10.0, 20.0], [30.0, np.inf]]), np.array([[1.0, 2.0], [3.0, 0.0]]))
    save_table(t, tmp_path / "jobs.csv")
    back = load_table(tmp_path / "jobs.csv")
    np.testing.assert_array_equal(back.latency, t.latency)
    assert [p.name for p in tmp_path.iterdir()] == ["jobs.csv"]


def test_an_interrupted_schedule_leaves_the_earlier_runs_job_table(tmp_path, monkeypatch, capsys):
    """jobs.csv is written with schedule.json, not before the search: a stop during the search of
    another run into the same folder leaves the earlier run's pair as it was."""
    system = _system(tmp_path)
    out = tmp_path / "o"
    assert main(["schedule", str(system), *QUIET, "--budget", "20", "--out", str(out)]) == 0
    before = {n: (out / n).read_text() for n in ("jobs.csv", "schedule.json")}
    import coexplore.system.schedule as sched

    def stop(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(sched, "search_schedule", stop)
    (tmp_path / "layers" / "2_tiny.yaml").write_text((LAYERS / "tiny_conv.yaml").read_text())   # another run
    assert main(["schedule", str(system), *QUIET, "--budget", "20", "--out", str(out)]) == 130
    assert {n: (out / n).read_text() for n in ("jobs.csv", "schedule.json")} == before


def test_schedule_and_online_do_not_share_an_out_folder(tmp_path, capsys):
    system = _system(tmp_path)
    out = tmp_path / "o"
    assert main(["schedule", str(system), *QUIET, "--budget", "20", "--out", str(out)]) == 0
    jobs = (out / "jobs.csv").read_text()
    capsys.readouterr()
    assert main(["online", str(system), *QUIET, "--requests", "5", "--seeds", "1", "--schedulers", "fcfs",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "holds the result of `coexplore schedule` (schedule.json), whose jobs.csv this run would replace" in err
    assert (out / "jobs.csv").read_text() == jobs and not (out / "online.json").exists()
    other = tmp_path / "p"
    assert main(["online", str(system), *QUIET, "--requests", "5", "--seeds", "1", "--schedulers", "fcfs",
                 "--out", str(other)]) == 0
    data = json.loads((other / "online.json").read_text())
    assert data["schedulers"]["fcfs"]["sla_rate"] >= 0
    assert main(["schedule", str(system), *QUIET, "--budget", "20", "--out", str(other)]) == 2
    assert "(online.json)" in capsys.readouterr().err


def test_a_folder_in_the_way_of_a_result_file_is_said_before_any_file_is_replaced(tmp_path):
    (tmp_path / "a.txt").write_text("old")
    (tmp_path / "b.txt").mkdir()
    with pytest.raises(CoexploreError, match="is a folder"):
        write_texts({tmp_path / "a.txt": "new", tmp_path / "b.txt": "x"})
    assert (tmp_path / "a.txt").read_text() == "old"


def test_a_schedule_beside_an_online_run_is_refused_and_its_own_input_table_kept(tmp_path, capsys):
    """A folder holding another command's result is refused even where no file of one name would be
    replaced (the two runs would mix); a folder holding the run's own input table is no clash."""
    t = JobTable([Job("x.l0", dnn="x", layer="l0")], ["a"], np.array([[10.0]]), np.array([[1.0]]))
    save_table(t, tmp_path / "t.csv")
    out = tmp_path / "o"
    out.mkdir()
    (out / "online.json").write_text("{}")
    assert main(["schedule", "--table", str(tmp_path / "t.csv"), "--bandwidth", "4", "--budget", "10",
                 "--no-progress", "--no-plot", "--out", str(out)]) == 2
    assert "holds the result of `coexplore online` (online.json), beside which" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["online.json"]
    mine = tmp_path / "p"
    mine.mkdir()
    save_table(t, mine / "jobs.csv")              # the input table itself in that folder: kept, no note
    assert main(["schedule", "--table", str(mine / "jobs.csv"), "--bandwidth", "4", "--budget", "10",
                 "--no-progress", "--no-plot", "--out", str(mine)]) == 0
    assert "of no coexplore run" not in capsys.readouterr().err and (mine / "jobs.csv").exists()


def test_map_never_writes_over_its_own_input_in_the_out_folder(tmp_path, capsys, monkeypatch):
    """`map ARCH problem.yaml --out .` with a workload file named problem.yaml: an input and a file
    map writes (the layer as a Timeloop problem); refused (exit 2), the input untouched. A Timeloop
    problem file of that name is no clash: map writes no problem.yaml for it (a user study)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "problem.yaml").write_text("workload:\n  layers:\n"
                                           "  - {name: a, instance: {C: 4, M: 8, R: 3, S: 3, N: 1, P: 6, Q: 6}}\n")
    before = (tmp_path / "problem.yaml").read_bytes()
    arch = CORPUS / "arches" / "simba_like" / "processed.yaml"
    rc = main(["map", str(arch), "problem.yaml", "--budget", "50", "--no-cache", "--no-progress", "--out", "."])
    err = capsys.readouterr().err
    assert rc == 2 and "an input of this run" in err and "problem.yaml" in err, err
    assert (tmp_path / "problem.yaml").read_bytes() == before
    assert not (tmp_path / "result.json").exists()
    shutil.copy(LAYERS / "tiny_conv.yaml", tmp_path / "problem.yaml")
    before = (tmp_path / "problem.yaml").read_bytes()
    assert main(["map", str(arch), "problem.yaml", "--budget", "50", "--no-cache", "--no-progress", "--out", "."]) == 0
    assert (tmp_path / "problem.yaml").read_bytes() == before
    other = tmp_path / "o"
    other.mkdir()
    (other / "problem.yaml").write_text("# mine\n")
    assert main(["map", str(arch), "problem.yaml", "--budget", "50", "--no-cache", "--no-progress",
                 "--out", str(other)]) == 0           # (a problem file given: map writes no problem.yaml)
    assert (other / "problem.yaml").read_text() == "# mine\n"


@pytest.mark.parametrize("own", [{"schedule.json": '{"mine": 1}'}, {"timeline.csv": "t,core\n"}])
def test_a_schedule_never_replaces_files_no_run_wrote(tmp_path, capsys, own):
    """User study: a hand-written schedule.json was replaced with a note saying it held "an earlier run"."""
    t = JobTable([Job("x.l0", dnn="x", layer="l0")], ["a"], np.array([[10.0]]), np.array([[1.0]]))
    save_table(t, tmp_path / "t.csv")
    out = tmp_path / "o"
    out.mkdir()
    for name, text in own.items():
        (out / name).write_text(text)
    args = ["schedule", "--table", str(tmp_path / "t.csv"), "--bandwidth", "4", "--budget", "10", "--no-progress",
            "--no-plot", "--out", str(out)]
    assert main(args) == 2
    assert "which no coexplore run wrote" in capsys.readouterr().err
    assert {n: (out / n).read_text() for n in own} == own
    for name in own:
        (out / name).unlink()
    assert main(args) == 0 and main(args) == 0          # a folder of coexplore's own: used again


def test_a_killed_runs_files_are_its_own_not_the_users(tmp_path):
    """User study: a sweep killed (SIGHUP, kill -9) before sweep.json left points.csv and pareto.csv
    beside points.jsonl, and its rerun was refused as files "no coexplore run wrote"; so was a map
    layer folder whose result.json was lost. A run's traces mark the folder as coexplore's."""
    from coexplore.cli import paths
    from coexplore.cli.paths import chosen_dir
    run = {"seed": 0}
    sweep = tmp_path / "sw"
    sweep.mkdir()
    for name in ("points.csv", "pareto.csv", "points.jsonl"):
        (sweep / name).write_text("x\n")
    assert chosen_dir(sweep, "sweep.json", run, "sweep", also_writes=("points.csv", "pareto.csv")) == sweep
    layer = tmp_path / "layer"
    layer.mkdir()
    (layer / "mapping.yaml").write_text("# coexplore map: best edp mapping of l1 on a\nmapping: []\n")
    assert chosen_dir(layer, "result.json", run, "map", writes=("mapping.yaml",)) == layer
    (layer / "mapping.yaml").write_text("# my own\nmapping: []\n")
    with pytest.raises(CoexploreError, match="no coexplore run wrote"):
        chosen_dir(layer, "result.json", run, "map", writes=("mapping.yaml",))
    paths.release_held()


def test_no_command_writes_into_another_commands_result_folder(tmp_path, capsys):
    """User study: a sweep, schedule or map --out folder took another command's results beside its own
    (their file names differ, so nothing was replaced, but the folder mixed two runs). Refused, naming
    the command whose result is there; the folder is left as it was."""
    system = _system(tmp_path)
    sched, mapped = tmp_path / "s", tmp_path / "m"
    assert main(["schedule", str(system), *QUIET, "--budget", "20", "--out", str(sched)]) == 0
    assert main(["map", str(system), str(LAYERS / "tiny_conv.yaml"), "--budget", "30", "--no-cache",
                 "--no-progress", "--out", str(mapped)]) == 0
    before = {d: sorted(p.name for p in d.iterdir()) for d in (sched, mapped)}
    capsys.readouterr()
    assert main(["map", str(system), str(LAYERS / "tiny_conv.yaml"), "--budget", "30", "--no-cache",
                 "--no-progress", "--out", str(sched)]) == 2
    err = capsys.readouterr().err
    assert "holds the result of `coexplore schedule` (schedule.json)" in err and "Traceback" not in err
    assert main(["schedule", str(system), *QUIET, "--budget", "20", "--out", str(mapped)]) == 2
    assert "holds the result of `coexplore map` (result.json)" in capsys.readouterr().err
    assert main(["sweep", str(system), *QUIET, "--budget", "20", "--out", str(sched)]) == 2
    assert "holds the result of `coexplore schedule` (schedule.json)" in capsys.readouterr().err
    assert {d: sorted(p.name for p in d.iterdir()) for d in (sched, mapped)} == before
