"""The cost model: Timeloop-compatible nest analysis, energy, cycles; batched over mappings."""
