"""The README's first design (examples/first_design): the counts a hand analysis of the loop nest
gives (README, "A first design from scratch"), and DRAM's energy per 8-word access."""

import math
from pathlib import Path

import pytest

from coexplore.model.inputs import load_context

HERE = Path(__file__).resolve().parents[1] / "examples" / "first_design"


@pytest.fixture(scope="module")
def ctx():
    return load_context(HERE / "two_level.yaml", HERE / "conv1d.yaml")


# (mapping, DRAM weight reads, DRAM input reads): K outer, a filter slides over P in the buffer; P outer,
# the 3-input window stays while the 4 filters pass
@pytest.mark.parametrize("mapping, weights, inputs", [("k_outer.yaml", 4 * 3, 4 * (8 + 3 - 1)),
                                                       ("p_outer.yaml", 8 * 4 * 3, 8 + 3 - 1)])
def test_the_counts_are_the_hand_counts_of_the_loop_nest(ctx, mapping, weights, inputs):
    rec = ctx.record(ctx.evaluate_mappings(HERE / mapping))
    dram, buf = rec["levels"]["DRAM"]["dataspaces"], rec["levels"]["Buffer"]["dataspaces"]
    assert rec["valid"] and rec["cycles"] == 4 * 3 * 8                      # one MAC: 96 cycles
    assert dram["Weights"]["reads"] == weights and dram["Inputs"]["reads"] == inputs
    assert dram["Outputs"]["updates"] == 4 * 8 and dram["Outputs"]["reads"] == 0
    assert buf["Weights"]["fills"] == weights and buf["Inputs"]["fills"] == inputs
    assert buf["Outputs"]["updates"] == 96 and buf["Outputs"]["reads"] == 96 - 32
    assert buf["Weights"]["reads"] == buf["Inputs"]["reads"] == 96            # one of each per MAC


def test_dram_is_charged_per_eight_word_access(ctx):
    rec = ctx.record(ctx.evaluate_mappings(HERE / "k_outer.yaml"))
    energy = rec["levels"]["DRAM"]["dataspaces"]["Inputs"]["energy_pJ"]
    weights = rec["levels"]["DRAM"]["dataspaces"]["Weights"]["energy_pJ"]
    # 40 input reads and 12 weight reads: 5 and 2 accesses of the same price
    assert energy / weights == pytest.approx(math.ceil(40 / 8) / math.ceil(12 / 8))
