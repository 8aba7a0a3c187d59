"""The discrete search space the layer searchers work in.

A candidate is a vector of integers, parameter i in [0, cardinalities[i]). The mapspace of one
(core, layer) encodes a mapping this way; the searchers only see this space. Optional
structure helps some searchers but is never required:
- `ordinal[i]`: True when neighbouring values of parameter i are similar (tile-factor index),
  False for a plain category (a loop-order id). Mutation (annealing, GA) steps ordinal
  parameters by a small +-1/+-2 and redraws categorical ones.
- `groups`: known blocks of interacting parameters (the split of one dimension across levels).
  GA crossover can keep them together; MARL can use them instead of its correlation analysis.

Several points may stand for one candidate (a mapping's unit loops can be ordered any way; equal
primes of a dimension can swap levels): a subclass says so with `canonical`, one representative
per candidate. The searchers' memory keys points by it, so a candidate is evaluated once however
it was drawn (`search.memo`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coexplore.errors import CoexploreError

LIST_MAX = 2 ** 20     # spaces this small can list their candidates (`distinct_keys`, ~10 ms a 100,000 points)


@dataclass
class DiscreteSpace:
    """What searchers search: one integer parameter per entry, 0 <= x[i] < cardinalities[i];
    `ordinal` marks parameters whose values are ordered (steps of +-1 mean something), `groups`
    parameters that belong together (a mapspace's own grouping)."""

    cardinalities: np.ndarray
    names: list[str]
    ordinal: np.ndarray | None = None
    groups: list[list[int]] | None = None

    def __post_init__(self):
        card = np.asarray(self.cardinalities)
        if card.ndim != 1 or card.size == 0:
            raise CoexploreError("a discrete space needs a non-empty 1-D list of cardinalities",
                                 key="cardinalities", expected="a list of integers >= 1")
        if not np.issubdtype(card.dtype, np.integer) or np.any(card < 1):
            raise CoexploreError(f"cardinalities must be integers >= 1, got {card.tolist()}",
                                 key="cardinalities", expected="a list of integers >= 1")
        self.cardinalities = card.astype(np.int64)
        if self.names is None or isinstance(self.names, (str, bytes)) or not hasattr(self.names, "__len__"):
            raise CoexploreError(f"names {self.names!r}", key="names", expected=f"a list of {card.size} names")
        self.names = list(self.names)
        if len(self.names) != card.size:
            raise CoexploreError(f"{len(self.names)} names for {card.size} parameters",
                                 key="names", expected=f"{card.size} names")
        if self.ordinal is None:
            self.ordinal = np.ones(card.size, dtype=bool)
        self.ordinal = np.asarray(self.ordinal, dtype=bool)
        if self.ordinal.shape != card.shape:
            raise CoexploreError(f"ordinal has {self.ordinal.size} flags for {card.size} parameters",
                                 key="ordinal", expected=f"{card.size} booleans")
        if self.groups is not None:
            seen: set[int] = set()
            groups = []
            for g in self.groups:
                g = [int(i) for i in g]
                if not g or len(set(g)) < len(g) or any(i < 0 or i >= card.size or i in seen for i in g):
                    raise CoexploreError(f"bad parameter group {g}", key="groups",
                                         expected=f"disjoint non-empty lists of indices < {card.size}")
                seen.update(g)
                groups.append(g)
            self.groups = groups

    @property
    def n_params(self) -> int:
        return int(self.cardinalities.size)

    @property
    def size(self) -> int:
        """Number of points (a Python int: it may exceed 2**63)."""
        n = 1
        for c in self.cardinalities.tolist():
            n *= int(c)
        return n

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n uniform random points, shape [n, n_params]."""
        u = rng.random((n, self.n_params))
        return np.minimum((u * self.cardinalities).astype(np.int64), self.cardinalities - 1)

    def check(self, batch: np.ndarray) -> np.ndarray:
        """Return batch as int64 [n, n_params] or raise if any value is out of range."""
        x = np.asarray(batch)
        if x.ndim != 2 or x.shape[1] != self.n_params:
            raise CoexploreError(f"candidates of shape {x.shape}", key="batch",
                                 expected=f"shape [n, {self.n_params}]")
        if not np.issubdtype(x.dtype, np.integer):
            if not np.issubdtype(x.dtype, np.number) or np.any(x != np.round(x)):
                raise CoexploreError("candidate values are not whole numbers", key="batch",
                                     expected="integers 0 <= x[i] < cardinalities[i]")
        x = x.astype(np.int64, copy=False)
        if np.any(x < 0) or np.any(x >= self.cardinalities):
            row, col = (int(v) for v in np.argwhere((x < 0) | (x >= self.cardinalities))[0])
            raise CoexploreError(f"candidate value out of range: row {row} of the batch has {int(x[row, col])} "
                                 f"for {self.names[col]} (column {col})", key="batch",
                                 expected=f"0 <= x[i] < cardinalities[i] (here 0..{int(self.cardinalities[col]) - 1})")
        return x

    def ravel(self, batch: np.ndarray) -> np.ndarray:
        """Mixed-radix index of each point (first parameter most significant); needs size < 2**63."""
        if self.size >= 2 ** 63:
            raise CoexploreError(f"space of {self.size:.3e} points is too large to index",
                                 key="space", expected="fewer than 2**63 points")
        return np.ravel_multi_index(tuple(np.asarray(batch, dtype=np.int64).T), tuple(self.cardinalities))

    def unravel(self, index: np.ndarray) -> np.ndarray:
        """Inverse of `ravel`: points [n, n_params] from mixed-radix indices."""
        if self.size >= 2 ** 63:
            raise CoexploreError(f"space of {self.size:.3e} points is too large to index",
                                 key="space", expected="fewer than 2**63 points")
        return np.stack(np.unravel_index(np.asarray(index, dtype=np.int64),
                                         tuple(self.cardinalities)), axis=1).astype(np.int64)

    def keys(self, batch: np.ndarray) -> list:
        """Hashable keys of points: ints when the space is indexable, else each row's bytes in the
        narrowest unsigned type holding every value (1-2 bytes a parameter instead of 8: the memory
        of a long search's evaluated points; they sort as the int64 rows' bytes do)."""
        x = np.ascontiguousarray(batch, dtype=np.int64)
        if self.size < 2 ** 63:
            return self.ravel(x).tolist()
        return [row.tobytes() for row in x.astype(self._key_dtype())]

    def points(self, keys: list) -> np.ndarray:
        """The points [n, n_params] of keys made by `keys` (its inverse)."""
        if not len(keys):
            return np.zeros((0, self.n_params), np.int64)
        if isinstance(keys[0], bytes):
            return np.frombuffer(b"".join(keys), self._key_dtype()).reshape(len(keys), -1).astype(np.int64)
        return self.unravel(np.asarray(keys, dtype=np.int64))

    def _key_dtype(self) -> str:
        top = int(self.cardinalities.max())
        return "u1" if top <= 2 ** 8 else "<u2" if top <= 2 ** 16 else "<u4" if top <= 2 ** 32 else "<i8"

    # ------------------------------------------------------------------ distinct candidates
    def canonical(self, batch: np.ndarray) -> np.ndarray:
        """One representative point per candidate, for each row: here every point is its own
        candidate (a subclass whose points repeat candidates overrides this)."""
        return np.asarray(batch, dtype=np.int64)

    def distinct_keys(self) -> "np.ndarray | list | None":
        """The sorted keys (`keys`: indices here; a subclass may give a list of rows' bytes) of the
        representatives of every candidate, for searchers that walk the candidates left unseen;
        None when there are too many to list (more than LIST_MAX)."""
        if self.size > LIST_MAX:
            return None
        return np.arange(self.size, dtype=np.int64)

    @property
    def n_distinct(self) -> int:
        """Number of candidates, or an upper bound of it where it is not known (here: exact)."""
        return self.size

    def to_dict(self) -> dict:
        return {"cardinalities": self.cardinalities.tolist(), "names": list(self.names),
                "ordinal": self.ordinal.tolist(), "groups": self.groups}
