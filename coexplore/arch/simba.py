"""Simba-like core (weight stationary): parameters and the Timeloop v0.4 node list.

Structure, component classes, level order and dataspace/mapspace constraints are those of
the Timeloop exercises' `example_designs/simba_like` (MIT, J. Emer); with default parameters
the node list equals that design's arch.yaml:

    DRAM > GlobalBuffer (Inputs, Outputs) > PE[pe_mesh_x x pe_mesh_y]:
      PEInputBuffer (Inputs) > distributed_buffers[vector_lanes]:
        PEWeightBuffer (Weights) | PEAccuBuffer (Outputs) > reg_mac[macs_per_lane]:
          PEWeightRegs (Weights) > mac

MACs per PE = vector_lanes x macs_per_lane (16 by default; 256 MACs in all).
"""

from __future__ import annotations

from dataclasses import dataclass

from coexplore.arch.params import CommonParams, drop_none
from coexplore.arch.timeloop_yaml import Component, Container, Nothing, Parallel


@dataclass(frozen=True)
class SimbaParams(CommonParams):
    """Simba-like core parameters; defaults = the exercises' simba_like (45 nm, 16 PEs x 16 MACs).

    Depths are in rows, widths in bits (a row holds width / datawidth words).
    """
    pe_mesh_x: int = 16                # PEs along X (PE container meshX)
    pe_mesh_y: int = 1                 # PEs along Y (PE container meshY)
    vector_lanes: int = 4              # weight/accumulator buffer pairs per PE (meshY)
    macs_per_lane: int = 4             # weight-register/MAC pairs per lane (meshY)
    glb_depth: int = 2048
    glb_width: int = 256
    glb_n_banks: int = 4
    glb_nports: int = 2
    glb_read_bandwidth: float | None = None
    glb_write_bandwidth: float | None = None
    input_buffer_depth: int = 8192
    input_buffer_width: int = 64
    weight_buffer_depth: int = 4096
    weight_buffer_width: int = 64
    weight_buffer_n_banks: int = 8
    accu_buffer_depth: int = 128
    accu_buffer_width: int = 24
    accu_bits: int = 24                # partial-sum datawidth
    weight_regs_depth: int = 1
    weight_regs_width: int = 512
    weight_regs_cluster_size: int = 64
    weight_regs_num_ports: int = 2
    technology: str = "45nm"

    @property
    def pes(self) -> int:
        return self.pe_mesh_x * self.pe_mesh_y

    @property
    def macs(self) -> int:
        return self.pes * self.vector_lanes * self.macs_per_lane

    def check(self) -> list[tuple[str, str, str]]:
        problems = super().check()
        if problems:
            return problems
        w = self.word_bits
        problems = self.widths_of_words((("glb_width", self.glb_width, w),
                                         ("input_buffer_width", self.input_buffer_width, w),
                                         ("weight_buffer_width", self.weight_buffer_width, w),
                                         ("accu_buffer_width", self.accu_buffer_width, self.accu_bits),
                                         ("weight_regs_width", self.weight_regs_width, w)))
        if not problems and (self.weight_regs_width // w) % self.weight_regs_cluster_size:
            problems.append(("weight_regs_cluster_size",
                             f"{self.weight_regs_cluster_size} does not divide the "
                             f"{self.weight_regs_width // w} words of a weight_regs row",
                             f"a divisor of weight_regs_width / word_bits, e.g. weight_regs_cluster_size: "
                             f"{self.weight_regs_width // w} (no buffer width or cluster size follows word_bits: another "
                             "word_bits or row width needs this one given too)"))
        return problems


def _rf(name: str, attributes: dict, keep: list[str], bypass: list[str]) -> Component:
    return Component(name=name, **{"class": "storage"}, subclass="smartbuffer_RF",
                     attributes=attributes,
                     constraints={"dataspace": {"keep": keep, "bypass": bypass}})


def simba_nodes(p: SimbaParams) -> list:
    """The v0.4 `nodes` list of a Simba-like core with parameters `p`."""
    w = p.word_bits

    def mesh(x: int = 1, y: int = 1, x_default: bool = False) -> dict:
        out = {}
        if x != 1 or x_default:
            out["meshX"] = x
        if y != 1:
            out["meshY"] = y
        return out

    return [
        Container(name="System", attributes={"datawidth": w, "technology": p.technology}),
        Component(name="DRAM", **{"class": "DRAM"}, attributes=drop_none({
            "type": p.dram_type, "width": p.dram_width, "datawidth": w,
            "read_bandwidth": p.dram_read_bandwidth,
            "write_bandwidth": p.dram_write_bandwidth})),
        Component(name="GlobalBuffer", **{"class": "smartbuffer_SRAM"}, attributes=drop_none({
            "depth": p.glb_depth, "width": p.glb_width, "datawidth": w,
            "n_banks": p.glb_n_banks, "nports": p.glb_nports,
            "read_bandwidth": p.glb_read_bandwidth,
            "write_bandwidth": p.glb_write_bandwidth}),
            constraints={"dataspace": {"keep": ["Inputs", "Outputs"], "bypass": ["Weights"]}}),
        Container(name="PE", spatial=mesh(p.pe_mesh_x, p.pe_mesh_y, x_default=True),
                  constraints={"spatial": {"factors": "R=1 S=1 P=1 Q=1 N=1",
                                           "permutation": ["M", "C", "R", "S", "P", "Q", "N"]}}),
        _rf("PEInputBuffer", {"depth": p.input_buffer_depth, "width": p.input_buffer_width,
                              "datawidth": w},
            ["Inputs"], ["Weights", "Outputs"]),
        Container(name="distributed_buffers", spatial={"meshY": p.vector_lanes},
                  constraints={"spatial": {"factors": "P=1 Q=1 R=1 S=1 C=1 N=1",
                                           "permutation": ["M", "C", "Q", "R", "S", "P", "N"]}}),
        Parallel(nodes=[
            _rf("PEWeightBuffer", {"depth": p.weight_buffer_depth,
                                   "width": p.weight_buffer_width, "datawidth": w,
                                   "n_banks": p.weight_buffer_n_banks},
                ["Weights"], ["Inputs", "Outputs"]),
            _rf("PEAccuBuffer", {"depth": p.accu_buffer_depth, "datawidth": p.accu_bits,
                                 "width": p.accu_buffer_width},
                ["Outputs"], ["Inputs", "Weights"]),
            Nothing(constraints={"dataspace": {"keep": ["Inputs"]}}),
        ]),
        Container(name="reg_mac", spatial={"meshY": p.macs_per_lane},
                  constraints={"spatial": {"factors": "P=1 Q=1 R=1 S=1 M=1 N=1",
                                           "permutation": ["C", "M", "Q", "R", "S", "P", "N"]}}),
        _rf("PEWeightRegs", {"depth": p.weight_regs_depth, "width": p.weight_regs_width,
                             "cluster_size": p.weight_regs_cluster_size,
                             "num_ports": p.weight_regs_num_ports, "datawidth": w},
            ["Weights"], ["Inputs", "Outputs"]),
        Component(name="mac", **{"class": "intmac"},
                  attributes={"multiplier_width": p.mac_multiplier_width,
                              "adder_width": p.mac_adder_width}),
    ]
