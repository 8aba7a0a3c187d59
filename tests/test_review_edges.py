"""Edges of job-table energies, buffer widths, grid cells, log bars and network summaries."""

import csv

import pytest

from coexplore.errors import CoexploreError
from coexplore.system.tables import load_table


def _table(tmp_path, lat_b, en_b):
    p = tmp_path / "t.csv"
    p.write_text(f"job,lat_a,lat_b,bw_a,bw_b,en_a,en_b\n0,10,{lat_b},1,1,5,{en_b}\n1,10,20,1,1,5,6\n")
    return p


def test_no_energy_is_accepted_only_where_the_job_cannot_run(tmp_path):
    t = load_table(_table(tmp_path, "inf", "nan"))      # cannot run on b: no energy due
    assert t.has_energy()


@pytest.mark.parametrize("lat_b, en_b", [("20", "nan"),     # it runs on b: its energy is due
                                         ("inf", "-1"), ("inf", "inf")])   # a wrong number is still wrong
def test_a_missing_or_bad_energy_is_refused(tmp_path, lat_b, en_b):
    with pytest.raises(CoexploreError) as err:
        load_table(_table(tmp_path, lat_b, en_b))
    assert err.value.key == "en_b"


def _buffer_of(attrs: dict):
    from coexplore.spec.architecture import parse_architecture
    doc = {"architecture": {"version": 0.3, "subtree": [{"name": "s", "local": [
        {"name": "Buf", "class": "SRAM", "attributes": {"depth": 64, **attrs}},
        {"name": "mac", "class": "intmac", "attributes": {"datawidth": 8}}]}]}}
    return parse_architecture(doc, "a.yaml").levels[0]


def test_a_width_of_whole_words_but_not_whole_blocks_is_refused():
    """Timeloop: width % (datawidth x block_size) == 0 (24 bits hold 3 bytes but 1.5 two-byte blocks)."""
    with pytest.raises(CoexploreError) as err:
        _buffer_of({"width": 24, "datawidth": 8, "block_size": 2})
    assert "16" in err.value.message


def test_a_width_message_names_the_alias_written():
    with pytest.raises(CoexploreError) as err:
        _buffer_of({"memory_width": 60, "datawidth": 8})
    assert err.value.message.startswith("memory_width 60")


def _edited_grid(tmp_path, column, value):
    from test_energy_cli import GRID
    rows = list(csv.reader(GRID.open(newline="")))
    i = rows[0].index(column)
    rows[1][i] = value(rows[1][i]) if callable(value) else value
    f = tmp_path / "grid.csv"
    with f.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    return f, rows


def test_a_rounded_cell_off_by_half_a_percent_is_refused(tmp_path):
    from coexplore.energy.grid import read_grid
    f, rows = _edited_grid(tmp_path, "energy_pJ", lambda v: repr(float(v) * 1.005))
    with pytest.raises(CoexploreError) as err:
        read_grid(f)
    assert err.value.key == "energy_pJ"


def test_an_empty_full_cell_falls_back_to_the_rounded_one(tmp_path):
    from coexplore.energy.grid import read_grid
    f, rows = _edited_grid(tmp_path, "energy_pJ_full", "")
    rounded = float(rows[1][rows[0].index("energy_pJ")])
    assert read_grid(f)[0].energy_pJ == pytest.approx(rounded)


def test_a_forced_redraw_soon_after_a_logged_line_waits(monkeypatch):
    """Log mode: a new postfix right after a due line is not written (it waits mininterval)."""
    import io
    from coexplore.progress import progress_bar
    monkeypatch.delenv("TQDM_MININTERVAL", raising=False)
    out = io.StringIO()
    bar = progress_bar(total=100, file=out, leave=False)
    clock = [bar.start_t]
    bar._time = lambda: clock[0]
    clock[0] += bar.mininterval + 1
    bar.update(1)                       # due: one line
    lines = out.getvalue().count("\n")
    assert lines >= 1
    clock[0] += 1
    bar.set_postfix_str("conv2")        # 1 s later: waits
    assert out.getvalue().count("\n") == lines
    bar.disable = True


def test_a_summary_has_no_dram_total_when_an_earlier_runs_row_lacks_its_bytes():
    """Rows resumed from a summary written before dram_bytes existed: no total (not a partial sum)."""
    import types
    from coexplore.cli.map_workload import _summary
    row = {"count": 2, "cycles": 10, "energy_uJ": 1.0, "macs": 100, "dram_bytes": 64.0}
    old = {"count": 1, "cycles": 10, "energy_uJ": 1.0, "macs": 100}
    wl = types.SimpleNamespace(name="w")
    assert _summary("a", wl, [row, dict(row)], [], 2, {})["dram_bytes"] == 256.0
    assert _summary("a", wl, [row, old], [], 2, {})["dram_bytes"] is None


def test_no_valid_mapping_warning_suggests_a_larger_layer_budget(tmp_path):
    import warnings
    from test_system_infeasible import _two_layer_system
    from coexplore.system.from_system import system_job_table
    sys_file, wl = _two_layer_system(tmp_path)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        system_job_table(sys_file, [wl], layer_budget=200)
    msg = next(str(w.message) for w in said if "no valid mapping on core tiny" in str(w.message))
    assert "--layer-budget" in msg


def test_an_empty_rounded_cell_beside_a_full_one_reads_the_full_one(tmp_path):
    from coexplore.energy.grid import read_grid
    f, rows = _edited_grid(tmp_path, "energy_pJ", "")
    full = float(rows[1][rows[0].index("energy_pJ_full")])
    assert read_grid(f)[0].energy_pJ == full
