"""A system core of the user's own: `cores: [{arch: FILE, ert: ..., constraints: ...}]` beside
template cores, read as `coexplore evaluate` / `map` read an ARCH file."""

import json
from pathlib import Path
import shutil
import subprocess
import sys

import pytest

from conftest import CORPUS

from coexplore.errors import CoexploreError
from coexplore.search import registry
from coexplore.spec.system import load_system
from coexplore.system.from_system import core_model, system_job_table

ARCHES = CORPUS / "arches"
WORKLOAD = """
workload:
  name: mini
  layers:
  - {name: a, instance: {C: 16, M: 32, R: 3, S: 3, N: 1, P: 14, Q: 14}}
"""


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "coexplore.cli.main", *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture()
def system(tmp_path):
    """simba (template) + the corpus' eyeriss_like v0.4 node list with its ERT/ART beside it."""
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "mine")
    (tmp_path / "mine" / "constraints.yaml").unlink()        # the nodes' own constraints apply
    (tmp_path / "wl.yaml").write_text(WORKLOAD)
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {template: simba}\n"
                    "  - {arch: mine/arch.yaml, count: 2}\nworkloads: [wl.yaml]\n")
    return path


def test_evaluate_on_an_own_core_gives_timeloops_numbers(system):
    """`evaluate SYSTEM --core NAME` on a corpus mapping of that architecture: the reference's numbers."""
    case = next(c for c in sorted((CORPUS / "public" / "eyeriss_like" / "tiny_conv").iterdir())
                if json.loads((c / "expected.json").read_text())["valid"])
    exp = json.loads((case / "expected.json").read_text())
    r = cli("evaluate", system, CORPUS / "layers" / "tiny_conv.yaml", case / "mapping.yaml", "--core", "arch",
            "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["cycles"] == exp["cycles"] and got["energy_pJ"] == pytest.approx(exp["energy_pJ"], rel=1e-9)


def test_an_own_core_in_a_job_table(system):
    spec = load_system(system)
    assert [c.name for c in spec.cores] == ["simba", "arch"] and spec.cores[1].template is None
    table, sysarch = system_job_table(system, layer_mapper=registry.mapper_spec("random"), layer_budget=200)
    assert table.cores == ["simba", "arch_0", "arch_1"]
    assert table.latency[0, 1] == table.latency[0, 2]              # copies of one design
    assert table.latency[0, 1] >= 16 * 32 * 9 * 196 / 168           # at most 168 MACs a cycle
    cm = core_model(sysarch, "arch")
    assert cm.ert.source.endswith("ERT.yaml")                       # the ERT beside it, not the estimator's
    assert cm.constraints["shared_glb"].bypass or cm.constraints["shared_glb"].keep   # the nodes' constraints
    assert "inter_PE_spatial" in [lv.name for lv in cm.context_arch.levels]


def test_arch_generate_copies_an_own_cores_files(system, tmp_path):
    r = cli("arch", "generate", system, "--out", tmp_path / "gen", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    mine = next(c for c in out["cores"] if c["name"] == "arch")
    assert mine["template"] is None and mine["copies"] == 2 and mine["macs"] == 168
    assert (tmp_path / "gen" / "arch" / "arch.yaml").read_bytes() == (ARCHES / "eyeriss_like" / "arch.yaml").read_bytes()
    assert (tmp_path / "gen" / "arch" / "ERT.yaml").read_bytes() == (ARCHES / "eyeriss_like" / "ERT.yaml").read_bytes()
    from coexplore.energy.tables import area_breakdown, read_art
    area = sum(n * a for _, n, a in area_breakdown(read_art(ARCHES / "eyeriss_like" / "ART.yaml"))) / 1e6
    assert mine["area_mm2"] == pytest.approx(area) and "constraints" not in mine["files"]


@pytest.mark.parametrize("core, key, says", [
    ("{template: simba, arch: mine/arch.yaml}", "system.cores[0].template", "both 'template' and 'arch'"),
    ("{arch: mine/arch.yaml, params: {glb_depth: 4}}", "system.cores[0].params", "'params' with 'arch'"),
    ("{template: simba, constraints: c.yaml}", "system.cores[0].constraints", "with a template"),
    ("{arch: mine/nothing.yaml}", "system.cores[0].arch", "no such file"),
    ("{arch: mine/arch.yaml, ert: nothing.yaml}", "system.cores[0].ert", "no such file")])
def test_bad_own_cores_are_named(tmp_path, core, key, says):
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "mine")
    path = tmp_path / "sys.yaml"
    path.write_text(f"system:\n  dram: {{bandwidth_GBps: 8}}\n  cores:\n  - {core}\n")
    with pytest.raises(CoexploreError) as err:
        load_system(path)
    assert err.value.key == key and says in err.value.message


def test_an_own_core_is_swept_by_count_not_by_params(system):
    text = system.read_text()
    system.write_text(text + "sweep: {axes: {cores.arch.count: [1, 3]}}\n")
    spec = load_system(system)
    assert spec.with_value("cores.arch.count", 3).cores[1].count == 3
    system.write_text(text + "sweep: {axes: {cores.arch.params.glb_depth: [1, 3]}}\n")
    with pytest.raises(CoexploreError, match="architecture file of its own"):
        load_system(system)


def test_an_own_core_without_an_ert_is_priced(tmp_path):
    """No ERT given or beside it: the built-in estimator prices it, as `evaluate` does a node list."""
    (tmp_path / "mine").mkdir()
    shutil.copy(ARCHES / "eyeriss_like" / "arch.yaml", tmp_path / "mine" / "arch.yaml")
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {name: mine, arch: mine/arch.yaml}\n")
    from coexplore.arch.system import load_system_arch
    cm = core_model(load_system_arch(path), "mine")      # what it says is kept for the command to print
    assert "no ERT given" in cm.ert.source and any("ert: FILE in system.cores[0]" in w for w in cm.warnings)
    ert_beside = core_model(load_system_arch(path), "mine").ert
    shutil.copy(ARCHES / "eyeriss_like" / "ERT.yaml", tmp_path / "mine" / "ERT.yaml")
    assert core_model(load_system_arch(path), "mine").ert.source != ert_beside.source


def test_an_own_node_list_core_is_constrained_per_layer_as_map_constrains_its_file(tmp_path):
    """simple_weight_stationary's PE array says `permutation: [C, M], split: 1`, which timeloopfe
    completes per layer (the unit loops first, so C and M go to Y): inside a system the same
    completion, so `schedule` and `map --core` search the space `map FILE` searches."""
    from coexplore.arch.system import load_system_arch
    from coexplore.mapspace import MapSpace
    from coexplore.model.inputs import load_context
    from coexplore.spec.constraints import load_constraints
    shutil.copytree(ARCHES / "simple_weight_stationary", tmp_path / "sws")
    (tmp_path / "sws" / "constraints.yaml").unlink()
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {name: sws, arch: sws/arch.yaml}\n")
    cm = core_model(load_system_arch(path), "sws")
    for layer in ("resnet50_res3a_2b", "bert_qkv"):
        ctx = load_context(tmp_path / "sws" / "arch.yaml", CORPUS / "layers" / f"{layer}.yaml")
        direct = load_constraints(ctx.arch, None, ctx.problem)
        mine = cm.constraints_for(ctx.problem)
        assert mine == direct
        assert mine["inter_PE_spatial"].spatial_permutation[-2:] == ["C", "M"]   # completed: C, M last
        assert MapSpace(ctx.arch, ctx.problem, mine).n_params == MapSpace(ctx.arch, ctx.problem, direct).n_params


def test_a_schedules_run_identity_covers_the_files_an_own_core_is_read_from(system):
    """The ERT and constraints found beside an own core's file count as the run's inputs: editing
    one makes another run (a new folder, no resumed checkpoint), as editing the arch file does."""
    from coexplore.cli.main import build_parser
    from coexplore.cli.schedule import _run_description, system_mapper_option
    args = build_parser().parse_args(["schedule", str(system)])
    desc = lambda: _run_description(args, system_mapper_option(args), 1000)["inputs_sha256"]   # noqa: E731
    before = desc()
    mine = system.parent / "mine"
    assert any(str(mine / "ERT.yaml") in k for k in before)
    with open(mine / "ERT.yaml", "a") as f:
        f.write("# edited\n")
    after = desc()
    assert after != before
    (mine / "constraints.yaml").write_text("architecture_constraints: {targets: []}\n")
    assert desc() != after and any(str(mine / "constraints.yaml") in k for k in desc())


def test_a_name_taken_from_the_arch_file_says_so(tmp_path):
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "a")
    shutil.copytree(ARCHES / "simba_like", tmp_path / "b")
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {arch: a/arch.yaml}\n  - {arch: b/arch.yaml}\n")
    with pytest.raises(CoexploreError, match=r"core name 'arch' \(the arch file's name: give the core a name:\) "
                                             r"already used by system.cores\[0\]"):
        load_system(path)


def test_arch_generate_reads_an_own_core_as_schedule_does(tmp_path):
    """A constraints.yaml beside the file is the one used (copied); an ERT that is no energy table
    of the core is refused, not copied; --ert-from says it leaves own cores alone."""
    shutil.copytree(ARCHES / "simba_like", tmp_path / "mine")
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {name: mine, arch: mine/arch.yaml}\n"
                    "  - {template: eyeriss}\n")
    r = cli("arch", "generate", path, "--out", tmp_path / "gen", "--ert-from", ARCHES / "eyeriss_like")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "gen" / "mine" / "constraints.yaml").read_bytes() == \
        (ARCHES / "simba_like" / "constraints.yaml").read_bytes()
    assert "core mine is priced from its own files, not --ert-from" in r.stderr
    path.write_text(path.read_text().replace("arch: mine/arch.yaml}", "arch: mine/arch.yaml, ert: mine/ART.yaml}"))
    r = cli("arch", "generate", path, "--out", tmp_path / "gen2")
    assert r.returncode == 2 and "ART.yaml" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "gen2" / "mine").exists()


def test_ert_on_the_command_line_replaces_an_own_cores_pricing(tmp_path):
    """`evaluate SYSTEM --core X --ert E`: E prices it, and the core is not priced first (no note
    about the estimator, whose table it would not use)."""
    (tmp_path / "mine").mkdir()
    shutil.copy(ARCHES / "eyeriss_like" / "arch.yaml", tmp_path / "mine" / "arch.yaml")
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {name: mine, arch: mine/arch.yaml}\n")
    case = next(c for c in sorted((CORPUS / "public" / "eyeriss_like" / "tiny_conv").iterdir())
                if json.loads((c / "expected.json").read_text())["valid"])
    exp = json.loads((case / "expected.json").read_text())
    r = cli("evaluate", path, CORPUS / "layers" / "tiny_conv.yaml", case / "mapping.yaml", "--core", "mine",
            "--ert", ARCHES / "eyeriss_like" / "ERT.yaml", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["energy_pJ"] == pytest.approx(exp["energy_pJ"], rel=1e-9)
    assert "built-in estimator" not in r.stderr and "no ERT given" not in r.stderr


def test_an_own_core_with_its_ert_inside_its_file(tmp_path):
    """A flattened architecture carrying its `ERT:` (as timeloop-model takes it): priced with it by
    schedule and written out by arch generate."""
    from coexplore.arch.system import load_system_arch
    from coexplore.spec.ert import load_ert
    from coexplore.spec.yamlio import dump_yaml, load_yaml
    doc = load_yaml(ARCHES / "eyeriss_like" / "processed.yaml")
    doc["ERT"] = load_yaml(ARCHES / "eyeriss_like" / "ERT.yaml")["ERT"]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "whole.yaml").write_text(dump_yaml(doc))
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {name: mine, arch: mine/whole.yaml}\n")
    cm = core_model(load_system_arch(path), "mine")
    ref = load_ert(ARCHES / "eyeriss_like" / "ERT.yaml")
    assert not cm.costs.notes and cm.ert.source == str(tmp_path / "mine" / "whole.yaml")
    r = cli("arch", "generate", path, "--out", tmp_path / "gen", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["cores"][0]["ert_art"].startswith("ERT inside the architecture file")
    written = load_ert(tmp_path / "gen" / "mine" / "ERT.yaml")
    assert written.actions == ref.actions and cm.ert.actions == ref.actions


def test_an_own_cores_whole_spec_is_its_problem_too(tmp_path):
    """`evaluate SYSTEM MAPPING --core X` with X a whole Timeloop spec (architecture and problem), as
    `evaluate SPEC MAPPING` takes it: the exercise's reference numbers."""
    src = Path(__file__).parent / "data" / "exercises_v4" / "v4_ed_simple_weight_stationary"
    shutil.copytree(src, tmp_path / "ed")
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n"
                    "  - {name: ed, arch: ed/parsed-processed-input.yaml}\n")
    ref = json.loads((src / "reference.json").read_text())["summary"]       # Timeloop's own run
    r = cli("evaluate", path, tmp_path / "ed" / "timeloop-mapper.map.yaml", "--core", "ed", "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["cycles"] == ref["cycles"] and got["computes"] == ref["computes"]
    assert got["energy_pJ"] == pytest.approx(ref["energy_pJ_from_per_compute"], rel=1e-6)


def test_a_system_parsed_from_a_document_keeps_its_folder_for_sweep_points(tmp_path, monkeypatch):
    """parse_system(doc, base_dir=D): a sweep point re-reads the own core's path from D, not from
    the working directory."""
    from coexplore.spec.system import parse_system
    from coexplore.spec.yamlio import loads_yaml
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "mine")
    doc = loads_yaml("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {name: m, arch: mine/arch.yaml}\n"
                     "sweep: {axes: {cores.m.count: [1, 2]}}\n")
    monkeypatch.chdir(tmp_path.parent)
    spec = parse_system(doc, base_dir=tmp_path)
    assert spec.with_value("cores.m.count", 2).cores[0].arch == tmp_path / "mine" / "arch.yaml"


def test_arch_generate_never_writes_over_an_own_cores_files(tmp_path):
    """--out holding the core's own folder: refused before anything is written (no file replaced)."""
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "out" / "t")
    (tmp_path / "other.yaml").write_text("architecture_constraints: {targets: []}\n")
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n"
                    "  - {name: t, arch: out/t/arch.yaml, constraints: other.yaml}\n")
    before = {p.name: p.read_bytes() for p in (tmp_path / "out" / "t").iterdir()}
    r = cli("arch", "generate", path, "--out", tmp_path / "out")
    assert r.returncode == 2 and "key '--out'" in r.stderr and "Traceback" not in r.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / "out" / "t").iterdir()} == before


def test_constraints_inside_an_own_cores_file_win_over_a_file_beside_it(tmp_path):
    """As `map FILE` reads it: a whole spec's own constraint targets apply, not a constraints.yaml beside."""
    from coexplore.arch.file_core import FileCore
    from coexplore.spec.yamlio import dump_yaml, load_yaml
    (tmp_path / "w").mkdir()
    doc = load_yaml(ARCHES / "eyeriss_like" / "processed.yaml")
    doc.update(load_yaml(ARCHES / "eyeriss_like" / "constraints.yaml"))
    (tmp_path / "w" / "spec.yaml").write_text(dump_yaml(doc))
    (tmp_path / "w" / "constraints.yaml").write_text("architecture_constraints: {targets: []}\n")
    assert FileCore("w", tmp_path / "w" / "spec.yaml").constraints_sources() == ()
    (tmp_path / "w" / "spec.yaml").write_text(dump_yaml(load_yaml(ARCHES / "eyeriss_like" / "processed.yaml")))
    assert FileCore("w", tmp_path / "w" / "spec.yaml").constraints_sources() == (tmp_path / "w" / "constraints.yaml",)


def test_a_templates_includes_are_part_of_a_schedules_run_identity(tmp_path):
    from coexplore.cli.main import build_parser
    from coexplore.cli.schedule import _run_description, system_mapper_option
    from coexplore.spec.yamlio import dump_yaml, load_yaml
    (tmp_path / "t").mkdir()
    text = dump_yaml(load_yaml(ARCHES / "eyeriss_like" / "processed.yaml"))
    assert "depth: 16384" in text
    (tmp_path / "t" / "depth.txt").write_text("16384")
    (tmp_path / "t" / "core.yaml.jinja2").write_text(text.replace("depth: 16384", "depth: {% include 'depth.txt' %}"))
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {arch: t/core.yaml.jinja2}\n")
    args = build_parser().parse_args(["schedule", str(path)])
    assert load_system(path).cores[0].name == "core"          # the file's name up to its first dot
    before = _run_description(args, system_mapper_option(args), 1000)["inputs_sha256"]
    (tmp_path / "t" / "depth.txt").write_text("32768")
    assert _run_description(args, system_mapper_option(args), 1000)["inputs_sha256"] != before


def test_tables_of_another_design_or_size_are_refused_for_an_own_core(tmp_path):
    """The corpus' eyeriss_like with 7 PE columns instead of 14 (84 PEs), its 168-PE ERT/ART beside it:
    Timeloop would take them by name; the study's energies and area would be another design's."""
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "mine")
    (tmp_path / "mine" / "constraints.yaml").unlink()
    arch = tmp_path / "mine" / "arch.yaml"
    text = arch.read_text()
    assert text.count("spatial: {meshX: 14}") == 1
    arch.write_text(text.replace("spatial: {meshX: 14}", "spatial: {meshX: 7}"))
    (tmp_path / "wl.yaml").write_text(WORKLOAD)
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {arch: mine/arch.yaml}\nworkloads: [wl.yaml]\n")
    r = cli("arch", "generate", path, "--out", tmp_path / "gen")
    assert r.returncode == 2 and "does not fit core 'arch': no entry for" in r.stderr, r.stderr
    assert "ifmap_spad[1..84] (it has ifmap_spad x 168)" in r.stderr and "ERT.yaml" in r.stderr
    r = cli("schedule", path, "--layer-budget", "50", "--budget", "50", "--no-progress", "--out", tmp_path / "s")
    assert r.returncode == 2 and "does not fit core 'arch'" in r.stderr
    # another design's table given with ert: (simba_like's)
    path.write_text(path.read_text().replace("{arch: mine/arch.yaml}",
                                             f"{{arch: mine/arch.yaml, ert: {ARCHES / 'simba_like' / 'ERT.yaml'}}}"))
    r = cli("arch", "generate", path, "--out", tmp_path / "gen")
    assert r.returncode == 2 and "does not fit core 'arch': no entry for" in r.stderr
    # no tables beside it: the built-in estimator prices the 84-PE core (its area below the 168-PE one's)
    (tmp_path / "mine" / "ERT.yaml").unlink()
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {arch: mine/arch.yaml}\nworkloads: [wl.yaml]\n")
    r = cli("arch", "generate", path, "--out", tmp_path / "gen", "--json")
    assert r.returncode == 2 and "ART.yaml" in r.stderr and "does not fit core" in r.stderr   # the ART beside it
    (tmp_path / "mine" / "ART.yaml").unlink()
    r = cli("arch", "generate", path, "--out", tmp_path / "gen", "--json")
    assert r.returncode == 0, r.stderr
    [core] = json.loads(r.stdout)["cores"]
    (tmp_path / "full").mkdir()                          # the 168-PE original, priced the same way
    shutil.copy(ARCHES / "eyeriss_like" / "arch.yaml", tmp_path / "full" / "arch.yaml")
    path.write_text(path.read_text().replace("mine/arch.yaml", "full/arch.yaml"))
    r = cli("arch", "generate", path, "--out", tmp_path / "gen168", "--json")
    assert r.returncode == 0, r.stderr
    [full] = json.loads(r.stdout)["cores"]
    assert (core["macs"], full["macs"]) == (84, 168) and core["area_mm2"] < full["area_mm2"]
