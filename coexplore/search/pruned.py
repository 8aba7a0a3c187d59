"""Timeloop's own mapper algorithms over a `MapSpace`: random-pruned and linear-pruned.

Timeloop splits a mapping into an index factorisation (IF: which factor goes to which level and
fan-out, plus bypass here) and loop orders, and prunes loop orders that differ only in the
position of unit loops (they give the same mapping).
* random-pruned: draw a random IF, visit up to `max_permutations_per_if_visit` distinct pruned
  loop orders of it (random ones), then draw the next IF.
* linear-pruned: walk the IFs in index order from the first and, for each, every pruned loop order
  and bypass choice (`LinearPruned`).
Both count every proposal as a sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coexplore.search.base import Searcher


@dataclass
class RandomPrunedConfig:
    max_permutations_per_if_visit: int = 16


@dataclass
class LinearPrunedConfig:
    """Timeloop's linear-pruned walks every loop order (its max-permutations-per-if-visit is
    random-pruned's). `skip_failed`: skip a factorisation whose every bypass choice fails under its
    first loop order, as Timeloop does; exact for coexplore's objectives (a loss is infinite only for
    an invalid mapping); `map_layer` turns it off for an objective function of the user's, which may
    give a valid mapping an infinite loss."""
    skip_failed: bool = True


class _PrunedBase(Searcher):
    needs_mapspace = True

    def __init__(self, mapspace, config=None, seed: int | None = 0):
        super().__init__(seed)
        self.mapspace = mapspace
        self.space = mapspace.space          # the parameter space: told batches are checked against it
        self.config = config

    def _orders_for_if(self, x_if: np.ndarray):
        """Per level, the order parameters of one IF: (their indices, positions of the non-unit
        dimensions among them, number of dimensions); only the non-unit loops' order matters."""
        ms = self.mapspace
        arrays = ms.decode(x_if[None, :])
        per_level = []
        for li, free in enumerate(ms.perm_free):
            idx = [pi for pi, l2, _ in ms.perm_index if l2 == li]
            dims = [d for _, l2, d in ms.perm_index if l2 == li]
            nonunit = [k for k, d in enumerate(dims) if arrays.temporal[0, li, d] > 1]
            per_level.append((idx, nonunit, len(dims)))
        return per_level



class RandomPruned(_PrunedBase):
    name = "random_pruned"

    def __init__(self, mapspace, config: RandomPrunedConfig | None = None, seed: int | None = 0):
        super().__init__(mapspace, config or RandomPrunedConfig(), seed)
        self._current = None
        self._left = 0
        self._seen: set = set()

    def _new_if(self):
        self._current = self.mapspace.sample(self.rng, 1)[0]
        self._levels = self._orders_for_if(self._current)
        self._left = self.config.max_permutations_per_if_visit
        self._seen = set()
        # number of distinct pruned orders of this IF
        total = 1
        for _, nonunit, _ in self._levels:
            for k in range(2, len(nonunit) + 1):
                total *= k
        self._distinct = total

    def ask(self, n: int) -> np.ndarray:
        out = []
        while len(out) < n:
            if self._current is None or self._left <= 0 or len(self._seen) >= self._distinct:
                self._new_if()
            x = self._current.copy()
            key = []
            for idx, nonunit, k in self._levels:
                if not idx:
                    continue
                order = self.rng.permutation(len(nonunit)) if nonunit else []
                keys = np.zeros(k, np.int64)
                for rank, j in enumerate(order):
                    keys[nonunit[j]] = rank
                x[idx] = keys
                key.append(tuple(keys[nonunit]))
            key = tuple(key)
            if key in self._seen:
                self._left -= 1      # a repeat costs patience but no sample
                continue
            self._seen.add(key)
            self._left -= 1
            out.append(x)
        return np.array(out, np.int64)


class LinearPruned(_PrunedBase):
    """timeloop-mapper's linear-pruned: one in-order walk of the distinct mappings from the first
    (`coexplore.mapspace.enumerate.canonical_rows`: factorisations in index order outermost, then
    every pruned loop order of each, then keep/bypass fastest), as Timeloop's odometer over (index
    factorisation, loop permutation, spatial, datatype bypass) from 0. Deterministic: the seed does
    not change it. As Timeloop, a factorisation whose every bypass choice fails under its first
    loop order is skipped: in the model no validity check depends on the loop order, so none of its
    other mappings is valid either (Timeloop's skip, exact here). A batch probes the next
    factorisations (their first loop order x every bypass choice) when no accepted one has
    mappings left, so the rest of a factorisation follows its probe in the next batch. Ends
    (`done`) when the walk has covered the space."""

    seeded = False

    name = "linear_pruned"

    def __init__(self, mapspace, config: LinearPrunedConfig | None = None, seed: int | None = 0):
        super().__init__(mapspace, config or LinearPrunedConfig(), seed)
        self._walk = None                # canonical_rows, restored by re-walking `_rows_taken` rows
        self._rows_taken = 0
        self._ready: list[np.ndarray] = []   # candidates of accepted factorisations, in walk order
        self._untold: list[np.ndarray] = []  # of those, the ones asked in the last batch (until told)
        self._probes: list[dict] = []        # factorisations being probed: row, tail, probe size k, asked, ...
        self._ended = False
        self._cols = None

    @property
    def done(self) -> bool:
        """The walk covered every distinct mapping (the best told is then the optimum)."""
        return self._ended and not self._ready and not self._probes

    def _rows(self):
        from coexplore.mapspace.enumerate import canonical_rows, tail_columns
        self._cols = tail_columns(self.mapspace)
        return canonical_rows(self.mapspace)

    def _expand(self, row: np.ndarray, tail: np.ndarray) -> np.ndarray:
        block = np.repeat(row[None, :], len(tail), axis=0)
        block[:, self._cols] = tail
        return block

    def ask(self, n: int) -> np.ndarray:
        if self._walk is None:
            self._walk = self._rows()
        for p in self._probes:                    # asked in a batch that was dropped (never told): again
            if p["at"] is not None:
                p["asked"] -= p["count"]
                p["at"] = None
        self._ready[:0], self._untold = self._untold, []
        out, size = [], 0
        while size < n and self._ready:          # the rest of accepted factorisations first
            block = self._ready[0]
            take = block[:n - size]
            out.append(take)
            self._untold.append(take)              # (given back if the batch is never told)
            size += len(take)
            if len(take) == len(block):
                self._ready.pop(0)
            else:
                self._ready[0] = block[len(take):]
        k = 2 ** len(self.mapspace.keep_index)   # a probe: the first loop order x every keep/bypass choice
        i = 0
        while size < n:                           # then probes, open ones first, then of the next factorisations
            if i == len(self._probes):
                nxt = None if self._ended else next(self._walk, None)
                if nxt is None:
                    self._ended = True
                    break
                self._rows_taken += 1
                self._probes.append({"row": nxt[0], "tail": nxt[1], "k": min(k, len(nxt[1])), "asked": 0,
                                     "valid": False, "at": None, "count": 0})
            p = self._probes[i]
            i += 1
            m = min(p["k"] - p["asked"], n - size)
            if m <= 0:
                continue
            out.append(self._expand(p["row"], p["tail"][p["asked"]:p["asked"] + m]))
            p["at"], p["count"] = size, m
            p["asked"] += m
            size += m
        return np.concatenate(out) if out else np.zeros((0, self.mapspace.n_params), np.int64)

    def tell(self, batch: np.ndarray, losses: np.ndarray) -> np.ndarray:
        losses = super().tell(batch, losses)
        self._untold = []
        left = []
        for p in self._probes:
            if p["at"] is not None:
                p["valid"] = p["valid"] or bool(np.isfinite(losses[p["at"]:p["at"] + p["count"]]).any())
                p["at"] = None
            if p["asked"] < p["k"]:
                left.append(p)                    # a probe larger than the batch: the rest next time
            elif (p["valid"] or not self.config.skip_failed) and len(p["tail"]) > p["k"]:
                self._ready.append(self._expand(p["row"], p["tail"][p["k"]:]))
        self._probes = left
        return losses

    def state_dict(self) -> dict:
        return {**self.__dict__, "_walk": None}

    def load_state_dict(self, state: dict) -> None:
        """The walk is deterministic: a restored search re-walks it to where it was."""
        super().load_state_dict(state)
        self._walk = self._rows()
        for _ in range(self._rows_taken):
            next(self._walk)
