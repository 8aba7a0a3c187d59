"""Accelergy-compatible energy (ERT) and area (ART) estimation."""
