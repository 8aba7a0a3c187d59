"""A buffer over capacity whose fan-out fails too says the fan-out failure the
level says on its own (the first of instances, X, Y in Timeloop's if-chain), glued after the capacity."""

import json
import subprocess
import sys

from conftest import CORPUS


BOTH_AXES = ("- {target: DRAM, type: temporal, factors: C1 M1 R1 S1 N1 P1 Q1, permutation: CMRSNPQ}\n"
             "- {target: DRAM, type: spatial, factors: C2 M8 R1 S1 N1 P1 Q1, permutation: MCRSNPQ, split: 1}\n"
             "- {target: Buffer, type: temporal, factors: C2 M1 R1 S1 N1 P4 Q1, permutation: CPMRSNQ}\n")


def _error(tmp_path, depth, macs=(64, 8), mapping=BOTH_AXES):
    """Timeloop's error for a 4-instance Buffer (meshX 4) of `depth` words over `macs` = (count,
    meshX) MACs, mapping `mapping` of a 1x1 layer C4 M8 P4."""
    d = tmp_path / f"{depth}-{macs[0]}"
    d.mkdir()
    (d / "arch.yaml").write_text(
        "architecture:\n  version: 0.3\n  subtree:\n  - name: system\n    local:\n"
        "    - {name: DRAM, class: DRAM, attributes: {width: 8, datawidth: 8}}\n"
        "    subtree:\n    - name: pe\n      local:\n"
        f"      - {{name: 'Buffer[0..3]', class: SRAM, attributes: {{depth: {depth}, width: 8, datawidth: 8, meshX: 4}}}}\n"
        f"      - {{name: 'MAC[0..{macs[0] - 1}]', class: intmac, attributes: {{datawidth: 8, meshX: {macs[1]}}}}}\n")
    (d / "ERT.yaml").write_text("ERT:\n  version: 0.3\n  tables:\n  - name: system.DRAM\n    actions:\n"
                                "    - {name: read, energy: 100}\n    - {name: write, energy: 100}\n")
    text = (CORPUS / "layers" / "tiny_conv.yaml").read_text()
    (d / "p.yaml").write_text(text.replace("C: 4, M: 8, R: 3, S: 3, N: 2, P: 6, Q: 6,",
                                           "C: 4, M: 8, R: 1, S: 1, N: 1, P: 4, Q: 1,"))
    (d / "m.yaml").write_text("mapping:\n" + mapping)
    r = subprocess.run([sys.executable, "-m", "coexplore.cli.main", "evaluate", d / "arch.yaml", d / "p.yaml",
                        d / "m.yaml", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr
    return json.loads(r.stdout)["error"]


def test_the_fan_out_part_is_what_the_level_says_without_the_capacity_failure(tmp_path):
    alone = _error(tmp_path, 4096)         # fits: only its fan-out fails (instances, X and Y all exceeded)
    both = _error(tmp_path, 4)
    prefix = "ERROR: couldn't map level Buffer: "
    assert alone.startswith(prefix) and both.startswith(prefix + "mapped tile size ")
    assert both.endswith(alone[len(prefix):]) and "exceeds buffer capacity 4mapped " in both


def test_a_buffer_over_capacity_and_fan_out_says_both_as_timeloop(tmp_path):
    """Timeloop's BufferLevel::ComputeScalarAccesses checks a buffer's capacity and its fan-out in two
    separate if-chains of one fail_reason stream: both messages, the second glued to the first.
    Buffer holds Weights C4 + Inputs C4 x P4 + Outputs P4 = 24 words of 4; M2 on Y where meshY is 1."""
    y_only = ("- {target: DRAM, type: temporal, factors: C1 M4 R1 S1 N1 P1 Q1, permutation: CMRSNPQ}\n"
              "- {target: DRAM, type: spatial, factors: C1 M2 R1 S1 N1 P1 Q1, permutation: MCRSNPQ, split: 0}\n"
              "- {target: Buffer, type: temporal, factors: C4 M1 R1 S1 N1 P4 Q1, permutation: CPMRSNQ}\n")
    assert _error(tmp_path, 4, (16, 4), y_only) == (
        "ERROR: couldn't map level Buffer: mapped tile size 24 exceeds buffer capacity 4mapped Y expansion 2 "
        "exceeds available hardware instances 1")
