"""MAGMA: every rate of MagmaConfig acts (crossovers, annealed mutation and parent pool, floors, island merge)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from coexplore.system.encoding import MakespanObjective, space_of
from coexplore.system.magma import MagmaConfig, MagmaSearcher, _pick2, mutate
from coexplore.system.tables import load_table

TABLE = Path("tests/data/magma/tables/batch_lang/S3/insts0.csv")
QUIET = dict(pop_size=20, islands=1, dedup=False, warm_start=False, p_crossover_gen=0.0, p_crossover_rg=0.0,
             p_crossover_accel=0.0, p_mutation=0.0, p_mutation_start=None, parent_ratio_start=None,
             parent_ratio=1.0)


@pytest.fixture(scope="module")
def table():
    import coexplore
    for base in (Path(coexplore.__file__).resolve().parents[1], Path.cwd()):
        if (base / TABLE).is_file():
            return load_table(base / TABLE)
    pytest.skip("no MAGMA fixture table (tests/data of the coexplore checkout)")


def second_generation(table, budget=10**6, **cfg):
    """Generation 1 (random, told) and the children of generation 2."""
    s = MagmaSearcher(space_of(table), MagmaConfig(**{**QUIET, **cfg}), seed=0, budget=budget)
    obj = MakespanObjective(table, 1.0)
    g1 = s.ask(20)
    s.tell(g1, obj(g1))
    return g1, s.ask(20), table.num_jobs


def copies(parents, kids):
    rows = {p.tobytes() for p in parents}
    return sum(k.tobytes() in rows for k in kids)


def test_no_operator_on_means_children_are_copies_of_parents(table):
    g1, kids, _ = second_generation(table)
    assert copies(g1, kids) == len(kids)


@pytest.mark.parametrize("op", ["p_crossover_gen", "p_crossover_rg", "p_crossover_accel"])
def test_each_crossover_rate_alone_makes_new_children(table, op):
    g1, kids, _ = second_generation(table, **{op: 1.0})
    assert copies(g1, kids) < len(kids) // 2


def test_crossover_gen_cuts_the_priority_row_too(table):
    g1, kids, J = second_generation(table, p_crossover_gen=1.0)
    prios = {p[J:].tobytes() for p in g1}
    assert any(k[J:].tobytes() not in prios for k in kids)       # a priority row mixed from two parents


def test_the_mutation_rate_anneals_from_its_start_value(table):
    # start 0.9 per gene, end 1e-6: at the start of a long budget nearly every child is new
    g1, kids, _ = second_generation(table, p_mutation=1e-6, p_mutation_start=0.9)
    assert copies(g1, kids) == 0
    # ... and at the end of the budget the rate is p_mutation: children are copies
    g1, kids, _ = second_generation(table, budget=20, p_mutation=1e-6, p_mutation_start=0.9)
    assert copies(g1, kids) == len(kids)


def test_the_parent_pool_anneals_from_its_start_ratio(table):
    # parent_ratio 0.1 of 20 = 2 parents; from a start of 1.0 early in a long budget: ~all 20
    g1, kids, _ = second_generation(table, parent_ratio=0.1, parent_ratio_start=1.0)
    assert len({k.tobytes() for k in kids}) > 2
    g1, kids, _ = second_generation(table, budget=20, parent_ratio=0.1, parent_ratio_start=1.0)
    assert len({k.tobytes() for k in kids}) <= 2


def test_two_parents_are_drawn_without_replacement():
    rng = np.random.default_rng(0)
    w = np.array([0.97, 0.01, 0.01, 0.01])
    assert all(len(set(map(int, _pick2(rng, 4, w)))) == 2 for _ in range(500))


def test_p_mutation_min_gives_each_child_its_own_rate():
    rng = np.random.default_rng(0)
    n, J = 300, 400
    x = np.zeros((n, 2 * J))
    y = mutate(x.copy(), J, 3, 0.5, rng, p_min=0.001)
    per_child = (y[:, J:] != 0).mean(axis=1)             # priorities start at 0, mutated ones are > 0 a.s.
    assert per_child.min() < 0.01 and per_child.max() > 0.3
    assert np.median(per_child) < 0.1                     # log-uniform in [0.001, 0.5]: median ~0.022


def test_merging_the_islands_keeps_the_best_of_every_island():
    from coexplore.system.encoding import ScheduleSpace
    s = MagmaSearcher(ScheduleSpace(6, 3), MagmaConfig(pop_size=20, islands=2, merge_at=0.5, warm_start=False),
                      seed=0, budget=40)
    x = s.ask(20)
    assert sorted(set(s._last_isl.tolist())) == [0, 1]
    s.tell(x, np.where(s._last_isl == 1, 1.0, 100.0))    # island 1 holds every good schedule
    s.ask(20)                                             # 20 of 40 samples spent: merged
    assert s._pool_loss.min() == 1.0
