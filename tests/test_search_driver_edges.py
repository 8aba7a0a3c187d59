"""run_search and Searcher edges: ties, budgets, resumes, malformed losses, stops across threads."""

from __future__ import annotations

import numpy as np
import pytest

from coexplore.search.base import Searcher, run_search, with_tie


class Listed(Searcher):
    """Asks the rows 0, 1, 2, ... of a column vector, in order."""

    name = "listed"

    def ask(self, n):
        start = getattr(self, "_next", 0)
        self._next = start + n
        return np.arange(start, start + n, dtype=float)[:, None]


def test_among_equal_losses_the_lowest_tie_is_the_best():
    # losses: 5 everywhere; ties favour row 2 of the first batch, then nothing better
    def objective(x):
        r = x[:, 0]
        return with_tie(np.full(len(x), 5.0), np.where(r == 2, 1.0, 10.0 + r))
    res = run_search(Listed(seed=0), objective, budget=8, batch_size=4)
    assert res.best_loss == 5.0 and res.best_x[0] == 2.0 and res.samples == 8


def test_a_later_equal_loss_with_a_lower_tie_wins():
    def objective(x):
        r = x[:, 0]
        return with_tie(np.full(len(x), 5.0), 100.0 - r)      # each later row ties lower
    res = run_search(Listed(seed=0), objective, budget=6, batch_size=2)
    assert res.best_x[0] == 5.0


def test_ties_never_make_an_invalid_candidate_the_best():
    res = run_search(Listed(seed=0), lambda x: with_tie(np.full(len(x), np.inf), np.arange(len(x), dtype=float)),
                     budget=6, batch_size=3)
    assert res.best_loss == np.inf and res.best_x is None and res.samples == 6


def test_budget_is_met_exactly_whatever_the_batch_size():
    for budget, batch in ((10, 3), (7, 7), (1, 100), (250, 100)):
        asked = []

        def objective(x):
            asked.append(len(x))
            return x[:, 0].astype(float)
        res = run_search(Listed(seed=0), objective, budget=budget, batch_size=batch)
        assert res.samples == budget == sum(asked)
        assert max(asked) <= batch
        assert res.history[-1][0] == budget


def test_a_searcher_run_again_continues_its_count_and_its_history_counts_from_there():
    s = Listed(seed=0)
    run_search(s, lambda x: 10.0 - x[:, 0], budget=4, batch_size=2)
    again = run_search(s, lambda x: 10.0 - x[:, 0], budget=10, batch_size=2)
    assert again.samples == 10 and s.samples == 10
    assert [h[0] for h in again.history] == [6, 8, 10]
    assert again.best_loss == 1.0 and again.best_x[0] == 9.0


def test_the_searchers_seed_decides_its_generator():
    a, b, c = Searcher(seed=3), Searcher(seed=3), Searcher(seed=4)
    x, y, z = a.rng.random(5), b.rng.random(5), c.rng.random(5)
    np.testing.assert_array_equal(x, y)
    assert not np.array_equal(x, z)


def test_a_run_resumed_from_a_snapshot_keeps_the_tie_of_its_best(tmp_path):
    from coexplore.search.checkpoint import Checkpoint
    ties = {0: 10.0, 1: 3.0, 2: 4.0, 3: 3.5}          # all losses 5: the best is row 1 (tie 3)

    def objective(x):
        return with_tie(np.full(len(x), 5.0), np.array([ties[int(r)] for r in x[:, 0]]))
    whole = run_search(Listed(seed=0), objective, budget=4, batch_size=2)
    assert whole.best_x[0] == 1.0
    path = tmp_path / "ck.pkl"
    run_search(Listed(seed=0), objective, budget=4, batch_size=2, checkpoint=Checkpoint(path, "run", every_s=0))
    assert path.is_file()                              # the snapshot after batch 1 (a finished run saves none after)
    ck = Checkpoint(path, "run", every_s=0)
    resumed = run_search(Listed(seed=0), objective, budget=4, batch_size=2, checkpoint=ck)
    assert ck.resumed_from == 2
    assert resumed.best_x[0] == 1.0 and resumed.samples == 4
    assert [tuple(h) for h in resumed.history] == [tuple(h) for h in whole.history]


def test_invalid_samples_are_counted_across_a_resume(tmp_path):
    """Every third row is invalid (inf, or NaN read as inf): 10 rows have 4 (rows 0, 3, 6, 9), also
    when the run resumes from a snapshot after its first batch; a searcher run before has no count."""
    from coexplore.search.checkpoint import Checkpoint

    def objective(x):
        r = x[:, 0]
        return np.where(r % 3 == 0, np.where(r % 2 == 0, np.inf, np.nan), r + 1.0)
    whole = run_search(Listed(seed=0), objective, budget=10, batch_size=4)
    assert whole.invalid == 4 and whole.samples == 10
    path = tmp_path / "ck.pkl"
    run_search(Listed(seed=0), objective, budget=10, batch_size=4, checkpoint=Checkpoint(path, "run", every_s=0))
    resumed = run_search(Listed(seed=0), objective, budget=10, batch_size=4,
                         checkpoint=Checkpoint(path, "run", every_s=0))
    assert resumed.invalid == 4
    again = Listed(seed=0)
    run_search(again, objective, budget=4, batch_size=4)
    assert run_search(again, objective, budget=10, batch_size=4).invalid is None


def test_a_searcher_that_runs_dry_says_so(recwarn):
    """A layer searcher of the user's that proposes nothing after 150 samples ends the run early:
    map_layer notes it (it used to end silently with fewer samples than the budget)."""
    from coexplore.errors import CoexploreNote
    from coexplore.model.inputs import load_context
    from coexplore.search import registry
    from coexplore.search.layer import map_layer
    from coexplore.spec.constraints import load_constraints
    from conftest import CORPUS

    class Dry(Searcher):
        name = "dry"

        def __init__(self, space, config=None, seed=0):
            super().__init__(seed)
            self.space = space

        def ask(self, n):
            return self.space.sample(self.rng, min(n, 150 - self.samples))[:max(0, 150 - self.samples)]

    registry.SEARCHERS["dry"] = (Dry, registry.RandomConfig)
    try:
        ctx = load_context(CORPUS / "arches" / "eyeriss_like" / "processed.yaml", CORPUS / "layers" / "tiny_conv.yaml")
        res = map_layer(ctx, load_constraints(ctx.arch), "dry", budget=400, seed=0)
    finally:
        del registry.SEARCHERS["dry"]
    assert res.samples == 150
    notes = [str(w.message) for w in recwarn if issubclass(w.category, CoexploreNote)]
    assert any("proposed nothing new after 150 of 400 samples" in n for n in notes), notes


def test_losses_as_a_row_of_a_2d_array_are_refused():
    from coexplore.errors import CoexploreError
    s = Listed(seed=0)
    x = s.ask(3)
    with pytest.raises(CoexploreError, match="losses"):
        s.tell(x, np.array([[1.0, 2.0, 3.0]]))           # shape (1, 3): not one loss per candidate
    assert s.samples == 0
    s.tell(x, np.array([[1.0], [2.0], [3.0]]))           # a column (n, 1) is fine
    assert s.samples == 3 and s.best_loss == 1.0


def test_a_stop_of_an_ended_search_does_not_stop_a_later_one_in_another_thread():
    import threading
    from coexplore.stops import DeferredInterrupt, request_stop
    guard = DeferredInterrupt()
    guard.__enter__()
    try:
        assert request_stop("test")                      # a stop asked of the (main-thread) search
    finally:
        guard.__exit__()
    out = {}

    def worker():
        try:
            out["res"] = run_search(Listed(seed=0), lambda x: x[:, 0].astype(float), budget=4, batch_size=2)
        except BaseException as exc:                    # SearchInterrupted is a KeyboardInterrupt
            out["err"] = exc
    t = threading.Thread(target=worker)
    t.start()
    t.join(30)
    assert "err" not in out and out["res"].samples == 4 and not out["res"].interrupted


def test_an_objectives_count_of_model_valid_samples_goes_on_across_a_resume(tmp_path):
    """`map`'s invalid_samples is the samples minus the mappings the model accepted (an objective of the
    user's may refuse valid ones: a user study found them counted invalid on success, not on failure).
    That count is kept in the checkpoint: a resumed run's objective goes on from it."""
    from coexplore.search.checkpoint import Checkpoint

    def counting():
        def objective(x):
            r = x[:, 0]
            model_ok = r % 3 != 0
            objective.model_valid += int(model_ok.sum())
            return np.where(model_ok & (r % 5 != 0), r + 1.0, np.inf)   # refuses some valid ones too
        objective.model_valid = 0
        return objective
    whole = counting()
    run_search(Listed(seed=0), whole, budget=10, batch_size=4)
    assert whole.model_valid == 6                                    # rows 0..9 but 0, 3, 6, 9
    path = tmp_path / "ck.pkl"                     # a finished run leaves the snapshot after its next-to-last batch
    run_search(Listed(seed=0), counting(), budget=10, batch_size=4, checkpoint=Checkpoint(path, "run", every_s=0))
    second, ck = counting(), Checkpoint(path, "run", every_s=0)
    res = run_search(Listed(seed=0), second, budget=10, batch_size=4, checkpoint=ck)
    assert ck.resumed_from == 8 and res.samples == 10
    assert second.model_valid == 6                 # 5 of rows 0-7 restored, 1 of rows 8-9 counted here
