"""Parametric core generators (Simba-like, Eyeriss-like) and multi-core systems.

    from coexplore.arch import build_core, load_system_arch
    core = build_core("simba", {"pe_mesh_x": 8, "glb_depth": 4096})
    core.arch_yaml()          # Timeloop v0.4 architecture (!Container/!Component/!Parallel)
    core.flattened()          # v0.3 subtree/local form (processed.yaml) + mapspace constraints
    system = load_system_arch("arch/simba_2x2.yaml")   # cores + instances of a system YAML
"""

from coexplore.arch.core import TEMPLATES, CoreArch, build_core
from coexplore.arch.eyeriss import EyerissParams
from coexplore.arch.simba import SimbaParams
from coexplore.arch.system import CoreInstance, SystemArch, build_system, load_system_arch

__all__ = ["TEMPLATES", "CoreArch", "build_core", "SimbaParams", "EyerissParams",
           "CoreInstance", "SystemArch", "build_system", "load_system_arch"]
