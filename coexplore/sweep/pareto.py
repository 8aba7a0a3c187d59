"""Non-dominated points under several objectives (minimised or maximised)."""

from __future__ import annotations

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.sweep.metrics import OBJECTIVES, Objective


def pareto_front(values, objectives: list[Objective]) -> np.ndarray:
    """Boolean mask of the rows of `values` ([points, objectives], one column per objective) that no
    other row dominates: at least as good in every objective and better in one. Rows holding a NaN
    (a point that failed) or an infinite value are never on the front; equal rows are all on it.
    An objective may be given by name (`"latency"`: OBJECTIVES["latency"])."""
    objectives = [_objective(o) for o in objectives]
    try:
        v = np.array(values, dtype=float).reshape(len(values), len(objectives))
    except (TypeError, ValueError):
        raise CoexploreError(f"values that are not {len(objectives)} numbers per point: {values!r:.80}",
                             key="values", expected="one row of numbers per point, one column per objective") from None
    v = v * np.array([1.0 if o.sense == "min" else -1.0 for o in objectives])   # all minimised
    ok = np.isfinite(v).all(axis=1)
    front = ok.copy()
    for i in np.flatnonzero(ok):
        others = v[ok]
        dominated = np.all(others <= v[i], axis=1) & np.any(others < v[i], axis=1)
        front[i] = not dominated.any()
    return front


def _objective(o) -> Objective:
    if isinstance(o, Objective):
        return o
    if isinstance(o, str) and o in OBJECTIVES:
        return OBJECTIVES[o]
    raise CoexploreError(f"got {o!r:.60}", key="objectives",
                         expected="Objective objects or names: " + ", ".join(OBJECTIVES))
