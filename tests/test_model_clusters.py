"""Timeloop charges a buffer's accesses per utilized cluster: min(utilized instances, instances /
cluster_size), an integer division (BufferLevel::ComputeScalarAccesses, FinalizeBufferEnergy). A
cluster wider than the level's instances makes 0 clusters, and Timeloop prices its accesses at 0
(a user study found coexplore charging one cluster)."""

import warnings
from pathlib import Path

import pytest

from coexplore.model.inputs import load_context

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "first_design"
ARCH = """
architecture:
  version: 0.3
  subtree:
  - name: sys
    local:
    - name: DRAM
      class: DRAM
      attributes: {{width: 8, datawidth: 8}}
    - name: Buffer
      class: SRAM
      attributes: {{depth: 64, width: 32, datawidth: 8, {attr}}}
    - name: MAC
      class: intmac
      attributes: {{datawidth: 8}}
"""
ERT = """
ERT:
  version: '0.4'
  tables:
  - name: sys.DRAM
    actions: [{name: read, energy: 100.0}, {name: write, energy: 100.0}, {name: update, energy: 100.0}]
  - name: sys.Buffer
    actions: [{name: read, energy: 1.0}, {name: write, energy: 2.0}, {name: update, energy: 4.0}]
  - name: sys.MAC
    actions: [{name: compute, energy: 0.5}]
"""


def _buffer_energy(tmp_path, attr):
    (tmp_path / "arch.yaml").write_text(ARCH.format(attr=attr))
    (tmp_path / "ERT.yaml").write_text(ERT)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        ctx = load_context(tmp_path / "arch.yaml", EXAMPLE / "conv1d.yaml", tmp_path / "ERT.yaml")
        res = ctx.evaluate_mappings([ctx.load_mapping(EXAMPLE / "k_outer.yaml")])
    level = [lv.name for lv in reversed(ctx.arch.levels)].index("Buffer")
    return float(res.level_energy[0, level]), " ".join(str(w.message) for w in said)


@pytest.mark.parametrize("attr", ["cluster_size: 2", "block_size: 2"])
def test_a_cluster_wider_than_the_instances_is_charged_nothing_and_said(tmp_path, attr):
    """width 32 = 2 words of 8 bits x cluster 2 (block 2) or x block 2 (cluster 2): 1 instance / 2 = 0 clusters."""
    energy, said = _buffer_energy(tmp_path, attr)
    assert energy == 0.0
    assert "0 clusters" in said and "Buffer" in said


def test_one_cluster_per_instance_is_charged_the_vector_accesses(tmp_path):
    """block 4 (width 32 / 8 bits), cluster 1: ceil(scalar / 4) accesses priced per the ERT: the study's
    hand count for k_outer on conv1d (Weights 96 reads + 12 fills, Inputs 96 + 40, Outputs 64 reads + 96
    updates): (24 + 3*2) + (24 + 10*2) + (16 + 24*4) = 30 + 44 + 112."""
    energy, said = _buffer_energy(tmp_path, "block_size: 4")
    assert energy == pytest.approx(30 + 44 + 112)
    assert "0 clusters" not in said
