"""Timeloop keys an ERT's tables by name alone; a table whose name gives another instance count
than the architecture's level (a table made for another array size) is used, as Timeloop uses it,
and said in the notes the CLI prints as warnings."""

import subprocess
import sys

from conftest import CORPUS
from coexplore.model.inputs import load_context
from coexplore.spec.ert import named_instances, parse_ert

ARCHES = CORPUS / "arches"


def test_named_instances():
    assert named_instances("system_top_level.ifmap_spad[1..168]") == 168
    assert named_instances("system.PE[0..15].MAC[0..15]") == 256
    assert named_instances("system.DRAM") is None
    ert = parse_ert({"ERT": {"tables": [{"name": "a.b[1..4]", "actions": [{"name": "read", "energy": 1}]},
                                        {"name": "x.PE[0..1].b[0..2]", "actions": [{"name": "read", "energy": 2}]}]}})
    assert ert.instances == {"b": {4, 6}}


def test_every_corpus_table_names_its_levels_instances():
    for arch in sorted(ARCHES.iterdir()):
        for f in ("processed.yaml", "arch.yaml"):
            if (arch / f).is_file():
                ctx = load_context(arch / f, CORPUS / "layers" / "tiny_conv.yaml", arch / "ERT.yaml")
                assert not [n for n in ctx.costs.notes if "named for" in n], (arch.name, f)


def test_a_table_for_another_array_size_is_said(tmp_path):
    text = (ARCHES / "eyeriss_like" / "arch.yaml").read_text()
    assert text.count("spatial: {meshX: 14}") == 1
    arch = tmp_path / "arch.yaml"
    arch.write_text(text.replace("spatial: {meshX: 14}", "spatial: {meshX: 7}"))      # 84 PEs, the ERT's 168
    ctx = load_context(arch, CORPUS / "layers" / "tiny_conv.yaml", ARCHES / "eyeriss_like" / "ERT.yaml")
    said = [n for n in ctx.costs.notes if "named for" in n]
    assert {n.split(":")[0] for n in said} == {"ifmap_spad", "weights_spad", "psum_spad", "mac"}
    assert "ifmap_spad: the ERT's table is named for 168 instances, the architecture has 84" in said[0] + said[1] + \
        said[2] + said[3]
    case = next((CORPUS / "public" / "eyeriss_like" / "tiny_conv").iterdir())
    r = subprocess.run([sys.executable, "-m", "coexplore.cli.main", "evaluate", arch, CORPUS / "layers" / "tiny_conv.yaml",
                        case / "mapping.yaml", "--ert", ARCHES / "eyeriss_like" / "ERT.yaml"],
                       capture_output=True, text=True, timeout=120)
    assert "warning" in r.stderr and "named for 168 instances, the architecture has 84" in r.stderr
