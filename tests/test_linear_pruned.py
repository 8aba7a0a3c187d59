"""`linear_pruned`, timeloop-mapper's linear-pruned: one in-order walk of the distinct mappings (as the
canonical enumeration orders them), a factorisation whose every bypass choice fails under its first loop
order skipped (Timeloop's skip; exact here, no validity check depends on the loop order), ending at the
optimum. A user study found the earlier version (a seeded start, 16 orders per factorisation) could not
reach timeloop-mapper's result at any budget."""

import numpy as np
import pytest

from coexplore.mapspace.enumerate import canonical_points, canonical_rows, count_canonical
from coexplore.search.base import run_search
from coexplore.search.checkpoint import Checkpoint
from coexplore.search.layer import make_objective
from coexplore.search.pruned import LinearPruned

from test_mapspace_enumerate import _small


@pytest.fixture(scope="module")
def small():
    ctx, ms = _small("simple_weight_stationary", C=4, M=2, P=4)
    return ctx, ms, make_objective(ctx, ms, "edp")


def test_the_walk_is_the_canonical_order_with_invalid_factorisations_skipped(small):
    ctx, ms, objective = small
    from coexplore.mapspace.enumerate import tail_columns
    cols = tail_columns(ms)
    blocks = []
    for row, tail in canonical_rows(ms):              # the walk: factorisations in index order
        block = np.repeat(row[None], len(tail), axis=0)
        block[:, cols] = tail
        blocks.append(block)
    every = np.concatenate(blocks)
    assert sorted(r.tobytes() for r in every) == sorted(r.tobytes() for r in
                                                        np.concatenate(list(canonical_points(ms, chunk=5000))))
    losses = objective(every)
    searcher = LinearPruned(ms, seed=0)
    asked = []
    while True:
        batch = searcher.ask(37)
        if not len(batch):
            break
        asked.append(batch)
        searcher.tell(batch, objective(batch))
    asked = np.concatenate(asked)
    assert searcher.done
    # every valid mapping is asked, once, in the walk's order; only invalid ones are left out
    keys = [r.tobytes() for r in asked]
    assert len(set(keys)) == len(keys)
    index = {r.tobytes(): i for i, r in enumerate(every)}          # the canonical walk's order
    assert all(r.tobytes() in set(keys) for r in every[np.isfinite(losses)])     # every valid one asked
    # a factorisation's mappings in the walk's order, factorisations started in the walk's order (a
    # batch probes the next ones before the rest of an accepted one follows)
    factor_cols = np.setdiff1d(np.arange(ms.n_params), tail_columns(ms))
    seen: dict[bytes, list[int]] = {}
    for r in asked:
        seen.setdefault(r[factor_cols].tobytes(), []).append(index[r.tobytes()])
    assert all(v == sorted(v) for v in seen.values())
    firsts = [v[0] for v in seen.values()]
    assert firsts == sorted(firsts)
    assert len(asked) < len(every) == count_canonical(ms)        # some factorisations were skipped
    assert np.nanmin(np.where(np.isfinite(losses), losses, np.nan)) == searcher.best_loss


def test_a_skipped_factorisation_has_no_valid_mapping(small):
    """The skip is exact: each factorisation left after its probe has no valid mapping at all."""
    ctx, ms, objective = small
    k = 2 ** len(ms.keep_index)
    from coexplore.mapspace.enumerate import tail_columns
    cols = tail_columns(ms)
    skipped = 0
    for row, tail in canonical_rows(ms):
        block = np.repeat(row[None], len(tail), axis=0)
        block[:, cols] = tail
        loss = objective(block)
        if not np.isfinite(loss[:k]).any():
            skipped += 1
            assert not np.isfinite(loss).any()
    assert skipped > 0


@pytest.mark.parametrize("batch", [1, 3, 100])
def test_batches_smaller_than_a_probe_and_dropped_batches_change_nothing(batch):
    ctx, ms = _small("simple_weight_stationary", C=2, M=2, P=2)
    objective = make_objective(ctx, ms, "edp")
    assert 2 ** len(ms.keep_index) > 3                   # a probe larger than the small batches
    ref = run_search(LinearPruned(ms, seed=0), objective, 10 ** 6, batch_size=50)
    s = LinearPruned(ms, seed=5)                 # (the seed changes nothing)
    s.ask(batch)                                 # a batch asked and dropped (never told)
    res = run_search(s, objective, 10 ** 6, batch_size=batch)
    assert res.best_loss == ref.best_loss and res.samples == ref.samples and s.done


def test_a_restored_walk_ends_as_an_uninterrupted_one(small, tmp_path):
    ctx, ms, objective = small
    full = run_search(LinearPruned(ms), objective, 10 ** 6, batch_size=40)
    cp = Checkpoint(tmp_path / "c.pkl", key="k", every_s=0)
    first = LinearPruned(ms)
    run_search(first, objective, 200, batch_size=40, checkpoint=cp)
    cp.save(first, {"best_x": first.best_x, "best_loss": first.best_loss, "best_tie": np.inf,
                    "lexicographic": False, "history": []})
    again = LinearPruned(ms)
    res = run_search(again, objective, 10 ** 6, batch_size=40, checkpoint=Checkpoint(tmp_path / "c.pkl", key="k"))
    assert res.best_loss == full.best_loss and res.samples == full.samples and again.done


def test_a_dropped_batch_of_an_accepted_factorisations_rest_is_asked_again(small):
    """A batch asked and never told (a Ctrl-C inside the objective, the searcher run again) loses
    nothing, also when it held the rest of an accepted factorisation (a review found 40 lost)."""
    ctx, ms, objective = small
    full = run_search(LinearPruned(ms), objective, 10 ** 6, batch_size=40)
    s = LinearPruned(ms)
    while not s._ready:
        batch = s.ask(40)
        s.tell(batch, objective(batch))
    s.ask(40)                                    # dropped
    res = run_search(s, objective, 10 ** 6, batch_size=40)
    assert res.samples == full.samples and res.best_loss == full.best_loss and s.done


def test_an_objective_of_the_users_walks_every_mapping(small):
    """A function may give valid mappings an infinite loss (a cap): no factorisation is skipped then,
    so the walk's end is the optimum of that function."""
    from coexplore.mapspace.enumerate import canonical_points
    from coexplore.search.layer import map_layer
    ctx, ms, _ = small
    every = np.concatenate(list(canonical_points(ms, chunk=5000)))
    energy = make_objective(ctx, ms, "energy")(every)
    cap = np.nanpercentile(np.where(np.isfinite(energy), energy, np.nan), 5)

    def capped(m):                               # least energy... within a cap: the largest energy below it
        return np.where(m["energy"] > cap, np.inf, -m["energy"])
    want = np.min(np.where(energy > cap, np.inf, -energy))
    res = map_layer(ctx, ms.constraints, "linear_pruned", 10 ** 6, seed=0, objective=capped)
    assert res.exhausted is True and res.samples == len(every)
    assert -res.best["energy_pJ"] == pytest.approx(want, rel=1e-12)


@pytest.mark.slow
def test_timeloop_mappers_own_linear_pruned_run_is_reproduced(tmp_path):
    """v0.3 exercise 05 (`null` constraints) with its own mapper file: the walk covers the space and
    ends at the mapping timeloop-mapper's linear-pruned returned (its cycles and total energy). The
    earlier version (a seeded start, 16 orders per factorisation) ended 7.9% above it at any budget."""
    import json
    import subprocess
    import sys
    from pathlib import Path
    d = Path(__file__).parent / "data" / "exercises_v3_mapper" / "v3_ex05_null"
    want = json.loads((d / "expected.json").read_text())
    r = subprocess.run([sys.executable, "-m", "coexplore", "map", d / "arch.yaml", d / "problem.yaml",
                        "--constraints", d / "constraints.yaml", "--searcher", d / "mapper.yaml", "--ert", d / "ERT.yaml",
                        "--timeloop-rules", "v0.3", "--budget", "1500000", "--no-cache", "--no-progress",
                        "--out", tmp_path / "o", "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["searcher"] == "linear_pruned" and got["exhausted"] is True
    assert got["best"]["cycles"] == want["cycles"]
    assert got["best"]["energy_pJ"] == pytest.approx(want["total_topology_energy_pJ"], abs=0.01)
