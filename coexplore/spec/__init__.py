"""Specs: typed dataclasses + YAML I/O for Timeloop architectures, problems, mappings, ERT/ART, systems."""
