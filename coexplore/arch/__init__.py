"""Parametric core generators (Simba-like, Eyeriss-like) and multi-core systems."""
