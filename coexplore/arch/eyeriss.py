"""Eyeriss-like core (row stationary): parameters and the Timeloop v0.4 node list.

Structure, component classes, level order and the row-stationary constraints are those of
the Timeloop exercises' `example_designs/eyeriss_like` (MIT, J. Emer) at its reference run
(32 nm); with default parameters the node list equals that design's arch.yaml:

    DRAM > eyeriss: shared_glb (Inputs, Outputs) > PE_column[pe_mesh_x] > PE[pe_mesh_y]:
      ifmap_spad (Inputs) | weights_spad (Weights) | psum_spad (Outputs) > mac

Row stationary: each PE column produces a different psum row (X carries Q and M), each PE
of a column holds a different filter row (Y carries S, C and M); the scratchpads' temporal
factors fix which loops run inside a PE.
"""

from __future__ import annotations

from dataclasses import dataclass

from coexplore.arch.params import CommonParams, drop_none
from coexplore.arch.timeloop_yaml import Component, Container, Parallel


@dataclass(frozen=True)
class EyerissParams(CommonParams):
    """Eyeriss-like core parameters; defaults = the exercises' eyeriss_like (32 nm, 14x12 PEs).

    Depths are in rows, widths in bits; bandwidths in words/cycle (None = unlimited).
    """
    pe_mesh_x: int = 14                # PE columns (PE_column meshX)
    pe_mesh_y: int = 12                # PEs per column (PE meshY)
    glb_depth: int = 16384
    glb_width: int = 64
    glb_n_banks: int = 32
    glb_read_bandwidth: float | None = 16
    glb_write_bandwidth: float | None = 16
    ifmap_spad_depth: int = 12
    ifmap_spad_width: int = 16
    ifmap_spad_read_bandwidth: float | None = 2
    ifmap_spad_write_bandwidth: float | None = 2
    weights_spad_depth: int = 192
    weights_spad_width: int = 16
    weights_spad_read_bandwidth: float | None = 2
    weights_spad_write_bandwidth: float | None = 2
    psum_spad_depth: int = 16
    psum_spad_width: int = 16
    psum_spad_update_fifo_depth: int = 2
    psum_bits: int = 16                # partial-sum datawidth
    psum_spad_read_bandwidth: float | None = 2
    psum_spad_write_bandwidth: float | None = 2
    technology: str = "32nm"

    @property
    def pes(self) -> int:
        return self.pe_mesh_x * self.pe_mesh_y

    @property
    def macs(self) -> int:
        return self.pes

    def check(self) -> list[tuple[str, str, str]]:
        problems = super().check()
        if problems:
            return problems
        w = self.word_bits
        return self.widths_of_words((("glb_width", self.glb_width, w),
                                     ("ifmap_spad_width", self.ifmap_spad_width, w),
                                     ("weights_spad_width", self.weights_spad_width, w),
                                     ("psum_spad_width", self.psum_spad_width, self.psum_bits)))


def _spad(name: str, depth: int, width: int, bits: int, rbw, wbw, keep: str, temporal: dict,
          extra: dict | None = None) -> Component:
    attrs = {"depth": depth, "width": width, **(extra or {}), "datawidth": bits,
             "read_bandwidth": rbw, "write_bandwidth": wbw}
    return Component(name=name, **{"class": "smartbuffer_RF"}, attributes=drop_none(attrs),
                     constraints={"dataspace": {"keep": [keep]}, "temporal": temporal})


def eyeriss_nodes(p: EyerissParams) -> list:
    """The v0.4 `nodes` list of an Eyeriss-like core with parameters `p`."""
    w = p.word_bits
    return [
        Container(name="system"),
        Component(name="DRAM", **{"class": "DRAM"}, attributes=drop_none({
            "type": p.dram_type, "width": p.dram_width, "datawidth": w,
            "read_bandwidth": p.dram_read_bandwidth,
            "write_bandwidth": p.dram_write_bandwidth})),
        Container(name="eyeriss", attributes={"technology": p.technology}),
        Component(name="shared_glb", **{"class": "smartbuffer_SRAM"}, attributes=drop_none({
            "depth": p.glb_depth, "width": p.glb_width, "n_banks": p.glb_n_banks,
            "datawidth": w, "read_bandwidth": p.glb_read_bandwidth,
            "write_bandwidth": p.glb_write_bandwidth}),
            constraints={"dataspace": {"keep": ["Inputs", "Outputs"], "bypass": ["Weights"]}}),
        Container(name="PE_column", spatial={"meshX": p.pe_mesh_x}, constraints={"spatial": {
            "permutation": ["N", "C", "P", "R", "S", "Q", "M"],
            "factors": ["N=1", "C=1", "P=1", "R=1", "S=1"],
            "split": 999}}),
        Container(name="PE", spatial={"meshY": p.pe_mesh_y}, constraints={"spatial": {
            "split": 0,
            "permutation": ["N", "P", "Q", "R", "S", "C", "M"],
            "factors": ["N=1", "P=1", "Q=1", "R=1"]}}),
        Parallel(nodes=[
            _spad("ifmap_spad", p.ifmap_spad_depth, p.ifmap_spad_width, w,
                  p.ifmap_spad_read_bandwidth, p.ifmap_spad_write_bandwidth, "Inputs",
                  {"permutation": ["N", "M", "C", "P", "Q", "R", "S"],
                   "factors": ["N=1", "M=1", "C=1", "P=1", "Q=1", "R=1", "S=1"]}),
            _spad("weights_spad", p.weights_spad_depth, p.weights_spad_width, w,
                  p.weights_spad_read_bandwidth, p.weights_spad_write_bandwidth, "Weights",
                  {"permutation": ["N", "M", "P", "Q", "S", "C", "R"],
                   "factors": ["N=1", "M=1", "P=1", "Q=1", "S=1"]}),
            _spad("psum_spad", p.psum_spad_depth, p.psum_spad_width, p.psum_bits,
                  p.psum_spad_read_bandwidth, p.psum_spad_write_bandwidth, "Outputs",
                  {"permutation": ["N", "C", "P", "Q", "R", "S", "M"],
                   "factors": ["N=1", "C=1", "R=1", "S=1", "P=1", "Q=1"]},
                  extra={"update_fifo_depth": p.psum_spad_update_fifo_depth}),
        ]),
        Component(name="mac", **{"class": "intmac"},
                  attributes={"multiplier_width": p.mac_multiplier_width,
                              "adder_width": p.mac_adder_width}),
    ]
