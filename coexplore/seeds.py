"""A user's random seed, checked once: a plain non-negative int (numpy integers too, made plain,
since JSON results and cache keys take only Python ints), or None where a run may be unseeded."""

from __future__ import annotations

import numbers

from coexplore.errors import CoexploreError


def check_seed(seed, key: str = "seed", option: str | None = "--seed", none: bool = True) -> int | None:
    """`seed` as an int >= 0 (or None when `none`); anything else a CoexploreError naming `key`."""
    if seed is None and none:
        return None
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and int(seed) >= 0:
        return int(seed)          # (numpy's bool is no Integral)
    raise CoexploreError(f"got {seed!r}", key=key, option=option,
                         expected="an integer >= 0" + (" or None (unseeded)" if none else ""))
