"""Policy-gradient learners over a discrete space, and the single-agent RL searcher.

Each cost-model sample is one decision with no state, so the problem is a bandit and a policy is
a distribution over candidates. A team of agents splits the parameters; agent k owns a set of
parameters and samples them from its own policy; the team's candidate is the union of the
agents' choices, and every agent receives the same reward r = -log(loss) (invalid candidates:
the worst value seen minus a margin).

Agent policy (`conditional=True`): autoregressive over the agent's parameters in its own order
(MARL puts the parameters most correlated with the loss first),
    logit_j(v | x_<j) = b_j[v] + sum_{i<j} W_ij[x_i, v],
so an agent that owns correlated parameters models their joint choice (pairwise terms); with
`conditional=False` it is a product of independent categoricals.

Credit assignment (`critic=True`, centralised training of decentralised agents): a critic
fits r ~ c + sum_p h_p[x_p] over all parameters on the valid samples of a recent window, and
agent k's advantage is
    A_k = r - (c + sum_{p not owned by k} h_p[x_p]),
i.e. a baseline that depends only on the other agents' actions (it does not bias agent k's
gradient) and removes the reward variance the other agents cause. Invalid candidates get the
lowest advantage of the batch for every agent. With a single agent the baseline reduces to a
constant: plain REINFORCE with a mean baseline. Advantages are turned into centred ranks (or
z-scores) per agent per batch; `epochs` Adam steps per batch.

Self-imitation (`imitation > 0`): the best `imitation_top` candidates seen so far join every
update with a fixed positive advantage (Oh et al., 2018), which keeps the policy near the
incumbent between lucky draws.

Sampling never asks for a point already evaluated (see `memo`): duplicate draws are answered
from memory and still enter the policy gradient, so the estimator stays on-policy (identical
draws are merged, their advantages summed); when the policy has converged so far that new
points are rare, the remaining asks are mutations of policy draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from coexplore.errors import CoexploreError
from coexplore.search.base import NONZERO, Searcher, check_options
from coexplore.search.losses import LossTransform
from coexplore.search.memo import Memo
from coexplore.search.space import LIST_MAX, DiscreteSpace


MUTANT_ROUNDS = 200          # rounds of mutants an ask tries for new points (then repeats known ones)
MUTANT_ROUNDS_LISTED = 20    # ... in a space whose candidates are listed (then draws from the list)
DRAW_FROM_LIST = 100_000     # lists longer than this are drawn from at random, not set-differenced


@dataclass
class RLConfig:
    lr: float = 0.3                # Adam step size on the logits
    conditional: bool = True       # autoregressive pairwise policy within an agent
    entropy: float = 0.0           # entropy bonus weight (on the standardised advantage scale)
    advantage: str = "rank"        # "rank": centred ranks; "zscore": standardised per agent; "shared": one scale
    epochs: int = 3                # gradient steps per batch (the batch is reused; 1 = on-policy)
    imitation: float = 2.0         # weight of self-imitation of the best samples seen (0 = off)
    imitation_top: int = 50        # how many of the best samples are imitated
    max_draw_factor: int = 4       # draw up to this many x n policy samples looking for new points
    log_loss: bool = True          # learn on log(loss)
    invalid_margin: float = 0.5    # invalid = worst seen + margin x spread of seen values
    max_table: int = 4_000_000     # largest pairwise table (entries) a conditional agent may hold

    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"advantage": ("rank", "zscore", "shared")}
    # options that act only with another option's value (`base.check_options` refuses them otherwise)
    ONLY_WITH: ClassVar[dict[str, tuple[str, object]]] = {"imitation_top": ("imitation", NONZERO),
                                                           "max_table": ("conditional", True)}


# Largest number of parameter values (sum of the cardinalities) a learner takes on: its policy
# arrays hold one logit per value, per draw of a batch ([draws, values] floats, several of them per
# update; PPO's output layer is hidden x values). The real mapspaces have at most a few hundred
# (tests/data/timeloop_corpus: 366 at most, simba_like x bert_qkv); 30 parameters of 20,000 values
# took 3.9 GB and 32 s for 500 samples, 30 x 1e6 asked for 22 GiB.
MAX_POLICY_VALUES = 20_000




def check_policy_size(space: DiscreteSpace, who: str) -> None:
    """Refuse (CoexploreError) a space whose values are too many for a policy learner's tables."""
    card = np.asarray(space.cardinalities, dtype=np.int64)
    total = int(card.sum())
    if total > MAX_POLICY_VALUES:
        big = int(np.argmax(card))
        raise CoexploreError(f"{total:,} parameter values in all (largest: '{space.names[big]}' with "
                             f"{int(card[big]):,}): too many for {who}'s policy tables", key="space.cardinalities",
                             expected=f"at most {MAX_POLICY_VALUES:,} values summed over the parameters "
                             "(another searcher, e.g. ga, sa or random, for larger spaces)")


class Adam:
    """Adam on one parameter array; `step` ascends (adds the scaled gradient)."""

    def __init__(self, shape, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        self.m = np.zeros(shape)
        self.v = np.zeros(shape)
        self.t = 0
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps

    def step(self, theta: np.ndarray, grad: np.ndarray) -> None:
        """Gradient ascent step on theta in place."""
        self.t += 1
        self.m *= self.b1
        self.m += (1 - self.b1) * grad
        self.v *= self.b2
        self.v += (1 - self.b2) * grad * grad
        mh = self.m / (1 - self.b1 ** self.t)
        vh = self.v / (1 - self.b2 ** self.t)
        theta += self.lr * mh / (np.sqrt(vh) + self.eps)


class _Critic:
    """Additive model r ~ c + sum_p h_p[x_p], refitted by backfitting on a window of samples."""

    def __init__(self, space: DiscreteSpace, window: int, shrink: float):
        self.cards = space.cardinalities
        self.off = np.concatenate([[0], np.cumsum(self.cards)]).astype(np.int64)
        self.h = np.zeros(int(self.off[-1]))
        self.c = 0.0
        self.window = window
        self.shrink = shrink
        self.x = np.zeros((0, len(self.cards)), dtype=np.int64)
        self.raw = np.zeros(0)

    def add(self, x: np.ndarray, raw_losses: np.ndarray) -> None:
        self.x = np.concatenate([self.x, x])[-self.window:]
        self.raw = np.concatenate([self.raw, raw_losses])[-self.window:]

    def fit(self, transform: LossTransform, passes: int = 2) -> None:
        """Fit on the valid samples of the window (invalid ones are ranked apart)."""
        ok = np.isfinite(self.raw)
        if not ok.any():
            return
        x = self.x[ok]
        r = -transform(self.raw[ok])
        self.c = float(r.mean())
        contrib = self.h[self.off[:-1] + x]                    # [N, d]
        resid = r - self.c - contrib.sum(axis=1)
        for _ in range(passes):
            for p in range(len(self.cards)):
                resid += contrib[:, p]
                sums = np.bincount(x[:, p], weights=resid, minlength=self.cards[p])
                cnt = np.bincount(x[:, p], minlength=self.cards[p])
                hp = sums / (cnt + self.shrink)
                self.h[self.off[p]:self.off[p + 1]] = hp
                contrib[:, p] = hp[x[:, p]]
                resid -= contrib[:, p]

    def contributions(self, x: np.ndarray) -> np.ndarray:
        return self.h[self.off[:-1] + x]


def _normalise(adv: np.ndarray, how: str) -> np.ndarray:
    """Zero-mean advantages per agent (column), scaled to unit size.

    rank: centred ranks per agent; zscore: standardised per agent; shared: one scale for all
    agents (the pooled spread), so an agent whose choices explain little of the reward gets
    small steps instead of amplified noise.
    """
    if how == "rank":
        from coexplore.ranks import rankdata
        adv = rankdata(adv, axis=0)
    adv = adv - adv.mean(axis=0)
    if how == "shared":
        sd = float(np.sqrt((adv * adv).mean()))
        return adv / sd if sd > 0 else adv
    sd = adv.std(axis=0)
    return adv / np.where(sd > 0, sd, 1.0)


class _Block:
    """The pairwise terms of one agent: W[i-value, j-value] for its parameters i < j."""

    def __init__(self, params: np.ndarray, cards: np.ndarray, lr: float):
        self.params = params
        self.cards = cards
        self.off = np.concatenate([[0], np.cumsum(cards)]).astype(np.int64)
        size = int(self.off[-1])
        seg = np.repeat(np.arange(len(params)), cards)
        self.mask = (seg[:, None] < seg[None, :]).astype(float)     # earlier -> later only
        self.W = np.zeros((size, size))
        self.opt = Adam((size, size), lr)

    def rows(self, x: np.ndarray) -> np.ndarray:
        """Row of W for each chosen value, [n, k] (x: the agent's columns)."""
        return self.off[:-1] + x

    def logits(self, x: np.ndarray) -> np.ndarray:
        """Pairwise part of the agent's logits given all its choices (teacher forcing)."""
        return self.W[self.rows(x)].sum(axis=1)                    # [n, size]

    def step(self, x: np.ndarray, g: np.ndarray) -> None:
        n = len(x)
        oh = np.zeros((n, self.W.shape[0]))
        oh[np.arange(n)[:, None], self.rows(x)] = 1.0
        gW = oh.T @ g
        gW *= self.mask
        self.opt.step(self.W, gW)


class TeamLearner:
    """Agents owning a partition of the parameters, trained together on the shared reward.

    Per-parameter logits of all agents live in one flat vector so the softmax and the gradient
    are single numpy calls; each agent with several parameters adds its own pairwise block.
    """

    def __init__(self, space: DiscreteSpace, clusters: list[list[int]], config: RLConfig):
        clusters = [[int(i) for i in c] for c in clusters if len(c)]
        owned = sorted(i for c in clusters for i in c)
        if owned != list(range(space.n_params)):
            raise ValueError("clusters must partition the parameters")
        self.space = space
        self.config = config
        self.clusters = clusters
        d = space.n_params
        self.cards = space.cardinalities
        self.off = np.concatenate([[0], np.cumsum(self.cards)]).astype(np.int64)
        size = int(self.off[-1])
        self.agent_of = np.zeros(d, dtype=np.int64)
        for k, c in enumerate(clusters):
            self.agent_of[c] = k
        self.seg = np.repeat(np.arange(d), self.cards)          # flat entry -> parameter
        self.b = np.zeros(size)
        self.opt_b = Adam(size, config.lr)
        self.blocks: list[_Block | None] = []
        for c in clusters:
            cards = self.cards[c]
            ok = config.conditional and len(c) > 1 and int(cards.sum()) ** 2 <= config.max_table
            self.blocks.append(_Block(np.array(c), cards, config.lr) if ok else None)
        # flat columns of each agent, in the agent's own order
        self.cols = [np.concatenate([np.arange(self.off[i], self.off[i + 1]) for i in c]) for c in clusters]
        # the critic gives each agent a baseline of the others' choices (MARLConfig's options)
        self.critic = _Critic(space, config.critic_window, config.critic_shrink) \
            if getattr(config, "critic", False) and len(clusters) > 1 else None
        self.elite_x: np.ndarray | None = None
        self.elite_raw: np.ndarray | None = None

    def _softmax(self, z: np.ndarray) -> np.ndarray:
        """Softmax within each parameter's segment of the flat logits [n, size]."""
        starts = self.off[:-1]
        zmax = np.maximum.reduceat(z, starts, axis=1)
        e = np.exp(z - zmax[:, self.seg])
        tot = np.add.reduceat(e, starts, axis=1)
        return e / tot[:, self.seg]

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        d = self.space.n_params
        u = rng.random((n, d))
        x = np.empty((n, d), dtype=np.int64)
        p = self._softmax(self.b[None, :])[0]
        for k, c in enumerate(self.clusters):
            blk = self.blocks[k]
            if blk is None:                                     # independent categoricals
                for j in c:
                    cs = np.cumsum(p[self.off[j]:self.off[j + 1]])
                    x[:, j] = np.minimum(np.searchsorted(cs, u[:, j] * cs[-1], side="right"),
                                         self.cards[j] - 1)
                continue
            acc = np.repeat(self.b[self.cols[k]][None, :], n, axis=0)
            for t, j in enumerate(c):
                lo, hi = blk.off[t], blk.off[t + 1]
                z = acc[:, lo:hi]
                e = np.exp(z - z.max(axis=1, keepdims=True))
                cs = np.cumsum(e, axis=1)
                x[:, j] = np.minimum((cs < u[:, j:j + 1] * cs[:, -1:]).sum(axis=1), self.cards[j] - 1)
                if t + 1 < len(c):
                    acc[:, hi:] += blk.W[lo + x[:, j], hi:]
        return x

    def observe(self, x: np.ndarray, raw_losses: np.ndarray) -> None:
        """New evaluated samples: for the critic and the archive of the best ones."""
        if not len(x):
            return
        if self.critic is not None:
            self.critic.add(x, raw_losses)
        top = self.config.imitation_top
        if self.config.imitation > 0 and top > 0:
            ex = x if self.elite_x is None else np.concatenate([self.elite_x, x])
            el = raw_losses if self.elite_raw is None else np.concatenate([self.elite_raw, raw_losses])
            keep = np.argsort(el, kind="stable")[:top]
            keep = keep[np.isfinite(el[keep])]
            self.elite_x, self.elite_raw = ex[keep], el[keep]

    def update(self, x: np.ndarray, raw_losses: np.ndarray, transform: LossTransform) -> None:
        """One policy-gradient step of every agent on draws x with their raw losses."""
        n = len(x)
        if n < 2:
            return
        r = -transform(raw_losses)
        valid = np.isfinite(raw_losses)
        n_agents = len(self.clusters)
        if self.critic is None:
            adv = np.repeat(r[:, None], n_agents, axis=1)
        else:
            self.critic.fit(transform)
            contrib = self.critic.contributions(x)                  # [n, d]
            own = np.zeros((n, n_agents))
            np.add.at(own.T, self.agent_of, contrib.T)
            # agent k's baseline: the critic's value of everything the other agents chose
            adv = r[:, None] - (self.critic.c + contrib.sum(axis=1))[:, None] + own
            if valid.any() and not valid.all():
                # an invalid candidate is the worst outcome for every agent, whatever the baseline
                adv[~valid] = adv[valid].min(axis=0) - 1.0
        adv = _normalise(adv, self.config.advantage)
        if self.config.imitation > 0 and self.elite_x is not None and len(self.elite_x):
            # self-imitation: raise the likelihood of the best candidates seen so far
            x = np.concatenate([x, self.elite_x])
            adv = np.concatenate([adv, np.full((len(self.elite_x), n_agents), self.config.imitation)])
        n_batch = n
        # identical draws contribute identical gradient terms: merge them, summing advantages
        _, first, inverse = np.unique(np.asarray(self.space.keys(x), dtype=object) if
                                      self.space.size >= 2 ** 63 else self.space.ravel(x),
                                      return_index=True, return_inverse=True)
        if len(first) < len(x):
            summed = np.zeros((len(first), adv.shape[1]))
            np.add.at(summed, inverse.reshape(-1), adv)
            x, adv = x[first], summed
        n = len(x)
        a = adv[:, self.agent_of][:, self.seg]                       # [n, size]
        oh = np.zeros((n, self.b.size))
        oh[np.arange(n)[:, None], self.off[:-1] + x] = 1.0
        for _ in range(max(1, self.config.epochs)):
            self._step(x, oh, a, n_batch)

    def _step(self, x: np.ndarray, oh: np.ndarray, a: np.ndarray, n_batch: int) -> None:
        n = len(x)
        z = np.repeat(self.b[None, :], n, axis=0)
        for k, blk in enumerate(self.blocks):
            if blk is not None:
                z[:, self.cols[k]] += blk.logits(x[:, blk.params])
        p = self._softmax(z)
        g = (oh - p) * a
        ent = self.config.entropy
        if ent > 0:
            logp = np.log(p + 1e-300)
            h = np.add.reduceat(p * logp, self.off[:-1], axis=1)[:, self.seg]   # -entropy per param
            g += ent * (-p * (logp - h))
        g /= n_batch
        self.opt_b.step(self.b, g.sum(axis=0))
        for k, blk in enumerate(self.blocks):
            if blk is not None:
                blk.step(x[:, blk.params], g[:, self.cols[k]])


class PolicySearcher(Searcher):
    """ask/tell around a TeamLearner: draws from the team's policy, asks only for new points."""

    name = "policy"
    learns_between_batches = True

    def __init__(self, space: DiscreteSpace, config: RLConfig | None = None, seed: int | None = 0):
        super().__init__(seed)
        self.space = space
        self.config = config if config is not None else self.default_config()
        self.learner: TeamLearner | None = None
        self._memo: Memo | None = None
        self._transform: LossTransform | None = None
        self._draws: list[np.ndarray] = []

    @classmethod
    def default_config(cls) -> RLConfig:
        return RLConfig()

    def _clusters(self) -> list[list[int]]:
        raise NotImplementedError  # subclasses decide who owns what

    def _start(self) -> None:
        check_options(self.config)
        check_policy_size(self.space, self.name)
        self._memo = Memo(self.space)
        self._transform = LossTransform(self.config.log_loss, self.config.invalid_margin)

    def _learner_config(self) -> RLConfig:
        """The settings the team learner runs with (MARL adapts them to a short budget)."""
        return self.config

    def _ensure_learner(self) -> None:
        if self.learner is None:
            self.learner = TeamLearner(self.space, self._clusters(), self._learner_config())

    @property
    def done(self) -> bool | None:
        """True once every point of the (tiny) space has been evaluated: the best is the optimum,
        and `ask` returns no more candidates (a search stops instead of repeating known points).
        Before that, once no new point is left, `ask` asks again the points asked and never told."""
        return True if self._memo is not None and len(self._memo) >= self.space.n_distinct else None

    def _room(self, n: int) -> int:
        """How many of n candidates to ask: at most the points of the space not yet asked (0 once
        the space is exhausted)."""
        if self._memo is None:
            self._start()
        unseen = self.space.n_distinct - len(self._memo) - len(self._memo.pending)
        return int(min(n, max(unseen, 0)))

    def _reask(self, n: int) -> np.ndarray:
        """Nothing new is left: up to n points asked before and never told, asked again (in key
        order), so a caller that dropped a batch still gets every point evaluated and `done` comes;
        an empty batch once every point was told."""
        pending = sorted(self._memo.pending)[:n]
        if not pending:
            return np.zeros((0, self.space.n_params), np.int64)
        return self.space.points(pending)

    def check_tell(self, batch, losses) -> None:
        super().check_tell(batch, losses)
        if self._memo is None:                  # a tell before any ask: the checks of the first ask
            check_options(self.config)
            check_policy_size(self.space, self.name)

    def ask(self, n: int) -> np.ndarray:
        if (m := self._room(n)) == 0:
            return self._reask(n)
        self._ensure_learner()
        return self._ask_policy(m)

    def _ask_policy(self, n: int) -> np.ndarray:
        memo = self._memo
        out: list[np.ndarray] = []
        have = 0
        drawn = 0
        while have < n and drawn < self.config.max_draw_factor * n:
            m = max(n - have, 16) if drawn == 0 else max(2 * (n - have), 64)
            x = self.learner.sample(self.rng, m)
            drawn += m
            keys, _, new = memo.lookup(x)
            idx = np.flatnonzero(new)[:n - have]
            memo.mark_pending([keys[i] for i in idx.tolist()])
            keep = np.zeros(m, dtype=bool)
            keep[idx] = True
            # draws beyond the n new ones stay in the gradient batch only if already known
            self._draws.append(x[keep | ~new])
            out.append(x[idx])
            have += len(idx)
        if have < n:
            out.append(self._mutants(np.concatenate(out) if have else self.learner.sample(self.rng, 1),
                                     n - have))
        return np.concatenate(out)

    def _mutants(self, parents: np.ndarray, n: int) -> np.ndarray:
        """n new points, each a policy draw or parent with one or more parameters resampled. In a
        space whose candidates can be listed (`distinct_keys`), candidates not yet asked, drawn from
        that list, once few are left or a few rounds of mutants found too few (random mutants would
        rarely meet them: hundreds of tries per ask, the search slowing to a crawl)."""
        memo = self._memo
        unseen = self.space.n_distinct - len(memo) - len(memo.pending)
        listed = self.space.n_distinct <= LIST_MAX and self.space.distinct_keys() is not None
        if listed and unseen <= max(n, self.space.n_distinct // 100):
            return self._unseen(parents, n)
        res: list[np.ndarray] = []
        have = 0
        base = self.best_x if self.best_x is not None else parents[0]
        pool = np.concatenate([parents, base[None, :]])
        for attempt in range(MUTANT_ROUNDS_LISTED if listed else MUTANT_ROUNDS):
            m = 2 * (n - have) + 8
            x = pool[self.rng.integers(0, len(pool), m)].copy()
            k = 1 + attempt // 20
            for _ in range(k):
                j = self.rng.integers(0, self.space.n_params, m)
                x[np.arange(m), j] = (self.rng.random(m) * self.space.cardinalities[j]).astype(np.int64)
            keys, _, new = memo.lookup(x)
            idx = np.flatnonzero(new)[:n - have]
            memo.mark_pending([keys[i] for i in idx.tolist()])
            res.append(x[idx])
            have += len(idx)
            if have >= n:
                break
        if have < n and listed:
            res.append(self._unseen(pool, n - have))
        elif have < n:  # the space is (nearly) exhausted: repeat known points
            res.append(pool[self.rng.integers(0, len(pool), n - have)])
        return np.concatenate(res)

    def _unseen(self, parents: np.ndarray, n: int) -> np.ndarray:
        """Up to n of the candidates not yet asked, drawn at random from the space's listing of
        them (`distinct_keys`); the rest (none left) repeats parents."""
        memo = self._memo
        keys = self.space.distinct_keys()
        if len(keys) > DRAW_FROM_LIST and len(memo) + len(memo.pending) + n < len(keys) // 2:
            # a long list with many left: draw from it and drop the known (a set difference over the
            # whole list at every ask took most of a run's time)
            tries = [keys[i] for i in self.rng.integers(0, len(keys), 4 * n + 16).tolist()]
            pick = list(dict.fromkeys(k for k in tries if k not in memo.losses and k not in memo.pending))[:n]
            if len(pick) == n:
                memo.mark_pending(pick)
                return self.space.points(pick)
        if isinstance(keys, np.ndarray):               # indices
            free = np.setdiff1d(keys, np.fromiter(list(memo.losses) + list(memo.pending), np.int64))
        else:                                          # rows' bytes (a space of 2^63 points or more)
            free = [k for k in keys if k not in memo.losses and k not in memo.pending]
        at = self.rng.choice(len(free), size=min(n, len(free)), replace=False) if len(free) else []
        pick = [free[i] for i in at]
        memo.mark_pending(pick)
        out = [self.space.points(pick)]
        if len(pick) < n:
            out.append(parents[self.rng.integers(0, len(parents), n - len(pick))])
        return np.concatenate(out)

    def tell(self, batch: np.ndarray, losses: np.ndarray) -> np.ndarray:
        losses = super().tell(batch, losses)
        batch = np.asarray(batch, dtype=np.int64)
        if self._memo is None:
            self._start()
        self._memo.store(batch, losses)
        self._transform(losses)  # track the range of seen values
        self._learn(batch, losses)
        return losses

    def _learn(self, batch: np.ndarray, losses: np.ndarray) -> None:
        self._ensure_learner()
        draws = np.concatenate(self._draws) if self._draws else np.zeros((0, self.space.n_params), np.int64)
        self._draws = []
        # the gradient batch: every policy draw whose loss is now known (asks included)
        if len(draws):
            keys = self._memo.keys(draws)
            known = np.array([self._memo.losses.get(k, np.nan) for k in keys])
            ok = ~np.isnan(known)
            draws, known = draws[ok], known[ok]
        else:
            draws, known = batch, losses
        self.learner.observe(batch, losses)
        if len(draws):
            self.learner.update(draws, known, self._transform)


class SingleAgentRL(PolicySearcher):
    """Single-agent RL: one agent owns every parameter (the baseline MARL is measured against)."""

    name = "rl"

    def _clusters(self) -> list[list[int]]:
        return [list(range(self.space.n_params))]
