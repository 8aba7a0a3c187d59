"""Energy tables that may not fit the architecture. An ERT.yaml coexplore priced records the
architecture files it was priced from; one read with such a file edited since is said to be stale
(evaluate/map, the Python API, a system's own core), and pricing it again silences that. A table
naming few of the architecture's parts is noted, and an action without an energy named."""

from __future__ import annotations

import hashlib
import shutil
import warnings
from pathlib import Path

import pytest

from coexplore.cli import main as cli_main
from coexplore.errors import CoexploreWarning
from coexplore.model.inputs import load_context
from coexplore.spec.ert import load_ert, stale_ert

REPO = Path(__file__).resolve().parents[1]
LAYER = REPO / "tests" / "data" / "timeloop_corpus" / "layers" / "tiny_conv.yaml"


def _cli(argv, monkeypatch):
    monkeypatch.setattr(cli_main, "COMMANDS", ("arch", "energy", "evaluate", "map"))
    return cli_main.main(argv)


@pytest.fixture
def generated(tmp_path, monkeypatch, capsys):
    assert _cli(["arch", "generate", str(REPO / "arch" / "simba.yaml"), "--out", str(tmp_path / "g")],
                monkeypatch) == 0
    capsys.readouterr()
    return tmp_path / "g" / "simba"


def _sha16(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _deepen_glb(arch: Path) -> None:
    text = arch.read_text()
    assert "depth: 2048" in text
    arch.write_text(text.replace("depth: 2048", "depth: 16384", 1))


def test_generated_table_records_the_files_it_was_priced_from(generated):
    ert = load_ert(generated / "ERT.yaml")
    assert ert.priced_from == {"arch.yaml": _sha16(generated / "arch.yaml"),
                               "processed.yaml": _sha16(generated / "processed.yaml")}
    assert stale_ert(ert, generated / "arch.yaml") is None
    assert stale_ert(ert, generated / "processed.yaml") is None


def test_edited_architecture_makes_its_table_stale_until_priced_again(generated, monkeypatch, capsys):
    arch = generated / "arch.yaml"
    _deepen_glb(arch)
    said = stale_ert(load_ert(generated / "ERT.yaml"), arch)
    assert said is not None and "arch.yaml before it changed" in said and _sha16(arch) in said
    with pytest.warns(CoexploreWarning, match="before it changed"):
        load_context(arch, LAYER)
    assert stale_ert(load_ert(generated / "ERT.yaml"), generated / "processed.yaml") is None   # (not edited)
    before = load_ert(generated / "ERT.yaml")
    assert _cli(["energy", "tables", str(arch), "--out", str(generated)], monkeypatch) == 0
    after = load_ert(generated / "ERT.yaml")
    assert after.priced_from == {"arch.yaml": _sha16(arch)}
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoexploreWarning)
        load_context(arch, LAYER)
    # the deeper buffer's read costs more: the old table's figure was indeed stale
    glb = next(n for n in after.actions if "GlobalBuffer" in n or "GLB" in n.upper())
    assert after.energy(glb, "read") > before.energy(glb, "read")


def test_map_and_evaluate_say_the_table_is_stale(generated, tmp_path, monkeypatch, capsys):
    arch = generated / "arch.yaml"
    out = tmp_path / "m"
    assert _cli(["map", str(arch), str(LAYER), "--budget", "100", "--out", str(out), "--no-cache",
                 "--no-progress"], monkeypatch) == 0
    assert "before it changed" not in capsys.readouterr().err
    _deepen_glb(arch)
    assert _cli(["evaluate", str(arch), str(LAYER), str(out / "mapping.yaml")], monkeypatch) == 0
    err = capsys.readouterr().err
    assert "before it changed" in err and str(generated / "ERT.yaml") in err


def test_a_systems_own_core_with_a_stale_table_is_warned_of(generated, tmp_path):
    from coexplore.arch.system import load_system_arch
    from coexplore.system.from_system import core_model
    own = tmp_path / "own"
    shutil.copytree(generated, own)
    _deepen_glb(own / "arch.yaml")
    system = tmp_path / "sys.yaml"
    system.write_text("system:\n  dram: {bandwidth_GBps: 25.6}\n  cores:\n  - name: mine\n    arch: own/arch.yaml\n")
    cm = core_model(load_system_arch(system), "mine")
    assert any("before it changed" in w for w in cm.warnings)


def test_a_table_naming_few_of_the_levels_is_said_to_be_another_architectures():
    """An ERT with tables for fewer than half of the levels and the compute unit (say only DRAM and
    the MAC) is used as Timeloop uses it, with a note; the full table gets no such note."""
    import yaml
    from coexplore.model.evaluate import level_costs
    from coexplore.spec.architecture import load_architecture
    from coexplore.spec.ert import level_key, parse_ert
    d = REPO / "tests" / "data" / "timeloop_corpus" / "arches" / "eyeriss_like"
    arch = load_architecture(d / "processed.yaml")
    raw = yaml.safe_load((d / "ERT.yaml").read_text())
    full = level_costs(arch, parse_ert(raw, "full"))
    assert not any("only" in n for n in full.notes)
    keep = {arch.levels[0].name, arch.compute.name}          # DRAM (outermost) and the MAC
    raw["ERT"]["tables"] = [t for t in raw["ERT"]["tables"] if level_key(t["name"]) in keep]
    some = level_costs(arch, parse_ert(raw, "some"))
    parts = len([lv for lv in arch.levels if not lv.is_dummy]) + 1
    assert any(f"only 2 of the architecture's {parts}" in n for n in some.notes)


def test_an_action_without_an_energy_is_said_so():
    """User study: an ERT action with no `energy:` key said 'energy None'."""
    from coexplore.errors import CoexploreError
    from coexplore.spec.ert import parse_ert
    with pytest.raises(CoexploreError, match=r"action read has no energy.*ERT.tables\[0\].actions\[0\].energy|"
                                             r"ERT.tables\[0\].actions\[0\].energy.*action read has no energy"):
        parse_ert({"ERT": {"tables": [{"name": "buf", "actions": [{"name": "read"}]}]}})
    with pytest.raises(CoexploreError, match=r"energy '12 pJ'"):
        parse_ert({"ERT": {"tables": [{"name": "buf", "actions": [{"name": "read", "energy": "12 pJ"}]}]}})
