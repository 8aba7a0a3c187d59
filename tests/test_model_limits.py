"""Inputs outside the corpus where the model must refuse rather than count wrong (from a fuzzing
review): counts past 64 bits, spatial loops where nothing fans out, a data space named twice, and
a tensor whose ranks share a dimension under a spatial fan-out."""

import json

import pytest
import yaml

from coexplore.errors import CoexploreError
from coexplore.model import validity
from coexplore.model.inputs import load_context
from coexplore.spec.mapping import MappingArrays, to_arrays
from conftest import CORPUS

ARCH = """
architecture:
  version: 0.4
  nodes:
  - !Container
    name: system
    attributes: {technology: "45nm"}
  - !Component
    name: DRAM
    class: DRAM
    attributes: {type: LPDDR4, width: 64, datawidth: 8}
  - !Component
    name: Buffer
    class: SRAM
    attributes: {depth: DEPTH, width: 8, datawidth: 8}
  - !Container
    name: PE
    spatial: {meshX: 8}
  - !Component
    name: Reg
    class: regfile
    attributes: {depth: 16, width: 8, datawidth: 8}
  - !Component
    name: MAC
    class: intmac
    attributes: {datawidth: 8, multiplier_width: 8, adder_width: 16}
"""

CONV1D = """
problem:
  version: 0.4
  shape:
    name: conv1d
    dimensions: [K, R, P]
    coefficients:
    - {name: Wstride, default: 1}
    data_spaces:
    - {name: Weights, projection: [[[K]], [[R]]]}
    - {name: Inputs, projection: [[[R], [P, Wstride]]]}
    - {name: Outputs, projection: [[[K]], [[P]]], read_write: true}
  instance: {K: KBOUND, R: 1, P: 64, Wstride: 549755813888}
"""

STRIDED_MAPPING = """
mapping:
- {target: Buffer, type: temporal, factors: [K=1, R=1, P=2], permutation: [P, K, R]}
- {target: DRAM, type: temporal, factors: [K=KBOUND, R=1, P=32], permutation: [P, K, R]}
"""


def _context(tmp_path, problem: str, depth: int = 1024):
    (tmp_path / "arch.yaml").write_text(ARCH.replace("DEPTH", str(depth)))
    (tmp_path / "problem.yaml").write_text(problem)
    return load_context(tmp_path / "arch.yaml", tmp_path / "problem.yaml")


def _evaluate(ctx, tmp_path, mapping: str) -> dict:
    (tmp_path / "mapping.yaml").write_text(mapping)
    arrays = to_arrays([ctx.load_mapping(tmp_path / "mapping.yaml")], ctx.arch, ctx.problem)
    res = ctx.evaluate(arrays)
    return res, ctx.record(res)


@pytest.mark.parametrize("k", [1, 2 ** 19, 2 ** 20])
def test_counts_past_64_bits_are_refused_not_wrapped(tmp_path, k):
    """An Inputs tile of a stride of 2^39 spans 2^39 + 1 words per 2 outputs with no overlap: the
    Buffer's Inputs fills are K x 32 x (2^39 + 1) (Timeloop's delta rule). At K = 1 that is exact;
    at K = 2^19 it is 2^63 + 2^24 and at 2^20, 2^64 + 2^25: past int64, so the mapping is refused
    (it used to give negative or wrapped counts)."""
    ctx = _context(tmp_path, CONV1D.replace("KBOUND", str(k)), depth=2 ** 40)
    res, rec = _evaluate(ctx, tmp_path, STRIDED_MAPPING.replace("KBOUND", str(k)))
    fills = k * 32 * (2 ** 39 + 1)
    if fills < 2 ** 63:
        assert rec["valid"] and rec["levels"]["Buffer"]["dataspaces"]["Inputs"]["fills"] == fills
        assert rec["levels"]["DRAM"]["dataspaces"]["Inputs"]["reads"] == fills
    else:
        assert not rec["valid"] and res.validity.kind[0] == validity.OVERFLOW
        assert "64-bit" in rec["error"] and "Buffer" in rec["error"]


def test_spatial_loops_at_a_level_that_does_not_fan_out_are_invalid(tmp_path):
    """DRAM -> Buffer has no fan-out: Timeloop's parser refuses a spatial directive there, so the
    same loops given as arrays are invalid too (they used to count as free parallelism)."""
    ctx = _context(tmp_path, CONV1D.replace("KBOUND", "8").replace("549755813888", "1"))
    mapping = ("mapping:\n- {target: Buffer, type: temporal, factors: [K=1, R=1, P=64], permutation: [P, K, R]}\n"
               "- {target: DRAM, type: temporal, factors: [K=8, R=1, P=1], permutation: [P, K, R]}\n")
    res, rec = _evaluate(ctx, tmp_path, mapping)
    assert rec["valid"]
    (tmp_path / "mapping.yaml").write_text(mapping)
    a = to_arrays([ctx.load_mapping(tmp_path / "mapping.yaml")], ctx.arch, ctx.problem)
    top = len(ctx.arch.levels) - 1                      # DRAM, innermost-first order
    k = ctx.problem.dims.index("K")
    t, sx = a.temporal.copy(), a.spatial_x.copy()
    t[0, top, k], sx[0, top, k] = 4, 2
    res = ctx.evaluate(MappingArrays(t, sx, a.spatial_y.copy(), a.perm.copy(), a.keep.copy()))
    assert not res.valid[0] and res.validity.kind[0] == validity.NO_FANOUT
    assert "cannot find spatial tiling level associated with storage level DRAM" in ctx.record(res)["error"]


def test_a_data_space_named_twice_is_refused(tmp_path):
    """Results and mappings name data spaces: a second 'Weights' used to overwrite the first in the
    result, whose data spaces then no longer summed to its level energies."""
    with pytest.raises(CoexploreError) as err:
        _context(tmp_path, CONV1D.replace("KBOUND", "8").replace("name: Inputs", "name: Weights"))
    assert err.value.key == "problem.shape.data_spaces[1].name" and "twice" in str(err.value)


def test_a_tensor_whose_ranks_share_a_dimension_is_multicast_by_points(tmp_path):
    """A[m+k][k] spread over 8 PEs (M2 K4): each PE needs its own point (m+k, k), 8 distinct ones,
    so the Buffer reads 8 words of A, as many as the PEs' registers fill and as many as the same
    loops run in time read (Timeloop: one read per class of equal deltas)."""
    problem = """
problem:
  version: 0.4
  shape:
    name: skew
    dimensions: [M, K]
    data_spaces:
    - {name: A, projection: [[[M], [K]], [[K]]]}
    - {name: B, projection: [[[K]]]}
    - {name: Z, projection: [[[M]]], read_write: true}
  instance: {M: 2, K: 4}
"""
    ctx = _context(tmp_path, problem)
    rest = ("- {target: Reg, type: temporal, factors: M1 K1, permutation: MK}\n"
            "- {target: DRAM, type: temporal, factors: M1 K1, permutation: MK}\n")
    spatial = ("mapping:\n- {target: PE, type: spatial, factors: M2 K4, permutation: MK, split: 2}\n"
               "- {target: Buffer, type: temporal, factors: M1 K1, permutation: MK}\n" + rest)
    temporal = ("mapping:\n- {target: Buffer, type: temporal, factors: M2 K4, permutation: MK}\n" + rest)
    _, sp = _evaluate(ctx, tmp_path, spatial)
    _, tm = _evaluate(ctx, tmp_path, temporal)
    a = sp["levels"]["Buffer"]["dataspaces"]["A"]
    assert a["reads"] == 8 == sp["levels"]["Reg"]["dataspaces"]["A"]["fills"]
    assert tm["levels"]["Buffer"]["dataspaces"]["A"]["reads"] == 8


def test_factors_whose_int64_product_wraps_to_the_bound_are_refused(tmp_path):
    """Buffer K = 2^32 + 1 times DRAM K = 2^32 is 2^64 + 2^32, which wraps in int64 to 2^32, the
    bound: the factors are checked in floats too, so the mapping is refused (arrays built by hand)."""
    ctx = _context(tmp_path, CONV1D.replace("KBOUND", str(2 ** 32)).replace("549755813888", "1"), depth=2 ** 40)
    (tmp_path / "mapping.yaml").write_text(STRIDED_MAPPING.replace("KBOUND", str(2 ** 32)))
    a = to_arrays([ctx.load_mapping(tmp_path / "mapping.yaml")], ctx.arch, ctx.problem)
    names = [lv.name for lv in reversed(ctx.arch.levels)]
    k = ctx.problem.dims.index("K")
    t = a.temporal.copy()
    t[0, names.index("Buffer"), k], t[0, names.index("DRAM"), k] = 2 ** 32 + 1, 2 ** 32
    res = ctx.evaluate(MappingArrays(t, a.spatial_x.copy(), a.spatial_y.copy(), a.perm.copy(), a.keep.copy()))
    assert not res.valid[0] and res.validity.kind[0] == validity.FACTORS
    assert "product of all factors of dimension K" in ctx.record(res)["error"]


def test_a_tensor_no_level_keeps_is_refused_as_timeloop_refuses_it(tmp_path):
    """Weights bypassed at every level, DRAM included, of a public simba_like tiny_conv case: Timeloop's
    Evaluate fails every level with one reason (topology.cpp, tiling::CheckMaskValidity) and reports
    the first, the compute level; the same mapping with Weights kept at DRAM is the reference case."""
    src = CORPUS / "public" / "simba_like" / "tiny_conv" / "004"
    ctx = load_context(CORPUS / "arches" / "simba_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml",
                       CORPUS / "arches" / "simba_like" / "ERT.yaml")
    doc = yaml.safe_load((src / "mapping.yaml").read_text())
    for e in doc["mapping"]:
        if e.get("type") in ("datatype", "bypass") and "Weights" in (e.get("keep") or []):
            e["keep"].remove("Weights")
            e["bypass"] = list(e.get("bypass") or []) + ["Weights"]
    path = tmp_path / "mapping.yaml"
    path.write_text(yaml.safe_dump(doc))
    got = ctx.record(ctx.evaluate_mappings([ctx.load_mapping(path)]), 0)
    assert not got["valid"]
    assert got["error"] == "ERROR: couldn't map level mac: one of the tensors is bypassed in all storage levels"
    assert json.loads((src / "expected.json").read_text())["valid"]
