"""`coexplore energy check|tables` and the real-Accelergy backend."""

import csv
import json
import os
import stat
import sys
from pathlib import Path

import pytest
import yaml

from coexplore.cli import main as cli_main
from coexplore.energy import build_tables
from coexplore.energy.accelergy_backend import accelergy_estimate
from coexplore.spec.ert import parse_ert
from coexplore.errors import CoexploreError

DATA = Path(__file__).parent / "data" / "energy"
GRID = DATA / "grid_subset.csv"


def run(argv, monkeypatch):
    monkeypatch.setattr(cli_main, "COMMANDS", ("energy",))
    return cli_main.main(argv)


def test_check_json(monkeypatch, capsys):
    assert run(["energy", "check", str(GRID), "--json"], monkeypatch) == 0
    out = json.loads(capsys.readouterr().out)
    rows = list(csv.DictReader(GRID.open()))
    assert out["rows"] == sum(1 for r in rows if r["status"] == "ok")
    assert set(out["classes"]) == {r["class"] for r in rows if r["status"] == "ok"}
    for entry in out["classes"].values():
        assert {"rows", "median_rel_err", "p95_rel_err", "max_rel_err"} <= set(entry)
    assert out["estimator"] == "coexplore-builtin"
    assert out["unsupported"] == []


def test_check_text(monkeypatch, capsys):
    assert run(["energy", "check", str(GRID)], monkeypatch) == 0
    out = capsys.readouterr().out
    assert "estimator: coexplore-builtin" in out and "smartbuffer_SRAM" in out


def test_check_bad_input_exits_2(monkeypatch, capsys, tmp_path):
    assert run(["energy", "check", str(tmp_path / "missing.csv")], monkeypatch) == 2
    assert "grid file not found" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    assert run(["energy", "check", str(bad)], monkeypatch) == 2
    assert "missing column" in capsys.readouterr().err


def test_accelergy_absent_is_a_clear_error(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))   # no accelergy there
    assert run(["energy", "check", str(GRID), "--energy", "accelergy"], monkeypatch) == 2
    err = capsys.readouterr().err
    assert "accelergy is not installed" in err and "Traceback" not in err


def test_tables_command(monkeypatch, capsys, tmp_path):
    arch = DATA / "simba_like_pe8_glb4k" / "processed.yaml"
    assert run(["energy", "tables", str(arch), "--out", str(tmp_path)], monkeypatch) == 0
    ert = yaml.safe_load((tmp_path / "ERT.yaml").read_text())
    assert "GlobalBuffer" in parse_ert(ert).actions
    out = capsys.readouterr().out
    assert "estimator: coexplore-builtin" in out
    # the total area printed is each ART entry's area x its [1..N] instance count, summed
    import re
    art = yaml.safe_load((tmp_path / "ART.yaml").read_text())["ART"]["tables"]
    total = 0.0
    for t in art:
        lo, hi = map(int, re.search(r"\[(\d+)\.\.(\d+)\]$", t["name"]).groups())
        total += (hi - lo + 1) * float(t["area"])
    printed = float(re.search(r"area: ([0-9.e+-]+) mm\^2 in all", out).group(1))
    assert total > 0 and abs(printed - total / 1e6) <= 1e-3 * total / 1e6


FAKE = """#!{python}
# test double for the accelergy executable: prices every action at 42 pJ, area 7 um^2; checks that
# every node's name is one name (with an optional [a..b]), as Accelergy reads them
import re, sys, yaml, pathlib
args = sys.argv[1:]
out = pathlib.Path(args[args.index('-o') + 1]); out.mkdir(parents=True)
assert any('compound_components' in yaml.safe_load(open(a)) for a in args[1:args.index('-o')])
comps = []
def walk(node, prefix):
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\\[\\d+\\.\\.\\d+\\])?", node['name']), node['name']
    name = prefix + node['name']
    for c in node.get('local', []):
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\\[\\d+\\.\\.\\d+\\])?", c['name']), c['name']
        comps.append((name + '.' + c['name'], c))
    for t in node.get('subtree', []):
        walk(t, name + '.')
(top,) = yaml.safe_load(open(args[0]))['architecture']['subtree']
walk(top, '')
ert = {{'ERT': {{'version': '0.4', 'tables': [
    {{'name': n, 'actions': [{{'name': a, 'arguments': {{}}, 'energy': 42.0}} for a in c.get('required_actions', [])]}}
    for n, c in comps]}}}}
art = {{'ART': {{'version': '0.4', 'tables': [{{'name': n, 'area': 7.0}} for n, c in comps]}}}}
(out / 'ERT.yaml').write_text(yaml.safe_dump(ert)); (out / 'ART.yaml').write_text(yaml.safe_dump(art))
"""


def _fake_accelergy(monkeypatch, tmp_path, text=None):
    exe = tmp_path / "accelergy"
    exe.write_text(text or FAKE.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ.get("PATH", ""))


def test_accelergy_gets_nested_names_as_a_tree(monkeypatch, tmp_path):
    _fake_accelergy(monkeypatch, tmp_path)
    names = ["System.DRAM[1..1]", "System.ws.GlobalBuffer", "System.ws.PE[0..15].PEWeightBuffer[0..3]"]
    ert, art = build_tables([(n, "smartbuffer_SRAM", {"width": 64, "depth": 1024, "technology": "45nm"})
                             for n in names], estimator="accelergy")
    assert [t["name"] for t in ert["ERT"]["tables"]] == [names[0], names[1], names[2]]
    with pytest.raises(CoexploreError, match="top-level"):
        build_tables([("A.x", "SRAM", {}), ("B.y", "SRAM", {})], estimator="accelergy")


def test_a_failing_accelergy_in_energy_check_is_an_error(monkeypatch, tmp_path, capsys):
    _fake_accelergy(monkeypatch, tmp_path, f"#!{sys.executable}\nimport sys\nprint('boom: no plug-in')\nsys.exit(3)\n")
    assert run(["energy", "check", str(GRID), "--energy", "accelergy", "--no-progress"], monkeypatch) == 1
    out, err = capsys.readouterr()
    assert "no row of" in err and "accelergy failed (exit 3): boom: no plug-in" in err
    assert "unsupported rows" in out and "e.g. accelergy failed" in out


def test_accelergy_backend_runs_the_executable(monkeypatch, tmp_path):
    _fake_accelergy(monkeypatch, tmp_path)
    ert, art = build_tables([("system_top_level.buf[1..2]", "smartbuffer_SRAM",
                              {"width": 64, "depth": 1024, "technology": "45nm"})],
                            estimator="accelergy")
    assert ert["estimator"].startswith("accelergy")
    assert parse_ert(ert).actions["buf"]["read"] == 42.0
    assert art["ART"]["tables"][0]["area"] == 7.0
    est = accelergy_estimate("smartbuffer_SRAM", {"width": 64, "depth": 1024, "technology": "45nm"})
    assert est.actions["read"] == 42.0 and est.estimator.startswith("accelergy")


# Accelergy-ert-grid example 04 (real Accelergy 0.4 + Aladdin/library plug-ins, MIT): a file whose
# compound_components has no classes, so regfile and intmac are priced as primitives.
EX04 = """architecture:
  version: '0.4'
  subtree:
  - name: System_top_level
    attributes: {technology: 45nm, global_cycle_seconds: 1.0e-09}
    local:
    - {name: 'Buffer[1..1]', class: regfile, attributes: {depth: 64, width: 8, datawidth: 8}}
    - {name: 'MACC[1..1]', class: intmac, attributes: {width: 8}}
compound_components:
  version: '0.4'
  classes: CLASSES
"""
EX04_ACCELERGY = {"System_top_level.Buffer[1..1]": ("read", 0.36264), "System_top_level.MACC[1..1]": ("compute", 0.845)}


def test_tables_follow_a_file_without_compound_classes(monkeypatch, capsys, tmp_path):
    arch = tmp_path / "arch.yaml"
    arch.write_text(EX04.replace("CLASSES", "[]"))
    assert run(["energy", "tables", str(arch), "--out", str(tmp_path / "o")], monkeypatch) == 0
    assert "as primitives" in capsys.readouterr().err
    tables = yaml.safe_load((tmp_path / "o" / "ERT.yaml").read_text())["ERT"]["tables"]
    for t in tables:
        action, energy = EX04_ACCELERGY[t["name"]]
        got = next(a["energy"] for a in t["actions"] if a["name"] == action)
        assert abs(got - energy) <= 1e-3 * energy, (t["name"], got)
    # a file that defines its own classes: they are not read, and the user is told
    arch.write_text(EX04.replace("CLASSES", "[{name: regfile, attributes: {}, subcomponents: []}]"))
    assert run(["energy", "tables", str(arch), "--out", str(tmp_path / "o2"),
                "--classes", "primitives"], monkeypatch) == 0
    assert "does not read compound classes" in capsys.readouterr().err
    # the v0.4 name of the section (`components:`) is told the same
    arch.write_text(EX04.replace("compound_components:", "components:")
                    .replace("CLASSES", "[{name: intmac, attributes: {}, subcomponents: []}]"))
    assert run(["energy", "tables", str(arch), "--out", str(tmp_path / "o3"),
                "--classes", "primitives"], monkeypatch) == 0
    err = capsys.readouterr().err
    assert "define intmac; coexplore does not read compound classes: intmac is priced as coexplore's built-in" in err
    # a class of its own name is refused where used, and said so up front
    arch.write_text(EX04.replace("CLASSES", "[{name: my_fifo, attributes: {}, subcomponents: []}]"))
    assert run(["energy", "tables", str(arch), "--out", str(tmp_path / "o4"), "--classes", "primitives"],
               monkeypatch) == 0
    assert "my_fifo has no built-in estimator: a component of that class is refused" in capsys.readouterr().err


def test_tables_refuse_sizes_that_are_not_positive_whole_counts(monkeypatch, capsys, tmp_path):
    for bad in ("depth: 0", "depth: 64.5", "depth: .inf"):
        arch = tmp_path / "arch.yaml"
        arch.write_text(EX04.replace("depth: 64", bad).replace("CLASSES", "[]"))
        assert run(["energy", "tables", str(arch), "--out", str(tmp_path / "o")], monkeypatch) == 2
        assert "attributes.depth" in capsys.readouterr().err


def test_tables_of_a_v04_node_list_equal_those_of_its_flattened_form(monkeypatch, capsys, tmp_path):
    """The official exercise 04's node-list arch.yaml and the flattened architecture timeloopfe
    made of it (parsed-processed-input.yaml) give the same energy per level and action."""
    from coexplore.spec.ert import level_key
    case = Path(__file__).parent / "data" / "exercises_v4" / "v4_ex04_conv1d_oc_ic_3levelspatial_kp"
    got, names = {}, {}
    for name, src in (("nodes", case / "inputs" / "3levelspatial.arch.yaml"),
                      ("flat", case / "parsed-processed-input.yaml")):
        assert run(["energy", "tables", str(src), "--out", str(tmp_path / name), "--classes", "primitives"],
                   monkeypatch) == 0
        tables = yaml.safe_load((tmp_path / name / "ERT.yaml").read_text())["ERT"]["tables"]
        got[name] = {level_key(t["name"]): {a["name"]: a["energy"] for a in t["actions"]} for t in tables}
        names[name] = sorted(t["name"] for t in tables)
    assert got["nodes"] == got["flat"] and len(got["flat"]) >= 4
    # named as timeloopfe names them, after the top container (`System_top_level.MainMemory[1..1]`)
    assert names["nodes"] == names["flat"] and names["flat"][0].startswith("System_top_level.")


def test_tables_json(monkeypatch, capsys, tmp_path):
    import re
    arch = DATA / "simba_like_pe8_glb4k" / "processed.yaml"
    assert run(["energy", "tables", str(arch), "--out", str(tmp_path), "--json"], monkeypatch) == 0
    data = json.loads(capsys.readouterr().out)
    ert = yaml.safe_load(Path(data["ert_file"]).read_text())["ERT"]["tables"]
    art = yaml.safe_load(Path(data["art_file"]).read_text())["ART"]["tables"]
    assert data["ert_tables"] == len(ert) and data["art_tables"] == len(art)
    assert data["estimator"].startswith("coexplore-builtin")
    by_name = {}
    for t in art:
        lo, hi = map(int, re.search(r"\[(\d+)\.\.(\d+)\]$", t["name"]).groups())
        by_name[re.sub(r"\[\d+\.\.\d+\]$", "", t["name"]).split(".")[-1]] = (hi - lo + 1, float(t["area"]))
    assert {a["component"]: (a["instances"], a["area_um2_each"]) for a in data["area"]} == by_name
    assert data["area_um2"] == pytest.approx(sum(n * a for n, a in by_name.values()), rel=1e-12)


def _edit_grid(tmp_path, column, value, line=1):
    rows = list(csv.reader(GRID.open(newline="")))
    rows[line][rows[0].index(column)] = value
    f = tmp_path / "grid.csv"
    with f.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    return f



@pytest.mark.parametrize("column, value, says", [
    ("row", "abc", "key 'row'"), ("attributes_json", "[1, 2]", "key 'attributes_json'"),
    ("attributes_json", "{x", "not JSON"), ("energy_pJ_full", "nan", "key 'energy_pJ_full'"),
    ("energy_pJ_full", "inf", "finite"), ("area_um2_full", "-3", "key 'area_um2_full'"),
    ("energy_pJ_full", "abc", "not a number"),
    # the rounded columns are read too, and must be the full ones rounded (a hand-edited cell)
    ("energy_pJ", "abc", "key 'energy_pJ'"), ("energy_pJ", "inf", "key 'energy_pJ'"),
    ("area_um2", "-1", "key 'area_um2'"), ("energy_pJ", "9999", "not energy_pJ_full = 512 rounded"),
    pytest.param("energy_pJ_full", "0" * 200_000, "field larger than field limit", id="huge-cell")])
def test_a_malformed_grid_cell_is_one_line_naming_its_column(monkeypatch, capsys, tmp_path, column, value, says):
    f = _edit_grid(tmp_path, column, value)
    assert run(["energy", "check", str(f)], monkeypatch) == 2
    err = capsys.readouterr().err
    assert says in err and str(f) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_an_empty_or_ragged_grid_is_refused(monkeypatch, capsys, tmp_path):
    header, first = GRID.read_text().splitlines()[:2]
    for name, text, says in (("empty.csv", header + "\n", "no rows after the header"),
                             ("short.csv", header + "\n" + first + "\n" + ",".join(first.split(",")[:5]) + "\n",
                              "line 3 has fewer cells than the header")):
        (tmp_path / name).write_text(text)
        assert run(["energy", "check", str(tmp_path / name)], monkeypatch) == 2
        assert says in capsys.readouterr().err


def test_a_subclass_is_priced_as_its_class_whatever_the_class(tmp_path):
    """Accelergy prices `class: SRAM, subclass: regfile` as a regfile (timeloop-accelergy-exercises
    tutorial 02 writes `class: SRAM, subclass: register` for a zero-energy register of its own)."""
    from coexplore.energy.components import estimate_component
    attrs = {"width": 8, "depth": 16, "technology": "45nm"}
    regfile = estimate_component("regfile", attrs).actions
    assert estimate_component("SRAM", {**attrs, "subclass": "regfile"}).actions == regfile
    assert estimate_component("storage", attrs, subclass="regfile").actions == regfile
    assert estimate_component("SRAM", attrs).actions != regfile
    # a subclass of the user's own: priced as its class, and said so (it was silently so)
    own = estimate_component("SRAM", {**attrs, "subclass": "register"})
    assert own.actions == estimate_component("SRAM", attrs).actions and not own.accelergy_compatible
    assert any("subclass register has no built-in estimator: priced as its class SRAM" in w for w in own.warnings)
    for cls, attrs2, key in (("storage", {**attrs, "subclass": "register"}, "subclass"), ("SRAM_fifo", {}, "class")):
        with pytest.raises(CoexploreError) as err:
            estimate_component(cls, attrs2)
        assert err.value.key == key and "no built-in estimator" in err.value.message
        assert "--energy accelergy" in err.value.expected and "--ert" in err.value.expected   # the way out


def test_port_counts_the_estimate_does_not_model_are_said():
    from coexplore.energy.components import estimate_component
    attrs = {"width": 64, "depth": 4096, "technology": "45nm"}
    plain = estimate_component("SRAM", attrs)
    two = estimate_component("SRAM", {**attrs, "n_rw_ports": 2})
    assert plain.actions == two.actions and not plain.warnings
    assert any("n_rw_ports: 2 are not modelled" in w for w in two.warnings)
    assert not estimate_component("SRAM", {**attrs, "n_rw_ports": 1, "n_rd_ports": 0}).warnings


def test_a_misspelt_technology_inherited_from_a_container_is_named(tmp_path, monkeypatch, capsys):
    """User study: `tecnology: 40nm` on a v0.3 container said only that SRAM needs 'technology'."""
    src = Path(__file__).parent / "data" / "exercises_v3" / "v3_ex02_conv1d_oc_2level_tiled" / "arch.yaml"
    text = src.read_text()
    assert "      technology: 40nm" in text
    (tmp_path / "arch.yaml").write_text(text.replace("      technology: 40nm", "      tecnology: 40nm"))
    assert run(["energy", "tables", str(tmp_path / "arch.yaml"), "--classes", "primitives", "--out",
                str(tmp_path / "o")], monkeypatch) == 2
    assert "needs attribute 'technology' (the file has 'tecnology': 'technology' misspelt?)" in capsys.readouterr().err
