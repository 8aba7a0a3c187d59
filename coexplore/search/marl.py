"""MARL mapper: agents own clusters of correlated parameters and learn together (arXiv 2507.16249).

Flow: a warm-up of uniform random samples (counted in the budget) -> correlation analysis ->
agglomerative clustering of the parameters -> one agent per cluster, all trained on the shared
reward with the learner of `coexplore.search.rl` (`TeamLearner`).

Correlation analysis (the paper's exact recipe is not public; this is ours, see
docs/readme_search.md). Parameters are categorical in general (a loop-order id has no order),
so each parameter is first re-coded by goodness: value v -> rank of the mean loss-rank of the
warm-up samples with x_p = v. On the re-coded values:
- parameter-objective correlation: Spearman rho between the (leave-one-out) per-value mean and
  the loss rank; it measures how much a parameter matters alone, and orders the parameters
  inside an agent (important ones first, so the others are chosen conditioned on them);
- parameter-parameter correlation: under uniform sampling the parameters are independent, so
  plain correlations between them are zero. What couples two parameters is that their effect on
  the loss is joint: rho_pq = Spearman rho between the loss residual (after the main effects)
  and the leave-one-out mean residual of the (p, q) cell, with values binned by goodness so that
  cells hold enough samples. Pairs that interact (the split of one dimension, a capacity that
  several factors share) get rho_pq > 0; others get rho ~ 0 +- 1/sqrt(N).
Clustering: average-linkage agglomerative clustering on 1 - |rho_pq| (scipy), cut where the
linkage distance exceeds 1 - z/sqrt(N), i.e. clusters are joined only through correlations that
are significant at z standard errors; the number of agents follows from the data. Clusters
larger than `max_agent_size` are split again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coexplore.search.rl import PolicySearcher, RLConfig
from coexplore.search.space import DiscreteSpace


@dataclass
class MARLConfig(RLConfig):
    warmup: int = 1000             # uniform random samples for the correlation analysis (in budget)
    clustering: str = "correlation"  # "correlation" | "per_parameter" | "given" (space.groups) | "single"
    bins: int = 4                  # goodness bins per parameter for the pair cells
    z: float = 3.0                 # significance of a correlation that may join two parameters
    max_agent_size: int = 8        # a larger cluster is split again
    warmup_update: bool = True     # one policy step on the warm-up (it is on-policy for the uniform start)


CLUSTERINGS = ("correlation", "per_parameter", "given", "single")


def _rank01(v: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata
    return (rankdata(v) - 0.5) / len(v)


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import rankdata
    ra, rb = rankdata(a), rankdata(b)
    ra -= ra.mean()
    rb -= rb.mean()
    den = np.sqrt((ra * ra).sum() * (rb * rb).sum())
    return float((ra * rb).sum() / den) if den > 0 else 0.0


def _loo_means(codes: np.ndarray, y: np.ndarray, n_codes: int) -> np.ndarray:
    """Leave-one-out mean of y over the samples sharing each sample's code (0 where alone)."""
    s = np.bincount(codes, weights=y, minlength=n_codes)
    c = np.bincount(codes, minlength=n_codes)
    cnt = c[codes] - 1
    out = np.zeros(len(y))
    ok = cnt > 0
    out[ok] = (s[codes][ok] - y[ok]) / cnt[ok]
    return out


@dataclass
class Correlations:
    objective: np.ndarray        # [d] parameter-objective Spearman rho
    pairs: np.ndarray            # [d, d] parameter-parameter interaction rho (symmetric, diag 1)
    n_samples: int


def _interactions(x: np.ndarray, y: np.ndarray, card: np.ndarray, ordinal: np.ndarray,
                  bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Main-effect rho [d] and pair-interaction rho [d, d] of parameters x [n, d] on scores y [n]."""
    n, d = x.shape
    ym = y - y.mean()
    main = np.zeros((n, d))
    binned = np.zeros((n, d), dtype=np.int64)
    n_bins = np.zeros(d, dtype=np.int64)
    obj = np.zeros(d)
    for p in range(d):
        s = np.bincount(x[:, p], weights=ym, minlength=card[p])
        c = np.bincount(x[:, p], minlength=card[p])
        mean = np.where(c > 0, s / np.maximum(c, 1), 0.0)
        main[:, p] = _loo_means(x[:, p], ym, card[p])
        obj[p] = _spearman(main[:, p], y) if card[p] > 1 else 0.0
        # bin values in their own order (ordinal) or re-coded by goodness (categorical)
        if ordinal[p]:
            good_rank = np.arange(card[p])
        else:
            good_rank = np.empty(card[p], dtype=np.int64)
            good_rank[np.argsort(mean, kind="stable")] = np.arange(card[p])
        k = int(min(bins, card[p]))
        binned[:, p] = (good_rank[x[:, p]] * k) // card[p]
        n_bins[p] = k
    resid = ym - main.sum(axis=1)
    pairs = np.eye(d)
    for p in range(d):
        for q in range(p + 1, d):
            cell = binned[:, p] * n_bins[q] + binned[:, q]
            r = max(0.0, _spearman(_loo_means(cell, resid, int(n_bins[p] * n_bins[q])), resid))
            pairs[p, q] = pairs[q, p] = r
    return obj, pairs


def correlation_analysis(space: DiscreteSpace, x: np.ndarray, losses: np.ndarray,
                         bins: int = 4) -> Correlations:
    """Rank correlations of the parameters with the loss and with each other (see module doc).

    Valid and invalid candidates carry different information: the loss ranks among the valid
    ones, and validity itself (a capacity shared by several parameters). Both are analysed and
    a pair keeps the stronger evidence; correlations from the valid subset (n_v samples) are
    scaled by sqrt(n_v / n) so that both have the same standard error under independence.
    """
    x = np.asarray(x, dtype=np.int64)
    losses = np.where(np.isnan(losses), np.inf, np.asarray(losses, dtype=float))
    n, d = x.shape
    card = space.cardinalities
    valid = np.isfinite(losses)
    obj = np.zeros(d)
    pairs = np.eye(d)
    if valid.sum() >= 10:
        o, pr = _interactions(x[valid], _rank01(losses[valid]), card, space.ordinal, bins)
        scale = np.sqrt(valid.sum() / n)
        obj, pairs = o * scale, np.maximum(pairs, pr * scale)
    if 0 < valid.sum() < n:
        o, pr = _interactions(x, (~valid).astype(float), card, space.ordinal, bins)
        obj = np.where(np.abs(o) > np.abs(obj), o, obj)
        pairs = np.maximum(pairs, pr)
    return Correlations(obj, pairs, n)


def cluster_parameters(corr: Correlations, z: float = 3.0, max_size: int = 8) -> list[list[int]]:
    """Agglomerative clustering on 1 - |rho|; agents ordered by importance, parameters too."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    d = len(corr.objective)
    if d == 1:
        return [[0]]
    dist = 1.0 - np.abs(corr.pairs)
    np.fill_diagonal(dist, 0.0)
    threshold = 1.0 - z / np.sqrt(max(corr.n_samples, 1))
    labels = fcluster(linkage(squareform(dist, checks=False), method="average"),
                      t=threshold, criterion="distance")
    clusters = [np.flatnonzero(labels == lab) for lab in np.unique(labels)]
    out: list[np.ndarray] = []
    while clusters:
        c = clusters.pop()
        if len(c) <= max_size:
            out.append(c)
            continue
        sub = dist[np.ix_(c, c)]
        lab = fcluster(linkage(squareform(sub, checks=False), method="average"), t=2, criterion="maxclust")
        if len(np.unique(lab)) < 2:  # all equidistant: cut in halves
            lab = (np.arange(len(c)) >= len(c) // 2).astype(int)
        clusters.extend(c[lab == v] for v in np.unique(lab))
    imp = np.abs(corr.objective)
    out = [c[np.argsort(-imp[c], kind="stable")] for c in out]
    out.sort(key=lambda c: (-float(imp[c].max()), int(c.min())))
    return [c.tolist() for c in out]


class MARL(PolicySearcher):
    """Several agents, each owning a cluster of parameters, trained together on the shared reward."""

    name = "marl"

    def __init__(self, space: DiscreteSpace, config: MARLConfig | None = None, seed: int | None = 0):
        super().__init__(space, config, seed)
        self.correlations: Correlations | None = None
        self._warm_x: list[np.ndarray] = []
        self._warm_l: list[np.ndarray] = []
        self._warm_asked = 0

    @classmethod
    def default_config(cls) -> MARLConfig:
        return MARLConfig()

    def _warmup_size(self) -> int:
        if self.config.clustering != "correlation":
            return 0
        return max(int(self.config.warmup), 0)

    def _clusters(self) -> list[list[int]]:
        how = self.config.clustering
        d = self.space.n_params
        if how == "per_parameter":
            return [[i] for i in range(d)]
        if how == "single":
            return [list(range(d))]
        if how == "given":
            groups = self.space.groups or []
            rest = sorted(set(range(d)) - {i for g in groups for i in g})
            return [list(g) for g in groups] + [[i] for i in rest]
        if how == "correlation":
            x = np.concatenate(self._warm_x) if self._warm_x else np.zeros((0, d), np.int64)
            losses = np.concatenate(self._warm_l) if self._warm_l else np.zeros(0)
            if len(x) < 10:
                return [[i] for i in range(d)]
            self.correlations = correlation_analysis(self.space, x, losses, self.config.bins)
            return cluster_parameters(self.correlations, self.config.z, self.config.max_agent_size)
        from coexplore.errors import CoexploreError
        raise CoexploreError(f"unknown clustering '{how}'", key="clustering",
                             expected=" | ".join(CLUSTERINGS))

    def ask(self, n: int) -> np.ndarray:
        if self._memo is None:
            self._clusters_check()
            self._start()
        if self.learner is None and self._warm_asked < self._warmup_size():
            self._warm_asked += n        # a batch that straddles the end extends the warm-up
            return self._uniform_new(n)
        self._ensure_learner_after_warmup()
        return self._ask_policy(n)

    def _clusters_check(self) -> None:
        if self.config.clustering not in CLUSTERINGS:
            from coexplore.errors import CoexploreError
            raise CoexploreError(f"unknown clustering '{self.config.clustering}'", key="clustering",
                                 expected=" | ".join(CLUSTERINGS))

    def _uniform_new(self, n: int) -> np.ndarray:
        x = self.space.sample(self.rng, n)
        keys, _, new = self._memo.lookup(x)
        if not new.all():  # tiny spaces: replace repeats where possible
            x = np.concatenate([x[new], self._mutants(x, n - int(new.sum()))])
            keys = self.space.keys(x)
        self._memo.mark_pending(keys)
        return x

    def _ensure_learner_after_warmup(self) -> None:
        if self.learner is not None:
            return
        self._ensure_learner()
        if self.config.warmup_update and self._warm_x:
            x = np.concatenate(self._warm_x)
            losses = np.concatenate(self._warm_l)
            if len(x):
                self.learner.observe(x, losses)
                self.learner.update(x, losses, self._transform)

    def _learn(self, batch: np.ndarray, losses: np.ndarray) -> None:
        if self.learner is None:
            self._warm_x.append(batch)
            self._warm_l.append(losses)
            return
        super()._learn(batch, losses)

    @property
    def clusters(self) -> list[list[int]] | None:
        return None if self.learner is None else self.learner.clusters


@dataclass
class MARLNoClusteringConfig(MARLConfig):
    clustering: str = "per_parameter"
    warmup: int = 0


class MARLNoClustering(MARL):
    """Ablation: one agent per parameter, no warm-up, no clustering."""

    name = "marl_noclust"

    @classmethod
    def default_config(cls) -> MARLNoClusteringConfig:
        return MARLNoClusteringConfig()
