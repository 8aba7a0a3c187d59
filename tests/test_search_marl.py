"""MARL's correlation analysis and clustering recover planted parameter groups; its stall
handling (best-response rounds, restarts)."""

import dataclasses

import numpy as np

from coexplore.search.base import run_search, with_tie
from coexplore.search.marl import MARL, MARLConfig, cluster_parameters, correlation_analysis
from coexplore.search.rl import RLConfig, TeamLearner
from coexplore.search.space import DiscreteSpace


def planted(seed=0):
    """8 parameters: (0, 3) interact through a ridge, (1, 5, 6) through a capacity + ridge,
    2 has a main effect only, 4 and 7 are noise. Parameter 5 is categorical (shuffled values)."""
    rng = np.random.default_rng(seed)
    card = np.array([8, 6, 5, 8, 4, 6, 6, 3])
    ordinal = np.ones(8, bool)
    ordinal[5] = False
    perm5 = rng.permutation(6)
    space = DiscreteSpace(card, [f"p{i}" for i in range(8)], ordinal=ordinal)

    def f(x):
        u = x / (card - 1.0)
        u5 = perm5[x[:, 5]] / 5.0
        s = u[:, 1] + u5 + u[:, 6]
        loss = 6 * (u[:, 0] + u[:, 3] - 1.0) ** 2 + 4 * (s - 1.2) ** 2 + 1.0 * u[:, 2]
        out = np.exp(loss)
        out[s > 1.5] = np.inf
        return out
    return space, f, rng


def test_correlation_analysis_finds_planted_groups():
    space, f, rng = planted()
    x = space.sample(rng, 3000)
    corr = correlation_analysis(space, x, f(x))
    assert corr.pairs[0, 3] > 0.2
    assert min(corr.pairs[1, 5], corr.pairs[1, 6], corr.pairs[5, 6]) > 0.1
    noise = [corr.pairs[i, j] for i in range(8) for j in range(i + 1, 8)
             if {i, j} not in ({0, 3}, {1, 5}, {1, 6}, {5, 6})]
    assert max(noise) < min(corr.pairs[0, 3], corr.pairs[1, 5], corr.pairs[1, 6], corr.pairs[5, 6]) / 2
    assert abs(corr.objective[2]) > 0.1 and abs(corr.objective[2]) > abs(corr.objective[7])
    clusters = {frozenset(c) for c in cluster_parameters(corr)}
    assert frozenset({0, 3}) in clusters and frozenset({1, 5, 6}) in clusters
    assert {frozenset({2}), frozenset({4}), frozenset({7})} <= clusters


def test_cluster_size_cap_splits_large_clusters():
    from coexplore.search.marl import Correlations
    d = 10
    pairs = np.full((d, d), 0.9)
    np.fill_diagonal(pairs, 1.0)
    clusters = cluster_parameters(Correlations(np.zeros(d), pairs, 1000), max_size=4)
    assert sorted(i for c in clusters for i in c) == list(range(d))
    assert max(len(c) for c in clusters) <= 4
    # a cluster of exactly the cap stays whole
    pairs = np.zeros((d, d))
    pairs[:4, :4] = 0.9
    np.fill_diagonal(pairs, 1.0)
    clusters = cluster_parameters(Correlations(np.zeros(d), pairs, 1000), max_size=4)
    assert [0, 1, 2, 3] in [sorted(c) for c in clusters]


def test_marl_uses_warmup_then_clusters_and_counts_warmup_in_budget():
    space, f, _ = planted()
    s = MARL(space, MARLConfig(warmup=1500, warmup_fraction=1.0), seed=0)
    res = run_search(s, f, budget=3000)
    assert res.samples == 3000
    assert s.correlations is not None and s.correlations.n_samples == 1500
    clusters = {frozenset(c) for c in s.clusters}
    assert frozenset({0, 3}) in clusters


def test_marl_warmup_is_capped_at_a_share_of_the_budget():
    space, f, _ = planted()
    for budget, expected in ((1000, 200), (3000, 600), (20_000, 1500)):
        s = MARL(space, MARLConfig(warmup=1500), seed=0)
        run_search(s, f, budget=budget, batch_size=50)
        assert s.correlations is not None and s.correlations.n_samples == expected


def test_a_short_run_imitates_harder_also_after_a_restart():
    """Below `short_budget` the team learner runs with `imitation_short` / `imitation_top_short`
    (restarted teams too); from it on with `imitation` / `imitation_top`."""
    space, f, _ = planted()
    cfg = MARLConfig(short_budget=2000, stall=200)
    for budget, expected in ((1500, (2.0, 50)), (2000, (1.0, 200))):
        s = MARL(space, cfg, seed=0)
        run_search(s, f, budget=budget, batch_size=50)
        assert (s.learner.config.imitation, s.learner.config.imitation_top) == expected
    assert s.config.imitation == 1.0          # the searcher's own config is left as given
    short = MARL(space, cfg, seed=0)
    run_search(short, f, budget=1900, batch_size=50)
    assert short.restarts > 0 and short.learner.config.imitation == 2.0


def test_conditional_agent_learns_a_joint_choice():
    """Two parameters whose good values are (0,0) or (k,k): only a joint policy can put most mass
    on the diagonal; a factorised one cannot exceed the product of its marginals."""
    k = 6
    space = DiscreteSpace(np.array([k, k]), ["a", "b"])

    def frac_diag(conditional):
        learner = TeamLearner(space, [[0, 1]], RLConfig(lr=0.2, conditional=conditional))
        from coexplore.search.losses import LossTransform
        t = LossTransform()
        rng = np.random.default_rng(0)
        for _ in range(150):
            x = learner.sample(rng, 200)
            loss = np.where(x[:, 0] == x[:, 1], 1.0, 10.0) * (1 + 0.01 * x[:, 0])
            learner.update(x, loss, t)
        x = learner.sample(rng, 4000)
        return np.mean(x[:, 0] == x[:, 1])

    assert frac_diag(True) > 0.9
    # the factorised learner also learns (it collapses on one diagonal cell); the test is
    # that the joint learner is at least as good, and both beat chance (1/k)
    assert frac_diag(False) > 1 / k


def test_leftover_parameters_can_share_one_agent():
    space, f, _ = planted()
    s = MARL(space, MARLConfig(warmup=1500, warmup_fraction=1.0, leftovers="joint"), seed=0)
    run_search(s, f, budget=1600)
    sizes = sorted(len(c) for c in s.clusters)
    assert sorted(i for c in s.clusters for i in c) == list(range(8))
    assert sizes.count(1) == 0          # 2, 4 and 7 (no partner) now form one agent
    assert any(set(c) >= {2, 4, 7} for c in s.clusters)


def test_best_response_changes_one_agent_only_and_restart_keeps_clusters():
    space, f, _ = planted()
    cfg = MARLConfig(warmup=300, stall=300)
    s = MARL(space, cfg, seed=3)
    run_search(s, f, budget=1500, batch_size=50)
    clusters = [list(c) for c in s.learner.clusters]
    s._start_round()
    incumbent = s.team_x.copy()          # the team's best (the searcher's, unless it restarted)
    for k in range(len(clusters)):
        x = s._best_response(20)
        changed = np.flatnonzero((x != incumbent[None, :]).any(axis=0))
        assert set(changed.tolist()) <= set(clusters[k])          # only agent k's parameters move
        assert (x != incumbent[None, :]).any(axis=1).all()         # and never the incumbent itself
    assert s._polish == []
    best = s.best_x.copy()
    s._restart()
    assert s.learner.clusters == clusters and s.restarts >= 1
    assert s.recommend()[1] == f(best[None, :])[0]                 # the incumbent survives a restart
    assert s.team_x is None                                         # the new team starts its own


def test_restarted_team_best_responds_around_its_own_best():
    space, f, _ = planted()
    s = MARL(space, MARLConfig(warmup=300, stall=300), seed=3)
    run_search(s, f, budget=1500, batch_size=50)
    incumbent = s.best_x.copy()
    s._restart()
    x = s.ask(50)
    losses = f(x)
    s.tell(x, losses)
    own = x[int(np.argmin(losses))]
    assert s.best_x is not None and (s.recommend()[1] <= losses.min())
    s._start_round()
    for k in range(len(s.learner.clusters)):
        cand = s._best_response(10)
        moved = np.flatnonzero((cand != own[None, :]).any(axis=0))
        assert set(moved.tolist()) <= set(s.learner.clusters[k])   # around the new team's best
    assert (own != incumbent).any()         # a new point, not the searcher's incumbent


def test_stalled_team_restarts_and_keeps_searching():
    space, f, _ = planted()
    s = MARL(space, MARLConfig(warmup=200, stall=200), seed=0)
    res = run_search(s, f, budget=6000, batch_size=50)
    assert s.restarts >= 1                                          # this space is solved early
    assert res.samples == 6000
    x = space.unravel(np.arange(space.size))
    assert res.best_loss == np.min(f(x))


def plateau():
    """A lexicographic objective (timeloop-mapper's [delay, energy]): the primary loss is flat on
    every point with p0 = p1 = 0 (6^6 of them), and the tie key, separable, is lowest at one of those."""
    card = np.full(8, 6)
    space = DiscreteSpace(card, [f"p{i}" for i in range(8)])
    target = np.array([5, 1, 4, 2, 3, 0])      # of p2..p7

    def f(x):
        primary = 1.0 + (x[:, 0] != 0) + (x[:, 1] != 0)
        return with_tie(primary, 1.0 + ((x[:, 2:] - target) ** 2).sum(axis=1))
    return space, f


def test_best_response_rounds_walk_the_plateau_of_a_tied_objective():
    """The policies learn from the primary loss alone; once it stalls, the best-response rounds
    centre on the lexicographic best (each agent's re-choices move it along the plateau), so the
    search ends on the lexicographic optimum; with the ties withheld from `tell` it ends wherever
    the plateau's random draws left it."""
    space, f = plateau()
    best = {}
    for passed in (True, False):
        s = MARL(space, MARLConfig(warmup=300), seed=0)
        if not passed:
            s.tell = lambda b, losses, s=s: MARL.tell(s, b, np.asarray(losses))
        res = run_search(s, f, budget=4000)
        assert res.best_loss == 1.0                          # both are on the plateau
        best[passed] = f(res.best_x[None, :]).tie[0]
    assert best[True] == 1.0 and best[False] > 1.0, best


def test_stall_is_capped_by_a_share_of_the_budget():
    """`stall_fraction` caps the stall clock, so a short run reaches its best-response rounds."""
    space, f, _ = planted()
    cfg = MARLConfig(warmup=200, stall=1000)
    for budget, fraction, expected in ((2000, 0.1, 200), (2000, 0.0, 1000), (100_000, 0.1, 1000)):
        s = MARL(space, dataclasses.replace(cfg, stall_fraction=fraction), seed=0)
        s.budget = budget
        assert s._stall() == expected
    restarts = []
    for fraction in (0.1, 0.0):
        s = MARL(space, dataclasses.replace(cfg, stall_fraction=fraction), seed=0)
        run_search(s, f, budget=2000, batch_size=50)
        restarts.append(s.restarts)
    assert restarts[0] > restarts[1]      # the capped clock handles more stalls


def test_a_small_space_is_walked_to_its_end_without_repeats():
    """User study: MARL (and rl, ppo) on a 14,132-point space with a budget of 10^6 slowed from
    ~4,000 to ~70 samples/s (random mutants meeting the last unseen points) and asked 52,728
    samples before every point was told. The last points are listed now: each point asked about once."""
    from coexplore.search.ppo import PPO
    from coexplore.search.rl import SingleAgentRL
    space = DiscreteSpace(np.array([7, 5, 4, 3, 2, 2]), [f"p{i}" for i in range(6)])
    w = np.array([1.0, -2.0, 0.5, 1.5, -1.0, 0.3])
    for make in (lambda: MARL(space, seed=0), lambda: SingleAgentRL(space, seed=0),
                 lambda: PPO(space, seed=0)):
        s = make()
        res = run_search(s, lambda x: np.exp((x * w).sum(axis=1) / 10), budget=10 ** 6, batch_size=50)
        # (MARL's warm-up and best-response rounds may repeat a few points: within one batch)
        assert s.done and space.size <= res.samples <= space.size + 50, (type(s).__name__, res.samples, space.size)
