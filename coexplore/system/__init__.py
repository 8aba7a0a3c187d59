"""System level: many DNN jobs on many cores sharing off-chip bandwidth (MAGMA + baselines)."""
