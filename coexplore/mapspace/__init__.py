"""The mapping space of one (architecture, layer): sampling, encoding, constraints."""

from coexplore.mapspace.space import MapSpace

__all__ = ["MapSpace"]
