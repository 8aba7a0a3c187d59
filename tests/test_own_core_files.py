"""An own system core's files: explicit ert/constraints, the ART search, per-layer constraints,
run identity, arch generate's output, names and messages."""

import shutil
import sys
from pathlib import Path

import pytest

from conftest import CORPUS

from coexplore.errors import CoexploreError
from coexplore.spec.system import load_system

TESTS = Path(__file__).resolve().parent
ARCHES = CORPUS / "arches"


def _sws_and_given_constraints(tmp_path):
    """simple_weight_stationary as s/ (its nodes' constraints only) and a constraints file given.yaml."""
    shutil.copytree(ARCHES / "simple_weight_stationary", tmp_path / "s")
    (tmp_path / "s" / "constraints.yaml").unlink()
    (tmp_path / "given.yaml").write_text(
        "targets:\n- {target: DRAM, type: temporal, permutation: [N, C, M, P, Q, R, S]}\n")


def _sys(tmp_path, core_line):
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - " + core_line + "\n")
    return path


def _own(tmp_path, line):
    from coexplore.arch.system import load_system_arch
    return load_system_arch(_sys(tmp_path, line))


def test_an_own_cores_architecture_takes_the_cores_name(tmp_path):
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "a")
    core = _own(tmp_path, "{name: mine, arch: a/arch.yaml}").cores["mine"]
    assert core.architecture.name == "mine"


def test_the_art_beside_the_given_ert_comes_first(tmp_path):
    """ART: beside the ERT used, else beside the architecture (docstring of FileCore.tables)."""
    (tmp_path / "a").mkdir()
    shutil.copy(ARCHES / "eyeriss_like" / "arch.yaml", tmp_path / "a" / "arch.yaml")
    shutil.copy(ARCHES / "eyeriss_like" / "ART.yaml", tmp_path / "a" / "ART.yaml")
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "e")
    core = _own(tmp_path, "{name: mine, arch: a/arch.yaml, ert: e/ERT.yaml}").cores["mine"]
    ert, art, _ = core.tables()
    assert ert == ("copied", tmp_path / "e" / "ERT.yaml")
    assert art == ("copied", tmp_path / "e" / "ART.yaml")


def test_the_art_beside_the_architecture_when_none_beside_the_ert(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "e").mkdir()
    shutil.copy(ARCHES / "eyeriss_like" / "arch.yaml", tmp_path / "a" / "arch.yaml")
    shutil.copy(ARCHES / "eyeriss_like" / "ART.yaml", tmp_path / "a" / "ART.yaml")
    shutil.copy(ARCHES / "eyeriss_like" / "ERT.yaml", tmp_path / "e" / "ERT.yaml")
    core = _own(tmp_path, "{name: mine, arch: a/arch.yaml, ert: e/ERT.yaml}").cores["mine"]
    _, art, _ = core.tables()
    assert art == ("copied", tmp_path / "a" / "ART.yaml")


def test_an_art_beside_is_used_even_when_the_ert_is_priced(tmp_path):
    (tmp_path / "a").mkdir()
    shutil.copy(ARCHES / "eyeriss_like" / "arch.yaml", tmp_path / "a" / "arch.yaml")
    shutil.copy(ARCHES / "eyeriss_like" / "ART.yaml", tmp_path / "a" / "ART.yaml")
    core = _own(tmp_path, "{name: mine, arch: a/arch.yaml}").cores["mine"]
    ert, art, _ = core.tables()
    assert ert[0] == "built" and art == ("copied", tmp_path / "a" / "ART.yaml")


def test_a_given_constraints_file_is_the_cores_source_and_in_its_files(tmp_path):
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "a")
    shutil.copy(tmp_path / "a" / "constraints.yaml", tmp_path / "given.yaml")
    (tmp_path / "a" / "constraints.yaml").unlink()
    core = _own(tmp_path, "{name: mine, arch: a/arch.yaml, constraints: given.yaml}").cores["mine"]
    assert core.constraints_sources() == (tmp_path / "given.yaml",)
    assert tmp_path / "given.yaml" in core.files()
    written = core.write(tmp_path / "out")
    assert written["constraints"].read_bytes() == (tmp_path / "given.yaml").read_bytes()


def test_a_given_constraints_file_is_in_a_schedules_run_identity(tmp_path):
    from coexplore.cli.main import build_parser
    from coexplore.cli.schedule import _run_description, system_mapper_option
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "a")
    shutil.copy(tmp_path / "a" / "constraints.yaml", tmp_path / "given.yaml")
    (tmp_path / "a" / "constraints.yaml").unlink()
    (tmp_path / "wl.yaml").write_text("workload:\n  name: mini\n  layers:\n  - {name: a, instance: "
                                      "{C: 16, M: 32, R: 3, S: 3, N: 1, P: 14, Q: 14}}\n")
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {name: mine, arch: a/arch.yaml, "
                    "constraints: given.yaml}\nworkloads: [wl.yaml]\n")
    args = build_parser().parse_args(["schedule", str(path)])
    before = _run_description(args, system_mapper_option(args), 1000)["inputs_sha256"]
    with open(tmp_path / "given.yaml", "a") as f:
        f.write("# edited\n")
    assert _run_description(args, system_mapper_option(args), 1000)["inputs_sha256"] != before


def test_an_own_cores_given_constraints_apply_per_layer(tmp_path):
    """constraints_for(layer) reads the given file as `coexplore map ARCH --constraints FILE` does."""
    from coexplore.model.inputs import load_context
    from coexplore.spec.constraints import load_constraints
    from coexplore.system.from_system import core_model
    from coexplore.arch.system import load_system_arch
    _sws_and_given_constraints(tmp_path)
    path = _sys(tmp_path, "{name: s, arch: s/arch.yaml, constraints: given.yaml}")
    cm = core_model(load_system_arch(path), "s")
    ctx = load_context(tmp_path / "s" / "arch.yaml", CORPUS / "layers" / "tiny_conv.yaml")
    want = load_constraints(ctx.arch, tmp_path / "given.yaml", ctx.problem)
    assert want != load_constraints(ctx.arch, None, ctx.problem)      # the file says something
    assert cm.constraints_for(ctx.problem) == want


def _two_constraint_files(tmp_path):
    """A v0.3 setup's two files: the architecture constraints and the mapspace constraints."""
    _sws_and_given_constraints(tmp_path)
    (tmp_path / "arch_c.yaml").write_text(
        "architecture_constraints:\n  targets:\n  - {target: shared_glb, type: bypass, keep: [Inputs, Outputs], "
        "bypass: [Weights]}\n")
    (tmp_path / "map_c.yaml").write_text(
        "mapspace_constraints:\n  targets:\n  - {target: DRAM, type: temporal, permutation: [N, C, M, P, Q, R, S]}\n")


def test_an_own_core_takes_several_constraints_files_combined_as_map_combines_them(tmp_path):
    from coexplore.arch.system import load_system_arch
    from coexplore.model.inputs import load_context
    from coexplore.spec.constraints import load_constraints
    from coexplore.system.from_system import core_model
    _two_constraint_files(tmp_path)
    path = _sys(tmp_path, "{name: s, arch: s/arch.yaml, constraints: [arch_c.yaml, map_c.yaml]}")
    system = load_system_arch(path)
    core = system.cores["s"]
    assert core.constraints_sources() == (tmp_path / "arch_c.yaml", tmp_path / "map_c.yaml")
    assert {tmp_path / "arch_c.yaml", tmp_path / "map_c.yaml"} <= set(core.files())
    ctx = load_context(tmp_path / "s" / "arch.yaml", CORPUS / "layers" / "tiny_conv.yaml")
    both = load_constraints(ctx.arch, [tmp_path / "arch_c.yaml", tmp_path / "map_c.yaml"], ctx.problem)
    one = load_constraints(ctx.arch, tmp_path / "arch_c.yaml", ctx.problem)
    assert both != one and "Weights" in both["shared_glb"].bypass
    assert core_model(system, "s").constraints_for(ctx.problem) == both
    # arch generate's one constraints.yaml reads back to the same constraints
    written = core.write(tmp_path / "out")
    assert load_constraints(ctx.arch, written["constraints"], ctx.problem) == both


def test_one_of_several_constraints_files_missing_is_named_by_its_index(tmp_path):
    _two_constraint_files(tmp_path)
    with pytest.raises(CoexploreError) as err:
        load_system(_sys(tmp_path, "{name: s, arch: s/arch.yaml, constraints: [arch_c.yaml, nope.yaml]}"))
    assert err.value.key == "system.cores[0].constraints[1]" and "nope.yaml" in err.value.message
    with pytest.raises(CoexploreError) as err:
        load_system(_sys(tmp_path, "{name: s, arch: s/arch.yaml, constraints: []}"))
    assert err.value.key == "system.cores[0].constraints"


def test_two_constraints_files_fixing_one_level_twice_are_refused_as_map_refuses_them(tmp_path):
    from coexplore.arch.system import load_system_arch
    from coexplore.system.from_system import core_model
    _two_constraint_files(tmp_path)
    (tmp_path / "again.yaml").write_text((tmp_path / "map_c.yaml").read_text().replace("N, C, M", "C, N, M"))
    path = _sys(tmp_path, "{name: s, arch: s/arch.yaml, constraints: [map_c.yaml, again.yaml]}")
    with pytest.raises(CoexploreError, match="DRAM"):
        core_model(load_system_arch(path), "s")


@pytest.mark.parametrize("k", ["ert", "constraints"])
def test_an_ert_or_constraints_with_a_template_is_refused(tmp_path, k):
    (tmp_path / "c.yaml").write_text("targets: []\n")
    with pytest.raises(CoexploreError) as err:
        load_system(_sys(tmp_path, f"{{template: simba, {k}: c.yaml}}"))
    assert err.value.key == f"system.cores[0].{k}"


@pytest.mark.parametrize("k, says", [("ert", "energy table"), ("constraints", "constraints file")])
def test_a_missing_ert_or_constraints_file_says_what_it_should_be(tmp_path, k, says):
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "a")
    with pytest.raises(CoexploreError) as err:
        load_system(_sys(tmp_path, f"{{name: m, arch: a/arch.yaml, {k}: nowhere.yaml}}"))
    assert err.value.key == f"system.cores[0].{k}" and says in err.value.expected


def test_a_bad_name_taken_from_the_arch_file_says_so(tmp_path):
    (tmp_path / "a").mkdir()
    shutil.copy(ARCHES / "eyeriss_like" / "arch.yaml", tmp_path / "a" / "9bad.yaml")
    with pytest.raises(CoexploreError, match=r"core name '9bad' \(the arch file's name: give the core a name:\)"):
        load_system(_sys(tmp_path, "{arch: a/9bad.yaml}"))


def test_a_sweep_path_to_a_missing_core_lists_an_unnamed_own_core(tmp_path):
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "a")
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {arch: a/arch.yaml}\n"
                    "sweep:\n  axes:\n    cores.nope.count: [1, 2]\n")
    with pytest.raises(CoexploreError) as err:
        load_system(path)
    assert "no core named 'nope'" in err.value.message and "arch" in err.value.expected


def test_a_schedules_layer_search_gets_the_own_cores_per_layer_constraints(tmp_path, monkeypatch):
    """system_job_table maps each layer with CoreModel.constraints_for(layer), as `map` would."""
    import coexplore.system.from_system as fs
    from coexplore.spec.constraints import load_constraints
    _sws_and_given_constraints(tmp_path)
    (tmp_path / "wl.yaml").write_text("workload:\n  name: mini\n  layers:\n  - {name: a, instance: "
                                      "{C: 16, M: 32, R: 3, S: 3, N: 1, P: 14, Q: 14}}\n")
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n  - {name: s, arch: s/arch.yaml, "
                    "constraints: given.yaml}\nworkloads: [wl.yaml]\n")
    seen = []

    class Stop(Exception):
        pass

    def fake(ctx, constraints, *a, **k):
        seen.append((ctx, constraints))
        raise Stop()
    monkeypatch.setattr(fs, "map_layer", fake)
    with pytest.raises(Stop):
        fs.system_job_table(path, layer_budget=10)
    ctx, cons = seen[0]
    assert cons == load_constraints(ctx.arch, tmp_path / "given.yaml", ctx.problem)


def _args(path, core):
    import argparse
    return argparse.Namespace(problem=None, arch=str(path), core=core)


def test_only_the_chosen_own_cores_whole_spec_is_the_problem(tmp_path):
    from coexplore.cli.inputs import problem_in_arch
    src = Path(TESTS / "data/exercises_v4/v4_ed_simple_weight_stationary")
    shutil.copytree(src, tmp_path / "ed")
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "a")
    path = tmp_path / "sys.yaml"
    path.write_text("system:\n  dram: {bandwidth_GBps: 8}\n  cores:\n"
                    "  - {name: ed, arch: ed/parsed-processed-input.yaml}\n  - {name: eye, arch: a/arch.yaml}\n")
    args = _args(path, "ed")
    problem_in_arch(args)
    assert Path(args.problem) == tmp_path / "ed" / "parsed-processed-input.yaml"
    for core in ("eye", None):          # an architecture without a problem, or no core chosen: no problem
        with pytest.raises(CoexploreError, match="no PROBLEM given"):
            problem_in_arch(_args(path, core))


def test_arch_generate_names_an_own_cores_files_and_levels(tmp_path):
    import json
    import subprocess
    from coexplore.spec.architecture import load_architecture
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "a")
    path = _sys(tmp_path, "{name: mine, arch: a/arch.yaml}")
    cmd = [sys.executable, "-m", "coexplore.cli.main", "arch", "generate", str(path), "--out", str(tmp_path / "g")]
    r = subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    arch = load_architecture(tmp_path / "a" / "arch.yaml")
    assert json.loads(r.stdout)["cores"][0]["levels"] == len(arch.levels) + 1     # storage levels + compute
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if line.startswith("mine "))
    assert "(file)" in row and "None" not in row
    assert "mine/: arch.yaml, constraints.yaml, ERT.yaml, ART.yaml" in r.stdout


def test_arch_generate_writes_an_ert_inside_the_file_under_its_ert_key(tmp_path):
    """ERT.yaml as Timeloop reads it: the table under a top-level ERT: key."""
    import subprocess
    from coexplore.spec.yamlio import dump_yaml, load_yaml
    doc = load_yaml(ARCHES / "eyeriss_like" / "processed.yaml")
    doc["ERT"] = load_yaml(ARCHES / "eyeriss_like" / "ERT.yaml")["ERT"]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "whole.yaml").write_text(dump_yaml(doc))
    path = _sys(tmp_path, "{name: mine, arch: mine/whole.yaml}")
    r = subprocess.run([sys.executable, "-m", "coexplore.cli.main", "arch", "generate", str(path), "--out",
                        str(tmp_path / "g")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert load_yaml(tmp_path / "g" / "mine" / "ERT.yaml") == {"ERT": doc["ERT"]}


def test_a_worker_searches_with_the_own_cores_per_layer_constraints(tmp_path, monkeypatch):
    """_map_in_worker (workers > 1) passes constraints_for(layer), as the serial path does."""
    import coexplore.system.from_system as fs
    from coexplore.arch.system import load_system_arch
    from coexplore.spec.constraints import load_constraints
    from coexplore.spec.workload import load_workload
    _sws_and_given_constraints(tmp_path)
    (tmp_path / "wl.yaml").write_text("workload:\n  name: mini\n  layers:\n  - {name: a, instance: "
                                      "{C: 16, M: 32, R: 3, S: 3, N: 1, P: 14, Q: 14}}\n")
    path = _sys(tmp_path, "{name: s, arch: s/arch.yaml, constraints: given.yaml}")
    cm = fs.core_model(load_system_arch(path), "s")
    layer = load_workload(tmp_path / "wl.yaml").layers[0]

    class Res:
        def __init__(self, ctx, cons):
            self.best, self.mapping, self.cached = {"ctx": ctx, "cons": cons}, [], False
    monkeypatch.setattr(fs, "map_layer", lambda ctx, cons, *a, **k: Res(ctx, cons))
    i, best, delta = fs._map_in_worker((0, cm, layer, None, 10, 0, None))
    ctx, cons = best["ctx"], best["cons"]
    assert cons == load_constraints(ctx.arch, tmp_path / "given.yaml", ctx.problem) and delta is None     # no cache: nothing to take over


def test_core_with_constraints_on_the_command_line_completes_them_for_the_layer(tmp_path):
    """`map SYSTEM PROBLEM --core X --constraints F` reads F as `map ARCH PROBLEM --constraints F`."""
    from coexplore.cli.inputs import load_inputs
    from coexplore.cli.main import build_parser
    from coexplore.model.inputs import load_context
    from coexplore.spec.constraints import load_constraints
    _sws_and_given_constraints(tmp_path)
    path = _sys(tmp_path, "{name: s, arch: s/arch.yaml}")
    problem = CORPUS / "layers" / "resnet50_res3a_2b.yaml"
    args = build_parser().parse_args(["map", str(path), str(problem), "--core", "s",
                                      "--constraints", str(tmp_path / "given.yaml")])
    ctx, cons = load_inputs(args, with_constraints=True)
    ref = load_context(tmp_path / "s" / "arch.yaml", problem)
    assert cons == load_constraints(ref.arch, tmp_path / "given.yaml", ref.problem)


def test_a_template_arch_file_is_written_rendered(tmp_path):
    from coexplore.spec.yamlio import load_yaml
    (tmp_path / "a").mkdir()
    text = (ARCHES / "eyeriss_like" / "arch.yaml").read_text().replace("depth: 16384", "depth: {{ 128 * 128 }}")
    assert "{{ 128 * 128 }}" in text
    (tmp_path / "a" / "arch.yaml").write_text(text)
    core = _own(tmp_path, "{name: mine, arch: a/arch.yaml}").cores["mine"]
    written = core.write(tmp_path / "out")["arch"]
    body = "\n".join(line.split("#", 1)[0] for line in written.read_text().splitlines())
    assert "{{" not in body
    assert load_yaml(written) == load_yaml(ARCHES / "eyeriss_like" / "arch.yaml")


def test_an_own_cores_warnings_carry_its_erts_notes(tmp_path):
    """An ERT whose DRAM table prices no read: the notes `evaluate` gives (level_costs) are the core's
    warnings. (An ERT without a table for a level does not fit an own core: refused, tested elsewhere.)"""
    from coexplore.arch.system import load_system_arch
    from coexplore.model.evaluate import level_costs
    from coexplore.spec.ert import load_ert
    from coexplore.spec.yamlio import dump_yaml, load_yaml
    from coexplore.system.from_system import core_model
    shutil.copytree(ARCHES / "eyeriss_like", tmp_path / "a")
    ert = load_yaml(tmp_path / "a" / "ERT.yaml")
    for t in ert["ERT"]["tables"]:
        if "DRAM" in t["name"]:
            t["actions"] = [a for a in t["actions"] if a["name"] != "read"]
    (tmp_path / "a" / "ERT.yaml").write_text(dump_yaml(ert))
    cm = core_model(load_system_arch(_sys(tmp_path, "{name: mine, arch: a/arch.yaml}")), "mine")
    notes = level_costs(cm.context_arch, load_ert(tmp_path / "a" / "ERT.yaml")).notes
    assert notes and "DRAM: the ERT prices no read" in notes[0]
    assert all(any(str(n) in w for w in cm.warnings) for n in notes)


def test_an_ert_given_without_an_art_says_the_area_is_what_is_missing(tmp_path):
    """User study: a v0.3 design with its Accelergy ERT (`ert:`) but no ART; pricing its area from the
    architecture fails on a component the built-in estimator cannot price, and the message said only
    that, never that an ART would do."""
    from coexplore.arch.file_core import FileCore
    from coexplore.arch.system import load_system_arch
    d = Path(__file__).parent / "data" / "exercises_v3" / "v3_bd_simple_weight_stationary_alexnet1"
    path = tmp_path / "sys.yaml"
    path.write_text(f"system:\n  dram: {{bandwidth_GBps: 8}}\n  cores:\n  - {{name: ws, arch: {d / 'arch.yaml'}, "
                    f"ert: {d / 'ERT.yaml'}}}\nworkloads: [alexnet]\n")
    core = load_system_arch(path).cores["ws"]
    assert isinstance(core, FileCore)
    with pytest.raises(CoexploreError) as info:
        core.tables()
    assert "no ART.yaml beside its ERT" in info.value.message and "ART.yaml beside the ERT" in info.value.expected


def test_the_combined_constraints_file_reads_as_the_files_it_combines_whatever_their_block_names(tmp_path):
    """`constraints:` and `mapspace:` are older names of one block; a bare `targets:` counts when no
    block is there (`constraints: {version: ...}` is none)."""
    from coexplore.model.inputs import load_context
    from coexplore.spec.constraints import combined_constraints, load_constraints
    from coexplore.spec.yamlio import dump_yaml
    _sws_and_given_constraints(tmp_path)
    (tmp_path / "a.yaml").write_text("constraints:\n  targets:\n  - {target: shared_glb, type: bypass, "
                                     "keep: [Inputs, Outputs], bypass: [Weights]}\n")
    (tmp_path / "b.yaml").write_text("mapspace:\n  targets:\n  - {target: DRAM, type: temporal, "
                                     "permutation: [N, C, M, P, Q, R, S]}\n")
    (tmp_path / "c.yaml").write_text("constraints: {version: 0.4}\ntargets:\n- {target: shared_glb, type: temporal, "
                                     "permutation: [S, R, Q, P, M, C, N]}\n")
    ctx = load_context(tmp_path / "s" / "arch.yaml", CORPUS / "layers" / "tiny_conv.yaml")
    files = [tmp_path / n for n in ("a.yaml", "b.yaml", "c.yaml")]
    (tmp_path / "all.yaml").write_text(dump_yaml(combined_constraints(files)))
    want = load_constraints(ctx.arch, files, ctx.problem)
    assert "Weights" in want["shared_glb"].bypass and want["shared_glb"].temporal_permutation
    assert load_constraints(ctx.arch, tmp_path / "all.yaml", ctx.problem) == want
