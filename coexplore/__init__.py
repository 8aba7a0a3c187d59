"""coexplore: DNN-accelerator hardware co-exploration with Timeloop-compatible numbers."""

__version__ = "0.1.0"
