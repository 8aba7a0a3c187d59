"""System YAMLs: the shipped arch/*.yaml, cores with system-wide settings, sweeps, and errors
that name the file, the key and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from coexplore.arch.core import build_core
from coexplore.arch.system import build_system, check_sweep, load_system_arch
from coexplore.errors import CoexploreError
from coexplore.spec.system import load_system, parse_system

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "arches"
SHIPPED = ["simba.yaml", "eyeriss.yaml", "simba_2x2.yaml", "hetero_2simba_2eyeriss.yaml"]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_systems_load(name):
    system = load_system_arch(ROOT / "arch" / name)
    assert system.spec.name == Path(name).stem
    assert system.cores and system.spec.sweep_axes          # every shipped file has a sweep
    for path in system.spec.workloads:
        assert path.parent == (ROOT / "problems").resolve()  # relative to the system file


def test_simba_2x2_grid():
    system = load_system_arch(ROOT / "arch" / "simba_2x2.yaml")
    inst = system.instances()
    assert [i.name for i in inst] == ["simba_0_0", "simba_0_1", "simba_1_0", "simba_1_1"]
    assert [i.position for i in inst] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert list(system.cores) == ["simba"] and system.spec.n_cores == 4
    assert system.cores["simba"].params.macs == 256
    assert system.offchip_bytes_per_cycle == pytest.approx(25.6)


def test_hetero_system():
    system = load_system_arch(ROOT / "arch" / "hetero_2simba_2eyeriss.yaml")
    assert [(i.name, i.core) for i in system.instances()] == [
        ("simba_0", "simba"), ("simba_1", "simba"), ("eyeriss_0", "eyeriss"),
        ("eyeriss_1", "eyeriss")]
    # the system technology reaches every core, including eyeriss (template default 32nm)
    assert system.cores["eyeriss"].params.technology == "45nm"
    assert system.cores["simba"].params.technology == "45nm"


@pytest.mark.parametrize("name,ref", [("simba.yaml", "simba_like"), ("eyeriss.yaml", "eyeriss_like")])
def test_shipped_single_core_reproduces_corpus(name, ref):
    core = next(iter(load_system_arch(ROOT / "arch" / name).cores.values()))
    expected = yaml.safe_load((DATA / ref / "processed.yaml").read_text())
    got = core.flattened().processed
    e_local = expected["architecture"]["subtree"][0]["local"]
    g_local = got["architecture"]["subtree"][0]["local"]
    assert [e["name"] for e in g_local] == [e["name"] for e in e_local]
    assert [e["attributes"] for e in g_local] == [e["attributes"] for e in e_local]


def test_clock_and_bandwidth_units(tmp_path):
    doc = {"system": {"clock_GHz": 2.0, "dram": {"bandwidth_GBps": 32},
                      "cores": [{"template": "simba"}]}}
    spec = parse_system(doc)
    assert spec.dram.bandwidth_bytes_per_cycle(spec.clock_GHz) == pytest.approx(16.0)
    core = build_system(spec).cores["simba"]
    assert core.variables["global_cycle_seconds"] == pytest.approx(0.5e-9)
    doc["system"]["dram"] = {"bytes_per_cycle": 8}
    spec = parse_system(doc)
    assert spec.dram.bandwidth_GBps_at(spec.clock_GHz) == pytest.approx(16.0)


def test_sweep_points_apply_values():
    spec = load_system(ROOT / "arch" / "simba_2x2.yaml")
    points = spec.sweep_points()
    sizes = [len(v) for v in spec.sweep_axes.values()]
    assert len(points) == sizes[0] * sizes[1] * sizes[2]
    point = {"cores.simba.params.glb_depth": 4096, "dram.bandwidth_GBps": 12.8,
             "cores.simba.grid": [1, 2]}
    moved = spec.at_point(point)
    assert moved.dram.bandwidth_GBps == 12.8 and moved.n_cores == 2
    core = build_system(moved).cores["simba"]
    glb = core.flattened().processed["architecture"]["subtree"][0]["local"][1]
    assert glb["name"] == "GlobalBuffer[1..1]" and glb["attributes"]["depth"] == 4096
    assert spec.dram.bandwidth_GBps == 25.6                  # the original is unchanged
    # switching the bandwidth unit along an axis replaces the other unit
    assert spec.with_value("dram.bytes_per_cycle", 4).dram.bandwidth_GBps is None


# ------------------------------------------------------------------------------------------
GOOD = """
system:
  clock_GHz: 1.0
  technology: 45nm
  dram: {type: LPDDR4, width: 64, bandwidth_GBps: 25.6}
  cores:
  - {name: a, template: simba, params: {glb_depth: 1024}, count: 2}
  - {name: b, template: eyeriss}
sweep:
  axes:
    cores.a.params.pe_mesh_x: [8, 16]
"""


def _replace(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


BAD = [
    # (yaml text, key named, words in 'expected')
    ("system: [1, 2]\n", "system", "name, clock_GHz"),
    ("cores: []\n", "cores", "system"),
    ("- 1\n", None, "system"),
    (_replace("clock_GHz: 1.0", "clock_GHz: fast"), "system.clock_GHz", "positive number"),
    (_replace("clock_GHz: 1.0", "clock: 1.0"), "system.clock", "clock_GHz"),
    (_replace("technology: 45nm", "technology: small"), "system.technology", "45nm"),
    (_replace("  dram: {type: LPDDR4, width: 64, bandwidth_GBps: 25.6}\n", ""), "system.dram",
     "bandwidth_GBps"),
    (_replace("bandwidth_GBps: 25.6", "width2: 1"), "system.dram.width2", "bytes_per_cycle"),
    (_replace("bandwidth_GBps: 25.6", "bandwidth_GBps: 25.6, bytes_per_cycle: 3"),
     "system.dram.bandwidth_GBps", "exactly one"),
    (_replace("width: 64,", "width: -64,"), "system.dram.width", "positive integer"),
    (_replace("{name: b, template: eyeriss}", "{name: b}"), "system.cores[1].template", "simba"),
    (_replace("{name: b, template: eyeriss}", "{name: b, template: tpu}"),
     "system.cores[1].template", "eyeriss"),
    (_replace("{name: b, template: eyeriss}", "{name: a, template: eyeriss}"),
     "system.cores[1].name", "unique"),
    (_replace("{name: b, template: eyeriss}", "{name: b.c, template: eyeriss}"),
     "system.cores[1].name", "letters"),
    (_replace("{name: b, template: eyeriss}", "{name: b, template: eyeriss, params: {technology: big}}"),
     "system.cores[1].params.technology", "45nm"),
    (_replace("count: 2}", "count: 2, grid: [2, 2]}"), "system.cores[0].grid", "either count"),
    (_replace("count: 2}", "grid: [2]}"), "system.cores[0].grid", "[rows, columns]"),
    (_replace("count: 2}", "count: 0}"), "system.cores[0].count", "positive integer"),
    (_replace("params: {glb_depth: 1024}", "params: {glb_depht: 1024}"),
     "system.cores[0].params.glb_depht", "glb_depth"),
    (_replace("params: {glb_depth: 1024}", "params: {glb_depth: big}"),
     "system.cores[0].params.glb_depth", "integer"),
    (_replace("params: {glb_depth: 1024}", "params: {glb_width: 100}"),
     "system.cores[0].params.glb_width", "multiple of 8"),
    (_replace("params: {glb_depth: 1024}", "params: {dram_type: HBM2}"),
     "system.cores[0].params.dram_type", "system.dram.type"),
    (_replace("params: {glb_depth: 1024}", "params: 7"), "system.cores[0].params", "mapping"),
    (_replace("cores.a.params", "cores.z.params"), "sweep.axes.cores.z.params.pe_mesh_x", "one of a, b"),
    (_replace("[8, 16]", "8"), "sweep.axes.cores.a.params.pe_mesh_x", "non-empty list"),
    (_replace("[8, 16]", "[8, 0]"), "sweep.axes.cores.a.params.pe_mesh_x", "> 0"),
    (_replace("cores.a.params.pe_mesh_x", "dram.speed"), "sweep.axes.dram.speed", "bytes_per_cycle"),
    (_replace("technology: 45nm", "technology: 3nm"), "system.technology", "7..130 nm"),
    (_replace("type: LPDDR4", "type: DDR4"), "system.dram.type", "HBM2"),
    (_replace("params: {glb_depth: 1024}", "params: {glb_read_bandwidth: .nan}"),
     "system.cores[0].params.glb_read_bandwidth", "> 0"),
    (_replace("    cores.a.params.pe_mesh_x: [8, 16]\n",
              "    cores.b.params.glb_width: [64, 264]\n    cores.b.params.word_bits: [8, 16]\n"),
     "sweep.axes", "multiple of 16"),               # each value is fine alone, one combination is not
    (_replace("    cores.a.params.pe_mesh_x: [8, 16]\n",
              "    cores.a.params.glb_width: [64, 264]\n    cores.a.params.word_bits: [8, 16]\n"),
     "sweep.axes.cores.a.params.word_bits", "divisor"),   # 16-bit words alone break simba's weight registers
    (_replace("    cores.a.params.pe_mesh_x: [8, 16]\n",
              "    dram.bandwidth_GBps: [12.8, 25.6]\n    dram.bytes_per_cycle: [4, 8]\n"),
     "sweep.axes.dram.bytes_per_cycle", "one axis"),    # alternatives: the last would undo the first
    (_replace("    cores.a.params.pe_mesh_x: [8, 16]\n", "    cores.a.grid: [[1, 2]]\n    cores.a.count: [1, 2]\n"),
     "sweep.axes.cores.a.grid", "one axis"),
    (_replace("cores.a.params.pe_mesh_x", "cores.a.name"), "sweep.axes.cores.a.name", "a parameter"),
    (_replace("    cores.a.params.pe_mesh_x: [8, 16]\n",
              "    system.dram.bandwidth_GBps: [10, 20]\n    dram.bandwidth_GBps: [30, 40]\n"),
     "sweep.axes.dram.bandwidth_GBps", "one axis"),     # one setting written two ways
    (_replace("cores.a.params.pe_mesh_x", "description"), "sweep.axes.description", "a parameter"),
    (GOOD + "objectives: [latency, beauty]\n", "objectives[1]", "energy"),
    (GOOD + "mappers: {layer: 3}\n", "mappers.layer", "string"),
    (GOOD + "mappers: {cluster: x.yaml}\n", "mappers.cluster", "layer"),
    (GOOD + "workloads: {a: 1}\n", "workloads", "list"),
]


@pytest.mark.parametrize("text,key,expected", BAD, ids=[str(b[1]) for b in BAD])
def test_malformed_system_names_file_key_expected(tmp_path, text, key, expected):
    path = tmp_path / "bad_system.yaml"
    path.write_text(text)
    with pytest.raises(CoexploreError) as info:
        load_system_arch(path)
    err = info.value
    assert err.file == str(path)
    assert err.key == key
    assert expected in (err.expected or "")
    assert str(path) in err.format() and (key is None or key in err.format())


def test_good_document_is_accepted(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(GOOD)
    system = load_system_arch(path)
    assert [i.name for i in system.instances()] == ["a_0", "a_1", "b"]
    assert system.cores["a"].params.glb_depth == 1024
    check_sweep(system.spec)


def test_invalid_yaml_names_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("system:\n  cores: [\n  dram: {\n")
    with pytest.raises(CoexploreError) as info:
        load_system(path)
    assert info.value.file == str(path) and "line" in info.value.message


def test_missing_file_and_missing_workloads(tmp_path):
    with pytest.raises(CoexploreError) as info:
        load_system(tmp_path / "nope.yaml")
    assert info.value.file.endswith("nope.yaml")
    path = tmp_path / "w.yaml"
    path.write_text(GOOD + "workloads: [problems/none.yaml]\n")
    assert load_system(path).workloads == (tmp_path / "problems" / "none.yaml",)
    with pytest.raises(CoexploreError) as info:
        load_system(path, check_files=True)
    assert info.value.key == "workloads[0]"


def test_a_bundled_workload_name_works_in_a_system_as_on_the_command_line(tmp_path):
    """`workloads: [bert_base]` is the bundled problems/bert_base.yaml (as `--workload bert_base`);
    a file of that name beside the system wins; an unknown name is reported missing."""
    from coexplore.bundled import bundled_dir
    path = tmp_path / "w.yaml"
    path.write_text(GOOD + "workloads: [bert_base, nosuchnet]\n")
    spec = load_system(path)
    assert spec.workloads == (bundled_dir("problems") / "bert_base.yaml", tmp_path / "nosuchnet")
    with pytest.raises(CoexploreError) as info:
        load_system(path, check_files=True)
    assert info.value.key == "workloads[1]"
    (tmp_path / "bert_base").write_text("workload: {layers: []}\n")
    assert load_system(path).workloads[0] == tmp_path / "bert_base"


def test_core_override_of_technology():
    doc = yaml.safe_load(GOOD)
    doc["system"]["cores"][1]["params"] = {"technology": "32nm"}
    system = build_system(parse_system(doc))
    assert system.cores["b"].params.technology == "32nm"
    assert system.cores["a"].params.technology == "45nm"
    assert system.cores["b"].nodes == build_core("eyeriss", {}).nodes     # eyeriss default: 32nm


@pytest.mark.parametrize("value", [32, 32.0, "32 nm", "32NM", "0.032um"])
def test_a_cores_technology_is_read_as_the_systems_is(value):
    """User study: `params: {technology: 45}` (or '45 nm') was refused as 'wrong type int' / not a
    node, while system.technology took the same values."""
    doc = yaml.safe_load(GOOD)
    doc["system"]["cores"][1]["params"] = {"technology": value}
    assert build_system(parse_system(doc)).cores["b"].params.technology == "32nm"
    doc["system"]["cores"][1]["params"] = {"technology": "fortyfive"}
    with pytest.raises(CoexploreError) as err:
        build_system(parse_system(doc))
    assert err.value.key.endswith("params.technology")


def test_a_core_of_more_macs_than_any_chip_is_warned():
    """User study: pe_mesh 100000 x 100000 (160e9 MACs, 2e11 mm^2) generated without a word."""
    from coexplore.errors import CoexploreWarning
    doc = yaml.safe_load(GOOD)
    doc["system"]["cores"][0]["params"] = {"pe_mesh_x": 2048, "pe_mesh_y": 1024}
    with pytest.warns(CoexploreWarning, match="MACs in one core, more than 1,048,576"):
        build_system(parse_system(doc))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoexploreWarning)
        build_system(parse_system(yaml.safe_load(GOOD)))


def test_a_system_copied_out_of_arch_still_finds_its_mappers(tmp_path):
    """`mappers: {layer: ../mappers/marl.yaml}` resolves to the bundled file when the copy has no
    such neighbour (as workloads fall back to bundled problems)."""
    from coexplore.bundled import bundled_dir
    from coexplore.spec.system import load_system
    root = Path(__file__).resolve().parents[1]
    copy = tmp_path / "mine.yaml"
    copy.write_text((root / "arch" / "simba.yaml").read_text())
    spec = load_system(copy, check_files=True)
    assert spec.mappers["layer"] == bundled_dir("mappers") / "marl.yaml"


def test_a_key_given_twice_in_a_system_is_refused(tmp_path):
    """`count: 2` then `count: 1` in one core used to build one core silently."""
    text = (ROOT / "arch" / "simba_2x2.yaml").read_text()
    assert "  clock_GHz: 1.0\n" in text
    f = tmp_path / "dup.yaml"
    f.write_text(text.replace("  clock_GHz: 1.0\n", "  clock_GHz: 1.0\n  clock_GHz: 2.0\n", 1))
    with pytest.raises(CoexploreError, match="clock_GHz' appears twice") as err:
        load_system(f)
    assert err.value.file == str(f)


def test_a_bundled_name_beside_a_file_of_that_name_says_which_is_read(tmp_path, monkeypatch):
    """`simba` is the bundled arch/simba.yaml even where ./simba.yaml exists: a note says so."""
    import warnings

    from coexplore.bundled import bundled_dir, resolve
    from coexplore.errors import CoexploreNote
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert resolve("arch", "simba") == bundled_dir("arch") / "simba.yaml"
    assert not seen
    (tmp_path / "simba.yaml").write_text("system: {}\n")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert resolve("arch", "simba") == bundled_dir("arch") / "simba.yaml"
        assert resolve("arch", "simba.yaml") == Path("simba.yaml")
    assert [w.category for w in seen] == [CoexploreNote] and "simba.yaml in this folder" in str(seen[0].message)
    monkeypatch.chdir(bundled_dir("arch"))          # in the bundled folder itself: the same file, no note
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert resolve("arch", "simba").resolve() == (bundled_dir("arch") / "simba.yaml").resolve()
    assert not seen
    # a copy as it is (a clone's own arch/ beside an installed coexplore): the same file, no note
    monkeypatch.chdir(tmp_path)
    (tmp_path / "simba.yaml").write_bytes((bundled_dir("arch") / "simba.yaml").read_bytes())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert resolve("arch", "simba") == bundled_dir("arch") / "simba.yaml"
    assert not seen


def test_a_bundled_name_beside_an_edited_copy_of_the_bundled_folder_says_which_is_read(tmp_path, monkeypatch):
    """User study: `--searcher sa` beside an edited ./mappers/sa.yaml (the README says to copy the
    bundled mappers and edit them) read the bundled file without a word."""
    import warnings

    from coexplore.bundled import bundled_dir, resolve
    from coexplore.errors import CoexploreNote
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mappers").mkdir()
    (tmp_path / "mappers" / "sa.yaml").write_text("searcher: sa\nconfig: {chains: 2}\n")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert resolve("mappers", "sa") == bundled_dir("mappers") / "sa.yaml"
        assert resolve("mappers", "mappers/sa.yaml") == Path("mappers/sa.yaml")
    assert [w.category for w in seen] == [CoexploreNote]
    assert "not mappers/sa.yaml in this folder (give mappers/sa.yaml" in str(seen[0].message)


@pytest.mark.parametrize("written, read", [("45", "45nm"), ("'16 nm'", "16nm"), ("0.045um", "45nm"), ("45nm", "45nm")])
def test_a_system_technology_is_read_as_an_architectures(tmp_path, written, read):
    """User study: the energy path took `technology: 45` and '16 nm', a system YAML refused them."""
    from coexplore.spec.system import load_system
    f = tmp_path / "s.yaml"
    f.write_text(_replace("technology: 45nm", f"technology: {written}"))
    assert load_system(f).technology == read


def test_an_unknown_core_parameter_lists_only_the_cores_own():
    """User study: the list of parameters offered clock_GHz, dram_type and dram_width, which a core's
    params then refuse as shared by all cores."""
    from coexplore.arch.params import params_from_dict
    from coexplore.arch.simba import SimbaParams
    with pytest.raises(CoexploreError) as e:
        params_from_dict(SimbaParams, {"pe_count": 4}, file="s.yaml", key="system.cores[0].params")
    own = e.value.expected.split(" (")[0]
    assert own.startswith("one of ") and not {"clock_GHz", "dram_type", "dram_width"} & set(own[7:].split(", "))
    assert "come from the system" in e.value.expected
