"""The comparator behind `coexplore validate` (checked on a reference record of the corpus)."""

import copy
import json
import math

from coexplore.model.compare import compare_records, rel_err

from conftest import CORPUS

CASES = CORPUS / "public" / "simba_like" / "tiny_conv"


def _record(valid: bool) -> dict:
    for case in sorted(CASES.iterdir()):
        d = json.loads((case / "expected.json").read_text())
        if d["valid"] is valid:
            return d
    raise AssertionError("no such case")


def test_relative_error_against_a_zero_reference_is_infinite():
    assert rel_err(5, 0) == math.inf and rel_err(0, 0) == 0.0 and math.isnan(rel_err(None, 3))
    assert rel_err(11, 10) == 0.1


def test_identical_records_agree_and_each_kind_of_difference_is_caught():
    ref = _record(True)
    same = compare_records(copy.deepcopy(ref), ref)
    assert same["counts_exact"] and same["cycles_exact"] and same["count_max_rel_err"] == 0.0
    level, level_rec = next((lv, r) for lv, r in ref["levels"].items() if r["dataspaces"])
    ds = next(iter(level_rec["dataspaces"]))
    # the model keeps a dataspace the reference does not
    got = copy.deepcopy(ref)
    got["levels"][level]["dataspaces"]["Extra"] = dict(got["levels"][level]["dataspaces"][ds])
    out = compare_records(got, ref)
    assert not out["counts_exact"] and out["count_max_rel_err"] == math.inf
    assert {"level": level, "dataspace": "Extra", "key": "kept", "got": True, "ref": False} in out["mismatches"]
    # the model lacks a count the reference has
    got = copy.deepcopy(ref)
    del got["levels"][level]["dataspaces"][ds]["reads"]
    out = compare_records(got, ref)
    assert not out["counts_exact"] and out["count_max_rel_err"] == math.inf
    # a count off by 10 %
    lv, d, key = next((lv, d, k) for lv, r in ref["levels"].items() for d, c in r["dataspaces"].items()
                      for k in ("reads", "fills", "updates") if c[k] >= 10)
    got = copy.deepcopy(ref)
    got["levels"][lv]["dataspaces"][d][key] = ref["levels"][lv]["dataspaces"][d][key] * 11 // 10
    out = compare_records(got, ref)
    assert not out["counts_exact"] and 0.05 < out["count_max_rel_err"] <= 0.1


def test_invalid_cases_compare_their_messages_word_for_word():
    ref = _record(False)
    assert compare_records(copy.deepcopy(ref), ref)["message_exact"]
    other = dict(ref, error=ref["error"] + " (elsewhere)")
    out = compare_records(other, ref)
    assert out["valid_agree"] and not out["message_exact"]
    assert not compare_records(_record(True), ref)["valid_agree"]
