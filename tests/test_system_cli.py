"""`coexplore schedule --table ... --bandwidth ...`: outputs and bad input (exit 2)."""

import json
from pathlib import Path

import numpy as np
import pytest

from coexplore.cli.main import main
from coexplore.system.encoding import MakespanObjective
from coexplore.system.tables import load_table

DATA = Path(__file__).parent / "data" / "magma"
TABLE = DATA / "tables" / "batch_mix" / "S3" / "insts0.csv"


def test_schedule_json_and_files(tmp_path, capsys):
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "16", "--budget", "500",
               "--seed", "2", "--json", "--out", str(tmp_path / "o")])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    t = load_table(TABLE)
    assert data["searcher"] == "magma" and data["samples"] == 500
    assert len(data["core"]) == len(data["priority"]) == t.num_jobs
    assert set(data["core"]) <= set(t.cores)
    # the reported makespan is what the evaluator gives the reported schedule (table row order)
    x = np.concatenate([[t.cores.index(c) for c in data["core"]], data["priority"]])[None]
    assert MakespanObjective(t, 16)(x)[0] == pytest.approx(data["makespan"], rel=1e-12)
    assert json.loads((tmp_path / "o" / "schedule.json").read_text())["makespan"] == data["makespan"]
    png = (tmp_path / "o" / "gantt.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_schedule_summary_and_no_plot(tmp_path, capsys):
    rc = main(["schedule", "--table", str(TABLE), "--bandwidth", "1", "--searcher", "heft-heft",
               "--out", str(tmp_path / "h"), "--no-plot"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "makespan" in out and "utilization" in out and "1 samples" in out
    assert not (tmp_path / "h" / "gantt.png").exists()


def _bad(tmp_path, capsys, argv):
    rc = main(["schedule", *argv, "--out", str(tmp_path / "x"), "--no-plot"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    return err


def test_bad_input_exits_2(tmp_path, capsys):
    missing = tmp_path / "missing_col.csv"
    missing.write_text("job,lat_0,lat_1,bw_0\n0,10,20,1\n")
    assert "bw_1" in _bad(tmp_path, capsys, ["--table", str(missing), "--bandwidth", "1"])
    empty = tmp_path / "empty.csv"
    empty.write_text("job,lat_0,bw_0\n")
    assert "empty workload" in _bad(tmp_path, capsys, ["--table", str(empty), "--bandwidth", "1"])
    assert "bandwidth" in _bad(tmp_path, capsys, ["--table", str(TABLE), "--bandwidth", "-4"])
    assert "searcher" in _bad(tmp_path, capsys, ["--table", str(TABLE), "--bandwidth", "1",
                                                 "--searcher", "nope"])
    assert "budget" in _bad(tmp_path, capsys, ["--table", str(TABLE), "--bandwidth", "1",
                                               "--budget", "0"])
    assert "table" in _bad(tmp_path, capsys, ["--bandwidth", "1"])
    assert "no such" in _bad(tmp_path, capsys, ["--table", str(tmp_path / "nope.csv"),
                                                "--bandwidth", "1"])
