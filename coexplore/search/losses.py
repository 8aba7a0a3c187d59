"""Loss clean-up and the loss -> reward transform shared by the searchers.

Mapping losses (EDP, energy, latency) are positive and span orders of magnitude, so the
searchers work on log(loss). Invalid candidates (loss inf, or NaN from a failing model) are
given a finite penalty: the worst finite transformed loss seen so far plus a margin, so they
rank below every valid candidate without blowing up averages.
"""

from __future__ import annotations

import numpy as np

from coexplore.errors import CoexploreError


def clean(losses: np.ndarray) -> np.ndarray:
    """Flat float copy with NaN mapped to +inf (invalid)."""
    out = np.array(losses, dtype=float, copy=True).reshape(-1)
    out[np.isnan(out)] = np.inf
    return out


class LossTransform:
    """Maps raw losses to finite transformed losses (lower is better), tracking the worst seen.

    log: use log(loss) (losses must then be > 0). margin: penalty above the worst finite value
    for invalid candidates, as a fraction of the spread of finite values seen (at least 1.0
    in absolute terms when the spread is still zero).
    """

    def __init__(self, log: bool = True, margin: float = 0.5):
        self.log = log
        self.margin = margin
        self.lo = np.inf
        self.hi = -np.inf

    def __call__(self, losses: np.ndarray) -> np.ndarray:
        raw = clean(losses)
        finite = np.isfinite(raw)
        t = np.empty_like(raw)
        if self.log:
            check_log_losses(raw)
            t[finite] = np.log(raw[finite])
        else:
            t[finite] = raw[finite]
        if finite.any():
            self.lo = min(self.lo, float(t[finite].min()))
            self.hi = max(self.hi, float(t[finite].max()))
        t[~finite] = self.penalty()
        return t

    def penalty(self) -> float:
        if not np.isfinite(self.hi):
            return 0.0  # nothing valid seen yet: all candidates are equally bad
        spread = self.hi - self.lo
        return self.hi + max(self.margin * spread, 1.0 if spread == 0 else 0.0)


def check_log_losses(losses: np.ndarray) -> None:
    """A log-scaled learner (`log_loss: true`) needs every valid loss > 0: checked by `LossTransform`
    and, before the searcher changes, by `Searcher.check_tell`."""
    raw = np.asarray(losses, dtype=float)
    bad = raw[np.isfinite(raw) & (raw <= 0)]
    if len(bad):
        raise CoexploreError(f"a loss of {bad.min():g}: this searcher learns from log(loss), so losses must be > 0",
                             key="log_loss", expected="losses > 0, or the searcher's config log_loss: false "
                             "(registry.mapper_spec(name, {'log_loss': False}), or config: {log_loss: false} "
                             "in a mapper YAML)")
