"""An own core that is a Jinja2 template takes its names from the core entry's `var:` (a system YAML
has no --var per core), and a sweep axis `cores.<name>.var.<NAME>` sweeps them."""

import csv
import json
import shutil
import subprocess
import sys

import pytest

from conftest import CORPUS
from coexplore.arch.file_core import FileCore
from coexplore.arch.system import load_system_arch
from coexplore.errors import CoexploreError
from coexplore.spec import template
from coexplore.spec.architecture import load_architecture
from coexplore.spec.system import load_system
from coexplore.system.from_system import core_model

ARCH = CORPUS / "arches" / "eyeriss_like"
WORKLOAD = """
workload:
  name: mini
  layers:
  - {name: a, instance: {C: 16, M: 32, R: 3, S: 3, N: 1, P: 14, Q: 14}}
"""


def cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "coexplore.cli.main", *map(str, args)], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


@pytest.fixture()
def folder(tmp_path):
    """The corpus' eyeriss_like node list as a template: the global buffer's depth is {{ glb_depth }}
    (no ERT/ART beside it: the built-in estimator prices each rendering)."""
    (tmp_path / "mine").mkdir()
    text = (ARCH / "arch.yaml").read_text()
    assert text.count("depth: 16384") == 1
    (tmp_path / "mine" / "core.yaml.jinja2").write_text(text.replace("depth: 16384", "depth: {{ glb_depth }}"))
    (tmp_path / "wl.yaml").write_text(WORKLOAD)
    return tmp_path


def _system(folder, core: str, extra: str = "") -> str:
    path = folder / "sys.yaml"
    path.write_text(f"system:\n  dram: {{bandwidth_GBps: 8}}\n  cores:\n  - {core}\nworkloads: [wl.yaml]\n{extra}")
    return path


def _glb_depth(arch) -> int:
    return next(lv for lv in arch.all_levels if lv.name == "shared_glb").attributes["depth"]


def test_var_renders_the_template_wherever_the_core_is_read(folder):
    path = _system(folder, "{name: mine, arch: mine/core.yaml.jinja2, var: {glb_depth: 2048}, count: 2}")
    system = load_system_arch(path)
    core = system.cores["mine"]
    assert core.var == {"glb_depth": 2048} and _glb_depth(core.architecture) == 2048
    cm = core_model(system, "mine")                     # priced by the built-in estimator from the rendering
    assert _glb_depth(cm.context_arch) == 2048
    from coexplore.spec.workload import load_workload
    from coexplore.system.from_system import layer_context
    layer = load_workload(folder / "wl.yaml").layers[0]
    cons = cm.constraints_for(layer_context(cm, layer).problem)   # the file read again for the layer
    assert "shared_glb" in cons
    assert template.data() == {}                        # the names were the core's only
    written = core.write(folder / "gen")
    assert _glb_depth_in(written["arch"]) == 2048
    assert '# ' in written["arch"].read_text().splitlines()[0] and '{"glb_depth": 2048}' in \
        written["arch"].read_text().splitlines()[0]


def _glb_depth_in(path) -> int:
    return _glb_depth(load_architecture(path))


def test_a_core_with_other_names_is_another_design(folder):
    arch = folder / "mine" / "core.yaml.jinja2"
    a, b = FileCore("m", arch, var={"glb_depth": 2048}), FileCore("m", arch, var={"glb_depth": 4096})
    assert a.digest() != b.digest() and a.digest() == FileCore("m", arch, var={"glb_depth": 2048}).digest()
    assert _glb_depth(a.architecture) == 2048 and _glb_depth(b.architecture) == 4096


def test_bad_var_entries_are_refused_naming_the_key(folder):
    cases = [
        ("{arch: mine/core.yaml.jinja2}", "glb_depth' is undefined", None),       # missing: the template says
        ("{arch: mine/core.yaml.jinja2, var: {glb_depth: 64, glb_deph: 2}}", "does not ask for glb_deph",
         "system.cores[0].var.glb_deph"),
        ("{arch: mine/core.yaml.jinja2, var: [glb_depth]}", "must be a mapping", "system.cores[0].var"),
        ("{arch: mine/core.yaml.jinja2, var: {2x: 1}}", "cannot be a template variable", "system.cores[0].var"),
        ("{template: simba, var: {glb_depth: 64}}", "'var' with a template", "system.cores[0].var"),
    ]
    for core, said, key in cases:
        with pytest.raises(CoexploreError) as info:
            load_system_arch(_system(folder, core))
        assert said in info.value.message, (core, info.value.format())
        assert key is None or info.value.key == key, (core, info.value.format())
    assert "its value under system.cores[0].var in" in \
        pytest.raises(CoexploreError, load_system_arch, _system(folder, cases[0][0])).value.format()
    shutil.copy(ARCH / "arch.yaml", folder / "mine" / "plain.yaml")                # not a template
    with pytest.raises(CoexploreError, match="is not a template: nothing would use these names") as info:
        load_system(_system(folder, "{arch: mine/plain.yaml, var: {glb_depth: 64}}"))
    assert info.value.key == "system.cores[0].var"


def test_sweep_paths_to_var(folder):
    own = "{name: mine, arch: mine/core.yaml.jinja2, var: {glb_depth: 64}}"
    spec = load_system(_system(folder, own))
    assert spec.with_value("cores.mine.var.glb_depth", 512).cores[0].var == {"glb_depth": 512}
    spec = load_system(_system(folder, "{name: mine, arch: mine/core.yaml.jinja2}"))   # var: made by the path
    assert spec.with_value("cores.mine.var.glb_depth", 512).cores[0].var == {"glb_depth": 512}
    with pytest.raises(CoexploreError, match="is a coexplore template: its values are params"):
        load_system(_system(folder, "{template: simba}")).with_value("cores.simba.var.glb_depth", 1)
    with pytest.raises(CoexploreError, match=r"\.var\.<name> \(a Jinja2 template's\)"):
        spec.with_value("cores.mine.params.glb_depth", 1)


def test_a_sweep_over_a_template_variable(folder):
    path = _system(folder, "{name: mine, arch: mine/core.yaml.jinja2, var: {glb_depth: 16384}, count: 2}",
                   "sweep:\n  axes:\n    cores.mine.var.glb_depth: [16384, 256]\n")
    r = cli("sweep", path, "--layer-searcher", "random", "--layer-budget", "300", "--budget", "100", "--no-plot",
            "--no-progress", "--no-cache", "--out", folder / "out", cwd=folder)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(folder / "out" / "points.csv")))
    assert [(row["point"], row["cores.mine.var.glb_depth"], row["status"]) for row in rows] == \
        [("p0", "16384", "ok"), ("p1", "256", "ok")]
    for row, depth in zip(rows, (16384, 256)):
        assert _glb_depth_in(folder / "out" / "points" / row["point"] / "cores" / "mine" / "arch.yaml") == depth
    # priced per rendering: the smaller global buffer has the smaller area
    assert float(rows[1]["area_mm2"]) < float(rows[0]["area_mm2"])


def test_map_and_evaluate_a_system_core_whose_template_holds_the_problem(folder):
    """`map SYSTEM --core NAME` without PROBLEM takes the problem of the core's own whole spec (a
    template, rendered with the core's var: wherever the command reads it); evaluate reproduces it."""
    spec = folder / "mine" / "core.yaml.jinja2"
    spec.write_text(spec.read_text() + "\n" + (CORPUS / "layers" / "tiny_conv.yaml").read_text())
    path = _system(folder, "{name: mine, arch: mine/core.yaml.jinja2, var: {glb_depth: 4096}}")
    r = cli("map", path, "--core", "mine", "--searcher", "random", "--budget", "200", "--no-progress", "--out",
            folder / "m", "--json", cwd=folder)
    assert r.returncode == 0, r.stderr
    best = json.loads(r.stdout)["best"]
    e = cli("evaluate", path, folder / "m" / "mapping.yaml", "--core", "mine", "--json", cwd=folder)
    assert e.returncode == 0, e.stderr
    again = json.loads(e.stdout)
    assert (again["cycles"], again["energy_pJ"]) == (best["cycles"], best["energy_pJ"])
    assert "--var" not in e.stderr and "--var" not in r.stderr         # no unused---var warning for var: names


def test_a_name_only_an_axis_sets_and_a_bad_value_are_said_with_the_core_key(folder):
    path = _system(folder, "{name: mine, arch: mine/core.yaml.jinja2}",
                   "sweep:\n  axes:\n    cores.mine.var.glb_depth: [16384, 256]\n")
    with pytest.raises(CoexploreError) as info:
        load_system_arch(path)
    assert "'glb_depth' is undefined" in info.value.message
    assert "system.cores[0].var" in info.value.expected and "sweep axis" in info.value.expected
    path = _system(folder, "{name: mine, arch: mine/core.yaml.jinja2, var: {glb_depth: 256.5}}")
    with pytest.raises(CoexploreError) as info:
        load_system_arch(path)
    assert info.value.key == "shared_glb.attributes.depth"
    assert 'rendered with system.cores[0].var = {"glb_depth": 256.5}' in info.value.message


def test_a_sweep_records_how_each_design_is_priced_and_tables_made_for_one_rendering(folder):
    """User study: sweep left out what schedule says (the built-in estimator priced the core), and
    an ERT/ART beside a template priced every swept depth the same, silently."""
    path = _system(folder, "{name: mine, arch: mine/core.yaml.jinja2, var: {glb_depth: 16384}}",
                   "sweep:\n  axes:\n    cores.mine.var.glb_depth: [16384, 4096]\n")
    args = ["sweep", path, "--layer-searcher", "random", "--layer-budget", "100", "--budget", "50", "--no-plot",
            "--no-progress", "--no-cache", "--json"]
    r = cli(*args, "--out", folder / "o1", cwd=folder)
    assert r.returncode == 0, r.stderr
    for rec in json.loads(r.stdout)["records"]:
        assert any("no ERT given or beside it: energies from the built-in estimator" in w for w in rec["warnings"])
        assert not any("price every point as given" in w for w in rec["warnings"])
    for table in ("ERT.yaml", "ART.yaml"):
        shutil.copy(ARCH / table, folder / "mine" / table)
    r = cli(*args, "--out", folder / "o2", cwd=folder)
    assert r.returncode == 0, r.stderr
    records = json.loads(r.stdout)["records"]
    for rec in records:
        [said] = [w for w in rec["warnings"] if "price every point as given" in w]
        assert "cores.mine.var.glb_depth" in said and "ERT.yaml and" in said
    assert records[0]["area_mm2"] == records[1]["area_mm2"]          # what the warning is about


def test_a_sweep_of_architecture_files_priced_by_one_ert_key_says_so(folder):
    """User study (v0.3 lab): two architecture files swept, one `ert:` for both: the smaller buffer
    got the same area, silently."""
    for depth in (16384, 4096):
        d = folder / f"a{depth}"
        d.mkdir()
        (d / "arch.yaml").write_text((ARCH / "arch.yaml").read_text().replace("depth: 16384", f"depth: {depth}"))
    shutil.copy(ARCH / "ERT.yaml", folder / "ERT_ref.yaml")
    shutil.copy(ARCH / "ART.yaml", folder / "ART.yaml")
    args = ["--layer-searcher", "random", "--layer-budget", "100", "--budget", "50", "--no-plot",
            "--no-progress", "--no-cache", "--json"]
    path = _system(folder, "{name: mine, arch: a16384/arch.yaml, ert: ERT_ref.yaml}",
                   "sweep:\n  axes:\n    cores.mine.arch: [a16384/arch.yaml, a4096/arch.yaml]\n")
    r = cli("sweep", path, *args, "--out", folder / "o1", cwd=folder)
    assert r.returncode == 0, r.stderr
    records = json.loads(r.stdout)["records"]
    for rec in records:
        [said] = [w for w in rec["warnings"] if "price every file as given" in w or "prices every file" in w]
        assert "ERT_ref.yaml" in said and "ert: key" in said
    assert records[0]["area_mm2"] == records[1]["area_mm2"]          # what the warning is about
    # each file with its own tables beside it and no ert: key: priced per point, nothing said
    for depth in (16384, 4096):
        for t in ("ERT.yaml", "ART.yaml"):
            shutil.copy(ARCH / t, folder / f"a{depth}" / t)
    path = _system(folder, "{name: mine, arch: a16384/arch.yaml}",
                   "sweep:\n  axes:\n    cores.mine.arch: [a16384/arch.yaml, a4096/arch.yaml]\n")
    r = cli("sweep", path, *args, "--out", folder / "o2", cwd=folder)
    assert r.returncode == 0, r.stderr
    for rec in json.loads(r.stdout)["records"]:
        assert not any("every file as given" in w for w in rec["warnings"])


def test_var_on_the_command_line_with_a_system_yaml_is_refused(folder):
    """User study: `map/evaluate sys.yaml --core mine --var glb_depth=1024` ran the entry's var: design
    (exit 0, a valid cost for a mapping the 1024-deep core cannot hold) and warned the name was unused."""
    path = _system(folder, "{name: mine, arch: mine/core.yaml.jinja2, var: {glb_depth: 2048}}")
    r = cli("map", path, "wl.yaml", "--core", "mine", "--var", "glb_depth=1024", "--budget", "50", "--no-cache",
            cwd=folder)
    assert r.returncode == 2 and "--var with a system YAML" in r.stderr and "system.cores[i].var" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_misspelt_var_name_is_named_beside_the_undefined_one(folder):
    """User study: var: {glb_dpeth: 8192} said only "'glb_depth' is undefined", never the typo."""
    path = _system(folder, "{name: mine, arch: mine/core.yaml.jinja2, var: {glb_dpeth: 2048}}")
    with pytest.raises(CoexploreError) as err:
        load_system_arch(path)
    assert "'glb_depth' is undefined" in err.value.message
    assert "the names given have 'glb_dpeth': 'glb_depth' misspelt?" in err.value.message
    assert "system.cores[0].var" in err.value.expected
