"""Tests written during a mutation review of the Timeloop-compatible cost model (coexplore/model/nest.py,
validity.py, evaluate.py): each pins numbers of real Timeloop that the other tests left unchecked.

`validate` and tests/test_model_corpus.py compare a case's validity, cycles, per-level counts and total
energy with Timeloop's expected.json; the same files also hold Timeloop's utilization, EDP, per-level
energy and leakage and per-dataspace energy, which nothing compared, so a wrong utilization (the MACs a
mapping uses instead of all of them) or energy moved between levels or dataspaces at the same total
went unnoticed (the review's mutants: utilization over the utilized MACs, EDP over compute cycles,
each dataspace showing another's energy, leakage or the compute level's energy misreported; each
passed the other tests and `validate` on the full corpus). Reference numbers: tests/data/timeloop_corpus
(outputs of timeloop-model, see its README).
"""

import math

import pytest

from coexplore.model.corpus import discover
from coexplore.model.inputs import load_context

from conftest import CORPUS

REL = 1e-6     # expected.json holds Timeloop's doubles; energies summed in another order differ by ~1e-15


def _close(got, ref, rel=REL) -> bool:
    if got is None or ref is None:
        return got is ref
    return math.isclose(got, ref, rel_tol=rel, abs_tol=1e-9)


@pytest.fixture(scope="module")
def records():
    """(case, our record, Timeloop's record) for every valid case of the bundled corpus."""
    out, contexts = [], {}
    for case in discover(CORPUS):
        ref = case.expected
        if not ref["valid"]:
            continue
        key = (case.arch_file, case.layer_file, case.ert_file)
        if key not in contexts:
            contexts[key] = load_context(case.arch_file, case.layer_file, case.ert_file)
        ctx = contexts[key]
        out.append((case, ctx.record(ctx.evaluate_mappings([case.mapping]), 0), ref))
    return out


def test_the_corpus_has_underused_mappings(records):
    """The check below can only tell 'all MACs' from 'used MACs' on mappings that leave MACs idle."""
    assert len(records) >= 250
    assert sum(ref["utilization"] < 0.5 for _, _, ref in records) >= 100


def test_utilization_computes_and_edp_are_timeloops(records):
    """Timeloop's utilization is computes / (cycles x all arithmetic instances), not over the utilized
    ones; EDP is energy x cycles. (A mutant dividing by the utilized MACs passed every other test.)"""
    bad = [(str(c.path), k, got[k], ref[k]) for c, got, ref in records
           for k in ("utilization", "edp_J_cycle", "computes") if not _close(got[k], ref[k])]
    assert not bad, f"{len(bad)} differences, e.g. {bad[:3]}"


def test_energy_per_level_and_dataspace_and_leakage_are_timeloops(records):
    """Every level's energy and leakage and every kept dataspace's energy as Timeloop reports them
    (not only their sum), so energy charged to the wrong level, dataspace or action is seen."""
    bad = []
    for c, got, ref in records:
        for name, rlv in ref["levels"].items():
            glv = got["levels"].get(name)
            if glv is None:
                bad.append((str(c.path), name, "missing"))
                continue
            for k in ("energy_pJ", "leakage_pJ"):
                if k in rlv and not _close(glv.get(k), rlv[k]):
                    bad.append((str(c.path), name, k, glv.get(k), rlv[k]))
            for ds, rds in rlv["dataspaces"].items():
                gds = glv["dataspaces"].get(ds, {})
                if not _close(gds.get("energy_pJ"), rds["energy_pJ"]):
                    bad.append((str(c.path), name, ds, gds.get("energy_pJ"), rds["energy_pJ"]))
    assert not bad, f"{len(bad)} differences, e.g. {bad[:3]}"
