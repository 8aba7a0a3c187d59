"""Synthetic mapping-like objectives with a known optimum, for tests and the search benchmark.

Structure modelled on a layer's mapspace (where parameters interact in groups: the split of one
loop dimension across levels, the loop order of one level next to its tile sizes):
- parameters form hidden groups of 2-4 with cardinalities 2-20; their positions in the vector are
  shuffled so that neighbours are not group mates (a mapspace lists factors level by level);
- some parameters are categorical: their value order is a random permutation (a loop-order id);
- log(loss) is a sum of group terms: a ridge (the members' weighted sum must hit a target, like
  the product of one dimension's factors), a per-member preference, and a rough pairwise table;
- some groups have a capacity: a weighted sum above it makes the candidate invalid (inf), like a
  buffer overflow, and the ridge optimum sits near that edge;
- loss = exp(sum of group terms) spans orders of magnitude, like EDP.
log(loss) is separable over groups and validity is per group, so the global optimum is the sum of
per-group optima, found by enumerating each group alone even when the space has 1e30 points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coexplore.search.space import DiscreteSpace


@dataclass
class _Group:
    params: np.ndarray        # parameter indices (into the shuffled vector)
    pos: list[np.ndarray]     # per member: value -> position in [0, 1]
    w: np.ndarray             # ridge weights
    target: float
    scale: float              # ridge strength
    pref: np.ndarray          # preferred position per member
    pref_scale: float
    rough: np.ndarray         # table over (first, second member) values
    capacity: float           # inf when the group has no validity constraint


class SyntheticProblem:
    """Callable objective: losses [n] of a batch [n, n_params] (inf = invalid)."""

    def __init__(self, space: DiscreteSpace, groups: list[_Group], base: float = 1e-3):
        self.space = space
        self.groups = groups
        self.base = base

    @property
    def true_groups(self) -> list[list[int]]:
        return [sorted(g.params.tolist()) for g in self.groups]

    def _group_terms(self, g: _Group, xg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Term and validity of one group for its members' values xg [n, k]."""
        u = np.stack([g.pos[j][xg[:, j]] for j in range(xg.shape[1])], axis=1)
        s = u @ g.w
        term = g.scale * (s - g.target) ** 2 + g.pref_scale * ((u - g.pref) ** 2) @ g.w
        term = term + g.rough[xg[:, 0], xg[:, 1]]
        return term, s <= g.capacity

    def log_loss(self, batch: np.ndarray) -> np.ndarray:
        x = np.asarray(batch, dtype=np.int64)
        total = np.zeros(len(x))
        valid = np.ones(len(x), dtype=bool)
        for g in self.groups:
            t, v = self._group_terms(g, x[:, g.params])
            total += t
            valid &= v
        total[~valid] = np.inf
        return total

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return self.base * np.exp(self.log_loss(batch))

    def optimum(self) -> tuple[np.ndarray, float]:
        """The global optimum (point, loss), by enumerating every group alone."""
        x = np.zeros(self.space.n_params, dtype=np.int64)
        total = 0.0
        for g in self.groups:
            card = self.space.cardinalities[g.params]
            combos = np.stack(np.unravel_index(np.arange(int(np.prod(card))), tuple(card)), axis=1)
            t, v = self._group_terms(g, combos)
            t[~v] = np.inf
            i = int(np.argmin(t))
            x[g.params] = combos[i]
            total += float(t[i])
        return x, float(self.base * np.exp(total))


def make_synthetic(n_groups: int = 12, seed: int = 0, card_range: tuple[int, int] = (2, 20),
                   group_sizes: tuple[int, ...] = (2, 3, 4), categorical_fraction: float = 0.2,
                   constrained_fraction: float = 0.5, strength: float = 1.0,
                   ridge: float = 12.0, preference: float = 1.5) -> SyntheticProblem:
    """Build a random grouped problem; the same arguments give the same problem."""
    rng = np.random.default_rng(seed)
    sizes = rng.choice(group_sizes, size=n_groups)
    n = int(sizes.sum())
    perm = rng.permutation(n)  # group member -> position in the parameter vector
    card = np.zeros(n, dtype=np.int64)
    ordinal = np.ones(n, dtype=bool)
    groups: list[_Group] = []
    start = 0
    for k in sizes.tolist():
        params = perm[start:start + k]
        start += k
        cg = rng.integers(card_range[0], card_range[1] + 1, size=k)
        card[params] = cg
        pos = []
        for j in range(k):
            p = np.arange(cg[j]) / max(cg[j] - 1, 1)
            if rng.random() < categorical_fraction and cg[j] > 2:
                p = rng.permutation(p)
                ordinal[params[j]] = False
            pos.append(p)
        w = rng.uniform(0.5, 1.5, size=k)
        w /= w.sum()
        target = rng.uniform(0.3, 0.8)
        importance = strength * float(np.exp(rng.normal(0.0, 0.6)))
        scale = ridge * importance
        pref = rng.random(k)
        rough = 0.15 * importance * rng.random((cg[0], cg[1]))
        capacity = np.inf
        if rng.random() < constrained_fraction:
            # the edge sits a little above the ridge target, and cuts off ~10-30% of random points
            s = rng.random((2000, k)) @ w
            capacity = max(target + rng.uniform(0.02, 0.1), float(np.quantile(s, rng.uniform(0.7, 0.9))))
        groups.append(_Group(params, pos, w, target, scale, pref, preference * importance, rough, capacity))
    names = [f"p{i}" for i in range(n)]
    space = DiscreteSpace(card, names, ordinal=ordinal)
    return SyntheticProblem(space, groups)


def make_small(seed: int = 0) -> SyntheticProblem:
    """A tiny problem (a few thousand points) that exhaustive search can solve, for tests."""
    return make_synthetic(n_groups=3, seed=seed, card_range=(2, 4), group_sizes=(2, 3),
                          constrained_fraction=1.0)
