"""Design-space sweeps of a system YAML: every point of its `sweep.axes` mapped, scheduled and
measured (`run`), the non-dominated points (`pareto`), the results folder (`store`)."""
