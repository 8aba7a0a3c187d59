"""`coexplore arch generate`: files per distinct core, --ert-from, errors as one line + exit 2."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest
import yaml

import coexplore.cli.main as cli_main
from coexplore.arch import timeloop_yaml

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "arches"


@pytest.fixture
def run(monkeypatch):
    # only the arch sub-command: the test must not depend on other commands' modules
    monkeypatch.setattr(cli_main, "COMMANDS", ("arch",))
    return lambda *argv: cli_main.main([str(a) for a in argv])


@pytest.mark.parametrize("system,ref", [("simba.yaml", "simba_like"), ("eyeriss.yaml", "eyeriss_like")])
def test_generate_with_corpus_tables(run, tmp_path, capsys, system, ref):
    core = ref.split("_")[0]
    code = run("arch", "generate", ROOT / "arch" / system, "--out", tmp_path, "--ert-from", DATA / ref)
    assert code == 0
    out = tmp_path / core
    assert sorted(p.name for p in out.iterdir()) == ["ART.yaml", "ERT.yaml", "arch.yaml",
                                                    "constraints.yaml", "processed.yaml"]
    assert filecmp.cmp(out / "ERT.yaml", DATA / ref / "ERT.yaml", shallow=False)
    assert filecmp.cmp(out / "ART.yaml", DATA / ref / "ART.yaml", shallow=False)
    got = timeloop_yaml.load((out / "arch.yaml").read_text())["architecture"]
    want = timeloop_yaml.load((DATA / ref / "arch.yaml").read_text())["architecture"]
    assert timeloop_yaml.plain(got) == timeloop_yaml.plain(want)
    levels = yaml.safe_load((out / "processed.yaml").read_text())["architecture"]["subtree"][0]["local"]
    want_levels = yaml.safe_load((DATA / ref / "processed.yaml").read_text())["architecture"]["subtree"][0]["local"]
    assert [(e["name"], e["attributes"]) for e in levels] == [(e["name"], e["attributes"]) for e in want_levels]
    assert "copied from" in capsys.readouterr().out


def test_generate_writes_each_distinct_core_once(run, tmp_path, capsys):
    code = run("arch", "generate", ROOT / "arch" / "hetero_2simba_2eyeriss.yaml", "--out", tmp_path)
    assert code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [".coexplore-arch.json", "eyeriss", "simba"]
    for core in ("simba", "eyeriss"):
        files = sorted(p.name for p in (tmp_path / core).iterdir())
        assert files == ["ART.yaml", "ERT.yaml", "arch.yaml", "constraints.yaml", "processed.yaml"]
        ert = yaml.safe_load((tmp_path / core / "ERT.yaml").read_text())
        names = {t["name"] for t in ert["ERT"]["tables"]}
        top = "System_top_level" if core == "simba" else "system_top_level"
        assert f"{top}.mac[1..{256 if core == 'simba' else 168}]" in names
        for t in ert["ERT"]["tables"]:
            assert all(a["energy"] >= 0 for a in t["actions"])
    assert capsys.readouterr().out.count("built-in estimator") == 2
    # the estimated tables name exactly the generated levels: --ert-from accepts them back
    code = run("arch", "generate", ROOT / "arch" / "hetero_2simba_2eyeriss.yaml",
               "--out", tmp_path / "again", "--ert-from", tmp_path)
    assert code == 0
    assert filecmp.cmp(tmp_path / "again" / "eyeriss" / "ERT.yaml", tmp_path / "eyeriss" / "ERT.yaml",
                       shallow=False)


def test_ert_from_wrong_design_is_refused(run, tmp_path, capsys):
    # the eyeriss table does not price simba's levels
    code = run("arch", "generate", ROOT / "arch" / "simba.yaml", "--out", tmp_path,
               "--ert-from", DATA / "eyeriss_like")
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "ERT.yaml" in err and "System_top_level.DRAM[1..1]" in err
    assert not (tmp_path / "simba").exists()
    # a resized core no longer fits the reference table either (instances are in the names)
    system = tmp_path / "pe8.yaml"
    doc = yaml.safe_load((ROOT / "arch" / "simba.yaml").read_text())
    doc["system"]["cores"][0]["params"] = {"pe_mesh_x": 8}
    doc["workloads"] = []
    system.write_text(yaml.safe_dump(doc))
    code = run("arch", "generate", system, "--out", tmp_path / "o", "--ert-from", DATA / "simba_like")
    assert code == 2 and "PEInputBuffer[1..8]" in capsys.readouterr().err


def test_malformed_system_is_one_line_exit_2(run, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("system:\n  dram: {bandwidth_GBps: 10}\n  cores:\n  - {template: simba, grid: [2, 0]}\n")
    code = run("arch", "generate", bad, "--out", tmp_path / "out")
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(bad) in err and "system.cores[0].grid" in err and "[rows, columns]" in err


def test_a_misspelt_workload_is_said_before_anything_is_written(run, tmp_path, capsys):
    """arch generate checks the system file as schedule and sweep read it, its workloads too."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("system:\n  dram: {bandwidth_GBps: 10}\n  cores:\n  - {template: simba}\nworkloads: [alexnett]\n")
    assert run("arch", "generate", bad, "--out", tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "workloads[0]" in err and "alexnet," in err
    assert not (tmp_path / "out").exists()


def test_energy_accelergy_needs_the_tool(run, tmp_path, capsys, monkeypatch):
    # with no accelergy executable on PATH the real-tool estimator is an error, not a fallback
    monkeypatch.setenv("PATH", str(tmp_path))
    code = run("arch", "generate", ROOT / "arch" / "simba.yaml", "--out", tmp_path / "o",
               "--energy", "accelergy")
    assert code == 2
    assert "accelergy" in capsys.readouterr().err
    assert not (tmp_path / "o" / "simba" / "ERT.yaml").exists()


def test_generate_prices_before_writing_and_surfaces_estimator_warnings(tmp_path):
    """A failing generate leaves the folder as it was; estimator warnings reach stderr and the ERT."""
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[1]
    good = tmp_path / "good.yaml"
    good.write_text((root / "arch" / "simba.yaml").read_text())
    out = tmp_path / "out"
    run = lambda f: subprocess.run([sys.executable, "-m", "coexplore.cli.main", "arch", "generate", str(f),
                                    "--out", str(out)], capture_output=True, text=True)
    assert run(good).returncode == 0
    before = {p: p.read_bytes() for p in out.rglob("*.yaml")}
    bad = tmp_path / "bad.yaml"                 # valid architecture, a node the estimator refuses
    bad.write_text(good.read_text().replace("technology: 45nm", "technology: 3nm")
                   if "technology: 45nm" in good.read_text() else
                   good.read_text().replace("system:\n", "system:\n  technology: 3nm\n", 1))
    r = run(bad)
    assert r.returncode == 2 and "technology" in r.stderr
    assert {p: p.read_bytes() for p in out.rglob("*.yaml")} == before
    eyeriss = subprocess.run([sys.executable, "-m", "coexplore.cli.main", "arch", "generate",
                              str(root / "arch" / "eyeriss.yaml"), "--out", str(tmp_path / "ey")],
                             capture_output=True, text=True)
    assert eyeriss.returncode == 0 and "warning" in eyeriss.stderr and "32nm" in eyeriss.stderr
    assert "# warning:" in (tmp_path / "ey" / "eyeriss" / "ERT.yaml").read_text()


def test_generate_json_lists_each_core_and_its_files(run, tmp_path, capsys):
    import json
    code = run("arch", "generate", ROOT / "arch" / "hetero_2simba_2eyeriss.yaml", "--out", tmp_path, "--json")
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    spec = yaml.safe_load((ROOT / "arch" / "hetero_2simba_2eyeriss.yaml").read_text())
    assert data["cores_total"] == sum(c.get("count", 1) for c in spec["system"]["cores"])
    assert sorted(c["name"] for c in data["cores"]) == ["eyeriss", "simba"]
    for core in data["cores"]:
        for kind, path in core["files"].items():
            assert Path(path).is_file() and Path(path).name == f"{kind}.yaml"
        levels = yaml.safe_load(Path(core["files"]["processed"]).read_text())["architecture"]["subtree"][0]["local"]
        mac = levels[-1]["name"]
        assert core["macs"] == int(mac.split("..")[1].rstrip("]")) and core["ert_art"] == "built-in estimator"
        # area of one copy: every ART entry's area times the instances its [1..N] name gives
        tables = yaml.safe_load(Path(core["files"]["ART"]).read_text())["ART"]["tables"]
        um2 = sum(t["area"] * (int(t["name"].rsplit("..", 1)[1].rstrip("]")) if ".." in t["name"] else 1)
                  for t in tables)
        assert core["area_mm2"] == pytest.approx(um2 / 1e6, rel=1e-12) and core["area_mm2"] > 0
    assert data["offchip_bytes_per_cycle"] == pytest.approx(data["offchip_GBps"] / data["clock_GHz"])


def test_a_core_size_too_large_for_the_model_is_refused(run, tmp_path, capsys):
    text = (ROOT / "arch" / "hetero_2simba_2eyeriss.yaml").read_text()
    text = text.replace("params: {}                  # 14x12 PEs", "params: {glb_depth: 100000000000000000000}  #", 1)
    text = text.replace("../problems/", f"{ROOT}/problems/").replace("../mappers/", f"{ROOT}/mappers/")
    f = tmp_path / "sys.yaml"
    f.write_text(text)
    assert "glb_depth: 1000" in text
    assert run("arch", "generate", f, "--out", tmp_path / "o") == 2
    err = capsys.readouterr().err
    assert "system.cores[1].params.glb_depth" in err and "too large" in err and "Traceback" not in err


def test_tables_priced_from_a_generated_arch_yaml_fit_the_generated_core(monkeypatch, tmp_path, capsys):
    """arch generate -> energy tables of its v0.4 arch.yaml -> arch generate --ert-from those tables:
    the tables are named after the top container (System_top_level), as the core's levels are."""
    monkeypatch.setattr(cli_main, "COMMANDS", ("arch", "energy"))
    run = lambda *argv: cli_main.main([str(a) for a in argv])      # noqa: E731
    assert run("arch", "generate", ROOT / "arch" / "simba.yaml", "--out", tmp_path / "gen") == 0
    assert run("energy", "tables", tmp_path / "gen" / "simba" / "arch.yaml", "--out", tmp_path / "tables") == 0
    assert run("arch", "generate", ROOT / "arch" / "simba.yaml", "--out", tmp_path / "again",
               "--ert-from", tmp_path / "tables") == 0, capsys.readouterr().err


def test_generate_replaces_its_own_files_but_never_a_users(run, tmp_path, capsys):
    """User study: --out wrote over a hand-written arch.yaml without a word. A rerun replaces what
    an earlier run wrote; a file it did not write (or one edited since) stops it, before any write."""
    system = ROOT / "arch" / "simba_2x2.yaml"
    assert run("arch", "generate", system, "--out", tmp_path) == 0
    before = {p: p.read_bytes() for p in (tmp_path / "simba").iterdir()}
    assert run("arch", "generate", system, "--out", tmp_path) == 0          # a rerun: its own files
    assert {p: p.read_bytes() for p in (tmp_path / "simba").iterdir()} == before
    capsys.readouterr()
    for edit in ("arch.yaml", "ERT.yaml"):
        mine = tmp_path / "simba" / edit
        mine.write_text(mine.read_text() + "# my change\n")
        kept = mine.read_bytes()
        assert run("arch", "generate", system, "--out", tmp_path) == 2
        err = capsys.readouterr().err
        assert f"holds simba/{edit}" in err and "--out" in err and "Traceback" not in err, err
        assert mine.read_bytes() == kept
        mine.write_bytes(before[mine])
    (tmp_path / "hand").mkdir()
    own = tmp_path / "hand" / "x.yaml"
    own.write_text("mine")                              # a folder no core writes: left alone, no refusal
    assert run("arch", "generate", system, "--out", tmp_path) == 0 and own.read_text() == "mine"


def test_a_core_the_system_no_longer_has_loses_its_generated_files(run, tmp_path, capsys):
    """User study: regenerating a system without one of its cores into the same --out left that
    core's files (and manifest entries) behind, silently. They are removed, an edited file kept."""
    import json
    two = tmp_path / "two.yaml"
    data = {"system": yaml.safe_load((ROOT / "arch" / "hetero_2simba_2eyeriss.yaml").read_text())["system"]}
    two.write_text(yaml.safe_dump(data))
    assert run("arch", "generate", two, "--out", tmp_path / "o") == 0
    cores = sorted(p.name for p in (tmp_path / "o").iterdir() if p.is_dir())
    assert len(cores) == 2
    gone, stays = cores
    kept = tmp_path / "o" / gone / "ERT.yaml"
    kept.write_text(kept.read_text() + "# mine\n")
    data["system"]["cores"] = [c for c in data["system"]["cores"] if gone not in json.dumps(c)]
    one = tmp_path / "one.yaml"
    one.write_text(yaml.safe_dump(data))
    capsys.readouterr()
    assert run("arch", "generate", one, "--out", tmp_path / "o") == 0
    err = capsys.readouterr().err
    assert f"removed the files an earlier run wrote for core {gone}" in err and "edited since" in err, err
    assert sorted(p.name for p in (tmp_path / "o" / gone).iterdir()) == ["ERT.yaml"]
    manifest = json.loads((tmp_path / "o" / ".coexplore-arch.json").read_text())
    assert [k for k in manifest if k.startswith(gone + "/")] == [f"{gone}/ERT.yaml"]
    assert (tmp_path / "o" / stays / "arch.yaml").is_file()
