"""The built-in model against real Timeloop results (bundled subset of the reference corpus)."""

import math

import numpy as np
import pytest

from coexplore.cli.validate import validate
from coexplore.model.compare import compare_records
from coexplore.model.corpus import discover
from coexplore.model.inputs import load_context

from conftest import CORPUS


@pytest.fixture(scope="module")
def summary():
    return validate(CORPUS, progress=False)


def test_validity_agrees_on_every_case(summary):
    assert summary["cases"] >= 300
    assert summary["validity_agrees"] == summary["cases"]
    assert summary["invalid_messages_exact"] == summary["invalid_cases"] > 0     # Timeloop's text


def test_cycles_exact_on_every_valid_case(summary):
    assert summary["cycles_exact"] == summary["valid_cases"]


def test_counts_exact_on_98_percent(summary):
    assert summary["counts_exact"] >= 0.98 * summary["valid_cases"]


def test_energy_within_tolerances(summary):
    assert summary["energy_within_1e-4"] >= 0.98 * summary["valid_cases"]
    assert summary["energy_median_rel_err"] < 1e-9


@pytest.mark.parametrize("arch", ["simba_like", "simple_weight_stationary", "simple_output_stationary",
                                  "simba_like_pe8_glb4k", "eyeriss_like_45nm_pe16x8_glb32k"])
def test_architectures_without_link_transfers_exact(summary, arch):
    st = summary["per_arch"][arch]
    assert st["counts_exact"] == st["valid_cases"]
    assert st["energy_max_rel_err"] < 1e-4


def test_batch_equals_single_evaluations():
    cases = [c for c in discover(CORPUS) if c.arch == "eyeriss_like" and c.layer == "resnet50_res3a_2b"]
    ctx = load_context(cases[0].arch_file, cases[0].layer_file, cases[0].ert_file)
    maps = [ctx.load_mapping(c.path / "mapping.yaml") for c in cases]
    batch = ctx.evaluate_mappings(maps)
    for i, m in enumerate(maps):
        single = ctx.evaluate_mappings([m])
        a, b = ctx.record(batch, i), ctx.record(single, 0)
        assert a == b


def test_invalid_messages_name_the_level():
    for c in discover(CORPUS):
        ref = c.expected
        if ref["valid"]:
            continue
        ctx = load_context(c.arch_file, c.layer_file, c.ert_file)
        rec = ctx.record(ctx.evaluate_mappings([ctx.load_mapping(c.path / "mapping.yaml")]))
        assert not rec["valid"]
        # same failing level as Timeloop reports
        ref_level = ref["error"].split("couldn't map level ")[1].split(":")[0]
        assert f"level {ref_level}:" in rec["error"], (c.path, rec["error"], ref["error"])
