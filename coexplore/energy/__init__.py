"""Accelergy-compatible energy (ERT) and area (ART) estimation.

    estimate_component(class_name, attributes) -> ComponentEstimate   (pJ per action, um^2)
    build_tables(components) -> (ert, art)    Accelergy 0.4 ERT/ART dicts
    write_ert(path, ert) / write_art(path, art) / read_ert(path) / read_art(path)

Built-in estimator: exact Accelergy plug-in constants for DRAM, the Library/Aladdin
primitives and the example designs' compound classes; a fitted model of CACTI for SRAM
(see sram_model). `build_tables(..., estimator="accelergy")` runs the real tool instead.
"""

from coexplore.energy.components import (CLASSES, ESTIMATOR, ComponentEstimate,
                                         estimate_component)
from coexplore.energy.tables import (build_tables, components_from_processed,
                                     format_art, format_ert, read_art, read_ert, write_art,
                                     write_ert)

__all__ = ["CLASSES", "ESTIMATOR", "ComponentEstimate", "estimate_component", "build_tables",
           "components_from_processed", "format_art", "format_ert", "read_art",
           "read_ert", "write_art", "write_ert"]
