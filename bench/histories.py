"""Helper for the benchmarks, not a benchmark: reading a search's best-so-far history, a list of
[samples, best value] steps as `coexplore map --json` and `map_layer` give it."""

from __future__ import annotations

import math


def best_at(history, n: int) -> float:
    """The best value after n samples (inf before the first valid sample)."""
    val = math.inf
    for s, v in history:
        if s <= n:
            val = v
        else:
            break
    return val


def samples_to(history, target: float, rtol: float = 0.0) -> int | None:
    """Samples after which the best first is at or below target (x (1 + rtol)); None if it never is."""
    for s, v in history:
        if v <= target * (1 + rtol):
            return s
    return None
